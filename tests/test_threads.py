"""Tracing is thread-safe: several threads tracing and running different functions at once
each get their own function's values and derivatives, and a thread that is not tracing
gets NumPy's own results and types while others trace (tracegrad's wrappers in the
``numpy`` module act only in a tracing thread)."""
import threading

import numpy as np
from conftest import central_diff

import tracegrad as tg


def from_elements(x):
    return np.sum(np.array([x[0], x[1]]) ** 2)


def fresh_writes(x):
    z = np.zeros(4)
    z[1:] = x[:3] * 2.0
    z += x
    np.tanh(z, out=z)
    return np.sum(z * x)


def list_reduction(x):
    return np.mean([x[0] * x[1], np.sin(x[2]), x[3]])


def fill_and_put(x):
    z = np.eye(4)
    np.fill_diagonal(z, x)
    w = np.full(4, x[3])
    np.put(w, [0, 1], x[:2] ** 2)
    return np.sum(z @ w) + np.sum(np.asarray([x[2], x[0]]))


FUNCTIONS = [from_elements, fresh_writes, list_reduction, fill_and_put]
X = np.array([0.3, -1.1, 0.8, 1.7])


def _run_threads(targets):
    errors = []
    start = threading.Barrier(len(targets))

    def wrap(target):
        def run():
            try:
                start.wait()
                target()
            except BaseException as e:      # noqa: BLE001  (reported below)
                errors.append(e)
        return run
    threads = [threading.Thread(target=wrap(t)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_threads_tracing_different_functions_get_their_own_values():
    want = {f: (f(X), central_diff(f, X)) for f in FUNCTIONS}
    jitted = {f: tg.jit(tg.value_and_grad(f)) for f in FUNCTIONS}
    bad = []

    def work(f, seed):
        def run():
            rng = np.random.default_rng(seed)
            for i in range(60):
                if i % 3 == 2:
                    v, g = jitted[f](X)
                else:
                    v, g = tg.value_and_grad(f)(X)
                if not (np.allclose(v, want[f][0], rtol=1e-12) and
                        np.allclose(g, want[f][1], rtol=1e-6, atol=1e-7)):
                    bad.append((f.__name__, i, v, g))
                y = X + rng.normal(size=4) * 0.1   # and another point, traced afresh
                if not np.allclose(tg.grad(f)(y), central_diff(f, y), rtol=1e-6, atol=1e-7):
                    bad.append((f.__name__, i, "at y"))
        return run
    # two threads per function, eight at once
    _run_threads([work(f, k) for k, f in enumerate(FUNCTIONS * 2)])
    assert not bad, bad[:5]


def test_a_thread_not_tracing_gets_numpy_while_others_trace():
    stop = threading.Event()
    bad = []

    def tracer_thread():
        while not stop.is_set():
            tg.grad(fresh_writes)(X)
            tg.grad(from_elements)(X)

    def plain_thread():
        try:
            for _ in range(3000):
                a = np.array([1.0, 2.0])
                z = np.zeros(3)
                z[0] = 4.0
                r = np.arange(3.0)
                m = np.mean([a[0], a[1]])
                c = np.copy(r)
                if not (type(a) is np.ndarray and type(z) is np.ndarray and
                        type(r) is np.ndarray and type(c) is np.ndarray and
                        type(m) is np.float64 and m == 1.5 and z[0] == 4.0 and
                        np.array_equal(c, [0.0, 1.0, 2.0])):
                    bad.append((type(a), type(z), type(r), type(m)))
        finally:
            stop.set()
    _run_threads([tracer_thread, tracer_thread, plain_thread])
    assert not bad, bad[:5]
    # and once every trace has ended, NumPy's own functions are back in the module
    assert not hasattr(np.zeros, "__wrapped__") and not hasattr(np.array, "__wrapped__")


def test_a_trace_ending_in_one_thread_leaves_another_threads_trace_alone():
    # thread A is inside its traced function while thread B runs a whole trace, start to
    # end, and a third thread runs plain NumPy; then A goes on using the wrappers
    a_inside, b_done = threading.Event(), threading.Event()
    seen = {}

    def f(x):
        a_inside.set()
        assert b_done.wait(60)
        seen["inner"] = tg.tracer.core.current_trace()
        z = np.zeros(2)
        z[0] = x[2]
        return np.sum(np.array([x[0], x[1]]) ** 2) + np.sum(z)

    def thread_a():
        seen["a"] = tg.grad(f)(X)

    def thread_b():
        assert a_inside.wait(60)
        try:
            seen["b"] = tg.grad(from_elements)(X)
            seen["plain"] = type(np.zeros(2)), type(np.array([1.0]))
            seen["b_trace"] = tg.tracer.core.current_trace()
        finally:
            b_done.set()
    _run_threads([thread_a, thread_b])
    np.testing.assert_allclose(seen["a"], [2 * X[0], 2 * X[1], 1.0, 0.0])
    np.testing.assert_allclose(seen["b"], [2 * X[0], 2 * X[1], 0.0, 0.0])
    assert seen["plain"] == (np.ndarray, np.ndarray)    # B, between its traces, is plain
    assert seen["b_trace"] is None and seen["inner"] is not None


def test_the_eager_default_dtype_and_test_switches_are_per_thread():
    # one thread sets torch's default dtype (and turns the eager fast paths off) while
    # another computes: the other thread's dtypes and values stay what they were
    from tracegrad.eager import arithmetic as ops
    from tracegrad.eager import engine
    set_done, other_done = threading.Event(), threading.Event()
    seen = {}

    def setter():
        tg.set_default_dtype(np.float64)
        ops.FAST.set(False)
        engine.FUSED.set(False)
        set_done.set()
        assert other_done.wait(60)
        seen["setter"] = (tg.tensor([1.5]).dtype, tg.rand(2).dtype, ops.FAST.get())

    def other():
        assert set_done.wait(60)
        seen["other"] = (tg.tensor([1.5]).dtype, tg.rand(2).dtype, tg.get_default_dtype(),
                         ops.FAST.get(), engine.FUSED.get())
        other_done.set()
    _run_threads([setter, other])
    assert seen["setter"] == (np.float64, np.float64, False)
    assert seen["other"] == (np.float32, np.float32, np.float32, True, True)
    assert tg.get_default_dtype() == np.float32      # nor does the test's own thread


def test_compiled_refusals_in_one_thread_leave_others_alone():
    """A thread whose traced function hands a traced value to SciPy's compiled SuperLU.solve
    gets the TraceError naming it, every time, while other threads trace and differentiate
    their own functions and call the same SuperLU.solve on plain values."""
    import scipy.sparse
    import scipy.sparse.linalg
    a = scipy.sparse.csc_matrix(np.diag([2.0, 3.0, 4.0, 5.0]) + 0.5 * np.eye(4, k=1))
    lu = scipy.sparse.linalg.splu(a)
    want = central_diff(fresh_writes, X)
    solved = lu.solve(X)
    bad = []

    def refused():
        for _ in range(15):
            try:
                tg.grad(lambda t: np.sum(lu.solve(t)))(X)
                bad.append("no error")
            except tg.TraceError as e:
                if "scipy.sparse.linalg.SuperLU.solve (called as lu.solve)" not in str(e):
                    bad.append(str(e))

    def differentiates():
        for _ in range(15):
            g = tg.grad(fresh_writes)(X)
            if not np.allclose(g, want, rtol=1e-6, atol=1e-8):
                bad.append(g)
            if not np.array_equal(lu.solve(X), solved):
                bad.append("plain solve")
    _run_threads([refused, differentiates, refused, differentiates])
    assert not bad, bad[:3]
