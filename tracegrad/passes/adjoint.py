"""Reverse mode as a graph-to-graph pass.

The forward graph is replayed into a new trace; then ``ir.evaluate`` walks its
transpose (the nodes last first, each one's operands its users), calling each node's
VJP rule on traced values. The rules are NumPy code, so
they record ordinary nodes: the result is a plain graph that this same pass
can differentiate again (``adjoint(adjoint(g))`` gives second derivatives).

``backward_graph`` is the same sweep cut at the forward values: a graph that
takes the values the rules read (what PyTorch calls saved tensors) as inputs
instead of recomputing them. The eager front end runs that graph, so a
``Tensor.backward()`` and ``tg.grad`` use the one engine. Given the forward values and
the seeds' values (``values=``), it sweeps on them: each node a rule records is computed
as it is recorded, by the implementation the graph runs, so a derivative used once needs
no second pass over its graph (``tracegrad.autodiff.plans``).
"""
import functools
from typing import NamedTuple

import numpy as np

from ..errors import TraceError
from ..ir import PROJ, REGISTRY, Aval, Graph, apply
from ..ir.evaluate import Nodes, evaluate
from ..ir.graph import Node, dtype_name
from ..tracer import Tracer, new_trace, replay, source_override
from .common import abstract_inputs, at_node, at_node_error, carries_gradient, finish, fit, zeros


class _Sweep(NamedTuple):
    env: dict           # forward node -> its replay in the trace
    seeds: list         # the cotangent seed tracers, one per seeded output
    final: dict         # node of `wrt` -> its complete cotangent (a tracer)
    origin: dict        # node made by a rule -> the forward node whose rule made it
    returned: dict      # forward node -> the nodes its rule returned (for anomaly checks)


class ValueDependent(Exception):
    """A sweep on concrete values recorded a decision taken on a value (a guard), met a
    value it was not given (its graph does not hold for other values), or computed a
    node of its graph with a floating-point error (left to a run of the graph to
    report, as NumPy does)."""


def _valued_input(trace, d, value):
    """An input of ``trace`` with node ``d``'s aval and source line, holding ``value`` as it
    is (a NumPy scalar stays one: the graph's later runs are handed the same object)."""
    if value is None:
        raise ValueDependent
    if not d.src:           # (the line is the caller's: found as new_input finds it)
        with source_override(None):
            t = trace.new_input(aval=Aval(d.shape, np.dtype(d.dtype)))
    else:                   # new_input's input, written out: once per value read
        shape, dtype = tuple(d.shape), np.dtype(d.dtype)
        t = Tracer(trace, trace._record("input", (), None, shape, dtype, d.src, None),
                   shape, dtype)
    t._value = value
    return t


class _Saved(dict):
    """forward node -> an input of the sweep's trace holding the node's value, made when a
    rule first reads it (a multi-output node: the tuple of its projections' inputs)."""

    def __init__(self, trace, graph, values):
        super().__init__()
        self.trace, self.graph, self.values = trace, graph, values
        self.projections = None

    def __missing__(self, n):
        graph = self.graph
        d = graph.node(n)
        op = d["op"]
        if op != "input" and op != PROJ and REGISTRY[op].multi:
            if self.projections is None:
                self.projections = {}
                for m, e in graph.items():
                    if e["op"] == PROJ:
                        self.projections.setdefault(e["args"][0], {})[e["params"]["index"]] = m
            outs = self.projections.get(n, {})
            value = tuple(self[outs[i]] for i in range(len(outs)))
        elif op == "const":     # (a constant the graph keeps: a constant of the sweep too)
            with at_node(d):
                value = self.trace.const(d["params"]["value"], snapshot=False)
        else:
            value = _valued_input(self.trace, d, self.values[n])
        self[n] = value
        return value


def _sweep(trace, graph: Graph, seeds, wrt=None, taps=(), values=None,
           seed_values=None, origins=True) -> _Sweep:
    if values is None:
        primals = abstract_inputs(trace, graph, graph.inputs)
        seed_cts = abstract_inputs(trace, graph, [graph.outputs[i] for i in seeds])
        env = replay(graph, primals)
    else:
        seed_cts = [_valued_input(trace, graph.node(graph.outputs[i]), v)
                    for i, v in zip(seeds, seed_values)]
        env = _Saved(trace, graph, values)
    return _pull(graph, env, seeds, seed_cts, wrt, taps, trace if origins else None)


_SLOT = ((0,), (1,))


