"""What tracing records: nodes, operands, source lines, dtypes, guards and captured values."""
import inspect

import networkx as nx
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.tracer import Tracer

V = np.array([0.5, -1.0, 2.0])
M = np.arange(6.0).reshape(2, 3) / 7.0


def line_of(fn, offset):
    """``file:line`` of the line ``offset`` lines below ``fn``'s ``def``."""
    return f"test_tracer.py:{inspect.getsourcelines(fn)[1] + offset}"


# -- the graph a trace records ------------------------------------------------------------------
def test_node_attributes_follow_the_ir_contract():
    def f(x, w):
        h = np.tanh(x @ w)
        return np.sum(h * 2.0)

    g = tg.trace(f, M, np.ones((3, 2)))
    assert len(g.inputs) == 2 and len(g.outputs) == 1
    for n, d in g.nx.nodes(data=True):
        assert set(d) >= {"op", "shape", "dtype", "params", "src"}
        assert isinstance(d["op"], str) and isinstance(d["shape"], tuple)
        assert isinstance(d["dtype"], str) and isinstance(d["params"], dict)
        for pos, a in enumerate(g.args(n)):
            assert any(e["pos"] == pos for e in g.nx.get_edge_data(a, n).values())
    assert [g.op(n) for n in g.inputs] == ["input", "input"]
    assert g.node(g.inputs[1])["shape"] == (3, 2) and g.node(g.inputs[1])["dtype"] == "float64"
    ops = g.ops()
    assert ops.count("const") == 1 and {"matmul", "tanh", "mul", "sum"} <= set(ops)
    out = g.node(g.outputs[0])
    assert out["op"] == "sum" and out["shape"] == () and out["params"]["axis"] == (0, 1)
    assert nx.is_directed_acyclic_graph(g.nx)
    assert g(M, np.ones((3, 2))) == f(M, np.ones((3, 2)))


def test_repeated_operand_keeps_both_edges_in_order():
    g = tg.trace(lambda x, y: x * x - y / x, V, V + 1)
    x, y = g.inputs
    sq = next(n for n in g if g.op(n) == "mul")
    assert g.args(sq) == (x, x)
    assert sorted(e["pos"] for e in g.nx.get_edge_data(x, sq).values()) == [0, 1]
    div = next(n for n in g if g.op(n) == "div")
    assert g.args(div) == (y, x)


def test_tracing_records_every_operation_without_merging():
    g = tg.trace(lambda x: np.sin(x) + np.sin(x), V)
    assert g.ops().count("sin") == 2
    g = tg.trace(lambda x: x * 2.0 + x * 2.0, V)
    assert g.ops().count("mul") == 2


def test_every_node_records_the_users_line():
    def helper(a):
        return np.exp(a) * 3.0      # offset 1 from helper's def

    def f(x):
        y = helper(x)               # offset 1 from f's def: helper's nodes keep their line
        m = np.mean(y)              # offset 2: composites (sum, div) all point here
        return m + np.var(x)        # offset 3

    g = tg.trace(f, V)
    by_op = {}
    for d in g.nx.nodes.values():
        by_op.setdefault(d["op"], set()).add(d["src"])
    assert by_op["exp"] == {line_of(helper, 1)}
    assert line_of(f, 2) in by_op["sum"] and line_of(f, 2) in by_op["div"]
    assert line_of(f, 3) in by_op["add"]
    assert all(src and src.startswith("test_tracer.py:") for src in
               (d["src"] for n, d in g.nx.nodes(data=True) if d["op"] != "input"))
    text = str(g)
    assert f"# {line_of(helper, 1)}" in text


def test_derived_graphs_point_at_forward_lines():
    def f(x):
        return np.sum(np.sin(x) ** 2)   # offset 1

    call_line = f"test_tracer.py:{inspect.currentframe().f_lineno + 2}"
    for graph in (tg.trace(tg.grad(f), V), tg.passes.adjoint(tg.trace(f, V)),
                  tg.passes.jvp(tg.trace(f, V)), tg.trace(tg.hessian(f), V)):
        srcs = {d["src"] for n, d in graph.nx.nodes(data=True) if d["op"] != "input"}
        # the Jacobian's rows are stacked by tg.hessian itself, at the line that calls it
        stacking = {d["op"] for n, d in graph.nx.nodes(data=True)
                    if d["src"] == call_line and d["op"] != "input"}
        assert stacking <= {"reshape", "concatenate"}, str(graph)
        assert srcs - {call_line} == {line_of(f, 1)}, str(graph)


