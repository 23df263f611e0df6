"""``scipy.linalg`` with SciPy's signatures, on traced and plain values alike:
``solve_triangular``, ``cho_factor`` / ``cho_solve``, ``solve_banded``,
``solve_sylvester``, ``expm``, ``expm_frechet`` and ``sqrtm``.

``expm`` and ``sqrtm`` are primitives (``ir/prims/scipy_linalg.py``, SciPy's
implementations, derivatives from the Fréchet derivative); ``expm_frechet`` reads the
Fréchet derivative off ``expm`` of a block matrix. The triangular, Cholesky and banded
solves are written on NumPy's traced ``solve`` and ``cholesky`` of the entries SciPy reads.
``solve_sylvester`` is SciPy's own solve (Bartels-Stewart) run on concrete values, one
``pure_callback`` node whose derivative rules solve Sylvester equations again
(``_SylvesterCall``), so it differentiates to any order in both modes.

On plain (untraced) arrays every function is SciPy's own call: its values, dtypes,
``check_finite`` and ``LinAlgError`` checks, warnings and stacks exactly. On traced values a
check of the values (``check_finite``) cannot be made, and the shape and option checks are
SciPy's.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..ir import apply
from ..ir.prims.scipy_special import special
from ..tracer import Tracer, user_src

__all__ = ["cho_factor", "cho_solve", "cholesky", "expm", "expm_frechet", "solve_banded",
           "solve_sylvester", "solve_triangular", "sqrtm"]

_TRANS = {0: 0, "N": 0, 1: 1, "T": 1, 2: 2, "C": 2}


def _plain(*xs):
    """None of ``xs`` is traced (arrays, NumPy scalars, numbers, lists of them): SciPy's own
    function gives the result."""
    for x in xs:
        if isinstance(x, (list, tuple)):
            if not _plain(*x):
                return False
        elif not isinstance(x, (np.ndarray, np.generic, numbers.Number)):
            return False
    return True


def _scipy():
    special()   # a clear error when SciPy is missing
    import scipy.linalg
    return scipy.linalg


def _square(a):
    """SciPy's ``LinAlgError`` for what is not a square matrix or a stack of them."""
    if np.ndim(a) < 2:
        raise np.linalg.LinAlgError("The input array must be at least two-dimensional")
    if np.shape(a)[-1] != np.shape(a)[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


def _mT(a):
    return np.swapaxes(a, -1, -2)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     check_finite=True):
    """``x`` with ``a x = b`` (``trans=1``/``"T"``: ``aᵀ x = b``; 2/``"C"``: the conjugate
    transpose) reading only the lower (``lower=True``) or upper triangle of ``a``, and
    taking its diagonal as ones with ``unit_diagonal=True``. ``b`` is a vector or a matrix
    of right-hand sides."""
    if _plain(a, b):
        return _scipy().solve_triangular(a, b, trans=trans, lower=lower,
                                         unit_diagonal=unit_diagonal, overwrite_b=overwrite_b,
                                         check_finite=check_finite)
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
    if np.ndim(b) == 1:     # one right-hand side (for every matrix of a stack)
        return np.linalg.solve(tri, b[:, None])[..., 0]
    return np.linalg.solve(tri, b)


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """``scipy.linalg.cholesky``: the upper factor ``u`` (``a = uᴴ u``), or the lower one.
    As SciPy (LAPACK's ``potrf``), only the triangle asked for is read: the upper one by
    default (values and derivatives of a non-symmetric ``a`` follow that triangle)."""
    if _plain(a):
        return _scipy().cholesky(a, lower=lower, overwrite_a=overwrite_a,
                                 check_finite=check_finite)
    return np.linalg.cholesky(a, upper=not lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """``(c, lower)`` for ``cho_solve``: the Cholesky factor in the triangle ``lower`` names
    and, as SciPy leaves them, ``a``'s own entries in the other one (their derivative is
    one); and which triangle it is. (SciPy's stacks give ``[c, array of lower]``; a traced
    stack gives ``(c, lower)``.)"""
    if _plain(a):
        return _scipy().cho_factor(a, lower=lower, overwrite_a=overwrite_a,
                                   check_finite=check_finite)
    factor = np.linalg.cholesky(a, upper=not lower)
    n = np.shape(a)[-1]
    other = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
    return np.where(other, a, factor).astype(factor.dtype), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """``x`` with ``a x = b`` from ``cho_factor(a)``'s result."""
    c, lower = c_and_lower
    if _plain(c, b):
        return _scipy().cho_solve((c, lower), b, overwrite_b=overwrite_b,
                                  check_finite=check_finite)
    if np.ndim(lower):      # SciPy's stacks flag each matrix
        lower = bool(np.ravel(lower)[0])
    # a = L Lᴴ = Uᴴ U: the conjugate transpose (trans=2) for complex factors
    vec = np.ndim(b) == 1   # one right-hand side (for every matrix of a stack)
    rhs = b[:, None] if vec else b
    if lower:
        x = solve_triangular(c, solve_triangular(c, rhs, lower=True), trans=2, lower=True)
    else:
        x = solve_triangular(c, solve_triangular(c, rhs, trans=2, lower=False), lower=False)
    return x[..., 0] if vec else x


def expm(A):
    """``scipy.linalg.expm``: the matrix exponential (of a stack of matrices too)."""
    if _plain(A):
        return _scipy().expm(A)
    return apply("expm", _one_element(A))


def _one_element(a):
    """SciPy's ``(1, 1)`` matrix for a number or a one-element vector; its
    ``LinAlgError`` for other shapes that are not square matrices."""
    if np.ndim(a) < 2 and np.size(a) == 1:
        return np.reshape(_inexact(a), (1, 1))
    _square(a)
    return a


def sqrtm(A, disp=True, blocksize=64):
    """``scipy.linalg.sqrtm``: the principal square root of a real matrix that has a real
    one (no eigenvalue on the negative real axis), or of each matrix of a stack
    ``(..., n, n)``. On plain arrays SciPy's own result (complex where a real matrix has
    no real square root); traced, such a matrix raises a ``LinAlgError``."""
    if _plain(A):
        if np.ndim(A) < 2 and np.size(A) == 1:
            A = np.reshape(A, (1, 1))   # SciPy 1.17 gives [[exp(A)]] here (expm's case)
        return _scipy().sqrtm(A)
    return apply("sqrtm", _one_element(A))


def expm_frechet(A, E, method=None, compute_expm=True, check_finite=True):
    """``scipy.linalg.expm_frechet``: ``(expm(A), L(A, E))``, ``L`` the Fréchet derivative
    of ``expm`` at ``A`` in the direction ``E`` (only ``L`` with ``compute_expm=False``);
    stacks of matrices too. ``L`` is the upper right block of ``expm([[A, E], [0, A]])``
    (SciPy's ``method="blockEnlarge"``; its default is another algorithm, equal to
    rounding)."""
    if _plain(A, E):
        return _scipy().expm_frechet(A, E, method=method, compute_expm=compute_expm,
                                     check_finite=check_finite)
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"Unknown implementation {method}")
    if np.ndim(A) < 2 or np.shape(A)[-1] != np.shape(A)[-2]:
        raise ValueError("expected A to be a square matrix")
    if np.ndim(E) < 2 or np.shape(E)[-1] != np.shape(E)[-2]:
        raise ValueError("expected E to be a square matrix")
    if np.shape(A)[-1] != np.shape(E)[-1]:
        raise ValueError("expected A and E to be the same shape")
    n = np.shape(A)[-1]
    A, E = _double(A), _double(E)     # SciPy computes in (complex) double precision
    shape = np.broadcast_shapes(np.shape(A), np.shape(E))
    A, E = np.broadcast_to(A, shape), np.broadcast_to(E, shape)
    top = np.concatenate([A, E], axis=-1)
    bottom = np.concatenate([np.zeros_like(A), A], axis=-1)
    big = expm(np.concatenate([top, bottom], axis=-2))
    frechet = big[..., :n, n:]
    if compute_expm:
        return big[..., :n, :n], frechet
    return frechet


