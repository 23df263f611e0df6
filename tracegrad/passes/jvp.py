"""Forward mode as a graph-to-graph pass: every node's JVP rule, in program order."""
from ..ir import PROJ, REGISTRY, Graph
from ..ir.dtypes import is_float
from ..tracer import new_trace, replay
from .common import abstract_inputs, at_node, finish, fit, zeros


def jvp(graph: Graph) -> Graph:
    """The tangent graph of ``graph``.

    Its inputs are ``graph``'s inputs followed by one tangent per input; its
    outputs are ``graph``'s outputs followed by one tangent per output.
    """
    with new_trace() as trace:
        primals = abstract_inputs(trace, graph, graph.inputs)
        tangents_in = abstract_inputs(trace, graph, graph.inputs)
        env = replay(graph, primals)
        tangents = {n: t for n, t in zip(graph.inputs, tangents_in)
                    if is_float(graph.node(n)["dtype"])}

        for n, d in graph.items():
            if d["op"] in ("input", "const"):
                continue
            prim = REGISTRY[d["op"]]
            if not (prim.multi or is_float(d["dtype"])):    # (a multi-output node: its
                continue                                    # projections' dtypes decide)
            if d["op"] == PROJ:
                # one output of a multi-output node: picked out of the node's tangents
                head = tangents.get(d["args"][0])
                t = None if head is None else head[d["params"]["index"]]
                if t is not None:
                    tangents[n] = fit(t, d["shape"], d["dtype"], tangent=True)
                continue
            arg_tangents = [None if i in prim.nondiff_args else tangents.get(a)
                            for i, a in enumerate(d["args"])]
            if prim.jvp is None or all(t is None for t in arg_tangents):
                continue
            with at_node(d):
                t = prim.jvp(arg_tangents, env[n], *(env[a] for a in d["args"]), **d["params"])
                if t is not None and prim.multi:
                    tangents[n] = tuple(t)
                elif t is not None:
                    tangents[n] = fit(t, d["shape"], d["dtype"], tangent=True)

        out_tangents = []
        for o in graph.outputs:
            d = graph.node(o)
            out_tangents.append(tangents[o] if o in tangents
                                else zeros(trace, d["shape"], d["dtype"]))
        return finish(trace, [env[o] for o in graph.outputs] + out_tangents)
