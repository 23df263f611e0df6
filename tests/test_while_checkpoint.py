"""Reverse mode through ``tg.while_loop`` with checkpointing (``higher/while_reverse.py``):
above ``CHECKPOINT_ABOVE`` steps the backward pass keeps one carry per segment of
``ceil(sqrt(T))`` steps and recomputes the rest, so its memory is O(sqrt(T)) carries.
Checked against the same loop with every carry kept, finite differences, the implicit
derivative of a fixed point, and the peak memory tracemalloc measures."""
import math
import tracemalloc

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.higher import while_reverse


@pytest.fixture
def store_every_carry(monkeypatch):
    """Within the test, ``store()`` switches checkpointing off (every carry kept)."""
    def store():
        monkeypatch.setattr(while_reverse, "CHECKPOINT_ABOVE", 10**12)
    return store


def _rnn(steps):
    """A fresh loop (its derived graphs are made anew): ``steps`` steps of a tanh
    recurrence closing over ``w``; the loss of the final state."""
    def loss(x, w):
        h, _ = tg.while_loop(lambda c: c[1] < steps,
                             lambda c: (np.tanh(c[0] * w + 0.1 * c[0][::-1]), c[1] + 1), (x, 0))
        return np.sum(h ** 2)
    return loss


def _rnn_numpy(x, w, steps):
    for _ in range(steps):
        x = np.tanh(x * w + 0.1 * x[::-1])
    return np.sum(x ** 2)


X = np.linspace(-1.0, 1.0, 5)
W = np.linspace(0.5, 1.1, 5)


def test_segment_length():
    assert while_reverse.CHECKPOINT_ABOVE == 64
    assert [while_reverse.segment_length(t) for t in (0, 1, 64)] == [0, 1, 64]
    for t in (65, 81, 82, 100, 101, 10_000):
        assert while_reverse.segment_length(t) == math.ceil(math.sqrt(t))


@pytest.mark.parametrize("steps", [65, 100, 130])
def test_checkpointed_gradient_matches_every_carry_kept(steps, store_every_carry):
    value, (gx, gw) = tg.value_and_grad(_rnn(steps), argnums=(0, 1))(X, W)
    store_every_carry()
    value2, (gx2, gw2) = tg.value_and_grad(_rnn(steps), argnums=(0, 1))(X, W)
    # the same steps in the same order: the same bits for the value and the carry's
    # cotangent; the closed-over w's cotangent is summed segment by segment
    assert value == value2 == _rnn_numpy(X, W, steps)
    np.testing.assert_array_equal(gx, gx2)
    np.testing.assert_allclose(gw, gw2, rtol=1e-13, atol=1e-15)
    # and finite differences
    h = 1e-6
    fd = [(_rnn_numpy(X, W + h * e, steps) - _rnn_numpy(X, W - h * e, steps)) / (2 * h)
          for e in np.eye(5)]
    np.testing.assert_allclose(gw, fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("steps", [5, 9, 10, 17])
def test_segments_with_and_without_a_remainder(steps, monkeypatch):
    """Trip counts that are, and are not, a multiple of the segment length (the steps
    left over run as one more scan)."""
    expected = tg.grad(_rnn(steps), argnums=(0, 1))(X, W)
    monkeypatch.setattr(while_reverse, "CHECKPOINT_ABOVE", 2)
    got = tg.grad(_rnn(steps), argnums=(0, 1))(X, W)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-13, atol=1e-15)
    graph = tg.trace(lambda w: tg.grad(_rnn(steps), argnums=1)(X, w), W)
    assert graph.ops().count("while_derived") == 1


def _peak_carries(fn, n):
    fn()                                  # derived graphs made, code generated
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / (n * 8)


