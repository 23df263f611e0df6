"""tg.cond, tg.fori_loop, tg.while_loop, tg.scan: values and derivatives against unrolled
Python and finite differences, graphs that do not grow with the trip count, and the
errors (reverse mode through while_loop, bodies that change a carry's dtype, ...)."""
import itertools
import json

import numpy as np
import pytest

import tracegrad as tg

from oracles import finite_diff_grad


def step(i, x):
    return np.sin(x) * 1.1 + 0.01 * i


def looped(x, n=7):
    return np.sum(tg.fori_loop(0, n, step, x) ** 2)


def unrolled(x, n=7):
    for i in range(n):
        x = step(i, x)
    return np.sum(x ** 2)


X = np.array([0.3, -0.7, 1.2])


def test_fori_loop_matches_unrolled_in_every_mode():
    np.testing.assert_allclose(looped(X), unrolled(X), rtol=1e-14)
    np.testing.assert_allclose(tg.grad(looped)(X), tg.grad(unrolled)(X), rtol=1e-12)
    np.testing.assert_allclose(tg.grad(looped)(X), finite_diff_grad(looped, [X], 0), rtol=1e-6)
    np.testing.assert_allclose(tg.hessian(looped)(X), tg.hessian(unrolled)(X), rtol=1e-10,
                               atol=1e-12)
    t = np.array([1.0, 0.5, -2.0])
    np.testing.assert_allclose(tg.jvp(looped, (X,), (t,))[1], tg.jvp(unrolled, (X,), (t,))[1],
                               rtol=1e-12)
    np.testing.assert_allclose(tg.jit(tg.grad(looped))(X), tg.grad(unrolled)(X), rtol=1e-12)


def _unrolled_grad(x, n):
    """The gradient of ``unrolled(x, n)`` by the chain rule written out: ``step`` is
    elementwise, with derivative 1.1 cos(x)."""
    d = np.ones_like(x)
    for i in range(n):
        d = d * (1.1 * np.cos(x))
        x = step(i, x)
    return 2 * x * d


def test_the_graph_does_not_grow_with_the_trip_count():
    small = tg.trace(tg.grad(lambda x: looped(x, 10)), X)
    large = tg.trace(tg.grad(lambda x: looped(x, 10_000)), X)
    assert len(small) == len(large) < 40
    # the gradient underflows to 0 long before 10,000 steps (tracing the unrolled loop that
    # long took 2 s): the chain rule in NumPy there, and tg.grad of the unrolled loop at
    # 1,000 steps, where the gradient (~1e-232) is not 0 yet
    np.testing.assert_allclose(large(X), _unrolled_grad(X, 10_000), rtol=1e-9)
    mid = tg.grad(lambda x: looped(x, 1_000))(X)
    assert np.all(mid != 0)
    np.testing.assert_allclose(mid, tg.grad(lambda x: unrolled(x, 1_000))(X), rtol=1e-9)
    np.testing.assert_allclose(mid, _unrolled_grad(X, 1_000), rtol=1e-9)


def test_scan_with_pytrees_closures_and_reverse():
    w = np.array([0.5, -0.3])

    def f(w, h0, xs):
        def body(carry, x):
            h, total = carry["h"], carry["total"]
            h = np.tanh(h * w + x["a"] * x["b"])
            return {"h": h, "total": total + np.sum(h)}, (h * 2, np.sum(x["a"]))
        carry, (hs, sums) = tg.scan(body, {"h": h0, "total": 0.0}, xs, reverse=True)
        return carry["total"] + np.sum(hs ** 2) + np.sum(sums)

    def ref(w, h0, xs):
        h, total, hs, sums = h0, 0.0, [], []
        for a, b in zip(xs["a"][::-1], xs["b"][::-1]):
            h = np.tanh(h * w + a * b)
            total = total + np.sum(h)
            hs.append(h * 2)
            sums.append(np.sum(a))
        return total + np.sum(np.stack(hs) ** 2) + np.sum(sums)

    rng = np.random.default_rng(0)
    h0 = rng.standard_normal(2)
    xs = {"a": rng.standard_normal((5, 2)), "b": rng.standard_normal((5, 2))}
    np.testing.assert_allclose(f(w, h0, xs), ref(w, h0, xs), rtol=1e-13)
    got = tg.grad(f, argnums=(0, 1, 2))(w, h0, xs)
    want = tg.grad(ref, argnums=(0, 1, 2))(w, h0, xs)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-11)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-11)
    np.testing.assert_allclose(got[2]["a"], want[2]["a"], rtol=1e-11)
    np.testing.assert_allclose(got[2]["b"], want[2]["b"], rtol=1e-11)


