"""Transforms composed with each other, with pytrees, control flow and custom rules."""
import networkx as nx
import numpy as np
import pytest

import tracegrad as tg

from oracles import GRAD_RTOL, assert_close, check, jax, jnp, rand

X = rand(4, seed=40)
U = rand(4, seed=41)
W = rand(3, 4, seed=42)


def f_xp(xp, x):
    """A scalar function with cross terms, so Hessians are dense."""
    return xp.sum(xp.sin(x) * x[0]) + xp.prod(x[1:3]) ** 2 + xp.log(1.0 + xp.sum(x * x))


f = lambda x: f_xp(np, x)
f_jax = lambda x: f_xp(jnp, x)


# -- higher derivatives -------------------------------------------------------------------
def test_grad_of_grad_and_third_derivative():
    poly = lambda x: 3.0 * x ** 4 - 2.0 * x ** 3 + np.sin(x)
    x = 0.7
    assert_close(tg.grad(poly)(x), 12 * x ** 3 - 6 * x ** 2 + np.cos(x), GRAD_RTOL)
    assert_close(tg.grad(tg.grad(poly))(x), 36 * x ** 2 - 12 * x - np.sin(x), GRAD_RTOL)
    assert_close(tg.grad(tg.grad(tg.grad(poly)))(x), 72 * x - 12 - np.cos(x), GRAD_RTOL)
    fourth = tg.grad(tg.grad(tg.grad(tg.grad(poly))))(x)
    assert_close(fourth, 72 + np.sin(x), GRAD_RTOL)


def test_hessian_is_jacobian_of_grad_and_matches_jax():
    h = tg.hessian(f)(X)
    assert h.shape == (4, 4)
    assert_close(h, tg.jacobian(tg.grad(f))(X), 1e-14)
    assert_close(h, jax.hessian(f_jax)(X), GRAD_RTOL)
    assert_close(h, h.T, 1e-12)


def test_jacobian_of_jacobian():
    g = lambda x: np.tanh(W @ x) * x[0]
    jj = tg.jacobian(tg.jacobian(g))(X)
    assert jj.shape == (3, 4, 4)
    assert_close(jj, jax.jacobian(jax.jacobian(lambda x: jnp.tanh(W @ x) * x[0]))(X), GRAD_RTOL)


def test_jvp_and_vjp_agree():
    g = lambda x: np.tanh(W @ x) * np.exp(x[1])
    v = rand(3, seed=43)
    out, jv = tg.jvp(g, (X,), (U,))
    out2, pullback = tg.vjp(g, X)
    (vj,) = pullback(v)
    assert_close(out, out2, 1e-15)
    assert_close(np.dot(v, jv), np.dot(vj, U), 1e-12)            # <v, J u> == <J^T v, u>
    _, jv_jax = jax.jvp(lambda x: jnp.tanh(W @ x) * jnp.exp(x[1]), (X,), (U,))
    assert_close(jv, jv_jax, GRAD_RTOL)
    # and both agree with the full Jacobian
    jac = tg.jacobian(g)(X)
    assert_close(jv, jac @ U, 1e-12)
    assert_close(vj, v @ jac, 1e-12)


def test_hessian_vector_products_forward_over_reverse_and_reverse_over_forward():
    hv = jax.hessian(f_jax)(X) @ U
    _, fwd_rev = tg.jvp(tg.grad(f), (X,), (U,))
    assert_close(fwd_rev, hv, GRAD_RTOL)
    rev_fwd = tg.grad(lambda x: tg.jvp(f, (x,), (U,))[1])(X)
    assert_close(rev_fwd, hv, GRAD_RTOL)
    rev_rev = tg.grad(lambda x: np.dot(tg.grad(f)(x), U))(X)
    assert_close(rev_rev, hv, GRAD_RTOL)


