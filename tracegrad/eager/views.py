"""PyTorch's view operations that shapes.py and tensor_methods.py do not make
(``ViewMethods``): ``select``, ``unfold``, ``as_strided``, ``H``/``mH``/``adjoint``,
``real``/``imag``, ``index_fill``; and ``view_as_real`` / ``view_as_complex``.

Each is a NumPy view of its operand's memory (so that an in-place change of either reaches
the other, see aliasing.py); recorded for autograd, the strided ones are a selection of
the flattened operand at the positions the view reads.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided as _np_as_strided

from ..ir import apply
from ..tracer import Tracer
from . import aliasing
from .arithmetic import _err
from .dispatch import call
from .reductions import wrap_dim as _dim
from .tape import EagerTracer
from .tensor_base import TensorBase, _scalar_name


def _at(x, idx):
    """``x``'s elements at C-order positions ``idx`` (a view's positions in ``x``)."""
    if isinstance(x, EagerTracer):
        return aliasing.gathered(x, idx)
    return np.reshape(x, (-1,))[idx]


def _matrix_transpose(self, name, batches):
    n = self.dim()
    if (n < 2) if batches else (n != 2):
        what = "matrices or batches of matrices" if batches else "matrices (2-D tensors)"
        raise _err(f"tensor.{name} is only supported on {what}. Got {n}-D tensor.")
    t = self.transpose(-2, -1)
    if self.dtype.kind == "c":
        return t.conj()         # a copy: tracegrad has no lazily conjugated views
    return t


def view_as_real(input):
    """``tg.view_as_real(t)`` of a complex tensor: its real and imaginary parts along a new
    last dimension, a view."""
    if input.dtype.kind != "c":
        raise _err("view_as_real is only supported for complex tensors")

    def fn(x):
        if isinstance(x, Tracer):       # recorded: the parts stacked (the value is the view)
            return np.stack([np.real(x), np.imag(x)], axis=-1)
        parts = np.real(x)
        return _np_as_strided(parts, x.shape + (2,), x.strides + (parts.itemsize,))
    return call(fn, input, name="ViewAsRealBackward0", view_of=input)


class _Memory:
    """An ``__array_interface__`` over another array's memory (kept alive by ``base``)."""

    def __init__(self, interface, base):
        self.__array_interface__ = interface
        self.base = base


def view_as_complex(input):
    """``tg.view_as_complex(t)`` of a tensor whose last dimension has size 2, a view."""
    data = input._concrete("view_as_complex")
    if data.dtype not in (np.float32, np.float64, np.float16):
        raise _err("view_as_complex is only supported for half, float and double tensors, but "
                   f"got a tensor of scalar type: {_scalar_name(data.dtype)}")
    if data.ndim == 0 or data.shape[-1] != 2:
        raise _err("Tensor must have a last dimension of size 2")
    if data.strides[-1] != data.itemsize:
        raise _err("Tensor must have a last dimension with stride 1")
    if any(s % (2 * data.itemsize) for s in data.strides[:-1]):
        raise _err("Tensor must have a stride divisible by 2 for all but last dimension")
    if data.dtype == np.float16:
        raise _err("tracegrad has no complex32 dtype for view_as_complex of a half tensor")
    dtype = np.dtype(np.complex64 if data.dtype == np.float32 else np.complex128)

    def fn(x):
        if isinstance(x, Tracer):       # recorded: the complex of the two parts
            return apply("complex", x[..., 0], x[..., 1])
        face = {"shape": x.shape[:-1], "typestr": dtype.str, "strides": x.strides[:-1],
                "data": (x.__array_interface__["data"][0], not x.flags.writeable),
                "version": 3}
        return np.asarray(_Memory(face, x))
    return call(fn, input, name="ViewAsComplexBackward0", view_of=input)


def complex(real, imag):  # noqa: A001
    """``torch.complex(real, imag)``: the complex tensor of two real ones of one floating
    dtype (float32 -> complex64, float64 -> complex128), broadcast."""
    from .tensor_base import TensorBase as _T
    for k, (what, t) in enumerate((("real", real), ("imag", imag))):
        if not isinstance(t, _T):
            raise TypeError(f"complex(): argument '{what}' (position {k + 1}) must be Tensor, "
                            f"not {type(t).__name__}")
    if real.dtype not in (np.float32, np.float64, np.float16) or \
            imag.dtype not in (np.float32, np.float64, np.float16):
        raise _err(f"Expected both inputs to be Half, Float or Double tensors but got "
                   f"{_scalar_name(real.dtype)} and {_scalar_name(imag.dtype)}")
    if real.dtype != imag.dtype:
        raise _err(f"Expected object of scalar type {_scalar_name(real.dtype)} but got scalar "
                   f"type {_scalar_name(imag.dtype)} for second argument")
    if real.dtype == np.float16:
        raise _err("tracegrad has no complex32 dtype for torch.complex of half tensors")
    return call(lambda re, im: apply("complex", re, im), real, imag, name="ComplexBackward0")


