"""In-place tensor operations: ``add_`` & co., ``zero_``, ``fill_``, ``copy_``, the random
fills (``uniform_``, ``normal_``, ...), ``masked_fill``.
"""
from __future__ import annotations

import numpy as np

from .aliasing import overlapping as _overlapping
from .arithmetic import (
    _NUMBERS,
    FAST,
    _check_broadcast,
    _check_pow,
    _err,
    _is_bool,
    _power,
    _shape,
    _subtract,
    _with_alpha,
)
from .dispatch import call
from .grad_mode import is_grad_enabled as _grad_enabled
from .random import draw_dtype
from .tape import EagerTracer
from .tensor import Tensor, _kind_rank, _scalar_name


# -- in place --------------------------------------------------------------------------
def _inplace_binary(fn, name):
    def op_(self, other, alpha=1):
        fast = alpha == 1 and FAST.get() and not _grad_enabled()
        if fast and type(self) is Tensor and type(self._data) is np.ndarray and \
                self._data.dtype.kind in "fc" and (
                    type(other) is float or type(other) is int or type(other) is Tensor and
                    type(other._data) is np.ndarray and other._data.dtype.kind in "fc"):
            # floating operands: no bool error to raise first
            done = _fast_inplace(self, other, fn)
            if done is not None:
                return done
            fast = False        # it declined (another shape, a read-only array)
        _check_broadcast(self, other)
        if fn is np.subtract and (_is_bool(self) or _is_bool(other)):
            _subtract(self, other)          # PyTorch's error
        if fast:
            done = _fast_inplace(self, other, fn)
            if done is not None:
                return done
        f, other = _with_alpha(fn, other, alpha)
        data, to = self._data, type(other)
        if type(data) is np.ndarray and (to in _NUMBERS or to is Tensor and type(
                other._data) is np.ndarray and other._data.shape == data.shape):
            pass        # a number, or a tensor of the same shape: the shape stays
        elif tuple(np.broadcast_shapes(_shape(self), _shape(other))) != tuple(self.shape):
            raise _err(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(np.broadcast_shapes(_shape(self), _shape(other)))}")
        return self._inplace(f, other, name=name,
                             reads_self=fn in (np.multiply, np.true_divide, _power))
    return op_


def _fast_inplace(self, other, fn):
    """``Tensor._inplace``'s steps for ``self op= other`` under no_grad, on a concrete
    tensor and a tensor of the same shape or a Python number; None when they do not
    apply. (No history is recorded there, and no in-place check can fail.)"""
    data, to = self._data, type(other)
    st = self._tracer
    if type(data) is not np.ndarray or (st is not None and type(st) is not EagerTracer):
        return None
    if to is Tensor:
        value = other._data
        ot = other._tracer
        if type(value) is not np.ndarray or value.shape != data.shape or (
                ot is not None and type(ot) is not EagerTracer):
            return None
    elif to is float or to is int:
        value = other
    else:
        return None
    if not data.flags.writeable or _overlapping(data):
        return None                     # _inplace's error
    if data.dtype.kind == "f" and (to is float or to is Tensor and value.dtype == data.dtype) and (
            fn is np.add or fn is np.subtract or fn is np.multiply):
        fn(data, value, out=data)       # the result is the tensor's dtype: written in place
        self._vc.v += 1
        return self
    new = fn(data, value)
    if type(new) is not np.ndarray:
        new = np.asarray(new)
    if new.dtype != data.dtype and _kind_rank(new.dtype) > _kind_rank(data.dtype):
        raise RuntimeError(f"result type {_scalar_name(new.dtype)} can't be cast to the "
                           f"desired output type {_scalar_name(data.dtype)}")
    np.copyto(data, new, casting="unsafe")
    self._vc.v += 1
    return self


Tensor.add_ = _inplace_binary(np.add, "AddBackward0")
Tensor.sub_ = _inplace_binary(np.subtract, "SubBackward0")
Tensor.mul_ = _inplace_binary(np.multiply, "MulBackward0")
Tensor.div_ = _inplace_binary(np.true_divide, "DivBackward0")
_pow_scalar, _pow_tensor = (_inplace_binary(_power, "PowBackward0"),
                            _inplace_binary(_power, "PowBackward1"))
