"""Pictures of the IR: folded constants, the layered layout, the adjoint colouring.

Structure, not pixels: which nodes and edges the DOT text has, that every edge of the
layout points down, that the sweeps cross fewer edges than the layout they replaced,
which colour each part gets."""
import re

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ir import dot as dotmod
from tracegrad.ir import draw as drawmod

X, Y = np.array([1.0, 2.0]), np.array([5.0, 7.0])
A = np.arange(9.0).reshape(3, 3) / 10


def loss(w, b):
    return np.sum((w * X + b - Y) ** 2)


def mlp(x, w):
    h = np.tanh(x @ w)
    return np.sum(np.sin(h) * h[0] + np.exp(h) * 3.0 + h ** 2)


def _graphs():
    return {"forward": tg.trace(mlp, X[:1].repeat(3), A),
            "grad": tg.trace(tg.grad(mlp), X[:1].repeat(3), A),
            "adjoint": tg.passes.adjoint(tg.trace(mlp, X[:1].repeat(3), A)),
            "hessian": tg.trace(tg.hessian(lambda v: np.sum(np.sin(v) * v ** 2)), np.ones(3)),
            "readme": tg.passes.optimize(tg.trace(tg.grad(loss, argnums=(0, 1)), 1.0, 0.0))}


def _node_line(dot, n):
    (line,) = [ln for ln in dot.splitlines() if ln.startswith(f"  n{n} [")]
    return line


# -- folded constants ---------------------------------------------------------------------------
def test_dot_folds_a_scalar_constant_into_its_users_label():
    g = tg.trace(lambda x: np.sum(x * 2.5) + np.sum(x - 2.5), X)
    dot = g.to_dot()
    consts = [n for n in g if g.op(n) == "const"]
    assert consts
    for c in consts:
        assert f"  n{c} [" not in dot and f"  n{c} -> " not in dot
    mul = next(n for n in g if g.op(n) == "mul")
    sub = next(n for n in g if g.op(n) == "sub")
    x = g.inputs[0]
    # (the operand is named after the traced function's argument)
    assert g.node(x)["name"] == "x"
    assert f'"%{mul} mul(x, 2.5)' in _node_line(dot, mul)
    assert f'"%{sub} sub(x, 2.5)' in _node_line(dot, sub)
    # one edge per drawn operand, none from a folded constant
    assert dot.count(" -> ") == sum(1 for n in g for a in g.args(n) if a not in consts)
    # fold=0 draws every constant as before
    full = g.to_dot(fold=0)
    assert all(f"  n{c} [" in full for c in consts)
    assert full.count(" -> ") == g.nx.number_of_edges()


def test_dot_keeps_large_constants_outputs_and_seeds_as_nodes():
    big = np.arange(5.0)
    g = tg.trace(lambda x: (x[:1] * big, np.float64(3.0)), X)
    dot = g.to_dot()
    big_node = next(n for n in g if g.op(n) == "const" and g.node(n)["shape"] == (5,))
    assert f"  n{big_node} [" in dot                         # 5 values: drawn
    out_const = g.outputs[1]
    assert g.op(out_const) == "const" and f"  n{out_const} [" in dot   # an output: drawn
    grad = tg.trace(tg.grad(lambda x: np.sum(np.sin(x))), X)
    (seed,) = dotmod.find_seeds(grad)
    assert "(seed)" in _node_line(grad.to_dot(), seed)


def test_folded_values_are_written_as_numbers():
    assert dotmod.short_value(np.float64(2.0)) == "2.0"
    assert dotmod.short_value(np.float32(0.1)) == "0.1"
    assert dotmod.short_value(np.int64(-3)) == "-3"
    assert dotmod.short_value(np.array([1.0, 2.0])) == "[1.0, 2.0]"
    assert dotmod.short_value(np.array([[1, 2], [3, 4]])) == "[[1, 2], [3, 4]]"
    assert dotmod.short_value(np.array(True)) == "True"


def test_every_drawn_node_shows_its_source_line():
    g = _graphs()["grad"]
    layout, labels, _ = drawmod.graph_layout(g)
    assert labels and all(g.node(n)["src"] in text for n, text in labels.items())
    assert all(re.search(r"test_ir_pictures.py:\d+", t) for t in labels.values())
    dot = g.to_dot()
    assert all(g.node(n)["src"] in _node_line(dot, n) for n in labels)


