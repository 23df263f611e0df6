"""The normal (Gaussian) distribution ``N(loc, scale**2)``."""
from __future__ import annotations

import math

import tracegrad.eager as tg

from .distribution import LocationScale
from .exp_family import ExponentialFamily

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class Normal(LocationScale, ExponentialFamily):
    """Normal distribution with mean ``loc`` and standard deviation ``scale``.

    Draws are ``loc + scale * eps`` with ``eps`` from ``randn``, so they are
    reparameterised (``rsample``) and equal PyTorch's for the same seed."""

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale ** 2

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = tg.randn(shape, dtype=self.loc.dtype)
        return eps * self.scale.expand(shape) + self.loc.expand(shape)

    def log_prob(self, value):
        value = self._checked(value)
        z = (value - self.loc) / self.scale
        return -0.5 * z * z - tg.log(self.scale) - _HALF_LOG_2PI

    def cdf(self, value):
        value = self._checked(value)
        return 0.5 * (1 + tg.erf((value - self.loc) / (self.scale * math.sqrt(2))))

    def icdf(self, value):
        return self.loc + self.scale * math.sqrt(2) * tg.erfinv(2 * value - 1)

    def entropy(self):
        return 0.5 + _HALF_LOG_2PI + tg.log(self.scale)