def _double(x):
    kind = np.dtype(getattr(x, "dtype", np.result_type(x))).kind
    dtype = np.complex128 if kind == "c" else np.float64
    if isinstance(x, Tracer):
        return x if np.dtype(x.dtype) == dtype else x.astype(dtype)
    return np.asarray(x, dtype=dtype)


def _inexact(x):
    kind = np.dtype(getattr(x, "dtype", np.result_type(x))).kind
    if kind in "fc":
        return x
    return x * 1.0 if isinstance(x, Tracer) else np.asarray(x, dtype=np.float64)


# -- banded solves ------------------------------------------------------------------------
def solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    """``x`` with ``a x = b`` for the banded ``a`` stored in SciPy's diagonal ordered
    form, ``ab[u + i - j, j] == a[i, j]`` (``l`` diagonals below the main one, ``u``
    above). ``b`` is ``(M,)`` or ``(M, K)``; stacks as SciPy's: a batch of ``ab``
    ``(..., l + u + 1, M)``, of ``b`` ``(..., M, K)``. The entries of ``ab`` outside the
    band are not read (their gradient is zero).

    The solve is dense LU (NumPy's ``solve`` of ``a``): SciPy's values to rounding, and
    every derivative NumPy's solve has; ``O(M³)`` where SciPy's banded LU is
    ``O(M (l + u)²)``."""
    if _plain(ab, b):
        return _scipy().solve_banded(l_and_u, ab, b, overwrite_ab=overwrite_ab,
                                     overwrite_b=overwrite_b, check_finite=check_finite)
    lower, upper = (int(v) for v in l_and_u)
    if np.ndim(ab) < 2:
        raise ValueError(f"expected ab of shape (l + u + 1, M), got shape {np.shape(ab)}")
    rows, n = np.shape(ab)[-2:]
    core = min(np.ndim(b), 2)
    if core == 0 or np.shape(b)[np.ndim(b) - core] != n:
        raise ValueError("shapes of ab and b are not compatible.")
    if lower + upper + 1 != rows:
        raise ValueError(f"invalid values for the number of lower and upper diagonals: "
                         f"l+u+1 ({lower + upper + 1}) does not equal ab.shape[0] ({rows})")
    ab, b = _inexact(ab), _inexact(b)
    i, j = np.indices((n, n))
    r = upper + i - j
    band = (r >= 0) & (r < rows)
    a = np.where(band, ab[..., np.clip(r, 0, rows - 1), j], 0)
    if core == 1:
        return np.linalg.solve(a, b[:, None])[..., 0]
    return np.linalg.solve(a, b)


