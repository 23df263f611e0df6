"""The IR: a graph of primitive applications.

Every node is one value (a multi-output primitive's node, the *head*, has a tuple
for its value, and each output is a ``proj`` node of its own right after it: see
``ir/registry.py``), a ``Node`` with the fields ``op`` (a primitive name, or
``"input"`` / ``"const"``), ``args`` (the ordered operand ids), ``shape``, ``dtype``
(a NumPy dtype name), ``params`` (a dict) and ``src`` (``"file.py:LINE"`` of the
user's code), plus its ``id``. A node also reads like the dict of those six
attributes (``node["op"]``, ``node.get("src")``, ``dict(node)``).

A ``Graph`` keeps its nodes in a dict in topological order: tracing appends
operations as they run and every pass builds its output graph front to back, so
insertion order is an evaluation order. Adding a node costs a dict insertion.
``graph.nx`` is a networkx ``MultiDiGraph`` view of the same nodes (edges keyed and
labelled by operand position ``pos``, graph attributes ``outputs`` and ``guards``),
built on first use; ``Graph.from_nx`` reads such a graph back (``ir/serialize.py``).
networkx is imported by ``ir/nxview.py`` alone.
"""
from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Mapping, MutableMapping
from itertools import islice
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from .dtypes import aval_str
from .printing import format_params, printable

if TYPE_CHECKING:
    from pathlib import Path

    from .nxview import nx as networkx
    from .summary import Summary

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


FIELDS = ("op", "args", "shape", "dtype", "params", "src")
_FIELD_SET = frozenset(FIELDS)


class Node(MutableMapping):
    """One node of a ``Graph``: ``id``, ``op``, ``args``, ``shape``, ``dtype``,
    ``params``, ``src`` as attributes.

    It is also a mapping of the six attributes other than ``id`` (what networkx
    shows as the node's attribute dict): ``node["op"]``, ``node.get("src")``,
    ``"op" in node``, ``dict(node)``, ``node["src"] = ...``. Other keys may be
    set too (``networkx.set_node_attributes`` on ``graph.nx`` does); they are
    kept beside the six and copied with the node.
    """

    __slots__ = ("id", "op", "args", "shape", "dtype", "params", "src", "_extra")

    def __init__(self, id: int, op: str, args: tuple = (), shape: tuple = (),  # noqa: A002
                 dtype: str = "float64", params: dict | None = None, src: str | None = None):
        self.id = id
        self.op = op
        self.args = args
        self.shape = shape
        self.dtype = dtype
        self.params = {} if params is None else params
        self.src = src
        self._extra = None

    # -- the mapping view ------------------------------------------------------------
    def __getitem__(self, key):
        # a chain of comparisons, most used first: faster than getattr (hot in passes)
        if key == "op":
            return self.op
        if key == "args":
            return self.args
        if key == "params":
            return self.params
        if key == "shape":
            return self.shape
        if key == "dtype":
            return self.dtype
        if key == "src":
            return self.src
        if self._extra is not None:
            return self._extra[key]
        raise KeyError(key)

    def get(self, key, default=None):
        if key in _FIELD_SET:
            return getattr(self, key)
        if self._extra is not None:
            return self._extra.get(key, default)
        return default

    def __setitem__(self, key, value) -> None:
        if key in _FIELD_SET:
            setattr(self, key, value)
        else:
            if self._extra is None:
                self._extra = {}
            self._extra[key] = value

    def __delitem__(self, key) -> None:
        if key in _FIELD_SET:
            raise TypeError(f"a node's {key!r} cannot be deleted")
        if self._extra is None:
            raise KeyError(key)
        del self._extra[key]

    def __contains__(self, key) -> bool:
        return key in _FIELD_SET or (self._extra is not None and key in self._extra)

    def __iter__(self) -> Iterator[str]:
        yield from FIELDS
        if self._extra:
            yield from list(self._extra)

    def __len__(self) -> int:
        return 6 + (len(self._extra) if self._extra else 0)

    def as_dict(self) -> dict:
        """The attribute dict (a new dict; ``id`` is not in it)."""
        d = {"op": self.op, "args": self.args, "shape": self.shape, "dtype": self.dtype,
             "params": self.params, "src": self.src}
        if self._extra:
            d.update(self._extra)
        return d

    def copy(self) -> Node:
        """A shallow copy (``params`` shared, as ``dict.copy`` would)."""
        node = Node(self.id, self.op, self.args, self.shape, self.dtype, self.params, self.src)
        if self._extra:
            node._extra = dict(self._extra)
        return node

    def __eq__(self, other):
        if isinstance(other, Node):
            return self.as_dict() == other.as_dict()
        if isinstance(other, Mapping):
            return self.as_dict() == dict(other)
        return NotImplemented

    __hash__ = None  # mutable, like the dict it stands for

    def __repr__(self) -> str:
        return repr(self.as_dict())

    def __reduce__(self):
        return (_make_node, (self.id, self.as_dict()))


