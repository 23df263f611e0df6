"""np.array / np.asarray of (nested) lists and tuples holding traced values, generated:
shapes, dtypes, numbers and plain arrays mixed in, dtype= and ndmin=, then NumPy
functions that refuse object arrays (np.exp, np.linalg.det) — values and dtypes against
NumPy running the same code, gradients against finite differences."""
import itertools

import numpy as np
import pytest
from conftest import assert_close, bounded, fd_vjp

import tracegrad as tg

# builders: x (a float vector of 6) -> a nested list NumPy turns into an array
BUILDERS = {
    "scalars": lambda x: [x[0], x[1], x[2]],
    "scalars and numbers": lambda x: [x[0], 2.0, x[3], 1],
    "tuple": lambda x: (x[4], x[0]),
    "2x2 scalars": lambda x: [[x[0], x[1]], [x[2], x[3]]],
    "2x2 with numbers": lambda x: [[x[0], 1.5], [-2, x[5]]],
    "rows": lambda x: [x[:3], x[3:]],
    "rows and a plain row": lambda x: [x[:3], np.arange(3.0), x[3:] * 2],
    "2x1x2 nested": lambda x: [[[x[0], x[1]]], [[x[2] * x[3], 0.5]]],
    "repeated element": lambda x: [x[1], x[1], x[1] ** 2],
    "elements of two arrays": lambda x: [np.sin(x)[0], np.cos(x)[1], x[2]],
    "0-d": lambda x: x[2],
    "bool, float and int": lambda x: [x[0] > 0, x[1], 2],
    "complex elements": lambda x: [x[0] + 1j * x[1], x[2], 1j],
    "integer elements": lambda x: [np.floor(x * 3).astype(np.int64)[1], 7, np.int32(2)],
    "float32 elements": lambda x: [x.astype(np.float32)[0], x.astype(np.float32)[3]],
}
# (constructor, keyword arguments)
CALLS = [
    ("array", {}),
    ("asarray", {}),
    ("asanyarray", {}),
    ("array", {"dtype": np.float32}),
    ("array", {"dtype": complex}),
    ("array", {"ndmin": 3}),
    ("asarray", {"dtype": np.float64}),
]
# what is done with the array: NumPy functions with no object-array loop among them
USES = {
    "exp": lambda a: np.exp(a),
    "sum of squares": lambda a: np.sum(a * a),
    "det": lambda a: np.linalg.det(np.reshape(a, (2, 2)) if a.size == 4 else
                                   np.diag(np.ravel(a)) + 1.0),
    "matmul": lambda a: np.ravel(a) @ np.arange(1.0, np.size(a) + 1),
}
CASES = list(itertools.product(BUILDERS, range(len(CALLS)), USES))
X = np.array([0.3, -1.2, 0.8, 1.7, -0.4, 0.9])


def _program(builder, call, use):
    name, kwargs = CALLS[call]

    def f(x):
        a = getattr(np, name)(BUILDERS[builder](x), **kwargs)
        return use_fn(a), a

    use_fn = USES[use]
    return f


def _ids(v):
    return v if isinstance(v, str) else f"{CALLS[v][0]}{CALLS[v][1] or ''}"


def _numpy_error(case):
    try:
        _program(*case)(X)
    except (TypeError, ValueError) as e:
        return e
    return None


@pytest.mark.parametrize("builder, call, use", bounded(CASES, 120), ids=_ids)
def test_values_and_dtypes_match_numpy(builder, call, use):
    f = _program(builder, call, use)
    error = _numpy_error((builder, call, use))
    if error is not None:       # np.array([1j, ...], dtype=float): NumPy's TypeError
        with pytest.raises(type(error), match=r"complex.*test_array_of_tracers.py:"):
            tg.jit(f)(X)
        return
    want = f(X)
    got = tg.jit(f)(X)
    for g, w in zip(got, want):
        tol = 1e-6 if np.result_type(w) in (np.float32, np.complex64) else 1e-13
        assert_close(g, np.asarray(w), tol, f"{builder} {_ids(call)} {use}")


# float32 elements: finite differences of a float32 computation are mostly rounding
REAL = [c for c in CASES if CALLS[c[1]][1].get("dtype") is not complex
        and c[0] != "float32 elements" and _numpy_error(c) is None]


@pytest.mark.parametrize("builder, call, use", bounded(REAL, 40), ids=_ids)
def test_gradients_match_finite_differences(builder, call, use):
    f = _program(builder, call, use)
    weights = np.random.default_rng(1).standard_normal(np.shape(f(X)[0]))

    def loss(x):
        return np.sum(weights * np.real(f(x)[0]))

    if CALLS[call][1].get("dtype") == np.float32:
        # a float32 round trip: finite differences of NumPy's run would be mostly rounding
        want = tg.grad(lambda x: np.sum(weights * np.real(_program(builder, 0, use)(x)[0])))(X)
        assert_close(tg.grad(loss)(X), want, 1e-5)
        return
    (expected,) = fd_vjp(loss, [X], 1.0)
    assert_close(tg.grad(loss)(X), expected, 1e-7, f"{builder} {_ids(call)} {use}", floor=1.0)


def test_the_issue_example():
    def f(x):
        a = np.array([x[0], x[1]])
        m = np.array([[x[0], x[1]], [x[2], 2.0]])
        return np.sum(np.exp(a)) + np.linalg.det(m)

    x = np.array([0.5, -1.0, 2.0])
    assert_close(tg.grad(f)(x), fd_vjp(f, [x], 1.0)[0], 1e-8, floor=1.0)
    assert_close(tg.jit(f)(x), f(x), 1e-15)


def test_array_copies_and_asarray_does_not():
    def f(x):
        b = x * 1
        c, d = np.array(b), np.asarray(b)
        b[0] = 100.0
        return c, d

    x = np.arange(3.0)
    for got, want in zip(tg.jit(f)(x), f(x)):
        assert_close(got, want, 0)


def test_ragged_lists_fail_as_in_numpy():
    def f(x):
        return np.array([x[:2], x[:3]])

    with pytest.raises(ValueError, match="inhomogeneous"):
        f(np.arange(3.0))
    with pytest.raises(ValueError, match=r"one shape.*test_array_of_tracers.py:"):
        tg.jit(f)(np.arange(3.0))       # a TraceError, which is a ValueError


def test_constructors_are_numpy_outside_a_trace():
    before = (np.array, np.asarray, np.asanyarray)
    with pytest.raises(tg.TraceError):
        tg.grad(lambda x: np.array([x[0], x[1]]))(np.ones(2))    # not a scalar: an error exit
    tg.grad(lambda x: np.sum(np.array([x[0]])))(np.ones(2))
    assert (np.array, np.asarray, np.asanyarray) == before
