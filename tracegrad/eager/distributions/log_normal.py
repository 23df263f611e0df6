"""The log-normal distribution."""
from __future__ import annotations

import tracegrad.eager as tg

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform


class LogNormal(TransformedDistribution):
    """``exp(X)`` for ``X ~ Normal(loc, scale)``: a ``TransformedDistribution`` of a
    ``Normal`` by ``ExpTransform``, with the closed-form moments and entropy."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(),
                         validate_args=validate_args)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return tg.exp(self.loc + self.scale ** 2 / 2)

    @property
    def mode(self):
        return tg.exp(self.loc - self.scale ** 2)

    @property
    def variance(self):
        s2 = self.scale ** 2
        return tg.expm1(s2) * tg.exp(2 * self.loc + s2)

    def entropy(self):
        return self.base_dist.entropy() + self.loc
