"""How transforms are called: keyword arguments, functools.partial, non-array objects in
non-differentiated positions, empty pytrees, constant functions, third and higher order,
and mixed forward/reverse modes; each against JAX (x64) or central differences."""
import functools

import numpy as np
import pytest

import tracegrad as tg

from oracles import finite_diff_grad, jax, jnp, rand

GRAD_RTOL = 1e-10
X = rand(3, seed=60)
V = rand(3, seed=61)


def close(actual, expected, rtol=GRAD_RTOL, dtype=np.float64):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == dtype, f"dtype {actual.dtype} != {dtype}"
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    scale = float(np.max(np.abs(expected), initial=0.0)) or 1.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale)


def model(xp, x, scale=1.0, power=2):
    return xp.sum(xp.sin(x) * x ** power) * scale


# -- keyword arguments ---------------------------------------------------------------------------
def test_keyword_arguments_at_call_time():
    f = functools.partial(model, np)
    fj = functools.partial(model, jnp)
    want = jax.grad(fj)(X, scale=2.0, power=3)
    close(tg.grad(f)(X, scale=2.0, power=3), want)
    value, g = tg.value_and_grad(f)(X, scale=2.0, power=3)
    close(value, fj(X, scale=2.0, power=3))
    close(g, want)
    close(tg.jacobian(f)(X, scale=2.0, power=3), want)
    close(tg.jacobian(f, mode="fwd")(X, scale=2.0, power=3), want)
    close(tg.hessian(f)(X, scale=2.0, power=3), jax.hessian(fj)(X, scale=2.0, power=3))
    close(tg.jit(tg.grad(f))(X, scale=2.0, power=3), want)
    # an array passed by keyword is a constant
    close(tg.grad(lambda x, w=None: np.sum(x * w))(X, w=V), V)


def test_keyword_argument_holding_an_outer_traced_value():
    """d/ds of grad_x f(x, scale=s): the keyword carries the outer tracer in."""
    f = functools.partial(model, np)
    fj = functools.partial(model, jnp)
    outer = lambda s: np.sum(tg.grad(f)(X, scale=s) * V)
    want = jax.grad(lambda s: jnp.sum(jax.grad(fj)(X, scale=s) * V))(2.0)
    close(tg.grad(outer)(2.0), want)
    close(tg.jit(tg.grad(outer))(2.0), want)


def test_differentiating_a_keyword_argument_is_refused_clearly():
    f = lambda x, scale=1.0: np.sum(x) * scale
    with pytest.raises(tg.TraceError, match=r"argnums=0 is out of range.*\(x\) are not "
                                            r"differentiated: pass .* positionally"):
        tg.grad(f)(x=X)


# -- functools.partial and callable objects ------------------------------------------------------
def test_partial_objects_as_the_function():
    base = lambda a, x, scale=1.0: np.sum(np.tanh(a * x)) * scale
    base_j = lambda a, x, scale=1.0: jnp.sum(jnp.tanh(a * x)) * scale
    p = functools.partial(base, 2.0, scale=3.0)
    pj = functools.partial(base_j, 2.0, scale=3.0)
    close(tg.grad(p)(X), jax.grad(pj)(X))
    close(tg.hessian(p)(X), jax.hessian(pj)(X))
    vec = functools.partial(lambda a, x: np.sin(a * x), 2.0)
    close(tg.jacobian(vec)(X), jax.jacobian(functools.partial(lambda a, x: jnp.sin(a * x), 2.0))(X))
    close(tg.jvp(vec, (X,), (V,))[1], 2.0 * np.cos(2.0 * X) * V)
    close(tg.vjp(vec, X)[1](V)[0], 2.0 * np.cos(2.0 * X) * V)
    close(tg.jit(tg.grad(p))(X), jax.grad(pj)(X))
    # errors name the wrapped function
    with pytest.raises(tg.TraceError, match=r"partial\(<lambda>\) to return a scalar"):
        tg.grad(vec)(X)


