"""``custom_vjp``: a function with a hand-written reverse-mode rule, as in JAX."""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.dtypes import is_float
from ..tracer import (
    Tracer,
    coerce,
    flatten,
    unflatten,
    user_src,
    where,
)
from .tracing import _at, _fun_name

__all__ = ["custom_vjp"]


class _CustomRule:
    """What a ``custom_vjp_call`` node needs to run the user's ``bwd``."""

    def __init__(self, name, bwd, out_avals, out_tree, res_tree, res_leaves, arg_tree,
                 arg_leaves):
        self.name, self.bwd = name, bwd
        self.out_avals, self.out_tree = out_avals, out_tree
        self.res_tree, self.arg_tree = res_tree, arg_tree
        # Traced leaves travel as node operands; the rest is kept here by value.
        self.res_static = [None if isinstance(r, Tracer) else r for r in res_leaves]
        self.arg_traced = [isinstance(a, Tracer) for a in arg_leaves]
        self.arg_shapes = [tuple(np.shape(a)) for a in arg_leaves]
        self.n_res = sum(isinstance(r, Tracer) for r in res_leaves)

    def __repr__(self):
        return f"custom_vjp({self.name})"

    def backward(self, g, index, operands, out=None):
        """One cotangent per operand of the node: ``None`` for each residual (``bwd``
        replaces their derivative), then the user's cotangents for the traced args."""
        it = iter(operands[:self.n_res])
        res = unflatten(self.res_tree, [next(it) if s is None else s for s in self.res_static])
        cts = [g if k == index else np.zeros(shape, dtype)
               for k, (shape, dtype) in enumerate(self.out_avals)]
        result = self.bwd(res, unflatten(self.out_tree, cts))
        n_args = len(self.arg_tree.children)
        if not isinstance(result, (tuple, list)) or len(result) != n_args:
            raise TraceError(f"the bwd rule of custom_vjp function {self.name} must return a "
                             f"tuple with one cotangent per argument ({n_args}), got "
                             f"{type(result).__name__}{where()}")
        leaves = []
        for k, (ct, sub) in enumerate(zip(result, self.arg_tree.children)):
            if ct is None:
                leaves.extend([None] * sub.num_leaves)
                continue
            ct_leaves, ct_tree = flatten(ct)
            if ct_tree != sub:
                raise TraceError(f"the bwd rule of custom_vjp function {self.name} returned a "
                                 f"cotangent of structure {ct_tree!r} for argument {k}, which has "
                                 f"structure {sub!r}{where()}")
            leaves.extend(ct_leaves)
        for ct, shape in zip(leaves, self.arg_shapes):
            if ct is not None and not _fits(tuple(np.shape(ct)), shape):
                raise TraceError(f"the bwd rule of custom_vjp function {self.name} returned a "
                                 f"cotangent of shape {tuple(np.shape(ct))} for an argument of "
                                 f"shape {shape}: each cotangent must have its argument's shape"
                                 f"{where()}")
        return [None] * self.n_res + [ct for ct, traced in zip(leaves, self.arg_traced) if traced]


def _fits(ct_shape, shape):
    """A cotangent of ``ct_shape`` can stand for an argument of ``shape``: equal, or one
    broadcast from the other (the adjoint pass sums or broadcasts it into place)."""
    try:
        joint = np.broadcast_shapes(ct_shape, shape)
    except ValueError:
        return False
    return joint in (ct_shape, shape)


class custom_vjp:
    """A function with a hand-written reverse-mode rule, as in JAX.

    ```python
    @tg.custom_vjp
    def f(x, c): ...
    f.defvjp(fwd, bwd)   # fwd(*args) -> (out, residuals); bwd(residuals, g) -> tuple
    ```

    Called outside a transform (or from inside ``fwd``), the function just runs.

    Args:
        fun: the function whose derivative ``defvjp`` replaces.
    """

    def __init__(self, fun: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd = self.bwd = None
        self._in_fwd = 0    # > 0 while fwd runs: there, calling the function is its primal

    def defvjp(self, fwd: Callable[..., tuple[Any, Any]],
               bwd: Callable[[Any, Any], Sequence[Any]]) -> custom_vjp:
        """Set the rule.

        Args:
            fwd: ``fwd(*args) -> (out, residuals)``: the output and what ``bwd`` needs.
            bwd: ``bwd(residuals, g) -> tuple``: one cotangent per argument (``None``
                for none) given the output's cotangent ``g``.

        Returns:
            The function itself, so ``f = tg.custom_vjp(f).defvjp(fwd, bwd)`` works.
        """
        self.fwd, self.bwd = fwd, bwd
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = inspect.signature(self.fun).bind(*args, **kwargs).args
        arg_leaves, arg_tree = flatten(tuple(args))
        # JAX's documented fwd is ``def f_fwd(x): return f(x), x``: inside fwd, f is the
        # plain function, not another custom rule (which would recurse forever)
        if self._in_fwd or not any(isinstance(a, Tracer) for a in arg_leaves):
            return self.fun(*args)
        if self.fwd is None:
            raise TraceError(f"custom_vjp function {_fun_name(self.fun)} has no rule yet: call "
                             f"{_fun_name(self.fun)}.defvjp(fwd, bwd) first{_at(user_src())}")
        self._in_fwd += 1
        try:
            out, res = self.fwd(*args)
        finally:
            self._in_fwd -= 1
        out_leaves, out_tree = flatten(out)
        out_leaves = [coerce(o) for o in out_leaves]
        res_leaves, res_tree = flatten(res)
        out_avals = [(tuple(np.shape(o)), np.dtype(getattr(o, "dtype", np.result_type(o))))
                     for o in out_leaves]
        rule = _CustomRule(_fun_name(self.fun), self.bwd, out_avals, out_tree, res_tree,
                           res_leaves, arg_tree, arg_leaves)
        operands = [r for r in res_leaves if isinstance(r, Tracer)] + [
            a for a in arg_leaves if isinstance(a, Tracer)]
        marked = [apply("custom_vjp_call", o, *operands, rule=rule, index=k)
                  if is_float(aval[1]) else o for k, (o, aval) in enumerate(zip(out_leaves,
                                                                                 out_avals))]
        return unflatten(out_tree, marked)
