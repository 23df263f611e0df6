"""SciPy's and NumPy's semantics on traced values (issue 23, items 7 and 10): result
types with NumPy's field names, SciPy's array-API code reading ``.device``, and SciPy's
argument conventions in ``tracegrad.scipy``. Each case is compared with SciPy/NumPy
(values, shapes, types) and its gradient with central finite differences, under
``tg.grad`` and ``tg.jit`` on both backends."""
import numpy as np
import pytest
import scipy.special as sp
from conftest import central_diff

import tracegrad as tg

BACKENDS = ["numpy", "jax"]
RNG = np.random.default_rng(2323)
A = RNG.uniform(-0.5, 0.5, (3, 3)) + np.diag([2.0, -1.5, 1.8])     # det < 0: sign -1


def _jit(f, backend):
    return tg.jit(f, backend=backend)


# -- np.linalg's named results ------------------------------------------------------------
# (field, function of a traced matrix) for each named result NumPy 2 returns
FIELDS = [
    ("SlogdetResult", "sign", lambda a: np.linalg.slogdet(a)),
    ("SlogdetResult", "logabsdet", lambda a: np.linalg.slogdet(a)),
    ("EighResult", "eigenvalues", lambda a: np.linalg.eigh(a + a.T)),
    ("EighResult", "eigenvectors", lambda a: np.linalg.eigh(a + a.T)),
    ("SVDResult", "U", lambda a: np.linalg.svd(a)),
    ("SVDResult", "S", lambda a: np.linalg.svd(a)),
    ("SVDResult", "Vh", lambda a: np.linalg.svd(a)),
    ("QRResult", "Q", lambda a: np.linalg.qr(a)),
    ("QRResult", "R", lambda a: np.linalg.qr(a)),
    ("EigResult", "eigenvalues", lambda a: np.linalg.eig(a @ a.T)),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("cls,field,f", FIELDS, ids=[f"{c}.{n}" for c, n, _ in FIELDS])
def test_linalg_result_fields(cls, field, f, backend):
    expected = getattr(f(A), field)
    assert type(f(A)).__name__ == cls
    seen = []

    def g(a):
        result = f(a)
        seen.append(type(result).__name__)
        return getattr(result, field)

    np.testing.assert_allclose(_jit(g, backend)(A), expected, rtol=1e-10, atol=1e-12)
    assert seen == [cls]


@pytest.mark.parametrize("backend", BACKENDS)
def test_slogdet_fields_gradient(backend):
    def f(a):
        return np.linalg.slogdet(a).logabsdet

    g = _jit(tg.grad(f), backend)(A)
    np.testing.assert_allclose(g, central_diff(f, A), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g, np.linalg.inv(A).T, rtol=1e-10)
    sign = _jit(lambda a: np.linalg.slogdet(a).sign * a[0, 0], backend)(A)
    assert sign == np.linalg.slogdet(A).sign * A[0, 0]


# -- scipy.special.logsumexp of an empty array ----------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_logsumexp_empty(backend):
    x = np.zeros(0)
    out = _jit(lambda x: sp.logsumexp(x), backend)(x)
    assert np.shape(out) == () and out == sp.logsumexp(x) == -np.inf
    rows = np.zeros((2, 0))
    got = _jit(lambda x: sp.logsumexp(x, axis=1), backend)(rows)
    np.testing.assert_array_equal(got, sp.logsumexp(rows, axis=1))


def test_device_is_numpys():
    seen = []
    tg.jit(lambda x: seen.append(x.device) or x)(np.ones(2))
    assert seen == [np.ones(2).device]


# -- tracegrad.scipy.linalg.cholesky / cho_factor read the triangle SciPy reads -------------
_M = RNG.standard_normal((3, 3))
# not symmetric: the upper and lower triangles give different factors
NONSYM = _M @ _M.T + 3 * np.eye(3) + 0.7 * np.triu(RNG.standard_normal((3, 3)), 1) \
    - 0.3 * np.tril(np.ones((3, 3)), -1)
W = RNG.standard_normal((3, 3))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("lower", [False, True])
def test_cholesky_reads_scipys_triangle(lower, backend):
    import scipy.linalg as sl

    import tracegrad.scipy.linalg as tl
    expected = sl.cholesky(NONSYM, lower=lower)
    assert not np.allclose(expected, sl.cholesky(NONSYM.T, lower=lower))    # a real test
    np.testing.assert_allclose(_jit(lambda a: tl.cholesky(a, lower=lower), backend)(NONSYM),
                               expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tl.cholesky(NONSYM, lower=lower), expected, rtol=1e-12)
    grad = _jit(tg.grad(lambda a: (tl.cholesky(a, lower=lower) * W).sum()), backend)(NONSYM)
    fd = central_diff(lambda a: (sl.cholesky(a, lower=lower) * W).sum(), NONSYM)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)

    c, low = _jit(lambda a: tl.cho_factor(a, lower=lower), backend)(NONSYM)
    c_sp, low_sp = sl.cho_factor(NONSYM, lower=lower)
    tri = np.tril if lower else np.triu         # SciPy leaves the other triangle arbitrary
    assert low == low_sp
    np.testing.assert_allclose(tri(c), tri(c_sp), rtol=1e-12, atol=1e-14)
    b = RNG.standard_normal(3)
    x = _jit(lambda a, b: tl.cho_solve(tl.cho_factor(a, lower=lower), b), backend)(NONSYM, b)
    np.testing.assert_allclose(x, sl.cho_solve((c_sp, low_sp), b), rtol=1e-10)
    grad = tg.grad(lambda a: tl.cho_solve(tl.cho_factor(a, lower=lower), b) @ b)(NONSYM)
    fd = central_diff(lambda a: sl.cho_solve(sl.cho_factor(a, lower=lower), b) @ b, NONSYM)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)


