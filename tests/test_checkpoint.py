"""tg.checkpoint: the same derivatives (first and second order, both modes, every backend),
a sub-graph that prints, saves and loads, and a lower peak memory on a deep chain."""
import tracemalloc

import numpy as np
import pytest

import tracegrad as tg

from oracles import finite_diff_grad


def block(x, W):
    h = x @ W
    return np.tanh(np.sin(h) * x + 0.1 * h)


def chain(x, Ws, blk):
    for W in Ws:
        x = blk(x, W)
    return np.sum(x * x)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((3, 4)), [rng.standard_normal((4, 4)) / 2 for _ in range(3)]


def test_gradients_equal_the_unchecked_ones_and_finite_differences(data):
    x, Ws = data
    ckpt = tg.checkpoint(block)
    plain = tg.grad(chain, argnums=(0, 1))(x, Ws, block)
    checked = tg.grad(chain, argnums=(0, 1))(x, Ws, ckpt)
    np.testing.assert_allclose(checked[0], plain[0], rtol=1e-13)
    for a, b in zip(checked[1], plain[1]):
        np.testing.assert_allclose(a, b, rtol=1e-13)
    fd = finite_diff_grad(lambda v: chain(v, Ws, block), [x], 0)
    np.testing.assert_allclose(checked[0], fd, rtol=1e-6, atol=1e-8)


def test_second_order_and_forward_mode(data):
    x, Ws = data
    ckpt = tg.checkpoint(block)
    v = x[0]
    h_plain = tg.hessian(lambda r: chain(np.concatenate([r[None], x[1:]]), Ws, block))(v)
    h_ckpt = tg.hessian(lambda r: chain(np.concatenate([r[None], x[1:]]), Ws, ckpt))(v)
    np.testing.assert_allclose(h_ckpt, h_plain, rtol=1e-10, atol=1e-12)
    t = np.ones_like(x)
    _, jv_plain = tg.jvp(lambda r: chain(r, Ws, block), (x,), (t,))
    _, jv_ckpt = tg.jvp(lambda r: chain(r, Ws, ckpt), (x,), (t,))
    np.testing.assert_allclose(jv_ckpt, jv_plain, rtol=1e-12)


def test_backends_agree(data):
    x, Ws = data
    ckpt = tg.checkpoint(block)
    ref = tg.grad(chain)(x, Ws, block)
    np.testing.assert_allclose(tg.jit(tg.grad(lambda v: chain(v, Ws, ckpt)))(x), ref, rtol=1e-12)
    pytest.importorskip("jax")
    jitted = tg.jit(tg.grad(lambda v: chain(v, Ws, ckpt)), backend="jax")
    np.testing.assert_allclose(jitted(x), ref, rtol=1e-12)
    assert "stablehlo" in jitted.lower(x).as_text()


def test_the_backward_recomputes_and_the_forward_keeps_only_outputs(data):
    x, Ws = data
    ckpt = tg.checkpoint(block)
    graph = tg.trace(tg.grad(lambda v: chain(v, Ws, ckpt)), x)
    ops = graph.ops()
    assert ops.count("remat_call") == len(Ws)
    assert ops.count("sin") == len(Ws)          # each block's forward, once, in the backward
    text = str(graph)
    assert "remat_call %" in text and "graph={" in text
    assert "\n      %" in text                 # the sub-graph, indented under its node


def test_sub_graphs_round_trip_through_json(data):
    x, Ws = data
    ckpt = tg.checkpoint(block)
    graph = tg.trace(tg.grad(lambda v: chain(v, Ws, ckpt)), x)
    text = graph.to_json()
    loaded = tg.Graph.from_json(text)
    assert loaded.to_json() == text
    np.testing.assert_array_equal(loaded(x), graph(x))


def test_nesting_depth_of_loaded_documents_is_bounded():
    f = tg.checkpoint(lambda v: np.sin(v))
    for _ in range(9):
        f = tg.checkpoint(f)
    graph = tg.trace(f, np.ones(2))
    with pytest.raises(tg.TraceError, match="nested more than 8 deep"):
        tg.Graph.from_json(graph.to_json())


def test_multiple_outputs_static_args_and_plain_values():
    @tg.checkpoint(static_argnums=1)
    def f(x, power):
        return x ** power, np.sum(x)

    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(tg.grad(lambda v: np.sum(f(v, 3)[0]) + f(v, 3)[1])(x), 3 * x ** 2 + 1)
    out, total = f(x, 2)                        # no transform: just runs
    np.testing.assert_allclose(out, x ** 2)
    assert total == 6.0


def test_closing_over_a_traced_value_is_refused():
    def outer(x):
        return np.sum(tg.checkpoint(lambda v: v * x)(x))
    with pytest.raises(tg.TraceError, match="closes over a value traced outside"):
        tg.grad(outer)(np.ones(2))


def _peak(f):
    f()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    f()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return peak


def test_checkpointing_lowers_peak_memory_of_a_deep_chain():
    rng = np.random.default_rng(0)
    n, depth = 96, 24
    x = rng.standard_normal((n, n))
    Ws = [rng.standard_normal((n, n)) / np.sqrt(n) for _ in range(depth)]
    plain = tg.jit(tg.grad(lambda v: chain(v, Ws, block)))
    checked = tg.jit(tg.grad(lambda v: chain(v, Ws, tg.checkpoint(block))))
    np.testing.assert_allclose(checked(x), plain(x), rtol=1e-12)
    activation = n * n * 8
    # without: several arrays per block are kept for the backward; with: about one
    assert _peak(lambda: plain(x)) > 3 * depth * activation
    assert _peak(lambda: checked(x)) < 0.6 * _peak(lambda: plain(x))
