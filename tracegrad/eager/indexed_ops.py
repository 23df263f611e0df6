"""Indexed and ordered tensor operations PyTorch programs reach for: ``index_add`` (and
``index_add_``), ``scatter_reduce`` (and ``scatter_reduce_``), ``kthvalue``, ``diff``,
``searchsorted``, ``bucketize`` and ``cdist`` (``IndexedMethods``: the methods among them).

As elsewhere in the eager API, each is NumPy code handed to ``dispatch.call``, so that the
tape records the registry's primitives and gradients (and gradients of gradients) come
from their rules:

- ``index_add``: one ``index_update`` (mode ``add``) of ``alpha * source``;
- ``scatter_reduce``: the contributions to each target (its own value when
  ``include_self``, then each ``src`` element scattered to it) are gathered into a dense
  stack padded with the reduction's identity, and reduced along it (``sum``, ``prod``,
  ``max``, ``min``; ``mean`` is the sum over the count). The reductions' rules give
  torch's gradients: ``amax``/``amin`` share the gradient evenly among the contributions
  equal to the result;
- ``kthvalue``: the order is computed on the values and the values read at those indices
  (the gradient goes back to them, as ``KthvalueBackward0``);
- ``cdist``: the p-norm of the differences, with a zero gradient at a zero distance, as
  torch's;
- ``searchsorted`` and ``bucketize`` give integer indices (no gradient).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..tracer import Tracer
from . import return_types as _rt
from .arithmetic import _err
from .arithmetic import _tensor_operand as _as_tensor
from .dispatch import call
from .indexing import operand_key as _operand_key
from .promotion import cast, result_type
from .reductions import wrap_dim as _dim
from .tensor_base import TensorBase, _scalar_name, default_dtype
from .tensor_methods import _update


def _index_vector(index, what):
    idx = index._concrete(what) if isinstance(index, TensorBase) else np.asarray(index)
    if idx.dtype.kind not in "iu":
        raise _err(f"{what}(): Expected dtype int32/int64 for index")
    if idx.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: "
                         f"{idx.ndim} with type: {_scalar_name(idx.dtype)} and size: "
                         f"{list(idx.shape)}")
    return idx.reshape(-1).astype(np.int64)


# -- index_add ------------------------------------------------------------------------------
def _index_add_args(self, dim, index, source, what):
    dim = _dim(self, dim)
    idx = _index_vector(index, what)
    source = _as_tensor(source, self)
    if source.dtype != self.dtype:
        raise _err(f"{what}(): self ({_scalar_name(self.dtype)}) and source "
                   f"({_scalar_name(source.dtype)}) must have the same scalar type")
    n = self.shape[dim] if self.dim() else 1
    src_n = source.shape[dim] if source.dim() else 1
    if src_n != idx.size:
        raise _err(f"{what}(): Number of indices ({idx.size}) should be equal to "
                   f"source.size(dim) ({src_n})")
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = int(idx.max() if idx.max() >= n else idx.min())
        raise IndexError(f"index out of range in self (index {bad} for dim {dim} of size {n})")
    idx = np.where(idx < 0, idx + n, idx)
    return dim, idx, source


def _index_add_fn(self, dim, idx, alpha):
    key = (slice(None),) * dim + (idx,) if self.dim() else ()

    def fn(x, src):
        v = src if alpha == 1 else src * alpha
        if x.ndim == 0:
            return x + (np.sum(v) if np.ndim(v) else v)
        if isinstance(x, Tracer) or isinstance(v, Tracer):
            return _update(x, _operand_key(x, key), v, "add")
        return _update(x, key, np.asarray(v, x.dtype), "add")
    return fn


def index_add(self, dim, index, source, *, alpha=1):
    """``self`` with ``alpha * source`` added at ``index`` along ``dim`` (repeated indices
    add up)."""
    dim, idx, source = _index_add_args(self, dim, index, source, "index_add")
    return call(_index_add_fn(self, dim, idx, alpha), self, source, name="IndexAddBackward0")


def index_add_(self, dim, index, source, *, alpha=1):
    dim, idx, source = _index_add_args(self, dim, index, source, "index_add_")
    return self._inplace(_index_add_fn(self, dim, idx, alpha), source, name="IndexAddBackward0",
                         cast=True)


# -- scatter_reduce -----------------------------------------------------------------------------
_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _scatter_plan(shape, dim, idx):
    """For each target element (flat, in ``shape``), the flat positions of the ``src``
    elements scattered to it: a table ``(k, size)`` padded with -1, and the counts."""
    size = math.prod(shape)
    grids = np.indices(idx.shape)
    target = grids.copy()
    target[dim] = idx
    flat_target = np.ravel_multi_index(tuple(target), shape).reshape(-1) if idx.size else \
        np.zeros(0, np.int64)
    flat_src = np.arange(idx.size)
    counts = np.bincount(flat_target, minlength=size) if size else np.zeros(0, np.int64)
    k = int(counts.max()) if counts.size else 0
    table = np.full((k, size), -1, np.int64)
    order = np.argsort(flat_target, kind="stable")
    sorted_t = flat_target[order]
    starts = np.searchsorted(sorted_t, sorted_t, side="left")
    rank = np.arange(sorted_t.size) - starts
    table[rank, sorted_t] = flat_src[order]
    return table, counts


def _identity(reduce, dtype):
    dtype = np.dtype(dtype)
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce == "amin"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def _scatter_reduce_fn(shape, dim, idx, reduce, include_self, tie_row=None):
    table, counts = _scatter_plan(shape, dim, idx)
    touched = (counts > 0).reshape(shape)
    part = tuple(slice(0, s) for s in idx.shape)
    safe = np.where(table < 0, 0, table)
    pad = table < 0

    def fn(x, src):
        dtype = x.dtype
        ident = _identity(reduce, dtype)
        flat = np.reshape(src[part], (-1,))
        if table.shape[0]:
            rows = np.where(pad, np.asarray(ident, dtype), flat[safe] if flat.size else
                            np.zeros(table.shape, dtype))
            rows = rows.astype(dtype) if rows.dtype != dtype else rows
        else:
            rows = np.zeros((0, x.size), dtype)
        if include_self:
            rows = np.concatenate([np.reshape(x, (1, -1)), rows], axis=0)
        elif tie_row is not None:
            rows = np.concatenate([tie_row.reshape(1, -1).astype(dtype), rows], axis=0)
        if reduce in ("sum", "mean"):
            out = np.sum(rows, axis=0)
        elif reduce == "prod":
            out = np.prod(rows, axis=0)
        elif reduce == "amax":
            out = np.max(rows, axis=0) if rows.shape[0] else np.reshape(x, (-1,))
        else:
            out = np.min(rows, axis=0) if rows.shape[0] else np.reshape(x, (-1,))
        if reduce == "mean":
            n = (counts + (1 if include_self else 0)).astype(np.int64)
            n = np.maximum(n, 1)
            if np.dtype(dtype).kind in "fc":
                out = out / n.astype(dtype)
            else:
                out = np.floor_divide(out, n.astype(dtype))
        out = np.reshape(out, shape)
        if out.dtype != dtype:
            out = out.astype(dtype)
        return np.where(touched, out, x)
    return fn


def _scatter_reduce_args(self, dim, index, src, reduce, what):
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)    # torch takes these too
    if reduce not in _REDUCES:
        raise _err(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                   f"{reduce}")
    dim = _dim(self, dim)
    idx = index._concrete(what) if isinstance(index, TensorBase) else np.asarray(index)
    if idx.dtype != np.int64:
        raise _err(f"{what}(): Expected dtype int64 for index")
    src = _as_tensor(src, self)
    if src.dtype != self.dtype:
        raise _err(f"{what}(): Expected self.dtype to be equal to src.dtype")
    if idx.ndim != self.dim() or (src.dim() != self.dim()):
        raise _err("Index tensor must have the same number of dimensions as self tensor")
    for d in range(idx.ndim):
        if idx.shape[d] > src.shape[d] or (d != dim and idx.shape[d] > self.shape[d]):
            raise _err(f"Size does not match at dimension {d} expected index {list(idx.shape)}"
                       f" to be no larger than self {list(self.shape)} apart from dimension "
                       f"{dim} and to be no larger than src {list(src.shape)}")
    n = self.shape[dim] if self.dim() else 1
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise _err(f"index {int(idx.max())} is out of bounds for dimension {dim} with size {n}")
    idx = np.where(idx < 0, idx + n, idx)
    return dim, idx, src, reduce


def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    """``self`` with the ``src`` elements scattered to each place (``index`` along
    ``dim``) reduced with its own value (``include_self``): sum, prod, mean, amax,
    amin."""
    dim, idx, src, reduce = _scatter_reduce_args(self, dim, index, src, reduce, "scatter_reduce")
    return call(_scatter_reduce_fn(tuple(self.shape), dim, idx, reduce, include_self,
                                   _tie_row(self, src, dim, idx, reduce, include_self)),
                self, src, name="ScatterReduceBackward0")


def _tie_row(self, src, dim, idx, reduce, include_self):
    """torch's ``amax``/``amin`` without ``include_self`` still counts ``self`` among the
    values equal to the result when sharing out the gradient: a constant row holding
    ``self``'s value where it equals the result (the identity elsewhere) joins the
    reduction, changing no value, taking its share of the gradient."""
    if include_self or reduce not in ("amax", "amin") or self._data is None or src._data is None:
        return None
    x = self._data
    result = _scatter_reduce_fn(x.shape, dim, idx, reduce, False)(x, src._data)
    return np.where(x == result, x, _identity(reduce, x.dtype)).astype(x.dtype)


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    dim, idx, src, reduce = _scatter_reduce_args(self, dim, index, src, reduce, "scatter_reduce_")
    tie = _tie_row(self, src, dim, idx, reduce, include_self)
    return self._inplace(_scatter_reduce_fn(tuple(self.shape), dim, idx, reduce, include_self,
                                            tie), src, name="ScatterReduceBackward0", cast=True)


# -- kthvalue -----------------------------------------------------------------------------------
def kthvalue(self, k, dim=-1, keepdim=False):
    """The ``k``-th smallest value along ``dim`` and its index."""
    data = self._concrete("kthvalue")
    d = _dim(self, dim)
    n = self.shape[d] if self.dim() else 1
    if not 1 <= k <= n:
        raise _err(f"kthvalue(): selected number k out of range for dimension {dim}")
    if self.dim() == 0:
        return _rt.kthvalue(call(lambda x: x + 0 if isinstance(x, Tracer) else np.copy(x), self,
                                 name="KthvalueBackward0"), self._plain(np.zeros((), np.int64)))
    order = np.argsort(data, axis=d, kind="stable")
    idx = np.take(order, [k - 1], axis=d).astype(np.int64)

    def pick(x):
        v = np.take_along_axis(x, _operand_key(x, idx), axis=d)
        return v if keepdim else np.squeeze(v, d)
    values = call(pick, self, name="KthvalueBackward0")
    indices = idx if keepdim else np.squeeze(idx, d)
    return _rt.kthvalue(values, self._plain(np.array(indices, copy=True)))


# -- diff -----------------------------------------------------------------------------------------
def diff(input, n=1, dim=-1, prepend=None, append=None):  # noqa: A002
    """The ``n``-th forward difference along ``dim`` (of ``input`` with ``prepend`` and
    ``append`` joined on), ``x[1:] - x[:-1]`` each time (``!=`` for booleans)."""
    x = _as_tensor(input)
    if x.dim() == 0:
        raise _err("diff expects input to be at least one-dimensional")
    d = _dim(x, dim)
    parts = [_as_tensor(p, x) for p in (prepend,) if p is not None] + [x] + \
        [_as_tensor(a, x) for a in (append,) if a is not None]
    for p in parts:
        if p.dim() != x.dim():
            raise _err("diff expects prepend or append to be the same dimension as input")
    if len(parts) > 1:
        dtype = result_type(*parts, default_float=default_dtype())    # as torch.cat
        x = call(lambda ts: np.concatenate([cast(t, dtype) for t in ts], axis=d), parts,
                 name="CatBackward0")
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = hi != lo if x.dtype == np.bool_ else hi - lo
    return x


# -- searchsorted, bucketize ---------------------------------------------------------------
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,  # noqa: A002
                 sorter=None):
    """Indices where the values of ``input`` would go in the (last dim of)
    ``sorted_sequence``: the first place (``right``/``side='right'``: the last)."""
    boundaries = _as_tensor(sorted_sequence)
    seq = boundaries._concrete("searchsorted")
    scalar = isinstance(input, numbers.Number)
    vals = np.asarray(input) if scalar else \
        _as_tensor(input, boundaries)._concrete("searchsorted")
    if side is not None:
        if side not in ("left", "right"):
            raise _err(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise _err("torch.searchsorted(): side and right can't be set to opposites, got "
                       "side of left while right was True")
        right = side == "right"
    if sorter is not None:
        s = _as_tensor(sorter, boundaries)._concrete("searchsorted")
        if s.shape != seq.shape:
            raise _err("torch.searchsorted(): boundary and sorter must have the same size, but "
                       f"got boundary tensor {list(seq.shape)}and got sorter tensor "
                       f"{list(s.shape)}")
        seq = np.take_along_axis(seq, s.astype(np.int64), axis=-1)
    how = "right" if right else "left"
    if seq.ndim == 0:
        raise _err("torch.searchsorted(): boundaries tensor should be 1 dimension or the first "
                   "N-1 dimensions of boundaries tensor and input value tensor must match, but "
                   "we got boundaries tensor [] and input value tensor " + str(list(vals.shape)))
    if seq.ndim == 1 or scalar:
        if seq.ndim != 1:
            raise _err("torch.searchsorted(): input value can be a scalar only when boundaries "
                       f"tensor dimension is 1, but we got boundaries tensor dim({seq.ndim}) "
                       "and input value's dim(0) numel(1)")
        res = np.searchsorted(seq, vals, side=how)
    else:
        if seq.shape[:-1] != vals.shape[:-1]:
            raise _err("torch.searchsorted(): boundaries tensor should be 1 dimension or the "
                       "first N-1 dimensions of boundaries tensor and input value tensor must "
                       f"match, but we got boundaries tensor {list(seq.shape)} and input value "
                       f"tensor {list(vals.shape)}")
        flat_s = seq.reshape(-1, seq.shape[-1])
        flat_v = vals.reshape(-1, vals.shape[-1])
        res = np.stack([np.searchsorted(a, b, side=how) for a, b in zip(flat_s, flat_v)]) \
            .reshape(vals.shape) if flat_s.shape[0] else np.zeros(vals.shape, np.int64)
    return boundaries._plain(np.asarray(res, np.int32 if out_int32 else np.int64))


def bucketize(input, boundaries, *, out_int32=False, right=False):  # noqa: A002
    """The bucket of each value of ``input`` among the 1-d ``boundaries``
    (``searchsorted(boundaries, input)``)."""
    b = _as_tensor(boundaries)
    if b.dim() != 1:
        raise _err(f"bucketize(): boundaries tensor must be 1 dimension, but got dim({b.dim()})")
    return searchsorted(b, input, out_int32=out_int32, right=right)


# -- cdist --------------------------------------------------------------------------------------
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The ``p``-norm distance between each row of ``x1`` (``(*, P, M)``) and each row of
    ``x2`` (``(*, R, M)``): ``(*, P, R)``; the gradient of a zero distance is zero."""
    x1, x2 = _as_tensor(x1), _as_tensor(x2, x1)
    if x1.dim() < 2 or x2.dim() < 2:
        raise _err(f"cdist only supports at least 2D tensors, X{1 if x1.dim() < 2 else 2} got: "
                   f"{min(x1.dim(), x2.dim())}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise _err(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: "
                   f"{x2.shape[-1]}")
    if x1.dtype.kind != "f" or x2.dtype.kind != "f":
        raise _err(f"cdist only supports floating-point dtypes, X{1 if x1.dtype.kind != 'f' else 2}"
                   f" got: {_scalar_name(x1.dtype if x1.dtype.kind != 'f' else x2.dtype)}")
    if p < 0:
        raise _err("cdist only supports non-negative p values")

    def fn(a, b):
        d = np.expand_dims(a, -2) - np.expand_dims(b, -3)
        if p == 0:
            return np.sum((d != 0).astype(d.dtype), axis=-1)
        ad = np.abs(d)
        if p == 1:
            return np.sum(ad, axis=-1)
        if p == math.inf:
            return np.max(ad, axis=-1) if d.shape[-1] else np.sum(ad, axis=-1)
        if p == 2:
            s = np.sum(d * d, axis=-1)
        else:   # |d| ** p with a zero gradient where d is 0 (p < 1 has none there)
            nz = ad > 0
            s = np.sum(np.where(nz, np.where(nz, ad, 1) ** p, 0), axis=-1)
        pos = s > 0
        root = np.sqrt(np.where(pos, s, 1)) if p == 2 else np.where(pos, s, 1) ** (1.0 / p)
        return np.where(pos, root, 0)
    return call(fn, x1, x2, name="CdistBackward0")


class IndexedMethods:
    """``Tensor``'s indexed and ordered operations: ``index_add``, ``scatter_reduce``,
    ``kthvalue``, ``diff``."""

    __slots__ = ()

    def index_add(self, dim, index, source, *, alpha=1):
        return index_add(self, dim, index, source, alpha=alpha)

    def index_add_(self, dim, index, source, *, alpha=1):
        return index_add_(self, dim, index, source, alpha=alpha)

    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        return scatter_reduce(self, dim, index, src, reduce, include_self=include_self)

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
        return scatter_reduce_(self, dim, index, src, reduce, include_self=include_self)

    def kthvalue(self, k, dim=-1, keepdim=False):
        return kthvalue(self, k, dim, keepdim)

    def diff(self, n=1, dim=-1, prepend=None, append=None):
        return diff(self, n, dim, prepend, append)
