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

A structure seen for the first time is differentiated by one backward sweep on the
trace's values and the seeds' (``once``), computing each node as it records it, and no
graph is made: most such structures are seen once (a higher-order derivative, a loop
whose trip count is data). Seen again, its plan is made from that sweep's records
(``again``), and run. The numbers are those the plan's runs give: the same
implementations on the same values. Where a rule decides something on a value (a guard),
the plan is made from an abstract sweep instead (``first_use``), as it would be without
values. A derivative inlined into an enclosing trace is swept on that trace's values and
recorded there (``inline``) until its structure was seen ``REPLAY_AFTER`` times; then its
adjoint graph is made, pruned and replayed (``Replay``).
"""
from __future__ import annotations

import numpy as np

from ..ir import Graph
from ..ir.aliasing import owned_outputs
from ..ir.evaluate import check_guard
from ..ir.lru import LRU
from ..passes.adjoint import adjoint, backward_graph, cotangent_values, inline_adjoint
from ..passes.prune import live_nodes, prune
from ..tracer.core import Tracer, as_operand, inlined, innermost, is_constant
from .keys import Uncacheable, freeze_params
from .runner import PLAN_COMPILE_AFTER, Runner

# every backward plan of both front ends (the eager engine's too), keyed by
# ("functional", ...) or ("eager", ...) and the structure
PLANS = LRU(256)


def clear():
    """Forget every cached plan (of both front ends: they share ``autodiff.PLANS``)."""
    PLANS.clear()


def _exponent(records, args):
    """The node of a ``pow`` record's exponent (``args``: its operands) when that is a
    one-element constant, else None."""
    record = records[args[1]]
    if record[0] == "const" and record[2]["value"].size == 1:
        return args[1]
    return None


def structure_key(records, outputs, extra=()):
    """The cache key of a trace's ``records`` (see ``Trace.records``) with these outputs,
    or None when some parameter cannot be part of a key. Constants are keyed by shape
    and dtype only, but for a one-element constant exponent (``x ** 2``), keyed by its
    value too (see ``kept_constants``)."""
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
                if op == "pow":
                    a = _exponent(records, args)
                    if a is not None:
                        append(("exponent", a, records[a][2]["value"].tobytes()))
    except Uncacheable:
        return None
    return "functional", tuple(parts), tuple(outputs), extra


def kept_constants(records):
    """The constants a plan keeps as constants of its graph, not inputs: the one-element
    exponents of ``pow``, whose values ``structure_key`` holds. Their derivative rule
    is the plain one (``2 * x`` for ``x ** 2``, not the rule guarded for an exponent
    that may be 0, whose selects every backward run would compute)."""
    kept = set()
    for op, args, _, _, _, _ in records:
        if op == "pow":
            a = _exponent(records, args)
            if a is not None:
                kept.add(a)
    return kept


def forward_graph(records, outputs, kept=()) -> Graph:
    """The traced graph with every constant made an input (after the traced inputs,
    in node order), so that no rule can read a constant's value into the plan, but the
    constants ``kept`` (see ``kept_constants``)."""
    g = Graph()
    for n, (op, args, params, shape, dtype, src) in enumerate(records):
        if op == "const" and n in kept:
            m = g.add_const(params["value"], src=src)
        elif op == "input" or op == "const":
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

    def __init__(self, records, outputs, wrt, seeds, values=None, seed_values=None,
                 backward=None):
        """With ``values`` (the trace's, by node) and ``seed_values``, the sweep runs on
        them, and ``first`` holds what this first use gives (see ``__call__``); raises
        ``ValueDependent`` where that cannot make a plan. ``backward``: the backward
        graph made already (``once``), no sweep."""
        bw = backward if backward is not None else backward_graph(
            forward_graph(records, outputs, kept_constants(records)), wrt, seeds=seeds,
            values=values, seed_values=seed_values, origins=False)
        self.graph = bw.graph
        self.saved = bw.saved
        self.seeds = bw.seeds
        self.outputs = bw.outputs
        self.avals = [(records[n][3], records[n][4]) for n in wrt]
        self.run = Runner(self.graph, owned=True, after=PLAN_COMPILE_AFTER)
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


REPLAY_AFTER = 8    # the sighting of an inlined structure at which its Replay is made


class Seen:
    """What ``PLANS`` holds for a structure met, but not planned yet: how many times it
    was met (``uses``), and for a Plan, ``later()`` making its backward graph from the
    sweep its first use ran (``once``).

    A Plan is made from the second time a structure is met: its first use sweeps once
    on the values (what making the plan costs, but its graph) and keeps the sweep's
    records, from which the second use makes the plan's graph and runs it. A ``Replay``
    costs more to make (the adjoint graph, pruned, and an enclosing plan made afresh
    for the new records) and saves less against inlining by a sweep (``inline``): about
    a quarter of it, so it is made once a structure was met ``REPLAY_AFTER`` times."""

    __slots__ = ("uses", "later")

    def __init__(self, later=None):
        self.uses = 1
        self.later = later

    def __repr__(self):
        return f"<structure met {self.uses} time(s)>"


def due(key, entry, after):
    """Whether to make the Replay of structure ``key`` now, met again (``entry``: what
    ``PLANS`` holds for it, None or a ``Seen``): at its ``after``-th sighting. Counts
    the sighting otherwise."""
    if entry is None:
        if after <= 1:
            return True
        PLANS.put(key, Seen())
        return False
    entry.uses += 1     # (a count: a lost update between threads costs nothing)
    return entry.uses >= after


def once(key, records, outputs, wrt, seeds, values, seed_values):
    """The cotangents of ``wrt`` (fresh arrays) for structure ``key``, met for the first
    time: one sweep on the trace's ``values`` and the seeds' (the numbers ``first_use``
    gives), keeping what makes the plan's graph later (``Seen``, stored under ``key``).
    None where that sweep cannot give them (the caller makes the plan: ``first_use``)."""
    try:
        cts, later = cotangent_values(forward_graph(records, outputs, kept_constants(records)),
                                      wrt, seeds, values, seed_values)
    except Exception:   # ValueDependent, or a rule that cannot run on these values
        return None
    PLANS.put(key, Seen(later))
    return [np.zeros(records[n][3], records[n][4]) if ct is None else ct
            for n, ct in zip(wrt, cts)]


def again(key, seen, records, wrt):
    """The Plan of structure ``key`` met a second time (``seen``, from ``once``), made
    from the first time's sweep and stored; None where there is none to make it from."""
    if seen.later is None:
        return None
    try:
        plan = Plan(records, None, wrt, None, backward=seen.later())
    except Exception:   # (as first_use: the caller makes it another way)
        return None
    plan.run.uses = 1   # (its first use was its making, as for first_use's plans)
    PLANS.put(key, plan)
    return plan


def inline(graph, args, wrt, seeds, seed_values, fwd, guards, known=None):
    """A derivative inlined into an enclosing trace, for a structure not replayed yet:
    what ``Replay``'s graph gives (``graph``'s forward outputs ``fwd``, then the
    cotangents of ``wrt``), recorded into the trace of ``args``'s tracers by one backward
    sweep on its values (``passes.adjoint.inline_adjoint``), without making and pruning
    the adjoint graph first and then replaying it: most such structures are met once (a
    higher-order derivative, ``grad(grad(f))(x)``). ``graph``: the traced function's
    graph (its inputs standing for ``args``, its outputs the traced outputs), ``wrt`` its
    first inputs; ``guards``: its branch decisions, ``(node, expected)``, recorded in the
    enclosing trace on the way; ``known``: node -> its value recorded there already
    (tg.vjp's forward pass).

    None (nothing returned, though nodes may have been recorded, which nothing uses)
    where the replayed graph is to be used instead: an enclosing trace that is not a
    derivative's on values (tg.jit's, tg.trace's: the graph they make holds no node its
    outputs do not use, while a derivative's passes skip such nodes), a differentiated
    argument that is a constant there (the rules would take it for one: ``x ** y``'s
    drops the cotangent of a constant exponent, while the adjoint graph has an input
    there), a rule that fails on these values, or a floating-point error on the way (it
    may be in a value the adjoint graph would not keep, which must not warn)."""
    n_wrt = len(wrt)
    top = innermost(args)
    if top is None or top.differentiated is None or \
            innermost(list(args) + list(seed_values)) is not top or not all(
            isinstance(a, Tracer) and a._value is not None and not is_constant(a)
            for a in args[:n_wrt]):
        return None
    failed = []
    modes = {k: "ignore" if v == "ignore" else "call" for k, v in np.geterr().items()}
    try:
        with np.errstate(call=lambda kind, flag: failed.append(kind), **modes):
            env = inlined(graph, args, known)
            for n, expected in guards:
                check_guard(graph, n, env[n], expected)
            top = env.top
            outs = graph.outputs
            seed_cts = [as_operand(top, v, graph.node(outs[i])["src"])
                        for i, v in zip(seeds, seed_values)]
            cts = inline_adjoint(graph, env, seeds, seed_cts, wrt)
            result = [env[outs[i]] for i in fwd] + cts
    except Exception:   # noqa: BLE001 - the replayed graph's path says what fails
        return None
    return None if failed else result


def lookup(key):
    """The plan cached under ``key``: a Plan or Replay, False for a structure known not
    to plan, a ``Seen`` for one met too few times to plan yet, or None when there is
    none yet."""
    return PLANS.get(key)


def store(key, plan):
    PLANS.put(key, plan)
