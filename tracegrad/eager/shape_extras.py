"""More of PyTorch's shape and indexing operations (``ShapeExtraMethods``, and the
module-level functions among them): ``repeat_interleave``, ``tensor_split`` and its
``hsplit``/``vsplit``/``dsplit``, ``take``/``take_along_dim``/``put``, ``index_copy``,
``index_put``, ``index_reduce``, ``masked_scatter``, the ``*_scatter`` functions,
``diag_embed``/``diagflat``, ``rot90``, ``kron``/``tensordot``/``inner``/``outer``/``vdot``,
the in-place view operations (``unsqueeze_``, ``t_``, ...), ``tril_``/``triu_``,
``fill_diagonal_``, ``sum_to_size``; and ``atleast_Nd``, ``column_stack``, ``dstack``,
``cartesian_prod``, ``combinations``, ``block_diag``, ``tril_indices``,
``unravel_index``, ``broadcast_shapes``, ``vander``, ``trapezoid``.

As elsewhere in the eager API each is NumPy code handed to ``dispatch.call`` (or made of
other tensor operations, as PyTorch composes it), so the tape records primitives whose
rules give the gradients; the ``grad_fn`` names are PyTorch's. Views are views (they
share memory with their base); copies are copies.
"""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from ..tracer import Tracer
from . import dispatch as _dispatch
from .arithmetic import _err
from .arithmetic import _tensor_operand as _as_tensor
from .dispatch import call
from .indexed_ops import scatter_reduce as _scatter_reduce
from .indexing import operand_key as _operand_key
from .promotion import result_type
from .reductions import wrap_dim as _dim
from .shapes import _sizes
from .tensor_base import Size, TensorBase, _scalar_name, as_array, default_dtype
from .tensor_methods import _update


def _name(t, name):
    """``t`` (a composite operation's result), its ``grad_fn`` named as PyTorch's."""
    if t.grad_fn is not None:
        t.grad_fn._name = name
    return t


def _arg(x, fn, name="input", pos=1):
    """``x``, which must be a tensor (PyTorch's TypeError otherwise)."""
    if not isinstance(x, TensorBase):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def _index_array(index, what, dtypes="iu"):
    idx = index._concrete(what) if isinstance(index, TensorBase) else np.asarray(index)
    if idx.dtype.kind not in dtypes:
        raise _err(f"{what}(): Expected a long tensor for index, but got "
                   f"{_scalar_name(idx.dtype)}")
    return idx


def _set(x, key, v, repeated):
    """``x`` with ``x[key] = v``. Where ``key`` reaches a place more than once (``repeated``)
    the last value is written, and, as PyTorch's ``put``/``index_put``/``index_copy``
    backward, every value gets the gradient of its place (the selection of the gradient at
    ``key``), not only the one written."""
    out = _update(x, key, v, "set")
    if not repeated or not (isinstance(x, Tracer) or isinstance(v, Tracer)):
        return out
    from ..ir import apply
    zeros = np.zeros(tuple(np.shape(v)), x.dtype)
    masked = _update(x, key, zeros, "set")
    spread = _update(np.zeros(tuple(np.shape(x)), x.dtype), key, v, "add")
    return masked + spread + apply("stop_gradient", out - masked - spread)


def _repeats(shape, key):
    """Whether ``key`` selects some element of an array of ``shape`` more than once."""
    places = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)[key].reshape(-1)
    return np.unique(places).size != places.size


def _copy(x):
    return x + 0 if isinstance(x, Tracer) else np.array(x, copy=True)


# -- repeat_interleave ---------------------------------------------------------------------
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    """Each element (or slice along ``dim``; of the flattened tensor when ``dim`` is None)
    repeated ``repeats`` times (an int, or a tensor of one count per element);
    ``repeat_interleave(counts)`` alone gives ``0`` repeated ``counts[0]`` times, ``1``
    ``counts[1]`` times, ..."""
    if repeats is None:                       # torch.repeat_interleave(repeats)
        counts = _arg(input, "repeat_interleave")
        c = counts._concrete("repeat_interleave")
        if c.ndim != 1 or c.dtype.kind not in "iu":
            raise _err("repeat_interleave only accept 1D vector as repeat")
        if c.size and c.min() < 0:
            raise _err("repeats can not be negative")
        return counts._plain(np.repeat(np.arange(c.size, dtype=np.int64), c))
    x = _arg(input, "repeat_interleave")
    if dim is None:
        x = x.flatten()
        dim = 0
    d = _dim(x, dim) if x.dim() else 0
    n = x.shape[d] if x.dim() else 1
    if isinstance(repeats, (TensorBase, list, tuple)):
        r = repeats._concrete("repeat_interleave") if isinstance(repeats, TensorBase) \
            else np.asarray(repeats)
        if r.ndim == 0:
            r = np.full(n, r)
        if r.ndim != 1:
            raise _err("repeat_interleave only accept 1D vector as repeat")
        if r.dtype.kind not in "iu":
            raise _err(f"repeat_interleave only support int32 and int64 dtypes, but got "
                       f"{_scalar_name(r.dtype)}")
        if r.size != n:
            raise _err("repeats must have the same size as input along dim, but got "
                       f"repeats.size(0) = {r.size} and input.size({d}) = {n}")
        if r.size and r.min() < 0:
            raise _err("repeats can not be negative")
        total = int(r.sum())
        if output_size is not None and output_size != total:
            raise _err("allocated size does not match required size")
        idx = np.repeat(np.arange(n, dtype=np.int64), r)
        return x.index_select(d, x._plain(idx))
    r = int(repeats)
    if r < 0:
        raise _err("repeats can not be negative")
    if output_size is not None and output_size != r * n:
        raise _err("allocated size does not match required size")
    if x.dim() == 0:
        x = x.reshape(1)
    shape = list(x.shape)
    grown = shape[:d + 1] + [r] + shape[d + 1:]
    # PyTorch's: unsqueeze, expand, clone, flatten (a view of the fresh copy)
    out = x.unsqueeze(d + 1).expand(*grown).clone()
    return out.flatten(d, d + 1)


# -- splitting -------------------------------------------------------------------------------
def _slices(self, d, bounds):
    pre = (slice(None),) * d
    return tuple(self[pre + (slice(a, b),)] for a, b in zip(bounds[:-1], bounds[1:]))


