"""Eager float32 ``x ** n`` for n in 4..8 is computed by products in float64 rounded once
(``eager/arithmetic._float32_power``): correctly rounded, so within PyTorch's 1-ulp pow
of torch's numbers, with torch's dtype, inf and NaN, and its gradient; compiled, the same
bits as eager."""
import numpy as np
import pytest
from conftest import eager_and_compiled, sgd_step

import tracegrad as tg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)
X = np.concatenate([
    RNG.standard_normal(20000) * 3,
    RNG.uniform(-60, 60, 20000),
    np.geomspace(1e-12, 1e12, 5000),
    -np.geomspace(1e-12, 1e12, 5000),
    [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3e38, -3e38, 1e-45],
]).astype(np.float32)


def _ulps(got, exact):
    """|got - exact| in units of the float32 spacing at ``got`` (finite nonzero ``got``)."""
    return np.abs(got.astype(np.float64) - exact) / np.spacing(np.abs(got)).astype(np.float64)


@pytest.mark.parametrize("n", [4, 5, 6, 7, 8])
def test_values_against_torch_and_the_exact_power(n):
    with np.errstate(over="ignore", under="ignore"):
        ours = (tg.tensor(X) ** n).numpy()
        exact = X.astype(np.float64) ** n           # exact for these: within 2**-50
    theirs = (torch.from_numpy(X) ** n).numpy()
    assert ours.dtype == np.float32
    assert np.array_equal(np.isnan(ours), np.isnan(theirs))
    assert np.array_equal(np.isinf(ours), np.isinf(theirs))
    assert np.array_equal(ours[np.isinf(ours)], theirs[np.isinf(theirs)])
    fine = np.isfinite(ours) & (ours != 0) & (np.abs(exact) > 1e-37)
    assert _ulps(ours[fine], exact[fine]).max() <= 0.5 + 1e-6     # correctly rounded
    assert _ulps(theirs[fine], ours[fine].astype(np.float64)).max() <= 1.0   # torch's 1 ulp
    assert np.mean(ours[fine] == theirs[fine]) > 0.95


@pytest.mark.parametrize("n", [4, 5, 8])
def test_gradient_and_grad_fn_match_torch(n):
    x = X[:300].copy()
    a = tg.tensor(x, requires_grad=True)
    b = torch.tensor(x, requires_grad=True)
    ya, yb = a ** n, b ** n
    assert ya.grad_fn.name() == yb.grad_fn.name() == "PowBackward0"
    ya.sum().backward()
    yb.sum().backward()
    assert a.grad.dtype == tg.float32
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=3e-7, atol=0)


def test_compiled_step_is_eager_bit_for_bit():
    def build():
        w = tg.nn.Parameter(tg.tensor([0.3, -0.2, 0.1], dtype=tg.float32))
        x = tg.tensor(X[:500].clip(-3, 3))

        def loss():
            return (w[0] * x ** 4 + w[1] * x ** 5 + w[2] * x ** 8).square().mean()
        return w, sgd_step([w], loss, lr=1e-4, momentum=0.9)

    w1, w2, compiled = eager_and_compiled(build)
    assert np.array_equal(w1.detach().numpy(), w2.detach().numpy())
    assert compiled.explain().graph_count == 1
