"""The gamma distribution."""
from __future__ import annotations

import tracegrad.eager as tg

from . import constraints
from ._sampling import standard_gamma_rsample
from .distribution import broadcast_all
from .exp_family import ExponentialFamily


class Gamma(ExponentialFamily):
    """Gamma distribution with shape ``concentration`` and inverse scale ``rate``:
    density ``rate^a x^(a-1) exp(-rate x) / Gamma(a)`` on ``x > 0``.

    Draws are Marsaglia and Tsang's gamma variates (PyTorch's numbers for the same
    seed) divided by ``rate``. ``rsample`` differentiates them exactly: by ``rate``
    directly, by ``concentration`` through the implicit function theorem applied to the
    CDF (see ``_sampling``)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _params = {"concentration": 0, "rate": 0}

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, (), validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate ** 2

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = standard_gamma_rsample(self.concentration.expand(shape)) / self.rate.expand(shape)
        return x.clamp(min=tg.finfo(x.dtype).tiny)

    def log_prob(self, value):
        value = self._checked(value)
        a, b = self.concentration, self.rate
        return tg.xlogy(a, b) + tg.xlogy(a - 1, value) - b * value - tg.lgamma(a)

    def entropy(self):
        a = self.concentration
        return a - tg.log(self.rate) + tg.lgamma(a) + (1.0 - a) * tg.digamma(a)
