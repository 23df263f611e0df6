"""``tg.vmap``: a function of one example, applied to a batch of them at once.

The function is traced once on one example's shapes; ``passes.batch`` gives the graph a
leading batch axis on the mapped inputs (one rule per primitive, row by row where a
primitive has none); the batched graph then runs on the whole batch, or is inlined into
an enclosing transform, so ``tg.grad(tg.vmap(f))`` and ``tg.vmap(tg.grad(f))`` work.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from .errors import TraceError
from .passes.batch import batch
from .runtime.interpreter import call_graph
from .tracer import Tracer, flatten, unflatten, where


def _axes_per_arg(in_axes, n_args):
    if in_axes is None or isinstance(in_axes, int):
        return [in_axes] * n_args
    if isinstance(in_axes, (tuple, list)) and len(in_axes) == n_args:
        return list(in_axes)
    raise TraceError(f"vmap in_axes must be an int, None, or a tuple with one entry per "
                     f"argument ({n_args}), got {in_axes!r}{where()}")


def vmap(fun, in_axes=0, out_axes=0):
    """Map ``fun`` over axis ``in_axes`` of its arguments (an int for all, or one int or
    None per argument; None: not mapped); outputs get the batch axis at ``out_axes``."""
    @functools.wraps(fun)
    def mapped(*args):
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
        # (a Python number traced by an enclosing transform stands in as a Python number:
        # it stays a weak scalar, NEP 50)
        examples = [leaf._weak(0) if ax is None and getattr(leaf, "_weak", None) is not None
                    else np.zeros(np.shape(leaf)[1:] if ax is not None else np.shape(leaf),
                                  np.result_type(leaf)) if ax is not None or isinstance(leaf, Tracer)
                    else leaf for leaf, ax in zip(moved, leaf_axes)]

        out_tree = {}

        def flat_fun(*flat):
            it = iter(flat)
            rebuilt = [unflatten(t, [next(it) for _ in range(t.num_leaves)]) for t in trees]
            out = fun(*rebuilt)
            out_tree["tree"] = flatten(out)[1]
            return out

        from .api import trace
        graph = trace(flat_fun, *examples)
        positions = [k for k, ax in enumerate(leaf_axes) if ax is not None]
        batched = batch(graph, positions, size)
        outs = call_graph(batched, moved)
        result = []
        for out in outs:
            if out_axes not in (0, None):
                out = np.moveaxis(out, 0, operator.index(out_axes))
            result.append(out)
        return unflatten(out_tree["tree"], result)
    return mapped
