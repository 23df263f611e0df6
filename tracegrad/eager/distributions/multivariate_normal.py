"""The multivariate normal distribution."""
from __future__ import annotations

import math

import tracegrad.eager as tg

from . import constraints
from .distribution import Distribution, alias, lazy_property


def _tril_from_precision(precision):
    """A lower-triangular ``L`` with ``L L^T = precision^-1``.

    With ``J`` the matrix reversing the order of rows, ``J P J = C C^T`` (Cholesky), so
    ``P^-1 = (J C^-T J)(J C^-T J)^T``; ``J C^-T J`` is lower triangular because
    ``C^-T`` is upper triangular and reversing both rows and columns swaps the two."""
    c = tg.linalg.cholesky(precision.flip(-2, -1))
    eye = tg.eye(precision.shape[-1], dtype=precision.dtype).expand(c.shape)
    c_inv = tg.linalg.solve_triangular(c, eye, upper=False)
    return c_inv.mT.flip(-2, -1)


def _batch_matrix(dist, m):
    """``m`` (a ``k x k`` matrix or a batch of them) expanded to ``dist``'s full batch
    shape: what the matrix properties of the multivariate normals return."""
    k = dist._event_shape[0]
    return m.expand(tuple(dist._batch_shape) + (k, k))


def _full_scale_tril(dist):
    return _batch_matrix(dist, dist._scale_tril)


class MultivariateNormal(Distribution):
    """Normal distribution over vectors with mean ``loc`` and a covariance given by
    exactly one of ``covariance_matrix``, ``precision_matrix`` (its inverse) or
    ``scale_tril`` (its lower Cholesky factor ``L``: covariance ``L L^T``).

    Everything is computed from ``L``: ``rsample`` is ``loc + L eps`` with ``eps`` from
    ``randn``, and densities use a triangular solve with ``L``."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True
    _params = {"loc": 1, "_scale_tril": 2}

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        matrix = next(m for m in (covariance_matrix, precision_matrix, scale_tril)
                      if m is not None)
        if matrix.dim() < 2:
            raise ValueError("the covariance, precision or scale_tril matrix must be at "
                             "least two-dimensional, with optional leading batch dimensions")
        batch = tuple(tg.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1])))
        k = loc.shape[-1]
        self.loc = loc.expand(batch + (k,))
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(batch + (k, k))
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(batch + (k, k))
        else:
            self.precision_matrix = precision_matrix.expand(batch + (k, k))
        super().__init__(batch, (k,), validate_args)      # checks the matrix first
        if scale_tril is not None:
            self._scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._scale_tril = tg.linalg.cholesky(covariance_matrix)
        else:
            self._scale_tril = _tril_from_precision(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        k = self._event_shape[0]
        return self._expanded(batch_shape, loc=self.loc.expand(tuple(batch_shape) + (k,)),
                              _scale_tril=self._scale_tril)

    _full = _batch_matrix
    scale_tril = lazy_property(_full_scale_tril)

    @lazy_property
    def covariance_matrix(self):
        return self._full(self._scale_tril @ self._scale_tril.mT)

    @lazy_property
    def precision_matrix(self):
        k = self._event_shape[0]
        eye = tg.eye(k, dtype=self.loc.dtype).expand(self._scale_tril.shape)
        inv = tg.linalg.solve_triangular(self._scale_tril, eye, upper=False)
        return self._full(inv.mT @ inv)

    mean = mode = alias("loc")

    @property
    def variance(self):
        return (self._scale_tril ** 2).sum(-1).expand(self._extended_shape())

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = tg.randn(shape, dtype=self.loc.dtype)
        return self.loc + (self._scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return tg.log(self._scale_tril.diagonal(dim1=-2, dim2=-1)).sum(-1)

    def log_prob(self, value):
        value = self._checked(value)
        diff = value - self.loc
        k = self._event_shape[0]
        tril = self._scale_tril.expand(tuple(diff.shape[:-1]) + (k, k))
        y = tg.linalg.solve_triangular(tril, diff.unsqueeze(-1), upper=False).squeeze(-1)
        maha = (y ** 2).sum(-1)
        return -0.5 * (k * math.log(2 * math.pi) + maha) - self._half_log_det()

    def entropy(self):
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(self._batch_shape)

    def __repr__(self):
        return f"MultivariateNormal(loc: {self.loc.shape})"
