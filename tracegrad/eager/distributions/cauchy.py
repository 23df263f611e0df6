"""The Cauchy (Lorentz) distribution."""
from __future__ import annotations

import math

import tracegrad.eager as tg

from . import constraints
from .distribution import Distribution, broadcast_all


class Cauchy(Distribution):
    """Cauchy distribution: density ``1 / (pi scale (1 + ((x - loc) / scale)^2))``. It has
    no mean (NaN) and infinite variance. ``rsample`` is ``loc + scale * eps`` with
    ``eps`` from ``Tensor.cauchy_`` (PyTorch's numbers for the same seed)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _params = {"loc": 0, "scale": 0}

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, (), validate_args)

    @property
    def mean(self):
        return tg.full(self._extended_shape(), math.nan, dtype=self.loc.dtype)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return tg.full(self._extended_shape(), math.inf, dtype=self.loc.dtype)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = tg.empty(shape, dtype=self.loc.dtype).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        value = self._checked(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - tg.log(self.scale) - tg.log1p(z * z)

    def cdf(self, value):
        value = self._checked(value)
        return tg.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return tg.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + tg.log(self.scale)
