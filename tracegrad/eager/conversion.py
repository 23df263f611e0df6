"""Tensor dtype and device conversion: ``to``, ``type``, ``float()`` & co., ``new_tensor``.
"""
from __future__ import annotations

import numpy as np

from .device import CPU as _CPU
from .device import is_device as _is_device
from .device import resolve as _resolve
from .dispatch import call
from .promotion import result_type
from .shapes import _clone, _sizes
from .tensor import Tensor, default_dtype


# -- types ---------------------------------------------------------------------------------
def to_args(args, kwargs):
    """``(device, dtype, copy)`` from the arguments of ``Tensor.to`` / ``Module.to``:
    ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other_tensor)``, keywords
    ``device=``, ``dtype=``, ``copy=``, ``non_blocking=``. A device other than the CPU
    raises PyTorch's error; the returned device is None when none was named."""
    dev, dtype = kwargs.get("device"), kwargs.get("dtype")
    copy = bool(kwargs.get("copy", False))
    for a in args:
        if isinstance(a, Tensor):
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


def to(self, *args, **kwargs):
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``: this tensor when
    nothing changes (unless ``copy=True``), else a converted copy (``ToCopyBackward0``)."""
    _, dtype, copy = to_args(args, kwargs)
    if dtype is None or dtype == self.dtype:
        return call(_clone, self, name="ToCopyBackward0") if copy else self
    return call(lambda x: x.astype(dtype), self, name="ToCopyBackward0")


def _cast(dtype):
    def cast(self, memory_format=None):
        return to(self, dtype)
    return cast


def type_(self, dtype=None, non_blocking=False, **kwargs):
    """``t.type()``: PyTorch's legacy name (``"torch.FloatTensor"``); ``t.type(tg.float64)``
    or ``t.type("torch.DoubleTensor")``: the tensor converted."""
    from .promotion import dtype_of_type_name, type_name
    if dtype is None:
        return "torch." + type_name(self.dtype)
    if isinstance(dtype, str) and dtype.startswith("torch."):
        dtype = dtype_of_type_name(dtype)
    elif isinstance(dtype, type) and hasattr(dtype, "_dtype"):     # tg.FloatTensor
        dtype = dtype._dtype
    return to(self, dtype)


def _cuda(self, *args, **kwargs):
    from .device import device, unavailable
    raise unavailable(device("cuda"))


Tensor.to, Tensor.type = to, type_
Tensor.type_as = lambda self, other: to(self, other.dtype)
Tensor.float, Tensor.double = _cast(np.float32), _cast(np.float64)
Tensor.half = _cast(np.float16)
Tensor.long, Tensor.int, Tensor.bool = _cast(np.int64), _cast(np.int32), _cast(np.bool_)
Tensor.short, Tensor.char, Tensor.byte = _cast(np.int16), _cast(np.int8), _cast(np.uint8)
Tensor.cfloat, Tensor.cdouble = _cast(np.complex64), _cast(np.complex128)
Tensor.cpu = lambda self, *a, **k: self
Tensor.cuda = _cuda


def new_tensor(self, data, dtype=None, requires_grad=False):
    from .creation import tensor
    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


Tensor.new_tensor = new_tensor
Tensor.new_zeros = lambda self, *size, dtype=None: Tensor._plain(
    np.zeros(_sizes(size), dtype or self.dtype))
Tensor.new_ones = lambda self, *size, dtype=None: Tensor._plain(
    np.ones(_sizes(size), dtype or self.dtype))

