"""Property tests of whole programs: hypothesis builds small random NumPy programs from the
registry's primitives and checks the passes on their graphs, and fuzzes the JSON loader.

A program is a list of steps over a growing list of float64 values (one or two inputs):
elementwise unary and binary primitives (with broadcasting against another value or a
constant), sum/mean/max reductions over random axes with random keepdims, reshape,
transpose, matmul, getitem (slices with steps, integers, integer arrays), where (a fixed
mask) and concatenate. Values are kept in a range where every step is smooth, and the
loss is ``sum(w * out)`` for a random ``w``. Checked:

- ``tg.grad`` and the ``adjoint`` pass against central differences;
- ``cse``, ``simplify``, ``prune`` (and the three in sequence) keep the values of the
  forward and of the gradient graph;
- the JSON round trip keeps the values and re-serialises to the same document.

And ``Graph.from_json`` on hypothesis-mutated valid documents (fields deleted, replaced,
swapped between nodes; numbers nudged; op names, dtypes, shapes and references changed):
the outcome is a graph or a clean ``tg.TraceError`` / ``ValueError``, and no primitive
implementation runs while loading. ``TRACEGRAD_LONG_PROPERTIES=N`` multiplies the budgets.
"""
from __future__ import annotations

import copy
import json
import os

import numpy as np
import pytest
from conftest import fd_vjp
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tracegrad as tg
from tracegrad.ir import REGISTRY
from tracegrad.runtime import run

LONG = max(1, int(os.environ.get("TRACEGRAD_LONG_PROPERTIES", "1") or 1))
PROGRAMS = 40 * LONG
FUZZ = 300 * LONG


def _settings(n):
    return settings(max_examples=n, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


SHAPES = [(), (3,), (2, 3), (3, 2), (2, 1, 3)]
UNARY = {
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "arctan": np.arctan, "neg": np.negative,
    "exp": lambda x: np.exp(np.tanh(x)), "log": lambda x: np.log(1.5 + np.sin(x)),
    "sqrt": lambda x: np.sqrt(1.0 + x * x), "square": lambda x: np.tanh(x) ** 2,
    "sinh": lambda x: np.sinh(np.tanh(x)), "arcsinh": np.arcsinh, "logaddexp": lambda x: np.logaddexp(x, 0.3),
}
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": lambda a, b: np.tanh(a) * b,
    "div": lambda a, b: a / (1.5 + b * b), "hypot": lambda a, b: np.hypot(a, 1.0 + b * b),
    "arctan2": lambda a, b: np.arctan2(a, 2.0 + np.tanh(b)),
}


