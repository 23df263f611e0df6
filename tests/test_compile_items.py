"""``Tensor.item()`` / ``tolist()`` of integers inside ``tg.compile``: the number stays a
value of the graph (``eager/compile/scalars.py``), so a compiled call selects by its own
call's number, never by the one seen while capturing; any use that needs the Python value
breaks the graph and the call runs eagerly. Every case is compared with the same function
run eagerly, over calls whose numbers differ."""
import random

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.eager.compile.scalars import TracedInt


def argmax(vec):
    _, idx = tg.max(vec, 1)
    return idx.item()


def argmax_tolist(vec):         # the BiLSTM-CRF tutorial's older spelling
    _, idx = tg.max(vec, 1)
    return idx.view(-1).data.tolist()[0]


def log_sum_exp(vec, pick=argmax):
    max_score = vec[0, pick(vec)]
    b = max_score.view(1, -1).expand(1, vec.size()[1])
    return max_score + tg.log(tg.sum(tg.exp(vec - b)))


def forward_alg(w, feats, pick):
    fv = tg.full((1, 5), -10000.)
    fv[0][3] = 0.
    for feat in feats:
        alphas = []
        for nt in range(5):
            e = feat[nt].view(1, -1).expand(1, 5)
            alphas.append(log_sum_exp(fv + w[nt].view(1, -1) + e, pick).view(1))
        fv = tg.cat(alphas).view(1, -1)
    return log_sum_exp(fv, pick)


def runs(fn, args_per_call, compiled):
    f = tg.compile(fn) if compiled else fn
    return [f(*args) for args in args_per_call], f


def bits(t):
    return t.detach().numpy().copy()


@pytest.mark.parametrize("pick", [argmax, argmax_tolist])
def test_crf_forward_algorithm_compiled_is_eager_bit_for_bit(pick):
    tg.manual_seed(0)
    w = tg.randn(5, 5, requires_grad=True)
    feats = [tg.randn(4, 5) * 3 for _ in range(6)]
    results = {}
    for compiled in (False, True):
        f = tg.compile(forward_alg) if compiled else forward_alg
        out = []
        for x in feats:
            w.grad = None
            loss = f(w, x, pick)
            loss.backward()
            out.append((bits(loss), bits(w.grad)))
        results[compiled] = out
        if compiled:
            assert f.explain().graph_count == 1 and not f.explain().break_reasons
    for (la, ga), (lb, gb) in zip(results[False], results[True]):
        np.testing.assert_array_equal(la, lb)
        np.testing.assert_array_equal(ga, gb)
    # the argmaxes differ from call to call: a frozen index would have given other numbers
    assert len({float(lo) for lo, _ in results[False]}) == len(feats)


def _index_cases():
    def select(v, i):
        return v[0, i.item()] * 2

    def select_row(v, i):
        return v[i.item()].sum()

    def negative(v, i):
        return v[0, i.view(()).item()] + v[-1, i.item()]

    def view_written(v, i):
        r = v[0, i.item()]          # a view: writing it writes v
        r.mul_(3)
        return v * 1

    def base_written(v, i):
        r = v[i.item()]
        v.add_(1)                   # the view sees it
        return r * 1

    def setitem(v, i):
        v[i.item()] = 7.0
        return v * 1

    def setitem_pair(v, i):
        v[1, i.item()] = -1.0
        return v.sum(0)

    def tolist_pair(v, i):
        a, b = tg.stack([i, 2 - i]).view(-1).tolist()
        return v[a] - v[b]
    return [select, select_row, negative, view_written, base_written, setitem, setitem_pair,
            tolist_pair]


@pytest.mark.parametrize("fn", _index_cases(), ids=lambda f: f.__name__)
def test_indexing_by_an_item_follows_each_calls_number(fn):
    rng = np.random.RandomState(0)
    calls = [(rng.randn(3, 3).astype(np.float32), k) for k in (0, 2, 1, 2, 0, 1)]

    def run(compiled):
        f = tg.compile(fn) if compiled else fn
        out = []
        for v, k in calls:
            vt = tg.tensor(v.copy())
            r = f(vt, tg.tensor([k]))
            out.append((bits(r), bits(vt)))
        return out, f
    (eager, _), (comp, f) = run(False), run(True)
    for (ra, va), (rb, vb) in zip(eager, comp):
        np.testing.assert_array_equal(ra, rb)
        np.testing.assert_array_equal(va, vb)      # in-place changes of the argument too
    assert f.explain().graph_count == 1 and not f.explain().break_reasons