# -- the layout ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["forward", "grad", "adjoint", "hessian", "readme"])
def test_layers_respect_edges(name):
    g = _graphs()[name]
    layout, labels, _ = drawmod.graph_layout(g)
    folded = dotmod.folded_constants(g, dotmod.adjoint_nodes(g))
    drawn = [n for n in g if n not in folded]
    assert set(labels) == set(drawn)
    placed = [v for row in layout.layers for v in row]
    assert len(placed) == len(set(placed)) and set(drawn) <= set(placed)
    assert {(a, n) for n in drawn for a in g.args(n) if a not in folded} == \
        {(a, b) for a, b, _ in layout.edges}
    for a, b, path in layout.edges:
        # every edge goes down, one layer per step through its waypoints
        assert path[0] == a and path[-1] == b
        assert [layout.rank[v] for v in path] == list(range(layout.rank[a], layout.rank[b] + 1))
        ys = [layout.pos[v][1] for v in path]
        assert all(y1 > y2 for y1, y2 in zip(ys, ys[1:]))
    for row in layout.layers:   # boxes in a layer do not overlap
        xs = [layout.pos[v][0] for v in row]
        assert xs == sorted(xs) and len(set(xs)) == len(xs)


def _segments_cross(p1, p2, q1, q2):
    def orient(a, b, c):
        v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        return (v > 1e-12) - (v < -1e-12)
    return (orient(p1, p2, q1) * orient(p1, p2, q2) < 0 and
            orient(q1, q2, p1) * orient(q1, q2, p2) < 0)


def _geometric_crossings(segments):
    """Pairs of drawn segments that cross (segments sharing an end point do not)."""
    count = 0
    for i, (p1, p2) in enumerate(segments):
        for q1, q2 in segments[i + 1:]:
            if {p1, p2} & {q1, q2}:
                continue
            count += _segments_cross(p1, p2, q1, q2)
    return count


def _naive_segments(g):
    """The layout drawn before: rows by topological generation (every constant a node
    in the top row), each row in id order, straight edges."""
    levels = g.levels()
    rows = [sorted(n for n in levels if levels[n] == k) for k in range(max(levels.values()) + 1)]
    pos = {n: ((x - (len(row) - 1) / 2) * 2.2, -y * 1.3)
           for y, row in enumerate(rows) for x, n in enumerate(row)}
    return [(pos[a], pos[n]) for n in g for a in dict.fromkeys(g.args(n))]


def _our_segments(layout):
    return [(layout.pos[p], layout.pos[q]) for _, _, path in layout.edges
            for p, q in zip(path, path[1:])]


@pytest.mark.parametrize("name", ["grad", "adjoint", "hessian"])
def test_fewer_crossings_than_the_naive_layout(name):
    g = _graphs()[name]
    layout, _, _ = drawmod.graph_layout(g)
    ours, naive = _geometric_crossings(_our_segments(layout)), _geometric_crossings(
        _naive_segments(g))
    assert naive > 0 and ours < naive, (ours, naive)


def test_sweeps_reduce_crossings_of_a_known_graph():
    # two chains whose layers start in the crossing order: a0 -> b1, a1 -> b0, ...
    nodes = ["a0", "a1", "b0", "b1", "c0", "c1"]
    edges = [("a0", "b1"), ("a1", "b0"), ("b0", "c1"), ("b1", "c0")]
    assert drawmod.crossings(drawmod.layer(nodes, edges, sweeps=0)) == 2
    assert drawmod.crossings(drawmod.layer(nodes, edges)) == 0
    g = _graphs()["hessian"]
    nodes = [n for n in g]
    edges = [(a, n) for n in g for a in g.args(n)]
    before = drawmod.crossings(drawmod.layer(nodes, edges, sweeps=0))
    after = drawmod.crossings(drawmod.layer(nodes, edges))
    assert after < before


def test_constants_and_seeds_sit_above_their_first_user():
    g = tg.passes.adjoint(tg.trace(lambda x: np.sum(np.exp(np.sin(np.cos(x))) @ A), X[:1].repeat(3)))
    layout, _, adjoint = drawmod.graph_layout(g)
    seed = g.inputs[1]
    big = next(n for n in g if g.op(n) == "const")
    for n in (seed, big):
        users = g.users(n)
        assert layout.rank[n] == min(layout.rank[u] for u in users) - 1
    assert layout.rank[g.inputs[0]] == 0


# -- colours ------------------------------------------------------------------------------------
def _fill(dot, n):
    return re.findall(r'fillcolor="([^"]+)"', _node_line(dot, n))[-1]


