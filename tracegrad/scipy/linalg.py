"""``scipy.linalg`` with SciPy's signatures, on traced and plain values alike:
``solve_triangular``, ``cho_factor`` / ``cho_solve``, ``expm`` and ``sqrtm``.

``expm`` and ``sqrtm`` are primitives (``ir/prims/scipy_linalg.py``, SciPy's
implementations, derivatives from the Fréchet derivative); the solves are written on
NumPy's traced ``solve`` and ``cholesky`` of the triangle SciPy reads.
"""
from __future__ import annotations

import numpy as np

from ..ir import apply

__all__ = ["cho_factor", "cho_solve", "cholesky", "expm", "solve_triangular", "sqrtm"]

_TRANS = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}


def _mT(a):
    return np.swapaxes(a, -1, -2)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """``x`` with ``a x = b`` (``trans=1``/``"T"``: ``aᵀ x = b``; 2/``"C"``: the conjugate
    transpose) reading only the lower (``lower=True``) or upper triangle of ``a``, and
    taking its diagonal as ones with ``unit_diagonal=True``. ``b`` is a vector or a matrix
    of right-hand sides."""
    if trans not in _TRANS:
        raise ValueError(f"trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}")
    n = np.shape(a)[-1]
    mask = np.tril(np.ones((n, n), dtype=bool)) if lower else np.triu(np.ones((n, n), dtype=bool))
    if unit_diagonal:
        mask = mask & ~np.eye(n, dtype=bool)
    tri = np.where(mask, a, 0.0)
    if unit_diagonal:
        tri = tri + np.eye(n)
    mode = _TRANS[trans]
    if mode:
        tri = _mT(tri)
        if mode == 2:
            tri = np.conj(tri)
    if np.ndim(b) == 1:
        return np.linalg.solve(tri, b[:, None])[:, 0]
    return np.linalg.solve(tri, b)


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cholesky``: the upper factor ``u`` (``a = uᵀ u``), or the lower one."""
    low = np.linalg.cholesky(a)
    return low if lower else _mT(low)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``(c, lower)`` for ``cho_solve``: the Cholesky factor (zeros in the other triangle,
    where SciPy leaves arbitrary values) and which triangle it is."""
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """``x`` with ``a x = b`` from ``cho_factor(a)``'s result."""
    c, lower = c_and_lower
    if lower:
        return solve_triangular(c, solve_triangular(c, b, lower=True), trans=1, lower=True)
    return solve_triangular(c, solve_triangular(c, b, trans=1, lower=False), lower=False)


def expm(A):
    """``scipy.linalg.expm``: the matrix exponential (of a stack of matrices too)."""
    return apply("expm", A)


def sqrtm(A, disp=True, blocksize=64):
    """``scipy.linalg.sqrtm``: the principal square root of a real matrix that has a real
    one (no eigenvalue on the negative real axis); the derivative is for one matrix."""
    return apply("sqrtm", A)
