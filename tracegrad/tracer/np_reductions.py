"""Reductions on traced values: ``sum``, ``prod``, ``max``, ``min``, ``argmax``,
``argmin``, ``any``, ``all`` and ``cumsum`` each apply one primitive, while ``mean``,
``var`` and ``std`` are compositions of them (``mean`` is ``sum / n``). The handlers
carry NumPy's own names, so ``sum``, ``max``, ``min``, ``any`` and ``all`` shadow the
builtins here; the builtins are spelled ``builtins.max`` and so on.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.source import where
from .core import Tracer
from .np_base import (
    _axis_tuple,
    _reject,
    _single_axis,
    astype,
    coerce,
    dtype_of,
    full_like_tracer,
    implements,
    ndim_of,
    operator_index,
    ravel,
    shape_of,
)


def _reduction(prim, x, axis, keepdims, dtype=None, initial=None):
    """``prim`` over ``axis``; ``initial`` (NumPy's starting value, cast to the result's
    dtype as NumPy casts it) joins every slice, and lets max/min reduce empty ones."""
    if dtype is not None:
        x = astype(x, dtype)
    axes = _axis_tuple(axis, x)
    empty = builtins.any(shape_of(x)[i] == 0 for i in axes)
    if prim in ("max", "min") and empty:
        if initial is None:
            raise TraceError(f"zero-size array to reduction operation {prim} which has no "
                             f"identity{where()}")
        shape = tuple(1 if i in axes else n for i, n in enumerate(shape_of(x)))
        if not keepdims:
            shape = tuple(n for i, n in enumerate(shape_of(x)) if i not in axes)
        return full_like_tracer(x, _cast(initial, dtype_of(x)), shape=shape)
    result = apply(prim, x, axis=axes, keepdims=bool(keepdims))
    if dtype is not None:
        # the primitives accumulate small integers in int64, as np.add.reduce does with
        # no dtype; NumPy's result with dtype= has that dtype (the same bits: wrapping
        # arithmetic, then a cast)
        result = astype(result, dtype)
    if initial is None:
        return result
    join = {"sum": "add", "prod": "mul", "max": "maximum", "min": "minimum"}[prim]
    return apply(join, result, _cast(initial, dtype_of(result)))


def _masked(prim, a, where_, initial, dtype):
    """NumPy's where= for a reduction: the masked-out entries are the reduction's identity
    (max/min have none: NumPy then needs initial=, which fills them)."""
    if where_ is None or where_ is True:
        return a
    if prim in ("max", "min") and initial is None:
        raise TraceError(f"reduction operation '{'maximum' if prim == 'max' else 'minimum'}' "
                         f"does not have an identity, so to use a where mask one has to "
                         f"specify 'initial'{where()}")
    a = coerce(a)
    dt = np.dtype(dtype) if dtype is not None else dtype_of(a)
    fill = {"sum": 0, "prod": 1}.get(prim, initial)
    a = astype(a, dt)
    return apply("select", astype(coerce(where_), bool), a, _cast(fill, dt))


def _cast(value, dtype):
    with np.errstate(all="ignore"):
        return np.asarray(value).astype(dtype)


@implements(np.sum)
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    _reject("np.sum", out=out)
    a = _masked("sum", coerce(a), where, initial, dtype)
    return _reduction("sum", a, axis, keepdims, dtype, initial)


@implements(np.prod)
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _reject("np.prod", out=out)
    a = _masked("prod", coerce(a), where, initial, dtype)
    return _reduction("prod", a, axis, keepdims, dtype, initial)


@implements(np.max, np.amax)
def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    _reject("np.max", out=out)
    a = _masked("max", coerce(a), where, initial, None)
    return _reduction("max", a, axis, keepdims, initial=initial)


@implements(np.min, np.amin)
def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    _reject("np.min", out=out)
    a = _masked("min", coerce(a), where, initial, None)
    return _reduction("min", a, axis, keepdims, initial=initial)


def _arg_reduction(prim, a, axis, out, keepdims):
    _reject(f"np.{prim}", out=out)
    a = coerce(a)
    if axis is not None:
        axis = _single_axis(operator_index(axis), ndim_of(a))
    return apply(prim, a, axis=axis, keepdims=bool(keepdims))


@implements(np.argmax)
def argmax(a, axis=None, out=None, *, keepdims=False):
    return _arg_reduction("argmax", a, axis, out, keepdims)


@implements(np.argmin)
def argmin(a, axis=None, out=None, *, keepdims=False):
    return _arg_reduction("argmin", a, axis, out, keepdims)


def _count(a, axes):
    return math.prod(shape_of(a)[i] for i in axes)


@implements(np.mean)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """NumPy's ``_mean``: the sum in ``dtype`` (float64 for integers and booleans),
    divided by the count and cast back to the sum's dtype (``dtype=int`` truncates, as
    NumPy's in-place division does). NumPy accumulates float16 in float32; here float16
    stays float16 (graphs hold no wider float than their inputs; test_dtypes)."""
    _reject("np.mean", out=out, where=where)
    a = coerce(a)
    if dtype is None and dtype_of(a).kind in "iub":
        dtype = np.float64
    total = _reduction("sum", a, axis, keepdims, dtype)
    return astype(total / _count(a, _axis_tuple(axis, a)), dtype_of(total))


@implements(np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """NumPy's ``_var``: the mean in ``dtype``, then the sum of squared moduli (real for
    complex data) in ``dtype``, over ``max(n - ddof, 0)``."""
    _reject("np.var", out=out, where=where, mean=mean, correction=correction)
    a = coerce(a)
    if dtype is None and dtype_of(a).kind in "iub":
        dtype = np.float64
    n = _count(a, _axis_tuple(axis, a))
    centre = _reduction("sum", a, axis, True, dtype)
    centre = astype(centre / n, dtype_of(centre))
    centred = a - centre
    if dtype_of(centred).kind == "c":
        squares = apply("real", apply("mul", centred, apply("conj", centred)))
    else:
        squares = centred * centred
    total = _reduction("sum", squares, axis, keepdims, dtype)
    return astype(total / builtins.max(n - ddof, 0), dtype_of(total))


@implements(np.std)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    _reject("np.std", out=out, where=where, mean=mean, correction=correction)
    v = var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    # an integer dtype= keeps the square root in it (NumPy's std truncates)
    return astype(std_of_var(v), dtype_of(v)) if dtype is not None else std_of_var(v)


def std_of_var(v):
    """``sqrt(v)`` for a variance, with derivative 0 where the variance is exactly 0.

    ``sqrt``'s derivative is infinite at 0 and the variance's is 0 there, so the chain
    rule gives NaN. Where a reduced axis has one element (``ddof=0``) the standard
    deviation is identically 0 and every derivative is 0. Where a longer slice has all
    values equal it is not differentiable (it is a norm of the deviations, like
    ``|h|``); as ``np.abs`` at 0, the derivative there is 0: the smallest subgradient
    (std is convex and minimal there). JAX gives NaN at both. The value is NumPy's
    (``sqrt`` of the variance: NaN and infinity go through unchanged), and the guard
    holds at every order: the zero branch is a constant."""
    zero = apply("equal", v, 0)
    safe = apply("select", zero, np.ones((), dtype_of(v)), v)
    return apply("select", zero, np.zeros((), dtype_of(v)), apply("sqrt", safe))


def _truth_count(a, axis, keepdims):
    """How many entries along ``axis`` are true (an integer array, no gradient)."""
    a = coerce(a)
    return _reduction("sum", astype(a, bool), axis, keepdims, np.int64)


@implements(np.any)
def any(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    _reject("np.any", out=out, where=where)
    return apply("greater", _truth_count(a, axis, keepdims), 0)


@implements(np.all)
def all(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    _reject("np.all", out=out, where=where)
    return apply("equal", _truth_count(apply("logical_not", coerce(a)), axis, keepdims), 0)


@implements(np.cumsum)
def cumsum(a, axis=None, dtype=None, out=None):
    _reject("np.cumsum", out=out)
    a = coerce(a)
    if dtype is not None:
        a = astype(a, dtype)
    if axis is None:
        a, axis = ravel(a), 0
    result = apply("cumsum", a, axis=_single_axis(operator_index(axis), ndim_of(a)))
    return result if dtype is None else astype(result, dtype)   # as in _reduction


@implements(np.average)
def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """NumPy's ``average``: the mean, or ``sum(a * w) / sum(w)`` with the weights
    broadcast along ``axis`` when they are 1-d (NumPy's rule); ``returned`` adds the sum
    of the weights (the count without them)."""
    a = coerce(a)
    keep = bool(keepdims)
    if weights is None:
        avg = mean(a, axis, keepdims=keep)
        scale = np.broadcast_to(np.asarray(a.size / builtins.max(np.size(avg), 1), dtype=dtype_of(avg)),
                                np.shape(avg))
    else:
        w = coerce(weights if isinstance(weights, Tracer) else np.asarray(weights))
        if np.shape(w) != np.shape(a):
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if np.ndim(w) != 1:
                raise TypeError("1D weights expected when shapes of a and weights differ.")
            ax = _axis_tuple(axis, a)
            if len(ax) != 1 or np.shape(w)[0] != np.shape(a)[ax[0]]:
                raise ValueError("Length of weights not compatible with specified axis.")
            shape = [1] * np.ndim(a)
            shape[ax[0]] = np.shape(w)[0]
            w = np.broadcast_to(np.reshape(w, shape), np.shape(a))
        kind = np.result_type(dtype_of(a), dtype_of(w), np.float64 if dtype_of(a).kind in "iub"
                              else dtype_of(a))
        scale = np.sum(astype(w, kind), axis=axis, keepdims=keep)
        avg = np.sum(np.multiply(a, w), axis=axis, keepdims=keep) / scale
    if returned:
        return avg, scale
    return avg
