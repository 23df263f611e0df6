"""The ``torch.special`` functions that neither ``scipy_special.py`` nor NumPy has as a
primitive: the Airy function Ai, the spherical Bessel function j₀ and the orthogonal
polynomials of ``torch.special`` (Chebyshev T, U, V, W and their shifted forms, Hermite H
and He, Laguerre L, Legendre P) of a real x and an integer degree n.

The values are torch's own algorithms (ATen's ``native/Math.h``), written on NumPy and
computed in the operands' dtype as ATen's CPU kernels compute them: j₀'s Taylor series
below 1/2 and sin(x)/x above; the polynomials' closed forms cos(n·acos x) (and the like)
inside (-1, 1) for large n, their values at ±1 (0 and 1 for the shifted ones), and the
three-term recurrence otherwise, stopped where it turns NaN. The degree is the operand n
truncated to an integer; a negative degree gives 0, as does a NaN or infinite one (ATen's
cast of those to int64 gives its smallest value on x86), and Hermite's above 512
(float64; 128 for float32) NaN. Ai is SciPy's ``airy``.

torch differentiates none of these (its results never require grad), and neither do these
primitives: they have no derivative rules. Their JAX lowerings call the NumPy
implementations on the host (``jax.pure_callback``), except j₀'s, written with ``jnp``.
"""
import numpy as np

from ..registry import register
from .elementwise import _broadcast_rule, elementwise_facts
from .scipy_special import special
from .spectral import host_lowering


def _float_dtype(*arrays):
    dtype = np.result_type(*(a.dtype for a in arrays))
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _airy_ai(x):
    x = np.asarray(x)
    dtype = _float_dtype(x)
    with np.errstate(all="ignore"):
        return np.asarray(special().airy(x.astype(dtype, copy=False))[0], dtype)


# 1 + x²(-1/3! + x²(1/5! - ...)), the Taylor series of sin(x)/x to x¹² (torch's, below 1/2)
_J0_SERIES = (1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0,
              1.0 / 120.0, -1.0 / 6.0)


def _spherical_j0(x, xp=np):
    x2 = x * x
    acc = xp.asarray(_J0_SERIES[0], x.dtype)
    for c in _J0_SERIES[1:]:
        acc = xp.asarray(c, x.dtype) + x2 * acc
    series = 1.0 + x2 * acc
    small = xp.abs(x) < 0.5
    safe = xp.where(small, xp.ones((), x.dtype), x)
    out = xp.where(small, series, xp.sin(safe) / safe)
    return xp.where(xp.isinf(x), xp.zeros((), x.dtype), out)


def _spherical_bessel_j0(x):
    x = np.asarray(x)
    x = x.astype(_float_dtype(x), copy=False)
    with np.errstate(all="ignore"):
        return np.asarray(_spherical_j0(x), x.dtype)


def _spherical_bessel_j0_jax(x):
    import jax.numpy as jnp
    return _spherical_j0(x.astype(_float_dtype(x)), jnp)


# -- the polynomials ------------------------------------------------------------------------------
_INT64_MIN = np.iinfo(np.int64).min


def _degree(n):
    """ATen's static_cast<int64_t>(n): truncation; NaN, ±inf and out-of-range values give
    int64's smallest value (x86's cvttsd2si), a negative degree."""
    if n.dtype.kind in "iub":
        return n.astype(np.int64)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(n) & (np.abs(n) < 2.0 ** 63)
        return np.where(ok, np.trunc(np.where(ok, n, 0)), 0).astype(np.int64) \
            + np.where(ok, 0, _INT64_MIN).astype(np.int64)


def _recurrence(y, k, first, need, start=2, stop_nan=True, step=None):
    """The three-term recurrence r = step(j, p, q) from p = 1, q = first, for j = start ...
    k (those elements where ``need``), stopped where q is NaN (``stop_nan``); the last r
    (q where the loop never ran)."""
    p = np.ones_like(y)
    q = first.copy()
    r = first.copy()
    todo = need & (k >= start)
    top = int(k[todo].max()) if todo.any() else start - 1
    for j in range(start, top + 1):
        active = todo & (k >= j)
        if stop_nan:
            active &= ~np.isnan(q)
        if not active.any():
            break
        new = step(j, p, q)
        r = np.where(active, new, r)
        p = np.where(active, q, p)
        q = np.where(active, new, q)
    return r


