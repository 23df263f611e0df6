"""Implicit differentiation with JAX's signatures: ``custom_root`` and
``custom_linear_solve``.

```python
def sqrt(a):                                      # the root of x**2 - a, by Newton
    f = lambda x: x ** 2 - a
    newton = lambda f, x0: tg.while_loop(lambda x: np.abs(f(x)) > 1e-12,
                                         lambda x: x - f(x) / (2 * x), x0)
    return tg.custom_root(f, 1.0, newton, lambda g, y: y / g(1.0))

tg.grad(sqrt)(2.0)          # 1 / (2 sqrt(2)), from f's derivative at the root
```

``solve`` finds the root any way it likes (a ``tg.while_loop``, a Python loop on the
values, a ``tg.pure_callback``): no derivative is taken through it. The root's
derivative with respect to the values ``f`` closes over comes from the implicit function
theorem: ``f(x*(θ), θ) = 0`` gives ``∂f/∂x ẋ* = -∂f/∂θ θ̇``, solved by the user's
``tangent_solve(g, y)`` (``g``: the linearization of ``f`` in ``x`` at the root). Reverse
mode solves the transposed system with the same ``tangent_solve``, handing it the
transpose of the linearization. The derivative rules are differentiable again, so
``hessian``, ``grad`` of ``grad`` and ``jvp`` of ``grad`` work. The rules live in
``higher/implicit.py`` (the ``custom_root`` primitive).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._typing import PyTree
from ..errors import TraceError
from ..higher.subgraph import adjoint_of, tangent_graph
from ..ir import apply
from ..ir.evaluate import call
from ..tracer import Tracer, flatten, unflatten, where
from .control_flow import _arrays, _aval, _trace
from .tracing import stop_gradient

__all__ = ["custom_root", "custom_linear_solve"]


def _show(avals):
    return ", ".join(f"{np.dtype(d).name}{list(s)}" for s, d in avals)


def _check_like(leaves_avals, tree, want_avals, want_tree, what):
    """``what`` has the structure, shapes and dtypes of the initial guess."""
    if tree != want_tree:
        raise TraceError(f"{what} has structure {tree!r}, but initial_guess has structure "
                         f"{want_tree!r}{where()}")
    got = [(tuple(s), np.dtype(d)) for s, d in leaves_avals]
    want = [(tuple(a.shape), np.dtype(a.dtype)) for a in want_avals]
    if got != want:
        raise TraceError(f"{what} must have the shapes and dtypes of initial_guess: got "
                         f"[{_show(got)}], initial_guess is [{_show(want)}]{where()}")


def _leaf_avals(leaves):
    return [(tuple(np.shape(v)), v.dtype if isinstance(v, Tracer) else np.asarray(v).dtype)
            for v in leaves]


def _solve_graph(f_graph, tree, avals, c_avals, tangent_solve, transpose, who):
    """The graph ``(*x, *consts, *rhs) -> tangent_solve(g, rhs)``, ``g`` the linearization of
    ``f`` in ``x`` at ``x`` (or its transpose)."""
    n_x, n_c, n_f = len(avals), len(c_avals), len(f_graph.outputs)
    lin = adjoint_of(f_graph, tuple(range(n_f))) if transpose else tangent_graph(f_graph)

    def fn(ins):
        x, consts, rhs = ins[:n_x], ins[n_x:n_x + n_c], ins[n_x + n_c:]
        zeros_c = [np.zeros(a.shape, a.dtype) for a in c_avals]

        def g(v):
            v_leaves, v_tree = flatten(v)
            if v_tree != tree:
                raise TraceError(f"the function given to {who}'s tangent_solve takes a value "
                                 f"of the root's structure {tree!r}, got {v_tree!r}{where()}")
            v_leaves = [t if isinstance(t, Tracer) else np.asarray(t, a.dtype)
                        for t, a in zip(v_leaves, avals)]
            if transpose:
                out = call(lin, [*x, *consts, *v_leaves])[n_f:n_f + n_x]
            else:
                out = call(lin, [*x, *consts, *v_leaves, *zeros_c])[n_f:]
            return unflatten(tree, out)

        out = tangent_solve(g, unflatten(tree, rhs))
        leaves, out_tree = flatten(out)
        _check_like(_leaf_avals(leaves), out_tree, avals, tree,
                    f"the result of {who}'s tangent_solve")
        return leaves

    # values it closes over become inputs after the right-hand side (and node operands)
    graph, captured, _ = _trace(fn, avals + c_avals + avals, f"the tangent_solve given to {who}")
    return graph, list(captured)


def _root(f, initial_guess, solve, tangent_solve, transpose_solve, has_aux, who):
    guess, tree = flatten(initial_guess)
    guess = _arrays(guess)
    if not guess:
        raise TraceError(f"{who} needs an initial_guess with at least one array{where()}")
    avals = [_aval(x) for x in guess]
    for a in avals:
        if np.dtype(a.dtype).kind != "f":
            raise TraceError(f"{who} finds a root of floating values, got an initial_guess "
                             f"leaf of dtype {np.dtype(a.dtype).name}{where()}")

    def f_leaves(ins):
        out_leaves, out_tree = flatten(f(unflatten(tree, ins)))
        _check_like(_leaf_avals(out_leaves), out_tree, avals, tree, f"f's output (in {who})")
        return out_leaves

    f_graph, consts, _ = _trace(f_leaves, avals, f"the f given to {who}")
    out = solve(f, unflatten(tree, guess))
    if has_aux:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise TraceError(f"with has_aux=True, {who}'s solve must return (root, aux), got "
                             f"{type(out).__name__}{where()}")
        out, aux = out
    sol, sol_tree = flatten(out)
    _check_like(_leaf_avals(sol), sol_tree, avals, tree, f"the root {who}'s solve returned")
    if any(isinstance(v, Tracer) for v in list(sol) + list(consts)):
        c_avals = [_aval(c) for c in consts]
        solve_g, cap_g = _solve_graph(f_graph, tree, avals, c_avals, tangent_solve, False, who)
        solve_t, cap_t = _solve_graph(f_graph, tree, avals, c_avals, transpose_solve, True, who)
        sol = list(apply("custom_root", *_arrays(sol), *consts, *cap_g, *cap_t, f=f_graph,
                         solve=solve_g, solve_t=solve_t, n_x=len(sol)))
    root = unflatten(tree, sol)
    return (root, stop_gradient(aux)) if has_aux else root


def custom_root(f: Callable[[PyTree], PyTree], initial_guess: PyTree,
                solve: Callable[[Callable, PyTree], Any],
                tangent_solve: Callable[[Callable, PyTree], PyTree],
                has_aux: bool = False) -> Any:
    """A root of ``f``, found by ``solve`` and differentiated implicitly (JAX's
    ``jax.lax.custom_root``).

    Derivatives with respect to the values ``f`` closes over come from ``f``'s own
    derivatives at the root, never from differentiating ``solve``: if ``f(x*, θ) = 0``
    then ``∂f/∂x · dx* = -∂f/∂θ · dθ``, a linear system ``tangent_solve`` solves. Reverse
    mode hands ``tangent_solve`` the transpose of the linearization instead (so it must
    solve ``g(v) = y`` for any linear ``g`` of the root's shape, as the usual
    ``lambda g, y: y / g(1.0)`` and
    ``lambda g, y: np.linalg.solve(tg.jacobian(g)(y), y)`` do). Both modes, to any
    order, under ``tg.jit`` (NumPy and JAX backends) and ``tg.vmap``.

    Args:
        f: ``f(x) -> y``, ``y`` of ``x``'s structure, shapes and dtypes (floating).
        initial_guess: the starting point (a pytree); it receives no derivative.
        solve: ``solve(f, initial_guess) -> x*`` (``(x*, aux)`` with ``has_aux``), by
            any means: ``tg.while_loop``, Python on concrete values, a callback.
        tangent_solve: ``tangent_solve(g, y) -> v`` with ``g(v) = y``, ``g`` a linear
            function of values of the root's structure.
        has_aux: ``solve`` also returns auxiliary data (e.g. a step count), returned
            beside the root with no derivative.

    Returns:
        The root (``(root, aux)`` with ``has_aux``), of ``initial_guess``'s structure.

    Raises:
        TraceError: ``f``, ``solve`` or ``tangent_solve`` returns another structure,
            shape or dtype than ``initial_guess`` has; ``tangent_solve`` closes over a
    """
    return _root(f, initial_guess, solve, tangent_solve, tangent_solve, has_aux,
                 "tg.custom_root")


def custom_linear_solve(matvec: Callable[[PyTree], PyTree], b: PyTree,
                        solve: Callable[[Callable, PyTree], PyTree],
                        transpose_solve: Callable[[Callable, PyTree], PyTree] | None = None,
                        symmetric: bool = False, has_aux: bool = False) -> Any:
    """The ``x`` with ``matvec(x) = b``, found by ``solve(matvec, b)`` and differentiated
    implicitly with respect to ``b`` and to what ``matvec`` closes over (JAX's
    ``jax.lax.custom_linear_solve``).

    Args:
        matvec: a linear function of ``b``'s structure, shapes and dtypes.
        b: the right-hand side (a pytree).
        solve: ``solve(matvec, b) -> x`` (``(x, aux)`` with ``has_aux``); also used
            for the tangents (``solve(g, y)``, ``g`` the same linear map).
        transpose_solve: ``transpose_solve(vecmat, y)``, for reverse mode; when left
            out, ``solve`` is used (given the transpose of ``matvec``).
        symmetric: ``matvec`` is symmetric (``solve`` serves both ways; kept for JAX's
            signature).
        has_aux: ``solve`` also returns auxiliary data, returned with no derivative.

    Returns:
        ``x`` (``(x, aux)`` with ``has_aux``).

    Raises:
        TraceError: as for ``custom_root``.
    """
    def f(x):
        return _sub(matvec(x), b)

    def root_solve(_f, _guess):
        return solve(matvec, b)

    t_solve = solve if (transpose_solve is None or symmetric) else transpose_solve
    return _root(f, b, root_solve, solve, t_solve, has_aux, "tg.custom_linear_solve")


def _sub(a, b):
    a_leaves, a_tree = flatten(a)
    b_leaves, b_tree = flatten(b)
    if a_tree != b_tree:
        raise TraceError(f"matvec returned structure {a_tree!r}, but b has structure "
                         f"{b_tree!r}{where()}")
    return unflatten(a_tree, [x - y for x, y in zip(a_leaves, b_leaves)])
