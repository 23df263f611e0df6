"""Loading never runs code and refuses what its primitives would not take: the examples of
issue 12 (class 1), one test each, and the per-primitive declarations the loader checks."""
import base64
import inspect
import json
import os
import pathlib
import tempfile

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ir import REGISTRY, schema
from tracegrad.runtime.codegen import generate

X = np.array([1.0, 2.0])
CANARY = pathlib.Path(tempfile.gettempdir()) / f"tracegrad-json-canary-{os.getpid()}"
ATTACK = f"model.py:3\nopen({str(CANARY)!r}, 'w').write('ran')"


@pytest.fixture(autouse=True)
def _no_canary():
    CANARY.unlink(missing_ok=True)
    yield
    assert not CANARY.exists(), "code from a document ran"


def _doc(fn=lambda v: np.sin(v) * 2.0, *args):
    return json.loads(tg.trace(fn, *(args or (X,))).to_json())


def _node(doc, op):
    return next(n for n in doc["nodes"] if n["op"] == op)


def _load(doc):
    return tg.Graph.from_json(doc if isinstance(doc, str) else json.dumps(doc))


def _refused(doc, match):
    with pytest.raises(tg.TraceError, match="invalid tracegrad-ir document") as info:
        _load(doc)
    assert match in str(info.value)


# -- code from data -------------------------------------------------------------------------
def test_the_issue_attack_newline_in_src_is_refused():
    doc = _doc()
    _node(doc, "sin")["src"] = ATTACK
    _refused(doc, "src must be")


@pytest.mark.parametrize("src", [ATTACK, "a.py:1\r" + ATTACK, "a.py:1\u2028x", "a.py:1\x00",
                                 "x" * 600 + ":1", "no line number", "", 12],
                         ids=["newline", "return", "separator", "nul", "long", "no-line", "empty",
                              "number"])
def test_src_must_be_a_short_printable_file_and_line(src):
    doc = _doc()
    _node(doc, "sin")["src"] = src
    _refused(doc, "src must be")


def test_valid_src_forms_load():
    doc = _doc()
    for src in ["<stdin>:1", "my model (v2).py:120", "C:\\work\\m.py:3", "modèle.py:7", None]:
        _node(doc, "sin")["src"] = src
        assert _load(doc).node(_node(doc, "sin")["id"])["src"] == src


def test_a_hostile_src_in_a_graph_built_in_memory_never_runs():
    """The generated code escapes a node's src even when no loader checked it (a graph
    made by hand, or a file name holding a newline)."""
    graph = tg.trace(lambda v: np.sin(v) * 2.0, X)
    sin = next(n for n in graph if graph.op(n) == "sin")
    graph.nx.nodes[sin]["src"] = ATTACK
    np.testing.assert_array_equal(tg.jit(lambda v: graph(v))(X), np.sin(X) * 2.0)
    compiled = generate(graph)
    np.testing.assert_array_equal(compiled(X)[0], np.sin(X) * 2.0)
    assert "# model.py:3\\nopen(" in compiled.source
    assert len(graph.to_dot().splitlines()) == len(tg.trace(lambda v: np.sin(v) * 2.0, X)
                                                   .to_dot().splitlines())


def test_param_names_reach_generated_code_only_as_identifiers():
    graph = tg.trace(lambda v: np.cumsum(v, axis=0), X)
    s = next(n for n in graph if graph.op(n) == "cumsum")
    graph.nx.nodes[s]["params"][f"x=open({str(CANARY)!r}, 'w'), y"] = 1
    with pytest.raises(tg.TraceError, match="not an identifier"):
        generate(graph)


# -- documents the primitives would not take -------------------------------------------------
def test_index_tags_nested_hundreds_deep():
    doc = _doc(lambda v: v[0], X)
    text = json.dumps(doc)
    nested = '{"index": [' * 300 + "0" + "]}" * 300
    text = text.replace('{"index":[0]}', nested).replace('{"index": [0]}', nested)
    assert nested in text
    _refused(text, "")


def test_tuples_nested_hundreds_deep():
    doc = _doc(lambda v: np.sum(v, axis=0), X)
    _node(doc, "sum")["params"]["axis"] = "NEST"
    text = json.dumps(doc).replace('"NEST"', '{"tuple": [' * 100 + "0" + "]}" * 100)
    _refused(text, "nested more than")


def test_a_5000_digit_integer():
    text = json.dumps(_doc(), separators=(",", ":"))
    text = text.replace('"shape":[2]', '"shape":[' + "9" * 5000 + "]", 1)
    assert "9" * 5000 in text
    _refused(text, "5000 digits")