def test_pytree_leaves_become_inputs_and_outputs_in_order():
    def f(p, xs):
        return {"z": p["b"] * xs[0], "a": (p["a"] + xs[1],)}

    g = tg.trace(f, {"b": V, "a": 1.5}, [V, np.float32(2)])
    shapes = [(g.node(n)["shape"], g.node(n)["dtype"]) for n in g.inputs]
    # dict keys sorted, as in JAX: a, b, then the list
    assert shapes == [((), "float64"), ((3,), "float64"), ((3,), "float64"), ((), "float32")]
    outs = g(1.5, V, V, np.float32(2))
    assert len(outs) == 2
    np.testing.assert_allclose(outs[0], 1.5 + 2.0)          # "a" comes first
    np.testing.assert_allclose(outs[1], V * V)


# -- values while tracing --------------------------------------------------------------------------
def test_tracers_carry_concrete_values_and_array_attributes():
    seen = {}

    def f(x):
        seen["type"] = type(x)
        seen["attrs"] = (x.shape, x.ndim, x.size, x.dtype, len(x))
        seen["rows"] = [type(r) for r in x]
        seen["cmp"] = (x > 0).dtype
        return np.sum(x)

    tg.grad(f)(M)
    assert seen["type"] is Tracer
    assert seen["attrs"] == ((2, 3), 2, 6, np.dtype(np.float64), 2)
    assert seen["rows"] == [Tracer, Tracer]
    assert seen["cmp"] == np.bool_


def test_result_dtypes_follow_numpy():
    cases = [
        lambda x: x / 2, lambda x: x // 2, np.sin, lambda x: x.astype(np.float32) * 2.0,
        lambda x: x.astype(np.float32) * np.ones(3), lambda x: x * 2.5, np.mean,
        lambda x: np.sum(x > 0), lambda x: x.astype(np.float32) ** 2, lambda x: x ** 2,
        lambda x: np.var(x.astype(np.float32)), lambda x: np.where(x > 0, x.astype(np.float32), 0),
        lambda x: np.clip(x.astype(np.float32), 0, 1.5), lambda x: np.cumsum(x > 0), np.std,
        lambda x: np.linalg.norm(x.astype(np.float32)), lambda x: (x > 0) & (x < 2),
        lambda x: np.any(x > 1), lambda x: np.all(x > -1, axis=0),
    ]
    x = np.arange(3)
    for fn in cases:
        got, want = tg.trace(fn, x)(x), fn(x)
        assert np.asarray(got).dtype == np.asarray(want).dtype, inspect.getsource(fn)
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_arrays_built_from_traced_values():
    def f(a):
        rows = [[a[0], 1.0], [a[1] * a[2], a[0] ** 2]]
        m = np.array(rows)                  # NumPy builds an object array of tracers
        v = np.asarray((a[2], a[1]))
        return np.sum(m @ v)

    # sum(m @ v) = a0 a2 + a1 + a1 a2^2 + a0^2 a1
    a0, a1, a2 = V
    expected = [a2 + 2 * a0 * a1, 1 + a2 ** 2 + a0 ** 2, a0 + 2 * a1 * a2]
    np.testing.assert_allclose(tg.grad(f)(V), expected, rtol=1e-12)


def test_np_asarray_of_a_tracer_keeps_its_shape_and_costs_no_nodes():
    seen = {}

    def f(x):
        a = np.asarray(x)                     # NumPy's object array, shaped like x
        seen["shape"] = a.shape
        seen["row"] = np.asarray(x)[1].shape
        return np.sum(np.tanh(a) * 2.0) + a.sum() + np.sum(a[0] * a[1])

    g = tg.grad(f)(M)
    assert seen == {"shape": (2, 3), "row": (3,)}
    expected = 2 * (1 - np.tanh(M) ** 2) + 1 + M[::-1]
    np.testing.assert_allclose(g, expected, rtol=1e-12)
    # where tracegrad sees it again (a traced operand, the result), np.asarray(t) is t:
    # no extra node. (NumPy computes np.tanh(np.asarray(t)) itself, element by element.)
    assert tg.trace(lambda x: x * np.asarray(x), M).ops() == ["input", "mul"]
    assert tg.trace(lambda x: np.asarray(x), M).ops() == ["input"]
    # np.array of whole traced arrays is one concatenate, however many elements
    ops = tg.trace(lambda a, b: np.array([a, b, a]), V, V).ops()
    assert ops.count("concatenate") == 1 and len(ops) <= 6


