"""``tracegrad.scipy.linalg``: values equal SciPy's (``scipy.linalg``), gradients equal
JAX's (``jax.scipy.linalg``, x64) and central finite differences. (``expm`` and ``sqrtm``
are also checked per primitive, to second order, in ``cases_scipy_linalg.py``.)"""
import itertools

import jax
import jax.scipy.linalg as jsl
import numpy as np
import pytest
import scipy.linalg as sl
from conftest import assert_close, fd_vjp

import tracegrad as tg
import tracegrad.scipy.linalg as tl

RNG = np.random.default_rng(1501)
A = RNG.uniform(-0.5, 0.5, (3, 3)) + np.diag([2.0, -1.5, 1.8])
B = RNG.standard_normal((3, 2))
SPD = A @ A.T + np.eye(3)
OPTIONS = list(itertools.product([True, False], [0, 1, "T"], [False, True]))


@pytest.mark.parametrize("lower,trans,unit", OPTIONS,
                         ids=[f"lower{lo}-trans{t}-unit{u}" for lo, t, u in OPTIONS])
def test_solve_triangular(lower, trans, unit):
    kw = dict(lower=lower, trans=trans, unit_diagonal=unit)
    assert_close(tl.solve_triangular(A, B, **kw), sl.solve_triangular(A, B, **kw), 1e-12, "matrix")
    assert_close(tl.solve_triangular(A, B[:, 0], **kw), sl.solve_triangular(A, B[:, 0], **kw),
                 1e-12, "vector")
    w = RNG.standard_normal(B.shape)
    f = lambda a, b: np.sum(w * tl.solve_triangular(a, b, **kw))  # noqa: E731
    got = tg.grad(f, argnums=(0, 1))(A, B)
    jkw = dict(lower=lower, trans=trans, unit_diagonal=unit)
    want = jax.grad(lambda a, b: jax.numpy.sum(w * jsl.solve_triangular(a, b, **jkw)),
                    argnums=(0, 1))(A, B)
    for g, j, d in zip(got, want, fd_vjp(f, [A, B], 1.0)):
        assert_close(g, np.asarray(j), 1e-10, "vs JAX")
        assert_close(g, d, 1e-7, "vs finite differences", floor=1.0)


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_factor_and_solve(lower):
    c, low = tl.cho_factor(SPD, lower=lower)
    sc, slow = sl.cho_factor(SPD, lower=lower)
    assert low == slow
    assert_close(c, sc, 1e-12, "the factor, and a's entries in the other half as SciPy's")
    traced = tg.jit(lambda a: tl.cho_factor(a, lower=lower)[0])(SPD)
    assert_close(traced, sc, 1e-12, "traced: the factor and a's entries in the other half")
    assert_close(tl.cholesky(SPD, lower=lower), sl.cholesky(SPD, lower=lower), 1e-12, "cholesky")
    assert_close(tl.cho_solve((c, low), B), sl.cho_solve((sc, slow), B), 1e-12, "cho_solve")

    def f(m, b):
        m = 0.5 * (m + m.T)
        return np.sum(tl.cho_solve(tl.cho_factor(m, lower=lower), b) ** 2)

    def jf(m, b):
        m = 0.5 * (m + m.T)
        return jax.numpy.sum(jsl.cho_solve(jsl.cho_factor(m, lower=lower), b) ** 2)

    got = tg.grad(f, argnums=(0, 1))(SPD, B)
    want = jax.grad(jf, argnums=(0, 1))(SPD, B)
    for g, j, d in zip(got, want, fd_vjp(f, [SPD, B], 1.0)):
        assert_close(g, np.asarray(j), 1e-10, "vs JAX")
        assert_close(g, d, 1e-7, "vs finite differences", floor=1.0)


def test_expm_and_sqrtm():
    m = 0.4 * A
    assert_close(tl.expm(m), sl.expm(m), 1e-12, "expm")
    assert_close(tl.expm(np.stack([m, 2 * m])), sl.expm(np.stack([m, 2 * m])), 1e-12, "stack")
    assert_close(tl.sqrtm(SPD), sl.sqrtm(SPD), 1e-10, "sqrtm")
    w = RNG.standard_normal((3, 3))
    f = lambda a: np.sum(w * tl.expm(a))  # noqa: E731
    want = jax.grad(lambda a: jax.numpy.sum(w * jsl.expm(a)))(m)
    assert_close(tg.grad(f)(m), np.asarray(want), 1e-10, "expm vs JAX")
    for backend in ("numpy", "jax"):
        assert_close(tg.jit(tg.grad(f), backend=backend)(m), np.asarray(want), 1e-10, backend)
    g = lambda a: np.sum(w * tl.sqrtm(a))  # noqa: E731
    assert_close(tg.grad(g)(SPD), fd_vjp(g, [SPD], 1.0)[0], 1e-7, "sqrtm vs finite differences",
                 floor=1.0)
    with pytest.raises(tg.TraceError, match="without a real square root"):
        tg.grad(lambda a: np.sum(tl.sqrtm(a)))(-SPD)


