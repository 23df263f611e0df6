"""np.int64(x) / np.asarray(x, int) of a floating traced array: NumPy calls
``x.__array__(dtype)``; where the value is known it is NumPy's integer array of it (an
integer cast has zero derivative, so no gradient is lost), and where it is not, or for a
floating dtype or int(), a TraceError says how to write it (``x.astype(...)``)."""
import numpy as np
import pytest

import tracegrad as tg

W = np.array([[0.3, -1.2, 2.0, 0.0], [1.5, 0.2, -0.7, 1.9], [2.2, 1.1, 0.4, 2.5],
              [-0.6, 0.9, 1.3, 1.0]])


def pick_rows(W):
    new_W = W[:, :-1]
    inds = np.int64(W[:, -1])
    assert type(inds) is np.ndarray and inds.dtype == np.int64
    return np.sum(new_W[inds] * np.arange(1.0, 4.0))


def expected_grad(W):
    g = np.zeros_like(W)
    for i in W[:, -1].astype(np.int64):
        g[i, :-1] += np.arange(1.0, 4.0)
    return g


def test_integer_scalar_type_of_a_traced_array_keeps_the_values():
    np.testing.assert_array_equal(tg.grad(pick_rows)(W), expected_grad(W))
    assert tg.value_and_grad(pick_rows)(W)[0] == pick_rows(W)
    # the same through np.asarray / np.array with an integer dtype, and np.bool_
    g = tg.grad(lambda w: np.sum(w * np.asarray(w, dtype=np.int32) + np.bool_(w)))(W)
    np.testing.assert_array_equal(g, W.astype(np.int32))


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_jit_retraces_for_other_index_values(backend):
    jf = tg.jit(pick_rows, backend=backend)
    W2 = W.copy()
    W2[:, -1] = [2.0, 2.0, 0.0, 1.0]
    for w in (W, W2, W):
        assert jf(w) == pytest.approx(pick_rows(w), rel=1e-15)
    assert jf.cache_size == 2
    np.testing.assert_array_equal(tg.jit(tg.grad(pick_rows), backend=backend)(W2),
                                  expected_grad(W2))


def test_abstract_values_say_to_use_astype():
    with pytest.raises(tg.TraceError, match=r"np\.int64\(x\).*Write x\.astype\(np\.int64\) "
                                            r"instead.*test_numpy_scalar_casts\.py"):
        tg.scan(lambda c, x: (c + np.int64(x), c), 0, np.arange(3.0))
    with pytest.raises(tg.TraceError, match=r"tg\.vmap traces one example.*"
                                            r"x\.astype\(np\.int64\)"):
        tg.vmap(lambda w: np.sum(w[np.int64(w[-1:])]))(W)
    # what the message recommends works in both places
    out = tg.vmap(lambda w: np.sum(w[w[-1:].astype(np.int64)]))(W)
    np.testing.assert_array_equal(out, W[np.arange(4), W[:, -1].astype(np.int64)])
    _, ys = tg.scan(lambda c, x: (c + x.astype(np.int64), c), 0, np.arange(3.0))
    np.testing.assert_array_equal(ys, [0, 0, 1])


def test_floating_casts_and_int_still_refuse_and_say_how():
    with pytest.raises(tg.TraceError, match=r"dtype float32 .*lose its gradient.*"
                                            r"write x\.astype\(np\.float32\)"):
        tg.grad(lambda w: np.sum(np.float32(w)))(W)
    with pytest.raises(tg.TraceError, match=r"int\(\) .*lose its gradient.*"
                                            r"x\.astype\(np\.int64\)"):
        tg.grad(lambda w: np.sum(w) * int(w[0, 0]))(W)