def tensor_split(input, indices_or_sections, dim=0):  # noqa: A002
    """Pieces along ``dim`` (views): ``n`` sections (the first ``size % n`` one longer), or
    split before each of the ``indices``."""
    self = _arg(input, "tensor_split")
    if self.dim() == 0:
        raise _err("tensor_split expected at least a 1-dimensional tensor, but got a tensor "
                   "with 0 dims")
    d = _dim(self, dim)
    n = self.shape[d]
    ios = indices_or_sections
    if isinstance(ios, TensorBase):
        v = ios._concrete("tensor_split")
        if v.dtype != np.int64:
            raise _err(f"tensor_split expected tensor_indices_or_sections to have ScalarType "
                       f"Long, but got {_scalar_name(v.dtype)}")
        if v.ndim > 1:
            raise _err("tensor_split expected tensor_indices_or_sections to be a zero-dimensional "
                       f"or one-dimensional tensor, but got a tensor with {v.ndim} dims")
        ios = int(v) if v.ndim == 0 else [int(i) for i in v]
    if isinstance(ios, numbers.Integral):
        k = int(ios)
        if k <= 0:
            raise _err(f"number of sections must be larger than 0, got {k}")
        small, extra = divmod(n, k)
        bounds = [0]
        for i in range(k):
            bounds.append(bounds[-1] + small + (1 if i < extra else 0))
    else:
        # PyTorch slices from each index to the next as given (an index before the last
        # one makes an empty piece)
        bounds = [0] + [min(max(int(i) + n if int(i) < 0 else int(i), 0), n) for i in ios] + [n]
        pieces = []
        pre = (slice(None),) * d
        for a, b in zip(bounds[:-1], bounds[1:]):
            pieces.append(self[pre + (slice(a, max(a, b)),)])
        return tuple(pieces)
    return _slices(self, d, bounds)


def _split_along(self, ios, d, what):
    if isinstance(ios, numbers.Integral):
        k = int(ios)
        n = self.shape[d]
        if k == 0 or n % k:
            raise _err(f"torch.{what} attempted to split along dimension {d}, but the size of "
                       f"the dimension {n} is not divisible by the split_size {k}!")
    return tensor_split(self, ios, d)


def hsplit(input, indices_or_sections):  # noqa: A002
    self = _arg(input, "hsplit")
    if self.dim() < 1:
        raise _err("torch.hsplit requires a tensor with at least 1 dimension, but got a tensor "
                   "with 0 dimensions!")
    return _split_along(self, indices_or_sections, 1 if self.dim() > 1 else 0, "hsplit")


def vsplit(input, indices_or_sections):  # noqa: A002
    self = _arg(input, "vsplit")
    if self.dim() < 2:
        raise _err(f"torch.vsplit requires a tensor with at least 2 dimension, but got a tensor "
                   f"with {self.dim()} dimensions!")
    return _split_along(self, indices_or_sections, 0, "vsplit")


def dsplit(input, indices_or_sections):  # noqa: A002
    self = _arg(input, "dsplit")
    if self.dim() < 3:
        raise _err(f"torch.dsplit requires a tensor with at least 3 dimension, but got a tensor "
                   f"with {self.dim()} dimensions!")
    return _split_along(self, indices_or_sections, 2, "dsplit")


def split_with_sizes(input, split_sizes, dim=0):  # noqa: A002
    self = _arg(input, "split_with_sizes")
    d = _dim(self, dim)
    sizes = [int(s) for s in split_sizes]
    if any(s < 0 for s in sizes):
        raise _err(f"split_with_sizes expects split_sizes have only non-negative entries, but "
                   f"got split_sizes={sizes}")
    if sum(sizes) != self.shape[d]:
        raise _err(f"split_with_sizes expects split_sizes to sum exactly to {self.shape[d]} "
                   f"(input tensor's size at dimension {d}), but got split_sizes={sizes}")
    return self.split(sizes, d)


def _unsafe(pieces):
    # views of the memory that autograd does not count as views (PyTorch's unsafe_split):
    # each a tensor of its own, with its own history and version counter
    return tuple(_name(_dispatch.unviewed(p), "UnsafeSplitBackward0") for p in pieces)


def unsafe_split(input, split_size, dim=0):  # noqa: A002
    return _unsafe(_arg(input, "unsafe_split").split(split_size, dim))


def unsafe_chunk(input, chunks, dim=0):  # noqa: A002
    self = _arg(input, "unsafe_chunk")
    if chunks <= 0:
        raise _err("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    return _unsafe(self.chunk(chunks, dim))


# -- take, put ---------------------------------------------------------------------------------
def _flat_positions(self, index, what):
    idx = _index_array(index, what)
    if idx.dtype != np.int64:
        raise _err(f"{what}(): Expected a long tensor for index, but got "
                   f"{_scalar_name(idx.dtype)}")
    n = self.numel()
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = int(idx.max() if idx.max() >= n else idx.min())
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         "elements.")
    return np.where(idx < 0, idx + n, idx)


def take(input, index):  # noqa: A002
    """The elements of ``input`` (as if flattened) at ``index``, in ``index``'s shape."""
    self = _arg(input, "take")
    idx = _flat_positions(self, index, "take")
    return call(lambda x: np.reshape(x, (-1,))[_operand_key(x, idx)], self,
                name="TakeBackward0")


def take_along_dim(input, indices, dim=None):  # noqa: A002
    """``input``'s values at ``indices`` along ``dim`` (both broadcast but along ``dim``);
    along the flattened tensor when ``dim`` is None."""
    self = _arg(input, "take_along_dim")
    ind = _arg(indices, "take_along_dim", "indices", 2)
    if ind.dtype != np.int64:
        raise _err(f"torch.take_along_dim(): dtype of indices should be Long but got "
                   f"{_scalar_name(ind.dtype)}")
    if dim is None:
        return self.reshape(-1).gather(0, ind.reshape(-1))
    if self.dim() != ind.dim():
        raise _err("torch.take_along_dim(): input and indices should have the same number of "
                   f"dimensions, but got {self.dim()} dimensions for input, and {ind.dim()} "
                   "dimensions for indices")
    d = _dim(self, dim)
    s, i = list(self.shape), list(ind.shape)
    si, ii = s[:d] + [1] + s[d + 1:], i[:d] + [1] + i[d + 1:]
    b = list(np.broadcast_shapes(tuple(si), tuple(ii)))
    bs, bi = list(b), list(b)
    bs[d], bi[d] = s[d], i[d]
    x = self if bs == s else self.expand(*bs)
    ind = ind if bi == i else ind.expand(*bi)
    return x.gather(d, ind)


