"""Reverse mode as a graph-to-graph pass.

The forward graph is replayed into a new trace; then, walking it backwards,
each node's VJP rule is called on traced values. The rules are NumPy code, so
they record ordinary nodes: the result is a plain graph that this same pass
can differentiate again (``adjoint(adjoint(g))`` gives second derivatives).

``backward_graph`` is the same sweep cut at the forward values: a graph that
takes the values the rules read (what PyTorch calls saved tensors) as inputs
instead of recomputing them. The eager front end runs that graph, so a
``Tensor.backward()`` and ``tg.grad`` use the one engine.
"""
from typing import NamedTuple

from ..ir import PROJ, REGISTRY, Graph, apply
from ..tracer import new_trace, replay
from .common import abstract_inputs, at_node, carries_gradient, finish, fit, zeros


class _Sweep(NamedTuple):
    env: dict           # forward node -> its replay in the trace
    seeds: list         # the cotangent seed tracers, one per seeded output
    final: dict         # node of `wrt` -> its complete cotangent (a tracer)
    origin: dict        # node made by a rule -> the forward node whose rule made it
    returned: dict      # forward node -> the nodes its rule returned (for anomaly checks)


def _sweep(trace, graph: Graph, seeds, wrt=None, taps=()) -> _Sweep:
    primals = abstract_inputs(trace, graph, graph.inputs)
    seed_cts = abstract_inputs(trace, graph, [graph.outputs[i] for i in seeds])
    env = replay(graph, primals)
    flows = carries_gradient(graph, None if wrt is None else set(wrt))
    wanted = set(graph.inputs) if wrt is None else set(wrt)
    cts, final, origin, returned = {}, {}, {}, {}

    def accumulate(n, ct):
        cts[n] = ct if n not in cts else cts[n] + ct

    for i, ct in zip(seeds, seed_cts):
        if flows[graph.outputs[i]]:
            accumulate(graph.outputs[i], ct)

    for n in reversed(list(graph)):
        if n not in cts:
            continue
        d = graph.node(n)
        ct = cts.pop(n)
        if n in taps:
            # a node of its own, so that a hook replacing this cotangent changes
            # nothing else that happens to share the value
            with at_node(d):
                ct = apply("reshape", ct, shape=tuple(d["shape"]))
        if n in wanted:
            final[n] = ct
        if d["op"] == "input":
            continue
        prim = REGISTRY[d["op"]]
        args = d["args"]
        if d["op"] == PROJ:
            # one output of a multi-output node: its cotangent takes its slot in the
            # tuple the node's rule receives (None for outputs that get none)
            head = args[0]
            if flows[head]:
                hd = graph.node(head)
                slots = cts.setdefault(
                    head, [None] * REGISTRY[hd["op"]].n_outputs(hd["params"]))
                i = d["params"]["index"]
                slots[i] = ct if slots[i] is None else slots[i] + ct
            returned[n] = []
            continue
        if prim.multi:
            ct = tuple(ct)
        first = trace.graph.next_id
        with at_node(d):
            arg_cts = prim.vjp(ct, env[n], *(env[a] for a in args), **d["params"])
            outs = []
            for a, a_ct in zip(args, arg_cts):
                if a_ct is not None and flows[a]:
                    node = graph.node(a)
                    a_ct = fit(a_ct, node["shape"], node["dtype"])
                    outs.append(a_ct)
                    accumulate(a, a_ct)
        returned[n] = outs
        for m in range(first, trace.graph.next_id):
            origin[m] = n
    return _Sweep(env, seed_cts, final, origin, returned)


def adjoint(graph: Graph, seeds=None, wrt=None) -> Graph:
    """The adjoint graph of ``graph``.

    Its inputs are ``graph``'s inputs followed by one cotangent per output
    (per output listed in ``seeds``, when given); its outputs are ``graph``'s
    outputs followed by one cotangent per input (per input listed in ``wrt``,
    when given: then only what depends on those is differentiated). Integer and
    boolean values get no cotangent (their slots hold zeros), and nothing flows
    through ``stop_gradient``. The argument is left unchanged.
    """
    seeds = range(len(graph.outputs)) if seeds is None else seeds
    with new_trace() as trace:
        sweep = _sweep(trace, graph, seeds, wrt=wrt)
        input_cts = []
        for n in (graph.inputs if wrt is None else wrt):
            d = graph.node(n)
            ct = sweep.final.get(n)
            input_cts.append(ct if ct is not None else zeros(trace, d["shape"], d["dtype"]))
        result = finish(trace, [sweep.env[o] for o in graph.outputs] + input_cts)
    mark_adjoint(result, sweep)
    _carry_names(result, graph, sweep, graph.inputs if wrt is None else wrt)
    return result


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


def backward_graph(graph: Graph, wrt, seeds=None, taps=()) -> Backward:
    """The cotangents of the nodes ``wrt`` (inputs or intermediate nodes) of ``graph``,
    given cotangent seeds for the outputs ``seeds``, as a graph whose inputs are the
    forward values its rules need and the seeds. ``taps`` (a subset of ``wrt``) are nodes whose complete
    cotangent gets a node of its own (``Backward.taps``), for a runtime to observe or
    replace while the graph runs."""
    seeds = list(range(len(graph.outputs)) if seeds is None else seeds)
    wrt = list(wrt)
    with new_trace() as trace:
        sweep = _sweep(trace, graph, seeds, wrt=wrt, taps=set(taps))
    full = trace.graph
    # (a multi-output node's value is a tuple; its projections stand for it)
    forward_of = {t._node: n for n, t in sweep.env.items() if not isinstance(t, tuple)}
    seed_of = {t._node: k for k, t in enumerate(sweep.seeds)}
    boundary = forward_of.keys() | seed_of.keys()

    outputs, out_nodes = [], []
    for n in wrt:
        ct = sweep.final.get(n)
        outputs.append(None if ct is None else len(out_nodes))
        if ct is not None:
            out_nodes.append(ct._node)
    # taps are among wrt, so each is an output and stays live
    tap_nodes = {n: sweep.final[n]._node for n in taps if n in sweep.final}

    live = set(out_nodes)
    for n in reversed(list(full)):
        if n in live and n not in boundary:
            live.update(full.args(n))

    bwd = Graph()
    saved, used_seeds = [], []
    for n, d in full.items():
        if n not in live:
            continue
        if n in boundary:
            attrs = dict(d, op="input", args=(), params={"index": len(bwd.inputs)})
            bwd.put(n, attrs)
            bwd.inputs.append(n)
            if n in forward_of:
                saved.append(forward_of[n])
            else:
                used_seeds.append(seed_of[n])
        else:
            bwd.put(n, d)
    # saved values first, then seeds: the order the caller passes them
    order = [n for n in bwd.inputs if n in forward_of] + [n for n in bwd.inputs if n in seed_of]
    bwd.inputs = order
    for i, n in enumerate(order):
        bwd.node(n)["params"] = {"index": i}
    bwd.outputs = out_nodes
    return Backward(bwd, saved, used_seeds, outputs, tap_nodes, sweep.origin, sweep.returned)
