"""Normalisation layers: ``BatchNorm1d/2d/3d`` (running statistics, train/eval),
``LayerNorm`` and ``GroupNorm``, with PyTorch's parameters, buffers and state_dict keys."""
from __future__ import annotations

import numpy as np

from ..creation import empty, ones, tensor, zeros
from . import functional as F
from . import init
from .modules import Module, Parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm",
           "InstanceNorm1d", "InstanceNorm2d"]


class _BatchNorm(Module):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, bias=True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self._bias_flag = bias
        if affine:
            self.weight = Parameter(empty(num_features, dtype=dtype))
            self.bias = Parameter(empty(num_features, dtype=dtype)) if bias else None
            if not bias:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=np.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            init.zeros_(self.num_batches_tracked)

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            nbt = self.num_batches_tracked
            nbt._data[...] += 1
            nbt._vc.v += 1
            factor = 1.0 / float(nbt._data) if self.momentum is None else self.momentum
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_running = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_running else None,
                            self.running_var if use_running else None, self.weight, self.bias,
                            bn_training, factor, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.affine and self._bias_flag}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalisation of (N, C) or (N, C, L) inputs over N (and L)."""

    def _check_input_dim(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation of (N, C, H, W) inputs over N, H and W."""

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class LayerNorm(Module):
    """Normalisation over the trailing ``normalized_shape`` dimensions of each sample."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self._bias_flag = bias
        if elementwise_affine:
            self.weight = Parameter(ones(self.normalized_shape, dtype=dtype))
            if bias:
                self.bias = Parameter(zeros(self.normalized_shape, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self):
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, "
                f"bias={self.elementwise_affine and self._bias_flag}")


class GroupNorm(Module):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, bias=True, device=None,
                 dtype=None):
        super().__init__()
        if num_channels % num_groups:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = (num_groups, num_channels,
                                                                     eps, affine)
        self._bias_flag = bias
        if affine:
            self.weight = Parameter(ones(num_channels, dtype=dtype))
            if bias:
                self.bias = Parameter(zeros(num_channels, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.affine and self._bias_flag}")


class _InstanceNorm(_BatchNorm):
    """Per-sample, per-channel normalisation over the spatial dimensions; by default no
    affine parameters and no running statistics (PyTorch's defaults)."""

    _spatial = 1

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False,
                 track_running_stats=False, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, dtype=dtype)

    def _check_input_dim(self, input):
        want = self._spatial + 2
        if input.dim() not in (want - 1, want):
            raise ValueError(f"expected {want - 1}D or {want}D input (got {input.dim()}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        unbatched = input.dim() == self._spatial + 1
        if unbatched:
            input = input.unsqueeze(0)
        out = F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              0.1 if self.momentum is None else self.momentum, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    _spatial = 2
