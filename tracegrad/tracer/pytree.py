"""Pytrees: nested tuples, lists and dicts (and None) around array leaves.

``flatten`` gives the leaves and a ``TreeDef`` that ``unflatten`` uses to
rebuild the same structure around new leaves. Dict keys are visited in sorted
order, as in JAX, so ``{"b": .., "a": ..}`` and ``{"a": .., "b": ..}`` agree.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class TreeDef(NamedTuple):
    kind: str          # "leaf", "none", "tuple", "list", "dict", "namedtuple"
    meta: object       # dict keys, or the namedtuple class
    children: tuple

    @property
    def num_leaves(self):
        if self.kind == "leaf":
            return 1
        return sum(c.num_leaves for c in self.children)

    def __repr__(self):
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(map(repr, self.children))
        if self.kind == "dict":
            inner = ", ".join(f"{k!r}: {c!r}" for k, c in zip(self.meta, self.children))
            return "{" + inner + "}"
        return {"list": f"[{inner}]"}.get(self.kind, f"({inner})")


LEAF = TreeDef("leaf", None, ())
# types that are always leaves (the fast path of ``flatten``); tracers are added by the
# tracer when it is imported
_LEAVES = {float, int, complex, bool, np.ndarray, np.float64, np.float32}


def _sorted_keys(d):
    try:
        return sorted(d)
    except TypeError:
        return list(d)


def flatten(tree):
    if type(tree) in _LEAVES:
        return [tree], LEAF
    leaves = []

    def go(x):
        if x is None:
            return TreeDef("none", None, ())
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return TreeDef("namedtuple", type(x), tuple(go(c) for c in x))
        if isinstance(x, (tuple, list)):
            return TreeDef("tuple" if isinstance(x, tuple) else "list", None,
                           tuple(go(c) for c in x))
        if isinstance(x, dict):
            keys = _sorted_keys(x)
            return TreeDef("dict", tuple(keys), tuple(go(x[k]) for k in keys))
        leaves.append(x)
        return LEAF

    treedef = go(tree)
    return leaves, treedef


def unflatten(treedef: TreeDef, leaves):
    it = iter(leaves)
    if treedef.kind == "leaf":
        return next(it)

    def go(td):
        if td.kind == "leaf":
            return next(it)
        if td.kind == "none":
            return None
        children = [go(c) for c in td.children]
        if td.kind == "tuple":
            return tuple(children)
        if td.kind == "list":
            return children
        if td.kind == "namedtuple":
            return td.meta(*children)
        return dict(zip(td.meta, children))

    return go(treedef)


def tree_map(fn, tree):
    leaves, td = flatten(tree)
    return unflatten(td, [fn(x) for x in leaves])