def test_adjoint_of_adjoint_gives_second_derivatives_on_the_graph():
    g = tg.trace(f, X)
    a = tg.passes.adjoint(g)
    assert len(a.inputs) == 2 and len(a.outputs) == 2
    value, grad = a(X, 1.0)
    assert_close(value, f(X), 1e-14)
    assert_close(grad, jax.grad(f_jax)(X), GRAD_RTOL)

    aa = tg.passes.adjoint(a)
    # inputs: x, ct_f, then one cotangent per output of a (value, grad)
    assert len(aa.inputs) == 4 and len(aa.outputs) == 4
    outs = aa(X, 1.0, 0.0, U)
    assert_close(outs[0], f(X), 1e-14)
    assert_close(outs[1], grad, 1e-14)
    assert_close(outs[2], jax.hessian(f_jax)(X) @ U, GRAD_RTOL)   # d<grad, u>/dx = H u
    assert_close(outs[3], np.dot(grad, U), 1e-12)                  # d<grad, u>/dct_f
    # the passes left their arguments alone
    assert len(tg.passes.adjoint(g).nx) == len(a.nx)
    assert g.outputs == tg.trace(f, X).outputs


# -- pytrees and has_aux through compositions -------------------------------------------------
def test_hessian_of_dict_argument_matches_jax():
    params = {"a": X[:2], "b": np.array(0.3)}
    loss_xp = lambda xp, p: xp.sum(xp.sin(p["a"]) * p["b"]) + p["b"] ** 3 * xp.sum(p["a"] ** 2)
    h = tg.hessian(lambda p: loss_xp(np, p))(params)
    hj = jax.jit(jax.hessian(lambda p: loss_xp(jnp, p)))(params)
    assert set(h) == {"a", "b"} and set(h["a"]) == {"a", "b"}
    assert h["a"]["b"].shape == (2,) and h["b"]["a"].shape == (2,) and h["b"]["b"].shape == ()
    assert_close(h, hj, GRAD_RTOL)


def test_grad_of_tuple_argnums_inside_jacobian():
    loss = lambda w, b: np.sum(np.tanh(W @ w + b) ** 2)
    j = tg.jacobian(lambda w: tg.grad(loss, argnums=(0, 1))(w, 0.5)[1])(X)
    jj = jax.jacobian(lambda w: jax.grad(lambda w, b: jnp.sum(jnp.tanh(W @ w + b) ** 2),
                                         argnums=(0, 1))(w, 0.5)[1])(X)
    assert_close(j, jj, GRAD_RTOL)


def test_has_aux_inside_another_transform():
    def loss(x):
        y = np.sin(x)
        return np.sum(y ** 2), {"y": y}

    def outer(x):
        g, aux = tg.grad(loss, has_aux=True)(x)
        return np.sum(g * aux["y"])        # aux is traced by the outer transform
    gj = jax.grad(lambda x: jnp.sum(jax.grad(lambda x: jnp.sum(jnp.sin(x) ** 2))(x)
                                    * jnp.sin(x)))(X)
    assert_close(tg.grad(outer)(X), gj, GRAD_RTOL)
    jac, aux = tg.jacobian(lambda x: (np.sin(x) * 2.0, np.cos(x)), has_aux=True)(X)
    assert_close(jac, np.diag(2 * np.cos(X)), GRAD_RTOL)
    assert_close(aux, np.cos(X), 1e-15)


def test_decorator_forms():
    @tg.grad
    def g1(x):
        return np.sum(x ** 2)

    @tg.grad(argnums=1)
    def g2(x, y):
        return np.sum(x * y ** 2)

    @tg.value_and_grad(argnums=(0, 1))
    def vg(x, y):
        return np.sum(x * y)

    @tg.hessian
    def h(x):
        return np.sum(x ** 3)

    @tg.jacobian(argnums=0)
    def j(x):
        return x ** 2

    assert_close(g1(X), 2 * X, 1e-15)
    assert_close(g2(X, U), 2 * X * U, 1e-15)
    value, (gx, gy) = vg(X, U)
    assert_close(value, np.sum(X * U), 1e-15)
    assert_close((gx, gy), (U, X), 1e-15)
    assert_close(h(X), np.diag(6 * X), 1e-14)
    assert_close(j(X), np.diag(2 * X), 1e-15)


# -- Python control flow on concrete traced values -----------------------------------------
def branchy(x):
    if np.sum(x) > 0:
        return np.sum(x ** 2)
    return np.sum(x ** 3)


