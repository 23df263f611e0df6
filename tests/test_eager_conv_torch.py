"""Eager convolutions and max pooling against PyTorch (CPU), on generated configurations.

Each case draws an input, weight and bias, runs ``F.conv2d`` / ``F.conv_transpose2d`` /
``F.max_pool2d`` in both libraries, back-propagates the same random cotangent, and
compares the output and every gradient (input, weight, bias). The shapes are large
enough to reach each of the NumPy kernels (one product per image or for the whole
batch, flattened or strided windows, weight gradients with a kernel wider than the
output), with strides, padding (numbers, "same", "valid"), dilation, groups, with and
without bias, in float64 (to 1e-10) and float32 (to float32's accuracy, the benchmark's
1e-4).
"""
import warnings

import numpy as np
import pytest
from conftest import assert_close, bounded

import tracegrad as tg

torch = pytest.importorskip("torch")

F = tg.nn.functional
TF = torch.nn.functional
RTOL = {"float64": 1e-10, "float32": 1e-4}


def _conv_cases():
    rng = np.random.default_rng(14)
    cases = []
    for i in range(48):
        groups = int(rng.choice([1, 1, 2, 3]))
        c, o = groups * int(rng.integers(1, 4)), groups * int(rng.integers(1, 4))
        kh, kw = (int(k) for k in rng.integers(1, 5, 2))
        stride = tuple(int(s) for s in rng.choice([1, 1, 2, 3], 2))
        dilation = tuple(int(d) for d in rng.choice([1, 1, 2], 2))
        padding = [0, 1, (1, 2), "same", "valid"][i % 5]
        if padding == "same":
            stride = (1, 1)
        h, w = (int(n) for n in rng.integers(8, 22, 2))
        cases.append(dict(n=int(rng.integers(1, 4)), c=c, o=o, kernel=(kh, kw), hw=(h, w),
                          stride=stride, padding=padding, dilation=dilation, groups=groups,
                          bias=bool(i % 3), dtype=["float64", "float32"][i % 2],
                          x_grad=i % 4 != 3))
    return cases


CONV_CASES = _conv_cases() + [   # many channels (per group): other kernels
    dict(n=2, c=16, o=16, kernel=(3, 3), hw=(10, 9), stride=(1, 1), padding=1,
         dilation=(1, 1), groups=1, bias=True, dtype="float32", x_grad=True),
    dict(n=2, c=32, o=6, kernel=(2, 3), hw=(12, 11), stride=(1, 1), padding=(2, 0),
         dilation=(2, 1), groups=2, bias=False, dtype="float64", x_grad=True),
]


def _run(lib, fn, arrays, needs_grad, g):
    make = tg.tensor if lib is tg else torch.from_numpy
    ts = [None if a is None else make(np.array(a, copy=True)) for a in arrays]
    for t, need in zip(ts, needs_grad):
        if t is not None and need:
            t.requires_grad_(True)
    out = fn(*ts)
    out.backward(make(g))
    grads = [None if t is None or t.grad is None else t.grad.numpy() for t in ts]
    return out.detach().numpy(), grads


def _compare(case, arrays, needs_grad, ours_fn, theirs_fn, what):
    rng = np.random.default_rng(7)
    out_t = theirs_fn(*[None if a is None else torch.from_numpy(a) for a in arrays])
    g = rng.standard_normal(tuple(out_t.shape)).astype(case["dtype"])
    want, want_grads = _run(torch, theirs_fn, arrays, needs_grad, g)
    got, got_grads = _run(tg, ours_fn, arrays, needs_grad, g)
    rtol = RTOL[case["dtype"]]
    assert_close(got, want, rtol, f"{what}: output")
    for name, a, e in zip(("input", "weight", "bias"), got_grads, want_grads):
        assert (a is None) == (e is None), f"{what}: {name} gradient"
        if e is not None:
            assert_close(a, e, rtol, f"{what}: {name} gradient")


@pytest.mark.parametrize("case", bounded(CONV_CASES[:-2], 24) + CONV_CASES[-2:],
                         ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()).replace(" ", ""))
