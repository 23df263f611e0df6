"""The Laplace (double exponential) distribution."""
from __future__ import annotations

import math

import tracegrad.eager as tg

from .distribution import Distribution, LocationScale


class Laplace(LocationScale, Distribution):
    """Laplace distribution: density ``exp(-|x - loc| / scale) / (2 scale)``.

    ``rsample`` inverts the CDF at a uniform ``u`` in ``(-1, 1)`` (drawn with
    ``uniform_(eps - 1, 1)``, keeping ``log1p(-|u|)`` finite)."""

    @property
    def variance(self):
        return 2 * self.scale ** 2

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = tg.finfo(self.loc.dtype).eps
        u = tg.empty(shape, dtype=self.loc.dtype).uniform_(eps - 1, 1)
        return self.loc - self.scale * u.sign() * tg.log1p(-u.abs())

    def log_prob(self, value):
        value = self._checked(value)
        return -tg.log(2 * self.scale) - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        value = self._checked(value)
        d = value - self.loc
        return 0.5 - 0.5 * d.sign() * tg.expm1(-d.abs() / self.scale)

    def icdf(self, value):
        t = value - 0.5
        return self.loc - self.scale * t.sign() * tg.log1p(-2 * t.abs())

    def entropy(self):
        return 1 + tg.log(2 * self.scale)
