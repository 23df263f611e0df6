"""``sigmoid`` is PyTorch's 1 / (1 + exp(-x)): its tails (sigmoid(-20) is 2.06e-9 in
float32, not 0 as the tanh form gives) and its gradient out * (1 - out) (0, not NaN, where
exp(-x) overflowed), against torch itself."""
import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")


# (the gradient's 1 - out cancels near out = 1: an ulp of out is more of it there)
@pytest.mark.parametrize("dtype, lo, rtol, grad_rtol", [(np.float32, -100.0, 2e-6, 3e-5),
                                                        (np.float64, -800.0, 4e-15, 1e-12)])
def test_sigmoid_and_its_gradient_are_torchs(dtype, lo, rtol, grad_rtol):
    x = np.linspace(lo, -lo, 20001).astype(dtype)
    ours = tg.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    y, want = ours.sigmoid(), torch.sigmoid(theirs)
    y.sum().backward()
    want.sum().backward()
    for got, ref, tol in ((y.detach().numpy(), want.detach().numpy(), rtol),
                          (ours.grad.numpy(), theirs.grad.numpy(), grad_rtol)):
        assert got.dtype == ref.dtype
        np.testing.assert_array_equal(got == 0, ref == 0)     # the same zeros, no others
        np.testing.assert_allclose(got, ref, rtol=tol, atol=0)
    assert str(y.grad_fn.name()) == "SigmoidBackward0"


def test_functional_and_inplace_sigmoid_are_the_method():
    x = np.array([-30.0, -1.0, 0.0, 2.0], np.float32)
    a = tg.tensor(x)
    b = a.clone()
    b.sigmoid_()
    np.testing.assert_array_equal(b.numpy(), a.sigmoid().numpy())
    np.testing.assert_array_equal(tg.nn.functional.sigmoid(a).numpy(), a.sigmoid().numpy())
    assert a.sigmoid().numpy()[0] > 0
