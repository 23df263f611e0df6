"""tg.tree_util against jax.tree_util (x64): flattening, mapping, registration of custom
types, dataclasses and namedtuples; every transform taking and giving registered types,
with gradients against JAX on the same classes registered with JAX."""
import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close

import tracegrad as tg
from tracegrad import tree_util as tu


class Point(NamedTuple):
    x: object
    y: object


class Pair:
    """A custom container: two children and a static label."""

    def __init__(self, a, b, label="p"):
        self.a, self.b, self.label = a, b, label


def _pair_flatten(p):
    return (p.a, p.b), p.label


def _pair_unflatten(label, children):
    return Pair(*children, label=label)


tu.register_pytree_node(Pair, _pair_flatten, _pair_unflatten)
jax.tree_util.register_pytree_node(Pair, _pair_flatten, _pair_unflatten)


@tu.register_pytree_node_class
@jax.tree_util.register_pytree_node_class
class Box:
    def __init__(self, value, scale):
        self.value, self.scale = value, scale

    def tree_flatten(self):
        return (self.value,), self.scale

    @classmethod
    def tree_unflatten(cls, scale, children):
        return cls(children[0], scale)


@dataclasses.dataclass
class Params:
    w: object
    b: object
    act: str = dataclasses.field(default="tanh", metadata={"static": True})


tu.register_dataclass(Params)
jax.tree_util.register_dataclass(Params, data_fields=["w", "b"], meta_fields=["act"])


@dataclasses.dataclass
class Unregistered:
    v: object


W = np.array([[0.3, -0.2], [0.5, 0.1], [-0.4, 0.7]])
B = np.array([0.1, -0.3])
X = np.array([[0.2, -1.0, 0.5], [1.1, 0.4, -0.6]])

TREES = {
    "nested containers": lambda: {"b": [1.0, (2.0, None)], "a": np.arange(3.0)},
    "namedtuple": lambda: Point(np.ones(2), [3.0, {"z": 4.0}]),
    "none leaves out": lambda: (None, 1.0, [None, 2.0]),
    "registered": lambda: Pair(1.0, [2.0, 3.0], label="q"),
    "class decorator": lambda: [Box(np.ones(2), 2.0), Box(5.0, 3.0)],
    "dataclass": lambda: Params(W, B),
    "unregistered dataclass is a leaf": lambda: [Unregistered(1.0), 2.0],
    "empty": lambda: {"e": (), "f": []},
}