def _put_fn(positions, accumulate, shape):
    def fn(x, src):
        flat = np.reshape(x, (-1,))
        v = np.reshape(src, (-1,))
        if v.dtype != flat.dtype:
            v = v.astype(flat.dtype)
        key = (positions.reshape(-1),)
        if isinstance(flat, Tracer) or isinstance(v, Tracer):
            key = _operand_key(flat, key)
        if accumulate:
            return np.reshape(_update(flat, key, v, "add"), shape)
        return np.reshape(_set(flat, key, v, repeated), shape)
    repeated = np.unique(positions).size != positions.size
    return fn


def _put_args(self, index, source, what):
    positions = _flat_positions(self, index, what)
    source = _as_tensor(source, self)
    if source.dtype != self.dtype:
        raise _err(f"{what}(): self and source expected to have the same dtype, but got "
                   f"self.dtype = {_scalar_name(self.dtype)} and source.dtype = "
                   f"{_scalar_name(source.dtype)}")
    if source.numel() != positions.size:
        raise IndexError(f"{what}(): Expected source and index to have the same number of elements, "
                   f"but got source.numel() = {source.numel()}, index.numel() = "
                   f"{positions.size}")
    return positions, source


def put(input, index, source, accumulate=False):  # noqa: A002
    """A copy of ``input`` with ``source``'s elements written (or added, ``accumulate``) at
    the flat positions ``index``."""
    self = _arg(input, "put")
    positions, source = _put_args(self, index, source, "put_")
    return call(_put_fn(positions, accumulate, tuple(self.shape)), self, source,
                name="PutBackward0")


def put_(self, index, source, accumulate=False):
    positions, source = _put_args(self, index, source, "put_")
    return self._inplace(_put_fn(positions, accumulate, tuple(self.shape)), source,
                         name="PutBackward0", reads_self=accumulate, cast=True)


# -- index_copy, index_put, index_reduce ------------------------------------------------------
def _index_copy_args(self, dim, index, source, what):
    d = _dim(self, dim)
    idx = _index_array(index, what)
    if idx.dtype != np.int64:
        raise _err(f"{what}(): Expected a long tensor for index, but got "
                   f"{_scalar_name(idx.dtype)}")
    if idx.ndim > 1:
        raise IndexError(f"{what}(): Index should have dimension 1 or 0 (got {idx.ndim})")
    source = _as_tensor(source, self)
    if source.dtype != self.dtype:
        raise _err(f"{what}(): self and source expected to have the same dtype, but got (self) "
                   f"{_scalar_name(self.dtype)} and (source) {_scalar_name(source.dtype)}")
    idx = idx.reshape(-1)
    n = self.shape[d] if self.dim() else 1
    src_n = source.shape[d] if source.dim() else 1
    if src_n != idx.size:
        raise IndexError(f"{what}(): Number of indices ({idx.size}) should be equal to "
                         f"source.size(dim) ({src_n})")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = int(idx.max() if idx.max() >= n else idx.min())
        raise IndexError(f"{what}(): index {bad} is out of bounds for dimension {d} with "
                         f"size {n}")
    return d, idx, source


def _index_copy_fn(self, d, idx):
    key = (slice(None),) * d + (idx,) if self.dim() else ()

    def fn(x, src):
        if x.ndim == 0:
            return np.reshape(src, ()) + np.zeros((), x.dtype) if isinstance(src, Tracer) \
                else np.array(np.reshape(src, ()), x.dtype)
        return _set(x, _operand_key(x, key) if isinstance(x, Tracer) else key, src, repeated)
    repeated = np.unique(idx).size != idx.size
    return fn


def index_copy(input, dim, index, source):  # noqa: A002
    """A copy of ``input`` with the slices of ``source`` written at ``index`` along
    ``dim``."""
    self = _arg(input, "index_copy")
    d, idx, source = _index_copy_args(self, dim, index, source, "index_copy_")
    return call(_index_copy_fn(self, d, idx), self, source, name="IndexCopyBackward0")


def index_copy_(self, dim, index, source):
    d, idx, source = _index_copy_args(self, dim, index, source, "index_copy_")
    return self._inplace(_index_copy_fn(self, d, idx), source, name="IndexCopyBackward0",
                         reads_self=False, cast=True)


