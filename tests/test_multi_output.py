"""Multi-output nodes (``ir/registry.py``): one ``svd`` node gives u, s and vh from one
factorisation; printing, JSON (version 2, and reading version 1), DOT, the evaluator,
the code generator, the JAX lowering and the passes handle it."""
import json

import numpy as np
import pytest
from conftest import central_diff

import tracegrad as tg
from tracegrad.ir import PROJ, REGISTRY, apply
from tracegrad.passes import cse, prune, simplify
from tracegrad.runtime import codegen

A = np.array([[2.0, 0.3, -0.5], [0.1, 1.2, 0.4], [-0.7, 0.2, 0.9]])
TALL = np.array([[1.0, 0.2], [0.3, -1.1], [0.5, 0.4]])
WIDE = TALL.T.copy()


def uses_all(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    k = s.shape[-1]
    return np.sum(u[..., :, :k] * np.arange(1.0, 1 + k)) + np.sum(s ** 2) + np.sum(vh[..., 0, :])


def only_vectors(a):
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(u[..., 0, :] * vh[..., :, 0])


@pytest.fixture
def svd_calls(monkeypatch):
    calls = []
    real = np.linalg.svd

    def counting(*args, **kwargs):
        calls.append(kwargs.get("compute_uv", True))
        return real(*args, **kwargs)
    monkeypatch.setattr(np.linalg, "svd", counting)
    return calls


def test_one_node_runs_one_factorisation(svd_calls):
    graph = tg.trace(uses_all, A)
    assert graph.ops().count("svd") == 1 and graph.ops().count(PROJ) == 3
    want = uses_all(A)
    svd_calls.clear()
    got = graph(A)
    assert len(svd_calls) == 1
    np.testing.assert_allclose(got, want, rtol=1e-13)
    compiled = codegen.generate(prune(graph))     # the generated code: one call too
    svd_calls.clear()
    got = compiled(A)[0]
    assert len(svd_calls) == 1
    np.testing.assert_allclose(got, want, rtol=1e-13)
    # the gradient: one factorisation while tracing, at most one more in the forward run
    # (the backward graph reads its outputs); one primitive per factor made six
    svd_calls.clear()
    tg.grad(uses_all)(A)
    assert 1 <= len(svd_calls) <= 2


def test_ids_are_consecutive_and_the_print_shows_one_line():
    graph = tg.trace(uses_all, A)
    head = next(n for n in graph if graph.op(n) == "svd")
    assert [graph.op(head + i) for i in (1, 2, 3)] == [PROJ] * 3
    assert [graph.node(head + i)["params"]["index"] for i in (1, 2, 3)] == [0, 1, 2]
    lines = [line for line in str(graph).splitlines() if " svd " in line]
    assert len(lines) == 1
    assert lines[0].split("#")[0].strip() == (
        f"%{head + 1}:f64[3,3], %{head + 2}:f64[3], %{head + 3}:f64[3,3] = svd %0")
    assert " proj " not in str(graph)


def test_a_pruned_output_prints_as_underscore():
    def f(a):
        return np.sum(np.linalg.svd(a)[1])
    graph = prune(tg.trace(f, A))
    line = next(line for line in str(graph).splitlines() if " svd " in line)
    head = next(n for n in graph if graph.op(n) == "svd")
    assert line.split("#")[0].strip() == f"_, %{head + 2}:f64[3], _ = svd %0"
    assert graph(A) == pytest.approx(np.sum(np.linalg.svd(A)[1]), rel=1e-13)


def test_json_round_trip_version_2():
    graph = tg.trace(uses_all, A)
    text = graph.to_json()
    doc = json.loads(text)
    assert doc["version"] == 2
    entry = next(e for e in doc["nodes"] if e["op"] == "svd")
    assert [o["shape"] for o in entry["outputs"]] == [[3, 3], [3], [3, 3]]
    assert "shape" not in entry and not any(e["op"] == PROJ for e in doc["nodes"])
    loaded = tg.Graph.from_json(text)
    assert loaded.to_json() == text and str(loaded) == str(graph)
    assert loaded(A) == graph(A)
    pruned = prune(tg.trace(lambda a: np.sum(np.linalg.svd(a)[2]), A))
    again = tg.Graph.from_json(pruned.to_json())
    assert str(again) == str(pruned)
    assert json.loads(pruned.to_json())["nodes"][1]["outputs"][:2] == [None, None]


def _v1_document():
    """A version-1 document as an earlier tracegrad wrote it: one primitive per factor."""
    f64 = "float64"
    nodes = [{"id": 0, "op": "input", "args": [], "shape": [3, 3], "dtype": f64,
              "params": {"index": 0}, "src": None},
             {"id": 1, "op": "svd_u", "args": [0], "shape": [3, 3], "dtype": f64,
              "params": {}, "src": None},
             {"id": 2, "op": "svdvals", "args": [0], "shape": [3], "dtype": f64,
              "params": {}, "src": None},
             {"id": 3, "op": "svd_vh", "args": [0], "shape": [3, 3], "dtype": f64,
              "params": {}, "src": None}]
    return {"format": "tracegrad-ir", "version": 1, "inputs": [0], "outputs": [1, 2, 3],
            "guards": [], "nodes": nodes}


def test_reads_a_version_1_document():
    graph = tg.Graph.from_json(json.dumps(_v1_document()))
    u, s, vh = graph(A)
    ref_u, _, ref_vh = np.linalg.svd(A)
    for got, want in zip((u, s, vh), (ref_u, np.linalg.svd(A, compute_uv=False), ref_vh)):
        np.testing.assert_array_equal(got, want)
    assert graph.to_json() == json.dumps(_v1_document() | {"version": 2},
                                         separators=(",", ":"))


@pytest.mark.parametrize("bad", ["proj in a document", "svd in version 1", "wrong shape",
                                 "too few outputs", "the node as an operand",
                                 "the node as an output", "an output id twice"])
def test_hostile_multi_output_documents_are_refused(bad):
    doc = json.loads(tg.trace(uses_all, A).to_json())
    entry = next(e for e in doc["nodes"] if e["op"] == "svd")
    if bad == "proj in a document":
        doc["nodes"].append({"id": 99, "op": PROJ, "args": [entry["id"]], "shape": [3],
                             "dtype": "float64", "params": {"index": 1}, "src": None})
    elif bad == "svd in version 1":
        doc["version"] = 1
    elif bad == "wrong shape":
        entry["outputs"][1]["shape"] = [4]
    elif bad == "too few outputs":
        entry["outputs"] = entry["outputs"][:2]
    elif bad == "the node as an operand":
        doc["nodes"].append({"id": 99, "op": "neg", "args": [entry["id"]], "shape": [],
                             "dtype": "float64", "params": {}, "src": None})
    elif bad == "the node as an output":
        doc["outputs"] = [entry["id"]]
    else:
        entry["outputs"][2]["id"] = entry["outputs"][0]["id"]
    with pytest.raises(tg.TraceError):
        tg.Graph.from_json(json.dumps(doc))


def test_dot_draws_one_box():
    dot = tg.trace(uses_all, A).to_dot(legend=False)
    assert dot.count(" svd") == 1 and " proj" not in dot
    assert "%2:f64[3,3], %3:f64[3], %4:f64[3,3]" in dot


@pytest.mark.parametrize("fn", [uses_all, only_vectors], ids=["all", "vectors"])
@pytest.mark.parametrize("a", [A, TALL, WIDE], ids=["square", "tall", "wide"])
def test_gradient_against_finite_differences(fn, a):
    got = tg.grad(fn)(a)
    np.testing.assert_allclose(got, central_diff(fn, a), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tg.jit(tg.grad(fn))(a), got, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("a", [A, TALL, WIDE], ids=["square", "tall", "wide"])
def test_gradient_and_jvp_against_jax(a):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    ref_u, _, _ = np.linalg.svd(a, full_matrices=False)

    def jax_fn(x):
        u, s, vh = jnp.linalg.svd(x, full_matrices=False)
        sign = jnp.sign(jnp.sum(u * ref_u, axis=0))      # NumPy's signs, constant
        u, vh = u * sign, vh * sign[:, None]
        k = s.shape[-1]
        return jnp.sum(u[:, :k] * jnp.arange(1.0, 1 + k)) + jnp.sum(s ** 2) + jnp.sum(vh[0, :])
    np.testing.assert_allclose(tg.grad(uses_all)(a), jax.jit(jax.grad(jax_fn))(a), rtol=1e-9,
                               atol=1e-11)
    t = np.cos(np.arange(a.size)).reshape(a.shape)
    _, got = tg.jvp(uses_all, (a,), (t,))
    want = jax.jit(lambda a, t: jax.jvp(jax_fn, (a,), (t,))[1])(a, t)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)


def test_second_derivative():
    hvp = tg.grad(lambda a: np.sum(tg.grad(uses_all)(a) * np.ones_like(a)))(A)
    fd = central_diff(lambda a: np.sum(tg.grad(uses_all)(a)), A, eps=1e-5)
    np.testing.assert_allclose(hvp, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_jit_on_both_backends(backend):
    if backend == "jax":
        pytest.importorskip("jax")
    f = tg.jit(uses_all, backend=backend)
    np.testing.assert_allclose(f(A), uses_all(A), rtol=1e-12)
    g = tg.jit(tg.grad(uses_all), backend=backend)
    np.testing.assert_allclose(g(A), tg.grad(uses_all)(A), rtol=1e-10, atol=1e-12)


def test_the_jax_lowering_keeps_numpys_signs():
    pytest.importorskip("jax")
    f = tg.jit(lambda a: np.linalg.svd(a), backend="jax")
    for got, want in zip(f(A), np.linalg.svd(A)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13)


def test_vmap():
    batch = np.stack([A, A * 1.5 + 0.1, A.T])
    got = tg.vmap(uses_all)(batch)
    np.testing.assert_allclose(got, [uses_all(b) for b in batch], rtol=1e-12)
    grads = tg.vmap(tg.grad(uses_all))(batch)
    np.testing.assert_allclose(grads, [tg.grad(uses_all)(b) for b in batch], rtol=1e-10,
                               atol=1e-12)


def test_cse_merges_two_applications_and_simplify_keeps_the_node():
    def twice(a):
        return np.sum(np.linalg.svd(a)[0]) + np.sum(np.linalg.svd(a)[2])
    graph = tg.trace(twice, A)
    assert graph.ops().count("svd") == 2
    merged = prune(cse(graph))
    assert merged.ops().count("svd") == 1
    assert merged(A) == pytest.approx(twice(A), rel=1e-13)
    simple = simplify(merged)
    assert simple.ops().count("svd") == 1
    assert simple(A) == pytest.approx(twice(A), rel=1e-13)


def test_generated_code_has_one_call():
    source = codegen.generate(prune(tg.trace(uses_all, A))).source
    assert source.count("impl_svd(") == 1


def test_apply_gives_a_tuple_on_arrays_and_on_tracers():
    u, s, vh = apply("svd", A)
    for got, want in zip((u, s, vh), np.linalg.svd(A)):
        np.testing.assert_array_equal(got, want)
    assert REGISTRY["svd"].outputs == 3
    assert [tuple(x) for x, _ in REGISTRY["svd"].shape_dtype(
        [tg.ir.Aval((4, 2), np.dtype("float64"))], {})] == [(4, 2), (2,), (2, 2)]


# -- eigh, qr, slogdet: one node each ---------------------------------------------------------
SYM = np.array([[2.0, 0.3, -0.5], [0.3, 1.0, 0.4], [-0.5, 0.4, -0.9]])


def eigh_fn(xp):
    def f(a):
        w, v = xp.linalg.eigh(a)
        return xp.sum(w * xp.arange(1.0, 4.0)) + xp.sum(v[0, :] * v[:, 1] ** 2)
    return f


def qr_fn(xp):
    def f(a):
        q, r = xp.linalg.qr(a)
        return xp.sum(q[:, 0] * xp.arange(1.0, 1 + q.shape[0])) + xp.sum(r ** 2)
    return f


def slogdet_fn(xp):
    def f(a):
        sign, logdet = xp.linalg.slogdet(a)
        return sign * logdet
    return f


FACTORISATIONS = {"eigh": (eigh_fn, SYM, "eigh"), "qr": (qr_fn, TALL, "qr"),
                  "slogdet": (slogdet_fn, A, "slogdet")}


@pytest.mark.parametrize("name", sorted(FACTORISATIONS))
def test_one_node_per_factorisation(name, monkeypatch):
    make, a, numpy_name = FACTORISATIONS[name]
    f = make(np)
    graph = tg.trace(f, a)
    assert graph.ops().count(name) == 1
    head = next(n for n in graph if graph.op(n) == name)
    assert graph.op(head + 1) == PROJ == graph.op(head + 2)
    line = next(line for line in str(graph).splitlines() if f" {name} " in line)
    assert line.split("=")[0].count("%") == 2
    want = f(a)
    calls = []
    real = getattr(np.linalg, numpy_name)

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(np.linalg, numpy_name, counting)
    got = graph(a)
    assert len(calls) == 1
    assert got == pytest.approx(want, rel=1e-13)
    loaded = tg.Graph.from_json(graph.to_json())
    assert str(loaded) == str(graph)


@pytest.mark.parametrize("name", sorted(FACTORISATIONS))
def test_factorisation_gradients(name):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    make, a, _ = FACTORISATIONS[name]
    f = make(np)
    got = tg.grad(f)(a)
    np.testing.assert_allclose(got, central_diff(f, a), rtol=1e-6, atol=1e-7)
    if name == "eigh":
        # NumPy reads the lower triangle, so do the derivatives (JAX symmetrises instead)
        assert np.all(np.triu(got, 1) == 0)
    else:   # JAX's QR has LAPACK's Householder signs, as NumPy's
        np.testing.assert_allclose(got, jax.grad(make(jnp))(a), rtol=1e-9, atol=1e-11)
    for backend in ("numpy", "jax"):
        np.testing.assert_allclose(tg.jit(tg.grad(f), backend=backend)(a), got, rtol=1e-10,
                                   atol=1e-12)
    batch = np.stack([a, a * 1.1])
    np.testing.assert_allclose(tg.vmap(tg.grad(f))(batch),
                               [tg.grad(f)(b) for b in batch], rtol=1e-10, atol=1e-12)