def test_conv2d_matches_torch(case):
    rng = np.random.default_rng(sum(case["hw"]) + case["c"])
    dt = case["dtype"]
    x = rng.standard_normal((case["n"], case["c"]) + case["hw"]).astype(dt)
    w = rng.standard_normal((case["o"], case["c"] // case["groups"]) + case["kernel"]).astype(dt)
    b = rng.standard_normal(case["o"]).astype(dt) if case["bias"] else None
    opts = {k: case[k] for k in ("stride", "padding", "dilation", "groups")}
    eff = [d * (k - 1) + 1 for d, k in zip(case["dilation"], case["kernel"])]
    pad = (0, 0) if case["padding"] in ("same", "valid") else np.broadcast_to(case["padding"], 2)
    if any(e > n + 2 * p for e, n, p in zip(eff, case["hw"], pad)) and case["padding"] != "same":
        pytest.skip("kernel larger than the padded input")
    with warnings.catch_warnings():     # torch's note on "same" with an even kernel
        warnings.simplefilter("ignore", UserWarning)
        _compare(case, [x, w, b], [case["x_grad"], True, True],
                 lambda x, w, b: F.conv2d(x, w, b, **opts),
                 lambda x, w, b: TF.conv2d(x, w, b, **opts), "conv2d")


def _transpose_cases():
    rng = np.random.default_rng(15)
    cases = []
    for i in range(24):
        groups = int(rng.choice([1, 1, 2]))
        stride = tuple(int(s) for s in rng.choice([1, 1, 2, 3], 2))
        dilation = tuple(int(d) for d in rng.choice([1, 1, 2], 2))
        out_pad = tuple(int(rng.integers(0, max(s, d))) for s, d in zip(stride, dilation))
        cases.append(dict(n=int(rng.integers(1, 3)), c=groups * int(rng.integers(1, 4)),
                          o=groups * int(rng.integers(1, 4)),
                          kernel=tuple(int(k) for k in rng.integers(1, 5, 2)),
                          hw=tuple(int(n) for n in rng.integers(3, 14, 2)), stride=stride,
                          padding=tuple(int(p) for p in rng.integers(0, 2, 2)),
                          output_padding=out_pad, dilation=dilation, groups=groups,
                          bias=bool(i % 3), dtype=["float64", "float32"][i % 2]))
    return cases + [dict(n=2, c=4, o=16, kernel=(3, 2), hw=(9, 10), stride=(1, 1), padding=(1, 2),
                         output_padding=(0, 1), dilation=(1, 2), groups=1, bias=True,
                         dtype="float64")]


@pytest.mark.parametrize("case", bounded(_transpose_cases(), 12) + _transpose_cases()[-1:],
                         ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()).replace(" ", ""))
def test_conv_transpose2d_matches_torch(case):
    rng = np.random.default_rng(sum(case["hw"]) + case["o"])
    dt = case["dtype"]
    x = rng.standard_normal((case["n"], case["c"]) + case["hw"]).astype(dt)
    w = rng.standard_normal((case["c"], case["o"] // case["groups"]) + case["kernel"]).astype(dt)
    b = rng.standard_normal(case["o"]).astype(dt) if case["bias"] else None
    opts = {k: case[k] for k in ("stride", "padding", "output_padding", "groups", "dilation")}
    try:
        TF.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(w), None, **opts)
    except RuntimeError:
        pytest.skip("torch refuses these options")
    _compare(case, [x, w, b], [True, True, True],
             lambda x, w, b: F.conv_transpose2d(x, w, b, **opts),
             lambda x, w, b: TF.conv_transpose2d(x, w, b, **opts), "conv_transpose2d")


POOL_CASES = [
    dict(kernel_size=2),                                      # the default: stride = kernel
    dict(kernel_size=3, stride=2),                            # overlapping windows
    dict(kernel_size=(2, 3), stride=(2, 3), padding=(1, 1)),  # apart, padded
    dict(kernel_size=3, stride=1, padding=1),
    dict(kernel_size=2, stride=3, dilation=2),                # apart, dilated
    dict(kernel_size=3, stride=2, ceil_mode=True),
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("opts", POOL_CASES, ids=lambda o: "-".join(f"{k}={v}" for k, v in
                                                                   o.items()).replace(" ", ""))
def test_max_pool2d_matches_torch(opts, dtype):
    rng = np.random.default_rng(5)
    x = (np.round(rng.standard_normal((2, 3, 13, 11)) * 2) / 2).astype(dtype)  # ties
    case = dict(dtype=dtype)
    _compare(case, [x], [True], lambda x: F.max_pool2d(x, **opts),
             lambda x: TF.max_pool2d(x, **opts), "max_pool2d")
