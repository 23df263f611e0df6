"""More ``torch.nn`` modules: ``RMSNorm``, ``ConvTranspose1d``, ``Dropout3d``,
``FeatureAlphaDropout``, the 1-D and 3-D pads, ``ChannelShuffle``, ``LocalResponseNorm``,
the power-average and unpooling layers, ``AdaptiveMaxPool1d``, ``InstanceNorm3d``, the
deprecated ``Upsampling*2d``, and the losses added to ``nn.functional``. Each forwards to its
function in ``tg.nn.functional``, as PyTorch's modules do."""
from __future__ import annotations

import numbers

from ..creation import empty, ones
from ..grad_mode import no_grad
from . import functional as F
from . import init
from .layers import (
    AdaptiveAvgPool2d,
    AdaptiveMaxPool2d,
    ConstantPad2d,
    Dropout,
    NLLLoss,
    Upsample,
    ZeroPad2d,
    _ConvNd,
    _Loss,
    _PadNd,
)
from .modules import Module, Parameter
from .normalization import _InstanceNorm


class RMSNorm(Module):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dimensions,
    times ``weight`` (initialised to ones)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        if isinstance(normalized_shape, numbers.Integral):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class ConvTranspose1d(_ConvNd):
    _n = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, (in_channels, out_channels // groups), dtype,
                         padding_mode, transposed=True)
        self.output_padding = (F._single(output_padding),)

    def forward(self, input, output_size=None):
        if output_size is not None:
            raise NotImplementedError("ConvTranspose1d: output_size is not supported")
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)


class Dropout3d(Dropout):
    """Zeroes whole channels of 3-D feature maps with probability ``p`` while training."""

    def forward(self, input):
        return F.dropout3d(input, self.p, self.training, self.inplace)


class FeatureAlphaDropout(Dropout):
    def forward(self, input):
        return F.feature_alpha_dropout(input, self.p, self.training)


class ChannelShuffle(Module):
    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self):
        return f"groups={self.groups}"


# -- padding ------------------------------------------------------------------------------------
class ConstantPad1d(ConstantPad2d):
    _dims = 1


class ConstantPad3d(ConstantPad2d):
    _dims = 3


class ZeroPad1d(ZeroPad2d):
    _dims = 1


class ZeroPad3d(ZeroPad2d):
    _dims = 3


class CircularPad1d(_PadNd):
    _mode, _dims = "circular", 1


class CircularPad2d(_PadNd):
    _mode, _dims = "circular", 2


class CircularPad3d(_PadNd):
    _mode, _dims = "circular", 3


class ReflectionPad3d(_PadNd):
    _mode, _dims = "reflect", 3


class ReplicationPad3d(_PadNd):
    _mode, _dims = "replicate", 3


# -- normalisation and pooling --------------------------------------------------------------------
class LocalResponseNorm(Module):
    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class InstanceNorm3d(_InstanceNorm):
    _spatial = 3


class _LPPool(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPool):
    def forward(self, input):
        return F.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


class LPPool2d(_LPPool):
    def forward(self, input):
        return F.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


class LPPool3d(_LPPool):
    def forward(self, input):
        return F.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride,
                           self.ceil_mode)


class _MaxUnpool(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, input, indices, output_size=None):
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpool):
    _fn = F.max_unpool1d


class MaxUnpool2d(_MaxUnpool):
    _fn = F.max_unpool2d


class MaxUnpool3d(_MaxUnpool):
    _fn = F.max_unpool3d


class AdaptiveMaxPool1d(AdaptiveMaxPool2d):
    def forward(self, input):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


# -- losses ---------------------------------------------------------------------------------------
class MultiLabelMarginLoss(_Loss):
    def forward(self, input, target):
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    def __init__(self, *, distance_function=None, margin=1.0, swap=False, reduction="mean"):
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = distance_function
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """The deprecated name of ``NLLLoss`` for images (it takes any shape)."""



class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embeddings (``F.embedding_bag``); ``weight``
    starts N(0, 1), its ``padding_idx`` row zero."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="mean", sparse=False, _weight=None,
                 include_last_offset=False, padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.mode, self.sparse = scale_grad_by_freq, mode, sparse
        self.include_last_offset = include_last_offset
        if padding_idx is not None:
            if padding_idx > 0:
                assert padding_idx < num_embeddings, "padding_idx must be within num_embeddings"
            elif padding_idx < 0:
                assert padding_idx >= -num_embeddings, \
                    "padding_idx must be within num_embeddings"
                padding_idx = num_embeddings + padding_idx
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, dtype=dtype))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError("Shape of weight does not match num_embeddings and "
                                     "embedding_dim")
            self.weight = Parameter(_weight)

    def reset_parameters(self):
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += ", scale_grad_by_freq=True"
        s += f", mode={self.mode}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s


class AdaptiveAvgPool3d(AdaptiveAvgPool2d):
    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(AdaptiveMaxPool2d):
    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class Container(Module):
    """The deprecated ``nn.Container``: a module whose keyword arguments are its
    submodules."""

    def __init__(self, **kwargs):
        super().__init__()
        import warnings
        warnings.warn("nn.Container is deprecated. All of it's functionality is now "
                      "implemented in nn.Module. Subclass that instead.", stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)
