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
import numpy as np

from ..errors import TraceError
from .graph import FIELDS, Graph, Node
from .indexspec import Arg, Index, Slice
from .registry import PROJ, REGISTRY
from .schema import DTYPES, MAX_DIMS
from .serialize import (
    FORMAT,
    MAX_CONSTANT_BYTES,
    MAX_NESTING,
    MAX_VALUE_DEPTH,
    V1_MAX_INDEX,
    VERSION,
    _encode,
    from_document,
)


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


# -- back: a networkx graph to a Graph ---------------------------------------------------
# ``from_nx`` reads a networkx graph in the view's form (below) into the plain document
# ``to_json`` writes (``ir/serialize.py``), and validates that with the JSON loader:
# one set of checks for both. Reading never calls anything a value of the networkx graph
# defines: every value's type is compared with ``type(v) is ...`` against a fixed list
# (plain ints, floats, strings, tuples, NumPy arrays and scalars of the loader's dtypes,
# ``Index``, ``Graph``, networkx graphs) before the value is used; dicts are read with
# their own items(), and keys are checked to be plain ``str``/``int`` before being hashed.
#
# The form (what ``graph.nx`` gives):
# - a node per IR node, keyed by its id (an int >= 0), its attributes ``op``, ``shape``
#   (tuple or list of ints), ``dtype`` (a name), ``params`` (a dict) and ``src``
#   (``"file:line"`` or None; may be left out); ``args`` may be there, it is not read:
#   operands are the edges;
# - an edge per operand, from the operand to its user, with the attribute ``pos`` (the
#   operand position; its key is not read): positions 0..k-1, each once;
# - ``graph["outputs"]``: the output ids in order; ``graph["guards"]``: ``(node, value)``
#   pairs (may be left out: none);
# - inputs are the nodes of op ``input``, ``params={"index": i}``, numbered 0, 1, ... in
#   node order; constants the nodes of op ``const``, ``params={"value": ndarray}``;
# - a multi-output node (``svd``, ``scan``, ...) is its head node and one ``proj`` node per
#   used output (``params={"index": i}``, one edge from the head), as in the Graph;
# - a sub-graph param (scan and cond bodies, ``tg.checkpoint``) is a ``Graph``, or a
#   networkx graph of this same form.

_INTEGERS = tuple(np.dtype(n).type for n in sorted(DTYPES) if np.dtype(n).kind in "iu")
# NumPy scalars ``_encode`` writes as 0-d arrays (np.float64 is a float, written as one)
_SCALARS = tuple(np.dtype(n).type for n in sorted(DTYPES)
                 if np.dtype(n).kind not in "iu" and n != "float64")
_DTYPE_TYPES = tuple(type(np.dtype(n)) for n in sorted(DTYPES))
_GRAPHS = (nx.DiGraph, nx.MultiDiGraph)
_REQUIRED = frozenset({"op", "shape", "dtype", "params"})
_ALLOWED = frozenset(FIELDS)
_GRAPH_ATTRS = frozenset({"outputs", "guards"})
_type_name = type.__dict__["__name__"].__get__    # a class's own name, no metaclass code


def _among(t, types) -> bool:
    """``t in types`` by identity (a set would hash ``t``: its metaclass's code)."""
    return any(t is x for x in types)


def _kind(v) -> str:
    """What ``v`` is, for an error message, without calling anything ``v`` defines."""
    return f"a value of type {_type_name(type(v))!r}"


def from_nx(g) -> Graph:
    """``Graph.from_nx``: read ``g`` (module comment) and validate it as the JSON loader
    does a document."""
    reader = _Reader()
    doc = reader.nx_document(g, 0)
    return from_document(doc, "networkx graph", short_outputs=True)


