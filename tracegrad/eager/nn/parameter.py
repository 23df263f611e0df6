"""``tg.nn.parameter``: ``Parameter``, ``Buffer`` and the lazy modules' placeholders
``UninitializedParameter`` / ``UninitializedBuffer``.

An uninitialized tensor holds no values (an empty array) until ``materialize(shape)``
gives it its shape and turns it into a ``Parameter`` (or a plain tensor) in place, so an
optimizer made before a lazy module's first call keeps working with it. Until then reading
its shape raises ``RuntimeError`` and the tensor methods listed in ``_REFUSED`` raise
PyTorch's ``ValueError``; ``size()``, ``dtype``, ``requires_grad``, ``to``/``float``/...
are allowed, as in PyTorch. (Functions that read the values directly, e.g. ``F.linear``,
fail with a shape error rather than PyTorch's ValueError.)
"""
from __future__ import annotations

import numpy as np

from ..creation import empty
from ..tensor import Tensor
from .modules import Parameter

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]


class Buffer(Tensor):
    """``self.x = nn.Buffer(t, persistent=...)`` registers ``t`` (detached) as a buffer;
    the module keeps a plain tensor sharing ``t``'s memory."""

    _is_buffer = True

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = empty(0)
        b = object.__new__(cls)
        b._set_fields(data._data if isinstance(data, Tensor) else np.asarray(data),
                      data.requires_grad if isinstance(data, Tensor) else False)
        b.persistent = persistent
        return b

    def __init__(self, data=None, *, persistent=True):
        pass

    def _as_tensor(self):
        t = Tensor._plain(self._data)
        if self._requires_grad:
            t.requires_grad_(True)
        return t


def _refuse(name):
    def method(self, *args, **kwargs):
        raise ValueError(
            f"Attempted to use an uninitialized parameter in <method '{name}' of "
            "'torch._C.TensorBase' objects>. This error happens when you are using a "
            f"`LazyModule` or explicitly manipulating `torch.nn.parameter.{type(self).__name__}` "
            "objects. When using LazyModules Call `forward` with a dummy batch to initialize "
            "the parameters before calling torch functions")
    method.__name__ = name
    return method


_REFUSED = ("numel", "dim", "view", "reshape", "detach", "clone", "add", "sub", "mul", "div",
            "matmul", "mm", "t", "sum", "mean", "norm", "abs", "__add__", "__radd__",
            "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__matmul__",
            "__neg__", "__getitem__", "add_", "mul_", "zero_", "fill_", "uniform_",
            "normal_", "numpy", "tolist", "item", "contiguous", "flatten", "permute",
            "transpose", "unsqueeze", "squeeze", "expand", "__len__", "__iter__")


class _UninitializedMixin:
    __slots__ = ()
    _uninitialized = True

    def materialize(self, shape, device=None, dtype=None):
        """Give the tensor ``shape`` (uninitialized values, as ``torch.empty``) and turn it
        into ``cls_to_become`` in place."""
        dtype = self._data.dtype if dtype is None else dtype
        self._data = empty(*shape, dtype=dtype)._data if shape else \
            empty((), dtype=dtype)._data
        self._input = None
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually "
            "happens in `load_state_dict` when trying to load an uninitialized parameter into an "
            "initialized one. Call `forward` to initialize the parameters before accessing "
            "their attributes.")

    def size(self, dim=None):
        from ..tensor import Size
        return Size((0,)) if dim is None else (0,)[dim]

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call "
                           "`forward` to initialize the parameters before calling "
                           "`module.share_memory()`.")

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __reduce_ex__(self, protocol):
        return type(self), (self._requires_grad,)

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self._requires_grad, dtype=self._data.dtype)
        return memo[id(self)]


for _name in _REFUSED:
    setattr(_UninitializedMixin, _name, _refuse(_name))


class UninitializedParameter(_UninitializedMixin, Parameter):
    """A lazy module's parameter before its first call: no shape yet."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        p = object.__new__(cls)
        p._set_fields(empty(0, dtype=dtype)._data, requires_grad)
        return p

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(_UninitializedMixin, Tensor):
    """A lazy module's buffer before its first call: no shape yet."""

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        b = object.__new__(cls)
        b._set_fields(empty(0, dtype=dtype)._data, requires_grad)
        return b

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass


def is_lazy(t):
    """Whether ``t`` is an uninitialized parameter or buffer."""
    return isinstance(t, _UninitializedMixin)
