"""End-to-end checks of ``np.linalg.eig`` / ``eigvals`` on traced values (the primitives of
tracegrad/ir/prims/eig.py): values against NumPy, first and second derivatives against
JAX and finite differences, batches, ``tg.vmap``, ``tg.jit`` on both backends, single
precision, and the documented behaviour at repeated eigenvalues.

The eigenvectors are NumPy's own (their signs too); JAX's ``eig`` may order and sign
them otherwise, so the JAX references are ``cases_eig.jax_eig_like_numpy`` (JAX's
differentiable ``eig`` put in NumPy's order and signs), or functions that do not depend
on the sign or phase of an eigenvector.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cases_eig import jax_eig_like_numpy
from conftest import assert_close, fd_jvp, fd_vjp

import tracegrad as tg
from tracegrad.ir import REGISTRY

RNG = np.random.default_rng(7)


def with_spectrum(w, batch=(), complex_=False):
    """``S diag(w) S^-1`` for a random well-conditioned ``S`` (not orthogonal)."""
    n = len(w)
    s = np.eye(n) + RNG.uniform(-0.3, 0.3, batch + (n, n))
    if complex_:
        s = s + 1j * RNG.uniform(-0.3, 0.3, batch + (n, n))
    return (s * np.asarray(w)) @ np.linalg.inv(s)


A_REAL = with_spectrum([-1.5, 0.5, 2.0])
A_PAIR = np.array([[0.3, 1.2, 0.4], [-1.1, 0.2, 0.5], [0.2, -0.3, 2.0]])   # one complex pair
A_CPLX = with_spectrum([1.0 + 0.5j, -1.0 - 0.2j, 0.3 + 1.5j], complex_=True)
A_BATCH = with_spectrum([-1.0, 0.7, 2.1], batch=(2,))


def jax_eig(a):
    return jax_eig_like_numpy(a)


def loss(xp):
    """A real scalar of both results that depends on the phase of no eigenvector."""
    def f(a):
        w, v = xp.linalg.eig(a) if xp is np else jax_eig(a)
        n = v.shape[-1]
        weights = xp.arange(1.0, n * n + 1).reshape(n, n)
        overlap = v[..., 0, :] * xp.conj(v[..., 1, :])       # invariant under v_j -> e^it v_j
        return (xp.sum(xp.real(w) ** 2 - xp.imag(w) * xp.real(w))
                + xp.sum(weights * xp.abs(v) ** 2) + xp.sum(xp.real(overlap) * xp.imag(w)))
    return f


# -- values ---------------------------------------------------------------------------------
@pytest.mark.parametrize("a", [A_REAL, A_PAIR, A_CPLX, A_BATCH], ids=["real", "pair", "complex",
                                                                     "batch"])
def test_values_are_numpys_signs_included(a):
    ref = np.linalg.eig(a)
    for run in (tg.trace(lambda x: tuple(np.linalg.eig(x)), a),
                tg.jit(lambda x: tuple(np.linalg.eig(x))),
                tg.jit(lambda x: tuple(np.linalg.eig(x)), backend="jax")):
        w, v = (np.asarray(r) for r in run(a))
        assert w.dtype == ref.eigenvalues.dtype and v.dtype == ref.eigenvectors.dtype
        assert_close(w, ref.eigenvalues, 1e-12, "eigenvalues")
        assert_close(v, ref.eigenvectors, 1e-12, "eigenvectors")
    # A V = V diag(w)
    assert_close(a @ v, v * w[..., None, :], 1e-12, "eigenpairs")


def test_eig_result_names_and_eigvals():
    def f(a):
        res = np.linalg.eig(a)
        w, v = res                                # unpacks as a pair
        assert res.eigenvalues is w and res.eigenvectors is v
        return np.linalg.eigvals(a), w, v

    vals, w, v = tg.trace(f, A_PAIR)(A_PAIR)
    assert_close(vals, w, 0.0, "eigvals == eig's eigenvalues, same order")
    assert_close(np.sort_complex(vals), np.sort_complex(np.linalg.eigvals(A_PAIR)), 1e-12)


def test_real_matrix_with_real_spectrum_gives_real_results_as_numpy():
    """NumPy returns real arrays for a real matrix whose eigenvalues are all real; the
    decision is a guard, so a compiled function retraces for a complex spectrum."""
    assert np.linalg.eig(A_REAL).eigenvalues.dtype == np.float64
    for run in (tg.trace(np.linalg.eigvals, A_REAL), tg.jit(np.linalg.eigvals),
                tg.jit(np.linalg.eigvals, backend="jax")):
        w = np.asarray(run(A_REAL))
        assert w.dtype == np.float64
        assert_close(w, np.linalg.eigvals(A_REAL), 1e-12)
    compiled = tg.jit(np.linalg.eigvals)
    compiled(A_REAL)
    w = compiled(A_PAIR)                              # a complex pair: traced again
    assert w.dtype == np.complex128
    assert_close(w, np.linalg.eigvals(A_PAIR), 1e-12)
    # under tg.vmap each example cannot decide for the batch: complex, as jnp.linalg.eig
    assert tg.vmap(np.linalg.eigvals)(A_REAL[None]).dtype == np.complex128


def test_non_square_is_refused():
    with pytest.raises(tg.TraceError, match="square"):
        tg.grad(lambda a: np.sum(np.real(np.linalg.eigvals(a))))(np.ones((2, 3)))
    with pytest.raises(tg.TraceError, match="square"):
        tg.grad(lambda a: np.sum(np.abs(np.linalg.eig(a)[1])))(np.ones(3))


# -- first order ------------------------------------------------------------------------------
@pytest.mark.parametrize("a", [A_REAL, A_PAIR, A_BATCH], ids=["real", "pair", "batch"])
def test_grad_of_a_real_loss(a):
    got = tg.grad(loss(np))(a)
    assert got.dtype == np.float64 and got.shape == a.shape
    assert_close(got, np.asarray(jax.jit(jax.grad(loss(jnp)))(a)), 1e-10, "vs jax.grad")
    assert_close(got, fd_vjp(loss(np), [a], np.float64(1.0))[0], 1e-7, "vs FD", floor=1.0)


def test_vjp_and_jvp_of_raw_eigenpairs():
    """The eigenvectors' rules differentiate the normalisation the impl applies, so raw
    eigenvectors (not only phase-free functions of them) agree with finite differences."""
    impls = [REGISTRY["eigvals"].impl, REGISTRY["eig_vectors"].impl]
    for a in (A_PAIR, A_CPLX):
        f = lambda x: tuple(np.linalg.eig(x))   # noqa: E731
        (w, v), pullback = tg.vjp(f, a)
        ct = (RNG.standard_normal(w.shape) + 1j * RNG.standard_normal(w.shape),
              RNG.standard_normal(v.shape) + 1j * RNG.standard_normal(v.shape))
        (got,) = pullback(ct)
        assert got.dtype == a.dtype
        want = jax.jit(lambda a, ct: jax.vjp(jax_eig, a)[1](ct)[0])(a, ct)
        assert_close(got, np.asarray(want), 1e-10, "vjp vs JAX")
        for part in (0, 1):
            only = tuple(c if k == part else 0 * c for k, c in enumerate(ct))
            fd = fd_vjp(impls[part], [a], ct[part])[0]
            assert_close(pullback(only)[0], fd, 1e-7, f"vjp part {part} vs FD", floor=1.0)

        t = RNG.standard_normal(a.shape) + (1j * RNG.standard_normal(a.shape)
                                            if np.iscomplexobj(a) else 0.0)
        _, (tw, tv) = tg.jvp(f, (a,), (t,))
        jw, jv = jax.jit(lambda a, t: jax.jvp(jax_eig, (a,), (t,))[1])(a, t)
        assert_close(tw, np.asarray(jw), 1e-10, "eigenvalue tangent vs JAX")
        assert_close(tv, np.asarray(jv), 1e-10, "eigenvector tangent vs JAX")
        assert_close(tw, fd_jvp(impls[0], [a], [t]), 1e-7, "eigenvalue tangent vs FD", floor=1.0)
        assert_close(tv, fd_jvp(impls[1], [a], [t]), 1e-7, "eigenvector tangent vs FD", floor=1.0)


def test_complex_input_vjp_matches_jax_and_fd():
    f = loss(np)
    out, pullback = tg.vjp(f, A_CPLX)
    (got,) = pullback(np.float64(1.0))
    assert got.dtype == np.complex128
    (want,) = jax.jit(lambda a: jax.vjp(loss(jnp), a)[1](1.0))(A_CPLX)
    assert_close(got, np.asarray(want), 1e-10, "vs jax.vjp")
    assert_close(got, fd_vjp(f, [A_CPLX], np.float64(1.0))[0], 1e-7, "vs FD", floor=1.0)


def test_eigenvalue_vjp_formula():
    """ct_A = V^-T diag(ct_w) V^T, the transpose of dw = diag(V^-1 dA V)."""
    ct = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
    _, pullback = tg.vjp(np.linalg.eigvals, A_CPLX)
    w, v = np.linalg.eig(A_CPLX)
    want = np.linalg.inv(v).T @ np.diag(ct) @ v.T
    assert_close(pullback(ct)[0], want, 1e-12, "V^-T diag(ct) V^T")


# -- second order -------------------------------------------------------------------------------
@pytest.mark.parametrize("a", [A_REAL, A_PAIR], ids=["real", "pair"])
def test_hessian_matches_jax(a):
    got = tg.hessian(loss(np))(a)
    assert got.shape == a.shape * 2
    want = np.asarray(jax.jit(jax.hessian(loss(jnp)))(a))
    assert_close(got, want, 1e-9, "hessian vs jax.hessian")
    # and a column of it by finite differences of the gradient
    e = np.zeros_like(a)
    e[0, 1] = 1.0
    fd = fd_jvp(tg.grad(loss(np)), [a], [e])
    assert_close(got[..., 0, 1], fd, 1e-6, "hessian column vs FD of the gradient", floor=1.0)


def test_second_order_with_complex_input():
    """jvp of grad and grad of jvp, against JAX's Hessian-vector products."""
    u = RNG.standard_normal(A_CPLX.shape) + 1j * RNG.standard_normal(A_CPLX.shape)

    def grad_np(a):
        return tg.vjp(loss(np), a)[1](np.float64(1.0))[0]

    def grad_jax(a):
        return jax.vjp(loss(jnp), a)[1](1.0)[0]

    _, got = tg.jvp(grad_np, (A_CPLX,), (u,))
    want = jax.jit(lambda a, u: jax.jvp(grad_jax, (a,), (u,))[1])(A_CPLX, u)
    assert_close(got, np.asarray(want), 1e-9, "jvp of grad vs JAX")

    def directional(a):
        return np.real(tg.jvp(loss(np), (a,), (u,))[1])

    got2 = tg.vjp(directional, A_CPLX)[1](np.float64(1.0))[0]
    assert_close(got2, np.asarray(want), 1e-9, "grad of jvp vs JAX")