def test_adjoint_pass_marks_its_part_and_drawings_colour_it():
    fwd = tg.trace(mlp, X[:1].repeat(3), A)
    adj = tg.passes.adjoint(fwd)
    marked = {n for n in adj if adj.node(n).get("adjoint")}
    # the marking agrees with matching nodes against the forward graph (which leaves the
    # constants the rules made uncoloured)
    by_forward = dotmod.adjoint_nodes(adj, forward=fwd)
    assert {n for n in marked if adj.op(n) != "const"} == \
        {n for n in by_forward if adj.op(n) != "const"}
    assert adj.inputs[2] in marked and not ({adj.inputs[0], adj.inputs[1]} & marked)
    assert adj.outputs[0] not in marked and set(adj.outputs[1:]) <= marked
    dot = adj.to_dot()          # no forward= needed
    fills = {n: _fill(dot, n) for n in adj if f"  n{n} [" in dot}
    assert {fills[n] for n in marked if n in fills} == {dotmod.ADJOINT_FILL}
    assert {fills[n] for n in fills if n not in marked and adj.op(n) not in ("input", "const")} \
        == {dotmod.FORWARD_FILL}
    _, _, adjoint = drawmod.graph_layout(adj)
    assert adjoint == dotmod.marked_adjoint(adj)
    fill = {drawmod.fill_of(adj, n, adjoint) for n in adj if n in adjoint}
    assert fill == {dotmod.ADJOINT_FILL}
    tanh = next(n for n in adj if adj.op(n) == "tanh")
    assert drawmod.fill_of(adj, tanh, adjoint) == dotmod.FORWARD_FILL


def test_optimize_keeps_the_adjoint_part_coloured():
    g = tg.trace(tg.grad(loss, argnums=(0, 1)), 1.0, 0.0)
    o = tg.passes.optimize(g)
    part = dotmod.adjoint_nodes(o)
    assert set(o.outputs) <= part                       # the gradients are adjoint
    assert not {n for n in o if o.op(n) in ("add", "sub")} & part     # the forward is not
    # (the structural rule alone finds no seed left in the optimised graph)
    assert dotmod.find_seeds(o) == []


def test_render_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib")
    graphs = _graphs()
    for name in ("adjoint", "readme"):
        png = graphs[name].render(tmp_path / f"{name}.png", engine="matplotlib")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- names ----------------------------------------------------------------------------------------
def test_inputs_and_gradients_are_named_after_the_arguments():
    g = tg.trace(tg.grad(loss, argnums=(0, 1)), 1.0, 0.0)
    assert [g.node(n)["name"] for n in g.inputs] == ["w", "b"]
    assert [g.node(n)["name"] for n in g.outputs] == ["dw", "db"]
    o = tg.passes.optimize(g)       # the passes keep the names
    assert [o.node(n)["name"] for n in o.inputs] == ["w", "b"]
    assert [o.node(n)["name"] for n in o.outputs] == ["dw", "db"]
    dot = o.to_dot()
    assert '"%0 w (input 0)' in dot and '"%1 b (input 1)' in dot
    assert "(output 0: dw)" in dot and "(output 1: db)" in dot
    assert re.search(r"mul\(w, \[1.0, 2.0\]\)", dot)
    _, labels, _ = drawmod.graph_layout(o)
    assert "(output 0: dw)" in labels[o.outputs[0]] and "w (input 0)" in labels[o.inputs[0]]
    # the adjoint pass names the cotangents of named inputs, and keeps the inputs' names
    a = tg.passes.adjoint(tg.trace(loss, 1.0, 0.0))
    assert [a.node(n).get("name") for n in a.inputs] == ["w", "b", None]
    assert [a.node(n).get("name") for n in a.outputs] == [None, "dw", "db"]
    # pytree arguments: one name per leaf; the dump and the JSON form are unchanged
    t = tg.trace(lambda params, x: np.sum(params[0] * x + params[1]), (np.ones(2), 1.0), X)
    assert [t.node(n)["name"] for n in t.inputs] == ["params[0]", "params[1]", "x"]
    assert "params" not in str(t)
    assert str(tg.Graph.from_json(t.to_json())) == str(t)


def test_deep_graphs_route_within_a_budget():
    """A node read by every later one of a 200-deep chain: routing every edge would take
    ~20,000 waypoints; the longest edges run straight, and the layout stays a layering."""
    n = 200
    nodes = list(range(n))
    edges = [(i, i + 1) for i in range(n - 1)] + [(0, i) for i in range(2, n)]
    layout = drawmod.layer(nodes, edges)
    waypoints = sum(len(row) for row in layout.layers) - n
    assert 0 < waypoints <= max(drawmod.WAYPOINT_BUDGET, 8 * n)
    straight = [(a, b) for a, b, path in layout.edges
                if len(path) == 2 and layout.rank[b] - layout.rank[a] > 1]
    routed = [(a, b) for a, b, path in layout.edges if len(path) > 2]
    assert straight and routed
    # the short ones were routed first
    assert max(layout.rank[b] - layout.rank[a] for a, b in routed) <= \
        min(layout.rank[b] - layout.rank[a] for a, b in straight)
    for _, _, path in layout.edges:
        ranks = [layout.rank[v] for v in path]
        assert ranks == list(range(ranks[0], ranks[-1] + 1)) or len(path) == 2
        assert ranks[0] < ranks[-1]
    drawmod.place(layout, {v: (1.0, 0.3) for v in nodes})
    assert all(layout.pos[a][1] > layout.pos[b][1] for a, b, _ in layout.edges)
