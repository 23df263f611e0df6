"""Generated check: ``tg.tree_util`` / ``tg.flatten_util`` against ``jax.tree_util`` /
``jax.flatten_util`` over seeded random containers (dict, OrderedDict, defaultdict, list,
tuple, namedtuple, None, a registered class, a registered dataclass) around array and
scalar leaves: leaf order, structure (node and leaf counts, ``treedef_is_leaf``,
equality between trees), unflatten round trips, ``tree_map`` (with and without
``is_leaf``), ``all_leaves``, ``ravel_pytree`` round trips, and ``tg.grad`` over the
containers giving the same container types and values as ``jax.grad``.

The containers are compared through JAX: a tree rebuilt by tracegrad must have the
same ``jax.tree_util.tree_structure`` as the one JAX rebuilds (types, dict orders,
defaultdict factories and namedtuple classes included)."""
import dataclasses
import random
from collections import OrderedDict, defaultdict, namedtuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close, bounded
from jax import tree_util as jtu
from jax.flatten_util import ravel_pytree as jax_ravel
from tracegrad.flatten_util import ravel_pytree

import tracegrad as tg
from tracegrad import tree_util as tu

NT = namedtuple("NT", "first second")
NT1 = namedtuple("NT1", "only")


class Node:
    """A registered container: two children and a static tag."""

    def __init__(self, left, right, tag):
        self.left, self.right, self.tag = left, right, tag


def _node_flatten(n):
    return (n.left, n.right), n.tag


def _node_unflatten(tag, children):
    return Node(*children, tag)


tu.register_pytree_node(Node, _node_flatten, _node_unflatten)
jtu.register_pytree_node(Node, _node_flatten, _node_unflatten)


@dataclasses.dataclass
class DC:
    a: object
    b: object
    tag: str = "s"


tu.register_dataclass(DC, data_fields=["a", "b"], meta_fields=["tag"])
jtu.register_dataclass(DC, data_fields=["a", "b"], meta_fields=["tag"])

KEYS = ["z", "a", "m", "b", "y"]
KINDS = ["dict", "odict", "ddict_list", "ddict_int", "list", "tuple", "nt", "nt1", "none",
         "node", "dc", "empty"]


def _leaf(rng, floats_only):
    r = rng.random()
    if r < 0.4:
        shape = rng.choice([(), (2,), (2, 3), (1, 2, 1)])
        return np.asarray(rng.uniform(-2, 2) + np.arange(int(np.prod(shape))) / 7,
                          np.float64).reshape(shape)
    if r < 0.7 or floats_only:
        return rng.uniform(-2, 2)
    return rng.randint(-3, 3)


def _tree(rng, depth, floats_only):
    """A random container (or leaf) of at most ``depth`` levels."""
    if depth == 0 or rng.random() < 0.2:
        return _leaf(rng, floats_only)
    kind = rng.choice(KINDS)

    def sub():
        return _tree(rng, depth - 1, floats_only)

    def keys():
        return rng.sample(KEYS, rng.randint(1, 3))

    if kind == "dict":
        return {k: sub() for k in keys()}
    if kind == "odict":
        return OrderedDict((k, sub()) for k in keys())
    if kind == "ddict_list":
        return defaultdict(list, {k: sub() for k in keys()})
    if kind == "ddict_int":
        return defaultdict(int, {k: sub() for k in keys()})
    if kind == "list":
        return [sub() for _ in range(rng.randint(1, 3))]
    if kind == "tuple":
        return tuple(sub() for _ in range(rng.randint(1, 3)))
    if kind == "nt":
        return NT(sub(), sub())
    if kind == "nt1":
        return NT1(sub())
    if kind == "none":
        return None
    if kind == "node":
        return Node(sub(), sub(), rng.choice(["p", "q"]))
    if kind == "dc":
        return DC(sub(), sub(), rng.choice(["s", "t"]))
    return rng.choice([(), [], {}, OrderedDict()])


