"""The negative binomial distribution."""
from __future__ import annotations

import tracegrad.eager as tg

from ..nn import functional as F
from . import constraints
from .distribution import (
    Distribution,
    batch_param_shape,
    binary_logits,
    binary_probs,
    lazy_property,
    probs_or_logits,
)
from .gamma import Gamma


class NegativeBinomial(Distribution):
    """The number of successes (each with probability ``probs``) before ``total_count``
    failures: ``P(k) = C(k + r - 1, k) p^k (1 - p)^r``.

    A draw is a Poisson draw whose rate is a Gamma(``total_count``, ``(1 - p) / p``)
    draw (the Gamma-Poisson mixture), PyTorch's numbers for the same seed."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer
    _params = {"total_count": 0, "probs": 0, "logits": 0}

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        self.total_count, param = probs_or_logits(self, probs, logits, total_count)
        super().__init__(param.shape, (), validate_args)

    logits = lazy_property(binary_logits)
    probs = lazy_property(binary_probs)
    param_shape = batch_param_shape

    @property
    def mean(self):
        return self.total_count * tg.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * tg.exp(self.logits)).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / tg.sigmoid(-self.logits)

    def sample(self, sample_shape=()):
        with tg.no_grad():
            rate = Gamma(self.total_count, tg.exp(-self.logits),
                         validate_args=False).sample(sample_shape)
            return tg.poisson(rate)

    def log_prob(self, value):
        value = self._checked(value)
        r, logits = self.total_count, self.logits
        weight = r * F.logsigmoid(-logits) + value * F.logsigmoid(logits)
        log_norm = -tg.lgamma(r + value) + tg.lgamma(1.0 + value) + tg.lgamma(r)
        # r + k = 0 only for r = k = 0, where the probability is one
        log_norm = tg.where(r + value == 0, tg.zeros_like(log_norm), log_norm)
        return weight - log_norm
