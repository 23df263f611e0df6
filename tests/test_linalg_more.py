"""The np.linalg composites on traced values (pinv, lstsq, matrix_power, every norm order,
eigh/svd/qr through np.linalg) against jax.grad (x64) and central differences, batched
inputs, and the conventions at degenerate spectra (ir/prims/spectral.py)."""
import numpy as np
import pytest

import tracegrad as tg

from oracles import check, finite_diff_grad, jax, jnp, rand


def _spread_sym(n, seed=0, batch=()):
    r = np.random.default_rng(seed)
    q, _ = np.linalg.qr(r.standard_normal(batch + (n, n)))
    lam = np.linspace(-1.5, 2.0, n) + r.uniform(-0.1, 0.1, batch + (n,))
    return (q * lam[..., None, :]) @ np.swapaxes(q, -1, -2)


def _well(m, n, seed=0, batch=()):
    a = rand(*batch, m, n, seed=seed)
    k = min(m, n)
    a[..., :k, :k] += 2.0 * np.eye(k)
    return a


# -- pinv ------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4), (2, 3, 2)])
def test_pinv(shape):
    a = _well(*shape[-2:], seed=len(shape), batch=shape[:-2])
    check(lambda xp, a: xp.linalg.pinv(a), a, fd=True, hessian=shape == (4, 2))


def test_pinv_rank_deficient_drops_small_singular_values():
    a = np.outer(np.arange(1.0, 4.0), np.array([1.0, -2.0]))     # rank 1
    check(lambda xp, a: xp.linalg.pinv(a), a)
    check(lambda xp, a: xp.linalg.pinv(a, rcond=1e-10), a)


# -- lstsq -----------------------------------------------------------------------------------
@pytest.mark.parametrize("bshape", [(5,), (5, 2)])
def test_lstsq_solution_and_residuals(bshape):
    a, b = _well(5, 3, seed=1), rand(*bshape, seed=2)
    x, res, rank, s = np.linalg.lstsq(a, b)
    got = tg.trace(lambda a, b: np.linalg.lstsq(a, b), a, b)(a, b)
    for g, w in zip(got, (x, res, rank, s)):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    assert int(got[2]) == 3
    check(lambda xp, a, b: xp.linalg.lstsq(a, b)[0], a, b, argnums=(0, 1), fd=True)
    check(lambda xp, a, b: xp.linalg.lstsq(a, b)[1], a, b, argnums=(0, 1), fd=True)
    check(lambda xp, a, b: xp.linalg.lstsq(a, b)[3], a, b, argnums=0)


def test_lstsq_underdetermined_has_no_residuals():
    a, b = _well(2, 4, seed=3), rand(2, seed=4)
    x, res, rank, s = tg.trace(lambda a, b: np.linalg.lstsq(a, b), a, b)(a, b)
    assert res.shape == (0,) and int(rank) == 2
    check(lambda xp, a, b: xp.linalg.lstsq(a, b)[0], a, b, argnums=(0, 1), fd=True)


# -- matrix_power ----------------------------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, -1, -2, -3])
def test_matrix_power(n):
    a = _well(3, 3, seed=5) * 0.5
    check(lambda xp, a: xp.linalg.matrix_power(a, n), a, fd=True, hessian=n in (3, -2))


def test_matrix_power_batched():
    a = _well(2, 2, seed=6, batch=(3,)) * 0.5
    check(lambda xp, a: xp.linalg.matrix_power(a, 3), a, fd=True)
    check(lambda xp, a: xp.linalg.matrix_power(a, -2), a, fd=True)


# -- norm ------------------------------------------------------------------------------------
VECTOR_ORDS = [None, 1, 2, 3, -1, -2, 0.5, 4, np.inf, -np.inf]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


