"""Eager dtype rules and errors against torch CPU, generated from tables.

* The matrix products (``@`` at every pair of ranks, ``mm``, ``bmm``, ``mv``, ``dot``) over
  every pair of dtypes: torch does not promote there, it raises, each kernel in its own
  words; with one dtype, the result is torch's (value and dtype).
* ``clamp`` / ``clamp_min`` / ``clamp_max`` / ``clip`` and their in-place forms with Python
  numbers and tensors as bounds, over every dtype: the result dtype is torch's
  ``result_type`` of the input and the bounds (``int_tensor.clamp(max=2.5)`` is float32).
* A table of error cases (empty ``cat``, ``float()`` of several elements, ``gather`` out
  of bounds, ``arange`` with the wrong step sign, loss targets of another dtype, backward
  through a freed graph, ...): the exception type and torch's message.

A new operation, dtype or error case is one line of its table. Binary elementwise
promotion: tests/test_eager_promotion.py; reductions: tests/test_eager_reductions_torch.py.
"""
from __future__ import annotations

import itertools
import re
import warnings

import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg

torch = pytest.importorskip("torch")

DTYPES = ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool",
          "complex64"]


def _t(L, dtype, shape):
    n = int(np.prod(shape, dtype=np.int64))
    values = (np.arange(n) % 3 + 1).reshape(shape)
    return L.tensor(values.tolist(), dtype=getattr(L, dtype))


# name -> (ranks of the operands, call)
PRODUCTS = {f"matmul {ra}d@{rb}d": ((ra, rb), lambda L, a, b: a @ b)
            for ra, rb in [(1, 1), (2, 1), (1, 2), (2, 2), (3, 2), (3, 1), (3, 3), (2, 3),
                           (1, 3)]}
PRODUCTS.update({
    "L.matmul": ((2, 2), lambda L, a, b: L.matmul(a, b)),
    "mm": ((2, 2), lambda L, a, b: L.mm(a, b)),
    "Tensor.mm": ((2, 2), lambda L, a, b: a.mm(b)),
    "bmm": ((3, 3), lambda L, a, b: L.bmm(a, b)),
    "mv": ((2, 1), lambda L, a, b: L.mv(a, b)),
    "dot": ((1, 1), lambda L, a, b: L.dot(a, b)),
    "Tensor.dot": ((1, 1), lambda L, a, b: a.dot(b)),
})
_SHAPES = {1: (2,), 2: (2, 2), 3: (2, 2, 2)}
PRODUCT_CASES = [(name, da, db) for name in PRODUCTS for da, db in itertools.product(DTYPES, DTYPES)]

BOUNDS = {"int": 2, "float": 2.5, "bool": True, "neg": -1, "0-d float64": ("0-d", "float64"),
          "0-d int64": ("0-d", "int64"), "tensor float32": ("t", "float32"),
          "tensor int32": ("t", "int32"), "None": None}
CLAMPS = {
    "clamp(min)": lambda L, x, b: L.clamp(x, min=b),
    "clamp(max)": lambda L, x, b: x.clamp(max=b),
    "clamp(min, max)": lambda L, x, b: x.clamp(b, b),
    "clip": lambda L, x, b: x.clip(max=b),
    "clamp_min": lambda L, x, b: x.clamp_min(b),
    "clamp_max": lambda L, x, b: x.clamp_max(b),
    "clamp_": lambda L, x, b: x.clamp_(max=b),
}
CLAMP_CASES = [(name, dtype, bound) for name in CLAMPS for dtype in DTYPES for bound in BOUNDS
               if dtype != "complex64"]


def _bound(L, key):
    b = BOUNDS[key]
    if isinstance(b, tuple):
        kind, dtype = b
        return L.tensor(3 if kind == "0-d" else [1, 3, 2], dtype=getattr(L, dtype))
    return b


