"""tg.vmap: a function of one example over a batch, against a Python loop and jax.vmap;
composed with grad and jit; the errors."""
import numpy as np
import pytest

import tracegrad as tg

RNG = np.random.default_rng(0)
XS = RNG.standard_normal((5, 3))
W = RNG.standard_normal((3, 2))


def loss(x, w):
    return np.sum(np.tanh(x @ w) ** 2) + np.max(x)


def test_values_match_a_loop():
    got = tg.vmap(loss, in_axes=(0, None))(XS, W)
    np.testing.assert_allclose(got, [loss(x, W) for x in XS], rtol=1e-14)


def test_per_example_gradients_and_gradient_of_a_batched_loss():
    per_example = tg.vmap(tg.grad(loss), in_axes=(0, None))(XS, W)
    np.testing.assert_allclose(per_example, [tg.grad(loss)(x, W) for x in XS], rtol=1e-12)
    total = tg.grad(lambda w: np.sum(tg.vmap(loss, in_axes=(0, None))(XS, w)))(W)
    np.testing.assert_allclose(total, sum(tg.grad(loss, argnums=1)(x, W) for x in XS),
                               rtol=1e-12)
    np.testing.assert_allclose(tg.jit(tg.vmap(loss, in_axes=(0, None)))(XS, W),
                               [loss(x, W) for x in XS], rtol=1e-14)


def test_axes_pytrees_and_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def f(p, x):
        return {"y": p["a"] * x + p["b"], "n": np.sum(x ** 2)}

    p = {"a": np.float64(2.0), "b": np.arange(4.0)}
    xt = RNG.standard_normal((4, 6))                     # mapped over axis 1
    got = tg.vmap(f, in_axes=(None, 1))(p, xt)
    with jax.enable_x64(True):
        want = jax.vmap(lambda p, x: {"y": p["a"] * x + p["b"], "n": jnp.sum(x ** 2)},
                        in_axes=(None, 1))(p, xt)
        np.testing.assert_allclose(got["y"], np.asarray(want["y"]), rtol=1e-14)
        np.testing.assert_allclose(got["n"], np.asarray(want["n"]), rtol=1e-14)


@pytest.mark.parametrize("call, message", [
    (lambda: tg.vmap(loss)(XS, np.ones((4, 3, 2))), "one size"),
    (lambda: tg.vmap(loss, in_axes=(0, 5))(XS, W), "out of range"),
    (lambda: tg.vmap(loss, in_axes=(0, None, 1))(XS, W), "one entry per argument"),
    (lambda: tg.vmap(lambda x: x if np.sum(x) > 0 else -x)(XS), "batched"),
])
def test_errors(call, message):
    with pytest.raises(tg.TraceError, match=message):
        call()
