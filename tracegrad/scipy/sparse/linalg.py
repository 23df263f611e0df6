"""``scipy.sparse.linalg``'s solves with SciPy's signatures, on traced right-hand sides and
traced stored values (a matrix built by ``tracegrad.scipy.sparse``): ``spsolve``,
``splu(A).solve``, ``factorized(A)``, ``cg`` and ``gmres``.

Each records one ``sparse_solve`` node (``ir/prims/sparse.py``), differentiated by its
adjoint: reverse mode solves once more with ``Aᵀ``, forward mode once more with ``A``; no
iteration is unrolled. Called on plain values, each is SciPy's own function. ``cg`` and
``gmres`` return ``(x, 0)``: an iteration that does not converge raises
``LinAlgError`` instead of giving an unconverged value to differentiate.
"""
from __future__ import annotations

import numpy as np

from ...errors import TraceError
from ...ir import apply
from ...tracer import where
from ...tracer.scipy_sparse import TracedSparse, is_sparse, is_traced, parts

__all__ = ["cg", "factorized", "gmres", "splu", "spsolve"]


def _linalg():
    import scipy.sparse.linalg
    return scipy.sparse.linalg


def _matrix(A, name):
    if is_traced(A):
        raise TraceError(f"{name} of a dense traced matrix: use np.linalg.solve, or build a "
                         f"sparse one with tracegrad.scipy.sparse.csr_matrix{where()}")
    if not is_sparse(A):
        import scipy.sparse as sp
        A = sp.csr_array(np.asarray(A))
    return A


def _traced(A, b):
    return isinstance(A, TracedSparse) or is_traced(b)


def _solve(A, b, method, tol, name, trans=False):
    data, indptr, indices, shape, transposed = parts(A)
    if shape[0] != shape[1]:
        raise ValueError(f"{name}: the matrix must be square, got {tuple(shape)}")
    nd = np.ndim(b)
    if nd not in (1, 2) or np.shape(b)[0] != shape[0]:
        raise ValueError(f"{name}: a right-hand side of shape {np.shape(b)} for a "
                         f"{shape[0]}x{shape[0]} matrix")
    return apply("sparse_solve", data, b, indptr=indptr, indices=indices, shape=shape,
                 transpose=transposed != trans, method=method, tol=float(tol))


def spsolve(A, b, permc_spec=None, use_umfpack=True):
    """``x`` with ``A x = b`` (``scipy.sparse.linalg.spsolve``)."""
    A = _matrix(A, "spsolve")
    if not _traced(A, b):
        return _linalg().spsolve(A, b, permc_spec=permc_spec, use_umfpack=use_umfpack)
    x = _solve(A, b, "direct", 1e-5, "spsolve")
    return x[:, 0] if np.ndim(b) == 2 and np.shape(b)[1] == 1 else x


class SuperLU:
    """``splu(A)``: ``solve(rhs, trans="N")`` solves with ``A`` (``"T"``/``"H"``: ``Aᵀ``)."""

    def __init__(self, A, kwargs):
        self._A, self._kwargs, self._lu = A, kwargs, None
        self.shape = A.shape

    def solve(self, rhs, trans="N"):
        if trans not in ("N", "T", "H"):
            raise ValueError(f"trans must be 'N', 'T' or 'H', got {trans!r}")
        if not _traced(self._A, rhs):
            if self._lu is None:
                self._lu = _linalg().splu(self._A.tocsc(), **self._kwargs)
            return self._lu.solve(rhs, trans=trans)
        return _solve(self._A, rhs, "direct", 1e-5, "splu(A).solve", trans=trans != "N")


def splu(A, permc_spec=None, diag_pivot_thresh=None, relax=None, panel_size=None,
         options=None):
    """``scipy.sparse.linalg.splu``: an object whose ``solve`` takes traced values."""
    kwargs = {k: v for k, v in dict(permc_spec=permc_spec, diag_pivot_thresh=diag_pivot_thresh,
                                    relax=relax, panel_size=panel_size, options=options).items()
              if v is not None}
    return SuperLU(_matrix(A, "splu"), kwargs)


def factorized(A):
    """``scipy.sparse.linalg.factorized``: a function solving ``A x = b``."""
    return splu(A).solve


def _iterative(method, A, b, x0, rtol, atol, maxiter, M, callback, extra):
    A = _matrix(A, method)
    if not _traced(A, b):
        return getattr(_linalg(), method)(A, b, x0, rtol=rtol, atol=atol, maxiter=maxiter,
                                          M=M, callback=callback, **extra)
    given = [k for k, v in dict(x0=x0, maxiter=maxiter, M=M, callback=callback,
                                **extra).items() if v is not None]
    if given or atol:
        raise TraceError(f"tracegrad.scipy.sparse.linalg.{method} on traced values takes "
                         f"rtol only (got {', '.join(given + (['atol'] if atol else []))}): "
                         f"the solution, not the iteration, is differentiated{where()}")
    if np.ndim(b) != 1:
        raise ValueError(f"{method}: b must be a vector, got shape {np.shape(b)}")
    if not 0.0 < rtol < 1.0:
        raise ValueError(f"{method}: rtol must lie in (0, 1), got {rtol}")
    return _solve(A, b, method, rtol, method), 0


def cg(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None):
    """``scipy.sparse.linalg.cg`` (``A`` symmetric positive definite): ``(x, info)``."""
    return _iterative("cg", A, b, x0, rtol, atol, maxiter, M, callback, {})


def gmres(A, b, x0=None, *, rtol=1e-5, atol=0.0, restart=None, maxiter=None, M=None,
          callback=None, callback_type=None):
    """``scipy.sparse.linalg.gmres``: ``(x, info)``."""
    return _iterative("gmres", A, b, x0, rtol, atol, maxiter, M, callback,
                      dict(restart=restart, callback_type=callback_type))
