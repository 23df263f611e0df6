"""More of ``np.linalg`` on traced values, composed from the handlers of ``np_linalg``
and the products, with NumPy's steps (so its values and dtypes): ``multi_dot`` (NumPy's
own cheapest multiplication order, read from the shapes), ``cond``, ``matrix_rank``
(an integer count, no gradient), ``vector_norm``, ``matrix_norm``, ``svdvals``,
``tensorsolve``, ``tensorinv``, and the array API's ``cross``, ``diagonal``,
``matmul``, ``outer``, ``tensordot``, ``trace`` and ``vecdot``.
"""
from __future__ import annotations

import math
import operator

import numpy as np
from numpy.linalg import _linalg as _np_linalg

from ..errors import TraceError
from ..ir.source import where
from .np_base import _axis_tuple, as_array, astype, dtype_of, implements, ndim_of, reshape, shape_of

_arr = as_array


@implements(np.linalg.multi_dot)
def multi_dot(arrays, *, out=None):
    arrays = [_arr(a) for a in arrays]
    n = len(arrays)
    if n < 2:
        raise TraceError(f"Expecting at least two arrays.{where()}")
    if n == 2:
        return np.dot(arrays[0], arrays[1])
    ndim_first, ndim_last = ndim_of(arrays[0]), ndim_of(arrays[-1])
    if ndim_first == 1:
        arrays[0] = np.atleast_2d(arrays[0])
    if ndim_last == 1:
        arrays[-1] = np.atleast_2d(arrays[-1]).T
    if any(ndim_of(a) != 2 for a in arrays):
        raise TraceError(f"multi_dot: every array but the first and last must be 2-d"
                         f"{where()}")
    if n == 3:
        a, b, c = arrays
        a0, a1b0 = shape_of(a)
        b1c0, c1 = shape_of(c)
        cost1 = a0 * b1c0 * (a1b0 + c1)
        cost2 = a1b0 * c1 * (a0 + b1c0)
        result = np.dot(np.dot(a, b), c) if cost1 < cost2 else np.dot(a, np.dot(b, c))
    else:
        stand_ins = [np.empty(shape_of(a), dtype=np.bool_) for a in arrays]
        order = _np_linalg._multi_dot_matrix_chain_order(stand_ins)

        def chain(i, j):
            if i == j:
                return arrays[i]
            return np.dot(chain(i, order[i, j]), chain(order[i, j] + 1, j))
        result = chain(0, n - 1)
    if ndim_first == 1 and ndim_last == 1:
        return result[0, 0]
    if ndim_first == 1 or ndim_last == 1:
        return np.ravel(result)
    return result


@implements(np.linalg.svdvals)
def svdvals(x, /):
    return np.linalg.svd(_arr(x), compute_uv=False, hermitian=False)


@implements(np.linalg.cond)
def cond(x, p=None):
    x = _arr(x)
    if ndim_of(x) >= 2 and math.prod(shape_of(x)[-2:]) == 0:
        raise TraceError(f"cond is not defined on empty arrays{where()}")
    if p is None or p in (2, -2):
        s = np.linalg.svd(x, compute_uv=False)
        r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
    else:
        if ndim_of(x) < 2 or shape_of(x)[-1] != shape_of(x)[-2]:
            raise TraceError(f"Last 2 dimensions of the array must be square{where()}")
        if dtype_of(x).kind not in "fc":
            x = astype(x, np.float64)
        r = np.linalg.norm(x, p, axis=(-2, -1)) * np.linalg.norm(np.linalg.inv(x), p,
                                                                 axis=(-2, -1))
    nan_mask = np.isnan(r) & ~np.any(np.isnan(x), axis=(-2, -1))
    return np.where(nan_mask, np.asarray(np.inf, dtype_of(r)), r)


@implements(np.linalg.matrix_rank)
def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):  # noqa: N803
    A = _arr(A)  # noqa: N806
    if ndim_of(A) < 2:
        return astype(~np.all(A == 0), np.intp)
    if hermitian:
        s = np.abs(np.linalg.eigvalsh(A))
    else:
        s = np.linalg.svd(A, compute_uv=False)
    if tol is None:
        if rtol is None:
            rtol = max(shape_of(A)[-2:]) * np.finfo(dtype_of(s)).eps
        else:
            rtol = np.asarray(rtol)[..., None]
        tol = np.max(s, axis=-1, keepdims=True) * rtol
    else:
        tol = _arr(tol)[..., None]
    return np.count_nonzero(s > tol, axis=-1)


