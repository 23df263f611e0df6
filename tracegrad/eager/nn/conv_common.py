"""What the convolutions of every rank share: the ``groups`` check, the grouped
application of a convolution, and PyTorch's ``padding="same"``."""
from __future__ import annotations

import numpy as np

__all__ = ["_check_groups", "_grouped", "_same_padding"]


def _check_groups(groups, what, in_channels=None, out_channels=None):
    if not isinstance(groups, int) or groups < 1:
        raise RuntimeError("non-positive groups is not supported")
    if in_channels is not None and in_channels % groups:
        raise ValueError("in_channels must be divisible by groups")
    if out_channels is not None and out_channels % groups:
        raise ValueError("out_channels must be divisible by groups")


def _grouped(fn, groups, transposed):
    """``fn(x, w)`` applied per group of channels and concatenated (``groups`` > 1):
    the input's channels split in ``groups``, the weight's output channels (dimension 0;
    dimension 0 too for a transposed weight, whose input channels come first)."""
    if groups == 1:
        return fn

    def grouped(x, w):
        cin = x.shape[1] // groups
        wk = w.shape[0] // groups
        outs = [fn(x[:, g * cin:(g + 1) * cin], w[g * wk:(g + 1) * wk]) for g in range(groups)]
        return np.concatenate(outs, axis=1)
    return grouped


def _same_padding(kernel, dilation, stride, what):
    """PyTorch's padding="same": total ``d (k - 1)`` per side pair, the odd one extra on
    the right/bottom; only for stride 1."""
    if any(s != 1 for s in stride):
        raise ValueError("padding='same' is not supported for strided convolutions")
    return tuple((d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                 for k, d in zip(kernel, dilation))


def _check_conv(what, x, weight, bias, in_channels, out_channels, transposed, groups=1,
                weight_dim=4, divisible=False):
    """PyTorch's checks of a convolution's operands, in its order: the weight's rank, the
    input's channels, (``divisible``) the weight's first dimension by ``groups``, the
    dtypes, the bias's shape."""
    if weight.dim() != weight_dim:
        raise RuntimeError(f"{what}: expected a {weight_dim}-D weight, but got weight of size "
                           f"{list(weight.shape)}")
    if x.shape[1] != in_channels:
        prefix = "transposed=1, " if transposed else ""
        raise RuntimeError(f"Given {prefix}groups={groups}, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {in_channels} channels, but got "
                           f"{x.shape[1]} channels instead")
    if divisible and weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(weight.shape)} instead")
    if x.dtype != weight.dtype:
        raise RuntimeError(f"Input type ({x.dtype.name}) and weight type ({weight.dtype.name}) "
                           "should be the same")
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {out_channels} elements, but got bias of size "
                           f"{list(bias.shape)} instead")



def _pool_output(x, kernel, stride, padding, dilation, ceil_mode):
    """A pooling window's checks and PyTorch's output size per spatial axis of the
    batched ``x``, with the extra right padding ``ceil_mode`` needs (0 in floor mode):
    the last window must start inside the input or its left padding."""
    effective = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    for p, k, d, e in zip(padding, kernel, dilation, effective):
        if 2 * p > e:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    out, extra = [], []
    for n, p, e, s in zip(x.shape[2:], padding, effective, stride):
        span = n + 2 * p - e
        o = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= n + p:
            o -= 1
        out.append(o)
        extra.append(max((o - 1) * s + e - (n + 2 * p), 0))
    if min(out) < 1:
        c = x.shape[1]
        size = "x".join(str(n) for n in x.shape[1:])
        raise RuntimeError(f"Given input size: ({size}). Calculated output size: "
                           f"({c}x{'x'.join(str(o) for o in out)}). Output size is too small")
    return out, extra


def _with_bias(fn, input, weight, bias, squeeze):
    """``fn(input, weight)`` plus the per-channel ``bias``, as one ``ConvolutionBackward0``
    node (any number of spatial dimensions); ``squeeze`` drops the batch dimension an
    unbatched input was given."""
    from ..dispatch import call
    if bias is None:
        out = call(fn, input, weight, name="ConvolutionBackward0")
        if out.grad_fn is not None:     # PyTorch shows the missing bias as a None edge
            out.grad_fn._inputs = (out.grad_fn._inputs or out.grad_fn._parents) + (None,)
    else:
        shape = (1, -1) + (1,) * (input.ndim - 2)
        out = call(lambda x, w, b: fn(x, w) + np.reshape(b, shape), input, weight, bias,
                   name="ConvolutionBackward0")
    return out.squeeze(0) if squeeze else out
