"""``tg.nn.functional``: activations, losses, convolution, pooling, linear and dropout.

Each operation is one ``call`` of NumPy code (see ``eager.dispatch``), so a whole loss
or a convolution with its bias is a single node with PyTorch's ``grad_fn`` name, and its
derivative comes from the registry's rules like every other eager operation. Shapes are
checked here, before anything is recorded, so that errors read like PyTorch's and name
both shapes.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ...ir import apply
from ..creation import generator
from ..dispatch import call
from ..indexing import operand_key as _operand_key
from ..tape import EagerTracer
from ..tensor import Tensor, _private_copy
from .conv3d import avg_pool3d, conv3d, conv_transpose3d, max_pool3d  # noqa: F401
from .conv_common import (
    _check_conv,
    _check_groups,
    _grouped,
    _pool_output,
    _same_padding,
    _with_bias,
)
from .fold import fold, unfold  # noqa: F401  (part of tg.nn.functional)
from .losses import (  # noqa: F401  (part of tg.nn.functional)
    _check_reduction,
    _dtype_name,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    one_hot,
    pairwise_distance,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from .sampling import affine_grid, grid_sample  # noqa: F401  (part of tg.nn.functional)
from .sequence_losses import ctc_loss, multi_margin_loss  # noqa: F401

__all__ = ["relu", "relu_", "leaky_relu", "sigmoid", "tanh", "softmax", "log_softmax",
           "mse_loss", "l1_loss", "nll_loss", "cross_entropy",
           "binary_cross_entropy_with_logits", "conv2d", "conv_transpose2d", "max_pool2d",
           "avg_pool2d", "linear", "dropout", "flatten", "one_hot",
           "binary_cross_entropy", "huber_loss", "kl_div", "poisson_nll_loss", "smooth_l1_loss",
           "soft_margin_loss", "gelu", "softplus", "silu", "mish", "elu", "selu", "celu",
           "hardtanh", "relu6", "hardsigmoid", "hardswish", "logsigmoid", "softsign",
           "tanhshrink", "softmin", "prelu", "threshold", "glu", "normalize", "dropout1d",
           "dropout2d", "batch_norm", "layer_norm", "group_norm", "embedding",
           "adaptive_avg_pool2d", "adaptive_avg_pool1d", "avg_pool1d", "max_pool1d", "conv1d",
           "pad", "pixel_shuffle", "cosine_similarity", "interpolate", "instance_norm", "adaptive_max_pool2d",
           "hardshrink", "softshrink", "rrelu", "bilinear", "pixel_unshuffle",
           "gaussian_nll_loss",
           "scaled_dot_product_attention",
           "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "pairwise_distance", "triplet_margin_loss", "multilabel_soft_margin_loss"]
__all__ += ["affine_grid", "grid_sample", "conv3d", "conv_transpose3d", "max_pool3d",
            "avg_pool3d", "ctc_loss", "multi_margin_loss", "fold", "unfold"]


# -- activations ------------------------------------------------------------------------
def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def relu_(input):
    return input.relu_()


def leaky_relu(input, negative_slope=0.01, inplace=False):
    fn = lambda x: np.where(x > 0, x, x * negative_slope)
    if inplace:
        return input._inplace(fn, name="LeakyReluBackward1")
    return call(fn, input, name="LeakyReluBackward0")


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def _softmax_dim(name, ndim, dim):
    """PyTorch's legacy choice when ``dim`` is left out, with its deprecation warning."""
    if dim is not None:
        return dim
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, dtype=None):
    return input.softmax(_softmax_dim("softmax", input.dim(), dim), dtype=dtype)


def log_softmax(input, dim=None, dtype=None):
    return input.log_softmax(_softmax_dim("log_softmax", input.dim(), dim), dtype=dtype)


# -- linear -----------------------------------------------------------------------------
def linear(input, weight, bias=None):
    """``input @ weight.T + bias`` over the last dimension of ``input``, recorded as
    PyTorch records it (``weight.t()``, then ``addmm(bias, input, weight_t)`` or ``mm``
    on the input viewed as a matrix), so that ``grad_fn.next_functions`` match."""
    x_shape, w_shape = tuple(input.shape), tuple(weight.shape)
    if len(w_shape) != 2 or not x_shape or x_shape[-1] != w_shape[-1]:
        rows = int(np.prod(x_shape[:-1], dtype=np.int64)) if x_shape else 1
        cols = x_shape[-1] if x_shape else 1
        wt = "x".join(str(s) for s in reversed(w_shape))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{cols} and {wt})")
    if input.dtype != weight.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_dtype_name(input.dtype)} and {_dtype_name(weight.dtype)}")
    if bias is not None and tuple(bias.shape) not in ((w_shape[0],), (), (1,)):
        raise RuntimeError(f"The size of tensor a ({w_shape[0]}) must match the size of tensor b "
                           f"({bias.shape[-1]}) at non-singleton dimension {len(x_shape) - 1}")
    w_t = weight.t()
    out_shape = x_shape[:-1] + (w_shape[0],)
    if len(x_shape) == 1 and bias is None:
        x2 = input.unsqueeze(0)
    else:
        x2 = input if len(x_shape) == 2 else input.reshape(-1, x_shape[-1])
    if bias is None:
        out = call(np.matmul, x2, w_t, name="MmBackward0")
    else:
        out = call(lambda b, x, w: np.matmul(x, w) + b, bias, x2, w_t, name="AddmmBackward0")
    if len(x_shape) == 2:
        return out
    out = out.reshape(out_shape)
    if out.grad_fn is not None and bias is None:
        out.grad_fn._name = "SqueezeBackward4" if len(x_shape) == 1 else "UnsafeViewBackward0"
    return out


# -- convolution ------------------------------------------------------------------------
def _pair(value, what):
    if isinstance(value, Tensor):
        value = value.tolist()
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            value = (value[0], value[0])
        if len(value) != 2:
            raise RuntimeError(f"expected {what} to be a single integer value or a list of 2 "
                               f"values to match the convolution dimensions, but got {what}="
                               f"{list(value)}")
        return int(value[0]), int(value[1])
    return int(value), int(value)