def pow_(self, other):
    _check_pow(self, other)
    return (_pow_tensor if isinstance(other, Tensor) else _pow_scalar)(self, other)


Tensor.pow_ = pow_
Tensor.__iadd__ = lambda self, other: Tensor.add_(self, other)
Tensor.__isub__ = lambda self, other: Tensor.sub_(self, other)
Tensor.__imul__ = lambda self, other: Tensor.mul_(self, other)
Tensor.__itruediv__ = lambda self, other: Tensor.div_(self, other)
Tensor.__ipow__ = lambda self, other: Tensor.pow_(self, other)


def _overwrite(x, v):
    """``v`` everywhere, as a node of ``x``: its derivative for ``x`` is an exact zero (not
    ``0 * g``, NaN where ``g`` is infinite) and an infinite ``x`` gives no NaN (``x * 0``)."""
    return np.where(np.ones(tuple(x.shape), bool), v, x)


def zero_(self):
    return self._inplace(lambda x: _overwrite(x, np.zeros((), x.dtype)), name="ZeroBackward0",
                         reads_self=False, cast=True, fills=True) \
        if self.requires_grad else _fill_plain(self, 0)


def fill_(self, value):
    if self.requires_grad or isinstance(value, Tensor) and value.requires_grad:
        return self._inplace(_overwrite, value, reads_self=False, cast=True, fills=True,
                             name="FillBackward3" if isinstance(value, Tensor) else "FillBackward2")
    return _fill_plain(self, value)


def _fill_plain(self, value):
    self._check_inplace(fills=True)
    self._data[...] = value._data if isinstance(value, Tensor) else value
    self._vc.v += 1
    return self


def copy_(self, src):
    src = src if isinstance(src, Tensor) else Tensor._plain(np.asarray(src))
    return self._inplace(_overwrite, src, name="CopyBackwards", reads_self=False,
                         cast=True)


def _random_fill(sample):
    def fill(self, *args, generator=None, **kwargs):
        from .creation import generator as generator_of
        return _fill_plain(self, sample(generator_of(generator), tuple(self.shape),
                                        np.dtype(self.dtype), *args, **kwargs))
    return fill


def _bernoulli_fill(g, shape, dtype, p=0.5):
    return g.bernoulli(shape, p)


def _random_ints(g, shape, dtype, low=None, high=None):
    if low is None:      # random_(): [0, 2**mantissa] for floats, [0, 2**63) for int64
        return g.random_int64(shape) if np.dtype(dtype).kind != "f" else \
            g.integers(0, 2 ** 24 + 1 if np.dtype(dtype) == np.float32 else 2 ** 53 + 1, shape)
    if high is None:
        low, high = 0, low
    return g.integers(low, high, shape)


Tensor.zero_, Tensor.fill_, Tensor.copy_ = zero_, fill_, copy_
Tensor.uniform_ = _random_fill(lambda g, s, d, a=0.0, b=1.0: g.uniform(s, draw_dtype(d), a, b))
Tensor.normal_ = _random_fill(
    lambda g, s, d, mean=0.0, std=1.0: g.normal(s, draw_dtype(d), mean, std))
Tensor.bernoulli_ = _random_fill(_bernoulli_fill)
Tensor.random_ = _random_fill(_random_ints)


def _fill_where(x, m, v):
    out = np.where(m, v, x)
    return out if out.dtype == x.dtype else out.astype(x.dtype)    # the tensor's dtype stays


def masked_fill(self, mask, value):
    return call(_fill_where, self, mask, value, name="MaskedFillBackward0")


Tensor.masked_fill = masked_fill
Tensor.masked_fill_ = lambda self, mask, value: self._inplace(
    _fill_where, mask, value, name="MaskedFillBackward0", reads_self=False,
    cast=True, fills=True)