# -- stacks of square roots; Sylvester, banded solves, the Fréchet derivative --------------
def test_sqrtm_of_a_stack():
    stack = np.stack([SPD, SPD + 0.3 * A, 2.0 * np.eye(3) + 0.2 * A])
    assert_close(tl.sqrtm(stack), sl.sqrtm(stack), 1e-10, "SciPy's stack")
    w = RNG.standard_normal(stack.shape)
    f = lambda a: np.sum(w * tl.sqrtm(a))  # noqa: E731
    got = tg.grad(f)(stack)
    assert_close(got, fd_vjp(f, [stack], 1.0)[0], 1e-7, "vs finite differences", floor=1.0)
    for k in range(3):      # a stack's gradient is each matrix's
        one = tg.grad(lambda a: np.sum(w[k] * tl.sqrtm(a)))(stack[k])
        assert_close(got[k], one, 1e-12, f"matrix {k}")
    assert_close(tg.vmap(tl.sqrtm)(stack), sl.sqrtm(stack), 1e-10, "vmap")
    _, tangent = tg.jvp(tl.sqrtm, (stack,), (w,))
    h = 1e-6
    assert_close(tangent, (sl.sqrtm(stack + h * w) - sl.sqrtm(stack - h * w)) / (2 * h), 1e-6,
                 "forward mode vs finite differences", floor=1.0)


SYL_A = A + 2.0 * np.eye(3)
SYL_B = RNG.uniform(-0.5, 0.5, (2, 2)) + np.diag([1.0, 1.5])
SYL_Q = RNG.standard_normal((3, 2))


def test_solve_sylvester_values():
    assert_close(tl.solve_sylvester(SYL_A, SYL_B, SYL_Q), sl.solve_sylvester(SYL_A, SYL_B, SYL_Q),
                 1e-15, "SciPy's values")
    stack = (np.stack([SYL_A, SYL_A.T]), SYL_B, np.stack([SYL_Q, 2 * SYL_Q]))
    assert_close(tl.solve_sylvester(*stack), sl.solve_sylvester(*stack), 1e-15, "a stack")
    traced = tg.jit(tl.solve_sylvester)(SYL_A, SYL_B, SYL_Q)
    assert_close(traced, sl.solve_sylvester(SYL_A, SYL_B, SYL_Q), 1e-15, "compiled")
    with pytest.raises(ValueError, match="square"):
        tl.solve_sylvester(SYL_Q, SYL_B, SYL_Q)


def test_solve_sylvester_derivatives():
    """Against finite differences of SciPy's solve (JAX's ``solve_sylvester`` has no
    derivative: its Schur decomposition has none)."""
    w = RNG.standard_normal(SYL_Q.shape)
    f = lambda a, b, q: np.sum(w * tl.solve_sylvester(a, b, q) ** 2)  # noqa: E731
    ref = lambda a, b, q: np.sum(w * sl.solve_sylvester(a, b, q) ** 2)  # noqa: E731
    xs = [SYL_A, SYL_B, SYL_Q]
    got = tg.grad(f, argnums=(0, 1, 2))(*xs)
    for g, d in zip(got, fd_vjp(ref, xs, 1.0)):
        assert_close(g, d, 1e-7, "vs finite differences", floor=1.0)
    for backend in ("numpy", "jax"):
        for g, want in zip(tg.jit(tg.grad(f, argnums=(0, 1, 2)), backend=backend)(*xs), got):
            assert_close(g, want, 1e-12, backend)
    dirs = [RNG.standard_normal(x.shape) for x in xs]
    _, tangent = tg.jvp(tl.solve_sylvester, xs, dirs)
    h = 1e-6
    moved = [sl.solve_sylvester(*[x + s * d for x, d in zip(xs, dirs)]) for s in (h, -h)]
    assert_close(tangent, (moved[0] - moved[1]) / (2 * h), 1e-7, "forward mode", floor=1.0)
    # second order: the Hessian in b against central differences of the gradient
    grad_b = tg.grad(f, argnums=1)
    hess = tg.hessian(f, argnums=1)(*xs)
    for j in np.ndindex(SYL_B.shape):
        e = np.zeros(SYL_B.shape)
        e[j] = 1e-5
        col = (grad_b(SYL_A, SYL_B + e, SYL_Q) - grad_b(SYL_A, SYL_B - e, SYL_Q)) / 2e-5
        assert_close(hess[(...,) + j], col, 1e-6, "hessian vs finite differences", floor=1.0)
    # a stack broadcast against one b: b's cotangent sums over the stack
    qs = np.stack([SYL_Q, -SYL_Q + 0.5])
    g_b = tg.grad(lambda b: np.sum(tl.solve_sylvester(SYL_A, b, qs) ** 2))(SYL_B)
    assert_close(g_b, fd_vjp(lambda b: np.sum(sl.solve_sylvester(SYL_A, b, qs) ** 2), [SYL_B],
                             1.0)[0], 1e-7, "broadcast b", floor=1.0)


