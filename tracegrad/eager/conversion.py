"""Tensor dtype and device conversion (``ConversionMethods``): ``to``, ``type``,
``float()`` & co., ``new_tensor``, ``new_zeros``, ``new_ones``.
"""
from __future__ import annotations

import numpy as np

from . import memory_format as _memory_format
from .device import CPU as _CPU
from .device import is_device as _is_device
from .device import resolve as _resolve
from .dispatch import call
from .promotion import result_type
from .shapes import _clone, _sizes
from .tensor_base import TensorBase, as_array, default_dtype


# -- types ---------------------------------------------------------------------------------
def to_args(args, kwargs):
    """``(device, dtype, copy)`` from the arguments of ``Tensor.to`` / ``Module.to``:
    ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other_tensor)``, keywords
    ``device=``, ``dtype=``, ``copy=``, ``non_blocking=``. A device other than the CPU
    raises PyTorch's error; the returned device is None when none was named."""
    dev, dtype = kwargs.get("device"), kwargs.get("dtype")
    copy = bool(kwargs.get("copy", False))
    for a in args:
        if isinstance(a, TensorBase):
            dtype = a.dtype
            dev = _CPU
        elif _is_device(a) or isinstance(a, int) and not isinstance(a, bool):
            dev = a
        elif isinstance(a, bool):
            continue                        # the old positional non_blocking / copy
        elif a is not None:
            try:
                dtype = np.dtype(a)
            except TypeError:
                raise TypeError(f"to() received an invalid combination of arguments - got "
                                f"({type(a).__name__})") from None
    if dev is not None:
        dev = _resolve(dev)
    return dev, (None if dtype is None else np.dtype(dtype)), copy


def public_result_type(tensor1, tensor2):
    """``tg.result_type``: the dtype PyTorch gives an arithmetic operation on the two
    operands (tensors or Python numbers)."""
    return result_type(tensor1, tensor2, default_float=default_dtype())


class ConversionMethods:
    """``Tensor``'s dtype and device conversions."""

    __slots__ = ()

    def to(self, *args, **kwargs):
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``: this tensor when
        nothing changes (unless ``copy=True``), else a converted copy (``ToCopyBackward0``)."""
        _memory_format.check(kwargs.pop("memory_format", None), "to")
        _, dtype, copy = to_args(args, kwargs)
        if dtype is None or dtype == self.dtype:
            return call(_clone, self, name="ToCopyBackward0") if copy else self
        return call(lambda x: x.astype(dtype), self)      # (ToCopyBackward0: convert's)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        """``t.type()``: PyTorch's legacy name (``"torch.FloatTensor"``); ``t.type(tg.float64)``
        or ``t.type("torch.DoubleTensor")``: the tensor converted."""
        from .promotion import dtype_of_type_name, type_name
        if dtype is None:
            return "torch." + type_name(self.dtype)
        if isinstance(dtype, str) and dtype.startswith("torch."):
            dtype = dtype_of_type_name(dtype)
        elif isinstance(dtype, type) and hasattr(dtype, "_dtype"):     # tg.FloatTensor
            dtype = dtype._dtype
        return self.to(dtype)

    def type_as(self, other):
        return self.to(other.dtype)

    def float(self, memory_format=None):  # noqa: A003
        return self.to(np.float32)

    def double(self, memory_format=None):
        return self.to(np.float64)

    def half(self, memory_format=None):
        return self.to(np.float16)

    def long(self, memory_format=None):
        return self.to(np.int64)

    def int(self, memory_format=None):  # noqa: A003
        return self.to(np.int32)

    def bool(self, memory_format=None):  # noqa: A003
        return self.to(np.bool_)

    def short(self, memory_format=None):
        return self.to(np.int16)

    def char(self, memory_format=None):
        return self.to(np.int8)

    def byte(self, memory_format=None):
        return self.to(np.uint8)

    def cfloat(self, memory_format=None):
        return self.to(np.complex64)

    def cdouble(self, memory_format=None):
        return self.to(np.complex128)

    def cpu(self, *args, **kwargs):
        return self

    def cuda(self, *args, **kwargs):
        from .device import device, unavailable
        raise unavailable(device("cuda"))

    # -- new tensors of this one's dtype (``tg.tensor``, ``tg.zeros``, ... make them so) ----
    def new_tensor(self, data, dtype=None, requires_grad=False):
        return _new(self, as_array(data, dtype or self.dtype), None, requires_grad)

    def new_zeros(self, *size, dtype=None):
        return self._plain(np.zeros(_sizes(size), dtype or self.dtype))

    def new_ones(self, *size, dtype=None):
        return self._plain(np.ones(_sizes(size), dtype or self.dtype))

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        return _new(self, np.full(_sizes((size,)), fill_value, dtype or self.dtype), device,
                    requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        return _new(self, np.zeros(_sizes(size), dtype or self.dtype), device, requires_grad)


def _new(self, data, device, requires_grad):
    if device is not None:
        _resolve(device)
    t = self._plain(data)
    if requires_grad:
        t.requires_grad = True
    return t
