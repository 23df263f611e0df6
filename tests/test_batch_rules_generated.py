"""Every batching rule in the registry, checked on every primitive's test cases: the
batched node (``passes.batch`` with the rule) equals the per-example results stacked,
for each combination of batched and unbatched operands.

Generated from ``REGISTRY`` and ``primitive_cases.CASES``, so a new rule (or a new case)
is covered without a new test. Float operands get rows scaled apart (``x * (1 + 0.01 k)``,
which stays in the domain of ``log`` or ``cholesky``), integer operands (indices) rows
whose values are rolled (still valid indices), so that rows differ.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg
from tracegrad.ir import REGISTRY, apply
from tracegrad.passes.batch import batch
from tracegrad.runtime import run

from primitive_cases import CASES

SIZE = 3


def _rows(a, size):
    a = np.asarray(a)
    if a.dtype.kind in "fc":
        return np.stack([a * (1.0 + 0.01 * k) for k in range(size)])
    if a.dtype.kind in "iu" and a.size > 1:
        return np.stack([np.roll(a.ravel(), k).reshape(a.shape) for k in range(size)])
    return np.stack([a] * size)


def _combos():
    out = []
    for name in sorted(REGISTRY):
        if REGISTRY[name].batch is None:
            continue
        for i, case in enumerate(CASES.get(name, [])):
            arrays = [k for k, a in enumerate(case.args) if isinstance(a, np.ndarray)]
            if not arrays or len(arrays) != len(case.args):
                continue
            for r in range(1, len(arrays) + 1):
                for subset in itertools.combinations(arrays, r):
                    out.append((name, i, subset))
    return out


COMBOS = _combos()


def test_every_rule_has_cases():
    ruled = {n for n, p in REGISTRY.items() if p.batch is not None}
    covered = {n for n, _, _ in COMBOS}
    # (a primitive of non-array operands only is checked elsewhere; most have cases here)
    assert len(covered) >= 0.8 * len(ruled), sorted(ruled - covered)
    for name in ("getitem", "index_update", "conv2d", "matmul", "sum", "exp"):
        assert name in covered, name


@pytest.mark.parametrize("name,i,subset", bounded(COMBOS, 150, key=lambda c: c[0]))
def test_rule_equals_stacked_rows(name, i, subset):
    case = CASES[name][i]
    args = [np.asarray(a) for a in case.args]

    def f(*xs):
        return apply(name, *xs, **case.params)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            graph = tg.trace(f, *args)
        except Exception:   # noqa: BLE001 - a case about an error
            pytest.skip("the case is refused when traced")
        stacked = [_rows(a, SIZE) if k in subset else a for k, a in enumerate(args)]
        wants = []
        for r in range(SIZE):
            try:
                w = f(*[s[r] if k in subset else s for k, s in enumerate(stacked)])
            except Exception:   # noqa: BLE001 - a rolled index out of this case's domain
                pytest.skip("a row is outside the primitive's domain")
            wants.append(w if isinstance(w, tuple) else (w,))
        stats = {}
        bg = batch(graph, list(subset), SIZE, stats=stats)
        outs = run(bg, stacked)
    assert len(outs) == len(wants[0])
    for r in range(SIZE):
        for o, w in zip(outs, wants[r]):
            w = np.asarray(w)
            assert o.shape == (SIZE,) + w.shape
            low = w.dtype in (np.float32, np.complex64, np.float16)   # summed in another order
            np.testing.assert_allclose(o[r], w, rtol=3e-5 if low else 1e-6,
                                       atol=1e-5 if low else 1e-9, equal_nan=True,
                                       err_msg=f"{name} case {i} batched over {subset}")


# the cases of the rules added for torch.func's workloads, each combination checked
@pytest.mark.parametrize("key,batched", [
    ((0, np.array([2, 0]), "i"), (0,)), ((0, np.array([2, 0]), "i"), (1,)),
    ((slice(None), "i"), (0, 1)), ((slice(None), "i"), (1,)),
    ((1, slice(None), "i"), (0, 1)), (("i", slice(None), "i"), (0, 1)),
    ((slice(None), "i", slice(1, 3)), (1,)), ((Ellipsis, "i"), (0, 1)),
])
def test_getitem_and_index_update_with_batched_indices(key, batched):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 5))
    idx = rng.integers(0, 3, (2, 2))

    def spell(ix):
        return tuple(ix if isinstance(k, str) else k for k in key)
    # x[key] and x[key] += v, as tg.trace records them (an index operand when traced)

    def get(x, ix):
        return x[spell(ix)]

    def upd(x, ix):
        v = np.ones(np.shape(x[spell(ix)]))
        y = x * 1.0
        y[spell(ix)] = v * 2.0
        return y
    for f in (get, upd):
        graph = tg.trace(f, x, idx)
        stacked = [_rows(x, SIZE) if 0 in batched else x,
                   _rows(idx, SIZE) if 1 in batched else idx]
        stats = {}
        outs = run(batch(graph, list(batched), SIZE, stats=stats), stacked)
        assert stats.get("fallback", 0) == 0, stats
        for r in range(SIZE):
            want = f(*[s[r] if k in batched else s for k, s in enumerate(stacked)])
            np.testing.assert_allclose(outs[0][r], want, rtol=1e-12)


# -- tg.vmap reuses the batched graph of a structure it has seen (autodiff.PLANS) -----------
def test_repeated_vmap_reuses_the_batched_graph_with_this_calls_constants(monkeypatch):
    import importlib
    vmap_module = importlib.import_module("tracegrad.transforms.vmap")
    passes = []
    real = vmap_module.batch

    def counting(graph, *a, **k):
        passes.append(graph)
        return real(graph, *a, **k)
    monkeypatch.setattr(vmap_module, "batch", counting)
    rng = np.random.default_rng(7)
    xs = rng.standard_normal((5, 4))
    for _ in range(4):
        w = rng.standard_normal((4, 3))       # a constant of the trace, new on each call

        def f(x, w=w):
            return np.tanh(x @ w)[np.array([2, 0])] * 2.0
        out = tg.vmap(f)(xs)
        np.testing.assert_allclose(out, np.stack([f(x) for x in xs]), rtol=1e-12)
    assert len(passes) == 1                   # one batching pass for the four calls
    tg.vmap(lambda x: np.sin(x))(xs[:3])      # another batch size: another structure
    assert len(passes) == 2


def test_a_branch_on_a_mapped_value_is_refused_on_every_call():
    def f(x):
        return x * 2 if x.sum() > -100 else x
    for _ in range(2):
        with pytest.raises(tg.TraceError, match="branch that depends on a batched"):
            tg.vmap(f)(np.ones((3, 2)))