def test_scan_with_length_and_no_xs():
    carry, ys = tg.scan(lambda c, _: (c * 2, c), np.float64(1.0), None, length=4)
    assert carry == 16.0
    np.testing.assert_array_equal(ys, [1.0, 2.0, 4.0, 8.0])


def test_cond_takes_one_branch_and_differentiates_through_it_and_its_closure():
    s = 3.0

    def f(x, s):
        return np.sum(tg.cond(np.sum(x) > 0, lambda a: np.sin(a) * s, lambda a: a ** 3 * s, x))

    for x in (X, -X):
        ref = (lambda x, s: np.sum(np.sin(x) * s)) if np.sum(x) > 0 else \
            (lambda x, s: np.sum(x ** 3 * s))
        np.testing.assert_allclose(f(x, s), ref(x, s), rtol=1e-14)
        np.testing.assert_allclose(tg.grad(f)(x, s), tg.grad(ref)(x, s), rtol=1e-12)
        np.testing.assert_allclose(tg.grad(f, argnums=1)(x, s), tg.grad(ref, argnums=1)(x, s),
                                   rtol=1e-12)
        np.testing.assert_allclose(tg.hessian(f)(x, s), tg.hessian(ref)(x, s), rtol=1e-10,
                                   atol=1e-12)


def test_while_loop_values_and_both_modes():
    def f(x):
        return tg.while_loop(lambda c: c[1] < 4, lambda c: (np.sin(c[0]) + c[0], c[1] + 1),
                             (x, 0))[0]

    def ref(x):
        for _ in range(4):
            x = np.sin(x) + x
        return x

    np.testing.assert_allclose(f(X), ref(X), rtol=1e-14)
    t = np.ones(3)
    np.testing.assert_allclose(tg.jvp(f, (X,), (t,))[1], tg.jvp(ref, (X,), (t,))[1], rtol=1e-12)
    loss, ref_loss = (lambda x: np.sum(f(x) ** 2)), (lambda x: np.sum(ref(x) ** 2))
    np.testing.assert_allclose(tg.grad(loss)(X), tg.grad(ref_loss)(X), rtol=1e-12)
    np.testing.assert_allclose(tg.grad(loss)(X), finite_diff_grad(ref_loss, [X], 0), rtol=1e-6,
                               atol=1e-6)


def test_backends_agree():
    pytest.importorskip("jax")
    np.testing.assert_allclose(np.asarray(tg.jit(tg.grad(looped), backend="jax")(X)),
                               tg.grad(unrolled)(X), rtol=1e-12)


def test_loops_print_save_and_load():
    graph = tg.trace(tg.grad(looped), X)
    text = str(graph)
    assert "scan %" in text and "body: graph(" in text
    doc = graph.to_json()
    loaded = tg.Graph.from_json(doc)
    assert loaded.to_json() == doc
    np.testing.assert_allclose(loaded(X), graph(X), rtol=0)


@pytest.mark.parametrize("call, message", [
    (lambda: tg.fori_loop(0, 3, lambda i, c: c + 0.5, 0), "same shapes and dtypes.*int64"),
    (lambda: tg.cond(True, lambda a: a, lambda a: a[:1], np.ones(2)), "same structure, shapes"),
    (lambda: tg.scan(lambda c, x: c, 0.0, np.ones(3)), r"must return \(carry, y\)"),
    (lambda: tg.scan(lambda c, x: (c, x), 0.0, [np.ones(3), np.ones(4)]), "one leading length"),
    (lambda: tg.fori_loop(0, 2.5, lambda i, c: c, 1.0), "upper must be an integer"),
    (lambda: tg.fori_loop(0, 3, lambda i, c: c if c > 0 else -c, 1.0),
     "cannot branch on or convert the values"),
])
def test_errors_name_the_problem(call, message):
    with pytest.raises(tg.TraceError, match=message):
        call()