# -- multivariate_normal: SciPy's dimension, points and result shape -----------------------
_C2 = np.array([[2.0, 0.3], [0.3, 1.0]])
_C3 = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]])
# (x, mean, cov): SciPy's rules decide whether x is one point or many, and the shape
MVN_CASES = [
    (np.array([0.3, -0.2, 0.5]), None, 1),                  # three 1-d points
    (np.array([0.3, -0.2, 0.5]), None, 2.0),
    (np.array([0.3, -0.2, 0.5]), 0.1, 2.0),                 # scalar mean: 1-d
    (np.array([0.3, -0.2, 0.5]), np.array([0.1]), 2.0),
    (np.array([0.3, -0.2, 0.5]), np.array([0.1]), np.array([2.0])),
    (np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.0, -0.1]), 2.0),   # one 3-d point
    (np.array([0.3, -0.2, 0.5]), None, _C3),
    (np.array([0.3, -0.2, 0.5]), np.zeros(3), np.array([1.0, 2.0, 0.5])),
    (np.array([0.4]), None, 1.5),                           # one 1-d point: a number
    (0.4, None, 1.5),
    (0.4, 0.1, np.array([[1.5]])),
    (np.array([[0.3, -0.2]]), np.zeros(2), _C2),            # (1, d): a number
    (np.array([[0.3, -0.2], [0.1, 0.4]]), np.zeros(2), _C2),
    (np.array([[[0.3, -0.2]], [[0.1, 0.4]]]), np.zeros(2), _C2),   # (2, 1, d): (2,)
    (np.array([[0.3], [-0.2]]), None, 1.0),                 # (n, 1) in 1-d: (n,)
    (np.array([[0.3]]), None, 1.0),                         # (1, 1) in 1-d: a number
]


def _mvn_id(case):
    x, mean, cov = case
    return f"x{np.shape(x)}-mean{None if mean is None else np.shape(mean)}-cov{np.shape(cov)}"


