"""``tg.nn.init``: fill a tensor in place with PyTorch's initialisation schemes.

The values come from the ``tg.manual_seed`` generator and are written straight into the
tensor's array, as PyTorch's ``with torch.no_grad(): tensor.uniform_(...)``: initialising
a parameter is not an operation to differentiate, and a leaf that requires grad may not
be changed in place otherwise.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..creation import generator as _seeded
from ..creation import randperm
from ..grad_mode import no_grad
from ..random import draw_dtype

__all__ = ["calculate_gain", "uniform_", "normal_", "constant_", "zeros_", "ones_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "trunc_normal_", "orthogonal_", "dirac_", "sparse_"]


def _fill(tensor, values):
    np.copyto(tensor._data, values, casting="unsafe")
    tensor._vc.v += 1
    return tensor


def _shape(tensor):
    return tuple(tensor.shape)


def _dtype(tensor):
    """The dtype the draws for ``tensor`` are made in (``random.draw_dtype``)."""
    return draw_dtype(tensor.dtype)


def calculate_gain(nonlinearity, param=None):
    """The factor that keeps activations' variance steady through ``nonlinearity``."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                        "conv_transpose2d", "conv_transpose3d", "sigmoid"):
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    shape = _shape(tensor)
    if len(shape) < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = int(np.prod(shape[2:], dtype=np.int64))
    return shape[1] * receptive, shape[0] * receptive


def _fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _empty_warning(tensor):
    if 0 in _shape(tensor):
        warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=3)
        return True
    return False


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    return _fill(tensor, _seeded(generator).uniform(_shape(tensor), _dtype(tensor), a, b))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    return _fill(tensor, _seeded(generator).normal(_shape(tensor), _dtype(tensor), mean, std))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """A normal sample truncated to [a, b], drawn as PyTorch 2.13 draws it (the same numbers
    for the same seed): whole-tensor normal redraws where the interval holds more than 30 %
    of the mass, else uniform proposals accepted by the density."""
    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    g, shape, dt = _seeded(generator), _shape(tensor), _dtype(tensor)
    cast = np.dtype(tensor.dtype).type
    if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:
        lo, hi = cast(a), cast(b)
        result = g.normal(shape, dt, mean, std).astype(tensor.dtype)
        while True:
            mask = (result < lo) | (result > hi)
            if not mask.any():
                break
            result = np.where(mask, g.normal(shape, dt, mean, std).astype(tensor.dtype), result)
        return _fill(tensor, result)
    mode = max(a, min(mean, b))
    log_peak = -0.5 * ((mode - mean) / std) ** 2

    def log_ratio(x):
        return (((x - cast(mean)) / cast(std)) ** 2 * cast(-0.5) - cast(log_peak)).astype(x.dtype)

    result = g.uniform(shape, dt, a, b).astype(tensor.dtype)
    with np.errstate(divide="ignore"):
        pending = np.log(g.uniform(shape, dt).astype(tensor.dtype)) > log_ratio(result)
        while pending.any():
            candidates = g.uniform(shape, dt, a, b).astype(tensor.dtype)
            result = np.where(pending, candidates, result)
            accept = np.log(g.uniform(shape, dt).astype(tensor.dtype)) > log_ratio(candidates)
            pending = np.where(pending, accept, pending)
    return _fill(tensor, result)


def constant_(tensor, val):
    return _fill(tensor, val)


def zeros_(tensor):
    return _fill(tensor, 0)


def ones_(tensor):
    return _fill(tensor, 1)


def eye_(tensor):
    if len(_shape(tensor)) != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*_shape(tensor)))


def xavier_uniform_(tensor, gain=1.0):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor, gain=1.0):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """Uniform on [-b, b] with b = gain * sqrt(3 / fan). With ``a=sqrt(5)`` this is
    PyTorch's default for Linear and Conv weights: b = 1 / sqrt(fan_in)."""
    if _empty_warning(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    if _empty_warning(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std)


def orthogonal_(tensor, gain=1.0, generator=None):
    """A (semi-)orthogonal matrix from the QR factorisation of a normal sample (signs fixed
    by R's diagonal, so the result is uniformly distributed), times ``gain``; dimensions past
    the first are flattened."""
    shape = _shape(tensor)
    if len(shape) < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if 0 in shape:
        return tensor
    rows = shape[0]
    cols = int(np.prod(shape[1:], dtype=np.int64))
    flat = _seeded(generator).normal((rows, cols), _dtype(tensor)).astype(np.float64)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, (q * gain).reshape(shape))


def dirac_(tensor, groups=1):
    shape = _shape(tensor)
    if len(shape) not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_per_group = shape[0] // groups
    min_dim = min(out_per_group, shape[1])
    values = np.zeros(shape)
    centre = tuple(s // 2 for s in shape[2:])
    for g in range(groups):
        for d in range(min_dim):
            values[(g * out_per_group + d, d) + centre] = 1
    return _fill(tensor, values)


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """A 2-D tensor filled from N(0, std), then in each column ``ceil(sparsity * rows)``
    entries zeroed, at the first rows of a ``randperm(rows)`` (drawn from the global
    generator, as torch draws them whatever ``generator`` is): torch's draws."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for col_idx in range(cols):
            row_indices = randperm(rows)
            zero_indices = row_indices[:num_zeros]
            tensor[zero_indices, col_idx] = 0
    return tensor


# -- torch's deprecated names without the trailing underscore ---------------------------------
def _make_deprecate(meth):
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = (f"{old_name}(...): deprecated in favor of "
                               f"``tg.nn.init.{new_name}``.")
    deprecated_init.__name__ = deprecated_init.__qualname__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