def _banded(a, lower, upper):
    n = a.shape[-1]
    ab = np.zeros(a.shape[:-2] + (lower + upper + 1, n))
    for i in range(n):
        for j in range(max(0, i - lower), min(n, i + upper + 1)):
            ab[..., upper + i - j, j] = a[..., i, j]
    return ab


BANDED = [(1, 1), (2, 1), (0, 2), (0, 0)]


@pytest.mark.parametrize("lower,upper", BANDED, ids=[f"l{lo}-u{u}" for lo, u in BANDED])
def test_solve_banded(lower, upper):
    n = 5
    dense = np.triu(np.tril(RNG.uniform(-1, 1, (n, n)), upper), -lower) + 3 * np.eye(n)
    ab = _banded(dense, lower, upper)
    ab_junk = ab + np.where(_banded(np.ones((n, n)), lower, upper) == 0, 7.0, 0.0)  # unread
    b = RNG.standard_normal((n, 2))
    for rhs in (b, b[:, 0]):
        assert_close(tl.solve_banded((lower, upper), ab_junk, rhs),
                     sl.solve_banded((lower, upper), ab_junk, rhs), 1e-13, "SciPy's values")
    w = RNG.standard_normal(b.shape)
    f = lambda ab, b: np.sum(w * tl.solve_banded((lower, upper), ab, b) ** 2)  # noqa: E731
    ref = lambda ab, b: np.sum(w * sl.solve_banded((lower, upper), ab, b) ** 2)  # noqa: E731
    got = tg.grad(f, argnums=(0, 1))(ab_junk, b)
    for g, d in zip(got, fd_vjp(ref, [ab_junk, b], 1.0)):
        assert_close(g, d, 1e-7, "vs finite differences (SciPy's solve)", floor=1.0)
    assert np.all(got[0][ab_junk != ab] == 0.0), "entries outside the band are not read"


def test_solve_banded_stacks_and_errors():
    n = 4
    dense = np.stack([np.triu(np.tril(RNG.uniform(-1, 1, (n, n)), 1), -1) + 3 * np.eye(n)
                      for _ in range(2)])
    ab = _banded(dense, 1, 1)
    for rhs in (RNG.standard_normal(n), RNG.standard_normal((2, n, 3))):
        assert_close(tl.solve_banded((1, 1), ab, rhs), sl.solve_banded((1, 1), ab, rhs), 1e-13,
                     f"a stack, b {rhs.shape}")
    with pytest.raises(ValueError, match="not compatible"):
        tl.solve_banded((1, 1), ab[0], np.ones(n + 1))
    with pytest.raises(ValueError, match="l\\+u\\+1"):
        tl.solve_banded((1, 2), ab[0], np.ones(n))


def test_expm_frechet():
    a, e = 0.5 * A, RNG.standard_normal((3, 3))
    got_expm, got_l = tl.expm_frechet(a, e)
    want_expm, want_l = sl.expm_frechet(a, e)
    assert_close(got_expm, want_expm, 1e-12, "expm")
    assert_close(got_l, want_l, 1e-12, "the Fréchet derivative")
    assert_close(tl.expm_frechet(a, e, compute_expm=False), want_l, 1e-12, "L only")
    stack = np.stack([a, -a])
    assert_close(tl.expm_frechet(stack, e)[1], sl.expm_frechet(stack, np.stack([e, e]))[1],
                 1e-12, "a stack")
    w = RNG.standard_normal((3, 3))
    f = lambda a, e: np.sum(w * tl.expm_frechet(a, e, compute_expm=False))  # noqa: E731
    ref = lambda a, e: np.sum(w * sl.expm_frechet(a, e, compute_expm=False))  # noqa: E731
    got = tg.grad(f, argnums=(0, 1))(a, e)
    for g, d in zip(got, fd_vjp(ref, [a, e], 1.0)):
        assert_close(g, d, 1e-7, "vs finite differences of SciPy's", floor=1.0)
    with pytest.raises(ValueError, match="Unknown implementation"):
        tl.expm_frechet(a, e, method="nope")