class _Transposed(Nodes):
    """``graph`` transposed, as ``ir.evaluate`` walks it for the reverse sweep: the nodes a
    gradient can flow through, last first, each one's operands its users (latest first).
    A node's value in that walk is what its VJP rule passed back to its operands (one
    cotangent per operand, None where none flows), so by the time a node is reached every
    contribution to its cotangent is known, and ``drops`` frees each once its last
    operand has taken it."""
    __slots__ = ("drops",)

    def __init__(self, graph: Graph, flows):
        nodes = graph.by_id
        order = [n for n in reversed(list(graph)) if flows[n]]
        by_id = {n: {"args": [], "slots": []} for n in order}
        for n in order:             # (last first: each user list comes out latest first)
            args = nodes[n].args
            if len(args) == 1 or (len(args) == 2 and args[0] != args[1]):
                for k, a in enumerate(args):
                    if flows[a]:
                        t = by_id[a]
                        t["args"].append(n)
                        t["slots"].append(_SLOT[k])
                continue
            for a in dict.fromkeys(args):
                if flows[a]:
                    t = by_id[a]
                    t["args"].append(n)
                    # where the user takes it (twice in x * x)
                    t["slots"].append(tuple(k for k, b in enumerate(args) if b == a))
        last = {}          # node -> the last operand to take its contributions
        for n in order:
            for w in by_id[n]["args"]:
                last[w] = n
        drops: dict = {}
        for n in order:
            drops.setdefault(last.get(n, n), []).append(n)
        super().__init__(by_id, order)
        self.drops = drops


def _pull(graph: Graph, env, seeds, seed_cts, wrt=None, taps=(), trace=None) -> _Sweep:
    """The backward walk: ``ir.evaluate`` on the transposed graph (``_Transposed``), whose
    rule sums a node's cotangent from its users' contributions and applies the node's VJP
    rule on ``env`` (node -> its forward value). With ``trace``, ``origin`` says which rule
    recorded each node of it."""
    flows = carries_gradient(graph, None if wrt is None else set(wrt))
    wanted = set(graph.inputs) if wrt is None else set(wrt)
    final, origin, returned = {}, {}, {}
    nodes = graph.by_id
    seeded = {}
    for i, ct in zip(seeds, seed_cts):
        o = graph.outputs[i]
        if flows[o]:
            seeded[o] = ct if o not in seeded else seeded[o] + ct
    # one override for the walk, pointed at each node's line in turn (``at_node``,
    # written out: this runs once per node of the graph)
    override = source_override(None)

    def cotangent(n, t, contributions):
        """Node ``n``'s cotangent: its seed, then each user's contribution (latest user
        first; a user's operands in order), each sum recorded at the user's line and
        credited to the user's rule, as the user's own sweep step would have added it."""
        ct = seeded.get(n)
        for w, c, slots in zip(t["args"], contributions, t["slots"]):
            if c is None:
                continue
            for k in slots:
                a_ct = c[k]
                if a_ct is None:
                    continue
                if ct is None:
                    ct = a_ct
                    continue
                override.retarget(nodes[w].src)
                if trace is None:
                    ct = ct + a_ct
                    continue
                first = trace.graph.next_id
                ct = ct + a_ct
                for m in range(first, trace.graph.next_id):
                    origin[m] = w
        return ct

    def projected(n, d, users, contributions):
        """A multi-output node's cotangent: the tuple of its outputs' cotangents (None for
        those that get none), each from its projections."""
        slots = None
        for w, c in zip(users, contributions):
            if c is None or c[0] is None:
                continue
            if slots is None:
                slots = [None] * REGISTRY[d.op].n_outputs(d.params)
            i = nodes[w].params["index"]
            if slots[i] is not None:
                override.retarget(override.saved)   # (the walk's own line)
                slots[i] = slots[i] + c[0]
            else:
                slots[i] = c[0]
        return None if slots is None else tuple(slots)

    def rule(n, t, contributions):
        d = nodes[n]
        op = d.op
        if op != "input" and op != PROJ and REGISTRY[op].multi:
            ct = projected(n, d, t["args"], contributions)
        else:
            ct = cotangent(n, t, contributions)
        if ct is None:
            return None
        if n in taps:
            # a node of its own, so that a hook replacing this cotangent changes
            # nothing else that happens to share the value
            with at_node(d):
                ct = apply("reshape", ct, shape=tuple(d.shape))
        if n in wanted:
            final[n] = ct
        if op == "input":
            return None
        args = d.args
        if op == PROJ:
            # one output of a multi-output node: its cotangent takes its slot in the
            # tuple the node's rule receives (``projected``)
            returned[n] = []
            return (ct,)
        prim = REGISTRY[op]
        if trace is not None:
            first = trace.graph.next_id
        override.retarget(d.src)
        try:
            needed = prim.extra.get("vjp_needed")
            if needed is None:
                arg_cts = prim.vjp(ct, env[n], *[env[a] for a in args], **d.params)
            else:       # skips the cotangents of operands that carry no gradient
                arg_cts = needed(tuple([flows[a] for a in args]), ct, env[n],
                                 *[env[a] for a in args], **d.params)
            outs, passed = [], []
            for a, a_ct in zip(args, arg_cts):
                if a_ct is not None and flows[a]:
                    node = nodes[a]
                    a_ct = fit(a_ct, node.shape, node.dtype)
                    outs.append(a_ct)
                    passed.append(a_ct)
                else:
                    passed.append(None)
        except TraceError as e:
            named = at_node_error(e, d)
            if named is e:
                raise
            raise named from None
        returned[n] = outs
        if trace is not None:
            for m in range(first, trace.graph.next_id):
                origin[m] = n
        return passed

    transposed = _Transposed(graph, flows)
    with override:
        evaluate(transposed, {}, rule=rule, drops=transposed.drops, guards=False)
    return _Sweep(env, seed_cts, final, origin, returned)