def _index_fill_mask(self, dim, index):
    d = _dim(self, dim)
    idx = index._concrete("index_fill") if isinstance(index, TensorBase) else np.asarray(index)
    if idx.dtype.kind not in "iu":
        raise _err("index_fill_(): Expected dtype int64 for index.")
    if idx.ndim > 1:
        raise _err("Index has to be a vector/scalar")
    mask = np.zeros(tuple(self.shape), bool)
    mask[(slice(None),) * d + (idx.reshape(-1).astype(np.int64),)] = True
    return mask


class ViewMethods:
    """``Tensor``'s views that shapes.py does not make, and ``index_fill``."""

    __slots__ = ()

    def select(self, dim, index):
        if self.dim() == 0:
            raise IndexError("select() cannot be applied to a 0-dim tensor.")
        d = _dim(self, dim)
        n = self.shape[d]
        index = int(index)
        if not -n <= index < n:
            raise IndexError(f"select(): index {index} out of range for tensor of size "
                             f"{list(self.shape)} at dimension {dim}")
        return self[(slice(None),) * d + (index,)]

    def unfold(self, dimension, size, step):
        """Every slice of ``size`` elements along ``dimension``, ``step`` apart, as a new last
        dimension: a view (overlapping when ``step < size``)."""
        d = _dim(self, dimension)
        n = self.shape[d] if self.dim() else 1
        if size > n:
            raise _err(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
        if step <= 0:
            raise _err(f"step is {step} but must be > 0")

        def strided(x):
            if x.ndim == 0:
                return _np_as_strided(x, (size,), (0,))
            shape = x.shape[:d] + ((n - size) // step + 1,) + x.shape[d + 1:] + (size,)
            strides = x.strides[:d] + (x.strides[d] * step,) + x.strides[d + 1:] + (x.strides[d],)
            return _np_as_strided(x, shape, strides)
        idx = strided(np.arange(self.numel(), dtype=np.int64).reshape(tuple(self.shape)))
        return call(lambda x: strided(x) if isinstance(x, np.ndarray) else _at(x, idx), self,
                    name="UnfoldBackward0", view_of=self)

    def as_strided(self, size, stride, storage_offset=None):
        """The view of this tensor's storage (its base's memory, in C order) with ``size``,
        ``stride`` and ``storage_offset`` counted in elements, as ``torch.as_strided``."""
        size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
        if len(size) != len(stride):
            raise _err("mismatch in length of strides and shape")
        root = self._base if self._base is not None else self
        data, store = self._concrete("as_strided"), root._data
        if not store.flags.c_contiguous:
            raise _err("tracegrad's as_strided needs its base in C order (make it with "
                       ".contiguous() first)")
        item = data.itemsize
        if storage_offset is None:
            storage_offset = (data.__array_interface__["data"][0]
                              - store.__array_interface__["data"][0]) // item
        if any(s < 0 for s in stride):
            raise _err("as_strided: Negative strides are not supported at the moment, got "
                       f"strides: {list(stride)}")
        need = storage_offset + 1 + sum((n - 1) * s for n, s in zip(size, stride)) \
            if all(size) else 0
        if need > store.size or storage_offset < 0:
            raise _err(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                       f"{storage_offset}, and itemsize {item} requiring a storage size of "
                       f"{need * item} are out of bounds for storage of size {store.size * item}")
        flat = store.reshape(-1)
        positions = _np_as_strided(np.arange(store.size, dtype=np.int64)[storage_offset:],
                                   size, tuple(s * 8 for s in stride))
        # the positions in this tensor of the storage's elements the view reads
        inverse = np.full(store.size, -1, np.int64)
        inverse[aliasing.index_map(data, store).reshape(-1)] = np.arange(data.size)
        idx = np.array(inverse[positions])

        def fn(x):
            if isinstance(x, np.ndarray):
                return _np_as_strided(flat[storage_offset:], size, tuple(s * item for s in stride))
            if idx.size and idx.min() < 0:
                raise _err("tracegrad's as_strided records a view of the elements of its input "
                           "only; this one reads other elements of the storage")
            return _at(x, idx)
        return call(fn, self, name="AsStridedBackward0", view_of=self)

    @property
    def H(self):
        return _matrix_transpose(self, "H", False)

    @property
    def mH(self):
        return _matrix_transpose(self, "mH", True)

    def adjoint(self):
        return _matrix_transpose(self, "mH", True)

    def conj(self):
        if self.dtype.kind != "c":
            return self
        return call(np.conj, self)

    @property
    def real(self):
        if self.dtype.kind != "c":
            return self
        return call(np.real, self, name="RealBackward0", view_of=self)

    @property
    def imag(self):
        if self.dtype.kind != "c":
            raise _err("imag is not implemented for tensors with non-complex dtypes.")
        return call(np.imag, self, name="ImagBackward0", view_of=self)

    def index_fill_(self, dim, index, value):
        """``value`` at positions ``index`` along ``dim``, in place."""
        mask = _index_fill_mask(self, dim, index)
        if isinstance(value, TensorBase):
            value = value.item()
        return self._inplace(lambda x: np.where(mask, np.asarray(value, x.dtype), x),
                             name="IndexFillBackward0", reads_self=False, cast=True, fills=True)

    def index_fill(self, dim, index, value):
        mask = _index_fill_mask(self, dim, index)
        if isinstance(value, TensorBase):
            value = value.item()
        return call(lambda x: np.where(mask, np.asarray(value, x.dtype), x), self,
                    name="IndexFillBackward0")
