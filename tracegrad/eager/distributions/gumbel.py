"""The Gumbel (type I extreme value) distribution."""
from __future__ import annotations

import math

import tracegrad.eager as tg

from . import constraints
from .distribution import broadcast_all
from .half_normal import _rebuild
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .uniform import Uniform

_EULER_GAMMA = 0.5772156649015329


class Gumbel(TransformedDistribution):
    """Gumbel distribution: ``loc - scale * log(-log U)`` for ``U`` uniform on
    ``[tiny, 1 - eps)``, built as a ``TransformedDistribution`` of that uniform (so the
    draws are PyTorch's for the same seed)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        fi = tg.finfo(self.loc.dtype)
        base = Uniform(tg.full_like(self.loc, fi.tiny), tg.full_like(self.loc, 1 - fi.eps),
                       validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(0, -tg.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(self.loc, -self.scale)]
        super().__init__(base, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _rebuild(self, self.loc.expand(batch_shape), self.scale.expand(batch_shape))

    def log_prob(self, value):
        value = self._checked(value)
        z = (self.loc - value) / self.scale
        return (z - tg.exp(z)) - tg.log(self.scale)

    def cdf(self, value):
        value = self._checked(value)
        return tg.exp(-tg.exp(-(value - self.loc) / self.scale))

    def icdf(self, value):
        return self.loc - self.scale * tg.log(-tg.log(value))

    @property
    def mean(self):
        return self.loc + self.scale * _EULER_GAMMA

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev ** 2

    def entropy(self):
        return tg.log(self.scale) + (1 + _EULER_GAMMA)
