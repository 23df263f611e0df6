"""``tg.custom_root`` and ``tg.custom_linear_solve``: roots differentiated by the implicit
function theorem (``tracegrad/implicit.py``, ``higher/implicit.py``), against closed forms,
``np.linalg.solve``, central finite differences and JAX's ``jax.lax.custom_root`` (x64)."""
import numpy as np
import pytest
import scipy.optimize

import tracegrad as tg

HERE = "test_custom_root.py:"


# -- sqrt(a): the root of x^2 - a by Newton's method in a tg.while_loop -------------------------
def _newton(f, x0):
    def step(x):
        return x - f(x) / tg.grad(f)(x)
    return tg.while_loop(lambda x: np.abs(f(x)) > 1e-13, step, x0)


def root_sqrt(a):
    return tg.custom_root(lambda x: x * x - a, 1.0, _newton, lambda g, y: y / g(1.0))


@pytest.mark.parametrize("a", [2.0, 30.0])
def test_sqrt_by_newton_every_mode(a):
    d1, d2 = 0.5 * a ** -0.5, -0.25 * a ** -1.5
    np.testing.assert_allclose(root_sqrt(a), np.sqrt(a), rtol=1e-15)
    np.testing.assert_allclose(tg.grad(root_sqrt)(a), d1, rtol=1e-14)
    np.testing.assert_allclose(tg.grad(tg.grad(root_sqrt))(a), d2, rtol=1e-13)
    np.testing.assert_allclose(tg.hessian(root_sqrt)(a), d2, rtol=1e-13)
    value, tangent = tg.jvp(root_sqrt, (a,), (1.0,))
    np.testing.assert_allclose([value, tangent], [np.sqrt(a), d1], rtol=1e-14)
    np.testing.assert_allclose(tg.jvp(tg.grad(root_sqrt), (a,), (1.0,))[1], d2, rtol=1e-13)
    np.testing.assert_allclose(tg.jit(tg.grad(tg.grad(root_sqrt)))(a), d2, rtol=1e-13)
    # central differences of the root itself
    h = 1e-5
    np.testing.assert_allclose(tg.grad(root_sqrt)(a),
                               (root_sqrt(a + h) - root_sqrt(a - h)) / (2 * h), rtol=1e-8)


def test_no_derivative_is_taken_through_solve():
    """The gradient is the implicit one even when solve stops far from convergence (a
    derivative through three Newton steps would be another number), and the graph holds
    one custom_root node whose solve is not differentiated."""
    def three_steps(f, x0):
        return tg.fori_loop(0, 3, lambda i, x: x - f(x) / (2 * x), x0)

    def rough_sqrt(a):
        return tg.custom_root(lambda x: x * x - a, 1.0, three_steps, lambda g, y: y / g(1.0))
    a = 2.0
    x = rough_sqrt(a)
    assert abs(x - np.sqrt(a)) > 1e-6
    np.testing.assert_allclose(tg.grad(rough_sqrt)(a), 0.5 / x, rtol=1e-15)   # -f_a / f_x
    graph = tg.trace(tg.grad(rough_sqrt), a)
    assert graph.ops().count("custom_root") == 1
    assert "scan" in graph.ops() and graph.ops().count("scan") == 1   # the forward solve only


def test_sqrt_under_vmap_and_on_the_jax_backend():
    a = np.array([0.5, 2.0, 9.0])
    np.testing.assert_allclose(tg.vmap(tg.grad(root_sqrt))(a), 0.5 / np.sqrt(a), rtol=1e-14)
    np.testing.assert_allclose(tg.vmap(root_sqrt)(a), np.sqrt(a), rtol=1e-15)
    pytest.importorskip("jax")
    got = tg.jit(tg.grad(tg.grad(root_sqrt)), backend="jax")(2.0)
    np.testing.assert_allclose(np.asarray(got), -0.25 * 2.0 ** -1.5, rtol=1e-13)


