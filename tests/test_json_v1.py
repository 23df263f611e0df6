"""Version-1 documents with loops, branches and checkpoints still load and give the values
they gave.

Version 1 wrote a node with several outputs (``scan``, ``while_loop``, ``cond``,
``remat_call``) as one node per output with a param ``index``; the loader makes one
multi-output node of the siblings (``ir/serialize.py``, ``_Loader.v1_output``). The two
documents under ``tests/data/`` were written by tracegrad at commit 3f8fd56 (version 1)
from these functions (``fn.py``), ``v1_control_flow.json`` by ``tg.trace(f, X, Y)`` and
``v1_control_flow_grad.json`` by ``prune(tg.trace(tg.grad(g2, argnums=(0, 1)), X, Y))``::

    def block(a, b):
        return np.tanh(a * b), a + np.sin(b)

    def f(x, y):
        v = tg.fori_loop(0, 4, lambda i, v: v * 0.9 + 0.1 * i, x)
        (h, s), ys = tg.scan(lambda c, t: ((np.tanh(c[0] * t + y), c[1] + np.sum(c[0])),
                                           c[0] * 2.0), (x, 0.0), y, reverse=True)
        w, k = tg.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * 1.5 + y, c[1] + 1), (x, 0))
        p, q = tg.cond(np.sum(x) > 0, lambda a, b: (a * b, a - b),
                       lambda a, b: (a + b, a * 2.0), x, y)
        m, n = tg.checkpoint(block)(x, y)
        return (np.sum(v) + np.sum(h) + s + np.sum(ys ** 2) + np.sum(w) + k + np.sum(p * q)
                + np.sum(m) + np.sum(n))

    def g2(x, y):
        (h, s), ys = tg.scan(lambda c, t: ((np.tanh(c[0] * t), c[1] + np.sum(c[0])),
                                           c[0] * 2.0), (x, 0.0), y)
        p, q = tg.cond(np.sum(x) > 0, lambda a, b: (a * b, a - b),
                       lambda a, b: (a + b, a * 2.0), h, y)
        m, n = tg.checkpoint(block)(p, y)
        return s + np.sum(ys ** 2) + np.sum(q) + np.sum(m * n)

The oracles below are the same functions in plain NumPy (Python loops and branches) and
finite differences of them.
"""
import copy
import json
import pathlib

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ir import PROJ
from tracegrad.passes import prune
from tracegrad.runtime import codegen

from oracles import finite_diff_grad

DATA = pathlib.Path(__file__).parent / "data"
X = np.array([0.3, -0.2, 0.5])
Y = np.array([0.7, 0.1, -0.4])
LOOPS = ("scan", "while_loop", "cond", "remat_call")


def _text(name):
    return (DATA / name).read_text()


def f_numpy(x, y):
    v = x
    for i in range(4):
        v = v * 0.9 + 0.1 * i
    h, s, ys = x, 0.0, [None] * len(y)
    for i in reversed(range(len(y))):
        ys[i] = h * 2.0
        h, s = np.tanh(h * y[i] + y), s + np.sum(h)
    w, k = x, 0
    while k < 3:
        w, k = w * 1.5 + y, k + 1
    p, q = (x * y, x - y) if np.sum(x) > 0 else (x + y, x * 2.0)
    m, n = np.tanh(x * y), x + np.sin(y)
    return (np.sum(v) + np.sum(h) + s + np.sum(np.stack(ys) ** 2) + np.sum(w) + k
            + np.sum(p * q) + np.sum(m) + np.sum(n))


def g2_numpy(x, y):
    h, s, ys = x, 0.0, []
    for t in y:
        ys.append(h * 2.0)
        h, s = np.tanh(h * t), s + np.sum(h)
    p, q = (h * y, h - y) if np.sum(x) > 0 else (h + y, h * 2.0)
    m, n = np.tanh(p * y), p + np.sin(y)
    return s + np.sum(np.stack(ys) ** 2) + np.sum(q) + np.sum(m * n)


def test_the_fixtures_are_version_1_with_one_node_per_output():
    doc = json.loads(_text("v1_control_flow.json"))
    assert doc["version"] == 1
    indexed = [(n["op"], n["params"]["index"]) for n in doc["nodes"] if n["op"] in LOOPS]
    assert indexed == [("scan", 0), ("scan", 1), ("scan", 0), ("scan", 1), ("scan", 2),
                       ("while_loop", 0), ("while_loop", 1), ("cond", 0), ("cond", 1),
                       ("remat_call", 0), ("remat_call", 1)]


