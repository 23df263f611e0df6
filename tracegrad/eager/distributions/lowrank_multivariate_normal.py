"""The multivariate normal with a low-rank-plus-diagonal covariance."""
from __future__ import annotations

import math

import tracegrad.eager as tg

from . import constraints
from .distribution import Distribution, alias, lazy_property
from .multivariate_normal import _batch_matrix, _full_scale_tril


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal with covariance ``W W^T + diag(D)`` for ``cov_factor`` ``W``
    (``k x r``) and positive ``cov_diag`` ``D``.

    Densities work through the ``r x r`` capacitance matrix ``C = I + W^T D^-1 W``: by
    the Woodbury identity ``Sigma^-1 = D^-1 - D^-1 W C^-1 W^T D^-1`` and by the matrix
    determinant lemma ``det Sigma = det C prod D``. A draw is ``loc + W e1 + sqrt(D) e2``
    with ``e1`` (``r`` normals) drawn before ``e2`` (``k`` normals), as PyTorch does."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        k = loc.shape[-1]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if cov_factor.shape[-2] != k:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {k} x m")
        if tuple(cov_diag.shape[-1:]) != (k,):
            raise ValueError(f"cov_diag must be a batch of vectors with shape {(k,)}")
        batch = tuple(tg.broadcast_shapes(tuple(loc.shape[:-1]), tuple(cov_factor.shape[:-2]),
                                          tuple(cov_diag.shape[:-1])))
        r = cov_factor.shape[-1]
        self.loc = loc.expand(batch + (k,))
        self.cov_factor = cov_factor.expand(batch + (k, r))
        self.cov_diag = cov_diag.expand(batch + (k,))
        self._w, self._d = cov_factor, cov_diag
        super().__init__(batch, (k,), validate_args)
        self._capacitance_tril = self._capacitance()

    def _capacitance(self):
        w, d = self._w, self._d
        r = w.shape[-1]
        wt_dinv = w.mT / d.unsqueeze(-2)
        cap = tg.eye(r, dtype=w.dtype) + wt_dinv @ w
        return tg.linalg.cholesky(cap)

    def expand(self, batch_shape, _instance=None):
        b = tuple(batch_shape)
        k, r = self._event_shape[0], self.cov_factor.shape[-1]
        new = LowRankMultivariateNormal(self.loc.expand(b + (k,)),
                                        self.cov_factor.expand(b + (k, r)),
                                        self.cov_diag.expand(b + (k,)), validate_args=False)
        new._validate_args = self._validate_args
        return new

    mean = mode = alias("loc")

    @lazy_property
    def variance(self):
        return ((self._w ** 2).sum(-1) + self._d).expand(self._extended_shape())

    @lazy_property
    def _covariance(self):
        return self._w @ self._w.mT + tg.diag_embed(self._d)

    @lazy_property
    def _scale_tril(self):
        return tg.linalg.cholesky(self._covariance)

    _full = _batch_matrix
    scale_tril = lazy_property(_full_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        return self._full(self._covariance)

    @lazy_property
    def precision_matrix(self):
        wt_dinv = self._w.mT / self._d.unsqueeze(-2)
        a = tg.linalg.solve_triangular(self._capacitance_tril, wt_dinv, upper=False)
        return self._full(tg.diag_embed(self._d.reciprocal()) - a.mT @ a)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        r = self.cov_factor.shape[-1]
        eps_w = tg.randn(tuple(shape[:-1]) + (r,), dtype=self.loc.dtype)
        eps_d = tg.randn(shape, dtype=self.loc.dtype)
        return (self.loc + (self._w @ eps_w.unsqueeze(-1)).squeeze(-1)
                + self._d.sqrt() * eps_d)

    def _log_det(self):
        return (2 * tg.log(self._capacitance_tril.diagonal(dim1=-2, dim2=-1)).sum(-1)
                + tg.log(self._d).sum(-1))

    def log_prob(self, value):
        value = self._checked(value)
        k = self._event_shape[0]
        diff = value - self.loc
        dinv_diff = diff / self._d
        wt = (self._w.mT @ dinv_diff.unsqueeze(-1))          # (..., r, 1)
        lc = self._capacitance_tril
        lc = lc.expand(tuple(wt.shape[:-2]) + tuple(lc.shape[-2:]))
        v = tg.linalg.solve_triangular(lc, wt, upper=False).squeeze(-1)
        maha = (diff * dinv_diff).sum(-1) - (v ** 2).sum(-1)
        return -0.5 * (k * math.log(2 * math.pi) + self._log_det() + maha)

    def entropy(self):
        k = self._event_shape[0]
        h = 0.5 * (k * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return h.expand(self._batch_shape)

    def __repr__(self):
        return f"LowRankMultivariateNormal(loc: {self.loc.shape})"
