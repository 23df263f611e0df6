"""Un-jitted grad / value_and_grad reuse backward plans cached by the traced structure
(``tracegrad.autodiff.plans``): repeated calls must give exactly what a fresh, uncached call
gives, whatever changes between calls (branches, shapes, dtypes, constants' values,
parameters), and agree with finite differences."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.autodiff import plans, runner

# calls of one structure: its plan runs interpreted, then compiled (runner.py)
USES = runner.PLAN_COMPILE_AFTER + 2


def fresh(transform, *args):
    """``transform(*args)`` with no plan cached (the uncached path's first use)."""
    saved = plans.PLANS.items()
    plans.clear()
    try:
        return transform(*args)
    finally:
        for key, plan in saved:
            plans.PLANS.put(key, plan)


def numeric_grad(f, x, eps=1e-6):
    x = np.asarray(x, dtype=float)
    g = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def assert_same(a, b):
    la, lb = tg.tracer.flatten(a)[0], tg.tracer.flatten(b)[0]
    assert len(la) == len(lb)
    for u, v in zip(la, lb):
        assert type(u) is type(v)
        assert np.shape(u) == np.shape(v) and np.asarray(u).dtype == np.asarray(v).dtype
        np.testing.assert_array_equal(u, v)


def branchy(x):
    if np.sum(x) > 0:
        return np.sum(np.sin(x) * x)
    return np.sum(x ** 3) * 0.5


def test_alternating_branches_match_fresh_calls_and_finite_differences():
    rng = np.random.default_rng(0)
    g = tg.grad(branchy)
    for k in range(8):
        x = rng.standard_normal(4) + (2.0 if k % 2 else -2.0)
        got = g(x)
        assert_same(got, fresh(g, x))
        np.testing.assert_allclose(got, numeric_grad(branchy, x), rtol=1e-6, atol=1e-8)


def test_a_loop_count_taken_from_a_value_changes_between_calls():
    def f(x):
        for _ in range(int(np.abs(tg.stop_gradient(x[0]))) + 1):   # the trip count is data
            x = np.tanh(x) * 1.5
        return np.sum(x)

    g = tg.grad(f)
    for first in (0.5, 2.5, 1.2, 3.7, 0.1, 2.2):
        x = np.array([first, -0.3, 0.8])
        got = g(x)
        assert_same(got, fresh(g, x))
        np.testing.assert_allclose(got, numeric_grad(f, x), rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("shapes", [[(3,), (4,), (3,), (2, 3), (4,)]], ids=["mixed"])
def test_alternating_shapes(shapes):
    def f(x):
        return np.sum(np.exp(x) * x.reshape(-1)[0])

    g = tg.grad(f)
    rng = np.random.default_rng(1)
    for shape in shapes:
        x = rng.standard_normal(shape)
        got = g(x)
        assert got.shape == shape
        assert_same(got, fresh(g, x))
        np.testing.assert_allclose(got, numeric_grad(f, x), rtol=1e-6, atol=1e-8)


def test_alternating_dtypes_keep_each_dtype():
    def f(x, w):
        return np.sum(np.tanh(x * w))

    g = tg.grad(f, argnums=(0, 1))
    for dtype in (np.float32, np.float64, np.float32, np.float64):
        x = np.linspace(-1, 1, 5).astype(dtype)
        gx, gw = g(x, 0.7)
        assert gx.dtype == dtype and type(gw) is type(fresh(g, x, 0.7)[1])
        assert_same((gx, gw), fresh(g, x, 0.7))
        gx2, _ = g(x, np.asarray(0.7, dtype))
        assert gx2.dtype == dtype


def test_changing_constant_values_are_used_on_every_call():
    c = np.array([1.0, 2.0, 3.0])
    scale = [0.5]

    def f(x):
        return np.sum((x - c) ** 2) * scale[0] + np.sum(x * 2.0 ** scale[0])

    g = tg.grad(f)
    x = np.array([0.3, -0.2, 1.1])
    for k in range(6):
        c[:] = [k, -k, 2.0 * k]          # the closed-over array changes in place
        scale[0] = 0.25 * (k + 1)         # and so does a Python float
        got = g(x)
        want = 2 * (x - c) * scale[0] + 2.0 ** scale[0]
        np.testing.assert_allclose(got, want, rtol=1e-12)
        assert_same(got, fresh(g, x))


def test_changing_exponents_and_parameters():
    def make(p, axis, start):
        def f(x):
            return np.sum(np.sum(x[start:] ** p, axis=axis) ** 2)
        return f

    x = np.random.default_rng(2).uniform(0.5, 1.5, (4, 3))
    for p, axis, start in [(2.0, 0, 0), (3.0, 0, 0), (2.0, 1, 0), (2.0, 0, 1), (0.5, 1, 2),
                           (2.0, 0, 0)]:
        f = make(p, axis, start)
        got = tg.grad(f)(x)
        assert_same(got, fresh(tg.grad(f), x))
        np.testing.assert_allclose(got, numeric_grad(f, x), rtol=1e-6, atol=1e-8)


def test_a_constant_exponent_changing_between_calls_of_one_structure():
    # a one-element constant exponent is part of the plan's key and a constant of its
    # graph (x ** 2's plain rule); every exponent, zero and -0.0 among them, through the
    # interpreted and the compiled plan
    box = [2.0]

    def f(x):
        return np.sum(x ** box[0] * 1.5) + np.sum(x ** np.array([box[0]]))

    g = tg.grad(f)
    x = np.array([0.5, 1.5, 2.0, 0.0])
    exps = [2.0, 3.0, 0.0, -0.0, 1.0, 0.5, 2.0, -1.0, 2.0, 3.0]
    for _ in range(2):
        for p in exps * 2:
            box[0] = p
            with np.errstate(all="ignore"):
                got = g(x)
                want = np.where(p == 0, 0.0, 2.5 * p * x ** (p - 1.0))
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_allclose(got, want, rtol=1e-14, err_msg=f"exponent {p}")
            assert_same(got, fresh(g, x))
    box[0] = 2.0
    plans.clear()
    for _ in range(USES):
        g(x)
    (plan,) = [v for v in plans.PLANS.values() if isinstance(v, plans.Plan)]
    assert "select" not in plan.graph.ops() and plan.run.compiled is not None


def test_writing_into_a_vjp_output_before_pulling_back_inside_a_trace():
    # the adjoint reads the output as tg.vjp handed it out, not as written afterwards
    def f(x):
        out, pull = tg.vjp(lambda v: np.exp(np.sin(v) * v), x)   # (exp's rule reads out)
        before = out.copy()
        out[0] = 10.0           # (rebinds the tracer handed out to a new node)
        out += 3.0
        return np.sum(pull(out)[0] * before) + np.sum(out)

    x = np.array([0.3, -0.8, 1.2])
    for _ in range(USES):
        np.testing.assert_allclose(tg.grad(f)(x), numeric_grad(f, x), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(tg.jit(f)(x), f(x), rtol=1e-14)


def test_constant_index_arrays_change_between_calls():
    x = np.arange(5.0) + 1.0
    for idx in ([0, 1, 1], [4, 2, 0], [3, 3, 3], [0, 1, 1]):
        idx = np.array(idx)

        def f(x, idx=idx):
            return np.sum(x[idx] ** 2)

        got = tg.grad(f)(x)
        want = np.zeros(5)
        np.add.at(want, idx, 2 * x[idx])
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_value_and_grad_and_has_aux_repeat():
    def f(w, x):
        y = np.tanh(x @ w)
        return np.mean(y ** 2), {"y": y, "n": np.sum(y > 0)}

    rng = np.random.default_rng(3)
    vg = tg.value_and_grad(f, has_aux=True)
    g = tg.grad(f, has_aux=True)
    for _ in range(USES):
        w, x = rng.standard_normal(3), rng.standard_normal((5, 3))
        (value, aux), grad = vg(w, x)
        assert_same(((value, aux), grad), fresh(vg, w, x))
        grad2, aux2 = g(w, x)
        assert_same((grad2, aux2), fresh(g, w, x))
        np.testing.assert_allclose(value, np.mean(np.tanh(x @ w) ** 2), rtol=1e-12)
        np.testing.assert_allclose(grad, numeric_grad(lambda v: f(v, x)[0], w), rtol=1e-6)


def test_python_number_arguments_give_numpy_scalars_every_time():
    g = tg.grad(lambda a, b: a * b + np.sin(a), argnums=(0, 1))
    for k in range(4):
        ga, gb = g(0.3 * k, 2.0)
        assert type(ga) is np.float64 and type(gb) is np.float64
        assert ga == pytest.approx(2.0 + np.cos(0.3 * k)) and gb == pytest.approx(0.3 * k)


def test_float32_inputs_with_python_number_constants():
    def f(x):
        return np.sum(np.sin(x) * 0.5 + 1.0)

    g = tg.grad(f)
    for k in range(3):
        x = np.arange(3, dtype=np.float32) * (k + 1)
        got = g(x)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, 0.5 * np.cos(x), rtol=1e-6)


def test_complex_inputs_repeat():
    g = tg.grad(lambda z: np.sum(np.abs(z * z) ** 2))
    h = tg.grad(lambda z: np.sum(z ** 3), holomorphic=True)
    for k in range(3):
        z = np.array([1.0 + 0.5j, -0.3 + 2.0j]) * (k + 1)
        assert_same(g(z), fresh(g, z))
        np.testing.assert_allclose(h(z), 3 * z ** 2, rtol=1e-12)
        assert_same(h(z), fresh(h, z))


def test_results_are_fresh_writeable_arrays_on_repeated_calls():
    x = np.array([1.0, 2.0, 3.0])
    for f in (lambda v: np.sum(v), lambda v: v[1] * 1.0, lambda v: np.sum(v * x)):
        g = tg.grad(f)
        first = g(x)
        want = first.copy()
        for _ in range(USES):
            out = g(x)
            assert out.flags.writeable and not np.shares_memory(out, x)
            np.testing.assert_array_equal(out, want)
            out += 100.0        # the caller owns it: later results must not change
        np.testing.assert_array_equal(g(x), want)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


def test_two_arguments_that_are_one_array():
    g = tg.grad(lambda a, b: np.sum(a * b), argnums=(0, 1))
    x = np.array([1.0, 2.0])
    for _ in range(USES):
        ga, gb = g(x, x)
        assert not np.shares_memory(ga, gb) and not np.shares_memory(ga, x)
        np.testing.assert_array_equal(ga, x)
        np.testing.assert_array_equal(gb, x)


def test_nested_transforms_still_inline():
    def f(x):
        return np.sum(np.sin(x) * x ** 2)

    x = np.array([0.3, -1.2, 0.7])
    for _ in range(3):
        hess = tg.hessian(f)(x)
        numeric = np.stack([numeric_grad(lambda v, i=i: tg.grad(f)(v)[i], x)
                            for i in range(3)])
        np.testing.assert_allclose(hess, numeric, rtol=1e-5, atol=1e-7)
        gg = tg.grad(lambda s: tg.grad(lambda t: np.sin(t) * t)(s))
        assert gg(0.4) == pytest.approx(2 * np.cos(0.4) - 0.4 * np.sin(0.4))


def test_uncacheable_structures_take_the_uncached_path():
    def f(x):
        y = tg.cond(np.sum(x) > 0, lambda v: np.sin(v), lambda v: v ** 2, x)
        return np.sum(tg.fori_loop(0, 3, lambda i, c: c * 1.1, y))

    g = tg.grad(f)
    for sign in (1.0, -1.0, 1.0):
        x = sign * np.array([0.5, 1.0])
        np.testing.assert_allclose(g(x), numeric_grad(f, x), rtol=1e-6)


def test_custom_vjp_repeats():
    @tg.custom_vjp
    def clip_grad(x):
        return x

    clip_grad.defvjp(lambda x: (x, None), lambda _, g: (np.clip(g, -1.0, 1.0),))
    g = tg.grad(lambda x: np.sum(clip_grad(x) * 3.0))
    for _ in range(USES):
        np.testing.assert_array_equal(g(np.ones(2)), [1.0, 1.0])


def test_errors_are_raised_on_every_call():
    g = tg.grad(lambda x: x * 2.0)
    for _ in range(3):
        with pytest.raises(tg.TraceError, match="return a scalar"):
            g(np.ones(3))
    assert tg.grad(lambda x: np.sum(x))(np.ones(2)).tolist() == [1.0, 1.0]


def test_the_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(plans.PLANS, "size", 4)
    for n in range(1, 10):
        g = tg.grad(lambda x: np.sum(x ** 2))(np.ones(n))
        np.testing.assert_array_equal(g, 2 * np.ones(n))
    assert len(plans.PLANS) <= 4


def test_a_repeated_structure_runs_compiled_code():
    def f(x):
        return np.sum(np.cos(x) * x)

    plans.clear()
    x = np.array([0.1, 0.2])
    for _ in range(runner.PLAN_COMPILE_AFTER + 1):
        np.testing.assert_allclose(tg.grad(f)(x), np.cos(x) - x * np.sin(x), rtol=1e-12)
    (plan,) = [p for p in plans.PLANS.values() if isinstance(p, plans.Plan)]
    assert plan.run.compiled is not None and "tracegrad_backward" in plan.run.compiled.source


def test_vjp_repeats_and_keeps_its_values_from_the_caller():
    def f(x):
        return np.exp(x) * 2.0, np.sum(x ** 2)

    x = np.array([0.1, -0.4, 0.3])
    for k in range(3):
        (y, s), pull = tg.vjp(f, x * (k + 1))
        want = pull((np.ones(3), 1.0))[0]
        y *= 0.0            # the outputs are the caller's: vjp_fn must not see this
        got = pull((np.ones(3), 1.0))[0]
        np.testing.assert_array_equal(got, want)
        v = x * (k + 1)
        np.testing.assert_allclose(got, 2.0 * np.exp(v) + 2 * v, rtol=1e-12)
        np.testing.assert_allclose(s, np.sum(v ** 2), rtol=1e-12)


def test_vjp_with_traced_cotangents_inlines():
    def f(x):
        return np.sin(x) * x

    def through_vjp(x):
        _, pull = tg.vjp(f, x)
        return np.sum(pull(x)[0])

    x = np.array([0.2, 0.9])
    for _ in range(USES):
        np.testing.assert_allclose(tg.grad(through_vjp)(x), numeric_grad(through_vjp, x),
                                   rtol=1e-6)
        ct = np.array([1.0, -2.0])
        _, pull = tg.vjp(f, x)
        np.testing.assert_allclose(tg.grad(lambda c: np.sum(pull(c)[0]))(ct),
                                   np.sin(x) + x * np.cos(x), rtol=1e-12)


# -- a grad inside another transform: the adjoint graph it inlines is cached ------------------
def uncached(transform, *args):
    """``transform(*args)`` with no inlined adjoint cached and none made: the uncached
    path (every structure fails to make a ``plans.Replay``)."""
    saved = plans.PLANS.items()
    plans.clear()
    real = plans.Replay.__init__

    def refuse(self, *a, **k):
        raise RuntimeError("not cached in this test")
    plans.Replay.__init__ = refuse
    try:
        return transform(*args)
    finally:
        plans.Replay.__init__ = real
        plans.clear()
        for key, plan in saved:
            plans.PLANS.put(key, plan)


def replays():
    return [p for p in plans.PLANS.values() if isinstance(p, plans.Replay)]


def two_constants(x):
    """Both branches trace the same structure; only a constant's value differs."""
    c = 2.0 if np.sum(x) > 0 else 3.0
    return np.sum(np.sin(x) * x ** 2) * c


def second(x):
    return np.sum(tg.grad(two_constants)(x) * np.cos(x))


def second_numeric(x):
    return numeric_grad(lambda v: np.sum(_grad_exact(v) * np.cos(v)), x)


def _grad_exact(x):
    c = 2.0 if np.sum(x) > 0 else 3.0
    return (np.cos(x) * x ** 2 + 2 * x * np.sin(x)) * c


def test_inlined_grads_with_the_same_structure_and_other_constants():
    g = tg.grad(second)
    plans.clear()
    # inlined by a sweep while the structure is met fewer than REPLAY_AFTER times, then
    # from its cached Replay: the same numbers both ways
    for sign in (1.0, -1.0, 1.0, -1.0, -1.0, 1.0) * plans.REPLAY_AFTER:
        x = sign * np.array([0.4, 1.1, 0.3])
        got = g(x)
        np.testing.assert_allclose(got, second_numeric(x), rtol=1e-6, atol=1e-8)
        np.testing.assert_array_equal(got, uncached(g, x))
    assert len(replays()) == 1      # one structure: both branches used the same entry


def test_jit_of_grad_retraces_on_a_branch_decided_inside_the_inlined_grad():
    # the guard of the inner trace (np.sum(x) > 0) must reach the compiled function even
    # when its adjoint graph came from the cache
    plans.clear()
    for _ in range(2):
        f = tg.jit(tg.grad(two_constants))
        for sign in (1.0, -1.0, 1.0, -1.0):
            x = sign * np.array([0.4, 1.1, 0.3])
            np.testing.assert_allclose(f(x), _grad_exact(x), rtol=1e-12)
    h = tg.jit(tg.grad(second))
    for sign in (-1.0, 1.0, -1.0):
        x = sign * np.array([0.4, 1.1, 0.3])
        np.testing.assert_allclose(h(x), second_numeric(x), rtol=1e-6, atol=1e-8)


def test_inlined_grads_with_other_shapes_dtypes_and_captured_values():
    def outer(y, x):
        # the inner function closes over the outer tracer y (a captured input)
        return np.sum(tg.grad(lambda v: np.sum(np.tanh(v * y) * y))(x) ** 2)

    def outer_numeric(y, x):
        def inner_grad(yy):
            t = np.tanh(x * yy)
            return (1 - t ** 2) * yy * yy
        return numeric_grad(lambda yy: np.sum(inner_grad(yy) ** 2), y)

    g = tg.grad(outer)
    rng = np.random.default_rng(4)
    for n, dtype in [(3, np.float64), (4, np.float64), (3, np.float32), (3, np.float64)]:
        y = rng.uniform(0.5, 1.0, n).astype(dtype)
        x = rng.uniform(-1.0, 1.0, n).astype(dtype)
        got = g(y, x)
        assert got.dtype == dtype and got.shape == (n,)
        assert_same(got, uncached(g, y, x))
        if dtype == np.float64:
            np.testing.assert_allclose(got, outer_numeric(y, x), rtol=1e-6, atol=1e-8)


def test_an_inlined_argument_and_a_captured_value_are_told_apart():
    # the inner traces record the same nodes (input, input, mul, sum) on the same line;
    # their second input is an argument of the inner grad in one, a captured value in
    # the other
    def outer(a, b, by_arg):
        gv = tg.grad(lambda v, *u: np.sum((u[0] if u else a) * v), argnums=(0, 1) if by_arg else 0)(b, *((a,) if by_arg else ()))  # noqa: E501
        return np.sum((gv[0] if by_arg else gv) * b)

    a, b = np.array([0.5, 2.0]), np.array([1.5, -1.0])
    plans.clear()
    for by_arg in (False, True, False, True):
        got = tg.grad(outer, argnums=(0, 1))(a, b, by_arg)
        np.testing.assert_allclose(got, [b, a], rtol=1e-12)


def test_inlined_value_and_grad_with_aux_repeats():
    def inner(w, x):
        y = np.tanh(x @ w)
        return np.mean(y ** 2), y

    def outer(w, x):
        (value, y), gw = tg.value_and_grad(inner, has_aux=True)(w, x)
        return value + np.sum(gw ** 2) + 0.1 * np.sum(y)

    rng = np.random.default_rng(5)
    g = tg.grad(outer)
    for _ in range(USES):
        w, x = rng.standard_normal(3), rng.standard_normal((4, 3))
        got = g(w, x)
        assert_same(got, uncached(g, w, x))
        np.testing.assert_allclose(got, numeric_grad(lambda v: outer(v, x), w), rtol=1e-5,
                                   atol=1e-8)


def test_inlined_vjps_repeat_with_other_constants():
    def egrad(fun):
        def g(x):
            out, pull = tg.vjp(fun, x)
            return pull(np.ones_like(out))[0]
        return g

    def f(x, c):
        return np.tanh(x * c) * c

    x = np.linspace(-1.5, 1.5, 5)
    plans.clear()
    for c in (0.5, 2.0, 0.5, 1.5) * plans.REPLAY_AFTER:
        f2 = egrad(egrad(lambda v, c=c: f(v, c)))
        t = np.tanh(x * c)
        want = -2 * t * (1 - t ** 2) * c ** 3
        got = f2(x)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
        assert_same(got, uncached(f2, x))
        np.testing.assert_allclose(tg.jit(f2)(x), want, rtol=1e-12, atol=1e-14)
    assert replays()


def test_a_large_plan_is_interpreted_until_compiling_pays():
    def f(x):
        for _ in range(300):
            x = np.sin(x) * 0.9
        return np.sum(x)

    def exact(x):
        g = np.ones_like(x)
        for _ in range(300):
            g = g * np.cos(x) * 0.9
            x = np.sin(x) * 0.9
        return g

    plans.clear()
    x = np.array([0.3, -0.8, 1.2])
    want = exact(x)
    for use in range(1, runner.COMPILE_LARGE_AFTER + 2):
        np.testing.assert_allclose(tg.grad(f)(x), want, rtol=1e-12)
        found = [p for p in plans.PLANS.values() if isinstance(p, plans.Plan)]
        if use == 1:        # met once: differentiated by one sweep, the plan made next time
            assert not found and [type(p) for p in plans.PLANS.values()] == [plans.Seen]
            continue
        (plan,) = found
        assert len(plan.graph) >= runner.LARGE_PLAN
        assert (plan.run.compiled is not None) == (use >= runner.COMPILE_LARGE_AFTER)
