"""The Pareto (type I) distribution."""
from __future__ import annotations

import tracegrad.eager as tg

from . import constraints
from .distribution import broadcast_all
from .exponential import Exponential
from .half_normal import _rebuild
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform


class Pareto(TransformedDistribution):
    """Pareto distribution with ``scale`` ``x_m`` and shape ``alpha``: density ``alpha
    x_m^alpha / x^(alpha + 1)`` on ``x >= x_m``; it is ``x_m exp(E)`` for ``E ~
    Exponential(alpha)``."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base = Exponential(self.alpha, validate_args=validate_args)
        super().__init__(base, [ExpTransform(), AffineTransform(0, self.scale)],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _rebuild(self, self.scale.expand(batch_shape), self.alpha.expand(batch_shape))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)       # infinite for alpha <= 1
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)       # infinite for alpha <= 2
        return self.scale ** 2 * a / ((a - 1) ** 2 * (a - 2))

    def cdf(self, value):
        value = self._checked(value)
        return 1 - (self.scale / value) ** self.alpha

    def icdf(self, value):
        return self.scale * (1 - value) ** (-1 / self.alpha)

    def entropy(self):
        return tg.log(self.scale / self.alpha) + self.alpha.reciprocal() + 1
