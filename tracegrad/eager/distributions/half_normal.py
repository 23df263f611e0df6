"""The half-normal distribution, and what it shares with the half-Cauchy."""
from __future__ import annotations

import math

import tracegrad.eager as tg

from . import constraints
from .distribution import alias
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform


class _Folded(TransformedDistribution):
    """``|X|`` for ``X ~ _family(0, scale)``, a location-scale family symmetric about
    zero: its density is twice the family's on ``x >= 0``."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _family: type               # set by each subclass

    def __init__(self, scale, validate_args=None):
        super().__init__(self._family(0, scale, validate_args=False), AbsTransform(),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _rebuild(self, self.scale.expand(batch_shape))

    scale = alias("base_dist.scale")

    @property
    def mode(self):
        return tg.zeros_like(self.scale)

    def _as_value(self, value):
        return value

    def log_prob(self, value):
        value = self._as_value(self._checked(value))
        lp = self.base_dist.log_prob(value) + math.log(2)
        return tg.where(value >= 0, lp, tg.full_like(lp, -math.inf))

    def cdf(self, value):
        value = self._checked(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_Folded):
    """``|X|`` for ``X ~ Normal(0, scale)``: density twice the normal's on ``x >= 0``."""

    _family = Normal

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale ** 2 * (1 - 2 / math.pi)


def _rebuild(dist, *params):
    """``dist``'s class made again from (expanded) ``params``, keeping its validation
    setting without re-checking."""
    new = type(dist)(*params, validate_args=False)
    new._validate_args = dist._validate_args
    return new
