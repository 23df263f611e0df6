"""Pytrees: nested tuples, lists and dicts (and None) around array leaves, plus the
container types registered with ``register_node`` (``tg.tree_util``).

``flatten`` gives the leaves and a ``TreeDef`` that ``unflatten`` uses to
rebuild the same structure around new leaves. Dict keys are visited in sorted
order, as in JAX, so ``{"b": .., "a": ..}`` and ``{"a": .., "b": ..}`` agree; an
``OrderedDict`` keeps its insertion order (its structure holds the order) and a
``defaultdict`` its ``default_factory``, and both are rebuilt as their own type.
``None`` is a subtree with no leaves. A registered type is flattened by its own
function into ``(children, aux_data)`` and rebuilt by ``unflatten(aux_data, children)``;
``aux_data`` is part of the structure (compared, and hashed by ``tg.jit``'s cache).
Any other object is a leaf: as in JAX, a dataclass is a pytree only once registered.
"""
from __future__ import annotations

from collections import OrderedDict, defaultdict
from typing import NamedTuple

import numpy as np

from ..errors import TraceError


class TreeDef(NamedTuple):
    # "leaf", "none", "tuple", "list", "dict", "odict" (OrderedDict), "ddict"
    # (defaultdict), "namedtuple", "custom"
    kind: str
    # dict keys (sorted; an OrderedDict's in insertion order), (default_factory, sorted
    # keys) for a defaultdict, the namedtuple class, or (registered type, aux_data)
    meta: object
    children: tuple

    @property
    def num_leaves(self):
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    @property
    def num_nodes(self):
        return 1 + sum(c.num_nodes for c in self.children)

    def unflatten(self, leaves):
        """The tree of this structure around ``leaves``."""
        return unflatten(self, leaves)

    def flatten_up_to(self, tree):
        """The subtrees of ``tree`` standing where this structure has its leaves."""
        return flatten_up_to(self, tree)

    def children_defs(self):
        return list(self.children)

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(map(repr, self.children))
        if self.kind in ("dict", "odict", "ddict"):
            keys = self.meta[1] if self.kind == "ddict" else self.meta
            inner = "{" + ", ".join(f"{k!r}: {c!r}" for k, c in zip(keys, self.children)) + "}"
            if self.kind == "odict":
                return f"OrderedDict({inner})"
            if self.kind == "ddict":
                return f"defaultdict({getattr(self.meta[0], '__name__', self.meta[0])}, {inner})"
            return inner
        if self.kind == "namedtuple":
            return f"{self.meta.__name__}({inner})"
        if self.kind == "custom":
            return f"{self.meta[0].__name__}[{self.meta[1]!r}]({inner})"
        return {"list": f"[{inner}]"}.get(self.kind, f"({inner})")


LEAF = TreeDef("leaf", None, ())
NONE = TreeDef("none", None, ())
# types that are always leaves (the fast path of ``flatten``); tracers are added by the
# tracer when it is imported
_LEAVES = {float, int, complex, bool, np.ndarray, np.float64, np.float32}
# registered container types: type -> (flatten(x) -> (children, aux), unflatten(aux, children))
_NODES: dict = {}


def register_node(cls, flatten_fn, unflatten_fn):
    """Make ``cls`` a pytree node: ``flatten_fn(x) -> (children, aux_data)``,
    ``unflatten_fn(aux_data, children) -> x``."""
    if not isinstance(cls, type):
        raise TraceError(f"register_pytree_node needs a type, got {cls!r}")
    if cls in _NODES or cls in (tuple, list, dict, type(None)) or cls in _LEAVES:
        raise TraceError(f"{cls.__name__} is already registered as a pytree node")
    _NODES[cls] = (flatten_fn, unflatten_fn)


def is_node(x):
    """Whether ``x`` is a container (has children) rather than a leaf."""
    return (x is None or type(x) in _NODES or isinstance(x, (tuple, list, dict)))


def _sorted_keys(d):
    try:
        return sorted(d)
    except TypeError:
        return list(d)


