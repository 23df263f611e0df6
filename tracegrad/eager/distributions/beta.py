"""The beta distribution on [0, 1]."""
from __future__ import annotations

import numbers

import tracegrad.eager as tg

from . import constraints
from .dirichlet import Dirichlet
from .distribution import broadcast_all
from .exp_family import ExponentialFamily


class Beta(ExponentialFamily):
    """Beta distribution with ``concentration1`` (``a``, the exponent of ``x``) and
    ``concentration0`` (``b``, of ``1 - x``): density ``x^(a-1) (1-x)^(b-1) / B(a, b)``.

    It is the first coordinate of ``Dirichlet([a, b])``; draws come from that Dirichlet
    (PyTorch's numbers for the same seed). No ``rsample``, as for ``Dirichlet``."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    _params = {"concentration1": 0, "concentration0": 0}

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, numbers.Real) and \
                isinstance(concentration0, numbers.Real):
            concentration1 = tg.tensor(float(concentration1))
            concentration0 = tg.tensor(float(concentration0))
        self.concentration1, self.concentration0 = broadcast_all(concentration1,
                                                                 concentration0)
        super().__init__(self.concentration1.shape, (), validate_args)

    def _pair(self):
        return Dirichlet(tg.stack([self.concentration1, self.concentration0], -1),
                         validate_args=False)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._pair().mode[..., 0]

    @property
    def variance(self):
        a, b = self.concentration1, self.concentration0
        total = a + b
        return a * b / (total ** 2 * (total + 1))

    def sample(self, sample_shape=()):
        return self._pair().sample(sample_shape)[..., 0]

    def log_prob(self, value):
        value = self._checked(value)
        a, b = self.concentration1, self.concentration0
        log_beta = tg.lgamma(a) + tg.lgamma(b) - tg.lgamma(a + b)
        return tg.xlogy(a - 1, value) + tg.xlogy(b - 1, 1 - value) - log_beta

    def entropy(self):
        a, b = self.concentration1, self.concentration0
        log_beta = tg.lgamma(a) + tg.lgamma(b) - tg.lgamma(a + b)
        return (log_beta - (a - 1) * tg.digamma(a) - (b - 1) * tg.digamma(b)
                + (a + b - 2) * tg.digamma(a + b))
