"""The categorical distribution with one-hot encoded values."""
from __future__ import annotations

import tracegrad.eager as tg

from ..nn import functional as F
from . import constraints
from .categorical import OverCategorical
from .distribution import Distribution


class OneHotCategorical(OverCategorical, Distribution):
    """``Categorical`` whose values are one-hot vectors of length ``K`` (event shape
    ``(K,)``) instead of indices. Everything is delegated to an inner ``Categorical``."""

    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        super().__init__(*self._set_categorical(probs, logits, validate_args), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(
            batch_shape, _categorical=self._categorical.expand(batch_shape))

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        return F.one_hot(self.probs.argmax(-1), self._event_shape[0]).to(self.probs.dtype)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        index = self._categorical.sample(sample_shape)
        return F.one_hot(index, self._event_shape[0]).to(self.probs.dtype)

    def log_prob(self, value):
        value = self._checked(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        k = self._event_shape[0]
        values = tg.eye(k, dtype=self.probs.dtype).reshape(
            (k,) + (1,) * len(self._batch_shape) + (k,))
        return values.expand((k,) + tuple(self._batch_shape) + (k,)) if expand else values

    def __repr__(self):
        return f"OneHotCategorical(probs: {self.probs.shape})"


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """``OneHotCategorical`` with a straight-through gradient: ``rsample`` returns the
    one-hot draw in value, but differentiates as ``probs`` (``draw + probs -
    probs.detach()``)."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        draw = self.sample(sample_shape)
        probs = self.probs
        return draw + (probs - probs.detach())