@pytest.mark.parametrize("edit,match", [
    (lambda p: p.update(bogus=1), "unknown params ['bogus']"),
    (lambda p: p.pop("keepdims"), "missing params ['keepdims']"),
    (lambda p: p.update(keepdims=1), "keepdims must be true or false"),
    (lambda p: p.update(axis=0), "axis must be distinct axes"),
    (lambda p: p.update(axis={"tuple": [5]}), "axis must be distinct axes in [0, 1)"),
    (lambda p: p.update(axis={"tuple": [-1]}), "axis must be distinct axes"),
    (lambda p: p.update(axis={"tuple": [True]}), "axis must be distinct axes"),
    (lambda p: p.update(axis="0"), "axis must be distinct axes"),
])
def test_unknown_missing_or_mistyped_params(edit, match):
    doc = _doc(lambda v: np.sum(v, axis=0), X)
    edit(_node(doc, "sum")["params"])
    _refused(doc, match)


def test_mul_with_three_operands():
    """NumPy would take the third operand as ``out=`` and write into it."""
    doc = _doc(lambda v: v * v, X)
    mul = _node(doc, "mul")
    mul["args"] = mul["args"] + [mul["args"][0]]
    _refused(doc, "mul takes 2 operands, got 3")


@pytest.mark.parametrize("field,value,match", [
    ("shape", [3], "declares float64[3], but its operands and params give float64[2]"),
    ("dtype", "float32", "declares float32[2], but its operands and params give float64[2]"),
])
def test_a_declared_shape_or_dtype_that_contradicts_the_op(field, value, match):
    doc = _doc()
    _node(doc, "sin")[field] = value
    _refused(doc, match)


def test_a_shape_rule_failing_on_a_bad_document_is_a_trace_error():
    doc = _doc(lambda v: v @ np.ones((2, 2)), X)
    matmul = _node(doc, "matmul")
    const = next(n for n in doc["nodes"] if n["op"] == "const" and n["shape"] == [2, 2])
    const["shape"], const["params"]["value"]["array"]["shape"] = [4, 1], [4, 1]
    _refused(doc, f"node {matmul['id']} (matmul) does not apply")


def test_index_arrays_that_broadcast_past_the_node_limit():
    """The shape rule would allocate their result while loading."""
    doc = _doc(lambda v: v[np.array([[0], [1]]), np.array([[0, 1]])], np.ones((2, 2)))
    text = json.dumps(doc)
    get = _node(doc, "getitem")
    rows, cols = (np.zeros((50000, 1), np.int64), np.zeros((1, 50000), np.int64))
    get["params"]["index"]["index"] = [
        {"array": {"dtype": "int64", "shape": list(a.shape),
                   "data": base64.b64encode(a.tobytes()).decode()}} for a in (rows, cols)]
    assert text != json.dumps(doc)
    _refused(doc, "broadcast to more than")


def _remat_doc():
    block = tg.checkpoint(lambda v: np.tanh(v) * v)
    return _doc(lambda v: np.sum(block(v)), X)


@pytest.mark.parametrize("edit,match", [
    (lambda n: n["params"].update(index=0), "unknown params ['index']"),
    (lambda n: n["outputs"].append(None), "lists 1 outputs"),
    (lambda n: n.update(outputs=n["outputs"][0]), "outputs must be a list"),
    (lambda n: n["params"].update(graph=3), "graph must be a graph"),
    (lambda n: n["params"].pop("graph"), "missing params ['graph']"),
    (lambda n: n.update(args=[]), "the sub-graph takes 1 operands, the node has 0"),
    (lambda n: n.update(args=n["args"] * 2), "the sub-graph takes 1 operands, the node has 2"),
    (lambda n: [m.update(shape=[3]) for m in n["params"]["graph"]["graph"]["nodes"]],
     "the operands are [float64[2]], the sub-graph takes [float64[3]]"),
    (lambda n: n["params"]["graph"]["graph"].update(outputs=[]), "has 0 outputs"),
    (lambda n: n["params"]["graph"]["graph"].update(inputs=[]), "inputs must list every"),
    (lambda n: n["params"].update(graph={"graph": {}}), "format must be"),
])
def test_malformed_remat_call_nodes(edit, match):
    doc = _remat_doc()
    edit(_node(doc, "remat_call"))
    _refused(doc, match)


def test_scan_xs_must_have_the_scan_length():
    doc = _doc(lambda x: tg.scan(lambda c, v: (c + v, c * v), np.zeros(()), x)[1], X)
    _node(doc, "scan")["params"]["length"] = 4
    _refused(doc, "leading axis of length 4")


def _loop_doc():
    def f(x):
        y = tg.fori_loop(0, 3, lambda i, v: v * 0.5 + 1.0, x)
        w = tg.while_loop(lambda v: np.sum(v) < 10.0, lambda v: v + 1.0, x)
        return y + w + tg.cond(x[0] > 0, lambda v: v * 2.0, lambda v: -v, x)
    return _doc(f, X)


