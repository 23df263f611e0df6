"""``scipy.stats`` densities and distribution functions with SciPy's signatures, on traced
and plain values alike: ``norm``, ``t``, ``multivariate_normal``, ``gamma``, ``beta``,
``chi2``, ``poisson``, ``dirichlet``.

Each distribution is a namespace of functions (``norm.logpdf(x, loc=0, scale=1)``), as in
``jax.scipy.stats``. Outside the support a log-density is ``-inf`` (as SciPy's); the
derivatives are those of the formulas inside it. The distribution functions are the
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


def _exp(logf):
    def f(*args, **kwargs):
        return np.exp(logf(*args, **kwargs))
    f.__name__ = logf.__name__.replace("log", "", 1)
    f.__doc__ = f"``exp({logf.__name__}(...))``."
    return f


def _log(f):
    def logf(*args, **kwargs):
        with np.errstate(divide="ignore"):      # log(0) = -inf, silently (as SciPy's)
            return np.log(f(*args, **kwargs))
    name = f.__name__.lstrip("_").split("_", 1)[-1]
    logf.__name__ = logf.__qualname__ = f"log{name}"
    logf.__doc__ = f"``log({name}(...))``."
    return logf


def _float(x):
    """A Python number or array as a float array (a tracer stays itself)."""
    if hasattr(x, "dtype") and np.dtype(x.dtype).kind == "f":
        return x
    return np.asarray(x, dtype=np.float64) if not hasattr(x, "_trace") else x * 1.0


# -- norm -----------------------------------------------------------------------------------------
def _norm_logpdf(x, loc=0, scale=1):
    scale = _float(scale)   # scale 0: NaN as SciPy, not Python's ZeroDivisionError
    z = (x - loc) / scale
    return np.where(scale > 0, -0.5 * z * z - np.log(scale) - LOG_SQRT_2PI, np.nan)


def _norm_cdf(x, loc=0, scale=1):
    return special.ndtr((x - loc) / scale)


def _norm_logcdf(x, loc=0, scale=1):
    return special.log_ndtr((x - loc) / scale)


def _norm_sf(x, loc=0, scale=1):
    return special.ndtr((loc - x) / scale)


def _norm_logsf(x, loc=0, scale=1):
    return special.log_ndtr((loc - x) / scale)


def _norm_ppf(q, loc=0, scale=1):
    return loc + scale * special.ndtri(q)


_norm_logpdf.__name__ = "logpdf"
norm = SimpleNamespace(logpdf=_norm_logpdf, pdf=_exp(_norm_logpdf), cdf=_norm_cdf,
                       logcdf=_norm_logcdf, sf=_norm_sf, logsf=_norm_logsf, ppf=_norm_ppf)


# -- Student's t ----------------------------------------------------------------------------------
def _t_logpdf(x, df, loc=0, scale=1):
    z = (x - loc) / scale
    half = 0.5 * (df + 1.0)
    return (special.gammaln(half) - special.gammaln(0.5 * df) - 0.5 * np.log(df * math.pi)
            - np.log(scale) - half * np.log1p(z * z / df))


def _t_cdf(x, df, loc=0, scale=1):
    z = (x - loc) / scale
    # the tail P(T > |z|) = I_{df/(df+z²)}(df/2, 1/2)/2 is accurate far out on either side;
    # at z = 0 its derivative is ∞·0, so there the cdf is 1/2 + z·pdf(0) (value and slope)
    at_zero = z == 0
    zs = np.where(at_zero, 1.0, z)
    tail = 0.5 * special.betainc(0.5 * df, 0.5, df / (df + zs * zs))
    slope = np.exp(_t_logpdf(0.0, df))
    return np.where(at_zero, 0.5 + z * slope, np.where(zs < 0, tail, 1.0 - tail))


def _t_sf(x, df, loc=0, scale=1):
    return _t_cdf(-x, df, -loc, scale)


_t_logpdf.__name__ = "logpdf"
t = SimpleNamespace(logpdf=_t_logpdf, pdf=_exp(_t_logpdf), cdf=_t_cdf, logcdf=_log(_t_cdf),
                    sf=_t_sf, logsf=_log(_t_sf))


# -- gamma ----------------------------------------------------------------------------------------
def _gamma_logpdf(x, a, loc=0, scale=1):
    y = (x - loc) / scale
    inside = y >= 0
    ys = np.where(inside, y, 1.0)
    value = special.xlogy(a - 1.0, ys) - ys - special.gammaln(a) - np.log(scale)
    return _gamma_invalid(y, a, scale, np.where(inside, value, -np.inf))


def _gamma_invalid(y, a, scale, value):
    """NaN, as SciPy, for a NaN argument or a parameter outside a > 0, scale > 0."""
    valid = np.logical_and(a > 0, scale > 0)
    return np.where(np.isnan(y) | np.logical_not(valid), np.nan, value)


def _gamma_cdf(x, a, loc=0, scale=1):
    y = (x - loc) / scale
    inside = y > 0
    return _gamma_invalid(
        y, a, scale, np.where(inside, special.gammainc(a, np.where(inside, y, 1.0)), 0.0))


def _gamma_sf(x, a, loc=0, scale=1):
    y = (x - loc) / scale
    inside = y > 0
    return _gamma_invalid(
        y, a, scale, np.where(inside, special.gammaincc(a, np.where(inside, y, 1.0)), 1.0))


_gamma_logpdf.__name__ = "logpdf"
gamma = SimpleNamespace(logpdf=_gamma_logpdf, pdf=_exp(_gamma_logpdf), cdf=_gamma_cdf,
                        logcdf=_log(_gamma_cdf), sf=_gamma_sf, logsf=_log(_gamma_sf))


# -- chi2: gamma(df/2, scale=2) -------------------------------------------------------------------
def _chi2(fn, name):
    def f(x, df, loc=0, scale=1):
        return fn(x, 0.5 * df, loc, 2.0 * scale)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``scipy.stats.chi2.{name}(x, df, loc=0, scale=1)``."
    return f


chi2 = SimpleNamespace(**{name: _chi2(getattr(gamma, name), name)
                          for name in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")})


# -- beta -----------------------------------------------------------------------------------------
def _beta_logpdf(x, a, b, loc=0, scale=1):
    y = (x - loc) / scale
    inside = (y >= 0) & (y <= 1)
    y = np.where(inside, y, 0.5)
    value = (special.xlogy(a - 1.0, y) + special.xlog1py(b - 1.0, -y) - special.betaln(a, b)
             - np.log(scale))
    return np.where(inside, value, -np.inf)


def _beta_cdf(x, a, b, loc=0, scale=1):
    y = (x - loc) / scale
    inside = (y > 0) & (y < 1)
    value = special.betainc(a, b, np.where(inside, y, 0.5))
    return np.where(inside, value, np.where(y <= 0, 0.0, 1.0))


def _beta_sf(x, a, b, loc=0, scale=1):
    # I_{1-y}(b, a): accurate where the cdf is near 1
    y = (x - loc) / scale
    inside = (y > 0) & (y < 1)
    value = special.betainc(b, a, 1.0 - np.where(inside, y, 0.5))
    return np.where(inside, value, np.where(y <= 0, 1.0, 0.0))


_beta_logpdf.__name__ = "logpdf"
beta = SimpleNamespace(logpdf=_beta_logpdf, pdf=_exp(_beta_logpdf), cdf=_beta_cdf,
                       logcdf=_log(_beta_cdf), sf=_beta_sf, logsf=_log(_beta_sf))


# -- poisson --------------------------------------------------------------------------------------
def _poisson_logpmf(k, mu, loc=0):
    k = _float(k - loc)
    inside = (k >= 0) & (k == np.floor(k))
    k = np.where(inside, k, 0.0)
    value = special.xlogy(k, mu) - special.gammaln(k + 1.0) - mu
    return np.where(inside, value, -np.inf)


def _poisson_cdf(k, mu, loc=0):
    """Q(floor(k) + 1, mu): differentiable in mu (k is discrete)."""
    k = np.floor(_float(k - loc))
    inside = k >= 0
    return np.where(inside, special.gammaincc(np.where(inside, k, 0.0) + 1.0, mu), 0.0)


def _poisson_sf(k, mu, loc=0):
    k = np.floor(_float(k - loc))
    inside = k >= 0
    return np.where(inside, special.gammainc(np.where(inside, k, 0.0) + 1.0, mu), 1.0)


_poisson_logpmf.__name__ = "logpmf"
poisson = SimpleNamespace(logpmf=_poisson_logpmf, pmf=_exp(_poisson_logpmf), cdf=_poisson_cdf,
                          logcdf=_log(_poisson_cdf), sf=_poisson_sf, logsf=_log(_poisson_sf))


# -- dirichlet ------------------------------------------------------------------------------------
def _dirichlet_logpdf(x, alpha):
    """SciPy's layout: the components along the first axis of ``x`` (shape ``(K,)`` or
    ``(K, N)``); ``K - 1`` components give the last as one minus their sum."""
    if np.shape(x)[0] == np.shape(alpha)[0] - 1:
        x = np.concatenate([x, 1.0 - np.sum(x, axis=0, keepdims=True)], axis=0)
    a = np.reshape(alpha, np.shape(alpha) + (1,) * (np.ndim(x) - 1))
    lnb = np.sum(special.gammaln(alpha)) - special.gammaln(np.sum(alpha))
    return np.sum(special.xlogy(a - 1.0, x), axis=0) - lnb


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
    defined) and, at a singular ``cov``, those along perturbations that keep its support."""
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
        z = solve_triangular(chol, flat.T, lower=True)
        off = np.sum(flat.T * (proj @ flat.T), axis=0)
        return np.reshape(np.sum(z * z, axis=0) - off / c, np.shape(dev)[:-1])

    def off_support(dev):
        return np.sum(dev * (dev @ proj), axis=-1) >= (1e3 * eps) ** 2

    return log_pdet, rank, maha, off_support


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
        z = solve_triangular(chol, flat.T, lower=True)
        maha = np.reshape(np.sum(z * z, axis=0), np.shape(dev)[:-1])
        logdet = 2.0 * np.sum(np.log(np.diagonal(chol)))
    return -0.5 * (dim * math.log(2.0 * math.pi) + logdet + maha)


def _mvn_entropy(mean=None, cov=1):
    """SciPy's differential entropy ``(rank (log 2π + 1) + log pdet(cov)) / 2`` (a singular
    ``cov`` is allowed, as in SciPy); it does not depend on ``mean``."""
    dim, _ = _mvn_dim_mean(mean, cov)
    logdet, rank, _, _ = _mvn_psd(cov, dim)
    return 0.5 * (rank * (math.log(2.0 * math.pi) + 1.0) + logdet)


_mvn_logpdf.__name__ = "logpdf"
multivariate_normal = SimpleNamespace(logpdf=_mvn_logpdf, pdf=_exp(_mvn_logpdf),
                                      entropy=_mvn_entropy)
