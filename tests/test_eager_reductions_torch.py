"""Eager reductions against torch CPU, generated from tables: every reduction below x every
``dim`` form (None, int, negative, tuple, list, empty, duplicated, out of range) x keepdim x
input dtype x shape (0-d and empty included). The value, dtype and shape must be torch's;
where torch raises, tracegrad raises the same exception type, and for the dimension errors
(out of range, a dim given twice) with torch's wording.

A new reduction is one line of ``REDUCTIONS``; a new dim form, dtype or shape one entry of
its list. The default run checks a slice of the cases (``bounded``), rotating through the
reductions; ``TRACEGRAD_EXHAUSTIVE=1`` checks them all.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg

torch = pytest.importorskip("torch")

# name -> (call(L, x, dim, keepdim), takes keepdim). ``dim`` is passed as given (None too).
REDUCTIONS = {
    "sum": (lambda L, x, d, k: L.sum(x, dim=d, keepdim=k), True),
    "mean": (lambda L, x, d, k: L.mean(x, dim=d, keepdim=k), True),
    "prod": (lambda L, x, d, k: L.prod(x, dim=d, keepdim=k), True),
    "nansum": (lambda L, x, d, k: L.nansum(x, dim=d, keepdim=k), True),
    "nanmean": (lambda L, x, d, k: L.nanmean(x, dim=d, keepdim=k), True),
    "std": (lambda L, x, d, k: L.std(x, dim=d, keepdim=k), True),
    "var": (lambda L, x, d, k: L.var(x, dim=d, keepdim=k), True),
    "var_correction0": (lambda L, x, d, k: L.var(x, dim=d, keepdim=k, correction=0), True),
    "std_mean": (lambda L, x, d, k: L.std_mean(x, dim=d, keepdim=k), True),
    "var_mean": (lambda L, x, d, k: L.var_mean(x, dim=d, keepdim=k), True),
    "amax": (lambda L, x, d, k: L.amax(x, dim=d, keepdim=k), True),
    "amin": (lambda L, x, d, k: L.amin(x, dim=d, keepdim=k), True),
    "norm": (lambda L, x, d, k: L.norm(x, dim=d, keepdim=k), True),
    "norm1": (lambda L, x, d, k: L.norm(x, p=1, dim=d, keepdim=k), True),
    "norm_inf": (lambda L, x, d, k: L.norm(x, p=float("inf"), dim=d, keepdim=k), True),
    "logsumexp": (lambda L, x, d, k: L.logsumexp(x, dim=d, keepdim=k), True),
    "count_nonzero": (lambda L, x, d, k: L.count_nonzero(x, dim=d), False),
    "any": (lambda L, x, d, k: L.any(x, dim=d, keepdim=k), True),
    "all": (lambda L, x, d, k: L.all(x, dim=d, keepdim=k), True),
    "method_sum": (lambda L, x, d, k: x.sum(d, keepdim=k), True),
    "method_mean": (lambda L, x, d, k: x.mean(d, k), True),
    "max_dim": (lambda L, x, d, k: L.max(x, dim=d, keepdim=k), True),
    "argmax": (lambda L, x, d, k: L.argmax(x, dim=d, keepdim=k), True),
    "cumsum": (lambda L, x, d, k: L.cumsum(x, dim=d), False),
    "cumprod": (lambda L, x, d, k: L.cumprod(x, dim=d), False),
}
DIMS = [None, 0, 1, -1, -2, 2, -3, (0,), (1,), (0, 1), (-1, 0), [1], [0, -1], (), [],
        (0, 0), (1, -1), (0, 2)]
DTYPES = ["float32", "float64", "int64", "int32", "int16", "int8", "uint8", "bool"]
SHAPES = [(), (3,), (2, 3), (0,), (2, 0), (2, 1, 3)]
CASES = [(name, dim, keepdim, dtype, shape)
         for name, (_, takes_keepdim) in REDUCTIONS.items()
         for dim, keepdim, dtype, shape in itertools.product(DIMS, (False, True), DTYPES, SHAPES)
         if takes_keepdim or not keepdim]

# torch's messages that tracegrad repeats word for word (the rest: the exception type)
WORDED = ("Dimension out of range", "appears multiple times in the list of dims")


def _input(L, dtype, shape):
    n = int(np.prod(shape, dtype=np.int64))
    values = np.array([0, 3, -1, 2, 5, 0, 1, -2, 4, 7, 1, 2])[:n].reshape(shape)
    if dtype == "uint8":
        values = np.abs(values)
    return L.tensor(values.tolist(), dtype=getattr(L, dtype))


def _run(L, case):
    name, dim, keepdim, dtype, shape = case
    dim = list(dim) if isinstance(dim, list) else dim
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return REDUCTIONS[name][0](L, _input(L, dtype, shape), dim, keepdim), None
    except Exception as e:  # noqa: BLE001  (compared with torch's)
        return None, e


def _parts(out):
    return list(out) if isinstance(out, tuple) else [out]


def _difference(case):
    want, want_err = _run(torch, case)
    got, got_err = _run(tg, case)
    if want_err is not None or got_err is not None:
        if type(want_err) is not type(got_err):
            return (f"torch {type(want_err).__name__}: {str(want_err)[:90]} / tracegrad "
                    f"{type(got_err).__name__}: {str(got_err)[:90]}")
        first = str(want_err).splitlines()[0]
        if any(w in first for w in WORDED) and first not in str(got_err):
            return f"message {str(got_err)[:120]!r} / torch {first!r}"
        return None
    want, got = _parts(want), _parts(got)
    if len(want) != len(got):
        return f"{len(got)} results / torch {len(want)}"
    for w, g in zip(want, got):
        w = w.numpy()
        if g.dtype != w.dtype:
            return f"dtype {g.dtype} / torch {w.dtype}"
        if tuple(g.shape) != w.shape:
            return f"shape {tuple(g.shape)} / torch {w.shape}"
        if not np.allclose(np.asarray(g._data, np.float64), w.astype(np.float64), rtol=1e-5,
                           equal_nan=True):
            return f"{g._data} / torch {w}"
    return None


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions_match_torch(name):
    cases = [c for c in SELECTED if c[0] == name]
    bad = []
    for case in cases:
        diff = _difference(case)
        if diff is not None:
            bad.append(f"{case}: {diff}")
    assert not bad, f"{len(bad)} of {len(cases)} cases differ:\n" + "\n".join(bad[:20])


SELECTED = bounded(CASES, 2500, key=lambda c: (c[0], c[1] if not isinstance(c[1], list)
                                               else ("list",) + tuple(c[1])))


def test_examples_of_the_issue():
    x = tg.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 7.0]])
    assert float(x.sum(dim=())) == 22.0
    assert float(x.mean(dim=[])) == pytest.approx(22 / 6)
    assert float(x.amax(dim=())) == 7.0
    assert float(x.std(dim=[])) == pytest.approx(float(torch.tensor(x._data).std()))
    assert int(tg.count_nonzero(x, dim=())) == 6
    assert x.sum(dim=(), keepdim=True).shape == (1, 1)
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 2"):
        x.sum(dim=2)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        x.sum(dim=(0, -2))
    assert tg.tensor([1, 2], dtype=tg.uint8).sum().dtype == tg.int64


# -- gradients ---------------------------------------------------------------------------------
# the differentiable reductions, float64, over the dim forms that compute: .grad against torch
GRAD_NAMES = ["sum", "mean", "prod", "nansum", "nanmean", "std", "var", "std_mean", "var_mean",
              "amax", "amin", "norm", "norm1", "norm_inf", "logsumexp", "method_sum",
              "method_mean", "cumsum", "cumprod"]
GRAD_CASES = [(name, dim, keepdim, "float64", shape)
              for name in GRAD_NAMES for dim in DIMS for keepdim in (False, True)
              for shape in [(), (3,), (2, 3), (2, 1, 3)]
              if REDUCTIONS[name][1] or not keepdim]
# torch's std/var backward over dim=() divides by n - 1 with n counted over the listed dims
# (none): infinities where the value it computed has a finite derivative. tracegrad gives
# that derivative (test_var_over_no_dims_gradient_is_the_derivative below).
TORCH_WRONG = {"std", "var", "std_mean", "var_mean"}     # with dim=() or []


def _grad(L, case):
    name, dim, keepdim, _, shape = case
    n = int(np.prod(shape, dtype=np.int64))
    data = (np.array([0.5, -1.25, 2.0, 3.5, -0.75, 1.5])[:n]).reshape(shape)
    x = L.tensor(data.tolist(), dtype=L.float64, requires_grad=True)
    try:
        out = REDUCTIONS[name][0](L, x, list(dim) if isinstance(dim, list) else dim, keepdim)
    except Exception:  # noqa: BLE001  (the errors are compared above)
        return None
    total = sum((o * (k + 1.5)).sum() for k, o in enumerate(_parts(out)))
    total.backward()
    return x.grad


@pytest.mark.parametrize("name", GRAD_NAMES)
def test_reduction_gradients_match_torch(name):
    bad = []
    cases = [c for c in bounded(GRAD_CASES, 600, key=lambda c: c[0]) if c[0] == name]
    for case in cases:
        if name in TORCH_WRONG and case[1] in ((), []):
            continue
        want, got = _grad(torch, case), _grad(tg, case)
        if (want is None) != (got is None):
            bad.append(f"{case}: raised on one side only")
        elif want is not None and not np.allclose(np.asarray(got._data), want.numpy(),
                                                  rtol=1e-6, equal_nan=True):
            bad.append(f"{case}: {got._data} / torch {want.numpy()}")
    assert not bad, f"{len(bad)} of {len(cases)} cases differ:\n" + "\n".join(bad[:20])


def test_var_over_no_dims_gradient_is_the_derivative():
    """The one difference left (docs/guarantees.md): torch's ``var(dim=())`` backward gives
    infinities; tracegrad's is the derivative of the value both compute (that of
    ``var()``), which torch gives for ``dim=None``."""
    data = [1.0, 2.0, 4.0]
    x = torch.tensor(data, requires_grad=True)
    x.var(dim=()).backward()
    assert torch.isinf(x.grad).all()                    # torch 2.13
    x = torch.tensor(data, requires_grad=True)
    x.var().backward()
    want = x.grad.numpy()
    for f in (lambda t: t.var(dim=()), lambda t: t.std(dim=[]) ** 2,
              lambda t: tg.var_mean(t, dim=())[0]):
        t = tg.tensor(data, requires_grad=True)
        f(t).backward()
        np.testing.assert_allclose(t.grad._data, want, rtol=1e-6)
