"""``MiscMethods``: the smaller ``torch.Tensor`` methods programs reach for, as torch 2.13
has them.

- conjugate and negative bits: tracegrad conjugates and negates eagerly, so ``is_conj``
  and ``is_neg`` are False and ``resolve_conj``/``resolve_neg`` return the tensor;
  ``conj_physical`` is ``self`` for a real tensor (as torch's) and a conjugated copy for a
  complex one; ``is_nonzero``, ``is_same_size``, ``ndimension``;
- ``prelu`` and ``hardshrink`` (the math of ``F.prelu``/``F.hardshrink``, with torch's
  dtype errors), ``narrow_copy``, ``unsafe_split_with_sizes``;
- memory: ``storage_offset`` (the element offset of the view in its storage: the memory
  of its base, C order), ``data_ptr``, ``new_empty_strided``, ``resize_``/``resize_as_``,
  ``as_strided_``, ``is_pinned``/``pin_memory`` (a CPU-only build: torch's errors),
  ``is_shared`` (tracegrad's memory is never shared between processes);
- element-wise Python callables: ``apply_``, ``map_``, ``map2_`` (torch's conversions of
  the returned Python values, its order, its errors);
- legacy attributes: ``name``, ``volatile``; ``dim_order``.

Storage, as tracegrad has it: a view's storage is its base's memory (``_base._data``);
a tensor that is no view owns the memory of its array, or of the array its array is a
NumPy view of (so that ``resize_`` to fewer elements and back gives the old elements
back, as torch's storage keeps them). A ``detach()``-ed view is no view in torch's
autograd either, but torch still counts its offset in the shared storage; tracegrad
counts it from the detached tensor's own first element.
"""
from __future__ import annotations

import math
import operator
import sys
import warnings

import numpy as np
from numpy.lib.stride_tricks import as_strided as _np_as_strided

from . import memory_format as _mf
from .aliasing import OVERLAP, index_map
from .arithmetic import _err
from .dispatch import call, unviewed
from .shapes import _sizes
from .tensor_base import TensorBase, _leaving_capture, _scalar_name


def _chain(a):
    """``a`` and the objects its memory is borrowed through, down to the array that owns it
    (``.base`` links; ``as_strided`` puts a helper object in between)."""
    chain = [a]
    x = a.base
    while x is not None and len(chain) < 64:
        chain.append(x)
        x = getattr(x, "base", None)
    return chain


def _storage(t):
    """The array whose C-order memory is ``t``'s storage (see the module's docstring)."""
    root = t._base if t._base is not None else t
    a = root._data
    if t._base is None:
        owners = [x for x in _chain(a) if isinstance(x, np.ndarray)]
        own = owners[-1]
        if own is not a and own.dtype == a.dtype and own.flags.c_contiguous and own.ndim >= 1:
            return own
    return a


def _offset(t, store):
    """The position in ``store``'s C-order flattening of ``t``'s first element."""
    data = t._data
    item = data.itemsize
    start = store.__array_interface__["data"][0]
    ptr = data.__array_interface__["data"][0]
    if store.flags.c_contiguous or store.size == 0:
        return (ptr - start) // item
    # a storage in another order: the position of the element at that address
    if not data.size:
        return (ptr - start) // item
    return int(index_map(_np_as_strided(data, (1,), (item,)), store)[0])


def _flat(store, what):
    if not store.flags.c_contiguous:
        raise _err(f"tracegrad's {what} needs its storage in C order (make the tensor with "
                   ".contiguous() first)")
    return store.reshape(-1)


def _contiguous_strides(size):
    strides, acc = [], 1
    for n in reversed(size):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def _format_strides(size, fmt):
    """torch's strides of a ``size`` tensor laid out in the memory format ``fmt``."""
    if fmt is None or fmt is _mf.contiguous_format:
        return _contiguous_strides(size)
    if fmt is _mf.preserve_format:
        raise _err("Unsupported memory formatPreserve")
    rank = 4 if fmt is _mf.channels_last else 5
    if len(size) != rank:
        raise _err(f"required rank {rank} tensor to use channels_last"
                   f"{'' if rank == 4 else '_3d'} format")
    order = [1] + list(range(rank - 1, 1, -1)) + [0]        # C, then W, H, (D), then N
    strides, acc = [0] * rank, 1
    for d in order:
        strides[d] = acc
        acc *= max(size[d], 1)
    return tuple(strides)


