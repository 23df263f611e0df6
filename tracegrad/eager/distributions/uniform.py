"""The continuous uniform distribution on ``[low, high)``."""
from __future__ import annotations

import tracegrad.eager as tg

from . import constraints
from .distribution import Distribution, broadcast_all


class Uniform(Distribution):
    """Uniform distribution on the half-open interval ``[low, high)``; draws are
    ``low + rand * (high - low)``."""

    has_rsample = True
    _params = {"low": 0, "high": 0}

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, (), validate_args)

    @property
    def arg_constraints(self):
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return tg.full_like(self.high, float("nan"))

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = tg.rand(shape, dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        value = self._checked(value)
        inside = ((self.low <= value) & (self.high > value)).to(self.low.dtype)
        return tg.log(inside) - tg.log(self.high - self.low)

    def cdf(self, value):
        value = self._checked(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return self.low + value * (self.high - self.low)

    def entropy(self):
        return tg.log(self.high - self.low)

