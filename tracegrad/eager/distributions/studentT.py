"""Student's t distribution."""
from __future__ import annotations

import math

import tracegrad.eager as tg

from . import constraints
from .chi2 import Chi2
from .distribution import Distribution, broadcast_all


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, location ``loc`` and scale ``scale``.

    ``rsample`` is ``loc + scale * Y / sqrt(Z / df)`` with ``Y`` a standard normal
    (drawn first) and ``Z`` a chi-squared draw (``Chi2.rsample``): PyTorch's numbers
    for the same seed, with gradients through both."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _params = {"df": 0, "loc": 0, "scale": 0}

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df, validate_args=False)
        super().__init__(self.df.shape, (), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = super().expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self):
        return tg.where(self.df > 1, self.loc.clone(), tg.full_like(self.loc, math.nan))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale ** 2 * df / (df - 2)
        out = tg.where(df > 2, finite, tg.full_like(finite, math.inf))
        return tg.where(df <= 1, tg.full_like(finite, math.nan), out)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        y = tg.randn(shape, dtype=self.df.dtype)
        z = self._chi2.rsample(sample_shape)
        y = y * tg.rsqrt(z / self.df)
        return self.loc + self.scale * y

    def log_prob(self, value):
        value = self._checked(value)
        df = self.df
        y = (value - self.loc) / self.scale
        log_norm = (tg.log(self.scale) + 0.5 * tg.log(df) + 0.5 * math.log(math.pi)
                    + tg.lgamma(0.5 * df) - tg.lgamma(0.5 * (df + 1.0)))
        return -0.5 * (df + 1.0) * tg.log1p(y ** 2 / df) - log_norm

    def entropy(self):
        df = self.df
        log_beta = tg.lgamma(0.5 * df) + math.lgamma(0.5) - tg.lgamma(0.5 * (df + 1))
        return (tg.log(self.scale)
                + 0.5 * (df + 1) * (tg.digamma(0.5 * (df + 1)) - tg.digamma(0.5 * df))
                + 0.5 * tg.log(df) + log_beta)
