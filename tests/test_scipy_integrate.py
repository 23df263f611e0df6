"""``tracegrad.scipy.integrate.odeint``: values are ``scipy.integrate.odeint``'s; gradients
(the adjoint system integrated backwards), tangents (the sensitivity system integrated
forwards) and second derivatives agree with central finite differences of SciPy's solve at
a tight tolerance and with JAX's ``jax.experimental.ode.odeint`` (x64), to the solver's
tolerance; at a loose one, with autograd's numbers (the same adjoint)."""
import numpy as np
import pytest
from conftest import assert_close
from scipy.integrate import odeint as scipy_odeint

import tracegrad as tg
from tracegrad.scipy.integrate import odeint

T = np.linspace(0.0, 2.0, 6)
W = np.random.default_rng(1502).standard_normal((6, 2))
TIGHT = dict(rtol=1e-10, atol=1e-10)


def oscillator(y, t, k, c):
    return np.array([y[1], -k * y[0] - c * y[1]]) + np.array([0.0, 0.5]) * np.sin(t)


def jax_oscillator(y, t, k, c):
    jnp = pytest.importorskip("jax").numpy
    return jnp.array([y[1], -k * y[0] - c * y[1]]) + jnp.array([0.0, 0.5]) * jnp.sin(t)


def lotka(y, t, p):
    return np.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])


def _fd(f, xs, h=1e-5):
    out = []
    for i, x in enumerate(xs):
        x = np.asarray(x, dtype=float)
        g = np.zeros(x.shape)
        for j in np.ndindex(x.shape):
            e = np.zeros(x.shape)
            e[j] = h
            args = list(xs)
            args[i] = x + e
            plus = f(*args)
            args[i] = x - e
            g[j] = (plus - f(*args)) / (2 * h)
        out.append(g)
    return out


def test_values_are_scipys():
    y0 = np.array([1.0, 0.0])
    assert_close(odeint(oscillator, y0, T, 2.0, 0.3),
                 scipy_odeint(oscillator, y0, T, args=(2.0, 0.3)), 1e-15, "JAX-style *args")
    assert_close(odeint(oscillator, y0, T, args=(2.0, 0.3), rtol=1e-10, atol=1e-10),
                 scipy_odeint(oscillator, y0, T, args=(2.0, 0.3), rtol=1e-10, atol=1e-10), 1e-15,
                 "SciPy-style args=")
    # SciPy's positional args: one tuple in args' place holds the extra arguments
    assert_close(odeint(oscillator, y0, T, (2.0, 0.3)),
                 scipy_odeint(oscillator, y0, T, (2.0, 0.3)), 1e-15, "SciPy positional tuple")
    g = tg.grad(lambda k: np.sum(odeint(oscillator, y0, T, (k, 0.3))))(2.0)
    g_kw = tg.grad(lambda k: np.sum(odeint(oscillator, y0, T, args=(k, 0.3))))(2.0)
    assert g == g_kw


@pytest.mark.parametrize("backend", [None, "numpy", "jax"])
def test_adjoint_gradients_match_finite_differences(backend):
    def loss(y0, k, c):
        return np.sum(W * odeint(oscillator, y0, T, k, c, rtol=1e-10, atol=1e-10))

    def ref(y0, k, c):
        return np.sum(W * scipy_odeint(oscillator, y0, T, args=(k, c), rtol=1e-12, atol=1e-12))

    xs = (np.array([1.0, -0.5]), 2.0, np.array(0.3))
    grad = tg.grad(loss, argnums=(0, 1, 2))
    if backend is not None:
        grad = tg.jit(grad, backend=backend)
    got = grad(*xs)
    for g, d in zip(got, _fd(ref, xs)):
        assert_close(np.asarray(g, dtype=float), d, 1e-6, "vs finite differences", floor=1.0)


def test_parameter_vector_and_matrix_state():
    p = np.array([1.0, 0.4, 0.3, 0.8])
    y0 = np.array([1.2, 0.7])

    def loss(y0, p):
        ys = odeint(lotka, y0, T, p, rtol=1e-10, atol=1e-10)
        return np.sum(np.log(ys[-1])) + np.sum(ys[2])

    def ref(y0, p):
        ys = scipy_odeint(lotka, y0, T, args=(p,), rtol=1e-12, atol=1e-12)
        return np.sum(np.log(ys[-1])) + np.sum(ys[2])

    got = tg.grad(loss, argnums=(0, 1))(y0, p)
    for g, d in zip(got, _fd(ref, (y0, p))):
        assert_close(g, d, 1e-6, "vs finite differences", floor=1.0)

    a = np.array([[-0.5, 0.3], [0.1, -0.2]])

    def matrix(y, t, a):          # a 2x2 state: y' = a @ y
        return a @ y

    f = lambda a: np.sum(odeint(matrix, np.eye(2), T, a, rtol=1e-10, atol=1e-10)[-1])  # noqa: E731
    ref_m = lambda a: np.sum(scipy_odeint(  # noqa: E731
        lambda y, t: (a @ y.reshape(2, 2)).ravel(), np.eye(2).ravel(), T, rtol=1e-12,
        atol=1e-12)[-1])
    assert_close(tg.grad(f)(a), _fd(ref_m, (a,))[0], 1e-6, "matrix state", floor=1.0)


