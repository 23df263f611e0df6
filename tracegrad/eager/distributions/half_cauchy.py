"""The half-Cauchy distribution."""
from __future__ import annotations

import math

import tracegrad.eager as tg

from . import constraints
from .cauchy import Cauchy
from .half_normal import _rebuild
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform


class HalfCauchy(TransformedDistribution):
    """``|X|`` for ``X ~ Cauchy(0, scale)``: density twice the Cauchy's on ``x >= 0``."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _rebuild(self, self.scale.expand(batch_shape))

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return tg.full(self._extended_shape(), math.inf, dtype=self.scale.dtype)

    @property
    def mode(self):
        return tg.zeros_like(self.scale)

    @property
    def variance(self):
        return tg.full(self._extended_shape(), math.inf, dtype=self.scale.dtype)

    def log_prob(self, value):
        value = self._checked(value)
        value = tg.as_tensor(value, dtype=self.scale.dtype)
        lp = self.base_dist.log_prob(value) + math.log(2)
        return tg.where(value >= 0, lp, tg.full_like(lp, -math.inf))

    def cdf(self, value):
        value = self._checked(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
