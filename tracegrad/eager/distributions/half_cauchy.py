"""The half-Cauchy distribution."""
from __future__ import annotations

import math

import tracegrad.eager as tg

from .cauchy import Cauchy
from .half_normal import _Folded


class HalfCauchy(_Folded):
    """``|X|`` for ``X ~ Cauchy(0, scale)``: density twice the Cauchy's on ``x >= 0``."""

    _family = Cauchy

    @property
    def mean(self):
        return tg.full(self._extended_shape(), math.inf, dtype=self.scale.dtype)

    @property
    def variance(self):
        return tg.full(self._extended_shape(), math.inf, dtype=self.scale.dtype)

    def _as_value(self, value):
        return tg.as_tensor(value, dtype=self.scale.dtype)
