"""Python numbers passed as arguments are NumPy's weak scalars (NEP 50): a generated check.

``tg.jit(lambda w, lr: w - lr * w)(np.ones(3, np.float32), 0.5)`` is float32, as in
NumPy: a Python int, float or complex argument takes the dtype NumPy gives a Python
number where it meets an array. Every binary operator and two-operand ufunc of the
dispatch table, on float32, float16, int8, int32 and complex64 arrays, with a Python
int, float or complex argument on either side, must give NumPy's dtype and value (or
raise where NumPy raises) under ``tg.jit`` on both backends, through ``tg.trace`` and
``graph(*xs)``, and again on a second call with another number.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg
from tracegrad.tracer.np_base import UFUNCS

ARRAYS = {
    "float32": np.array([0.5, -1.25, 2.0], np.float32),
    "float16": np.array([0.5, -1.25, 2.0], np.float16),
    "int8": np.array([3, -7, 12], np.int8),
    "int32": np.array([3, -7, 12], np.int32),
    "complex64": np.array([0.5 + 1j, -1.25, 2.0 - 0.5j], np.complex64),
}
# (first call, second call): the second reuses the compiled function
NUMBERS = {"int": (3, 5), "float": (1.5, -0.75), "complex": (0.5 + 1j, -2.0 + 0.25j)}

OPERATORS = {name: getattr(operator, name) for name in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lt", "le", "gt", "ge", "eq",
    "ne", "and_", "or_", "xor")}
BINARY_UFUNCS = {uf.__name__: uf for uf in UFUNCS if isinstance(uf, np.ufunc) and uf.nin == 2
                 and uf.nout == 1 and uf is not np.matmul}


def _cases():
    cases = []
    for family, table in (("op", OPERATORS), ("ufunc", BINARY_UFUNCS)):
        for name in sorted(table):
            for dtype in ARRAYS:
                for kind in NUMBERS:
                    for side in ("array_first", "number_first"):
                        cases.append((f"{family}-{name}-{dtype}-{kind}-{side}", table[name],
                                      dtype, kind, side))
    return cases


CASES = _cases()


def _function(fn, side):
    if side == "array_first":
        return lambda a, s: fn(a, s)
    return lambda a, s: fn(s, a)


def _numpy(f, a, s):
    """NumPy's own answer, or the exception type it raises."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return np.asarray(f(a.copy(), s)), None
        except Exception as e:  # noqa: BLE001 - NumPy's refusal is part of the answer
            return None, type(e)


def _tolerance(dtype):
    return {"e": 2e-3, "f": 2e-6, "F": 2e-6}.get(dtype.char, 1e-12)


def _mismatch(call, f, a, s, exact):
    """Why ``call(a, s)`` is not NumPy's ``f(a, s)``, or None."""
    expected, error = _numpy(f, a, s)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = np.asarray(call(a, s))
        except Exception as e:  # noqa: BLE001 - compared with NumPy's own refusal
            if isinstance(e, tg.TraceError) or (error is not None and isinstance(e, error)):
                return None if error is not None else "raised where NumPy does not"
            return f"raised {type(e).__name__}: {e}"
    if error is not None:
        return f"NumPy raises {error.__name__}, tracegrad does not"
    if got.dtype != expected.dtype or got.shape != expected.shape:
        return f"dtype {got.dtype}{got.shape}, NumPy {expected.dtype}{expected.shape} (s={s!r})"
    if exact or expected.dtype.kind not in "fc":
        ok = np.array_equal(got, expected, equal_nan=expected.dtype.kind in "fc")
    else:
        tol = _tolerance(expected.dtype)
        ok = np.allclose(got, expected, rtol=tol, atol=tol, equal_nan=True)
    return None if ok else f"values {got}, NumPy {expected} (s={s!r})"


def check_like_numpy(call, f, a, numbers, exact=True):
    """``call(a, s)`` is NumPy's ``f(a, s)`` for each Python number ``s``. Where it is not
    for the number typed as NumPy types it here either, the difference is not weak typing
    (a value-fidelity matter of that function): the case is skipped, saying so."""
    for s in numbers:
        why = _mismatch(call, f, a, s, exact)
        if why is None:
            continue
        try:
            typed = np.asarray(s, dtype=np.result_type(a.dtype, s))
        except (TypeError, OverflowError):
            typed = None
        if typed is not None and _mismatch(call, f, a, typed, exact) is not None:
            pytest.skip(f"differs from NumPy for a typed operand too: {why}")
        pytest.fail(why)


def _ids(cases):
    return [c[0] for c in cases]


NUMPY_CASES = bounded(CASES, 260)
JAX_CASES = bounded(CASES, 30)
TRACE_CASES = bounded(CASES[1::2], 100)


@pytest.mark.parametrize("name,fn,dtype,kind,side", NUMPY_CASES, ids=_ids(NUMPY_CASES))
def test_jit_numpy_backend_keeps_numpy_weak_scalar_dtypes(name, fn, dtype, kind, side):
    f = _function(fn, side)
    check_like_numpy(tg.jit(f), f, ARRAYS[dtype], NUMBERS[kind])


