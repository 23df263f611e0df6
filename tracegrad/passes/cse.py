"""Common-subexpression elimination by hash-consing.

Two nodes are the same computation when they apply the same primitive, with
equal parameters, to the same operands (after earlier merges). Constants are
merged by value (bit for bit, so -0.0 and 0.0 stay apart; large arrays only
when they are the same object). Inputs are never merged.
"""
import numpy as np

from ..ir import Graph
from ..ir.evaluate import evaluate
from .subgraphs import map_subgraphs

_BY_VALUE_LIMIT = 4096  # elements: larger constants are compared by identity


def freeze(value):
    """A hashable stand-in for a parameter value, equal exactly when the values are."""
    if isinstance(value, np.ndarray):
        if value.size <= _BY_VALUE_LIMIT:
            return ("array", value.dtype.str, value.shape, value.tobytes())
        return ("object", id(value))
    if isinstance(value, np.generic):
        return freeze(np.asarray(value))
    if isinstance(value, float):
        return ("float", value.hex())  # keeps -0.0 and NaN payloads apart
    if isinstance(value, dict):
        return ("dict",) + tuple((k, freeze(v)) for k, v in sorted(value.items()))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(freeze(v) for v in value)
    if isinstance(value, (int, str, bool, type(None), np.dtype)) or value is Ellipsis:
        return value
    return ("object", id(value))


def cse(graph: Graph) -> Graph:
    """A copy of ``graph`` in which nodes computing the same thing (the same primitive on
    the same operands, with equal parameters, shape and dtype) are one node: ``ir.evaluate``
    with a rule that looks each node up before adding it to the new graph."""
    out = Graph()
    seen = {}

    def rule(n, d, args):
        args = tuple(args)
        if d["op"] != "input":
            key = (d["op"], args, d["dtype"], d["shape"], freeze(d["params"]))
            hit = seen.get(key)
            if hit is not None:
                return hit
            seen[key] = n
        out.put(n, d, args)
        return n

    rename = evaluate(graph, {}, rule=rule, guards=False)
    out.inputs = list(graph.inputs)
    out.outputs = [rename[o] for o in graph.outputs]
    guards = {}
    for n, expected in graph.guards:
        guards.setdefault((rename[n], freeze(expected)), (rename[n], expected))
    out.guards = list(guards.values())
    return map_subgraphs(out, cse)