def adjoint(graph: Graph, seeds=None, wrt=None, forward_of=None) -> Graph:
    """The adjoint graph of ``graph``.

    Its inputs are ``graph``'s inputs followed by one cotangent per output
    (per output listed in ``seeds``, when given); its outputs are ``graph``'s
    outputs followed by one cotangent per input (per input listed in ``wrt``,
    when given: then only what depends on those is differentiated). Integer and
    boolean values get no cotangent (their slots hold zeros), and nothing flows
    through ``stop_gradient``. The argument is left unchanged. ``forward_of``, a
    dict when given, receives adjoint node -> the node of ``graph`` it replays (its
    inputs and the forward computation the rules read).
    """
    seeds = range(len(graph.outputs)) if seeds is None else seeds
    with new_trace() as trace:
        sweep = _sweep(trace, graph, seeds, wrt=wrt, origins=False)
        if forward_of is not None:
            forward_of.update((t._node, n) for n, t in sweep.env.items()
                              if not isinstance(t, tuple))
        input_cts = []
        for n in (graph.inputs if wrt is None else wrt):
            d = graph.node(n)
            ct = sweep.final.get(n)
            input_cts.append(ct if ct is not None else zeros(trace, d["shape"], d["dtype"]))
        result = finish(trace, [sweep.env[o] for o in graph.outputs] + input_cts)
    mark_adjoint(result, sweep)
    _carry_names(result, graph, sweep, graph.inputs if wrt is None else wrt)
    return result


def inline_adjoint(graph: Graph, env, seeds, seed_cts, wrt) -> list:
    """The cotangents of the nodes ``wrt`` of ``graph``, recorded in the trace that the
    values of ``env`` (forward node -> its value there, e.g. ``tracer.inlined``) belong
    to, given the cotangents ``seed_cts`` of the outputs ``seeds``: the backward sweep
    run on that trace's values themselves. It records what replaying ``adjoint(graph)``
    there records (but the nodes no cotangent needs may stay, as dead nodes of that
    trace) without making the adjoint graph: for a derivative inlined once. A
    cotangent nothing reaches is zeros, as the adjoint's structural zeros run."""
    sweep = _pull(graph, env, seeds, seed_cts, wrt)
    out = []
    for n in wrt:
        ct = sweep.final.get(n)
        if ct is None:
            d = graph.node(n)
            ct = REGISTRY["zeros"].impl(shape=tuple(d["shape"]), dtype=np.dtype(d["dtype"]))
        out.append(ct)
    return out


def _carry_names(result: Graph, graph: Graph, sweep: _Sweep, wrt) -> None:
    """The user's names (the node attribute ``name``: ``w``) on the replayed nodes, and
    ``dw`` on the cotangent output of a node named ``w``."""
    for n, t in sweep.env.items():
        name = graph.node(n).get("name")
        if name and not isinstance(t, tuple) and t._node in result:
            result.node(t._node)["name"] = name
    for o, n in zip(result.outputs[len(graph.outputs):], wrt):
        name = graph.node(n).get("name")
        if isinstance(name, str) and name and "name" not in result.node(o):
            result.node(o)["name"] = "d" + name


ADJOINT = "adjoint"     # the node attribute marking the adjoint (reverse-mode) part