def test_if_records_a_guard_and_grad_follows_the_branch_taken():
    pos, neg = np.abs(X) + 0.1, -np.abs(X) - 0.1
    assert_close(tg.grad(branchy)(pos), 2 * pos, GRAD_RTOL)
    assert_close(tg.grad(branchy)(neg), 3 * neg ** 2, GRAD_RTOL)   # each call retraces

    g = tg.trace(branchy, pos)
    assert len(g.guards) == 1
    node, expected = g.guards[0]
    assert g.node(node)["op"] == "greater" and g.node(node)["dtype"] == "bool"
    assert bool(expected) is True
    assert "guard %" in str(g)
    assert_close(g(pos * 2), np.sum((pos * 2) ** 2), 1e-14)        # same branch: fine
    with pytest.raises(tg.TraceError, match="different branch") as info:
        g(neg)                                   # other branch: an error, never a wrong number
    assert "test_composition.py:" in str(info.value)


def test_guards_survive_differentiation_and_pruning():
    pos, neg = np.abs(X) + 0.1, -np.abs(X) - 0.1
    for graph in (tg.trace(tg.grad(branchy), pos),
                  tg.passes.prune(tg.passes.adjoint(tg.trace(branchy, pos))),
                  tg.trace(tg.hessian(branchy), pos)):
        assert graph.guards, str(graph)
        args = (neg,) if len(graph.inputs) == 1 else (neg, 1.0)
        with pytest.raises(tg.TraceError, match="different branch"):
            graph(*args)


def test_while_and_for_loops():
    def doubling(x):
        y = x
        steps = 0
        while np.max(y) < 10.0:
            y = y * 2.0
            steps += 1
        for _ in range(steps):       # a Python loop over a concrete count
            y = y + x
        return np.sum(y)

    x = np.array([1.0, 3.0])         # 2 doublings: y = 4x, then + 2x
    assert_close(tg.grad(doubling)(x), np.full(2, 6.0), GRAD_RTOL)
    g = tg.trace(doubling, x)
    assert [bool(v) for _, v in g.guards] == [True, True, False]
    assert_close(g(x * 1.5), np.sum(6 * x * 1.5), 1e-14)
    with pytest.raises(tg.TraceError, match="different branch"):
        g(x * 4.0)                    # one doubling fewer


def test_for_over_traced_rows_and_traced_index():
    def f_rows(m):
        total = 0.0
        for i, row in enumerate(m):
            total = total + row[i % 4] * np.sum(row)
        best = np.argmax(m[:, 0])     # a traced integer used as an index
        return total + m[best, 1]
    g = tg.grad(f_rows)(W)
    gj = jax.grad(lambda m: sum(row[i % 4] * jnp.sum(row) for i, row in enumerate(m))
                  + m[jnp.argmax(m[:, 0]), 1])(W)
    assert_close(g, gj, GRAD_RTOL)


def test_boolean_mask_guard():
    g = tg.trace(lambda x: np.sum(x[x > 0] ** 2), X)
    assert g.guards
    flipped = X * np.array([1.0, -1.0, 1.0, -1.0])
    if np.array_equal(flipped > 0, X > 0):
        flipped = -X
    with pytest.raises(tg.TraceError, match="different branch"):
        g(flipped)


# -- indexed assignment under composition ------------------------------------------------
def test_indexed_assignment_second_order():
    def f_set(x):
        z = np.zeros_like(x)          # a traced array: np.zeros(4) could not hold tracers
        z[0] = x[0] * x[1]
        z[1:3] = np.sin(x[2:4])
        z[2:] += x[:2] ** 3
        return np.sum(z * z)

    def f_set_jax(x):
        z = jnp.zeros_like(x).at[0].set(x[0] * x[1]).at[1:3].set(jnp.sin(x[2:4]))
        return jnp.sum(z.at[2:].add(x[:2] ** 3) ** 2)

    assert_close(tg.grad(f_set)(X), jax.grad(f_set_jax)(X), GRAD_RTOL)
    assert_close(tg.hessian(f_set)(X), jax.hessian(f_set_jax)(X), GRAD_RTOL)
    assert_close(tg.grad(tg.grad(lambda t: f_set(X * t)))(0.8),
                 jax.grad(jax.grad(lambda t: f_set_jax(X * t)))(0.8), GRAD_RTOL)


