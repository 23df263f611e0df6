"""Backward plans cached by the structure of a traced function.

An un-jitted ``tg.grad`` traces its function on every call: Python control flow on
values must see each call's values. What follows the trace (the adjoint pass, pruning,
compiling) depends only on the *structure* of what was traced: each node's operation,
operands, shape, dtype and parameters. So the derivative of a trace is cached by that
structure, with every constant turned into an input (constants' values are not part of
the key: they are passed on each call, like the traced inputs), and a repeated call
runs the cached backward code on the values the trace computed (what PyTorch calls
saved tensors) instead of recomputing the forward pass.

A different branch, shape, dtype or parameter gives another structure and so another
entry; a structure whose parameters cannot be compared safely (sub-graphs of loops and
``cond``, custom rules, large index arrays) is never cached, and the caller takes the
uncached path. The keys are ``autodiff.keys``'s, the cache is ``PLANS`` (shared with the
eager engine; least recently used out), and a plan runs by ``autodiff.runner``'s policy:
interpreted on its first uses, compiled to Python once compiling pays.

A plan's first use is its making: the backward sweep runs on the trace's values and the
seeds' (``first_use``), computing each node as it records it, so a structure seen once
(a higher-order derivative, a loop whose trip count is data) costs one sweep, not a sweep
and then a run of its graph. The numbers are those later runs of the plan give: the same
implementations on the same values. Where a rule decides something on a value (a guard),
the plan is made from an abstract sweep instead, as it would be without values.
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph
from ..ir.aliasing import owned_outputs
from ..ir.evaluate import check_guard
from ..ir.lru import LRU
from ..passes.adjoint import adjoint, backward_graph, inline_adjoint
from ..passes.prune import live_nodes, prune
from ..tracer.core import as_operand, inlined
from .keys import Uncacheable, freeze_params
from .runner import Runner

# every backward plan of both front ends (the eager engine's too), keyed by
# ("functional", ...) or ("eager", ...) and the structure
PLANS = LRU(256)


def clear():
    """Forget every cached plan (of both front ends: they share ``autodiff.PLANS``)."""
    PLANS.clear()


def structure_key(records, outputs, extra=()):
    """The cache key of a trace's ``records`` (see ``Trace.records``) with these outputs,
    or None when some parameter cannot be part of a key. Constants are keyed by shape
    and dtype only."""
    parts = []
    append = parts.append
    try:
        for op, args, params, shape, dtype, src in records:
            if op == "input":
                append((op, shape, dtype))      # (its line is where the transform was called)
            elif op == "const":
                append((op, shape, dtype, src))
            else:
                append((op, args, shape, dtype, freeze_params(params) if params else (), src))
    except Uncacheable:
        return None
    return "functional", tuple(parts), tuple(outputs), extra


def forward_graph(records, outputs) -> Graph:
    """The traced graph with every constant made an input (after the traced inputs,
    in node order), so that no rule can read a constant's value into the plan."""
    g = Graph()
    for n, (op, args, params, shape, dtype, src) in enumerate(records):
        if op == "input" or op == "const":
            m = g.add_input(shape, dtype, src=src)
        else:
            m = g.add_node(op, args, params, shape=shape, dtype=dtype, src=src)
        if m != n:
            raise AssertionError("internal error: a plan's forward graph is numbered apart "
                                 "from its trace")
    g.outputs = list(outputs)
    return g


class Plan:
    """The backward graph of one structure: its inputs are the forward values its rules
    read (``saved``: trace node ids) and the cotangent seeds it reads (``seeds``:
    positions among the seeded outputs); ``outputs`` gives, per differentiated input,
    its position among the graph's outputs or None for a zero cotangent."""

    __slots__ = ("graph", "saved", "seeds", "outputs", "avals", "run", "first")

    def __init__(self, records, outputs, wrt, seeds, values=None, seed_values=None):
        """With ``values`` (the trace's, by node) and ``seed_values``, the sweep runs on
        them, and ``first`` holds what this first use gives (see ``__call__``); raises
        ``ValueDependent`` where that cannot make a plan."""
        bw = backward_graph(forward_graph(records, outputs), wrt, seeds=seeds,
                            values=values, seed_values=seed_values, origins=False)
        self.graph = bw.graph
        self.saved = bw.saved
        self.seeds = bw.seeds
        self.outputs = bw.outputs
        self.avals = [(records[n][3], records[n][4]) for n in wrt]
        self.run = Runner(self.graph, owned=True)
        self.first = None
        if values is not None:
            self.run.uses = 1
            args = [values[n] for n in self.saved] + [seed_values[k] for k in self.seeds]
            self.first = self._grads(owned_outputs(self.graph, bw.values, args,
                                                   self.run.bases))

    def __call__(self, values, seeds):
        """The cotangents of the differentiated inputs: fresh, writeable arrays."""
        args = [values[n] for n in self.saved] + [seeds[k] for k in self.seeds]
        return self._grads(self.run(args))

    def _grads(self, outs):
        grads = []
        for k, (shape, dtype) in zip(self.outputs, self.avals):
            if k is None:
                grads.append(np.zeros(shape, dtype))
                continue
            v = outs[k]
            if isinstance(v, np.ndarray) and not v.flags.writeable:
                v = np.array(v)         # a broadcast: hand out a real array
            grads.append(v)
        return grads


