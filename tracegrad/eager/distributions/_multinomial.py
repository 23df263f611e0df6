"""The multinomial distribution (importable as ``tracegrad.distributions.multinomial``)."""
from __future__ import annotations

import math

import tracegrad.eager as tg

from ..nn import functional as F
from . import constraints
from .categorical import OverCategorical
from .distribution import Distribution


class Multinomial(OverCategorical, Distribution):
    """The counts in each of ``K`` categories after ``total_count`` independent
    categorical draws with ``probs`` (or ``logits``) over the last dimension.

    A draw makes ``total_count`` categorical draws (PyTorch's numbers for the same seed)
    and counts them. ``log_prob`` does not need ``total_count``: it reads the number of
    trials off the value."""


    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        super().__init__(*self._set_categorical(probs, logits, validate_args), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(
            batch_shape, total_count=self.total_count,
            _categorical=self._categorical.expand(batch_shape))

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        n, k = self.total_count, self._event_shape[0]
        draws = self._categorical.sample((n,) + tuple(sample_shape))
        return F.one_hot(draws, k).to(self.probs.dtype).sum(0)

    def log_prob(self, value):
        value = self._checked(value)
        logits, value = tg.broadcast_tensors(self.logits, value.to(self.logits.dtype))
        # a category with probability zero and count zero contributes nothing
        logits = tg.where((value == 0) & (logits == -math.inf), tg.zeros_like(logits),
                          logits)
        return (tg.lgamma(value.sum(-1) + 1) - tg.lgamma(value + 1).sum(-1)
                + (logits * value).sum(-1))

    def entropy(self):
        # H = -log n! + sum_i E[log X_i!] - n sum_i p_i log p_i, X_i ~ Binomial(n, p_i)
        n = self.total_count
        p = self.probs
        k = tg.arange(n + 1, dtype=p.dtype).reshape((-1,) + (1,) * p.dim())
        logits = self._categorical.logits.clamp(min=tg.finfo(p.dtype).min)
        from .binomial import _bernoulli_log_weight, _log_binomial_coefficient
        binary = logits - tg.log1p(-p.clamp(max=1 - tg.finfo(p.dtype).eps))   # log-odds
        n_t = tg.tensor(float(n), dtype=p.dtype)
        pmf = tg.exp(_log_binomial_coefficient(n_t, k) + _bernoulli_log_weight(k, n_t, binary))
        expected_log_fact = (pmf * tg.lgamma(k + 1)).sum(0).sum(-1)
        return -math.lgamma(n + 1) + expected_log_fact - n * (p * logits).sum(-1)