class _Reader:
    def __init__(self):
        self.constant_bytes = 0

    def fail(self, message):
        raise TraceError(f"invalid networkx graph: {message}")

    def int_(self, v, what):
        if type(v) is int:
            return v
        if _among(type(v), _INTEGERS):
            return int(v)
        self.fail(f"{what} must be an integer, got {_kind(v)}")

    def str_(self, v, what):
        if type(v) is not str:
            self.fail(f"{what} must be a str, got {_kind(v)}")
        return v

    # -- the graphs ----------------------------------------------------------------------
    def nx_document(self, g, depth):
        if not _among(type(g), _GRAPHS):
            self.fail(f"expected a networkx MultiDiGraph (graph.nx) or DiGraph, got {_kind(g)}")
        nodes, operands = [], {}
        for n, attrs in g.nodes(data=True):
            n = self.node_id(n)
            nodes.append((n, attrs))
            operands[n] = {}
        for u, v, data in g.edges(data=True):
            if type(data) is not dict or len(data) != 1 or type(next(iter(data))) is not str \
                    or "pos" not in data:
                self.fail(f"the edge {u} -> {v} must have exactly the attribute 'pos' "
                          "(the operand position)")
            pos = self.int_(data["pos"], f"the edge {u} -> {v}'s pos")
            if pos in operands[v]:
                self.fail(f"node {v} has two operands at position {pos} ({operands[v][pos]} "
                          f"and {u})")
            operands[v][pos] = u
        attrs = g.graph
        if type(attrs) is not dict:
            self.fail(f"the graph's attribute dict is {_kind(attrs)}")
        return self.document(nodes, operands, attrs, depth, "its edges")

    def graph_document(self, graph, depth):
        """A ``Graph`` held in a param (a loop's body), read as strictly as a networkx graph."""
        state = graph.__dict__
        if type(state) is not dict or type(state.get("_nodes")) is not dict:
            self.fail("a sub-graph param is a Graph without its nodes")
        nodes, operands = [], {}
        for n, node in state["_nodes"].items():
            n = self.node_id(n)
            if type(node) is not Node:
                self.fail(f"sub-graph node {n} is {_kind(node)}, not a Node")
            args = node.args
            if type(args) is not tuple:
                self.fail(f"sub-graph node {n}'s args must be a tuple, got {_kind(args)}")
            nodes.append((n, node))
            operands[n] = dict(enumerate(self.int_(a, f"an operand of node {n}") for a in args))
        attrs = {"outputs": state.get("outputs"), "guards": state.get("guards", [])}
        return self.document(nodes, operands, attrs, depth, "its args")

    def node_id(self, n):
        if type(n) is not int or n < 0:
            self.fail(f"node ids must be integers >= 0 (nx.convert_node_labels_to_integers "
                      f"renumbers a graph), got {_kind(n) if type(n) is not int else n}")
        return n

    def document(self, nodes, operands, attrs, depth, where):
        if depth > MAX_NESTING:
            self.fail(f"sub-graphs nested more than {MAX_NESTING} deep")
        for k in attrs:
            if type(k) is not str or k not in _GRAPH_ATTRS:
                self.fail(f"the graph has an attribute {self.key(k)}; it may only have "
                          f"{sorted(_GRAPH_ATTRS)}")
        if "outputs" not in attrs:
            self.fail("the graph has no 'outputs' attribute (graph.nx sets it; set "
                      "g.graph['outputs'] to the output node ids)")
        outputs = [self.int_(o, "an output") for o in self.sequence(attrs["outputs"],
                                                                    "outputs")]
        guards = []
        for pair in self.sequence(attrs.get("guards", []), "guards"):
            pair = self.sequence(pair, "a guard")
            if len(pair) != 2:
                self.fail("a guard is a (node, value) pair")
            guards.append({"node": self.int_(pair[0], "a guard's node"),
                           "value": self.guard_value(pair[1])})
        fields = {n: self.fields(n, a) for n, a in nodes}
        groups = self.groups(fields, operands, where)
        entries = []
        for n in self.order(fields, operands, where):
            op, shape, dtype, params, src = fields[n]
            if op == PROJ:
                continue        # written with its head
            entry = {"id": n, "op": op, "args": [operands[n][i] for i in range(len(operands[n]))]}
            if n in groups:
                entry["outputs"] = [None if p is None else
                                    {"id": p, "shape": self.shape(p, fields[p][1]),
                                     "dtype": self.dtype(p, fields[p][2])}
                                    for p in groups[n]]
            else:
                entry.update(shape=self.shape(n, shape), dtype=self.dtype(n, dtype))
            entry.update(params=self.params(n, params, depth), src=src)
            entries.append(entry)
        inputs = [e["id"] for e in entries if e["op"] == "input"]
        return {"format": FORMAT, "version": VERSION, "inputs": inputs, "outputs": outputs,
                "guards": guards, "nodes": entries}

    def sequence(self, v, what):
        if type(v) is not list and type(v) is not tuple:
            self.fail(f"{what} must be a list, got {_kind(v)}")
        return v

    def key(self, k):
        return repr(k[:40]) if type(k) is str else _kind(k)

    def fields(self, n, attrs):
        """``(op, shape, dtype, params, src)`` of node ``n``, each still to be checked."""
        if type(attrs) is Node:
            extra = attrs._extra
            if extra:
                self.fail(f"node {n} has an attribute {self.key(next(iter(extra)))} the IR "
                          "does not hold (delete it)")
            return attrs.op, attrs.shape, attrs.dtype, attrs.params, attrs.src
        if type(attrs) is not dict:
            self.fail(f"node {n}'s attributes are {_kind(attrs)}")
        for k in attrs:
            if type(k) is not str or k not in _ALLOWED:
                self.fail(f"node {n} has an attribute {self.key(k)} the IR does not hold "
                          f"(it has {sorted(_ALLOWED)})")
        missing = _REQUIRED - attrs.keys()
        if missing:
            self.fail(f"node {n} has no {sorted(missing)}")
        return attrs["op"], attrs["shape"], attrs["dtype"], attrs["params"], attrs.get("src")

    def groups(self, fields, operands, where):
        """head -> its ``proj`` node ids by output index (None where there is none)."""
        groups: dict = {}
        for n, (op, _, _, params, _) in fields.items():
            self.str_(op, f"node {n}'s op")
            if op != PROJ:
                continue
            if type(params) is not dict or len(params) != 1 or "index" not in params:
                self.fail(f"proj node {n} must have exactly the param 'index'")
            index = self.int_(params["index"], f"proj node {n}'s index")
            ops = operands[n]
            head = ops.get(0)
            if len(ops) != 1 or head is None:
                self.fail(f"proj node {n} must have exactly one operand (its head), by {where}")
            head_op = fields[head][0]
            if type(head_op) is not str or head_op not in REGISTRY or not REGISTRY[head_op].multi:
                self.fail(f"proj node {n}'s operand {head} is not a node with several outputs")
            if not 0 <= index <= V1_MAX_INDEX:
                self.fail(f"proj node {n}'s index {index} is out of range")
            outs = groups.setdefault(head, [])
            outs.extend([None] * (index + 1 - len(outs)))
            if outs[index] is not None:
                self.fail(f"nodes {outs[index]} and {n} are both output {index} of node {head}")
            outs[index] = n
        for head, (op, *_rest) in fields.items():
            if op in REGISTRY and REGISTRY[op].multi:
                groups.setdefault(head, [])
        return groups

    def order(self, fields, operands, where):
        """The node ids, operands first: the given order where it already is one."""
        done, active, out = set(), set(), []
        for root in fields:
            if root in done:
                continue
            stack = [(root, False)]
            while stack:
                n, expanded = stack.pop()
                if expanded:
                    active.discard(n)
                    done.add(n)
                    out.append(n)
                    continue
                if n in done:
                    continue
                if n in active:
                    self.fail(f"the graph has a cycle through node {n}")
                ops = operands[n]
                if sorted(ops) != list(range(len(ops))):
                    self.fail(f"node {n}'s operand positions are {sorted(ops)} (by {where}); "
                              f"they must be 0..{len(ops) - 1}, each once")
                active.add(n)
                stack.append((n, True))
                for i in range(len(ops) - 1, -1, -1):
                    a = ops[i]
                    if a not in fields:
                        self.fail(f"operand {i} of node {n} is node {a}, which is not in the "
                                  "graph")
                    if a in active:
                        self.fail(f"the graph has a cycle through node {a}")
                    if a not in done:
                        stack.append((a, False))
        return out

    # -- the values ----------------------------------------------------------------------
    def shape(self, n, shape):
        seq = self.sequence(shape, f"node {n}'s shape")
        if len(seq) > MAX_DIMS:
            self.fail(f"node {n}'s shape has {len(seq)} dimensions (at most {MAX_DIMS})")
        return [self.int_(d, f"a dimension of node {n}'s shape") for d in seq]

    def dtype(self, n, dtype):
        if _among(type(dtype), _DTYPE_TYPES):
            return dtype.name
        return self.str_(dtype, f"node {n}'s dtype")

    def params(self, n, params, depth):
        if type(params) is not dict:
            self.fail(f"node {n}'s params must be a dict, got {_kind(params)}")
        out = {}
        for k, v in params.items():
            self.str_(k, f"a parameter name of node {n}")
            out[k] = self.value(v, f"node {n}'s param {self.key(k)}", depth, 0)
        return out

    def value(self, v, what, depth, nesting):
        """The document's form of a param value (``_encode``'s, once its type is known)."""
        if nesting > MAX_VALUE_DEPTH:
            self.fail(f"{what} is nested more than {MAX_VALUE_DEPTH} deep")
        t = type(v)
        if v is None or t is bool or t is str or t is int or t is float or _among(t, _INTEGERS) \
                or t is np.float64 or _among(t, _DTYPE_TYPES):
            return _encode(v)
        if t is np.ndarray or _among(t, _SCALARS):
            return self.array(v, what)
        if t is tuple:
            return {"tuple": [self.value(x, what, depth, nesting + 1) for x in v]}
        if t is Index:
            return {"index": [self.index_item(x, what) for x in v]}
        if t is Graph:
            return {"graph": self.graph_document(v, depth + 1)}
        if _among(t, _GRAPHS):
            return {"graph": self.nx_document(v, depth + 1)}
        self.fail(f"{what} is {_kind(v)}; a param holds None, bool, int, float, str, tuple, "
                  "a NumPy array or scalar, a dtype, an index, or a sub-graph")

    def array(self, v, what):
        if not _among(type(v.dtype), _DTYPE_TYPES) or v.dtype.name not in DTYPES:
            self.fail(f"{what} is an array of dtype {str(v.dtype)[:40]!r}, not one of "
                      f"{sorted(DTYPES)}")
        self.constant_bytes += v.nbytes
        if self.constant_bytes > MAX_CONSTANT_BYTES:
            self.fail(f"the graph's arrays exceed {MAX_CONSTANT_BYTES} bytes")
        return _encode(v)

    def index_item(self, item, what):
        t = type(item)
        if t is Slice:
            return {"slice": [None if b is None else self.int_(b, f"a slice bound of {what}")
                              for b in item]}
        if t is Arg:
            return {"arg": self.int_(item.k, f"an index operand of {what}")}
        if item is Ellipsis:
            return {"ellipsis": True}
        if item is None or t is int or _among(t, _INTEGERS):
            return _encode(item)
        if t is np.ndarray:
            return self.array(item, what)
        self.fail(f"an index item of {what} is {_kind(item)}")

    def guard_value(self, v):
        t = type(v)
        if t is bool or t is int:
            return v
        if t is float or t is np.float64 or _among(t, _INTEGERS) or _among(t, _SCALARS) or t is np.ndarray:
            return self.array(np.asarray(v), "a guard value")
        self.fail(f"a guard value is {_kind(v)}")
