"""The IR: a networkx graph of primitive applications.

Every node is one value. Its attributes are ``op`` (a primitive name, or
``"input"`` / ``"const"``), ``args`` (the ordered operand ids; the edges carry
the same information as ``pos``), ``shape``, ``dtype`` (a NumPy dtype name),
``params`` (a dict) and ``src`` (``"file.py:LINE"`` of the user's code).

Nodes are kept in topological order: tracing appends operations as they run
and every pass builds its output graph front to back, so the insertion order
networkx preserves is an evaluation order.
"""
from __future__ import annotations

import networkx as nx
import numpy as np

from .dtypes import aval_str
from .printing import format_params, printable

_DTYPE_NAMES: dict = {}


def dtype_name(dtype) -> str:
    """``np.dtype(dtype).name``, memoised (computing it is surprisingly slow)."""
    try:
        return _DTYPE_NAMES[dtype]
    except (KeyError, TypeError):
        name = np.dtype(dtype).name
        try:
            _DTYPE_NAMES[dtype] = name
        except TypeError:
            pass
        return name


class Graph:
    def __init__(self):
        self.nx = nx.MultiDiGraph()
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        # Branch decisions taken while tracing: (node id, expected value).
        # A graph is only valid for inputs on which every guard node still
        # evaluates to its expected value.
        self.guards: list[tuple[int, object]] = []
        self._next_id = 0

    # -- building -----------------------------------------------------------
    def _insert(self, n, attrs):
        """Add node ``n`` and its operand edges (keyed and labelled by position).

        This writes the MultiDiGraph's adjacency dicts the way ``add_node`` and
        ``add_edge`` would, without their per-call overhead, which dominated the
        cost of building large graphs. ``tests/test_ir.py`` checks the result is
        the graph the public networkx calls build.
        """
        g = self.nx
        if n in g._node:
            raise ValueError(f"node {n} is already in the graph")
        g._node[n] = attrs
        g._succ[n] = {}
        pred = g._pred[n] = {}
        succ = g._succ
        for pos, a in enumerate(attrs["args"]):
            keys = pred.get(a)
            if keys is None:
                if a not in succ:
                    raise ValueError(f"operand %{a} of node %{n} is not in the graph")
                keys = pred[a] = succ[a][n] = {}
            keys[pos] = {"pos": pos}
        return n

    def add_node(self, op, args=(), params=None, *, shape, dtype, src=None) -> int:
        n = self._next_id
        self._next_id += 1
        return self._insert(n, {"op": op, "args": tuple(args), "shape": tuple(shape),
                                "dtype": dtype_name(dtype), "params": params or {},
                                "src": src})

    def put(self, n, attrs: dict, args=None) -> int:
        """Insert node ``n`` with ``attrs`` (a copy of another graph's node; passes use it
        to keep node ids stable), optionally with new operands."""
        attrs = dict(attrs)
        if args is not None:
            attrs["args"] = tuple(args)
        self._next_id = max(self._next_id, n + 1)
        return self._insert(n, attrs)

    def add_input(self, shape, dtype, src=None) -> int:
        n = self.add_node("input", (), {"index": len(self.inputs)}, shape=shape, dtype=dtype, src=src)
        self.inputs.append(n)
        return n

    def add_const(self, value, src=None) -> int:
        value = np.asarray(value)
        return self.add_node("const", (), {"value": value}, shape=value.shape, dtype=value.dtype, src=src)

    # -- reading ------------------------------------------------------------
    def __iter__(self):
        """Node ids in evaluation order."""
        return iter(self.nx.nodes)

    def __len__(self):
        return self.nx.number_of_nodes()

    def __contains__(self, n):
        return n in self.nx

    def node(self, n) -> dict:
        return self.nx.nodes[n]

    def op(self, n) -> str:
        return self.nx.nodes[n]["op"]

    def args(self, n) -> tuple:
        return self.nx.nodes[n]["args"]

    def users(self, n) -> list[int]:
        return sorted(set(self.nx.successors(n)))

    def ops(self) -> list[str]:
        return [d["op"] for _, d in self.nx.nodes(data=True)]

    # -- running ------------------------------------------------------------
    def __call__(self, *args):
        """Run the graph on NumPy (or inline it into an active trace): ``evaluate.call``."""
        from .evaluate import call  # evaluate builds on this module

        outs = call(self, args)
        return outs[0] if len(outs) == 1 else tuple(outs)

    # -- printing -----------------------------------------------------------
    def dump(self) -> str:
        lines = []
        sig = ", ".join(f"%{n}:{self._aval(n)}" for n in self.inputs)
        lines.append(f"graph({sig}):")
        width = 0
        body = []
        for n, d in self.nx.nodes(data=True):
            if d["op"] == "input":
                continue
            if d["op"] == "const":
                rhs = "const " + format_params({"value": d["params"]["value"]}, bare=True)
            else:
                rhs = d["op"] + "".join(f" %{a}" for a in d["args"])
                extra = format_params(d["params"])
                if extra:
                    rhs += " " + extra
            text = f"  %{n}:{self._aval(n)} = {rhs}"
            width = max(width, len(text))
            body.append((text, d["src"], [(k, v) for k, v in d["params"].items()
                                          if isinstance(v, Graph)]))
        for text, src, subgraphs in body:
            lines.append(f"{text.ljust(width)}   # {printable(src)}" if src else text)
            for key, sub in subgraphs:       # sub-graph params, indented under their node
                nested = sub.dump().splitlines()
                if key != "graph":
                    nested[0] = f"{key}: {nested[0]}"
                lines.extend("    " + line for line in nested)
        for node, expected in self.guards:
            lines.append(f"  guard %{node} == {format_params({'v': expected}, bare=True)}")
        lines.append("  return " + ", ".join(f"%{o}" for o in self.outputs))
        return "\n".join(lines)

    def _aval(self, n) -> str:
        d = self.nx.nodes[n]
        return aval_str(d["shape"], d["dtype"])

    def __str__(self):
        return self.dump()

    def __repr__(self):
        return (f"<tg.Graph {len(self.inputs)} inputs, {len(self)} nodes, "
                f"{len(self.outputs)} outputs>")

    def to_dot(self, forward=None, *, seeds=None, max_const=None, legend=True) -> str:
        """Graphviz DOT source (no Graphviz install needed for the text).

        The adjoint part of a derived graph is filled apart from the forward part;
        ``forward`` (the differentiated graph, or a set of forward node ids) or ``seeds``
        (cotangent seed node ids) say which part is which, else a structural rule does
        (see ``tracegrad/ir/dot.py``). Constants with more than ``max_const`` elements
        (default 16) are drawn collapsed.
        """
        from .dot import MAX_CONST, to_dot

        return to_dot(self, forward, seeds=seeds, legend=legend,
                      max_const=MAX_CONST if max_const is None else max_const)

    def render(self, path, format=None, engine="graphviz", **to_dot_args):  # noqa: A002
        """Write the drawing to ``path`` as SVG or PNG (from its suffix, or ``format``)
        through the ``graphviz`` package and Graphviz's ``dot`` program; returns the path.
        Raises ``tracegrad.ir.render.GraphvizUnavailable`` (an ImportError and a
        RuntimeError) naming the install commands when either is missing.
        ``engine="matplotlib"`` draws a simpler picture without Graphviz.
        ``to_dot_args`` go to ``to_dot``."""
        from .render import render

        return render(self, path, format=format, engine=engine, **to_dot_args)

    def summary(self):
        """Node counts by op, an estimate of the FLOPs, bytes of intermediates and
        constants, and depth (``print`` it, or read its fields)."""
        from .summary import summarize

        return summarize(self)

    def to_json(self) -> str:
        """The graph as a ``tracegrad-ir`` version 1 JSON document (see ``ir/serialize.py``)."""
        from .serialize import to_json

        return to_json(self)

    @classmethod
    def from_json(cls, text) -> Graph:
        """Load a document written by ``to_json``. It is validated, and nothing in it is
        ever evaluated, imported or unpickled."""
        from .serialize import from_json

        return from_json(text)

    # -- copying ------------------------------------------------------------
    def subgraph(self, outputs, keep=None) -> Graph:
        """A copy holding only ``keep`` (default: every node), with new outputs.

        Node ids are preserved, so dumps of a graph and its pruned copy line up.
        """
        g = Graph()
        g._next_id = self._next_id
        for n, d in self.nx.nodes(data=True):
            if keep is None or n in keep:
                g._insert(n, dict(d))
        g.inputs = list(self.inputs)
        g.outputs = list(outputs)
        g.guards = [(n, v) for n, v in self.guards if keep is None or n in keep]
        return g