def _batched(input, what):
    """``input`` as a 4-D batch, and whether it was a single 3-D image (PyTorch accepts
    both; the result then drops the batch dimension again)."""
    if input.dim() == 3:
        return input.unsqueeze(0), True
    if input.dim() != 4:
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to {what}, but got "
                           f"input of size: {list(input.shape)}")
    return input, False


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation of (N, C, H, W) ``input`` with an (O, C / groups, kH, kW)
    ``weight``; ``padding`` may be "valid" or "same"."""
    _check_groups(groups, "conv2d")
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    x, squeeze = _batched(input, "conv2d")
    _check_conv("conv2d", x, weight, bias,
                weight.shape[1] * groups if weight.dim() == 4 else None, weight.shape[0],
                False, groups)
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(weight.shape)} instead")
    extra = None
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0, 0)
        elif padding == "same":
            pads = _same_padding(tuple(weight.shape[2:]), dilation, stride, "conv2d")
            padding = tuple(lo for lo, _ in pads)
            if any(hi != lo for lo, hi in pads):
                extra = ((0, 0), (0, 0)) + tuple((0, hi - lo) for lo, hi in pads)
        else:
            raise ValueError(f"Invalid padding string '{padding}', should be one of "
                             "{'valid', 'same'}")
    else:
        padding = _pair(padding, "padding")
    padded = tuple(n + 2 * p for n, p in zip(x.shape[2:], padding))
    kernel = tuple(d * (k - 1) + 1 for k, d in zip(weight.shape[2:], dilation))
    if extra is None and any(k > n for k, n in zip(kernel, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: ({padded[0]} x "
                           f"{padded[1]}). Kernel size: ({kernel[0]} x {kernel[1]}). Kernel size "
                           "can't be greater than actual input size")
    conv = _grouped(lambda x, w: apply("conv2d", x, w, stride=stride, padding=padding,
                                       dilation=dilation), groups, False)
    fn = conv if extra is None else (lambda x, w: conv(np.pad(x, extra), w))
    return _with_bias(fn, x, weight, bias, squeeze)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The adjoint of ``conv2d`` in its input: (N, C_in, H, W) with a (C_in, C_out, kH, kW)
    ``weight``."""
    _check_groups(groups, "conv_transpose2d")
    stride, padding = _pair(stride, "stride"), _pair(padding, "padding")
    if weight.dim() == 4 and weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(weight.shape)} instead")
    output_padding, dilation = _pair(output_padding, "output_padding"), _pair(dilation, "dilation")
    x, squeeze = _batched(input, "conv_transpose2d")
    _check_conv("conv_transpose2d", x, weight, bias,
                weight.shape[0] if weight.dim() == 4 else None,
                weight.shape[1] * groups if weight.dim() == 4 else None, True, groups)
    if any(op >= max(s, d) for op, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but "
                           f"got output_padding_height: {output_padding[0]} output_padding_width: "
                           f"{output_padding[1]} stride_height: {stride[0]} stride_width: "
                           f"{stride[1]} dilation_height: {dilation[0]} dilation_width: "
                           f"{dilation[1]}")
    fn = _grouped(lambda x, w: apply("conv_transpose2d", x, w, stride=stride, padding=padding,
                                     output_padding=output_padding, dilation=dilation),
                  groups, True)
    return _with_bias(fn, x, weight, bias, squeeze)


# -- pooling ----------------------------------------------------------------------------
def _pool_args(what, input, kernel_size, stride, padding, dilation, ceil_mode):
    """The checked options, the 4-D input, and per spatial axis the extra right padding
    that ``ceil_mode`` needs (0 in floor mode): PyTorch's output size, whose last window
    must start inside the input or its left padding."""
    kernel = _pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else _pair(stride, "stride")
    padding, dilation = _pair(padding, "padding"), _pair(dilation, "dilation")
    x, squeeze = _batched(input, what)
    _, extra = _pool_output(x, kernel, stride, padding, dilation, ceil_mode)
    return x, squeeze, kernel, stride, padding, dilation, tuple(extra)


def _right_padded(v, extra, value):
    if not any(extra):
        return v
    return np.pad(v, ((0, 0), (0, 0), (0, extra[0]), (0, extra[1])), constant_values=value)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    x, squeeze, kernel, stride, padding, dilation, extra = _pool_args(
        "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode)
    params = dict(kernel=kernel, stride=stride, dilation=dilation)
    if any(extra):      # ceil mode: -inf on the right never wins a window
        pads = ((0, 0), (0, 0), (padding[0], padding[0] + extra[0]),
                (padding[1], padding[1] + extra[1]))
        fn = lambda v: apply("max_pool2d", np.pad(v, pads, constant_values=-np.inf),
                             padding=(0, 0), **params)
    else:
        fn = lambda v: apply("max_pool2d", v, padding=padding, **params)
    out = call(lambda v: _unsaved(fn(v)), x, name="MaxPool2DWithIndicesBackward0")
    if return_indices:
        idx = _max_indices(x._data, kernel, stride, padding, dilation, extra)
        idx = Tensor._plain(idx[0] if squeeze else idx)
        return (out.squeeze(0) if squeeze else out), idx
    return out.squeeze(0) if squeeze else out


def _unsaved(out):
    """The pooled values as a node of their own, with a copy of the value: the primitive's
    backward reads its output, which PyTorch does not save (it saves the indices), so an
    in-place change of the result (``relu(..., inplace=True)``) must not reach it."""
    return _private_copy(out) if isinstance(out, EagerTracer) else out


def _max_indices(x, kernel, stride, padding, dilation, extra):
    """For each window, the flat index (over H * W) of its first maximum, as PyTorch's."""
    n, c, h, w = x.shape
    flat_idx = np.arange(h * w, dtype=np.int64).reshape(h, w)
    pads = ((padding[0], padding[0] + extra[0]), (padding[1], padding[1] + extra[1]))
    xp = np.pad(x, ((0, 0), (0, 0)) + pads, constant_values=-np.inf)
    ip = np.pad(flat_idx, pads, constant_values=-1)
    oh = (xp.shape[2] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    best = np.full((n, c, oh, ow), -np.inf, x.dtype)
    where = np.zeros((n, c, oh, ow), np.int64)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            r0, c0 = i * dilation[0], j * dilation[1]
            v = xp[:, :, r0:r0 + stride[0] * (oh - 1) + 1:stride[0],
                   c0:c0 + stride[1] * (ow - 1) + 1:stride[1]]
            k = ip[r0:r0 + stride[0] * (oh - 1) + 1:stride[0],
                   c0:c0 + stride[1] * (ow - 1) + 1:stride[1]]
            better = (v > best) | (np.isnan(v) & ~np.isnan(best))
            best = np.where(better, v, best)
            where = np.where(better, k, where)
    return where


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    x, squeeze, kernel, stride, padding, _, extra = _pool_args(
        "avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode)
    params = dict(kernel=kernel, stride=stride, padding=padding)
    scale = None
    if divisor_override is not None:
        scale = kernel[0] * kernel[1] / divisor_override
    elif any(extra) or (not count_include_pad and any(padding)):
        # PyTorch's divisor: the window clipped to the padded image (count_include_pad), or
        # to the image itself; windows reaching past it in ceil mode count only what they hold
        counts = []
        for n, k, s, p, e in zip(x.shape[2:], kernel, stride, padding, extra):
            starts = np.arange((n + 2 * p + e - k) // s + 1) * s - p
            lo, hi = (starts, np.minimum(starts + k, n + p)) if count_include_pad else \
                (np.maximum(starts, 0), np.minimum(starts + k, n))
            counts.append((hi - lo).astype(x.dtype))
        scale = (kernel[0] * kernel[1]) / np.multiply.outer(counts[0], counts[1])

    def fn(v):
        out = apply("avg_pool2d", _right_padded(v, extra, 0.0), **params)
        return out if scale is None else out * scale
    out = call(fn, x, name="AvgPool2DBackward0")
    return out.squeeze(0) if squeeze else out


def _adaptive_size(output_size, h, w):
    """An adaptive pool's ``(oh, ow)``: an int for both, None keeping the input's size."""
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    return (h if output_size[0] is None else int(output_size[0]),
            w if output_size[1] is None else int(output_size[1]))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The maximum over PyTorch's adaptive windows (floor(i n / o) .. ceil((i + 1) n / o))."""
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: "
                           f"{list(input.shape)}")
    h, w = input.shape[-2:]
    oh, ow = _adaptive_size(output_size, h, w)
    rows = [((i * h) // oh, -(-(i + 1) * h // oh)) for i in range(oh)]
    cols = [((j * w) // ow, -(-(j + 1) * w // ow)) for j in range(ow)]

    def fn(x):
        cells = [np.max(x[..., r0:r1, c0:c1], axis=(-2, -1)) for r0, r1 in rows
                 for c0, c1 in cols]
        return np.reshape(np.stack(cells, axis=-1), tuple(x.shape[:-2]) + (oh, ow))
    out = call(fn, input, name="AdaptiveMaxPool2DBackward0")
    if not return_indices:
        return out
    x = input._data
    idx = np.empty(x.shape[:-2] + (oh, ow), np.int64)
    for i, (r0, r1) in enumerate(rows):
        for j, (c0, c1) in enumerate(cols):
            win = x[..., r0:r1, c0:c1].reshape(x.shape[:-2] + (-1,))
            k = np.argmax(win, axis=-1)
            idx[..., i, j] = (r0 + k // (c1 - c0)) * w + c0 + k % (c1 - c0)
    return out, Tensor._plain(idx)


# -- regularisation and reshaping ---------------------------------------------------------
def _check_p(p):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Inverted dropout: zero each element with probability ``p`` (mask drawn from the
    ``tg.manual_seed`` generator) and scale the rest by ``1 / (1 - p)``, so that the
    expected value is unchanged and evaluation needs no rescaling."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    keep = generator().bernoulli(tuple(input.shape), 1.0 - p)    # PyTorch's mask
    scale = keep.astype(input.dtype) * (1.0 / (1.0 - p)) if p < 1.0 else keep.astype(input.dtype)
    if inplace:
        return input.mul_(Tensor._plain(scale))
    return call(lambda x: x * scale, input, name="MulBackward0")


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)


# -- more activations -----------------------------------------------------------------------
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
SQRT_HALF = math.sqrt(0.5)


def _activation(fn, name, input, inplace=False):
    """``fn`` elementwise, recorded as one node named ``name`` (PyTorch's); ``inplace``
    writes the result into ``input`` as PyTorch's ``act_`` variants do."""
    if inplace:
        return input._inplace(fn, name=name)
    return call(fn, input, name=name)


def gelu(input, approximate="none"):
    """``x * Phi(x)`` with the normal CDF from ``erf``; ``approximate="tanh"`` uses
    PyTorch's tanh formula instead."""
    if approximate == "none":
        fn = lambda x: x * (apply("erf", x * SQRT_HALF) + 1.0) * 0.5
    elif approximate == "tanh":
        fn = lambda x: x * (np.tanh((x + x * x * x * 0.044715) * SQRT_2_OVER_PI) + 1.0) * 0.5
    else:
        raise RuntimeError("approximate argument must be either none or tanh.")
    return call(fn, input, name="GeluBackward0")


def _softplus_fn(beta=1.0, threshold=20.0):
    def fn(x):
        bx = x * beta
        # log(1 + exp(bx)) without overflow: the linear branch takes over above threshold,
        # and the other branch only ever sees arguments up to it
        soft = np.log1p(np.exp(np.minimum(bx, threshold))) / beta
        return np.where(bx > threshold, x, soft)
    return fn


def softplus(input, beta=1.0, threshold=20.0):
    return call(_softplus_fn(beta, threshold), input, name="SoftplusBackward0")


def silu(input, inplace=False):
    return _activation(lambda x: x / (np.exp(-x) + 1.0), "SiluBackward0", input, inplace)


def mish(input, inplace=False):
    sp = _softplus_fn()
    return _activation(lambda x: x * np.tanh(sp(x)), "MishBackward0", input, inplace)


def elu(input, alpha=1.0, inplace=False):
    fn = lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)) * alpha)
    return _activation(fn, "EluBackward0", input, inplace)


def selu(input, inplace=False):
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    fn = lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0.0)) * alpha) * scale
    return _activation(fn, "EluBackward0", input, inplace)


def celu(input, alpha=1.0, inplace=False):
    fn = lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0.0) / alpha) * alpha)
    return _activation(fn, "CeluBackward0", input, inplace)