def test_sqrt_against_jax_custom_root():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def jax_sqrt(a):
        def solve(f, x0):
            return jax.lax.while_loop(lambda x: jnp.abs(f(x)) > 1e-13,
                                      lambda x: x - f(x) / (2 * x), x0)
        return jax.lax.custom_root(lambda x: x * x - a, 1.0, solve, lambda g, y: y / g(1.0))
    for a in (0.3, 5.0):
        np.testing.assert_allclose(tg.grad(root_sqrt)(a), jax.grad(jax_sqrt)(a), rtol=1e-14)
        np.testing.assert_allclose(tg.grad(tg.grad(root_sqrt))(a),
                                   jax.grad(jax.grad(jax_sqrt))(a), rtol=1e-13)


# -- the fixed point of cos, found by SciPy (Python on concrete values) -----------------------
def _brentq(theta):
    return np.float64(scipy.optimize.brentq(lambda x: x - np.cos(theta * x), 0.0, 2.0,
                                            xtol=1e-15, rtol=1e-15))


def cos_fixed_point(theta):
    """x = cos(theta x): the root of x - cos(theta x), by SciPy's brentq in a callback."""
    def solve(f, x0):
        return tg.pure_callback(_brentq, tg.ShapeDtypeStruct((), np.float64), theta)
    return tg.custom_root(lambda x: x - np.cos(theta * x), 0.5, solve, lambda g, y: y / g(1.0))


def test_cos_fixed_point_solved_by_scipy():
    theta = 0.8
    x = cos_fixed_point(theta)
    np.testing.assert_allclose(x, np.cos(theta * x), rtol=1e-15)
    # x' = -x s / (1 + theta s), s = sin(theta x)
    s = np.sin(theta * x)
    d1 = -x * s / (1 + theta * s)
    for grad in (tg.grad(cos_fixed_point), tg.jit(tg.grad(cos_fixed_point))):
        np.testing.assert_allclose(grad(theta), d1, rtol=1e-12)
    h = 1e-5
    np.testing.assert_allclose(d1, (_brentq(theta + h) - _brentq(theta - h)) / (2 * h),
                               rtol=1e-8)
    # second order against central differences of the first
    g = tg.grad(cos_fixed_point)
    np.testing.assert_allclose(tg.grad(g)(theta), (g(theta + h) - g(theta - h)) / (2 * h),
                               rtol=1e-7)


# -- a vector root: A(theta) x = b(theta), against np.linalg.solve ------------------------------
_rng = np.random.default_rng(7)
A0 = _rng.standard_normal((3, 3)) + 4 * np.eye(3)
B1, B2 = _rng.standard_normal((2, 3, 3))
b0 = _rng.standard_normal(3)


def _matrix(theta):
    return A0 + theta[0] * B1 + theta[1] ** 2 * B2


def linear_root(theta):
    A, b = _matrix(theta), b0 * np.exp(theta[0])

    def solve(f, x0):       # Newton on an affine function: one step suffices, take two
        return tg.fori_loop(0, 2, lambda i, x: x - np.linalg.solve(A, f(x)), x0)
    return tg.custom_root(lambda x: A @ x - b, np.zeros(3), solve,
                          lambda g, y: np.linalg.solve(tg.jacobian(g)(y), y))


def linear_closed(theta):
    return np.linalg.solve(_matrix(theta), b0 * np.exp(theta[0]))


THETA = np.array([0.3, -0.7])


def _central_jacobian(fn, x, h=1e-6):
    return np.stack([(fn(x + h * e) - fn(x - h * e)) / (2 * h) for e in np.eye(len(x))], -1)


