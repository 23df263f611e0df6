"""A Python branch decided by an exact equality of a value being differentiated (``==``,
``!=``, ``in``, np.allclose, np.isclose, np.array_equal, np.array_equiv) is refused with a
TraceError naming the line: the derivative of the branch taken is not the function's (a
memoised result would give a silent zero). An equality that came out False, one on
integers, one behind tg.stop_gradient, and any branch under tg.jit alone keep working,
with the right values and derivatives."""
import numpy as np
import pytest
from conftest import assert_close, central_diff

import tracegrad as tg

HERE = "test_equality_branches.py"


class Memoised:
    """A model that skips recomputing when called again at the same point."""

    def __init__(self, detach=False):
        self.last_x, self.last_value, self.detach = None, None, detach

    def __call__(self, x):
        probe = tg.stop_gradient(x) if self.detach else x
        if self.last_x is not None and np.allclose(probe, self.last_x):   # the branch
            return self.last_value
        value = np.sum(np.sin(x) ** 2)
        self.last_x, self.last_value = np.copy(x), value
        return value


def _line_of(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _refused(line):
    return pytest.raises(tg.TraceError, match=rf"exact equality.*stop_gradient.*{HERE}:{line}\)")


X = np.array([0.3, 0.5])


def test_memoised_model_is_refused_not_a_silent_zero():
    model = Memoised()
    model(X)                                     # a fitter's first call, untraced
    line = _line_of(Memoised.__call__, "# the branch")
    with _refused(line):
        tg.grad(model)(X)
    with _refused(line):
        tg.jit(tg.grad(model))(X)
    with _refused(line):
        tg.hessian(model)(X)
    with _refused(line):
        tg.jvp(model, (X,), (np.ones(2),))
    # elsewhere the cache misses, and the derivative is the function's
    assert_close(tg.grad(Memoised())(X), np.sin(2 * X), 1e-14, "grad")
    # compiled without differentiation, the branch is a guard: each call right
    model = Memoised()
    model(X)
    f = tg.jit(model)
    assert f(X) == model.last_value
    assert_close(f(X + 0.5), np.sum(np.sin(X + 0.5) ** 2), 1e-14, "retraced")


def test_stop_gradient_says_the_branch_is_meant():
    model = Memoised(detach=True)
    model(X)
    np.testing.assert_array_equal(tg.grad(model)(X), np.zeros(2))
    np.testing.assert_array_equal(tg.jit(tg.grad(model))(X), np.zeros(2))


def piecewise_eq(x):
    if x == 1.0:                      # eq line
        return x ** 2
    return x ** 3


def piecewise_ne(x):
    if x != 1.0:                      # ne line
        return x ** 3
    return x ** 2


def piecewise_in(x):
    if x in (0.5, 1.0):               # in line
        return x ** 2
    return x ** 3


def piecewise_isclose(x):
    if np.isclose(x, 1.0):            # isclose line
        return x ** 2
    return x ** 3


def piecewise_array_equal(x):
    if np.array_equal(x, np.ones(2)):          # array_equal line
        return np.sum(x ** 2)
    return np.sum(x ** 3)


def piecewise_array_equiv(x):
    if np.array_equiv(x, 1.0):                 # array_equiv line
        return np.sum(x ** 2)
    return np.sum(x ** 3)


def piecewise_any(x):
    if np.any(x == np.array([1.0, 7.0])):      # any line
        return np.sum(x ** 2)
    return np.sum(x ** 3)


def piecewise_all_ne(x):
    if not np.all(x != 1.0):                   # all_ne line
        return np.sum(x ** 2)
    return np.sum(x ** 3)


def piecewise_item(x):
    if np.equal(x, 1.0).item():       # item line
        return x ** 2
    return x ** 3


SCALAR = [(piecewise_eq, "eq line"), (piecewise_item, "item line"), (piecewise_ne, "ne line"),
          (piecewise_in, "in line"), (piecewise_isclose, "isclose line")]
VECTOR = [(piecewise_array_equal, "array_equal line"), (piecewise_array_equiv, "array_equiv line"),
          (piecewise_any, "any line"), (piecewise_all_ne, "all_ne line")]


@pytest.mark.parametrize("f, tag", SCALAR + VECTOR, ids=[f.__name__ for f, _ in SCALAR + VECTOR])
def test_equality_that_holds_is_refused_under_every_derivative(f, tag):
    x = 1.0 if (f, tag) in SCALAR else np.array([1.0, 1.0])
    line = _line_of(f, tag)
    for transform in (tg.grad, tg.jacobian, tg.hessian, lambda g: tg.jit(tg.grad(g)),
                      lambda g: tg.grad(tg.jit(g))):
        with _refused(line):
            transform(f)(x)
    # tg.jit alone differentiates nothing: the branch is a guard, and both sides run right
    g = tg.jit(f)
    assert_close(g(x), f(x), 1e-15, "value at the equality")
    away = 2.0 if (f, tag) in SCALAR else np.array([2.0, 3.0])
    assert_close(g(away), f(away), 1e-15, "value away from it")


@pytest.mark.parametrize("f, tag", SCALAR + VECTOR, ids=[f.__name__ for f, _ in SCALAR + VECTOR])
def test_equality_that_fails_keeps_the_right_derivative(f, tag):
    x = 2.0 if (f, tag) in SCALAR else np.array([2.0, 3.0])
    expected = 3 * np.asarray(x) ** 2          # every function is the cube branch here
    assert_close(tg.grad(f)(x), expected if np.ndim(x) else float(expected), 1e-14, "grad")
    assert_close(tg.jit(tg.grad(f))(x), tg.grad(f)(x), 1e-15, "jit(grad)")
    assert_close(tg.hessian(f)(x), tg.hessian(lambda z: np.sum(z ** 3))(x), 1e-14, "hessian")
    if np.ndim(x):
        assert_close(tg.grad(f)(x), central_diff(f, x), 1e-7, "finite differences", floor=1.0)
    # a compiled derivative, first traced away from the equality, refuses when a later
    # call lands on it (the guard fails, and the retrace refuses)
    on = 1.0 if (f, tag) in SCALAR else np.array([1.0, 1.0])
    compiled = tg.jit(tg.grad(f))
    compiled(x)
    with _refused(_line_of(f, tag)):
        compiled(on)


def safe_inverse(x):
    if np.any(x == 0.0):              # a check that comes out False: fine
        raise ZeroDivisionError
    if np.isnan(x).any() or np.any(x != x):
        raise ValueError
    n = x.shape[0]
    if n == 2 and x.astype(np.int64)[0] == 1:      # integers: no exact-equality issue
        return np.sum(1.0 / x)
    return np.sum(2.0 / x)


def test_false_equalities_integers_and_nan_checks_still_work():
    x = np.array([1.5, -2.0])
    assert_close(tg.grad(safe_inverse)(x), -1.0 / x ** 2, 1e-15, "grad")
    assert_close(tg.jit(tg.grad(safe_inverse))(x), -1.0 / x ** 2, 1e-15, "jit(grad)")
    # an integer argument compared with ==, and a float argument not differentiated
    f = tg.grad(lambda w, n, y: w * 2.0 if n == 3 and y == 1.0 else w * 3.0)
    assert f(1.0, 3, 1.0) == 2.0
    assert tg.jit(f)(1.0, 3, 1.0) == 2.0