def _run(f):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return f(), None
    except Exception as e:  # noqa: BLE001  (compared with torch's)
        return None, e


_WHERE = re.compile(r" \(at [^()]*:\d+\)$")


def _message(e):
    return _WHERE.sub("", str(e).splitlines()[0].strip()) if str(e) else ""


# torch's argument parser lists its overloads, in a wording that depends on how the function
# was called (method or function, keywords): the exception type is compared there
_PARSER = re.compile(r"received an invalid combination of arguments|argument '\w+' must be")


def _compare(want, want_err, got, got_err, words=True):
    """A difference (a string) between torch's outcome and tracegrad's, or None."""
    if want_err is not None or got_err is not None:
        if type(want_err) is not type(got_err):
            return (f"torch {type(want_err).__name__}: {str(want_err)[:100]} / tracegrad "
                    f"{type(got_err).__name__}: {str(got_err)[:100]}")
        if words and not _PARSER.search(str(want_err)) and \
                _message(want_err) != _message(got_err):
            return f"message {_message(got_err)!r} / torch {_message(want_err)!r}"
        return None
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    got_np = got._data if isinstance(got, tg.Tensor) else np.asarray(got)
    if got_np.dtype != want.dtype:
        return f"dtype {got_np.dtype} / torch {want.dtype}"
    if got_np.shape != want.shape or not np.allclose(got_np.astype(complex),
                                                     want.astype(complex), rtol=1e-3):
        return f"{got_np} / torch {want}"
    return None


def _product(L, case):
    name, da, db = case
    (ra, rb), f = PRODUCTS[name]
    return _run(lambda: f(L, _t(L, da, _SHAPES[ra]), _t(L, db, _SHAPES[rb])))


# torch has no CPU kernel for these (it raises NotImplementedError or a RuntimeError naming
# the kernel); tracegrad computes NumPy's product (tests/test_eager_parity.py's "no-kernel")
def _no_kernel(want_err):
    return want_err is not None and ("not implemented for" in str(want_err)
                                     or "NotImplementedError" in type(want_err).__name__)


@pytest.mark.parametrize("name", list(PRODUCTS))
def test_products_of_two_dtypes_match_torch(name):
    bad = []
    cases = [c for c in bounded(PRODUCT_CASES, 500, key=lambda c: c[0]) if c[0] == name]
    for case in cases:
        want, want_err = _product(torch, case)
        if _no_kernel(want_err):
            continue
        got, got_err = _product(tg, case)
        diff = _compare(want, want_err, got, got_err)
        if diff:
            bad.append(f"{case}: {diff}")
    assert not bad, f"{len(bad)} of {len(cases)} cases differ:\n" + "\n".join(bad[:20])


# the in-place cast error: torch names the C type ("long int"), tracegrad the scalar type
_CAST_WORDS = re.compile(r"result type \w+ can't be cast to the desired output type")


@pytest.mark.parametrize("name", list(CLAMPS))
def test_clamp_dtypes_match_torch(name):
    bad = []
    cases = [c for c in bounded(CLAMP_CASES, 400, key=lambda c: c[0]) if c[0] == name]
    for case in cases:
        _, dtype, key = case
        outs = [_run(lambda L=L: CLAMPS[name](L, _t(L, dtype, (3,)), _bound(L, key)))
                for L in (torch, tg)]
        (want, want_err), (got, got_err) = outs
        words = not (want_err is not None and _CAST_WORDS.match(_message(want_err)))
        diff = _compare(want, want_err, got, got_err, words=words)
        if diff:
            bad.append(f"{case}: {diff}")
    assert not bad, f"{len(bad)} of {len(cases)} cases differ:\n" + "\n".join(bad[:20])


def _backward_twice(L, build, second="backward"):
    x = L.ones(2, requires_grad=True)
    y = build(L, x)
    y.backward()
    if second == "grad":
        L.autograd.grad(y, x)
    else:
        y.backward()
    return x.grad


