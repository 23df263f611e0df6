"""index_add, scatter_reduce, kthvalue, diff, searchsorted, bucketize, cdist,
div(rounding_mode=), cumsum/cumprod(dtype=) against torch 2.13 CPU on generated cases:
values, dtypes and shapes, the gradients of a weighted sum of the result through the tape,
and gradients of gradients where the case asks (``create_graph=True``); misuse raises
torch's exception type (and message, where given).

``bounded`` picks a slice of the cases rotating through the operations;
TRACEGRAD_EXHAUSTIVE=1 checks them all.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg

torch = pytest.importorskip("torch")


def _draw(rng, shape, dtype, ties=False):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if ties or dtype.startswith("int"):
        x = rng.integers(-3, 4, shape)
    else:
        x = rng.standard_normal(shape)
    return np.asarray(x, dtype)


def _cases():
    rng = np.random.default_rng(7)
    out = []
    # index_add (and index_add_): dims, repeated indices, alpha, dtypes
    for (shape, dim), alpha, dtype, inplace in itertools.product(
            [((5, 3), 0), ((5, 3), 1), ((4, 2, 3), -1), ((6,), 0)], (1, 2.5),
            ("float64", "float32", "int64"), (False, True)):
        if dtype == "int64" and alpha != 1:
            continue
        n = shape[dim]
        idx = rng.integers(0, n, 4)
        src_shape = list(shape)
        src_shape[dim] = 4
        x, s = _draw(rng, shape, dtype), _draw(rng, tuple(src_shape), dtype)
        name = "index_add_" if inplace else "index_add"

        def f(L, x, s, dim=dim, idx=idx, alpha=alpha, inplace=inplace):
            i = L.tensor(idx)
            if inplace:
                return (x * 1).index_add_(dim, i, s, alpha=alpha)
            return L.index_add(x, dim, i, s, alpha=alpha)
        out.append((name, f, [x, s], 2))
    # scatter_reduce: every reduction, include_self, ties, dims
    for reduce, include, dtype, (shape, ishape, dim) in itertools.product(
            ("sum", "prod", "mean", "amax", "amin"), (True, False), ("float64", "float32", "int64"),
            [((3, 4), (2, 4), 0), ((3, 4), (3, 2), 1), ((2, 3, 4), (2, 3, 3), -1)]):
        x = _draw(rng, shape, dtype, ties=True)
        s = _draw(rng, ishape, dtype, ties=True)     # (torch's gradient needs src's shape)
        idx = rng.integers(0, shape[dim], ishape)

        def f(L, x, s, dim=dim, idx=idx, reduce=reduce, include=include):
            return x.scatter_reduce(dim, L.tensor(idx), s, reduce, include_self=include)
        out.append(("scatter_reduce", f, [x, s], 1))

        def g(L, x, s, dim=dim, idx=idx, reduce=reduce, include=include):
            return (x * 1).scatter_reduce_(dim, L.tensor(idx), s, reduce, include_self=include)
        out.append(("scatter_reduce_", g, [x, s], 1))
    # kthvalue: distinct values
    for (shape, dim), k, keepdim, dtype in itertools.product(
            [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), -2)], (1, 2, 3), (False, True),
            ("float64", "float32", "int64")):
        x = np.asarray(rng.permutation(int(np.prod(shape))).reshape(shape) - 5, dtype)

        def f(L, x, k=k, dim=dim, keepdim=keepdim):
            return L.kthvalue(x, k, dim, keepdim)
        out.append(("kthvalue", f, [x], 2))
    # diff
    for (shape, dim), n, ends, dtype in itertools.product(
            [((6,), 0), ((3, 5), 1), ((4, 3), 0), ((2, 3, 4), -1)], (1, 2, 3), ("", "p", "a", "pa"),
            ("float64", "float32", "int64", "bool")):
        x = _draw(rng, shape, dtype)
        side = list(shape)
        side[dim] = 2
        extra = [_draw(rng, tuple(side), dtype) for _ in ends]

        def f(L, x, *e, n=n, dim=dim, ends=ends):
            kw = {}
            if "p" in ends:
                kw["prepend"] = e[0]
            if "a" in ends:
                kw["append"] = e[-1]
            return L.diff(x, n=n, dim=dim, **kw)
        out.append(("diff", f, [x, *extra], 2))
    # searchsorted / bucketize
    for batched, right, side, sorter, int32, dtype in itertools.product(
            (False, True), (False, True), (None, "left", "right"), (False, True), (False, True),
            ("float64", "int64")):
        if right and side == "left":
            continue
        seq = np.sort(_draw(rng, (2, 6) if batched else (6,), dtype, ties=True), axis=-1)
        vals = _draw(rng, (2, 4) if batched else (3, 2), dtype, ties=True)
        perm = None
        if sorter:
            perm = np.argsort(-np.arange(seq.shape[-1]) + 0 * seq, axis=-1)
            seq = np.take_along_axis(seq, np.argsort(perm, axis=-1), axis=-1)

        def f(L, s, v, right=right, side=side, perm=perm, int32=int32):
            kw = {} if side is None else {"side": side}
            if perm is not None:
                kw["sorter"] = L.tensor(perm)
            return L.searchsorted(s, v, right=right, out_int32=int32, **kw)
        out.append(("searchsorted", f, [seq, vals], 0))
        if not batched and sorter is False and side is None:
            def g(L, s, v, right=right, int32=int32):
                return L.bucketize(v, s, right=right, out_int32=int32)
            out.append(("bucketize", g, [seq, vals], 0))
    # cdist, with repeated rows (zero distances)
    for p, (s1, s2), dtype in itertools.product(
            (0.0, 0.5, 1.0, 2.0, 3.0, float("inf")), [((4, 3), (5, 3)), ((2, 3, 2), (2, 4, 2))],
            ("float64", "float32")):
        a = _draw(rng, s1, dtype)
        b = _draw(rng, s2, dtype)
        b[..., 0, :] = a[..., 0, :]

        def f(L, a, b, p=p):
            return L.cdist(a, b, p=p)
        out.append(("cdist", f, [a, b], 1))
    # div with rounding_mode
    for mode, (da, db), scalar in itertools.product(
            ("trunc", "floor", None, "unset"), [("float64", "float64"), ("float32", "float32"),
                                       ("int64", "int64"), ("int32", "int64"),
                                       ("int64", "float32")], (False, True)):
        a = _draw(rng, (3, 4), da) * 3
        b = _draw(rng, (3, 4), db)
        b[b == 0] = 2
        if scalar:
            def f(L, a, mode=mode, db=db):
                kw = {} if mode == "unset" else {"rounding_mode": mode}
                return L.div(a, -2.5 if np.dtype(db).kind == "f" else -2, **kw)
            out.append(("div", f, [a], 1))
        else:
            def f(L, a, b, mode=mode):
                kw = {} if mode == "unset" else {"rounding_mode": mode}
                return a.div(b, **kw)
            out.append(("div", f, [a, b], 1))
    # cumsum / cumprod with dtype=
    for op, (din, dout) in itertools.product(
            ("cumsum", "cumprod"), [("int32", "float32"), ("float32", "float64"),
                                    ("int8", "int16"), ("float64", "float32"),
                                    ("int64", None), ("bool", "int64")]):
        x = _draw(rng, (3, 4), din)

        def f(L, x, op=op, dout=dout):
            return getattr(L, op)(x, 1, dtype=None if dout is None else getattr(L, dout))
        out.append((op, f, [x], 1))
    return out


CASES = _cases()
SELECTED = bounded(list(range(len(CASES))), 260, key=lambda i: CASES[i][0])


def _parts(out):
    return list(out) if isinstance(out, tuple) else [out]


def _np(x):
    return x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x._data)


def _run(L, case):
    _, fn, arrays, order = case
    ins = [L.tensor(a, requires_grad=order > 0 and a.dtype.kind == "f") for a in arrays]
    outs = _parts(fn(L, *ins))
    grads = []
    wrt = [t for t in ins if t.requires_grad]
    floats = [o for o in outs if o.is_floating_point() and o.requires_grad]
    if wrt and floats:
        rng = np.random.default_rng(1)
        loss = sum((o * L.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype)).sum()
                   for o in floats)
        grads = list(L.autograd.grad(loss, wrt, create_graph=order == 2, allow_unused=True))
        if order == 2:      # (None: a zero gradient, as a gradient that does not depend on x)
            second = [(g * g).sum() for g in grads if g is not None and g.requires_grad]
            more = [None] * len(wrt)
            if second:
                more = list(L.autograd.grad(sum(second), wrt, allow_unused=True))
            grads += more
    return outs, [None if g is None else _np(g) for g in grads]


@pytest.mark.parametrize("i", SELECTED, ids=lambda i: f"{CASES[i][0]}-{i}")
def test_matches_torch(i):
    case = CASES[i]
    want, want_g = _run(torch, case)
    got, got_g = _run(tg, case)
    assert len(got) == len(want)
    narrow = any(a.dtype == np.float32 for a in case[2]) or any(w.dtype == torch.float32
                                                                for w in want)
    tol = 1e-5 if narrow else 1e-10
    for g, w in zip(got, want):
        wn = _np(w)
        assert _np(g).dtype == wn.dtype, (_np(g).dtype, wn.dtype)
        assert tuple(g.shape) == wn.shape
        np.testing.assert_allclose(_np(g), wn, rtol=tol, atol=tol)
        assert (g.grad_fn is None) == (w.grad_fn is None)
        if w.grad_fn is not None:
            assert g.grad_fn.name() == w.grad_fn.name()
    assert len(got_g) == len(want_g)
    for g, w in zip(got_g, want_g):
        if w is None or g is None:
            assert g is None or not np.any(g), (g, w)
            assert w is None or not np.any(w), (g, w)
            continue
        np.testing.assert_allclose(g, w, rtol=tol * 10, atol=tol * 10)


MISUSE = [
    ("index_add_dtype", lambda L: L.zeros(3).index_add(0, L.tensor([0]), L.ones(1, dtype=L.float64)),
     "must have the same scalar type"),
    ("index_add_2d_index", lambda L: L.zeros(3).index_add(0, L.tensor([[0]]), L.ones(1)),
     "Index is supposed to be a vector"),
    ("index_add_count", lambda L: L.zeros(3).index_add(0, L.tensor([0, 1]), L.ones(1)), None),
    ("index_add_range", lambda L: L.zeros(3).index_add(0, L.tensor([5]), L.ones(1)), None),
    ("scatter_reduce_bad", lambda L: L.zeros(3).scatter_reduce(0, L.tensor([0]), L.ones(1), "foo"),
     "reduce argument must be either sum, prod, mean, amax or amin, got foo"),
    ("scatter_reduce_dtype", lambda L: L.zeros(3).scatter_reduce(0, L.tensor([0]),
                                                                 L.ones(1, dtype=L.float64), "sum"),
     None),
    ("kthvalue_k", lambda L: L.kthvalue(L.ones(3), 4), None),
    ("diff_0d", lambda L: L.diff(L.tensor(1.0)), "diff expects input to be at least one-dimensional"),
    ("searchsorted_side", lambda L: L.searchsorted(L.tensor([1, 2]), L.tensor([1]), right=True,
                                                   side="left"), None),
    ("searchsorted_shapes", lambda L: L.searchsorted(L.ones(2, 3), L.ones(3, 1)), None),
    ("bucketize_2d", lambda L: L.bucketize(L.ones(2), L.ones(2, 2)), None),
    ("cdist_cols", lambda L: L.cdist(L.ones(2, 3), L.ones(2, 4)),
     "X1 and X2 must have the same number of columns. X1: 3 X2: 4"),
    ("cdist_1d", lambda L: L.cdist(L.ones(3), L.ones(2, 3)), None),
    ("div_mode", lambda L: L.div(L.ones(2), 2, rounding_mode="round"),
     "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"),
]


@pytest.mark.parametrize("name, fn, message", MISUSE, ids=[m[0] for m in MISUSE])
def test_misuse_matches_torch(name, fn, message):
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(Exception) as got:
        fn(tg)
    assert isinstance(got.value, type(want.value)) or type(want.value).__name__ in (
        "IndexError",) and isinstance(got.value, IndexError), (got.value, want.value)
    if message is not None:
        assert message in str(want.value) and message in str(got.value)


def test_names():
    import tracegrad
    r = tracegrad.kthvalue(tg.tensor([3.0, 1.0, 2.0]), 2)
    assert type(r).__name__ == "kthvalue" and r._fields == ("values", "indices")
    assert repr(r).startswith("torch.return_types.kthvalue(\nvalues=")
    for name in ("index_add", "scatter_reduce", "kthvalue", "diff", "searchsorted", "bucketize",
                 "cdist"):
        assert callable(getattr(tracegrad, name))
    for name in ("index_add", "index_add_", "scatter_reduce", "scatter_reduce_", "kthvalue",
                 "diff", "div", "div_", "divide_"):
        assert callable(getattr(tg.Tensor, name))
    for name in ("searchsorted", "bucketize", "cdist"):      # functions only, as in torch
        assert not hasattr(tg.Tensor, name) and not hasattr(torch.Tensor, name)
    x = tg.tensor([7.0, -7.0])
    assert x.div_(2, rounding_mode="floor") is x and x.tolist() == [3.0, -4.0]