def _node_of(x):
    """(kind, meta, children) of a container, or None for a leaf."""
    if x is None:
        return "none", None, ()
    entry = _NODES.get(type(x))
    if entry is not None:
        children, aux = entry[0](x)
        return "custom", (type(x), aux), tuple(children)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return "namedtuple", type(x), tuple(x)
    if isinstance(x, (tuple, list)):
        return ("tuple" if isinstance(x, tuple) else "list"), None, tuple(x)
    if isinstance(x, dict):
        if type(x) is OrderedDict:          # insertion order, as JAX keeps it
            keys = tuple(x)
            return "odict", keys, tuple(x[k] for k in keys)
        keys = tuple(_sorted_keys(x))
        children = tuple(x[k] for k in keys)
        if type(x) is defaultdict:
            return "ddict", (x.default_factory, keys), children
        return "dict", keys, children
    return None


def flatten(tree, is_leaf=None):
    if is_leaf is None and type(tree) in _LEAVES:
        return [tree], LEAF
    leaves = []

    def go(x):
        if is_leaf is not None and is_leaf(x):
            leaves.append(x)
            return LEAF
        node = _node_of(x)
        if node is None:
            leaves.append(x)
            return LEAF
        kind, meta, children = node
        if kind == "none":
            return NONE
        return TreeDef(kind, meta, tuple(go(c) for c in children))

    treedef = go(tree)
    return leaves, treedef


def _build(td, children):
    if td.kind == "tuple":
        return tuple(children)
    if td.kind == "list":
        return list(children)
    if td.kind == "namedtuple":
        return td.meta(*children)
    if td.kind == "dict":
        return dict(zip(td.meta, children))
    if td.kind == "odict":
        return OrderedDict(zip(td.meta, children))
    if td.kind == "ddict":
        return defaultdict(td.meta[0], zip(td.meta[1], children))
    cls, aux = td.meta
    return _NODES[cls][1](aux, children)


def unflatten(treedef: TreeDef, leaves):
    it = iter(leaves)
    if treedef.kind == "leaf":
        return next(it)

    def go(td):
        if td.kind == "leaf":
            return next(it)
        if td.kind == "none":
            return None
        return _build(td, [go(c) for c in td.children])

    return go(treedef)


def _describe(td):
    return {"custom": lambda: td.meta[0].__name__,
            "namedtuple": lambda: td.meta.__name__, "odict": lambda: "OrderedDict",
            "ddict": lambda: "defaultdict"}.get(td.kind, lambda: td.kind)()


def flatten_up_to(treedef: TreeDef, tree):
    """The subtrees of ``tree`` at the leaves of ``treedef`` (``tree`` must have that
    structure down to them); a TraceError naming the first difference otherwise."""
    out = []

    def go(td, x):
        if td.kind == "leaf":
            out.append(x)
            return
        node = _node_of(x)
        if node is None:
            raise TraceError(f"pytree structures differ: expected a {_describe(td)}, got a "
                             f"leaf {type(x).__name__}")
        kind, meta, children = node
        # a dict's keys are compared as a set (a dict whose keys cannot be sorted keeps its
        # insertion order); an OrderedDict's in order, as JAX compares them
        same = kind == td.kind and (meta == td.meta if kind != "dict"
                                    else sorted(map(repr, meta)) == sorted(map(repr, td.meta)))
        if kind == "dict" and same:
            children = tuple(x[k] for k in td.meta)
        if not same or len(children) != len(td.children):
            raise TraceError(f"pytree structures differ: expected {td!r}, got "
                             f"{flatten(x)[1]!r}")
        for c, ch in zip(td.children, children):
            go(c, ch)

    go(treedef, tree)
    return out


def tree_map(fn, tree, *rest, is_leaf=None):
    leaves, td = flatten(tree, is_leaf)
    others = [flatten_up_to(td, r) for r in rest]
    return unflatten(td, [fn(x, *xs) for x, *xs in zip(leaves, *others)])
