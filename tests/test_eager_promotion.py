"""PyTorch's type promotion in the eager API, against torch CPU as the oracle.

Every binary operation below is run on generated operand pairs: each side a tensor with
dimensions, a 0-d tensor or a Python number, of every dtype both libraries have. The
result dtype and values must be torch's; where torch raises (no kernel for the dtype, a
number given where a tensor is needed), tracegrad raises the same exception type.

Left out: results torch computes in ``complex32`` (a float16 tensor meeting a complex
number), a dtype NumPy does not have; tracegrad gives complex64 there.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg

torch = pytest.importorskip("torch")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
          "complex64", "complex128"]
NUMBERS = {"bool": True, "int": 2, "float": 2.5, "complex": 1 + 2j}
OPERANDS = ([("tensor", d) for d in DTYPES] + [("0-d", d) for d in DTYPES]
            + [("number", n) for n in NUMBERS])


def _operand(L, kind, dtype):
    if kind == "number":
        return NUMBERS[dtype]
    values = [True, False, True] if dtype == "bool" else [1, 2, 3]
    return L.tensor(values if kind == "tensor" else values[1], dtype=getattr(L, dtype))


_MASK = [True, False, True]
OPS = {
    "add": lambda L, a, b: L.add(a, b), "sub": lambda L, a, b: L.sub(a, b),
    "mul": lambda L, a, b: L.mul(a, b), "div": lambda L, a, b: L.div(a, b),
    "true_divide": lambda L, a, b: L.true_divide(a, b),
    "floor_divide": lambda L, a, b: L.floor_divide(a, b),
    "remainder": lambda L, a, b: L.remainder(a, b), "pow": lambda L, a, b: L.pow(a, b),
    "maximum": lambda L, a, b: L.maximum(a, b), "minimum": lambda L, a, b: L.minimum(a, b),
    "eq": lambda L, a, b: L.eq(a, b), "lt": lambda L, a, b: L.lt(a, b),
    "ge": lambda L, a, b: L.ge(a, b),
    "+": lambda L, a, b: a + b, "-": lambda L, a, b: a - b, "*": lambda L, a, b: a * b,
    "/": lambda L, a, b: a / b, "//": lambda L, a, b: a // b, "%": lambda L, a, b: a % b,
    "**": lambda L, a, b: a ** b, "==": lambda L, a, b: a == b, "<": lambda L, a, b: a < b,
    "where": lambda L, a, b: L.where(L.tensor(_MASK), a, b),
    "cat": lambda L, a, b: L.cat([a, b]), "stack": lambda L, a, b: L.stack([a, b]),
}
OPERATORS = {"+", "-", "*", "/", "//", "%", "**", "==", "<"}


def _cases(op):
    pairs = [(a, b) for a, b in itertools.product(OPERANDS, OPERANDS)
             if not (a[0] == "number" and b[0] == "number")
             and not (op in OPERATORS and a[0] == "number" and b[0] == "0-d")]
    return bounded(pairs, 90)


def _run(L, op, a, b):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return OPS[op](L, _operand(L, *a), _operand(L, *b)), None
    except Exception as e:  # noqa: BLE001  (the type is compared with torch's)
        return None, e


@pytest.mark.parametrize("op", list(OPS))
def test_binary_result_dtypes_and_values_match_torch(op):
    bad = []
    for a, b in _cases(op):
        want, want_err = _run(torch, op, a, b)
        if want is not None and want.dtype == torch.complex32 or \
                want_err is not None and "ComplexHalf" in str(want_err):
            continue                        # NumPy has no complex32 (module docstring)
        got, got_err = _run(tg, op, a, b)
        case = f"{a[0]} {a[1]} {op} {b[0]} {b[1]}"
        if want_err is not None or got_err is not None:
            if type(want_err) is not type(got_err):
                bad.append(f"{case}: torch {type(want_err).__name__}: {want_err} / tracegrad "
                           f"{type(got_err).__name__}: {got_err}")
            continue
        want_np = want.numpy()
        if got.dtype != want_np.dtype:
            bad.append(f"{case}: dtype {got.dtype} vs torch {want_np.dtype}")
        elif got.shape != tuple(want.shape) or not np.allclose(
                np.asarray(got._data, complex), want_np.astype(complex), rtol=1e-3, equal_nan=True):
            bad.append(f"{case}: {got._data} vs torch {want_np}")
    assert not bad, f"{len(bad)} cases differ:\n" + "\n".join(bad[:20])


def test_promotion_examples_of_the_issue():
    f32 = tg.ones(3)
    assert (f32 + tg.tensor(2.0, dtype=tg.float64)).dtype == tg.float32      # 0-d: no widening
    assert (f32 + tg.tensor([1, 2, 3])).dtype == tg.float32                  # int64 tensor
    assert (tg.tensor([1, 2, 3]) + 2.5).dtype == tg.get_default_dtype()
    assert (tg.tensor([1], dtype=tg.uint8) + tg.tensor([1], dtype=tg.int8)).dtype == tg.int16
    assert tg.cat([f32, tg.tensor([1, 2])]).dtype == tg.float32


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, repeat=2)))
def test_promote_types_matches_torch(a, b):
    got = tg.promote_types(getattr(tg, a), getattr(tg, b))
    want = torch.promote_types(getattr(torch, a), getattr(torch, b))
    if want == torch.complex32:
        return
    assert got == np.dtype(str(want).replace("torch.", ""))


def test_result_type_matches_torch():
    for a, b in bounded([(a, b) for a, b in itertools.product(OPERANDS, OPERANDS)
                         if a[0] != "number"], 120):
        want = torch.result_type(_operand(torch, *a), _operand(torch, *b))
        if want == torch.complex32:
            continue
        got = tg.result_type(_operand(tg, *a), _operand(tg, *b))
        assert got == np.dtype(str(want).replace("torch.", "")), (a, b)


def test_fmod_values_dtypes_and_gradients_match_torch():
    x = [5.5, -5.5, 3.0, -0.25]
    y = [2.0, 2.0, -1.5, 0.5]
    a, b = tg.tensor(x, dtype=tg.float64, requires_grad=True), \
        tg.tensor(y, dtype=tg.float64, requires_grad=True)
    ta, tb = torch.tensor(x, dtype=torch.float64, requires_grad=True), \
        torch.tensor(y, dtype=torch.float64, requires_grad=True)
    out, want = tg.fmod(a, b), torch.fmod(ta, tb)
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
    out.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy())
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy())
    assert out.grad_fn.name() == want.grad_fn.name()
    ints = tg.tensor([7, -7]).fmod(3)
    assert ints.dtype == tg.int64 and ints.tolist() == torch.tensor([7, -7]).fmod(3).tolist()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        tg.tensor([1, 2]).fmod(0)


INPLACE_DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64",
                  "complex64"]


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_", "pow_"])
def test_inplace_keeps_the_dtype_or_raises_as_torch(op):
    """An in-place result keeps the tensor's dtype; one of a higher category raises."""
    others = [o for o in OPERANDS if o[0] != "number" or o[1] != "complex"]
    bad = []
    for dtype, other in bounded(list(itertools.product(INPLACE_DTYPES, others)), 120):
        out = []
        for L in (torch, tg):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = getattr(_operand(L, "tensor", dtype), op)(_operand(L, *other))
                out.append((str(r.dtype).replace("torch.", ""), np.asarray(r.tolist(), complex)))
            except Exception as e:  # noqa: BLE001  (the type is compared with torch's)
                out.append((type(e).__name__, None))
        (want, want_v), (got, got_v) = out
        if want != got or want_v is not None and not np.allclose(want_v, got_v, equal_nan=True):
            bad.append(f"{dtype}.{op}({other}): torch {want} {want_v} / tracegrad {got} {got_v}")
    assert not bad, "\n".join(bad[:20])