def _make_node(n, attrs):
    return _node_from(n, attrs)


def _node_from(n: int, attrs: Mapping, args=None) -> Node:
    """A new node ``n`` with the attributes of ``attrs`` (a Node or a dict)."""
    if isinstance(attrs, Node):
        node = Node(n, attrs.op, attrs.args if args is None else tuple(args), attrs.shape,
                    attrs.dtype, attrs.params, attrs.src)
        if attrs._extra:
            node._extra = dict(attrs._extra)
        return node
    node = Node(n, attrs["op"], attrs["args"] if args is None else tuple(args),
                attrs["shape"], attrs["dtype"], attrs.get("params", {}), attrs.get("src"))
    extra = {k: v for k, v in attrs.items() if k not in _FIELD_SET}
    if extra:
        node._extra = extra
    return node


class Graph:
    """Nodes in evaluation order, with ``inputs``, ``outputs`` and ``guards``.

    Reading: ``for n in graph`` (ids), ``graph.nodes()`` (``Node`` objects),
    ``graph.items()`` (``(id, Node)`` pairs), ``graph.node(n)``, ``graph.by_id``
    (a read-only ``{id: Node}`` mapping), ``op/args/users``. Building: ``add_input``,
    ``add_const``, ``add_node``, ``put`` (a node with a given id), ``new_id`` /
    ``reserve_ids`` for fresh ids, ``subgraph``. ``graph.nx`` is the networkx view.
    """

    def __init__(self) -> None:
        self._nodes: dict[int, Node] = {}
        self.inputs: list[int] = []
        self.outputs: list[int] = []
        # Branch decisions taken while tracing: (node id, expected value).
        # A graph is only valid for inputs on which every guard node still
        # evaluates to its expected value.
        self.guards: list[tuple[int, object]] = []
        self._next_id = 0
        # Nodes removed so far: with the node count it says whether the networkx view
        # and the users index still describe the graph (nodes are otherwise only added).
        self._removed = 0
        self._nx = None
        self._nx_state = None
        self._users = None
        self._users_state = None

    # -- building -----------------------------------------------------------
    def add_node(self, op: str, args: Iterable[int] = (), params: dict | None = None, *,
                 shape: Iterable[int], dtype: Any, src: str | None = None) -> int:
        """Append a node with a fresh id; returns the id."""
        nodes = self._nodes
        args = tuple(args)
        n = self._next_id
        for a in args:
            if a not in nodes:
                raise ValueError(f"operand %{a} of node %{n} is not in the graph")
        self._next_id = n + 1
        nodes[n] = Node(n, op, args, tuple(shape), dtype_name(dtype),
                        {} if params is None else params, src)
        return n

    def add_node_unchecked(self, op: str, args: tuple, params: dict, shape: tuple, dtype: Any,
                           src: str | None) -> int:
        """``add_node`` for a caller that guarantees what it checks and converts (the eager
        tape, once per tensor operation): ``args`` a tuple of nodes of this graph,
        ``shape`` a tuple, ``params`` a dict."""
        n = self._next_id
        self._next_id = n + 1
        self._nodes[n] = Node(n, op, args, shape, dtype_name(dtype), params, src)
        return n

    def put(self, n: int, attrs: Mapping[str, Any], args: Iterable[int] | None = None) -> int:
        """Insert node ``n`` with ``attrs`` (another graph's ``Node``, or a dict of the
        six attributes; it is copied, ``params`` shared); passes use it to keep node ids
        stable. ``args`` replaces its operands."""
        nodes = self._nodes
        if n in nodes:
            raise ValueError(f"node {n} is already in the graph")
        node = _node_from(n, attrs, args)
        for a in node.args:
            if a not in nodes:
                raise ValueError(f"operand %{a} of node %{n} is not in the graph")
        nodes[n] = node
        if n >= self._next_id:
            self._next_id = n + 1
        return n

    def add_input(self, shape: Iterable[int], dtype: Any, src: str | None = None) -> int:
        n = self.add_node("input", (), {"index": len(self.inputs)}, shape=shape, dtype=dtype, src=src)
        self.inputs.append(n)
        return n

    def add_const(self, value: Any, src: str | None = None) -> int:
        value = np.asarray(value)
        return self.add_node("const", (), {"value": value}, shape=value.shape, dtype=value.dtype, src=src)

    def remove(self, n: int) -> None:
        """Drop node ``n`` (the eager tape frees the nodes of tensors that died). Nodes
        that used it keep it in their ``args``; the networkx view has no such edges."""
        del self._nodes[n]
        self._removed += 1

    def new_id(self) -> int:
        """A fresh node id, never used in this graph (for a node built elsewhere and
        ``put`` here)."""
        n = self._next_id
        self._next_id = n + 1
        return n

    @property
    def next_id(self) -> int:
        """The id the next fresh node will get; every node added since has an id at or
        above the value read before."""
        return self._next_id

    def reserve_ids(self, end: int) -> None:
        """Make fresh ids start at ``end`` or above (a pass's output graph reserves the
        ids of its input graph, so the nodes it adds never take one of them)."""
        if end > self._next_id:
            self._next_id = end

    # -- reading ------------------------------------------------------------
    def __iter__(self) -> Iterator[int]:
        """Node ids in evaluation order."""
        return iter(self._nodes)

    def __len__(self) -> int:
        return len(self._nodes)

    def __contains__(self, n) -> bool:
        return n in self._nodes

    def nodes(self) -> Iterable[Node]:
        """The ``Node`` objects in evaluation order (a live view)."""
        return self._nodes.values()

    def items(self) -> Iterable[tuple[int, Node]]:
        """``(id, Node)`` pairs in evaluation order (a live view)."""
        return self._nodes.items()

    @property
    def by_id(self) -> Mapping[int, Node]:
        """A read-only ``{id: Node}`` mapping, in evaluation order (a live view)."""
        return MappingProxyType(self._nodes)

    def node(self, n: int) -> Node:
        return self._nodes[n]

    def op(self, n: int) -> str:
        return self._nodes[n].op

    def args(self, n: int) -> tuple:
        return self._nodes[n].args

    def users(self, n: int) -> list[int]:
        """The nodes that take ``n`` as an operand, sorted by id."""
        if n not in self._nodes:
            raise KeyError(f"node {n} is not in the graph")
        state = (len(self._nodes), self._removed)
        if self._users is None or self._users_state != state:
            index: dict = {}
            for node in self._nodes.values():
                for a in set(node.args):
                    index.setdefault(a, []).append(node.id)
            for lst in index.values():
                lst.sort()
            self._users, self._users_state = index, state
        return list(self._users.get(n, ()))

    def levels(self) -> dict[int, int]:
        """Each node's topological generation: 0 for a node without operands, else one
        more than its deepest operand's (the length of the longest path reaching it)."""
        level: dict[int, int] = {}
        for n, d in self._nodes.items():
            level[n] = max((level[a] for a in d.args if a in level), default=-1) + 1
        return level

    def ops(self) -> list[str]:
        return [node.op for node in self._nodes.values()]

    @property
    def nx(self) -> networkx.MultiDiGraph:
        """The graph as a networkx ``MultiDiGraph``: each node's attribute dict is its
        ``Node`` (so edits through it reach this graph), each operand an edge keyed and
        labelled by its position ``pos``, and the graph attributes ``outputs`` and
        ``guards`` copies of this graph's (set again at each read). Built on first use,
        extended or rebuilt when the graph has changed since. ``Graph.from_nx`` reads it,
        or a pass's edited copy of it, back."""
        from .nxview import build, extend

        count = len(self._nodes)
        state = self._nx_state
        if self._nx is None or state[1] != self._removed or state[0] > count:
            self._nx = build(self._nodes.values())
        elif state[0] < count:
            extend(self._nx, islice(self._nodes.values(), state[0], None))
        self._nx_state = (count, self._removed)
        self._nx.graph.update(outputs=list(self.outputs), guards=list(self.guards))
        return self._nx

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_nx"] = state["_nx_state"] = state["_users"] = state["_users_state"] = None
        return state

    # -- running ------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        """Run the graph on NumPy (or inline it into an active trace): ``evaluate.call``."""
        from .evaluate import call  # evaluate builds on this module

        outs = call(self, args)
        return outs[0] if len(outs) == 1 else tuple(outs)

    # -- printing -----------------------------------------------------------
    def dump(self) -> str:
        """The readable text form (``str(graph)``)."""
        lines = []
        sig = ", ".join(f"%{n}:{self._aval(n)}" for n in self.inputs)
        lines.append(f"graph({sig}):")
        from .registry import PROJ

        width = 0
        body = []
        groups = self.output_groups()
        for n, d in self._nodes.items():
            if d.op == "input" or d.op == PROJ:
                continue
            if d.op == "const":
                rhs = "const " + format_params({"value": d.params["value"]}, bare=True)
            else:
                rhs = d.op + "".join(f" %{a}" for a in d.args)
                extra = format_params(d.params)
                if extra:
                    rhs += " " + extra
            if n in groups:     # a multi-output node: its outputs on the left ("_": unused)
                lhs = ", ".join("_" if p is None else f"%{p}:{self._aval(p)}"
                                for p in groups[n])
            else:
                lhs = f"%{n}:{self._aval(n)}"
            text = f"  {lhs} = {rhs}"
            width = max(width, len(text))
            body.append((text, d.src, [(k, v) for k, v in d.params.items()
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

    def output_groups(self) -> dict[int, list]:
        """head -> its ``proj`` nodes by output index (None for an output without one), for
        every multi-output node (see ``ir/registry.py``)."""
        from .registry import PROJ, REGISTRY

        groups: dict = {}
        for n, d in self._nodes.items():
            if d.op == PROJ:
                head = d.args[0]
                if head not in groups:
                    h = self._nodes[head]
                    groups[head] = [None] * REGISTRY[h.op].n_outputs(h.params)
                groups[head][d.params["index"]] = n
        return groups

    def _aval(self, n) -> str:
        d = self._nodes[n]
        return aval_str(d.shape, d.dtype)

    def __str__(self) -> str:
        return self.dump()

    def __repr__(self) -> str:
        return (f"<tg.Graph {len(self.inputs)} inputs, {len(self)} nodes, "
                f"{len(self.outputs)} outputs>")

    def to_dot(self, forward: Graph | Iterable[int] | None = None, *,
               seeds: Iterable[int] | None = None, max_const: int | None = None,
               legend: bool = True, fold: int | None = None) -> str:
        """Graphviz DOT source (no Graphviz install needed for the text).

        The adjoint part of a derived graph is filled apart from the forward part;
        ``forward`` (the differentiated graph, or a set of forward node ids) or ``seeds``
        (cotangent seed node ids) say which part is which, else a structural rule does
        (see ``tracegrad/ir/dot.py``). Constants with more than ``max_const`` elements
        (default 16) are drawn collapsed; those with at most ``fold`` (default 4) get no
        node of their own: their value is written into their users' labels.
        """
        from .dot import FOLD_SIZE, MAX_CONST, to_dot

        return to_dot(self, forward, seeds=seeds, legend=legend,
                      max_const=MAX_CONST if max_const is None else max_const,
                      fold=FOLD_SIZE if fold is None else fold)

    def render(self, path: str | Path, format: str | None = None,  # noqa: A002
               engine: str = "graphviz", **to_dot_args: Any) -> Path:
        """Write the drawing to ``path`` as SVG or PNG (from its suffix, or ``format``)
        through the ``graphviz`` package and Graphviz's ``dot`` program; returns the path.
        Raises ``tracegrad.ir.render.GraphvizUnavailable`` (an ImportError and a
        RuntimeError) naming the install commands when either is missing.
        ``engine="matplotlib"`` draws a simpler picture without Graphviz.
        ``to_dot_args`` go to ``to_dot``."""
        from .render import render

        return render(self, path, format=format, engine=engine, **to_dot_args)

    def summary(self) -> Summary:
        """Node counts by op, an estimate of the FLOPs, bytes of intermediates and
        constants, and depth (``print`` it, or read its fields)."""
        from .summary import summarize

        return summarize(self)

    def to_json(self) -> str:
        """The graph as a ``tracegrad-ir`` version 2 JSON document (see ``ir/serialize.py``)."""
        from .serialize import to_json

        return to_json(self)

    @classmethod
    def from_json(cls, text: str) -> Graph:
        """Load a document written by ``to_json``. It is validated, and nothing in it is
        ever evaluated, imported or unpickled."""
        from .serialize import from_json

        return from_json(text)

    @classmethod
    def from_nx(cls, g: networkx.MultiDiGraph) -> Graph:
        """A new graph from ``g``, a networkx graph in the form ``graph.nx`` gives (a
        node per IR node keyed by its id, an edge per operand with its position ``pos``,
        ``g.graph["outputs"]``), possibly edited by a pass written with networkx. It is
        converted to the plain document ``to_json`` writes and validated by the JSON
        loader: op names, params, shapes and dtypes are checked as ``from_json`` checks
        them, and nothing in ``g`` is evaluated, imported or called. Raises ``TraceError``.
        See ``docs/ir.md`` and ``ir/serialize.py``."""
        from .serialize import from_nx

        return from_nx(g)

    # -- copying ------------------------------------------------------------
    def subgraph(self, outputs: Iterable[int], keep: Container[int] | None = None) -> Graph:
        """A copy holding only ``keep`` (default: every node), with new outputs.

        Node ids are preserved, so dumps of a graph and its pruned copy line up.
        """
        g = Graph()
        g._next_id = self._next_id
        nodes = g._nodes
        for n, d in self._nodes.items():
            if keep is None or n in keep:
                for a in d.args:
                    if a not in nodes:
                        raise ValueError(f"operand %{a} of node %{n} is not in the graph")
                nodes[n] = d.copy()
        g.inputs = list(self.inputs)
        g.outputs = list(outputs)
        g.guards = [(n, v) for n, v in self.guards if keep is None or n in keep]
        return g
