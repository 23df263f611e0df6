"""Dead-node pruning: keep only what the outputs (and the guards) depend on."""
from ..ir import Graph
from .subgraphs import map_subgraphs


def live_nodes(graph: Graph, roots) -> set:
    """Every node some root depends on (the roots included), in one backward sweep."""
    live = set(roots)
    for n in reversed(list(graph)):
        if n in live:
            live.update(graph.args(n))
    return live


def prune(graph: Graph, outputs=None) -> Graph:
    """A copy of ``graph`` without the nodes no output depends on.

    Inputs always stay (they are the graph's signature). Guard nodes stay
    too: they decide whether the graph is valid for given inputs. With
    ``outputs``, the copy has those outputs instead.
    """
    outputs = graph.outputs if outputs is None else list(outputs)
    roots = list(outputs) + [n for n, _ in graph.guards] + list(graph.inputs)
    return map_subgraphs(graph.subgraph(outputs, keep=live_nodes(graph, roots)), prune)
