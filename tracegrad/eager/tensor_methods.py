"""More of PyTorch's tensor methods (``MoreMethods``): sorting (``sort``, ``topk``, ``argsort``, ``median``),
tests (``isnan``, ``isclose``, ``allclose``, ``equal``), logical operations, scattering
and selecting (``scatter``, ``scatter_add``, ``index_select``, ``masked_select``,
``nonzero``), triangles and diagonals, and a few shape and query methods.

As in arithmetic.py, each is NumPy code handed to ``dispatch.call``. Sorting computes its order on
the concrete values and reads the values at those indices, so the gradient goes back to
the indices, as PyTorch's ``SortBackward0`` / ``TopkBackward0`` send it.
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..ir import apply
from ..tracer import Tracer, coerce
from ..tracer.indexing import normalize
from . import memory_format as _memory_format
from .arithmetic import _as_tensor, _check_broadcast, _elementwise, _err
from .dispatch import call
from .indexing import operand_key as _operand_key
from .products import is_contiguous
from .promotion import cast, result_type
from .reductions import _cumulative, _scalar_dim
from .reductions import wrap_dim as _dim
from .shapes import _sizes
from .tape import EagerTracer
from .tensor_base import TensorBase, _scalar_name, default_dtype

SortResult = namedtuple("sort", ["values", "indices"])
TopkResult = namedtuple("topk", ["values", "indices"])
MedianResult = namedtuple("median", ["values", "indices"])


def _order(data, axis, descending):
    """Indices sorting ``data`` along ``axis``, stable; NaN counts as the largest value."""
    if not descending:
        return np.argsort(data, axis=axis, kind="stable")
    flipped = np.argsort(np.flip(data, axis), axis=axis, kind="stable")
    return data.shape[axis] - 1 - np.flip(flipped, axis)


def _take(t, idx, axis, name):
    """``t``'s values at ``idx`` along ``axis`` (the gradient goes back to those places)."""
    def pick(x):
        return np.take_along_axis(x, _operand_key(x, idx), axis=axis)
    return call(pick, t, name=name)


def _sorted(self, dim, descending, name, k=None):
    data = self._concrete("sort")
    if data.dtype.kind == "c":
        raise _err(f'"sort" not implemented for \'{_scalar_name(data.dtype)}\'')
    if self.dim() == 0:
        idx = np.zeros((), np.int64)
        return call(lambda x: x + 0 if isinstance(x, Tracer) else np.copy(x), self,
                    name=name), self._plain(idx)
    axis = _dim(self, dim)
    idx = _order(data, axis, descending)
    if k is not None:
        idx = np.take(idx, np.arange(k), axis=axis)
    idx = np.ascontiguousarray(idx).astype(np.int64)
    return _take(self, idx, axis, name), self._plain(idx)


# -- tests -------------------------------------------------------------------------------------
def _bool_test(self, fn):
    """``isnan`` & co.: a bool tensor (a fixed answer for an integer or bool one)."""
    return call(lambda x: fn(x) if x.dtype.kind in "fc" else _fixed(x, fn is np.isfinite),
                self)


def _fixed(x, value):
    return np.full(np.shape(x), value, dtype=bool)


def _same_dtype(a, b):
    if a.dtype != b.dtype:
        raise _err(f"{_scalar_name(a.dtype)} did not match {_scalar_name(b.dtype)}")


# -- logical ----------------------------------------------------------------------------------
def _logical(self, other, fn):
    _check_broadcast(self, other)
    return call(lambda a, b: fn(a, b), self, _as_tensor(other, self))


# -- selecting and scattering ----------------------------------------------------------------
def _scatter_key(dim, idx):
    grids = np.indices(idx.shape, sparse=True)
    return tuple(idx if d == dim else grids[d] for d in range(idx.ndim))


def _index(index, what):
    idx = index._concrete(what) if isinstance(index, TensorBase) else np.asarray(index)
    if idx.dtype.kind not in "iu":
        raise _err(f"{what}(): Expected dtype int64 for index")
    return idx.astype(np.int64)