def _check_sizes(size):
    for n in size:
        if n < 0:
            raise _err(f"Trying to create tensor with negative dimension {n}: {list(size)}")


def _torch_type(t):
    return t.type()


def _dtype_error(t, what):
    raise NotImplementedError(f"\"{what}\" not implemented for '{_scalar_name(t.dtype)}'")


# -- the Python scalars torch's apply_/map_/map2_ hand out and take back -------------------------
_INT_NAMES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}


def _unpack_double(obj):
    """CPython's ``PyFloat_AsDouble``: a float, ``__float__``, else ``__index__``."""
    if isinstance(obj, float):
        return float(obj)
    tp = type(obj)
    if hasattr(tp, "__float__"):
        return float(obj)
    if hasattr(tp, "__index__"):
        return float(operator.index(obj))
    raise TypeError(f"must be real number, not {tp.__name__}")


def _unpack_long(obj):
    """torch's ``THPUtils_unpackLong``: ``__index__`` (CPython's message), 64 bits."""
    v = operator.index(obj)
    if not -2 ** 63 <= v < 2 ** 63:
        raise ValueError("Overflow when unpacking long long")
    return v


def _checked(value, dtype):
    """c10's ``checked_convert``: an integer dtype takes ``value`` (a Python int or float)
    when it fits (a negative int wraps into an unsigned type down to minus its maximum);
    a float is truncated, and NaN or infinity does not fit."""
    info = np.iinfo(dtype)
    name = dtype.name
    if isinstance(value, float):
        if value != value or value < info.min or value > info.max:
            raise _err(f"value cannot be converted to type {name} without overflow")
        return int(value)
    if info.min == 0 and value < 0:
        if -value > info.max:
            raise _err(f"value cannot be converted to type {name} without overflow")
        return value % (info.max + 1)
    if value < info.min or value > info.max:
        raise _err(f"value cannot be converted to type {name} without overflow")
    return value


def _store(obj, dtype):
    """torch's ``store_scalar``: the Python value ``obj`` as an element of ``dtype``."""
    kind = dtype.kind
    if kind == "b":
        if isinstance(obj, float):
            return bool(obj)
        if isinstance(obj, complex):
            return obj != 0
        return operator.index(obj) != 0
    if dtype.name in _INT_NAMES:
        if isinstance(obj, float):
            return _checked(float(obj), dtype)
        return _checked(_unpack_long(obj), dtype)
    if kind == "c":
        if isinstance(obj, complex):
            value = obj
        elif hasattr(type(obj), "__complex__"):
            value = complex(obj)
        else:
            value = complex(_unpack_double(obj))
        if dtype.itemsize == 4:            # complex32 (chalf): through complex64
            return np.complex64(value)
        return value
    value = _unpack_double(obj)
    if dtype.itemsize < 4:                  # half, bfloat16: c10 converts through float
        with np.errstate(over="ignore"):
            return np.float32(value)
    return value


def _check_callable(fn):
    if not callable(fn):
        raise TypeError(f"'{type(fn).__name__}' object is not callable")


def _apply(self, fn, others, what):
    """``self``'s elements, in its index order, replaced one by one by ``fn(element,
    *the others' elements)`` (Python scalars), each written as soon as it is computed."""
    _leaving_capture(f"Tensor.{what}")
    data = self._concrete(what)
    if data.size and not data.flags.writeable:
        raise RuntimeError(OVERLAP)
    dtype = data.dtype
    values = [o._data for o in others]
    with np.errstate(over="ignore", invalid="ignore"):
        for idx in np.ndindex(*data.shape):
            args = (data[idx].item(),) + tuple(v[idx].item() for v in values)
            data[idx] = _store(fn(*args), dtype)
    return self


def _require_tensor(x, what, name, pos):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{what}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