def test_indexed_assignment_is_a_functional_update():
    seen = {}

    def f(x):
        z = x * 1.0
        before = z
        node_before = z._node
        z[1] = 7.0
        seen["renamed"] = z._node != node_before and before is z
        x[0] = 0.0                      # assigning into the input tracer
        return np.sum(z * x)

    x = V.copy()
    g = tg.grad(f)(x)
    np.testing.assert_array_equal(x, V)             # the caller's array is untouched
    assert seen["renamed"]
    np.testing.assert_allclose(g, [0.0, 7.0, 2 * V[2]])
    ops = tg.trace(f, V).ops()
    assert ops.count("index_update") == 2


# -- NumPy views: writes through them and to their base ------------------------------------------
def _chained(x):
    z = np.zeros_like(x)
    z[0][1] = x[1, 1] * 3.0          # z[0] is a view: this writes into z
    z[1:][0][::2] = x[0, :2] ** 2    # views of views
    return z


def _view_sees_base(x):
    z = x * 1.0
    row = z[0]
    z[0, 2] = x[1, 0] * 5.0          # row shows this, as in NumPy
    return row * 2.0


def _through_transpose(x):
    z = np.zeros_like(x)
    z.T[1] = x[:, 0]                 # .T is a view: column 1 of z
    np.swapaxes(z, 0, 1)[2] = x[:, 1] * 2.0
    return z


def _rows_in_a_loop(x):
    z = x * 1.0
    for row in z:                    # iteration yields views
        row[0] = np.sum(row ** 2)
    return z


def _copies_are_not_views(x):
    z = x * 1.0
    c = z.copy()
    fancy = z[[0]]                   # fancy indexing copies
    fancy[0, 0] = 100.0
    z[0] = 0.0
    return c + z * 2.0


def _reshapes(x):
    z = x * 1.0
    z.reshape(3, 2)[0] = x[1, :2]            # a view: writes into z
    z.ravel()[4] = x[0, 0] * 2.0             # a view too
    np.squeeze(z[None])[1, 1] += 1.0
    np.expand_dims(z, 0)[0, 0, 2] = 3.0
    z.flatten()[0] = 100.0                   # flatten always copies
    return z


def _reshapes_that_copy(x):
    z = x * 1.0
    z.T.ravel()[1] = 100.0                   # not contiguous: NumPy copies, z stays
    z[:, ::2].reshape(-1)[0] = 100.0
    np.reshape(z, 6, copy=True)[0] = 100.0
    flat = z.reshape(-1)
    z[0, 1] = x[1, 2] * 4.0                  # ...but this view of z sees the write
    return z + flat.reshape(2, 3)


def _in_place_operators(x):
    z = x * 1.0
    alias = z
    row = z[0]
    row += x[1]                              # changes z, as NumPy's += does
    alias *= 2.0                             # alias is z
    later = z[1]
    z -= 0.5                                 # later sees it
    return z + later


@pytest.mark.parametrize("fn", [_chained, _view_sees_base, _through_transpose, _rows_in_a_loop,
                                _copies_are_not_views, _reshapes, _reshapes_that_copy,
                                _in_place_operators],
                         ids=lambda f: f.__name__[1:])
def test_views_share_writes_as_in_numpy(fn):
    np.testing.assert_array_equal(tg.trace(fn, M)(M), fn(M))
    jac = tg.jacobian(fn)(M)
    eps = 1e-6                                      # the function is piecewise polynomial
    for i in np.ndindex(M.shape):
        d = np.zeros_like(M)
        d[i] = eps
        np.testing.assert_allclose(jac[(...,) + i], (fn(M + d) - fn(M - d)) / (2 * eps),
                                   atol=1e-8)


