"""``tracegrad.scipy.integrate.odeint``: values are ``scipy.integrate.odeint``'s; gradients
(the adjoint system integrated backwards) agree with central finite differences of SciPy's
solve at a tight tolerance, to the solver's tolerance."""
import numpy as np
import pytest
from conftest import assert_close
from scipy.integrate import odeint as scipy_odeint

import tracegrad as tg
from tracegrad.scipy.integrate import odeint

T = np.linspace(0.0, 2.0, 6)
W = np.random.default_rng(1502).standard_normal((6, 2))


def oscillator(y, t, k, c):
    return np.array([y[1], -k * y[0] - c * y[1]]) + np.array([0.0, 0.5]) * np.sin(t)


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


def test_forward_mode_is_refused():
    y0 = np.array([1.0, 0.0])
    with pytest.raises(tg.TraceError, match="forward mode"):
        tg.jvp(lambda k: odeint(oscillator, y0, T, k, 0.3), (2.0,), (1.0,))