@pytest.mark.parametrize("op,edit,match", [
    ("scan", lambda n: n["params"].update(n_carry=5), "operands for n_carry=5"),
    ("scan", lambda n: n["params"].update(index=1), "unknown params ['index']"),
    ("scan", lambda n: n.update(outputs=n["outputs"][:1]), "lists 2 outputs"),
    ("scan", lambda n: n["params"].update(reverse=0), "reverse must be true or false"),
    ("while_loop", lambda n: n["params"].update(cond=n["params"]["body"]),
     "cond must return a boolean scalar"),
    ("while_loop", lambda n: n["params"].update(index=0), "unknown params ['index']"),
    ("while_loop", lambda n: n["params"]["body"]["graph"].update(outputs=[]),
     "the body must return the carry"),
    ("cond", lambda n: n["outputs"].append(None), "lists 1 outputs"),
    ("cond", lambda n: n["params"].update(false=3), "false must be a graph"),
    ("cond", lambda n: n["params"].update(false=n["params"]["true"]["graph"]["nodes"][0]),
     "must be a JSON scalar or a one-key tagged object"),
    ("cond", lambda n: n.update(args=n["args"][1:]), "predicate must be a scalar"),
])
def test_malformed_control_flow_nodes(op, edit, match):
    doc = _loop_doc()
    edit(_node(doc, op))
    _refused(doc, match)


def _while_grad_doc():
    f = lambda a: tg.while_loop(lambda x: x * x > a + 1e-12, lambda x: 0.5 * (x + a / x), a)  # noqa: E731
    return _doc(tg.grad(tg.grad(f)), np.float64(2.0))


@pytest.mark.parametrize("edit,match", [
    (lambda n: n["params"].update(chain={"tuple": []}), "must be a chain of at most 4"),
    (lambda n: n["params"].update(chain={"tuple": [{"tuple": ["adjoint", {"tuple": [5]}]}]}),
     "seeds (5,) but the function has 1 outputs"),
    (lambda n: n["params"].update(chain={"tuple": [{"tuple": ["adjoint", {"tuple": [0, 0]}]}]}),
     "must be a chain"),
    (lambda n: n["params"].update(chain={"tuple": [{"tuple": ["exec"]}]}), "must be a chain"),
    (lambda n: n["params"].update(chain={"tuple": [{"tuple": ["jvp"]}] * 5}), "must be a chain"),
    (lambda n: n["params"].update(select={"tuple": [99]}), "select past"),
    (lambda n: n.update(args=n["args"][:-1]), "the derived function takes"),
    (lambda n: n["params"].update(n_carry=3), "operands for n_carry=3"),
])
def test_malformed_while_derived_nodes(edit, match):
    doc = _while_grad_doc()
    edit(_node(doc, "while_derived"))
    _refused(doc, match)


def test_every_primitive_has_a_declaration():
    """A new primitive with keyword parameters needs an entry in ``ir/schema.py``; the
    declared names must be its implementation's."""
    for name, prim in REGISTRY.items():
        if name in ("custom_vjp_call", "pure_callback"):   # Python code: never loaded
            continue
        spec = schema.spec(prim)
        assert spec is not None, f"{name} has no declaration in tracegrad/ir/schema.py"
        if spec.params:
            sig = inspect.signature(prim.impl).parameters
            assert set(spec.params) <= set(sig), (name, set(spec.params) - set(sig))


def test_a_commonly_named_parameter_a_primitive_gains_is_declared_by_its_name():
    """A primitive that later takes ``dtype=`` or ``UPLO=`` (NumPy's names) loads without
    a new entry; the value is still checked."""
    from tracegrad.ir.registry import Aval, Primitive

    def impl(x, axis, keepdims, dtype=None):
        return np.sum(x, axis=axis, keepdims=keepdims, dtype=dtype)

    prim = Primitive("sum", impl)
    avals = [Aval((2, 3), np.dtype("float64"))]
    for params in ({"axis": (0,), "keepdims": False}, {"axis": (0,), "keepdims": False,
                                                        "dtype": None},
                   {"axis": (0,), "keepdims": False, "dtype": np.dtype("float32")}):
        schema.check_node(prim, avals, params)
    with pytest.raises(schema.Invalid, match="dtype must be a dtype"):
        schema.check_node(prim, avals, {"axis": (0,), "keepdims": False, "dtype": "f4"})

    def eigvalsh(a, UPLO="L"):  # noqa: N803 - NumPy's name
        return np.linalg.eigvalsh(a, UPLO)

    square = [Aval((2, 2), np.dtype("float64"))]
    schema.check_node(Primitive("new_eigvalsh", eigvalsh), square, {"UPLO": "U"})
    with pytest.raises(schema.Invalid, match="UPLO must be one of"):
        schema.check_node(Primitive("new_eigvalsh", eigvalsh), square, {"UPLO": "X"})
