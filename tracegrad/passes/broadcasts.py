"""Broadcasts an arithmetic operation would make itself are left to it.

``x - m.view(1, -1).expand(1, n)`` (PyTorch's ``expand`` before an operation that
broadcasts anyway: the BiLSTM-CRF tutorial's ``log_sum_exp``), and the adjoint of a sum,
whose cotangent is ``broadcast_to`` the summed shape before it multiplies the partials,
record a ``broadcast_to`` whose only use is an operand of ``add``, ``mul``, ...
NumPy's ``np.broadcast_to`` costs a few microseconds of Python per call, and the ufunc
broadcasts the smaller operand itself, element for element the same numbers (the
operation reads each element of the stride-0 view as it reads it broadcasting: the values
are bit for bit equal). Such an operand is replaced by the broadcast's own operand where
the operation's shape stays what it was.
"""
import numpy as np

from ..ir import REGISTRY, Graph
from .prune import prune
from .subgraphs import map_subgraphs

# the operations whose result does not depend on whether an operand arrives broadcast
_ARITHMETIC = frozenset({np.add, np.subtract, np.multiply, np.divide, np.maximum,
                         np.minimum})


def elide_broadcasts(graph: Graph) -> Graph:
    """A copy of ``graph`` in which an arithmetic operation reads the operand of a
    ``broadcast_to`` instead of the broadcast, where its result keeps its shape."""
    out = graph.subgraph(graph.outputs, keep=set(graph))
    nodes = out.by_id
    changed = False
    for n in out:
        d = nodes[n]
        prim = REGISTRY.get(d["op"])
        if prim is None or prim.ufunc not in _ARITHMETIC:
            continue
        args = list(d["args"])
        for i, a in enumerate(args):
            b = nodes[a]
            if b["op"] != "broadcast_to":
                continue
            source = b["args"][0]
            shapes = [nodes[source]["shape"] if j == i else nodes[x]["shape"]
                      for j, x in enumerate(args)]
            if nodes[source]["dtype"] == b["dtype"] and \
                    tuple(np.broadcast_shapes(*shapes)) == tuple(d["shape"]):
                args[i] = source
                changed = True
        if tuple(args) != tuple(d["args"]):
            d["args"] = tuple(args)
    if changed:
        out = prune(out)
    return map_subgraphs(out, elide_broadcasts)