# -- programs ---------------------------------------------------------------------------------------
@st.composite
def programs(draw, max_steps=6):
    """(steps, input shapes, constants): ``steps`` are (kind, value indices, options)."""
    n_in = draw(st.integers(1, 2))
    shapes = [draw(st.sampled_from(SHAPES)) for _ in range(n_in)]
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    steps = []
    for _ in range(draw(st.integers(1, max_steps))):
        i = draw(st.integers(0, len(shapes) - 1))
        s = shapes[i]
        kinds = ["unary", "binary", "binary_const", "where"]
        if len(s) >= 1:
            kinds += ["sum", "mean", "reshape", "getitem", "matmul", "concatenate", "max"]
        if len(s) >= 2:
            kinds += ["transpose"]
        kind = draw(st.sampled_from(kinds))
        opts = {}
        if kind == "unary":
            opts["fn"] = draw(st.sampled_from(sorted(UNARY)))
            out = s
        elif kind == "binary":
            partners = [j for j, t in enumerate(shapes) if _broadcastable(s, t)]
            j = draw(st.sampled_from(partners))
            opts.update(fn=draw(st.sampled_from(sorted(BINARY))), other=j, swap=draw(st.booleans()))
            out = np.broadcast_shapes(s, shapes[j])
        elif kind == "binary_const":
            cshape = draw(st.sampled_from([t for t in SHAPES + [s[-1:], s[:1] + (1,) * (len(s) - 1)]
                                           if _broadcastable(s, t)]))
            opts.update(fn=draw(st.sampled_from(sorted(BINARY))), const=rng.uniform(-1, 1, cshape),
                        swap=draw(st.booleans()))
            out = np.broadcast_shapes(s, cshape)
        elif kind == "where":
            opts["mask"] = rng.random(s) < 0.5
            opts["fn"] = draw(st.sampled_from(sorted(UNARY)))
            out = s
        elif kind in ("sum", "mean", "max"):
            axes = draw(st.lists(st.integers(0, len(s) - 1), unique=True, max_size=len(s)))
            keep = draw(st.booleans())
            opts["axis"] = tuple(sorted(axes)) if draw(st.booleans()) or not axes else tuple(axes)
            opts["keepdims"] = keep
            if draw(st.booleans()) and not axes:
                opts["axis"] = None
            out = np.sum(np.zeros(s), axis=opts["axis"], keepdims=keep).shape
            if kind == "max" and 0 in s:
                kind = "sum"
        elif kind == "reshape":
            size = int(np.prod(s))
            cands = [(size,), (1, size), (size, 1), s[::-1], (-1,)]
            if size % 2 == 0:
                cands.append((2, size // 2))
            opts["shape"] = draw(st.sampled_from(cands))
            out = np.zeros(s).reshape(opts["shape"]).shape
        elif kind == "transpose":
            opts["axes"] = tuple(draw(st.permutations(range(len(s)))))
            out = tuple(s[a] for a in opts["axes"])
        elif kind == "getitem":
            key = []
            for d in s:
                choice = draw(st.sampled_from(["all", "slice", "int", "array"]))
                if choice == "int" and d:
                    key.append(draw(st.integers(-d, d - 1)))
                elif choice == "array" and d and not any(isinstance(k, np.ndarray) for k in key):
                    key.append(np.asarray(draw(st.lists(st.integers(-d, d - 1), min_size=1, max_size=4))))
                elif choice == "slice":
                    key.append(slice(draw(st.integers(-d - 1, d)), draw(st.integers(-d - 1, d)),
                                     draw(st.sampled_from([1, 2, -1, -2]))))
                else:
                    key.append(slice(None))
            opts["key"] = tuple(key)
            out = np.zeros(s)[opts["key"]].shape
        elif kind == "matmul":
            k = s[-1]
            if len(s) >= 2 and draw(st.booleans()):
                opts["const"] = rng.uniform(-1, 1, (k,))
            else:
                opts["const"] = rng.uniform(-1, 1, (k, draw(st.integers(1, 3))))
            opts["swap"] = False
            out = (np.zeros(s) @ opts["const"]).shape
        elif kind == "concatenate":
            axis = draw(st.integers(0, len(s) - 1))
            partners = [j for j, t in enumerate(shapes)
                        if len(t) == len(s)
                        and all(a == b for q, (a, b) in enumerate(zip(s, t)) if q != axis)]
            opts.update(axis=axis, other=draw(st.sampled_from(partners)))
            out = np.concatenate([np.zeros(s), np.zeros(shapes[opts["other"]])], axis=axis).shape
        steps.append((kind, i, opts))
        shapes.append(tuple(out))
    inputs = [rng.uniform(-1.5, 1.5, sh) for sh in shapes[:n_in]]
    w = rng.uniform(0.5, 1.5, shapes[-1])
    return steps, inputs, w


def _broadcastable(s, t):
    try:
        np.broadcast_shapes(s, t)
        return True
    except ValueError:
        return False


def evaluate(steps, xs, every=False):
    """The program's result (with ``every``: the list of all its values)."""
    vals = list(xs)
    for kind, i, o in steps:
        x = vals[i]
        if kind == "unary":
            y = UNARY[o["fn"]](x)
        elif kind in ("binary", "binary_const"):
            other = vals[o["other"]] if kind == "binary" else o["const"]
            y = BINARY[o["fn"]](other, x) if o["swap"] else BINARY[o["fn"]](x, other)
        elif kind == "where":
            y = np.where(o["mask"], x, UNARY[o["fn"]](x))
        elif kind == "sum":
            y = np.sum(x, axis=o["axis"], keepdims=o["keepdims"])
        elif kind == "mean":
            y = np.mean(x, axis=o["axis"], keepdims=o["keepdims"])
        elif kind == "max":
            y = np.max(x, axis=o["axis"], keepdims=o["keepdims"])
        elif kind == "reshape":
            y = np.reshape(x, o["shape"])
        elif kind == "transpose":
            y = np.transpose(x, o["axes"])
        elif kind == "getitem":
            y = x[o["key"]]
        elif kind == "matmul":
            y = x @ o["const"]
        else:
            y = np.concatenate([x, vals[o["other"]]], axis=o["axis"])
        vals.append(y)
    return vals if every else vals[-1]


def loss_of(steps, w):
    return lambda *xs: np.sum(w * evaluate(steps, xs))


def _no_near_ties(steps, xs):
    """max is smooth where no two candidates of a slice are within 1e-4 (FD at h = 1e-6)."""
    vals = evaluate(steps, xs, every=True)
    for kind, i, o in steps:
        if kind != "max":
            continue
        x = np.asarray(vals[i])
        axis = tuple(range(x.ndim)) if o["axis"] is None else o["axis"]
        if not axis:
            continue
        moved = np.moveaxis(x, axis, tuple(range(x.ndim - len(axis), x.ndim)))
        flat = np.sort(moved.reshape(moved.shape[:x.ndim - len(axis)] + (-1,)), axis=-1)
        if flat.shape[-1] > 1 and flat.size and np.min(np.diff(flat, axis=-1)) < 1e-4:
            return False
    return True


def _assert_same(a, b, rtol, what):
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.shape == y.shape and x.dtype == y.dtype, (what, x.shape, y.shape, x.dtype, y.dtype)
        scale = max(float(np.max(np.abs(y), initial=0.0)), 1.0)
        np.testing.assert_allclose(x, y, rtol=rtol, atol=rtol * scale, err_msg=what)


PASSES = {"cse": tg.passes.cse, "simplify": tg.passes.simplify, "prune": tg.passes.prune,
          "all": lambda g: tg.passes.prune(tg.passes.simplify(tg.passes.cse(g)))}


# -- the tests --------------------------------------------------------------------------------------
@_settings(PROGRAMS)
@given(programs())
def test_random_programs(prog):
    steps, xs, w = prog
    assume(_no_near_ties(steps, xs))
    loss = loss_of(steps, w)
    argnums = tuple(range(len(xs)))
    value = loss(*xs)
    grads = tg.grad(loss, argnums=argnums)(*xs)

    # the gradient against central differences
    for k, (g, f) in enumerate(zip(grads, fd_vjp(loss, xs, np.float64(1.0)))):
        assert np.asarray(g).shape == xs[k].shape
        scale = max(float(np.max(np.abs(f), initial=0.0)), 1.0)
        np.testing.assert_allclose(g, f, rtol=1e-6, atol=1e-6 * scale, err_msg=f"d/dx{k}")

    fwd = tg.trace(loss, *xs)
    back = tg.trace(tg.grad(loss, argnums=argnums), *xs)
    # the adjoint pass itself: inputs, then the seed; outputs, then one cotangent per input
    adj = tg.passes.adjoint(fwd)
    got = run(adj, [*xs, np.float64(1.0)])
    _assert_same([got[0]], [value], 1e-12, "adjoint primal")
    _assert_same(got[1:], grads, 1e-12, "adjoint pass vs tg.grad")

    for graph, want in [(fwd, [value]), (back, list(grads))]:
        ref = run(graph, list(xs))
        _assert_same(ref, want, 1e-12, "traced graph")
        for name, p in PASSES.items():
            _assert_same(run(p(graph), list(xs)), ref, 1e-12, f"{name} changed the result")
        text = graph.to_json()
        loaded = tg.Graph.from_json(text)
        assert loaded.to_json() == text
        for a, b in zip(run(loaded, list(xs)), ref):
            np.testing.assert_array_equal(a, b)


# -- fuzzing the loader ------------------------------------------------------------------------------
def _documents():
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    v = np.array([0.3, -0.7, 1.1])

    def f(x, v):
        y = np.tanh(x @ v)[::-1]
        return np.sum(np.where(y > 0, y, 0.1 * y) ** 2) + np.max(x[:, np.array([0, 2])], axis=1).sum()

    def g(x):
        if x.sum() > 0:     # a guard
            return np.cumsum(x, axis=1)[x > 0.3] * 2.0
        return x

    return [tg.trace(f, x, v).to_json(), tg.trace(tg.grad(f, argnums=(0, 1)), x, v).to_json(),
            tg.trace(g, x).to_json()]


DOCS = _documents()
ATOMS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.integers(-2**63, 2**64), st.floats(allow_nan=False),
    st.sampled_from(sorted(REGISTRY) + ["input", "const", "__import__", "float64", "float32", "int64",
                                         "bool", "object", "V8", "<f8", "complex128", "S3", "M8"]),
    st.text(max_size=8),
)
VALUES = st.recursive(ATOMS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=3)), max_leaves=8)