@pytest.mark.parametrize("name,fn,dtype,kind,side", JAX_CASES, ids=_ids(JAX_CASES))
def test_jit_jax_backend_keeps_numpy_weak_scalar_dtypes(name, fn, dtype, kind, side):
    f = _function(fn, side)
    # XLA's own arithmetic: values to the dtype's rounding, dtypes exactly NumPy's
    check_like_numpy(tg.jit(f, backend="jax"), f, ARRAYS[dtype], NUMBERS[kind], exact=False)


@pytest.mark.parametrize("name,fn,dtype,kind,side", TRACE_CASES, ids=_ids(TRACE_CASES))
def test_trace_records_numpy_weak_scalar_dtypes(name, fn, dtype, kind, side):
    f = _function(fn, side)
    a, numbers = ARRAYS[dtype], NUMBERS[kind]
    expected, error = _numpy(f, a, numbers[0])
    try:
        with np.errstate(all="ignore"):
            graph = tg.trace(f, a, numbers[0])
    except Exception as e:
        if error is None or not isinstance(e, (tg.TraceError, error)):
            raise
        return
    check_like_numpy(lambda a, s: graph(a, s), f, a, numbers)
    if error is None:
        assert np.dtype(graph.node(graph.outputs[0])["dtype"]) == expected.dtype


def test_the_issue_example():
    w = np.ones(3, np.float32)
    for backend in ("numpy", "jax"):
        out = tg.jit(lambda w, lr: w - lr * w, backend=backend)(w, 0.5)
        assert np.asarray(out).dtype == np.float32
        np.testing.assert_array_equal(np.asarray(out), w - 0.5 * w)


def test_python_arithmetic_on_numbers_stays_weak():
    # lr * 2, 1 - beta ** t: Python numbers in Python, so still weak where they meet w
    def adam_like(w, lr, beta, t):
        return w * (lr * 2) / (1 - beta ** t) - abs(-lr) * w

    w = np.array([1.0, -2.0, 0.5], np.float32)
    expected = adam_like(w, 0.1, 0.9, 3)
    assert expected.dtype == np.float32
    for call in (tg.jit(adam_like), tg.jit(adam_like, backend="jax")):
        got = np.asarray(call(w, 0.1, 0.9, 3))
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    # a NumPy function of a Python number is a typed NumPy scalar, as in NumPy
    f = lambda w, lr: np.sqrt(lr) * w  # noqa: E731
    assert tg.jit(f)(w, 0.25).dtype == f(w, 0.25).dtype == np.float64


def test_python_int_out_of_range_raises_as_numpy_does():
    a = np.array([1, 2], np.int8)
    with pytest.raises(OverflowError):
        a + 300
    f = tg.jit(lambda a, n: a + n)
    np.testing.assert_array_equal(f(a, 3), a + 3)
    with pytest.raises(tg.TraceError, match=r"Python integer 300 out of bounds for int8 \(NumPy "
                                            r"raises OverflowError\) \(at test_weak_scalars"):
        f(a, 300)
    np.testing.assert_array_equal(f(a, -128), a + -128)


def test_gradient_with_respect_to_a_python_float():
    # the value is NumPy's (float32 arithmetic); the gradient of a Python float is a
    # float64 NumPy scalar, as for any float64 argument
    w = np.array([1.0, -2.0, 0.5], np.float32)

    def f(lr, w):
        return np.sum(np.sin(lr * w))

    for grad in (tg.grad(f), tg.jit(tg.grad(f))):
        g = grad(0.5, w)
        assert type(g) is np.float64
        np.testing.assert_allclose(g, np.sum(np.cos(np.float32(0.5) * w) * w), rtol=1e-6)
    value, g = tg.value_and_grad(f)(0.5, w)
    assert value.dtype == f(0.5, w).dtype == np.float32 and type(g) is np.float64
    (g,) = tg.vjp(lambda lr: lr * w, 0.5)[1](np.ones(3, np.float32))
    assert type(g) is np.float64 and g == np.sum(w)


def test_weak_scalars_through_other_transforms():
    xs = np.ones((2, 3), np.float32)
    scale = tg.vmap(lambda x, s: x * s, in_axes=(0, None))
    expected = xs * 0.5
    for call in (scale, tg.jit(scale), tg.jit(scale, backend="jax")):
        out = np.asarray(call(xs, 0.5))
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, expected)
    branch = tg.jit(lambda x, s: tg.cond(s > 0, lambda x: x * s, lambda x: x, x))
    assert branch(xs[0], 0.5).dtype == np.float32
    # inside grad inside jit: the number stays weak, so the value is float32 arithmetic
    w = np.array([0.3, -1.1, 2.0], np.float32)
    inner = tg.jit(lambda w, lr: tg.grad(lambda w: np.sum(np.sin(lr * w)))(w))
    g = inner(w, 0.7)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.cos(np.float32(0.7) * w) * np.float32(0.7), rtol=1e-6)
