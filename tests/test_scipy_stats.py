"""``tracegrad.scipy.stats``: values equal SciPy's (``scipy.stats``), gradients equal JAX's
(``jax.scipy.stats``, x64) and central finite differences. One row per density."""
import jax
import jax.scipy.stats as jst
import numpy as np
import pytest
import scipy.stats as sst
from conftest import assert_close, fd_vjp

import tracegrad as tg
import tracegrad.scipy.stats as ts

RNG = np.random.default_rng(1500)
X = RNG.uniform(-1.5, 1.5, 5)
POS = RNG.uniform(0.2, 3.0, 5)
UNIT = RNG.uniform(0.1, 0.9, 5)
_a = RNG.standard_normal((3, 3))
COV = _a @ _a.T + 3.0 * np.eye(3)
PTS = RNG.standard_normal((4, 3))
MEAN = np.array([0.2, -0.1, 0.4])
SIMPLEX = np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])
ALPHA = np.array([1.5, 2.0, 3.5])
K = np.array([0.0, 1.0, 2.0, 5.0, 3.0])

# (id, distribution, function, operands, keyword operands fixed, differentiated positions)
ROWS = [
    ("norm-logpdf", "norm", "logpdf", (X, 0.3, 1.7), (0, 1, 2)),
    ("norm-pdf", "norm", "pdf", (X, 0.3, 1.7), (0, 1, 2)),
    ("norm-cdf", "norm", "cdf", (X, 0.3, 1.7), (0, 1, 2)),
    ("norm-logcdf", "norm", "logcdf", (X - 2.0, 0.3, 1.7), (0, 1, 2)),
    ("t-logpdf", "t", "logpdf", (X, 3.5, 0.2, 1.3), (0, 1, 2, 3)),
    ("t-pdf", "t", "pdf", (X, 3.5, 0.2, 1.3), (0, 1, 2, 3)),
    ("gamma-logpdf", "gamma", "logpdf", (POS, 2.5, 0.0, 1.5), (0, 1, 3)),
    ("gamma-pdf", "gamma", "pdf", (POS, 2.5), (0, 1)),
    ("beta-logpdf", "beta", "logpdf", (UNIT, 2.5, 1.5), (0, 1, 2)),
    ("beta-pdf", "beta", "pdf", (UNIT, 2.5, 1.5), (0, 1, 2)),
    ("poisson-logpmf", "poisson", "logpmf", (K, 2.3), (1,)),
    ("poisson-pmf", "poisson", "pmf", (K, 2.3), (1,)),
    # x off the simplex raises (SciPy's ValueError): finite differences in alpha only,
    # the x-derivative against JAX below
    ("dirichlet-logpdf", "dirichlet", "logpdf", (SIMPLEX, ALPHA), (1,)),
    ("dirichlet-pdf", "dirichlet", "pdf", (SIMPLEX[:, 0], ALPHA), (1,)),
    ("mvn-logpdf", "multivariate_normal", "logpdf", (PTS, MEAN, COV), (0, 1, 2)),
    ("mvn-pdf", "multivariate_normal", "pdf", (PTS[0], MEAN, COV), (0, 1, 2)),
    # distribution functions (incomplete gamma and beta functions); t's have no JAX twin,
    # t's and beta's are not differentiable in df, a, b (betainc's shape parameters)
    ("t-cdf", "t", "cdf", (X * 3.0, 3.5, 0.2, 1.3), (0, 2, 3)),
    ("t-logcdf", "t", "logcdf", (X * 3.0 - 2.0, 2.5), (0,)),
    ("t-sf", "t", "sf", (X * 3.0, 3.5, 0.2, 1.3), (0, 2, 3)),
    ("t-logsf", "t", "logsf", (X * 3.0 + 2.0, 6.0), (0,)),
    ("gamma-cdf", "gamma", "cdf", (POS, 2.5, 0.1, 1.5), (0, 1, 2, 3)),
    ("gamma-logcdf", "gamma", "logcdf", (POS, 0.7), (0, 1)),
    ("gamma-sf", "gamma", "sf", (POS, 2.5, 0.0, 1.5), (0, 1, 3)),
    ("gamma-logsf", "gamma", "logsf", (POS * 3.0, 2.5), (0, 1)),
    ("beta-cdf", "beta", "cdf", (UNIT, 2.5, 1.5), (0,)),
    ("beta-logcdf", "beta", "logcdf", (UNIT * 2.0, 2.5, 1.5, -0.1, 2.0), (0, 3, 4)),
    ("beta-sf", "beta", "sf", (UNIT, 2.5, 1.5), (0,)),
    ("beta-logsf", "beta", "logsf", (UNIT, 0.8, 3.5), (0,)),
    ("chi2-logpdf", "chi2", "logpdf", (POS, 3.0, 0.0, 1.2), (0, 1, 3)),
    ("chi2-pdf", "chi2", "pdf", (POS, 2.5), (0, 1)),
    ("chi2-cdf", "chi2", "cdf", (POS, 3.0), (0, 1)),
    ("chi2-logcdf", "chi2", "logcdf", (POS, 1.5, 0.1, 0.8), (0, 1, 2, 3)),
    ("chi2-sf", "chi2", "sf", (POS * 2.0, 3.0), (0, 1)),
    ("chi2-logsf", "chi2", "logsf", (POS * 2.0, 4.0), (0, 1)),
    ("poisson-cdf", "poisson", "cdf", (K, 2.3), (1,)),
    ("poisson-logcdf", "poisson", "logcdf", (K + 0.5, 4.1), (1,)),
    ("poisson-sf", "poisson", "sf", (K, 2.3), (1,)),
]