# -- Sylvester equations ------------------------------------------------------------------
def solve_sylvester(a, b, q):
    """``x`` with ``a x + x b = q`` (``a`` ``(M, M)``, ``b`` ``(N, N)``, ``q`` ``(M, N)``;
    stacks of them too): SciPy's own solve (Bartels-Stewart) and its values.

    Derivatives, to any order in both modes: ``x`` is linear in ``q``, and ``ȧ x + a ẋ +
    ẋ b + x ḃ = q̇`` makes the tangent ``solve_sylvester(a, b, q̇ - ȧ x - x ḃ)``; the
    cotangents of ``g`` are ``y = solve_sylvester(aᵀ, bᵀ, g)`` for ``q``, ``-y xᵀ`` for
    ``a`` and ``-xᵀ y`` for ``b`` (real matrices)."""
    for name, m in (("a", a), ("b", b)):
        if np.ndim(m) < 2 or np.shape(m)[-1] != np.shape(m)[-2]:
            raise ValueError(f"expected {name} to be a square matrix (or a stack of them), "
                             f"got shape {np.shape(m)}")
    if np.ndim(q) < 2 or np.shape(q)[-2:] != (np.shape(a)[-1], np.shape(b)[-1]):
        raise ValueError(f"expected q of shape (..., {np.shape(a)[-1]}, {np.shape(b)[-1]}), "
                         f"got shape {np.shape(q)}")
    dtypes = [np.dtype(getattr(x, "dtype", np.result_type(x))) for x in (a, b, q)]
    dtype = np.result_type(*dtypes, np.float32)
    batch = np.broadcast_shapes(np.shape(a)[:-2], np.shape(b)[:-2], np.shape(q)[:-2])
    call = _SylvesterCall(batch + tuple(np.shape(q)[-2:]), dtype)
    operands = [x if isinstance(x, Tracer) else np.asarray(x) for x in (a, b, q)]
    if not any(isinstance(x, Tracer) for x in operands):
        return call.run(operands)[0]
    (x,) = apply("pure_callback", *operands, callback=call)
    return x


class _SylvesterCall:
    """The ``callback`` of ``solve_sylvester``'s ``pure_callback`` node: SciPy's solve,
    and derivative rules that call ``solve_sylvester`` again."""

    vectorized = False
    name = "solve_sylvester"

    def __init__(self, shape, dtype):
        self.out_avals = [(tuple(shape), np.dtype(dtype))]
        self.src = user_src()

    def __repr__(self):
        return "solve_sylvester"

    def run(self, operands):
        special()   # a clear error when SciPy is missing
        import scipy.linalg
        a, b, q = (np.asarray(x) for x in operands)
        shape, dtype = self.out_avals[0]
        if len(shape) == 2:
            x = scipy.linalg.solve_sylvester(a, b, q)
        else:       # SciPy's stacks (older SciPy takes one equation): one by one
            batch = shape[:-2]
            a, b, q = (np.broadcast_to(m, batch + m.shape[-2:]) for m in (a, b, q))
            x = np.stack([scipy.linalg.solve_sylvester(a[k], b[k], q[k])
                          for k in np.ndindex(batch)]).reshape(shape)
        return (np.asarray(x).astype(dtype, copy=False),)

    def vjp(self, gs, outs, a, b, q):
        (g,), (x,) = gs, outs
        if g is None:
            return None, None, None
        y = solve_sylvester(_mT(a), _mT(b), g)
        return (_sum_to(-(y @ _mT(x)), np.shape(a)), _sum_to(-(_mT(x) @ y), np.shape(b)),
                _sum_to(y, np.shape(q)))

    def jvp(self, tangents, outs, a, b, q):
        da, db, dq = tangents
        (x,) = outs
        if da is None and db is None and dq is None:
            return (None,)
        rhs = np.zeros(np.shape(x)) if dq is None else np.broadcast_to(dq, np.shape(x))
        if da is not None:
            rhs = rhs - da @ x
        if db is not None:
            rhs = rhs - x @ db
        return (solve_sylvester(a, b, rhs),)


def _sum_to(x, shape):
    """``x`` summed over the leading axes that broadcasting added to ``shape``."""
    extra = np.ndim(x) - len(shape)
    if extra:
        x = np.sum(x, axis=tuple(range(extra)))
    axes = tuple(k for k, (s, t) in enumerate(zip(np.shape(x), shape)) if t == 1 and s != 1)
    return np.sum(x, axis=axes, keepdims=True) if axes else x