def _clip_fn(lo, hi):
    # PyTorch's hardtanh passes the gradient strictly inside (lo, hi) only
    return lambda x: np.where((x > lo) & (x < hi), x, np.where(x <= lo, x * 0.0 + lo,
                                                                   x * 0.0 + hi))


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    fn = _clip_fn(min_val, max_val)
    return _activation(fn, "HardtanhBackward0", input, inplace)


def relu6(input, inplace=False):
    return _activation(_clip_fn(0.0, 6.0), "HardtanhBackward0", input, inplace)


def hardsigmoid(input, inplace=False):
    fn = lambda x: np.where((x > -3.0) & (x < 3.0), (x + 3.0) / 6.0,
                            np.where(x <= -3.0, x * 0.0, x * 0.0 + 1.0))
    return _activation(fn, "HardsigmoidBackward0", input, inplace)


def hardswish(input, inplace=False):
    fn = lambda x: np.where(x <= -3.0, x * 0.0,
                            np.where(x >= 3.0, x, x * (x + 3.0) / 6.0))
    return _activation(fn, "HardswishBackward0", input, inplace)


def logsigmoid(input):
    # -softplus(-x), stable for both signs
    return call(lambda x: np.minimum(x, 0.0) - np.log1p(np.exp(-np.abs(x))), input,
                name="LogSigmoidBackward0")


def softsign(input):
    return call(lambda x: x / (np.abs(x) + 1.0), input, name="DivBackward0")


def tanhshrink(input):
    return call(lambda x: x - np.tanh(x), input, name="SubBackward0")


def hardshrink(input, lambd=0.5):
    return input.hardshrink(lambd)      # (tensor_misc.py: +0.0 inside the band, as torch)


def softshrink(input, lambd=0.5):
    fn = lambda x: np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, x * 0.0))
    return call(fn, input, name="SoftshrinkBackward0")


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element while
    training (the ``tg.manual_seed`` generator), and is their mean otherwise."""
    if training:
        # PyTorch draws one double per non-positive element, in order
        x = input._data
        slope = np.ones(x.shape, dtype=x.dtype)
        low = x <= 0
        slope[low] = generator().uniform((int(low.sum()),), np.float64, lower, upper)
    else:
        slope = (lower + upper) / 2
    return _activation(lambda x: np.where(x >= 0, x, x * slope), "RreluWithNoiseBackward0",
                       input, inplace)


def bilinear(input1, input2, weight, bias=None):
    """``y_k = x1^T A_k x2 + b_k`` over the last dimension of the inputs."""
    if bias is None:
        return call(lambda a, b, w: np.einsum("...i,kij,...j->...k", a, w, b), input1, input2,
                    weight, name="ViewBackward0")
    return call(lambda a, b, w, c: np.einsum("...i,kij,...j->...k", a, w, b) + c, input1,
                input2, weight, bias, name="AddBackward0")


def pixel_unshuffle(input, downscale_factor):
    r = downscale_factor
    *lead, c, h, w = input.shape
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    n = len(lead)
    perm = list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3]
    return x.permute(*perm).reshape(*lead, c * r * r, h // r, w // r)


def softmin(input, dim=None, dtype=None):
    return softmax(-input, _softmax_dim("softmin", input.dim(), dim), dtype)


def prelu(input, weight):
    """``max(0, x) + weight * min(0, x)``, one slope per channel (dimension 1) or one
    for all: ``Tensor.prelu`` (tensor_misc.py), with torch's checks."""
    return input.prelu(weight)


