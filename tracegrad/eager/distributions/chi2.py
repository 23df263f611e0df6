"""The chi-squared distribution."""
from __future__ import annotations

from . import constraints
from .distribution import broadcast_all
from .gamma import Gamma


class Chi2(Gamma):
    """Chi-squared with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2
