"""``scipy.sparse`` matrices whose stored values are traced.

A constant ``scipy.sparse`` matrix needs nothing from here: ``A @ x``, ``A.dot(x)``,
``A.T @ x`` and ``x @ A`` with a traced ``x`` are recorded as they are written. SciPy's
constructors cannot hold traced values (they make NumPy arrays of them); these take the
same arguments and give a matrix whose values are followed:

    A = tracegrad.scipy.sparse.csr_matrix((t, indices, indptr), shape=(m, n))
    A = tracegrad.scipy.sparse.coo_array((t, (row, col)), shape=(m, n))

The structure (``indices``, ``indptr``, ``row``, ``col``) is constant; ``t`` may be traced.
Called without a traced value, each is SciPy's own constructor. ``linalg`` holds the
solves (``spsolve``, ``splu``, ``factorized``, ``cg``, ``gmres``).
"""
from __future__ import annotations

import numpy as np

from ...errors import TraceError
from ...ir.prims.sparse_ops import rows_of
from ...tracer import where
from ...tracer.scipy_sparse import TracedSparse, is_traced
from . import linalg  # noqa: F401

__all__ = ["csc_array", "csc_matrix", "coo_array", "coo_matrix", "csr_array", "csr_matrix",
           "linalg"]


def _holds_traced(arg):
    if isinstance(arg, (tuple, list)):
        return any(_holds_traced(a) for a in arg)
    return is_traced(arg)


def _constant_ints(a, what):
    if is_traced(a):
        raise TraceError(f"a sparse matrix's {what} must be constant (its structure is not "
                         f"differentiated); only the stored values may be traced{where()}")
    a = np.asarray(a)
    if a.ndim != 1 or (a.size and a.dtype.kind not in "iu"):
        raise ValueError(f"{what} must be a 1-d integer array")
    return a.astype(np.int64)


def _build(fmt, arg1, shape, dtype, copy, is_matrix):
    import scipy.sparse as sp
    cls = getattr(sp, f"{fmt}_{'matrix' if is_matrix else 'array'}")
    if not _holds_traced(arg1):
        return cls(arg1, shape=shape, dtype=dtype, copy=copy)
    name = cls.__name__
    if not isinstance(arg1, tuple) or len(arg1) not in (2, 3) or is_traced(arg1[1]) and \
            len(arg1) == 2:
        raise TraceError(f"tracegrad.scipy.sparse.{name} takes traced values in the forms "
                         f"(data, (row, col)) or (data, indices, indptr); a dense traced "
                         f"matrix stays dense (use it with @ directly){where()}")
    data = arg1[0]
    if len(arg1) == 2:
        row, col = (_constant_ints(a, w) for a, w in zip(arg1[1], ("row", "col")))
        if shape is None:
            shape = (int(row.max()) + 1 if row.size else 0, int(col.max()) + 1 if col.size else 0)
    else:
        if fmt == "coo":
            raise TraceError(f"{name} takes (data, (row, col)){where()}")
        indices = _constant_ints(arg1[1], "indices")
        indptr = _constant_ints(arg1[2], "indptr")
        major = rows_of(indptr)
        if len(major) != len(indices):
            raise ValueError("indptr and indices do not match")
        if shape is None:
            minor = int(indices.max()) + 1 if indices.size else 0
            shape = (len(indptr) - 1, minor) if fmt == "csr" else (minor, len(indptr) - 1)
        row, col = (major, indices) if fmt == "csr" else (indices, major)
    m, n = (int(s) for s in shape)
    if np.ndim(data) != 1 or np.shape(data)[0] != len(row) or len(row) != len(col):
        raise ValueError(f"{name}: {np.shape(data)} values for {len(row)} positions")
    if row.size and (row.min() < 0 or row.max() >= m or col.min() < 0 or col.max() >= n):
        raise ValueError(f"{name}: a stored position lies outside the shape {(m, n)}")
    if dtype is not None:
        data = data.astype(dtype)
    order = np.lexsort((col, row))                   # CSR order: by row, then column
    if not np.array_equal(order, np.arange(len(order))):
        data = data[order]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=m))]).astype(np.int64)
    indices = col[order]
    for a in (indptr, indices):
        a.flags.writeable = False
    return TracedSparse(data, indptr, indices, (m, n), is_matrix=is_matrix, format=fmt)


def _constructor(fmt, is_matrix):
    def make(arg1, shape=None, dtype=None, copy=False):
        return _build(fmt, arg1, shape, dtype, copy, is_matrix)
    kind = "matrix" if is_matrix else "array"
    make.__name__ = make.__qualname__ = f"{fmt}_{kind}"
    make.__doc__ = (f"``scipy.sparse.{fmt}_{kind}``, whose stored values may be traced "
                    f"(the module docstring).")
    return make


csr_matrix = _constructor("csr", True)
csr_array = _constructor("csr", False)
csc_matrix = _constructor("csc", True)
csc_array = _constructor("csc", False)
coo_matrix = _constructor("coo", True)
coo_array = _constructor("coo", False)
