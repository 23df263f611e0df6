"""``tg.nn.functional``: activations, losses, convolution, pooling, linear and dropout.

Each operation is one ``call`` of NumPy code (see ``eager.dispatch``), so a whole loss
or a convolution with its bias is a single node with PyTorch's ``grad_fn`` name, and its
derivative comes from the registry's rules like every other eager operation. Shapes are
checked here, before anything is recorded, so that errors read like PyTorch's and name
both shapes.
"""
from __future__ import annotations

import warnings

import numpy as np

from ...ir import apply
from ..creation import generator
from ..dispatch import call
from ..tensor import Tensor
from .losses import (  # noqa: F401  (part of tg.nn.functional)
    _check_reduction,
    _dtype_name,
    binary_cross_entropy_with_logits,
    cross_entropy,
    l1_loss,
    mse_loss,
    nll_loss,
    one_hot,
)

__all__ = ["relu", "relu_", "leaky_relu", "sigmoid", "tanh", "softmax", "log_softmax",
           "mse_loss", "l1_loss", "nll_loss", "cross_entropy",
           "binary_cross_entropy_with_logits", "conv2d", "conv_transpose2d", "max_pool2d",
           "avg_pool2d", "linear", "dropout", "flatten", "one_hot"]


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


def _check_groups(groups, what):
    if groups != 1:
        raise NotImplementedError(f"{what}: tracegrad supports groups=1 only, got groups={groups}")


def _batched(input, what):
    """``input`` as a 4-D batch, and whether it was a single 3-D image (PyTorch accepts
    both; the result then drops the batch dimension again)."""
    if input.dim() == 3:
        return input.unsqueeze(0), True
    if input.dim() != 4:
        raise RuntimeError(f"Expected 3D (unbatched) or 4D (batched) input to {what}, but got "
                           f"input of size: {list(input.shape)}")
    return input, False


def _check_conv(what, x, weight, bias, in_channels, out_channels, transposed):
    if weight.dim() != 4:
        raise RuntimeError(f"{what}: expected a 4-D weight, but got weight of size "
                           f"{list(weight.shape)}")
    if x.shape[1] != in_channels:
        prefix = "transposed=1, " if transposed else ""
        raise RuntimeError(f"Given {prefix}groups=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {in_channels} channels, but got "
                           f"{x.shape[1]} channels instead")
    if x.dtype != weight.dtype:
        raise RuntimeError(f"Input type ({x.dtype.name}) and weight type ({weight.dtype.name}) "
                           "should be the same")
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {out_channels} elements, but got bias of size "
                           f"{list(bias.shape)} instead")


def _with_bias(fn, input, weight, bias, squeeze):
    if bias is None:
        out = call(fn, input, weight, name="ConvolutionBackward0")
        if out.grad_fn is not None:     # PyTorch shows the missing bias as a None edge
            out.grad_fn._inputs = (out.grad_fn._inputs or out.grad_fn._parents) + (None,)
    else:
        out = call(lambda x, w, b: fn(x, w) + np.reshape(b, (1, -1, 1, 1)), input, weight, bias,
                   name="ConvolutionBackward0")
    return out.squeeze(0) if squeeze else out


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation of (N, C, H, W) ``input`` with an (O, C, kH, kW) ``weight``."""
    _check_groups(groups, "conv2d")
    if isinstance(padding, str):
        raise NotImplementedError(f"conv2d: padding='{padding}' is not supported; pass the "
                                  "padding as integers")
    stride, padding = _pair(stride, "stride"), _pair(padding, "padding")
    dilation = _pair(dilation, "dilation")
    x, squeeze = _batched(input, "conv2d")
    _check_conv("conv2d", x, weight, bias, weight.shape[1] if weight.dim() == 4 else None,
                weight.shape[0], False)
    padded = tuple(n + 2 * p for n, p in zip(x.shape[2:], padding))
    kernel = tuple(d * (k - 1) + 1 for k, d in zip(weight.shape[2:], dilation))
    if any(k > n for k, n in zip(kernel, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: ({padded[0]} x "
                           f"{padded[1]}). Kernel size: ({kernel[0]} x {kernel[1]}). Kernel size "
                           "can't be greater than actual input size")
    fn = lambda x, w: apply("conv2d", x, w, stride=stride, padding=padding, dilation=dilation)
    return _with_bias(fn, x, weight, bias, squeeze)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The adjoint of ``conv2d`` in its input: (N, C_in, H, W) with a (C_in, C_out, kH, kW)
    ``weight``."""
    _check_groups(groups, "conv_transpose2d")
    stride, padding = _pair(stride, "stride"), _pair(padding, "padding")
    output_padding, dilation = _pair(output_padding, "output_padding"), _pair(dilation, "dilation")
    x, squeeze = _batched(input, "conv_transpose2d")
    _check_conv("conv_transpose2d", x, weight, bias,
                weight.shape[0] if weight.dim() == 4 else None,
                weight.shape[1] if weight.dim() == 4 else None, True)
    if any(op >= max(s, d) for op, s, d in zip(output_padding, stride, dilation)):
        raise RuntimeError(f"output padding must be smaller than either stride or dilation, but "
                           f"got output_padding_height: {output_padding[0]} output_padding_width: "
                           f"{output_padding[1]} stride_height: {stride[0]} stride_width: "
                           f"{stride[1]} dilation_height: {dilation[0]} dilation_width: "
                           f"{dilation[1]}")
    fn = lambda x, w: apply("conv_transpose2d", x, w, stride=stride, padding=padding,
                            output_padding=output_padding, dilation=dilation)
    return _with_bias(fn, x, weight, bias, squeeze)


