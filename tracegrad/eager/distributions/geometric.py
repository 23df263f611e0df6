"""The geometric distribution."""
from __future__ import annotations

import tracegrad.eager as tg

from ..nn import functional as F
from . import constraints
from .distribution import (
    Distribution,
    binary_logits,
    binary_probs,
    lazy_property,
    probs_or_logits,
)


class Geometric(Distribution):
    """The number of failures before the first success in trials that each succeed with
    probability ``probs`` (or log-odds ``logits``): ``P(k) = (1 - p)^k p``.

    A draw is ``floor(log u / log(1 - p))`` for a uniform ``u`` from ``rand`` (kept
    above the smallest normal number), the inverse of the survival function."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer
    _params = {"probs": 0, "logits": 0}

    def __init__(self, probs=None, logits=None, validate_args=None):
        (param,) = probs_or_logits(self, probs, logits)
        super().__init__(param.shape, (), validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise ValueError(
                f"Expected parameter probs ({type(self.probs).__name__} of shape "
                f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive but "
                f"found invalid values:\n{self.probs}")

    logits = lazy_property(binary_logits)
    probs = lazy_property(binary_probs)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return tg.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with tg.no_grad():
            p = self.probs
            u = tg.rand(shape, dtype=p.dtype).clamp(min=tg.finfo(p.dtype).tiny)
            return (tg.log(u) / tg.log1p(-p)).floor()

    def log_prob(self, value):
        value = self._checked(value)
        value, p = tg.broadcast_tensors(value.to(self.probs.dtype), self.probs)
        # p = 1 puts all mass on 0: keep 0 * log(0) at 0
        q = tg.where((p == 1) & (value == 0), tg.zeros_like(p), p)
        return value * tg.log1p(-q) + tg.log(p)

    def entropy(self):
        # binary entropy of one trial times the expected number of trials
        return (F.softplus(self.logits) - self.probs * self.logits) / self.probs
