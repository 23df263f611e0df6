"""graph.to_dot (DOT text, styling, the adjoint colouring) and graph.render."""
import re
import shutil
import sys

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ir import dot as dotmod
from tracegrad.ir.render import GraphvizUnavailable

X = np.array([0.5, -1.0, 2.0])
W = np.arange(9.0).reshape(3, 3) / 10


def f(x, w):
    return np.sum(np.tanh(x @ w) * x[0])


def _node_line(dot, n):
    (line,) = [ln for ln in dot.splitlines() if ln.startswith(f"  n{n} [")]
    return line


def _fill(dot, n):
    return re.findall(r'fillcolor="([^"]+)"', _node_line(dot, n))[-1]


def _check_syntax(dot):
    """A small structural check of the DOT text (every statement well formed, quotes closed)."""
    lines = dot.splitlines()
    assert lines[0] == "digraph tracegrad {" and lines[-1] == "}"
    assert dot.count("{") == dot.count("}")
    string = r'"(?:[^"\\]|\\.)*"'
    attr = rf'\w+=(?:{string}|[\w#.,]+)'
    stmt = re.compile(rf"^\s*(?:{attr};|\w+(?: -> \w+)? \[{attr}(?:, {attr})*\];|\w+ -> \w+;)$")
    for ln in lines[1:-1]:
        s = ln.strip()
        if s.startswith(("subgraph", "label=", "color=", "{rank")) or s == "}":
            continue
        assert stmt.match(ln), ln


def test_forward_graph_structure():
    g = tg.trace(f, X, W)
    dot = g.to_dot()
    _check_syntax(dot)
    for n in g:
        assert f"  n{n} [label=" in dot
    assert dot.count(" -> ") == g.nx.number_of_edges()
    for n in g.inputs:
        assert "shape=ellipse" in _node_line(dot, n)
    (out,) = g.outputs
    assert "peripheries=2" in _node_line(dot, out) and "(output 0)" in _node_line(dot, out)
    # op, params, type and source line in the labels
    matmul = next(n for n in g if g.op(n) == "matmul")
    assert re.search(r'label="%\d+ matmul\\nf64\[3\]\\ntest_dot.py:\d+"', _node_line(dot, matmul))
    getitem = next(n for n in g if g.op(n) == "getitem")
    assert "index=[0]" in _node_line(dot, getitem)
    # a forward trace has no adjoint part: every op is forward-coloured, no adjoint legend
    assert all(_fill(dot, n) == dotmod.FORWARD_FILL for n in g if g.op(n) not in ("input", "const"))
    assert "adjoint" not in dot


def test_edge_labels_only_for_several_operands():
    g = tg.trace(f, X, W)
    dot = g.to_dot()
    tanh = next(n for n in g if g.op(n) == "tanh")
    matmul = next(n for n in g if g.op(n) == "matmul")
    assert f"  n{matmul} -> n{tanh};" in dot
    assert f"  n{g.inputs[0]} -> n{matmul} [label=0];" in dot
    assert f"  n{g.inputs[1]} -> n{matmul} [label=1];" in dot


def test_grad_graph_colours_the_adjoint_part():
    g = tg.trace(tg.grad(f), X, W)
    dot = g.to_dot()
    _check_syntax(dot)
    adjoint = dotmod.adjoint_nodes(g)
    ops = {n: g.op(n) for n in g}
    # the forward replay is forward, the seed and what depends on it are adjoint
    tanh = next(n for n in g if ops[n] == "tanh")
    assert tanh not in adjoint and _fill(dot, tanh) == dotmod.FORWARD_FILL
    (seed,) = dotmod.find_seeds(g)
    assert ops[seed] == "const" and "(seed)" in _node_line(dot, seed)
    assert g.outputs[0] in adjoint and _fill(dot, g.outputs[0]) == dotmod.ADJOINT_FILL
    assert any(ops[n] == "index_update" for n in adjoint)  # the getitem's VJP
    assert "adjoint (reverse mode)" in dot  # the legend explains the colours
    # the explicit rule (matching nodes against the forward graph) agrees on the seed's part
    by_forward = dotmod.adjoint_nodes(g, forward=tg.trace(f, X, W))
    assert tanh not in by_forward and adjoint - {seed} <= by_forward


