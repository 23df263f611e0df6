"""The first use of a backward plan is its making (``plans.first_use``): the sweep runs on
the trace's values, so its numbers, warnings and the plan it leaves must be those of the
plan's later runs; nested ``tg.vjp`` reuses the forward pass it inlined; a Python float
operand is one constant node per number and line."""
import warnings

import numpy as np

import tracegrad as tg
from tracegrad.autodiff import plans


def egrad(fun):
    def e(x):
        out, pull = tg.vjp(fun, x)
        return pull(np.ones_like(out))[0]
    return e


def tanh(x):
    return (1.0 - np.exp(-2 * x)) / (1.0 + np.exp(-(2 * x)))


def test_nested_elementwise_grads_to_the_fourth_order():
    x = np.linspace(-3, 3, 41)
    t = np.tanh(x)
    want = [1 - t ** 2, -2 * t * (1 - t ** 2), (1 - t ** 2) * (6 * t ** 2 - 2),
            (1 - t ** 2) * (16 * t - 24 * t ** 3)]
    plans.clear()
    f = tanh
    for order in range(4):
        f = egrad(f)
        first = f(x)
        np.testing.assert_allclose(first, want[order], rtol=1e-9, atol=1e-12)
        np.testing.assert_array_equal(f(x), first)          # the cached plan's run
        np.testing.assert_allclose(tg.jit(f)(x), first, rtol=1e-12, atol=1e-12)


def test_a_nested_vjp_records_its_forward_pass_once():
    graph = tg.trace(egrad(tanh), np.linspace(-1, 1, 5))
    ops = [graph.node(n)["op"] for n in graph]
    assert ops.count("exp") == 2        # tanh's two exps, not replayed again by the adjoint


def test_first_use_warns_where_the_plan_would_and_nowhere_else():
    def cube(x):           # pow's exponent gets no gradient: its log(x) is never computed
        return np.sum(x ** 3.0)

    def root(x):
        return np.sum(np.sqrt(x))

    x = np.array([-2.0, -0.5, 1.5])
    for _ in range(2):
        plans.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            np.testing.assert_array_equal(tg.grad(cube)(x), 3 * x ** 2)
        assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]
    z = np.array([0.0, 4.0])
    for use in range(3):
        if use == 0:
            plans.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            g = tg.grad(root)(z)
        assert any("divide by zero" in str(w.message) for w in caught), use
        np.testing.assert_array_equal(g, [np.inf, 0.25])


def test_a_vjp_first_pulled_after_its_outputs_were_overwritten():
    def f(x):
        y = np.sin(x)
        return y * y, y

    x = np.array([0.3, -1.2, 2.0])
    plans.clear()
    (a, b), pull = tg.vjp(f, x)
    a[:] = 7.0
    b[:] = -3.0
    (g,) = pull((np.ones(3), np.ones(3)))
    np.testing.assert_allclose(g, 2 * np.sin(x) * np.cos(x) + np.cos(x), rtol=1e-12)


def test_float_constants_keep_their_sign_and_dtype():
    def f(x):
        return 1.0 / (x * 0.0), 1.0 / (x * -0.0), x.astype(np.float32) * 0.0

    with np.errstate(divide="ignore"):
        pos, neg, small = tg.jit(f)(np.array([1.0, 2.0]))
    assert np.isposinf(pos).all() and np.isneginf(neg).all()
    assert small.dtype == np.float32 and pos.dtype == np.float64
    g = tg.grad(lambda x: np.sum(x * 0.5 + x * x * 0.5))(np.array([2.0, 3.0]))
    np.testing.assert_array_equal(g, [2.5, 3.5])


def test_a_structure_met_once_gives_the_plans_numbers_in_arrays_of_its_own():
    # met once: one sweep on the values, no plan (plans.once); met again: the plan made
    # from that sweep; then its runs, interpreted and compiled: the same numbers
    def f(x, y):
        return np.sum(np.sin(x) * y + x + y)

    x, y = np.array([0.3, -1.2, 2.0]), np.array([1.5, 0.5, -2.0])
    plans.clear()
    got = []
    for use in range(4):
        gx, gy = tg.grad(f, argnums=(0, 1))(x, y)
        kinds = [type(p).__name__ for p in plans.PLANS.values()]
        assert kinds == (["Seen"] if use == 0 else ["Plan"])
        assert not np.shares_memory(gx, gy) and gx.flags.writeable
        got.append((gx.copy(), gy.copy()))
        gx[:] = 7.0         # the caller's own arrays
    for gx, gy in got:
        np.testing.assert_array_equal(gx, got[0][0])
        np.testing.assert_array_equal(gy, got[0][1])
    np.testing.assert_allclose(got[0][0], np.cos(x) * y + 1, rtol=1e-12)
    np.testing.assert_allclose(got[0][1], np.sin(x) + 1, rtol=1e-12)
    # a cotangent handed back as it is: a copy, never the caller's array
    for _ in range(2):
        plans.clear()
        ct = np.array([1.0, 2.0])
        (g,) = tg.vjp(lambda v: v * 1.0 + 0.0, np.zeros(2))[1](ct)
        assert not np.shares_memory(g, ct)
        np.testing.assert_array_equal(g, ct)


def test_an_inlined_derivative_of_an_argument_held_constant_outside():
    # the inner grad differentiates the exponent y, which the enclosing trace holds as a
    # constant (an array the outer function built): pow's rule would take a constant
    # exponent for one and drop its cotangent, so the inlined sweep is not used there
    def outer(a):
        z = np.zeros(2)
        z[0], z[1] = 1.5, 2.0
        g = tg.grad(lambda y: np.sum(a ** y))(z)      # a ** y * log(a)
        return np.sum(g * a)

    a = np.array([1.3, 2.2])
    z = np.array([1.5, 2.0])
    want = (z + 1) * a ** z * np.log(a) + a ** z
    plans.clear()
    for _ in range(plans.REPLAY_AFTER + 1):
        np.testing.assert_allclose(tg.grad(outer)(a), want, rtol=1e-12)


def test_nested_derivatives_first_inlined_then_replayed_give_the_same_numbers():
    x = np.linspace(-2, 2, 9)
    plans.clear()
    f3 = egrad(egrad(egrad(tanh)))
    first = f3(x)
    for _ in range(plans.REPLAY_AFTER + 2):
        np.testing.assert_array_equal(f3(x), first)
    assert any(isinstance(p, plans.Replay) for p in plans.PLANS.values())
    t = np.tanh(x)
    np.testing.assert_allclose(first, (1 - t ** 2) * (6 * t ** 2 - 2), rtol=1e-9, atol=1e-12)
