"""``tg.tree_util``: pytrees as in ``jax.tree_util``.

A pytree is a nest of tuples, lists, dicts, namedtuples, ``None`` (a subtree with no
leaves) and the container types registered here, around leaves (arrays, numbers and
any other object). Every transform (``grad``, ``jacobian``, ``jvp``, ``vjp``, ``jit``,
``vmap``, ``scan``, ...) flattens its arguments and results with this one
implementation, so a registered type can be passed to and returned from all of them.

As in JAX, a dataclass is a leaf until it is registered (``register_dataclass``).
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..errors import TraceError
from ..tracer.pytree import TreeDef, flatten, flatten_up_to, register_node, unflatten
from ..tracer.pytree import tree_map as _tree_map

PyTreeDef = TreeDef

__all__ = ["PyTreeDef", "tree_map", "tree_flatten", "tree_unflatten", "tree_leaves",
           "tree_structure", "tree_reduce", "tree_all", "tree_transpose", "treedef_is_leaf",
           "register_pytree_node", "register_pytree_node_class", "register_dataclass",
           "all_leaves", "Partial"]


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list, TreeDef]:
    """``(leaves, treedef)``: the leaves in order (dict and defaultdict keys sorted, an
    OrderedDict's in insertion order) and the structure."""
    return flatten(tree, is_leaf)


def tree_unflatten(treedef: TreeDef, leaves: Iterable[Any]) -> Any:
    """The tree of structure ``treedef`` around ``leaves``."""
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise TraceError(f"tree_unflatten: the structure {treedef!r} has "
                         f"{treedef.num_leaves} leaves, got {len(leaves)}")
    return unflatten(treedef, leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of ``tree``, in order."""
    return flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> TreeDef:
    """The structure of ``tree`` (equal for trees that differ only in their leaves)."""
    return flatten(tree, is_leaf)[1]


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``f`` applied to every leaf of ``tree`` (and the matching subtrees of ``rest``,
    which must have ``tree``'s structure at least down to its leaves)."""
    return _tree_map(f, tree, *rest, is_leaf=is_leaf)


def tree_reduce(function: Callable[[Any, Any], Any], tree: Any, *initializer: Any,
                is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``functools.reduce`` over the leaves."""
    return functools.reduce(function, flatten(tree, is_leaf)[0], *initializer)


def tree_all(tree: Any) -> bool:
    """Whether every leaf is truthy."""
    return all(flatten(tree)[0])


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None
               ) -> bool:
    """Whether every element is a leaf (``None`` is not: it is an empty subtree)."""
    items = list(iterable)
    leaves = flatten(items, is_leaf)[0]
    return len(leaves) == len(items) and all(a is b for a, b in zip(items, leaves))


def treedef_is_leaf(treedef: TreeDef) -> bool:
    """Whether the structure has a single node: a leaf, ``None`` or an empty container,
    as in JAX."""
    return treedef.num_nodes == 1


def tree_transpose(outer_treedef: TreeDef, inner_treedef: TreeDef, pytree_to_transpose: Any
                   ) -> Any:
    """A tree of structure outer-of-inner as one of inner-of-outer."""
    outers = flatten_up_to(outer_treedef, pytree_to_transpose)
    columns = [flatten_up_to(inner_treedef, o) for o in outers]
    return unflatten(inner_treedef, [unflatten(outer_treedef, [c[k] for c in columns])
                                     for k in range(inner_treedef.num_leaves)])


def register_pytree_node(nodetype: type, flatten_func: Callable[[Any], tuple[Iterable, Any]],
                         unflatten_func: Callable[[Any, Iterable], Any]) -> None:
    """Make ``nodetype`` a pytree container: ``flatten_func(x) -> (children, aux_data)``
    and ``unflatten_func(aux_data, children) -> x``. ``aux_data`` is static: it is part of
    the structure, so it must be hashable for ``tg.jit`` (compared with ``==``)."""
    register_node(nodetype, flatten_func, unflatten_func)


def register_pytree_node_class(cls: type) -> type:
    """Class decorator: ``cls.tree_flatten(self) -> (children, aux_data)`` and the
    classmethod ``cls.tree_unflatten(aux_data, children)``."""
    register_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def register_dataclass(nodetype: type, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> type:
    """Make a dataclass a pytree: ``data_fields`` are its children, ``meta_fields`` static
    structure (hashable). Without them, every init field is a child except those
    declared ``dataclasses.field(metadata={"static": True})``, which are static. Usable
    as a decorator."""
    if not dataclasses.is_dataclass(nodetype):
        raise TraceError(f"register_dataclass needs a dataclass, got {nodetype!r}")
    if data_fields is None and meta_fields is None:
        fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
    elif data_fields is None or meta_fields is None:
        raise TraceError("register_dataclass: give both data_fields and meta_fields, or "
                         "neither (then fields with metadata={'static': True} are static)")
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init} - set(drop_fields)
    if set(data_fields) | set(meta_fields) != init_fields or set(data_fields) & set(meta_fields):
        raise TraceError(f"register_dataclass: data_fields {list(data_fields)} and meta_fields "
                         f"{list(meta_fields)} must split the init fields "
                         f"{sorted(init_fields)} of {nodetype.__name__}")

    def flatten_dc(x):
        return ([getattr(x, k) for k in data_fields],
                tuple(getattr(x, k) for k in meta_fields))

    def unflatten_dc(aux, children):
        kwargs = dict(zip(data_fields, children))
        kwargs.update(zip(meta_fields, aux))
        return nodetype(**kwargs)

    register_node(nodetype, flatten_dc, unflatten_dc)
    return nodetype


class Partial(functools.partial):
    """``functools.partial`` as a pytree: the bound arguments are its children, the
    function static, so a partial can be passed through ``tg.jit`` and the other
    transforms."""

    def __new__(cls, func, *args, **kw):
        if isinstance(func, functools.partial):      # flatten nested partials
            args = func.args + args
            kw = {**func.keywords, **kw}
            func = func.func
        return super().__new__(cls, func, *args, **kw)


register_node(Partial, lambda p: ((p.args, p.keywords), p.func),
              lambda func, children: Partial(func, *children[0], **children[1]))

