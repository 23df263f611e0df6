"""tg.optimizers against HIPS autograd's autograd.misc.optimizers on the same problem: a
small regression over a dict-and-list pytree of parameters, the same gradients fed to
both (ours from tg.grad), the same numbers out; callbacks see the pytree."""
import numpy as np
import pytest
from conftest import assert_close

import tracegrad as tg
from tracegrad import tree_util as tu

ag_opt = pytest.importorskip("autograd.misc.optimizers")

RNG = np.random.default_rng(0)
INPUTS = RNG.normal(size=(20, 3))
TARGETS = np.sin(INPUTS @ np.array([0.5, -1.0, 2.0]))
PARAMS = {"w": RNG.normal(size=(3, 4)) * 0.3, "layers": [RNG.normal(size=4) * 0.3, 0.1]}


def objective(params, i):
    batch = slice((i * 5) % 20, (i * 5) % 20 + 5)     # minibatches: grad depends on i
    hidden = np.tanh(INPUTS[batch] @ params["w"])
    pred = hidden @ params["layers"][0] + params["layers"][1]
    return np.mean((pred - TARGETS[batch]) ** 2)


GRAD = tg.grad(objective)


def _tg_grad_for_autograd(x, i):
    g = GRAD(x, i)
    return {"w": g["w"], "layers": [g["layers"][0], np.asarray(g["layers"][1])]}


CASES = [("sgd", {"num_iters": 30, "step_size": 0.3, "mass": 0.8}),
         ("rmsprop", {"num_iters": 30, "step_size": 0.05}),
         ("adam", {"num_iters": 40, "step_size": 0.05}),
         ("adam", {})]


@pytest.mark.parametrize("name, kwargs", CASES, ids=["sgd", "rmsprop", "adam", "adam defaults"])
def test_matches_autograd(name, kwargs):
    seen = []

    def callback(x, i, g):
        seen.append((i, tu.tree_structure(x) == tu.tree_structure(PARAMS)))

    ours = getattr(tg.optimizers, name)(GRAD, PARAMS, callback=callback, **kwargs)
    theirs = getattr(ag_opt, name)(_tg_grad_for_autograd, PARAMS, **kwargs)
    assert [i for i, _ in seen] == list(range(kwargs.get("num_iters", 100)))
    assert all(ok for _, ok in seen)
    assert tu.tree_structure(ours) == tu.tree_structure(PARAMS)
    assert_close(ours["w"], theirs["w"], 1e-12)
    assert_close(ours["layers"][0], theirs["layers"][0], 1e-12)
    assert_close(ours["layers"][1], np.asarray(theirs["layers"][1]), 1e-12)
    assert objective(ours, 0) < objective(PARAMS, 0)


def test_momentum_and_adagrad_minimise_a_quadratic():
    target = {"a": np.array([1.0, -2.0]), "b": 3.0}

    def loss(p, i):
        return np.sum((p["a"] - target["a"]) ** 2) + (p["b"] - target["b"]) ** 2

    start = {"a": np.zeros(2), "b": 0.0}
    # momentum by hand: v = mass * v + g, x = x - step * v
    x, v = np.zeros(3), np.zeros(3)
    for _ in range(5):
        g = 2 * (x - np.array([1.0, -2.0, 3.0]))
        v = 0.9 * v + g
        x = x - 0.01 * v
    got = tg.optimizers.momentum(tg.grad(loss), start, num_iters=5, step_size=0.01)
    assert_close(np.append(got["a"], got["b"]), x, 1e-14)
    far = tg.optimizers.adagrad(tg.grad(loss), start, num_iters=500, step_size=0.5)
    assert_close(far["a"], target["a"], 1e-6)