def _paths(doc, path=()):
    """Every (path to a container, key) in the document."""
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append((path, k))
            out += _paths(v, path + (k,))
    elif isinstance(doc, list):
        for k, v in enumerate(doc):
            out.append((path, k))
            out += _paths(v, path + (k,))
    return out


def _get(doc, path):
    for p in path:
        doc = doc[p]
    return doc


@st.composite
def mutated_documents(draw):
    doc = json.loads(draw(st.sampled_from(DOCS)))
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path, key = draw(st.sampled_from(paths))
        parent = _get(doc, path)
        old = parent[key]
        action = draw(st.sampled_from(["delete", "replace", "swap", "nudge", "duplicate", "op", "shape"]))
        if action == "delete":
            del parent[key]
        elif action == "replace":
            parent[key] = draw(VALUES)
        elif action == "swap":
            other_path, other_key = draw(st.sampled_from(paths))
            parent[key] = copy.deepcopy(_get(doc, other_path)[other_key])
        elif action == "nudge" and isinstance(old, (int, float)) and not isinstance(old, bool):
            parent[key] = old + draw(st.sampled_from([-1, 1, -2, 10, 2**31, -(2**40)]))
        elif action == "duplicate" and isinstance(parent, list):
            parent.insert(int(key), copy.deepcopy(old))
        elif action == "op":
            node = draw(st.sampled_from(doc["nodes"])) if isinstance(doc.get("nodes"), list) and \
                doc["nodes"] else None
            if isinstance(node, dict):
                node["op"] = draw(st.sampled_from(sorted(REGISTRY) + ["input", "const"]))
        elif action == "shape":
            node = draw(st.sampled_from(doc["nodes"])) if isinstance(doc.get("nodes"), list) and \
                doc["nodes"] else None
            if isinstance(node, dict):
                node[draw(st.sampled_from(["shape", "dtype", "args"]))] = draw(st.one_of(
                    st.lists(st.integers(-2, 5), max_size=3),
                    st.sampled_from(["float64", "float32", "int64", "bool", "object", "float16"])))
    return json.dumps(doc)


@pytest.fixture
def no_execution(monkeypatch):
    """Every primitive's impl (and JAX lowering) raises: loading must not run any."""
    calls = []
    for name, prim in REGISTRY.items():
        def boom(*args, _name=name, **kw):
            calls.append(_name)
            raise AssertionError(f"{_name}'s impl ran while loading a document")
        monkeypatch.setattr(prim, "impl", boom)
        monkeypatch.setattr(prim, "jax", boom)
    return calls


def test_fuzzed_documents_load_or_fail_cleanly(no_execution):
    @_settings(FUZZ)
    @given(mutated_documents())
    def check(text):
        try:
            graph = tg.Graph.from_json(text)
        except (tg.TraceError, ValueError):
            return
        assert isinstance(graph, tg.Graph)
        # a document that loads is a graph that saves again, to a document that loads
        again = graph.to_json()
        assert tg.Graph.from_json(again).to_json() == again

    check()
    assert not no_execution
