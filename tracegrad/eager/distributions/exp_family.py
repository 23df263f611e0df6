"""The base class of exponential families, ``p(x) = h(x) exp(<eta, T(x)> - F(eta))``."""
from __future__ import annotations

import tracegrad.eager as tg

from .distribution import Distribution


class ExponentialFamily(Distribution):
    """A distribution in the exponential family. Subclasses that give their natural
    parameters ``_natural_params`` (a tuple of tensors), the log-normaliser
    ``_log_normalizer(*eta)`` and ``_mean_carrier_measure`` (``E[log h(X)]``) get
    ``entropy`` from the Bregman identity ``H = F(eta) - <eta, grad F(eta)> - E[log
    h(X)]``, and ``kl_divergence`` between two members of the same family (the
    Bregman divergence of ``F``)."""

    @property
    def _natural_params(self):
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        raise NotImplementedError

    def entropy(self):
        result = -self._mean_carrier_measure
        eta = [p.detach().requires_grad_() for p in self._natural_params]
        with tg.enable_grad():
            log_norm = self._log_normalizer(*eta)
            grads = tg.autograd.grad(log_norm.sum(), eta, create_graph=True)
        result = result + log_norm
        for e, g in zip(eta, grads):
            result = result - (e * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