# -- pooling ----------------------------------------------------------------------------
def _pool_args(what, input, kernel_size, stride, padding, dilation, ceil_mode):
    if ceil_mode:
        raise NotImplementedError(f"{what}: ceil_mode=True is not supported (floor mode only)")
    kernel = _pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else _pair(stride, "stride")
    padding, dilation = _pair(padding, "padding"), _pair(dilation, "dilation")
    x, squeeze = _batched(input, what)
    effective = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    for p, k, d, e in zip(padding, kernel, dilation, effective):
        if 2 * p > e:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    out = tuple((n + 2 * p - e) // s + 1
                for n, p, e, s in zip(x.shape[2:], padding, effective, stride))
    if min(out) < 1:
        c, h, w = x.shape[1:]
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: "
                           f"({c}x{out[0]}x{out[1]}). Output size is too small")
    return x, squeeze, kernel, stride, padding, dilation


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    if return_indices:
        raise NotImplementedError("max_pool2d: return_indices=True is not supported")
    x, squeeze, kernel, stride, padding, dilation = _pool_args(
        "max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode)
    out = call(lambda v: apply("max_pool2d", v, kernel=kernel, stride=stride, padding=padding,
                               dilation=dilation), x, name="MaxPool2DWithIndicesBackward0")
    return out.squeeze(0) if squeeze else out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    x, squeeze, kernel, stride, padding, _ = _pool_args(
        "avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode)
    params = dict(kernel=kernel, stride=stride, padding=padding)
    scale = None
    if divisor_override is not None:
        scale = kernel[0] * kernel[1] / divisor_override
    elif not count_include_pad and any(padding):
        # the mean over real pixels only: divide by the share of each window inside the image
        inside = apply("avg_pool2d", np.ones((1, 1) + tuple(x.shape[2:]), x.dtype), **params)
        scale = 1.0 / inside

    def fn(v):
        out = apply("avg_pool2d", v, **params)
        return out if scale is None else out * scale
    out = call(fn, x, name="AvgPool2DBackward0")
    return out.squeeze(0) if squeeze else out


# -- regularisation and reshaping ---------------------------------------------------------
def dropout(input, p=0.5, training=True, inplace=False):
    """Inverted dropout: zero each element with probability ``p`` (mask drawn from the
    ``tg.manual_seed`` generator) and scale the rest by ``1 / (1 - p)``, so that the
    expected value is unchanged and evaluation needs no rescaling."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    keep = generator().random(tuple(input.shape)) >= p
    scale = keep.astype(input.dtype) * (1.0 / (1.0 - p)) if p < 1.0 else keep.astype(input.dtype)
    if inplace:
        return input.mul_(Tensor._plain(scale))
    return call(lambda x: x * scale, input, name="MulBackward0")


def flatten(input, start_dim=0, end_dim=-1):
    return input.flatten(start_dim, end_dim)
