"""The batching pass runs on the one evaluator (``ir.evaluate`` on ``Batched`` values):
multi-output nodes, constants, nodes of no operands, guards on unbatched and on batched
values, nesting, and a rule that breaks its contract, each against NumPy row by row."""
import importlib
import inspect
import warnings

import numpy as np
import pytest
from conftest import bounded
from test_backend_parity import _compile, assert_same, make_program

import tracegrad as tg
from tracegrad.ir import Aval
from tracegrad.passes.batch import batch, batch_rules
from tracegrad.passes.common import finish, zeros
from tracegrad.runtime import run
from tracegrad.tracer import new_trace

# the modules (``tracegrad.passes.batch`` and ``tracegrad.ir.evaluate`` name functions too)
batch_module = importlib.import_module("tracegrad.passes.batch")
evaluator = importlib.import_module("tracegrad.ir.evaluate")
RNG = np.random.default_rng(13)
M = RNG.standard_normal((3, 4))
S = RNG.standard_normal((4, 4))
SYM = S + S.T


def _rows(a, size):
    return np.stack([a * (1.0 + 0.3 * i) + 0.1 * i for i in range(size)])


def _check(f, args, batched, size=3, rules=None):
    """``f``'s graph batched over the operands ``batched``: each row of every output
    equals NumPy's ``f`` on that row. Returns the pass's counts."""
    graph = tg.trace(f, *args)
    stats = {}
    bg = batch(graph, batched, size, rules=rules, stats=stats)
    stacked = [_rows(a, size) if k in batched else a for k, a in enumerate(args)]
    outs = run(bg, stacked)
    for i in range(size):
        want = f(*[s[i] if k in batched else s for k, s in enumerate(stacked)])
        want = want if isinstance(want, tuple) else (want,)
        assert len(outs) == len(want)
        for o, w in zip(outs, want):
            assert o.shape == (size,) + np.shape(w)
            np.testing.assert_allclose(o[i], w, rtol=1e-11, atol=1e-12)
    return stats


def test_the_pass_has_no_walk_of_its_own(monkeypatch):
    calls = []
    real = batch_module.evaluate

    def counting(graph, env, **kw):
        calls.append(graph)
        return real(graph, env, **kw)
    monkeypatch.setattr(batch_module, "evaluate", counting)
    graph = tg.trace(lambda x: np.sin(x) * 2.0, np.ones(3))
    batch(graph, [0], 2)
    assert calls == [graph]
    source = inspect.getsource(batch_module)
    assert "graph.items()" not in source and "for n in graph" not in source
    assert evaluator.evaluate is real


