"""More of ``torch.nn.functional``: the alpha and 3-D dropouts, 1-D transposed and
time-batch-channel convolutions, ``rms_norm``, ``pdist``, ``channel_shuffle``, local
response and power-average pooling, max unpooling, the ``*_with_indices`` pools, the
in-place activations and the deprecated ``upsample*`` wrappers. Each is composed of the
eager operations (so it differentiates, compiles and vmaps like them) in the order of
PyTorch's own composition, so that the numbers are PyTorch's to its rounding.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..creation import generator
from ..dispatch import call
from ..tensor import Tensor
from . import functional as F

# -- dropouts ----------------------------------------------------------------------------------
_ALPHA = 1.7580993408473766       # -SELU's negative saturation: scale * alpha


def _check_p(p):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


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
    return F._feature_dropout(input, p, training, inplace, shape)


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
    one = F._single
    out = F.conv_transpose2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, one(stride)),
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
    out = F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
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
        div = F.avg_pool2d(F.pad(sq.unsqueeze(1), (0, 0, lo, hi)), (size, 1), stride=1)
        div = div.squeeze(1)
    else:
        shape = tuple(input.shape)
        div = sq.reshape(shape[0], 1, shape[1], shape[2], -1)
        div = F.avg_pool3d(F.pad(div, (0, 0, 0, 0, lo, hi)), (size, 1, 1), stride=1).squeeze(1)
        div = div.reshape(shape)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


# -- pooling -------------------------------------------------------------------------------------
def _lp_finish(out, norm_type, window):
    return (out.sign() * F.relu(out.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The ``norm_type``-power average over windows, times the window, to the power
    ``1 / norm_type``."""
    out = F.avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kernel_size)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kh, kw = F._pair(kernel_size, "kernel_size")
    out = F.avg_pool2d(input.pow(norm_type), (kh, kw), stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kh * kw)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    kd, kh, kw = (kernel_size,) * 3 if isinstance(kernel_size, int) else tuple(kernel_size)
    out = F.avg_pool3d(input.pow(norm_type), (kd, kh, kw), stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kd * kh * kw)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return F.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return F.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """The maximum over PyTorch's adaptive windows of the last dimension."""
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional "
                           "tensor for argument #1 'self' (while checking arguments for "
                           "adaptive_max_pool1d)")
    o = output_size[0] if isinstance(output_size, (tuple, list)) else output_size
    out = F.adaptive_max_pool2d(input.unsqueeze(-2), (1, o), return_indices)
    if return_indices:
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return F.adaptive_max_pool2d(input, output_size, True)


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
    return F.elu(input, alpha, inplace=True)


def celu_(input, alpha=1.0):
    return F.celu(input, alpha, inplace=True)


def selu_(input):
    return F.selu(input, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return F.hardtanh(input, min_val, max_val, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return F.leaky_relu(input, negative_slope, inplace=True)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return F.rrelu(input, lower, upper, training, inplace=True)


def threshold_(input, threshold, value):
    return F.threshold(input, threshold, value, inplace=True)


# -- deprecated resizing ---------------------------------------------------------------------------
def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return F.interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return F.interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return F.interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


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
    dist = F.pairwise_distance if distance_function is None else distance_function
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
        F._embedding_renorm(weight, idx, max_norm, norm_type)
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
    mats = [F._adaptive_matrix(n, o, input.dtype) for n, o in zip(spatial, out)]

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