def threshold(input, threshold, value, inplace=False):
    fn = lambda x: np.where(x > threshold, x, x * 0.0 + value)
    return _activation(fn, "ThresholdBackward0", input, inplace)


def glu(input, dim=-1):
    n = input.shape[dim]
    if n % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.dim()} "
                           f"is size {n}")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    return input / input.norm(p, dim, keepdim=True).clamp(min=eps)


# -- dropout variants --------------------------------------------------------------------
def _feature_dropout(input, p, training, inplace, mask_shape):
    _check_p(p)
    if not training or p == 0.0:
        return input
    keep = generator().bernoulli(mask_shape, 1.0 - p)     # PyTorch's mask
    scale = keep.astype(input.dtype) * (1.0 / (1.0 - p) if p < 1.0 else 0.0)
    if inplace:
        return input.mul_(Tensor._plain(scale))
    return call(lambda x: x * scale, input, name="MulBackward0")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (dimension 1; a 3-D input is read as (N, C, L), PyTorch's
    historical behaviour, with its warning)."""
    _check_p(p)
    nd = input.dim()
    if nd not in (3, 4):
        warnings.warn(f"dropout2d: Received a {nd}-D input to dropout2d, which is deprecated "
                      "and will result in an error in a future release. To retain the behavior "
                      "and silence this warning, please use dropout instead. Note that "
                      "dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).", UserWarning, stacklevel=2)
    if nd == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change in "
                      "a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                      "behavior, please switch to using dropout1d instead.", UserWarning,
                      stacklevel=2)
    shape = tuple(input.shape[:2]) + (1,) * (nd - 2) if nd >= 2 else tuple(input.shape)
    return _feature_dropout(input, p, training, inplace, shape)


def dropout1d(input, p=0.5, training=True, inplace=False):
    nd = input.dim()
    if nd not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {nd}D input. "
                           "Note that dropout1d exists to provide channel-wise dropout on inputs "
                           "with 1 spatial dimension, a channel dimension, and an optional batch "
                           "dimension (i.e. 2D or 3D inputs).")
    shape = (input.shape[0], 1) if nd == 2 else (input.shape[0], input.shape[1], 1)
    return _feature_dropout(input, p, training, inplace, shape)


# -- normalisation ---------------------------------------------------------------------------
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise each channel (dimension 1) by the batch's statistics while training (and
    update the running ones: ``(1 - momentum) * running + momentum * batch``, the variance
    unbiased), by the running statistics otherwise."""
    size = list(input.shape)
    if input.dim() < 2:
        raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")
    if training and int(np.prod([size[0]] + size[2:])) == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {_torch_size(size)}")
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    c = size[1]
    for what, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{what} should contain {c} elements not {t.numel()}")
    axes = (0,) + tuple(range(2, input.dim()))
    bshape = (1, c) + (1,) * (input.dim() - 2)
    use_batch = training or running_mean is None or running_var is None
    if use_batch:
        x = input._data
        mean = np.mean(x, axis=axes)
        var = np.var(x, axis=axes)
        n = x.size // c
        if training and running_mean is not None:
            with _no_grad():
                rm, rv = running_mean._data, running_var._data
                np.copyto(rm, (1 - momentum) * rm + momentum * mean, casting="unsafe")
                np.copyto(rv, (1 - momentum) * rv + momentum * var * (n / max(n - 1, 1)),
                          casting="unsafe")
                running_mean._vc.v += 1
                running_var._vc.v += 1

        def norm(x):
            return _standardize(x, axes, eps)
    else:
        m = _statistic(running_mean, bshape, input.dtype)
        inv = 1.0 / np.sqrt(_statistic(running_var, bshape, input.dtype) + eps)
        norm = lambda x: (x - m) * inv
    return _affine(norm, input, weight, bias, bshape, "NativeBatchNormBackward0")


def _statistic(t, shape, dtype):
    """A running statistic as the normalisation reads it: its value, or (a tensor a
    torch.func transform traces: ``vmap`` over the statistics) its traced value, with no
    derivative (PyTorch differentiates through neither)."""
    tracer = t._tracer
    if tracer is not None and not isinstance(tracer, EagerTracer):
        return np.reshape(apply("stop_gradient", tracer), shape).astype(dtype)
    return t._data.reshape(shape).astype(dtype, copy=False)


def _standardize(x, axes, eps):
    """``x`` less its mean over ``axes``, over the root of its biased variance plus ``eps``
    (the normalisation of batch, instance, layer and group norm)."""
    m = np.mean(x, axis=axes, keepdims=True)
    d = x - m
    v = np.mean(d * d, axis=axes, keepdims=True)
    return d / np.sqrt(v + eps)


def _affine(norm, input, weight, bias, shape, name):
    args = [input]
    if weight is not None:
        args.append(weight)
    if bias is not None:
        args.append(bias)

    def fn(x, *wb):
        y = norm(x)
        i = 0
        if weight is not None:
            y = y * np.reshape(wb[0], shape)
            i = 1
        if bias is not None:
            y = y + np.reshape(wb[i], shape)
        return y
    return call(fn, *args, name=name)


def _no_grad():
    from ..grad_mode import no_grad
    return no_grad()


def _torch_size(size):
    from ..tensor import Size
    return repr(Size(tuple(size)))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the last ``len(normalized_shape)`` dimensions (biased variance)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(int(s) for s in normalized_shape)
    k = len(normalized_shape)
    if tuple(input.shape[input.dim() - k:]) != normalized_shape or input.dim() < k:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, normalized_shape))}], but got "
                           f"input of size{list(input.shape)}")
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != normalized_shape:
            raise RuntimeError(f"Expected {what} to be of same shape as normalized_shape, but "
                               f"got {what} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(normalized_shape)}")
    axes = tuple(range(input.dim() - k, input.dim()))

    def norm(x):
        return _standardize(x, axes, eps)
    return _affine(norm, input, weight, bias, normalized_shape, "NativeLayerNormBackward0")


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    rest = tuple(input.shape[2:])
    gshape = (n, num_groups, -1)

    def norm(x):
        return np.reshape(_standardize(np.reshape(x, gshape), 2, eps), (n, c) + rest)
    return _affine(norm, input, weight, bias, (1, c) + (1,) * len(rest),
                   "NativeGroupNormBackward0")


