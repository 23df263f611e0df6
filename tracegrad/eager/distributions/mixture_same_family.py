"""Mixtures whose components all come from one family."""
from __future__ import annotations

import tracegrad.eager as tg

from . import constraints
from .categorical import Categorical
from .distribution import Distribution


class MixtureSameFamily(Distribution):
    """A mixture of the components along the rightmost batch dimension of
    ``component_distribution``, weighted by the ``Categorical`` ``mixture_distribution``.

    ``log_prob`` is ``logsumexp`` over components of the component log densities plus
    the log weights. A draw picks a component (the categorical draw comes first) and
    returns that component's draw out of a draw of every component, as PyTorch does, so
    the numbers match PyTorch's for the same seed. There is no ``rsample``."""

    arg_constraints: dict = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution need to be an instance of "
                             "torch.distributions.Distribution")
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        mix_batch = tuple(mixture_distribution.batch_shape)
        comp_batch = tuple(component_distribution.batch_shape)
        if len(comp_batch) < 1 or comp_batch[:-1] != mix_batch:
            raise ValueError(
                f"`mixture_distribution.batch_shape` ({mixture_distribution.batch_shape}) "
                f"is not compatible with `component_distribution.batch_shape`"
                f"({component_distribution.batch_shape})")
        k = mixture_distribution.logits.shape[-1]
        if k != comp_batch[-1]:
            raise ValueError(f"`mixture_distribution component` ({k}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({comp_batch[-1]})")
        self._num_component = k
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(comp_batch[:-1], component_distribution.event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        b = tuple(batch_shape)
        new = MixtureSameFamily(self._mixture_distribution.expand(b),
                                self._component_distribution.expand(b + (self._num_component,)),
                                validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        return self._component_distribution.support

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    def _pad(self, x):
        """``x`` with a component dimension of size one before the event dimensions."""
        return x.unsqueeze(-1 - self._event_ndims)

    def _weights(self):
        p = self._mixture_distribution.probs
        return p.reshape(tuple(p.shape) + (1,) * self._event_ndims)

    @property
    def mean(self):
        return (self._weights() * self._component_distribution.mean).sum(
            -1 - self._event_ndims)

    @property
    def variance(self):
        w, comp = self._weights(), self._component_distribution
        d = -1 - self._event_ndims
        within = (w * comp.variance).sum(d)
        between = (w * (comp.mean - self._pad(self.mean)) ** 2).sum(d)
        return within + between

    def cdf(self, x):
        x = self._pad(x)
        return (self._component_distribution.cdf(x) * self._mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        lp = self._component_distribution.log_prob(self._pad(x))
        log_w = tg.log_softmax(self._mixture_distribution.logits, -1)
        return (lp + log_w).logsumexp(-1)

    def sample(self, sample_shape=()):
        with tg.no_grad():
            sample_shape = tuple(sample_shape)
            index = self._mixture_distribution.sample(sample_shape)
            draws = self._component_distribution.sample(sample_shape)
            e = self._event_ndims
            index = index.reshape(tuple(index.shape) + (1,) * (e + 1))
            index = index.expand(tuple(index.shape[:index.dim() - e])
                                 + tuple(self._event_shape))
            return draws.gather(-1 - e, index).squeeze(-1 - e)

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self._mixture_distribution!r},\n  "
                f"{self._component_distribution!r})")
