"""Issue 14's tensor methods (sorting, tests, logical, scatter/select, triangles, ...)
against torch CPU: the same call on the same data in both libraries must give the same
values and dtypes, the same error type where torch raises, and, for differentiable
results, the same ``.grad`` of every leaf (sort/topk send the gradient to the indices).
"""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

NAN = float("nan")
X = [[3.0, 1.0, 2.0, 1.0], [NAN, 0.0, -1.0, 5.0], [0.5, 0.5, -2.0, 4.0]]
FINITE = [[3.0, 1.0, 2.0, 1.0], [0.25, 0.0, -1.0, 5.0], [0.5, 0.5, -2.0, 4.0]]
SPECIAL = [1.0, NAN, float("inf"), -float("inf"), -0.0, 2.0]
NO_TIES = [[3.0, 1.0, 2.0, 1.5], [0.25, 0.0, -1.0, 5.0], [0.5, 0.75, -2.0, 4.0]]
INTS = [[3, 1, 2], [0, 5, 1]]


def _x(L, data=FINITE, grad=True, dtype="float64"):
    return L.tensor(data, dtype=getattr(L, dtype), requires_grad=grad)


# name -> (leaves, call); leaves: a function of the library giving the inputs
CASES = {
    "sort": (lambda L: [_x(L)], lambda L, x: x.sort()),
    "sort dim0 desc": (lambda L: [_x(L)], lambda L, x: x.sort(dim=0, descending=True)),
    "sort nan": (lambda L: [_x(L, X)], lambda L, x: x.sort(1)),
    "sort nan desc": (lambda L: [_x(L, X)], lambda L, x: x.sort(1, descending=True)),
    "sort stable ties": (lambda L: [_x(L, [2.0, 1.0, 2.0, 1.0, 2.0])],
                         lambda L, x: L.sort(x, stable=True)),
    "sort int": (lambda L: [L.tensor(INTS)], lambda L, x: x.sort(descending=True)),
    "sort 0-d": (lambda L: [_x(L, 2.5)], lambda L, x: x.sort()),
    "argsort": (lambda L: [_x(L, grad=False)], lambda L, x: x.argsort(dim=0)),
    "argsort desc": (lambda L: [_x(L, grad=False)], lambda L, x: L.argsort(x, descending=True)),
    "msort": (lambda L: [_x(L)], lambda L, x: x.msort()),
    # (no ties: their order in topk is torch's implementation detail)
    "topk": (lambda L: [_x(L, NO_TIES)], lambda L, x: x.topk(2)),
    "topk smallest dim0": (lambda L: [_x(L, NO_TIES)],
                           lambda L, x: L.topk(x, 1, dim=0, largest=False)),
    "topk k too large": (lambda L: [_x(L)], lambda L, x: x.topk(9)),
    "median": (lambda L: [_x(L)], lambda L, x: x.median()),
    "median dim": (lambda L: [_x(L)], lambda L, x: x.median(dim=1)),
    "median keepdim": (lambda L: [_x(L)], lambda L, x: x.median(0, keepdim=True)),
    "isnan": (lambda L: [_x(L, SPECIAL, False)], lambda L, x: x.isnan()),
    "isinf": (lambda L: [_x(L, SPECIAL, False)], lambda L, x: L.isinf(x)),
    "isfinite": (lambda L: [_x(L, SPECIAL, False)], lambda L, x: x.isfinite()),
    "isposinf": (lambda L: [_x(L, SPECIAL, False)], lambda L, x: x.isposinf()),
    "isneginf": (lambda L: [_x(L, SPECIAL, False)], lambda L, x: x.isneginf()),
    "isnan int": (lambda L: [L.tensor(INTS)], lambda L, x: x.isnan()),
    "isfinite int": (lambda L: [L.tensor(INTS)], lambda L, x: x.isfinite()),
    "isclose": (lambda L: [_x(L, SPECIAL, False), _x(L, [1.0 + 1e-9, NAN, 3.0, -3.0, 0.0, 2.1],
                                                      False)],
                lambda L, a, b: a.isclose(b)),
    "isclose equal_nan": (lambda L: [_x(L, SPECIAL, False)],
                          lambda L, a: L.isclose(a, a, equal_nan=True)),
    "isclose dtypes": (lambda L: [_x(L, grad=False), _x(L, grad=False, dtype="float32")],
                       lambda L, a, b: L.isclose(a, b)),
    "allclose": (lambda L: [_x(L, grad=False)], lambda L, a: L.allclose(a, a + 1e-9)),
    "allclose not": (lambda L: [_x(L, grad=False)], lambda L, a: a.allclose(a + 1e-3)),
    "allclose tolerances": (lambda L: [_x(L, grad=False)],
                            lambda L, a: a.allclose(a + 1e-3, rtol=0, atol=1e-2)),
    "equal": (lambda L: [L.tensor(INTS)], lambda L, a: L.equal(a, a.clone())),
    "equal shape": (lambda L: [L.tensor(INTS)], lambda L, a: a.equal(a.t())),
    "logical_and": (lambda L: [L.tensor(INTS)], lambda L, a: a.logical_and(a - 1)),
    "logical_or": (lambda L: [_x(L, grad=False)], lambda L, a: L.logical_or(a, a > 2)),
    "logical_xor": (lambda L: [L.tensor(INTS)], lambda L, a: L.logical_xor(a, a > 1)),
    "logical_not": (lambda L: [_x(L, grad=False)], lambda L, a: a.logical_not()),
    "where method": (lambda L: [_x(L)], lambda L, a: a.where(a > 1, 0.0)),
    "scatter": (lambda L: [_x(L), _x(L, [[10.0, 20.0, 30.0, 40.0]])],
                lambda L, a, s: a.scatter(0, L.tensor([[2, 0, 1, 2]]), s)),
    "scatter dim1": (lambda L: [_x(L), _x(L, [[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]])],
                     lambda L, a, s: L.scatter(a, 1, L.tensor([[3, 0], [1, 2], [0, 3]]), s)),
    "scatter value": (lambda L: [_x(L)],
                      lambda L, a: a.scatter(1, L.tensor([[0], [1], [2]]), 7.5)),
    "scatter_add": (lambda L: [_x(L), _x(L, [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])],
                    lambda L, a, s: a.scatter_add(0, L.tensor([[0, 0, 2, 2], [0, 1, 2, 0]]), s)),
    "scatter_ on a clone": (lambda L: [_x(L), _x(L, [[10.0, 20.0, 30.0, 40.0]])],
                            lambda L, a, s: (a * 1).scatter_(0, L.tensor([[2, 0, 1, 2]]), s)),
    "scatter_add_ plain": (lambda L: [L.zeros(5, dtype=L.float64)],
                           lambda L, a: a.scatter_add_(0, L.tensor([0, 1, 1, 4]),
                                                       L.tensor([1.0, 2.0, 3.0, 4.0],
                                                                dtype=L.float64))),
    "scatter dtype mismatch": (lambda L: [_x(L)],
                               lambda L, a: a.scatter(0, L.tensor([[0]]), L.ones(1, 1))),
    "index_select": (lambda L: [_x(L)], lambda L, a: a.index_select(1, L.tensor([3, 0, 3]))),
    "index_select fn": (lambda L: [_x(L)], lambda L, a: L.index_select(a, 0, L.tensor([2]))),
    "masked_select": (lambda L: [_x(L)], lambda L, a: a.masked_select(a > 0.5)),
    "masked_select broadcast": (lambda L: [_x(L)], lambda L, a: L.masked_select(
        a, L.tensor([True, False, True, True]))),
    "nonzero": (lambda L: [L.tensor(INTS)], lambda L, a: a.nonzero()),
    "nonzero tuple": (lambda L: [L.tensor(INTS)], lambda L, a: a.nonzero(as_tuple=True)),
    "count_nonzero": (lambda L: [L.tensor(INTS)], lambda L, a: L.count_nonzero(a, dim=1)),
    "tril": (lambda L: [_x(L)], lambda L, a: a.tril()),
    "triu -1": (lambda L: [_x(L)], lambda L, a: L.triu(a, -1)),
    "tril 1-d": (lambda L: [_x(L, [1.0, 2.0])], lambda L, a: a.tril()),
    "diagonal": (lambda L: [_x(L)], lambda L, a: a.diagonal(1)),
    "diag of matrix": (lambda L: [_x(L)], lambda L, a: a.diag()),
    "diag of vector": (lambda L: [_x(L, [1.0, 2.0, 3.0])], lambda L, a: L.diag(a, 1)),
    "trace": (lambda L: [_x(L)], lambda L, a: a.trace()),
    "cumprod": (lambda L: [_x(L)], lambda L, a: a.cumprod(1)),
    "cumprod int": (lambda L: [L.tensor(INTS, dtype=L.int32)], lambda L, a: L.cumprod(a, 0)),
    "cumsum int": (lambda L: [L.tensor(INTS, dtype=L.int32)], lambda L, a: a.cumsum(0)),
    "nan_to_num": (lambda L: [_x(L, SPECIAL)], lambda L, a: a.nan_to_num()),
    "nan_to_num given": (lambda L: [_x(L, SPECIAL)],
                         lambda L, a: L.nan_to_num(a, nan=1.0, posinf=9.0, neginf=-9.0)),
    "movedim": (lambda L: [_x(L)], lambda L, a: a.reshape(3, 2, 2).movedim(0, -1)),
    "tile": (lambda L: [_x(L)], lambda L, a: a.tile(2, 1)),
    "tile fewer dims": (lambda L: [_x(L, [1.0, 2.0])], lambda L, a: L.tile(a, (2, 2))),
    "atan2": (lambda L: [_x(L), _x(L, [[1.0, -1.0, 2.0, 0.5]] * 3)],
              lambda L, a, b: a.atan2(b)),
    "lerp": (lambda L: [_x(L), _x(L, [[1.0] * 4] * 3)], lambda L, a, b: a.lerp(b, 0.25)),
    "addmm": (lambda L: [_x(L, [[1.0, 2.0]] * 3), _x(L), _x(L, [[1.0, 0.5]] * 4)],
              lambda L, c, a, b: L.addmm(c, a, b, beta=0.5, alpha=2.0)),
    "logaddexp": (lambda L: [_x(L), _x(L, [[1.0, -1.0, 2.0, 900.0]] * 3)],
                  lambda L, a, b: a.logaddexp(b)),
    "unique": (lambda L: [L.tensor([3, 1, 3, 2, 1])],
               lambda L, a: L.unique(a, return_inverse=True, return_counts=True)),
    "bincount": (lambda L: [L.tensor([0, 1, 1, 4])], lambda L, a: a.bincount()),
    "bincount weights": (lambda L: [L.tensor([0, 1, 1, 4]), _x(L, [0.5, 1.0, 2.0, 3.0], False)],
                         lambda L, a, w: L.bincount(a, w, minlength=6)),
    "hstack": (lambda L: [_x(L), _x(L, [[1.0]] * 3)], lambda L, a, b: L.hstack([a, b])),
    "vstack": (lambda L: [_x(L), _x(L, [1.0, 2.0, 3.0, 4.0])], lambda L, a, b: L.vstack([a, b])),
    "meshgrid ij": (lambda L: [_x(L, [1.0, 2.0]), _x(L, [3.0, 4.0, 5.0])],
                    lambda L, a, b: L.meshgrid(a, b, indexing="ij")),
    "meshgrid xy": (lambda L: [_x(L, [1.0, 2.0]), _x(L, [3.0, 4.0, 5.0])],
                    lambda L, a, b: L.meshgrid(a, b, indexing="xy")),
    "broadcast_tensors": (lambda L: [_x(L), _x(L, [1.0, 2.0, 3.0, 4.0])],
                          lambda L, a, b: L.broadcast_tensors(a, b)),
    "new_full": (lambda L: [_x(L, grad=False, dtype="float32")],
                 lambda L, a: a.new_full((2, 2), 3)),
    "new_empty shape": (lambda L: [L.tensor(INTS)], lambda L, a: a.new_empty(2, 3).shape),
    "std correction": (lambda L: [_x(L)], lambda L, a: a.std(dim=1, correction=0)),
    "var unbiased": (lambda L: [_x(L)], lambda L, a: a.var(0, unbiased=False, keepdim=True)),
    "max dim": (lambda L: [_x(L)], lambda L, a: a.max(dim=1)),
    "argmax keepdim": (lambda L: [_x(L, grad=False)], lambda L, a: a.argmax(1, keepdim=True)),
    "prod": (lambda L: [_x(L)], lambda L, a: a.prod(1)),
    "norm": (lambda L: [_x(L)], lambda L, a: a.norm(dim=0)),
    "chunk": (lambda L: [_x(L)], lambda L, a: a.chunk(2, dim=1)),
    "split sizes": (lambda L: [_x(L)], lambda L, a: a.split([1, 3], dim=1)),
    "gather": (lambda L: [_x(L)], lambda L, a: a.gather(1, L.tensor([[0, 0], [3, 1], [2, 2]]))),
    "masked_fill": (lambda L: [_x(L)], lambda L, a: a.masked_fill(a < 1, -1.0)),
    "any/all": (lambda L: [L.tensor(INTS)], lambda L, a: (a.any(dim=1), a.all(), a.bool().all(0))),
    "sign/abs/sqrt": (lambda L: [_x(L)], lambda L, a: (a.sign(), a.abs(), a.abs().sqrt())),
}


