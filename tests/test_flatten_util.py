"""tg.flatten_util.ravel_pytree against jax.flatten_util.ravel_pytree (x64); gradients
through the flat vector and through unravel against JAX."""
import jax
import jax.numpy as jnp
import numpy as np
from conftest import assert_close
from jax.flatten_util import ravel_pytree as jax_ravel
from tracegrad.flatten_util import ravel_pytree

import tracegrad as tg

TREE = {"w": np.arange(6.0).reshape(2, 3) / 7, "b": (np.array([0.5, -1.0]), 2.0), "n": None}


def test_values_and_round_trip_match_jax():
    flat, unravel = ravel_pytree(TREE)
    jflat, junravel = jax_ravel(TREE)
    assert_close(flat, np.asarray(jflat), 0)
    back = unravel(flat * 2)
    jback = junravel(jflat * 2)
    assert_close(back["w"], np.asarray(jback["w"]), 0)
    assert_close(back["b"][0], np.asarray(jback["b"][0]), 0)
    assert back["n"] is None and np.shape(back["b"][1]) == ()
    f32 = ravel_pytree([np.ones(2, np.float32), np.ones(1, np.float32)])[0]
    assert f32.dtype == np.float32
    empty, un = ravel_pytree(())
    assert empty.shape == (0,) and un(empty) == ()


def _loss(tree):
    return np.sum(np.tanh(tree["w"]) @ tree["b"][0].repeat(2)[:3]) * tree["b"][1]


def _jloss(tree):
    return jnp.sum(jnp.tanh(tree["w"]) @ tree["b"][0].repeat(2)[:3]) * tree["b"][1]


def test_gradients_flow_through_unravel_and_ravel():
    flat, unravel = ravel_pytree(TREE)
    jflat, junravel = jax_ravel(TREE)
    g = tg.grad(lambda v: _loss(unravel(v)))(flat)
    jg = jax.jit(jax.grad(lambda v: _jloss(junravel(v))))(jflat)
    assert_close(g, np.asarray(jg), 1e-12)
    # ravel on traced leaves: the gradient w.r.t. the tree of ||ravel(tree)||^2 is 2*tree
    gt = tg.grad(lambda t: np.sum(ravel_pytree(t)[0] ** 2))(TREE)
    assert_close(gt["w"], 2 * TREE["w"], 1e-15)
    assert_close(gt["b"][0], 2 * TREE["b"][0], 1e-15)
    h = tg.hessian(lambda v: _loss(unravel(v)))(flat)
    jh = jax.jit(jax.hessian(lambda v: _jloss(junravel(v))))(jflat)
    assert_close(h, np.asarray(jh), 1e-10)
    jitted = tg.jit(lambda v: unravel(v)["w"] * 2)
    assert_close(jitted(flat), 2 * TREE["w"], 0)
