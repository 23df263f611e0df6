"""Passes reach into sub-graphs (loop bodies, cond branches, checkpointed functions)."""
from ..ir import Graph


def map_subgraphs(graph: Graph, fn) -> Graph:
    """``graph`` (a pass's own output) with ``fn`` applied to each sub-graph parameter.
    Each distinct sub-graph is transformed once, so nodes that share one (a body and the
    graphs derived from it) keep sharing it."""
    done = {}
    for _, d in graph.items():
        for v in d["params"].values():
            if isinstance(v, Graph) and id(v) not in done:
                done[id(v)] = fn(v)
    if done:
        for _, d in graph.items():
            if any(isinstance(v, Graph) for v in d["params"].values()):
                d["params"] = {k: done[id(v)] if isinstance(v, Graph) else v
                               for k, v in d["params"].items()}
    return graph