def test_in_place_operator_keeps_the_dtype():
    def f(x):
        z32 = x.astype(np.float32)
        z32 += np.ones(3)                    # float64 added in place: still float32
        return z32
    out = tg.trace(f, M)(M)
    assert out.dtype == f(M).dtype == np.float32
    np.testing.assert_array_equal(out, f(M))


# -- guards ---------------------------------------------------------------------------------------
def test_guards_for_branches_indices_and_masks():
    def f(x):
        total = np.sum(x)
        if total > 0:                        # bool()
            total = total * 2.0
        k = np.argmax(x)                     # a traced integer used as a Python int
        picked = np.sum(x[:k + 1])
        positives = x[x > 0]                 # a boolean mask
        return total + picked + np.sum(positives)

    g = tg.trace(f, V)
    kinds = [(g.node(n)["op"], np.asarray(v).dtype.kind) for n, v in g.guards]
    assert ("greater", "b") in kinds
    assert ("add", "i") in kinds            # the guard is on k + 1
    assert sum(op == "greater" for op, _ in kinds) == 2
    np.testing.assert_allclose(g(V * 2), f(V * 2))
    with pytest.raises(tg.TraceError, match="different branch"):
        g(-V)


def test_integer_values_can_be_read_with_a_guard():
    def f(x):
        k = int(np.argmax(x))                        # no gradient is lost: a guard instead
        count = float(np.sum(x > 0))
        idx = np.argmin(x[None], axis=1).tolist() + [np.argmin(x).item()]
        return x[k] * count + x[idx[0]]

    g = tg.grad(f)(V)
    np.testing.assert_allclose(g, [0.0, 1.0, 2.0])   # argmax 2, two positives, argmin 1
    graph = tg.trace(f, V)
    assert all(np.asarray(v).dtype.kind in "ib" for _, v in graph.guards)
    np.testing.assert_allclose(graph(V * 3.0), f(V * 3.0))
    with pytest.raises(tg.TraceError, match="different branch"):
        graph(-V)


# -- values captured from an enclosing transform ------------------------------------------------
def test_closure_captures_outer_value_as_extra_input():
    def outer(a):
        inner = lambda x: np.sum(np.sin(a * x))
        return tg.grad(inner)(V)[0]

    # d/da of cos(a * v0) * a = cos(a v0) - a v0 sin(a v0)
    a = 0.7
    got = tg.grad(outer)(a)
    np.testing.assert_allclose(got, np.cos(a * V[0]) - a * V[0] * np.sin(a * V[0]), rtol=1e-12)
    # a graph cannot hold an outer trace's value: tg.trace says so instead of baking it in
    with pytest.raises(tg.TraceError, match="closes over"):
        tg.grad(lambda b: np.sum(tg.trace(lambda x: x * b, V)(V)))(1.0)


def test_plain_arrays_changed_in_place_keep_the_value_each_use_saw():
    w = np.array([1.0, 2.0, 3.0])

    def f(x):
        y = x * w                    # uses w = [1, 2, 3]
        w[0] = 10.0                  # the user's NumPy array changes in place...
        return np.sum(y * w)         # ...and this use sees [10, 2, 3]

    w_before = w.copy()
    g = tg.grad(f)(V)
    np.testing.assert_array_equal(g, w_before * np.array([10.0, 2.0, 3.0]))
    w[:] = w_before
    graph = tg.trace(f, V)
    w[:] = -1.0                      # later changes do not reach the recorded graph
    np.testing.assert_allclose(graph(V), np.sum(V * w_before * np.array([10.0, 2.0, 3.0])))


def test_outer_array_changed_in_place_inside_an_inner_transform():
    def outer(a):
        def inner(x):
            first = np.sum(x * a)
            a_alias = a
            a_alias += 1.0           # NumPy semantics: a itself changes from here on
            return first + np.sum(x * a)
        return np.sum(tg.grad(inner)(np.ones(2)))

    a = np.array([1.0, 2.0])
    assert outer(a.copy()) == 8.0                  # sum(a) + sum(a + 1)
    np.testing.assert_array_equal(tg.grad(outer)(a), [2.0, 2.0])


def test_python_scalars_are_weakly_typed():
    x32 = V.astype(np.float32)
    g = tg.trace(lambda x: x * 2.0 + 1 - x / 3.0, x32)
    assert {g.node(n)["dtype"] for n in g} == {"float32"}
    assert tg.grad(lambda x: np.sum(x * 2.0))(x32).dtype == np.float32