# -- embedding ---------------------------------------------------------------------------
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by the integer tensor ``input``; the row ``padding_idx``
    gets no gradient."""
    if isinstance(input, Tensor) and input._tracer is not None and \
            not isinstance(input._tracer, EagerTracer):
        # indices traced by a transform (torch.func.vmap over token ids): picked by their
        # tracer, never by the values they were traced with
        if padding_idx is not None or max_norm is not None:
            raise RuntimeError("embedding: padding_idx and max_norm need concrete indices; "
                               "inside a torch.func transform the indices are traced")
        if input.dtype.kind not in "iu":
            raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of "
                               f"the following scalar types: Long, Int; but got torch."
                               f"{_dtype_name(input.dtype)}Tensor instead (while checking "
                               f"arguments for embedding)")
        return weight[input]
    idx = input._concrete("embedding") if isinstance(input, Tensor) else np.asarray(input)
    if idx.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got torch."
                           f"{_dtype_name(idx.dtype)}Tensor instead (while checking arguments "
                           f"for embedding)")
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    rows = weight.shape[0]
    if idx.size and (idx.min() < -rows or idx.max() >= rows):
        raise IndexError("index out of range in self")
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < rows, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -rows, "Padding_idx must be within num_embeddings"
            padding_idx = rows + padding_idx
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding: scale_grad_by_freq and sparse are not supported")
    idx = idx.astype(np.int64) % rows
    if max_norm is not None:
        _embedding_renorm(weight, idx, max_norm, norm_type)
    pad = None if padding_idx is None else (idx == padding_idx)[..., None]
    if pad is not None and not pad.any():
        pad = None

    def fn(w):
        picked = w[_operand_key(w, idx)]
        if pad is None:
            return picked
        return np.where(pad, apply("stop_gradient", picked), picked)
    return call(fn, weight, name="EmbeddingBackward0")


def _embedding_renorm(weight, idx, max_norm, norm_type):
    """PyTorch's in-place renorm of the looked-up rows whose norm exceeds ``max_norm``."""
    w = weight._data
    rows = np.unique(idx)
    norms = np.linalg.norm(w[rows], ord=norm_type, axis=1)
    big = norms > max_norm
    if np.any(big):
        w[rows[big]] *= (max_norm / (norms[big] + 1e-7))[:, None]
        weight._vc.v += 1


# -- more pooling and convolution -----------------------------------------------------------
def _adaptive_matrix(n_in, n_out, dtype):
    """(n_out, n_in) averaging matrix: output cell i averages input cells
    floor(i n_in / n_out) .. ceil((i + 1) n_in / n_out) - 1, PyTorch's windows."""
    m = np.zeros((n_out, n_in), dtype)
    for i in range(n_out):
        lo = (i * n_in) // n_out
        hi = -((-(i + 1) * n_in) // n_out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m


def adaptive_avg_pool2d(input, output_size):
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got "
                           f"{list(input.shape)}")
    h, w = input.shape[-2:]
    oh, ow = _adaptive_size(output_size, h, w)
    mh = _adaptive_matrix(h, oh, input.dtype)
    mw = _adaptive_matrix(w, ow, input.dtype)
    return call(lambda x: np.matmul(np.matmul(mh, _keeps_edge(x)), mw.T), input,
                name="AdaptiveAvgPool2DBackward0")


def _keeps_edge(x):
    """``x`` itself (an average over windows of one element), through avg_pool2d, whose
    gradient keeps PyTorch's edge to ``x``: torch's adaptive average pooling's double
    backward gives zeros for ``x``, where a product with constant matrices alone would
    leave ``x`` unused."""
    from ..tape import EagerTracer
    if not isinstance(x, EagerTracer) or not np.issubdtype(x.dtype, np.floating):
        return x        # not recorded by the eager autograd, or no gradient
    shape = x.shape
    x4 = np.reshape(x, (-1, 1) + tuple(shape[-2:]))
    one = apply("avg_pool2d", x4, kernel=(1, 1), stride=(1, 1), padding=(0, 0))
    return np.reshape(one, shape)


def adaptive_avg_pool1d(input, output_size):
    n = input.shape[-1]
    o = int(output_size[0] if isinstance(output_size, (tuple, list)) else output_size)
    m = _adaptive_matrix(n, o, input.dtype)
    return call(lambda x: np.matmul(_keeps_edge(x[..., None]).squeeze(-1), m.T), input,
                name="AdaptiveAvgPool2DBackward0")


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    k = kernel_size[0] if isinstance(kernel_size, (tuple, list)) else kernel_size
    s = k if stride is None else (stride[0] if isinstance(stride, (tuple, list)) else stride)
    p = padding[0] if isinstance(padding, (tuple, list)) else padding
    out = avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad)
    return out.squeeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    k = kernel_size[0] if isinstance(kernel_size, (tuple, list)) else kernel_size
    s = k if stride is None else (stride[0] if isinstance(stride, (tuple, list)) else stride)
    p = padding[0] if isinstance(padding, (tuple, list)) else padding
    d = dilation[0] if isinstance(dilation, (tuple, list)) else dilation
    out = max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode,
                     return_indices)
    if return_indices:
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def _single(value):
    if isinstance(value, Tensor):
        value = value.tolist()
    if isinstance(value, (tuple, list)):
        return int(value[0])
    return int(value)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D cross-correlation of (N, C, L) ``input`` with an (O, C, k) ``weight``: the 2-D
    convolution of height-1 images."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to conv1d, but got "
                           f"input of size: {list(input.shape)}")
    if weight.dim() != 3:
        raise RuntimeError(f"conv1d: expected a 3-D weight, but got weight of size "
                           f"{list(weight.shape)}")
    pad = padding if isinstance(padding, str) else (0, _single(padding))
    out = conv2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, _single(stride)),
                 pad, (1, _single(dilation)), groups)
    return out.squeeze(-2)


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
              "circular": "wrap"}


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dimensions (PyTorch's order: last dimension first)
    with ``value`` (mode "constant") or by reflecting, replicating or wrapping the edge."""
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"pad: mode='{mode}' is not supported")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError("Padding length should be less than or equal to two times the "
                           "input dimension but got padding length "
                           f"{len(pad)} and input of dimension {input.dim()}")
    widths = [(0, 0)] * input.dim()
    for i in range(len(pad) // 2):
        widths[input.dim() - 1 - i] = (int(pad[2 * i]), int(pad[2 * i + 1]))
    if any(a < 0 or b < 0 for a, b in widths):
        raise NotImplementedError("pad: negative padding is not supported")
    if mode == "constant":
        fill = 0.0 if value is None else value
        return call(lambda x: np.pad(x, widths, constant_values=fill), input,
                    name="ConstantPadNdBackward0")
    if mode == "reflect":
        for (lo, hi), n in zip(widths, input.shape):
            if lo >= n or hi >= n:
                raise RuntimeError(f"Argument #4: Padding size should be less than the "
                                   f"corresponding input dimension, but got: padding ({lo}, "
                                   f"{hi}) at dimension {input.dim() - 1} of input "
                                   f"{list(input.shape)}")
    np_mode = _PAD_MODES[mode]
    name = {"reflect": "ReflectionPad", "replicate": "ReplicationPad"}.get(mode)
    name = f"{name}{len(pad) // 2}DBackward0" if name else "CatBackward0"
    return call(lambda x: np.pad(x, widths, mode=np_mode), input, name=name)


def _interp_matrix(n_in, n_out, mode, align_corners, scale, dtype):
    """(n_out, n_in) matrix of one axis' interpolation weights, PyTorch's source
    coordinates: nearest ``floor(i * scale)``; linear ``(i + 0.5) * scale - 0.5`` clamped
    at 0 (or ``i * (n_in - 1) / (n_out - 1)`` with ``align_corners``)."""
    m = np.zeros((n_out, n_in), dtype)
    rows = np.arange(n_out)
    if scale is None:
        scale = n_in / n_out
    if mode == "nearest":
        m[rows, np.minimum(np.floor(rows * scale).astype(np.int64), n_in - 1)] = 1.0
        return m
    if align_corners:
        src = rows * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        src = np.maximum((rows + 0.5) * scale - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    lam = src - i0
    np.add.at(m, (rows, i0), 1.0 - lam)
    np.add.at(m, (rows, i1), lam)
    return m


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dimensions (all after the first two): "nearest", "linear",
    "bilinear"; each axis is one matrix product with its interpolation weights."""
    if mode not in ("nearest", "linear", "bilinear"):
        raise NotImplementedError(f"interpolate: mode='{mode}' is not supported (nearest, "
                                  "linear, bilinear)")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if mode == "nearest" and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    spatial = tuple(input.shape[2:])
    k = len(spatial)
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out = (size,) * k if isinstance(size, int) else tuple(int(s) for s in size)
        scales = [None] * k
    else:
        factors = (scale_factor,) * k if isinstance(scale_factor, (int, float)) \
            else tuple(scale_factor)
        out = tuple(int(math.floor(n * f)) for n, f in zip(spatial, factors))
        scales = [None if recompute_scale_factor else 1.0 / f for f in factors]
    mats = [_interp_matrix(n, o, mode, bool(align_corners), sc, input.dtype)
            for n, o, sc in zip(spatial, out, scales)]

    def fn(x):
        for axis, m in enumerate(mats):
            x = np.moveaxis(np.matmul(m, np.moveaxis(x, 2 + axis, -2)), -2, 2 + axis)
        return x
    name = {"nearest": f"UpsampleNearest{k}DBackward0", "linear": "UpsampleLinear1DBackward0",
            "bilinear": "UpsampleBilinear2DBackward0"}[mode]
    return call(fn, input, name=name)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each sample's channel over its spatial dimensions."""
    if use_input_stats and int(np.prod(input.shape[2:])) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"{_torch_size(list(input.shape))}")
    c = input.shape[1]
    axes = tuple(range(2, input.dim()))
    bshape = (1, c) + (1,) * (input.dim() - 2)
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    if running_mean is not None:
        x = input._data
        m = np.mean(x, axis=axes)
        cnt = x[0, 0].size
        v = np.var(x, axis=axes) * (cnt / max(cnt - 1, 1))
        with _no_grad():
            rm, rv = running_mean._data, running_var._data
            np.copyto(rm, (1 - momentum) * rm + momentum * m.mean(0), casting="unsafe")
            np.copyto(rv, (1 - momentum) * rv + momentum * v.mean(0), casting="unsafe")
            running_mean._vc.v += 1
            running_var._vc.v += 1

    def norm(x):
        return _standardize(x, axes, eps)
    return _affine(norm, input, weight, bias, bshape, "NativeBatchNormBackward0")