class MiscMethods:
    __slots__ = ()

    # -- conjugate and negative bits ---------------------------------------------------------
    def is_conj(self):
        """False: tracegrad conjugates eagerly (no lazily conjugated views)."""
        return False

    def is_neg(self):
        """False: no lazily negated views."""
        return False

    def resolve_conj(self):
        return self

    def resolve_neg(self):
        return self

    def conj_physical(self):
        """A conjugated copy of a complex tensor; a real tensor itself (as torch's)."""
        if self.dtype.kind != "c":
            return self
        return call(np.conj, self, name="ConjPhysicalBackward0")

    def conj_physical_(self):
        if self.dtype.kind != "c":
            # torch's checks and version count of an in-place operation, on a real tensor
            return self._inplace(lambda x: x, name="ConjPhysicalBackward1")
        return self._inplace(np.conj, name="ConjPhysicalBackward1")

    # -- queries -----------------------------------------------------------------------------
    def is_nonzero(self):
        n = self.numel()
        if n == 0:
            raise _err("Boolean value of Tensor with no values is ambiguous")
        if n > 1:
            raise _err("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._concrete("is_nonzero").reshape(()) != 0)

    def is_same_size(self, other):
        _require_tensor(other, "is_same_size", "other", 1)
        return tuple(self.shape) == tuple(other.shape)

    def ndimension(self):
        return self.dim()

    @property
    def name(self):
        """None: tracegrad has no named tensors (torch's ``name`` is None unless set by
        the legacy Python-side ``Variable`` API)."""
        return None

    @name.setter
    def name(self, value):
        raise AttributeError("attribute 'name' of 'torch._C.TensorBase' objects is not writable")

    @property
    def volatile(self):
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning,
                      stacklevel=2)
        return False

    @volatile.setter
    def volatile(self, value):
        warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` "
                      "instead.", UserWarning, stacklevel=2)

    def dim_order(self, *, ambiguity_check=False):
        """torch's ``Tensor.dim_order`` (torch/_tensor.py), on this tensor's strides."""
        if getattr(self, "is_sparse", False):
            raise AttributeError(f"Can't get dim order on sparse type: {self.type()} Use "
                                 "Tensor.to_dense() to convert to a dense tensor first.")
        bad = TypeError("The ambiguity_check argument must be a bool or a list of memory "
                        "formats.")
        if not isinstance(ambiguity_check, bool):
            if not isinstance(ambiguity_check, list):
                raise bad
            if not all(isinstance(f, _mf.memory_format) for f in ambiguity_check):
                raise bad
        sizes, strides = tuple(self.shape), tuple(self.stride())
        formats = ambiguity_check if isinstance(ambiguity_check, list) else []
        check = ambiguity_check if isinstance(ambiguity_check, bool) else True
        multiple = any(a == b for a, b in zip(strides, strides[1:])) or 1 in sizes
        if check and multiple and \
                sum(bool(self.is_contiguous(memory_format=f)) for f in formats) != 1:
            raise _err("The tensor does not have unique dim order, or cannot map to exact "
                       "one of the given memory formats.")
        perm, ambiguous = _logical_to_physical(self, sizes, strides, ambiguity_check)
        if ambiguous:
            raise _err("The tensor does not have unique dim order.")
        return tuple(perm)

    # -- activations as methods --------------------------------------------------------------
    def prelu(self, weight):
        """``F.prelu``'s math: ``x`` where positive, ``weight * x`` elsewhere, one slope per
        channel (dimension 1) or one for all; torch's dtype errors."""
        _require_tensor(weight, "prelu", "weight", 1)
        if self.dtype.kind != "f":
            _dtype_error(self, "prelu_cpu")
        if weight.dtype != self.dtype:
            raise _err(f"prelu: Type promoting not supported. Got {_scalar_name(self.dtype)} "
                       f"and {_scalar_name(weight.dtype)}")
        if weight.dim() > 1:
            raise _err(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = "
                       f"{weight.dim()}")
        n = weight.numel()
        if n != 1:
            if self.dim() == 0:
                raise _err("Not allow zero-dim input tensor.")
            channels = self.shape[1] if self.dim() >= 2 else 1
            if channels != n:       # (torch's message as it is: nn.PReLU's test reads it)
                raise RuntimeError(f"Mismatch of parameter numbers and input channel size. "
                                   f"Found parameter numbers = {n} and channel size = "
                                   f"{channels}.")
        shape = [1] * self.dim()
        if n != 1 and self.dim() >= 2:
            shape[1] = n

        def fn(x, w):
            w = np.reshape(w, tuple(shape)) if n != 1 else np.reshape(w, ())
            return np.where(x > 0, x, x * w)
        return call(fn, self, weight, name="PreluKernelBackward0")

    def hardshrink(self, lambd=0.5):
        """``x`` where ``|x| > lambd``, else 0 (``F.hardshrink``'s math)."""
        if self.dtype.kind != "f":
            _dtype_error(self, "hardshrink_cpu")
        # (x * 0.0 + 0.0: a zero of x's dtype, never -0.0, as torch's)
        return call(lambda x: np.where((x > lambd) | (x < -lambd), x, x * 0.0 + 0.0), self,
                    name="HardshrinkBackward0")

    # -- copies and splits -------------------------------------------------------------------
    def narrow_copy(self, dim, start, length):
        if isinstance(start, TensorBase):
            start = start.item()
        dim, start, length = int(dim), int(start), int(length)
        nd = self.dim()
        if not -nd <= dim < nd:
            raise _err("Expected dim < static_cast<int64_t>(self_sizes.size()) to be true, but "
                       "got false.  (Could this error message be improved?  If so, please "
                       "report an enhancement request to PyTorch.)")
        dim %= nd
        size = self.shape[dim]
        if start < 0:
            start += size
        if start < 0 or length < 0 or start + length > size:
            raise _err(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
        key = (slice(None),) * dim + (slice(start, start + length),)
        return call(lambda x: x[key] + 0 if x.dtype.kind != "b" else x[key].copy(), self,
                    name="NarrowCopyBackward0")

    def unsafe_split_with_sizes(self, split_sizes, dim=0):
        """``split_with_sizes``'s pieces as tensors of their own (no views for autograd)."""
        sizes = [int(s) for s in split_sizes]
        d = dim % self.dim() if self.dim() else dim
        n = self.shape[d]
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise _err(f"split_with_sizes expects split_sizes to sum exactly to {n} (input "
                       f"tensor's size at dimension {dim}), but got split_sizes={sizes}")
        pieces = []
        for p in self.split(sizes, d):
            p = unviewed(p)
            if p.grad_fn is not None:
                p.grad_fn._name = "UnsafeSplitWithSizesBackward0"
            pieces.append(p)
        return tuple(pieces)

    # -- memory ------------------------------------------------------------------------------
    def storage_offset(self):
        """The offset, in elements, of this tensor's first element in its storage."""
        if self._data is None:
            self._concrete("storage_offset")
        return int(_offset(self, _storage(self)))

    def data_ptr(self):
        """The address of the first element (0 for a tensor with no elements, as torch's)."""
        _leaving_capture("Tensor.data_ptr")
        data = self._concrete("data_ptr") if self._data is None else self._data
        if data.size == 0:
            return 0
        return int(data.__array_interface__["data"][0])

    def is_pinned(self, device=None):
        if device is not None:
            warnings.warn("The argument 'device' of Tensor.is_pinned() is deprecated. Please "
                          "do not pass this argument.", DeprecationWarning, stacklevel=2)
        return False

    def pin_memory(self, device=None):
        """torch's error on a machine with no accelerator (tracegrad runs on the CPU)."""
        if device is not None:
            warnings.warn("The argument 'device' of Tensor.pin_memory() is deprecated. Please "
                          "do not pass this argument.", DeprecationWarning, stacklevel=2)
            warnings.warn("The argument 'device' of Tensor.is_pinned() is deprecated. Please "
                          "do not pass this argument.", DeprecationWarning, stacklevel=2)
            kind = str(getattr(device, "type", device)).split(":")[0]
            if kind == "cpu":
                raise _err("CPU device type not an accelerator.")
        raise _err("Cannot access accelerator device when none is available.")

    def is_shared(self):
        """False: tracegrad's tensors live in their process's memory."""
        return False

    def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                          pin_memory=False, requires_grad=False):
        """An uninitialised tensor (tracegrad: zeros) with ``size`` and ``stride``."""
        size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
        if len(size) != len(stride):
            raise _err(f"dimensionality of sizes ({len(size)}) must match dimensionality of "
                       f"strides ({len(stride)})")
        _check_sizes(size)
        if any(s < 0 for s in stride):
            raise _err(f"Storage size calculation overflowed with sizes={list(size)} and "
                       f"strides={list(stride)}")
        if device is not None:
            from .device import resolve
            resolve(device)
        dt = np.dtype(dtype) if dtype is not None else self.dtype
        need = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
        store = np.zeros(need, dt)
        data = _np_as_strided(store, size, tuple(s * dt.itemsize for s in stride))
        t = self._plain(data)
        if requires_grad:
            t.requires_grad = True
        return t

    def resize_(self, *sizes, memory_format=None):
        """torch's ``resize_``: new sizes over the same storage (contiguous strides, from the
        storage offset), the storage grown when too small (growth shows zeros here; torch
        shows uninitialised memory). The same sizes and no memory format: no change."""
        if not sizes:
            raise TypeError('resize_() missing 1 required positional arguments: "size"')
        return _resize(self, _sizes(sizes), memory_format)

    def resize_as_(self, the_template, memory_format=None):
        _require_tensor(the_template, "resize_as_", "the_template", 1)
        fmt = memory_format
        if fmt is _mf.preserve_format:
            fmt = _suggest(the_template)
        return _resize(self, tuple(the_template.shape), fmt)

    def as_strided_(self, size, stride, storage_offset=None):
        """This tensor becoming its ``as_strided`` view, in place."""
        self._check_inplace(fills=True)
        new = self.as_strided(size, stride, storage_offset)
        self._data = new._data
        if new._tracer is not None:
            self._tracer = new._tracer
            h = self.grad_fn
            if h is not None:
                h._name = "AsStridedBackward1"
        self._vc.v += 1
        h = self.grad_fn
        if h is not None:
            h._saved_version = self._vc.v
        return self

    # -- Python callables per element --------------------------------------------------------
    def apply_(self, callable):  # noqa: A002  (torch's parameter name)
        """``callable(x)`` for each element ``x`` (a Python scalar), in place."""
        _check_callable(callable)
        if self.requires_grad:
            raise _err("Can't call apply_() on Variable that requires grad. Use "
                       "var.detach().apply_() instead.")
        return _apply(self, callable, (), "apply_")

    def map_(self, tensor, callable):  # noqa: A002
        """``callable(x, y)`` for each element of this tensor and of ``tensor`` (broadcast
        to this tensor's shape), in place."""
        _require_tensor(tensor, "map_", "other", 1)
        if self.requires_grad or tensor.requires_grad:
            raise _err("Can't call map_() on Variable that requires grad. Use "
                       "var.detach().map_() instead.")
        if tensor.dtype != self.dtype:
            raise TypeError(f"map_: expected {_torch_type(self)} for 'other' (got "
                            f"{_torch_type(tensor)})")
        other = _expanded(tensor, self)
        _check_callable(callable)
        return _apply(self, callable, (other,), "map_")

    def map2_(self, x, y, callable):  # noqa: A002
        _require_tensor(x, "map2_", "x", 1)
        _require_tensor(y, "map2_", "y", 2)
        if self.requires_grad or x.requires_grad or y.requires_grad:
            raise _err("Can't call map2_() on Variable that requires grad. Use "
                       "var.detach().map2_() instead.")
        for t, arg in ((x, "x"), (y, "y")):
            if t.dtype != self.dtype:
                raise TypeError(f"map2_: expected {_torch_type(self)} for argument '{arg}' "
                                f"(got {_torch_type(t)})")
        xs, ys = _expanded(x, self), _expanded(y, self)
        _check_callable(callable)
        return _apply(self, callable, (xs, ys), "map2_")


def _expanded(t, like):
    """``t`` expanded to ``like``'s shape (torch's ``expand_inplace``), its error words."""
    shape = tuple(like.shape)
    if len(shape) < t.dim():
        raise _err(f"expand({t.type()}{{{list(t.shape)}}}, size={list(shape)}): the number of "
                   f"sizes provided ({len(shape)}) must be greater or equal to the number of "
                   f"dimensions in the tensor ({t.dim()})")
    return t.expand(shape)


def _suggest(t):
    """torch's ``suggest_memory_format``: channels-last when the strides say so."""
    if t.dim() in (4, 5) and not t.is_contiguous():
        fmt = _mf.channels_last if t.dim() == 4 else _mf.channels_last_3d
        if t.is_contiguous(memory_format=fmt):
            return fmt
    return _mf.contiguous_format


def _sole_owner(t):
    """Whether nothing but ``t`` holds its memory: no view, no detached tensor, no recorded
    graph holds its array or an array it borrows from. (Each link of the chain is counted
    by its one holder, the list, the loop's name and ``getrefcount``'s argument.)"""
    chain = _chain(t._data)
    return all(sys.getrefcount(x) <= 4 for x in chain)


def _resize(self, size, fmt):
    _leaving_capture("Tensor.resize_")
    if fmt is not None:
        _mf.check(fmt, "resize_")
    if self.requires_grad:
        raise _err("cannot resize variables that require grad")
    if any(n < 0 for n in size):
        raise _err("numel: integer multiplication overflow")
    old = tuple(self.shape)
    if size == old and fmt is None:
        return self
    strides = _format_strides(size, fmt) if fmt is not None else _contiguous_strides(size)
    store = _storage(self)
    offset = _offset(self, store)
    numel = math.prod(size)
    item = self._data.itemsize
    if not store.flags.c_contiguous:
        _flat(store, "resize_")
    if offset + numel > store.size:
        del store           # (not counted as a holder of the memory below)
        if self._base is not None or not _sole_owner(self):
            raise _err("tracegrad's resize_ cannot grow a storage other tensors share (torch "
                       "moves them all to the grown storage; tracegrad's tensors are NumPy "
                       "arrays): resize a clone()")
        flat = _storage(self).reshape(-1)
        grown = np.zeros(offset + numel, flat.dtype)
        grown[:flat.size] = flat
        flat = grown
    else:
        flat = store.reshape(-1)
    if strides == _contiguous_strides(size):
        data = flat[offset:offset + numel].reshape(size)
    else:
        data = _np_as_strided(flat[offset:], size, tuple(s * item for s in strides))
        if not flat.flags.writeable:
            data.flags.writeable = False
    self._data = data
    if size != old:
        self._vc.v += 1
    return self


def _logical_to_physical(t, shape, strides, ambiguity_check):
    """torch._prims_common.compute_elementwise_output_logical_to_physical_perm, for one
    tensor."""
    ndim = len(shape)
    if ndim == 0:
        return [], False
    if ndim == 1:
        return [0], False
    contiguous = bool(t.is_contiguous())
    last = bool(ndim in (4, 5) and t.is_contiguous(
        memory_format=_mf.channels_last if ndim == 4 else _mf.channels_last_3d))
    if contiguous and not last:
        return list(range(ndim)), False
    if last and not contiguous:
        return [0, *range(2, ndim), 1], False

    def ge(a, b):
        if b == 0:
            return True
        if a == 0:
            return False
        return a >= b or a % b == 0

    def should_swap(a, b):
        sa, sb = strides[a], strides[b]
        if sa == 0 or sb == 0:
            return 0
        if sa == sb:
            return 0 if ge(shape[b], shape[a]) else 1
        if ge(sb, sa):
            return -1
        if ge(sa, sb):
            return 1
        return 0

    perm = list(reversed(range(ndim)))
    for i in range(1, ndim):
        dim1 = i
        for dim0 in reversed(range(i)):
            c = should_swap(perm[dim0], perm[dim1])
            if c > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif c < 0:
                break
    ambiguous = False
    if ambiguity_check:
        for i in range(ndim - 1):
            if should_swap(perm[i], perm[i + 1]) != -1:
                ambiguous = True
                break
    return list(reversed(perm)), ambiguous
