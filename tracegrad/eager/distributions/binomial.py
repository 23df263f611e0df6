"""The binomial distribution."""
from __future__ import annotations

import tracegrad.eager as tg

from . import constraints
from .distribution import (
    Distribution,
    batch_param_shape,
    binary_logits,
    binary_probs,
    lazy_property,
    probs_or_logits,
)


def _log_binomial_coefficient(n, k):
    return tg.lgamma(n + 1) - tg.lgamma(k + 1) - tg.lgamma(n - k + 1)


def _bernoulli_log_weight(k, n, logits):
    """``k * logits - n * softplus(logits)``, i.e. ``k log p + (n - k) log(1 - p)``,
    written so that neither large positive nor large negative logits overflow."""
    return (k * logits.clamp(max=0) - (n - k) * logits.clamp(min=0)
            - n * tg.log1p(tg.exp(-logits.abs())))


class Binomial(Distribution):
    """The number of successes in ``total_count`` independent trials that each succeed
    with probability ``probs`` (or log-odds ``logits``). Draws come from
    ``tg.binomial`` (PyTorch's numbers for the same seed)."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True
    _params = {"total_count": 0, "probs": 0, "logits": 0}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        self.total_count, param = probs_or_logits(self, probs, logits, total_count)
        super().__init__(param.shape, (), validate_args)

    logits = lazy_property(binary_logits)
    probs = lazy_property(binary_probs)
    param_shape = batch_param_shape

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with tg.no_grad():
            return tg.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        value = self._checked(value)
        n = self.total_count
        return _log_binomial_coefficient(n, value) + _bernoulli_log_weight(value, n,
                                                                            self.logits)

    def entropy(self):
        n = int(self.total_count.max()) if self.total_count.numel() else 0
        if not bool((self.total_count == n).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        lp = self.log_prob(self.enumerate_support(False))
        return -(tg.exp(lp) * lp).sum(0)

    def enumerate_support(self, expand=True):
        n = int(self.total_count.max()) if self.total_count.numel() else 0
        if not bool((self.total_count == n).all()):
            raise NotImplementedError(
                "Inhomogeneous total count not supported by `enumerate_support`.")
        values = tg.arange(1 + n, dtype=self.total_count.dtype)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