def _cases(n, floats_only):
    out = []
    for seed in range(n):
        rng = random.Random(1000 * floats_only + seed)
        out.append(_tree(rng, rng.randint(1, 4), floats_only))
    return out


TREES = _cases(400, False)
FLOAT_TREES = [t for t in _cases(300, True) if jtu.tree_leaves(t)]


def _same_tree(ours, ref, rtol=0.0):
    """``ours`` has ``ref``'s JAX structure (container types, key orders, factories,
    static data) and its leaves' values, dtypes and shapes."""
    assert jtu.tree_structure(ours) == jtu.tree_structure(ref), (ours, ref)
    for a, b in zip(jtu.tree_leaves(ours), jtu.tree_leaves(ref)):
        assert_close(np.asarray(a), np.asarray(b), rtol)


def _tree_id(t):
    return repr(tu.tree_structure(t))[:60]


@pytest.mark.parametrize("tree", bounded(TREES, 80), ids=_tree_id)
def test_flatten_unflatten_map_match_jax(tree):
    leaves, td = tu.tree_flatten(tree)
    jleaves, jtd = jtu.tree_flatten(tree)
    assert len(leaves) == len(jleaves) and all(a is b for a, b in zip(leaves, jleaves))
    assert (td.num_leaves, td.num_nodes) == (jtd.num_leaves, jtd.num_nodes)
    assert tu.treedef_is_leaf(td) == jtu.treedef_is_leaf(jtd)
    assert tu.all_leaves(leaves) and tu.all_leaves([tree]) == jtu.all_leaves([tree])
    new = [np.asarray(x) * 3 if isinstance(x, np.ndarray) else x * 3 for x in leaves]
    _same_tree(tu.tree_unflatten(td, new), jtu.tree_unflatten(jtd, new))
    _same_tree(td.unflatten(new), jtu.tree_unflatten(jtd, new))
    _same_tree(tu.tree_map(lambda x: x * 2, tree), jtu.tree_map(lambda x: x * 2, tree))
    _same_tree(tu.tree_map(lambda x, y: x - y, tree, tree),
               jtu.tree_map(lambda x, y: x - y, tree, tree))
    # is_leaf: every list (and None) is a leaf
    def is_leaf(x):
        return x is None or isinstance(x, list)
    ours = tu.tree_leaves(tree, is_leaf=is_leaf)
    ref = jtu.tree_leaves(tree, is_leaf=is_leaf)
    assert len(ours) == len(ref) and all(a is b for a, b in zip(ours, ref))
    assert tu.tree_structure(tree, is_leaf=is_leaf).num_leaves == len(ref)
    mapped = tu.tree_map(lambda x: "L" if is_leaf(x) else x, tree, is_leaf=is_leaf)
    jmapped = jtu.tree_map(lambda x: "L" if is_leaf(x) else x, tree, is_leaf=is_leaf)
    assert jtu.tree_structure(mapped) == jtu.tree_structure(jmapped)
    assert jtu.tree_leaves(mapped) == jtu.tree_leaves(jmapped) or all(
        a is b or np.array_equal(a, b)
        for a, b in zip(jtu.tree_leaves(mapped), jtu.tree_leaves(jmapped)))


def _pairs():
    """Pairs of trees whose structures are equal or differ in one way: the same tree, a
    tree with the first OrderedDict's keys reversed, and neighbouring random trees."""
    out = []
    for k, t in enumerate(TREES[:120]):
        out.append((t, jtu.tree_map(lambda x: x, t)))
        out.append((t, TREES[k + 1]))
        rev = _reverse_first_odict(t)
        if rev is not None:
            out.append((t, rev))
    return out


def _reverse_first_odict(t):
    done = []

    def go(x):
        if type(x) is OrderedDict and not done and len(x) > 1:
            done.append(1)
            return OrderedDict(reversed(list(x.items())))
        if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
            return type(x)(go(c) for c in x)
        if type(x) is dict:
            return {k: go(v) for k, v in x.items()}
        return x

    r = go(t)
    return r if done else None


