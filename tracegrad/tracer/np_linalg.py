"""``np.linalg`` on traced values: ``inv``, ``solve``, ``det``, ``slogdet`` and
``cholesky`` each apply a primitive; ``norm`` is composed from reductions (vector norms of
any order, and the Frobenius, 1- and infinity-norms of matrices; the norms that need
singular values raise ``TraceError``).
"""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..ir import apply
from .np_base import _single_axis, astype, coerce, dtype_of, implements, ndim_of
from .np_reductions import max, min, sum  # noqa: A004  (the handlers of np.max, np.min, np.sum)
from .np_shapes import swapaxes
from .source import where


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
    return apply("slogdet_sign", a), apply("logabsdet", a)


@implements(np.linalg.cholesky)
def cholesky(a, /, *, upper=False):
    L = apply("cholesky", coerce(a))
    return swapaxes(L, -1, -2) if upper else L


@implements(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    x = coerce(x)
    nd = ndim_of(x)
    if axis is None:
        if ord is None:  # the 2-norm of the flattened array, whatever its shape
            return apply("sqrt", sum(x * x, axis=None, keepdims=keepdims))
        if nd not in (1, 2):
            raise TraceError(f"improper number of dimensions to norm{where()}")
        axis = tuple(range(nd))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(_single_axis(a, nd) for a in axes)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise TraceError(f"improper number of dimensions to norm{where()}")


def _vector_norm(x, ord, axes, keepdims):  # noqa: A002
    if ord is None or ord == 2:
        return apply("sqrt", sum(x * x, axis=axes, keepdims=keepdims))
    ax = apply("abs", x)
    if ord == np.inf:
        return max(ax, axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return min(ax, axis=axes, keepdims=keepdims)
    if ord == 0:
        return sum(astype(apply("not_equal", x, 0), dtype_of(x)), axis=axes, keepdims=keepdims)
    if ord == 1:
        return sum(ax, axis=axes, keepdims=keepdims)
    if isinstance(ord, str):
        raise TraceError(f"invalid norm order {ord!r} for vectors{where()}")
    return sum(ax ** float(ord), axis=axes, keepdims=keepdims) ** (1.0 / float(ord))


def _matrix_norm(x, ord, axes, keepdims):  # noqa: A002
    row, col = axes
    if ord is None or ord == "fro":
        return apply("sqrt", sum(x * x, axis=axes, keepdims=keepdims))
    ax = apply("abs", x)
    if ord in (1, -1):
        sums = sum(ax, axis=row, keepdims=True)
        pick = max if ord == 1 else min
        return pick(sums, axis=axes, keepdims=keepdims)
    if ord in (np.inf, -np.inf):
        sums = sum(ax, axis=col, keepdims=True)
        pick = max if ord == np.inf else min
        return pick(sums, axis=axes, keepdims=keepdims)
    raise TraceError(f"np.linalg.norm ord={ord!r} for matrices needs singular values, which "
                     f"tracegrad does not differentiate yet{where()}")