def mark_adjoint(result: Graph, sweep: _Sweep) -> None:
    """Set ``ADJOINT`` on the nodes of ``result`` that are not the forward replay: the
    cotangent seeds and what the VJP rules (and the zeros of missing cotangents) made.
    Drawings colour them apart (``ir/dot.py``); passes keep the attribute on the nodes
    they copy, and nothing computes with it."""
    forward = set()
    for t in sweep.env.values():
        for v in (t if isinstance(t, tuple) else (t,)):
            node = getattr(v, "_node", None)
            if node is not None:
                forward.add(node)
    seeds = {t._node for t in sweep.seeds}
    for n, d in result.items():
        if n in seeds or (d.op != "input" and n not in forward):
            d[ADJOINT] = True


class Backward(NamedTuple):
    """A backward-only graph and how its inputs and outputs relate to the forward graph."""
    graph: Graph        # inputs: the saved forward values, then the seeds it reads
    saved: list         # forward node of each saved-value input, in order
    seeds: list         # index (into the seeds given) of each seed input, in order
    outputs: list       # per node of `wrt`: its position in graph.outputs, or None
    taps: dict          # forward node of `taps` -> node of its complete cotangent
    origin: dict        # backward node -> the forward node whose rule made it
    returned: dict      # forward node -> the backward nodes its rule returned
    values: list | None = None  # with values=: the value of each of graph.outputs


def _swept(graph, wrt, seeds, taps=(), values=None, seed_values=None, origins=True):
    """``(trace, sweep, failed)``: the backward sweep of ``graph`` recorded into a new
    trace, on ``values`` when given (``failed``: the records whose computation met a
    floating-point error, noted rather than reported). Raises ``ValueDependent`` where a
    rule decided something on a value."""
    failed = []     # the nodes whose computation met a floating-point error
    with new_trace() as trace:
        if values is None:
            sweep = _sweep(trace, graph, seeds, wrt=wrt, taps=set(taps), origins=origins)
        else:
            # NumPy's floating-point errors are noted by node, not reported now: a rule's
            # result the graph does not keep would never be computed by its runs
            modes = {k: "ignore" if v == "ignore" else "call" for k, v in np.geterr().items()}
            with np.errstate(call=lambda kind, flag: failed.append(len(trace.records)),
                             **modes):
                sweep = _sweep(trace, graph, seeds, wrt=wrt, taps=set(taps), values=values,
                               seed_values=seed_values, origins=origins)
    if values is not None and (trace._guards or trace.captured):
        raise ValueDependent
    return trace, sweep, failed


def cotangent_values(graph: Graph, wrt, seeds, values, seed_values):
    """``(cotangents, later)``: what ``backward_graph(graph, wrt, seeds, values=values,
    seed_values=...)`` computes on the way (the cotangents of ``wrt``, None for one
    nothing reaches), without making the graph, for a derivative taken once; ``later()``
    makes the ``Backward`` (without values) from the same sweep, should the derivative be
    taken again (it holds the sweep's records, not the values it ran on). Each
    cotangent is an array of its own (no input's memory, no other output's). Raises
    ``ValueDependent`` where ``backward_graph`` does."""
    trace, sweep, failed = _swept(graph, list(wrt), list(seeds), (), values, seed_values,
                                  False)
    final = [sweep.final.get(n) for n in wrt]
    if failed:
        records = trace.records
        live = {ct._node for ct in final if ct is not None}
        for n in range(len(records) - 1, -1, -1):
            if n in live:
                live.update(records[n][1])
        if any(n in live for n in failed):
            raise ValueDependent        # the error is the graph's: its run reports it
    # the sweep's inputs: the forward values its rules read, and the seeds
    suspects = {id(v) for v in seed_values}
    for v in dict.values(sweep.env):     # (_Saved has a .values of its own)
        for t in (v if isinstance(v, tuple) else (v,)):
            suspects.add(id(t._value))
    out, seen = [], set()
    for ct in final:
        if ct is None:
            out.append(None)
            continue
        v = ct._value
        if v is None:
            raise ValueDependent        # (a loop's value is left to the runtime)
        if isinstance(v, np.ndarray):
            if v.base is not None or id(v) in suspects or id(v) in seen or \
                    not v.flags.writeable:
                v = np.array(v)
            seen.add(id(v))
        out.append(v)
    forward_of = {t._node: n for n, t in sweep.env.items() if not isinstance(t, tuple)}
    seed_of = {t._node: k for k, t in enumerate(sweep.seeds)}
    final_ids = {n: ct._node for n, ct in sweep.final.items()}
    return out, functools.partial(_later_backward, trace.records, forward_of, seed_of,
                                  list(wrt), final_ids)


