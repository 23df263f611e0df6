"""The eager API's fast paths give what its general paths give.

``ops._fast_binary`` runs a binary elementwise operation on concrete tensors and Python
numbers without ``dispatch.call``'s generic walks, and looks the result dtype up by
operand kind; ``ops.FAST.set(False)`` turns it off. Each case runs the same operation both
ways, on operands of every kind the promotion table has (tensors with dimensions, 0-d
tensors, Python numbers), with and without gradients: values (bit for bit), dtypes,
``grad_fn`` names, the gradients of the operands, and the errors raised must be the same.
(torch is the oracle of the general path: ``test_eager_promotion.py``.)

Also here: a custom ``Function`` applied in a training loop leaves nothing behind on the
tape (its rule held the outputs, and the tape's graph the rule, for good).
"""
from __future__ import annotations

import gc
import itertools

import numpy as np
import pytest
from conftest import bounded
from test_eager_autograd import Cube

import tracegrad as tg
from tracegrad.eager import arithmetic as ops
from tracegrad.eager.tape import AccumulateGrad, GradFn, Saved

DTYPES = ["bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64",
          "complex64"]
NUMBERS = {"bool": True, "int": 3, "negint": -2, "float": 2.5, "two": 2}
OPERANDS = ([("tensor", d) for d in DTYPES] + [("0-d", d) for d in DTYPES]
            + [("number", n) for n in NUMBERS])
OPS = {
    "add": lambda a, b: a + b, "radd": lambda a, b: b + a,
    "sub": lambda a, b: a - b, "rsub": lambda a, b: b - a,
    "mul": lambda a, b: a * b, "div": lambda a, b: a / b, "rdiv": lambda a, b: b / a,
    "pow": lambda a, b: a ** b, "lt": lambda a, b: a < b, "eq": lambda a, b: a == b,
    "maximum": lambda a, b: a.maximum(b),
    "sum": lambda a, b: (a * b).sum() if isinstance(a, tg.Tensor) else (b * a).sum(),
    "sub_": lambda a, b: _in_place(a, b, "sub_"), "mul_": lambda a, b: _in_place(a, b, "mul_"),
}


def _in_place(a, b, method):
    """``a.clone()`` changed in place under no_grad (the fast in-place path)."""
    if not isinstance(a, tg.Tensor):
        a, b = b, a
    with tg.no_grad():
        c = a.clone()
        return getattr(c, method)(b)


def _operand(kind, dtype, grad):
    if kind == "number":
        return NUMBERS[dtype]
    values = np.array([True, False, True] if dtype == "bool" else [1.5, -2.0, 3.0])
    t = tg.tensor(values.astype(dtype) if kind == "tensor" else values[1].astype(dtype))
    if grad and dtype.startswith("float"):
        t.requires_grad_()
    return t


def _run(op, a_spec, b_spec, grad, fast):
    token = ops.FAST.set(fast)
    try:
        a, b = _operand(*a_spec, grad), _operand(*b_spec, grad)
        try:
            with np.errstate(all="ignore"):
                out = OPS[op](a, b)
        except Exception as e:     # noqa: BLE001 - the error is what is compared
            return ("raised", type(e).__name__, str(e))
        got = [out.dtype, out.detach().numpy().tobytes(), type(out.grad_fn).__name__,
               out.grad_fn.name() if out.grad_fn is not None else None]
        if out.requires_grad and out.dtype.kind == "f":
            with np.errstate(all="ignore"):
                out.sum().backward()
            for x in (a, b):
                if isinstance(x, tg.Tensor) and x.requires_grad:
                    got.append(None if x.grad is None else x.grad.numpy().tobytes())
        return got
    finally:
        ops.FAST.reset(token)


CASES = [(op, a, b, grad) for op in OPS for a, b in itertools.product(OPERANDS, OPERANDS)
         if a[0] != "number" or b[0] != "number" for grad in (False, True)]


@pytest.mark.parametrize("op,a,b,grad", bounded(CASES, 600),
                         ids=lambda v: "-".join(v) if isinstance(v, tuple) else str(v))
def test_fast_binary_matches_general_path(op, a, b, grad):
    assert _run(op, a, b, grad, True) == _run(op, a, b, grad, False)


def test_fast_binary_under_no_grad_and_after_default_dtype_change():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.no_grad():
        y = x * 2
    assert not y.requires_grad and y.grad_fn is None
    before = tg.get_default_dtype()
    try:
        for dt in (tg.float64, tg.float32):
            tg.set_default_dtype(dt)
            # integer division and a Python float take the default dtype each time
            assert (tg.tensor([1, 2]) / 2).dtype == dt
            assert (tg.tensor([1, 2]) * 0.5).dtype == dt
    finally:
        tg.set_default_dtype(before)


def test_custom_function_training_loop_leaves_no_nodes_behind():
    w = tg.tensor([0.5, -1.0], requires_grad=True)
    x = tg.tensor([1.0, 2.0])

    def step():
        loss = (Cube.apply(w * x) - 1).pow(2).sum()
        loss.backward()
        with tg.no_grad():
            w.sub_(1e-4 * w.grad)
            w.grad = None
        return loss

    def live():         # the tape nodes alive (the graph is only their references)
        kinds = (GradFn, AccumulateGrad, Saved)
        return sum(1 for o in gc.get_objects() if type(o) in kinds)

    step()
    gc.collect()        # other tests' garbage in this worker goes first
    start = live()
    gc.disable()
    try:
        for _ in range(20):
            step()
        assert live() == start      # freed as they go: no collection needed
    finally:
        gc.enable()
    applied = [Cube.apply(w * x) for _ in range(5)]
    del applied
    gc.collect()
    assert live() == start
    # the values are the closed form's: d/dw (w x)^3 = 3 (w x)^2 x
    w2 = tg.tensor([0.5, -1.0], requires_grad=True)
    Cube.apply(w2 * x).sum().backward()
    np.testing.assert_allclose(w2.grad.numpy(), 3 * (np.array([0.5, -2.0])) ** 2 * [1.0, 2.0])


def test_the_fast_path_is_the_one_taken(monkeypatch):
    def general(*args):
        raise AssertionError("the general path ran")
    monkeypatch.setattr(ops, "promoted", general)
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (2 * x + 1) / x - tg.tensor(3.0)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [-1.0, -0.25])    # d/dx (2 + 1/x)
    with tg.no_grad():
        assert ((x * x) ** 3).dtype == np.float32


def test_a_recorded_negative_zero_is_not_the_positive_zero():
    # the tape shares one constant node per scalar value: -0.0 and 0.0 compare equal, yet
    # x * -0.0 is -0.0 for x > 0 (torch: 1 / (x * -0.0) is -inf)
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    pos, neg = x * 0.0, x * -0.0
    assert np.all(np.signbit(neg.detach().numpy()))
    assert not np.any(np.signbit(pos.detach().numpy()))
