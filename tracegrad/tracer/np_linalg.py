"""``np.linalg`` on traced values, batched over leading axes like NumPy: NumPy's values
and dtypes (complex too; derivatives of complex values where the rules allow, else a
TraceError), eigenvectors and singular vectors with NumPy's own signs.

- ``inv``, ``solve``, ``det``, ``slogdet``, ``cholesky``: one primitive each;
- ``eigh`` / ``eigvalsh``, ``svd`` and ``qr``: the primitives of ``ir/prims/spectral.py``
  (its docstring states the sign and degenerate-spectrum conventions);
- composites of those: ``pinv`` (through the SVD), ``lstsq`` (through the SVD, NumPy's
  4-tuple; the solution and the singular values are differentiable), ``matrix_power``
  (repeated squaring, ``inv`` for negative powers), ``norm`` (every ``ord`` NumPy takes;
  ``2``, ``-2`` and ``'nuc'`` for matrices through the singular values).

``svd(full_matrices=True)`` of a non-square matrix gives NumPy's values and refuses to be
differentiated (the extra columns of ``U`` or rows of ``Vh`` are an arbitrary basis:
pass ``full_matrices=False``). Not supported: ``qr(mode='complete')`` of a tall matrix
and ``mode='raw'``.

``eig`` / ``eigvals`` (real or complex matrices) are the primitives of ``ir/prims/eig.py``.
Unlike NumPy, which returns real arrays when every eigenvalue of a real matrix is real,
their results are always complex (a graph fixes its dtypes before it sees values; JAX
does the same). Their derivatives need distinct eigenvalues: that module's docstring
says what the rules give at repeated ones (finite numbers, exact only for functions
that do not depend on how the tie is resolved; nothing at a defective matrix).
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.source import where
from .core import BATCHING
from .np_base import _single_axis, astype, coerce, dtype_of, implements, ndim_of, shape_of
from .np_reductions import max, min, sum  # noqa: A004  (the handlers of np.max, np.min, np.sum)
from .np_shapes import swapaxes


@implements(np.linalg.inv)
def inv(a):
    return apply("inv", coerce(a))


@implements(np.linalg.solve)
def solve(a, b):
    return apply("solve", coerce(a), coerce(b))


@implements(np.linalg.det)
def det(a):
    return apply("det", coerce(a))


@implements(np.linalg.slogdet)
def slogdet(a):
    a = coerce(a)
    return _result("SlogdetResult", *apply("slogdet", a))


@implements(np.linalg.cholesky)
def cholesky(a, /, *, upper=False):
    """``upper=True`` reads the upper triangle (NumPy's ``UPLO='U'``): the lower one of
    ``a^H``, whose factor ``L`` gives ``U = L^H``."""
    a = coerce(a)
    if upper:
        return _mH(apply("cholesky", _mH(a)))
    return apply("cholesky", a)


def _result(name, *parts):
    """NumPy 2's named result tuple (SlogdetResult, EighResult, SVDResult, QRResult, EigResult),
    or a plain tuple."""
    cls = getattr(getattr(np.linalg, "_linalg", None), name, None)
    return cls(*parts) if cls is not None else tuple(parts)


def _mT(x):
    return swapaxes(x, -1, -2)


def _mH(x):
    """The conjugate transpose (the transpose of a real array)."""
    return np.conj(_mT(x)) if dtype_of(x).kind == "c" else _mT(x)


def _check_uplo(UPLO):  # noqa: N803
    if UPLO not in ("L", "U"):
        raise TraceError(f"UPLO must be 'L' or 'U', got {UPLO!r}{where()}")
    return UPLO


@implements(np.linalg.eigh)
def eigh(a, UPLO="L"):  # noqa: N803
    """Eigenvalues (ascending) and eigenvectors, NumPy's signs (ir/prims/spectral.py)."""
    a, UPLO = coerce(a), _check_uplo(UPLO)
    return _result("EighResult", *apply("eigh", a, UPLO=UPLO))


@implements(np.linalg.eigvalsh)
def eigvalsh(a, UPLO="L"):  # noqa: N803
    return apply("eigvalsh", coerce(a), UPLO=_check_uplo(UPLO))


def _check_square(name, a):
    shape = shape_of(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise TraceError(f"np.linalg.{name} needs square matrices (or a batch of them), got "
                         f"shape {tuple(shape)}{where()}")


@implements(np.linalg.eig)
def eig(a):
    """``EigResult(eigenvalues, eigenvectors)`` (ir/prims/eig.py), real where NumPy's are."""
    a = coerce(a)
    _check_square("eig", a)
    w, v = apply("eig", a)
    if _real_spectrum(a, w):
        w, v = np.real(w), np.real(v)
    return _result("EigResult", w, v)


@implements(np.linalg.eigvals)
def eigvals(a):
    """The eigenvalues of ``eig``, in the same order, real where NumPy's are."""
    a = coerce(a)
    _check_square("eigvals", a)
    w = apply("eigvals", a)
    return np.real(w) if _real_spectrum(a, w) else w


def _real_spectrum(a, w):
    """NumPy returns real eigenvalues and eigenvectors for a real matrix whose eigenvalues
    are all real (every imaginary part exactly zero). That is read off the values at
    trace time and recorded as a guard, like ``bool(t)``: a compiled function traces
    again when a later matrix decides otherwise. Under tg.vmap the results are always
    complex (as jnp.linalg.eig's): its function sees one example, while NumPy would
    decide for the whole batch."""
    if np.dtype(dtype_of(a)).kind == "c" or BATCHING.get():
        return False
    return bool(np.all(np.imag(w) == 0))


@implements(np.linalg.svd)
def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """NumPy's U, s and Vh (its signs). ``hermitian=True`` is NumPy's own other
    algorithm, through ``eigh`` of the lower triangle (``_hermitian_svd``)."""
    a = coerce(a)
    if ndim_of(a) < 2:
        raise TraceError(f"svd needs a matrix (or a batch of them), got {ndim_of(a)}-d{where()}")
    if hermitian:
        _check_square("svd(hermitian=True)", a)
        return _hermitian_svd(a, compute_uv)
    if not compute_uv:
        return apply("svdvals", a)
    # full_matrices changes nothing for a square matrix: no parameter then, so that the
    # factors are the reduced ones the rules apply (the full ones have no derivative)
    m, n = shape_of(a)[-2:]
    full = {"full_matrices": True} if full_matrices and m != n else {}
    return _result("SVDResult", *apply("svd", a, **full))


def _hermitian_svd(a, compute_uv):
    """NumPy's ``svd(a, hermitian=True)``: the eigendecomposition of the lower triangle,
    the eigenvalues' magnitudes sorted descending, their signs moved into Vh."""
    if not compute_uv:
        w = apply("eigvalsh", a, UPLO="L")
        return np.flip(np.sort(apply("abs", w), axis=-1), axis=-1)
    w, v = apply("eigh", a, UPLO="L")
    order = np.flip(np.argsort(apply("abs", w), axis=-1), axis=-1)
    w = np.take_along_axis(w, order, axis=-1)
    u = np.take_along_axis(v, np.expand_dims(order, -2), axis=-1)
    sign = astype(np.sign(w), dtype_of(u))
    vh = _mH(u * np.expand_dims(sign, -2))
    return _result("SVDResult", u, apply("abs", w), vh)


@implements(np.linalg.qr)
def qr(a, mode="reduced"):
    a = coerce(a)
    if ndim_of(a) < 2:
        raise TraceError(f"qr needs a matrix (or a batch of them), got {ndim_of(a)}-d{where()}")
    m, n = shape_of(a)[-2:]
    if mode == "complete" and m > n:
        raise TraceError("np.linalg.qr(mode='complete') of a tall matrix: the extra columns "
                         f"of Q are an arbitrary basis with no derivative; use 'reduced'{where()}")
    if mode not in ("reduced", "complete", "r"):
        raise TraceError(f"np.linalg.qr mode={mode!r} is not supported on traced values "
                         f"(use 'reduced', 'complete' or 'r'){where()}")
    if m >= n:
        q, r = apply("qr", a)
    else:   # wide: Householder QR of [X | Y] is that of X, with R = [R_X | Q^T Y]
        x, y = a[..., :, :m], a[..., :, m:]
        q, rx = apply("qr", x)
        r = np.concatenate([rx, _mH(q) @ y], axis=-1)
    return r if mode == "r" else _result("QRResult", q, r)


def _svd_cutoff_inverse(s, cutoff):
    """1 / s where s > cutoff, else 0 (no gradient through the comparison)."""
    keep = s > cutoff
    return np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)


_NOVALUE = getattr(np, "_NoValue", None)


@implements(np.linalg.pinv)
def pinv(a, rcond=None, hermitian=False, *, rtol=_NOVALUE):
    """Through the SVD: ``Vh.T @ diag(1/s) @ U.T``, singular values at or below
    ``rcond * max(s)`` dropped, as NumPy does (``hermitian`` is a hint, not used)."""
    a = coerce(a)
    m, n = shape_of(a)[-2:]
    if rcond is None:
        if rtol is _NOVALUE:
            rcond = 1e-15
        elif rtol is None:
            if dtype_of(a).kind not in "fc":   # NumPy asks finfo of the input's dtype
                raise TraceError(f"np.linalg.pinv(rtol=None) of a {dtype_of(a)} array: NumPy "
                                 f"raises (finfo of a non-inexact dtype){where()}")
            rcond = builtins.max(m, n) * np.finfo(dtype_of(a)).eps
        else:
            rcond = rtol
    if m == 0 or n == 0:   # NumPy: an empty array of the transposed shape
        shape = (*shape_of(a)[:-2], n, m)
        return np.zeros(shape, dtype_of(a))   # NumPy keeps the dtype, even an integer one
    if dtype_of(a).kind == "c":   # NumPy's own steps: the SVD of conj(a), transposed
        a = np.conj(a)
    u, s, vh = apply("svd", a)
    cutoff = np.asarray(rcond)[..., None] * max(s, axis=-1, keepdims=True)
    return (_mT(vh) * np.expand_dims(_svd_cutoff_inverse(s, cutoff), -2)) @ _mT(u)


@implements(np.linalg.lstsq)
def lstsq(a, b, rcond=None):
    """NumPy's ``(x, residuals, rank, s)``: ``x = pinv(a) @ b`` through the SVD (singular
    values at or below ``rcond * max(s)`` dropped; ``rcond=None``: ``eps * max(m, n)``).
    ``residuals`` (squared 2-norms of ``b - a @ x``, per column) is empty unless ``a`` has
    full column rank and more rows than columns, as in NumPy; ``rank`` is an integer
    array without a gradient; ``x``, ``residuals`` and ``s`` are differentiable."""
    a, b = coerce(a), coerce(b)
    if ndim_of(a) != 2 or ndim_of(b) not in (1, 2):
        raise TraceError(f"lstsq needs a 2-d a and a 1-d or 2-d b{where()}")
    m, n = shape_of(a)
    if shape_of(b)[0] != m:
        raise TraceError(f"lstsq: a of shape {shape_of(a)} and b of shape {shape_of(b)} "
                         f"do not match{where()}")
    if rcond is None:
        dt = np.result_type(dtype_of(a), dtype_of(b), np.float64)
        rcond = np.finfo(dt).eps * builtins.max(m, n)
    u, s, vh = apply("svd", a)
    cutoff = rcond * max(s, axis=-1, keepdims=True)
    vector = ndim_of(b) == 1
    bm = b[:, None] if vector else b
    x = _mH(vh) @ (np.expand_dims(_svd_cutoff_inverse(s, cutoff), -1) * (_mH(u) @ bm))
    rank = astype(sum(s > cutoff, axis=-1), np.int32)    # LAPACK's integer, as in NumPy
    real = dtype_of(s)
    if bool(rank == n) and m > n:
        r = bm - a @ x
        residuals = sum(np.real(np.conj(r) * r) if dtype_of(r).kind == "c" else r * r, axis=0)
    else:
        residuals = np.zeros((0,), dtype=real)
    return (x[:, 0] if vector else x), residuals, rank, s


@implements(np.linalg.matrix_power)
def matrix_power(a, n):
    """Repeated squaring; a negative power inverts first; ``n == 0`` gives the identity
    (no gradient), batched over leading axes."""
    a = coerce(a)
    try:
        n = operator.index(n)
    except TypeError:
        raise TraceError(f"matrix_power needs an integer exponent, got {n!r}{where()}") from None
    shape = shape_of(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise TraceError(f"matrix_power needs square matrices, got shape {shape}{where()}")
    if n == 0:
        eye = np.eye(shape[-1], dtype=dtype_of(a))
        return np.broadcast_to(eye, shape) + 0 * a
    if n < 0:
        a, n = apply("inv", a), -n
    result, power = None, a
    while True:
        if n & 1:
            result = power if result is None else result @ power
        n >>= 1
        if not n:
            return result
        power = power @ power


@implements(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    """NumPy's steps: integers and booleans become float64; complex entries count by
    their moduli (the result is real)."""
    x = coerce(x)
    if dtype_of(x).kind not in "fc":
        x = astype(x, np.float64)
    nd = ndim_of(x)
    if axis is None:
        if ord is None:  # the 2-norm of the flattened array, whatever its shape
            return apply("sqrt", sum(_abs2(x), axis=None, keepdims=keepdims))
        if nd not in (1, 2):
            raise TraceError(f"improper number of dimensions to norm{where()}")
        axis = tuple(range(nd))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(_single_axis(a, nd) for a in axes)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        if axes[0] == axes[1]:
            raise TraceError(f"norm: duplicate axes given{where()}")
        return _matrix_norm(x, ord, axes, keepdims)
    raise TraceError(f"improper number of dimensions to norm{where()}")


def _abs2(x):
    """|x|**2, real: NumPy's ``(x.conj() * x).real``."""
    return np.real(np.conj(x) * x) if dtype_of(x).kind == "c" else x * x


def _vector_norm(x, ord, axes, keepdims):  # noqa: A002
    if ord is None or ord == 2:
        return apply("sqrt", sum(_abs2(x), axis=axes, keepdims=keepdims))
    ax = apply("abs", x)
    if ord == np.inf:
        return max(ax, axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return min(ax, axis=axes, keepdims=keepdims)
    if ord == 0:
        return sum(astype(apply("not_equal", x, 0), dtype_of(ax)), axis=axes, keepdims=keepdims)
    if ord == 1:
        return sum(ax, axis=axes, keepdims=keepdims)
    if isinstance(ord, str):
        raise TraceError(f"invalid norm order {ord!r} for vectors{where()}")
    return sum(ax ** float(ord), axis=axes, keepdims=keepdims) ** (1.0 / float(ord))


def _matrix_norm(x, ord, axes, keepdims):  # noqa: A002
    row, col = axes
    if ord is None or ord in ("fro", "f"):
        return apply("sqrt", sum(_abs2(x), axis=axes, keepdims=keepdims))
    if isinstance(ord, str) and ord != "nuc":
        raise TraceError(f"invalid norm order {ord!r} for matrices{where()}")
    ax = apply("abs", x)
    if ord in (1, -1):
        sums = sum(ax, axis=row, keepdims=True)
        pick = max if ord == 1 else min
        return pick(sums, axis=axes, keepdims=keepdims)
    if ord in (np.inf, -np.inf):
        sums = sum(ax, axis=col, keepdims=True)
        pick = max if ord == np.inf else min
        return pick(sums, axis=axes, keepdims=keepdims)
    if ord in (2, -2, "nuc"):   # through the singular values of the matrices at axes
        nd = ndim_of(x)
        rest = [i for i in range(nd) if i not in axes]
        s = apply("svdvals", np.transpose(x, rest + [row, col]))
        pick = {2: max, -2: min, "nuc": sum}[ord]
        out = pick(s, axis=-1)
        if keepdims:
            out = np.expand_dims(out, tuple(sorted(axes)))
        return out
    raise TraceError(f"invalid norm order {ord!r} for matrices{where()}")