def _assemble(records, forward_of, seed_of, wrt, final, taps=(), failed=()):
    """``backward_graph``'s graph, from the records of its sweep's trace: the nodes the
    cotangents of ``wrt`` need (``final``: node of ``wrt`` -> the record of its
    cotangent), the forward values (``forward_of``: record -> forward node) and seeds
    (``seed_of``: record -> seed position) they read as inputs. Returns ``(graph, saved,
    seeds, outputs, taps)`` as ``Backward`` holds them."""
    boundary = forward_of.keys() | seed_of.keys()
    outputs, out_nodes = [], []
    for n in wrt:
        ct = final.get(n)
        outputs.append(None if ct is None else len(out_nodes))
        if ct is not None:
            out_nodes.append(ct)
    # taps are among wrt, so each is an output and stays live
    tap_nodes = {n: final[n] for n in taps if n in final}

    live = set(out_nodes)
    for n in range(len(records) - 1, -1, -1):
        if n in live and n not in boundary:
            live.update(records[n][1])

    if any(n in live for n in failed):
        # the error is the graph's: its run reports it as NumPy does
        raise ValueDependent
    bwd = Graph()
    saved, used_seeds = [], []
    for n in sorted(live):
        op, args, params, shape, dtype, src = records[n]
        if n in boundary:
            bwd.put(n, Node(n, "input", (), tuple(shape), dtype_name(dtype),
                            {"index": len(bwd.inputs)}, src))
            bwd.inputs.append(n)
            if n in forward_of:
                saved.append(forward_of[n])
            else:
                used_seeds.append(seed_of[n])
        else:
            bwd.put(n, Node(n, op, args, tuple(shape), dtype_name(dtype),
                            {} if params is None else params, src))
    # saved values first, then seeds: the order the caller passes them
    order = [n for n in bwd.inputs if n in forward_of] + [n for n in bwd.inputs if n in seed_of]
    bwd.inputs = order
    for i, n in enumerate(order):
        bwd.node(n)["params"] = {"index": i}
    bwd.outputs = out_nodes
    return bwd, saved, used_seeds, outputs, tap_nodes


def _later_backward(records, forward_of, seed_of, wrt, final):
    """The ``Backward`` (without values) of a sweep made earlier (``cotangent_values``)."""
    bwd, saved, used_seeds, outputs, _ = _assemble(records, forward_of, seed_of, wrt, final)
    return Backward(bwd, saved, used_seeds, outputs, {}, {}, {})


def backward_graph(graph: Graph, wrt, seeds=None, taps=(), values=None,
                   seed_values=None, origins=True) -> Backward:
    """The cotangents of the nodes ``wrt`` (inputs or intermediate nodes) of ``graph``,
    given cotangent seeds for the outputs ``seeds``, as a graph whose inputs are the
    forward values its rules need and the seeds. ``taps`` (a subset of ``wrt``) are nodes whose complete
    cotangent gets a node of its own (``Backward.taps``), for a runtime to observe or
    replace while the graph runs.

    With ``values`` (forward node -> its value) and ``seed_values`` (one per seed), the
    sweep runs on them: ``Backward.values`` holds the graph's outputs computed on the way,
    by the implementations the graph runs. Raises ``ValueDependent`` where a rule decided
    something on a value (the graph would hold for these values only).
    ``origins=False``: ``Backward.origin`` is left empty (a caller with no use for it
    saves the bookkeeping)."""
    seeds = list(range(len(graph.outputs)) if seeds is None else seeds)
    wrt = list(wrt)
    trace, sweep, failed = _swept(graph, wrt, seeds, taps, values, seed_values, origins)
    # (a multi-output node's value is a tuple; its projections stand for it)
    forward_of = {t._node: n for n, t in sweep.env.items() if not isinstance(t, tuple)}
    seed_of = {t._node: k for k, t in enumerate(sweep.seeds)}
    final = {n: ct._node for n, ct in sweep.final.items()}
    bwd, saved, used_seeds, outputs, tap_nodes = _assemble(
        trace.records, forward_of, seed_of, wrt, final, taps, failed)
    out_values = None
    if values is not None:
        out_values = [sweep.final[n]._value for n in wrt if n in sweep.final]
        if any(v is None for v in out_values):
            raise ValueDependent         # (a loop's value is left to the runtime)
    return Backward(bwd, saved, used_seeds, outputs, tap_nodes, sweep.origin, sweep.returned,
                    out_values)