@implements(np.linalg.vector_norm)
def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    x = _arr(x)
    shape = list(shape_of(x))
    if axis is None:
        x, ax = np.ravel(x), 0
    elif isinstance(axis, tuple):
        axes = _axis_tuple(axis, x)
        rest = tuple(i for i in range(len(shape)) if i not in axes)
        x = reshape(np.transpose(x, axis + rest),
                    (math.prod(shape[i] for i in axes),) + tuple(shape[i] for i in rest))
        ax = 0
    else:
        ax = axis
    res = np.linalg.norm(x, axis=ax, ord=ord)
    if keepdims:
        axes = _axis_tuple(tuple(range(len(shape))) if axis is None else axis, _arr(
            np.empty(shape, bool)))
        for i in axes:
            shape[i] = 1
        res = reshape(res, tuple(shape))
    return res


@implements(np.linalg.matrix_norm)
def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002
    return np.linalg.norm(_arr(x), axis=(-2, -1), keepdims=keepdims, ord=ord)


@implements(np.linalg.tensorsolve)
def tensorsolve(a, b, axes=None):
    a, b = _arr(a), _arr(b)
    an = ndim_of(a)
    if axes is not None:
        allaxes = list(range(an))
        for k in axes:
            allaxes.remove(k)
            allaxes.insert(an, k)
        a = np.transpose(a, allaxes)
    oldshape = tuple(shape_of(a)[-(an - ndim_of(b)):])
    prod = math.prod(oldshape)
    if math.prod(shape_of(a)) != prod ** 2:
        raise TraceError(f"Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) "
                         f"== prod(a.shape[:b.ndim]){where()}")
    return reshape(np.linalg.solve(reshape(a, (prod, prod)), np.ravel(b)), oldshape)


@implements(np.linalg.tensorinv)
def tensorinv(a, ind=2):
    a = _arr(a)
    oldshape = tuple(shape_of(a))
    if ind <= 0:
        raise TraceError(f"Invalid ind argument.{where()}")
    invshape = oldshape[ind:] + oldshape[:ind]
    prod = math.prod(oldshape[ind:])
    return reshape(np.linalg.inv(reshape(a, (prod, -1))), invshape)


@implements(np.linalg.cross)
def cross(x1, x2, /, *, axis=-1):
    x1, x2 = _arr(x1), _arr(x2)
    if shape_of(x1)[axis] != 3 or shape_of(x2)[axis] != 3:
        raise TraceError(f"Both input arrays must be (arrays of) 3-dimensional vectors, but "
                         f"they are {shape_of(x1)[axis]} and {shape_of(x2)[axis]} "
                         f"dimensional instead.{where()}")
    return np.cross(x1, x2, axis=axis)


@implements(np.linalg.diagonal)
def diagonal(x, /, *, offset=0):
    return np.diagonal(_arr(x), offset=offset, axis1=-2, axis2=-1)


@implements(np.linalg.matmul)
def matmul(x1, x2, /):
    return np.matmul(_arr(x1), _arr(x2))


@implements(np.linalg.outer)
def outer(x1, x2, /):
    x1, x2 = _arr(x1), _arr(x2)
    if ndim_of(x1) != 1 or ndim_of(x2) != 1:
        raise TraceError(f"Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={ndim_of(x1)} and x2.ndim={ndim_of(x2)}.{where()}")
    return np.outer(x1, x2)


@implements(np.linalg.tensordot)
def tensordot(x1, x2, /, *, axes=2):
    return np.tensordot(_arr(x1), _arr(x2), axes=axes)


@implements(np.linalg.trace)
def trace(x, /, *, offset=0, dtype=None):
    return np.trace(_arr(x), offset=offset, axis1=-2, axis2=-1, dtype=dtype)


@implements(np.linalg.vecdot)
def vecdot(x1, x2, /, *, axis=-1):
    """``sum(conj(x1) * x2, axis)`` (NumPy's ``vecdot`` ufunc, composed here)."""
    x1, x2 = _arr(x1), _arr(x2)
    axis = operator.index(axis)
    if dtype_of(x1).kind == "c":
        x1 = np.conj(x1)
    dt = np.result_type(dtype_of(x1), dtype_of(x2))
    return astype(np.sum(x1 * x2, axis=axis), dt)
