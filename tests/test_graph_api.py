"""The Graph API: typed nodes in evaluation order, users, fresh ids, the networkx view,
and that networkx and the graph's private storage stay inside their modules."""
import ast
import functools
import pickle
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ir import Graph
from tracegrad.ir.graph import Node

ROOT = Path(tg.__file__).resolve().parent
# the modules allowed to import networkx, and to touch a graph's private storage
NX_MODULES = {"ir/nxview.py"}
PRIVATE_MODULES = {"ir/graph.py", "ir/nxview.py"}


def _loss(w, x, y):
    return np.sum((w * x - y) ** 2) + np.sum(x * x)


def _example():
    x, y = np.array([1.0, 2.0]), np.array([5.0, 7.0])
    return tg.trace(_loss, 1.0, x, y)


def _small():
    g = Graph()
    x = g.add_input((2,), np.float64, src="a.py:1")
    c = g.add_const(np.array([1.0, 2.0]))
    m = g.add_node("mul", (x, x), shape=(2,), dtype="float64", src="a.py:2")
    s = g.add_node("add", (m, c), shape=[2], dtype=np.dtype("float64"))
    g.outputs = [s]
    return g, (x, c, m, s)


def _reference(graph):
    """What the public networkx calls build from the graph's nodes."""
    ref = nx.MultiDiGraph()
    for n, d in graph.items():
        ref.add_node(n, **dict(d))
        for pos, a in enumerate(d.args):
            ref.add_edge(a, n, key=pos, pos=pos)
    ref.graph.update(outputs=graph.outputs, guards=graph.guards)
    return ref


def _assert_same_as_reference(graph):
    ref = _reference(graph)
    view = graph.nx
    assert isinstance(view, nx.MultiDiGraph)
    assert list(view) == list(graph) == list(ref)
    assert list(ref.nodes(data=True)) == list(view.nodes(data=True))
    assert [dict(d) for _, d in view.nodes(data=True)] == [dict(d) for _, d in ref.nodes(data=True)]
    assert sorted(ref.edges(keys=True, data=True)) == sorted(view.edges(keys=True, data=True))
    assert [list(view.successors(n)) for n in view] == [list(ref.successors(n)) for n in ref]
    assert [list(view.predecessors(n)) for n in view] == [list(ref.predecessors(n)) for n in ref]
    assert nx.utils.graphs_equal(ref, view)
    assert nx.is_directed_acyclic_graph(view)


# -- nodes -----------------------------------------------------------------------------
def test_nodes_are_typed_and_read_like_the_dict_they_replace():
    g, (x, c, m, s) = _small()
    node = g.node(m)
    assert isinstance(node, Node)
    assert (node.id, node.op, node.args, node.shape, node.dtype, node.params, node.src) == (
        m, "mul", (x, x), (2,), "float64", {}, "a.py:2")
    assert node["op"] == "mul" and node["args"] == (x, x) and node.get("src") == "a.py:2"
    assert node.get("missing") is None and node.get("missing", 3) == 3
    assert "op" in node and "params" in node and "id" not in node and "missing" not in node
    assert list(node) == ["op", "args", "shape", "dtype", "params", "src"]
    assert dict(node) == {"op": "mul", "args": (x, x), "shape": (2,), "dtype": "float64",
                          "params": {}, "src": "a.py:2"}
    assert dict(node.items()) == dict(node) and list(node.keys()) == list(node)
    assert len(node) == 6
    assert node == dict(node) and dict(node) == node
    assert node != {**dict(node), "src": "b.py:1"}
    assert repr(node) == repr(dict(node))
    with pytest.raises(KeyError):
        node["missing"]
    # shape and dtype are normalised by add_node
    assert g.node(s).shape == (2,) and g.node(s).dtype == "float64"
    assert g.node(c).params["value"].tolist() == [1.0, 2.0]
    assert g.node(x).params == {"index": 0}


def test_nodes_can_be_edited_through_the_mapping():
    g, (x, c, m, s) = _small()
    node = g.node(s)
    node["src"] = "b.py:9"
    assert g.node(s).src == "b.py:9" and "# b.py:9" in g.dump()
    node["params"] = {"k": 1}
    assert g.node(s).params == {"k": 1}
    node["colour"] = "red"            # a key of the user's own, as networkx allows
    assert node["colour"] == "red" and "colour" in node and len(node) == 7
    assert dict(node)["colour"] == "red" and list(node)[-1] == "colour"
    copy = node.copy()
    assert copy == node and copy is not node and copy.id == s
    del node["colour"]
    assert "colour" not in node and copy["colour"] == "red"
    with pytest.raises(TypeError):
        del node["op"]
    with pytest.raises(KeyError):
        del node["colour"]


