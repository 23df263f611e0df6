"""Oracles for user-level tests: JAX (x64) and central finite differences.

A test writes its function once against a module parameter ``xp``
(``lambda xp, x: xp.sum(xp.sin(x) * x)``); ``check`` runs it with
``xp=numpy`` under tracegrad and with ``xp=jax.numpy`` under JAX and compares
values, gradients and (optionally) Hessians and finite differences.
"""
from __future__ import annotations

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402  (after x64 is on; conftest.py sets XLA's flags)

import tracegrad as tg  # noqa: E402

VALUE_RTOL = 1e-12
GRAD_RTOL = 1e-10

__all__ = ["jax", "jnp", "VALUE_RTOL", "GRAD_RTOL", "rand", "leaves", "assert_close",
           "check", "finite_diff_grad", "weighted_sum"]


def rand(*shape, seed=0, low=-1.0, high=1.0, dtype=np.float64):
    """Reproducible uniform values in ``[low, high)``."""
    r = np.random.default_rng(seed + 7919 * len(shape) + sum(shape))
    return r.uniform(low, high, size=shape).astype(dtype)


def leaves(tree):
    return jax.tree_util.tree_leaves(tree)


def assert_close(actual, expected, rtol, what="value"):
    """Pytrees of arrays agree in structure, shape and value (relative to the largest entry)."""
    a_leaves, a_tree = jax.tree_util.tree_flatten(actual)
    e_leaves, e_tree = jax.tree_util.tree_flatten(expected)
    assert a_tree == e_tree, f"{what}: structure {a_tree} != {e_tree}"
    for a, e in zip(a_leaves, e_leaves):
        a, e = np.asarray(a), np.asarray(e)
        assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
        scale = float(np.max(np.abs(e))) if e.size and e.dtype.kind in "fc" else 0.0
        np.testing.assert_allclose(a, e, rtol=rtol, atol=rtol * scale, err_msg=what)


def weighted_sum(fn, out_example, seed=1):
    """A scalar function of ``fn``'s result: every output element gets its own weight,
    so a wrong gradient cannot hide behind a symmetric ``sum``."""
    out_leaves, tree = jax.tree_util.tree_flatten(out_example)
    if tree == jax.tree_util.tree_structure(0.0) and np.ndim(out_leaves[0]) == 0:
        return fn
    weights = [rand(*np.shape(o), seed=seed + k, low=0.5, high=1.5)
               for k, o in enumerate(out_leaves)]

    def scalar(xp, *args):
        outs = leaves(fn(xp, *args))
        return sum(xp.sum(o * w) for o, w in zip(outs, weights))
    return scalar


def finite_diff_grad(f, args, argnum, eps=1e-6):
    """Central differences of scalar ``f`` with respect to ``args[argnum]`` (an array)."""
    x = np.asarray(args[argnum], dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        shifted = []
        for sign in (1, -1):
            xs = x.copy()
            xs[i] += sign * eps
            new = list(args)
            new[argnum] = xs
            shifted.append(float(f(*new)))
        g[i] = (shifted[0] - shifted[1]) / (2 * eps)
    return g


def _jit(fn):
    """``_jit(fn)``, or ``fn`` itself where a shape depends on values (boolean masks)."""
    jitted = jax.jit(fn)

    def call(*args):
        try:
            return jitted(*args)
        except (jax.errors.NonConcreteBooleanIndexError, jax.errors.ConcretizationTypeError):
            return fn(*args)
    return call


def _is_float(x):
    return np.asarray(x).dtype.kind == "f"


def check(fn, *args, argnums=0, grad=True, hessian=False, fd=False, fd_rtol=1e-6):
    """Run ``fn(xp, *args)`` under tracegrad and JAX and compare everything asked for.

    The JAX side runs under ``jax.jit``: one XLA compile per oracle instead of one
    per primitive keeps the suite fast.

    - values of NumPy, tracegrad's traced run and JAX agree to ``VALUE_RTOL``;
    - ``tg.grad`` of a weighted sum of the outputs agrees with ``jax.grad`` to
      ``GRAD_RTOL`` and keeps each argument's floating dtype;
    - ``hessian``: ``tg.hessian`` against ``jax.hessian`` (int ``argnums`` only);
    - ``fd``: the gradient against central finite differences.
    Returns tracegrad's gradient (or ``None``).
    """
    np_fn = lambda *a: fn(np, *a)
    jx_fn = lambda *a: fn(jnp, *a)
    expected = np_fn(*args)
    if all(_is_float(a) for a in leaves(args)):
        traced, _ = tg.vjp(np_fn, *args)
    else:   # vjp refuses integer primals; jvp takes them (their tangents are ignored)
        traced, _ = tg.jvp(np_fn, args, jax.tree_util.tree_map(np.zeros_like, args))
    assert_close(traced, expected, VALUE_RTOL, "traced value vs NumPy")
    for t, e in zip(leaves(traced), leaves(expected)):
        assert np.asarray(t).dtype == np.asarray(e).dtype, "traced dtype differs from NumPy's"
    if not grad or not all(_is_float(o) for o in leaves(expected)):
        assert_close(jx_fn(*args), expected, VALUE_RTOL, "JAX value vs NumPy")
        return None

    scalar = weighted_sum(fn, expected)
    s_np = lambda *a: scalar(np, *a)
    s_jx = lambda *a: scalar(jnp, *a)
    value, g = tg.value_and_grad(s_np, argnums=argnums)(*args)
    value_j, g_j = _jit(jax.value_and_grad(s_jx, argnums=argnums))(*args)
    assert_close(value, value_j, VALUE_RTOL, "tg.value_and_grad value vs JAX")
    assert_close(g, g_j, GRAD_RTOL, "tg.grad vs jax.grad")
    nums = (argnums,) if isinstance(argnums, int) else argnums
    g_tuple = (g,) if isinstance(argnums, int) else g
    for i, gi in zip(nums, g_tuple):
        for a_leaf, g_leaf in zip(leaves(args[i]), leaves(gi)):
            want = np.asarray(a_leaf).dtype if _is_float(a_leaf) else np.float64
            if isinstance(a_leaf, float):
                want = np.float64
            assert np.asarray(g_leaf).dtype == want, "gradient dtype differs from the input's"

    if hessian:
        h = tg.hessian(s_np, argnums=argnums)(*args)
        assert_close(h, _jit(jax.hessian(s_jx, argnums=argnums))(*args), GRAD_RTOL,
                     "tg.hessian vs jax.hessian")
    if fd:
        for i, gi in zip(nums, g_tuple):
            want = finite_diff_grad(s_np, args, i)
            np.testing.assert_allclose(gi, want, rtol=fd_rtol, atol=fd_rtol * np.max(np.abs(want)),
                                       err_msg="tg.grad vs central finite differences")
    return g


def same_state(a, b):
    """Whether two random generators' states (``bit_generator.state`` dicts or
    ``RandomState.get_state()`` tuples) are equal, arrays by value."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_state(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same_state(x, y) for x, y in zip(a, b))
    return a == b