def test_passes_optimise_loop_bodies_too():
    def body(i, c):
        a = np.sin(c) * 1.0 + 0.0
        b = np.sin(c) * 1.0 + 0.0            # a common subexpression, and x * 1.0 + 0.0
        return a + b * 0.0

    def f(x):
        return np.sum(tg.fori_loop(0, 5, body, x))

    def body_sizes(graph):
        return sorted(len(v) for _, d in graph.nx.nodes(data=True) for v in d["params"].values()
                      if isinstance(v, tg.Graph))

    traced = tg.trace(tg.grad(f), X)
    jitted = tg.jit(tg.grad(f))
    optimised = jitted.lower(X).graph
    assert sum(body_sizes(optimised)) < sum(body_sizes(traced))
    np.testing.assert_allclose(jitted(X), tg.grad(f)(X), rtol=1e-14)


# -- cond without operands (JAX allows zero); branches that only use closed-over values --
@pytest.mark.parametrize("pred_sign", [1.0, -1.0])
def test_cond_without_operands_matches_jax(pred_sign):
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def f(x, cond, where, xnp):
        return cond(where(x[0] * pred_sign > 0), lambda: xnp.sum(xnp.sin(x)) * 2.0,
                    lambda: xnp.prod(x) + 0.0)

    mine = lambda x: f(x, tg.cond, lambda p: p, np)  # noqa: E731
    with jax.enable_x64(True):
        theirs = lambda x: f(x, jax.lax.cond, lambda p: p, jnp)  # noqa: E731
        want, want_grad = float(theirs(X)), np.asarray(jax.grad(theirs)(X))
    np.testing.assert_allclose(mine(X), want, rtol=1e-14)
    np.testing.assert_allclose(tg.jit(mine)(X), want, rtol=1e-14)
    np.testing.assert_allclose(tg.grad(mine)(X), want_grad, rtol=1e-13)
    np.testing.assert_allclose(tg.grad(tg.jit(mine))(X), want_grad, rtol=1e-13)
    # a constant predicate, no traced value anywhere
    assert tg.cond(pred_sign > 0, lambda: 1.0, lambda: 2.0) == (1.0 if pred_sign > 0 else 2.0)


def test_scan_body_returning_a_closed_over_value():
    def f(x):
        _, ys = tg.scan(lambda c, _: (c + 1.0, x * 2.0), 0.0, None, length=3)
        return np.sum(ys)

    np.testing.assert_allclose(tg.grad(f)(X), np.full(3, 6.0), rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8])
def test_fori_loop_step_number_is_a_python_int(dtype):
    # NumPy's own loop: `for i in range(n)` gives Python ints, so 0.1 * i is a weak float
    # (NEP 50) and a float32 carry stays float32; an int8 carry plus i stays int8
    def body(i, c):
        return c + (i if np.dtype(dtype).kind == "i" else 0.5 * i * c)

    def python_loop(x):
        for i in range(1, 4):
            x = body(i, x)
        return x

    x = np.arange(1, 4).astype(dtype)
    expected = python_loop(x)
    for got in (tg.fori_loop(1, 4, body, x), tg.jit(lambda v: tg.fori_loop(1, 4, body, v))(x)):
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)


# Multi-output loops, branches and checkpoints run once for all their outputs. A later
# call on the same arrays, changed in place since, must run again (it returned the old
# outputs: a silent wrong number).
MULTI = {
    "scan": lambda x, y: tg.scan(lambda c, v: (c * v, c + v), x, y),
    "fori_loop": lambda x, y: tg.fori_loop(0, 3, lambda i, c: (c[0] * 2.0 + c[1][0], c[1] * c[0]),
                                           (x, y)),
    "while_loop": lambda x, y: tg.while_loop(lambda c: np.sum(c[0]) < 50.0,
                                             lambda c: (c[0] * 2.0 + 1.0, c[1] + c[0]), (x, y[0])),
    "cond": lambda x, y: tg.cond(np.sum(x) > 0, lambda a, b: (a * b[0], b * 2.0),
                                 lambda a, b: (a - 1.0, b), x, y),
    "checkpoint": lambda x, y: tg.checkpoint(lambda a, b: (np.sin(a) * b[0], b * a))(x, y),
}


