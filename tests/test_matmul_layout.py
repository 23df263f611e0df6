"""``matmul``'s VJP gives an operand laid out transposed (``x @ w.T``) its cotangent in that
layout, as PyTorch's ``mm`` backward does: the values are the product's derivative
whichever layout is chosen, and a linear layer's weight gradient comes out C-ordered, like
the weight (and like torch's ``weight.grad``)."""
import itertools

import numpy as np
import pytest
from conftest import eager_and_compiled, sgd_step

import tracegrad as tg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((4, 5))


def _operands(ta, tb):
    """f's arguments: the arrays whose transposes (where ``ta``/``tb``) are A and B."""
    a = A.T.copy() if ta else A
    b = B.T.copy() if tb else B
    return a, b


@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
def test_derivatives_whichever_operand_is_transposed(ta, tb):
    a0, b0 = _operands(ta, tb)

    def f(a, b):
        x = a.T if ta else a
        y = b.T if tb else b
        return np.sum(np.sin(x @ y) * np.arange(15.0).reshape(3, 5))

    w = np.arange(15.0).reshape(3, 5)
    g = np.cos(A @ B) * w                   # d f / d (A @ B)
    want_a, want_b = g @ B.T, A.T @ g       # then through each transpose
    want_a = want_a.T if ta else want_a
    want_b = want_b.T if tb else want_b
    for fn in (tg.grad(f, argnums=(0, 1)), tg.jit(tg.grad(f, argnums=(0, 1)))):
        for _ in range(3):                  # the cached and compiled plans too
            ga, gb = fn(a0, b0)
            np.testing.assert_allclose(ga, want_a, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(gb, want_b, rtol=1e-12, atol=1e-12)
    # the rule differentiated again: the Hessian against central differences of the grad
    h = tg.jit(tg.hessian(lambda a: f(a, b0)))(a0)
    eps = 1e-6
    grad = tg.grad(f)
    for idx in [(0, 0), (1, 2), (2, 1)]:
        if idx[0] >= a0.shape[0] or idx[1] >= a0.shape[1]:
            continue
        d = np.zeros_like(a0)
        d[idx] = eps
        fd = (grad(a0 + d, b0) - grad(a0 - d, b0)) / (2 * eps)
        np.testing.assert_allclose(h[(slice(None), slice(None)) + idx], fd, rtol=1e-6,
                                   atol=1e-7)


def _linear_grads(lib, as_tensor):
    w = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32)
    lin_w = as_tensor(w).requires_grad_()
    x = as_tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)).requires_grad_()
    xt = as_tensor(np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)).requires_grad_()
    out = lib.nn.functional.linear(x, lin_w) + (xt.t() @ lin_w.t())
    (out.sin().sum()).backward()
    return lin_w.grad, x.grad, xt.grad


def test_eager_gradients_have_torchs_layout_and_values():
    ours = _linear_grads(tg, tg.tensor)
    theirs = _linear_grads(torch, torch.from_numpy)
    for g, t in zip(ours, theirs):
        assert tuple(g.stride()) == tuple(t.stride())
        assert g.numpy().flags.c_contiguous
        np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-5, atol=1e-6)


def test_sgd_step_on_a_linear_layer_compiled_is_eager_bit_for_bit():
    def build():
        tg.manual_seed(0)
        model = tg.nn.Sequential(tg.nn.Linear(7, 5), tg.nn.Tanh(), tg.nn.Linear(5, 2))
        x = tg.tensor(np.linspace(-1, 1, 21, dtype=np.float32).reshape(3, 7))
        return model, sgd_step(model.parameters(), lambda: model(x).square().mean(), lr=0.1,
                               momentum=0.9)

    m1, m2, _ = eager_and_compiled(build)
    for p, q in zip(m1.parameters(), m2.parameters()):
        assert np.array_equal(p.detach().numpy(), q.detach().numpy())
        assert np.array_equal(p.grad.numpy(), q.grad.numpy())
        assert p.grad.numpy().flags.c_contiguous and q.grad.numpy().flags.c_contiguous
