"""``scipy.sparse`` matrices meeting traced arrays.

A constant sparse matrix of any format (``csr``, ``csc``, ``coo``, ``bsr``, ``dia``,
``lil``, ``dok``; ``*_matrix`` and ``*_array``) times a traced array records one
``sparse_matmul`` node (``ir/prims/sparse.py``): the matrix's CSR structure in its params,
its stored values a constant operand. ``A @ x``, ``A.dot(x)`` and ``A.T @ x`` start in
SciPy's ``_matmul_dispatch``, which converts ``x`` with ``np.asanyarray`` and, when that
gives a 0-d object array ("not interpretable as an array"), returns ``NotImplemented`` so
that Python asks ``x.__rmatmul__``. ``declines(frame)`` recognises that conversion, and the
tracer answers it with such an array (``opaque``); the tracer's operators then call
``binary`` here. ``x @ A`` reaches the tracer's ``__matmul__`` first. Nothing in SciPy is
changed.

Any other SciPy sparse code converting a traced array (a constructor given traced values,
``scipy.sparse.linalg.spsolve``, ``A.multiply(x)``) would fail deep inside SciPy or
compute on an object array: ``refuse_in_scipy`` raises a ``TraceError`` there instead,
naming the user's line and the spelling that works (``tracegrad.scipy.sparse``).

``TracedSparse`` is a sparse matrix whose stored values are traced (what
``tracegrad.scipy.sparse.csr_matrix((t, indices, indptr))`` builds): a CSR structure,
its values and whether it stands transposed.
"""
from __future__ import annotations

import sys

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.source import _is_internal, where


def _scipy_sparse():
    return sys.modules.get("scipy.sparse")


def is_traced(x) -> bool:
    return getattr(type(x), "__tg_bind__", None) is not None


def is_sparse(obj) -> bool:
    """A ``scipy.sparse`` matrix or array, or a ``TracedSparse``."""
    if isinstance(obj, TracedSparse):
        return True
    sp = _scipy_sparse()
    return sp is not None and sp.issparse(obj)


def is_matrix(obj) -> bool:
    """``*`` is the matrix product (``spmatrix``), not the elementwise one (``sparray``)."""
    if isinstance(obj, TracedSparse):
        return obj.is_matrix
    return _scipy_sparse().isspmatrix(obj)


def _frozen(a, dtype=None):
    a = np.array(a, dtype=dtype)        # a copy: later changes to the user's matrix stay out
    a.flags.writeable = False
    return a


def parts(a):
    """``(data, indptr, indices, shape, transposed)`` of a sparse matrix: its CSR form."""
    if isinstance(a, TracedSparse):
        return a.data, a.indptr, a.indices, a.csr_shape, a.transposed
    if a.ndim != 2:
        raise TraceError(f"a {a.ndim}-d scipy.sparse array times a traced array is not "
                         f"supported (2-d sparse matrices are){where()}")
    c = a.tocsr()
    data = c.data
    if data.dtype.kind not in "iuf":
        raise TraceError(f"a scipy.sparse matrix of dtype {data.dtype} times a traced array "
                         f"is not supported (real numbers are){where()}")
    return _frozen(data), _frozen(c.indptr), _frozen(c.indices), tuple(c.shape), False


def _params(indptr, indices, shape, transposed):
    return dict(indptr=indptr, indices=indices, shape=shape, transpose=transposed)


def _sizes(shape, transposed):
    return (shape[1], shape[0]) if transposed else tuple(shape)


def matmul(a, x):
    """``A @ x``: ``x`` a vector or a matrix (traced or not)."""
    data, indptr, indices, shape, transposed = parts(a)
    m, n = _sizes(shape, transposed)
    nd = np.ndim(x)
    if nd == 0:
        raise ValueError("Scalar operands are not allowed, use '*' instead")
    if nd > 2:
        raise TraceError(f"a sparse matrix times a {nd}-d traced array is not supported "
                         f"(vectors and matrices are){where()}")
    if np.shape(x)[0] != n:
        raise ValueError(f"matmul: dimension mismatch with signature (n,k={n}),"
                         f"(k={np.shape(x)[0]},m)->(n,m)")
    return apply("sparse_matmul", data, x, **_params(indptr, indices, shape, transposed))


