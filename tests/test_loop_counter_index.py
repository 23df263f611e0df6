"""The step number of tg.fori_loop (and a counter carried through tg.scan or
tg.while_loop) used as an index in the loop body: ``c[i] = c[i - 1] * x[i]``, reading and
writing at a traced position. Values against the same loop unrolled in plain NumPy,
derivatives against finite differences of it, on both backends and in both modes."""
import numpy as np
import pytest
from conftest import assert_close, central_diff

import tracegrad as tg


def _recurrence(i, c, x):
    # reads at i and i - 1 (i - 1 is -1 at i == 0: NumPy's wrap-around), writes at i and i - 1
    c[i] = c[i - 1] * x[i] + np.sin(x[x.shape[0] - 1 - i])
    c[i - 1] += 0.5 * x[i] * c[i]
    return c


def fori(x):
    c = tg.fori_loop(0, x.shape[0], lambda i, c: _recurrence(i, c, x), np.ones_like(x))
    return np.sum(c ** 2)


def fori_rows(a):
    # a row read and a column written with the step number
    def body(i, acc):
        acc[:, i] = acc[:, i - 1] * 0.9 + a[i] @ a[i]
        return acc
    out = tg.fori_loop(1, a.shape[0], body, np.zeros((2, a.shape[0])) + a[0, 0])
    return np.sum(np.tanh(out))


def scanned(x):
    def body(carry, xi):
        i, c = carry
        c = _recurrence(i, c, x)
        return (i + 1, c), c[i] * xi
    (_, c), ys = tg.scan(body, (0, np.ones_like(x)), x[::-1])
    return np.sum(c ** 2) + np.sum(ys)


def whiled(x):
    def body(v):
        i, c = v
        return i + 1, _recurrence(i, c, x)
    _, c = tg.while_loop(lambda v: v[0] < x.shape[0], body, (0, np.ones_like(x)))
    return np.sum(c ** 2)


def plain_recurrence(x):
    c = np.ones_like(x)
    for i in range(x.shape[0]):
        c = _recurrence(i, c, x)
    return c


def plain_fori(x):
    return np.sum(plain_recurrence(x) ** 2)


def plain_rows(a):
    acc = np.zeros((2, a.shape[0])) + a[0, 0]
    for i in range(1, a.shape[0]):
        acc[:, i] = acc[:, i - 1] * 0.9 + a[i] @ a[i]
    return np.sum(np.tanh(acc))


def plain_scanned(x):
    c, ys = np.ones_like(x), []
    for i, xi in enumerate(x[::-1]):
        c = _recurrence(i, c, x)
        ys.append(c[i] * xi)
    return np.sum(c ** 2) + np.sum(ys)


X = np.array([0.9, 1.1, -0.4, 0.7, 1.3])
A = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6], [0.8, 0.05, 0.2], [-0.3, 0.2, 0.1]])
CASES = [(fori, plain_fori, X), (fori_rows, plain_rows, A), (scanned, plain_scanned, X),
         (whiled, plain_fori, X)]
IDS = ["fori_loop", "fori_loop_rows", "scan", "while_loop"]


@pytest.mark.parametrize("f, plain, x", CASES, ids=IDS)
@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_counter_indexes_values_and_gradient(f, plain, x, backend):
    expected, fd = plain(x), central_diff(plain, x)
    value, grad = tg.jit(tg.value_and_grad(f), backend=backend)(x)
    assert_close(value, expected, 1e-13, "value")
    assert_close(grad, fd, 1e-7, "gradient against finite differences", floor=1.0)
    # the graph does not unroll the loop
    assert_close(tg.grad(f)(x), tg.grad(plain)(x), 1e-12, "gradient against the unrolled trace")


@pytest.mark.parametrize("f, plain, x", CASES[:3], ids=IDS[:3])
def test_counter_indexes_second_order_and_forward(f, plain, x):
    assert_close(tg.hessian(f)(x), tg.hessian(plain)(x), 1e-10, "hessian")
    t = np.linspace(-1.0, 1.0, x.size).reshape(x.shape)
    _, tangent = tg.jvp(f, (x,), (t,))
    assert_close(tangent, np.sum(central_diff(plain, x) * t), 1e-7, "jvp", floor=1.0)


def test_counter_stays_an_integer_and_a_python_int_in_arithmetic():
    seen = {}

    def body(i, c):
        seen["dtype"] = (i.dtype, (c * i).dtype, (i - 1).dtype)
        c[i] = c[i] * i
        return c

    out = tg.jit(lambda x: tg.fori_loop(0, 3, body, x))(np.ones(3, np.float32))
    np.testing.assert_array_equal(out, np.array([0.0, 1.0, 2.0], np.float32))
    assert out.dtype == np.float32
    i_dtype, product, shifted = seen["dtype"]
    assert i_dtype.kind == "i" and shifted.kind == "i" and product == np.float32


def test_counter_indexing_a_plain_array_says_what_to_do():
    data = np.arange(4.0)

    def f(w):
        return tg.fori_loop(0, 4, lambda i, acc: acc + w * data[i], 0.0)   # the line

    with pytest.raises(tg.TraceError, match=r"plain\[i\].*carry the array.*xs.*tg.jit.*"
                                            r"test_loop_counter_index.py:\d+"):
        tg.grad(f)(1.0)

    def carried(w):      # carried through the loop, it is traced, and indexable
        return tg.fori_loop(0, 4, lambda i, v: (v[0] + w * v[1][i], v[1]), (0.0, data))[0]
    assert tg.grad(carried)(1.0) == 6.0
    assert tg.jit(lambda w, d: tg.fori_loop(0, 4, lambda i, acc: acc + w * d[i], 0.0))(
        2.0, data) == 12.0