PAIRS = _pairs()


@pytest.mark.parametrize("pair", bounded(PAIRS, 60), ids=lambda p: _tree_id(p[0]))
def test_structure_equality_and_mismatch_match_jax(pair):
    a, b = pair
    equal = jtu.tree_structure(a) == jtu.tree_structure(b)
    assert (tu.tree_structure(a) == tu.tree_structure(b)) == equal
    try:
        jtu.tree_map(lambda x, y: x, a, b)
        jax_ok = True
    except (ValueError, TypeError):
        jax_ok = False
    try:
        tu.tree_map(lambda x, y: x, a, b)
        ours_ok = True
    except tg.TraceError:
        ours_ok = False
    assert ours_ok == jax_ok


@pytest.mark.parametrize("tree", bounded(TREES, 60), ids=_tree_id)
def test_ravel_pytree_round_trip_matches_jax(tree):
    flat, unravel = ravel_pytree(tree)
    jflat, junravel = jax_ravel(tree)
    # no leaves: JAX's vector is float32 even under x64; ours has NumPy's default float64
    assert flat.dtype == (jflat.dtype if jtu.tree_leaves(tree) else np.float64)
    if not jtu.tree_leaves(tree):
        jflat = jflat.astype(np.float64)
    assert_close(flat, np.asarray(jflat), 0)
    _same_tree(unravel(flat * 2), junravel(jflat * 2))


def _loss(t):
    return sum(np.sum(np.sin(x) * (k + 1)) for k, x in enumerate(tu.tree_leaves(t)))


def _jloss(t):
    return sum(jnp.sum(jnp.sin(x) * (k + 1)) for k, x in enumerate(jtu.tree_leaves(t)))


@pytest.mark.parametrize("tree", bounded(FLOAT_TREES, 25), ids=_tree_id)
def test_grad_returns_the_containers_jax_returns(tree):
    g = tg.grad(_loss)(tree)
    jg = jax.grad(_jloss)(tree)
    _same_tree(g, jg, 1e-14)


def test_examples_of_the_issue():
    assert tu.tree_leaves(OrderedDict(z=1, a=2)) == [1, 2]
    assert tu.tree_leaves({"z": 1, "a": 2}) == [2, 1]
    assert tu.treedef_is_leaf(tu.tree_structure(None))
    g = tg.grad(lambda d: d["z"] * d["a"])(OrderedDict(z=1.0, a=2.0))
    assert type(g) is OrderedDict and list(g) == ["z", "a"] and g["z"] == 2.0
    dd = tg.grad(lambda d: d["z"] * d["a"])(defaultdict(list, z=1.0, a=2.0))
    assert type(dd) is defaultdict and dd.default_factory is list and dd["a"] == 1.0
    flat, unravel = ravel_pytree(OrderedDict(z=1.0, a=np.arange(2.0)))
    assert_close(flat, np.array([1.0, 0.0, 1.0]), 0)
    back = unravel(flat)
    assert type(back) is OrderedDict and list(back) == ["z", "a"]
    with pytest.raises(tg.TraceError, match="differ"):
        tu.tree_map(lambda x, y: x, OrderedDict(z=1, a=2), {"z": 1, "a": 2})


def test_documented_differences_from_jax():
    """docs/guarantees.md: the pytree cases that differ from JAX, on purpose."""
    class D(dict):
        pass

    assert jtu.tree_leaves(D(a=1)) == [D(a=1)]             # JAX: an unregistered leaf
    assert tu.tree_leaves(D(a=1)) == [1]                    # here: a dict
    with pytest.raises(ValueError):
        jtu.tree_leaves({1: "a", "b": 2})
    assert tu.tree_leaves({1: "a", "b": 2}) == ["a", 2]     # insertion order
    assert jax_ravel(())[0].dtype == np.float32 and ravel_pytree(())[0].dtype == np.float64