def test_vector_root_against_the_closed_form():
    np.testing.assert_allclose(linear_root(THETA), linear_closed(THETA), rtol=1e-13)
    jac = _central_jacobian(linear_closed, THETA)
    np.testing.assert_allclose(tg.jacobian(linear_root)(THETA), jac, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(tg.jacobian(linear_root, mode="fwd")(THETA), jac, rtol=1e-7,
                               atol=1e-9)

    def loss(theta):
        return np.sum(np.sin(linear_root(theta)))

    def loss_closed(theta):
        return np.sum(np.sin(linear_closed(theta)))
    grad_closed = _central_jacobian(loss_closed, THETA)
    np.testing.assert_allclose(tg.grad(loss)(THETA), grad_closed, rtol=1e-7, atol=1e-9)
    # the Hessian against central differences of the closed form's exact gradient
    # (dx = A^-1 (db - dA x), by hand)
    def grad_by_hand(theta):
        A, x = _matrix(theta), linear_closed(theta)
        dA = [B1, 2 * theta[1] * B2]
        db = [b0 * np.exp(theta[0]), np.zeros(3)]
        dx = [np.linalg.solve(A, db[k] - dA[k] @ x) for k in range(2)]
        return np.array([np.cos(x) @ dx[k] for k in range(2)])
    np.testing.assert_allclose(tg.grad(loss)(THETA), grad_by_hand(THETA), rtol=1e-12)
    np.testing.assert_allclose(tg.hessian(loss)(THETA), _central_jacobian(grad_by_hand, THETA),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tg.jit(tg.hessian(loss))(THETA), tg.hessian(loss)(THETA),
                               rtol=1e-13)


def test_vector_root_against_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def jax_root(theta):
        A = jnp.asarray(A0) + theta[0] * B1 + theta[1] ** 2 * B2
        b = b0 * jnp.exp(theta[0])
        return jax.lax.custom_root(lambda x: A @ x - b, jnp.zeros(3),
                                   lambda f, x0: x0 - jnp.linalg.solve(A, f(x0)),
                                   lambda g, y: jnp.linalg.solve(jax.jacobian(g)(y), y))

    def loss(theta):
        return np.sum(np.sin(linear_root(theta)))
    np.testing.assert_allclose(tg.jacobian(linear_root)(THETA),
                               jax.jit(jax.jacobian(jax_root))(THETA),
                               rtol=1e-12)
    np.testing.assert_allclose(tg.hessian(loss)(THETA),
                               jax.jit(jax.hessian(lambda t: jnp.sum(jnp.sin(jax_root(t)))))(THETA),
                               rtol=1e-11)
    np.testing.assert_allclose(np.asarray(tg.jit(tg.grad(loss), backend="jax")(THETA)),
                               tg.grad(loss)(THETA), rtol=1e-13)


# -- pytrees, aux, closures from an enclosing loop ---------------------------------------------
def test_a_dict_root_with_aux():
    def roots(a, b):
        def f(x):
            return {"u": x["u"] ** 2 - a, "v": x["v"] ** 3 - b}

        def solve(f, x0):
            def step(c):
                x, n = c
                fx = f(x)
                return {"u": x["u"] - fx["u"] / (2 * x["u"]),
                        "v": x["v"] - fx["v"] / (3 * x["v"] ** 2)}, n + 1
            return tg.while_loop(lambda c: np.abs(f(c[0])["u"]) + np.abs(f(c[0])["v"]) > 1e-13,
                                 step, (x0, 0))

        def tangent_solve(g, y):       # f is diagonal: divide by the diagonal
            d = g({"u": 1.0, "v": 1.0})
            return {"u": y["u"] / d["u"], "v": y["v"] / d["v"]}
        x, steps = tg.custom_root(f, {"u": 1.0, "v": 1.0}, solve, tangent_solve, has_aux=True)
        return x["u"] * x["v"], steps

    a, b = 3.0, 5.0
    value, steps = roots(a, b)
    np.testing.assert_allclose(value, np.sqrt(a) * np.cbrt(b), rtol=1e-14)
    assert steps > 3
    ga, gb = tg.grad(lambda a, b: roots(a, b)[0], argnums=(0, 1))(a, b)
    np.testing.assert_allclose(ga, 0.5 / np.sqrt(a) * np.cbrt(b), rtol=1e-13)
    np.testing.assert_allclose(gb, np.sqrt(a) * b ** (-2 / 3) / 3, rtol=1e-13)
    # aux carries no derivative
    assert tg.grad(lambda a: roots(a, b)[0] + roots(a, b)[1])(a) == ga


def test_a_root_inside_a_scan_closing_over_its_carry():
    def total(a0, xs):
        def step(c, x):
            r = root_sqrt(c * x)           # f closes over the scan's carry and xs
            return c + 0.1 * r, r
        c, rs = tg.scan(step, a0, xs)
        return c + np.sum(rs)

    def total_np(a0, xs):
        c, s = a0, 0.0
        for x in xs:
            r = np.sqrt(c * x)
            c, s = c + 0.1 * r, s + r
        return c + s
    xs = np.array([1.0, 2.0, 0.5])
    np.testing.assert_allclose(total(1.5, xs), total_np(1.5, xs), rtol=1e-14)
    h = 1e-6
    np.testing.assert_allclose(tg.grad(total)(1.5, xs),
                               (total_np(1.5 + h, xs) - total_np(1.5 - h, xs)) / (2 * h),
                               rtol=1e-8)


def test_custom_root_graphs_save_and_load():
    graph = tg.trace(tg.grad(tg.grad(root_sqrt)), 2.0)
    assert "custom_root" in graph.ops()
    text = graph.to_json()
    loaded = tg.Graph.from_json(text)
    assert loaded.to_json() == text
    for a in (2.0, 7.0):
        np.testing.assert_allclose(loaded(np.float64(a)), -0.25 * a ** -1.5, rtol=1e-13)


# -- custom_linear_solve --------------------------------------------------------------------------
def test_custom_linear_solve():
    def solve(matvec, b):
        return np.linalg.solve(tg.jacobian(matvec)(b), b)

    def transpose_solve(vecmat, b):
        return np.linalg.solve(tg.jacobian(vecmat)(b), b)

    def x_of(theta, with_transpose):
        A = _matrix(theta)
        return tg.custom_linear_solve(lambda x: A @ x, b0 * np.exp(theta[0]), solve,
                                      transpose_solve if with_transpose else None)
    jac = _central_jacobian(linear_closed, THETA)
    for with_transpose in (True, False):
        np.testing.assert_allclose(x_of(THETA, with_transpose), linear_closed(THETA),
                                   rtol=1e-13)
        np.testing.assert_allclose(tg.jacobian(lambda t: x_of(t, with_transpose))(THETA), jac,
                                   rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(
            tg.jacobian(lambda t: x_of(t, with_transpose), mode="fwd")(THETA), jac, rtol=1e-7,
            atol=1e-9)


# -- errors name the user's line -------------------------------------------------------------------
def test_f_of_another_shape_is_a_trace_error():
    def bad(a):
        return tg.custom_root(lambda x: np.stack([x, x]) - a, 1.0, _newton,
                              lambda g, y: y / g(1.0))
    with pytest.raises(tg.TraceError, match=r"f's output.*float64\[2\].*float64\[\]") as e:
        tg.grad(bad)(2.0)
    assert HERE in str(e.value)


def test_solve_of_another_shape_is_a_trace_error():
    def bad(a):
        return tg.custom_root(lambda x: x * x - a, np.ones(2),
                              lambda f, x0: np.sqrt(a), lambda g, y: y / g(1.0))
    with pytest.raises(tg.TraceError, match=r"solve returned.*float64\[\].*float64\[2\]") as e:
        tg.grad(lambda a: np.sum(bad(a)))(2.0)
    assert HERE in str(e.value)


def test_tangent_solve_of_another_structure_is_a_trace_error():
    def bad(a):
        return tg.custom_root(lambda x: x * x - a, 1.0, _newton, lambda g, y: (y, y))
    with pytest.raises(tg.TraceError, match="tangent_solve") as e:
        tg.grad(bad)(2.0)
    assert HERE in str(e.value)
