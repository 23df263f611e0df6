"""Reinterpreting batch dimensions of a distribution as event dimensions."""
from __future__ import annotations

from . import constraints
from .distribution import Distribution, sum_rightmost


class Independent(Distribution):
    """``base_distribution`` with its rightmost ``reinterpreted_batch_ndims`` batch
    dimensions moved into the event: e.g. a batch of 3 normals becomes one
    3-dimensional diagonal normal whose ``log_prob`` sums the three."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution, reinterpreted_batch_ndims, validate_args=None):
        n = int(reinterpreted_batch_ndims)
        batch = tuple(base_distribution.batch_shape)
        if n > len(batch):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution."
                             f"batch_shape), actual {n} vs {len(batch)}")
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        cut = len(batch) - n
        super().__init__(batch[:cut], batch[cut:] + tuple(base_distribution.event_shape),
                         validate_args)

    def expand(self, batch_shape, _instance=None):
        extra = tuple(self._event_shape[:self.reinterpreted_batch_ndims])
        return Independent(self.base_dist.expand(tuple(batch_shape) + extra),
                           self.reinterpreted_batch_ndims, validate_args=False)

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self):
        return False

    @constraints.dependent_property
    def support(self):
        base = self.base_dist.support
        return constraints.independent(base, self.reinterpreted_batch_ndims) \
            if self.reinterpreted_batch_ndims else base

    @property
    def mean(self):
        return self.base_dist.mean

    @property
    def mode(self):
        return self.base_dist.mode

    @property
    def variance(self):
        return self.base_dist.variance

    def sample(self, sample_shape=()):
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()):
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value):
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self):
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self):
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"


