"""Sorting, searching and order statistics on traced values, as compositions of the
primitives plus the ``argsort`` primitive of ``ir/prims/more.py``, with JAX's derivative
conventions: ``sort``, ``argsort``, ``partition``/``argpartition`` (the fully sorted
array, a valid partition), ``median``, ``quantile``, ``percentile`` and their
``nan``-free methods ``linear lower higher nearest midpoint`` (gathers at sorted
positions, piecewise linear), ``searchsorted``, ``digitize`` (no gradient) and ``unique``
(each occurrence of a value gets that value's gradient).
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..errors import TraceError
from ..ir import Arg, Index, apply
from ..ir.source import where
from .core import Tracer
from .indexing import getitem
from .np_base import (
    _reject,
    _single_axis,
    as_array,
    astype,
    concatenate,
    dtype_of,
    full_like_tracer,
    implements,
    ndim_of,
    operator_index,
    ravel,
    reshape,
    shape_of,
    transpose,
)
from .np_shapes import _along, _axis_or_flat, flip, moveaxis

_arr = as_array


@implements(np.argsort)
def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    _reject("np.argsort", order=order)
    a, axis = _axis_or_flat(a, axis)
    return apply("argsort", a, axis=axis)


@implements(np.sort)
def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    _reject("np.sort", order=order)
    a, axis = _axis_or_flat(a, axis)
    return _along(a, apply("argsort", a, axis=axis), axis)


@implements(np.partition)
def partition(a, kth, axis=-1, kind="introselect", order=None):
    """The fully sorted array: a valid partition for every ``kth``."""
    return sort(a, axis=axis, order=order)


@implements(np.argpartition)
def argpartition(a, kth, axis=-1, kind="introselect", order=None):
    return argsort(a, axis=axis, order=order)


@implements(np.searchsorted)
def searchsorted(a, v, side="left", sorter=None):
    """Counts of comparisons (no gradient): ``sum(a < v)`` ('left') or ``sum(a <= v)``."""
    a, v = _arr(a), _arr(v)
    if ndim_of(a) != 1:
        raise TraceError(f"np.searchsorted needs a 1-D array{where()}")
    if sorter is not None:
        a = getitem(a, (_arr(sorter),))
    if side not in ("left", "right"):
        raise TraceError(f"np.searchsorted: side must be 'left' or 'right', got {side!r}{where()}")
    vv = reshape(v, tuple(shape_of(v)) + (1,))
    hits = apply("less" if side == "left" else "less_equal", a, vv)
    if dtype_of(v).kind in "fc":
        # NaN sorts last: it goes after every number ('left') or after everything ('right')
        after = apply("isnan", vv)
        if side == "left" and dtype_of(a).kind in "fc":
            after = apply("logical_and", after, apply("logical_not", apply("isnan", a)))
        hits = apply("logical_or", hits, after)
    return apply("sum", astype(hits, np.int64), axis=(ndim_of(vv) - 1,), keepdims=False)


@implements(np.digitize)
def digitize(x, bins, right=False):
    x, bins = _arr(x), _arr(bins)
    if dtype_of(x).kind == "c":
        raise TraceError(f"np.digitize: x may not be complex (NumPy raises TypeError){where()}")
    if ndim_of(bins) != 1:
        raise TraceError(f"np.digitize: bins must be 1-D{where()}")
    n = shape_of(bins)[0]
    direction = _monotonicity(bins)
    if direction == 0:
        raise TraceError(f"np.digitize: bins must be monotonically increasing or decreasing"
                         f"{where()}")
    if direction == 1:
        return searchsorted(bins, x, side="left" if right else "right")
    return apply("sub", n, searchsorted(flip(bins), x, side="right" if right else "left"))


def _monotonicity(bins):
    """NumPy's check_array_monotonic: 1 (increasing), -1 (decreasing) or 0, decided by the
    first pair of unequal neighbours (a NaN pair counts as decreasing). Traced bins are
    read at trace time, with guards on their neighbour comparisons."""
    if isinstance(bins, Tracer):
        value = np.asarray(bins._concrete("np.digitize"))
        lo, hi = getitem(bins, (slice(None, -1),)), getitem(bins, (slice(1, None),))
        for op, fn in (("less", np.less), ("greater", np.greater), ("equal", np.equal)):
            bins._trace.guard(apply(op, lo, hi), fn(value[:-1], value[1:]))
    else:
        value = np.asarray(bins)
    i = 1
    while i < len(value) and value[i] == value[i - 1]:
        i += 1
    if i >= len(value):
        return 1
    increasing = value[i - 1] < value[i]
    rest_lo, rest_hi = value[i:-1], value[i + 1:]
    if increasing:
        return 0 if np.any(rest_lo > rest_hi) else 1
    return 0 if np.any(rest_lo < rest_hi) else -1


@implements(np.unique)
def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, sorted=True):  # noqa: A002
    """The sorted distinct values, and NumPy's first indices, inverse and counts (integers).
    Which entries are distinct is read at trace time and recorded as a guard.

    The derivative of a distinct value is the sum of its occurrences' derivatives: every
    occurrence of a value gets that value's whole cotangent. This is what finite
    differences of NumPy's function give for the scalar functions they are defined for
    at a tie (``sum(phi(np.unique(x)))``: moving one duplicate adds a value), and, without
    ties, the plain permutation."""
    if axis is not None:
        raise TraceError(f"np.unique on traced values: axis is not supported (flatten the "
                         f"array, or compare rows another way){where()}")
    a = _arr(ar)
    flat = ravel(a)
    n = shape_of(flat)[0]
    perm = apply("argsort", flat, axis=0)          # stable: first occurrences come first
    s = getitem(flat, (perm,))
    if n == 0:
        fresh = apply("not_equal", s, s)           # an empty boolean array
    else:
        first = np.ones(1, dtype=bool)
        fresh = concatenate([first, apply("not_equal", getitem(s, (slice(1, None),)),
                                          getitem(s, (slice(None, -1),)))])
        if equal_nan and dtype_of(s).kind in "fc":
            # NaNs sort last and are unequal to each other: keep only the first
            nan = apply("isnan", s)
            prev_nan = concatenate([~first, getitem(nan, (slice(None, -1),))])
            fresh = apply("logical_and", fresh, apply("logical_not", prev_nan))
    values = apply("stop_gradient", getitem(s, (fresh,)))    # reads `fresh`: a guard
    k = shape_of(values)[0]
    # the group (position in `values`) of each sorted entry
    group = apply("sub", apply("cumsum", astype(fresh, np.int64), axis=0), 1)
    if dtype_of(s).kind in "fc" and n:
        # the value (exactly) plus the sum over each group of its entries' changes, which
        # are zero in value: d values[g] = sum of d s over group g
        # (infinities and NaNs left out first: inf - inf would warn, as np.unique does not)
        finite = apply("select", apply("isfinite", apply("stop_gradient", s)), s,
                       np.zeros((), dtype_of(s)))
        change = apply("sub", finite, apply("stop_gradient", finite))
        values = apply("add", values, _segment_sum(change, group, k))
    if not (return_index or return_inverse or return_counts):
        return values
    out = [values]
    if return_index:
        out.append(getitem(perm, (fresh,)))
    if return_inverse:
        inverse = getitem(group, (apply("argsort", perm, axis=0),))
        out.append(reshape(inverse, shape_of(a)))
    if return_counts:
        out.append(_segment_sum(apply("add", apply("mul", group, 0), 1), group, k))
    return tuple(out)


def _segment_sum(x, group, k):
    """``out[g] = sum of x[i] with group[i] == g`` for ``g < k`` (``np.add.at``)."""
    zeros = apply("zeros", shape=(k,), dtype=dtype_of(x))
    return apply("index_update", zeros, x, group, index=Index((Arg(0),)), mode="add")


def _quantile_sorted(s, q, axis, method, keepdims, a_shape, dt):
    """Quantiles of ``s`` (sorted along ``axis``) at constant ``q`` in [0, 1], in ``s``'s
    dtype; NaN where the slice holds a NaN (NaNs sort last) or is empty, as in NumPy."""
    n = shape_of(s)[axis]
    q_arr = np.asarray(q, dtype=np.float64)
    if n == 0:
        rest = tuple(d for i, d in enumerate(shape_of(s)) if i != axis)
        out = full_like_tracer(s, np.nan, shape=q_arr.shape + rest)
        return _keep_quantile_dims(out, q_arr, axis, keepdims, a_shape)
    pos = q_arr * (n - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    frac = pos - lo

    def at(idx):
        taken = getitem(s, (slice(None),) * axis + (np.asarray(idx),))
        return moveaxis(taken, tuple(range(axis, axis + q_arr.ndim)), tuple(range(q_arr.ndim)))

    if method == "linear":
        a_lo, a_hi = at(lo), at(hi)
        # NumPy interpolates in the data's dtype (float32 data, float32 quantiles)
        t = np.reshape(frac, frac.shape + (1,) * (ndim_of(s) - 1)).astype(dt)
        diff = apply("sub", a_hi, a_lo)
        # NumPy's lerp: from the nearer end, exact at t = 0 and t = 1
        out = apply("select", t >= 0.5, apply("sub", a_hi, apply("mul", diff, 1 - t)),
                    apply("add", a_lo, apply("mul", diff, t)))
    elif method == "lower":
        out = at(lo)
    elif method == "higher":
        out = at(np.where(frac > 0, hi, lo))
    elif method == "nearest":
        out = at(np.where(np.around(pos) == hi, hi, lo))
    elif method == "midpoint":
        out = apply("mul", apply("add", at(lo), at(np.where(frac > 0, hi, lo))), 0.5)
    elif method == "median":
        # NumPy's median is a mean, whose sum starts from +0.0: -0.0 comes out as +0.0
        out = apply("add", apply("mul", apply("add", at(lo), at(np.where(frac > 0, hi, lo))),
                                 0.5), 0.0)
    else:
        raise TraceError(f"quantile method {method!r} is not supported on traced values "
                         f"(linear, lower, higher, nearest, midpoint){where()}")
    if dtype_of(s).kind in "fc":
        last = at(np.full(q_arr.shape, n - 1))
        out = apply("select", apply("isnan", last), np.asarray(np.nan, dtype_of(s)), out)
    return _keep_quantile_dims(out, q_arr, axis, keepdims, a_shape)


def _keep_quantile_dims(out, q_arr, axis, keepdims, a_shape):
    if keepdims:
        shape = list(a_shape)
        for d in (range(len(a_shape)) if axis is None else [axis]):
            shape[d] = 1
        out = reshape(out, q_arr.shape + tuple(shape))
    return out


def _axes_of(axis, nd):
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return sorted(_single_axis(operator_index(x), nd) for x in axes)


def _constant_q(name, q, scale):
    """``(q / scale as float64, q's own dtype)`` for a quantile function's constant ``q``
    (a traced one is refused); the dtype is None for a Python number, which NumPy's
    result dtype does not promote with (weak, NEP 50)."""
    if isinstance(q, Tracer) or (isinstance(q, (list, tuple)) and builtins.any(
            isinstance(e, Tracer) for e in q)):
        raise TraceError(f"{name} on traced values needs a constant q{where()}")
    q_dtype = None if isinstance(q, (int, float)) else np.asarray(q).dtype
    q = np.asarray(q, dtype=np.float64) / scale
    if np.any((q < 0) | (q > 1)):
        raise TraceError(f"{name}: quantiles must be in the range [0, 1]{where()}")
    return q, q_dtype


def _quantile(name, a, q, axis, out, overwrite_input, method, keepdims, weights=None,
              interpolation=None, scale=1.0):
    _reject(name, out=out, weights=weights, interpolation=interpolation)
    if method == "median" and name != "np.median":     # the name median's own path uses
        raise TraceError(f"{name}: method 'median' is not a quantile method{where()}")
    q, q_dtype = _constant_q(name, q, scale)
    a = _arr(a)
    if dtype_of(a).kind == "c" and method != "median":
        raise TraceError(f"{name} of complex values: NumPy refuses to order them here "
                         f"(TypeError){where()}")
    if dtype_of(a).kind == "b":
        raise TraceError(f"{name} of a boolean array: NumPy subtracts booleans here and "
                         f"raises TypeError; convert it first (a.astype(float)){where()}")
    if dtype_of(a).kind in "iu":
        a = astype(a, np.float64)
    dt = dtype_of(a)
    if q_dtype is not None and q_dtype.kind in "iuf":
        dt = np.result_type(dt, q_dtype if q_dtype.kind == "f" else np.float64)
    result = _quantile_axes(a, q, axis, method, keepdims, dt)
    return result if dtype_of(result) == dt else astype(result, dt)


def _quantile_axes(a, q, axis, method, keepdims, dt):
    a_shape = tuple(shape_of(a))
    if method != "median" and math.prod(
            a_shape if axis is None else [a_shape[d] for d in _axes_of(axis, len(a_shape))]) == 0:
        raise TraceError(f"quantile of an empty slice: index -1 is out of bounds (NumPy "
                         f"raises IndexError){where()}")
    if axis is None:
        flat = ravel(a)
        result = _quantile_sorted(sort(flat), q, 0, method, False, a_shape, dt)
        if keepdims:
            result = reshape(result, q.shape + (1,) * len(a_shape))
        return result
    axes = _axes_of(axis, len(a_shape))
    if len(axes) > 1:                 # several axes: move them to the end and merge them
        rest = [d for d in range(len(a_shape)) if d not in axes]
        merged = reshape(transpose(a, rest + axes), tuple(a_shape[d] for d in rest) + (-1,))
        result = _quantile_sorted(sort(merged, axis=-1), q, len(rest), method, False, a_shape,
                                  dt)
        if keepdims:
            shape = [1 if d in axes else n for d, n in enumerate(a_shape)]
            result = reshape(result, q.shape + tuple(shape))
        return result
    return _quantile_sorted(sort(a, axis=axes[0]), q, axes[0], method, keepdims, a_shape, dt)


@implements(np.quantile)
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    return _quantile("np.quantile", a, q, axis, out, overwrite_input, method, keepdims,
                     weights, interpolation)


@implements(np.percentile)
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    if isinstance(q, Tracer):
        raise TraceError(f"np.percentile on traced values needs a constant q{where()}")
    return _quantile("np.percentile", a, q, axis, out, overwrite_input, method, keepdims,
                     weights, interpolation, scale=100.0)


@implements(np.median)
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    a = _arr(a)
    if dtype_of(a).kind == "b":      # NumPy's median averages booleans as numbers
        a = astype(a, np.float64)
    return _quantile("np.median", a, 0.5, axis, out, overwrite_input, "median", keepdims)
