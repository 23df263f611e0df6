"""More of torch's math names (``MathMethods``): the special functions (``erf``,
``lgamma``, ``digamma``, ``polygamma``, ``i0``, ``xlogy``, ``igamma``, ...), more
elementwise operations (``hypot``, ``copysign``, ``fmax``, ``ldexp``, ``float_power``,
``gcd``, the ``bitwise_*`` names, the comparison aliases), their in-place forms, and more
reductions (``cummax``, ``logcumsumexp``, ``nanmedian``, ``mode``, ``aminmax``, ``histc``,
``cov``, ``corrcoef``, ``dist``, ``renorm``); ``FUNCTIONS`` holds the module-level forms.

As elsewhere in the eager package, each is NumPy code handed to ``dispatch.call`` under
torch's ``grad_fn`` name: the special functions apply the ``scipy.special`` primitives of
``ir/prims/scipy_special.py`` (whose rules differentiate to any order), the rest compose
primitives. Where torch has no derivative (``nextafter``, ``heaviside``, ``igamma``'s in
its first operand), the value comes through a ``pure_callback`` whose rules raise torch's
error, so a backward through it fails as torch's does.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..ir import apply
from ..tracer import Tracer
from . import return_types as _rt
from .arithmetic import (
    _C_NAMES,
    _UNARY,
    _as_tensor,
    _bitwise,
    _check_broadcast,
    _check_division,
    _clamp_fn,
    _compare,
    _err,
    _fmod,
    _no_kernel,
    _shape,
)
from .dispatch import call
from .promotion import category, promoted, result_type
from .reductions import _along, _check_nonempty, _cumulative, wrap_dim
from .tensor_base import TensorBase, _scalar_name, default_dtype

_LN2 = math.log(2.0)
_rt._result("cummax", ["values", "indices"])
_rt._result("cummin", ["values", "indices"])
_rt._result("nanmedian", ["values", "indices"])
_rt._result("mode", ["values", "indices"])
_rt._result("aminmax", ["min", "max"])
_rt._result("frexp", ["mantissa", "exponent"])


# -- helpers -----------------------------------------------------------------------------------
def _floating(t):
    """``t`` in the default float dtype when it is an integer or bool tensor (torch's
    dtype for the special functions of one)."""
    return t.to(default_dtype()) if t.dtype.kind in "biu" else t


def _keep_dtype(fn):
    """``fn`` with its result in its (first) operand's dtype (SciPy's float32 loops may
    answer in float64)."""
    def run(*xs):
        out = fn(*xs)
        dtype = np.result_type(*(x.dtype for x in xs if hasattr(x, "dtype")))
        return out if out.dtype == dtype else out.astype(dtype)
    run.__name__ = getattr(fn, "__name__", "op")
    return run


def _prim(name):
    return _keep_dtype(lambda *xs: apply(name, *xs))


# torch's CPU kernels of these refuse complex tensors (SciPy's would compute something)
_REAL_KERNELS = {"ErfBackward0": "erf_vml_cpu", "ErfcBackward0": "erfc_vml_cpu",
                 "ErfinvBackward0": "erfinv_vml_cpu", "LgammaBackward0": "lgamma_vml_cpu",
                 "DigammaBackward0": "digamma", "I0Backward0": "i0_vml_cpu",
                 "LogitBackward0": "logit_cpu"}


def _float_unary(self, fn, name):
    if name in _REAL_KERNELS:
        _no_kernel(_REAL_KERNELS[name], self.dtype, "c")
    return call(fn, _floating(self), name=name)


def _cast_error(result, out):
    return RuntimeError(f"result type {_scalar_name(result)} can't be cast to the desired "
                        f"output type {_scalar_name(out)}")


def _float_unary_(self, fn, name):
    """The in-place form: an integer or bool tensor cannot hold the float result."""
    if self.dtype.kind in "biu":
        raise _cast_error(default_dtype(), self.dtype)
    if name in _REAL_KERNELS:
        _no_kernel(_REAL_KERNELS[name], self.dtype, "c")
    return self._inplace(fn, name=name)


def _tensor_arg(what, x, arg="other", pos=2):
    if not isinstance(x, TensorBase):
        raise TypeError(f"{what}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def _binary_dtype(a, b, float_result=False, kernel=None, kinds="bc"):
    dtype = result_type(a, b, default_float=default_dtype())
    if kernel is not None:
        _no_kernel(kernel, dtype, kinds)
    if float_result and dtype.kind in "biu":
        dtype = np.dtype(default_dtype())
    return dtype


def _binary(self, other, fn, name, dtype):
    _check_broadcast(self, other)
    return call(promoted(fn, dtype), self, other, name=name)


def _binary_(self, other, fn, name, dtype, cast_result=False):
    """``self`` replaced by ``fn(self, other)`` computed in ``dtype``: torch's checks of
    the result's dtype and shape first."""
    _check_broadcast(self, other)
    if not cast_result and category(dtype) > category(self.dtype):
        raise _cast_error(dtype, self.dtype)
    shape = tuple(np.broadcast_shapes(_shape(self), _shape(other)))
    if shape != tuple(self.shape):
        raise _err(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                   f"{list(shape)}")
    return self._inplace(promoted(fn, dtype), other, name=name, cast=cast_result)


class _Refused:
    """A ``pure_callback`` (``ir/prims/callback.py``) giving a value computed from the
    operands (``compute(*operands)``; a fixed ``value`` where none is given), whose
    derivative rules raise torch's error ``message``. The value is computed from the
    operands it is run on: under vmap, each example's own (not the traced ones')."""
    vectorized = False

    def __init__(self, value, message, error=RuntimeError, compute=None):
        self.value, self.message, self.error = value, message, error
        self.compute = compute
        self.name = "torch (no derivative)"
        self.out_avals = ((value.shape, value.dtype),)

    def run(self, operands):
        if self.compute is None:
            return (self.value,)
        return (np.asarray(self.compute(*operands)).astype(self.value.dtype, copy=False),)

    def vjp(self, *args):
        raise self.error(self.message)

    jvp = vjp


def _refused(value, message, error, *xs, compute=None):
    """``value`` (an array), as a function of the tracers ``xs``, with no derivative
    (``compute``: the value as a function of them)."""
    out = apply("pure_callback", *xs,
                callback=_Refused(np.asarray(value), message, error, compute))
    return out[0] if isinstance(out, (tuple, list)) else out


