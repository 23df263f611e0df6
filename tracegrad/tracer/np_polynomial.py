"""NumPy's polynomial functions (``np.poly*``, ``np.roots``, ``np.vander``) on traced
values: NumPy's own steps, written on traced arrays, so the values and dtypes are
NumPy's and the derivatives those of the arithmetic (``roots`` through ``eigvals`` of the
companion matrix; ``polyfit`` through ``lstsq``). Where NumPy's result shape depends on
the values (``poly1d`` strips leading zeros in ``polymul``, ``roots`` strips zeros,
``polydiv`` drops a zero leading remainder) the decision is read at trace time and
recorded as a guard, as ``bool()`` is.
"""
from __future__ import annotations

import builtins
import operator
import warnings

import numpy as np

from ..errors import TraceError
from ..ir.source import where
from .np_base import (
    as_array,
    astype,
    concatenate,
    dtype_of,
    implements,
    known,
    ndim_of,
    shape_of,
)

_arr = as_array


def _1d(x):
    return np.atleast_1d(_arr(x))


def _known_nonzero(p):
    """Positions of the non-zero entries of 1-d ``p`` (read at trace time, a guard)."""
    return np.flatnonzero(known(p != 0, "the zeros of a polynomial"))


def _strip_leading_zeros(p):
    """``poly1d(p).coeffs``: leading zeros removed, ``[0]`` if nothing is left."""
    p = _1d(p)
    if ndim_of(p) > 1:
        raise TraceError(f"Polynomial must be 1d only.{where()}")
    nz = _known_nonzero(p)
    if nz.size == 0:
        return np.zeros(1, dtype_of(p))
    return p[int(nz[0]):]


@implements(np.polyval)
def polyval(p, x):
    """Horner's rule, as NumPy: ``y = y * x + p[i]`` from ``y = zeros_like(x)``."""
    p, x = _arr(p), _arr(x)
    if ndim_of(p) == 0:
        raise TraceError(f"iteration over a 0-d array (np.polyval's p){where()}")
    y = np.zeros_like(x)
    for i in range(shape_of(p)[0]):
        y = y * x + p[i]
    return y


def _mintype(dt):
    """``np.mintypecode(dt.char)``: the float or complex type poly() computes in."""
    return dt if dt.char in "GDFgdf" else np.dtype(np.float64)


@implements(np.poly)
def poly(seq_of_zeros):
    seq = np.atleast_1d(_arr(seq_of_zeros))
    sh = shape_of(seq)
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        seq = np.linalg.eigvals(seq)
    elif len(sh) == 1:
        dt = dtype_of(seq)
        if dt.kind != "O":
            seq = astype(seq, _mintype(dt))
    else:
        raise TraceError(f"input must be 1d or non-empty square 2d array.{where()}")
    if shape_of(seq)[0] == 0:
        return 1.0
    dt = dtype_of(seq)
    a = np.ones((1,), dtype=dt)
    for k in range(shape_of(seq)[0]):
        zero = seq[k]
        # convolve(a, [1, -zero]): a shifted, minus zero times a
        pair = astype(np.stack([np.ones((), dt), -zero]), dt)
        a = np.convolve(a, pair, mode="full")
    if dtype_of(a).kind == "c":
        roots = astype(seq, np.complex128)
        if bool(np.all(np.sort(roots) == np.sort(np.conjugate(roots)))):
            a = np.real(a) * 1
    return a


def _pad_to(a, n):
    short = n - shape_of(a)[0]
    return a if short <= 0 else concatenate([np.zeros(short, dtype_of(a)), a])


@implements(np.polyadd)
def polyadd(a1, a2):
    a1, a2 = _1d(a1), _1d(a2)
    n = builtins.max(shape_of(a1)[0], shape_of(a2)[0])
    return _pad_to(a1, n) + _pad_to(a2, n)


@implements(np.polysub)
def polysub(a1, a2):
    a1, a2 = _1d(a1), _1d(a2)
    n = builtins.max(shape_of(a1)[0], shape_of(a2)[0])
    return _pad_to(a1, n) - _pad_to(a2, n)


@implements(np.polymul)
def polymul(a1, a2):
    return np.convolve(_strip_leading_zeros(a1), _strip_leading_zeros(a2))


@implements(np.polyder)
def polyder(p, m=1):
    m = operator.index(int(m))
    if m < 0:
        raise TraceError(f"Order of derivative must be positive (see polyint){where()}")
    p = _arr(p)
    for _ in range(m):
        n = shape_of(p)[0] - 1
        p = p[:-1] * np.arange(n, 0, -1)
    return p


@implements(np.polyint)
def polyint(p, m=1, k=None):
    m = operator.index(int(m))
    if m < 0:
        raise TraceError(f"Order of integral must be positive (see polyder){where()}")
    k = np.zeros(m, float) if k is None else _arr(k)
    k = np.atleast_1d(k)
    if shape_of(k)[0] == 1 and m > 1:
        k = k[0] * np.ones(m, float)
    if shape_of(k)[0] < m:
        raise TraceError(f"k must be a scalar or a rank-1 array of length 1 or >m.{where()}")
    p = _arr(p)
    for i in range(m):
        p = concatenate([p / np.arange(shape_of(p)[0], 0, -1), k[i:i + 1]])
    return p