def pixel_shuffle(input, upscale_factor):
    r = upscale_factor
    *lead, c, h, w = input.shape
    oc = c // (r * r)
    x = input.reshape(*lead, oc, r, r, h, w)
    n = len(lead)
    perm = list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2]
    return x.permute(*perm).reshape(*lead, oc, h * r, w * r)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    def fn(a, b):
        num = np.sum(a * b, axis=dim)
        den = np.sqrt(np.maximum(np.sum(a * a, axis=dim) * np.sum(b * b, axis=dim), eps * eps))
        return num / den
    return call(fn, x1, x2, name="DivBackward0")


def _additive(mask, dtype, masked_is_true):
    """A float mask to add to attention scores: a boolean mask becomes 0 / -inf
    (``masked_is_true``: True marks positions to leave out, MultiheadAttention's
    convention; otherwise True marks positions to attend, scaled_dot_product_attention's);
    a float mask is used as it is."""
    if mask is None:
        return None
    m = mask._data if isinstance(mask, Tensor) else np.asarray(mask)
    if m.dtype == np.bool_:
        out = np.where(m if masked_is_true else ~m, -np.inf, 0.0).astype(dtype)
        return Tensor._plain(out)
    return mask if isinstance(mask, Tensor) else Tensor._plain(m.astype(dtype))


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """``softmax(q k^T * scale + mask) v`` over the last two dimensions; a boolean
    ``attn_mask`` marks the positions that may be attended."""
    lq, ls = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = query.matmul(key.transpose(-2, -1)) * scale
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be "
                               "set when is_causal=True")
        attn_mask = Tensor._plain(np.tril(np.ones((lq, ls), np.bool_)))
    bias = _additive(attn_mask, query.dtype, masked_is_true=False)
    if bias is not None:
        scores = scores + bias
    weights = scores.softmax(-1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return weights.matmul(value)


# -- the rest of torch.nn.functional ----------------------------------------------------------
# (the alpha and 3-D dropouts, 1-D transposed and time-batch-channel convolutions, rms_norm,
# pdist, channel_shuffle, local response and power-average pooling, max unpooling, the
# *_with_indices pools, embedding bags, 3-D adaptive pooling, gumbel_softmax, the in-place
# activations and the deprecated upsample* wrappers: each composed of the eager operations
# above in the order of PyTorch's own composition, so that the numbers are PyTorch's to its
# rounding)
# -- dropouts ----------------------------------------------------------------------------------
_ALPHA = 1.7580993408473766       # -SELU's negative saturation: scale * alpha


def _alpha_noise(input, p, mask_shape, inplace):
    """PyTorch's ``_dropout_impl`` for the alpha variants: a Bernoulli(1 - p) ``noise`` of
    ``mask_shape`` (drawn as dropout's), ``b = (noise - 1) * alpha a + alpha a p``, and the
    result ``input * (noise * a) + b``: dropped units go to SELU's saturation, the mean and
    variance are kept."""
    if p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        zero = Tensor._plain(np.zeros((), input.dtype))
        return input.mul_(zero) if inplace else call(lambda x: x * np.zeros((), x.dtype), input,
                                                     name="MulBackward0")
    noise = generator().bernoulli(tuple(mask_shape), 1.0 - p).astype(input.dtype)
    a = 1.0 / np.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = noise + (-1.0)
    b *= _ALPHA * a
    b += _ALPHA * a * p
    noise *= a
    if inplace:
        input.mul_(Tensor._plain(noise))
        return input.add_(Tensor._plain(b))
    return call(lambda x: x * noise + b, input, name="AddBackward0")


def _feature_shape(input):
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return tuple(input.shape[:2]) + (1,) * (input.dim() - 2)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped units are set to SELU's negative saturation and
    the result is scaled and shifted so that mean and variance are unchanged."""
    _check_p(p)
    if not training:
        return input
    return _alpha_noise(input, p, tuple(input.shape), inplace)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """``alpha_dropout`` of whole channels (dimension 1)."""
    _check_p(p)
    if not training:
        return input
    return _alpha_noise(input, p, _feature_shape(input), inplace)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or unbatched (C, D, H, W) inputs."""
    _check_p(p)
    nd = input.dim()
    if nd not in (4, 5):
        warnings.warn(f"dropout3d: Received a {nd}-D input to dropout3d, which is deprecated "
                      "and will result in an error in a future release. To retain the behavior "
                      "and silence this warning, please use dropout instead. Note that "
                      "dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 4D or 5D inputs).", UserWarning, stacklevel=2)
    # an unbatched input is dropped as the batch of one PyTorch makes of it
    shape = tuple(input.shape[:2]) + (1,) * (nd - 2) if nd == 5 else \
        (input.shape[0],) + (1,) * (nd - 1)
    return _feature_dropout(input, p, training, inplace, shape)


# -- convolutions ------------------------------------------------------------------------------
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The adjoint of ``conv1d`` in its input: (N, C_in, L) with a (C_in, C_out / groups, k)
    ``weight``; the 2-D transposed convolution of height-1 images."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2D (unbatched) or 3D (batched) input to "
                           f"conv_transpose1d, but got input of size: {list(input.shape)}")
    if weight.dim() != 3:
        raise RuntimeError(f"conv_transpose1d: expected a 3-D weight, but got weight of size "
                           f"{list(weight.shape)}")
    one = _single
    out = conv_transpose2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, one(stride)),
                             (0, one(padding)), (0, one(output_padding)), groups,
                             (1, one(dilation)))
    return out.squeeze(-2)


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution of a (time, batch, channels) ``input`` with a (k, C_in, C_out)
    ``weight`` and a (C_out,) ``bias``, zero-padded by ``pad`` on both ends of time."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