# -- conversions the error messages recommend, and writes into plain arrays -------------
def test_float_of_a_stop_gradient_value_is_allowed_and_guarded():
    def f(x):
        scale = float(tg.stop_gradient(np.max(x)))       # the message's own advice
        return np.sum(x) / scale

    x = np.array([1.0, 3.0, 2.0])
    np.testing.assert_allclose(tg.grad(f)(x), np.full(3, 1 / 3), rtol=1e-15)
    jf = tg.jit(f)
    np.testing.assert_allclose(jf(x), f(x), rtol=1e-15)
    np.testing.assert_allclose(jf(2 * x), f(2 * x), rtol=1e-15)   # the guard retraces

    def g(x):       # a path around the stop_gradient still carries a gradient
        return float(tg.stop_gradient(x[0]) + x[1])

    with pytest.raises(tg.TraceError, match=r"float\(\).*lose its gradient.*test_tracer.py:"):
        tg.grad(g)(x)


def test_writing_a_traced_value_into_a_plain_array_names_the_line():
    # an array the function did not make (a closure's, an argument's) stays the caller's;
    # one it makes (np.zeros inside it) takes traced values (test_fresh_arrays.py)
    outside = np.zeros(3)

    def f(x):
        z = outside
        z[0] = x[0]
        return np.sum(z)

    def g(x, z=outside):
        z[1:] = x[1:]
        return np.sum(z)

    for fn, line in ((f, "z[0] = x[0]"), (g, "z[1:] = x[1:]")):
        with pytest.raises(tg.TraceError, match=r"plain NumPy array.*test_tracer.py:(\d+)") as e:
            tg.grad(fn)(np.ones(3))
        lineno = int(str(e.value).rsplit(":", 1)[1].strip(" )"))
        assert line in inspect.getsource(fn).splitlines()[lineno - fn.__code__.co_firstlineno]


def test_custom_vjp_whose_fwd_calls_the_function_matches_jax():
    jax = pytest.importorskip("jax")

    @tg.custom_vjp
    def f(x, y):
        return np.sin(x) * y

    def f_fwd(x, y):
        return f(x, y), (np.cos(x), np.sin(x), y)       # JAX's documented pattern

    def f_bwd(res, g):
        cos_x, sin_x, y = res
        return (cos_x * g * y, sin_x * g)

    f.defvjp(f_fwd, f_bwd)

    @jax.custom_vjp
    def jf(x, y):
        return jax.numpy.sin(x) * y

    jf.defvjp(lambda x, y: (jf(x, y), (jax.numpy.cos(x), jax.numpy.sin(x), y)), f_bwd)
    x, y = np.array([0.3, 1.1]), np.array([2.0, -1.0])
    with jax.enable_x64(True):
        want = [np.asarray(g) for g in jax.grad(lambda x, y: jax.numpy.sum(jf(x, y)),
                                                argnums=(0, 1))(x, y)]
    got = tg.grad(lambda x, y: np.sum(f(x, y)), argnums=(0, 1))(x, y)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-14)
    np.testing.assert_allclose(tg.jit(lambda x, y: f(x, y))(x, y), np.sin(x) * y, rtol=1e-15)


def test_a_graph_runs_on_the_inputs_it_was_traced_on_when_a_branch_reads_a_float():
    # bool(2.5) decided the branch: the interpreter's guard is bool(value), as the
    # generated code's is, not an exact comparison of 2.5 with True
    def f(x):
        return x * 2.0 if np.sum(x) else x

    x = np.array([1.0, 1.5])
    graph = tg.trace(f, x)
    np.testing.assert_array_equal(graph(x), f(x))
    np.testing.assert_array_equal(graph(np.array([4.0, 0.5])), f(np.array([4.0, 0.5])))
    with pytest.raises(tg.TraceError, match="different branch"):
        graph(np.array([1.0, -1.0]))


def test_a_dump_escapes_a_line_break_in_a_source_location():
    graph = tg.trace(lambda x: x + 1.0, np.ones(2))
    n = graph.outputs[0]
    graph.nx.nodes[n]["src"] = "evil.py:1\nimport os"
    text = str(graph)
    assert "\nimport os" not in text and "evil.py:1\\nimport os" in text
