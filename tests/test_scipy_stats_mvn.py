"""tracegrad.scipy.stats.multivariate_normal: entropy, and allow_singular=True for
logpdf/pdf, against SciPy's values and central differences of SciPy's own functions
(both read the lower triangle of cov, so the upper entries' derivatives are 0 in both)."""
import numpy as np
import pytest
from conftest import central_diff

scipy_stats = pytest.importorskip("scipy.stats")

import tracegrad as tg  # noqa: E402
from tracegrad.scipy.stats import multivariate_normal as mvn  # noqa: E402

SP = scipy_stats.multivariate_normal
RNG = np.random.default_rng(5)
A = RNG.standard_normal((4, 4))
FULL = A @ A.T + 0.3 * np.eye(4)
B = RNG.standard_normal((4, 2))
SING = B @ B.T                                   # rank 2
MU = RNG.standard_normal(4)
ON = MU + (B @ RNG.standard_normal((2, 3))).T    # three points on SING's support
OFF = RNG.standard_normal((3, 4))


@pytest.mark.parametrize("cov", [FULL, SING, np.diag([1.0, 2.0, 0.5, 3.0]),
                                 np.array([1.0, 0.0, 2.0, 0.5]), 2.5],
                         ids=["full", "rank2", "diag", "variances-with-zero", "number"])
def test_entropy_matches_scipy(cov):
    np.testing.assert_allclose(mvn.entropy(MU, cov), SP.entropy(MU, cov), rtol=1e-13)
    np.testing.assert_allclose(tg.jit(mvn.entropy)(MU, cov), SP.entropy(MU, cov), rtol=1e-13)


@pytest.mark.parametrize("cov", [FULL, np.eye(4)], ids=["full", "identity"])
def test_entropy_gradient_is_scipys(cov):
    # the identity has one eigenvalue four times: eigenvector derivatives are undefined,
    # the entropy's derivative is not
    g = tg.grad(mvn.entropy, 1)(MU, cov)
    np.testing.assert_allclose(g, central_diff(lambda c: SP.entropy(MU, c), cov),
                               rtol=1e-6, atol=1e-8)
    assert np.all(tg.grad(mvn.entropy, 0)(MU, cov) == 0.0)


@pytest.mark.parametrize("x", [ON, ON[0], OFF], ids=["on-support", "one-point", "off-support"])
@pytest.mark.parametrize("backend", [None, "numpy", "jax"])
def test_singular_values_match_scipy(x, backend):
    want = SP.logpdf(x, MU, SING, allow_singular=True)
    fn = (lambda *a: mvn.logpdf(*a, allow_singular=True))
    fn = fn if backend is None else tg.jit(fn, backend=backend)
    got = fn(x, MU, SING)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    want_pdf = SP.pdf(x, MU, SING, allow_singular=True)
    np.testing.assert_allclose(mvn.pdf(x, MU, SING, allow_singular=True), want_pdf,
                               rtol=1e-12, atol=0)


def test_singular_gradients_on_the_support():
    # move x and mean only within the support (as SciPy's value is -inf off it)
    def logpdf(z, m):
        return np.sum(mvn.logpdf(MU + z @ B.T, MU + m @ B.T, SING, allow_singular=True))

    def scipy_logpdf(z, m):
        return np.sum(SP.logpdf(MU + z @ B.T, MU + m @ B.T, SING, allow_singular=True))

    z = RNG.standard_normal((3, 2))
    m = RNG.standard_normal(2)
    gz, gm = tg.grad(logpdf, (0, 1))(z, m)
    np.testing.assert_allclose(gz, central_diff(lambda v: scipy_logpdf(v, m), z), rtol=1e-6)
    np.testing.assert_allclose(gm, central_diff(lambda v: scipy_logpdf(z, v), m), rtol=1e-6)
    # pdf's gradient w.r.t. x itself, at a point of the support, along the support
    g = tg.grad(lambda v: mvn.pdf(v, MU, SING, allow_singular=True))(ON[0])
    p = SP.pdf(ON[0], MU, SING, allow_singular=True)
    np.testing.assert_allclose(g, -p * np.linalg.pinv(SING) @ (ON[0] - MU), rtol=1e-8)


def test_allow_singular_on_a_nonsingular_cov_is_the_ordinary_density():
    x = RNG.standard_normal((5, 4))
    for allow in (False, True):
        np.testing.assert_allclose(mvn.logpdf(x, MU, FULL, allow_singular=allow),
                                   SP.logpdf(x, MU, FULL), rtol=1e-13)
    grads = [tg.grad(lambda *a: np.sum(mvn.logpdf(*a, allow_singular=allow)), (0, 1, 2))(
        x, MU, FULL) for allow in (False, True)]
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    g_cov = grads[1][2]
    fd = central_diff(lambda c: np.sum(SP.logpdf(x, MU, c, allow_singular=True)), FULL)
    np.testing.assert_allclose(g_cov, fd, rtol=1e-6, atol=1e-7)


def test_a_nan_point_of_plain_values_gives_nan_as_scipy():
    # tracegrad.scipy.linalg checks finiteness as SciPy does; the density must not
    import scipy.stats as st

    from tracegrad.scipy import stats as ts
    x = np.array([[0.1, np.nan], [0.2, 0.3]])
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    for method in ("logpdf", "pdf"):
        got = getattr(ts.multivariate_normal, method)(x, np.zeros(2), cov)
        want = getattr(st.multivariate_normal, method)(x, np.zeros(2), cov)
        np.testing.assert_allclose(got, want, rtol=1e-12)
