"""``tg.vmap``: a function of one example, applied to a batch of them at once.

The function is traced once on one example's shapes; ``passes.batch`` gives the graph a
leading batch axis on the mapped inputs (one rule per primitive, row by row where a
primitive has none); the batched graph then runs on the whole batch, or is inlined into
an enclosing transform, so ``tg.grad(tg.vmap(f))`` and ``tg.vmap(tg.grad(f))`` work.
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .errors import TraceError
from .passes.batch import batch
from .runtime.interpreter import call_graph
from .tracer import Tracer, flatten, sync, unflatten, user_src, where
from .tracer.core import BATCHING


def _axes_per_arg(in_axes, n_args):
    if in_axes is None or isinstance(in_axes, int):
        return [in_axes] * n_args
    if isinstance(in_axes, (tuple, list)) and len(in_axes) == n_args:
        return list(in_axes)
    raise TraceError(f"vmap in_axes must be an int, None, or a tuple with one entry per "
                     f"argument ({n_args}), got {in_axes!r}{where()}")


def _first_row(leaf):
    """Example 0 of a mapped leaf (batch axis in front). A traced leaf's row is read from
    its value, so tracing it records nothing in the enclosing trace; an abstract one (no
    value) gives an abstract row."""
    if isinstance(leaf, Tracer):
        sync(leaf)                  # a view of an array assigned into since
        return leaf[0] if leaf._value is None else np.asarray(leaf._value)[0]
    return np.asarray(leaf)[0]


def _weak_number(leaf):
    """An unmapped leaf as the example to trace on: a traced Python number (weak, NEP 50)
    as a Python number of its value, so the function sees a weak scalar; others as is."""
    if isinstance(leaf, Tracer) and leaf._weak is not None:
        return leaf._weak(np.asarray(leaf._value)[()] if leaf._value is not None else 0)
    return leaf


def vmap(fun: Callable[..., Any], in_axes: int | None | Sequence[int | None] = 0,
         out_axes: int | None = 0) -> Callable[..., Any]:
    """Map ``fun`` over an axis of its arguments, as one batched computation.

    ``fun`` is traced once, on the first example, and its graph batched by
    ``tg.passes.batch``; branching on the values of mapped arguments is refused.

    Args:
        fun: the function to map; it takes positional arguments only.
        in_axes: the mapped axis of every argument (an int), or one int or ``None``
            per argument (``None``: not mapped, passed whole to every example).
        out_axes: where the batch axis goes in every output.

    Returns:
        The mapped function, taking ``fun``'s arguments with the extra axis.

    Raises:
        TraceError: an axis is out of range, the mapped axes differ in size or have
            size 0, or ``in_axes`` does not match the arguments.
    """
    @functools.wraps(fun)
    def mapped(*args: Any) -> Any:
        axes = _axes_per_arg(in_axes, len(args))
        leaves, leaf_axes = [], []
        trees = []
        for arg, ax in zip(args, axes):
            arg_leaves, tree = flatten(arg)
            trees.append(tree)
            leaves += arg_leaves
            leaf_axes += [ax] * len(arg_leaves)
        sizes, moved = set(), []
        for leaf, ax in zip(leaves, leaf_axes):
            if ax is None:
                moved.append(leaf)
                continue
            nd = len(np.shape(leaf))
            if not -nd <= ax < nd:
                raise TraceError(f"vmap in_axes={ax} is out of range for an argument of shape "
                                 f"{tuple(np.shape(leaf))}{where()}")
            leaf = leaf if isinstance(leaf, Tracer) else np.asarray(leaf)
            leaf = np.moveaxis(leaf, ax, 0) if ax % nd else leaf
            sizes.add(int(np.shape(leaf)[0]))
            moved.append(leaf)
        if len(sizes) != 1:
            raise TraceError(f"vmap needs the mapped axes to have one size, got "
                             f"{sorted(sizes) or 'no mapped argument'}{where()}")
        (size,) = sizes
        if size == 0:
            # no example to trace on (made-up zeros would make solve or inv singular)
            raise TraceError(f"vmap over an empty batch (a mapped axis of length 0) is not "
                             f"supported{where()}")
        # The function is traced on the real first example, not on made-up values (zeros
        # make np.linalg.solve or inv fail with "Singular matrix"); a branch on its values
        # is refused by ``batch``, so the trace holds for every row.
        # (a Python number traced by an enclosing transform stands in as a Python number:
        # it stays a weak scalar, NEP 50)
        examples = [_first_row(leaf) if ax is not None else _weak_number(leaf)
                    for leaf, ax in zip(moved, leaf_axes)]

        out_tree = {}

        def flat_fun(*flat):
            it = iter(flat)
            rebuilt = [unflatten(t, [next(it) for _ in range(t.num_leaves)]) for t in trees]
            out = fun(*rebuilt)
            out_tree["tree"] = flatten(out)[1]
            return out

        from .api import _Traced
        token = BATCHING.set(True)
        try:
            traced = _Traced(flat_fun, examples, {}, tuple(range(len(examples))), user_src(),
                             differentiable=False, check_complex=False)
        finally:
            BATCHING.reset(token)
        graph = traced.graph
        # values of an enclosing transform the function closes over (tg.grad of a loss
        # whose vmap uses traced weights) are extra, unbatched inputs
        captured = traced.eval_args[traced.n_in:]
        positions = [k for k, ax in enumerate(leaf_axes) if ax is not None]
        batched = batch(graph, positions, size)
        outs = call_graph(batched, list(moved) + list(captured))
        result = []
        for out in outs:
            if out_axes not in (0, None):
                out = np.moveaxis(out, 0, operator.index(out_axes))
            result.append(out)
        return unflatten(out_tree["tree"], result)
    return mapped