@pytest.mark.parametrize("name", sorted(MULTI))
def test_multi_output_nodes_rerun_on_arrays_changed_in_place(name):
    f = MULTI[name]
    x, y = np.array([0.5, 1.5]), np.full((3, 2), 1.25)
    loss = lambda x, y: sum(np.sum(o ** 2) for o in f(x, y))   # noqa: E731
    runners = {"trace": tg.trace(f, x, y), "jit": tg.jit(f), "grad": tg.grad(loss, (0, 1)),
               "jit-grad": tg.jit(tg.grad(loss, (0, 1)))}
    for (label, run), changed in itertools.product(runners.items(), ("x and y", "y")):
        x[:], y[:] = [0.5, 1.5], 1.25
        run(x, y)
        if changed == "x and y":
            x *= 1.5
        y[:] = 0.75
        results = run(x, y)      # before the reference, which runs loops of its own
        want = f(x, y) if "grad" not in label else tg.grad(loss, (0, 1))(x.copy(), y.copy())
        for got, expected in zip(results, want):
            np.testing.assert_allclose(got, expected, rtol=1e-12,
                                       err_msg=f"{name} {label}, {changed} changed")


# -- one node, one run: loops, branches and checkpoints are multi-output nodes ----------------
# Plain NumPy versions of MULTI (Python loops and branches): the oracle.
def _scan_ref(x, y):
    c, ys = x, []
    for v in y:
        c, out = c * v, c + v
        ys.append(out)
    return c, np.stack(ys)


def _fori_ref(x, y):
    c = (x, y)
    for _ in range(3):
        c = (c[0] * 2.0 + c[1][0], c[1] * c[0])
    return c


def _while_ref(x, y):
    c = (x, y[0])
    while np.sum(c[0]) < 50.0:
        c = (c[0] * 2.0 + 1.0, c[1] + c[0])
    return c


def _cond_ref(x, y):
    return (x * y[0], y * 2.0) if np.sum(x) > 0 else (x - 1.0, y)


def _checkpoint_ref(x, y):
    return np.sin(x) * y[0], y * x


REFS = {"scan": _scan_ref, "fori_loop": _fori_ref, "while_loop": _while_ref, "cond": _cond_ref,
        "checkpoint": _checkpoint_ref}
OP = {"scan": "scan", "fori_loop": "scan", "while_loop": "while_loop", "cond": "cond",
      "checkpoint": "remat_call"}
XA, YA = np.array([0.5, 1.5]), np.array([[1.25, 0.5], [-0.75, 1.1], [0.9, -0.3]])


def _loss(f):
    return lambda x, y: sum(np.sum(np.sin(o) * (k + 1)) for k, o in enumerate(f(x, y)))


@pytest.fixture
def runs(monkeypatch):
    """op -> how many times its implementation ran (the interpreter and generated code
    both call the registry entry's ``impl``)."""
    from tracegrad.ir import REGISTRY

    counts = {}
    for op in set(OP.values()):
        prim = REGISTRY[op]

        def counting(*args, _impl=prim.impl, _op=op, **params):
            counts[_op] = counts.get(_op, 0) + 1
            return _impl(*args, **params)
        monkeypatch.setattr(prim, "impl", counting)
    return counts


@pytest.mark.parametrize("name", sorted(MULTI))
def test_one_node_and_one_run_for_all_outputs(name, runs):
    f, op = MULTI[name], OP[name]
    graph = tg.trace(f, XA, YA)
    assert graph.ops().count(op) == 1
    head = next(n for n in graph if graph.op(n) == op)
    outs = graph.output_groups()[head]
    assert len(outs) >= 2 and None not in outs   # (fori_loop: its step number too)
    # the dump shows one line giving every output
    line = next(ln for ln in str(graph).splitlines() if f" = {op} " in ln)
    assert line.split(" = ")[0].strip() == ", ".join(
        f"%{p}:{graph._aval(p)}" for p in outs)
    jitted = tg.jit(f)
    jitted(XA, YA)      # traced and compiled (tracing may run a checkpoint on the values)
    for label, run in (("interpreter", graph), ("generated code", jitted),
                       ("loaded from JSON", tg.Graph.from_json(graph.to_json()))):
        runs.clear()
        got = run(XA, YA)
        assert runs == {op: 1}, label
        for g, w in zip(got, REFS[name](XA, YA)):
            np.testing.assert_allclose(g, w, rtol=1e-13, err_msg=label)
    # the gradient: the forward run (a branch or checkpoint runs once more while traced on
    # the values: only loops are lazy), then for a scan one run keeping the carries and one
    # backward, for a branch one backward branch (a checkpoint's backward is its adjoint
    # inlined), for a while loop the same two scans once its steps are counted: never one
    # per output
    runs.clear()
    tg.grad(_loss(f), (0, 1))(XA, YA)
    assert runs == {"scan": {"scan": 3}, "cond": {"cond": 3}, "remat_call": {"remat_call": 2},
                    "while_loop": {"while_loop": 1, "scan": 2}}[op]


