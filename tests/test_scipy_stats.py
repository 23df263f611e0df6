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
    ("dirichlet-logpdf", "dirichlet", "logpdf", (SIMPLEX, ALPHA), (0, 1)),
    ("dirichlet-pdf", "dirichlet", "pdf", (SIMPLEX[:, 0], ALPHA), (0, 1)),
    ("mvn-logpdf", "multivariate_normal", "logpdf", (PTS, MEAN, COV), (0, 1, 2)),
    ("mvn-pdf", "multivariate_normal", "pdf", (PTS[0], MEAN, COV), (0, 1, 2)),
]


def _sym(cov):
    return 0.5 * (cov + cov.T)


@pytest.mark.parametrize("dist,fn,args,diff", [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_density(dist, fn, args, diff):
    args = tuple(np.asarray(a, dtype=float) for a in args)
    ours = getattr(getattr(ts, dist), fn)
    ref = getattr(getattr(sst, dist), fn)
    twin = getattr(getattr(jst, dist), fn)
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
    want = jax.grad(jloss, argnums=tuple(range(len(xs))))(*xs)
    fd = fd_vjp(loss, xs, 1.0)
    for k, (g, j, d) in enumerate(zip(got, want, fd)):
        assert_close(g, np.asarray(j), 1e-9, f"operand {diff[k]} vs JAX")
        assert_close(g, d, 1e-6, f"operand {diff[k]} vs finite differences", floor=1.0)


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


def test_densities_compile_on_both_backends():
    def f(m, s):
        return np.sum(ts.norm.logpdf(X, m, s)) + ts.multivariate_normal.logpdf(PTS[0], MEAN * m,
                                                                                COV)
    want = tg.grad(f, argnums=(0, 1))(0.3, 1.2)
    for backend in ("numpy", "jax"):
        got = tg.jit(tg.grad(f, argnums=(0, 1)), backend=backend)(0.3, 1.2)
        for g, w in zip(got, want):
            assert_close(g, w, 1e-12, backend)
