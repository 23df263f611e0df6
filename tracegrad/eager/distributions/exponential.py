"""The exponential distribution."""
from __future__ import annotations

import tracegrad.eager as tg

from . import constraints
from .distribution import broadcast_all
from .exp_family import ExponentialFamily


class Exponential(ExponentialFamily):
    """Exponential distribution with ``rate`` (density ``rate * exp(-rate x)``, x >= 0).

    ``rsample`` is a unit-rate exponential draw (``Tensor.exponential_``) divided by
    ``rate``."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _params = {"rate": 0}

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, (), validate_args)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return tg.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate ** -2

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        e = tg.empty(shape, dtype=self.rate.dtype).exponential_()
        return e / self.rate

    def log_prob(self, value):
        value = self._checked(value)
        return tg.log(self.rate) - self.rate * value

    def cdf(self, value):
        value = self._checked(value)
        return 1 - tg.exp(-self.rate * value)

    def icdf(self, value):
        return -tg.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - tg.log(self.rate)
