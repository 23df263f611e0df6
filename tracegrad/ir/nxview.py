"""The networkx view of a ``Graph`` (``graph.nx``): the one module that imports networkx.

``build`` writes the MultiDiGraph's adjacency dicts the way ``add_node`` and
``add_edge`` would, without their per-call overhead (which dominated building large
views). ``tests/test_graph_api.py`` checks the result is the graph the public
networkx calls build. ``contents`` reads a networkx graph's own dicts for
``Graph.from_nx`` (``ir/serialize.py``), which checks what they hold.
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


def contents(g, fail):
    """``(nodes, edges, attrs)`` of ``g`` (a graph ``is_graph`` accepts), read from its
    own dicts, not through methods or views an instance could replace: ``nodes`` the
    ``{id: attribute dict}`` dict, ``edges`` ``(u, v, edge attribute dict)`` triples (one
    per edge of a multigraph), ``attrs`` the graph's attribute dict. ``fail(message)``
    raises for a graph that is not a plain one (a networkx view: ``subgraph`` and
    ``reverse`` give those) or whose dicts are not dicts. Node ids are not hashed."""
    state = g.__dict__
    if type(state) is not dict or any(type(k) is not str for k in state):
        fail("the graph's own attributes are not a plain dict")
    node, succ, attrs = state.get("_node"), state.get("_succ"), state.get("graph")
    if type(node) is not dict or type(succ) is not dict:
        fail("the graph is a networkx view (g.subgraph(...), g.reverse(copy=False)): pass a "
             "copy of it (.copy())")
    multi = type(g) is nx.MultiDiGraph
    return node, _edges(succ, multi, fail), attrs


def _edges(succ, multi, fail):
    for u, nbrs in succ.items():
        if type(nbrs) is not dict:
            fail(f"the adjacency of node {u if type(u) is int else '?'} is not a dict")
        for v, datas in nbrs.items():
            if not multi:
                yield u, v, datas
                continue
            if type(datas) is not dict:
                fail("an edge's key dict is not a dict")
            for data in datas.values():
                yield u, v, data
