"""The generated code adds the gradients of disjoint slices of one value into one buffer
of zeros, in whatever order the adjoint recorded the scatters and their sums, with the
bits of the reference interpreter's sums (signed zeros, NaN and inf included)."""
import numpy as np
import pytest
from conftest import zero_buffers

import tracegrad as tg
from tracegrad.runtime.codegen import generate
from tracegrad.runtime.interpreter import run


def _bits(a):
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def _gates(x):
    g = x @ x.T
    a, b, c, d = g[:, :2], g[:, 2:4], g[:, 4:6], g[:, 6:]
    return np.sum(np.tanh(a) * np.sin(b) + c ** 2 - np.exp(d) * a)


def _three(x):
    return np.sum(x[:, :2] ** 2) + np.sum(x[:, 2:4] * 3.0) + np.sum(np.sin(x[:, 5:]))


def _overlapping(x):      # not disjoint: each slice's gradient must keep its own buffer
    return np.sum(x[:, :4] ** 2) + np.sum(x[:, 2:] * 3.0)


@pytest.mark.parametrize("f, copies", [(_gates, 1), (_three, 1), (_overlapping, 2)])
def test_slice_gradients_share_one_buffer_with_the_interpreters_bits(f, copies):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(8, 8))
    x[0, 0], x[1, 1], x[2, 5] = -0.0, np.inf, np.nan
    graph = tg.trace(tg.grad(f), x)
    compiled = generate(graph)
    assert zero_buffers(compiled.source) == copies, compiled.source
    out, ref = compiled(x)[0], run(graph, [x])[0]
    np.testing.assert_array_equal(_bits(out), _bits(ref))
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(_bits(out), _bits(tg.grad(f)(x)))
