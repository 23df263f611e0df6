"""The two-parameter Weibull distribution."""
from __future__ import annotations

import tracegrad.eager as tg

from . import constraints
from .distribution import broadcast_all
from .exponential import Exponential
from .half_normal import _rebuild
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform

_EULER_GAMMA = 0.5772156649015329


class Weibull(TransformedDistribution):
    """Weibull distribution: ``scale * E^(1 / concentration)`` for ``E`` a unit
    exponential, density ``(k / s) (x / s)^(k - 1) exp(-(x / s)^k)`` on ``x > 0``."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(tg.ones_like(self.scale), validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration_reciprocal),
                      AffineTransform(0, self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _rebuild(self, self.scale.expand(batch_shape),
                        self.concentration.expand(batch_shape))

    @property
    def mean(self):
        return self.scale * tg.exp(tg.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self):
        r = self.concentration_reciprocal
        return self.scale ** 2 * (tg.exp(tg.lgamma(1 + 2 * r))
                                  - tg.exp(2 * tg.lgamma(1 + r)))

    def entropy(self):
        return (_EULER_GAMMA * (1 - self.concentration_reciprocal)
                + tg.log(self.scale * self.concentration_reciprocal) + 1)