def _sym(cov):
    return 0.5 * (cov + cov.T)


@pytest.mark.parametrize("dist,fn,args,diff", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_density(dist, fn, args, diff):
    args = tuple(np.asarray(a, dtype=float) for a in args)
    ours = getattr(getattr(ts, dist), fn)
    ref = getattr(getattr(sst, dist), fn)
    twin = getattr(getattr(jst, dist), fn, None)     # JAX has no t.cdf
    assert_close(ours(*args), np.asarray(ref(*args), dtype=float), 1e-12, "vs scipy.stats")
    w = RNG.standard_normal(np.shape(ref(*args)))
    sym = dist == "multivariate_normal"   # the covariance through its symmetric part

    def loss(*xs):
        full = list(args)
        for i, x in zip(diff, xs):
            full[i] = x
        if sym:
            full[2] = _sym(full[2])
        return np.sum(w * ours(*full))

    def jloss(*xs):
        full = list(args)
        for i, x in zip(diff, xs):
            full[i] = x
        if sym:
            full[2] = 0.5 * (full[2] + full[2].T)
        return jax.numpy.sum(w * twin(*full))

    xs = [args[i] for i in diff]
    got = tg.grad(loss, argnums=tuple(range(len(xs))))(*xs)
    fd = fd_vjp(loss, xs, 1.0)
    for k, (g, d) in enumerate(zip(got, fd)):
        assert_close(g, d, 1e-6, f"operand {diff[k]} vs finite differences", floor=1.0)
    if twin is not None:
        want = jax.grad(jloss, argnums=tuple(range(len(xs))))(*xs)
        for k, (g, j) in enumerate(zip(got, want)):
            assert_close(g, np.asarray(j), 1e-9, f"operand {diff[k]} vs JAX")


def test_outside_the_support_is_minus_infinity():
    assert ts.gamma.logpdf(-0.5, 2.0) == -np.inf
    assert ts.beta.logpdf(1.5, 2.0, 2.0) == -np.inf
    assert ts.poisson.logpmf(2.5, 1.0) == -np.inf
    assert np.all(np.isfinite(tg.grad(lambda a: np.sum(ts.gamma.logpdf(np.array([-1.0, 1.0]),
                                                                       a)))(2.0)))


def test_diagonal_covariances_and_dirichlet_with_the_last_component_implied():
    var = np.array([1.0, 2.0, 0.5])
    assert_close(ts.multivariate_normal.logpdf(PTS, MEAN, var),
                 sst.multivariate_normal.logpdf(PTS, MEAN, var), 1e-12, "vector cov")
    assert_close(ts.multivariate_normal.logpdf(PTS[0], MEAN, 2.0),
                 sst.multivariate_normal.logpdf(PTS[0], MEAN, 2.0), 1e-12, "scalar cov")
    assert_close(ts.dirichlet.logpdf(SIMPLEX[:2, 0], ALPHA),
                 sst.dirichlet.logpdf(SIMPLEX[:, 0], ALPHA), 1e-12, "K - 1 components")


@pytest.mark.parametrize("fn", ["logpdf", "pdf"])
def test_dirichlet_derivative_in_x_is_jax_s(fn):
    w = RNG.standard_normal(SIMPLEX.shape[1])
    got = tg.grad(lambda x: np.sum(w * getattr(ts.dirichlet, fn)(x, ALPHA)))(SIMPLEX)
    want = jax.grad(lambda x: jax.numpy.sum(w * getattr(jst.dirichlet, fn)(x, ALPHA)))(SIMPLEX)
    assert_close(got, np.asarray(want), 1e-12, "vs JAX")


def test_densities_compile_on_both_backends():
    def f(m, s):
        return np.sum(ts.norm.logpdf(X, m, s)) + ts.multivariate_normal.logpdf(PTS[0], MEAN * m,
                                                                                COV)
    want = tg.grad(f, argnums=(0, 1))(0.3, 1.2)
    for backend in ("numpy", "jax"):
        got = tg.jit(tg.grad(f, argnums=(0, 1)), backend=backend)(0.3, 1.2)
        for g, w in zip(got, want):
            assert_close(g, w, 1e-12, backend)


def test_distribution_functions_at_the_edges():
    # t.cdf at z = 0: 1/2, slope pdf(0) (the tail's own derivative there is inf * 0)
    x = np.array([0.2, -0.4, 0.2])
    assert ts.t.cdf(0.2, 3.0, 0.2) == 0.5
    g = tg.grad(lambda x: np.sum(ts.t.cdf(x, 3.0, 0.2, 1.5)))(x)
    assert_close(g, sst.t.pdf(x, 3.0, 0.2, 1.5), 1e-12, "t.cdf slope")
    # outside the support: 0 or 1, finite zero gradients
    for fn, args, want in [(ts.gamma.cdf, (2.5,), 0.0), (ts.gamma.sf, (0.5,), 1.0),
                           (ts.chi2.cdf, (3.0,), 0.0), (ts.beta.cdf, (2.0, 0.5), 0.0),
                           (ts.beta.sf, (2.0, 0.5), 1.0)]:
        assert fn(-0.5, *args) == want
        assert tg.grad(lambda x, fn=fn, args=args: fn(x, *args))(-0.5) == 0.0
    assert ts.beta.cdf(1.5, 2.0, 0.5) == 1.0
    assert ts.poisson.cdf(-1.0, 2.0) == 0.0 and ts.poisson.sf(-1.0, 2.0) == 1.0


def test_poisson_cdf_is_differentiable_in_mu_only_and_t_cdf_not_in_df():
    k = np.array([0.0, 1.0, 3.0, 6.0])
    got_k, got_mu = tg.grad(lambda k, mu: np.sum(ts.poisson.cdf(k, mu)), argnums=(0, 1))(k, 2.5)
    assert np.all(got_k == 0.0)                     # k is discrete
    h = 1e-6
    fd = np.sum(sst.poisson.cdf(k, 2.5 + h) - sst.poisson.cdf(k, 2.5 - h)) / (2 * h)
    assert_close(got_mu, fd, 1e-7, "d/dmu vs SciPy's differences")
    # d/dmu P(K <= k) = -pmf(k)
    assert_close(got_mu, -np.sum(sst.poisson.pmf(k, 2.5)), 1e-12, "d/dmu = -pmf")
    with pytest.raises(tg.TraceError, match=r"betainc.*with respect to a and b"):
        tg.grad(lambda df: ts.t.cdf(0.7, df))(3.0)
    with pytest.raises(tg.TraceError, match=r"betainc.*with respect to a and b"):
        tg.grad(lambda a: ts.beta.cdf(0.3, a, 2.0))(3.0)


def test_distribution_functions_compile_on_both_backends():
    def f(x, a):
        return (np.sum(ts.gamma.logcdf(x, a) + ts.chi2.sf(x, 2.0 * a) + ts.t.cdf(x - 1.0, 4.0))
                + np.sum(ts.poisson.cdf(np.array([1.0, 4.0]), a)))
    x = POS
    want = tg.grad(f, argnums=(0, 1))(x, 1.7)
    for backend in ("numpy", "jax"):
        got = tg.jit(tg.grad(f, argnums=(0, 1)), backend=backend)(x, 1.7)
        for g, w in zip(got, want):
            assert_close(g, w, 1e-12, backend)
    for g, d in zip(want, fd_vjp(f, [x, np.float64(1.7)], 1.0)):
        assert_close(g, d, 1e-7, "finite differences", floor=1.0)


def test_multivariate_normal_entropy():
    for cov in (COV, np.array([1.0, 2.0, 0.5]), 2.0):
        assert_close(ts.multivariate_normal.entropy(MEAN, cov),
                     np.float64(sst.multivariate_normal.entropy(MEAN, cov)), 1e-12, "value")
    # d/dcov 0.5 log det cov = 0.5 inv(cov) (through the symmetric part)
    g = tg.grad(lambda c: ts.multivariate_normal.entropy(MEAN, _sym(c)))(COV)
    assert_close(g, 0.5 * np.linalg.inv(COV), 1e-12, "gradient")
