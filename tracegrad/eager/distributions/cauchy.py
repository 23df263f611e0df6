"""The Cauchy (Lorentz) distribution."""
from __future__ import annotations

import math

import tracegrad.eager as tg

from .distribution import Distribution, LocationScale


class Cauchy(LocationScale, Distribution):
    """Cauchy distribution: density ``1 / (pi scale (1 + ((x - loc) / scale)^2))``. It has
    no mean (NaN) and infinite variance. ``rsample`` is ``loc + scale * eps`` with
    ``eps`` from ``Tensor.cauchy_`` (PyTorch's numbers for the same seed)."""

    @property
    def mean(self):
        return tg.full(self._extended_shape(), math.nan, dtype=self.loc.dtype)

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