def _update(x, key, v, mode):
    if isinstance(x, Tracer) or isinstance(v, Tracer):
        index, operands = normalize(key)
        return apply("index_update", x, coerce(v), *operands, index=index, mode=mode)
    y = np.array(x, copy=True)
    if mode == "set":
        y[key] = v
    else:
        np.add.at(y, key, v)
    return y


def _scatter_fn(dim, idx, mode):
    key = _scatter_key(dim, idx)
    part = tuple(slice(0, s) for s in idx.shape)

    def fn(x, src):
        if np.ndim(src) == 0:
            v = np.broadcast_to(src, idx.shape).astype(x.dtype) \
                if not isinstance(src, Tracer) else np.broadcast_to(src, idx.shape)
        else:
            v = src[part]
        if v.dtype != x.dtype:
            v = v.astype(x.dtype)
        return _update(x, _operand_key(x, key) if isinstance(x, Tracer) else key, v, mode)
    return fn


def _check_scatter(self, dim, idx, src):
    if idx.ndim != self.dim():
        raise _err("Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, TensorBase) and src.dtype != self.dtype:
        raise _err("scatter(): Expected self.dtype to be equal to src.dtype")
    n = self.shape[dim]
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise _err(f"index {int(idx.max())} is out of bounds for dimension {dim} with size {n}")


def _prepare(self, dim, index, src, what):
    dim = _dim(self, dim)
    idx = _index(index, what)
    _check_scatter(self, dim, idx, src)
    idx = np.where(idx < 0, idx + self.shape[dim], idx)
    src = src if isinstance(src, TensorBase) else self._plain(np.asarray(src, self.dtype))
    return dim, idx, src


# -- triangles, diagonals -------------------------------------------------------------------
def _triangle(self, diagonal, lower):
    if self.dim() < 2:
        raise _err(f"{'tril' if lower else 'triu'}: input tensor must have at least 2 "
                   "dimensions")
    n, m = self.shape[-2:]
    keep = np.tri(n, m, diagonal, dtype=bool) if lower else \
        ~np.tri(n, m, diagonal - 1, dtype=bool)
    return call(lambda x: np.where(keep, x, np.zeros((), x.dtype)), self,
                name="TrilBackward0" if lower else "TriuBackward0")


def _renamed(t, name):
    """``t``, whose ``grad_fn`` (a composite operation's last node) takes PyTorch's name."""
    if t.grad_fn is not None:
        t.grad_fn._name = name
    return t


def where(condition, input, other, like=None):
    """``tg.where(condition, input, other)`` (``input.where(condition, other)``): ``like``
    makes the result when neither ``input`` nor ``other`` is a tensor."""
    if isinstance(condition, TensorBase) and condition._tracer is not None and \
            not isinstance(condition._tracer, EagerTracer):
        # a condition a transform traces (vmap: one row per example) is an operand: its
        # ``_data`` is one example's value, which the closure below would bake in
        _check_broadcast(input, other)
        _check_broadcast(condition, input)
        _check_broadcast(condition, other)
        dtype = result_type(input, other, default_float=default_dtype())
        return call(lambda c, a, b: np.where(c, cast(a, dtype), cast(b, dtype)),
                    condition, input, other, like=like)
    cond = condition._data if isinstance(condition, TensorBase) else np.asarray(condition)
    _check_broadcast(input, other)
    _check_broadcast(cond, input)
    _check_broadcast(cond, other)
    return _elementwise(lambda a, b: np.where(cond, a, b), input, other, like=like)


class MoreMethods:
    """More of ``Tensor``'s methods: sorting, tests, logical operations, scattering,
    triangles, queries."""

    __slots__ = ()

    # -- sorting -----------------------------------------------------------------------------
    def sort(self, dim=-1, descending=False, stable=False):
        """``(values, indices)`` along ``dim``, ascending unless ``descending`` (stable: ties
        keep their order; NaN sorts as the largest value)."""
        if isinstance(dim, bool):               # sort(stable=..., dim=...) positional misuse
            dim = -1
        return SortResult(*_sorted(self, dim, descending, "SortBackward0"))

    def argsort(self, dim=-1, descending=False, stable=False):
        return self.sort(dim, descending)[1]

    def msort(self):
        return self.sort(0)[0]

    def topk(self, k, dim=-1, largest=True, sorted=True):
        """The ``k`` largest (or smallest) values along ``dim`` and their indices."""
        axis = _dim(self, dim) if self.dim() else 0
        n = self.shape[axis] if self.dim() else 1
        if not 0 <= k <= n:
            raise _err("selected index k out of range")
        return TopkResult(*_sorted(self, dim, largest, "TopkBackward0", k=k))

    def median(self, dim=None, keepdim=False):
        """The lower median (PyTorch's): of all elements, or ``(values, indices)`` along ``dim``."""
        if dim is None:
            flat = self.reshape(-1)
            n = flat.shape[0]
            if n == 0:
                return call(lambda x: np.full((), np.nan, x.dtype), self)
            data = flat._concrete("median")
            value = np.sort(data, kind="stable")[(n - 1) // 2]
            tied = (data == value).astype(data.dtype)
            weights = tied / max(tied.sum(), 1)

            def fn(x):
                # the value exactly, the gradient shared evenly by the tied elements (PyTorch)
                if not isinstance(x, Tracer) or np.isnan(value):
                    return np.asarray(value, x.dtype)
                smooth = np.sum(x * weights)
                return smooth + apply("stop_gradient", np.asarray(value, x.dtype) - smooth)
            return call(fn, flat, name="MedianBackward0")
        axis = _dim(self, dim) if self.dim() else 0
        values, idx = self.sort(axis)
        if self.dim() == 0:
            return MedianResult(values, idx)
        mid = (self.shape[axis] - 1) // 2
        key = (slice(None),) * axis + (slice(mid, mid + 1),)
        v, i = values[key], self._plain(np.ascontiguousarray(idx._data[key]))
        if not keepdim:
            v, i = v.squeeze(axis), self._plain(np.squeeze(i._data, axis))
        if v.grad_fn is not None:
            v.grad_fn._name = "MedianBackward1"
        return MedianResult(v, i)

    # -- tests -------------------------------------------------------------------------------
    def isnan(self):
        return _bool_test(self, np.isnan)

    def isinf(self):
        return _bool_test(self, np.isinf)

    def isfinite(self):
        return _bool_test(self, np.isfinite)

    def isposinf(self):
        return _bool_test(self, np.isposinf)

    def isneginf(self):
        return _bool_test(self, np.isneginf)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        other = _as_tensor(other, self)
        _same_dtype(self, other)
        _check_broadcast(self, other)
        return call(lambda a, b: np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan),
                    self, other)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return bool(np.all(self.isclose(other, rtol, atol, equal_nan)._data))

    def equal(self, other):
        """Whether both have the same size and elements (``torch.equal``)."""
        a, b = self._concrete("equal"), _as_tensor(other, self)._concrete("equal")
        return a.shape == b.shape and bool(np.all(a == b))

    # -- logical -----------------------------------------------------------------------------
    def logical_and(self, other):
        return _logical(self, other, np.logical_and)

    def logical_or(self, other):
        return _logical(self, other, np.logical_or)

    def logical_xor(self, other):
        return _logical(self, other, np.logical_xor)

    def logical_not(self):
        return call(np.logical_not, self)

    def logical_and_(self, other):
        return self._inplace(lambda a, b: np.logical_and(a, b), _as_tensor(other, self),
                             cast=True)

    def logical_or_(self, other):
        return self._inplace(lambda a, b: np.logical_or(a, b), _as_tensor(other, self),
                             cast=True)

    # -- selecting and scattering ------------------------------------------------------------
    def scatter(self, dim, index, src=None, value=None, reduce=None):
        """``self`` with ``self[index[i][j]][j] = src[i][j]`` (for ``dim == 0``; likewise for
        the other dims); ``src`` may be a number (or ``value=``)."""
        if reduce is not None:
            if reduce != "add":
                raise _err("tracegrad's scatter supports reduce='add' only")
            return self.scatter_add(dim, index, src)
        number = not isinstance(src if src is not None else value, TensorBase)
        dim, idx, src = _prepare(self, dim, index, value if src is None else src, "scatter")
        return call(_scatter_fn(dim, idx, "set"), self, src,
                    name="ScatterBackward1" if number else "ScatterBackward0")

    def scatter_add(self, dim, index, src):
        """``self`` with ``src`` added at ``index`` along ``dim`` (repeated indices add up)."""
        dim, idx, src = _prepare(self, dim, index, src, "scatter_add")
        return call(_scatter_fn(dim, idx, "add"), self, src, name="ScatterAddBackward0")

    def scatter_(self, dim, index, src=None, value=None, reduce=None):
        if reduce is not None:
            return self.scatter_add_(dim, index, src)
        dim, idx, src = _prepare(self, dim, index, value if src is None else src, "scatter")
        return self._inplace(_scatter_fn(dim, idx, "set"), src, name="ScatterBackward0", cast=True)

    def scatter_add_(self, dim, index, src):
        dim, idx, src = _prepare(self, dim, index, src, "scatter_add")
        return self._inplace(_scatter_fn(dim, idx, "add"), src, name="ScatterAddBackward0",
                             cast=True)

    def index_select(self, dim, index):
        idx = _index(index, "index_select")
        if idx.ndim > 1:
            raise _err("index_select(): Index is supposed to be a vector")
        dim = _dim(self, dim)
        key = (slice(None),) * dim + (idx.reshape(-1),)
        return call(lambda x: x[_operand_key(x, key)], self, name="IndexSelectBackward0")

    def masked_select(self, mask):
        m = mask._concrete("masked_select") if isinstance(mask, TensorBase) else np.asarray(mask)
        if m.dtype != np.bool_:
            raise _err("masked_select: expected BoolTensor for mask")
        shape = np.broadcast_shapes(tuple(self.shape), m.shape)
        m = np.broadcast_to(m, shape)
        src = self if tuple(self.shape) == shape else self.expand(*shape)
        return call(lambda x: x[m], src, name="MaskedSelectBackward0")

    def nonzero(self, as_tuple=False):
        data = self._concrete("nonzero")
        found = np.nonzero(data) if data.ndim else np.nonzero(np.reshape(data, (1,)))
        if as_tuple:
            return tuple(self._plain(i.astype(np.int64)) for i in found)
        return self._plain(np.stack(found, axis=1).astype(np.int64).reshape(-1, data.ndim))

    def count_nonzero(self, dim=None):
        dim = _scalar_dim(self, dim)
        return self._plain(np.asarray(np.count_nonzero(self._concrete("count_nonzero"),
                                                         axis=dim), np.int64))

    def where(self, condition, other):
        return where(condition, self, other)

    # -- triangles, diagonals ----------------------------------------------------------------
    def tril(self, diagonal=0):
        return _triangle(self, diagonal, True)

    def triu(self, diagonal=0):
        return _triangle(self, diagonal, False)

    def diagonal(self, offset=0, dim1=0, dim2=1):
        return call(lambda x: np.diagonal(x, offset, dim1, dim2), self, name="DiagonalBackward0",
                    view_of=self)

    def diag(self, diagonal=0):
        if self.dim() == 1:
            n = self.shape[0] + abs(diagonal)
            rows = np.arange(self.shape[0]) + max(-diagonal, 0)
            cols = np.arange(self.shape[0]) + max(diagonal, 0)

            def fn(x):
                return _update(np.zeros((n, n), x.dtype), (rows, cols), x, "set")
            return call(fn, self, name="DiagEmbedBackward0")
        if self.dim() != 2:
            raise _err("diag(): Supports 1D or 2D tensors. Got " f"{self.dim()}D")
        return call(lambda x: np.diagonal(x, diagonal), self, name="DiagonalBackward0")

    def trace(self):
        if self.dim() != 2:
            raise _err(f"trace: expected a matrix, but got tensor with dim {self.dim()}")
        return call(lambda x: np.sum(np.diagonal(x)), self, name="TraceBackward0")

    # -- arithmetic and shapes ---------------------------------------------------------------
    def cumprod(self, dim, dtype=None):
        x = self if dtype is None else self.to(dtype)
        if x.dtype.kind in "biu" and dtype is None:
            x = x.to(np.int64)
        axis = _dim(x, dim)
        if x.dim() == 0:
            return x.clone()
        return call(lambda v: _cumulative(np.cumprod)(v, axis), x, name="CumprodBackward0")

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        def fn(x):
            if x.dtype.kind not in "fc":
                return x + 0 if isinstance(x, Tracer) else np.copy(x)
            return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)
        return call(fn, self, name="NanToNumBackward0")

    def movedim(self, source, destination):
        return call(lambda x: np.moveaxis(x, source, destination), self, name="PermuteBackward0",
                    view_of=self)
    moveaxis = movedim

    def tile(self, *dims):
        return call(lambda x: np.tile(x, _sizes(dims)), self, name="RepeatBackward0")

    def atan2(self, other):
        _check_broadcast(self, other)
        a, b = self, _as_tensor(other, self)
        if a.dtype.kind in "biu" and b.dtype.kind in "biu":
            a = a.to(default_dtype())
        return _elementwise(np.arctan2, a, b)
    arctan2 = atan2

    def lerp(self, end, weight):
        return _renamed(self + (end - self) * weight,
                        "LerpBackward1" if isinstance(weight, TensorBase) else "LerpBackward0")

    def addmm(self, mat1, mat2, beta=1, alpha=1):
        prod = mat1 @ mat2
        return (self if beta == 1 else self * beta) + (prod if alpha == 1 else prod * alpha)

    def logaddexp(self, other):
        m = self.maximum(other).detach()
        m = m.masked_fill(~m.isfinite(), 0.0)
        return _renamed(((self - m).exp() + (other - m).exp()).log() + m, "LogaddexpBackward0")

    def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
        data = self._concrete("unique")
        if dim is not None:
            raise _err("tracegrad's unique takes dim=None only")
        values, inverse, counts = np.unique(data, return_inverse=True, return_counts=True)
        out = [self._plain(values)]
        if return_inverse:
            out.append(self._plain(inverse.reshape(data.shape).astype(np.int64)))
        if return_counts:
            out.append(self._plain(counts.astype(np.int64)))
        return out[0] if len(out) == 1 else tuple(out)

    def bincount(self, weights=None, minlength=0):
        data = self._concrete("bincount")
        if data.ndim != 1 or data.dtype.kind not in "iu":
            raise _err("bincount only supports 1-d non-negative integral inputs.")
        if weights is None:
            return self._plain(np.bincount(data, minlength=minlength).astype(np.int64))
        w = _as_tensor(weights, self)
        n = max(int(data.max()) + 1 if data.size else 0, minlength)
        zeros = self._plain(np.zeros(n, w.dtype if w.dtype.kind in "fc" else np.float64))
        return zeros.scatter_add(0, self._plain(data), w.to(zeros.dtype))

    # -- queries -----------------------------------------------------------------------------
    def stride(self, dim=None):
        data = self._concrete("stride")
        if not data.size:
            strides = tuple(int(np.prod(data.shape[i + 1:], dtype=np.int64))
                            for i in range(data.ndim))
            return strides if dim is None else strides[dim]
        out = [s // data.itemsize for s in data.strides]
        for i in range(data.ndim - 1, -1, -1):
            if out[i] == 0 and data.shape[i] == 1:
                # NumPy's new axis (x[None]): PyTorch's unsqueeze gives the next dimension's
                # extent (1 for the last); a stride of 0 is an expanded dimension's only
                out[i] = out[i + 1] * data.shape[i + 1] if i + 1 < data.ndim else 1
        strides = tuple(out)
        return strides if dim is None else strides[dim]

    def is_complex(self):
        return self.dtype.kind == "c"

    def is_signed(self):
        return self.dtype.kind in "ifc"

    def is_contiguous(self, memory_format=None):
        """PyTorch's ``is_contiguous``; for ``torch.channels_last`` (``_3d``), whether the
        memory really is laid out so (tracegrad makes C-order tensors: memory_format.py)."""
        fmt = _memory_format.check(memory_format, "is_contiguous")
        if fmt in (_memory_format.channels_last, _memory_format.channels_last_3d):
            data = self._data
            return type(data) is np.ndarray and _memory_format.is_contiguous_as(
                data.shape, data.strides, data.itemsize, fmt)
        return self._data is None or bool(is_contiguous(self))

    @property
    def nbytes(self):
        return self.numel() * self.dtype.itemsize

    @property
    def itemsize(self):
        return self.dtype.itemsize
