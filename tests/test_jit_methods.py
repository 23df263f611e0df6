"""tg.jit's static arguments (static_argnums, static_argnames, negative positions) on
both backends, @tg.jit on methods (the receiver static, or traced when it is a
registered pytree), and vmap with pytree in_axes/out_axes, against jax.jit / jax.vmap."""
import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close

import tracegrad as tg
from tracegrad import tree_util as tu

BACKENDS = ["numpy", "jax"]
X = np.array([0.5, -1.5, 2.0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_static_argnames_and_argnums(backend):
    calls = []

    @functools.partial(tg.jit, backend=backend, static_argnames=("n", "mode"))
    def f(x, n=2, *, mode="pow"):
        calls.append(1)
        return x ** n if mode == "pow" else x * n

    @functools.partial(jax.jit, static_argnames=("n", "mode"))
    def jf(x, n=2, *, mode="pow"):
        return x ** n if mode == "pow" else x * n

    for kwargs in ({}, {"n": 3}, {"n": 3, "mode": "mul"}, {"mode": "mul"}):
        assert_close(f(X, **kwargs), np.asarray(jf(X, **kwargs)), 1e-15)
    assert_close(f(X, 3), np.asarray(jf(X, 3)), 1e-15)   # static by name, passed by position
    n_traces = len(calls)
    f(X, n=3)
    f(X * 2, n=3, mode="mul")
    assert len(calls) == n_traces                         # cached per static value
    g = tg.jit(lambda x, k: x * k, static_argnums=-1, backend=backend)
    assert_close(g(X, 4), X * 4, 0)
    assert_close(g(X, 5), X * 5, 0)
    assert g.cache_size == 2
    with pytest.raises(tg.TraceError, match="hashable"):
        tg.jit(lambda x, k: x, static_argnums=1, backend=backend)(X, [1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_on_methods_binds_self(backend):
    class Model:
        def __init__(self, scale):
            self.scale = scale

        @functools.partial(tg.jit, backend=backend)
        def apply(self, x):
            return np.sin(x) * self.scale

        @functools.partial(tg.jit, backend=backend, static_argnames="power")
        def loss(self, x, power=2):
            return np.sum(self.apply(x) ** power)

    m, m2 = Model(3.0), Model(5.0)
    assert_close(m.apply(X), np.sin(X) * 3.0, 1e-15)
    assert_close(m2.apply(X), np.sin(X) * 5.0, 1e-15)   # another receiver, another trace
    assert_close(m.apply(X), np.sin(X) * 3.0, 1e-15)
    assert Model.apply.cache_size == 2
    assert_close(m.loss(X, power=3), np.sum((np.sin(X) * 3) ** 3), 1e-14)
    g = tg.grad(lambda x: m.loss(x))(X)
    jg = jax.grad(lambda x: jnp.sum((jnp.sin(x) * 3.0) ** 2))(X)
    assert_close(g, np.asarray(jg), 1e-13)


@tu.register_dataclass
@dataclasses.dataclass
class Layer:
    w: object
    b: object

    @tg.jit
    def __call__(self, x):
        return np.tanh(x @ self.w + self.b)


def test_jit_method_of_a_pytree_traces_self():
    layer = Layer(np.arange(6.0).reshape(3, 2) / 5, np.array([0.1, -0.2]))
    assert_close(layer(X), np.tanh(X @ layer.w + layer.b), 1e-15)
    layer2 = Layer(layer.w * 2, layer.b)
    assert_close(layer2(X), np.tanh(X @ layer2.w + layer2.b), 1e-15)
    assert Layer.__call__.cache_size == 1                # same shapes: one specialisation
    g = tg.grad(lambda lyr: np.sum(lyr(X)))(layer)
    jg = jax.grad(lambda w: jnp.sum(jnp.tanh(X @ w + layer.b)))(layer.w)
    assert isinstance(g, Layer)
    assert_close(g.w, np.asarray(jg), 1e-13)


XS = np.arange(24.0).reshape(4, 6) / 10


@pytest.mark.parametrize("case", ["dict prefix", "None inside a tuple", "nested prefix",
                                  "out_axes tree", "out_axes None", "list of axes"])
def test_vmap_pytree_axes_against_jax(case):
    params = {"w": np.linspace(-1, 1, 6), "b": np.array([0.3, 0.1, -0.2, 0.4])}

    def f(p, x):
        return {"y": np.sin(p["w"] * x) + p["b"], "s": np.sum(p["w"] ** 2)}

    def jf(p, x):
        return {"y": jnp.sin(p["w"] * x) + p["b"], "s": jnp.sum(p["w"] ** 2)}

    in_axes, out_axes, args = ({"w": None, "b": 0}, 0), 0, (params, XS)
    if case == "None inside a tuple":
        in_axes = (None, 0)
        args = ({"w": params["w"], "b": 0.5}, XS)
    elif case == "nested prefix":
        in_axes = ({"w": None, "b": 0}, 1)
        args = (params, XS.T)
    elif case == "out_axes tree":
        out_axes = {"y": 1, "s": 0}
    elif case == "out_axes None":
        in_axes, out_axes = ({"w": None, "b": 0}, 0), {"y": 0, "s": None}
    elif case == "list of axes":
        in_axes = [{"w": None, "b": 0}, 0]
    ours = tg.vmap(f, in_axes=in_axes, out_axes=out_axes)(*args)
    theirs = jax.vmap(jf, in_axes=tuple(in_axes), out_axes=out_axes)(*args)
    for k in ("y", "s"):
        assert_close(ours[k], np.asarray(theirs[k]), 1e-14, k)


def test_vmap_axes_errors():
    f = tg.vmap(lambda p: p["a"] * 2, in_axes=({"a": 0, "b": 0},))
    with pytest.raises(tg.TraceError, match="not a prefix"):
        f({"a": np.ones(3)})
    g = tg.vmap(lambda x: x * 2, out_axes=None)
    with pytest.raises(tg.TraceError, match="out_axes=None"):
        g(np.ones(3))
