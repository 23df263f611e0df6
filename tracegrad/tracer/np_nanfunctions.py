"""NumPy's NaN-ignoring reductions on traced values (``numpy/lib/_nanfunctions_impl.py``):
``nansum``, ``nanprod``, ``nancumsum``, ``nanmax``, ``nanmin``, ``nanmean``, ``nanvar``
and ``nanstd``, as the plain reductions of the data with its NaNs replaced (by the
reduction's identity, or masked out of the count), NaN where NumPy gives NaN.
"""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.source import where
from .core import Tracer
from .np_base import _reject, as_array, astype, dtype_of, implements
from .np_reductions import std_of_var

_arr = as_array


def _no_nan(a, fill):
    a = _arr(a)
    if dtype_of(a).kind not in "fc":
        return a
    return apply("select", apply("isnan", a), np.asarray(fill, dtype_of(a)), a)


@implements(np.nansum)
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _reject("np.nansum", out=out, initial=initial, where=where)
    return np.sum(_no_nan(a, 0), axis=axis, dtype=dtype, keepdims=keepdims)


@implements(np.nanprod)
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _reject("np.nanprod", out=out, initial=initial, where=where)
    return np.prod(_no_nan(a, 1), axis=axis, dtype=dtype, keepdims=keepdims)


@implements(np.nancumsum)
def nancumsum(a, axis=None, dtype=None, out=None):
    _reject("np.nancumsum", out=out)
    return np.cumsum(_no_nan(a, 0), axis=axis, dtype=dtype)


def _all_nan(a, axis, keepdims):
    """Where a whole slice is NaN (NumPy's nanmax/nanmin give NaN there), or None."""
    if dtype_of(a).kind not in "fc":
        return None
    return np.all(apply("isnan", a), axis=axis, keepdims=keepdims)


def _nan_extreme(np_fn, fill, a, axis, keepdims):
    a = _arr(a)
    result = np_fn(_no_nan(a, fill), axis=axis, keepdims=keepdims)
    empty = _all_nan(a, axis, keepdims)
    if empty is None:
        return result
    return apply("select", empty, np.asarray(np.nan, dtype_of(result)), result)


@implements(np.nanmax)
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _reject("np.nanmax", out=out, initial=initial, where=where)
    return _nan_extreme(np.max, -np.inf, a, axis, keepdims)


@implements(np.nanmin)
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    _reject("np.nanmin", out=out, initial=initial, where=where)
    return _nan_extreme(np.min, np.inf, a, axis, keepdims)


def _inexact(name, dtype):
    if dtype is not None and np.dtype(dtype).kind not in "fc":
        raise TraceError(f"{name}: if a is inexact, then dtype must be inexact (NumPy raises "
                         f"TypeError){where()}")


def _not_nan_count(mask, axis, keepdims):
    return np.sum(apply("logical_not", mask), axis=axis, keepdims=keepdims)


@implements(np.nanmean)
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """NumPy's: the sum of the non-NaN entries in ``dtype`` over their count, in the sum's
    dtype (float32 data, a float32 mean)."""
    _reject("np.nanmean", out=out, where=where)
    a = _arr(a)
    if dtype_of(a).kind not in "fc":
        return np.mean(a, axis=axis, dtype=dtype, keepdims=keepdims)
    _inexact("np.nanmean", dtype)
    mask = apply("isnan", a)
    total = np.sum(apply("select", mask, np.zeros((), dtype_of(a)), a), axis=axis,
                   dtype=dtype, keepdims=keepdims)
    return astype(total / _not_nan_count(mask, axis, keepdims), dtype_of(total))


@implements(np.nanvar)
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):
    """NumPy's recipe step by step: the deviations are taken in the data's own dtype and
    zeroed where the data is NaN (an infinite entry still makes NaN), squared moduli are
    summed in ``dtype``, and a slice with ``count - ddof <= 0`` is NaN."""
    _reject("np.nanvar", out=out, where=where, mean=mean, correction=correction)
    a = _arr(a)
    if dtype_of(a).kind not in "fc":
        return np.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    _inexact("np.nanvar", dtype)
    mask = apply("isnan", a)
    zero = np.zeros((), dtype_of(a))
    arr = apply("select", mask, zero, a)
    avg = np.sum(arr, axis=axis, dtype=dtype, keepdims=True)
    avg = astype(avg / _not_nan_count(mask, axis, True), dtype_of(avg))
    dev = apply("select", mask, zero, astype(arr - avg, dtype_of(a)))
    if dtype_of(dev).kind == "c":
        sqr = apply("real", apply("mul", dev, apply("conj", dev)))
    else:
        sqr = dev * dev
    total = np.sum(sqr, axis=axis, dtype=dtype, keepdims=keepdims)
    dof = _not_nan_count(mask, axis, keepdims) - ddof
    result = astype(total / dof, dtype_of(total))
    return apply("select", dof <= 0, np.asarray(np.nan, dtype_of(result)), result)


@implements(np.nanstd)
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):
    _reject("np.nanstd", out=out, where=where, mean=mean, correction=correction)
    v = nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    if not isinstance(v, Tracer):
        return np.sqrt(v)
    # an integer dtype= keeps the square root in it (NumPy's nanstd truncates)
    return astype(std_of_var(v), dtype_of(v)) if dtype is not None else std_of_var(v)
