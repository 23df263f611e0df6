"""Lazy modules: ``LazyLinear``, ``LazyConv*``, ``LazyConvTranspose*``, ``LazyBatchNorm*``
and ``LazyInstanceNorm*`` (those whose ordinary class tracegrad has).

Their parameters are ``UninitializedParameter``s until the first call, which reads the
input's feature size, gives the parameters their shapes, initialises them with the
ordinary module's ``reset_parameters`` (the same draws, so the numbers match PyTorch's
under the same seed) and turns the module into the ordinary class. Loading a state dict
first gives the parameters the loaded shapes instead.
"""
from __future__ import annotations

import itertools

from . import layers, normalization
from .parameter import UninitializedBuffer, UninitializedParameter, is_lazy

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d",
           "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d"]


class LazyModuleMixin:
    """Mixed in before an ordinary module class: a forward pre-hook initialises the
    module on its first call (``initialize_parameters``) and sets its class to
    ``cls_to_become``; a load_state_dict pre-hook shapes the parameters a state dict
    holds."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters)

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs):
        for name, t in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and t is not None and is_lazy(t):
                src = state_dict[key]
                if not is_lazy(src):
                    t.materialize(tuple(src.shape))

    def initialize_parameters(self, *args, **kwargs):
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self):
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(),
                                                        self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        del module._initialize_hook
        del module._load_hook
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, layers.Linear):
    """``Linear`` whose ``in_features`` is the first input's last dimension."""

    cls_to_become = layers.Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False, dtype=dtype)
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_features = input.shape[-1]
            self.weight.materialize((self.out_features, self.in_features))
            if self.bias is not None:
                self.bias.materialize((self.out_features,))
            self.reset_parameters()


class _LazyConvMixin(LazyModuleMixin):
    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input):
        no_batch = self._n + 1
        if input.dim() not in (no_batch, no_batch + 1):
            raise RuntimeError(f"Expected {no_batch}D (unbatched) or {no_batch + 1}D (batched) "
                               f"input to {self.__class__.__name__}, but got input of size: "
                               f"{input.shape}")
        return input.shape[1] if input.dim() == no_batch + 1 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            self.weight.materialize((*shape, *self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()

    def _lazy_init(self, out_channels, bias, dtype):
        self.weight = UninitializedParameter(dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(dtype=dtype)


def _lazy_conv(conv):
    class LazyConv(_LazyConvMixin, conv):
        cls_to_become = conv

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                     groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
            super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False,
                             padding_mode, dtype=dtype)
            self._lazy_init(out_channels, bias, dtype)

    LazyConv.__name__ = LazyConv.__qualname__ = "Lazy" + conv.__name__
    LazyConv.__doc__ = f"``{conv.__name__}`` whose ``in_channels`` is the first input's."
    return LazyConv


def _lazy_conv_transpose(conv):
    class LazyConvTranspose(_LazyConvMixin, conv):
        cls_to_become = conv

        def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                     groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                     dtype=None):
            super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups,
                             False, dilation, padding_mode, dtype=dtype)
            self._lazy_init(out_channels, bias, dtype)

    LazyConvTranspose.__name__ = LazyConvTranspose.__qualname__ = "Lazy" + conv.__name__
    LazyConvTranspose.__doc__ = f"``{conv.__name__}`` whose ``in_channels`` is the first input's."
    return LazyConvTranspose


LazyConv1d = _lazy_conv(layers.Conv1d)
LazyConv2d = _lazy_conv(layers.Conv2d)
LazyConv3d = _lazy_conv(layers.Conv3d)
LazyConvTranspose2d = _lazy_conv_transpose(layers.ConvTranspose2d)
LazyConvTranspose3d = _lazy_conv_transpose(layers.ConvTranspose3d)


class _LazyNormMixin(LazyModuleMixin):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None):
        super().__init__(0, eps, momentum, False, False, dtype=dtype)
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(dtype=dtype)
            self.bias = UninitializedParameter(dtype=dtype)
        if track_running_stats:
            from ..creation import tensor
            self.running_mean = UninitializedBuffer(dtype=dtype)
            self.running_var = UninitializedBuffer(dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype="int64")

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            if self.affine:
                self.weight.materialize((self.num_features,))
                self.bias.materialize((self.num_features,))
            if self.track_running_stats:
                self.running_mean.materialize((self.num_features,))
                self.running_var.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(norm):
    class LazyNorm(_LazyNormMixin, norm):
        cls_to_become = norm

        def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                     device=None, dtype=None):
            super().__init__(eps, momentum, affine, track_running_stats, dtype=dtype)

    LazyNorm.__name__ = LazyNorm.__qualname__ = "Lazy" + norm.__name__
    LazyNorm.__doc__ = f"``{norm.__name__}`` whose ``num_features`` is the first input's."
    return LazyNorm


LazyBatchNorm1d = _lazy_norm(normalization.BatchNorm1d)
LazyBatchNorm2d = _lazy_norm(normalization.BatchNorm2d)
LazyBatchNorm3d = _lazy_norm(normalization.BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm(normalization.InstanceNorm1d)    # (affine and running
LazyInstanceNorm2d = _lazy_norm(normalization.InstanceNorm2d)    # stats by default, as torch)