def _index_put_key(self, indices):
    if not isinstance(indices, (tuple, list)):
        raise TypeError("index_put(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    if len(indices) > self.dim():
        raise IndexError(f"too many indices for tensor of dimension {self.dim()} (got "
                         f"{len(indices)})")
    key = []
    for k in indices:
        if k is None:
            key.append(slice(None))
            continue
        a = k._concrete("index_put") if isinstance(k, TensorBase) else np.asarray(k)
        if a.dtype.kind not in "iub":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        key.append(a.astype(bool) if a.dtype == np.uint8 else a)
    return tuple(key)


def _index_put_fn(key, accumulate, shape):
    repeated = not accumulate and _repeats(shape, key)

    def fn(x, v):
        if np.ndim(v) == 0 or not isinstance(v, Tracer):
            target = np.empty(np.shape(x), bool)[key].shape
            v = np.broadcast_to(v, target)
        if v.dtype != x.dtype:
            v = v.astype(x.dtype)
        if isinstance(x, Tracer) or isinstance(v, Tracer):
            target = np.empty(np.shape(x), bool)[key].shape
            if tuple(v.shape) != target:
                v = np.broadcast_to(v, target)
            if accumulate:
                return _update(x, _operand_key(x, key), v, "add")
            return _set(x, _operand_key(x, key), v, repeated)
        return _update(x, key, v, "add" if accumulate else "set")
    return fn


def _index_put_values(self, values):
    values = _as_tensor(values, self)
    if values.dtype != self.dtype:
        raise _err(f"Index put requires the source and destination dtypes match, got "
                   f"{_scalar_name(self.dtype)} for the destination and "
                   f"{_scalar_name(values.dtype)} for the source.")
    return values


def index_put(input, indices, values, accumulate=False):  # noqa: A002
    """A copy of ``input`` with ``values`` written (or added) at ``input[indices]``."""
    self = _arg(input, "index_put")
    key = _index_put_key(self, indices)
    values = _index_put_values(self, values)
    return call(_index_put_fn(key, accumulate, tuple(self.shape)), self, values,
                name="IndexPutBackward0")


def index_put_(self, indices, values, accumulate=False):
    key = _index_put_key(self, indices)
    values = _index_put_values(self, values)
    return self._inplace(_index_put_fn(key, accumulate, tuple(self.shape)), values,
                         name="IndexPutBackward0",
                         reads_self=accumulate, cast=True)


def _index_reduce_index(self, dim, index, source, reduce):
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise _err(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but "
                   f"got {reduce}.")
    d = _dim(self, dim)
    idx = _index_array(index, "index_reduce")
    if idx.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    source = _as_tensor(source, self)
    if source.dtype != self.dtype:
        raise _err("index_reduce_(): self and source expected to have the same dtype")
    idx = idx.reshape(-1).astype(np.int64)
    src_n = source.shape[d] if source.dim() else 1
    if src_n != idx.size:
        raise IndexError(f"index_reduce_(): Number of indices ({idx.size}) should be equal to "
                         f"source.size(dim) ({src_n})")
    n = self.shape[d] if self.dim() else 1
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        bad = int(idx.max() if idx.max() >= n else idx.min())
        raise IndexError(f"index_reduce_(): index {bad} is out of bounds for dimension {d} with "
                         f"size {n}")
    shape = [1] * source.dim()
    shape[d] = idx.size
    full = np.broadcast_to(idx.reshape(shape), tuple(source.shape)).copy()
    warnings.warn("index_reduce() is in beta and the API may change at any time.",
                  UserWarning, stacklevel=3)
    return d, self._plain(full), source


def index_reduce(input, dim, index, source, reduce, *, include_self=True):  # noqa: A002
    """``input`` with the slices of ``source`` at ``index`` along ``dim`` reduced into it
    (``prod``, ``mean``, ``amax``, ``amin``), as ``scatter_reduce`` with the index
    spread over ``source``'s other dimensions."""
    self = _arg(input, "index_reduce")
    d, full, source = _index_reduce_index(self, dim, index, source, reduce)
    return _name(_scatter_reduce(self, d, full, source, reduce, include_self=include_self),
                 "IndexReduceBackward0")


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    d, full, source = _index_reduce_index(self, dim, index, source, reduce)
    out = self.scatter_reduce_(d, full, source, reduce, include_self=include_self)
    return _name(out, "IndexReduceBackward0")


# -- masked_scatter ----------------------------------------------------------------------------
def _masked_scatter_args(self, mask, source, inplace):
    m = mask._concrete("masked_scatter") if isinstance(mask, TensorBase) else np.asarray(mask)
    if m.dtype != np.bool_:
        raise _err(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                   f"{_scalar_name(m.dtype)}")
    source = _as_tensor(source, self)
    if source.dtype != self.dtype:
        raise _err(f"masked_scatter: expected self and source to have same dtypes but got "
                   f"{_scalar_name(self.dtype)} and {_scalar_name(source.dtype)}")
    shape = tuple(self.shape)
    try:
        full = np.broadcast_shapes(shape, m.shape)
    except ValueError:
        raise _err(f"The size of tensor a ({shape[-1] if shape else 1}) must match the size of "
                   f"tensor b ({m.shape[-1] if m.ndim else 1}) at non-singleton dimension "
                   f"{len(full) - 1 if False else 0}") from None
    if inplace and full != shape:
        raise _err(f"masked_scatter_: expected mask to be broadcastable to self's size "
                   f"{list(shape)}, but got {list(m.shape)}")
    positions = np.flatnonzero(np.broadcast_to(m, full))
    if positions.size > source.numel():
        raise _err("masked_scatter: expected source to have at least as many elements as "
                   "the ones in mask")
    return full, positions, source


def _masked_scatter_fn(full, positions):
    def fn(x, src):
        if tuple(np.shape(x)) != full:
            x = np.broadcast_to(x, full)
            x = x + 0 if isinstance(x, Tracer) else np.array(x)
        flat = np.reshape(x, (-1,))
        v = np.reshape(src, (-1,))[:positions.size]
        key = (positions,)
        if isinstance(flat, Tracer) or isinstance(v, Tracer):
            key = _operand_key(flat, key)
        return np.reshape(_update(flat, key, v, "set"), full)
    return fn


def masked_scatter(input, mask, source):  # noqa: A002
    """A copy of ``input`` with ``source``'s first elements written, in order, where the
    (broadcast) ``mask`` is True."""
    self = _arg(input, "masked_scatter")
    full, positions, source = _masked_scatter_args(self, mask, source, False)
    return call(_masked_scatter_fn(full, positions), self, source,
                name="MaskedScatterBackward0")


def masked_scatter_(self, mask, source):
    full, positions, source = _masked_scatter_args(self, mask, source, True)
    return self._inplace(_masked_scatter_fn(full, positions), source,
                         name="MaskedScatterBackward0", reads_self=False, cast=True)


# -- select_scatter, slice_scatter, diagonal_scatter ---------------------------------------
def _embed(self, src, key, region_shape, name, what):
    src = _as_tensor(src, self)
    if tuple(src.shape) != tuple(region_shape):
        raise _err(f"expected src to have a size equal to the slice of self. src size = "
                   f"{list(src.shape)}, slice size = {list(region_shape)}")
    if src.dtype != self.dtype:
        src = src.to(self.dtype)

    def fn(x, s):
        k = _operand_key(x, key) if isinstance(x, Tracer) else key
        return _update(x, k, s, "set")
    return call(fn, self, src, name=name)


def select_scatter(input, src, dim, index):  # noqa: A002
    """A copy of ``input`` with ``src`` as its slice ``index`` along ``dim``."""
    self = _arg(input, "select_scatter")
    if self.dim() == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _dim(self, dim)
    n = self.shape[d]
    index = int(index)
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(self.shape)} at dimension {dim}")
    key = (slice(None),) * d + (index % n,)
    region = tuple(self.shape)[:d] + tuple(self.shape)[d + 1:]
    return _embed(self, src, key, region, "SelectScatterBackward0", "select_scatter")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):  # noqa: A002
    """A copy of ``input`` with ``src`` as its slice ``start:end:step`` along ``dim``."""
    self = _arg(input, "slice_scatter")
    d = _dim(self, dim)
    if step <= 0:
        raise _err("slice step must be positive")
    key = (slice(None),) * d + (slice(start, end, step),)
    region = np.empty(tuple(self.shape), bool)[key].shape
    return _embed(self, src, key, region, "SliceScatterBackward0", "slice_scatter")