def _same_leaves(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        if isinstance(u, Unregistered):
            assert u is v
        else:
            np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("name", list(TREES))
def test_flatten_agrees_with_jax(name):
    tree = TREES[name]()
    leaves, td = tu.tree_flatten(tree)
    _same_leaves(leaves, jax.tree_util.tree_leaves(tree))
    assert td.num_leaves == jax.tree_util.tree_structure(tree).num_leaves
    back = tu.tree_unflatten(td, leaves)
    assert tu.tree_structure(back) == td
    _same_leaves(tu.tree_leaves(back), leaves)
    assert type(back) is type(tree)


@pytest.mark.parametrize("name", [n for n in TREES if "unregistered" not in n])
def test_tree_map_with_several_trees(name):
    tree = TREES[name]()
    ours = tu.tree_map(lambda u, v: np.asarray(u) * 2 + v, tree, tree)
    theirs = jax.tree_util.tree_map(lambda u, v: np.asarray(u) * 2 + v, tree, tree)
    assert tu.tree_structure(ours) == tu.tree_structure(tree)
    _same_leaves(tu.tree_leaves(ours), jax.tree_util.tree_leaves(theirs))


def test_tree_map_is_leaf_and_prefix_trees():
    tree = {"a": [1.0, 2.0], "b": (3.0, 4.0)}
    def count(x):
        return len(x) if isinstance(x, list) else 1

    out = tu.tree_map(count, tree, is_leaf=lambda x: isinstance(x, list))
    assert out == {"a": 2, "b": (1, 1)}
    assert out == jax.tree_util.tree_map(count, tree, is_leaf=lambda x: isinstance(x, list))
    # the second tree may be deeper where the first has leaves
    prefix = {"a": 10.0, "b": 20.0}
    got = tu.tree_map(lambda p, t: (p, t), prefix, tree)
    assert got == jax.tree_util.tree_map(lambda p, t: (p, t), prefix, tree)
    with pytest.raises(tg.TraceError, match="pytree structures differ"):
        tu.tree_map(lambda u, v: u, [1.0, 2.0], [1.0])
    assert tu.tree_reduce(lambda u, v: u + v, tree) == 10.0
    assert tu.tree_all([True, (1, None)])


def test_registration_mistakes_are_trace_errors():
    with pytest.raises(tg.TraceError, match="already registered"):
        tu.register_pytree_node(Pair, _pair_flatten, _pair_unflatten)
    with pytest.raises(tg.TraceError, match="needs a dataclass"):
        tu.register_dataclass(Pair)
    with pytest.raises(tg.TraceError, match="tree_unflatten"):
        tu.tree_unflatten(tu.tree_structure([1.0, 2.0]), [1.0])


def _loss(p, x):
    h = np.tanh(x @ p.w + p.b)
    return np.sum(h ** 2)


def _jloss(p, x):
    h = jnp.tanh(x @ p.w + p.b)
    return jnp.sum(h ** 2)


def test_grad_of_a_dataclass_against_jax():
    p = Params(W, B)
    g = tg.grad(_loss)(p, X)
    jg = jax.grad(_jloss)(p, X)
    assert isinstance(g, Params) and g.act == "tanh"
    assert_close(g.w, np.asarray(jg.w), 1e-12)
    assert_close(g.b, np.asarray(jg.b), 1e-12)
    (v, g2) = tg.value_and_grad(_loss)(p, X)
    assert_close(v, np.asarray(_jloss(p, X)), 1e-12)
    assert_close(g2.w, g.w, 1e-15)


def test_jit_of_registered_types_on_both_backends():
    def f(pair, box):
        return Pair(pair.a * box.value, np.sin(pair.b), label=pair.label), box.scale * 2

    pair, box = Pair(np.arange(3.0), np.ones(2), label="z"), Box(np.full(3, 0.5), 4.0)
    for backend in ("numpy", "jax"):
        jf = tg.jit(f, backend=backend)
        out, s = jf(pair, box)
        assert isinstance(out, Pair) and out.label == "z" and float(s) == 8.0
        assert_close(out.a, np.arange(3.0) * 0.5, 1e-15)
        assert_close(out.b, np.sin(np.ones(2)), 1e-15)
        # the label is static structure: another label is another specialisation
        out2, _ = jf(Pair(np.arange(3.0), np.ones(2), label="w"), box)
        assert out2.label == "w" and jf.cache_size == 2


def test_jacobian_hessian_jvp_vjp_of_registered_types_against_jax():
    p = Params(W, B)

    def f(q):
        return np.tanh(X @ q.w + q.b).ravel()

    def jf(q):
        return jnp.tanh(X @ q.w + q.b).ravel()

    jac = tg.jacobian(f)(p)
    jjac = jax.jacobian(jf)(p)
    assert_close(jac.w, np.asarray(jjac.w), 1e-12)
    assert_close(jac.b, np.asarray(jjac.b), 1e-12)
    t = Params(np.ones_like(W), np.full(2, 0.5))
    out, tan = tg.jvp(f, (p,), (t,))
    jout, jtan = jax.jvp(jf, (p,), (t,))
    assert_close(tan, np.asarray(jtan), 1e-12)
    out, vjp_fn = tg.vjp(f, p)
    (ct,) = vjp_fn(np.arange(out.size, dtype=float))
    (jct,) = jax.vjp(jf, p)[1](jnp.arange(out.size, dtype=float))
    assert isinstance(ct, Params)
    assert_close(ct.w, np.asarray(jct.w), 1e-12)
    h = tg.hessian(lambda b: _loss(Params(W, b.value), X))(Box(B, 1.0))
    jh = jax.hessian(lambda b: _jloss(Params(W, b.value), X))(Box(B, 1.0))
    assert_close(h.value.value, np.asarray(jh.value.value), 1e-10)


def test_vmap_scan_and_stop_gradient_keep_registered_types():
    xs = np.arange(12.0).reshape(4, 3) / 10
    out = tg.vmap(lambda pt: Point(pt.x * 2, np.sum(pt.y)))(Point(xs, xs))
    assert isinstance(out, Point)
    assert_close(out.y, xs.sum(1), 1e-15)

    def body(carry, x):
        return Box(carry.value + x, carry.scale), np.sum(carry.value * x)

    def total(v):
        c, ys = tg.scan(body, Box(v, 1.0), xs)
        return np.sum(c.value) + np.sum(ys)

    def jtotal(v):
        c, ys = jax.lax.scan(lambda c, x: (Box(c.value + x, c.scale), jnp.sum(c.value * x)),
                             Box(v, 1.0), xs)
        return jnp.sum(c.value) + jnp.sum(ys)

    v = np.array([0.2, -0.1, 0.4])
    assert_close(tg.grad(total)(v), np.asarray(jax.grad(jtotal)(v)), 1e-12)
    sg = tg.grad(lambda p: np.sum(tg.stop_gradient(p).a * p.b))(Pair(np.ones(2), 3 * np.ones(2)))
    assert_close(sg.a, np.zeros(2), 0)
    assert_close(sg.b, np.ones(2), 1e-15)


def test_partial_is_a_pytree():
    p = tu.Partial(lambda a, x: a * x, np.array(2.0))
    leaves = tu.tree_leaves(p)
    assert len(leaves) == 1 and float(leaves[0]) == 2.0
    jf = tg.jit(lambda f, x: f(x))
    assert_close(jf(p, np.ones(2)), np.full(2, 2.0), 0)
    assert functools.partial in type(p).__mro__


def test_register_dataclass_with_explicit_fields():
    @dataclasses.dataclass(frozen=True)
    class Scaled:
        value: object
        scale: float

    tu.register_dataclass(Scaled, data_fields=["value"], meta_fields=["scale"])
    s = Scaled(np.array([1.0, 2.0]), 3.0)
    leaves, td = tu.tree_flatten(s)
    assert len(leaves) == 1 and tu.tree_unflatten(td, [np.zeros(2)]).scale == 3.0
    g = tg.grad(lambda t: np.sum(t.value ** 2) * t.scale)(s)
    assert isinstance(g, Scaled) and g.scale == 3.0
    assert_close(g.value, 6.0 * s.value, 1e-15)
    assert tu.tree_structure(Scaled(1.0, 3.0)) != tu.tree_structure(Scaled(1.0, 4.0))

    @dataclasses.dataclass
    class Bad:
        a: object
        b: object

    with pytest.raises(tg.TraceError, match="must split the init fields"):
        tu.register_dataclass(Bad, data_fields=["a"], meta_fields=[])
    with pytest.raises(tg.TraceError, match="give both"):
        tu.register_dataclass(Bad, data_fields=["a", "b"])