def _flat(out):
    if isinstance(out, (tuple, list)):
        for o in out:
            yield from _flat(o)
    else:
        yield out


def _run(L, name):
    leaves_of, fn = CASES[name]
    leaves = leaves_of(L)
    try:
        return leaves, fn(L, *leaves), None
    except Exception as e:  # noqa: BLE001  (the type is compared with torch's)
        return leaves, None, e


@pytest.mark.parametrize("name", list(CASES))
def test_method_matches_torch(name):
    t_leaves, want, want_err = _run(torch, name)
    g_leaves, got, got_err = _run(tg, name)
    if want_err is not None or got_err is not None:
        assert type(got_err) is type(want_err), (got_err, want_err)
        return
    wants, gots = list(_flat(want)), list(_flat(got))
    assert len(wants) == len(gots)
    for w, g in zip(wants, gots):
        if isinstance(w, torch.Tensor):
            w_np = w.detach().numpy()
            assert isinstance(g, tg.Tensor), (g, w)
            assert g.dtype == w_np.dtype and tuple(g.shape) == w_np.shape, (g, w)
            np.testing.assert_allclose(g.detach().numpy(), w_np, rtol=1e-12, atol=1e-12)
        else:
            assert g == w, (g, w)
    # gradients: the same weighted sum of every differentiable result
    pairs = [(w, g) for w, g in zip(wants, gots) if isinstance(w, torch.Tensor)
             and w.requires_grad]
    assert [g.requires_grad for _, g in pairs] == [True] * len(pairs)
    if not pairs:
        return
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(tuple(w.shape)) for w, _ in pairs]
    sum(((w * torch.tensor(c)).nan_to_num().sum() for (w, _), c in zip(pairs, weights))
        ).backward()
    sum(((g * tg.tensor(c)).nan_to_num().sum() for (_, g), c in zip(pairs, weights))
        ).backward()
    for t, g in zip(t_leaves, g_leaves):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            want_grad = None if t.grad is None else t.grad.numpy()
            got_grad = None if g.grad is None else g.grad.numpy()
            assert (want_grad is None) == (got_grad is None)
            if want_grad is not None:
                np.testing.assert_allclose(got_grad, want_grad, rtol=1e-10, atol=1e-12)


def test_named_results_as_torch():
    v, i = tg.tensor([3.0, 1.0]).sort()
    out = tg.tensor([3.0, 1.0]).topk(1)
    assert out.values.tolist() == [3.0] and out.indices.tolist() == [0]
    assert tg.tensor([3.0, 1.0]).sort().indices.tolist() == i.tolist() == [1, 0]
    assert tg.tensor([[3.0, 1.0]]).max(dim=1).indices.tolist() == [0]
    assert tg.tensor([[3.0, 1.0, 2.0]]).median(1).values.tolist() == [2.0]


def test_sort_gradient_goes_to_the_indices():
    x = tg.tensor([3.0, 1.0, 2.0], requires_grad=True)
    values, _ = x.sort(descending=True)
    (values * tg.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert x.grad.tolist() == [1.0, 100.0, 10.0]
    assert values.grad_fn.name() == "SortBackward0"
    y = tg.tensor([3.0, 1.0, 2.0], requires_grad=True)
    top = y.topk(2).values
    assert top.grad_fn.name() == "TopkBackward0"
    top.sum().backward()
    assert y.grad.tolist() == [1.0, 0.0, 1.0]
