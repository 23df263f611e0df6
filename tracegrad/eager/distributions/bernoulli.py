"""The Bernoulli distribution over {0, 1}."""
from __future__ import annotations

import tracegrad.eager as tg

from ..nn import functional as F
from . import constraints
from .distribution import (
    batch_param_shape,
    binary_logits,
    binary_probs,
    lazy_property,
    probs_or_logits,
)
from .exp_family import ExponentialFamily


class Bernoulli(ExponentialFamily):
    """One coin flip, parameterised by ``probs`` (of 1) or ``logits`` (its log-odds), one
    of the two. Densities are computed from the logits (``x * l - softplus(l)``), which
    stays accurate for probabilities near 0 or 1; draws compare a uniform with
    ``probs`` (``tg.bernoulli``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _params = {"probs": 0, "logits": 0}

    def __init__(self, probs=None, logits=None, validate_args=None):
        (param,) = probs_or_logits(self, probs, logits)
        super().__init__(param.shape, (), validate_args)

    logits = lazy_property(binary_logits)
    probs = lazy_property(binary_probs)
    param_shape = batch_param_shape

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        p = self.probs
        m = (p >= 0.5).to(p.dtype)
        return tg.where(p == 0.5, tg.full_like(p, float("nan")), m)    # a tie has no mode

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with tg.no_grad():
            return tg.bernoulli(self.probs.expand(shape))

    def log_prob(self, value):
        value = self._checked(value)
        logits, value = tg.broadcast_tensors(self.logits, value.to(self.logits.dtype))
        return value * logits - F.softplus(logits)

    def entropy(self):
        return F.softplus(self.logits) - self.probs * self.logits

    def enumerate_support(self, expand=True):
        values = tg.arange(2, dtype=self.probs.dtype if "probs" in self.__dict__
                           else self.logits.dtype)
        values = values.reshape((2,) + (1,) * len(self._batch_shape))
        return values.expand((2,) + tuple(self._batch_shape)) if expand else values
