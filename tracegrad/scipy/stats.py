"""``scipy.stats`` densities and distribution functions with SciPy's signatures, on traced
and plain values alike: ``norm``, ``t``, ``multivariate_normal``, ``gamma``, ``beta``,
``chi2``, ``poisson``, ``dirichlet``.

Each distribution is a namespace of functions (``norm.logpdf(x, loc=0, scale=1)``), as in
``jax.scipy.stats``. Outside the support a log-density is ``-inf`` (as SciPy's); the
derivatives are those of the formulas inside it. As SciPy's: NaN for a NaN operand or a
parameter outside its domain (``scale <= 0``, ``df <= 0``, ...), float64 results for
integer and float32 operands, log-cdfs and log-sfs relative in both tails. The distribution functions are the
incomplete gamma and beta functions of ``tracegrad.scipy.special``, so they differentiate
as those do: ``gamma``'s, ``chi2``'s and ``poisson``'s in every continuous parameter; ``t``'s
and ``beta``'s not in ``df`` nor ``a``, ``b`` (``betainc``'s shape parameters: a
``TraceError``), as in JAX.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from . import special
from .linalg import solve_triangular

__all__ = ["beta", "chi2", "dirichlet", "gamma", "multivariate_normal", "norm", "poisson", "t"]

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def _plain(out):
    """A plain 0-d result as NumPy's number, as SciPy's (a traced one stays itself)."""
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


def _exp(logf):
    def f(*args, **kwargs):
        with np.errstate(all="ignore"):
            return _plain(np.exp(logf(*args, **kwargs)))
    f.__name__ = f.__qualname__ = logf.__name__.replace("log", "", 1)
    f.__doc__ = f"``exp({logf.__name__}(...))``."
    return f


def _log_of(cdf, sf, name):
    """``log(cdf)`` with relative precision in both tails: ``log1p(-sf)`` where the cdf is
    above 1/2 (``log(cdf)`` rounds to 0 there), ``log(cdf)`` elsewhere. Each branch sees
    a harmless stand-in where it is not taken, so that its derivative stays finite."""
    def logf(*args, **kwargs):
        with np.errstate(all="ignore"):     # log(0) = -inf, silently (as SciPy's)
            c, s = cdf(*args, **kwargs), sf(*args, **kwargs)
            upper = c > 0.5
            return _plain(np.where(upper, np.log1p(-np.where(upper, s, 0.0)),
                                   np.log(np.where(upper, 1.0, c))))
    logf.__name__ = logf.__qualname__ = name
    logf.__doc__ = f"``{name}``: ``log`` of the {name[3:]}, relative in both tails."
    return logf


def _float(x):
    """A Python number or array as a float array (a tracer stays itself)."""
    if hasattr(x, "dtype") and np.dtype(x.dtype).kind == "f":
        return x
    return np.asarray(x, dtype=np.float64) if not hasattr(x, "_trace") else x * 1.0


def _not_positive(*xs):
    """Where any of ``xs`` is not > 0 (NaN included)."""
    out = np.logical_not(xs[0] > 0)
    for x in xs[1:]:
        out = np.logical_or(out, np.logical_not(x > 0))
    return out


def _f64(x):
    """An array operand as float64: SciPy's distributions compute and answer in float64
    for integer and float32 operands alike (Python numbers are float64 already)."""
    if hasattr(x, "dtype") and np.dtype(x.dtype) != np.float64:
        return x.astype(np.float64)
    return x


def _checked(raw, invalid, name):
    """``raw`` with SciPy's NaN where ``invalid`` (a NaN argument, a parameter outside its
    domain) holds, and no floating-point warnings (SciPy gives none); in float64."""
    def f(*args, **kwargs):
        args = [_f64(a) for a in args]
        kwargs = {k: _f64(v) for k, v in kwargs.items()}
        with np.errstate(all="ignore"):
            return _plain(np.where(invalid(*args, **kwargs), np.nan, raw(*args, **kwargs)))
    f.__name__ = f.__qualname__ = name
    f.__doc__ = raw.__doc__
    return f


def _namespace(raws, invalid, log_density):
    """A distribution's functions: ``raws`` (name -> formula), each checked by
    ``invalid``; the density from the log-density, the log-cdf and log-sf from the cdf
    and sf."""
    fns = {name: _checked(raw, invalid, name) for name, raw in raws.items()}
    fns[log_density[3:]] = _exp(fns[log_density])
    fns["logcdf"] = _log_of(fns["cdf"], fns["sf"], "logcdf")
    fns["logsf"] = _log_of(fns["sf"], fns["cdf"], "logsf")
    return SimpleNamespace(**fns)


# -- norm -----------------------------------------------------------------------------------------
def _standard_nan(x, loc, scale):
    """Where ``(x - loc) / scale`` is NaN (a NaN operand, ``inf - inf``, ``inf / inf``)."""
    return np.isnan((x - loc) / _float(scale))


def _norm_invalid(x, loc=0, scale=1):
    return np.logical_or(_standard_nan(x, loc, scale), _not_positive(scale))


def _norm_z(x, loc, scale):
    return (x - loc) / _float(scale)    # scale 0: not Python's ZeroDivisionError


def _norm_logpdf(x, loc=0, scale=1):
    scale = _float(scale)
    z = _norm_z(x, loc, scale)
    return -0.5 * z * z - np.log(np.where(scale > 0, scale, 1.0)) - LOG_SQRT_2PI


def _norm_cdf(x, loc=0, scale=1):
    return special.ndtr(_norm_z(x, loc, scale))


def _norm_sf(x, loc=0, scale=1):
    return special.ndtr(-_norm_z(x, loc, scale))


def _norm_logcdf(x, loc=0, scale=1):
    return special.log_ndtr(_norm_z(x, loc, scale))


def _norm_logsf(x, loc=0, scale=1):
    return special.log_ndtr(-_norm_z(x, loc, scale))


def _norm_ppf(q, loc=0, scale=1):
    return loc + _float(scale) * special.ndtri(q)


norm = SimpleNamespace(**{name: _checked(raw, _norm_invalid, name) for name, raw in (
    ("logpdf", _norm_logpdf), ("cdf", _norm_cdf), ("logcdf", _norm_logcdf),
    ("sf", _norm_sf), ("logsf", _norm_logsf), ("ppf", _norm_ppf))})
norm.pdf = _exp(norm.logpdf)


# -- Student's t ----------------------------------------------------------------------------------
# log Γ(n + 1/2) - log Γ(n) - log(n)/2 for large n: Σ (2^-k - 2) B_{k+1} / (k (k+1) n^k), k odd
_T_SERIES = (-1.0 / 8.0, 1.0 / 192.0, -1.0 / 640.0, 17.0 / 14336.0, -31.0 / 18432.0,
             691.0 / 180224.0)
_T_LARGE = 25.0     # n = df/2 from which the series (error below 1e-18) replaces gammaln


def _t_log_norm(df):
    """``log Γ((df+1)/2) - log Γ(df/2) - log(df π)/2``: the difference of gammaln loses
    the digits of their size at large df, so there it is the asymptotic series (0 at
    df = ∞, the normal's ``-log(2π)/2``)."""
    n = 0.5 * df
    large = n >= _T_LARGE
    r = 1.0 / np.where(large, n, _T_LARGE)
    r2 = r * r
    series = 0.0
    for c in reversed(_T_SERIES):
        series = c + r2 * series
    series = r * series - LOG_SQRT_2PI
    ns = np.where(large, 1.0, n)
    direct = special.gammaln(ns + 0.5) - special.gammaln(ns) - 0.5 * np.log(ns * (2.0 * math.pi))
    return np.where(large, series, direct)


def _t_invalid(x, df, loc=0, scale=1):
    return np.logical_or(_standard_nan(x, loc, scale), _not_positive(df, scale))


def _t_logpdf(x, df, loc=0, scale=1):
    scale, df = _float(scale), _float(df)
    z = (x - loc) / scale
    finite = np.isfinite(df)
    d = np.where(finite, df, 1.0)
    kernel = np.where(finite, 0.5 * (d + 1.0) * np.log1p(z * z / d), 0.5 * z * z)
    return _t_log_norm(df) - np.log(np.where(scale > 0, scale, 1.0)) - kernel


def _t_cdf(x, df, loc=0, scale=1):
    """Three formulas, each where it keeps its digits and a finite derivative:
    ``1/2 + z pdf(0)`` at ``|z| < 1e-8`` (exact to rounding there); the centre
    ``1/2 ± I_{z²/(df+z²)}(1/2, df/2)/2`` for ``z² < min(df, 16)`` (the cdf is above 3e-5
    there); the tails ``I_{df/(df+z²)}(df/2, 1/2)/2`` beyond. (The tails round
    ``1 - df/(df+z²)``: relative errors about ``df · 1e-16`` at ``df`` above 1e6, which
    only a complemented incomplete beta function would avoid.) (A tail formula at ``z = 0`` has the derivative
    ``∞ · 0``.) ``df = ∞`` is the normal's."""
    df = _float(df)
    z = (x - loc) / _float(scale)
    finite = np.isfinite(df)
    d = np.where(finite, np.where(df > 0, df, 1.0), 1.0)
    zz = z * z
    tiny = np.abs(z) < 1e-8 * np.minimum(1.0, np.sqrt(d))
    edge = np.minimum(d, 16.0)
    centre = np.logical_and(zz < edge, np.logical_not(tiny))
    zc = np.where(centre, z, 0.5 * np.sqrt(edge))
    half = 0.5 * special.betainc(0.5, 0.5 * d, zc * zc / (d + zc * zc))
    centre_value = 0.5 + np.where(zc < 0, -half, half)
    outer = zz >= edge
    zt = np.where(outer, z, 2.0 * np.sqrt(edge))
    tail = 0.5 * special.betainc(0.5 * d, 0.5, d / (d + zt * zt))
    tail_value = np.where(zt < 0, tail, 1.0 - tail)
    tiny_value = 0.5 + np.where(tiny, z, 0.0) * np.exp(_t_log_norm(d))
    value = np.where(tiny, tiny_value, np.where(centre, centre_value, tail_value))
    return np.where(finite, value, special.ndtr(np.where(finite, 0.0, z)))


def _t_sf(x, df, loc=0, scale=1):
    return _t_cdf(-x, df, -loc, scale)


t = _namespace({"logpdf": _t_logpdf, "cdf": _t_cdf, "sf": _t_sf}, _t_invalid, "logpdf")


# -- gamma ----------------------------------------------------------------------------------------
def _gamma_invalid(x, a, loc=0, scale=1):
    """NaN, as SciPy, for a NaN argument or a parameter outside a > 0, scale > 0."""
    return np.logical_or(_standard_nan(x, loc, scale), _not_positive(a, scale))


def _gamma_logpdf(x, a, loc=0, scale=1):
    scale = _float(scale)
    y = (x - loc) / scale
    inside = y >= 0
    ys = np.where(inside, y, 1.0)
    value = (special.xlogy(a - 1.0, ys) - ys - special.gammaln(a)
             - np.log(np.where(scale > 0, scale, 1.0)))
    return np.where(inside, value, -np.inf)


def _gamma_cdf(x, a, loc=0, scale=1):
    y = (x - loc) / _float(scale)
    inside = (y > 0) & (y < np.inf)     # at y = ∞, 1 for every a (SciPy: x >= b)
    return np.where(inside, special.gammainc(a, np.where(inside, y, 1.0)), y > 0)


def _gamma_sf(x, a, loc=0, scale=1):
    y = (x - loc) / _float(scale)
    inside = (y > 0) & (y < np.inf)
    return np.where(inside, special.gammaincc(a, np.where(inside, y, 1.0)), y <= 0)


gamma = _namespace({"logpdf": _gamma_logpdf, "cdf": _gamma_cdf, "sf": _gamma_sf},
                   _gamma_invalid, "logpdf")


# -- chi2: gamma(df/2, scale=2) -------------------------------------------------------------------
def _chi2(fn, name):
    def f(x, df, loc=0, scale=1):
        return fn(x, 0.5 * df, loc, 2.0 * scale)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``scipy.stats.chi2.{name}(x, df, loc=0, scale=1)``."
    return f


chi2 = SimpleNamespace(**{name: _chi2(fn, name) for name, fn in vars(gamma).items()})


# -- beta -----------------------------------------------------------------------------------------
def _beta_invalid(x, a, b, loc=0, scale=1):
    return np.logical_or(_standard_nan(x, loc, scale), _not_positive(a, b, scale))


def _beta_logpdf(x, a, b, loc=0, scale=1):
    scale = _float(scale)
    y = (x - loc) / scale
    inside = (y >= 0) & (y <= 1)
    y = np.where(inside, y, 0.5)
    value = (special.xlogy(a - 1.0, y) + special.xlog1py(b - 1.0, -y) - special.betaln(a, b)
             - np.log(np.where(scale > 0, scale, 1.0)))
    return np.where(inside, value, -np.inf)


def _beta_cdf(x, a, b, loc=0, scale=1):
    y = (x - loc) / _float(scale)
    inside = (y > 0) & (y < 1)
    value = special.betainc(a, b, np.where(inside, y, 0.5))
    return np.where(inside, value, np.where(y <= 0, 0.0, 1.0))


def _beta_sf(x, a, b, loc=0, scale=1):
    # I_{1-y}(b, a): accurate where the cdf is near 1
    y = (x - loc) / _float(scale)
    inside = (y > 0) & (y < 1)
    value = special.betainc(b, a, 1.0 - np.where(inside, y, 0.5))
    return np.where(inside, value, np.where(y <= 0, 1.0, 0.0))


beta = _namespace({"logpdf": _beta_logpdf, "cdf": _beta_cdf, "sf": _beta_sf},
                  _beta_invalid, "logpdf")


# -- poisson --------------------------------------------------------------------------------------
def _poisson_invalid(k, mu, loc=0):
    return np.logical_or(np.isnan(k - loc), np.logical_not(mu >= 0))


def _poisson_logpmf(k, mu, loc=0):
    k = _float(k - loc)
    inside = (k >= 0) & (k == np.floor(k))
    k = np.where(inside, k, 0.0)
    value = special.xlogy(k, mu) - special.gammaln(k + 1.0) - mu
    return np.where(inside, value, -np.inf)


def _poisson_cdf(k, mu, loc=0):
    """Q(floor(k) + 1, mu): differentiable in mu (k is discrete)."""
    k = np.floor(_float(k - loc))
    inside = (k >= 0) & (k < np.inf)    # at k = ∞, 1 for every mu (SciPy: k >= b)
    return np.where(inside, special.gammaincc(np.where(inside, k, 0.0) + 1.0, mu), k >= 0)


def _poisson_sf(k, mu, loc=0):
    k = np.floor(_float(k - loc))
    inside = (k >= 0) & (k < np.inf)
    return np.where(inside, special.gammainc(np.where(inside, k, 0.0) + 1.0, mu), k < 0)


poisson = _namespace({"logpmf": _poisson_logpmf, "cdf": _poisson_cdf, "sf": _poisson_sf},
                     _poisson_invalid, "logpmf")


_poisson_log_of_cdf = poisson.logcdf


def _poisson_logcdf(k, mu, loc=0):
    # SciPy's discrete logcdf is 0 at k = ∞ even for an invalid mu (it sets that case
    # after the NaN of invalid parameters)
    with np.errstate(all="ignore"):
        return _plain(np.where(k - loc == np.inf, 0.0, _poisson_log_of_cdf(k, mu, loc)))


_poisson_logcdf.__name__ = _poisson_logcdf.__qualname__ = "logcdf"
_poisson_logcdf.__doc__ = poisson.logcdf.__doc__
poisson.logcdf = _poisson_logcdf


# -- dirichlet ------------------------------------------------------------------------------------
def _dirichlet_check(x, alpha):
    """SciPy's ``_dirichlet_check_parameters`` and ``_dirichlet_check_input`` on plain
    values: the same ``ValueError`` (the shape checks are made on traced values too)."""
    a = np.asarray(alpha)
    if np.min(a) <= 0:
        raise ValueError("All parameters must be greater than 0")
    x = np.asarray(x)
    if x.shape[0] != a.shape[0]:
        x = np.concatenate([x, [1 - np.sum(x, 0)]], axis=0)
    if np.min(x) < 0:
        raise ValueError("Each entry in 'x' must be greater than or equal to zero.")
    if np.max(x) > 1:
        raise ValueError("Each entry in 'x' must be smaller or equal one.")
    lt1 = np.reshape(a < 1, a.shape + (1,) * (x.ndim - 1))
    if np.any((x == 0) & lt1):
        raise ValueError("Each entry in 'x' must be greater than zero if its alpha is less "
                         "than one.")
    if (np.abs(np.sum(x, 0) - 1.0) > 10e-10).any():
        raise ValueError("The input vector 'x' must lie within the normal simplex. but "
                         f"np.sum(x, 0) = {np.sum(x, 0)}.")


def _dirichlet_logpdf(x, alpha):
    """SciPy's layout: the components along the first axis of ``x`` (shape ``(K,)`` or
    ``(K, N)``); ``K - 1`` components give the last as one minus their sum. Plain values
    off the simplex (or ``alpha <= 0``) raise SciPy's ``ValueError``; traced ones, whose
    values a compiled function cannot branch on, give NaN at each such point."""
    x, alpha = (np.asarray(v) if isinstance(v, (list, tuple)) else v for v in (x, alpha))
    traced = hasattr(x, "_trace") or hasattr(alpha, "_trace")
    if np.ndim(alpha) != 1:
        if not traced and np.min(alpha) <= 0:
            raise ValueError("All parameters must be greater than 0")
        raise ValueError("Parameter vector 'a' must be one dimensional, but a.shape = "
                         f"{np.shape(alpha)}.")
    k = np.shape(alpha)[0]
    if np.shape(x)[0] not in (k, k - 1):
        raise ValueError("Vector 'x' must have either the same number of entries as, or "
                         "one entry fewer than, parameter vector 'a', but alpha.shape = "
                         f"{np.shape(alpha)} and x.shape = {np.shape(x)}.")
    if np.shape(x)[0] == k - 1 and np.ndim(x) > 2:
        raise ValueError("The input must be one dimensional or a two dimensional matrix "
                         "containing the entries.")
    if not traced:
        _dirichlet_check(x, alpha)
    with np.errstate(all="ignore"):
        if np.shape(x)[0] == k - 1:
            x = np.concatenate([x, 1.0 - np.sum(x, axis=0, keepdims=True)], axis=0)
        a = np.reshape(alpha, np.shape(alpha) + (1,) * (np.ndim(x) - 1))
        lnb = np.sum(special.gammaln(alpha)) - special.gammaln(np.sum(alpha))
        value = np.sum(special.xlogy(a - 1.0, x), axis=0) - lnb
        if not traced:
            return value
        off = ((x < 0) | (x > 1) | ((x == 0) & (a < 1))).any(axis=0)
        off = off | (np.abs(np.sum(x, axis=0) - 1.0) > 10e-10) | np.any(alpha <= 0)
        return np.where(off, np.nan, value)


_dirichlet_logpdf.__name__ = "logpdf"
dirichlet = SimpleNamespace(logpdf=_dirichlet_logpdf, pdf=_exp(_dirichlet_logpdf))


# -- multivariate normal ------------------------------------------------------------------------------
def _mvn_dim_mean(mean, cov):
    """The dimension as SciPy's ``_process_parameters`` infers it: the length of ``mean``,
    else the size of a matrix ``cov``, else 1 (a number or no ``mean`` with a number
    ``cov``; the points' shape does not count). Where SciPy raises (a number ``mean``
    with a matrix ``cov``, no ``mean`` with a vector of variances), ``cov`` gives it."""
    if mean is not None and np.ndim(mean):
        dim = np.shape(mean)[-1]
    elif np.ndim(cov) >= 1:
        dim = np.shape(cov)[-1]
    else:
        dim = 1
    return dim, (np.zeros(dim) if mean is None else mean)


def _mvn_check(cov, dim, allow_singular):
    """SciPy's checks (``_PSD``) of a plain covariance, with its exceptions: finite, positive
    semidefinite, and definite unless ``allow_singular`` (eigenvalues up to
    ``1e6 * eps * max|s|`` count as zero). A traced covariance is not checked: its
    Cholesky factor fails (a matrix) or the result is NaN (a negative variance)."""
    if hasattr(cov, "_trace") or np.ndim(cov) > 2:
        return
    c = np.asarray(cov, dtype=np.float64)
    c = c * np.eye(dim) if c.ndim == 0 else (np.diag(c) if c.ndim == 1 else c)
    if not np.all(np.isfinite(c)):
        raise ValueError("array must not contain infs or NaNs")
    s = np.linalg.eigvalsh(c)                                 # the lower triangle, as SciPy
    eps = 1e6 * np.finfo(np.float64).eps * np.max(np.abs(s))
    if np.min(s) < -eps:
        raise ValueError("The input matrix must be symmetric positive semidefinite.")
    if np.sum(s > eps) < len(s) and not allow_singular:
        raise np.linalg.LinAlgError("When `allow_singular is False`, the input matrix must "
                                    "be symmetric positive definite.")


def _mvn_psd(cov, dim):
    """SciPy's ``_PSD`` of a covariance (a matrix, a vector of variances or a number):
    the pseudo-determinant's log, the rank, a function giving the squared Mahalanobis
    length of deviations (last axis) on the support, and one giving the squared distance
    of a deviation from the support.

    SciPy takes the eigenvalues ``s`` of ``cov`` and calls those at most
    ``1e6 * eps * max|s|`` zero. Here the eigenvectors ``u`` of those (their projector
    ``P``) are taken with no gradient, and the rest is computed from ``C = cov + c P``
    (``c = max|s|``), which is positive definite with the same eigenvalues on the support:
    ``log pdet = log det C - (n - rank) log c`` and ``pinv = C⁻¹ - P / c``. So the
    derivatives in ``cov`` are those of the Cholesky formulas (exact where ``cov`` is
    nonsingular, even with repeated eigenvalues, where eigenvector derivatives are not
    defined) and, at a singular ``cov``, those along perturbations that keep its support.
    An indefinite ``cov`` (an eigenvalue below ``-eps``) gives a NaN log-determinant."""
    from ..ir import apply

    cov = cov * np.eye(dim) if np.ndim(cov) == 0 else cov
    cov = cov[..., None, :] * np.eye(dim) if np.ndim(cov) == 1 else cov
    fixed = apply("stop_gradient", cov) if hasattr(cov, "_trace") else np.asarray(cov)
    low = np.tril(fixed)                                      # SciPy reads the lower triangle
    fixed = low + np.swapaxes(np.tril(fixed, -1), -1, -2)
    s, u = np.linalg.eigh(fixed)
    top = np.max(np.abs(s))
    eps = 1e6 * np.finfo(np.float64).eps * top
    null = s <= eps
    proj = (u * null) @ np.swapaxes(u, -1, -2)
    c = np.where(top > 0, top, 1.0)
    chol = np.linalg.cholesky(cov + c * proj)
    nullity = np.sum(null)
    rank = dim - nullity
    log_pdet = 2.0 * np.sum(np.log(np.diagonal(chol))) - nullity * np.log(c)

    def maha(dev):
        flat = np.reshape(dev, (-1, dim))
        z = solve_triangular(chol, flat.T, lower=True, check_finite=False)
        off = np.sum(flat.T * (proj @ flat.T), axis=0)
        return np.reshape(np.sum(z * z, axis=0) - off / c, np.shape(dev)[:-1])

    def off_support(dev):
        return np.sum(dev * (dev @ proj), axis=-1) >= (1e3 * eps) ** 2

    indefinite = np.min(s) < -eps       # SciPy refuses it; traced, the results are NaN
    return np.where(indefinite, np.nan, log_pdet), rank, maha, off_support


def _mvn_logpdf(x, mean=None, cov=1, allow_singular=False):
    """Components along the last axis of ``x``; ``cov`` a matrix, or a vector of variances
    or a number (a diagonal covariance), as SciPy reads it. The result drops the last
    axis (a number for one point). ``allow_singular=True`` follows SciPy: the
    pseudo-determinant and pseudo-inverse on the support (its rank counts the
    dimensions), and ``-inf`` at points off the support. Points and result as SciPy's
    ``_process_quantiles`` and ``_squeeze_output`` make them: a number is one point, a
    vector is one point, or many points in one dimension; every axis of length 1 is
    dropped from the result (a number for one point)."""
    # lists (of numbers or traced values) as SciPy's asarray reads them
    x, mean, cov = (np.asarray(v) if isinstance(v, (list, tuple)) else v
                    for v in (x, mean, cov))
    dim, mean = _mvn_dim_mean(mean, cov)
    _mvn_check(cov, dim, allow_singular)
    if np.ndim(x) == 0:
        x = np.reshape(x, (1,))
    elif np.ndim(x) == 1 and dim == 1:
        x = np.reshape(x, (-1, 1))
    out = _mvn_logpdf_points(x - mean, dim, cov, allow_singular)
    out = np.squeeze(out)
    # a plain 0-d result is NumPy's number, as SciPy's (a traced one stays 0-d)
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


def _mvn_logpdf_points(dev, dim, cov, allow_singular):
    """The log-density of the deviations ``dev`` (components along the last axis)."""
    if np.ndim(dev) == 0:
        dev = np.reshape(dev, (1,))
    if allow_singular:
        logdet, rank, maha_of, off_support = _mvn_psd(cov, dim)
        value = -0.5 * (rank * math.log(2.0 * math.pi) + logdet + maha_of(dev))
        return np.where(off_support(dev), -np.inf, value)
    if np.ndim(cov) < 2:
        var = cov * np.ones(dim) if np.ndim(cov) == 0 else cov
        maha = np.sum(dev * dev / var, axis=-1)
        logdet = np.sum(np.log(var))
    else:
        chol = np.linalg.cholesky(cov)
        flat = np.reshape(dev, (-1, dim))
        z = solve_triangular(chol, flat.T, lower=True, check_finite=False)
        maha = np.reshape(np.sum(z * z, axis=0), np.shape(dev)[:-1])
        logdet = 2.0 * np.sum(np.log(np.diagonal(chol)))
    value = -0.5 * (dim * math.log(2.0 * math.pi) + logdet + maha)
    # an infinite component (and no NaN): density 0, as SciPy's (the solve gives NaN)
    far = np.any(np.isinf(dev), axis=-1) & ~np.any(np.isnan(dev), axis=-1)
    return np.where(far, -np.inf, value)


def _mvn_entropy(mean=None, cov=1):
    """SciPy's differential entropy ``(rank (log 2π + 1) + log pdet(cov)) / 2`` (a singular
    ``cov`` is allowed, as in SciPy); it does not depend on ``mean``."""
    dim, _ = _mvn_dim_mean(mean, cov)
    _mvn_check(cov, dim, True)
    logdet, rank, _, _ = _mvn_psd(cov, dim)
    return 0.5 * (rank * (math.log(2.0 * math.pi) + 1.0) + logdet)


_mvn_logpdf.__name__ = "logpdf"
multivariate_normal = SimpleNamespace(logpdf=_mvn_logpdf, pdf=_exp(_mvn_logpdf),
                                      entropy=_mvn_entropy)