@pytest.mark.parametrize("name", sorted(MULTI))
def test_multi_output_values_and_derivatives_match_plain_python(name):
    f, ref = MULTI[name], REFS[name]
    loss, ref_loss = _loss(f), _loss(ref)
    for x in (XA, -XA):              # both branches of cond
        np.testing.assert_allclose(loss(x, YA), ref_loss(x, YA), rtol=1e-13)
        tx, ty = np.array([0.3, -1.0]), np.cos(np.arange(6.0)).reshape(3, 2)
        got = tg.jvp(lambda x, y: f(x, y), (x, YA), (tx, ty))[1]
        want = tg.jvp(lambda x, y: ref(x, y), (x, YA), (tx, ty))[1]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-13)
        got = tg.grad(loss, (0, 1))(x, YA)
        want = tg.grad(ref_loss, (0, 1))(x, YA)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(got[0], finite_diff_grad(ref_loss, [x, YA], 0), rtol=1e-6,
                                   atol=1e-8)


@pytest.mark.parametrize("name", sorted(MULTI))
def test_hessian_through_multi_output_nodes(name):
    """Grad of grad: the backward scan (branch, checkpoint) differentiated again."""
    f, ref = MULTI[name], REFS[name]
    got = tg.hessian(lambda x: _loss(f)(x, YA))(XA)
    want = tg.hessian(lambda x: _loss(ref)(x, YA))(XA)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(MULTI))
def test_vmap_of_multi_output_nodes(name):
    f, ref = MULTI[name], REFS[name]
    xs = np.array([[0.5, 1.5], [-0.4, 0.2], [0.1, 0.7]])
    got = tg.vmap(f, in_axes=(0, None))(xs, YA)
    for k, x in enumerate(xs):
        for g, w in zip(got, ref(x, YA)):
            np.testing.assert_allclose(g[k], w, rtol=1e-13)


@pytest.mark.parametrize("name", sorted(MULTI))
def test_multi_output_nodes_on_the_jax_backend(name):
    pytest.importorskip("jax")
    f, ref = MULTI[name], REFS[name]
    for g, w in zip(tg.jit(f, backend="jax")(XA, YA), ref(XA, YA)):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-13)
    if name != "while_loop":
        got = tg.jit(tg.grad(_loss(f), (0, 1)), backend="jax")(XA, YA)
        want = tg.grad(_loss(ref), (0, 1))(XA, YA)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("name", sorted(MULTI))
def test_multi_output_graphs_round_trip_through_json(name):
    graph = tg.trace(tg.grad(_loss(MULTI[name]), (0, 1)), XA, YA)
    text = graph.to_json()
    entry = next(e for e in json.loads(text)["nodes"] if e["op"] == OP[name])
    assert "index" not in entry["params"] and len(entry["outputs"]) >= 2
    loaded = tg.Graph.from_json(text)
    assert loaded.to_json() == text and str(loaded) == str(graph)
    for g, w in zip(loaded(XA, YA), graph(XA, YA)):
        np.testing.assert_array_equal(g, w)


def test_generated_code_runs_the_loop_once():
    graph = tg.trace(MULTI["scan"], XA, YA)
    source = tg.jit(MULTI["scan"]).lower(XA, YA).as_text()
    assert source.count("impl_scan(") == 1
    assert graph.ops().count("scan") == 1


def test_a_loop_without_outputs_is_no_node():
    def f(x):
        carry, ys = tg.scan(lambda c, v: ((), None), (), x)
        return np.sum(x) + len(carry)
    graph = tg.trace(f, XA)
    assert "scan" not in graph.ops()
    assert graph(XA) == np.sum(XA)


# -- reverse mode through while_loop (the trip count is known once the forward pass ran) ------
def _sqrt_newton(a, **bound):
    """A fixed-point solver: Newton's iteration for sqrt(a), to convergence."""
    return tg.while_loop(lambda x: np.abs(x * x - a) > 1e-14 * a,
                         lambda x: 0.5 * (x + a / x), a, **bound)


def _sqrt_newton_python(a):
    x = a
    while np.abs(x * x - a) > 1e-14 * a:
        x = 0.5 * (x + a / x)
    return x