# -- batches, vmap, jit ---------------------------------------------------------------------------
def test_batched_matches_per_matrix():
    got = tg.grad(loss(np))(A_BATCH)
    for i in range(A_BATCH.shape[0]):
        assert_close(got[i], tg.grad(loss(np))(A_BATCH[i]), 1e-12, f"matrix {i}")


def test_vmap_and_batched_jacobian():
    f = lambda a: np.real(np.linalg.eigvals(a))   # noqa: E731
    got = tg.vmap(tg.grad(lambda a: np.sum(f(a) ** 3)))(A_BATCH)
    want = np.stack([tg.grad(lambda a: np.sum(f(a) ** 3))(m) for m in A_BATCH])
    assert_close(got, want, 1e-12, "vmap of grad")
    jac = tg.jacobian(f)(A_PAIR)
    assert jac.shape == (3, 3, 3)
    assert_close(jac, np.asarray(jax.jit(jax.jacfwd(lambda a: jnp.real(jax_eig(a)[0])))(A_PAIR)), 1e-10,
                 "jacobian vs jax.jacfwd")


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_jit(backend):
    g = tg.jit(tg.grad(loss(np)), backend=backend)
    want = tg.grad(loss(np))(A_PAIR)
    assert_close(np.asarray(g(A_PAIR)), want, 1e-10, f"jit({backend}) grad")
    assert_close(np.asarray(g(A_REAL)), tg.grad(loss(np))(A_REAL), 1e-10, "second input")
    vals = tg.jit(lambda a: tuple(np.linalg.eig(a)), backend=backend)(A_BATCH)
    ref = tg.trace(lambda a: tuple(np.linalg.eig(a)), A_BATCH)(A_BATCH)
    for x, y in zip(vals, ref):
        assert_close(np.asarray(x), y, 1e-12, f"jit({backend}) values")