def test_callable_object_as_the_function():
    class Quadratic:
        def __init__(self, a):
            self.a = a

        def __call__(self, x):
            return np.sum(self.a * x * x)

    q = Quadratic(V)
    close(tg.grad(q)(X), 2 * V * X)
    close(tg.hessian(q)(X), np.diag(2 * V))
    class Double:
        def __call__(self, x):
            return 2.0 * x

    with pytest.raises(tg.TraceError, match="Double to return a scalar"):
        tg.grad(Double())(X)


# -- non-array objects in non-differentiated positions -------------------------------------------
def configured(x, name, cfg, activation, nothing):
    assert name == "tanh-model" and nothing is None
    return cfg["weight"] * np.sum(activation(x) ** cfg["power"])


def test_arbitrary_objects_in_non_differentiated_positions():
    args = ("tanh-model", {"weight": 2.0, "power": 3}, np.tanh, None)
    want = jax.grad(lambda x: 2.0 * jnp.sum(jnp.tanh(x) ** 3))(X)
    close(tg.grad(configured)(X, *args), want)
    close(tg.value_and_grad(configured)(X, *args)[1], want)
    close(tg.jacobian(configured)(X, *args), want)
    close(tg.jacobian(configured, mode="fwd")(X, *args), want)
    close(tg.hessian(configured)(X, *args),
          jax.hessian(lambda x: 2.0 * jnp.sum(jnp.tanh(x) ** 3))(X))
    # vjp/jvp differentiate every primal: other objects are closed over
    close(tg.vjp(lambda x: configured(x, *args), X)[1](1.0)[0], want)
    close(tg.jvp(lambda x: configured(x, *args), (X,), (V,))[1], want @ V)
    # jit: hashable objects are static arguments
    jitted = tg.jit(tg.grad(lambda x, name, act: configured(x, name, {"weight": 2.0, "power": 3},
                                                              act, None)),
                    static_argnums=(1, 2))
    close(jitted(X, "tanh-model", np.tanh), want)


def test_a_non_array_in_a_differentiated_position_is_refused():
    with pytest.raises(tg.TraceError, match="must be arrays, Python numbers, or tuples/lists/dicts "
                                            "of them; got str"):
        tg.grad(lambda p: np.sum(p["w"] ** 2))({"w": X, "name": "oops"})


# -- empty pytrees ----------------------------------------------------------------------------------
def test_empty_pytrees():
    f = lambda empty, x: np.sum(x ** 3)
    assert tg.grad(lambda d: 1.0)({}) == {}
    assert tg.grad(lambda t: 1.0)(()) == ()
    g = tg.grad(f, argnums=(0, 1))({}, X)
    assert g[0] == {}
    close(g[1], 3 * X ** 2)
    g = tg.grad(lambda x, e: np.sum(x * x), argnums=(0, 1))(X, ())
    assert g[1] == ()
    close(g[0], 2 * X)
    # empty leaves among a dict's entries keep their place
    g = tg.grad(lambda p: np.sum(p["w"] ** 2))({"w": X, "e": (), "n": None, "l": []})
    assert g["e"] == () and g["n"] is None and g["l"] == []
    close(g["w"], 2 * X)
    assert tg.jacobian(lambda d: np.sum(X))({}) == {}
    h = tg.hessian(f, argnums=(0, 1))({}, X)
    assert h[0] == {} and h[1][0] == {}     # JAX's structure: {} has no leaves
    close(h[1][1], np.diag(6 * X))
    out, t = tg.jvp(f, ({}, X), ({}, V))
    close(out, np.sum(X ** 3))
    close(t, np.sum(3 * X ** 2 * V))
    cts = tg.vjp(f, {}, X)[1](1.0)
    assert cts[0] == {}
    close(cts[1], 3 * X ** 2)
    g = tg.jit(tg.grad(f, argnums=(0, 1)))({}, X)
    assert g[0] == {}
    close(g[1], 3 * X ** 2)
    # an empty array is a leaf with an empty gradient
    g = tg.grad(lambda e, x: np.sum(e) + np.sum(x), argnums=(0, 1))(np.zeros((0, 2)), X)
    assert g[0].shape == (0, 2) and g[0].dtype == np.float64