def test_a_version_1_document_loads_as_one_node_per_loop_and_gives_its_values():
    graph = tg.Graph.from_json(_text("v1_control_flow.json"))
    ops = graph.ops()
    # the siblings of each loop are one node (the fori_loop's each had a constant 0 of
    # their own: equal constants count as one operand)
    assert [ops.count(op) for op in LOOPS] == [2, 1, 1, 1]
    assert not any("index" in graph.node(n)["params"] for n in graph
                   if graph.op(n) in LOOPS)
    want = f_numpy(X, Y)
    np.testing.assert_allclose(graph(X, Y), want, rtol=1e-13)
    np.testing.assert_allclose(codegen.generate(prune(graph))(X, Y)[0], want, rtol=1e-13)
    other = -X
    np.testing.assert_allclose(graph(other, Y), f_numpy(other, Y), rtol=1e-13)
    # the document's node ids still name the same values: each old node is a projection
    doc = json.loads(_text("v1_control_flow.json"))
    for entry in doc["nodes"]:
        if entry["op"] in LOOPS:
            d = graph.node(entry["id"])
            assert d["op"] == PROJ and d["params"]["index"] == entry["params"]["index"]
            assert list(d["shape"]) == entry["shape"]


def test_a_version_1_gradient_graph_loads_and_gives_the_gradient():
    graph = tg.Graph.from_json(_text("v1_control_flow_grad.json"))
    gx, gy = graph(X, Y)
    np.testing.assert_allclose(gx, finite_diff_grad(g2_numpy, [X, Y], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gy, finite_diff_grad(g2_numpy, [X, Y], 1), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gx, tg.grad(g2_numpy)(X, Y), rtol=1e-12)
    # far fewer loop nodes than the document's one per output
    doc = json.loads(_text("v1_control_flow_grad.json"))
    assert graph.ops().count("scan") < sum(n["op"] == "scan" for n in doc["nodes"])


@pytest.mark.parametrize("name", ["v1_control_flow.json", "v1_control_flow_grad.json"])
def test_a_loaded_version_1_document_is_written_as_version_2(name):
    graph = tg.Graph.from_json(_text(name))
    text = graph.to_json()
    doc = json.loads(text)
    assert doc["version"] == 2
    entry = next(e for e in doc["nodes"] if e["op"] == "scan")
    assert "outputs" in entry and "index" not in entry["params"]
    again = tg.Graph.from_json(text)
    assert again.to_json() == text and str(again) == str(graph)
    args = (X, Y)
    for a, b in zip(np.atleast_1d(graph(*args)), np.atleast_1d(again(*args))):
        np.testing.assert_array_equal(a, b)


def _nth(doc, op, k=0):
    return [n for n in doc["nodes"] if n["op"] == op][k]


@pytest.mark.parametrize("op,k,edit,match", [
    ("remat_call", 0, lambda n: n["params"].update(index=5), "index 5 but the node has 2 outputs"),
    ("remat_call", 1, lambda n: n["params"].update(index=-1), "param index must be an integer"),
    ("scan", 0, lambda n: n["params"].update(index=2), "index 2 but the node has 2 outputs"),
    ("scan", 1, lambda n: n["params"].update(index=True), "param index must be an integer"),
    ("scan", 2, lambda n: n["params"].pop("index"), "names its output in an index param"),
    ("while_loop", 1, lambda n: n["params"].update(index=2), "index 2 but the node has 2 outputs"),
    ("while_loop", 0, lambda n: n.update(shape=[4]), "declares float64[4], but"),
    ("cond", 1, lambda n: n.update(dtype="float32"), "declares float32[3], but"),
    ("cond", 0, lambda n: n["params"].update(true=3), "true must be a graph"),
    ("scan", 0, lambda n: n["params"].update(n_carry=9), "operands for n_carry=9"),
    ("remat_call", 0, lambda n: n.update(outputs=[]), "a node has exactly the fields"),
])
def test_hostile_version_1_loop_nodes_are_refused(op, k, edit, match):
    doc = json.loads(_text("v1_control_flow.json"))
    edit(_nth(doc, op, k))
    with pytest.raises(tg.TraceError, match="invalid tracegrad-ir document") as info:
        tg.Graph.from_json(json.dumps(doc))
    assert match in str(info.value)


def test_a_reference_to_the_made_head_is_refused():
    """The head takes an id no node of the document has; a later node naming that id
    refers to a node with several outputs, which no document may use."""
    doc = json.loads(_text("v1_control_flow.json"))
    last = 1 + max(n["id"] for n in doc["nodes"])
    head = last + 1         # the first head made: after every id of the document
    doc["nodes"].append({"id": last, "op": "neg", "args": [head], "shape": [],
                         "dtype": "int64", "params": {}, "src": None})
    with pytest.raises(tg.TraceError, match="several outputs"):
        tg.Graph.from_json(json.dumps(doc))


def test_the_same_output_twice_makes_two_nodes():
    """Two version-1 nodes naming the same output of the same loop (a graph not
    deduplicated) are two runs, each the same value."""
    doc = json.loads(_text("v1_control_flow.json"))
    first = _nth(doc, "cond", 0)
    twin = copy.deepcopy(first)
    twin["id"] = 1000
    doc["nodes"].insert(doc["nodes"].index(first) + 1, twin)
    doc["outputs"] = doc["outputs"] + [first["id"], 1000]
    graph = tg.Graph.from_json(json.dumps(doc))
    assert graph.ops().count("cond") == 2
    total, a, b = graph(X, Y)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, X * Y)      # sum(X) > 0: the true branch's first output