# -- single precision ---------------------------------------------------------------------------------
@pytest.mark.parametrize("a", [A_PAIR, A_CPLX], ids=["float32", "complex64"])
def test_single_precision(a):
    low = a.astype(np.float32 if a.dtype == np.float64 else np.complex64)
    w, v = tg.trace(lambda x: tuple(np.linalg.eig(x)), low)(low)
    assert w.dtype == v.dtype == np.complex64
    _, pullback = tg.vjp(loss(np), low)
    (g,) = pullback(np.float32(1.0))
    assert g.dtype == low.dtype
    (g64,) = tg.vjp(loss(np), a)[1](np.float64(1.0))
    assert_close(g.astype(g64.dtype), g64, 2e-4, "single vs double precision")
    jw = np.asarray(tg.jit(np.linalg.eigvals, backend="jax")(low))
    assert jw.dtype == np.complex64
    assert_close(jw, w, 1e-5, "JAX backend, single precision")


# -- repeated eigenvalues ---------------------------------------------------------------------------
A_TIE = with_spectrum([1.0, 1.0, 3.0])      # diagonalisable, eigenvalue 1 twice


def test_tie_symmetric_functions_of_eigenvalues_are_exact():
    """The cotangent is averaged over a tied cluster: exact for sum (the trace) and prod
    (the determinant), and never NaN."""
    w = np.linalg.eigvals(A_TIE)
    assert np.sum(np.isclose(w, 1.0)) == 2
    g_sum = tg.grad(lambda a: np.real(np.sum(np.linalg.eigvals(a))))(A_TIE)
    assert_close(g_sum, np.eye(3), 1e-10, "d trace")
    g_prod = tg.grad(lambda a: np.real(np.prod(np.linalg.eigvals(a))))(A_TIE)
    assert_close(g_prod, np.linalg.det(A_TIE) * np.linalg.inv(A_TIE).T, 1e-10, "d det")
    _, t = tg.jvp(lambda a: np.sum(np.linalg.eigvals(a)), (A_TIE,), (np.ones((3, 3)),))
    assert_close(t, np.float64(3.0), 1e-10, "trace tangent")     # a real spectrum: real