# -- closures over values traced by an outer transform -------------------------------------
def test_closure_over_outer_traced_value():
    assert tg.grad(lambda x: tg.grad(lambda y: x * y * y)(x))(3.0) == 12.0   # d/dx 2x^2
    nested = tg.grad(lambda x: tg.grad(lambda y: np.sin(x * y))(2.0))(0.5)
    # d/dx [x cos(2x)] = cos(2x) - 2x sin(2x)
    assert_close(nested, np.cos(1.0) - np.sin(1.0), GRAD_RTOL)

    def outer(w):
        inner_loss = lambda v: np.sum(np.tanh(W @ (v * w)) ** 2)
        return np.sum(tg.grad(inner_loss)(U) * w)
    gj = jax.grad(lambda w: jnp.sum(jax.grad(
        lambda v: jnp.sum(jnp.tanh(W @ (v * w)) ** 2))(U) * w))(X)
    assert_close(tg.grad(outer)(X), gj, GRAD_RTOL)
    # jvp and jacobian close over outer values too
    jv = tg.grad(lambda a: tg.jvp(lambda x: np.sin(a * x), (1.0,), (1.0,))[1])(0.3)
    assert_close(jv, np.cos(0.3) - 0.3 * np.sin(0.3), GRAD_RTOL)
    jac = tg.grad(lambda a: np.sum(tg.jacobian(lambda x: a * x ** 2)(U)))(2.0)
    assert_close(jac, np.sum(2 * U), GRAD_RTOL)


# -- custom_vjp ---------------------------------------------------------------------------------
def _make_grad_coeff():
    @tg.custom_vjp
    def grad_coeff(x, coeff):
        return x
    grad_coeff.defvjp(lambda x, coeff: (x, coeff), lambda coeff, g: (coeff * g, None))
    return grad_coeff


def test_custom_vjp_scales_the_gradient():
    gc = _make_grad_coeff()
    assert_close(tg.grad(lambda x: gc(x, -0.1) ** 2)(2.0), -0.4, GRAD_RTOL)
    # the rule applies per use, inside vectors and with other terms around it
    g = tg.grad(lambda x: np.sum(gc(x, 3.0) * x))(X)
    assert_close(g, 3.0 * X + X, GRAD_RTOL)


def test_custom_vjp_with_traced_residuals():
    @tg.custom_vjp
    def safe_log1pexp(x):
        return np.log1p(np.exp(x))

    def fwd(x):
        e = np.exp(x)
        return np.log1p(e), (e, x)            # two traced residuals

    def bwd(res, g):
        e, _ = res
        return (g * e / (1.0 + e),)

    safe_log1pexp.defvjp(fwd, bwd)
    sig = 1.0 / (1.0 + np.exp(-X))
    assert_close(tg.grad(lambda x: np.sum(safe_log1pexp(x)))(X), sig, GRAD_RTOL)
    # second order differentiates the bwd rule itself
    assert_close(tg.hessian(lambda x: np.sum(safe_log1pexp(x)))(X), np.diag(sig * (1 - sig)),
                 GRAD_RTOL)


def test_custom_vjp_pytree_args_and_clipped_gradient():
    @tg.custom_vjp
    def clip_grad(p):
        return p["a"] * p["b"]

    def fwd(p):
        return p["a"] * p["b"], p

    def bwd(p, g):
        return ({"a": np.clip(g * p["b"], -0.1, 0.1), "b": g * p["a"]},)

    clip_grad.defvjp(fwd, bwd)
    p = {"a": X, "b": U}
    g = tg.grad(lambda p: np.sum(clip_grad(p)))(p)
    assert_close(g["a"], np.clip(U, -0.1, 0.1), GRAD_RTOL)
    assert_close(g["b"], X, GRAD_RTOL)


# -- stop_gradient ------------------------------------------------------------------------------
def test_stop_gradient():
    assert_close(tg.grad(lambda x: np.sum(x * tg.stop_gradient(x)))(X), X, GRAD_RTOL)
    assert_close(tg.hessian(lambda x: np.sum(x ** 2 * tg.stop_gradient(x)))(X),
                 np.diag(2 * X), GRAD_RTOL)
    # a pytree, and the value is unchanged
    p = tg.stop_gradient({"a": X, "b": 2.0})
    assert p["a"] is X and p["b"] == 2.0
    g = tg.grad(lambda p: np.sum(tg.stop_gradient(p)["a"] * p["a"]))({"a": X})
    assert_close(g["a"], X, GRAD_RTOL)
    # nothing at all flows: the gradient is exactly zero
    assert np.all(tg.grad(lambda x: np.sum(tg.stop_gradient(x) ** 2))(X) == 0)