# -- constant functions -------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_constant_functions_have_zero_derivatives_of_the_right_shape_and_dtype(dt):
    x = X.astype(dt)
    zeros = lambda *shape: np.zeros(shape, dt)
    close(tg.grad(lambda x: 3.0)(x), zeros(3), dtype=dt)
    close(tg.grad(lambda x: np.sum(V))(x), zeros(3), dtype=dt)
    close(tg.value_and_grad(lambda x: 3.0)(x)[1], zeros(3), dtype=dt)
    close(tg.grad(lambda x: 3.0)(x[0]), zeros(), dtype=dt)
    g = tg.grad(lambda p: 1.0)({"a": x, "b": (x[:2], dt(1.0))})
    close(g["a"], zeros(3), dtype=dt)
    close(g["b"][0], zeros(2), dtype=dt)
    close(g["b"][1], zeros(), dtype=dt)
    close(tg.jacobian(lambda x: np.ones((2, 2)))(x), np.zeros((2, 2, 3)), dtype=dt)
    close(tg.jacobian(lambda x: np.ones((2, 2)), mode="fwd")(x), np.zeros((2, 2, 3)), dtype=dt)
    close(tg.hessian(lambda x: 3.0)(x), zeros(3, 3), dtype=dt)
    out, t = tg.jvp(lambda x: np.ones(2), (x,), (x,))
    close(out, np.ones(2))
    close(t, np.zeros(2))            # the tangent of an output has the output's dtype
    close(tg.vjp(lambda x: np.ones(2), x)[1](np.ones(2))[0], zeros(3), dtype=dt)
    close(tg.jit(tg.grad(lambda x: 3.0))(x), zeros(3), dtype=dt)
    close(tg.jit(tg.hessian(lambda x: 3.0))(x), zeros(3, 3), dtype=dt)
    close(np.asarray(tg.jit(tg.grad(lambda x: 3.0), backend="jax")(x)), zeros(3), dtype=dt)
    # and the same when the argument is used, but only through an integer or a stop_gradient
    close(tg.grad(lambda x: np.sum(x > 0) * 1.0)(x), zeros(3), dtype=dt)
    close(tg.grad(lambda x: np.sum(tg.stop_gradient(x) ** 2))(x), zeros(3), dtype=dt)


def test_constant_function_with_an_integer_output_is_refused():
    with pytest.raises(tg.TraceError, match="real floating-point output.*int64"):
        tg.grad(lambda x: 3)(X)


# -- third and higher order ---------------------------------------------------------------------
def test_third_and_fourth_order_against_jax():
    f = lambda x: x ** 5 * np.sin(x)
    fj = lambda x: x ** 5 * jnp.sin(x)
    x = 0.7
    close(tg.grad(tg.grad(tg.grad(f)))(x), jax.grad(jax.grad(jax.grad(fj)))(x))
    close(tg.grad(tg.grad(tg.grad(tg.grad(f))))(x), jax.grad(jax.grad(jax.grad(jax.grad(fj))))(x))
    close(tg.jit(tg.grad(tg.grad(tg.grad(f))))(x), jax.grad(jax.grad(jax.grad(fj)))(x))


def test_jacobian_of_hessian_and_hessian_of_hessian():
    f = lambda x: np.sum(np.sin(x) * x[0]) * np.prod(x[1:])
    fj = lambda x: jnp.sum(jnp.sin(x) * x[0]) * jnp.prod(x[1:])
    t3 = tg.jacobian(tg.hessian(f))(X)
    assert t3.shape == (3, 3, 3)
    # JAX under jit: one XLA compile per reference, not one per operation
    want3 = jax.jit(jax.jacobian(jax.hessian(fj)))(X)
    close(t3, want3)
    close(tg.jacobian(tg.hessian(f), mode="fwd")(X), want3)
    close(tg.jacobian(tg.jacobian(tg.hessian(f)))(X), jax.jit(jax.hessian(jax.hessian(fj)))(X))
    # unlike jax.hessian, tg.hessian needs a scalar function (it is jacobian(grad(f)))
    with pytest.raises(tg.TraceError, match="to return a scalar"):
        tg.hessian(tg.hessian(f))(X)
    # third derivative tensor is symmetric
    close(t3, np.transpose(t3, (1, 0, 2)), 1e-12)
    close(t3, np.transpose(t3, (2, 1, 0)), 1e-12)


