"""A loop or branch traced again with the same structure reuses one sub-graph object
(``control_flow._shared``): it must never stand in for a different computation."""
import threading

import numpy as np

import tracegrad as tg
from tracegrad.transforms import control_flow


def _loop(scale, tol=1e-6):
    def f(a):
        return tg.while_loop(lambda c: np.abs(c[0] - c[1]) > tol,
                             lambda c: (c[0] - scale * (c[0] ** 2 - a), c[0]),
                             (a * 0 + 10.0, a * 0))[0]
    return f


def _numpy_loop(a, scale, tol=1e-6):
    x, prev = 10.0, 0.0
    while abs(x - prev) > tol:
        x, prev = x - scale * (x * x - a), x
    return x


def test_same_structure_shares_the_graph_and_values_stay_right():
    key_of = control_flow._structure
    f = _loop(0.05)
    for a in (2.0, 3.0, 2.0, 5.0):
        eps = 1e-4
        fd = ((a + eps) * _numpy_loop(a + eps, 0.05) - (a - eps) * _numpy_loop(a - eps, 0.05)) \
            / (2 * eps)
        np.testing.assert_allclose(tg.grad(lambda t: f(t) * t)(a), fd, rtol=1e-4)
        assert f(a) == _numpy_loop(a, 0.05)
    # two traces of the same loop give one graph object for the body
    g1, g2 = (control_flow._trace(lambda ins: [ins[0] * 0.05 + 1.0], [tg.ir.Aval((), np.dtype(float))],
                                  "t")[0] for _ in range(2))
    assert g1 is g2 and key_of(g1) is not None


def test_a_different_constant_is_a_different_graph():
    aval = [tg.ir.Aval((), np.dtype(float))]
    ga = control_flow._trace(lambda ins: [ins[0] * 0.05], aval, "t")[0]
    gb = control_flow._trace(lambda ins: [ins[0] * 0.07], aval, "t")[0]
    gc = control_flow._trace(lambda ins: [ins[0] * np.arange(3.0)], aval, "t")[0]
    gd = control_flow._trace(lambda ins: [ins[0] * np.arange(3.0) * 2], aval, "t")[0]
    assert ga is not gb and gc is not gd
    # each loop computes with its own constant, called alternately
    for scale in (0.05, 0.07, 0.05, 0.03, 0.07):
        for a in (2.0, 4.0):
            assert _loop(scale)(a) == _numpy_loop(a, scale)


def test_different_dtypes_and_shapes_are_different_graphs():
    for dtype in (np.float64, np.float32, np.float64):
        for n in (1, 3, 1):
            x = np.full(n, 4.0, dtype)
            out = tg.fori_loop(0, 5, lambda i, c: c * dtype(0.5) + 1, x)
            want = x.copy()
            for _ in range(5):
                want = want * dtype(0.5) + 1
            assert out.dtype == want.dtype and out.shape == want.shape
            np.testing.assert_array_equal(out, want)


def test_threads_get_their_own_loops_values():
    errors = []

    def work(scale):
        try:
            for a in (2.0, 3.0, 5.0) * 5:
                got = tg.grad(_loop(scale))(a)
                eps = 1e-4
                fd = (_numpy_loop(a + eps, scale) - _numpy_loop(a - eps, scale)) / (2 * eps)
                if not np.isclose(got, fd, rtol=1e-3, atol=1e-4):
                    errors.append((scale, a, got, fd))
                if _loop(scale)(a) != _numpy_loop(a, scale):
                    errors.append((scale, a, "value"))
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(s,)) for s in (0.05, 0.07, 0.03, 0.05)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