def _python_uses():
    lst = [10.0, 20.0, 30.0]
    return {
        "list index": lambda v, k: v * lst[k],
        "branch": lambda v, k: v * 2 if k else v,
        "arithmetic": lambda v, k: v[k + 1 - 1],
        "comparison": lambda v, k: v * (k == 1),
        "range": lambda v, k: sum((v for _ in range(k)), v),
        "shape": lambda v, k: tg.zeros(k, 1).sum() + v,
        "tensor of it": lambda v, k: v * tg.tensor(k),
        "float": lambda v, k: v * float(k),
        "format": lambda v, k: v * len(f"{k}"),
        "dict key": lambda v, k: v * {0: 1.0, 1: 2.0, 2: 3.0}[k],
        "slice": lambda v, k: v[k:],
        "with a list index": lambda v, k: tg.stack([v, v])[[0, 1], k],
    }


@pytest.mark.parametrize("use", list(_python_uses()))
def test_a_python_use_of_the_number_breaks_and_gives_eager_numbers(use):
    body = _python_uses()[use]

    def fn(v, i):
        return body(v, i.item())
    calls = [k for k in (1, 2, 1, 0, 2)]

    def run(compiled):
        f = tg.compile(fn) if compiled else fn
        v = tg.tensor([1.0, 2.0, 3.0])
        return [bits(f(v, tg.tensor(k))) for k in calls], f
    (eager, _), (comp, f) = run(False), run(True)
    for a, b in zip(eager, comp):
        np.testing.assert_array_equal(a, b)
    assert f.explain().graph_count == 0 and "Tensor.item()" in f.explain().break_reasons[0]
    assert "test_compile_items.py" in f.explain().break_reasons[0]


def test_a_float_or_a_long_tolist_breaks():
    f = tg.compile(lambda v: v * v.sum().item())
    g = tg.compile(lambda v, i: v[i.tolist()[0]])
    v = tg.tensor([1.0, 2.0])
    for _ in range(3):
        np.testing.assert_array_equal(f(v).numpy(), [3.0, 6.0])
        np.testing.assert_array_equal(g(v, tg.zeros(100, dtype=tg.long)).numpy(), 1.0)
    assert f.explain().graph_count == 0 and g.explain().graph_count == 0


def test_returning_or_storing_the_number_breaks():
    class Box:
        last = None
    box = Box()

    def returns(v, i):
        return v * 2, i.item()

    def stores(v, i):
        box.last = i.item()
        return v * 2

    for fn in (returns, stores):
        f = tg.compile(fn)
        for k in (1, 2, 3):
            out = f(tg.ones(2), tg.tensor(k))
            if fn is returns:
                assert out[1] == k and type(out[1]) is int
            else:
                assert box.last == k and type(box.last) is int
        assert f.explain().graph_count == 0


def test_a_number_kept_past_its_capture_raises_when_used():
    kept = {}

    def leak(v, i):
        kept["k"] = i.item()            # a dict the function does not reach from its
        return v * 2                    # arguments, closure or globals: not watched

    f = tg.compile(lambda v, i: leak(v, i))
    for k in (1, 2, 3):
        f(tg.ones(2), tg.tensor(k))
    k = kept["k"]
    if type(k) is TracedInt:            # captured: any use raises, never a stale number
        for use in (int, str, bool, lambda k: [0, 1, 2, 3][k], lambda k: k + 1):
            with pytest.raises(tg.TraceError, match="kept after it"):
                use(k)
    else:
        assert k == 3


def test_an_item_of_a_constant_made_inside_is_its_python_value():
    @tg.compile
    def f(v):
        n = tg.tensor([2]).item()
        return v * n, tg.arange(3).tolist()
    for _ in range(3):
        out, lst = f(tg.ones(2))
        np.testing.assert_array_equal(out.numpy(), [2.0, 2.0])
        assert lst == [0, 1, 2]
    assert f.explain().graph_count == 1


def test_python_random_index_with_traced_item_stays_eager_on_break():
    # a break after the number was read: the whole call runs eagerly, its draws eager's
    def fn(v, i):
        k = i.item()
        return v[k] * random.random() if k else v[0]
    f = tg.compile(fn)
    random.seed(0)
    got = [bits(f(tg.tensor([1.0, 2.0]), tg.tensor(1))) for _ in range(3)]
    random.seed(0)
    want = [bits(fn(tg.tensor([1.0, 2.0]), tg.tensor(1))) for _ in range(3)]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_the_forward_algorithm_on_the_jax_backend_to_rounding():
    pytest.importorskip("jax")
    tg.manual_seed(0)
    w = tg.randn(5, 5, requires_grad=True)
    f = tg.compile(forward_alg, backend="jax")
    for _ in range(4):
        x = tg.randn(3, 5) * 3
        w.grad = None
        a = forward_alg(w, x, argmax)
        a.backward()
        ga = w.grad.numpy().copy()
        w.grad = None
        b = f(w, x, argmax)
        b.backward()
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5)
        np.testing.assert_allclose(w.grad.numpy(), ga, rtol=1e-5, atol=1e-6)
    assert f.explain().graph_count == 1