@pytest.mark.parametrize("a", [2.0, 30.0])
def test_a_fixed_point_solver_differentiated_twice(a):
    np.testing.assert_allclose(_sqrt_newton(a), np.sqrt(a), rtol=1e-15)
    # the derivatives of the iteration: the unrolled Python loop's, and at convergence
    # sqrt's own (1/2 a^-1/2, -1/4 a^-3/2)
    for second in (tg.grad(tg.grad(_sqrt_newton)), tg.jit(tg.grad(tg.grad(_sqrt_newton)))):
        np.testing.assert_allclose(second(a), tg.grad(tg.grad(_sqrt_newton_python))(a),
                                   rtol=1e-12)
        np.testing.assert_allclose(second(a), -0.25 * a ** -1.5, rtol=1e-10)
    np.testing.assert_allclose(tg.grad(_sqrt_newton)(a), 0.5 / np.sqrt(a), rtol=1e-12)
    fd = (tg.grad(_sqrt_newton)(a + 1e-5) - tg.grad(_sqrt_newton)(a - 1e-5)) / 2e-5
    np.testing.assert_allclose(tg.grad(tg.grad(_sqrt_newton))(a), fd, rtol=1e-6)


def test_one_compiled_gradient_for_every_trip_count():
    """The steps are counted when the gradient runs: inputs that take other trip counts
    need no new trace."""
    grad = tg.jit(tg.grad(_sqrt_newton))
    for a in (2.0, 30.0, 1e6, 0.01):
        np.testing.assert_allclose(grad(a), 0.5 / np.sqrt(a), rtol=1e-10)
        np.testing.assert_allclose(grad(a), tg.grad(_sqrt_newton_python)(a), rtol=1e-12)
    assert grad.cache_size == 1


def test_while_loop_gradient_with_closures_and_several_carries():
    w = np.array([0.9, -0.4])

    def f(x, w, limit):
        def body(c):
            h, n, total = c
            return np.tanh(h * w + x), n + 1, total + np.sum(h * h)
        h, n, total = tg.while_loop(lambda c: c[2] < limit, body, (x, 0, 0.0))
        return np.sum(h * w) + total * n

    def ref(x, w, limit):
        h, n, total = x, 0, 0.0
        while total < limit:
            h, n, total = np.tanh(h * w + x), n + 1, total + np.sum(h * h)
        return np.sum(h * w) + total * n

    x = np.array([0.5, 0.8])
    graph = tg.trace(tg.grad(f, (0, 1)), x, w, 2.0)
    assert graph.ops().count("while_derived") == 1      # one backward node, every cotangent
    for limit in (0.5, 2.0):
        got = tg.grad(f, (0, 1))(x, w, limit)
        for k in (0, 1):
            np.testing.assert_allclose(got[k], tg.grad(ref, (0, 1))(x, w, limit)[k], rtol=1e-12)
            np.testing.assert_allclose(got[k], finite_diff_grad(lambda *a: ref(*a, limit),
                                                                [x, w], k), rtol=1e-6)


def test_while_loop_reverse_mode_on_the_jax_backend():
    """The derivative node runs on the host (XLA cannot count the steps); max_steps gives a
    loop XLA compiles."""
    pytest.importorskip("jax")
    host = tg.jit(tg.grad(tg.grad(_sqrt_newton)), backend="jax")
    for a in (2.0, 30.0):
        np.testing.assert_allclose(np.asarray(host(a)), -0.25 * a ** -1.5, rtol=1e-10)
    bounded = tg.grad(tg.grad(lambda a: _sqrt_newton(a, max_steps=40)))
    for fn in (bounded, tg.jit(bounded, backend="jax")):
        np.testing.assert_allclose(np.asarray(fn(2.0)), -0.25 * 2.0 ** -1.5, rtol=1e-10)
    # the bound stops the loop: three Newton steps
    three = tg.jit(lambda a: _sqrt_newton(a, max_steps=3), backend="jax")
    x = 2.0
    for _ in range(3):
        x = 0.5 * (x + 2.0 / x)
    np.testing.assert_allclose(np.asarray(three(2.0)), x, rtol=1e-15)


def test_while_loop_derivative_graphs_save_and_load():
    graph = tg.trace(tg.grad(tg.grad(_sqrt_newton)), 2.0)
    assert "while_derived" in graph.ops()
    text = graph.to_json()
    loaded = tg.Graph.from_json(text)
    assert loaded.to_json() == text
    for a in (2.0, 7.0):
        np.testing.assert_allclose(loaded(np.float64(a)), -0.25 * a ** -1.5, rtol=1e-10)
