"""3-D convolution and pooling over (N, C, D, H, W) volumes: ``F.conv3d``,
``F.conv_transpose3d``, ``F.max_pool3d``, ``F.avg_pool3d`` and their modules.

Each is one recorded node of NumPy code made of the 2-D primitives: the depth axis is
walked tap by tap (a strided slice of the volume per kernel depth, folded into the batch,
convolved or pooled in 2-D, and summed, or maximised, over the taps), so the derivatives
are the 2-D primitives' and the slices', to any order.
"""
from __future__ import annotations

import math

import numpy as np

from ...ir import apply
from ..dispatch import call
from ..tensor import Tensor
from .conv_common import (
    _check_conv,
    _check_groups,
    _grouped,
    _pool_output,
    _same_padding,
    _with_bias,
)

__all__ = ["conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d"]


def _triple(value, what):
    if isinstance(value, Tensor):
        value = value.tolist()
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            value = (value[0],) * 3
        if len(value) != 3:
            raise RuntimeError(f"expected {what} to be a single integer value or a list of 3 "
                               f"values to match the convolution dimensions, but got {what}="
                               f"{list(value)}")
        return tuple(int(v) for v in value)
    return (int(value),) * 3


def _batched(input, what):
    if input.dim() == 4:
        return input.unsqueeze(0), True
    if input.dim() != 5:
        if what.startswith("conv"):
            raise RuntimeError(f"Expected 4D (unbatched) or 5D (batched) input to {what}, but "
                               f"got input of size: {list(input.shape)}")
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    return input, False


def _depth_taps(x, k, stride, dilation, out):
    """The ``k`` strided depth slices (one per kernel tap) of the padded volume ``x``."""
    return [x[:, :, t * dilation:t * dilation + stride * (out - 1) + 1:stride] for t in range(k)]


def _fold(v):
    """(N, C, D, H, W) -> (N * D, C, H, W)."""
    n, c, d, h, w = v.shape
    return np.reshape(np.transpose(v, (0, 2, 1, 3, 4)), (n * d, c, h, w))