def rmatmul(x, a):
    """``x @ A``: ``(Aᵀ xᵀ)ᵀ``."""
    nd = np.ndim(x)
    if nd == 0:
        raise ValueError("Scalar operands are not allowed, use '*' instead")
    if nd > 2:
        raise TraceError(f"a {nd}-d traced array times a sparse matrix is not supported "
                         f"(vectors and matrices are){where()}")
    at = transposed(a)
    return matmul(at, x) if nd == 1 else np.transpose(matmul(at, np.transpose(x)))


def transposed(a):
    if isinstance(a, TracedSparse):
        return a.T
    data, indptr, indices, shape, _ = parts(a)
    return TracedSparse(data, indptr, indices, shape, transposed=True,
                        is_matrix=is_matrix(a))


def scaled(a, s):
    """``A * s`` for a scalar ``s``: a sparse matrix with traced values."""
    data, indptr, indices, shape, flag = parts(a)
    return TracedSparse(data * s, indptr, indices, shape, transposed=flag,
                        is_matrix=is_matrix(a))


def binary(kind, x, a):
    """``x @ A`` (``kind="matmul"``), ``A @ x`` (``"rmatmul"``), ``x * A`` (``"mul"``),
    ``A * x`` (``"rmul"``) for a traced ``x`` and a sparse ``A``."""
    if kind == "matmul":
        return rmatmul(x, a)
    if kind == "rmatmul":
        return matmul(a, x)
    if np.ndim(x) == 0:
        return scaled(a, x)
    if is_matrix(a):
        return matmul(a, x) if kind == "rmul" else rmatmul(x, a)
    raise TraceError(f"A * x of a scipy.sparse array is the elementwise product (a sparse "
                     f"result), which tracegrad does not trace for a traced x; for the matrix "
                     f"product write A @ x, for a dense elementwise one A.toarray() * x"
                     f"{where()}")


# -- SciPy converting a traced array ----------------------------------------------------
def declines(frame) -> bool:
    """Whether ``frame`` is SciPy sparse's ``_matmul_dispatch`` converting its operand: a
    0-d object array there makes it return ``NotImplemented`` (see the module docstring)."""
    return (frame is not None and frame.f_code.co_name == "_matmul_dispatch"
            and frame.f_globals.get("__name__", "").startswith("scipy.sparse"))


def probes(frame) -> bool:
    """Whether ``frame`` only looks at the converted operand's ``ndim`` and then goes on with
    the operand itself (``coo_array.dot``: to ``A @ x``): the conversion may proceed."""
    return frame.f_code.co_name == "dot"


def opaque(x):
    """A 0-d object array holding ``x``: what SciPy takes for "not an array"."""
    out = np.empty((), dtype=object)
    out[()] = x
    return out


_OURS = ("spsolve", "splu", "factorized", "cg", "gmres")
_CONSTRUCTORS = ("csr", "csc", "coo")


def _scipy_entry(frame):
    """The outermost SciPy frame below the user's code, the user's frame (or None), and
    whether any frame in between is ``scipy.sparse``'s."""
    entry, in_sparse = None, False
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("scipy."):
            entry = frame
            in_sparse = in_sparse or module.startswith("scipy.sparse")
        elif not _is_internal(frame.f_code):
            return entry, frame, in_sparse
        frame = frame.f_back
    return entry, None, in_sparse