def test_gradient_with_respect_to_the_times():
    y0 = np.array([1.0, 0.0])
    loss = lambda t: np.sum(W * odeint(oscillator, y0, t, 2.0, 0.3, rtol=1e-10,  # noqa: E731
                                       atol=1e-10))
    ref = lambda t: np.sum(W * scipy_odeint(oscillator, y0, t, args=(2.0, 0.3),  # noqa: E731
                                            rtol=1e-12, atol=1e-12))
    assert_close(tg.grad(loss)(T), _fd(ref, (T,))[0], 1e-6, "vs finite differences", floor=1.0)


# -- pytrees ---------------------------------------------------------------------------------
def mlp(y, t, params):          # autograd's examples/ode_net.py: args = a list of (W, b)
    for w, b in params:
        out = np.dot(y, w) + b
        y = np.tanh(out)
    return out


LAYERS = [(0.5 * W[:2], np.array([0.1, -0.2])), (0.5 * W[2:4].T, np.array([0.05, 0.0]))]


def _flat_mlp(y, t, *leaves):   # the same system, for SciPy: args as loose arrays
    return mlp(y, t, [(leaves[0], leaves[1]), (leaves[2], leaves[3])])


def _leaves(params):
    return [x for layer in params for x in layer]


def test_pytree_arguments():
    y0 = np.array([1.0, -0.5])
    got = odeint(mlp, y0, T, LAYERS, **TIGHT)
    want = scipy_odeint(_flat_mlp, y0, T, args=tuple(_leaves(LAYERS)), **TIGHT)
    assert_close(got, want, 1e-15, "values: SciPy's")

    def loss(params, y0):
        return np.sum(W * odeint(mlp, y0, T, params, **TIGHT))

    g_params, g_y0 = tg.grad(loss, argnums=(0, 1))(LAYERS, y0)
    assert isinstance(g_params, list) and all(isinstance(p, tuple) for p in g_params)

    def ref(y0, *leaves):
        return np.sum(W * scipy_odeint(_flat_mlp, y0, T, args=leaves, rtol=1e-12, atol=1e-12))

    want = _fd(ref, [y0] + _leaves(LAYERS))
    assert_close(g_y0, want[0], 1e-6, "y0 vs finite differences", floor=1.0)
    for g, d in zip(_leaves(g_params), want[1:]):
        assert_close(g, d, 1e-6, "a layer vs finite differences", floor=1.0)


