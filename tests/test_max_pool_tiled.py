"""max_pool2d's VJP where the windows tile the image (stride = kernel, no padding or
dilation, PyTorch's default) takes its own path: planes, a weighted first-maximum test and
one select. Against torch (float64): ties (ReLU's zeros, equal values) go to the first
place of a window in row-major order, rows and columns the windows leave out get nothing,
and the gradient differentiates again (a Hessian-vector product through it)."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ir import apply

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _pool(kernel):
    return lambda x: apply("max_pool2d", x, kernel=kernel, stride=kernel, padding=(0, 0),
                           dilation=(1, 1))


@pytest.mark.parametrize("kernel, hw", [
    ((2, 2), (8, 6)), ((2, 2), (9, 7)), ((3, 3), (9, 10)), ((2, 3), (7, 9)), ((1, 2), (3, 5)),
    ((4, 4), (8, 8)),
])
def test_tiled_max_pool_gradient_goes_to_the_first_maximum_like_torch(kernel, hw):
    rng = np.random.default_rng(sum(hw))
    x = np.maximum(np.round(rng.standard_normal((2, 3) + hw) * 2) / 2, 0.0)   # many ties
    x[0, 1, :kernel[0], :kernel[1]] = -np.inf      # a window of -inf only
    out, vjp = tg.vjp(_pool(kernel), x)
    ct = rng.standard_normal(out.shape)
    (got,) = vjp(ct)
    leaf = torch.tensor(x, requires_grad=True)
    ref = F.max_pool2d(leaf, kernel)
    ref.backward(torch.tensor(ct))
    np.testing.assert_array_equal(out, ref.detach().numpy())
    np.testing.assert_allclose(got, leaf.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_tiled_max_pool_hessian_vector_product_matches_torch():
    rng = np.random.default_rng(3)
    x, v = rng.standard_normal((2, 2, 6, 5)), rng.standard_normal((2, 2, 6, 5))

    def f(xp, pool, x):
        return xp.sum(pool(xp.tanh(x)) ** 3)

    def hvp_tg(x):
        return np.sum(tg.grad(lambda x: f(np, _pool((2, 2)), x))(x) * v)

    got = tg.grad(hvp_tg)(x)
    leaf = torch.tensor(x, requires_grad=True)
    (g,) = torch.autograd.grad(f(torch, lambda t: F.max_pool2d(t, 2), leaf), leaf,
                               create_graph=True)
    (want,) = torch.autograd.grad((g * torch.tensor(v)).sum(), leaf)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-10, atol=1e-10)
