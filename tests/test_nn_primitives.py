"""The nn primitives against an independent reference: torch.nn.functional (CPU, float64).

test_primitives.py checks them against their own JAX lowerings; this file checks that
those lowerings and the NumPy implementations mean what PyTorch means, for values,
gradients and (for the convolutions) a second derivative.
"""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ir import apply

torch = pytest.importorskip("torch")
F = torch.nn.functional

RTOL = 1e-12


def _rand(*shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


def _close(a, b, what):
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=RTOL, atol=RTOL * max(np.abs(b).max(), 1.0),
                               err_msg=what)


def _check(tg_fn, torch_fn, *args, seed):
    """Values of ``tg_fn`` and ``torch_fn`` agree, and so do their VJPs along a random
    cotangent."""
    out, vjp = tg.vjp(tg_fn, *args)
    leaves = [torch.tensor(a, requires_grad=True) for a in args]
    ref = torch_fn(*leaves)
    _close(out, ref, "value")
    ct = _rand(*out.shape, seed=seed)
    ref.backward(torch.tensor(ct))
    for k, (got, leaf) in enumerate(zip(vjp(ct), leaves)):
        _close(got, leaf.grad, f"cotangent {k}")


CONV = [  # x shape, (C_out, kH, kW), stride, padding, dilation
    ((2, 3, 7, 6), (4, 3, 3), (1, 1), (0, 0), (1, 1)),
    ((2, 3, 8, 7), (4, 3, 3), (2, 2), (1, 1), (1, 1)),
    ((1, 2, 9, 8), (3, 2, 3), (2, 1), (1, 2), (2, 1)),
    ((3, 4, 5, 5), (2, 1, 1), (2, 2), (0, 1), (1, 1)),
    ((1, 2, 6, 10), (2, 3, 2), (1, 3), (1, 1), (2, 2)),
]


@pytest.mark.parametrize("xs,wk,stride,padding,dilation", CONV)
def test_conv2d_matches_torch(xs, wk, stride, padding, dilation):
    x, w = _rand(*xs, seed=1), _rand(wk[0], xs[1], *wk[1:], seed=2)
    params = {"stride": stride, "padding": padding, "dilation": dilation}
    _check(lambda x, w: apply("conv2d", x, w, **params),
           lambda x, w: F.conv2d(x, w, **params), x, w, seed=3)


@pytest.mark.parametrize("xs,wk,stride,padding,dilation", CONV)
@pytest.mark.parametrize("output_padding", [(0, 0), (1, 1)])
def test_conv_transpose2d_matches_torch(xs, wk, stride, padding, dilation, output_padding):
    # PyTorch accepts an output_padding below max(stride, dilation) per axis
    op = tuple(min(o, max(s, d) - 1) for o, s, d in zip(output_padding, stride, dilation))
    x, w = _rand(*xs, seed=4), _rand(xs[1], wk[0], *wk[1:], seed=5)
    params = {"stride": stride, "padding": padding, "output_padding": op, "dilation": dilation}
    _check(lambda x, w: apply("conv_transpose2d", x, w, **params),
           lambda x, w: F.conv_transpose2d(x, w, **params), x, w, seed=6)


POOL = [  # kernel, stride, padding, dilation
    ((2, 2), (2, 2), (0, 0), (1, 1)),
    ((3, 3), (2, 2), (1, 1), (1, 1)),
    ((3, 2), (1, 2), (1, 1), (1, 1)),
    ((2, 3), (2, 1), (1, 0), (2, 2)),
    ((1, 1), (2, 2), (0, 0), (1, 1)),
]


@pytest.mark.parametrize("kernel,stride,padding,dilation", POOL)
def test_max_pool2d_matches_torch(kernel, stride, padding, dilation):
    x = _rand(2, 3, 7, 8, seed=7)
    params = {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation}
    _check(lambda x: apply("max_pool2d", x, **params),
           lambda x: F.max_pool2d(x, kernel, stride, padding, dilation), x, seed=8)


def test_max_pool2d_ties_go_to_the_first_maximum_like_torch():
    x = np.round(_rand(1, 2, 6, 6, seed=9))  # a handful of distinct values: many ties
    params = {"kernel": (3, 3), "stride": (1, 1), "padding": (1, 1), "dilation": (1, 1)}
    _check(lambda x: apply("max_pool2d", x, **params),
           lambda x: F.max_pool2d(x, 3, 1, 1), x, seed=10)


@pytest.mark.parametrize("kernel,stride,padding,dilation", POOL)
def test_avg_pool2d_matches_torch(kernel, stride, padding, dilation):
    x = _rand(2, 3, 7, 8, seed=11)
    params = {"kernel": kernel, "stride": stride, "padding": padding}
    _check(lambda x: apply("avg_pool2d", x, **params),
           lambda x: F.avg_pool2d(x, kernel, stride, padding), x, seed=12)


def test_small_cnn_gradient_and_second_derivative_match_torch():
    """conv -> bias -> tanh -> max pool -> transposed conv -> avg pool, to second order:
    the gradient, and the derivative of <gradient, v> (a Hessian-vector product)."""
    def net(xp, conv, convt, maxpool, avgpool, x, w1, b, w2):
        h = xp.tanh(conv(x, w1) + b[None, :, None, None])
        return xp.sum(avgpool(convt(maxpool(h), w2)) ** 2)

    ops_tg = (lambda x, w: apply("conv2d", x, w, stride=(1, 2), padding=(1, 1), dilation=(1, 1)),
              lambda x, w: apply("conv_transpose2d", x, w, stride=(2, 2), padding=(1, 0),
                                 output_padding=(1, 0), dilation=(1, 1)),
              lambda x: apply("max_pool2d", x, kernel=(2, 2), stride=(1, 1), padding=(0, 0),
                              dilation=(1, 1)),
              lambda x: apply("avg_pool2d", x, kernel=(2, 2), stride=(2, 2), padding=(1, 1)))
    ops_torch = (lambda x, w: F.conv2d(x, w, stride=(1, 2), padding=1),
                 lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=(1, 0),
                                                 output_padding=(1, 0)),
                 lambda x: F.max_pool2d(x, 2, 1),
                 lambda x: F.avg_pool2d(x, 2, 2, 1))
    args = [_rand(2, 2, 6, 7, seed=13), _rand(3, 2, 3, 3, seed=14), _rand(3, seed=15),
            _rand(3, 2, 2, 2, seed=16)]
    vs = [_rand(*a.shape, seed=20 + k) for k, a in enumerate(args)]
    argnums = tuple(range(len(args)))

    def f_tg(*a):
        return net(np, *ops_tg, *a)

    def hvp_tg(*a):
        grads = tg.grad(f_tg, argnums=argnums)(*a)
        return sum(np.sum(g * v) for g, v in zip(grads, vs))

    grads = tg.grad(f_tg, argnums=argnums)(*args)
    hvps = tg.grad(hvp_tg, argnums=argnums)(*args)

    leaves = [torch.tensor(a, requires_grad=True) for a in args]
    ref = torch.autograd.grad(net(torch, *ops_torch, *leaves), leaves, create_graph=True)
    ref_hvp = torch.autograd.grad(sum((g * torch.tensor(v)).sum() for g, v in zip(ref, vs)),
                                  leaves)
    for k in range(len(args)):
        _close(grads[k], ref[k], f"gradient {k}")
        _close(hvps[k], ref_hvp[k], f"Hessian-vector product {k}")
