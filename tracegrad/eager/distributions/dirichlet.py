"""The Dirichlet distribution over the probability simplex."""
from __future__ import annotations

import tracegrad.eager as tg

from ..nn import functional as F
from . import constraints
from ._sampling import dirichlet
from .exp_family import ExponentialFamily


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution with ``concentration`` ``alpha`` (last dimension: the ``K``
    components): density ``prod x_i^(alpha_i - 1) / B(alpha)`` on the simplex.

    Draws normalise independent gamma variates: PyTorch's numbers for the same seed,
    except that for float64 with five or more components the sum may be rounded
    differently from PyTorch's vectorised one (a last-bit difference).
    There is no ``rsample``: this package does not provide a reparameterised gradient
    for Dirichlet draws."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    _params = {"concentration": 1}

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        # the interior maximum (a_i - 1) / (sum - K) where every a_i > 1; components
        # with a_i <= 1 sit on the boundary at 0. Where all a_i <= 1 the density peaks
        # at the vertices: the first one is reported
        excess = (self.concentration - 1).clamp(min=0)
        mode = excess / excess.sum(-1, keepdim=True)
        vertex = F.one_hot(tg.zeros(self._batch_shape, dtype=tg.int64),
                           self._event_shape[0]).to(mode.dtype)
        all_low = (self.concentration < 1).all(-1, keepdim=True)
        return tg.where(all_low, vertex, mode)

    @property
    def variance(self):
        a = self.concentration
        a0 = a.sum(-1, keepdim=True)
        return a * (a0 - a) / (a0 ** 2 * (a0 + 1))

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return dirichlet(self.concentration.expand(shape))

    def log_prob(self, value):
        value = self._checked(value)
        a = self.concentration
        return (tg.xlogy(a - 1.0, value).sum(-1) + tg.lgamma(a.sum(-1))
                - tg.lgamma(a).sum(-1))

    def entropy(self):
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        log_beta = tg.lgamma(a).sum(-1) - tg.lgamma(a0)
        return log_beta + (a0 - k) * tg.digamma(a0) - ((a - 1.0) * tg.digamma(a)).sum(-1)
