"""Who owns a graph's outputs: the caller, unless NumPy would hand back the caller's memory.

NumPy returns a new array, or an input itself, or a view of one. A graph run by
the interpreter or the generated code may instead return memory NumPy would not:
an input (``simplify`` turned ``x * 1.0`` into ``x``; ``np.copy(x)`` names ``x``'s
node), a constant the compiled function keeps from call to call (a constant
gradient: the caller's ``g *= 0`` would change every later answer), or one buffer
for two outputs NumPy gives as two arrays (``cse`` merged ``x * 2`` and ``x * 2``).

Each output has a *base*: ``("input", i)`` when NumPy's result is input ``i`` or a
view of it, otherwise a key that outputs share exactly when NumPy's results are one
array or views of one array. An output may share memory with its base only: one
that may also share memory with another input, a constant or an output of another
base is copied, and so is a read-only one made from a constant (a broadcast zero).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .registry import PROJ, REGISTRY

if TYPE_CHECKING:     # graph.py (Graph.__call__) imports evaluate, which imports this
    from .graph import Graph


# Each primitive's entry says what its result may share (``Primitive.aliasing``):
# "fresh" (always a new array: every ufunc), "view" (NumPy's result is, or may be, a view
# of operand 0), or memory of any operand ("identity", "unknown"; ``einsum`` is one:
# np.einsum("ij->ji", a) is a view of a).
def makes_fresh(op: str) -> bool:
    return REGISTRY[op].aliasing == "fresh"


def is_view(op: str) -> bool:
    """Whether NumPy's result of ``op`` is (or may be) a view of its first operand."""
    prim = REGISTRY.get(op)     # None for inputs and constants
    return prim is not None and prim.aliasing == "view"


def storage_root(a):
    """The array whose memory the NumPy array ``a`` is a view of (following ``base``), or
    ``a`` itself (also anything that is no view of an array)."""
    while isinstance(getattr(a, "base", None), np.ndarray):
        a = a.base
    return a


def sources(graph: Graph) -> dict:
    """node -> the inputs, constants and fresh results whose memory its value may share."""
    nodes = graph.by_id
    out = {}
    for n in graph:
        d = nodes[n]
        op = d["op"]
        if op in ("input", "const") or makes_fresh(op) or not d["args"] or (
                op == PROJ and makes_fresh(nodes[d["args"][0]]["op"])):
            # (each output of a fresh multi-output node is an array of its own)
            out[n] = frozenset((n,))
        else:
            out[n] = frozenset().union(*(out[a] for a in d["args"]))
    return out


def structural_bases(graph: Graph) -> list:
    """The bases of ``graph``'s outputs read off the graph itself (a graph run on its own,
    with no trace to say which Python object each output was): a chain of NumPy views of
    an input has that input as its base; any other output has its own root node. So does
    an output that is an input itself: the graph cannot tell ``lambda x: x`` (NumPy hands
    back ``x``) from ``np.copy(x)`` (a new array, recorded as no node at all), and a copy
    is right for the one and harmless for the other."""
    nodes = graph.by_id
    index = {n: i for i, n in enumerate(graph.inputs)}
    bases = []
    for o in graph.outputs:
        root = o
        while is_view(nodes[root]["op"]):
            root = nodes[root]["args"][0]
        bases.append(("input", index[root]) if root in index and root != o else ("node", root))
    return bases


def fresh_bases(graph: Graph) -> list:
    """Bases under which every output is the caller's own (derivatives: never a view)."""
    return [("node", k) for k in range(len(graph.outputs))]


def writeable(v):
    """``v``, or a writeable copy of a read-only array (a broadcast zero, a view of a
    constant): what a caller is handed out as its own array."""
    if isinstance(v, np.ndarray) and not v.flags.writeable:
        return np.array(v)
    return v


def own(value, others=(), from_constant=False):
    """``value``, or a copy of it when it may share memory with one of ``others`` (or is a
    read-only array made from a constant). The copy keeps the layout of what it copies
    (``order="K"``: a transposed view gives a Fortran-ordered array, not a C-ordered
    one), since NumPy's sums and matrix products add in an order that depends on the
    layout: a compiled forward's saved ``w.t()`` must feed its backward's products as
    eager's view does, bit for bit."""
    if not isinstance(value, np.ndarray):
        return value
    if from_constant and not value.flags.writeable:
        return value.copy(order="K")
    for other in others:
        if isinstance(other, np.ndarray) and np.may_share_memory(value, other):
            return value.copy(order="K")
    return value


def plan(graph: Graph, bases=None):
    """Per output: ``(same, inputs, constants, earlier, from_constant)``: ``same`` is the
    index of an earlier output that is the same node with the same base (the same object
    is returned twice, as NumPy does for ``return y, y``), else None; the others say what
    the output must not share memory with: input positions, constant nodes, earlier
    output positions. ``from_constant``: it may be a (read-only) view of a constant."""
    bases = structural_bases(graph) if bases is None else bases
    src = sources(graph)
    nodes = graph.by_id
    index = {n: i for i, n in enumerate(graph.inputs)}
    result = []
    first = {}          # (node, base) -> the first output that is it
    holders = {}        # source node -> the outputs so far whose memory may be it
    for k, o in enumerate(graph.outputs):
        base = bases[k]
        mine = src[o]
        same = first.get((o, base))
        if same is not None:
            result.append((same, (), (), (), False))
            for n in mine:
                holders.setdefault(n, []).append(k)
            continue
        first[(o, base)] = k
        inputs = tuple(index[n] for n in sorted(mine & index.keys())
                       if base != ("input", index[n]))
        consts = tuple(n for n in sorted(mine) if nodes[n]["op"] == "const")
        # (an index of the sources: linear in the outputs, where comparing every pair of
        # outputs was quadratic: a captured 1000-step LSTM loop has thousands)
        near = set()
        for n in mine:
            near.update(holders.get(n, ()))
        earlier = tuple(j for j in sorted(near) if bases[j] != base)
        # memory of inputs alone, each checked: the output is copied, or shares nothing
        # (no later output need be checked against it: a sequence split into its steps
        # would otherwise check each step against every earlier one)
        if not (mine <= index.keys() and len(inputs) == len(mine)):
            for n in mine:
                holders.setdefault(n, []).append(k)
        result.append((None, inputs, consts, earlier, bool(consts)))
    return result


def owned_outputs(graph: Graph, outs, inputs, bases=None):
    """``outs`` with a copy of each one that may share memory it must not."""
    consts = {n: d["params"]["value"] for n, d in graph.items() if d["op"] == "const"}
    suspects = {id(v) for v in inputs} | {id(v) for v in consts.values()}
    arrays = [v for v in outs if isinstance(v, np.ndarray)]
    if len({id(v) for v in arrays}) == len(arrays) and all(
            v.base is None and id(v) not in suspects for v in arrays):
        return outs     # every output is a buffer of its own (the common case): no copies
    # loop bodies run once per iteration: the plan is made once per graph and bases
    key = (tuple(graph.inputs), tuple(graph.outputs), len(graph),
           None if bases is None else tuple(bases))
    cache = graph.__dict__.setdefault("_alias_plans", {})
    if key not in cache:
        cache.clear()
        cache[key] = plan(graph, bases)
    result = []
    for v, (same, ins, cs, earlier, from_const) in zip(outs, cache[key]):
        if same is not None:
            result.append(result[same])
            continue
        others = [inputs[i] for i in ins] + [consts[c] for c in cs] + [result[j] for j in earlier]
        result.append(own(v, others, from_const))
    return result
