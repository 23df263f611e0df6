"""``optimize``: prune, cse and simplify, repeated until nothing changes.

Each pass can give the others work: simplify folds constants and rewrites nodes, which
leaves their old operands unused (prune's work) and makes equal nodes (cse's); cse
merges nodes, which leaves duplicates dead. One round of each, in any order, can leave
dead nodes behind; ``optimize`` runs rounds until a round changes nothing (at most
``MAX_ROUNDS``), and ends with prune, so no node is left that no output (or guard)
depends on. The numbers are those of the argument, bit for bit (see the passes).

The nodes of the adjoint part keep the ``adjoint`` attribute drawings colour by
(``ir/dot.py``): where the argument has no such attribute (a traced ``tg.grad``), the
part is found by ``dot``'s structural rule first, since simplifying may fold away the
cotangent seed that rule starts from.
"""
from ..ir import Graph
from ..ir.dot import ADJOINT_MARK, adjoint_nodes
from .cse import cse
from .prune import prune
from .simplify import simplify

MAX_ROUNDS = 10


def optimize(graph: Graph) -> Graph:
    """``graph`` pruned, with common subexpressions merged and simplified, to a fixed
    point: ``optimize(optimize(g))`` prints as ``optimize(g)``. The argument is left
    unchanged."""
    part = adjoint_nodes(graph)
    g = prune(graph)
    text = g.dump()
    for _ in range(MAX_ROUNDS):
        g = prune(simplify(cse(g)))
        new = g.dump()
        if new == text:
            break
        text = new
    for n, d in g.items():
        if n in part or any(g.node(a).get(ADJOINT_MARK) for a in d.args):
            d[ADJOINT_MARK] = True
    return g
