"""The module-level functions (``tg.add``, ``tg.cat``, ``tg.stack``, ``tg.where``, ...):
the ``FUNCTIONS`` table the package exports.
"""
from __future__ import annotations

import numpy as np

from .arithmetic import _UNARY, _as_tensor, _check_broadcast, _elementwise, _err
from .dispatch import call
from .promotion import cast, result_type
from .shapes import reshape
from .tensor import Tensor, default_dtype


# -- module-level functions ----------------------------------------------------------------
def _method_function(name):
    def fn(input, *args, **kwargs):
        return getattr(_as_tensor(input), name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"``tg.{name}(t, ...)`` is ``t.{name}(...)``."
    return fn


FUNCTIONS = {}
for _name in ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "pow",
              "matmul", "mm", "bmm", "mv", "dot", "clamp", "clip", "sum", "mean", "prod", "std",
              "var", "max", "min", "amax", "amin", "nansum", "nanmean", "std_mean",
              "var_mean", "argmax", "argmin", "logsumexp", "softmax",
              "log_softmax", "norm", "cumsum", "reshape", "flatten", "unflatten", "squeeze",
              "unsqueeze", "permute", "transpose", "t", "swapaxes", "narrow", "split", "chunk",
              "unbind", "gather", "flip", "roll", "masked_fill", "maximum", "minimum", "all",
              "any", "eq", "ne", "lt", "le", "gt", "ge", "clone", "square", "numel",
              "floor_divide", "remainder", "fmod",
              *_UNARY]:
    FUNCTIONS[_name] = _method_function(_name)


def _tensor_list(tensors):
    tensors = list(tensors)
    for k, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got "
                            f"{type(t).__name__}")
    return tensors


def cat(tensors, dim=0):
    tensors = _tensor_list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    ref = tuple(tensors[0].shape)
    for k, t in enumerate(tensors):
        if t.dim() == 0:
            raise _err(f"zero-dimensional tensor (at position {k}) cannot be concatenated")
    for k, t in enumerate(tensors[1:], 1):
        s = tuple(t.shape)
        if len(s) != len(ref):
            raise _err(f"Tensors must have same number of dimensions: got {len(ref)} and "
                               f"{len(s)}")
        d = dim % len(ref)
        for i, (a, b) in enumerate(zip(ref, s)):
            if i != d and a != b:
                raise _err(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {a} but got size {b} for tensor number {k} in "
                                   "the list.")
    dtype = result_type(*tensors, default_float=default_dtype())   # torch's, not NumPy's
    return call(lambda ts: np.concatenate([cast(t, dtype) for t in ts], axis=dim), tensors,
                name="CatBackward0")


def stack(tensors, dim=0):
    tensors = _tensor_list(tensors)
    if not tensors:
        raise _err("stack expects a non-empty TensorList")
    for k, t in enumerate(tensors[1:], 1):
        if tuple(t.shape) != tuple(tensors[0].shape):
            raise _err(f"stack expects each tensor to be equal size, but got "
                       f"{list(tensors[0].shape)} at entry 0 and {list(t.shape)} at entry {k}")
    dtype = result_type(*tensors, default_float=default_dtype())
    return call(lambda ts: np.stack([cast(t, dtype) for t in ts], axis=dim), tensors,
                name="StackBackward0")


def where(condition, input=None, other=None):
    if input is None:
        return tuple(Tensor._plain(i.astype(np.int64)) for i in np.nonzero(_as_tensor(condition)._data))
    cond = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
    _check_broadcast(input, other)
    _check_broadcast(cond, input)
    _check_broadcast(cond, other)
    return _elementwise(lambda a, b: np.where(cond, a, b), input, other, name="WhereBackward0")


def outer(a, b):
    # PyTorch: a.reshape(-1, 1) * b
    return _elementwise(np.multiply, reshape(_as_tensor(a), (-1, 1)), b, name="MulBackward0")


def einsum(spec, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return call(lambda *xs: np.einsum(spec, *xs), *operands, name="EinsumBackward0")


def _number_first(name, reflected):
    """``tg.add(2.5, t)``: PyTorch takes a number as the first operand as it takes a second
    one (a wrapped number, with its promotion), through the reflected operator."""
    method = FUNCTIONS[name]

    def fn(input, other, *args, **kwargs):
        if not isinstance(input, Tensor) and isinstance(other, Tensor) and not args and \
                not kwargs:
            return reflected(other, input)
        return method(input, other, *args, **kwargs)
    fn.__name__, fn.__doc__ = name, method.__doc__
    return fn


def _tensor_first(name):
    method = FUNCTIONS[name]

    def fn(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return method(input, *args, **kwargs)
    fn.__name__, fn.__doc__ = name, method.__doc__
    return fn


for _name, _rop in [("add", Tensor.__radd__), ("sub", Tensor.__rsub__),
                    ("subtract", Tensor.__rsub__), ("mul", Tensor.__rmul__),
                    ("multiply", Tensor.__rmul__), ("div", Tensor.__rtruediv__),
                    ("divide", Tensor.__rtruediv__), ("true_divide", Tensor.__rtruediv__),
                    ("floor_divide", Tensor.__rfloordiv__), ("remainder", Tensor.__rmod__),
                    ("pow", Tensor.__rpow__)]:
    FUNCTIONS[_name] = _number_first(_name, _rop)
for _name in ("maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "fmod"):
    FUNCTIONS[_name] = _tensor_first(_name)
FUNCTIONS.update(cat=cat, concat=cat, concatenate=cat, stack=stack, where=where, outer=outer,
                 ger=outer, einsum=einsum)
del _name, _rop


def _default():
    return default_dtype()
