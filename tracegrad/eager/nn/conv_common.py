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