def test_memory_is_bounded_by_the_square_root_of_the_trip_count(store_every_carry):
    n, steps = 4000, 400                  # a carry of 32 kB, 400 steps: sqrt is 20
    x, w = np.linspace(-1.0, 1.0, n), np.linspace(0.5, 1.1, n)

    def loss(x, w):
        h, _ = tg.while_loop(lambda c: c[1] < steps,
                             lambda c: (np.tanh(c[0] * w + 0.1), c[1] + 1), (x, 0))
        return np.sum(h ** 2)
    checkpointed = tg.grad(loss, argnums=(0, 1))
    kept = _peak_carries(lambda: checkpointed(x, w), n)
    store_every_carry()
    every = tg.grad(lambda x, w: loss(x, w) * 1.0, argnums=(0, 1))   # a new trace
    kept_all = _peak_carries(lambda: every(x, w), n)
    assert kept_all > steps               # every carry was held at once
    # about 2 sqrt(T) carries (the checkpoints, one segment's) plus a few temporaries
    assert kept < 4 * math.sqrt(steps) + 10, kept
    np.testing.assert_array_equal(checkpointed(x, w)[0], every(x, w)[0])


def _fixed_point(a):
    """``x = 0.5 cos(x) + a``, iterated until it no longer moves (about 50 steps)."""
    x, _ = tg.while_loop(lambda c: c[1] < 60, lambda c: (0.5 * np.cos(c[0]) + a, c[1] + 1),
                         (a, 0))
    return x


def test_second_derivatives_through_a_checkpointed_loop(monkeypatch):
    monkeypatch.setattr(while_reverse, "CHECKPOINT_ABOVE", 8)   # 60 steps: segments of 8
    a = 0.3
    x = _fixed_point(a)
    np.testing.assert_allclose(x, 0.5 * np.cos(x) + a, rtol=1e-15)
    # implicit derivatives of x = 0.5 cos(x) + a: x' = 1 / (1 + s/2), s = sin(x);
    # x'' = -(c/2) x'^3, c = cos(x)
    d1 = 1 / (1 + 0.5 * np.sin(x))
    d2 = -0.5 * np.cos(x) * d1 ** 3
    np.testing.assert_allclose(tg.grad(_fixed_point)(a), d1, rtol=1e-12)
    np.testing.assert_allclose(tg.grad(tg.grad(_fixed_point))(a), d2, rtol=1e-10)
    np.testing.assert_allclose(tg.jvp(tg.grad(_fixed_point), (a,), (1.0,))[1], d2, rtol=1e-10)
    monkeypatch.setattr(while_reverse, "CHECKPOINT_ABOVE", 10**12)
    np.testing.assert_allclose(tg.grad(tg.grad(lambda v: _fixed_point(v) * 1.0))(a), d2,
                               rtol=1e-10)


def test_newton_second_derivative_checkpointed(monkeypatch):
    """The Newton square root of tests/test_control.py, twice differentiated, with a
    segment of 2 steps."""
    monkeypatch.setattr(while_reverse, "CHECKPOINT_ABOVE", 2)

    def newton_sqrt(a):
        return tg.while_loop(lambda r: np.abs(r * r - a) > 1e-14 * a,
                             lambda r: 0.5 * (r + a / r), a)
    for a in (2.0, 30.0):
        np.testing.assert_allclose(tg.grad(newton_sqrt)(a), 0.5 / np.sqrt(a), rtol=1e-12)
        np.testing.assert_allclose(tg.grad(tg.grad(newton_sqrt))(a), -0.25 * a ** -1.5,
                                   rtol=1e-10)
        np.testing.assert_allclose(tg.jit(tg.grad(tg.grad(newton_sqrt)))(a),
                                   -0.25 * a ** -1.5, rtol=1e-10)


def test_checkpointed_loop_on_the_jax_backend():
    pytest.importorskip("jax")
    loss = _rnn(100)
    got = tg.jit(tg.grad(loss, argnums=(0, 1)), backend="jax")(X, W)
    expected = tg.grad(_rnn(100), argnums=(0, 1))(X, W)
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-13)
    np.testing.assert_allclose(got[1], expected[1], rtol=1e-13)
