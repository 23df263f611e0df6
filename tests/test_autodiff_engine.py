"""The engine both front ends share (``tracegrad.autodiff``): its one bounded cache, the
structural keys, the interpret-then-compile policy."""
import math
import threading

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.autodiff import PLANS, Runner, Uncacheable, compile_after, freeze, freeze_params
from tracegrad.autodiff.runner import COMPILE_AFTER, COMPILE_LARGE_AFTER, LARGE_PLAN
from tracegrad.eager import engine
from tracegrad.ir.lru import LRU


def test_lru_drops_the_least_recently_used_entry():
    c = LRU(3)
    for k in "abc":
        c.put(k, k.upper())
    assert c.get("a") == "A"            # a is now the most recent: b goes next
    c.put("d", "D")
    assert "b" not in c and len(c) == 3
    assert [c.get(k) for k in "acd"] == ["A", "C", "D"]
    assert c.get("b", 7) == 7
    c.put("a", "A2")                    # replacing keeps the size
    assert len(c) == 3 and c.get("a") == "A2"
    c.clear()
    assert len(c) == 0 and c.get("a") is None
    with pytest.raises(ValueError):
        LRU(0)


def test_lru_from_several_threads_keeps_its_bound_and_its_values():
    c = LRU(16)
    errors = []

    def work(t):
        try:
            for i in range(3000):
                k = (t, i % 40)
                v = c.get(k)
                if v is not None and v != k[1] * 3:
                    errors.append((k, v))
                c.put(k, k[1] * 3)
        except Exception as e:      # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors and len(c) <= 16


@pytest.mark.parametrize("a,b", [(0.0, -0.0), (1.0, 1), (True, 1), (np.float32(1), np.float64(1)),
                                 ((1, 2), [1, 2]), ({"x": 0.0}, {"x": -0.0}),
                                 (np.array([0.0]), np.array([-0.0])),
                                 (np.dtype("f4"), np.dtype("f8")), (slice(0, 1), slice(0, 2))])
def test_freeze_keeps_apart_parameters_a_plan_tells_apart(a, b):
    # the eager engine used to key {"x": 0.0} and {"x": -0.0} alike (dict items hash
    # equal): a plan for one would have run for the other
    assert freeze(a) != freeze(b)
    assert freeze(a) == freeze(a) and hash(freeze(a)) == hash(freeze(a))


def test_freeze_keys_nan_by_its_bits_and_refuses_what_it_cannot_compare():
    assert freeze(math.nan) == freeze(math.nan)
    with pytest.raises(Uncacheable):
        freeze(lambda: 0)
    with pytest.raises(Uncacheable):
        freeze(np.zeros(5000))
    with pytest.raises(Uncacheable):
        freeze(np.array([None]))
    f = lambda: 0   # noqa: E731
    assert freeze(f, objects=True) == freeze(f, objects=True) != freeze(lambda: 0, objects=True)
    assert freeze(np.zeros(5000), max_array=None)[0] == "nd"
    with pytest.raises(Uncacheable):
        freeze({1, 2}, objects=True)        # unhashable: no key even by identity
    assert freeze_params({}) == ()


def test_the_policy_interprets_then_compiles_with_the_same_numbers():
    g = tg.trace(lambda x: np.sin(x) * 2.0 + x, np.ones(3))
    r = Runner(g, owned=True)
    xs = np.array([0.5, -1.0, 2.0])
    want = np.sin(xs) * 2.0 + xs
    first = r([xs])
    assert r.compiled is None
    second = r([xs])
    assert r.compiled is not None and r.uses == 2
    for out in (first, second):
        np.testing.assert_array_equal(out[0], want)
        assert not np.shares_memory(out[0], xs)
    assert compile_after(10) == COMPILE_AFTER and compile_after(LARGE_PLAN) == COMPILE_LARGE_AFTER


def test_eager_backward_plans_live_in_the_one_cache():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(3):
        w.grad = None
        (w.sin() * w).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.cos([1.0, 2.0]) * [1.0, 2.0] + np.sin([1.0, 2.0]),
                               rtol=1e-6)
    plans = [p for p in PLANS.values() if isinstance(p, engine._Plan)]
    assert plans and any(p.run.compiled is not None for p in plans)