def _chebyshev(kind, shifted):
    """Chebyshev T, U, V, W (``shifted``: of 2x - 1), as ATen computes them."""
    def fn(x, k, dtype):
        one = np.ones((), dtype)
        y = (x + x - one) if shifted else x
        kf = k.astype(dtype)
        big = (k > (4 if shifted and kind == "w" else 6 if shifted or kind == "t" else 8)) \
            & (np.abs(y) < 1)
        theta = np.arccos(np.where(big, y, 0))
        # the values at the ends: x = ±1 (the shifted ones: x = 1 and 0)
        hi = x == 1 if shifted else (np.abs(x) == 1) & (x > 0)
        lo = x == 0 if shifted else (np.abs(x) == 1) & (x < 0)
        even = k % 2 == 0
        odd_sign = np.where(even, one, -one)
        if kind == "t":
            at_hi, at_lo = one, odd_sign
            closed = np.cos(kf * theta)
            first = y
        elif kind == "u":
            at_hi, at_lo = kf + 1, odd_sign * (kf + 1)
            s = np.sin(theta)
            closed = np.where(s != 0, np.sin((kf + 1) * theta) / np.where(s != 0, s, one),
                              (kf + 1) * np.cos((kf + 1) * theta) / y)
            first = y + y
        elif kind == "v":
            at_hi, at_lo = one, odd_sign * (kf + kf + 1)
            half = theta / 2
            closed = np.where(np.sin(half) != 1, np.cos((kf + 0.5) * theta) / np.cos(half),
                              odd_sign * (kf + kf + 1))
            first = y + y - one
        else:
            at_hi, at_lo = kf + kf + 1, odd_sign
            half = theta / 2
            limit = odd_sign if shifted else np.where(y > 0, kf + kf + 1, odd_sign)
            closed = np.where(np.cos(half) != 1, np.sin((kf + 0.5) * theta) / np.sin(half),
                              limit)
            first = y + y + one
        rec = ~hi & ~lo & ~big & (k >= 0)
        out = _recurrence(y, k, first, rec, step=lambda j, p, q: (y + y) * q - p)
        out = np.where(k == 0, one, np.where(k == 1, first, out))
        out = np.where(big, closed, out)
        out = np.where(lo, at_lo, np.where(hi, at_hi, out))
        return np.where(k < 0, np.zeros((), dtype), out)
    return fn


def _hermite(physicists):
    def fn(x, k, dtype):
        one = np.ones((), dtype)
        limit = 128 if dtype == np.float32 else 512
        if physicists:      # H: r = 2x q - j p, j = 2, 4, ..., < 2n (no NaN stop)
            first = x + x
            need = k >= 2
            top = int(k[need].max()) if need.any() else 0
            top = min(top, limit)
            p, q, r = np.ones_like(x), first.copy(), np.zeros_like(x)
            for m in range(2, top + 1):
                j = 2 * (m - 1)
                active = need & (k >= m)
                new = (x + x) * q - j * p
                r = np.where(active, new, r)
                p = np.where(active, q, p)
                q = np.where(active, new, q)
            out = r
        else:               # He: r = x q - j p, j = 1 ... n - 1 (no NaN stop)
            first = x
            out = _recurrence(x, k, first, k <= limit, start=2, stop_nan=False,
                              step=lambda m, p, q: x * q - (m - 1) * p)
        out = np.where(k > limit, np.asarray(np.nan, dtype), out)
        out = np.where(k == 0, one, np.where(k == 1, first, out))
        return np.where(k < 0, np.zeros((), dtype), out)
    return fn


def _laguerre(x, k, dtype):
    one = np.ones((), dtype)
    first = one - x
    # r = ((2j + 1 - x) q - j p)/(j + 1), j = 1 ... n - 1
    out = _recurrence(x, k, first, x != 0, step=lambda m, p, q: (
        ((2 * (m - 1)) + (one - x)) * q - (m - 1) * p) / m)
    out = np.where(k == 0, one, np.where(k == 1, first, out))
    out = np.where(x == 0, one, out)
    return np.where(k < 0, np.zeros((), dtype), out)


def _legendre(x, k, dtype):
    one = np.ones((), dtype)
    ends = np.abs(x) == 1
    # r = ((2j + 1) x q - j p)/(j + 1), j = 1 ... n - 1
    out = _recurrence(x, k, x, ~ends, step=lambda m, p, q: (
        (2 * (m - 1) + 1) * x * q - (m - 1) * p) / m)
    out = np.where(k == 0, one, np.where(k == 1, x, out))
    out = np.where(ends, np.where((x > 0) | (k % 2 == 0), one, -one), out)
    return np.where(k < 0, np.zeros((), dtype), out)


POLYNOMIALS = {
    **{f"chebyshev_polynomial_{c}": _chebyshev(c, False) for c in "tuvw"},
    **{f"shifted_chebyshev_polynomial_{c}": _chebyshev(c, True) for c in "tuvw"},
    "hermite_polynomial_h": _hermite(True),
    "hermite_polynomial_he": _hermite(False),
    "laguerre_polynomial_l": _laguerre,
    "legendre_polynomial_p": _legendre,
}


def _polynomial_impl(name):
    fn = POLYNOMIALS[name]

    def impl(x, n):
        x, n = np.asarray(x), np.asarray(n)
        dtype = _float_dtype(x, n)
        x, n = np.broadcast_arrays(x.astype(dtype, copy=False), n)
        with np.errstate(all="ignore"):
            return np.asarray(fn(x, _degree(n), dtype), dtype)
    impl.__name__ = impl.__qualname__ = name
    return impl


def _register(name, impl, doc, jax=None):
    return register(name, impl, abstract=_broadcast_rule(impl), vjp=None, jvp=None,
                    jax=jax or host_lowering(name), family="elementwise", doc=doc,
                    **elementwise_facts(name))


_register("airy_ai", _airy_ai, "the Airy function Ai(x) (scipy.special.airy's first result); "
          "torch.special.airy_ai, not differentiated")
_register("spherical_bessel_j0", _spherical_bessel_j0,
          "the spherical Bessel function j₀(x) = sin(x)/x, as torch computes it (a Taylor "
          "series below 1/2, 0 at ±inf); not differentiated", jax=_spherical_bessel_j0_jax)
for _name in POLYNOMIALS:
    _register(_name, _polynomial_impl(_name),
              f"torch.special.{_name}(x, n): the polynomial of degree n (truncated to an "
              f"integer; 0 for a negative one) at x, by ATen's algorithm; not differentiated")
del _name
