"""The relaxed (Concrete / Gumbel-softmax) one-hot categorical distribution."""
from __future__ import annotations

import math

import tracegrad.eager as tg

from . import constraints
from .categorical import OverCategorical
from .distribution import Distribution, alias, clamp_probs
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform


class ExpRelaxedCategorical(OverCategorical, Distribution):
    """The logarithm of a relaxed one-hot categorical draw: ``log_softmax((logits + G) /
    temperature)`` with ``G`` standard Gumbel noise ``-log(-log u)`` (``u`` from
    ``rand``, clamped to ``[eps, 1 - eps]``). Its density is the ExpConcrete density of
    Maddison, Mnih and Teh (2017)."""

    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        batch, event = self._set_categorical(probs, logits, validate_args)
        self.temperature = temperature
        super().__init__(batch, event, validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expanded(
            batch_shape, temperature=self.temperature,
            _categorical=self._categorical.expand(batch_shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(tg.rand(shape, dtype=self.logits.dtype))
        gumbels = -tg.log(-tg.log(u))
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value):
        value = self._checked(value)
        k = self._event_shape[0]
        t = self.temperature
        log_t = tg.log(t) if isinstance(t, tg.Tensor) else math.log(t)
        log_scale = math.lgamma(k) + (k - 1) * log_t
        logits, value = tg.broadcast_tensors(self.logits, value)
        score = logits - value * t
        return (score - score.logsumexp(-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """A continuous relaxation of ``OneHotCategorical`` on the simplex: ``softmax((logits
    + G) / temperature)`` with Gumbel noise ``G``, the exponential of an
    ``ExpRelaxedCategorical`` draw. Draws match PyTorch's for the same seed."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def _check_parameters(self):
        pass                    # the base distribution has checked them

    temperature = alias("base_dist.temperature")
    logits = alias("base_dist.logits")
    probs = alias("base_dist.probs")