def test_pytree_state_and_arguments_against_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from jax.experimental.ode import odeint as jax_odeint

    def rhs(state, t, params):      # a dict state, a dict of parameters
        x, v = state["x"], state["v"]
        return {"x": v, "v": -params["k"] * x - params["c"] * v * np.ones(2)}

    def jrhs(state, t, params):
        x, v = state["x"], state["v"]
        return {"x": v, "v": -params["k"] * x - params["c"] * v * jnp.ones(2)}

    state = {"x": np.array([1.0, 0.2]), "v": np.array([0.0, -0.3])}
    params = {"k": np.array([2.0, 1.5]), "c": np.array(0.3)}
    w = {"x": W[:4], "v": W[2:]}

    got = odeint(rhs, state, T[:4], params, **TIGHT)
    want = jax_odeint(jrhs, state, T[:4], params, **TIGHT)
    assert set(got) == {"x", "v"} and got["x"].shape == (4, 2)
    for key in got:
        assert_close(got[key], np.asarray(want[key]), 1e-8, f"values of {key} vs JAX")

    def loss(state, params):
        ys = odeint(rhs, state, T[:4], params, **TIGHT)
        return np.sum(w["x"] * ys["x"]) + np.sum(w["v"] * ys["v"] ** 2)

    def jloss(state, params):
        ys = jax_odeint(jrhs, state, T[:4], params, **TIGHT)
        return jnp.sum(w["x"] * ys["x"]) + jnp.sum(w["v"] * ys["v"] ** 2)

    got = tg.grad(loss, argnums=(0, 1))(state, params)
    want = jax.jit(jax.grad(jloss, argnums=(0, 1)))(state, params)
    for g, j in zip(tg.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert_close(g, np.asarray(j), 1e-7, "gradients vs JAX", floor=1.0)


def test_the_numbers_are_autograds():
    """autograd's odeint (its adjoint, the same augmented state) at a loose tolerance: the
    same numbers, not only the same derivative to the solver's tolerance."""
    ag = pytest.importorskip("autograd")
    from autograd.builtins import tuple as ag_tuple
    from autograd.scipy.integrate import odeint as ag_odeint
    y0 = np.array([1.0, -0.5])

    def loss(params, y0, t):
        return np.sum(np.abs(odeint(mlp, y0, t, params, rtol=0.01) - W))

    def ag_mlp(y, t, params):
        for w, b in params:
            out = ag.numpy.dot(y, w) + b
            y = ag.numpy.tanh(out)
        return out

    def ag_loss(params, y0, t):
        return ag.numpy.sum(ag.numpy.abs(ag_odeint(ag_mlp, y0, t, ag_tuple((params,)), rtol=0.01) - W))

    got = tg.grad(loss, argnums=(0, 1, 2))(LAYERS, y0, T)
    want = ag.grad(ag_loss, argnum=(0, 1, 2))(LAYERS, y0, T)
    for g, a in zip(tg.tree_util.tree_leaves(got), tg.tree_util.tree_leaves(want)):
        assert_close(g, a, 1e-9, "vs autograd")


# -- forward mode and second derivatives -----------------------------------------------------
def test_forward_mode_matches_finite_differences_and_jax():
    jax = pytest.importorskip("jax")
    from jax.experimental.ode import odeint as jax_odeint
    y0, k, c = np.array([1.0, -0.5]), 2.0, 0.3
    dy0, dk, dc, dt = np.array([0.3, 1.0]), 1.0, 0.5, np.array([0.1, -0.2, 0.3, 0.5, 0.0, 1.0])

    def f(y0, t, k, c):
        return odeint(oscillator, y0, t, k, c, **TIGHT)

    primal, tangent = tg.jvp(f, (y0, T, k, c), (dy0, dt, dk, dc))
    assert_close(primal, scipy_odeint(oscillator, y0, T, args=(k, c), **TIGHT), 1e-15, "primal")
    h = 1e-5
    ref = lambda s: scipy_odeint(oscillator, y0 + s * dy0, T + s * dt,  # noqa: E731
                                 args=(k + s * dk, c + s * dc), rtol=1e-12, atol=1e-12)
    assert_close(tangent, (ref(h) - ref(-h)) / (2 * h), 1e-6, "vs finite differences", floor=1.0)

    def jf(y0, t, k, c):    # JAX's odeint has no forward mode: its Jacobian by reverse mode
        return jax_odeint(jax_oscillator, y0, t, k, c, **TIGHT)

    jac = jax.jit(jax.jacrev(jf, argnums=(0, 1, 2, 3)))(y0, T, k, c)
    want = sum(np.tensordot(np.asarray(j), d, axes=np.ndim(d)) for j, d in
               zip(jac, (dy0, dt, dk, dc)))
    assert_close(tangent, want, 1e-7, "vs JAX", floor=1.0)


def test_forward_mode_through_pytrees_and_jit():
    y0 = np.array([1.0, -0.5])
    dlayers = [(np.ones_like(w), np.zeros_like(b)) for w, b in LAYERS]
    f = lambda p: odeint(mlp, y0, T[:3], p, **TIGHT)  # noqa: E731
    _, tangent = tg.jvp(f, (LAYERS,), (dlayers,))
    h = 1e-5
    moved = lambda s: scipy_odeint(  # noqa: E731
        _flat_mlp, y0, T[:3], args=tuple(x + s * d for x, d in zip(_leaves(LAYERS),
                                                                  _leaves(dlayers))),
        rtol=1e-12, atol=1e-12)
    assert_close(tangent, (moved(h) - moved(-h)) / (2 * h), 1e-6, "vs finite differences",
                 floor=1.0)
    for backend in ("numpy", "jax"):
        got = tg.jit(lambda p, d: tg.jvp(f, (p,), (d,))[1], backend=backend)(LAYERS, dlayers)
        assert_close(got, tangent, 1e-12, backend)


def logistic(y, t, r, k):
    return r * y * (1.0 - y / k)


def _logistic_closed_form(xp, x, t):
    """The solution of ``logistic`` from ``y(t[0]) = x[:2]`` with ``r, k = x[2], x[3]``."""
    y0, r, k = x[:2], x[2], x[3]
    e = xp.exp(r * (t - t[0]))[:, None]
    return k * y0 * e / (k + y0 * (e - 1.0))


def test_second_derivatives():
    """Reverse over reverse (``tg.hessian``, grad of grad), forward over reverse and
    reverse over forward, with respect to the state, the arguments and the times: against
    JAX's derivatives of the logistic equation's closed-form solution (JAX's own odeint
    has no forward mode and compiles its second derivatives for many seconds) and central
    differences of the gradient."""
    jax = pytest.importorskip("jax")
    x = np.array([0.5, 2.0, 1.3, 1.5])      # y0 (two states), r, k
    t = np.array([0.0, 0.4, 1.0])
    w = W[:3]
    assert_close(odeint(logistic, x[:2], t, x[2], x[3], **TIGHT),
                 _logistic_closed_form(np, x, t), 1e-9, "the closed form")

    def loss(x, t):
        return np.sum(w * odeint(logistic, x[:2], t, x[2], x[3], **TIGHT) ** 2)

    def jloss(x, t):
        return jax.numpy.sum(w * _logistic_closed_form(jax.numpy, x, t) ** 2)

    hess = tg.hessian(loss)(x, t)
    want = np.asarray(jax.jit(jax.hessian(jloss))(x, t))
    assert_close(hess, want, 1e-7, "hessian vs JAX", floor=1.0)
    grad_x = tg.grad(loss)
    cols = [(grad_x(x + e, t) - grad_x(x - e, t)) / 2e-5 for e in 1e-5 * np.eye(4)]
    assert_close(hess, np.stack(cols, axis=1), 1e-6, "hessian vs finite differences",
                 floor=1.0)

    mixed = tg.jacobian(tg.grad(loss), argnums=1)(x, t)     # d/dt of the gradient in x
    want_mixed = np.asarray(jax.jit(jax.jacrev(jax.grad(jloss), argnums=1))(x, t))
    assert_close(mixed, want_mixed, 1e-7, "times: grad of grad vs JAX", floor=1.0)

    v = np.array([0.7, -1.1, 0.4, 0.2])
    _, fwd_rev = tg.jvp(lambda x: grad_x(x, t), (x,), (v,))
    assert_close(fwd_rev, want @ v, 1e-7, "forward over reverse", floor=1.0)
    rev_fwd = tg.grad(lambda x: tg.jvp(lambda x: loss(x, t), (x,), (v,))[1])(x)
    assert_close(rev_fwd, want @ v, 1e-7, "reverse over forward", floor=1.0)
    assert_close(tg.jit(tg.hessian(loss))(x, t), want, 1e-7, "compiled", floor=1.0)


# -- SciPy's options, errors -----------------------------------------------------------------
def test_scipy_options_and_integer_arguments():
    y0 = np.array([1.0, 0.0])

    def shifted(t, y, k, c, power):         # tfirst=True; an integer argument rides along
        return oscillator(y, t, k, c) * power

    got = odeint(shifted, y0, T, args=(2.0, 0.3, 2), tfirst=True, h0=1e-3, mxordn=5)
    want = scipy_odeint(shifted, y0, T, args=(2.0, 0.3, 2), tfirst=True, h0=1e-3, mxordn=5)
    assert_close(got, want, 1e-15, "SciPy's options")
    g = tg.grad(lambda k: np.sum(odeint(shifted, y0, T, args=(k, 0.3, 2), tfirst=True,
                                        **TIGHT)))(2.0)
    ref = lambda k: np.sum(scipy_odeint(shifted, y0, T, args=(k, 0.3, 2), tfirst=True,  # noqa: E731
                                        rtol=1e-12, atol=1e-12))
    assert_close(g, _fd(ref, (2.0,))[0], 1e-6, "vs finite differences", floor=1.0)


def test_vmap_solves_row_by_row():
    ks = np.array([1.0, 2.0, 3.0])
    y0 = np.array([1.0, 0.0])
    got = tg.vmap(lambda k: odeint(oscillator, y0, T, k, 0.3))(ks)
    want = np.stack([scipy_odeint(oscillator, y0, T, args=(k, 0.3)) for k in ks])
    assert_close(got, want, 1e-15, "rows")


def test_errors():
    y0 = np.array([1.0, 0.0])
    with pytest.raises(TypeError, match="Dfun"):
        odeint(oscillator, y0, T, args=(2.0, 0.3), Dfun=lambda y, t, k, c: np.eye(2))
    with pytest.raises(TypeError, match="both"):
        odeint(oscillator, y0, T, 2.0, args=(0.3,))
    with pytest.raises(tg.TraceError, match="1-d"):
        odeint(oscillator, y0, T[None], 2.0, 0.3)
    with pytest.raises(tg.TraceError, match="3 numbers for a state of 2"):
        tg.grad(lambda k: np.sum(odeint(lambda y, t, k: np.append(y, k), y0, T, k)))(1.0)
    with pytest.raises(tg.TraceError, match="structure"):
        odeint(lambda y, t: (y[0],), (np.ones(1), np.ones(1)), T)
