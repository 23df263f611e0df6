"""∂P(a, x)/∂a, the derivative of the regularized lower incomplete gamma function
``scipy.special.gammainc`` in its shape parameter, on NumPy (SciPy has no such function).

Two expansions, each differentiated term by term in ``a`` alongside its value, as the
forward mode would (so no finite differences, and the same convergence test covers both):

- below ``x = max(a, 1)``, the power series
  ``P(a, x) = x^a e^-x / Γ(a+1) · Σ_n x^n / ((a+1)(a+2)…(a+n))``,
  whose terms shrink geometrically there (the ratio ``x/(a+n)`` is below 1);
- above it, Legendre's continued fraction for the upper function
  ``Q(a, x) = x^a e^-x / Γ(a) · 1/(x+1-a - 1(1-a)/(x+3-a - 2(2-a)/(x+5-a - …)))``,
  evaluated by its three-term recurrence (numerators and denominators rescaled each
  step), with ``∂P/∂a = -∂Q/∂a``. Where ``P`` is near 1 the series would lose the small
  derivative to cancellation; the fraction computes it with relative accuracy.

Each element stops when a step changes neither the sum nor its derivative by more than
a unit in the last place (the fraction: a few units, three steps in a row; running on
would only pile rounding up), within ``MAX_TERMS`` steps.
Checked against central finite differences of SciPy's ``gammainc`` and against JAX's
``igamma_grad_a`` (``tests/test_scipy_special.py``).
"""
import numpy as np

EPS = np.finfo(np.float64).eps
# the fraction's derivative wobbles by a few units in the last place once converged
# (rounding in the recurrence): stopping at EPS would run on, piling rounding up
TOL = 8 * EPS
MAX_TERMS = 5000


def gammainc_da(a, x, gammaln, digamma):
    """``∂/∂a gammainc(a, x)`` (float64), elementwise over the broadcast operands.
    ``gammaln`` and ``digamma`` are SciPy's (passed in: the ir layer imports SciPy only
    when it runs). NaN outside the domain ``a > 0, x >= 0``; 0 at ``x = 0`` and
    ``x = inf``."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    out = np.full(a.shape, np.nan)
    ok = (a > 0) & (x >= 0)
    out[ok & ((x == 0) | (x == np.inf))] = 0.0
    inside = ok & (x > 0) & np.isfinite(x) & np.isfinite(a)
    upper = inside & (x > a) & (x > 1.0)
    lower = inside & ~upper
    if lower.any():
        out[lower] = _series(a[lower], x[lower], gammaln, digamma)
    if upper.any():
        out[upper] = -_fraction(a[upper], x[upper], gammaln, digamma)
    return out


def _series(a, x, gammaln, digamma):
    """∂P/∂a from the power series (x <= max(a, 1))."""
    term, dterm = np.ones_like(x), np.zeros_like(x)
    total, dtotal = term.copy(), dterm.copy()
    for n in range(1, MAX_TERMS):
        r = 1.0 / (a + n)
        term = term * x * r
        dterm = (dterm * x - term) * r          # d/da of term_{n-1} · x/(a+n)
        total += term
        dtotal += dterm
        if np.all((np.abs(term) <= EPS * total) & (np.abs(dterm) <= EPS * np.abs(dtotal))):
            break
    log_x = np.log(x)
    prefactor = np.exp(a * log_x - x - gammaln(a + 1.0))
    return prefactor * (total * (log_x - digamma(a + 1.0)) + dtotal)


def _fraction(a, x, gammaln, digamma):
    """∂Q/∂a from Legendre's continued fraction (x > max(a, 1))."""
    # the convergents A_k / B_k of 1/(b_1 + a_2/(b_2 + …)), b_k = x + 2k - 1 - a,
    # a_k = -(k-1)(k-1-a), and their derivatives in a (db_k = -1, da_k = k - 1)
    num0, num1 = np.ones_like(x), np.zeros_like(x)
    den0, den1 = np.zeros_like(x), np.ones_like(x)
    dnum0, dnum1 = np.zeros_like(x), np.zeros_like(x)
    dden0, dden1 = np.zeros_like(x), np.zeros_like(x)
    value = dvalue = np.zeros_like(x)
    # steps in a row that changed nothing, per element (one can by accident); a settled
    # element keeps its value while the others go on (more steps would only add rounding)
    settled = np.zeros(x.shape, np.int64)
    for k in range(1, MAX_TERMS):
        b = x + (2.0 * k - 1.0) - a
        if k == 1:
            c, dc = 1.0, 0.0
        else:
            c, dc = -(k - 1.0) * (k - 1.0 - a), k - 1.0
        num0, num1, dnum0, dnum1 = (num1, b * num1 + c * num0,
                                    dnum1, -num1 + b * dnum1 + dc * num0 + c * dnum0)
        den0, den1, dden0, dden1 = (den1, b * den1 + c * den0,
                                    dden1, -den1 + b * dden1 + dc * den0 + c * dden0)
        # the ratios are unchanged by a common factor: keep the denominators near 1
        scale = 1.0 / np.abs(den1)
        num0, num1, den0, den1 = num0 * scale, num1 * scale, den0 * scale, den1 * scale
        dnum0, dnum1, dden0, dden1 = dnum0 * scale, dnum1 * scale, dden0 * scale, dden1 * scale
        new = num1 / den1
        dnew = (dnum1 - new * dden1) / den1
        done = settled >= 3
        # dnew is a difference: its rounding is relative to the terms, not to itself
        dscale = (np.abs(dnum1) + np.abs(new * dden1)) / np.abs(den1)
        still = ((np.abs(new - value) <= TOL * np.abs(new))
                 & (np.abs(dnew - dvalue) <= TOL * dscale))
        settled = np.where(done, settled, np.where(still, settled + 1, 0))
        value, dvalue = np.where(done, value, new), np.where(done, dvalue, dnew)
        if np.all(settled >= 3):
            break
    log_x = np.log(x)
    prefactor = np.exp(a * log_x - x - gammaln(a))
    return prefactor * (value * (log_x - digamma(a)) + dvalue)