@pytest.mark.parametrize("order", VECTOR_ORDS, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_vector_norm(order, keepdims):
    x = rand(4, seed=7, low=0.3, high=1.5) * np.array([1.0, -1.0, 1.0, -1.0])
    x = x + np.arange(4) * 0.1        # distinct magnitudes: max/min have one winner
    check(lambda xp, x: xp.linalg.norm(x, ord=order, keepdims=keepdims), x, fd=True)
    xs = np.stack([x, 1.3 * x[::-1], -0.7 * x])
    check(lambda xp, x: xp.linalg.norm(x, ord=order, axis=1, keepdims=keepdims), xs, fd=True)
    check(lambda xp, x: xp.linalg.norm(x, ord=order, axis=-2, keepdims=keepdims), xs.T, fd=True)


def test_vector_norm_zero_order_counts_nonzeros():
    x = np.array([0.0, 1.5, -2.0, 0.0])
    assert float(tg.trace(lambda x: np.linalg.norm(x, 0), x)(x)) == 2.0


def _distinct_matrix(shape, seed):
    r = np.random.default_rng(seed)
    return r.uniform(-2.0, 2.0, shape)     # no ties among row/column sums


@pytest.mark.parametrize("order", MATRIX_ORDS, ids=str)
@pytest.mark.parametrize("keepdims", [False, True])
def test_matrix_norm(order, keepdims):
    a = _distinct_matrix((3, 4), seed=8)
    check(lambda xp, a: xp.linalg.norm(a, ord=order, keepdims=keepdims), a, fd=True,
          hessian=order in ("nuc", 2, -2) and not keepdims)
    b = _distinct_matrix((2, 3, 4), seed=9)   # batched, the matrix axes in any order
    for axis in [(1, 2), (2, 0), (-1, -3)]:
        check(lambda xp, b: xp.linalg.norm(b, ord=order, axis=axis, keepdims=keepdims), b, fd=True)


def test_invalid_norm_orders_raise():
    with pytest.raises(tg.TraceError, match="invalid norm order"):
        tg.grad(lambda a: np.linalg.norm(a, 3))(np.eye(2))
    with pytest.raises(tg.TraceError, match="invalid norm order"):
        tg.grad(lambda x: np.linalg.norm(x, "fro"))(np.ones(2))


# -- eigh, svd, qr through np.linalg -----------------------------------------------------------
def _triangle(xp, a, upper=False):
    """The symmetric matrix NumPy's eigh / cholesky read in ``a`` (UPLO='L' or 'U')."""
    if upper:
        return xp.triu(a) + xp.swapaxes(xp.triu(a, 1), -1, -2)
    return xp.tril(a) + xp.swapaxes(xp.tril(a, -1), -1, -2)


def _as_numpy_reads(fn, upper=False):
    """``fn(xp, a)``, its JAX side given the triangle NumPy reads (JAX symmetrises)."""
    return lambda xp, a: fn(xp, a if xp is np else _triangle(xp, a, upper))


def _lopsided(a, seed):
    """``a`` plus noise above the diagonal: a matrix that is not symmetric, whose lower
    triangle is ``a``'s."""
    noise = rand(*a.shape, seed=seed)
    return a + np.triu(noise, 1)


def test_eigh_and_eigvalsh():
    a = _lopsided(_spread_sym(4, seed=10, batch=(2,)), seed=10)
    check(_as_numpy_reads(lambda xp, a: xp.linalg.eigvalsh(a)), a, hessian=True, fd=True)
    check(lambda xp, a: xp.linalg.eigvalsh(0.5 * (a + xp.swapaxes(a, -1, -2))), a, fd=True)
    w, v = np.linalg.eigh(a)
    got_w, got_v = tg.trace(lambda a: np.linalg.eigh(a), a)(a)
    np.testing.assert_allclose(got_w, w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_v, v, atol=1e-12)     # NumPy's own signs
    # a function that is invariant to the signs: against JAX and differences
    check(_as_numpy_reads(lambda xp, a: xp.linalg.eigh(a)[1] ** 2), a, fd=True)

    def products(xp, a):    # v_ik v_0k: invariant to each column's sign
        v = xp.linalg.eigh(a)[1]
        return v * v[..., :1, :]
    check(_as_numpy_reads(products), a, fd=True)
    check(_as_numpy_reads(lambda xp, a: xp.linalg.eigvalsh(a, UPLO="U"), upper=True),
          np.swapaxes(a, -1, -2), fd=True)
    # the raw eigenvectors (NumPy's signs are locally constant): against differences
    weights = rand(*a.shape, seed=3)
    g = tg.grad(lambda a: np.sum(np.linalg.eigh(a)[1] * weights))(a)
    want = finite_diff_grad(lambda a: np.sum(np.linalg.eigh(a)[1] * weights), (a,), 0)
    np.testing.assert_allclose(g, want, atol=1e-6 * np.max(np.abs(want)))
    assert np.all(np.triu(g, 1) == 0)   # the upper triangle is never read


def test_svd_through_np_linalg():
    a = _well(4, 3, seed=11, batch=(2,))
    check(lambda xp, a: xp.linalg.svd(a, compute_uv=False), a, fd=True, hessian=True)
    u, s, vh = tg.trace(lambda a: np.linalg.svd(a, full_matrices=False), a)(a)
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, atol=1e-12)
    check(lambda xp, a: xp.linalg.svd(a, full_matrices=False)[0] ** 2, a, fd=True)
    check(lambda xp, a: xp.linalg.svd(a, full_matrices=False)[2] ** 2, a, fd=True)
    sq = _well(3, 3, seed=12)
    check(lambda xp, a: xp.linalg.svd(a)[0] ** 2, sq, fd=True)     # full_matrices=True, square
    with pytest.raises(tg.TraceError, match="full_matrices=False"):
        tg.grad(lambda a: np.sum(np.linalg.svd(a)[0]))(a)