def test_nodes_pickle():
    g, (x, c, m, s) = _small()
    g.node(m)["colour"] = "red"
    back = pickle.loads(pickle.dumps(g))
    assert [(d.id, d.op, d.args, d.shape, d.dtype, d.src) for d in back.nodes()] == [
        (d.id, d.op, d.args, d.shape, d.dtype, d.src) for d in g.nodes()]
    assert back.node(c).params["value"].tolist() == [1.0, 2.0]
    assert (back.inputs, back.outputs, back.next_id) == (g.inputs, g.outputs, g.next_id)
    assert back.node(m)["colour"] == "red" and back.node(m).id == m
    assert str(back) == str(g)
    _assert_same_as_reference(back)


# -- iteration, users, ids -------------------------------------------------------------
def test_iteration_is_evaluation_order():
    g, ids = _small()
    assert list(g) == list(ids)
    assert [d.id for d in g.nodes()] == list(ids)
    assert [n for n, _ in g.items()] == list(ids)
    assert all(d is g.node(n) for n, d in g.items())
    assert list(g.by_id) == list(ids) and g.by_id[ids[2]] is g.node(ids[2])
    with pytest.raises(TypeError):
        g.by_id[99] = None                      # a read-only view
    assert g.ops() == ["input", "const", "mul", "add"]
    assert [g.op(n) for n in g] == g.ops()
    assert g.args(ids[2]) == (ids[0], ids[0])
    assert len(g) == 4 and ids[3] in g and 99 not in g
    assert (g.inputs, g.outputs, g.guards) == ([ids[0]], [ids[3]], [])
    assert g.levels() == {ids[0]: 0, ids[1]: 0, ids[2]: 1, ids[3]: 2}


def test_put_keeps_ids_and_order_of_insertion_is_evaluation_order():
    g, (x, c, m, s) = _small()
    out = Graph()
    out.put(10, g.node(x))
    out.put(3, {"op": "neg", "args": (10,), "shape": (2,), "dtype": "float64",
                "params": {}, "src": None})
    out.put(7, g.node(m), args=[3, 10])
    assert list(out) == [10, 3, 7]
    assert out.node(7).args == (3, 10) and g.node(m).args == (x, x)  # the source is untouched
    assert out.node(7).op == "mul" and out.node(7).params is g.node(m).params
    assert out.next_id == 11
    with pytest.raises(ValueError, match="already in the graph"):
        out.put(3, g.node(x))
    with pytest.raises(ValueError, match="not in the graph"):
        out.put(12, g.node(m), args=[99])
    assert 12 not in out


def test_users_are_sorted_and_follow_changes():
    g, (x, c, m, s) = _small()
    assert g.users(x) == [m] and g.users(m) == [s] and g.users(s) == []
    assert g.users(c) == [s]
    t = g.add_node("sub", (s, x), shape=(2,), dtype="float64")
    assert g.users(x) == [m, t] and g.users(s) == [t]
    u = g.new_id()
    g.put(u, g.node(m), args=[c, c])
    assert g.users(c) == [s, u]
    g.remove(t)
    assert g.users(x) == [m] and g.users(s) == []
    with pytest.raises(KeyError):
        g.users(t)


def test_fresh_ids_never_collide():
    g, (x, c, m, s) = _small()
    assert g.next_id == 4
    assert g.new_id() == 4 and g.new_id() == 5 and g.next_id == 6
    assert g.add_node("neg", (s,), shape=(2,), dtype="float64") == 6
    g.reserve_ids(20)
    assert g.next_id == 20
    g.reserve_ids(3)                      # never goes back
    assert g.next_id == 20
    g.put(30, g.node(m))
    assert g.next_id == 31 and g.add_input((), "float64") == 31
    sub = g.subgraph([s], keep={x, c, m, s})
    assert list(sub) == [x, c, m, s] and sub.next_id == g.next_id
    assert sub.new_id() == 32


def test_subgraph_copies_nodes():
    g, (x, c, m, s) = _small()
    sub = g.subgraph([m], keep={x, m})
    assert list(sub) == [x, m] and sub.outputs == [m]
    assert sub.node(m) == g.node(m) and sub.node(m) is not g.node(m)
    sub.node(m)["src"] = "c.py:1"
    assert g.node(m).src == "a.py:2"
    with pytest.raises(ValueError, match="not in the graph"):
        g.subgraph([s], keep={s})


def test_adding_a_node_checks_its_operands():
    g = Graph()
    with pytest.raises(ValueError, match="operand %7 of node %0 is not in the graph"):
        g.add_node("neg", (7,), shape=(), dtype="float64")
    assert len(g) == 0 and g.next_id == 0