def first_use(records, outputs, wrt, seeds, values, seed_values):
    """``(plan, grads)`` for a structure not cached yet: the plan made by sweeping on the
    trace's ``values`` and the seeds' (``grads``, the cotangents of ``wrt``, computed on
    the way), or from an abstract sweep and then run where a rule decides on a value;
    ``(False, None)`` where no plan can be made (the caller takes the uncached path)."""
    try:
        plan = Plan(records, outputs, wrt, seeds, values, seed_values)
    except Exception:   # ValueDependent, or a rule that cannot run on these values
        pass
    else:
        grads, plan.first = plan.first, None
        return plan, grads
    try:
        plan = Plan(records, outputs, wrt, seeds)
    except Exception:   # e.g. a rule that reads a constant's value: not planned
        return False, None
    return plan, plan(values, seed_values)


class Replay:
    """A derivative inlined into an enclosing trace (``grad`` inside ``grad`` or ``jit``):
    the pruned adjoint graph of one structure, forward and backward, with every constant
    an input, for the caller to replay on the enclosing transform's tracers. Nothing
    runs concretely here: what is cached is the adjoint pass and pruning.

    Its outputs are, in order: the forward outputs asked for (``graph(fwd)``), the
    values of the forward nodes ``guards`` (the branch decisions of this call, which the
    caller records in the enclosing trace with this call's expected values), then the
    cotangents of ``wrt``."""

    __slots__ = ("adjoint", "n_out", "graphs", "forward_of")

    def __init__(self, records, outputs, wrt, seeds, guards):
        fwd = forward_graph(records, list(outputs) + list(guards))
        # adjoint node -> the trace node it replays: where the caller already replayed
        # the forward pass (tg.vjp's outputs), those nodes are not recorded again
        self.forward_of = {}
        self.adjoint = adjoint(fwd, seeds=seeds, wrt=wrt, forward_of=self.forward_of)
        self.n_out = len(outputs)
        self.graphs = {}

    def graph(self, fwd):
        """``(graph, used)``: the adjoint pruned to the forward outputs ``fwd`` (a tuple
        of positions), without the inputs nothing uses (a constant or a seed would be a
        dead node of the enclosing trace), and the positions, among the adjoint's
        inputs, of the inputs it keeps."""
        hit = self.graphs.get(fwd)
        if hit is None:
            outs = self.adjoint.outputs
            g = prune(self.adjoint, [outs[i] for i in fwd] + outs[self.n_out:])
            live = live_nodes(g, g.outputs)
            used = [i for i, n in enumerate(g.inputs) if n in live]
            inputs = [g.inputs[i] for i in used]
            g = g.subgraph(g.outputs, keep=live)
            g.inputs = inputs
            for i, n in enumerate(inputs):
                g.node(n).params = {"index": i}
            hit = self.graphs[fwd] = (g, used)
        return hit

    @staticmethod
    def args(records, inputs, seeds, used):
        """The arguments at positions ``used`` of the adjoint's: ``inputs`` (the trace's,
        in order) and the constants' values in node order, then the cotangent ``seeds``."""
        it = iter(inputs)
        out = []
        for op, _, params, _, _, _ in records:
            if op == "input":
                out.append(next(it))
            elif op == "const":
                out.append(params["value"])
        if next(it, it) is not it:
            raise AssertionError("internal error: a trace has more inputs than input records")
        out.extend(seeds)
        return [out[i] for i in used]


# what ``PLANS`` holds for an inlined derivative's structure met once (``inline``): the
# ``Replay`` is made the next time
SEEN = "seen once"


def inline(graph, args, wrt, seeds, seed_values, fwd, guards, known=None):
    """A derivative inlined into an enclosing trace, for a structure met for the first
    time: what ``Replay``'s graph gives (``graph``'s forward outputs ``fwd``, then the
    cotangents of ``wrt``), recorded into the trace of ``args``'s tracers by one backward
    sweep on its values (``passes.adjoint.inline_adjoint``), without making and pruning
    the adjoint graph first and then replaying it. Most such structures are met once (a
    higher-order derivative: ``grad(grad(f))`` called once); one met again gets its
    ``Replay`` then. ``graph``: the traced function's graph (inputs in the order of
    ``args``, outputs the traced outputs); ``guards``: its branch decisions,
    ``(node, expected)``, recorded in the enclosing trace on the way; ``known``: node ->
    its value already recorded there (tg.vjp's forward pass)."""
    env = inlined(graph, args, known)
    for n, expected in guards:
        check_guard(graph, n, env[n], expected)
    top = env.top
    outs = graph.outputs
    seed_cts = [as_operand(top, v, graph.node(outs[i])["src"])
                for i, v in zip(seeds, seed_values)]
    cts = inline_adjoint(graph, env, seeds, seed_cts, wrt)
    return [env[outs[i]] for i in fwd] + cts


def lookup(key):
    """The plan cached under ``key``: a Plan or Replay, False for a structure known not
    to plan, ``SEEN`` for an inlined structure met once, or None when there is none
    yet."""
    return PLANS.get(key)


def store(key, plan):
    PLANS.put(key, plan)