# -- normalisation and distances ----------------------------------------------------------------
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``input / sqrt(mean(input^2) + eps) * weight`` over the last
    ``len(normalized_shape)`` dimensions; ``eps`` defaults to the dtype's machine epsilon."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(int(s) for s in normalized_shape)
    k = len(normalized_shape)
    if input.dim() < k or tuple(input.shape[input.dim() - k:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, normalized_shape))}], but got "
                           f"input of size{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != normalized_shape:
        raise RuntimeError(f"Expected weight to be of same shape as normalized_shape, but got "
                           f"weight of shape {list(weight.shape)} and normalized_shape = "
                           f"{list(normalized_shape)}")
    if eps is None:
        eps = float(np.finfo(input.dtype).eps)
    dims = tuple(range(input.dim() - k, input.dim()))
    out = input * (input.pow(2).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


def pdist(input, p=2):
    """The p-norm distances between the rows of an (N, M) ``input``, pairs i < j in order:
    the upper triangle of ``cdist(input, input)`` without its diagonal."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    pairs = Tensor._plain(np.stack([i, j]).astype(np.int64))
    return (input[pairs[0]] - input[pairs[1]]).norm(p, dim=1)


def channel_shuffle(input, groups):
    """Interleave the channels (dimension 1) of ``groups`` groups: (N, g, C / g, ...) with
    its two group axes swapped."""
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    n, rest = input.shape[0], tuple(input.shape[2:])
    return call(lambda x: np.reshape(np.swapaxes(np.reshape(x, (n, groups, c // groups) + rest),
                                                 1, 2), (n, c) + rest),
                input, name="ChannelShuffleBackward0")


native_channel_shuffle = channel_shuffle


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Divide each element by ``(k + alpha * mean of the squares over ``size`` neighbouring
    channels) ** beta`` (the channel window zero-padded, size // 2 before it)."""
    nd = input.dim()
    if nd < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {nd} dimensions)")
    if input.numel() == 0:
        return input
    sq = input.mul(input)
    lo, hi = size // 2, (size - 1) // 2
    if nd == 3:
        div = avg_pool2d(pad(sq.unsqueeze(1), (0, 0, lo, hi)), (size, 1), stride=1)
        div = div.squeeze(1)
    else:
        shape = tuple(input.shape)
        div = sq.reshape(shape[0], 1, shape[1], shape[2], -1)
        div = avg_pool3d(pad(div, (0, 0, 0, 0, lo, hi)), (size, 1, 1), stride=1).squeeze(1)
        div = div.reshape(shape)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


# -- pooling -------------------------------------------------------------------------------------
def _lp_finish(out, norm_type, window):
    return (out.sign() * relu(out.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The ``norm_type``-power average over windows, times the window, to the power
    ``1 / norm_type``."""
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kernel_size)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kh, kw = _pair(kernel_size, "kernel_size")
    out = avg_pool2d(input.pow(norm_type), (kh, kw), stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kh * kw)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kd, kh, kw = (kernel_size,) * 3 if isinstance(kernel_size, int) else tuple(kernel_size)
    out = avg_pool3d(input.pow(norm_type), (kd, kh, kw), stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kd * kh * kw)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """The maximum over PyTorch's adaptive windows of the last dimension."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional "
                           "tensor for argument #1 'self' (while checking arguments for "
                           "adaptive_max_pool1d)")
    o = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
    out = adaptive_max_pool2d(input.unsqueeze(-2), (1, o), return_indices)
    if return_indices:
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool2d(input, output_size, True)


def _unpool(what, input, indices, kernel, stride, padding, output_size, k):
    """Scatter ``input`` into zeros at ``indices`` (flat over the last ``k`` output
    dimensions, as the matching max pool returns them)."""
    def tup(v, name):
        v = (v,) * k if isinstance(v, int) else tuple(int(a) for a in v)
        if len(v) != k:
            raise ValueError(f"{what}: {name} must have {k} elements")
        return v
    kernel = tup(kernel, "kernel_size")
    stride = kernel if stride is None else tup(stride, "stride")
    padding = tup(padding, "padding")
    spatial = tuple(input.shape[-k:])
    default = tuple((n - 1) * s - 2 * p + kk for n, s, p, kk in zip(spatial, stride, padding,
                                                                       kernel))
    if output_size is None:
        size = default
    else:
        size = tuple(int(s) for s in output_size)[-k:]
        for d, (s, n) in enumerate(zip(size, default)):
            lo, hi = n - stride[d], n + stride[d]
            if not lo < s < hi:
                raise ValueError(f"invalid output_size \"{list(size)}\" (dim {d} must be "
                                 f"between {lo} and {hi})")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    lead = tuple(input.shape[:-k])
    plane = int(np.prod(size))
    idx = np.reshape(indices._data.astype(np.int64), lead + (-1,))
    if idx.size and (idx.min() < 0 or idx.max() >= plane):
        bad = int(idx.max() if idx.max() >= plane else idx.min())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, size))}")
    where = Tensor._plain(idx)
    flat = input.reshape(lead + (-1,))
    out = input.new_zeros(lead + (plane,)).scatter(-1, where, flat)
    return out.reshape(lead + size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool1d``: each value put back at its index, zeros
    elsewhere."""
    return _unpool("max_unpool1d", input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _unpool("max_unpool2d", input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _unpool("max_unpool3d", input, indices, kernel_size, stride, padding, output_size, 3)


# -- in-place activations -------------------------------------------------------------------------
def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, inplace=True)


def selu_(input):
    return selu(input, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def threshold_(input, threshold, value):
    return threshold(input, threshold, value, inplace=True)


# -- deprecated resizing ---------------------------------------------------------------------------
def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# -- losses ---------------------------------------------------------------------------------------
def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with any distance (pairwise_distance by
    default); ``swap`` takes the smaller of d(a, n) and d(p, n)."""
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, "
                         f"got {margin} instead")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    nd = anchor.dim()
    if not (positive.dim() == nd == negative.dim()):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {nd}D, positive "
                           f"{positive.dim()}D, and negative {negative.dim()}D inputs")
    dist = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(dist(positive, negative))
    loss = (margin + d_pos - d_neg).clamp_min(0.0)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """For each sample, the sum over its target classes j and its other classes i of
    ``max(0, 1 - (x[j] - x[i]))``, over the number of classes; a sample's targets are the
    entries of ``target`` before its first -1."""
    from .losses import _legacy, _reduce
    reduction = _legacy(size_average, reduce, reduction)
    if input.dim() > 2 or input.numel() == 0:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    t = np.reshape(target._data.astype(np.int64), (-1, input.shape[-1] if input.dim() else 1))
    n, c = t.shape
    pairs = []          # (sample, target class, other class), one per term
    for r in range(n):
        ends = np.nonzero(t[r] < 0)[0]
        js = t[r, :int(ends[0]) if ends.size else c]
        if js.size and (js.max() >= c):
            raise RuntimeError(f"multilabel_margin_loss: target index {int(js.max())} is out "
                               f"of bounds for {c} classes")
        others = np.setdiff1d(np.arange(c), js)
        pairs += [(r, int(j), int(i)) for j in js for i in others]
    rows, js, others = (np.array(col, np.int64).reshape(-1) for col in
                        (zip(*pairs) if pairs else ((), (), ())))
    owner = np.zeros((len(pairs), n))
    owner[np.arange(len(pairs)), rows] = 1.0

    def fn(v):
        v2 = np.reshape(v, (n, c))
        terms = np.maximum(1.0 - (v2[rows, js] - v2[rows, others]), 0.0)
        per = np.matmul(terms, owner.astype(v.dtype)) / c
        if input.dim() < 2 and reduction == "none":
            return np.reshape(per, ())
        return _reduce(per, reduction)
    return call(fn, input, name="MultilabelMarginLossBackward0")


