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
    (lambda: tg.vmap(np.linalg.inv)(np.zeros((0, 3, 3))), "empty batch.*test_vmap.py:"),
])
def test_errors(call, message):
    with pytest.raises(tg.TraceError, match=message):
        call()


# -- linear algebra is traced on a real example, not on zeros (singular) -----------------
A = RNG.standard_normal((4, 3, 3)) + 3 * np.eye(3)
B = RNG.standard_normal((4, 3))


@pytest.mark.parametrize("name, fn, args", [
    ("solve", np.linalg.solve, (A, B)),
    ("inv", np.linalg.inv, (A,)),
    ("det", np.linalg.det, (A,)),
    ("inv then matmul", lambda a, b: np.linalg.inv(a) @ b, (A, B)),
])
def test_linalg_under_vmap_matches_a_loop_and_jax(name, fn, args):
    jax = pytest.importorskip("jax")
    got = tg.vmap(fn)(*args)
    np.testing.assert_allclose(got, np.stack([fn(*row) for row in zip(*args)]), rtol=1e-12)
    jfn = {"solve": jax.numpy.linalg.solve, "inv": jax.numpy.linalg.inv,
           "det": jax.numpy.linalg.det,
           "inv then matmul": lambda a, b: jax.numpy.linalg.inv(a) @ b}[name]
    with jax.enable_x64(True):
        want_grad = np.asarray(jax.grad(lambda a: jax.numpy.sum(jax.vmap(jfn)(a, *args[1:])))(A))
    np.testing.assert_allclose(tg.grad(lambda a: np.sum(tg.vmap(fn)(a, *args[1:])))(A),
                               want_grad, rtol=1e-10)


# -- grad through a vmap that closes over traced weights -----------------------------------
def test_grad_through_vmap_with_closed_over_weights_matches_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def batch_loss(w, b, xnp, vmap):
        return xnp.sum(vmap(lambda x: xnp.tanh(x @ w + b) ** 2)(XS))

    mine = lambda w, b: batch_loss(w, b, np, tg.vmap)  # noqa: E731
    with jax.enable_x64(True):
        theirs = lambda w, b: batch_loss(w, b, jnp, jax.vmap)  # noqa: E731
        want = [np.asarray(g) for g in jax.grad(theirs, argnums=(0, 1))(W, np.ones(2))]
    got = tg.grad(mine, argnums=(0, 1))(W, np.ones(2))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    got = tg.jit(tg.grad(mine, argnums=(0, 1)))(W, np.ones(2))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    # second order through the closure too
    h = tg.hessian(lambda b: mine(W, b))(np.ones(2))
    with jax.enable_x64(True):
        want_h = np.asarray(jax.hessian(lambda b: theirs(W, b))(np.ones(2)))
    np.testing.assert_allclose(h, want_h, rtol=1e-10)