# -- the traced gradient graph holds only what its outputs use ----------------------------------
DERIVATIVES = {
    "grad": (lambda: tg.grad(f), X),
    "hessian": (lambda: tg.hessian(f), X),
    "grad_grad": (lambda: tg.grad(tg.grad(lambda t: f(X * t))), 0.5),
    "value_and_grad": (lambda: tg.value_and_grad(f), X),
    "jacobian": (lambda: tg.jacobian(lambda x: np.sin(W @ x) * x[0]), X),
}


@pytest.mark.parametrize("name", sorted(DERIVATIVES))
def test_traced_derivative_has_no_unused_node(name):
    make, arg = DERIVATIVES[name]
    graph = tg.trace(make(), arg)
    pruned = tg.passes.prune(graph)
    assert len(pruned) == len(graph), f"prune dropped nodes from:\n{graph}"
    live = set(graph.outputs) | set(graph.inputs)
    for o in graph.outputs:
        live |= nx.ancestors(graph.nx, o)
    assert set(graph) == live, f"unused nodes {sorted(set(graph) - live)} in:\n{graph}"


# -- whole programs, written once for NumPy and JAX ----------------------------------------------
def mlp_loss(xp, params, x, labels):
    h = x
    for w, b in params[:-1]:
        h = xp.maximum(h @ w + b, 0.0)
    w, b = params[-1]
    logits = h @ w + b
    m = xp.max(logits, axis=1, keepdims=True)          # a stable logsumexp
    lse = m[:, 0] + xp.log(xp.sum(xp.exp(logits - m), axis=1))
    return xp.mean(lse - logits[xp.arange(len(labels)), labels])


def attention(xp, q, k, v):
    s = q @ k.T / xp.sqrt(q.shape[-1])
    s = s - xp.max(s, axis=-1, keepdims=True)
    p = xp.exp(s) / xp.sum(xp.exp(s), axis=-1, keepdims=True)
    return p @ v


def layer_norm(xp, x, g):
    mu = xp.mean(x, axis=-1, keepdims=True)
    return g * (x - mu) / xp.sqrt(xp.var(x, axis=-1, keepdims=True) + 1e-5)


def conv1d(xp, x, k):
    n = x.shape[0] - k.shape[0] + 1
    return xp.stack([xp.sum(x[i:i + k.shape[0]] * k) for i in range(n)])


def logistic_regression(xp, w, x, y):
    z = x @ w
    return xp.sum(xp.logaddexp(0.0, z) - y * z) + 0.5 * xp.sum(w * w)


MLP_PARAMS = [(rand(4, 8, seed=1), rand(8, seed=2)), (rand(8, 3, seed=3), rand(3, seed=4))]
BATCH = rand(5, 4, seed=5)
PROGRAMS = {
    "mlp_params": (mlp_loss, (MLP_PARAMS, BATCH, np.array([0, 2, 1, 1, 0])), dict(argnums=0)),
    "mlp_inputs": (mlp_loss, (MLP_PARAMS, BATCH, np.array([0, 2, 1, 1, 0])),
                   dict(argnums=1, hessian=True)),
    "attention": (attention, (rand(3, 4, seed=8), rand(5, 4, seed=9), rand(5, 2, seed=10)),
                  dict(argnums=(0, 1, 2))),
    "attention_hessian": (attention, (rand(3, 4, seed=8), rand(5, 4, seed=9), rand(5, 2, seed=10)),
                          dict(argnums=1, hessian=True)),
    "layer_norm": (layer_norm, (rand(3, 6, seed=13), rand(6, seed=14)), dict(argnums=(0, 1))),
    "conv1d": (conv1d, (rand(8, seed=11), rand(3, seed=12)), dict(argnums=(0, 1))),
    "logistic_regression": (logistic_regression,
                            (rand(4, seed=6), BATCH, (rand(5, seed=7) > 0).astype(float)),
                            dict(hessian=True, fd=True)),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_whole_program(name):
    fn, args, kw = PROGRAMS[name]
    check(fn, *args, **kw)


def test_newton_iteration_differentiates_through_the_loop_it_ran():
    def newton_sqrt(a):
        y = a
        while np.abs(y * y - a) > 1e-12:
            y = 0.5 * (y + a / y)
        return y

    assert_close(tg.grad(newton_sqrt)(2.0), 0.5 / np.sqrt(2.0), GRAD_RTOL)
    assert_close(tg.grad(tg.grad(newton_sqrt))(2.0), -0.25 * 2.0 ** -1.5, 1e-8)
