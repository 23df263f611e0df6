"""The networkx view of a ``Graph`` (``graph.nx``): the one module that imports networkx.

``build`` writes the MultiDiGraph's adjacency dicts the way ``add_node`` and
``add_edge`` would, without their per-call overhead (which dominated building large
views). ``tests/test_graph_api.py`` checks the result is the graph the public
networkx calls build.
"""
from __future__ import annotations

import gc
from collections.abc import Iterable

import networkx as nx


def build(nodes: Iterable) -> nx.MultiDiGraph:
    """A MultiDiGraph of ``nodes`` (``Node`` objects in evaluation order)."""
    g = nx.MultiDiGraph()
    extend(g, nodes)
    return g


def extend(g: nx.MultiDiGraph, nodes: Iterable) -> None:
    """Add ``nodes`` (new ones, operands first) and their operand edges to ``g``. Each
    node's attribute dict is the ``Node`` itself; an edge is keyed and labelled by the
    operand's position. An operand no longer in the graph (the eager tape frees nodes)
    has no edge, as after networkx's ``remove_node``. The collector is paused meanwhile:
    it would otherwise rescan the growing view many times (three quarters of the time
    on 100k nodes)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        _add(g, nodes)
    finally:
        if collecting:
            gc.enable()
    cache = getattr(g, "__networkx_cache__", None)
    if cache:
        cache.clear()


def _add(g: nx.MultiDiGraph, nodes: Iterable) -> None:
    attrs, succ, pred = g._node, g._succ, g._pred
    for d in nodes:
        n = d.id
        attrs[n] = d
        succ[n] = {}
        p = pred[n] = {}
        for pos, a in enumerate(d.args):
            keys = p.get(a)
            if keys is None:
                out = succ.get(a)
                if out is None:
                    continue
                keys = p[a] = out[n] = {}
            keys[pos] = {"pos": pos}


# -- back: ``Graph.from_nx`` (``ir/serialize.py`` reads and validates) ------------------
GRAPH_TYPES = (nx.MultiDiGraph, nx.DiGraph)


def is_graph(t) -> bool:
    """Whether the type ``t`` is one ``from_nx`` reads: networkx's own ``MultiDiGraph`` or
    ``DiGraph`` (by identity: no subclass, whose methods could be anyone's code)."""
    return any(t is x for x in GRAPH_TYPES)


def contents(g):
    """``(nodes, edges, attrs)`` of ``g`` (a graph ``is_graph`` accepts): ``(id, attribute
    dict)`` pairs in node order, ``(u, v, edge attribute dict)`` triples (one per edge of a
    multigraph), and the graph's attribute dict, read by networkx's own iteration (a plain
    graph's node keys are not hashed meanwhile)."""
    return g.nodes(data=True), g.edges(data=True), g.graph
