"""A custom ``Function`` that modifies an input in place and says so (``ctx.mark_dirty``)
returns that input itself, with torch's version counter, ``grad_fn`` and errors."""
import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")


def _double_in_place(L):
    class Double(L.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return g * 3        # not the true derivative: shows that this backward ran

    return Double


@pytest.mark.parametrize("L", [tg, torch], ids=["tracegrad", "torch"])
def test_dirty_input_is_returned(L):
    a = L.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    c = _double_in_place(L).apply(b)
    assert c is b
    assert b._version == 2
    assert type(c.grad_fn).__name__ == "DoubleBackward" or c.grad_fn.name() == "DoubleBackward"
    assert c.grad_fn is b.grad_fn
    (nxt, _), = c.grad_fn.next_functions
    assert nxt.name() == "MulBackward0"
    np.testing.assert_array_equal(c.detach().numpy(), [2.0, 4.0])
    (c * c).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [12.0, 24.0])


@pytest.mark.parametrize("L", [tg, torch], ids=["tracegrad", "torch"])
def test_dirty_input_without_graph(L):
    b = L.tensor([1.0, 2.0])
    c = _double_in_place(L).apply(b)
    assert c is b and b._version == 2 and not c.requires_grad
    a = L.tensor([1.0, 2.0], requires_grad=True)
    with L.no_grad():
        b = a * 1
        c = _double_in_place(L).apply(b)
    assert c is b and b._version == 2


@pytest.mark.parametrize("L", [tg, torch], ids=["tracegrad", "torch"])
def test_dirty_errors(L):
    a = L.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used "
                                           "in an in-place operation"):
        _double_in_place(L).apply(a)
    b = a.exp()         # exp saves its output, which the Function then changes
    c = _double_in_place(L).apply(b)
    with pytest.raises(RuntimeError, match="is at version 2; expected version 0 instead"):
        c.sum().backward()
