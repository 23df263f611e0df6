"""``tg.checkpoint``: trade compute for memory in reverse mode (rematerialisation).

``tg.checkpoint(f)`` traces ``f`` into a sub-graph held by one ``remat_call`` node,
which gives all of ``f``'s outputs. The forward pass keeps only those; the backward
pass runs the adjoint of the sub-graph, which recomputes the intermediates it needs
right before using them. Checkpointing every block of a deep chain bounds the values alive at once
by about one block's worth instead of the whole chain's.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np

from .._typing import R
from ..errors import TraceError
from ..ir import Aval, apply
from ..passes.common import finish
from ..tracer import Tracer, flatten, new_trace, unflatten, where


@overload
def checkpoint(fun: Callable[..., R], *,
               static_argnums: int | Sequence[int] = ()) -> Callable[..., R]: ...
@overload
def checkpoint(fun: None = None, *, static_argnums: int | Sequence[int] = ()
               ) -> Callable[[Callable[..., R]], Callable[..., R]]: ...
def checkpoint(fun: Callable[..., R] | None = None, *, static_argnums: int | Sequence[int] = ()
               ) -> Callable[..., R] | Callable[[Callable[..., R]], Callable[..., R]]:
    """``fun`` whose intermediates are recomputed in the backward pass instead of stored
    (JAX's ``jax.checkpoint`` / PyTorch's ``torch.utils.checkpoint``). Usable as a
    decorator, with or without arguments.

    Args:
        fun: the function to checkpoint; leave it out to get a decorator.
        static_argnums: positions of arguments passed through as they are (not
            traced), e.g. Python flags.

    Returns:
        A function with ``fun``'s arguments and results. Outside a transform it just
        calls ``fun``.

    Raises:
        TraceError: ``fun`` closes over a value traced outside of it (pass it as an
            argument instead).
    """
    if fun is None:
        return lambda f: checkpoint(f, static_argnums=static_argnums)
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def wrapped(*args: Any) -> R:
        dynamic = [a for i, a in enumerate(args) if i not in static]
        leaves, tree = flatten(dynamic)
        if not any(isinstance(leaf, Tracer) for leaf in leaves):
            return fun(*args)           # nothing is being differentiated: just run it
        with new_trace() as trace:
            inner = []
            for leaf in leaves:
                if isinstance(leaf, Tracer):
                    inner.append(trace.new_input(leaf._value, Aval(leaf.shape, leaf.dtype)))
                else:
                    arr = np.asarray(leaf)
                    inner.append(trace.new_input(arr, Aval(arr.shape, arr.dtype)))
            it = iter(unflatten(tree, inner))
            call_args = [a if i in static else next(it) for i, a in enumerate(args)]
            out = fun(*call_args)
            out_leaves, out_tree = flatten(out)
            if trace.captured:
                raise TraceError(f"tg.checkpoint: {getattr(fun, '__name__', 'the function')} "
                                 "closes over a value traced outside of it; pass it as an "
                                 f"argument instead{where()}")
            graph = finish(trace, out_leaves)
        # one node, all of ``fun``'s outputs from one run of the sub-graph
        outs = list(apply("remat_call", *leaves, graph=graph)) if graph.outputs else []
        return unflatten(out_tree, outs)
    return wrapped