@implements(np.polydiv)
def polydiv(u, v):
    """Long division, NumPy's loop; the remainder's leading entries that are
    ``allclose`` to 0 are dropped (a guard)."""
    u = _1d(u) + 0.0
    v = _1d(v) + 0.0
    w = u[0] + v[0]
    m, n = shape_of(u)[0] - 1, shape_of(v)[0] - 1
    scale = 1.0 / v[0]
    r = astype(u, dtype_of(w))
    q = []
    for k in range(m - n + 1):
        d = scale * r[k]
        q.append(d)
        r = concatenate([r[:k], r[k:k + n + 1] - d * v, r[k + n + 1:]])
    q = astype(np.stack(q), dtype_of(w)) if q else np.zeros((1,), dtype_of(w))
    while np.allclose(r[0], 0, rtol=1e-14) and shape_of(r)[-1] > 1:
        r = r[1:]
    return q, r


@implements(np.roots)
def roots(p):
    """Eigenvalues of the companion matrix, NumPy's steps (zeros stripped: a guard)."""
    p = _1d(p)
    if ndim_of(p) != 1:
        raise TraceError(f"Input must be a rank-1 array.{where()}")
    nz = _known_nonzero(p)
    if nz.size == 0:
        return np.array([])
    trailing = shape_of(p)[0] - int(nz[-1]) - 1
    p = p[int(nz[0]):int(nz[-1]) + 1]
    if dtype_of(p).kind not in "fc":
        p = astype(p, np.float64)
    n = shape_of(p)[0]
    if n > 1:
        first = (-p[1:] / p[0])[None, :]
        rest = np.diag(np.ones((n - 2,), dtype_of(p)), -1)[1:]
        r = np.linalg.eigvals(concatenate([astype(first, dtype_of(p)), rest]))
    else:
        r = np.array([])
    return np.hstack((r, np.zeros(trailing, dtype_of(r))))


@implements(np.vander)
def vander(x, N=None, increasing=False):  # noqa: N803
    """Columns of powers by repeated multiplication, as NumPy's ``multiply.accumulate``
    (the same products, in the same order)."""
    x = _arr(x)
    if ndim_of(x) != 1:
        raise TraceError(f"x must be a one-dimensional array or sequence.{where()}")
    n_rows = shape_of(x)[0]
    N = n_rows if N is None else operator.index(N)  # noqa: N806
    dt = np.promote_types(dtype_of(x), int)
    x = astype(x, dt)
    cols, power = [], None
    for j in range(N):
        power = np.ones(n_rows, dt) if j == 0 else (x if j == 1 else power * x)
        cols.append(power)
    if not cols:
        return np.empty((n_rows, 0), dt)
    if not increasing:
        cols = cols[::-1]
    return astype(np.stack(cols, axis=1), dt)


@implements(np.polyfit)
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """NumPy's least-squares fit (``lstsq`` of the column-scaled Vandermonde matrix):
    differentiable in ``x``, ``y`` and ``w``."""
    order = int(deg) + 1
    x = _arr(x) + 0.0
    y = _arr(y) + 0.0
    if deg < 0:
        raise TraceError(f"expected deg >= 0{where()}")
    if ndim_of(x) != 1:
        raise TraceError(f"expected 1D vector for x{where()}")
    if shape_of(x)[0] == 0:
        raise TraceError(f"expected non-empty vector for x{where()}")
    if ndim_of(y) < 1 or ndim_of(y) > 2:
        raise TraceError(f"expected 1D or 2D array for y{where()}")
    if shape_of(x)[0] != shape_of(y)[0]:
        raise TraceError(f"expected x and y to have same length{where()}")
    if rcond is None:
        rcond = shape_of(x)[0] * np.finfo(dtype_of(x)).eps
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        w = _arr(w) + 0.0
        if ndim_of(w) != 1:
            raise TraceError(f"expected a 1-d array for weights{where()}")
        if shape_of(w)[0] != shape_of(y)[0]:
            raise TraceError(f"expected w and y to have the same length{where()}")
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if ndim_of(rhs) == 2 else w)
    scale = np.sqrt((lhs * lhs).sum(axis=0))
    lhs = lhs / scale
    c, resids, rank, s = np.linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if int(rank) != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning,
                      stacklevel=2)
    if full:
        return c, resids, rank, s, rcond
    if cov:
        vbase = np.linalg.inv(np.dot(lhs.T, lhs))
        vbase = vbase / np.outer(scale, scale)
        if cov == "unscaled":
            fac = 1
        else:
            if shape_of(x)[0] <= order:
                raise TraceError("the number of data points must exceed order to scale the "
                                 f"covariance matrix{where()}")
            fac = resids / (shape_of(x)[0] - order)
        if ndim_of(y) == 1:
            return c, vbase * fac
        return c, vbase[:, :, None] * fac
    return c
