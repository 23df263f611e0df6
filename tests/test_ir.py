"""The IR container: its networkx view, printing, DOT, copying (the Graph API itself: test_graph_api.py)."""
import networkx as nx
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ir import Graph


def _loss(w, x, y):
    return np.sum((w * x - y) ** 2) + np.sum(x * x)


def _example():
    x, y = np.array([1.0, 2.0]), np.array([5.0, 7.0])
    return tg.trace(_loss, 1.0, x, y)


def test_nodes_and_edges_follow_the_contract():
    g = _example()
    assert isinstance(g.nx, nx.MultiDiGraph)
    for n, d in g.nx.nodes(data=True):
        assert set(d) >= {"op", "shape", "dtype", "params", "src"}
        assert isinstance(d["shape"], tuple) and isinstance(d["dtype"], str)
        assert d["src"] is None or d["src"].startswith("test_ir.py:")
        # the edges carry the operand positions, in order, x * x included
        positions = sorted((k, a) for a, _, k in g.nx.in_edges(n, keys=True))
        assert [a for _, a in positions] == list(d["args"])
        for _, _, k, data in g.nx.in_edges(n, keys=True, data=True):
            assert data["pos"] == k
    assert [g.op(n) for n in g.inputs] == ["input"] * 3
    squares = [n for n in g if g.op(n) == "mul" and len(set(g.args(n))) == 1]
    assert squares and g.nx.number_of_edges(g.args(squares[0])[0], squares[0]) == 2


def test_nx_view_is_what_the_networkx_api_builds():
    g = _example()
    reference = nx.MultiDiGraph()
    for n, d in g.nx.nodes(data=True):
        reference.add_node(n, **d)
        for pos, a in enumerate(d["args"]):
            reference.add_edge(a, n, key=pos, pos=pos)
    reference.graph.update(outputs=g.outputs, guards=g.guards)     # for Graph.from_nx
    assert list(reference.nodes(data=True)) == list(g.nx.nodes(data=True))
    assert sorted(reference.edges(keys=True, data=True)) == sorted(g.nx.edges(keys=True, data=True))
    assert nx.is_directed_acyclic_graph(g.nx)
    assert list(nx.topological_sort(g.nx)) is not None
    assert nx.utils.graphs_equal(reference, g.nx)


def test_operands_must_exist():
    g = Graph()
    with pytest.raises(ValueError, match="not in the graph"):
        g.add_node("neg", (7,), shape=(), dtype="float64")


def test_dump_is_one_readable_line_per_node():
    text = str(_example())
    lines = text.splitlines()
    assert lines[0] == "graph(%0:f64[], %1:f64[2], %2:f64[2]):"
    assert any(line.strip().startswith("%3:f64[2] = mul %0 %1") and "# test_ir.py:" in line
               for line in lines)
    assert lines[-1].strip().startswith("return %")


def test_graph_runs_and_returns_bare_value_or_tuple():
    g = _example()
    x, y = np.array([1.0, 2.0]), np.array([5.0, 7.0])
    assert g(1.0, x, y) == _loss(1.0, x, y)
    two = tg.trace(lambda a: (a * 2, a + 1), np.ones(2))
    out = two(np.ones(2))
    assert isinstance(out, tuple) and len(out) == 2


def test_graph_checks_its_inputs():
    g = _example()
    with pytest.raises(tg.TraceError, match="takes 3 inputs"):
        g(1.0)
    with pytest.raises(tg.TraceError, match="shape"):
        g(1.0, np.ones(3), np.ones(2))


def test_to_dot_mentions_every_node_and_edge():
    g = _example()
    dot = g.to_dot(fold=0)      # (by default small constants are written into labels)
    assert dot.startswith("digraph")
    for n in g:
        assert f"  n{n} [label=" in dot
    assert dot.count(" -> ") == g.nx.number_of_edges()
    assert "\\n" in dot and "\\\\n" not in dot  # Graphviz line breaks, not escaped ones


def test_subgraph_keeps_ids_and_leaves_original_alone():
    g = _example()
    pruned = tg.passes.prune(g, [g.outputs[0]])
    assert set(pruned) <= set(g)
    assert len(g) > len(pruned) or len(g) == len(pruned)
    for n in pruned:
        assert pruned.node(n) == g.node(n)


def test_summary_counts_ops_flops_bytes_and_depth():
    A = np.ones((20, 10))

    def f(x):
        return np.sum(np.exp(A @ x)) + np.sum(x * x)

    g = tg.trace(f, np.ones(10))
    s = g.summary()
    assert s.nodes == len(g) and s.ops["matmul"] == 1 and s.ops["sum"] == 2
    # matmul 2*20*10, exp 20, sum 20, mul 10, sum 10, add 1
    assert s.flops == 400 + 20 + 20 + 10 + 10 + 1
    assert s.constant_bytes == A.nbytes + 0  # A; no other constant in f
    assert s.intermediate_bytes == 8 * (20 + 20 + 1 + 10 + 1 + 1)
    assert s.depth == 4  # x -> matmul -> exp -> sum -> add
    text = str(s)
    assert "matmul 1" in text and "FLOP" in text and "%0:f64[10]" in text
