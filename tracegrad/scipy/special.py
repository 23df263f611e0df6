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
    """``scipy.special.multigammaln(a, d)``: log of the multivariate gamma function."""
    d = int(d)
    total = (d * (d - 1) / 4.0) * math.log(math.pi)
    for j in range(d):
        total = total + gammaln(a - j / 2.0)
    return total


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """``scipy.special.logsumexp``: ``log(sum(b * exp(a)))`` along ``axis``, computed
    stably (the maximum is taken out and held constant for the derivative).

    Returns:
        the result; with ``return_sign=True``, ``(log|s|, sign(s))``. Without it, a
        negative sum gives NaN, as in SciPy.
    """
    a = np.asarray(a) if not hasattr(a, "shape") else a
    a_max = a
    if b is not None:
        # a weight of zero drops its term even where a is infinite (SciPy's rule), and
        # the term leaves the maximum; a finite one stays, for the derivative in b
        zero = np.equal(b, 0)
        a = np.where(zero & ~np.isfinite(a), -np.inf, a)
        a_max = np.where(zero, -np.inf, a)
    a_max = np.max(a_max, axis=axis, keepdims=True)
    a_max = apply("stop_gradient", np.where(np.isfinite(a_max), a_max, 0.0))
    e = np.exp(a - a_max)
    if b is not None:
        e = b * e
    s = np.sum(e, axis=axis, keepdims=True)
    sgn = np.sign(s)
    out = np.log(np.abs(s)) + a_max
    if not keepdims:
        out = np.squeeze(out, axis=axis)
        sgn = np.squeeze(sgn, axis=axis)
    if return_sign:
        return out, sgn
    return np.where(sgn < 0, np.nan, out)


def softmax(x, axis=None):
    """``scipy.special.softmax``: ``exp(x) / sum(exp(x))`` along ``axis``."""
    return np.exp(x - logsumexp(x, axis=axis, keepdims=True))


def log_softmax(x, axis=None):
    """``scipy.special.log_softmax``: ``x - logsumexp(x)`` along ``axis``."""
    return x - logsumexp(x, axis=axis, keepdims=True)
