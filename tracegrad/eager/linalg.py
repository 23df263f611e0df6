"""``tg.linalg`` (``torch.linalg``): PyTorch's linear algebra on eager tensors.

Each function checks its operands as PyTorch does (floating or complex inputs, square
matrices, matching dtypes, with torch's messages), then hands NumPy code to
``dispatch.call``: on plain arrays NumPy's LAPACK results, on the tape the registry's
primitives (``inv``, ``solve``, ``det``, ``slogdet``, ``cholesky``, ``eigh``, ``eig``,
``svd``, ``svdvals``, ``qr``, ``expm``: ``ir/prims/linear_algebra.py``, ``spectral.py``,
``eig.py``, ``scipy_linalg.py``) through the tracer's ``np.linalg`` handlers, so that
gradients (and gradients of gradients) come from those primitives' rules. Leading dims
are batches, as in torch.

Eigenvectors and singular vectors are LAPACK's (NumPy and PyTorch call the same
routines, ``syevd``, ``geev``, ``gesdd``, ``geqrf``), so their signs match torch's.
``eig``/``eigvals`` always return complex tensors, as torch's do.

Composites (no primitive of their own): ``solve_triangular`` (a solve of the masked
triangle), ``pinv`` / ``lstsq`` (through the SVD), ``matrix_rank`` (the count, no
gradient), ``cond``, ``cross``, ``vecdot``, ``tensorinv``, ``tensorsolve``, ``vander``,
``householder_product`` (the product of the reflectors), and ``lu_factor`` / ``lu`` /
``lu_solve``: LAPACK's pivots are read from the values (they are piecewise constant), and
the factors of the permuted matrix are built by elimination without pivoting, so their
gradients are those of the elimination.

``ldl_factor`` / ``ldl_factor_ex`` / ``ldl_solve`` are LAPACK's ``sytrf`` / ``hetrf`` and
``sytrs`` / ``hetrs`` (through SciPy), called as torch calls them: ``LD`` is the lower
triangle of the factor, the pivots are LAPACK's (1-based, a 2x2 block marked by a negative
pair), and, as in torch, they have no derivative: a backward through them raises torch's
``derivative for aten::linalg_ldl_factor_ex is not implemented``.

Singular inputs raise ``tg.linalg.LinAlgError`` (a ``RuntimeError``, as torch's) with
torch's message; the ``_ex`` forms return LAPACK's ``info`` instead.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from ..tracer import Tracer
from . import return_types as _rt
from .arithmetic import _err
from .arithmetic import _tensor_operand as _as_tensor
from .dispatch import call
from .tensor_base import TensorBase, _scalar_name

__all__ = ["LinAlgError", "norm", "vector_norm", "matrix_norm", "det", "slogdet", "inv",
           "inv_ex", "solve", "solve_ex", "solve_triangular", "cholesky", "cholesky_ex", "qr",
           "eigh", "eigvalsh", "eig", "eigvals", "svd", "svdvals", "lstsq", "pinv",
           "matrix_rank", "cond", "cross", "multi_dot", "matrix_power", "matrix_exp",
           "lu_factor", "lu_factor_ex", "lu", "lu_solve", "vecdot", "diagonal", "tensorinv",
           "tensorsolve", "vander", "householder_product", "matmul", "ldl_factor",
           "ldl_factor_ex", "ldl_solve"]


class LinAlgError(RuntimeError):
    """``torch.linalg.LinAlgError``: a singular or non-positive-definite input."""


# -- checks -------------------------------------------------------------------------------
def _floating(name, *ts):
    for t in ts:
        if t.dtype.kind not in "fc":
            raise _err(f"{name}: Expected a floating point or complex tensor as input. Got "
                       f"{_scalar_name(t.dtype)}")


def _matrix(name, A, arg="A"):
    A = _as_tensor(A)
    if A.dim() < 2:
        raise _err(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    _floating(name, A)
    return A


def _square(name, A, arg="A"):
    A = _matrix(name, A, arg)
    if A.shape[-1] != A.shape[-2]:
        raise _err(f"{name}: {arg} must be batches of square matrices, but they are "
                   f"{A.shape[-2]} by {A.shape[-1]} matrices")
    return A


def _same_dtype(name, A, B):
    if A.dtype != B.dtype:
        raise _err(f"{name}: Expected A and B to have the same dtype, but found A of type "
                   f"{_scalar_name(A.dtype)} and B of type {_scalar_name(B.dtype)} instead")


def _mT(x):
    return np.swapaxes(x, -1, -2)


def _mH(x):
    return np.conj(_mT(x)) if np.dtype(x.dtype).kind == "c" else _mT(x)


def _named(t, name):
    """``t`` with its node shown as torch names the last step of its composite."""
    if t.grad_fn is not None:
        t.grad_fn._name = name
    return t


def _value(t):
    return t._data if isinstance(t, TensorBase) else np.asarray(t)


def _lapack_info(routine, a):
    """LAPACK's ``info`` of ``routine`` (``getrf``, ``potrf``) for each matrix of the
    batch ``a`` (an int32 array of the batch's shape)."""
    from scipy.linalg import lapack
    a = np.asarray(a)
    batch = a.shape[:-2]
    flat = a.reshape((-1,) + a.shape[-2:])
    info = np.zeros(flat.shape[0], np.int32)
    for k, m in enumerate(flat):
        f = lapack.get_lapack_funcs(routine, (m,))
        if m.size == 0:
            continue
        info[k] = f(m, lower=1)[-1] if routine == "potrf" else f(m)[-1]
    return info.reshape(batch)


def _raise_info(name, info, message, error=LinAlgError):
    """torch's error for the first failing matrix of a batch."""
    bad = np.flatnonzero(info.reshape(-1) > 0)
    if not bad.size:
        return
    k = int(bad[0])
    prefix = f"{name}: " + (f"(Batch element {k}): " if info.ndim else "")
    raise error(prefix + message.format(int(info.reshape(-1)[k])))


_SINGULAR = ("The diagonal element {} is zero, the inversion could not be completed "
             "because the input matrix is singular.")
_SOLVE_SINGULAR = ("The solver failed because the input matrix is singular.")
_NOT_PD = ("The factorization could not be completed because the input is not "
           "positive-definite (the leading minor of order {} is not positive-definite).")


def _lapack_call(what, fn, args, routine, message, A, **kw):
    """``call(fn, *args)``, NumPy's LinAlgError turned into torch's."""
    try:
        return call(fn, *args, **kw)
    except np.linalg.LinAlgError:
        _raise_info(what, _lapack_info(routine, A._data), message)
        raise LinAlgError(f"{what}: the input matrix is singular") from None


# -- norms --------------------------------------------------------------------------------
def _dims(t, dim):
    if dim is None:
        return None
    if isinstance(dim, (tuple, list)):
        return tuple(d % builtins.max(t.dim(), 1) for d in dim)
    return dim % builtins.max(t.dim(), 1)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """``sum(|x|**ord) ** (1/ord)`` over ``dim`` (every dim when None); inf, -inf, 0 as
    torch (the maximum, the minimum, the count of nonzeros)."""
    x = _as_tensor(x)
    _floating("linalg.vector_norm", x)
    if dtype is not None:
        x = x.to(dtype)
    if isinstance(ord, str):
        raise _err(f"linalg.vector_norm: argument 'ord' must be Number, not {type(ord).__name__}")
    axis = _dims(x, dim)
    if axis is not None and x.dim() == 0:
        axis = None

    return call(lambda v: _vector_norm(v, ord, axis, keepdim), x, name="LinalgVectorNormBackward0")


def _vector_norm(v, ord, axis, keepdims):  # noqa: A002
    """The norm on values or tracers, with torch's zero gradient where the norm is 0
    (ord > 1) or an entry is 0 (each entry's ``|x|**ord``): no ``0 * inf`` there."""
    a = np.abs(v)
    if ord == math.inf:
        return np.max(a, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return np.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return np.sum((a != 0).astype(a.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return np.sum(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        s = np.sum(v * v if np.dtype(v.dtype).kind != "c" else a * a, axis=axis,
                   keepdims=keepdims)
        pos = s > 0
        return np.where(pos, np.sqrt(np.where(pos, s, 1)), 0).astype(a.dtype)
    nz = a > 0
    s = np.sum(np.where(nz, np.where(nz, a, 1) ** ord, 0), axis=axis, keepdims=keepdims)
    pos = s > 0
    return np.where(pos, np.where(pos, s, 1) ** (1.0 / ord), 0).astype(a.dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):  # noqa: A002
    """``'fro'``, ``'nuc'``, ``inf``, ``-inf``, ``1``, ``-1``, ``2``, ``-2`` over the two
    ``dim``."""
    A = _matrix("linalg.matrix_norm", A)
    if dtype is not None:
        A = A.to(dtype)
    if ord not in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        raise _err(f"linalg.matrix_norm: Order {ord} not supported.")
    dim = _dims(A, dim)
    if ord == "fro":
        name = "LinalgVectorNormBackward0"
    elif ord in (2, -2, "nuc") and keepdim:
        name = "PermuteBackward0"
    else:
        name = {1: "AmaxBackward0", math.inf: "AmaxBackward0", 2: "AmaxBackward0",
                "nuc": "SumBackward1"}.get(ord, "AminBackward0")
    return call(lambda v: np.linalg.norm(v, ord=ord, axis=dim, keepdims=keepdim), A, name=name)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """``vector_norm`` of the flattened tensor (``ord`` and ``dim`` None), of one ``dim``,
    or ``matrix_norm`` of two dims (or of a 2-d tensor given an ``ord``)."""
    A = _as_tensor(A)
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None and len(dim) == 2 or dim is None and ord is not None and A.dim() == 2:
        return matrix_norm(A, "fro" if ord is None else ord, (-2, -1) if dim is None else dim,
                           keepdim, dtype=dtype)
    if dim is None and ord is not None and A.dim() != 1:
        raise _err(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or "
                   f"2D. Got {A.dim()}D.")
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


# -- determinants and inverses -------------------------------------------------------------
def det(A):
    A = _square("linalg.det", A)
    return call(np.linalg.det, A, name="LinalgDetBackward0")


def slogdet(A):
    """``(sign, logabsdet)``; ``logabsdet`` is real, ``sign`` has ``A``'s dtype."""
    A = _square("linalg.slogdet", A)
    return _rt.linalg_slogdet(*call(lambda a: tuple(np.linalg.slogdet(a)), A,
                                    name="LinalgSlogdetBackward0"))


def inv(A):
    A = _square("linalg.inv", A)
    return _lapack_call("linalg.inv", np.linalg.inv, (A,), "getrf", _SINGULAR, A,
                        name="LinalgInvExBackward0")


def inv_ex(A, *, check_errors=False):
    """``(inverse, info)``: ``info`` is LAPACK's (0, or the index of the zero pivot); a
    singular matrix raises only with ``check_errors``."""
    A = _square("linalg.inv_ex", A)
    info = _lapack_info("getrf", A._data)
    if check_errors:
        _raise_info("linalg.inv_ex", info, _SINGULAR)
    if np.any(info > 0):    # LAPACK's getrf and getrs on the identity, as torch (no gradient)
        return _rt.linalg_inv_ex(A._plain(_per_matrix(A._data, _getrs_inverse)),
                                 A._plain(info))
    return _rt.linalg_inv_ex(inv(A), A._plain(info))


def _per_matrix(a, f):
    flat = a.reshape((-1,) + a.shape[-2:])
    return np.stack([f(m) for m in flat]).reshape(a.shape) if flat.shape[0] else a.copy()


def _getrs_inverse(m):
    from scipy.linalg import lapack
    getrf, getrs = lapack.get_lapack_funcs(("getrf", "getrs"), (m,))
    lu_, piv, _ = getrf(m)
    with np.errstate(all="ignore"):
        return getrs(lu_, piv, np.eye(m.shape[-1], dtype=m.dtype))[0]


def _potrf_partial(m):
    from scipy.linalg import lapack
    return np.tril(lapack.get_lapack_funcs("potrf", (m,))(m, lower=1, clean=1)[0])


def _vector_rhs(A, B):
    """torch's rule: B is a (batch of) vector(s) when 1-d, or when its shape is A's
    without the last dim."""
    return B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))


def solve(A, B, *, left=True):
    """``X`` with ``A X = B`` (``left=False``: ``X A = B``)."""
    A = _square("linalg.solve", A)
    B = _as_tensor(B, A)
    _floating("linalg.solve", B)
    _same_dtype("linalg.solve", A, B)
    vector = _vector_rhs(A, B)
    n = A.shape[-1]
    k = B.shape[-1] if vector else B.shape[-2 if left else -1]
    if k != n or B.dim() < 1:
        shape = f"{n}x{n} and {B.shape[-1]}" if vector else \
            f"{n}x{n} and {B.shape[-2]}x{B.shape[-1]}"
        eq = "AX = B" if left else "XA = B"
        raise _err(f"linalg.solve: Incompatible shapes of A and B for the equation {eq} "
                   f"({shape})")

    def fn(a, b):
        if not left:
            a = _mT(a)
            b = b if vector else _mT(b)
        x = np.linalg.solve(a, b[..., None] if vector else b)
        x = x[..., 0] if vector else x
        return x if left or vector else _mT(x)
    return _lapack_call("linalg.solve", fn, (A, B), "getrf", _SOLVE_SINGULAR, A,
                        name="LinalgSolveExBackward0")


def solve_ex(A, B, *, left=True, check_errors=False):
    A = _square("linalg.solve_ex", A)
    info = _lapack_info("getrf", A._data)
    if check_errors:
        _raise_info("linalg.solve_ex", info, _SOLVE_SINGULAR)
    return _rt.linalg_solve_ex(solve(A, B, left=left), A._plain(info))


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """``X`` with ``A X = B`` (``left=False``: ``X A = B``) for the triangle of ``A`` that
    ``upper`` names (its diagonal taken as ones when ``unitriangular``)."""
    A = _matrix("linalg.solve_triangular", A)
    B = _matrix("linalg.solve_triangular", B, "B")
    _same_dtype("linalg.solve_triangular", A, B)
    if A.shape[-1] != A.shape[-2]:
        raise _err(f"linalg.solve_triangular: A must be batches of square matrices, but they "
                   f"are {A.shape[-2]} by {A.shape[-1]} matrices")
    n = A.shape[-1]
    if B.shape[-2 if left else -1] != n:
        raise _err(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation "
                   f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})")
    mask = np.triu(np.ones((n, n), bool)) if upper else np.tril(np.ones((n, n), bool))
    eye = np.eye(n, dtype=bool)

    def fn(a, b):
        tri = np.where(mask & ~eye, a, 0) if unitriangular else np.where(mask, a, 0)
        if unitriangular:
            tri = tri + eye.astype(A.dtype)
        if not left:
            return _mT(np.linalg.solve(_mT(tri), _mT(b)))
        return np.linalg.solve(tri, b)
    return _lapack_call("linalg.solve_triangular", fn, (A, B), "getrf", _SOLVE_SINGULAR, A,
                        name="LinalgSolveTriangularBackward0")


def cholesky(A, *, upper=False):
    """The lower factor ``L`` of ``A = L L^H`` (``upper``: ``U = L^H``), from ``A``'s lower
    triangle."""
    A = _square("linalg.cholesky", A)
    return _lapack_call("linalg.cholesky", _hermitian_input(A, lambda a: _mH(
        np.linalg.cholesky(a)) if upper else np.linalg.cholesky(a), upper), (A,), "potrf",
                        _NOT_PD, A, name="LinalgCholeskyExBackward0")


def _hermitian_input(A, f, upper=False):
    """``f`` applied to ``A`` read as torch reads a Hermitian matrix (its lower triangle,
    or the upper one), with torch's gradient: a Hermitian one, the symmetric part of the
    gradient of the triangle. The operand is ``(a + a^H) / 2`` plus a constant making its
    value the triangle mirrored (the constant is exactly zero for a Hermitian ``a``)."""
    v = A._data
    if v is None:
        return f
    if upper:
        mirrored = np.triu(v) + _mH(np.triu(v, 1))
    else:
        mirrored = np.tril(v) + _mH(np.tril(v, -1))
    if A.dtype.kind == "c":
        idx = np.arange(v.shape[-1])
        mirrored[..., idx, idx] = mirrored[..., idx, idx].real
    fix = mirrored - (v + _mH(v)) / 2

    def g(a):
        if isinstance(a, Tracer):
            a = (a + _mH(a)) / 2 + fix if np.any(fix) else (a + _mH(a)) / 2
        else:
            a = mirrored
        return f(a)
    return g


def cholesky_ex(A, *, upper=False, check_errors=False):
    A = _square("linalg.cholesky_ex", A)
    info = _lapack_info("potrf", A._data)
    if check_errors:
        _raise_info("linalg.cholesky_ex", info, _NOT_PD)
    if np.any(info > 0):    # LAPACK's partial factor, as torch's (no gradient)
        low = _per_matrix(A._data, _potrf_partial)
        return _rt.linalg_cholesky_ex(A._plain(np.ascontiguousarray(_mH(low)) if upper
                                               else low), A._plain(info))
    return _rt.linalg_cholesky_ex(cholesky(A, upper=upper), A._plain(info))


# -- factorizations -------------------------------------------------------------------------
def qr(A, mode="reduced"):
    """``(Q, R)``: ``mode`` ``'reduced'``, ``'complete'``, or ``'r'`` (``Q`` empty)."""
    A = _matrix("linalg.qr", A)
    if mode not in ("reduced", "complete", "r"):
        raise _err(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                   "(default), 'r', or 'complete'")
    if mode == "r":
        r = call(lambda a: np.linalg.qr(a, mode="r"), A, name="LinalgQrBackward0")
        return _rt.linalg_qr(A._plain(np.zeros((0,), A.dtype)), r)
    m, n = A.shape[-2:]
    if mode == "complete" and m > n and A._data is not None:
        # the reduced factors (differentiable), Q completed by LAPACK's extra columns as
        # constants and R by zero rows (torch's backward refuses this case)
        full_q = np.linalg.qr(A._data, mode="complete").Q

        def fn(a):
            q, r = np.linalg.qr(a)
            zeros = np.zeros(r.shape[:-2] + (m - n, n), r.dtype)
            return (np.concatenate([q, full_q[..., :, n:]], axis=-1),
                    np.concatenate([r, zeros], axis=-2))
        return _rt.linalg_qr(*call(fn, A, name="LinalgQrBackward0"))
    return _rt.linalg_qr(*call(lambda a: tuple(np.linalg.qr(a, mode=mode)), A,
                               name="LinalgQrBackward0"))


def _uplo(name, UPLO):  # noqa: N803
    if UPLO not in ("L", "U", "l", "u"):
        raise _err(f"{name}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return UPLO.upper()


def eigh(A, UPLO="L"):  # noqa: N803
    """Eigenvalues (ascending, real) and eigenvectors of a Hermitian ``A`` read from the
    triangle ``UPLO`` names."""
    A = _square("linalg.eigh", A)
    UPLO = _uplo("linalg.eigh", UPLO)  # noqa: N806
    return _rt.linalg_eigh(*call(_hermitian_input(A, lambda a: tuple(np.linalg.eigh(a, UPLO=UPLO)),
                                                  UPLO == "U"), A, name="LinalgEighBackward0"))


def eigvalsh(A, UPLO="L"):  # noqa: N803
    A = _square("linalg.eigvalsh", A)
    UPLO = _uplo("linalg.eigvalsh", UPLO)  # noqa: N806
    return call(_hermitian_input(A, lambda a: np.linalg.eigvalsh(a, UPLO=UPLO), UPLO == "U"), A,
                name="LinalgEighBackward0")


def _complex_of(dtype):
    return np.complex64 if np.dtype(dtype) in (np.float32, np.complex64) else np.complex128


def eig(A):
    """Eigenvalues and eigenvectors (unit columns, LAPACK's phases), complex always."""
    A = _square("linalg.eig", A)
    cdt = _complex_of(A.dtype)

    def fn(a):
        w, v = np.linalg.eig(a)
        return w.astype(cdt), v.astype(cdt)
    return _rt.linalg_eig(*call(fn, A, name="LinalgEigBackward0"))


def eigvals(A):
    A = _square("linalg.eigvals", A)
    cdt = _complex_of(A.dtype)
    return call(lambda a: np.linalg.eigvals(a).astype(cdt), A, name="LinalgEigBackward0")


def svd(A, full_matrices=True, *, driver=None):
    """``(U, S, Vh)``, singular values descending."""
    A = _matrix("linalg.svd", A)
    m, n = A.shape[-2:]
    if not full_matrices or m == n or A._data is None:
        return _rt.linalg_svd(*call(lambda a: tuple(np.linalg.svd(
            a, full_matrices=full_matrices)), A, name="LinalgSvdBackward0"))
    # full factors of a non-square matrix: the reduced ones (differentiable), completed by
    # LAPACK's extra columns of U (rows of Vh) as constants, whose gradient torch ignores
    k = min(m, n)
    full = np.linalg.svd(A._data, full_matrices=True)

    def fn(a):
        u, s_, vh = np.linalg.svd(a, full_matrices=False)
        if m > n:
            u = np.concatenate([u, full.U[..., :, k:]], axis=-1)
        else:
            vh = np.concatenate([vh, full.Vh[..., k:, :]], axis=-2)
        return u, s_, vh
    return _rt.linalg_svd(*call(fn, A, name="LinalgSvdBackward0"))


def svdvals(A, *, driver=None):
    A = _matrix("linalg.svdvals", A)
    return call(lambda a: np.linalg.svd(a, compute_uv=False), A, name="LinalgSvdBackward0")


def _tolerances(s, smax, m, n, atol, rtol, dtype):
    """torch's cutoff ``max(atol, rtol * smax)``; with neither given ``rtol`` is
    ``eps * max(m, n)``, with ``atol`` alone ``rtol`` is 0."""
    if atol is None and rtol is None:
        rtol = np.finfo(dtype).eps * builtins.max(m, n)
    atol = 0.0 if atol is None else _value(atol)
    rtol = 0.0 if rtol is None else _value(rtol)
    return np.maximum(np.asarray(atol)[..., None] if np.ndim(atol) else atol,
                      (np.asarray(rtol)[..., None] if np.ndim(rtol) else rtol) * smax)


def _real_of(dtype):
    return np.float32 if np.dtype(dtype) in (np.float32, np.complex64) else np.float64


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The pseudo-inverse through the SVD, singular values at or below ``max(atol, rtol *
    smax)`` dropped (``hermitian`` is a hint: the SVD of a Hermitian matrix has its
    eigenvalues' moduli, and its gradient is the general formula, as torch's)."""
    A = _matrix("linalg.pinv", A)
    m, n = A.shape[-2:]
    real = _real_of(A.dtype)

    def fn(a):
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        smax = np.max(s, axis=-1, keepdims=True)
        keep = s > _tolerances(s, smax, m, n, atol, rtol, real)
        inv_s = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0).astype(real)
        return (_mH(vh) * np.expand_dims(inv_s, -2).astype(a.dtype)) @ _mH(u)
    if m == 0 or n == 0:
        return A._plain(np.zeros(tuple(A.shape[:-2]) + (n, m), A.dtype))
    return call(fn, A, name="LinalgPinvBackward0")


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None):
    """The number of singular values above ``max(atol, rtol * smax)`` (int64)."""
    A = _matrix("linalg.matrix_rank", A)
    if tol is not None:
        atol, rtol = tol, 0.0
    a = A._concrete("linalg.matrix_rank")
    m, n = a.shape[-2:]
    if a.size == 0:
        return A._plain(np.zeros(a.shape[:-2], np.int64))
    s = np.abs(np.linalg.eigvalsh(a)) if hermitian else np.linalg.svd(a, compute_uv=False)
    smax = np.max(s, axis=-1, keepdims=True)
    cut = _tolerances(s, smax, m, n, atol, rtol, _real_of(a.dtype))
    return A._plain(np.sum(s > cut, axis=-1).astype(np.int64))


def lstsq(A, B, rcond=None, *, driver=None):
    """``(solution, residuals, rank, singular_values)`` as torch's CPU drivers fill them:
    the solution always (through the SVD, values at or below ``rcond * smax`` dropped;
    ``rcond`` None: ``eps * max(m, n)``); ``rank`` for ``gelsy`` (the default), ``gelsd``
    and ``gelss``; the singular values for ``gelsd`` and ``gelss``; the residuals for
    full-rank tall matrices and a driver other than ``gelsy``. Other parts are empty. As
    in torch, the solution and the residuals carry gradients, the rest none."""
    A = _matrix("torch.linalg.lstsq", A)
    B = _as_tensor(B, A)
    _floating("torch.linalg.lstsq", B)
    _same_dtype("torch.linalg.lstsq", A, B)
    driver = "gelsy" if driver is None else driver
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise _err(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, "
                   f"gelsd, gelss), but got {driver}")
    vector = B.dim() == A.dim() - 1
    m, n = A.shape[-2:]
    if B.shape[-1 if vector else -2] != m:
        raise _err("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    real = _real_of(A.dtype)
    cut = np.finfo(real).eps * builtins.max(m, n) if rcond is None or rcond < 0 else rcond

    def fn(a, b):
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        keep = s > cut * np.max(s, axis=-1, keepdims=True)
        inv_s = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0).astype(real)
        bm = b[..., None] if vector else b
        x = _mH(vh) @ (np.expand_dims(inv_s, -1).astype(a.dtype) * (_mH(u) @ bm))
        return (x[..., 0] if vector else x), s

    x, s = call(fn, A, B, name="LinalgLstsqBackward0")
    s_data = s._data
    rank = np.sum(s_data > cut * np.max(s_data, axis=-1, keepdims=True), axis=-1).astype(np.int64)
    empty = A._plain(np.zeros((0,), real))
    full_rank = bool(np.all(rank == n))
    residuals = empty
    if m > n and full_rank and driver != "gelsy":
        r = B - (A @ x.unsqueeze(-1)).squeeze(-1) if vector else B - A @ x
        residuals = _named((r.abs() ** 2).sum(-1 if vector else -2), "LinalgLstsqBackward0")
    return _rt.linalg_lstsq(x, residuals,
                            A._plain(rank) if driver != "gels" else
                            A._plain(np.zeros((0,), np.int64)),
                            s.detach() if driver in ("gelsd", "gelss") else empty)


def cond(A, p=None):
    """``smax / smin`` (``p`` None or 2; -2: ``smin / smax``), else
    ``norm(A, p) * norm(inv(A), p)``; real."""
    A = _matrix("linalg.cond", A)
    if p in (None, 2, -2):
        s = svdvals(A)
        big, small = s[..., 0], s[..., -1]
        return _named(big / small if p in (None, 2) else small / big, "SqueezeBackward1")
    A = _square("linalg.cond", A)
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


def cross(input, other, *, dim=-1):  # noqa: A002
    input, other = _as_tensor(input), _as_tensor(other, input)
    if input.dim() != other.dim():
        raise _err("linalg.cross: inputs must have the same number of dimensions.")
    a, b = input.shape[dim], other.shape[dim]
    if a != 3 or b != 3:
        raise _err(f"linalg.cross: inputs dimension {dim} must have length 3. Got {a} and {b}")
    return call(lambda x, y: np.cross(x, y, axisa=dim, axisb=dim, axisc=dim), input, other,
                name="LinalgCrossBackward0")


def multi_dot(tensors):
    tensors = [_as_tensor(t) for t in tensors]
    if len(tensors) < 2:
        raise _err(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for k, t in enumerate(tensors):
        want = (1, 2) if k in (0, len(tensors) - 1) else (2,)
        if t.dim() not in want:
            which = "first" if k == 0 else "last" if k == len(tensors) - 1 else None
            raise _err(f"multi_dot(): the {which} tensor must be 1D or 2D but got {t.dim()}D"
                       if which else f"multi_dot(): tensor {k} must be 2D but got {t.dim()}D")
    return call(lambda *xs: np.linalg.multi_dot(list(xs)), *tensors, name="ViewBackward0")


def matrix_power(A, n):
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not "
                        f"{type(n).__name__}")
    A = _as_tensor(A)
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise _err(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                   f"{A.shape[-2] if A.dim() > 1 else 1} by {A.shape[-1]} matrices")
    if n < 0:
        A = inv(A)
        n = -n
    name = "torch::autograd::CopyBackwards" if n == 0 else "CloneBackward0" if n == 1 else \
        "UnsafeViewBackward0" if A.dim() > 2 else "MmBackward0"
    return call(lambda a: np.linalg.matrix_power(a, operator.index(n)), A, name=name)


def matrix_exp(A):
    """The matrix exponential (the registry's ``expm``, SciPy's algorithm)."""
    A = _square("linalg.matrix_exp", A)
    if A.dtype.kind == "c":
        raise _err("linalg.matrix_exp: complex inputs are not supported by tracegrad")
    from ..ir import apply

    def fn(a):
        if isinstance(a, Tracer):
            return apply("expm", a)
        import scipy.linalg
        return np.asarray(scipy.linalg.expm(a), a.dtype)
    return call(fn, A, name="LinalgMatrixExpBackward0")


def vecdot(x, y, *, dim=-1):
    """``sum(conj(x) * y, dim)``."""
    x, y = _as_tensor(x), _as_tensor(y, x)
    return (x.conj() * y if x.dtype.kind == "c" else x * y).sum(dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return _as_tensor(A).diagonal(offset, dim1, dim2)


def matmul(input, other):  # noqa: A002
    return _as_tensor(input) @ other


def tensorinv(A, ind=2):
    """The inverse of ``A`` read as a matrix of its first ``ind`` dims by the rest."""
    A = _as_tensor(A)
    if ind <= 0:
        raise _err(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if math.prod(rows) != math.prod(cols):
        raise _err(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                   f"prod(self.shape[:ind]), but got {math.prod(cols)} != {math.prod(rows)}")
    return inv(A.reshape(math.prod(rows), math.prod(cols))).reshape(*cols, *rows)


def tensorsolve(A, B, dims=None):
    """``X`` with ``tensordot(A, X, X.ndim) == B``."""
    A, B = _as_tensor(A), _as_tensor(B, A)
    if dims is not None:
        nd = A.dim()
        moved = [d % nd for d in dims]
        A = A.permute(*[d for d in range(nd) if d not in moved], *moved)
    rest = tuple(A.shape[B.dim():])
    if math.prod(rest) != B.numel():
        raise _err("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) "
                   f"== prod(self.shape[:other.ndim]), but got {math.prod(rest)} != "
                   f"{B.numel()}")
    return solve(A.reshape(B.numel(), math.prod(rest)), B.reshape(-1)).reshape(*rest)


def vander(x, *, N=None):  # noqa: N803
    """``[1, x, x**2, ..., x**(N-1)]`` along a new last dim (cumulative products)."""
    x = _as_tensor(x)
    if x.dim() < 1:
        raise _err("linalg.vander: x must have at least one dimension.")
    n = x.shape[-1] if N is None else N
    if n < 0:
        raise _err("linalg.vander: N must be greater than 1.")
    if x.dtype.kind == "b":
        raise _err("linalg.vander supports only floating, complex, and integral dtypes, "
                   "but got Bool")
    ones = x._plain(np.ones(tuple(x.shape) + (1,), x.dtype if x.dtype.kind in "fc"
                            else np.int64))
    if n <= 1:
        return ones[..., :n]
    powers = x.unsqueeze(-1).expand(*x.shape, n - 1).cumprod(-1)
    return call(lambda ts: np.concatenate(ts, axis=-1), [ones, powers], name="CatBackward0")


def householder_product(A, tau):
    """The first ``n`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H`` with
    ``v_i`` column ``i`` of ``A`` below the diagonal and 1 on it (LAPACK's ``orgqr``)."""
    A, tau = _as_tensor(A), _as_tensor(tau, A)
    _floating("torch.linalg.householder_product", A)
    if A.dim() < 2:
        raise _err("torch.linalg.householder_product: input must have at least 2 dimensions.")
    m, n = A.shape[-2:]
    k = tau.shape[-1]
    if m < n:
        raise _err("torch.linalg.householder_product: input.shape[-2] must be greater than or "
                   "equal to input.shape[-1]")
    if n < k:
        raise _err("torch.linalg.householder_product: input.shape[-1] must be greater than or "
                   "equal to tau.shape[-1]")
    _same_dtype("torch.linalg.householder_product", A, tau)
    cols = min(n, k)
    low = np.tril(np.ones((m, cols), bool), -1)
    eye = np.eye(m, cols, dtype=A.dtype)

    def fn(a, t):
        v = np.where(low, a[..., :, :cols], 0) + eye
        q = np.broadcast_to(np.eye(m, dtype=a.dtype), a.shape[:-2] + (m, m))
        for i in range(cols):
            vi = v[..., :, i:i + 1]
            q = q - ((q @ vi) * t[..., i][..., None, None]) @ _mH(vi)
        return q[..., :, :n]
    return call(fn, A, tau, name="LinalgHouseholderProductBackward0")


# -- LU ---------------------------------------------------------------------------------------
def _lu_pivots(a):
    """LAPACK's (getrf's) pivots, 0-based, for each matrix of the batch ``a``, and its
    info."""
    from scipy.linalg import lapack
    batch = a.shape[:-2]
    m, n = a.shape[-2:]
    flat = a.reshape((-1, m, n))
    piv = np.zeros((flat.shape[0], min(m, n)), np.int64)
    info = np.zeros(flat.shape[0], np.int32)
    for b, mat in enumerate(flat):
        if mat.size:
            getrf = lapack.get_lapack_funcs("getrf", (mat,))
            _, p, info[b] = getrf(mat)
            piv[b] = p[:min(m, n)]
    return piv.reshape(batch + (min(m, n),)), info.reshape(batch)


def _permutation(piv, m):
    """The row order ``perm`` (``(P^T A) = A[perm]``) from LAPACK's swaps."""
    batch = piv.shape[:-1]
    flat = piv.reshape((-1, piv.shape[-1]))
    perm = np.tile(np.arange(m), (flat.shape[0], 1))
    for b, p in enumerate(flat):
        for i, j in enumerate(p):
            perm[b, [i, j]] = perm[b, [j, i]]
    return perm.reshape(batch + (m,))


def _lu_nopivot(a):
    """``L`` (unit lower, m x K) and ``U`` (K x n) with ``a = L U`` by elimination (no
    pivoting), on values or tracers."""
    m, n = a.shape[-2:]
    K = min(m, n)  # noqa: N806
    batch = a.shape[:-2]
    if K == 0:
        return a[..., :, :0], a[..., :0, :]
    one = np.ones(batch + (1, 1), a.dtype)
    u = a[..., :1, :]
    col = a[..., 1:, :1] / a[..., :1, :1]
    if K == 1:
        return np.concatenate([one, col], axis=-2), u
    l2, u2 = _lu_nopivot(a[..., 1:, 1:] - col @ u[..., :, 1:])
    top = np.concatenate([one, np.zeros(batch + (1, K - 1), a.dtype)], axis=-1)
    low = np.concatenate([top, np.concatenate([col, l2], axis=-1)], axis=-2)
    right = np.concatenate([np.zeros(batch + (K - 1, 1), a.dtype), u2], axis=-1)
    return low, np.concatenate([u, right], axis=-2)


def _permuted(a, perm):
    idx = np.broadcast_to(perm[..., :, None], perm.shape + (a.shape[-1],))
    return np.take_along_axis(a, idx, axis=-2)


def _lu_parts(name, A):
    A = _matrix(name, A)
    piv, info = _lu_pivots(A._concrete(name))
    perm = _permutation(piv, A.shape[-2])
    return A, piv, info, perm


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    if not pivot:
        raise _err("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    A, piv, info, perm = _lu_parts("linalg.lu_factor_ex", A)
    m, n = A.shape[-2:]
    K = min(m, n)  # noqa: N806

    def fn(a):
        low, up = _lu_nopivot(_permuted(a, perm))
        batch = a.shape[:-2]
        below = np.where(np.tril(np.ones((m, K), bool), -1), low, 0)
        return np.concatenate([up, np.zeros(batch + (m - K, n), a.dtype)], axis=-2) + \
            np.concatenate([below, np.zeros(batch + (m, n - K), a.dtype)], axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lu_packed = call(fn, A, name="LinalgLuFactorExBackward0")
    if check_errors:
        _raise_info("torch.linalg.lu_factor_ex", info, _LU_SINGULAR, RuntimeError)
    return _rt.linalg_lu_factor_ex(lu_packed, A._plain((piv + 1).astype(np.int32)),
                                   A._plain(info))


_LU_SINGULAR = ("U[{0},{0}] is zero and using it on lu_solve would result in a division by "
                "zero. If you still want to perform the factorization, consider calling "
                "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")


def lu_factor(A, *, pivot=True):
    """``(LU, pivots)``: ``L`` below the diagonal (its unit diagonal implied), ``U`` on and
    above it; pivots 1-based, int32, as LAPACK's ``getrf``."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)  # noqa: N806
    _raise_info("torch.linalg.lu_factor", info._data, _LU_SINGULAR, RuntimeError)
    return _rt.linalg_lu_factor(LU, pivots)


def lu(A, *, pivot=True):
    """``(P, L, U)`` with ``A = P L U``."""
    if not pivot:
        raise _err("linalg.lu: LU without pivoting is not implemented on the CPU")
    A, piv, info, perm = _lu_parts("linalg.lu", A)
    m = A.shape[-2]
    P = np.zeros(tuple(A.shape[:-2]) + (m, m), A.dtype)  # noqa: N806
    np.put_along_axis(P, perm[..., :, None], 1, axis=-1)
    P = np.swapaxes(P, -1, -2)  # noqa: N806  (A = P L U, so P^T A = A[perm])
    with np.errstate(divide="ignore", invalid="ignore"):
        L, U = call(lambda a: _lu_nopivot(_permuted(a, perm)), A,  # noqa: N806
                    name="LinalgLuBackward0")
    return _rt.linalg_lu(A._plain(np.ascontiguousarray(P)), L, U)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):  # noqa: N803
    """``X`` with ``A X = B`` from ``lu_factor(A)``'s result (``adjoint``: ``A^H X = B``;
    ``left=False``: ``X A = B``)."""
    LU, B = _square("linalg.lu_solve", LU, "LU"), _as_tensor(B, LU)  # noqa: N806
    _same_dtype("linalg.lu_solve", LU, B)
    n = LU.shape[-1]
    piv = np.asarray(_value(pivots), np.int64) - 1
    perm = _permutation(piv, n)
    low = np.tril(np.ones((n, n), bool), -1)
    eye = np.eye(n, dtype=LU.dtype)
    up = np.triu(np.ones((n, n), bool))

    def fn(lu_, b):
        L = np.where(low, lu_, 0) + eye  # noqa: N806
        U = np.where(up, lu_, 0)  # noqa: N806
        inv_perm = np.argsort(perm, axis=-1)
        if left and not adjoint:      # A = P L U: X = U^-1 L^-1 P^T B
            return np.linalg.solve(U, np.linalg.solve(L, _permuted(b, perm)))
        if left:                      # A^H X = B: U^H L^H P^T X = B
            y = np.linalg.solve(_mH(L), np.linalg.solve(_mH(U), b))
            return _permuted(y, inv_perm)
        bt = _mH(b)                   # X A = B  <=>  A^H X^H = B^H
        if not adjoint:
            y = np.linalg.solve(_mH(L), np.linalg.solve(_mH(U), bt))
            return _mH(_permuted(y, inv_perm))
        return _mH(np.linalg.solve(U, np.linalg.solve(L, _permuted(bt, perm))))
    return call(fn, LU, B, name="LinalgLuSolveBackward0")


# -- LDL (Bunch-Kaufman) ------------------------------------------------------------------------
_ldl_factor_result = _rt._result("linalg_ldl_factor", ["LD", "pivots"])
_ldl_factor_ex_result = _rt._result("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


def _tensor_arg(what, arg, pos, x):
    """``x``, which torch's binding takes only as a tensor (torch's TypeError otherwise)."""
    if not isinstance(x, TensorBase):
        t = type(x)
        name = t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
        raise TypeError(f"{what}(): argument '{arg}' (position {pos}) must be Tensor, not {name}")
    return x


class _NoDerivative:
    """A ``pure_callback`` (``ir/prims/callback.py``) giving a result LAPACK computed from
    the operands' values, whose derivative rules raise torch's error for the ATen
    operation ``op`` it stands for."""
    vectorized = False

    def __init__(self, op, value, error=None):
        self.op, self.value, self.name = op, value, f"torch.linalg.{op}"
        self.out_avals = ((value.shape, value.dtype),)
        self.error = error

    def run(self, operands):
        return (self.value,)

    def vjp(self, *args):
        if self.error is not None:
            raise self.error
        raise RuntimeError(f"derivative for aten::{self.op} is not implemented")

    jvp = vjp


def _without_derivative(op, value, *operands, name="NotImplemented", error=None):
    """``value`` (an array) as the result of ``operands``: when one of them is
    differentiated (it requires grad, or stands for a transform's traced value), a backward
    through the result raises torch's ``derivative for aten::{op} is not implemented``
    (or ``error``, where torch's differs)."""
    from ..ir import apply
    callback = _NoDerivative(op, value, error)

    def fn(*xs):
        if any(isinstance(x, Tracer) for x in xs):
            out = apply("pure_callback", *xs, callback=callback)
            return out[0] if isinstance(out, (tuple, list)) else out
        return value
    return call(fn, *operands, name=name)


def _ldl_routine(kind, dtype, hermitian):
    return ("he" if hermitian and np.dtype(dtype).kind == "c" else "sy") + kind


def _sytrf(a, hermitian):
    """LAPACK's ``sytrf`` (``hetrf``), lower triangle, of each matrix of the batch ``a``
    (with the optimal workspace, as torch queries it): ``(LD, pivots, info)``."""
    from scipy.linalg import lapack
    n = a.shape[-1]
    flat = a.reshape((-1, n, n))
    ld = np.zeros(flat.shape, a.dtype)
    piv = np.zeros(flat.shape[:-1], np.int32)
    info = np.zeros(flat.shape[0], np.int32)
    routine = _ldl_routine("trf", a.dtype, hermitian)
    for k, m in enumerate(flat):
        trf, trf_lwork = lapack.get_lapack_funcs((routine, routine + "_lwork"), (m,))
        work, _ = trf_lwork(n, lower=1)
        lwork = builtins.max(int(np.real(work)), 1)
        out, piv[k], info[k] = trf(np.tril(m), lower=1, lwork=lwork)
        ld[k] = np.tril(out)
    batch = a.shape[:-2]
    return ld.reshape(a.shape), piv.reshape(batch + (n,)), info.reshape(batch)


_LDL_UNKNOWN = "{name}: Unknown error code: {info}."


def ldl_factor_ex(input, *, hermitian=False, check_errors=False):  # noqa: A002
    """``(LD, pivots, info)``: LAPACK's ``sytrf`` (``hetrf`` for a complex ``A`` with
    ``hermitian``) of the lower triangle of ``A``, ``A = P L D L^H P^T`` with ``D`` of 1x1
    and 2x2 blocks. ``LD`` holds ``L`` below the diagonal (its unit diagonal implied) and
    ``D``'s lower triangle; ``pivots`` (int32, 1-based) are LAPACK's (``pivots[k] < 0``: a
    2x2 block); ``info`` (int32) the index of a zero diagonal of ``D``, or 0."""
    return _ldl_factor("torch.linalg.ldl_factor_ex", "linalg_ldl_factor_ex", input,
                       hermitian, check_errors)


def _ldl_factor(name, binding, A, hermitian, check_errors):
    A = _tensor_arg(binding, "input", 1, A)
    what = "torch.linalg.ldl_factor_ex"
    if A.dim() < 2:
        raise _err(f"{what}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise _err(f"{what}: A must be batches of square matrices, but they are "
                   f"{A.shape[-2]} by {A.shape[-1]} matrices")
    _floating(what, A)
    batch, n = tuple(A.shape[:-2]), A.shape[-1]
    if A.numel() == 0:
        ld = np.zeros(tuple(A.shape), A.dtype)
        piv = np.zeros(batch + (n,), np.int32)
        info = np.zeros(batch, np.int32)
    else:
        if A.dtype == np.float16:
            raise NotImplementedError('"ldl_factor_kernel_cpu" not implemented for \'Half\'')
        ld, piv, info = _sytrf(np.asarray(A._concrete(binding)), hermitian)
    if check_errors:
        _ldl_check(name, info)
    LD = _without_derivative("linalg_ldl_factor_ex", ld, A)  # noqa: N806
    return _ldl_factor_ex_result(LD, A._plain(piv), A._plain(info))


def _ldl_check(name, info):
    """torch's ``_linalg_check_errors`` for an API it has no message for: an internal
    assert naming the first nonzero ``info`` (no batch element)."""
    bad = np.flatnonzero(info.reshape(-1))
    if bad.size:
        code = int(info.reshape(-1)[bad[0]])
        raise RuntimeError(_LDL_UNKNOWN.format(name=name, info=code))


def ldl_factor(input, *, hermitian=False):  # noqa: A002
    """``(LD, pivots)`` of ``ldl_factor_ex``; a zero diagonal of ``D`` raises torch's
    ``RuntimeError`` (``torch.linalg.ldl_factor: Unknown error code: k.``)."""
    LD, pivots, info = _ldl_factor("torch.linalg.ldl_factor", "linalg_ldl_factor", input,  # noqa: N806
                                   hermitian, False)
    _ldl_check("torch.linalg.ldl_factor", info._data)
    return _ldl_factor_result(LD, pivots)


def _broadcast_batch(a, b):
    """torch's ``infer_size`` of two batch shapes (``a`` is B's, ``b`` LD's)."""
    n = builtins.max(len(a), len(b))
    out = []
    for i in range(n):
        da = a[i - n + len(a)] if i - n + len(a) >= 0 else 1
        db = b[i - n + len(b)] if i - n + len(b) >= 0 else 1
        if da != db and da != 1 and db != 1:
            raise _err(f"The size of tensor a ({da}) must match the size of tensor b ({db}) at "
                       f"non-singleton dimension {i}")
        out.append(db if da == 1 else da)
    return tuple(out)


def _valid_pivots(p):
    """Whether ``p`` (one matrix's, each ``1 <= |p| <= n``) pair their 2x2 blocks as
    LAPACK's ``sytrs`` reads them (a negative pivot at the end makes it read out of
    bounds: torch's kernel crashes there)."""
    n, k = len(p), 0
    while k < n:
        if p[k] > 0:
            k += 1
        elif k + 1 == n or p[k + 1] > 0:
            return False
        else:
            k += 2
    return True


def ldl_solve(LD, pivots, B, *, hermitian=False):  # noqa: N803
    """``X`` with ``A X = B`` from ``ldl_factor(A)``'s ``(LD, pivots)`` (LAPACK's ``sytrs``,
    ``hetrs`` for a complex ``LD`` with ``hermitian``); batches broadcast."""
    name = "torch.linalg.ldl_solve"
    LD = _tensor_arg("linalg_ldl_solve", "LD", 1, LD)  # noqa: N806
    pivots = _tensor_arg("linalg_ldl_solve", "pivots", 2, pivots)
    B = _tensor_arg("linalg_ldl_solve", "B", 3, B)  # noqa: N806
    if LD.dim() < 2:
        raise _err(f"{name}: The input tensor A must have at least 2 dimensions.")
    n = LD.shape[-1]
    if n != LD.shape[-2]:
        raise _err(f"{name}: A must be batches of square matrices, but they are "
                   f"{LD.shape[-2]} by {n} matrices")
    _floating(name, LD)
    if B.dtype != LD.dtype:
        raise _err(f"Expected b and A to have the same dtype, but found b of type "
                   f"{_scalar_name(B.dtype)} and A of type {_scalar_name(LD.dtype)} instead.")
    if B.dim() == 0:
        raise IndexError("Dimension specified as -2 but tensor has no dimensions")
    if B.dim() == 1:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -2)")
    if B.shape[-2] != n:
        raise _err(f"Incompatible matrix sizes for {name}: each A matrix is {n} by {n} but each "
                   f"b matrix is {B.shape[-2]} by {B.shape[-1]}")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        shape = ", ".join(str(d) for d in pivots.shape)
        raise _err(f"{name}: Expected LD.shape[:-1] and pivots.shape to be the same, but got "
                   f"pivots with shape [{shape}] instead")
    if pivots.dtype.kind not in "iu":
        raise _err(f"{name}: Expected pivots to be integers. Got {_scalar_name(pivots.dtype)}")
    batch = _broadcast_batch(tuple(B.shape[:-2]), tuple(LD.shape[:-2]))
    size = np.abs(np.asarray(pivots._concrete(name), np.int64))
    for bad, bound in ((size < 1, ">= 1"), (size > n, "<= LD.size(-2)")):
        if bad.any():
            raise _err(f"Pivots given to ldl_solve must all satisfy |pivot| {bound}. Did you "
                       "properly pass the result of ldl_factor?")
    k = B.shape[-1]
    shape = batch + (n, k)
    if LD.numel() == 0 or pivots.numel() == 0 or B.numel() == 0 or not builtins.all(shape):
        x = np.zeros(shape, B.dtype)
    else:
        if LD.dtype == np.float16:
            raise NotImplementedError('"ldl_solve_kernel_cpu" not implemented for \'Half\'')
        ld = np.broadcast_to(np.asarray(LD._concrete(name)), batch + (n, n)).reshape(-1, n, n)
        piv = np.broadcast_to(np.asarray(pivots._concrete(name)), batch + (n,)).reshape(-1, n)
        b = np.broadcast_to(np.asarray(B._concrete(name)), shape).reshape((-1, n, k))
        from scipy.linalg import lapack
        routine = _ldl_routine("trs", LD.dtype, hermitian)
        x = np.empty(b.shape, B.dtype)
        for i in range(b.shape[0]):
            p = piv[i].astype(np.int32)
            if not _valid_pivots(p):
                raise _err(f"{name}: pivots {p.tolist()} do not pair their 2x2 blocks as "
                           "LAPACK's sytrf does (a negative pivot without its partner: LAPACK "
                           "would read out of bounds). Did you properly pass the result of "
                           "ldl_factor?")
            trs = lapack.get_lapack_funcs(routine, (ld[i],))
            x[i] = trs(ld[i], p, b[i], lower=1)[0]
        x = x.reshape(shape)
    return _without_derivative("linalg_ldl_solve", x, LD, B)


# -- torch's older names (torch.det, torch.inverse, ...) -----------------------------------------
def _det(input):  # noqa: A002
    return det(input)


def logdet(input):  # noqa: A002
    """``log(det(A))``: NaN for a negative determinant, -inf for a zero one."""
    A = _square("linalg.det", input)
    with np.errstate(invalid="ignore", divide="ignore"):
        return call(lambda a: np.log(np.linalg.det(a)), A, name="WhereBackward0")


def _slogdet(input):  # noqa: A002
    return _rt.slogdet(*slogdet(input))


def inverse(input):  # noqa: A002
    return inv(input)


def _cholesky(input, upper=False):  # noqa: A002
    return _named(cholesky(input, upper=upper), "CholeskyBackward0")


def cholesky_solve(B, L, upper=False):  # noqa: N803
    """``X`` with ``A X = B`` for ``A = L L^H`` (``upper``: ``A = U^H U``)."""
    L = _as_tensor(L)  # noqa: N806
    B = _as_tensor(B, L)  # noqa: N806
    low = L.mH if upper else L
    return _named(solve_triangular(low.mH, solve_triangular(low, B, upper=False), upper=True),
                  "CholeskySolveBackward0")


def cholesky_inverse(L, upper=False):  # noqa: N803
    L = _as_tensor(L)  # noqa: N806
    eye = L._plain(np.broadcast_to(np.eye(L.shape[-1], dtype=L.dtype), tuple(L.shape)).copy())
    return _named(cholesky_solve(eye, L, upper), "CholeskyInverseBackward0")


def _qr(input, some=True):  # noqa: A002
    return _rt.qr(*qr(input, "reduced" if some else "complete"))


def _svd(input, some=True, compute_uv=True):  # noqa: A002
    """torch.svd: ``(U, S, V)`` with ``V`` (not ``Vh``); ``compute_uv=False``: zero U and V."""
    A = _as_tensor(input)
    if not compute_uv:
        m, n = A.shape[-2:]
        k = min(m, n)
        batch = tuple(A.shape[:-2])
        return _rt.svd(A._plain(np.zeros(batch + (m, k if some else m), A.dtype)),
                       svdvals(A),
                       A._plain(np.zeros(batch + (n, k if some else n), A.dtype)))
    U, S, Vh = svd(A, full_matrices=not some)  # noqa: N806
    return _rt.svd(U, S, Vh.mH)


def pinverse(input, rcond=1e-15):  # noqa: A002
    return pinv(input, rtol=rcond)


def _cross(input, other, dim=None):  # noqa: A002
    input, other = _as_tensor(input), _as_tensor(other, input)
    if dim is None:         # torch: the first dim of size 3 (deprecated)
        dims = [d for d, s in enumerate(np.broadcast_shapes(tuple(input.shape),
                                                            tuple(other.shape))) if s == 3]
        if not dims:
            raise _err("no dimension of size 3 in input")
        dim = dims[0]
    return cross(input, other, dim=dim)


def _matrix_power(input, n):  # noqa: A002
    return matrix_power(input, n)


def _matrix_exp(input):  # noqa: A002
    return matrix_exp(input)


# -- torch's deprecated factorisation names (torch.lu, torch.triangular_solve, ...) ---------------
_lu_unpack_result = _rt._result("lu_unpack", ["P", "L", "U"])
_triangular_solve_result = _rt._result("triangular_solve", ["solution", "cloned_coefficient"])
_geqrf_result = _rt._result("geqrf", ["a", "tau"])


def _deprecated(message):
    import warnings
    warnings.warn(message, UserWarning, stacklevel=3)


def _lu(A, pivot=True, get_infos=False, out=None):  # noqa: N803
    """``torch.lu``: ``(LU, pivots)`` (and ``infos``) as ``linalg.lu_factor_ex``'s; a
    singular matrix is no error."""
    _deprecated("torch.lu is deprecated in favor of torch.linalg.lu_factor / "
                "torch.linalg.lu_factor_ex and will be removed in a future PyTorch release.")
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)  # noqa: N806
    return (LU, pivots, info) if get_infos else (LU, pivots)


def _lu_solve(input, LU_data, LU_pivots):  # noqa: A002, N803
    """``torch.lu_solve(b, LU, pivots)``: ``linalg.lu_solve(LU, pivots, b)``."""
    _deprecated("torch.lu_solve is deprecated in favor of torch.linalg.lu_solveand will be "
                "removed in a future PyTorch release.")
    return lu_solve(LU_data, LU_pivots, input)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):  # noqa: N803
    """``(P, L, U)`` from ``lu_factor``'s packed result: ``L`` unit lower (m x k), ``U``
    upper (k x n), ``P`` the permutation of the pivots; an unpacked part left out is
    empty."""
    LU = _matrix("lu_unpack", LU_data, "LU_data")  # noqa: N806
    m, n = LU.shape[-2:]
    k = min(m, n)
    batch = tuple(LU.shape[:-2])
    empty = LU._plain(np.zeros(0, LU.dtype))
    P = empty  # noqa: N806
    if unpack_pivots:
        piv = np.asarray(_value(LU_pivots), np.int64) - 1
        if piv.shape[-1:] != (k,):
            raise _err(f"torch.lu_unpack: Expected LU_pivots.size(-1) == min(LU_data.size(-1), "
                       f"LU_data.size(-2)), but got {piv.shape[-1]} and {k}")
        perm = _permutation(piv, m)
        p = np.zeros(batch + (m, m), LU.dtype)
        np.put_along_axis(p, perm[..., :, None], 1, axis=-1)
        P = LU._plain(np.ascontiguousarray(np.swapaxes(p, -1, -2)))  # noqa: N806
    if not unpack_data:
        return _lu_unpack_result(P, empty, empty)
    low = np.tril(np.ones((m, k), bool), -1)
    eye = np.eye(m, k, dtype=LU.dtype)
    up = np.triu(np.ones((k, n), bool))
    L, U = call(lambda a: (np.where(low, a[..., :, :k], 0) + eye,  # noqa: N806
                           np.where(up, a[..., :k, :], 0)), LU, name="LuUnpackBackward0")
    return _lu_unpack_result(P, L, U)


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):  # noqa: A002, N803
    """``(X, A.clone())`` with ``op(A) X = input``, ``op`` the transpose when ``transpose``
    (``torch.linalg.solve_triangular`` with its arguments the other way round)."""
    _deprecated("torch.triangular_solve is deprecated in favor of "
                "torch.linalg.solve_triangularand will be removed in a future PyTorch "
                "release.\ntorch.linalg.solve_triangular has its arguments reversed and does "
                "not return a copy of one of the inputs.\nX = torch.triangular_solve(B, "
                "A).solution\nshould be replaced with\nX = torch.linalg.solve_triangular(A, "
                "B).")
    A, B = _as_tensor(A), _as_tensor(input)  # noqa: N806
    coefficient = _mT(A) if transpose else A
    X = solve_triangular(coefficient, B, upper=upper != transpose,  # noqa: N806
                         unitriangular=unitriangular)
    return _triangular_solve_result(_named(X, "TriangularSolveBackward0"),
                                    _named(A.clone(), "TriangularSolveBackward0"))


def geqrf(input):  # noqa: A002
    """LAPACK's ``geqrf``: ``R`` on and above the diagonal of ``a``, the Householder vectors
    below it, their scales ``tau``; no derivative, as in torch."""
    from scipy.linalg import lapack
    A = _matrix("geqrf", input, "input")  # noqa: N806
    a = A._concrete("geqrf")
    m, n = a.shape[-2:]
    flat = a.reshape((-1, m, n))
    qr_ = np.empty_like(flat)
    tau = np.zeros((flat.shape[0], min(m, n)), a.dtype)
    for b, mat in enumerate(flat):
        if mat.size:
            routine = lapack.get_lapack_funcs("geqrf", (mat,))
            qr_[b], tau[b] = routine(mat)[:2]
    qr_ = qr_.reshape(a.shape)
    tau = tau.reshape(a.shape[:-2] + (min(m, n),))
    # (torch: NotImplementedError, geqrf's derivatives.yaml entry is not_implemented)
    error = NotImplementedError("the derivative for 'geqrf' is not implemented.")
    return _geqrf_result(
        _without_derivative("geqrf", qr_, A, name="GeqrfBackward0", error=error),
        _without_derivative("geqrf", tau, A, name="GeqrfBackward0", error=error))


def orgqr(input, tau):  # noqa: A002
    """``torch.orgqr``: ``linalg.householder_product``."""
    return householder_product(input, tau)


def ormqr(input, tau, other, left=True, transpose=False):  # noqa: A002
    """``Q other`` (``other Q`` when not ``left``; ``Q^H`` when ``transpose``) with the
    m x m ``Q = H_1 ... H_k`` of ``geqrf``'s reflectors, without forming it in LAPACK."""
    A, tau, C = _as_tensor(input), _as_tensor(tau, input), _as_tensor(other, input)  # noqa: N806
    _floating("torch.ormqr", A)
    if A.dim() < 2 or C.dim() < 2:
        raise _err("torch.ormqr: input and other must have at least 2 dimensions.")
    m = A.shape[-2]
    k = tau.shape[-1]
    if (C.shape[-2] if left else C.shape[-1]) != m:
        raise _err(f"torch.ormqr: other.shape[{-2 if left else -1}] must be equal to "
                   f"input.shape[-2]")
    if k > A.shape[-1]:
        raise _err("torch.ormqr: input.shape[-1] must be greater than or equal to "
                   "tau.shape[-1]")
    _same_dtype("torch.ormqr", A, tau)
    _same_dtype("torch.ormqr", A, C)
    low = np.tril(np.ones((m, k), bool), -1)
    eye = np.eye(m, k, dtype=A.dtype)

    def fn(a, t, c):
        v = np.where(low, a[..., :, :k], 0) + eye
        q = np.broadcast_to(np.eye(m, dtype=a.dtype), a.shape[:-2] + (m, m))
        for i in range(k):
            vi = v[..., :, i:i + 1]
            q = q - ((q @ vi) * t[..., i][..., None, None]) @ _mH(vi)
        if transpose:
            q = _mH(q)
        return q @ c if left else c @ q
    return call(fn, A, tau, C, name="OrmqrBackward0")


def nuclear_norm(input, dim=None, keepdim=False):  # noqa: A002
    """The sum of the singular values (deprecated: ``linalg.matrix_norm(A, "nuc")``)."""
    _deprecated("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It "
                "will be removed in a future PyTorch release. Please use "
                "`linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead")
    if isinstance(dim, bool):           # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim)


def frobenius_norm(input, dim, keepdim=False):  # noqa: A002
    """The 2-norm over ``dim`` (deprecated: ``linalg.vector_norm(A, 2, dim, keepdim)``)."""
    _deprecated("at::frobenius_norm is deprecated and it is just left for JIT compatibility. "
                "It will be removed in a future PyTorch release. Please use "
                "`linalg.vector_norm(A, 2., dim, keepdim)` instead")
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    return _named(vector_norm(input, 2, dim, keepdim), "NormBackward1")


def chain_matmul(*matrices, out=None):
    """The product of the matrices (deprecated: ``linalg.multi_dot``)."""
    _deprecated("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                "more tensors rather than multiple parameters.")
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if not matrices:
        raise _err("chain_matmul(): Expected one or more matrices")
    if len(matrices) == 1:
        m = _as_tensor(matrices[0])
        if m.dim() != 2:
            raise _err(f"Tensor dimension is {m.dim()}, expected 2 instead.")
        return m.clone()
    return multi_dot(list(matrices))


_REMOVED = {
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
             "`torch.linalg.lstsq` has reversed arguments and does not return the QR "
             "decomposition in the returned tuple (although it returns other information "
             "about the problem).",
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`. "
             "`torch.linalg.solve` has its arguments reversed and does not return the LU "
             "factorization.",
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather "
           "than real tensors mimicking complex tensors.",
    "symeig": "The default behavior has changed from using the upper triangular portion of "
              "the matrix by default to using the lower triangular portion.",
    "matrix_rank": "\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter "
                   "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.",
}


def _removed(name):
    def fn(*args, **kwargs):
        detail = _REMOVED[name]
        raise RuntimeError("This function was deprecated since version 1.9 and is now removed."
                           + ("" if detail.startswith("\n") else " ") + detail)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}``: removed in PyTorch 1.9; raises its error."
    return fn


def _scaled(input, prod_fn, beta, alpha, shape):  # noqa: A002
    """``fn(input, *operands) = beta * input + alpha * prod_fn(*operands)`` as torch's
    ``addmm`` family computes it: with ``beta == 0`` the input is not read (its NaNs do not
    reach the result; its gradient is zeros), integer tensors take the scalars as
    integers."""
    if input.dtype.kind in "iub":
        beta, alpha = int(beta), int(alpha)
    try:
        np.broadcast_shapes(tuple(input.shape), shape)
    except ValueError:
        raise _err(f"The expanded size of the tensor ({shape[-1]}) must match the existing "
                   f"size ({input.shape[-1]}) at non-singleton dimension {len(shape) - 1}.  "
                   f"Target sizes: {list(shape)}.  Tensor sizes: {list(input.shape)}") from None

    def fn(i, *xs):
        prod = prod_fn(*xs)
        if alpha != 1:
            prod = prod * np.asarray(alpha, prod.dtype)
        if beta == 0:
            return np.where(np.zeros(shape, bool), i, prod)
        return (i if beta == 1 else i * np.asarray(beta, i.dtype)) + prod
    return fn


def _scaled_sum(name, input, prod_fn, operands, beta, alpha, shape, inplace=False):  # noqa: A002
    input = _as_tensor(input, operands[0])  # noqa: A002
    fn = _scaled(input, prod_fn, beta, alpha, shape)
    if inplace:
        return input._inplace(fn, *operands, name=name)
    return call(fn, input, *operands, name=name)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None, _inplace=False):  # noqa: A002
    """``beta * input + alpha * (mat @ vec)``."""
    mat, vec = _as_tensor(mat), _as_tensor(vec)
    inp = _as_tensor(input, mat)
    if mat.dim() != 2 or vec.dim() != 1 or inp.dim() > 1:
        raise _err(f"vector + matrix @ vector expected, got {inp.dim()}, {mat.dim()}, "
                   f"{vec.dim()}")
    if mat.shape[1] != vec.shape[0] or (inp.dim() == 1 and inp.shape[0] not in (1,
                                                                                mat.shape[0])):
        raise _err(f"size mismatch, got input ({inp.shape[0] if inp.dim() else 1}), mat "
                   f"({mat.shape[0]}x{mat.shape[1]}), vec ({vec.shape[0]})")
    return _scaled_sum("AddmvBackward0", inp, np.matmul, (mat, vec), beta, alpha,
                       (mat.shape[0],), _inplace)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None, _inplace=False):  # noqa: A002
    """``beta * input + alpha * outer(vec1, vec2)``."""
    vec1, vec2 = _as_tensor(vec1), _as_tensor(vec2)
    for k, v in ((1, vec1), (2, vec2)):
        if v.dim() != 1:
            raise _err(f"addr: Expected 1-D argument vec{k}, but got {v.dim()}-D")
    return _scaled_sum("AddrBackward0", input, np.outer, (vec1, vec2), beta, alpha,
                       (vec1.shape[0], vec2.shape[0]), _inplace)


def _bmm_check(b1, b2):
    for k, b in ((1, b1), (2, b2)):
        if b.dim() != 3:
            raise _err(f"batch{k} must be a 3D tensor")
    if b1.shape[0] != b2.shape[0] or b1.shape[2] != b2.shape[1]:
        raise _err(f"Incompatible matrix sizes for bmm ({b1.shape[1]}x{b1.shape[2]} and "
                   f"{b2.shape[1]}x{b2.shape[2]})")


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None, _inplace=False):  # noqa: A002
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    b1, b2 = _as_tensor(batch1), _as_tensor(batch2)
    _bmm_check(b1, b2)
    return _scaled_sum("AddbmmBackward0", input, lambda x, y: np.sum(np.matmul(x, y), axis=0),
                       (b1, b2), beta, alpha, (b1.shape[1], b2.shape[2]), _inplace)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None, _inplace=False):  # noqa: A002
    """``beta * input + alpha * (batch1 @ batch2)``, batch by batch."""
    b1, b2 = _as_tensor(batch1), _as_tensor(batch2)
    _bmm_check(b1, b2)
    return _scaled_sum("BaddbmmBackward0", input, np.matmul, (b1, b2), beta, alpha,
                       (b1.shape[0], b1.shape[1], b2.shape[2]), _inplace)


LEGACY_FUNCTIONS = {"lu": _lu, "lu_solve": _lu_solve, "lu_unpack": lu_unpack,
                    "triangular_solve": triangular_solve, "geqrf": geqrf, "orgqr": orgqr,
                    "ormqr": ormqr, "nuclear_norm": nuclear_norm,
                    "frobenius_norm": frobenius_norm, "chain_matmul": chain_matmul,
                    "addmv": addmv, "addr": addr, "addbmm": addbmm, "baddbmm": baddbmm,
                    **{name: _removed(name) for name in _REMOVED}}


# torch.det & co. (functions.py puts them in tg's namespace), with torch's names
OLD_FUNCTIONS = {"det": _det, "logdet": logdet, "slogdet": _slogdet, "inverse": inverse,
                 "cholesky": _cholesky, "cholesky_solve": cholesky_solve,
                 "cholesky_inverse": cholesky_inverse, "qr": _qr, "svd": _svd,
                 "pinverse": pinverse, "cross": _cross, "matrix_power": _matrix_power,
                 "matrix_exp": _matrix_exp}
for _name, _fn in OLD_FUNCTIONS.items():
    _fn.__name__ = _fn.__qualname__ = _name
del _name, _fn


class LinalgMethods:
    """``Tensor``'s linear algebra: torch's older names (``t.det()``, ``t.svd()``, ...)."""

    __slots__ = ()

    def det(self):
        return det(self)

    def logdet(self):
        return logdet(self)

    def slogdet(self):
        return _slogdet(self)

    def inverse(self):
        return inv(self)

    def cholesky(self, upper=False):
        return _cholesky(self, upper)

    def cholesky_solve(self, input2, upper=False):
        """``X`` with ``A X = self`` for ``A = L L^H``, ``L`` = ``input2``."""
        return cholesky_solve(self, input2, upper)

    def cholesky_inverse(self, upper=False):
        return cholesky_inverse(self, upper)

    def qr(self, some=True):
        return _qr(self, some)

    def svd(self, some=True, compute_uv=True):
        return _svd(self, some, compute_uv)

    def pinverse(self, rcond=1e-15):
        return pinverse(self, rcond)

    def cross(self, other, dim=None):
        return _cross(self, other, dim)

    def matrix_power(self, n):
        return matrix_power(self, n)

    def matrix_exp(self):
        return matrix_exp(self)

    def lu(self, pivot=True, get_infos=False):
        return _lu(self, pivot, get_infos)

    def lu_solve(self, LU_data, LU_pivots):  # noqa: N803
        return _lu_solve(self, LU_data, LU_pivots)

    def triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):  # noqa: N803
        return triangular_solve(self, A, upper, transpose, unitriangular)

    def geqrf(self):
        return geqrf(self)

    def orgqr(self, input2):
        return orgqr(self, input2)

    def ormqr(self, input2, input3, left=True, transpose=False):
        return ormqr(self, input2, input3, left, transpose)

    def lstsq(self, A):  # noqa: N803
        return _removed("lstsq")()

    def solve(self, A):  # noqa: N803
        return _removed("solve")()

    def eig(self, eigenvectors=False):
        return _removed("eig")()

    def symeig(self, eigenvectors=False, upper=True):
        return _removed("symeig")()

    def addmv(self, mat, vec, *, beta=1, alpha=1):
        return addmv(self, mat, vec, beta=beta, alpha=alpha)

    def addr(self, vec1, vec2, *, beta=1, alpha=1):
        return addr(self, vec1, vec2, beta=beta, alpha=alpha)

    def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
        return addbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
        return baddbmm(self, batch1, batch2, beta=beta, alpha=alpha)

    def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
        mat1, mat2 = _as_tensor(mat1), _as_tensor(mat2)
        return _scaled_sum("AddmmBackward0", self, np.matmul, (mat1, mat2), beta, alpha,
                           (mat1.shape[0], mat2.shape[-1]), True)

    def addmv_(self, mat, vec, *, beta=1, alpha=1):
        return addmv(self, mat, vec, beta=beta, alpha=alpha, _inplace=True)

    def addr_(self, vec1, vec2, *, beta=1, alpha=1):
        return addr(self, vec1, vec2, beta=beta, alpha=alpha, _inplace=True)

    def addbmm_(self, batch1, batch2, *, beta=1, alpha=1):
        return addbmm(self, batch1, batch2, beta=beta, alpha=alpha, _inplace=True)

    def baddbmm_(self, batch1, batch2, *, beta=1, alpha=1):
        return baddbmm(self, batch1, batch2, beta=beta, alpha=alpha, _inplace=True)
