"""``tg.vmap``: a function of one example, applied to a batch of them at once.

The function is traced once on one example's shapes; ``passes.batch`` gives the graph a
leading batch axis on the mapped inputs (one rule per primitive, row by row where a
primitive has none); the batched graph then runs on the whole batch, or is inlined into
an enclosing transform, so ``tg.grad(tg.vmap(f))`` and ``tg.vmap(tg.grad(f))`` work.
"""
from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ..autodiff import plans
from ..autodiff.runner import Runner
from ..errors import TraceError
from ..ir.evaluate import call
from ..passes.batch import batch
from ..tracer import Tracer, flatten, sync, unflatten, user_src, where
from ..tracer.core import BATCHING, current_trace
from ..tracer.pytree import flatten_up_to
from . import debug


def _is_axis(x):
    return x is None or isinstance(x, int)


def _leaf_axes(prefix, tree, what):
    """One axis (an int or None) per leaf of ``tree``, from ``prefix``: a pytree of ints and
    Nones that is a prefix of ``tree``'s structure (an int or None standing for a whole
    subtree), as JAX reads ``in_axes`` and ``out_axes``."""
    axes_leaves, axes_tree = flatten(prefix, is_leaf=_is_axis)
    for a in axes_leaves:
        if not _is_axis(a) or isinstance(a, bool):
            raise TraceError(f"vmap {what} must hold ints and None, got {a!r}{where()}")
    try:
        subtrees = flatten_up_to(axes_tree, tree)
    except TraceError as e:
        raise TraceError(f"vmap {what} {prefix!r} is not a prefix of the structure "
                         f"{flatten(tree)[1]!r}: {e}{where()}") from None
    out = []
    for ax, sub in zip(axes_leaves, subtrees):
        out += [ax] * len(flatten(sub)[0])
    return out


def _axes_per_arg(in_axes, args):
    n_args = len(args)
    if in_axes is None or isinstance(in_axes, int):
        return [in_axes] * n_args
    if isinstance(in_axes, list) and len(in_axes) == n_args:
        in_axes = tuple(in_axes)
    if isinstance(in_axes, tuple) and len(in_axes) == n_args:
        return list(in_axes)
    if isinstance(in_axes, (tuple, list, dict)) and n_args == 1 and not isinstance(in_axes, tuple):
        return [in_axes]
    raise TraceError(f"vmap in_axes must be an int, None, or a tuple with one entry per "
                     f"argument ({n_args}), got {in_axes!r}{where()}")


def _depends_on(graph, positions):
    """For each output of ``graph``, whether it depends on an input at ``positions``."""
    dep = {graph.inputs[k] for k in positions}
    for n, d in graph.items():
        if n not in dep and any(a in dep for a in d["args"]):
            dep.add(n)
    return [o in dep for o in graph.outputs]


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


class _BatchedPlan:
    """The batched graph of one traced structure (every constant an input), run by the
    autodiff runner's policy: interpreted first, then compiled."""

    __slots__ = ("run",)

    def __init__(self, records, outputs, positions, size):
        forward = plans.forward_graph(records, outputs)
        self.run = Runner(batch(forward, positions, size), owned=True,
                          name="tracegrad_vmap")


def _cached_run(traced, positions, size, moved):
    """The outputs of the traced function batched over ``positions``, from the batched
    graph cached in ``autodiff.PLANS`` by the trace's structure (made on a miss), or None
    where it is not cached: inside an enclosing transform (traced arguments or captured
    outer values: the batched graph is inlined into that trace), a parameter that
    cannot be keyed, or a trace that took a branch. The function is traced on every
    call (its Python runs, a branch picks the structure): only the batching pass and
    its compiling are saved."""
    if any(isinstance(a, Tracer) for a in traced.eval_args) or \
            any(isinstance(a, Tracer) for a in moved) or \
            len(traced.eval_args) != traced.n_in or traced.trace._guards:
        # (a branch taken: the pass checks it does not read a mapped value). Mapped
        # arguments an enclosing transform traces (tg.jacobian of a vmap) must go through
        # the batched graph itself: the cached plan runs the forward graph, which has no
        # stop_gradient left, so a derivative would leak through ``detach``
        return None
    records = traced.trace.records
    key = plans.structure_key(records, traced.outputs, ("vmap", tuple(positions), size))
    if key is None:
        return None
    hit = plans.lookup(key)
    if not isinstance(hit, _BatchedPlan):
        hit = _BatchedPlan(records, traced.outputs, positions, size)
        plans.store(key, hit)
    args, it = [], iter(moved)
    for op, _, params, _, _, _ in records:
        if op == "input":
            args.append(next(it))
        elif op == "const":
            args.append(params["value"])
    return hit.run([np.asarray(a) for a in args])


