"""The relaxed (Concrete / Gumbel-sigmoid) Bernoulli distribution."""
from __future__ import annotations

import math

import tracegrad.eager as tg

from ..nn import functional as F
from . import constraints
from .distribution import (
    Distribution,
    alias,
    batch_param_shape,
    binary_logits,
    binary_probs,
    clamp_probs,
    lazy_property,
    probs_or_logits,
)
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform


class LogitRelaxedBernoulli(Distribution):
    """The logit of a relaxed Bernoulli draw: ``(logit(u) + logits) / temperature`` for a
    uniform ``u`` (from ``rand``, clamped to ``[eps, 1 - eps]``), a logistic variable
    centred on the log-odds and shrunk by ``temperature``."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True
    _params = {"probs": 0, "logits": 0}

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        (param,) = probs_or_logits(self, probs, logits)
        super().__init__(param.shape, (), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape)
        new.temperature = self.temperature
        return new

    logits = lazy_property(binary_logits)
    probs = lazy_property(binary_probs)
    param_shape = batch_param_shape

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        p = clamp_probs(self.probs)
        u = clamp_probs(tg.rand(shape, dtype=p.dtype))
        return (tg.log(u) - tg.log1p(-u) + tg.log(p) - tg.log1p(-p)) / self.temperature

    def log_prob(self, value):
        value = self._checked(value)
        logits, value = tg.broadcast_tensors(self.logits, value)
        diff = logits - value * self.temperature
        t = self.temperature
        log_t = tg.log(t) if isinstance(t, tg.Tensor) else math.log(t)
        return log_t + diff - 2 * F.softplus(diff)


class RelaxedBernoulli(TransformedDistribution):
    """A continuous relaxation of ``Bernoulli`` on ``[0, 1]``: the sigmoid of a
    ``LogitRelaxedBernoulli`` draw. Low ``temperature`` pushes draws towards 0 and 1.
    Draws (and ``rsample`` gradients) match PyTorch's for the same seed."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def _check_parameters(self):
        pass                    # the base distribution has checked them

    temperature = alias("base_dist.temperature")
    logits = alias("base_dist.logits")
    probs = alias("base_dist.probs")