def _diagonal_key(shape, offset, d1, d2):
    n1, n2 = shape[d1], shape[d2]
    length = max(0, min(n1 + min(offset, 0), n2 - max(offset, 0)))
    rows = np.arange(length) - min(offset, 0)
    cols = np.arange(length) + max(offset, 0)
    others = [i for i in range(len(shape)) if i not in (d1, d2)]
    # the diagonal's index as NumPy's ``diagonal`` orders it: the other dims, then it
    grids = np.indices(tuple(shape[i] for i in others) + (length,), sparse=True)
    key = [None] * len(shape)
    for k, i in enumerate(others):
        key[i] = grids[k]
    key[d1], key[d2] = rows.reshape((1,) * len(others) + (-1,)), \
        cols.reshape((1,) * len(others) + (-1,))
    return tuple(key), tuple(shape[i] for i in others) + (length,)


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):  # noqa: A002
    """A copy of ``input`` with ``src`` as its diagonal (``offset``, ``dim1``, ``dim2``)."""
    self = _arg(input, "diagonal_scatter")
    d1, d2 = _dim(self, dim1), _dim(self, dim2)
    if d1 == d2:
        raise _err(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    key, region = _diagonal_key(tuple(self.shape), offset, d1, d2)
    return _embed(self, src, key, region, "DiagonalScatterBackward0", "diagonal_scatter")


# -- diagonals, rotations ------------------------------------------------------------------------
def diag_embed(input, offset=0, dim1=-2, dim2=-1):  # noqa: A002
    """Matrices (in dims ``dim1`` and ``dim2`` of the result) whose ``offset`` diagonal is
    the last dimension of ``input``."""
    self = _arg(input, "diag_embed")
    nd = self.dim() + 1
    d1, d2 = dim1 % nd if -nd <= dim1 < nd else None, dim2 % nd if -nd <= dim2 < nd else None
    if d1 is None or d2 is None:
        bad = dim1 if d1 is None else dim2
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
                         f"but got {bad})")
    if d1 == d2:
        raise _err(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if self.dim() == 0:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got "
                         "-2)")
    batch = tuple(self.shape[:-1])
    m = self.shape[-1] + abs(offset)
    out_shape = [None] * nd
    out_shape[d1] = out_shape[d2] = m
    it = iter(batch)
    out_shape = tuple(s if s is not None else next(it) for s in out_shape)
    key, _ = _diagonal_key(out_shape, offset, d1, d2)

    def fn(x):
        return _update(np.zeros(out_shape, x.dtype), key, x, "set")
    return call(fn, self, name="DiagEmbedBackward0")


def diagflat(input, offset=0):  # noqa: A002
    """The flattened ``input`` as the ``offset`` diagonal of a square matrix."""
    self = _arg(input, "diagflat")
    return diag_embed(self.reshape(-1), offset, 0, 1)