def _no_derivative(fn, message, error=RuntimeError):
    """``fn``'s value; differentiated, torch's ``message``."""
    def run(*xs):
        if not any(isinstance(x, Tracer) for x in xs):
            return fn(*xs)
        concrete = [getattr(x, "_value", x) for x in xs]
        traced = [k for k, x in enumerate(xs) if isinstance(x, Tracer)]

        def compute(*operands):
            args = list(concrete)
            for k, o in zip(traced, operands):
                args[k] = o
            return fn(*args)
        return _refused(fn(*concrete), message, error, *(xs[k] for k in traced),
                        compute=compute)
    return run


def _stop(x):
    return apply("stop_gradient", x) if isinstance(x, Tracer) else x


# -- elementwise NumPy code ------------------------------------------------------------------
def _xlogy(x, y):
    """x·log(y), 0 where x == 0 (NaN for a NaN y), with torch's derivatives: xlogy(g, y)
    for x (the primitive's rule: a zero cotangent gives zero where log(y) is NaN), but 0
    where x == 0 and y <= 0 (its masked_fill); g·x / y for y (NaN at x == y == 0)."""
    if not isinstance(x, Tracer) and not isinstance(y, Tracer):
        return _prim("xlogy")(x, y)
    if not isinstance(y, Tracer):
        y = np.asarray(y, x.dtype)
        if not np.any(y <= 0):
            return apply("xlogy", x, y)     # (no mask: a derivative free of x's values)
    if not isinstance(x, Tracer):
        x = np.asarray(x, y.dtype)
    masked = (x == 0) & (y <= 0)
    return apply("xlogy", np.where(masked, _stop(x), x), y)


def _nextafter(x, y):
    """torch's derivative: the gradient passes to x (and none to y)."""
    value = np.nextafter(x, y)
    if not isinstance(x, Tracer):
        return value
    return _stop(value) + np.where(np.isfinite(x), x - _stop(x), np.zeros((), x.dtype))


def _lgamma(x):
    out = _prim("gammaln")(x)
    return np.where(x == -np.inf, np.asarray(np.inf, out.dtype), out)   # torch: +inf there


def _sinc(x):
    """sin(πx)/(πx), 1 at 0 (the derivative there 0, as torch's)."""
    zero = x == 0
    px = np.where(zero, np.ones((), x.dtype), x) * np.asarray(math.pi, x.dtype)
    return np.where(zero, np.ones((), x.dtype), np.sin(px) / px)


def _frac(x):
    return x - _stop(np.trunc(x))


def _angle(x):
    value = np.where(np.isnan(x), x, np.where(x < 0, np.asarray(math.pi, x.dtype),
                                                np.zeros((), x.dtype)))
    if not isinstance(x, Tracer):
        return value
    return np.where(np.ones(np.shape(x), bool), _stop(value), x)   # a zero derivative


def _logit(eps):
    def fn(x):
        if eps is not None:
            lo = np.asarray(eps, x.dtype)
            x = np.clip(x, lo, 1 - lo) if not isinstance(x, Tracer) else \
                np.where(x < lo, _stop(lo + 0 * x), np.where(x > 1 - lo, _stop(1 - lo + 0 * x), x))
        return _prim("logit")(x)
    return fn


def _fmax(lower):
    def fn(x, y):
        if x.dtype.kind not in "fc":
            return np.fmin(x, y) if lower else np.fmax(x, y)
        keep = ((x <= y) if lower else (x >= y)) | np.isnan(y)
        return np.where(keep, x, y)
    return fn


def _heaviside(x, v):
    return np.where(x == 0, v, (x > 0).astype(x.dtype))


def _logaddexp2(a, b):
    m = _stop(np.maximum(a, b))
    m = np.where(np.isfinite(m), m, np.zeros((), m.dtype))
    return np.log2(np.exp2(a - m) + np.exp2(b - m)) + m


def _copysign(x, y):
    if not isinstance(x, Tracer):
        return np.copysign(x, y)
    # torch: the gradient result / x (0 where x == 0); none for y
    return x * _stop(np.where(x == 0, np.zeros((), x.dtype), np.copysign(x, y) /
                              np.where(x == 0, np.ones((), x.dtype), x)))


def _ldexp(x, e):
    return x * np.power(np.asarray(2.0, x.dtype), e)


def _signbit(x):
    if x.dtype.kind == "b":
        return np.zeros(np.shape(x), bool) if not isinstance(x, Tracer) else x & False
    return np.signbit(x) if x.dtype.kind == "f" else x < 0


def _isreal(x):
    if np.iscomplexobj(x):
        return np.imag(x) == 0
    return np.ones(np.shape(x), bool) if not isinstance(x, Tracer) else x == x


def _mvlgamma(p):
    def fn(x):
        total = None
        for j in range(p):
            term = _prim("gammaln")(x + np.asarray(-(p - 1) / 2 + j / 2, x.dtype))
            total = term if total is None else total + term
        return total + np.asarray(p * (p - 1) / 4 * math.log(math.pi), x.dtype)
    return fn