def _unfold(v, n):
    """(N * D, C, H, W) -> (N, C, D, H, W)."""
    nd, c, h, w = v.shape
    return np.transpose(np.reshape(v, (n, nd // n, c, h, w)), (0, 2, 1, 3, 4))


def _conv3d_fn(stride, padding, dilation, extra):
    sd, sh, sw = stride
    pd, ph, pw = padding

    def conv(x, w):
        if any(extra):
            x = np.pad(x, ((0, 0), (0, 0)) + tuple((0, e) for e in extra))
        if pd:
            x = np.pad(x, ((0, 0), (0, 0), (pd, pd), (0, 0), (0, 0)))
        kd = w.shape[2]
        out_d = (x.shape[2] - dilation[0] * (kd - 1) - 1) // sd + 1
        total = None
        for t, xs in enumerate(_depth_taps(x, kd, sd, dilation[0], out_d)):
            y = apply("conv2d", _fold(xs), w[:, :, t], stride=(sh, sw), padding=(ph, pw),
                      dilation=tuple(dilation[1:]))
            total = y if total is None else total + y
        return _unfold(total, x.shape[0])
    return conv


def _check_weight(what, x, weight, bias, groups, transposed):
    cin = cout = None       # (a weight of another rank is refused first)
    if weight.dim() == 5:
        cin = weight.shape[0] if transposed else weight.shape[1] * groups
        cout = weight.shape[1] * groups if transposed else weight.shape[0]
    _check_conv(what, x, weight, bias, cin, cout, transposed, groups, weight_dim=5,
                divisible=True)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D cross-correlation of (N, C, D, H, W) ``input`` with an (O, C / groups, kD, kH,
    kW) ``weight``; ``padding`` may be "valid" or "same"."""
    _check_groups(groups, "conv3d")
    stride, dilation = _triple(stride, "stride"), _triple(dilation, "dilation")
    x, squeeze = _batched(input, "conv3d")
    _check_weight("conv3d", x, weight, bias, groups, False)
    extra = (0, 0, 0)
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0, 0, 0)
        elif padding == "same":
            if any(s != 1 for s in stride):     # (F.conv3d: a RuntimeError, as PyTorch's)
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pads = _same_padding(tuple(weight.shape[2:]), dilation, stride, "conv3d")
            padding = tuple(lo for lo, _ in pads)
            extra = tuple(hi - lo for lo, hi in pads)
        else:
            raise ValueError(f"Invalid padding string '{padding}', should be one of "
                             "{'valid', 'same'}")
    else:
        padding = _triple(padding, "padding")
    padded = tuple(n + 2 * p + e for n, p, e in zip(x.shape[2:], padding, extra))
    kernel = tuple(d * (k - 1) + 1 for k, d in zip(weight.shape[2:], dilation))
    if any(k > n for k, n in zip(kernel, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: ({padded[0]} x "
                           f"{padded[1]} x {padded[2]}). Kernel size: ({kernel[0]} x {kernel[1]} "
                           f"x {kernel[2]}). Kernel size can't be greater than actual input size")
    fn = _grouped(_conv3d_fn(stride, padding, dilation, extra), groups, False)
    return _with_bias(fn, x, weight, bias, squeeze)


def _conv_transpose3d_fn(stride, padding, output_padding, dilation):
    sd, pd, od, dd = stride[0], padding[0], output_padding[0], dilation[0]

    def conv(x, w):
        n, _, depth = x.shape[:3]
        kd = w.shape[2]
        full = (depth - 1) * sd + dd * (kd - 1) + 1 + od
        total = None
        for t in range(kd):
            y = _unfold(apply("conv_transpose2d", _fold(x), w[:, :, t], stride=stride[1:],
                              padding=padding[1:], output_padding=output_padding[1:],
                              dilation=dilation[1:]), n)
            if sd > 1:      # tap t of input slice i lands at depth i * sd + t * dd
                y = np.pad(y[:, :, :, None], ((0, 0), (0, 0), (0, 0), (0, sd - 1), (0, 0),
                                              (0, 0)))
                y = np.reshape(y, y.shape[:2] + (depth * sd,) + y.shape[4:])
                y = y[:, :, :(depth - 1) * sd + 1]
            lo = t * dd
            y = np.pad(y, ((0, 0), (0, 0), (lo, full - lo - y.shape[2]), (0, 0), (0, 0)))
            total = y if total is None else total + y
        return total[:, :, pd:full - pd]
    return conv


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The adjoint of ``conv3d`` in its input: (N, C_in, D, H, W) with a (C_in, C_out /
    groups, kD, kH, kW) ``weight``."""
    _check_groups(groups, "conv_transpose3d")
    stride, padding = _triple(stride, "stride"), _triple(padding, "padding")
    output_padding, dilation = _triple(output_padding, "output_padding"), \
        _triple(dilation, "dilation")
    x, squeeze = _batched(input, "conv_transpose3d")
    _check_weight("conv_transpose3d", x, weight, bias, groups, True)
    if any(op >= max(s, d) for op, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError("output padding must be smaller than either stride or dilation, but "
                           f"got output_padding_depth: {output_padding[0]} "
                           f"output_padding_height: {output_padding[1]} output_padding_width: "
                           f"{output_padding[2]} stride_depth: {stride[0]} stride_height: "
                           f"{stride[1]} stride_width: {stride[2]} dilation_depth: "
                           f"{dilation[0]} dilation_height: {dilation[1]} dilation_width: "
                           f"{dilation[2]}")
    fn = _grouped(_conv_transpose3d_fn(stride, padding, output_padding, dilation), groups,
                    True)
    return _with_bias(fn, x, weight, bias, squeeze)


def _pool3d_args(what, input, kernel_size, stride, padding, dilation, ceil_mode):
    """The checked options, the 5-D input, the output size and per axis the extra right
    padding that ``ceil_mode`` needs (PyTorch's rule: the last window starts inside the
    input or its left padding)."""
    kernel = _triple(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else \
        _triple(stride, "stride")
    padding, dilation = _triple(padding, "padding"), _triple(dilation, "dilation")
    x, squeeze = _batched(input, what)
    out, extra = _pool_output(x, kernel, stride, padding, dilation, ceil_mode)
    pads = ((0, 0), (0, 0)) + tuple((p, p + e) for p, e in zip(padding, extra))
    return x, squeeze, kernel, stride, padding, dilation, out, extra, pads


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The maximum of each (kD, kH, kW) window (padding never wins: -inf)."""
    if return_indices:
        raise NotImplementedError("tracegrad: max_pool3d(return_indices=True) is not supported")
    x, squeeze, kernel, stride, padding, dilation, out, _, pads = _pool3d_args(
        "max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode)

    def fn(v):
        n, c = v.shape[:2]
        if any(lo or hi for lo, hi in pads):
            v = np.pad(v, pads, constant_values=-np.inf)
        best = None
        for s in _depth_taps(v, kernel[0], stride[0], dilation[0], out[0]):
            best = s if best is None else np.maximum(best, s)
        flat = np.reshape(best, (n, c * out[0]) + tuple(best.shape[3:]))
        pooled = apply("max_pool2d", flat, kernel=kernel[1:], stride=stride[1:],
                       padding=(0, 0), dilation=dilation[1:])
        return np.reshape(pooled, (n, c, out[0]) + tuple(pooled.shape[2:]))
    res = call(fn, x, name="MaxPool3DWithIndicesBackward0")
    return res.squeeze(0) if squeeze else res


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """The mean of each (kD, kH, kW) window (``count_include_pad``: padding counted; in
    ceil mode a window reaching past the padded input counts only what it holds)."""
    x, squeeze, kernel, stride, padding, _, out, extra, pads = _pool3d_args(
        "avg_pool3d", input, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None:
        scale = math.prod(kernel) / divisor_override
    elif any(extra) or (not count_include_pad and any(padding)):
        counts = []
        for n, k, s, p, o in zip(x.shape[2:], kernel, stride, padding, out):
            starts = np.arange(o) * s - p
            lo, hi = (starts, np.minimum(starts + k, n + p)) if count_include_pad else \
                (np.maximum(starts, 0), np.minimum(starts + k, n))
            counts.append((hi - lo).astype(x.dtype))
        scale = math.prod(kernel) / (counts[0][:, None, None] * counts[1][None, :, None]
                                     * counts[2][None, None, :])
    else:
        scale = None

    def fn(v):
        n, c = v.shape[:2]
        if any(lo or hi for lo, hi in pads):
            v = np.pad(v, pads)
        total = None
        for s in _depth_taps(v, kernel[0], stride[0], 1, out[0]):
            total = s if total is None else total + s
        flat = np.reshape(total, (n, c * out[0]) + tuple(total.shape[3:]))
        pooled = apply("avg_pool2d", flat, kernel=kernel[1:], stride=stride[1:],
                       padding=(0, 0)) / kernel[0]
        res = np.reshape(pooled, (n, c, out[0]) + tuple(pooled.shape[2:]))
        return res if scale is None else res * scale
    res = call(fn, x, name="AvgPool3DBackward0")
    return res.squeeze(0) if squeeze else res
