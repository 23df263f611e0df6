"""The categorical distribution over ``{0, ..., K-1}``."""
from __future__ import annotations

import tracegrad.eager as tg

from . import constraints
from .distribution import Distribution, alias, lazy_property, probs_to_logits


class Categorical(Distribution):
    """One draw from ``K`` categories, parameterised by ``probs`` (nonnegative, normalised
    here over the last dimension) or ``logits`` (unnormalised log-probabilities), one of
    the two. The last dimension of the parameter indexes the categories; the ones
    before it form the batch. Draws use ``tg.multinomial`` with replacement, one row
    per batch element."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True
    _params = {"probs": 1, "logits": 1}

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            param = self.probs
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
            param = self.logits
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], (), validate_args)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return tg.softmax(self.logits, -1)

    @property
    def param_shape(self):
        return tg.Size(tuple(self._batch_shape) + (self._num_events,))

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self):
        return tg.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return tg.full(self._extended_shape(), float("nan"), dtype=self.probs.dtype)

    def sample(self, sample_shape=()):
        sample_shape = tuple(sample_shape)
        n = 1
        for s in sample_shape:
            n *= int(s)
        with tg.no_grad():
            rows = self.probs.reshape(-1, self._num_events)
            draws = tg.multinomial(rows, n, True).T      # (n, batch elements)
        return draws.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value):
        value = self._checked(value)
        index = value.long().unsqueeze(-1)
        index, logits = tg.broadcast_tensors(index, self.logits)
        return logits.gather(-1, index[..., :1]).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=tg.finfo(self.logits.dtype).min)
        return -(self.probs * logits).sum(-1)

    def enumerate_support(self, expand=True):
        values = tg.arange(self._num_events).reshape(
            (self._num_events,) + (1,) * len(self._batch_shape))
        return values.expand((self._num_events,) + tuple(self._batch_shape)) if expand \
            else values


class OverCategorical:
    """Mixin, listed before ``Distribution`` among the bases, for the distributions built
    on an inner ``Categorical`` over the last dimension of ``probs``/``logits``
    (``self._categorical``), which checks and holds the parameters."""

    arg_constraints = dict(Categorical.arg_constraints)

    def _set_categorical(self, probs, logits, validate_args):
        """Make the inner ``Categorical``; returns the batch shape and the event shape
        ``(K,)``."""
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        return self._categorical.batch_shape, self._categorical.param_shape[-1:]

    def _check_parameters(self):
        pass                    # the inner Categorical has checked them

    probs = alias("_categorical.probs")
    logits = alias("_categorical.logits")
    param_shape = alias("_categorical.param_shape")