@pytest.mark.parametrize("shape", [(4, 3), (3, 3), (2, 4), (2, 3, 5)])
def test_qr(shape):
    a = _well(*shape[-2:], seed=13, batch=shape[:-2])
    check(lambda xp, a: xp.linalg.qr(a)[0], a, fd=True)
    check(lambda xp, a: xp.linalg.qr(a)[1], a, fd=True, hessian=shape == (4, 3))
    check(lambda xp, a: xp.linalg.qr(a, mode="r"), a)


# -- inv/solve/det/slogdet/cholesky, batched ------------------------------------------------------
def test_batched_classics():
    a = _well(3, 3, seed=14, batch=(2, 2))
    b = rand(2, 2, 3, 2, seed=15)
    spd = a @ np.swapaxes(a, -1, -2) + np.eye(3)
    check(lambda xp, a: xp.linalg.inv(a), a, fd=True)
    check(lambda xp, a, b: xp.linalg.solve(a, b), a, b, argnums=(0, 1), fd=True)
    check(lambda xp, a: xp.linalg.det(a), a, fd=True)
    check(lambda xp, a: xp.linalg.slogdet(a)[1], a, fd=True)
    check(lambda xp, a: xp.linalg.cholesky(0.5 * (a + xp.swapaxes(a, -1, -2))), spd, fd=True)
    lopsided = _lopsided(spd, seed=16)   # NumPy reads the lower triangle only
    check(_as_numpy_reads(lambda xp, a: xp.linalg.cholesky(a)), lopsided, fd=True)
    check(_as_numpy_reads(lambda xp, a: xp.linalg.cholesky(a, upper=True), upper=True),
          np.swapaxes(lopsided, -1, -2), fd=True)


# -- degenerate spectra: the documented conventions --------------------------------------------------
def test_eigvalsh_at_a_tie_averages_over_the_cluster():
    a = np.diag([1.0, 1.0, 3.0])
    # sum(f(lambda)) is symmetric in the tied values: the exact gradient, V f'(L) V^T
    g = tg.grad(lambda a: np.sum(np.linalg.eigvalsh(a) ** 3))(a)
    np.testing.assert_allclose(g, np.diag([3.0, 3.0, 27.0]), atol=1e-12)
    # the smallest eigenvalue at a tie: the minimum-norm subgradient, half to each
    g = tg.grad(lambda a: np.linalg.eigvalsh(a)[0])(a)
    np.testing.assert_allclose(g, np.diag([0.5, 0.5, 0.0]), atol=1e-12)
    assert np.all(np.isfinite(tg.hessian(lambda a: np.linalg.eigvalsh(a)[0])(a)))


def test_eigenvectors_at_a_tie_are_finite_and_exact_for_invariant_functions():
    a = np.diag([2.0, 2.0, 5.0]) + 0.0
    r = np.random.default_rng(16)
    q, _ = np.linalg.qr(r.standard_normal((3, 3)))
    a = q @ a @ q.T

    def projector(xp, a):   # onto the tied eigenspace: does not depend on its basis
        v = xp.linalg.eigh(a)[1][:, :2]
        return v @ v.T

    g = tg.jacobian(lambda a: projector(np, a))(a)
    assert np.all(np.isfinite(g))
    # the projector's derivative in closed form: P' = sum over the pair (tied, other)
    # P dA Q / (l_t - l_o) + transpose, with Q = I - P
    t = r.standard_normal((3, 3))
    t = t + t.T
    p = projector(np, a)
    want = (p @ t @ (np.eye(3) - p) + (np.eye(3) - p) @ t @ p) / (2.0 - 5.0)
    got = np.tensordot(g, t, axes=2)
    np.testing.assert_allclose(got, want, atol=1e-10)
    # the spectral norm at a tied top singular value: finite, the minimum-norm subgradient
    g2 = tg.grad(lambda a: np.linalg.norm(a, 2))(np.eye(3))
    np.testing.assert_allclose(g2, np.eye(3) / 3, atol=1e-12)
    gv = tg.grad(lambda a: np.sum(np.linalg.svd(a)[0]))(np.eye(3))
    assert np.all(np.isfinite(gv))


