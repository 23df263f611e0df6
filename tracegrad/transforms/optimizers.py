"""Gradient-based optimizers over pytrees, in the style of HIPS autograd's
``autograd.misc.optimizers`` (and the loops of JAX's ``example_libraries.optimizers``).

Each takes ``grad(x, i)`` (the gradient at parameters ``x`` on iteration ``i``, usually
``tg.grad(objective)`` of an ``objective(x, i)``), the starting parameters ``x0`` (an
array or any pytree of arrays: nested tuples, lists, dicts, registered types), an
optional ``callback(x, i, g)`` called before each step, and returns the final parameters
with ``x0``'s structure. Updates are elementwise, leaf by leaf, so the numbers are those
of autograd's optimizers, which flatten the tree into one vector first.

    loss = lambda params, i: ...
    params = tg.optimizers.adam(tg.grad(loss), init_params, num_iters=500, step_size=0.01)
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..tracer import flatten, tree_map, unflatten

__all__ = ["sgd", "momentum", "rmsprop", "adam", "adagrad"]

Grad = Callable[[Any, int], Any]
Callback = Callable[[Any, int, Any], Any] | None


def _as_arrays(tree):
    leaves, td = flatten(tree)
    return unflatten(td, [np.array(x, dtype=np.result_type(x, np.float64)
                                   if np.asarray(x).dtype.kind in "iub" else None)
                          for x in leaves])


def _loop(grad, x0, callback, num_iters, init, step):
    """Run ``num_iters`` steps: ``state = init(x)``, ``x, state = step(x, g, state, i)``."""
    x = _as_arrays(x0)
    state = init(x)
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        x, state = step(x, g, state, i)
    return x


def _zeros(x):
    return tree_map(np.zeros_like, x)


def sgd(grad: Grad, x0: Any, callback: Callback = None, num_iters: int = 200,
        step_size: float = 0.1, mass: float = 0.9) -> Any:
    """Stochastic gradient descent with momentum, as autograd's ``sgd``: the velocity is
    ``mass * v - (1 - mass) * g`` and the step ``x + step_size * v``."""
    def step(x, g, v, i):
        v = tree_map(lambda vi, gi: mass * vi - (1.0 - mass) * gi, v, g)
        return tree_map(lambda xi, vi: xi + step_size * vi, x, v), v
    return _loop(grad, x0, callback, num_iters, _zeros, step)


def momentum(grad: Grad, x0: Any, callback: Callback = None, num_iters: int = 200,
             step_size: float = 0.1, mass: float = 0.9) -> Any:
    """Heavy-ball momentum, as JAX's ``optimizers.momentum``: ``v = mass * v + g`` and
    ``x - step_size * v``."""
    def step(x, g, v, i):
        v = tree_map(lambda vi, gi: mass * vi + gi, v, g)
        return tree_map(lambda xi, vi: xi - step_size * vi, x, v), v
    return _loop(grad, x0, callback, num_iters, _zeros, step)


def rmsprop(grad: Grad, x0: Any, callback: Callback = None, num_iters: int = 100,
            step_size: float = 0.1, gamma: float = 0.9, eps: float = 1e-8) -> Any:
    """RMSprop, as autograd's ``rmsprop`` (the running mean of squared gradients starts at
    one): ``x - step_size * g / (sqrt(avg) + eps)``."""
    def step(x, g, avg, i):
        avg = tree_map(lambda a, gi: a * gamma + gi ** 2 * (1 - gamma), avg, g)
        return tree_map(lambda xi, gi, a: xi - step_size * gi / (np.sqrt(a) + eps),
                        x, g, avg), avg
    return _loop(grad, x0, callback, num_iters, lambda x: tree_map(np.ones_like, x), step)


def adam(grad: Grad, x0: Any, callback: Callback = None, num_iters: int = 100,
         step_size: float = 0.001, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-8) -> Any:
    """Adam (Kingma and Ba), as autograd's ``adam``: bias-corrected first and second
    moment estimates, ``x - step_size * mhat / (sqrt(vhat) + eps)``."""
    def init(x):
        return _zeros(x), _zeros(x)

    def step(x, g, state, i):
        m, v = state
        m = tree_map(lambda mi, gi: (1 - b1) * gi + b1 * mi, m, g)
        v = tree_map(lambda vi, gi: (1 - b2) * gi ** 2 + b2 * vi, v, g)
        c1, c2 = 1 - b1 ** (i + 1), 1 - b2 ** (i + 1)
        x = tree_map(lambda xi, mi, vi: xi - step_size * (mi / c1) / (np.sqrt(vi / c2) + eps),
                     x, m, v)
        return x, (m, v)
    return _loop(grad, x0, callback, num_iters, init, step)


def adagrad(grad: Grad, x0: Any, callback: Callback = None, num_iters: int = 100,
            step_size: float = 0.1, eps: float = 1e-8) -> Any:
    """Adagrad: ``x - step_size * g / (sqrt(sum of squared gradients) + eps)``."""
    def step(x, g, acc, i):
        acc = tree_map(lambda a, gi: a + gi ** 2, acc, g)
        return tree_map(lambda xi, gi, a: xi - step_size * gi / (np.sqrt(a) + eps),
                        x, g, acc), acc
    return _loop(grad, x0, callback, num_iters, _zeros, step)