def test_adjoint_pass_graph_with_forward_given():
    fwd = tg.trace(f, X, W)
    adj = tg.passes.adjoint(fwd)
    dot = adj.to_dot(forward=fwd)
    seed = adj.inputs[len(fwd.inputs)]
    assert _fill(dot, seed) == dotmod.ADJOINT_FILL and "(seed)" in _node_line(dot, seed)
    assert _fill(dot, adj.inputs[0]) == dotmod.INPUT_FILL
    fwd_out, *input_cts = adj.outputs
    assert _fill(dot, fwd_out) == dotmod.FORWARD_FILL
    assert all(_fill(dot, n) == dotmod.ADJOINT_FILL for n in input_cts)
    # the same from the seeds alone, and from a set of forward node ids
    assert dotmod.adjoint_nodes(adj, seeds=[seed]) <= dotmod.adjoint_nodes(adj, forward=fwd)
    ids = set(adj) - dotmod.adjoint_nodes(adj, forward=fwd)
    assert dotmod.adjoint_nodes(adj, forward=ids) == {
        n for n in dotmod.adjoint_nodes(adj, forward=fwd) if adj.op(n) not in ("input", "const")}


def test_forward_constant_one_is_not_a_seed():
    def h(x):
        return np.sum(np.where(x > 0, 1.0, 0.0) * (1.0 - x))
    assert dotmod.find_seeds(tg.trace(h, X)) == []
    assert len(dotmod.find_seeds(tg.trace(tg.grad(h), X))) == 1


def test_large_constants_collapse_small_ones_show():
    big = np.arange(10000.0).reshape(100, 100)
    g = tg.trace(lambda x: np.sum(x @ big, axis=1) + np.array([1.5, 2.5]), np.ones((2, 100)))
    dot = g.to_dot()
    assert "const f64[100,100] (10000 values)\\n[0, 1, 2, 3, ...]" in dot
    assert "9999" not in dot
    assert re.search(r"add\(%\d+, \[1.5, 2.5\]\)", dot)   # a small one is written into its user's label
    assert "const [1.5,2.5]" in g.to_dot(fold=0)
    # the threshold is adjustable
    assert "(2 values)" in g.to_dot(max_const=1)
    full = g.to_dot(max_const=10**4)
    assert "(10000 values)" not in full and "9.999e+03]]" in full


def test_escaping_quotes_backslashes_newlines():
    g = tg.Graph()
    x = g.add_input((2,), np.float64, src='we"ird\\path.py:1')
    y = g.add_node("reshape", (x,), {"shape": (2,), "note": 'say "hi"\nback\\slash'},
                   shape=(2,), dtype=np.float64, src="a.py:2")
    g.outputs.append(y)
    dot = g.to_dot()
    _check_syntax(dot)
    assert 'we\\"ird\\\\path.py:1' in dot
    assert "note='say \\\"hi\\\"\\\\nback\\\\\\\\slash'" in dot or 'say \\"hi\\"' in dot
    for ln in dot.splitlines():
        # no raw newline inside a label, and every label's quotes are balanced
        assert len(re.findall(r'(?<!\\)"', ln)) % 2 == 0, ln
    assert dotmod.escape('a"b\\c\nd') == 'a\\"b\\\\c\\nd'


def test_deterministic():
    a, b = (tg.trace(tg.grad(f), X, W).to_dot() for _ in range(2))
    assert a == b
    g = tg.trace(f, X, W)
    assert g.to_dot() == g.to_dot()


