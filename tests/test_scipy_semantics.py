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