def test_tie_spectral_projector_is_exact():
    """The projector onto the tied eigenspace does not depend on the basis LAPACK picks
    inside it: with the tied pair masked (F_ij = 0), its derivative is exact."""
    def projector(a):
        w, v = np.linalg.eig(a)
        tied = np.abs(w - 1.0) < 1e-6        # a constant mask at this point
        vinv = np.linalg.inv(v)
        return np.real((v * tied) @ vinv)

    def projector_np(a):   # the same, for finite differences: the cluster nearest 1
        w, v = np.linalg.eig(a)
        tied = np.argsort(np.abs(w - 1.0))[:2]
        return np.real(v[:, tied] @ np.linalg.inv(v)[tied, :])

    ct = RNG.standard_normal((3, 3))
    out, pullback = tg.vjp(projector, A_TIE)
    assert_close(out, projector_np(A_TIE), 1e-10, "projector value")
    (got,) = pullback(ct)
    assert np.all(np.isfinite(got))
    assert_close(got, fd_vjp(projector_np, [A_TIE], ct)[0], 1e-6, "projector vs FD", floor=1.0)
    t = RNG.standard_normal((3, 3))
    _, tangent = tg.jvp(projector, (A_TIE,), (t,))
    assert_close(tangent, fd_jvp(projector_np, [A_TIE], [t]), 1e-6, "projector tangent vs FD",
                 floor=1.0)


def test_tie_eigenvector_derivatives_are_finite():
    """Not a derivative (there is none), but no NaN either: the tied pair is masked."""
    g = tg.grad(lambda a: np.sum(np.abs(np.linalg.eig(a)[1]) ** 2 * np.arange(9.0).reshape(3, 3)))(
        A_TIE)
    assert np.all(np.isfinite(g))
    h = tg.hessian(lambda a: np.real(np.prod(np.linalg.eigvals(a))))(A_TIE)
    assert np.all(np.isfinite(h))


def test_defective_matrix_is_documented_as_meaningless():
    """[[1, 1], [0, 1]] has one eigenvector: no derivative exists. The trace still comes
    out right; the determinant does not (the documented limit of the rules)."""
    a = np.array([[1.0, 1.0], [0.0, 1.0]])
    g_sum = tg.grad(lambda x: np.real(np.sum(np.linalg.eigvals(x))))(a)
    assert_close(g_sum, np.eye(2), 1e-12, "d trace")
    g_prod = tg.grad(lambda x: np.real(np.prod(np.linalg.eigvals(x))))(a)
    assert not np.allclose(g_prod, np.linalg.det(a) * np.linalg.inv(a).T)
    assert "defective" in REGISTRY["eigvals"].doc and "defective" in REGISTRY["eig_vectors"].doc