def test_parses_with_pydot_when_available():
    pydot = pytest.importorskip("pydot")
    for g in (tg.trace(f, X, W), tg.trace(tg.grad(f), X, W)):
        (parsed,) = pydot.graph_from_dot_data(g.to_dot())
        names = {nd.get_name() for nd in parsed.get_nodes()}
        assert {f"n{n}" for n in g} <= names


def test_render_without_dot_program_names_the_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` to be found
    g = tg.trace(f, X, W)
    with pytest.raises(GraphvizUnavailable) as info:
        g.render(tmp_path / "g.svg")
    msg = str(info.value)
    assert 'pip install "tracegrad[viz]"' in msg and "apt install graphviz" in msg
    assert "brew install graphviz" in msg
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, ImportError)
    assert not (tmp_path / "g.svg").exists()


def test_render_without_python_package(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz raises ImportError
    with pytest.raises(ImportError, match=r'pip install "tracegrad\[viz\]"'):
        tg.trace(f, X, W).render(tmp_path / "g.png")


def test_render_success_path(tmp_path, monkeypatch):
    graphviz = pytest.importorskip("graphviz")
    calls = []

    class FakeSource:
        def __init__(self, source, format=None, **kw):  # noqa: A002
            calls.append(("init", source, format))

        def pipe(self, format=None, **kw):  # noqa: A002
            calls.append(("pipe", format))
            return b"<svg>fake</svg>" if format == "svg" else b"\x89PNG fake"

    monkeypatch.setattr(graphviz, "Source", FakeSource)
    g = tg.trace(tg.grad(f), X, W)
    out = g.render(tmp_path / "sub" / "grad.svg")
    assert out == tmp_path / "sub" / "grad.svg" and out.read_bytes() == b"<svg>fake</svg>"
    assert calls == [("init", g.to_dot(), "svg"), ("pipe", "svg")]
    calls.clear()
    out = g.render(tmp_path / "picture", format="png")
    assert out.read_bytes().startswith(b"\x89PNG") and calls[-1] == ("pipe", "png")
    with pytest.raises(ValueError, match="format"):
        g.render(tmp_path / "nosuffix")
    with pytest.raises(ValueError, match="unsupported"):
        g.render(tmp_path / "g.jpg2")


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_render_for_real(tmp_path):
    pytest.importorskip("graphviz")     # the programs without the Python package: skip
    out = tg.trace(tg.grad(f), X, W).render(tmp_path / "grad.svg")
    assert out.read_text().lstrip().startswith(("<?xml", "<svg"))
    png = tg.trace(f, X, W).render(tmp_path / "fwd.png")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_render_with_matplotlib_needs_no_graphviz(tmp_path):
    pytest.importorskip("matplotlib")
    g = tg.passes.prune(tg.trace(tg.grad(lambda w: np.sum((w * np.arange(3.0) - 1.0) ** 2)),
                                 np.ones(3)))
    png = g.render(tmp_path / "pics" / "grad.png", engine="matplotlib")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    svg = g.render(tmp_path / "grad.svg", engine="matplotlib")
    assert "<svg" in svg.read_text()
    with pytest.raises(ValueError, match="unknown engine 'ascii'"):
        g.render(tmp_path / "g.png", engine="ascii")


def test_sub_graphs_are_drawn_once_as_clusters():
    g = tg.trace(lambda x: np.sum(tg.fori_loop(0, 3, lambda i, c: np.sin(c) * 2, x)), np.ones(2))
    dot = g.to_dot()
    scans = [n for n in g if g.op(n) == "scan"]
    assert len(scans) == 1                           # one node gives the counter and the value
    assert dot.count("subgraph cluster_n") == 1      # its body, drawn once
    first = scans[0]
    assert f"%{first + 1}:i64[], %{first + 2}:f64[2]" in dot     # the box lists both outputs
    assert f'label="%{first} body"' in dot and "[style=dashed, color=gray50]" in dot
    assert f"n{first}_body_4" in dot and "sin" in dot   # the body's own nodes
    assert dot.count("{") == dot.count("}")