def vmap(fun: Callable[..., Any], in_axes: Any = 0, out_axes: Any = 0) -> Callable[..., Any]:
    """Map ``fun`` over an axis of its arguments, as one batched computation.

    ``fun`` is traced once, on the first example, and its graph batched by
    ``tg.passes.batch``; branching on the values of mapped arguments is refused.

    Args:
        fun: the function to map; it takes positional arguments only.
        in_axes: the mapped axis of every argument (an int), or a tuple with one entry
            per argument; an entry is an int, ``None`` (not mapped, passed whole to every
            example), or a pytree of them that is a prefix of the argument's structure
            (``{"w": None, "b": 0}`` for a dict argument), as in JAX.
        out_axes: where the batch axis goes in the outputs: an int, or a prefix pytree
            of the output's structure; ``None`` for an output that is not mapped
            (it must not depend on a mapped argument).

    Returns:
        The mapped function, taking ``fun``'s arguments with the extra axis.

    Raises:
        TraceError: an axis is out of range, the mapped axes differ in size or have
            size 0, or ``in_axes`` does not match the arguments.
    """
    @functools.wraps(fun)
    def mapped(*args: Any) -> Any:
        axes = _axes_per_arg(in_axes, args)
        leaves, leaf_axes = [], []
        trees = []
        for arg, ax in zip(args, axes):
            arg_leaves, tree = flatten(arg)
            trees.append(tree)
            leaves += arg_leaves
            leaf_axes += _leaf_axes(ax, arg, "in_axes")
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

        sinks = []

        def flat_fun(*flat):
            it = iter(flat)
            rebuilt = [unflatten(t, [next(it) for _ in range(t.num_leaves)]) for t in trees]
            # tg.debug.print: the printed values become extra outputs, printed batched
            sinks.append(debug._Sink(current_trace()))
            effects = debug.EFFECTS.set(sinks[-1])
            try:
                out = fun(*rebuilt)
            finally:
                debug.EFFECTS.reset(effects)
            out_tree["tree"] = flatten(out)[1]
            return out

        from .tracing import _Traced
        token = BATCHING.set(True)
        try:
            traced = _Traced(flat_fun, examples, {}, tuple(range(len(examples))), user_src(),
                             differentiable=False, check_complex=False, differentiates=False)
        finally:
            BATCHING.reset(token)
        n_out = len(traced.outputs)
        positions = [k for k, ax in enumerate(leaf_axes) if ax is not None]
        outs = None if sinks[-1].records else _cached_run(traced, positions, size, moved)
        if outs is None:
            graph = traced.graph
            if sinks[-1].records:
                printed = [traced._as_node_value(traced.trace, x) for x in sinks[-1].tracers]
                graph.outputs = list(graph.outputs) + [x._node for x in printed]
            # values of an enclosing transform the function closes over (tg.grad of a
            # loss whose vmap uses traced weights) are extra, unbatched inputs
            captured = traced.eval_args[traced.n_in:]
            batched = batch(graph, positions, size)
            outs = call(batched, list(moved) + list(captured))
        else:
            graph = None        # (built only if an out_axes=None check needs it)
        if sinks[-1].records:
            deps = _depends_on(graph, positions)[n_out:]
            unbatched = [(0,)] * len(deps)
            for record in sinks[-1].records:
                # as jax.debug.print under vmap: a print of values that depend on the
                # mapped arguments is made once per example, in order; one that does not,
                # once
                if any(deps[v[1]] for v in record[2]
                       if v[0] in ("out", "when") and isinstance(v[1], int)):
                    for b in range(size):
                        debug.forward_all([record], outs[n_out:],
                                          leads=[(b,) if d else (0,) for d in deps])
                else:
                    debug.forward_all([record], outs[n_out:], leads=unbatched)
            outs = outs[:n_out]
            graph.outputs = graph.outputs[:n_out]
        out_value = unflatten(out_tree["tree"], list(range(len(outs))))
        out_leaf_axes = _leaf_axes(out_axes, out_value, "out_axes")
        mapped_outs = None
        result = []
        for k, (out, ax) in enumerate(zip(outs, out_leaf_axes)):
            if ax is None:
                if mapped_outs is None:
                    mapped_outs = _depends_on(traced.graph if graph is None else graph,
                                              positions)
                if mapped_outs[k]:
                    raise TraceError(f"vmap out_axes=None for an output that depends on a "
                                     f"mapped argument{where()}")
                out = out[0]
            elif ax != 0:
                out = np.moveaxis(out, 0, operator.index(ax))
            result.append(out)
        return unflatten(out_tree["tree"], result)
    return mapped