def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    """``input`` rotated by 90 degrees ``k`` times in the plane of ``dims`` (from the first
    towards the second)."""
    self = _arg(input, "rot90")
    dims = tuple(dims)
    if len(dims) != 2:
        raise _err(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if self.dim() < 2:
        raise _err(f"expected total dims >= 2, but got total dims = {self.dim()}")
    d0, d1 = _dim(self, dims[0]), _dim(self, dims[1])
    if d0 == d1:
        raise _err(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = "
                   f"{d1}")
    return call(lambda x: _copy(np.rot90(x, k, (d0, d1))) if k % 4 == 0 else
                np.rot90(x, k, (d0, d1)), self, name="Rot90Backward0")


def fliplr(input):  # noqa: A002
    self = _arg(input, "fliplr")
    if self.dim() < 2:
        raise _err("Input must be >= 2-d.")
    return self.flip(1)


def flipud(input):  # noqa: A002
    self = _arg(input, "flipud")
    if self.dim() < 1:
        raise _err("Input must be >= 1-d.")
    return self.flip(0)


# -- products ---------------------------------------------------------------------------------
def _promoted(*ts):
    dtype = result_type(*ts, default_float=default_dtype())
    return [t if t.dtype == dtype else t.to(dtype) for t in ts]


def kron(input, other):  # noqa: A002
    """The Kronecker product."""
    a, b = _promoted(_arg(input, "kron"), _arg(other, "kron", "other", 2))
    return call(lambda x, y: np.kron(x, y), a, b, name="UnsafeViewBackward0")


def tensordot(a, b, dims=2, out=None):
    """The sum of products over ``dims`` (a count of the last dims of ``a`` and first of
    ``b``, or two lists of dims)."""
    a, b = _arg(a, "tensordot", "a"), _arg(b, "tensordot", "b", 2)
    if isinstance(dims, TensorBase):
        dims = dims.tolist()
    if isinstance(dims, numbers.Integral):
        if dims < 0:
            raise _err(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise _err(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        da, db = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, numbers.Integral) else list(da)
        db = [db] if isinstance(db, numbers.Integral) else list(db)
    if len(da) != len(db):
        raise _err("both dimension lists should have same length")
    da, db = [_dim(a, d) for d in da], [_dim(b, d) for d in db]
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise _err(f"contracted dimensions need to match, but first has size {a.shape[i]} "
                       f"in dim {i} and second has size {b.shape[j]} in dim {j}")
    if a.dtype != b.dtype:
        raise _err(f"expected m1 and m2 to have the same dtype, but got: "
                   f"{_scalar_name(a.dtype)} != {_scalar_name(b.dtype)}")
    fa = [i for i in range(a.dim()) if i not in da]
    fb = [j for j in range(b.dim()) if j not in db]
    ka = math.prod(a.shape[i] for i in da)
    ma = math.prod(a.shape[i] for i in fa)
    nb = math.prod(b.shape[j] for j in fb)
    a2 = a.permute(*(fa + da)).reshape(ma, ka) if a.dim() else a.reshape(1, 1)
    b2 = b.permute(*(db + fb)).reshape(ka, nb) if b.dim() else b.reshape(1, 1)
    out_shape = [a.shape[i] for i in fa] + [b.shape[j] for j in fb]
    return a2.mm(b2).view(out_shape)


def inner(input, other):  # noqa: A002
    """The sum of products over the last dims (a product with a 0-d tensor)."""
    a, b = _arg(input, "inner"), _arg(other, "inner", "other", 2)
    if a.dim() == 0 or b.dim() == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise _err(f"inner() the last dimension must match on both input tensors but got "
                   f"shapes {list(a.shape)} and {list(b.shape)}")
    return tensordot(a, b, ([-1], [-1]))


def outer(input, vec2):  # noqa: A002
    """The outer product of two vectors (``input.reshape(-1, 1) * vec2``)."""
    a, b = _arg(input, "outer"), _arg(vec2, "outer", "vec2", 2)
    for what, t in (("self", a), ("vec2", b)):
        if t.dim() != 1:
            raise _err(f"outer: Expected 1-D argument {what}, but got {t.dim()}-D")
    return a.reshape(-1, 1) * b


def vdot(input, other):  # noqa: A002
    """The dot product of two vectors, the first conjugated."""
    a, b = _arg(input, "vdot"), _arg(other, "vdot", "other", 2)
    if a.dim() != 1 or b.dim() != 1:
        raise _err(f"1D tensors expected, but got {a.dim()}D and {b.dim()}D tensors")
    if a.dtype != b.dtype:
        raise _err(f"vdot : expected both vectors to have same dtype, but found "
                   f"{_scalar_name(a.dtype)} and {_scalar_name(b.dtype)}")
    if a.shape[0] != b.shape[0]:
        raise _err(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src "
                   f"[{b.shape[0]}] to have the same number of elements, but got {a.shape[0]} "
                   f"and {b.shape[0]} elements respectively")
    return call(lambda x, y: np.sum(np.conj(x) * y) if x.dtype.kind == "c" else np.sum(x * y),
                a, b, name="VdotBackward0")


# -- in-place view operations -------------------------------------------------------------------
def _inplace_view(self, make, name):
    """``self`` becoming ``make(self)`` (a view of its memory with another shape) in
    place, as PyTorch's ``unsqueeze_`` & co.: the same tensor, its version counted up,
    its history the view operation's (named ``name``)."""
    self._check_inplace(fills=True)
    new = make(self)
    self._data = new._data
    if new._tracer is not None:
        self._tracer = new._tracer
        h = self.grad_fn
        if h is not None:
            h._name = name
    self._vc.v += 1
    h = self.grad_fn
    if h is not None:
        h._saved_version = self._vc.v
    return self


# -- sum_to_size -----------------------------------------------------------------------------------
def sum_to_size(self, *size):
    size = _sizes(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    ok = lead >= 0 and all(s == 1 or s == shape[lead + i] for i, s in enumerate(size))
    if not ok:
        raise _err(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    if size == shape:
        return self
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size)
                                      if s == 1 and shape[lead + i] != 1)
    out = self.sum(dims, keepdim=True) if dims else self
    if lead:
        return out.reshape(size)          # (a view of the sum: ViewBackward0, as PyTorch's)
    return _name(out, "SumBackward1")


# -- module-level: stacking, index helpers --------------------------------------------------------
def _tensors(args, what):
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return list(args[0]), True
    return list(args), len(args) != 1


def _atleast(args, nd):
    ts, many = _tensors(args, f"atleast_{nd}d")
    out = []
    for t in ts:
        t = _as_tensor(t)
        n = t.dim()
        if n >= nd:
            pass
        elif n == 0:
            t = t.reshape((1,) * nd)
        elif nd == 2:
            t = t.unsqueeze(0)
        elif n == 1:
            t = t.unsqueeze(0).unsqueeze(-1)
        else:
            t = t.unsqueeze(-1)
        out.append(t)
    return tuple(out) if many else out[0]


def atleast_1d(*tensors):
    """Each tensor with at least 1 dimension (a view; the tensor itself when it has)."""
    return _atleast(tensors, 1)


def atleast_2d(*tensors):
    return _atleast(tensors, 2)


def atleast_3d(*tensors):
    return _atleast(tensors, 3)


def broadcast_shapes(*shapes):
    """The shape tensors of these shapes broadcast to (a ``Size``)."""
    norm = []
    for s in shapes:
        if isinstance(s, numbers.Integral):
            norm.append((int(s),))
        else:
            norm.append(tuple(int(v) for v in s))
    for s in norm:
        if any(v < 0 for v in s):
            raise _err(f"Trying to create tensor with negative dimension {min(s)}: {list(s)}")
    try:
        return Size(np.broadcast_shapes(*norm))
    except ValueError:
        raise _err("shape mismatch: objects cannot be broadcast to a single shape") from None


def argwhere(input):  # noqa: A002
    """The coordinates of the nonzero elements, one row each."""
    self = _arg(input, "argwhere")
    if self.dim() == 0:
        found = bool(self._concrete("argwhere"))
        return self._plain(np.zeros((1 if found else 0, 0), np.int64))
    return self.nonzero()


def ravel(input):  # noqa: A002
    return _arg(input, "ravel").ravel()


def swapdims(input, dim0, dim1):  # noqa: A002
    return _arg(input, "swapdims").swapdims(dim0, dim1)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The tensor with each run of equal consecutive elements (or slices along ``dim``)
    made one, and optionally where each element went and the runs' lengths."""
    self = _arg(input, "unique_consecutive")
    data = self._concrete("unique_consecutive")
    if dim is None:
        flat = data.reshape(-1)
        if flat.size:
            new = np.concatenate([[True], flat[1:] != flat[:-1]])
        else:
            new = np.zeros(0, bool)
        values = flat[new]
        shape = data.shape
    else:
        d = _dim(self, dim)
        moved = np.moveaxis(data, d, 0).reshape(data.shape[d] if data.ndim else 1, -1)
        n = moved.shape[0]
        new = np.concatenate([[True], np.any(moved[1:] != moved[:-1], axis=1)]) if n else \
            np.zeros(0, bool)
        values = np.compress(new, data, axis=d)
        shape = (n,)
    starts = np.flatnonzero(new)
    out = [self._plain(np.ascontiguousarray(values))]
    if return_inverse:
        out.append(self._plain((np.cumsum(new) - 1).astype(np.int64).reshape(shape)))
    if return_counts:
        total = new.size
        out.append(self._plain(np.diff(np.append(starts, total)).astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


# -- vander, trapezoid ---------------------------------------------------------------------------
def vander(x, N=None, increasing=False):  # noqa: N803
    """The Vandermonde matrix of a vector: columns ``x ** (N - 1)`` ... ``x ** 0`` (the
    other way round when ``increasing``)."""
    x = _as_tensor(x)
    if x.dim() != 1:
        raise _err("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else int(N)
    if n < 0:
        raise _err("N must be non-negative.")
    dtype = np.dtype(np.int64) if x.dtype.kind in "biu" else x.dtype
    result = x._plain(np.ones((x.shape[0], n), dtype))
    if n > 1:
        # PyTorch's: ones, the columns after the first the running product of x
        xs = x.to(dtype) if x.dtype != dtype else x
        result[:, 1:] = xs.unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1)
    if not increasing:
        result = result.flip(-1)
    return result


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim``: with sample points ``x`` or spacing ``dx``
    (1)."""
    y = _as_tensor(y)
    if y.dim() == 0:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got "
                         f"{dim})")
    d = _dim(y, dim)
    if isinstance(x, TensorBase):
        if dx is not None:
            raise TypeError("trapezoid() received an invalid combination of arguments")
        x = _as_tensor(x, y)
        n = y.shape[d]
        if n == 0:
            return y.sum(d) * 0
        if x.dim() == 1:
            if x.shape[0] != n:
                raise _err("trapezoid: There must be one `x` value for each sample point")
            shape = [1] * y.dim()
            shape[d] = n - 1
            dxs = x.diff().view(shape)
        else:
            dxs = x.diff(dim=dim)
        return _name((dxs * (y.narrow(d, 1, n - 1) + y.narrow(d, 0, n - 1))).sum(d) / 2.0,
                     "DivBackward1")
    step = 1 if dx is None else dx if x is None else None
    if step is None:
        step = x
    n = y.shape[d]
    if n == 0:
        return _name(y.sum(d) * 0, "MulBackward1")
    ends = (y.select(d, 0) + y.select(d, -1)) * 0.5
    return _name((y.sum(d) - ends) * step, "MulBackward1")


def trapz(y, x=None, *, dx=None, dim=-1):
    """``trapezoid`` (``trapz(y, x, dim=-1)`` or ``trapz(y, dx=1, dim=-1)``)."""
    if x is not None and not isinstance(x, TensorBase):
        dx, x = x, None
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal rule along ``dim`` (one element fewer than ``y``)."""
    y = _as_tensor(y)
    d = _dim(y, dim)
    n = y.shape[d]
    pairs = y.narrow(d, 1, max(n - 1, 0)) + y.narrow(d, 0, max(n - 1, 0))
    if isinstance(x, TensorBase):
        x = _as_tensor(x, y)
        if x.dim() == 1:
            if x.shape[0] != n:
                raise _err("cumulative_trapezoid: There must be one `x` value for each sample "
                           "point")
            shape = [1] * y.dim()
            shape[d] = max(n - 1, 0)
            dxs = x.diff().view(shape)
        else:
            dxs = x.diff(dim=dim)
        return _name((dxs * pairs).cumsum(d) / 2.0, "DivBackward1")
    step = 1 if dx is None else dx
    return (pairs * (step / 2.0)).cumsum(d)


class ShapeExtraMethods:
    """``Tensor``'s methods among the operations above."""

    __slots__ = ()

    def repeat_interleave(self, repeats=None, dim=None, *, output_size=None):
        if repeats is None:
            raise TypeError("repeat_interleave() missing required argument 'repeats'")
        return repeat_interleave(self, repeats, dim, output_size=output_size)

    def tensor_split(self, indices_or_sections, dim=0):
        return tensor_split(self, indices_or_sections, dim)

    def hsplit(self, indices_or_sections):
        return hsplit(self, indices_or_sections)

    def vsplit(self, indices_or_sections):
        return vsplit(self, indices_or_sections)

    def dsplit(self, indices_or_sections):
        return dsplit(self, indices_or_sections)

    def split_with_sizes(self, split_sizes, dim=0):
        return split_with_sizes(self, split_sizes, dim)

    def unsafe_split(self, split_size, dim=0):
        return unsafe_split(self, split_size, dim)

    def unsafe_chunk(self, chunks, dim=0):
        return unsafe_chunk(self, chunks, dim)

    def take(self, index):
        return take(self, index)

    def take_along_dim(self, indices, dim=None):
        return take_along_dim(self, indices, dim)

    def put(self, index, source, accumulate=False):
        return put(self, index, source, accumulate)

    def put_(self, index, source, accumulate=False):
        return put_(self, index, source, accumulate)

    def index_copy(self, dim, index, source):
        return index_copy(self, dim, index, source)

    def index_copy_(self, dim, index, source):
        return index_copy_(self, dim, index, source)

    def index_put(self, indices, values, accumulate=False):
        return index_put(self, indices, values, accumulate)

    def index_put_(self, indices, values, accumulate=False):
        return index_put_(self, indices, values, accumulate)

    def index_reduce(self, dim, index, source, reduce, *, include_self=True):
        return index_reduce(self, dim, index, source, reduce, include_self=include_self)

    def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
        return index_reduce_(self, dim, index, source, reduce, include_self=include_self)

    def masked_scatter(self, mask, source):
        return masked_scatter(self, mask, source)

    def masked_scatter_(self, mask, source):
        return masked_scatter_(self, mask, source)

    def select_scatter(self, src, dim, index):
        return select_scatter(self, src, dim, index)

    def slice_scatter(self, src, dim=0, start=None, end=None, step=1):
        return slice_scatter(self, src, dim, start, end, step)

    def diagonal_scatter(self, src, offset=0, dim1=0, dim2=1):
        return diagonal_scatter(self, src, offset, dim1, dim2)

    def diag_embed(self, offset=0, dim1=-2, dim2=-1):
        return diag_embed(self, offset, dim1, dim2)

    def diagflat(self, offset=0):
        return diagflat(self, offset)

    def rot90(self, k=1, dims=(0, 1)):
        return rot90(self, k, dims)

    def fliplr(self):
        return fliplr(self)

    def flipud(self):
        return flipud(self)

    def kron(self, other):
        return kron(self, other)

    def inner(self, other):
        return inner(self, other)

    def outer(self, vec2):
        return outer(self, vec2)

    def ger(self, vec2):
        return outer(self, vec2)

    def vdot(self, other):
        return vdot(self, other)

    def argwhere(self):
        return argwhere(self)

    def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
        return unique_consecutive(self, return_inverse, return_counts, dim)

    def sum_to_size(self, *size):
        return sum_to_size(self, *size)

    def new(self, *args, device=None):
        """The legacy constructor in this tensor's dtype: ``t.new(data)``, ``t.new(*sizes)``
        (zero-filled here), ``t.new()`` (empty)."""
        from .device import resolve
        resolve(device)
        return legacy_new(self.dtype, args, self._plain)

    # -- in-place view operations -------------------------------------------------------
    def unsqueeze_(self, dim):
        return _inplace_view(self, lambda t: t.unsqueeze(dim), "UnsqueezeBackward1")

    def squeeze_(self, dim=None):
        name = "SqueezeBackward3" if dim is None else \
            "SqueezeBackward5" if isinstance(dim, (tuple, list)) else "SqueezeBackward4"
        d = tuple(dim) if isinstance(dim, list) else dim
        for k in (() if d is None else d if isinstance(d, tuple) else (d,)):
            _dim(self, k)
        return _inplace_view(self, lambda t: t.squeeze(d), name)

    def t_(self):
        if self.dim() > 2:
            raise _err(f"t_() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
        return _inplace_view(self, lambda t: t.t(), "TBackward1")

    def transpose_(self, dim0, dim1):
        _dim(self, dim0), _dim(self, dim1)
        return _inplace_view(self, lambda t: t.transpose(dim0, dim1), "TransposeBackward1")

    swapaxes_ = swapdims_ = transpose_

    # -- in-place triangles and diagonals -------------------------------------------------
    def tril_(self, diagonal=0):
        return _triangle_(self, diagonal, True)

    def triu_(self, diagonal=0):
        return _triangle_(self, diagonal, False)

    def fill_diagonal_(self, fill_value, wrap=False):
        """``fill_value`` on the main diagonal (of a matrix, or of a tensor whose
        dimensions are all equal), in place; ``wrap``: a tall matrix's diagonal starts
        again every ``cols + 1`` rows, as NumPy's ``fill_diagonal``."""
        n = self.dim()
        if n < 2:
            raise _err("dimensions must larger than 1")
        shape = tuple(self.shape)
        if n > 2 and len(set(shape)) != 1:
            raise _err("all dimensions of input must be of equal length")
        mask = np.zeros(shape, bool)
        np.fill_diagonal(mask, True, wrap=wrap)
        if isinstance(fill_value, TensorBase):
            fill_value = fill_value.item()
        return self._inplace(lambda x: np.where(mask, np.asarray(fill_value, x.dtype), x),
                             name="CopySlices", reads_self=False, cast=True, fills=True)


def _triangle_(self, diagonal, lower):
    if self.dim() < 2:
        raise _err(f"{'tril' if lower else 'triu'}: input tensor must have at least 2 "
                   "dimensions")
    n, m = self.shape[-2:]
    keep = np.tri(n, m, diagonal, dtype=bool) if lower else ~np.tri(n, m, diagonal - 1,
                                                                    dtype=bool)
    return self._inplace(lambda x: np.where(keep, x, np.zeros((), x.dtype)),
                         name="TrilBackward0" if lower else "TriuBackward0")


def legacy_new(dtype, args, plain):
    """PyTorch's legacy constructors (``tg.FloatTensor(...)``, ``t.new(...)``) in ``dtype``:
    no arguments, an empty tensor; a tensor of that dtype, itself detached; data, a tensor
    of it; sizes (ints or a ``Size``), zeros of that shape. ``plain`` makes the tensor."""
    if not args:
        return plain(np.zeros((0,), dtype))
    first = args[0]
    if len(args) == 1 and isinstance(first, TensorBase):
        if first.dtype != dtype:
            raise TypeError(f"expected {_scalar_name(dtype)} (got {_scalar_name(first.dtype)})")
        return first.detach()
    if len(args) == 1 and not isinstance(first, Size) and not _is_int(first):
        return plain(as_array(first, dtype))
    sizes = tuple(first) if len(args) == 1 and isinstance(first, Size) else args
    if not all(_is_int(s) for s in sizes):
        raise TypeError(f"new() received an invalid combination of arguments - got "
                        f"({', '.join(type(a).__name__ for a in args)})")
    return plain(np.zeros(tuple(int(s) for s in sizes), dtype))


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


# the module-level functions of this module (functions.py adds them to the table)
FUNCTIONS = {f.__name__: f for f in (
    repeat_interleave, tensor_split, hsplit, vsplit, dsplit, split_with_sizes, unsafe_split,
    unsafe_chunk, take, take_along_dim, ravel, swapdims, put, index_copy, index_put, index_put_, index_reduce,
    masked_scatter, select_scatter, slice_scatter, diagonal_scatter, diag_embed, diagflat,
    rot90, fliplr, flipud, atleast_1d, atleast_2d, atleast_3d,
    kron, tensordot, inner, outer, vdot,
    argwhere, unique_consecutive,
    broadcast_shapes, vander, trapezoid, trapz, cumulative_trapezoid)}
FUNCTIONS["ger"] = outer