# -- multi-output nodes --------------------------------------------------------------------
def _svd_gauge_free(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    # u diag(s) vh and |u|^2 do not depend on the signs LAPACK picks
    return s, (u * s) @ vh, np.abs(u) ** 2, np.abs(vh) ** 2


def _eigh_gauge_free(a):
    w, v = np.linalg.eigh(a)
    return w, (v * w) @ v.T, v ** 2


@pytest.mark.parametrize("size", [1, 3])
def test_svd_and_eigh_heads_under_the_pass(size):
    stats = _check(_svd_gauge_free, (M,), [0], size=size)
    assert stats == {"rule": stats["rule"]}, stats
    stats = _check(_eigh_gauge_free, (SYM,), [0], size=size)
    assert stats == {"rule": stats["rule"]}, stats


def test_multi_output_head_row_by_row_without_a_rule():
    table = {k: v for k, v in batch_rules().items() if k not in ("svd", "eigh")}
    stats = _check(_svd_gauge_free, (M,), [0], rules=table)
    assert stats["fallback:svd"] == 1
    stats = _check(_eigh_gauge_free, (SYM,), [0], rules=table)
    assert stats["fallback:eigh"] == 1


def test_an_unbatched_head_is_recorded_once_and_broadcast():
    def f(x, a):
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        return x * s[:3], np.sum(s)
    graph = tg.trace(f, np.ones(3), M)
    bg = batch(graph, [0], 4)
    assert bg.ops().count("svd") == 1
    stats = _check(f, (np.ones(3), M), [0], size=4)
    assert stats.get("fallback", 0) == 0


def test_svd_under_vmap_matches_numpy_and_jax():
    jax = pytest.importorskip("jax")
    stack = RNG.standard_normal((4, 3, 3))
    got = tg.vmap(lambda a: np.linalg.svd(a)[1])(stack)
    np.testing.assert_allclose(got, np.linalg.svd(stack)[1], rtol=1e-12)
    grad = tg.grad(lambda a: np.sum(tg.vmap(lambda r: np.linalg.svd(r)[1] ** 2)(a)))(stack)
    want = jax.grad(lambda a: jax.numpy.sum(
        jax.vmap(lambda r: jax.numpy.linalg.svd(r)[1] ** 2)(a)))(stack)
    np.testing.assert_allclose(grad, np.asarray(want), rtol=1e-10)


# -- constants and nodes of no operands -----------------------------------------------------
def test_a_constant_operand():
    c = RNG.standard_normal(4)
    stats = _check(lambda x: x * c + np.sum(c) * np.tanh(x) @ S, (RNG.standard_normal(4),), [0])
    assert stats.get("fallback", 0) == 0


def test_a_node_of_no_operands():
    # a structural zero (``zeros``, as the derivative passes make) runs NumPy in the walk
    with new_trace() as trace:
        x = trace.new_input(aval=Aval((3,), np.dtype(np.float64)))
        z = zeros(trace, (3,), np.float64)
        graph = finish(trace, [np.sin(x) + z, zeros(trace, (2,), np.float64)])
    assert graph.ops().count("zeros") == 2
    xs = RNG.standard_normal((4, 3))
    outs = run(batch(graph, [0], 4), [xs])
    np.testing.assert_allclose(outs[0], np.sin(xs), rtol=1e-15)
    np.testing.assert_array_equal(outs[1], np.zeros((4, 2)))


# -- guards --------------------------------------------------------------------------------
def _branchy(x, w):
    if np.sum(w) > 0:       # a branch on the unbatched operand
        return x * w
    return x - w


def test_a_guard_on_an_unbatched_value_is_kept():
    w = RNG.standard_normal(3)
    for sign in (1.0, -1.0):
        ws = sign * np.abs(w)
        graph = tg.trace(_branchy, np.ones(3), ws)
        bg = batch(graph, [0], 4)
        assert len(bg.guards) == 1
        xs = RNG.standard_normal((4, 3))
        np.testing.assert_allclose(run(bg, [xs, ws]), [[_branchy(x, ws) for x in xs]],
                                   rtol=1e-14)
        # the batched graph checks the branch, as the graph it came from
        with pytest.raises(tg.TraceError, match="different branch"):
            run(bg, [xs, -ws])
    got = tg.vmap(_branchy, in_axes=(0, None))(RNG.standard_normal((2, 3)), -np.abs(w))
    assert got.shape == (2, 3)


def test_a_guard_on_a_batched_value_is_refused_naming_the_line():
    graph = tg.trace(_branchy, np.ones(3), np.ones(3))
    with pytest.raises(tg.TraceError, match=r"depends on a batched input \(the condition at "
                                            r".*test_batch_evaluator.py:\d+"):
        batch(graph, [1], 4)
    batch(graph, [0], 4)     # the same graph batched over x only


# -- nesting and the contract of a rule --------------------------------------------------------
def test_vmap_of_vmap_matches_numpy():
    x = RNG.standard_normal((2, 3, 4))

    def f(r):
        u, s, vh = np.linalg.svd(np.outer(r, r) + S, full_matrices=False)
        return np.sum(s) * np.tanh(r)
    got = tg.vmap(tg.vmap(f))(x)
    np.testing.assert_allclose(got, [[f(r) for r in row] for row in x], rtol=1e-12)


def test_a_rule_of_the_wrong_shape_is_named():
    def bad(size, args, batched, out_shape):
        return args[0][:1]
    table = dict(batch_rules(), sin=bad)
    graph = tg.trace(lambda x: np.sin(x), np.ones(3))
    with pytest.raises(tg.TraceError, match=r"batching rule of sin gave shape \(1, 3\), "
                                            r"expected \(4, 3\)"):
        batch(graph, [0], 4, rules=table)


def test_a_rule_sees_the_unbatched_output_shape():
    seen = []

    def spy(size, args, batched, out_shape, **params):
        seen.append(out_shape)
        return batch_rules()["svd"](size, args, batched, out_shape, **params)
    table = dict(batch_rules(), svd=spy)
    _check(_svd_gauge_free, (M,), [0], rules=table)
    assert seen == [((3, 3), (3,), (3, 4))]


# -- generated programs: every operand batched, each row against the graph on that row ---------
def _program_rows(seed):
    """The random program ``seed`` of ``test_backend_parity`` traced, and for each operand
    two rows for it: the tracing value and a second one (in bounds, for an index)."""
    src, trace, other, *_ = make_program(seed)
    other = list(other)
    other[2] = np.clip(other[2], -4, 3).astype(other[2].dtype)
    return src, _compile(src, seed), trace, other


@pytest.mark.parametrize("seed", bounded(range(1200), 60))
def test_random_programs_batched_over_each_operand_give_the_rows(seed):
    src, f, trace, other = _program_rows(seed)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            graph = tg.trace(f, *trace)
        except tg.TraceError:
            return      # a program tracegrad refuses (test_backend_parity checks the error)
        for k in range(3):
            rows = [trace[k], other[k]]
            wants = []
            for r in rows:
                args = list(trace)
                args[k] = r
                try:
                    wants.append(run(graph, args))
                except Exception:   # noqa: BLE001 - a row that takes another branch
                    wants = None
                    break
            try:
                bg = batch(graph, [k], 2)
            except tg.TraceError as e:
                assert "depends on a batched input" in str(e), (src, e)
                continue
            args = list(trace)
            args[k] = np.stack(rows)
            if wants is None:
                continue
            outs = run(bg, args)
            for i, want in enumerate(wants):
                assert_same([o[i] for o in outs], want, f"row {i} batched over input {k}\n{src}",
                            1e-12)
