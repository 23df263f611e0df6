"""Reverse mode as a graph-to-graph pass.

The forward graph is replayed into a new trace; then, walking it backwards,
each node's VJP rule is called on traced values. The rules are NumPy code, so
they record ordinary nodes: the result is a plain graph that this same pass
can differentiate again (``adjoint(adjoint(g))`` gives second derivatives).
"""
from ..ir import REGISTRY, Graph
from ..tracer import new_trace, replay
from .common import abstract_inputs, at_node, carries_gradient, finish, fit, zeros


def adjoint(graph: Graph, seeds=None) -> Graph:
    """The adjoint graph of ``graph``.

    Its inputs are ``graph``'s inputs followed by one cotangent per output
    (per output listed in ``seeds``, when given); its outputs are ``graph``'s
    outputs followed by one cotangent per input. Integer and boolean values
    get no cotangent (their slots hold zeros), and nothing flows through
    ``stop_gradient``. The argument is left unchanged.
    """
    seeds = range(len(graph.outputs)) if seeds is None else seeds
    with new_trace() as trace:
        primals = abstract_inputs(trace, graph, graph.inputs)
        seed_cts = abstract_inputs(trace, graph, [graph.outputs[i] for i in seeds])
        env = replay(graph, primals)
        flows = carries_gradient(graph)

        cts = {}

        def accumulate(n, ct):
            cts[n] = ct if n not in cts else cts[n] + ct

        for i, ct in zip(seeds, seed_cts):
            if flows[graph.outputs[i]]:
                accumulate(graph.outputs[i], ct)

        for n in reversed(list(graph)):
            if n not in cts:
                continue
            d = graph.node(n)
            if d["op"] == "input":
                continue
            prim = REGISTRY[d["op"]]
            args = d["args"]
            with at_node(d):
                arg_cts = prim.vjp(cts.pop(n), env[n], *(env[a] for a in args), **d["params"])
                for a, ct in zip(args, arg_cts):
                    if ct is not None and flows[a]:
                        node = graph.node(a)
                        accumulate(a, fit(ct, node["shape"], node["dtype"]))

        input_cts = []
        for n in graph.inputs:
            d = graph.node(n)
            input_cts.append(cts[n] if n in cts else zeros(trace, d["shape"], d["dtype"]))
        return finish(trace, [env[o] for o in graph.outputs] + input_cts)
