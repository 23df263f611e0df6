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
    tri = np.tril if lower else np.triu
    assert low == slow
    assert_close(c, tri(sc), 1e-12, "the factor (SciPy leaves other values in the other half)")
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