def _unreferenced_leaf(L, f):
    y = f(L.ones(2, requires_grad=True)).sum()
    y.backward()
    y.backward()
    return L.zeros(1)


_F = {"ce": lambda L: L.nn.functional.cross_entropy, "nll": lambda L: L.nn.functional.nll_loss}
ERRORS = {
    "cat []": lambda L: L.cat([]),
    "stack []": lambda L: L.stack([]),
    "float of 2": lambda L: float(L.tensor([1.0, 2.0])),
    "int of 2": lambda L: int(L.tensor([1, 2])),
    "float of 0": lambda L: float(L.tensor([])),
    "item of 2": lambda L: L.tensor([1.0, 2.0]).item(),
    "bool of 2": lambda L: bool(L.tensor([1.0, 2.0])),
    "gather past the end": lambda L: L.gather(L.ones(3), 0, L.tensor([5])),
    "gather negative": lambda L: L.gather(L.ones(2, 3), 1, L.tensor([[-1]])),
    "gather 2-d past the end": lambda L: L.ones(2, 3).gather(1, L.tensor([[0, 3]])),
    "gather float index": lambda L: L.gather(L.ones(3), 0, L.tensor([1.0])),
    "gather int32 index": lambda L: L.gather(L.ones(3), 0, L.tensor([2], dtype=L.int32)),
    "gather rank": lambda L: L.gather(L.ones(2, 3), 1, L.tensor([1])),
    "gather dim": lambda L: L.gather(L.ones(2, 3), 2, L.tensor([[1]])),
    "gather size": lambda L: L.gather(L.ones(2, 3), 1, L.tensor([[0], [1], [0]])),
    "gather longer along dim": lambda L: L.gather(L.ones(2, 3), 1, L.tensor([[0, 1, 2, 0]])),
    "gather 0-d": lambda L: L.gather(L.tensor(2.0), 0, L.tensor([0, 0])),
    "arange negative step": lambda L: L.arange(0, 10, -1),
    "arange end before start": lambda L: L.arange(10, 0),
    "arange zero step": lambda L: L.arange(0, 10, 0),
    "arange infinite": lambda L: L.arange(0.0, float("inf")),
    "arange down": lambda L: L.arange(10, 0, -3),
    "arange empty": lambda L: L.arange(0, 0),
    "cross_entropy int32 target": lambda L: _F["ce"](L)(L.ones(2, 3), L.tensor([0, 1], dtype=L.int32)),
    "nll_loss int32 target": lambda L: _F["nll"](L)(L.ones(2, 3), L.tensor([0, 1], dtype=L.int32)),
    "nll_loss int16 target": lambda L: _F["nll"](L)(L.ones(2, 3), L.tensor([0, 1], dtype=L.int16)),
    "nll_loss bool target": lambda L: _F["nll"](L)(L.ones(2, 3), L.tensor([True, False])),
    "nll_loss float target": lambda L: _F["nll"](L)(L.ones(2, 3), L.tensor([0.0, 1.0])),
    "cross_entropy uint8 target": lambda L: _F["ce"](L)(L.ones(2, 3), L.tensor([0, 2], dtype=L.uint8)),
    "cross_entropy float target of another shape": lambda L: _F["ce"](L)(L.ones(2, 3), L.tensor([0.0, 1.0])),
    "cross_entropy int32 target, batch mismatch": lambda L: _F["ce"](L)(
        L.ones(2, 3), L.tensor([0, 1, 1], dtype=L.int32)),
    "cross_entropy unbatched int32": lambda L: _F["ce"](L)(L.ones(3), L.tensor(1, dtype=L.int32)),
    "backward twice: sum": lambda L: _backward_twice(L, lambda L, x: x.sum()),
    "backward twice: add": lambda L: _backward_twice(L, lambda L, x: (x + 1).sum()),
    "backward twice: mul": lambda L: _backward_twice(L, lambda L, x: (x * x).sum()),
    "backward twice: exp": lambda L: _backward_twice(L, lambda L, x: x.exp().sum()),
    "backward then grad: mul by 2": lambda L: _backward_twice(L, lambda L, x: (x * 2).sum(), "grad"),
    "backward twice, leaf unreferenced: mul by 2": lambda L: _unreferenced_leaf(L, lambda x: x * 2),
    "backward twice, leaf unreferenced: exp": lambda L: _unreferenced_leaf(L, lambda x: x.exp()),
    "backward twice, leaf unreferenced: sigmoid": lambda L: _unreferenced_leaf(L, lambda x: x.sigmoid()),
    "backward twice, leaf unreferenced: add": lambda L: _unreferenced_leaf(L, lambda x: x + 1),
    "clamp of bool": lambda L: L.tensor([True, False]).clamp(max=True),
    "clamp of bool by a tensor": lambda L: L.tensor([True, False]).clamp(min=L.tensor(False)),
    "clamp neither": lambda L: L.ones(2).clamp(),
    "matmul 0-d": lambda L: L.ones(2) @ L.tensor(2.0),
    "mm shapes": lambda L: L.mm(L.ones(2, 3), L.ones(2, 3)),
    "mm of a vector": lambda L: L.mm(L.ones(2), L.ones(2, 2)),
    "bmm batch": lambda L: L.bmm(L.ones(2, 2, 2), L.ones(3, 2, 2)),
    "dot of matrices": lambda L: L.dot(L.ones(2, 2), L.ones(2, 2)),
    "sum dim out of range": lambda L: L.ones(2, 3).sum(dim=2),
    "sum dim twice": lambda L: L.ones(2, 3).sum(dim=(0, -2)),
    "mean of int": lambda L: L.tensor([1, 2]).mean(),
    "std of int": lambda L: L.tensor([1, 2]).std(),
    "prod over a tuple": lambda L: L.ones(2, 3).prod(dim=(0,)),
    "argmax over a tuple": lambda L: L.ones(2, 3).argmax(dim=(0,)),
    "amax of empty": lambda L: L.ones(0).amax(),
    "max of empty": lambda L: L.ones(0).max(),
    "logsumexp over ()": lambda L: L.ones(2, 3).logsumexp(dim=()),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_and_edge_values_match_torch(name):
    want, want_err = _run(lambda: ERRORS[name](torch))
    got, got_err = _run(lambda: ERRORS[name](tg))
    diff = _compare(want, want_err, got, got_err)
    assert diff is None, diff


def test_examples_of_the_issue():
    assert tg.tensor([1, 5]).clamp(max=2.5).dtype == tg.float32
    assert tg.tensor([1, 5]).clamp(max=2.5).tolist() == [1.0, 2.5]
    for dtype in (tg.uint8, tg.int8, tg.int16, tg.int32, tg.bool):
        x = tg.tensor([1, 1], dtype=dtype)
        assert {x.sum().dtype, x.prod().dtype, x.cumsum(0).dtype, x.cumprod(0).dtype} == \
            {tg.int64}
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but "
                                           "got: double != float"):
        tg.ones(2, 2, dtype=tg.float64) @ tg.ones(2, 2)
    with pytest.raises(RuntimeError, match="long int != float"):
        tg.ones(2, 2, dtype=tg.int64) @ tg.ones(2, 2)
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte"):
        tg.nn.functional.cross_entropy(tg.ones(2, 3), tg.tensor([0, 1], dtype=tg.int32))
    y = (tg.ones(2, requires_grad=True) * 2).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    with pytest.raises(ValueError, match="expected a non-empty list of Tensors"):
        tg.cat([])
    with pytest.raises(ValueError, match="only one element tensors"):
        float(tg.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"):
        tg.gather(tg.ones(3), 0, tg.tensor([5]))
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent"):
        tg.arange(0, 10, -1)
