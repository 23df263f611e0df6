"""The Poisson distribution."""
from __future__ import annotations

import tracegrad.eager as tg

from . import constraints
from .distribution import broadcast_all
from .exp_family import ExponentialFamily


class Poisson(ExponentialFamily):
    """Poisson distribution with ``rate`` ``lambda >= 0``: ``P(k) = lambda^k e^-lambda /
    k!``. Draws come from ``tg.poisson`` (PyTorch's numbers for the same seed)."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer
    _params = {"rate": 0}

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, (), validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with tg.no_grad():
            return tg.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        value = self._checked(value)
        rate, value = tg.broadcast_tensors(self.rate, value.to(self.rate.dtype))
        return tg.xlogy(value, rate) - rate - tg.lgamma(value + 1)

    @property
    def _natural_params(self):
        return (tg.log(self.rate),)

    def _log_normalizer(self, x):
        return tg.exp(x)