@pytest.mark.parametrize("method", ["logpdf", "pdf"])
@pytest.mark.parametrize("case", MVN_CASES, ids=[_mvn_id(c) for c in MVN_CASES])
def test_multivariate_normal_shapes(case, method):
    import scipy.stats as sst

    import tracegrad.scipy.stats as ts
    x, mean, cov = case
    expected = getattr(sst.multivariate_normal, method)(x, mean, cov)
    got = getattr(ts.multivariate_normal, method)(x, mean, cov)
    assert np.shape(got) == np.shape(expected)
    assert type(got) is type(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    kw = {} if mean is None else {"mean": mean}
    expected_kw = getattr(sst.multivariate_normal, method)(x, cov=cov, **kw)
    np.testing.assert_allclose(getattr(ts.multivariate_normal, method)(x, cov=cov, **kw),
                               expected_kw, rtol=1e-12)
    x = np.asarray(x, dtype=float)

    def f(x):
        return getattr(ts.multivariate_normal, method)(x, mean, cov)

    for backend in BACKENDS:
        traced = _jit(f, backend)(x)
        assert np.shape(traced) == np.shape(expected)
        np.testing.assert_allclose(traced, expected, rtol=1e-12)
    w = RNG.standard_normal(np.shape(expected))

    def total(x):
        return np.sum(f(x) * w)

    fd = central_diff(lambda x: np.sum(getattr(sst.multivariate_normal, method)(x, mean, cov)
                                       * w), x)
    for grad in (tg.grad(total), _jit(tg.grad(total), "jax")):
        np.testing.assert_allclose(grad(x), fd, rtol=1e-6, atol=1e-8)


def test_multivariate_normal_default_dimension_mean_gradient():
    import scipy.stats as sst

    import tracegrad.scipy.stats as ts
    x = np.array([0.3, -0.2, 0.5])          # three 1-d points around a scalar mean

    def f(m, c):
        return np.sum(ts.multivariate_normal.logpdf(x, m, c))

    g = tg.grad(f, argnums=(0, 1))(0.1, 2.0)
    fm = central_diff(lambda m: np.sum(sst.multivariate_normal.logpdf(x, m, 2.0)), np.array(0.1))
    fc = central_diff(lambda c: np.sum(sst.multivariate_normal.logpdf(x, 0.1, c)), np.array(2.0))
    np.testing.assert_allclose(g, (fm, fc), rtol=1e-6)


# -- scipy.special.polygamma: a Python function (asarray, then _zeta and psi) --------------
def test_scipy_polygamma_is_refused_for_its_equivalent():
    """SciPy's polygamma converts x with the ``asarray`` it imported (no protocol reaches a
    tracer there), so it is refused, naming the equivalent, never a TypeError from the
    ufuncs inside; docs/scipy.md lists it with the refused functions, not as a ufunc."""
    with pytest.raises(tg.TraceError, match=r"tracegrad\.scipy\.special\.polygamma"):
        tg.grad(lambda x: sp.polygamma(1, x))(2.5)
    text = (__import__("pathlib").Path(__file__).resolve().parent.parent
            / "docs" / "scipy.md").read_text()
    assert "| `scipy.special.polygamma` | `tracegrad.scipy.special.polygamma` |" in text


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_tracegrad_polygamma(n, backend):
    import tracegrad.scipy.special as tsp
    x = np.array([0.7, 1.5, 2.5, 7.0])
    np.testing.assert_allclose(_jit(lambda x: tsp.polygamma(n, x), backend)(x),
                               sp.polygamma(n, x), rtol=1e-12)
    grad = _jit(tg.grad(lambda x: np.sum(tsp.polygamma(n, x))), backend)(x)
    np.testing.assert_allclose(grad, central_diff(lambda x: np.sum(sp.polygamma(n, x)), x,
                                                  eps=1e-5), rtol=1e-6)


# -- t[()] of a 0-d traced value (SciPy's _squeeze_output writes out[()]) -----------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_empty_index_of_0d_gradient(backend):
    x = np.array([0.3, -0.2, 0.5])

    def f(x):
        return np.exp(np.sum(x)[()]) + np.sin(np.sum(x * x)[...])

    grad = _jit(tg.grad(f), backend)(x)
    np.testing.assert_allclose(grad, central_diff(f, x), rtol=1e-7)


def test_multivariate_normal_of_lists():
    import scipy.stats as sst

    import tracegrad.scipy.stats as ts
    args = ([0.3, -0.2], [0.0, 0.1], [[1.0, 0.2], [0.2, 2.0]])
    np.testing.assert_allclose(ts.multivariate_normal.logpdf(*args),
                               sst.multivariate_normal.logpdf(*args), rtol=1e-12)

    def f(x):
        return ts.multivariate_normal.logpdf([x[0], x[1]], args[1], args[2])

    x = np.array(args[0])
    fd = central_diff(lambda x: sst.multivariate_normal.logpdf(x, *args[1:]), x)
    for grad in (tg.grad(f), _jit(tg.grad(f), "jax")):
        np.testing.assert_allclose(grad(x), fd, rtol=1e-6)
