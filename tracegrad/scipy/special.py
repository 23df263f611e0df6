"""``scipy.special`` with SciPy's signatures, on traced and plain values alike.

The ufuncs (``gammaln``, ``digamma``, ``erf``, ``ndtr``, ``expit``, ``xlogy``, ``i0e``,
``gammainc``, ``betainc``, the Bessel functions, ...) are the primitives of
``ir/prims/scipy_special.py``; SciPy's own ufuncs reach the same primitives on a tracer.
``polygamma`` (a Python function in SciPy), ``multigammaln``,
``logsumexp``, ``softmax`` and ``log_softmax`` are written here on NumPy, so they
differentiate to any order.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..ir import apply

__all__ = ["beta", "betainc", "betaln", "digamma", "erf", "erfc", "erfcinv", "erfinv", "expit",
           "gamma", "gammainc", "gammaincc", "gammainccinv", "gammaincinv", "gammaln",
           "gammasgn", "i0", "i0e", "i1", "i1e", "iv", "ive", "j0", "j1", "jn", "jv", "k0",
           "k0e", "k1", "k1e", "kv", "kve", "log_ndtr", "log_softmax", "logit", "logsumexp",
           "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "rgamma", "softmax", "xlog1py",
           "xlogy", "y0", "y1", "yn", "yv"]


def _unary(name):
    def fn(x):
        return apply(name, x)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``scipy.special.{name}(x)``, differentiable."
    return fn


def _binary(name):
    def fn(x, y):
        return apply(name, x, y)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``scipy.special.{name}(x, y)``, differentiable."
    return fn


gammaln, digamma, gamma = _unary("gammaln"), _unary("digamma"), _unary("gamma")
psi = digamma
erf, erfc, erfinv, erfcinv = _unary("erf"), _unary("erfc"), _unary("erfinv"), _unary("erfcinv")
ndtr, ndtri, log_ndtr = _unary("ndtr"), _unary("ndtri"), _unary("log_ndtr")
expit, logit = _unary("expit"), _unary("logit")
i0, i1, i0e, i1e = _unary("i0"), _unary("i1"), _unary("i0e"), _unary("i1e")
beta, betaln = _binary("beta"), _binary("betaln")
xlogy, xlog1py = _binary("xlogy"), _binary("xlog1py")
rgamma, gammasgn = _unary("rgamma"), _unary("gammasgn")
# incomplete gamma: differentiable in a and x (in a to first order); the inverses in x
gammainc, gammaincc = _binary("gammainc"), _binary("gammaincc")
gammaincinv, gammainccinv = _binary("gammaincinv"), _binary("gammainccinv")
# Bessel functions: differentiable in x; in the order, a TraceError
j0, j1, y0, y1 = _unary("j0"), _unary("j1"), _unary("y0"), _unary("y1")
k0, k1, k0e, k1e = _unary("k0"), _unary("k1"), _unary("k0e"), _unary("k1e")
jv, yv, yn = _binary("jv"), _binary("yv"), _binary("yn")
jn = jv                                  # as in SciPy: the same function
iv, ive, kv, kve = _binary("iv"), _binary("ive"), _binary("kv"), _binary("kve")


def betainc(a, b, x):
    """``scipy.special.betainc(a, b, x)``: the regularized incomplete beta function,
    differentiable in x (in a or b: a ``TraceError``)."""
    return apply("betainc", a, b, x)


def polygamma(n, x):
    """``scipy.special.polygamma(n, x)``: the n-th derivative of digamma (n an integer,
    not differentiated)."""
    return apply("polygamma", n, x)


def multigammaln(a, d):
    """``scipy.special.multigammaln(a, d)``: log of the multivariate gamma function, defined
    for ``a > (d - 1)/2``. SciPy raises ``ValueError`` for a value outside that domain: so
    does this on plain numbers; on traced values (which hold no numbers to test) the
    result is NaN there."""
    if not np.isscalar(d) or np.floor(d) != d:
        raise ValueError("d should be a positive integer (dimension)")
    d = int(d)
    plain = isinstance(a, (numbers.Number, np.ndarray, np.generic, list, tuple))
    if plain and np.any(np.asarray(a) <= 0.5 * (d - 1)):
        raise ValueError(f"condition a ({a}) > 0.5 * (d-1) ({0.5 * (d - 1)}) not met")
    # a NumPy float64, as SciPy's (so float32 a gives float64, as there)
    total = np.float64((d * (d - 1) / 4.0) * math.log(math.pi))
    for j in range(d):
        total = total + gammaln(a - j / 2.0)
    return total if plain else np.where(np.greater(a, 0.5 * (d - 1)), total, np.nan)


def _float_dtype(*arrays):
    """SciPy's ``force_floating``: the operands' common dtype, float64 for integers."""
    dtype = np.result_type(*(np.dtype(x.dtype) for x in arrays))
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def _asarray(x):
    return x if hasattr(x, "shape") and hasattr(x, "dtype") else np.asarray(x)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``scipy.special.logsumexp``: ``log(sum(b * exp(a)))`` along ``axis``, by SciPy's
    algorithm: the largest terms (``m``, the sum of their weights) are taken out, the
    rest summed relative to them (``s``), and the result is ``log1p(s) + log(m) + max``,
    accurate where the sum is near ``m``; where that is not finite, ``log(sum(b*exp(a)))``.
    The maximum is held constant for the derivative; the largest terms keep theirs
    (through ``m``), so every derivative is exact, ties included.

    Returns:
        the result; with ``return_sign=True``, ``(log|s|, sign(s))``. Without it, a
        negative sum gives NaN, as in SciPy. An empty ``a`` gives -inf (sign -1), as there.
    """
    a = _asarray(a)
    dtype = _float_dtype(a) if b is None else _float_dtype(a, _asarray(b))
    if b is not None:
        b = _asarray(b)
        shape = np.broadcast_shapes(a.shape, b.shape)
        a, b = np.broadcast_to(a, shape), np.broadcast_to(b, shape)
    if a.ndim == 0:
        a = np.reshape(a, (1,))
        b = None if b is None else np.reshape(b, (1,))
    axis = tuple(range(a.ndim)) if axis is None else axis
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    axes = tuple(ax % a.ndim for ax in axes)
    if np.prod(a.shape) == 0:
        shape = tuple(1 if k in axes else n for k, n in enumerate(a.shape))
        out = np.full(shape, -np.inf, dtype)
        sgn = np.full(shape, -1.0, dtype)
    else:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            a = a.astype(dtype) if np.dtype(a.dtype) != dtype else a
            # the plain sum, where the careful one is not finite (its result is ±inf or NaN
            # there, or its largest weights cancel): held constant, so that its overflow
            # does not reach the derivative where it is not taken
            const_a = apply("stop_gradient", a)
            exp_a = (np.exp(const_a) if b is None
                     else apply("stop_gradient", b) * np.exp(const_a))
            plain = np.sum(exp_a, axis=axis, keepdims=True)
            plain_sgn = np.sign(plain)
            plain_out = np.log(np.abs(plain)) if return_sign else np.log(plain)
            # a weight of zero drops its term even where a is infinite (SciPy's rule), and
            # the term leaves the maximum; a finite one stays, for the derivative in b
            masked = a if b is None else np.where(np.equal(b, 0), -np.inf, a)
            if b is not None:
                a = np.where(np.equal(b, 0) & ~np.isfinite(a), -np.inf, a)
            a_max = apply("stop_gradient", np.max(masked, axis=axis, keepdims=True))
            top = np.equal(masked, a_max)
            shifted = np.exp(np.where(top, a, -np.inf) - a_max)
            rest = np.exp(np.where(top, -np.inf, a) - a_max)
            if b is not None:
                shifted, rest = b * shifted, b * rest
            m = np.sum(np.where(top, shifted, 0.0), axis=axis, keepdims=True)
            r = np.sum(np.where(top, 0.0, rest), axis=axis, keepdims=True)
            zero = np.equal(r, 0)
            s = np.where(zero, r, r / np.where(zero, 1.0, m))
            sgn = np.sign(s + 1) * np.sign(m)
            s = np.where(s < -1, -s - 2, s)
            out = np.log1p(s) + np.log(np.abs(m)) + a_max
            if not return_sign:
                out = np.where(sgn < 0, np.nan, out)
            finite = np.isfinite(out)
            out = np.where(finite, out, plain_out)
            sgn = np.where(finite, sgn, plain_sgn)
    if not keepdims:
        out = np.squeeze(out, axis=axis)
        sgn = np.squeeze(sgn, axis=axis)
    return (out, sgn) if return_sign else out


def softmax(x, axis=None):
    """``scipy.special.softmax``: ``exp(x - max) / sum(exp(x - max))`` along ``axis`` (the
    maximum held constant for the derivative), as SciPy computes it."""
    x = _asarray(x)
    x_max = apply("stop_gradient", np.max(x, axis=axis, keepdims=True))
    e = np.exp(x - x_max)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x, axis=None):
    """``scipy.special.log_softmax``: ``x - max - log(sum(exp(x - max)))`` along ``axis``
    (a non-finite maximum taken as 0, as SciPy does; held constant for the derivative)."""
    x = _asarray(x)
    x_max = np.max(x, axis=axis, keepdims=True)
    x_max = apply("stop_gradient", np.where(np.isfinite(x_max), x_max, 0))
    tmp = x - x_max
    return tmp - np.log(np.sum(np.exp(tmp), axis=axis, keepdims=True))
