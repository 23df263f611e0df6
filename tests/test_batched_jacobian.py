"""Batched Jacobians: ``tg.passes.batch`` and ``tg.jacobian`` / ``tg.hessian`` running
all rows at once, checked against a row-by-row ``tg.vjp`` loop and against JAX."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.passes.batch import batch, batch_rules
from tracegrad.runtime import run

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

RNG = np.random.default_rng(7)
A = RNG.standard_normal((5, 4))
S = RNG.standard_normal((4, 4))
SPD = S @ S.T + 4 * np.eye(4)


# -- functions: each written once per array module --------------------------------------------
def f_elementwise(xp):
    return lambda x: xp.tanh(x) * xp.exp(-x) + xp.where(x > 0, x ** 2, xp.sin(x)) / (1.0 + x * x)


def f_reductions(xp):
    def f(m):
        return (xp.sum(m ** 2, axis=0)[:3] + xp.max(m, axis=1)[:, None].sum(axis=1)
                + xp.prod(m[:, :2] + 2.0, axis=1) + xp.cumsum(m, axis=1)[:, -1])
    return f


def f_shapes(xp):
    def f(m):
        t = xp.transpose(xp.reshape(m, (2, 2, 4)), (2, 0, 1))
        c = xp.concatenate([t[:, 0, :], xp.ones((4, 1)), m[:, ::2]], axis=1)
        return xp.broadcast_to(c[:, :1], (3, 4, 1)).sum(axis=0)[:, 0] * c[:, 2] + c[1:, 3].sum()
    return f


def f_matmul(xp):
    def f(x, m):
        return xp.tanh(A @ x) @ A @ (m @ x) + (x @ m) @ A.T + xp.sum(m @ m, axis=0) @ A.T
    return f


def f_indexing(xp):
    def f(m):
        idx = np.array([2, 0, 2])
        return m[idx, 1] * m[1:, idx].sum(axis=0) + m[..., 0][idx] ** 2
    return f


def f_update(xp):
    def f(x):
        if xp is np:
            y = x * 1.0
            y[1:3] = x[:2] ** 2
            y[0] += 1.0
            return y * x[::-1]
        y = x.at[1:3].set(x[:2] ** 2).at[0].add(1.0)
        return y * x[::-1]
    return f


def f_linalg(xp):
    def f(m):
        a = m @ m.T + 4.0 * xp.eye(4)
        return (xp.linalg.solve(a, m[0]) + xp.linalg.inv(a)[:, 1] + xp.linalg.det(a)
                + xp.linalg.cholesky(a)[:, 2] + xp.einsum("ij,jk->k", m, a))
    return f


CASES = [
    ("elementwise", f_elementwise, (RNG.standard_normal(6),)),
    ("reductions", f_reductions, (RNG.standard_normal((3, 4)),)),
    ("shapes", f_shapes, (RNG.standard_normal((4, 4)),)),
    ("matmul", f_matmul, (RNG.standard_normal(4), RNG.standard_normal((4, 4)))),
    ("indexing", f_indexing, (RNG.standard_normal((3, 4)),)),
    ("update", f_update, (RNG.standard_normal(5),)),
    ("linalg", f_linalg, (RNG.standard_normal((4, 4)) * 0.3,)),
]
IDS = [c[0] for c in CASES]


def _argnums(args):
    return tuple(range(len(args)))


def _row_by_row(f, args):
    """The Jacobian one cotangent at a time (tg.vjp), as tg.jacobian used to run."""
    out, pullback = tg.vjp(f, *args)
    rows = [pullback(e.reshape(out.shape)) for e in np.eye(out.size)]
    return tuple(np.stack([r[i] for r in rows]).reshape(out.shape + np.shape(a))
                 for i, a in enumerate(args))


def _close(got, want, rtol=1e-9, atol=1e-10):
    got, want = tuple(got), tuple(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, np.asarray(w), rtol=rtol, atol=atol)


_JAX_JACOBIANS: dict = {}


def _jax_jacobian(name, make, args, mode):
    """JAX's Jacobian of a case, under jax.jit, computed once per (case, mode): the four
    chunk sizes compare with the same one."""
    if (name, mode) not in _JAX_JACOBIANS:
        jac = (jax.jacrev if mode == "rev" else jax.jacfwd)(make(jnp), argnums=_argnums(args))
        _JAX_JACOBIANS[name, mode] = jax.jit(jac)(*args)
    return _JAX_JACOBIANS[name, mode]


@pytest.mark.parametrize("name,make,args", CASES, ids=IDS)
@pytest.mark.parametrize("mode", ["rev", "fwd"])
@pytest.mark.parametrize("chunk_size", [None, 1, 3, 1000])
def test_jacobian_matches_rows_and_jax(name, make, args, mode, chunk_size):
    nums = _argnums(args)
    got = tg.jacobian(make(np), argnums=nums, mode=mode, chunk_size=chunk_size)(*args)
    _close(got, _jax_jacobian(name, make, args, mode))
    _close(got, _row_by_row(make(np), args))


@pytest.mark.parametrize("chunk_size", [None, 1, 3, 1000])
def test_hessian_matches_jax(chunk_size):
    def f(xp):
        return lambda x: xp.sum(xp.sin(x) * x ** 2) + xp.log(xp.sum(xp.exp(A @ x)))
    x = RNG.standard_normal(4)
    _close([tg.hessian(f(np), chunk_size=chunk_size)(x)], [jax.jit(jax.hessian(f(jnp)))(x)])


def test_hessian_argnums_tuple():
    def f(xp):
        return lambda x, y: xp.sum(xp.tanh(x[:, None] * y) ** 2)
    x, y = RNG.standard_normal(3), RNG.standard_normal(2)
    got = tg.hessian(f(np), argnums=(0, 1), chunk_size=2)(x, y)
    want = jax.jit(jax.hessian(f(jnp), argnums=(0, 1)))(x, y)
    for i in range(2):
        _close(got[i], want[i])


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_pytrees_and_has_aux(mode):
    def f(xp):
        def g(p, c):
            out = {"u": p["w"] * c[0], "v": xp.sum(p["w"]) * p["b"] + c}
            return out, xp.sum(c)
        return g
    p = {"w": RNG.standard_normal(3), "b": RNG.standard_normal(2)}
    c = RNG.standard_normal(2)
    jac, aux = tg.jacobian(f(np), argnums=(0, 1), has_aux=True, mode=mode, chunk_size=2)(p, c)
    want, aux_j = jax.jacrev(f(jnp), argnums=(0, 1), has_aux=True)(p, c)
    np.testing.assert_allclose(aux, aux_j)
    for k in ("u", "v"):
        for key in ("w", "b"):
            _close([jac[k][0][key]], [want[k][0][key]])
        _close([jac[k][1]], [want[k][1]])


@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_float32(mode):
    x = RNG.standard_normal(5).astype(np.float32)
    got = tg.jacobian(f_elementwise(np), mode=mode, chunk_size=2)(x)
    assert got.dtype == np.float32 and got.shape == (5, 5)
    want = jax.jacrev(f_elementwise(jnp))(x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


def test_tall_and_wide_shapes():
    x = RNG.standard_normal(2)
    tall = lambda x: np.outer(np.sin(x), np.arange(1.0, 8.0)).ravel()  # noqa: E731
    for mode in ("rev", "fwd"):
        assert tg.jacobian(tall, mode=mode)(x).shape == (14, 2)
        np.testing.assert_allclose(tg.jacobian(tall, mode=mode)(x), _row_by_row(tall, (x,))[0])
    scalar = tg.jacobian(lambda m: np.sum(m ** 2), mode="fwd", chunk_size=4)(np.ones((2, 3)))
    np.testing.assert_allclose(scalar, 2 * np.ones((2, 3)))


def test_composes_under_jit_and_jacobian():
    f = f_matmul(np)
    x, m = CASES[3][2]
    jitted = tg.jit(tg.jacobian(f, argnums=(0, 1), chunk_size=3))(x, m)
    _close(jitted, tg.jacobian(f, argnums=(0, 1))(x, m))
    second = tg.jacobian(tg.jacobian(lambda x: f(x, m), mode="fwd"), chunk_size=5)(x)
    _close([second], [jax.jit(jax.jacfwd(jax.jacrev(lambda x: f_matmul(jnp)(x, m))))(x)])


def test_bad_arguments():
    with pytest.raises(tg.TraceError, match="mode"):
        tg.jacobian(np.sin, mode="sideways")
    with pytest.raises(tg.TraceError, match="chunk_size"):
        tg.jacobian(np.sin, chunk_size=0)


# -- the pass itself -------------------------------------------------------------------------
def _check_batched(f, args, batched, size=4, rules=None):
    graph = tg.trace(f, *args)
    stats = {}
    bg = batch(graph, batched, size, rules=rules, stats=stats)
    stacked = [np.stack([a * (1.0 + 0.25 * i) for i in range(size)]) if k in batched else a
               for k, a in enumerate(args)]
    outs = run(bg, stacked)
    for i in range(size):
        row = run(graph, [s[i] if k in batched else s for k, s in enumerate(stacked)])
        for o, r in zip(outs, row):
            np.testing.assert_allclose(o[i], r, rtol=1e-12, atol=1e-12)
    return stats


@pytest.mark.parametrize("name,make,args", CASES, ids=IDS)
def test_batch_pass_uses_rules(name, make, args):
    for k in range(len(args)):
        stats = _check_batched(make(np), args, [k])
        assert stats.get("fallback", 0) == 0, stats


def test_batch_unbatched_outputs_are_broadcast():
    g = tg.trace(lambda x, y: (x * 2.0, np.sum(y)), np.ones(3), np.ones(2))
    bg = batch(g, [0], 5)
    outs = run(bg, [np.ones((5, 3)), np.ones(2)])
    assert outs[0].shape == (5, 3) and outs[1].shape == (5,)


def test_matmul_rank_cases():
    m3 = RNG.standard_normal((2, 4, 4))
    v = RNG.standard_normal(4)
    for f, args in [(lambda a, b: a @ b, (v, m3)), (lambda a, b: a @ b, (m3, v)),
                    (lambda a, b: a @ b, (v, v)), (lambda a, b: a @ b, (A, v)),
                    (lambda a, b: np.linalg.solve(a, b), (SPD, v)),
                    (lambda a, b: np.linalg.solve(a, b), (SPD, S))]:
        for batched in ([0], [1], [0, 1]):
            _check_batched(f, args, batched)


def test_fallback_without_a_rule_is_used_and_correct():
    table = {k: v for k, v in batch_rules().items() if k not in ("matmul", "sin")}
    stats = _check_batched(lambda x, m: np.sin(m @ x) + x[:1], (RNG.standard_normal(4), S),
                           [0, 1], size=3, rules=table)
    assert stats["fallback:matmul"] == 1 and stats["fallback:sin"] == 1
    assert stats["rule"] >= 1


def test_advanced_indices_apart_are_batched_by_the_rule():
    # advanced indices apart from each other move their axes to the front in NumPy; the
    # rule's batch-axis index joins them (it no longer falls back row by row)
    m = RNG.standard_normal((3, 4, 5))
    stats = _check_batched(lambda m: m[np.array([0, 2]), :, np.array([1, 3])], (m,), [0])
    assert stats.get("fallback", 0) == 0
    stats = _check_batched(lambda m: m[:, np.array([0, 2]), np.array([1, 3])], (m,), [0])
    assert stats.get("fallback", 0) == 0