def _torch_trigamma(x):
    """torch's trigamma (ATen's calc_trigamma): a reflection below 1/2, six steps of the
    recurrence and the asymptotic series (good to about 1e-9, the values torch gives)."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        low = x < 0.5
        sin = np.sin(math.pi * x)
        result = np.where(low, -(math.pi * math.pi) / (sin * sin), 0.0)
        x = np.where(low, 1 - x, x)
        for _ in range(6):
            result = result + 1 / (x * x)
            x = x + 1
        ixx = 1 / (x * x)
        result = result + (1 + 1 / (2 * x) + ixx * (1. / 6 - ixx * (1. / 30 - ixx * (1. / 42)))) / x
        return np.where(low, -result, result)


def _polygamma(n):
    def fn(x):
        if n == 0:
            return _prim("digamma")(x)
        out = apply("polygamma", np.int64(n), x)
        out = out if out.dtype == x.dtype else out.astype(x.dtype)
        if n == 1:      # torch's own trigamma's values, SciPy's derivative
            concrete = getattr(x, "_value", x)
            exact = _torch_trigamma(concrete).astype(x.dtype)
            if not isinstance(out, Tracer):
                return exact
            return out + _stop(exact - getattr(out, "_value", out))
        return out
    return fn


def _igamma(upper):
    name = "gammaincc" if upper else "gammainc"
    message = f"the derivative for '{'igammac' if upper else 'igamma'}: input' is not implemented."

    def fn(a, x):
        if not isinstance(a, Tracer):
            return _prim(name)(a, x)
        out = _prim(name)(_stop(a), x)
        zero = _refused(np.zeros(np.shape(a), a.dtype), message, NotImplementedError, a)
        return out + zero * 0 if out.shape == zero.shape else out + np.sum(zero) * 0
    return fn


def _shift(left):
    def fn(a, b):
        bits = a.dtype.itemsize * 8
        big = (b >= bits) | (b < 0)
        safe = np.where(big, np.zeros((), b.dtype), b)
        if left:
            return np.where(big, np.zeros((), a.dtype), np.left_shift(a, safe))
        return np.where(big, np.where(a < 0, -np.ones((), a.dtype), np.zeros((), a.dtype)),
                        np.right_shift(a, safe))
    return fn


def _check_int_only(what, kernel, *xs):
    dtype = result_type(*xs, default_float=default_dtype())
    if dtype.kind not in "iu":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_scalar_name(dtype)}\'')
    return dtype


# -- reductions' NumPy code -------------------------------------------------------------------
def _cumext_indices(data, axis, lower):
    """torch's cummax (cummin) indices: the newest position of the running extreme (>=,
    <=), and of a NaN once one is met (a newer NaN moves it)."""
    v = np.moveaxis(data, axis, -1)
    idx = np.zeros(v.shape, np.int64)
    if v.shape[-1] == 0:
        return np.moveaxis(idx, -1, axis)
    best = v[..., 0].copy()
    cur = np.zeros(v.shape[:-1], np.int64)
    floating = v.dtype.kind in "fc"
    for i in range(v.shape[-1]):
        x = v[..., i]
        better = (x <= best) if lower else (x >= best)
        if floating:
            better = np.isnan(x) | (~np.isnan(best) & better)
        if i == 0:
            better = np.ones_like(better)
        best = np.where(better, x, best)
        cur = np.where(better, i, cur)
        idx[..., i] = cur
    return np.moveaxis(idx, -1, axis)


def _pick(self, idx, axis, name, keepdim=True):
    def fn(x):
        out = np.take_along_axis(x, idx, axis=axis)
        return out if keepdim else np.squeeze(out, axis)
    return call(fn, self, name=name)


def _logcumsumexp(axis):
    def fn(x):
        if not isinstance(x, Tracer):
            with np.errstate(invalid="ignore"):
                return np.logaddexp.accumulate(x, axis=axis)
        n = x.shape[axis]
        parts = [np.take(x, np.arange(k, k + 1), axis=axis) for k in range(n)]
        outs = [parts[0]]
        for p in parts[1:]:
            outs.append(np.logaddexp(outs[-1], p))
        return np.concatenate(outs, axis=axis) if outs else x
    return fn


def _lower_median_index(sorted_vals, counts, axis):
    return np.expand_dims(np.maximum(counts - 1, 0) // 2, axis)


def _mode_of(v):
    """torch's mode of a 1-D array: the most frequent value (the smallest of those), at
    the last position it occurs."""
    vals, counts = np.unique(v, return_counts=True)
    if v.dtype.kind == "f" and np.isnan(v).any():
        vals, counts = vals[~np.isnan(vals)], counts[~np.isnan(vals)]
        nan_count = int(np.isnan(v).sum())
        best = vals[np.argmax(counts)] if len(vals) and counts.max() >= nan_count else np.nan
    else:
        best = vals[np.argmax(counts)]
    where = np.nonzero(np.isnan(v) if isinstance(best, float) and np.isnan(best)
                       else v == best)[0]
    return best, int(where[-1])


class MathMethods:
    """``Tensor``'s special functions, more elementwise operations and reductions."""

    __slots__ = ()

    # -- special functions -----------------------------------------------------------------
    def erf(self):
        return _float_unary(self, _prim("erf"), "ErfBackward0")

    def erf_(self):
        return _float_unary_(self, _prim("erf"), "ErfBackward0")

    def erfc(self):
        return _float_unary(self, _prim("erfc"), "ErfcBackward0")

    def erfc_(self):
        return _float_unary_(self, _prim("erfc"), "ErfcBackward0")

    def erfinv(self):
        return _float_unary(self, _prim("erfinv"), "ErfinvBackward0")

    def erfinv_(self):
        return _float_unary_(self, _prim("erfinv"), "ErfinvBackward0")

    def lgamma(self):
        return _float_unary(self, _lgamma, "LgammaBackward0")

    def lgamma_(self):
        return _float_unary_(self, _lgamma, "LgammaBackward0")

    def digamma(self):
        return _float_unary(self, _prim("digamma"), "DigammaBackward0")

    def digamma_(self):
        return _float_unary_(self, _prim("digamma"), "DigammaBackward0")

    def polygamma(self, n):
        if n < 0:
            raise _err("polygamma(n, x) does not support negative n.")
        return _float_unary(self, _polygamma(n), "PolygammaBackward0")

    def polygamma_(self, n):
        if n < 0:
            raise _err("polygamma(n, x) does not support negative n.")
        return _float_unary_(self, _polygamma(n), "PolygammaBackward1")

    def mvlgamma(self, p):
        if p < 1:
            raise _err("p has to be greater than or equal to 1")
        if self.dtype == np.bool_:
            raise _err("The input tensor may not be a boolean tensor.")
        return _float_unary(self, _mvlgamma(p), "MvlgammaBackward0")

    def mvlgamma_(self, p):
        if self.dtype.kind in "biu":
            self.mvlgamma(p)        # its errors first
            raise _err(f"mvlgamma: result type {_scalar_name(self.dtype)} can't be cast to the "
                       f"desired output type {_scalar_name(default_dtype())}")
        self.mvlgamma(p)
        return self._inplace(_mvlgamma(p), name="MvlgammaBackward0")

    def i0(self):
        return _float_unary(self, _prim("i0"), "I0Backward0")

    def i0_(self):
        return _float_unary_(self, _prim("i0"), "I0Backward0")

    def sinc(self):
        return _float_unary(self, _sinc, "SincBackward0")

    def sinc_(self):
        return _float_unary_(self, _sinc, "SincBackward0")

    def logit(self, eps=None):
        return _float_unary(self, _logit(eps), "LogitBackward0")

    def logit_(self, eps=None):
        return _float_unary_(self, _logit(eps), "LogitBackward0")

    def exp2(self):
        return _float_unary(self, np.exp2, "Exp2Backward0")

    def exp2_(self):
        return _float_unary_(self, np.exp2, "Exp2Backward0")

    def deg2rad(self):
        if self.dtype.kind == "c":
            raise RuntimeError("deg2rad is not supported for complex tensors.")
        return _float_unary(self, lambda x: x * np.asarray(math.pi / 180, x.dtype),
                            "Deg2RadBackward0")

    def deg2rad_(self):
        if self.dtype.kind == "c":
            raise RuntimeError("deg2rad is not supported for complex tensors.")
        return _float_unary_(self, lambda x: x * np.asarray(math.pi / 180, x.dtype),
                             "Deg2RadBackward0")

    def rad2deg(self):
        if self.dtype.kind == "c":
            raise RuntimeError("rad2deg is not supported for complex tensors.")
        return _float_unary(self, lambda x: x * np.asarray(180 / math.pi, x.dtype),
                            "Rad2DegBackward0")

    def rad2deg_(self):
        if self.dtype.kind == "c":
            raise RuntimeError("rad2deg is not supported for complex tensors.")
        return _float_unary_(self, lambda x: x * np.asarray(180 / math.pi, x.dtype),
                             "Rad2DegBackward0")

    def asinh(self):
        return _float_unary(self, np.arcsinh, "AsinhBackward0")

    def asinh_(self):
        return _float_unary_(self, np.arcsinh, "AsinhBackward1")

    def acosh(self):
        return _float_unary(self, np.arccosh, "AcoshBackward0")

    def acosh_(self):
        return _float_unary_(self, np.arccosh, "AcoshBackward1")

    def atanh(self):
        return _float_unary(self, np.arctanh, "AtanhBackward0")

    def atanh_(self):
        return _float_unary_(self, np.arctanh, "AtanhBackward1")

    arcsinh, arcsinh_, arccosh, arccosh_, arctanh, arctanh_ = \
        asinh, asinh_, acosh, acosh_, atanh, atanh_

    # -- signs, parts, tests -----------------------------------------------------------------
    def sgn(self):
        return call(_UNARY["sign"][0], self, name="SgnBackward0")

    def sgn_(self):
        return self._inplace(_UNARY["sign"][0], name="SgnBackward0")

    def frac(self):
        _no_kernel("frac_cpu", self.dtype, "biuc")
        return call(_frac, self, name="FracBackward0")

    def frac_(self):
        _no_kernel("frac_cpu", self.dtype, "biuc")
        return self._inplace(_frac, name="FracBackward0")

    def fix(self):
        _no_kernel("trunc_vml_cpu", self.dtype, "b")
        if self.dtype.kind == "c":
            raise NotImplementedError("trunc is not supported for complex inputs")
        return self.trunc()

    def fix_(self):
        _no_kernel("trunc_vml_cpu", self.dtype, "b")
        if self.dtype.kind == "c":
            raise NotImplementedError("trunc is not supported for complex inputs")
        return self.trunc_()

    def positive(self):
        if self.dtype == np.bool_:
            raise _err("The `+` operator, on a bool tensor is not supported.")
        return self

    def angle(self):
        if self.dtype.kind == "c":     # the argument, in the real dtype of the complex one
            return call(lambda z: np.arctan2(np.imag(z), np.real(z)), self,
                        name="AngleBackward0")
        return _float_unary(self, _angle, "AngleBackward0")

    def isreal(self):
        return call(_isreal, self)

    def signbit(self):
        _no_kernel("signbit_cpu", self.dtype, "c")
        return call(_signbit, self)

    def frexp(self):
        if self.dtype.kind != "f":
            raise _err("torch.frexp() only supports floating-point dtypes")
        data = self._concrete("frexp")
        mantissa, exponent = np.frexp(data)
        m = call(lambda x: x / _stop(np.ldexp(np.ones((), x.dtype), exponent).astype(x.dtype)),
                 self, name="FrexpBackward0")
        return _rt.frexp(m, self._plain(exponent.astype(np.int32)))

    # -- binary ------------------------------------------------------------------------------
    def xlogy(self, other):
        dtype = _binary_dtype(self, other, True)
        return _binary(self, other, _xlogy, "XlogyBackward0" if isinstance(other, TensorBase)
                       else "XlogyBackward2", dtype)

    def xlogy_(self, other):
        dtype = _binary_dtype(self, other, True)
        return _binary_(self, other, _xlogy, "XlogyBackward0" if isinstance(other, TensorBase)
                        else "XlogyBackward2", dtype)

    def hypot(self, other):
        _tensor_arg("hypot", other)
        return _binary(self, other, np.hypot, "HypotBackward0",
                       _binary_dtype(self, other, kernel="hypot_cpu", kinds="biuc"))

    def hypot_(self, other):
        _tensor_arg("hypot_", other)
        return _binary_(self, other, np.hypot, "HypotBackward0",
                        _binary_dtype(self, other, kernel="hypot_cpu", kinds="biuc"))

    def copysign(self, other):
        dtype = _binary_dtype(self, other, True)
        return _binary(self, other, _copysign, "CopysignBackward0"
                       if isinstance(other, TensorBase) else "CopysignBackward1", dtype)

    def copysign_(self, other):
        dtype = _binary_dtype(self, other, True)
        return _binary_(self, other, _copysign, "CopysignBackward0"
                        if isinstance(other, TensorBase) else "CopysignBackward1", dtype)

    def nextafter(self, other):
        _tensor_arg("nextafter", other)
        dtype = _binary_dtype(self, other, kernel="nextafter_cpu", kinds="biuc")
        return _binary(self, other, _nextafter, "NextafterBackward0", dtype)

    def nextafter_(self, other):
        _tensor_arg("nextafter_", other)
        dtype = _binary_dtype(self, other, kernel="nextafter_cpu", kinds="biuc")
        return _binary_(self, other, _nextafter, "NextafterBackward0", dtype)

    def ldexp(self, other):
        _tensor_arg("ldexp", other)
        return _binary(self, other, _ldexp, "LdexpBackward0", _binary_dtype(self, other, True))

    def ldexp_(self, other):
        _tensor_arg("ldexp_", other)
        if self.dtype.kind in "biu":
            raise _err(f"ldexp can't be cast to the desired output type "
                       f"{_scalar_name(self.dtype)}")
        return _binary_(self, other, _ldexp, "LdexpBackward0", _binary_dtype(self, other, True))

    def float_power(self, exponent):
        wide = np.complex128 if self.dtype.kind == "c" or (
            isinstance(exponent, TensorBase) and exponent.dtype.kind == "c") or \
            isinstance(exponent, complex) else np.float64
        e = exponent.to(wide) if isinstance(exponent, TensorBase) else float(exponent)
        return self.to(wide) ** e

    def float_power_(self, exponent):
        wide = np.complex128 if self.dtype.kind == "c" or (
            isinstance(exponent, TensorBase) and exponent.dtype.kind == "c") else np.float64
        if self.dtype != wide:
            raise _err(f"the base given to float_power_ has dtype {_scalar_name(self.dtype)} "
                       f"but the operation's result requires dtype {_scalar_name(wide)}")
        e = exponent.to(wide) if isinstance(exponent, TensorBase) else float(exponent)
        return self.pow_(e)

    def fmax(self, other):
        _tensor_arg("fmax", other)
        _check_broadcast(self, other)
        return _binary(self, other, _fmax(False), "FmaxBackward0",
                       _binary_dtype(self, other, kernel="fmax", kinds="c"))

    def fmin(self, other):
        _tensor_arg("fmin", other)
        _check_broadcast(self, other)
        return _binary(self, other, _fmax(True), "FminBackward0",
                       _binary_dtype(self, other, kernel="fmin", kinds="c"))

    def heaviside(self, values):
        _tensor_arg("heaviside", values, "values")
        if self.dtype != values.dtype:
            raise _err("heaviside is not yet implemented for tensors with different dtypes.")
        _no_kernel("heaviside_cpu", self.dtype, "c")
        return _binary(self, values, _no_derivative(
            _heaviside, "derivative for aten::heaviside is not implemented"), "NotImplemented",
            self.dtype)

    def heaviside_(self, values):
        _tensor_arg("heaviside_", values, "values")
        if self.dtype != values.dtype:
            raise _err("heaviside is not yet implemented for tensors with different dtypes.")
        return _binary_(self, values, _no_derivative(
            _heaviside, "derivative for aten::heaviside_ is not implemented"),
            "NotImplemented", self.dtype)

    def logaddexp2(self, other):
        _tensor_arg("logaddexp2", other)
        return _binary(self, other, _logaddexp2, "Logaddexp2Backward0",
                       _binary_dtype(self, other, kernel="logaddexp2_cpu", kinds="biuc"))

    def igamma(self, other):
        _tensor_arg("igamma", other)
        return _binary(self, other, _igamma(False), "IgammaBackward0",
                       _binary_dtype(self, other, kernel="igamma_cpu", kinds="biuc"))

    def igamma_(self, other):
        _tensor_arg("igamma_", other)
        return _binary_(self, other, _igamma(False), "IgammaBackward0",
                        _binary_dtype(self, other, kernel="igamma_cpu", kinds="biuc"))

    def igammac(self, other):
        _tensor_arg("igammac", other)
        return _binary(self, other, _igamma(True), "IgammacBackward0",
                       _binary_dtype(self, other, kernel="igammac_cpu", kinds="biuc"))

    def igammac_(self, other):
        _tensor_arg("igammac_", other)
        return _binary_(self, other, _igamma(True), "IgammacBackward0",
                        _binary_dtype(self, other, kernel="igammac_cpu", kinds="biuc"))

    def atan2_(self, other):
        _tensor_arg("atan2_", other)
        return _binary_(self, other, np.arctan2, "Atan2Backward0",
                        _binary_dtype(self, other, True))

    arctan2_ = atan2_

    def lerp_(self, end, weight):
        _check_broadcast(self, end)
        _check_broadcast(self, weight)
        if end.dtype != self.dtype:
            raise _err(f"expected dtype {_scalar_name(self.dtype)} for `end` but got dtype "
                       f"{_scalar_name(end.dtype)}")
        return self.copy_(self.lerp(end, weight)) if not self.requires_grad and \
            self.grad_fn is None else self._lerp_(end, weight)

    def _lerp_(self, end, weight):
        name = "LerpBackward1" if isinstance(weight, TensorBase) else "LerpBackward0"
        if isinstance(weight, TensorBase):
            return self._inplace(lambda a, e, w: a + (e - a) * w, end, weight, name=name)
        return self._inplace(lambda a, e: a + (e - a) * weight, end, name=name)

    # -- integers ------------------------------------------------------------------------------
    def gcd(self, other):
        _tensor_arg("gcd", other)
        dtype = _check_int_only("gcd", "gcd_cpu", self, other)
        return _binary(self, other, np.gcd, None, dtype)

    def gcd_(self, other):
        _tensor_arg("gcd_", other)
        dtype = _check_int_only("gcd", "gcd_cpu", self, other)
        return _binary_(self, other, np.gcd, None, dtype)

    def lcm(self, other):
        _tensor_arg("lcm", other)
        dtype = _check_int_only("lcm", "lcm_cpu", self, other)
        return _binary(self, other, np.lcm, None, dtype)

    def lcm_(self, other):
        _tensor_arg("lcm_", other)
        dtype = _check_int_only("lcm", "lcm_cpu", self, other)
        return _binary_(self, other, np.lcm, None, dtype)

    def bitwise_and(self, other):
        return _bitwise(self, other, np.logical_and, np.bitwise_and, "bitwise_and")

    def bitwise_or(self, other):
        return _bitwise(self, other, np.logical_or, np.bitwise_or, "bitwise_or")

    def bitwise_xor(self, other):
        return _bitwise(self, other, np.logical_xor, np.bitwise_xor, "bitwise_xor")

    def bitwise_and_(self, other):
        return self._bitwise_(other, np.logical_and, np.bitwise_and, "bitwise_and")

    def bitwise_or_(self, other):
        return self._bitwise_(other, np.logical_or, np.bitwise_or, "bitwise_or")

    def bitwise_xor_(self, other):
        return self._bitwise_(other, np.logical_xor, np.bitwise_xor, "bitwise_xor")

    def _bitwise_(self, other, logical, bitwise, what):
        out = _bitwise(self, other, logical, bitwise, what)      # torch's errors
        if category(out.dtype) > category(self.dtype):
            raise _cast_error(out.dtype, self.dtype)
        fn = logical if out.dtype == np.bool_ else bitwise
        return _binary_(self, other, fn, None, out.dtype)

    def bitwise_not(self):
        _no_kernel("bitwise_not_cpu", self.dtype, "fc")
        return ~self

    def bitwise_not_(self):
        _no_kernel("bitwise_not_cpu", self.dtype, "fc")
        return self._inplace(np.logical_not if self.dtype == np.bool_ else np.invert)

    def bitwise_left_shift(self, other):
        return _binary(self, other, _shift(True), None,
                       _check_int_only("lshift", "lshift_cpu", self, other))

    def bitwise_left_shift_(self, other):
        return _binary_(self, other, _shift(True), None,
                        _check_int_only("lshift", "lshift_cpu", self, other))

    def bitwise_right_shift(self, other):
        return _binary(self, other, _shift(False), None,
                       _check_int_only("rshift", "rshift_cpu", self, other))

    def bitwise_right_shift_(self, other):
        return _binary_(self, other, _shift(False), None,
                        _check_int_only("rshift", "rshift_cpu", self, other))

    # -- comparisons: torch's other names, and the in-place forms --------------------------------
    def greater(self, other):
        return _compare(self, other, np.greater)

    def greater_equal(self, other):
        return _compare(self, other, np.greater_equal)

    def less(self, other):
        return _compare(self, other, np.less)

    def less_equal(self, other):
        return _compare(self, other, np.less_equal)

    def not_equal(self, other):
        return _compare(self, other, np.not_equal)

    def _compare_(self, other, fn):
        out = _compare(self, other, fn)         # torch's checks
        shape = tuple(out.shape)
        if shape != tuple(self.shape):
            raise _err(f"output with shape {list(self.shape)} doesn't match the broadcast "
                       f"shape {list(shape)}")
        def compared(a, b):
            if not isinstance(a, Tracer) and not isinstance(b, Tracer):
                return fn(a, b)
            # 1.0 / 0.0 in a's dtype, a node of a (its derivative an exact zero, and no
            # NaN of a * 0 at an infinite a)
            value = np.where(fn(a, b), np.ones((), a.dtype), np.zeros((), a.dtype))
            return np.where(np.ones(tuple(np.shape(value)), bool), value, a)
        return self._inplace(compared,
                             other, cast=True, name=_COMPARE_NAMES[fn] + (
                                 "Backward1" if isinstance(other, TensorBase) else "Backward0"))

    def eq_(self, other):
        return self._compare_(other, np.equal)

    def ne_(self, other):
        return self._compare_(other, np.not_equal)

    def lt_(self, other):
        return self._compare_(other, np.less)

    def le_(self, other):
        return self._compare_(other, np.less_equal)

    def gt_(self, other):
        return self._compare_(other, np.greater)

    def ge_(self, other):
        return self._compare_(other, np.greater_equal)

    greater_, greater_equal_, less_, less_equal_, not_equal_ = gt_, ge_, lt_, le_, ne_

    # -- in-place forms of the arithmetic ------------------------------------------------------
    def fmod_(self, other):
        out_dtype = result_type(self, other, default_float=default_dtype())
        _no_kernel("fmod_cpu", out_dtype, "bc")
        if out_dtype.kind in "iu" and np.any(np.asarray(
                other._data if isinstance(other, TensorBase) else other) == 0):
            raise _err("ZeroDivisionError")
        return _binary_(self, other, _fmod, "FmodBackward1" if isinstance(other, TensorBase)
                        else "FmodBackward0", out_dtype)

    def remainder_(self, other):
        _check_division(self, other, "remainder_cpu")
        return _binary_(self, other, np.remainder, "RemainderBackward1"
                        if isinstance(other, TensorBase) else "RemainderBackward0",
                        result_type(self, other, default_float=default_dtype()))

    def floor_divide_(self, other):
        _check_division(self, other, "div_floor_cpu")
        return _binary_(self, other, _no_derivative(
            np.floor_divide, "derivative for aten::floor_divide_ is not implemented"),
            "NotImplemented", result_type(self, other, default_float=default_dtype()))

    def true_divide_(self, other):
        return self.div_(other)

    def multiply_(self, other):
        return self.mul_(other)

    def subtract_(self, other, alpha=1):
        return self.sub_(other, alpha=alpha)

    def logical_not_(self):
        return self._inplace(np.logical_not, cast=True)

    def logical_xor_(self, other):
        return self._inplace(lambda a, b: np.logical_xor(a, b), _as_tensor(other, self),
                             cast=True)

    def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
        def fn(x):
            if x.dtype.kind not in "fc":
                return x + 0 if isinstance(x, Tracer) else np.copy(x)
            return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)
        return self._inplace(fn, name="NanToNumBackward0")

    def clamp_min_(self, min):
        _clamp_cast(self, min)
        fn = _clamp_fn(min, None, self, "clamp_min")
        return self._inplace(fn, *fn.operands,
                             name="ClampMinBackward1" if isinstance(min, TensorBase) else
                             "ClampMinBackward0")

    def clamp_max_(self, max):
        _clamp_cast(self, max)
        fn = _clamp_fn(None, max, self, "clamp_max")
        return self._inplace(fn, *fn.operands,
                             name="ClampMaxBackward1" if isinstance(max, TensorBase) else
                             "ClampMaxBackward0")

    def cumsum_(self, dim, *, dtype=None):
        wrap_dim(self, dim)
        axis = dim
        return self._inplace(lambda x: _along(_cumulative(np.cumsum), axis)(x),
                             name="CumsumBackward0", cast=dtype is not None)

    def cumprod_(self, dim, *, dtype=None):
        wrap_dim(self, dim)
        axis = dim
        return self._inplace(lambda x: _along(_cumulative(np.cumprod), axis)(x),
                             name="CumprodBackward0", cast=dtype is not None)

    def addcmul(self, tensor1, tensor2, *, value=1):
        return _addc(self, tensor1, tensor2, value, False)

    def addcmul_(self, tensor1, tensor2, *, value=1):
        return _addc_(self, tensor1, tensor2, value, False)

    def addcdiv(self, tensor1, tensor2, *, value=1):
        return _addc(self, tensor1, tensor2, value, True)

    def addcdiv_(self, tensor1, tensor2, *, value=1):
        return _addc_(self, tensor1, tensor2, value, True)

    # -- reductions ----------------------------------------------------------------------------
    def cummax(self, dim):
        return self._cumext(dim, False)

    def cummin(self, dim):
        return self._cumext(dim, True)

    def _cumext(self, dim, lower):
        what = "cummin" if lower else "cummax"
        _no_kernel(f"{what}_cpu", self.dtype, "c")
        cls = _rt.cummin if lower else _rt.cummax
        name = "CumminBackward0" if lower else "CummaxBackward0"
        if self.dim() == 0:
            wrap_dim(self, dim)
            return cls(call(lambda x: x + np.zeros((), x.dtype) if x.dtype != np.bool_ else
                            np.logical_or(x, False), self, name=name),
                       self._plain(np.zeros((), np.int64)))
        axis = wrap_dim(self, dim)
        idx = _cumext_indices(self._concrete(what), axis, lower)
        return cls(_pick(self, idx, axis, name), self._plain(idx))

    def logcumsumexp(self, dim):
        _no_kernel("logcumsumexp_out_cpu", self.dtype, "biu")
        if self.dim() == 0:
            wrap_dim(self, dim)
            return call(lambda x: x + np.zeros((), x.dtype), self, name="LogcumsumexpBackward0")
        axis = wrap_dim(self, dim)
        return call(_logcumsumexp(axis), self, name="LogcumsumexpBackward0")

    def nanmedian(self, dim=None, keepdim=False):
        _no_kernel("median_cpu" if dim is not None else "median_cpu", self.dtype, "bc")
        if dim is None:
            flat = self.reshape(-1)
            data = flat._concrete("nanmedian")
            ok = data[~np.isnan(data)] if data.dtype.kind == "f" else data
            if ok.size == 0:
                return call(lambda x: np.full((), np.nan, x.dtype) + 0 * np.sum(x), flat,
                            name="NanmedianBackward0")
            value = np.sort(ok, kind="stable")[(ok.size - 1) // 2]
            tied = (data == value).astype(data.dtype)
            weights = tied / builtins.max(tied.sum(), 1)

            def fn(x):
                if not isinstance(x, Tracer):
                    return np.asarray(value, x.dtype)
                smooth = np.sum(x * weights)
                return smooth + apply("stop_gradient", np.asarray(value, x.dtype) - smooth)
            return call(fn, flat, name="NanmedianBackward0")
        if self.dim() == 0:
            wrap_dim(self, dim)
            return _rt.nanmedian(call(lambda x: x + np.zeros((), x.dtype), self,
                                      name="NanmedianBackward1"),
                                 self._plain(np.zeros((), np.int64)))
        axis = wrap_dim(self, dim)
        _check_nonempty(self, "nanmedian", dim)
        data = self._concrete("nanmedian")
        order = np.argsort(data, axis=axis, kind="stable")      # NaN last
        counts = (~np.isnan(data)).sum(axis=axis) if data.dtype.kind == "f" else \
            np.full(np.delete(data.shape, axis), data.shape[axis])
        k = _lower_median_index(None, counts, axis)
        idx = np.take_along_axis(order, k, axis=axis).astype(np.int64)
        values = _pick(self, idx, axis, "NanmedianBackward1", keepdim)
        if not keepdim:
            idx = np.squeeze(idx, axis)
        return _rt.nanmedian(values, self._plain(np.ascontiguousarray(idx)))

    def mode(self, dim=-1, keepdim=False):
        _no_kernel("mode_cpu", self.dtype, "c")
        if self.dim() == 0:
            wrap_dim(self, dim)
            return _rt.mode(call(lambda x: x + np.zeros((), x.dtype), self,
                                 name="ModeBackward0"), self._plain(np.zeros((), np.int64)))
        axis = wrap_dim(self, dim)
        _check_nonempty(self, "mode", dim)
        data = np.moveaxis(self._concrete("mode"), axis, -1)
        flat = data.reshape(-1, data.shape[-1])
        idx = np.array([_mode_of(row)[1] for row in flat], np.int64).reshape(data.shape[:-1])
        idx = np.expand_dims(idx, axis)
        values = _pick(self, idx, axis, "ModeBackward0", keepdim)
        if not keepdim:
            idx = np.squeeze(idx, axis)
        return _rt.mode(values, self._plain(np.ascontiguousarray(idx)))

    def aminmax(self, *, dim=None, keepdim=False):
        _no_kernel("aminmax_cpu", self.dtype, "c")
        if self.numel() == 0:
            _check_nonempty(self, "aminmax", dim)
        lo, hi = self.amin(dim, keepdim) if dim is not None else self.amin(), \
            self.amax(dim, keepdim) if dim is not None else self.amax()
        if dim is None and keepdim:
            shape = (1,) * self.dim()
            lo, hi = lo.reshape(shape), hi.reshape(shape)
        for t in (lo, hi):
            if t.grad_fn is not None:
                t.grad_fn._name = "AminmaxBackward0"
        return _rt.aminmax(lo, hi)

    def histc(self, bins=100, min=0, max=0):
        _no_kernel("histogram_cpu", self.dtype, "biuc")
        data = self._concrete("histc")
        lo, hi = float(min), float(max)
        if lo == hi and data.size:
            lo, hi = float(data.min()), float(data.max())
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise _err(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite".replace(
                "nan", "-nan"))
        if lo > hi:
            raise _err("torch.histc: max must be larger than min")
        if bins <= 0:
            raise _err("torch.histc: bins must be > 0")
        inside = data[(data >= lo) & (data <= hi)]
        pos = ((inside - lo) * bins / (hi - lo)).astype(np.int64)
        pos[pos == bins] = bins - 1
        counts = np.bincount(pos, minlength=bins).astype(data.dtype)
        # torch's histc is not differentiable: its result does not require grad (a
        # transform's derivative of it is zero, not an error)
        return self._plain(counts)

    def cov(self, *, correction=1, fweights=None, aweights=None):
        return _cov(self, correction, fweights, aweights)

    def corrcoef(self):
        c = _cov(self, 1, None, None)
        if c.dim() == 0:
            return c / c
        d = c.diagonal()
        std = d.sqrt()
        c = c / std.reshape(-1, 1)
        c = c / std.reshape(1, -1)
        return c.clamp(-1, 1)

    def dist(self, other, p=2):
        _check_broadcast(self, other)
        other = _as_tensor(other, self)
        dtype = result_type(self, other, default_float=default_dtype())
        if dtype.kind not in "fc":
            raise _err(f"norm(): input dtype should be either floating point or complex. Got "
                       f"{_scalar_name(dtype)} instead.")
        diff = (self - other).reshape(-1)
        out = diff.norm(p) if p not in (0,) else (diff != 0).sum().to(dtype)
        if out.grad_fn is not None:
            out.grad_fn._name = "DistBackward0"
        return out

    def renorm(self, p, dim, maxnorm):
        if self.dtype.kind not in "fc":
            raise _err(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                       f"input. Got {_scalar_name(self.dtype)}")
        if maxnorm < 0:
            raise _err(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
        if p <= 0:
            raise _err("renorm: non-positive-norm not supported")
        if self.dim() < 2:
            raise _err(f"renorm: input needs at least 2 dimensions, got {self.dim()} dimensions")
        axis = wrap_dim(self, dim)
        others = tuple(d for d in range(self.dim()) if d != axis)
        norm = self.norm(p, dim=others, keepdim=True) if others else self.abs()
        factor = (maxnorm / (norm + 1e-7)).where(norm > maxnorm, norm * 0 + 1)
        out = self * factor.to(self.dtype)
        if out.grad_fn is not None:
            out.grad_fn._name = "RenormBackward0"
        return out

    def renorm_(self, p, dim, maxnorm):
        return self.copy_(self.renorm(p, dim, maxnorm))


_COMPARE_NAMES = {np.equal: "Eq", np.not_equal: "Ne", np.less: "Lt", np.less_equal: "Le",
                  np.greater: "Gt", np.greater_equal: "Ge"}


def _clamp_cast(self, bound):
    dtype = result_type(self, bound, default_float=default_dtype())
    if category(dtype) > category(self.dtype):
        raise _err(f"result type {_scalar_name(dtype)} can't be cast to the desired output "
                   f"type {_C_NAMES.get(self.dtype.name, self.dtype.name)}")


def _addc_check(self, t1, t2, value, div):
    dtype = result_type(self, t1, t2, default_float=default_dtype())
    if div and result_type(t1, t2, default_float=default_dtype()).kind in "biu":
        raise _err("Integer division with addcdiv is no longer supported, and in a future  "
                   "release addcdiv will perform a true division of tensor1 and tensor2. The "
                   "historic addcdiv behavior can be implemented as (input + value * "
                   "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                   "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv "
                   "behavior is just the latter implementation: (input + value * tensor1 / "
                   "tensor2), for all dtypes.")
    if dtype.kind in "biu" and isinstance(value, float):
        raise _err("For integral input tensors, argument value must not be a floating point "
                   "number.")
    for a, b in ((self, t1), (self, t2), (t1, t2)):
        _check_broadcast(a, b)
    return dtype


def _addc_fn(value, div):
    def fn(s, a, b):
        v = np.asarray(value, s.dtype) if not isinstance(value, bool) else value
        return s + (v * a) / b if div else s + (v * a) * b
    return fn


def _addc(self, t1, t2, value, div):
    dtype = _addc_check(self, t1, t2, value, div)
    return call(promoted(_addc_fn(value, div), dtype), self, t1, t2,
                name="AddcdivBackward0" if div else "AddcmulBackward0")


def _addc_(self, t1, t2, value, div):
    dtype = _addc_check(self, t1, t2, value, div)
    if category(dtype) > category(self.dtype):
        raise _cast_error(dtype, self.dtype)
    shape = tuple(np.broadcast_shapes(_shape(self), _shape(t1), _shape(t2)))
    if shape != tuple(self.shape):
        raise _err(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                   f"{list(shape)}")
    return self._inplace(promoted(_addc_fn(value, div), dtype), t1, t2,
                         name="AddcdivBackward0" if div else "AddcmulBackward0")


def _cov(x, correction, fweights, aweights):
    if x.dim() > 2:
        raise _err(f"cov(): expected input to have two or fewer dimensions but got an input "
                   f"with {x.dim()} dimensions")
    obs = x.reshape(1, -1) if x.dim() < 2 else x
    if obs.dtype.kind in "biu":
        obs = obs.to(default_dtype())
    n = obs.shape[1]
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        avg = obs.mean(1)
        wsum = float(n)
        norm = wsum - correction
    else:
        w = w.to(obs.dtype)
        wsum = w.sum()
        avg = (obs * w).sum(1) / wsum
        if correction == 0:
            norm = wsum
        elif aweights is None:
            norm = wsum - correction
        else:
            norm = wsum - correction * (w * aweights).sum() / wsum
    if not isinstance(norm, TensorBase) and norm <= 0:
        norm = 0.0
    elif isinstance(norm, TensorBase):
        norm = norm.clamp_min(0)
    centered = obs - avg.reshape(-1, 1)
    weighted = centered if w is None else centered * w
    c = (weighted @ centered.transpose(0, 1).conj()) / norm
    return c.squeeze()


# -- the module-level functions ---------------------------------------------------------------
def _method(name):
    def fn(input, *args, **kwargs):
        if not isinstance(input, TensorBase):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"``tg.{name}(t, ...)`` is ``t.{name}(...)``."
    return fn


def _scalar_first(name, fallback):
    """``tg.xlogy(2.0, t)``: a number as the first operand (torch's Scalar overload)."""
    method = _method(name)

    def fn(input, other, *args, **kwargs):
        if not isinstance(input, TensorBase) and isinstance(other, TensorBase):
            return fallback(input, other)
        return method(input, other, *args, **kwargs)
    fn.__name__, fn.__doc__ = name, method.__doc__
    return fn


def _xlogy_scalar(x, t):
    dtype = _binary_dtype(x, t, True)
    return call(promoted(lambda y: _xlogy(np.asarray(x, dtype), y), dtype), t,
                name="XlogyBackward1")


def _float_power_scalar(x, t):
    wide = np.complex128 if t.dtype.kind == "c" or isinstance(x, complex) else np.float64
    out = float(x) ** t.to(wide)
    return out


def _polygamma_fn(n, input):
    return _method("polygamma")(input, n)


def _bitwise_scalar(name):
    def fn(input, other):
        if not isinstance(input, TensorBase) and isinstance(other, TensorBase):
            return getattr(other._plain(np.asarray(input)), name)(other)
        return _method(name)(input, other)
    fn.__name__ = name
    return fn


NAMES = ["erf", "erfc", "erfinv", "lgamma", "digamma", "mvlgamma", "i0", "sinc", "logit",
         "hypot", "copysign", "nextafter", "ldexp", "frexp", "fmax", "fmin", "heaviside",
         "signbit", "sgn", "frac", "fix", "exp2", "logaddexp2", "deg2rad", "rad2deg", "asinh",
         "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "gcd", "lcm", "bitwise_not",
         "greater", "greater_equal", "less", "less_equal", "not_equal", "positive", "angle",
         "isreal", "igamma", "igammac", "addcmul", "addcdiv", "cummax", "cummin",
         "logcumsumexp", "nanmedian", "mode", "aminmax", "histc", "cov", "corrcoef", "dist",
         "renorm", "clamp_min", "clamp_max"]
FUNCTIONS = {n: _method(n) for n in NAMES}
FUNCTIONS.update(
    xlogy=_scalar_first("xlogy", _xlogy_scalar),
    float_power=_scalar_first("float_power", _float_power_scalar),
    polygamma=_polygamma_fn,
    **{n: _bitwise_scalar(n) for n in ("bitwise_and", "bitwise_or", "bitwise_xor",
                                       "bitwise_left_shift", "bitwise_right_shift")},
)
# (torch's module-level in-place names among these)
for _n in ("erf_", "erfc_", "i0_", "exp2_", "sinc_", "logit_", "deg2rad_", "rad2deg_", "asinh_",
           "acosh_", "atanh_", "arcsinh_", "arccosh_", "arctanh_", "fix_", "frac_", "clamp_min_",
           "clamp_max_", "xlogy_", "ldexp_", "gcd_", "lcm_", "nan_to_num_"):
    FUNCTIONS[_n] = _method(_n)
del _n
