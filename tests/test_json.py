"""graph.to_json / tg.Graph.from_json: lossless round trips, and safe loading."""
import json

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ir import serialize
from tracegrad.runtime import run

from primitive_cases import CASES

X = np.array([1.0, 2.0])
Y = np.array([5.0, 7.0])


def _loss(w, x, y):
    return np.sum((w * x - y) ** 2) + np.sum(x[::-1][np.array([0, 1])]) + \
        np.linalg.det(np.outer(x, y) + np.eye(2))


def _round_trip(graph, *args):
    text = graph.to_json()
    loaded = tg.Graph.from_json(text)
    assert loaded.to_json() == text  # re-serialising gives the same document
    assert str(loaded) == str(graph)
    with np.errstate(all="ignore"):
        for a, b in zip(run(graph, list(args)), run(loaded, list(args))):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    return loaded


def test_round_trip_of_derivative_graphs():
    _round_trip(tg.trace(_loss, 1.0, X, Y), 1.0, X, Y)
    _round_trip(tg.trace(tg.grad(_loss), 1.0, X, Y), 1.0, X, Y)
    _round_trip(tg.trace(tg.hessian(_loss), 1.0, X, Y), 1.0, X, Y)
    _round_trip(tg.passes.adjoint(tg.trace(_loss, 1.0, X, Y)), 1.0, X, Y, 1.0)


def test_round_trip_keeps_guards_and_special_floats():
    def f(x):
        if x.sum() > 0:
            return x[x > 0.5] * 2 + np.float64(-0.0) + np.inf
        return x
    loaded = _round_trip(tg.trace(f, X), X)
    assert loaded.guards[0] == (loaded.guards[0][0], True)
    assert loaded.guards[1][1].tolist() == [True, True]
    with pytest.raises(tg.TraceError, match="different branch"):
        run(loaded, [-X])


@pytest.mark.parametrize("name", sorted(n for n in CASES if n not in ("custom_vjp_call",
                                                                  "pure_callback")))
def test_round_trip_of_every_primitive(name):
    for case in CASES[name]:
        _round_trip(tg.trace(case.fn, *case.args), *case.args)


def test_custom_vjp_graphs_say_they_cannot_be_saved():
    @tg.custom_vjp
    def f(x):
        return x

    f.defvjp(lambda x: (x, None), lambda r, g: (g,))
    with pytest.raises(tg.TraceError, match="cannot serialise"):
        tg.trace(lambda x: f(x) * 2, X).to_json()


def _doc():
    return json.loads(tg.trace(_loss, 1.0, X, Y).to_json())


def _mutated(edit):
    doc = _doc()
    edit(doc)
    return json.dumps(doc)


def _first(doc, op):
    return next(n for n in doc["nodes"] if n["op"] == op)


HOSTILE = {
    "unknown op": lambda d: _first(d, "mul").update(op="os.system"),
    "forward reference (a cycle)": lambda d: _first(d, "mul").update(args=[10**6]),
    "self reference": lambda d: _first(d, "mul").update(args=[_first(d, "mul")["id"]] * 2),
    "dangling output": lambda d: d.update(outputs=[123456]),
    "object dtype": lambda d: _first(d, "mul").update(dtype="object"),
    "void dtype": lambda d: _first(d, "mul").update(dtype="V8"),
    "negative shape": lambda d: _first(d, "mul").update(shape=[-1]),
    "absurd shape": lambda d: _first(d, "mul").update(shape=[2**40, 2**40]),
    "float shape": lambda d: _first(d, "mul").update(shape=[2.5]),
    "bad base64": lambda d: _first(d, "const")["params"]["value"]["array"].update(data="@@@"),
    "short array data": lambda d: _first(d, "const")["params"]["value"]["array"].update(
        shape=[1000]),
    "unknown tag": lambda d: _first(d, "sum")["params"].update(axis={"pickle": "gASV"}),
    "unknown field": lambda d: d.update(extra=1),
    "unknown node field": lambda d: _first(d, "mul").update(code="print(1)"),
    "wrong format": lambda d: d.update(format="something-else"),
    "future version": lambda d: d.update(version=99),
    "duplicate id": lambda d: d["nodes"].append(dict(_first(d, "mul"))),
    "inputs out of order": lambda d: d.update(inputs=d["inputs"][::-1]),
    "const with operands": lambda d: _first(d, "const").update(args=[0]),
    "bad guard": lambda d: d.update(guards=[{"node": 0}]),
    "custom_vjp node": lambda d: _first(d, "mul").update(op="custom_vjp_call"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_documents_are_rejected_cleanly(name):
    with pytest.raises(tg.TraceError, match="invalid tracegrad-ir document"):
        tg.Graph.from_json(_mutated(HOSTILE[name]))


@pytest.mark.parametrize("text", ["", "[]", "nope", '{"format": "tracegrad-ir", "version": NaN}',
                                  "[" * 100000 + "]" * 100000, b"\xff\xfe"])
def test_not_documents_at_all(text):
    with pytest.raises((tg.TraceError, UnicodeDecodeError)):
        tg.Graph.from_json(text)


def test_oversize_documents_are_refused_before_parsing(monkeypatch):
    monkeypatch.setattr(serialize, "MAX_DOCUMENT_BYTES", 100)
    with pytest.raises(tg.TraceError, match="over 100 bytes"):
        tg.Graph.from_json(tg.trace(_loss, 1.0, X, Y).to_json())


def test_random_mutations_never_escape_as_other_errors():
    rng = np.random.default_rng(0)
    text = tg.trace(tg.grad(_loss), 1.0, X, Y).to_json()
    for _ in range(300):
        chars = list(text)
        for _ in range(rng.integers(1, 4)):
            i = int(rng.integers(len(chars)))
            chars[i] = chr(int(rng.integers(32, 127)))
        try:
            graph = tg.Graph.from_json("".join(chars))
        except tg.TraceError:
            continue
        assert isinstance(graph, tg.Graph)  # a mutation that kept the document valid