# -- the networkx view -----------------------------------------------------------------
def test_nx_view_is_what_public_networkx_calls_build():
    g = _example()
    _assert_same_as_reference(g)
    squares = [n for n in g if g.op(n) == "mul" and len(set(g.args(n))) == 1]
    assert squares and g.nx.get_edge_data(g.args(squares[0])[0], squares[0]) == {
        0: {"pos": 0}, 1: {"pos": 1}}


def test_nx_view_is_built_lazily_and_follows_insertions_and_removals():
    g, (x, c, m, s) = _small()
    first = g.nx
    assert g.nx is first                        # unchanged graph: the same view
    t = g.add_node("sub", (s, x), shape=(2,), dtype="float64")
    _assert_same_as_reference(g)
    assert t in g.nx and g.nx.edges[x, t, 1] == {"pos": 1}
    u = g.new_id() + 5
    g.put(u, g.node(m), args=[t, c])
    _assert_same_as_reference(g)
    assert list(g.nx) == [x, c, m, s, t, u]
    g.remove(u)
    _assert_same_as_reference(g)
    assert u not in g.nx and list(g.nx.successors(t)) == []


def test_nx_view_of_a_graph_with_a_freed_operand_has_no_edge_to_it():
    g, (x, c, m, s) = _small()
    g.remove(m)                 # the eager tape frees nodes whose tensors died
    assert g.node(s).args == (m, c)
    view = g.nx
    assert list(view) == [x, c, s]
    assert sorted(view.edges(keys=True, data=True)) == [(c, s, 1, {"pos": 1})]


def test_nx_view_shares_the_nodes():
    g, (x, c, m, s) = _small()
    assert g.nx.nodes[m] is g.node(m)
    g.nx.nodes[m]["src"] = "z.py:3"
    assert g.node(m).src == "z.py:3"
    nx.set_node_attributes(g.nx, {n: k for k, n in enumerate(g)}, "rank")
    assert [g.node(n)["rank"] for n in g] == [0, 1, 2, 3]
    assert nx.utils.graphs_equal(g.nx.copy(), g.nx)


def test_nx_view_of_traced_and_derived_graphs():
    g = _example()
    d = tg.passes.adjoint(g)
    for graph in (g, d, tg.passes.prune(d, d.outputs[:1]), tg.passes.simplify(d)):
        _assert_same_as_reference(graph)
        assert len(graph.nx) == len(graph)
        assert graph.nx.number_of_edges() == sum(len(n.args) for n in graph.nodes())


def test_levels_are_networkx_topological_generations():
    d = tg.passes.adjoint(_example())
    levels = d.levels()
    gens = [sorted(gen) for gen in nx.topological_generations(d.nx)]
    assert [sorted(n for n in levels if levels[n] == k) for k in range(len(gens))] == gens
    assert max(levels.values()) == nx.dag_longest_path_length(d.nx) == d.summary().depth


# -- who may touch what ----------------------------------------------------------------
@functools.cache
def _modules():
    """Every module of the package, parsed (once: three tests walk them)."""
    return sorted((p.relative_to(ROOT).as_posix(), ast.parse(p.read_text(), str(p)))
                  for p in ROOT.rglob("*.py"))


def test_networkx_is_imported_in_one_module_only():
    importers = set()
    for name, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mods = [node.module or ""]
            else:
                continue
            if any(m == "networkx" or m.startswith("networkx.") for m in mods):
                importers.add(name)
    assert importers == NX_MODULES


def test_graph_storage_is_private_to_the_ir_graph_module():
    # (a Tracer's own ``_node``, its node id, is not the networkx graph's ``_node``)
    private = {"_succ", "_pred", "_adj", "_next_id", "_nodes", "_removed",
               "_nx", "_nx_state", "_users", "_users_state", "_insert"}
    touched = []
    for name, tree in _modules():
        if name in PRIVATE_MODULES:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and (
                    node.attr in private or node.attr == "_node" and
                    isinstance(node.value, ast.Attribute) and node.value.attr == "nx"):
                touched.append(f"{name}:{node.lineno} .{node.attr}")
    assert touched == []


def test_the_storage_check_would_catch_a_reach_through():
    tree = ast.parse("nodes = TAPE.graph.nx._node\nfirst = trace.graph._next_id\nt._node")
    found = [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and (
        n.attr == "_next_id" or n.attr == "_node" and isinstance(n.value, ast.Attribute)
        and n.value.attr == "nx")]
    assert found == ["_node", "_next_id"]


def test_no_module_reaches_through_graph_nx():
    users = sorted({name for name, tree in _modules() for node in ast.walk(tree)
                    if isinstance(node, ast.Attribute) and node.attr == "nx"})
    assert users == []