# -- embedding bags -------------------------------------------------------------------------------
def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxima of bags of ``weight``'s rows without materialising the
    looked-up rows per bag: a 2-D ``input`` is one bag per row; a 1-D one is cut into bags
    at ``offsets`` (the last bag runs to the end, or ``offsets`` ends with the end when
    ``include_last_offset``). Entries equal to ``padding_idx`` are left out (an empty bag
    is zeros); ``per_sample_weights`` scales each entry (mode "sum" only)."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding_bag: scale_grad_by_freq and sparse are not "
                                  "supported")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    idx = input._concrete("embedding_bag") if isinstance(input, Tensor) else np.asarray(input)
    if idx.dtype.kind not in "iu":
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int")
    if idx.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated "
                             f"is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        starts = np.arange(0, idx.size, max(idx.shape[1], 1))[:idx.shape[0]]
        ends = starts + idx.shape[1]
        idx = idx.reshape(-1)
    elif idx.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        off = offsets._concrete("embedding_bag") if isinstance(offsets, Tensor) else \
            np.asarray(offsets)
        if off.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        if off.size and off[0] != 0:
            raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                               f"mini-batch has to start from position 0. However, got "
                               f"{int(off[0])}")
        off = off.astype(np.int64)
        if include_last_offset:
            starts, ends = off[:-1], off[1:]
        else:
            starts, ends = off, np.append(off[1:], idx.size)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{idx.ndim}")
    rows = weight.shape[0]
    if idx.size and (idx.min() < 0 or idx.max() >= rows):
        raise IndexError("index out of range in self")
    idx = idx.astype(np.int64)
    if padding_idx is not None and padding_idx < 0:
        padding_idx += rows
    keep = np.ones(idx.size, bool) if padding_idx is None else idx != padding_idx
    if max_norm is not None:
        _embedding_renorm(weight, idx, max_norm, norm_type)
    n_bags = len(starts)
    # owner[b, k]: entry k counts in bag b
    position = np.arange(idx.size)
    owner = (position[None, :] >= starts[:, None]) & (position[None, :] < ends[:, None]) & \
        keep[None, :]
    counts = owner.sum(axis=1)
    operands = [weight] + ([per_sample_weights] if per_sample_weights is not None else [])

    def fn(w, *psw):
        picked = w[idx]                                     # (entries, dim)
        if psw:
            picked = picked * np.reshape(psw[0], (-1, 1))
        if mode == "max":
            dim = w.shape[1]
            bags = [np.max(picked[owner[b]], axis=0) if counts[b] else
                    np.zeros(dim, w.dtype) for b in range(n_bags)]
            return np.stack(bags) if bags else np.zeros((0, dim), w.dtype)
        out = np.matmul(owner.astype(w.dtype), picked)
        if mode == "mean":
            out = out / np.maximum(counts, 1).astype(w.dtype)[:, None]
        return out
    return call(fn, *operands, name="EmbeddingBagBackward0")


# -- 3-D adaptive pooling ---------------------------------------------------------------------------
def _adaptive_windows(n, o):
    return [((i * n) // o, -(-(i + 1) * n // o)) for i in range(o)]


def _three(output_size, spatial):
    size = (output_size,) * 3 if isinstance(output_size, int) else tuple(output_size)
    return tuple(n if s is None else int(s) for s, n in zip(size, spatial))


def adaptive_avg_pool3d(input, output_size):
    """The mean over PyTorch's adaptive windows of the last three dimensions."""
    if input.dim() not in (4, 5):
        raise RuntimeError(f"adaptive_avg_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{list(input.shape)}")
    spatial = tuple(input.shape[-3:])
    out = _three(output_size, spatial)
    mats = [_adaptive_matrix(n, o, input.dtype) for n, o in zip(spatial, out)]

    def fn(x):
        for axis, m in enumerate(mats):
            x = np.moveaxis(np.matmul(m, np.moveaxis(x, axis - 3, -2)), -2, axis - 3)
        return x
    return call(fn, input, name="AdaptiveAvgPool3DBackward0")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """The maximum over PyTorch's adaptive windows of the last three dimensions (indices
    flat over D * H * W)."""
    if input.dim() not in (4, 5):
        raise RuntimeError(f"adaptive_max_pool3d(): Expected 4D or 5D tensor, but got "
                           f"{list(input.shape)}")
    d, h, w = spatial = tuple(input.shape[-3:])
    out = _three(output_size, spatial)
    wins = [_adaptive_windows(n, o) for n, o in zip(spatial, out)]
    lead = tuple(input.shape[:-3])

    def fn(x):
        cells = [np.max(x[..., a0:a1, b0:b1, c0:c1], axis=(-3, -2, -1))
                 for a0, a1 in wins[0] for b0, b1 in wins[1] for c0, c1 in wins[2]]
        return np.reshape(np.stack(cells, axis=-1), lead + out)
    values = call(fn, input, name="AdaptiveMaxPool3DBackward0")
    if not return_indices:
        return values
    x = input._data
    idx = np.empty(lead + out, np.int64)
    for i, (a0, a1) in enumerate(wins[0]):
        for j, (b0, b1) in enumerate(wins[1]):
            for k, (c0, c1) in enumerate(wins[2]):
                win = x[..., a0:a1, b0:b1, c0:c1].reshape(lead + (-1,))
                flat = np.argmax(win, axis=-1)
                da, rest = np.divmod(flat, (b1 - b0) * (c1 - c0))
                db, dc = np.divmod(rest, c1 - c0)
                idx[..., i, j, k] = ((a0 + da) * h + b0 + db) * w + c0 + dc
    return values, Tensor._plain(idx)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool3d(input, output_size, True)


# -- Gumbel-softmax ---------------------------------------------------------------------------------
def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """A differentiable sample of a categorical: softmax of ``(logits + g) / tau`` with
    ``g = -log(e)``, ``e`` standard exponential draws (the generator's); ``hard``: the
    one-hot of its argmax in the forward, the soft sample's gradient in the backward."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -logits.new_empty(tuple(logits.shape)).exponential_().log()
    soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return soft
    index = soft.max(dim, keepdim=True)[1]
    one_hot = logits.new_zeros(tuple(logits.shape)).scatter_(dim, index, 1.0)
    return one_hot - soft.detach() + soft
