"""PyTorch's type promotion for the eager operations (``torch.result_type``).

NumPy 2 promotes by value kind too, but treats 0-d arrays as strong and crosses
categories by width (``int64 + float32`` is float64 there, float32 in PyTorch). PyTorch
ranks the operands in three classes — tensors with dimensions, 0-d tensors, Python
numbers — and a lower class changes the result only when its category (bool < integer <
floating < complex) is higher; a Python float then takes the default dtype.
"""
from __future__ import annotations

import numpy as np

from ..tracer import Tracer

_CATEGORIES = "biufc"


def category(dtype) -> int:
    return _CATEGORIES.index(np.dtype(dtype).kind.replace("u", "i"))


def promote_types(a, b):
    """``torch.promote_types``: the higher category wins outright (``int64`` with
    ``float16`` is ``float16``); within one category, the wider type."""
    if a is None:
        return b
    if b is None:
        return a
    ca, cb = category(a), category(b)
    if ca != cb and min(ca, cb) < _FLOAT:
        return np.dtype(a if ca > cb else b)
    # one category, or floating with complex: the wider precision (float64 with complex64
    # is complex128)
    return np.promote_types(a, b)


_FLOAT = _CATEGORIES.index("f")


def _combine(higher, lower):
    """A class of operands (tensors with dimensions, then 0-d tensors) with the dtype of
    a lower class: the lower one counts only when its category is higher, and a complex
    one then keeps the floating precision of the higher class (float32 with a 0-d
    complex128 is complex64)."""
    if higher is None:
        return lower
    if lower is None or category(higher) >= category(lower):
        return higher
    if category(lower) == _FLOAT + 1 and category(higher) == _FLOAT:
        return np.result_type(higher, np.complex64)
    return lower


def result_type(*operands, default_float):
    """The dtype PyTorch gives an elementwise operation on ``operands`` (tensors, NumPy
    arrays, Python numbers; ``None`` is skipped)."""
    dims = zero = wrapped = None
    for x in operands:
        if x is None:
            continue
        if isinstance(x, (bool, np.bool_)):
            wrapped = promote_types(wrapped, np.bool_)
        elif isinstance(x, (int, np.integer)) and not isinstance(x, np.ndarray):
            wrapped = promote_types(wrapped, np.int64)
        elif isinstance(x, (float, np.floating)):
            wrapped = promote_types(wrapped, default_float)
        elif isinstance(x, complex):
            wrapped = promote_types(wrapped, np.complex128 if default_float == np.float64
                                    else np.complex64)
        else:
            dtype = x.dtype
            if len(x.shape) > 0:
                dims = promote_types(dims, dtype)
            else:
                zero = promote_types(zero, dtype)
    out = _combine(dims, _combine(zero, wrapped))
    return None if out is None else np.dtype(out)


def cast(value, dtype):
    """An operand given to the NumPy code, converted to ``dtype`` (a Python number stays:
    NumPy treats it as weak, so it takes the arrays' dtype)."""
    if isinstance(value, (Tracer, np.ndarray, np.generic)) and value.dtype != dtype:
        return value.astype(dtype)
    return value


def promoted(fn, dtype):
    """``fn`` applied to its operands converted to ``dtype``."""
    def run(*values):
        return fn(*(cast(v, dtype) for v in values))
    run.__name__ = getattr(fn, "__name__", "op")
    run.__wrapped__ = getattr(fn, "__wrapped__", fn)
    return run


_TYPE_NAMES = {"float64": "DoubleTensor", "float32": "FloatTensor", "float16": "HalfTensor",
               "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
               "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor",
               "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor"}


def type_name(dtype):
    """PyTorch's legacy type name of ``dtype`` (``DoubleTensor``)."""
    name = np.dtype(dtype).name
    return _TYPE_NAMES.get(name, f"{name}Tensor")


def dtype_of_type_name(name):
    """The dtype of a legacy type name (``"torch.DoubleTensor"``)."""
    short = name.removeprefix("torch.")
    for dt, n in _TYPE_NAMES.items():
        if n == short:
            return np.dtype(dt)
    raise ValueError(f"invalid type: '{name}'")


def public_promote_types(type1, type2):
    """``tg.promote_types``: PyTorch's ``torch.promote_types`` of two dtypes."""
    return promote_types(np.dtype(type1), np.dtype(type2))


def can_cast(from_, to):
    """``tg.can_cast``: whether PyTorch's casting rules allow ``from_`` to ``to`` (no move
    to a lower category: float to integer, complex to float, anything but bool to bool)."""
    return category(from_) <= category(to)