# -- det at a singular matrix: the adjugate -------------------------------------------------------
@pytest.mark.parametrize("rank", [2, 1, 0])
def test_det_gradient_at_a_singular_matrix_is_the_adjugate(rank):
    r = np.random.default_rng(17 + rank)
    a = r.standard_normal((3, rank)) @ r.standard_normal((rank, 3))
    # adj(A)^T from the cofactors
    cof = np.array([[(-1) ** (i + j) * np.linalg.det(np.delete(np.delete(a, i, 0), j, 1))
                     for j in range(3)] for i in range(3)])
    g = tg.grad(np.linalg.det)(a)
    np.testing.assert_allclose(g, cof, atol=1e-12)
    np.testing.assert_allclose(g, jax.grad(jnp.linalg.det)(a), atol=1e-12)
    np.testing.assert_allclose(g, finite_diff_grad(np.linalg.det, (a,), 0), atol=1e-8)
    _, tangent = tg.jvp(np.linalg.det, (a,), (np.ones((3, 3)),))
    np.testing.assert_allclose(tangent, np.sum(cof), atol=1e-12)
    if rank == 2:   # one zero singular value: the second derivative too
        np.testing.assert_allclose(tg.hessian(np.linalg.det)(a), jax.hessian(jnp.linalg.det)(a),
                                   atol=1e-10)
    # batched, with a nonsingular matrix beside the singular one
    b = np.stack([a, np.eye(3) + 0.1 * r.standard_normal((3, 3))])
    np.testing.assert_allclose(tg.grad(lambda b: np.sum(np.linalg.det(b)))(b),
                               jax.grad(lambda b: jnp.sum(jnp.linalg.det(b)))(b), atol=1e-12)


@pytest.mark.parametrize("a", [np.eye(3), 2.0 * np.eye(3), np.diag([1.0, 1.0, 2.0]),
                               np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]),
                               np.array([[1.0, 2.0, 0.5], [2.0, 4.0, 1.0], [0.3, -1.0, 2.0]])
                               + np.diag([0.0, 1e-12, 0.0]),
                               np.zeros((3, 3))],
                         ids=["identity", "scaled", "tied", "permutation", "near-singular", "zero"])
def test_det_second_derivative_at_tied_and_near_singular_matrices(a):
    """Tied singular values (the identity) and near-singular matrices (one singular value
    near zero): the Hessian of det is JAX's (the SVD's tie convention must not reach a
    well-conditioned matrix). Two (near-)zero singular values are the documented
    exception (ir/prims/linalg.py)."""
    np.testing.assert_allclose(tg.hessian(np.linalg.det)(a), jax.hessian(jnp.linalg.det)(a),
                               atol=1e-10)


def test_new_refusals_name_the_line():
    with pytest.raises(tg.TraceError, match=r"pinv\(rtol=None\) of a int64 .*test_linalg_more.py:"):
        tg.trace(lambda a: np.linalg.pinv(a, rtol=None), np.eye(2, dtype=np.int64))
    with pytest.raises(tg.TraceError, match=r"UPLO must be 'L' or 'U'.*test_linalg_more.py:"):
        tg.trace(lambda a: np.linalg.eigh(a, UPLO="X"), np.eye(2))
    with pytest.raises(tg.TraceError, match=r"full_matrices=True\) of a 3x2 matrix has no "
                                            r"derivative.*test_linalg_more.py:"):
        tg.grad(lambda a: np.sum(np.linalg.svd(a)[2]))(np.arange(6.0).reshape(3, 2) + np.eye(3, 2))


@pytest.mark.parametrize("a", [np.outer([1.0, -2.0, 0.5], [0.25, 1.0, 2.0]), np.zeros((3, 3)),
                               np.diag([1.0, 1.0, 0.0]), np.diag([2.0, 0.0, 0.0, 1.0]),
                               np.outer([1.0, 2.0, -1.0, 0.5], [0.5, -1.0, 1.0, 2.0]),
                               np.ones((2, 2))],
                         ids=["rank1-3x3", "zero-3x3", "tied-diag", "rank2-4x4", "rank1-4x4",
                              "rank1-2x2"])
def test_det_hessian_at_rank_deficient_matrices_vs_finite_differences(a):
    # up to 4 x 4 the singular branch is the cofactor matrix: exact to second order
    rng = np.random.default_rng(3)
    u, v = rng.normal(size=a.shape), rng.normal(size=a.shape)
    h = 1e-4
    det = np.linalg.det
    want = (det(a + h * u + h * v) - det(a + h * u - h * v) - det(a - h * u + h * v)
            + det(a - h * u - h * v)) / (4 * h * h)
    hess = tg.hessian(det)(a)
    got = np.sum(v * np.tensordot(hess, u, a.ndim))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    hu = tg.jvp(tg.grad(det), (a,), (u,))[1]               # forward over reverse too
    np.testing.assert_allclose(np.sum(v * hu), want, rtol=1e-6, atol=1e-6)