def refuse_in_scipy(depth=1):
    """Raise a ``TraceError`` when the caller (``depth`` frames up) runs inside
    ``scipy.sparse`` on behalf of the user's code: SciPy cannot compute with a traced
    array there. Returns quietly otherwise."""
    entry, user, in_sparse = _scipy_entry(sys._getframe(depth + 1))
    if not in_sparse or entry is None:
        return
    name = entry.f_code.co_name
    module = entry.f_globals.get("__name__", "")
    if name == "__init__":
        name = type(entry.f_locals.get("self")).__name__
    at = f" (at {_where(user)})" if user is not None else where()
    if module.startswith("scipy.sparse.linalg"):
        if name in _OURS:
            fix = (f"call tracegrad.scipy.sparse.linalg.{name} (SciPy's signature), which "
                   f"records one solve and differentiates it by one more (adjoint) solve")
        else:
            fix = ("tracegrad.scipy.sparse.linalg offers spsolve, splu, factorized, cg and "
                   "gmres on traced values")
        raise TraceError(f"scipy.sparse.linalg.{name} cannot compute with a traced array: "
                         f"{fix}{at}")
    if name.split("_")[0] in _CONSTRUCTORS and name.endswith(("_matrix", "_array")):
        raise TraceError(f"scipy.sparse.{name} cannot hold traced values: build it with "
                         f"tracegrad.scipy.sparse.{name} (the same arguments), whose @, .dot "
                         f"and .T follow the values, or keep the matrix constant{at}")
    if not module.startswith("scipy.sparse"):
        # another SciPy function (scipy.optimize.linprog) building sparse matrices of
        # its traced arguments: named as the user called it
        from .scipy_calls import refusal, scipy_function
        raise refusal(scipy_function() or f"{module}.{name}",
                      "computes with its traced arguments in scipy.sparse, which cannot "
                      "hold traced values")
    name = _SPELLED.get(name, name)
    raise TraceError(f"scipy.sparse's {name} cannot compute with a traced array. With a "
                     f"traced x, write A @ x, A.dot(x), A.T @ x or x @ A (A a scipy.sparse "
                     f"matrix, or one built by tracegrad.scipy.sparse), or A.toarray() for "
                     f"a dense computation{at}")


_SPELLED = {"__mul__": "A * x (the elementwise product of a sparse array)",
            "__rmul__": "x * A (the elementwise product of a sparse array)",
            "multiply": "A.multiply(x)", "__add__": "A + x", "__sub__": "A - x",
            "__truediv__": "A / x"}


def _where(frame):
    import os
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


# -- a sparse matrix with traced values -------------------------------------------------
class TracedSparse:
    """A sparse matrix whose stored values may be traced: a CSR structure (constant),
    its values ``data`` (one per stored entry) and whether it stands transposed. It
    multiplies as SciPy's do (``@``, ``.dot``, ``.T``; ``*`` is the matrix product for a
    ``*_matrix``, the elementwise one for a ``*_array``)."""
    __array_ufunc__ = None      # ndarray @ A: NumPy leaves it to __rmatmul__
    __array_priority__ = 10000

    def __init__(self, data, indptr, indices, shape, transposed=False, is_matrix=True,
                 format="csr"):  # noqa: A002 - SciPy's name
        self.data, self.indptr, self.indices = data, indptr, indices
        self.csr_shape = tuple(int(s) for s in shape)
        self.transposed = transposed
        self.is_matrix = is_matrix
        self.format = format

    def __repr__(self):
        kind = "matrix" if self.is_matrix else "array"
        return (f"<traced sparse {kind} of shape {self.shape} with {self.nnz} stored "
                f"elements{' (transposed)' if self.transposed else ''}>")

    shape = property(lambda self: _sizes(self.csr_shape, self.transposed))
    ndim = 2
    nnz = property(lambda self: len(self.indices))
    dtype = property(lambda self: np.dtype(self.data.dtype))

    @property
    def T(self):
        return TracedSparse(self.data, self.indptr, self.indices, self.csr_shape,
                            not self.transposed, self.is_matrix, self.format)

    def transpose(self, axes=None, copy=False):
        return self.T

    def __matmul__(self, x):
        if is_sparse(x):
            return NotImplemented
        return matmul(self, x)

    def __rmatmul__(self, x):
        if is_sparse(x):
            return NotImplemented
        return rmatmul(x, self)

    def dot(self, x):
        return self * x if np.ndim(x) == 0 else self @ x

    def __mul__(self, x):
        if np.ndim(x) == 0:
            return scaled(self, x)
        if self.is_matrix:
            return matmul(self, x)
        return binary("rmul", x, self)

    def __rmul__(self, x):
        if np.ndim(x) == 0:
            return scaled(self, x)
        if self.is_matrix:
            return rmatmul(x, self)
        return binary("mul", x, self)

    def __neg__(self):
        return scaled(self, -1.0)

    def __truediv__(self, s):
        if np.ndim(s) != 0:
            return NotImplemented
        return scaled(self, 1.0 / s)

    def toarray(self):
        """The dense matrix (traced): ``A @ I``."""
        return matmul(self, np.eye(self.shape[1], dtype=np.result_type(self.dtype, 1.0)))

    def todense(self):
        return self.toarray()

    def __tg_sparse__(self):
        return parts(self)