def test_third_order_against_finite_differences_of_the_hessian():
    f = lambda x: np.sum(np.exp(x[0] * x) * np.cos(x))
    t3 = tg.jacobian(tg.hessian(f))(X)
    for i in range(3):
        for j in range(3):
            fd = finite_diff_grad(lambda x: tg.hessian(f)(x)[i, j], (X,), 0)
            np.testing.assert_allclose(t3[i, j], fd, rtol=1e-6, atol=1e-6)


# -- mixed modes --------------------------------------------------------------------------------------
F = lambda x: np.tanh(x) * x[0] + np.sin(x * x[1])
FJ = lambda x: jnp.tanh(x) * x[0] + jnp.sin(x * x[1])
W = rand(3, seed=62)


def test_jvp_of_vjp_and_vjp_of_jvp():
    # x -> J(x)^T W, forward mode through the reverse pass
    vjp_fn = lambda x: tg.vjp(F, x)[1](W)[0]
    vjp_fj = lambda x: jax.vjp(FJ, x)[1](W)[0]
    out, t = tg.jvp(vjp_fn, (X,), (V,))
    out_j, t_j = jax.jvp(vjp_fj, (X,), (V,))
    close(out, out_j)
    close(t, t_j)
    # x -> J(x) V, reverse mode through the forward pass
    jvp_fn = lambda x: tg.jvp(F, (x,), (V,))[1]
    jvp_fj = lambda x: jax.jvp(FJ, (x,), (V,))[1]
    out, pull = tg.vjp(jvp_fn, X)
    out_j, pull_j = jax.vjp(jvp_fj, X)
    close(out, out_j)
    close(pull(W)[0], pull_j(W)[0])
    # jvp of jvp: a second directional derivative
    close(tg.jvp(jvp_fn, (X,), (W,))[1], jax.jvp(jvp_fj, (X,), (W,))[1])
    # vjp of vjp, in the cotangent's own argument (linear: the Jacobian itself)
    pull_in_w = lambda w: tg.vjp(F, X)[1](w)[0]
    close(tg.vjp(pull_in_w, W)[1](V)[0], jax.jacobian(FJ)(X) @ V)


def test_jvp_of_grad_and_grad_of_jvp():
    s = lambda x: np.sum(F(x) * W)
    sj = lambda x: jnp.sum(FJ(x) * W)
    hv = jax.hessian(sj)(X) @ V
    close(tg.jvp(tg.grad(s), (X,), (V,))[1], hv)
    close(tg.grad(lambda x: tg.jvp(s, (x,), (V,))[1])(X), hv)
    close(tg.jacobian(lambda x: tg.jvp(F, (x,), (V,))[1])(X),
          jax.jacobian(lambda x: jax.jvp(FJ, (x,), (V,))[1])(X))
    close(tg.jacobian(lambda x: tg.jvp(F, (x,), (V,))[1], mode="fwd")(X),
          jax.jacobian(lambda x: jax.jvp(FJ, (x,), (V,))[1])(X))
    # and under jit
    close(tg.jit(lambda x: tg.jvp(tg.grad(s), (x,), (V,))[1])(X), hv)


def test_mixed_modes_keep_float32():
    x, v, w = X.astype(np.float32), V.astype(np.float32), W.astype(np.float32)
    vjp_fn = lambda x: tg.vjp(F, x)[1](w)[0]
    out, t = tg.jvp(vjp_fn, (x,), (v,))
    assert out.dtype == t.dtype == np.float32
    jvp_fn = lambda x: tg.jvp(F, (x,), (v,))[1]
    assert tg.vjp(jvp_fn, x)[1](w)[0].dtype == np.float32
    assert tg.grad(lambda x: np.sum(jvp_fn(x)))(x).dtype == np.float32
    assert tg.jvp(tg.grad(lambda x: np.sum(F(x))), (x,), (v,))[1].dtype == np.float32
    assert tg.grad(tg.grad(tg.grad(lambda s: s ** 4 * np.sin(s))))(np.float32(0.5)).dtype == \
        np.float32
