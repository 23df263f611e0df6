"""Distributions of transformed random variables."""
from __future__ import annotations

import tracegrad.eager as tg

from . import constraints
from .distribution import Distribution, sum_rightmost
from .transforms import ComposeTransform, Transform


class TransformedDistribution(Distribution):
    """The distribution of ``y = t_n(... t_1(x))`` for ``x`` drawn from
    ``base_distribution`` and the given ``transforms`` (one or a list).

    ``log_prob(y)`` is the change-of-variables formula: invert the transforms one by one,
    subtracting each ``log |det J|``, and add the base density of the recovered ``x``.
    Draws are the base draws pushed through the transforms (``rsample`` when the base
    has one)."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        if isinstance(transforms, Transform):
            transforms = [transforms]
        transforms = list(transforms)
        if not all(isinstance(t, Transform) for t in transforms):
            raise ValueError("transforms must be a Transform or a list of Transforms")
        self.base_dist = base_distribution
        self.transforms = transforms
        chain = ComposeTransform(transforms)
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        shape = tuple(chain.forward_shape(shape))
        event_dim = max(chain.codomain.event_dim, len(base_distribution.event_shape))
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args)

    def expand(self, batch_shape, _instance=None):
        extra = len(self._event_shape) - len(self.base_dist.event_shape)
        base_batch = tuple(batch_shape) + tuple(self._event_shape[:extra]) if extra > 0 \
            else tuple(batch_shape)
        return self._expanded(batch_shape, _instance,
                              base_dist=self.base_dist.expand(base_batch),
                              transforms=self.transforms)

    @constraints.dependent_property
    def support(self):
        if not self.transforms:
            return self.base_dist.support
        cod = self.transforms[-1].codomain
        extra = len(self._event_shape) - cod.event_dim
        return constraints.independent(cod, extra) if extra > 0 else cod

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def sample(self, sample_shape=()):
        with tg.no_grad():
            x = self.base_dist.sample(sample_shape)
            for t in self.transforms:
                x = t(x)
            return x

    def rsample(self, sample_shape=()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        y = self._checked(value)
        event_dim = len(self._event_shape)
        total = 0.0
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            total = total - sum_rightmost(t.log_abs_det_jacobian(x, y),
                                          event_dim - t.domain.event_dim)
            y = x
        base = sum_rightmost(self.base_dist.log_prob(y),
                             event_dim - len(self.base_dist.event_shape))
        return base + total
