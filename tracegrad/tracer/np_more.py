"""The rest of NumPy's everyday surface, as compositions of the primitives (plus the
``argsort`` primitive of ``ir/prims/more.py``), with JAX's derivative conventions:

- ufuncs ``logaddexp2``, ``fmod``, ``heaviside`` (zero gradient in ``x1``; ``x2`` where
  ``x1 == 0``), and ``np.sinc``;
- sorting: ``sort``, ``argsort``, ``partition``/``argpartition`` (the fully sorted array,
  a valid partition), ``median``, ``quantile``, ``percentile`` and their ``nan``-free
  methods ``linear lower higher nearest midpoint`` (gathers at sorted positions,
  piecewise linear), ``searchsorted``, ``digitize`` (no gradient) and ``unique`` (each
  occurrence of a value gets that value's gradient);
- shapes: ``rollaxis``, ``vsplit``/``hsplit``/``dsplit``, ``array_split`` with unequal
  parts, ``column_stack``, ``row_stack``, ``dstack``, ``flipud``, ``fliplr``, ``rot90``,
  ``append``, ``meshgrid``, ``take``, ``take_along_axis``, ``put_along_axis`` (in place on
  a traced array, like ``z[i] = v``);
- arithmetic: ``diff``, ``ediff1d``, ``gradient``, ``kron``, ``cross``, ``select``,
  ``nan_to_num``, ``cumprod``, ``nansum``, ``nanmean``, ``nanprod``, ``nanmax``,
  ``nanmin``, ``nanvar``, ``nanstd``, ``nancumsum``, ``interp``, ``convolve``,
  ``correlate``, ``linspace`` (differentiable in ``start`` and ``stop``), ``trapezoid``;
- comparisons: ``isclose`` (a traced boolean array), ``allclose``, ``array_equal`` and
  ``array_equiv`` (Python booleans, recorded as guards like ``bool()``).
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
    FUNCTIONS,
    UFUNCS,
    _reject,
    _single_axis,
    as_array,
    astype,
    broadcast_to,
    coerce,
    concatenate,
    dtype_of,
    full_like_tracer,
    implements,
    ndim_of,
    numpy_loop,
    operator_index,
    ravel,
    reshape,
    shape_of,
    transpose,
)
from .np_reductions import std_of_var
from .np_shapes import flip, moveaxis, split

# -- ufuncs ------------------------------------------------------------------------------
_LN2 = math.log(2.0)


def _fmod(x, y):
    # sign(x) * (|x| mod |y|): exact values (as C's fmod), d/dx = 1, d/dy = -trunc(x / y)
    return apply("mul", apply("sign", x), apply("remainder", apply("abs", x), apply("abs", y)))


def _heaviside(x1, x2):
    dt = np.result_type(dtype_of(x1), dtype_of(x2))
    inner = apply("select", apply("greater", x1, 0), np.ones((), dt), x2)
    inner = apply("select", apply("less", x1, 0), np.zeros((), dt), inner)
    if dtype_of(x1).kind == "f":         # NaN in x1 is NaN, whatever x2 says
        inner = apply("select", apply("isnan", x1), np.asarray(np.nan, dt), inner)
    return inner


UFUNCS[np.logaddexp2] = numpy_loop(np.logaddexp2, lambda x, y: apply(
    "div", apply("logaddexp", apply("mul", x, _LN2), apply("mul", y, _LN2)), _LN2))
UFUNCS[np.fmod] = numpy_loop(np.fmod, _fmod)
UFUNCS[np.heaviside] = numpy_loop(np.heaviside, _heaviside)


@implements(np.sinc)
def sinc(x):
    """sin(pi x) / (pi x), 1 at 0 (derivative 0 there; the second derivative at exactly 0
    is not the true -pi^2/3)."""
    x = _arr(x)
    if dtype_of(x).kind in "iub":
        x = astype(x, np.float64)
    zero = apply("equal", x, 0)
    safe = apply("mul", apply("select", zero, 1.0, x), math.pi)
    return apply("select", zero, 1.0, apply("div", apply("sin", safe), safe))


# -- sorting ---------------------------------------------------------------------------
_arr = as_array


def _axis_or_flat(a, axis):
    a = _arr(a)
    if axis is None:
        return ravel(a), 0
    return a, _single_axis(operator_index(axis), ndim_of(a))


def _along_key(a, indices, axis):
    """The index that ``take_along_axis``/``put_along_axis`` apply (``axis`` normalised):
    ``indices`` on ``axis``, broadcast ranges on the others."""
    nd = ndim_of(a)
    key = []
    for d in range(nd):
        if d == axis:
            key.append(indices)
        else:
            shape = [1] * nd
            shape[d] = shape_of(a)[d]
            key.append(np.arange(shape_of(a)[d]).reshape(shape))
    return tuple(key)


def _along(a, indices, axis):
    """``np.take_along_axis(a, indices, axis)`` with ``axis`` normalised."""
    return getitem(a, _along_key(a, indices, axis))


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


def _quantile(name, a, q, axis, out, overwrite_input, method, keepdims, weights=None,
              interpolation=None, scale=1.0):
    _reject(name, out=out, weights=weights, interpolation=interpolation)
    if method == "median" and name != "np.median":     # the name median's own path uses
        raise TraceError(f"{name}: method 'median' is not a quantile method{where()}")
    if isinstance(q, Tracer) or (isinstance(q, (list, tuple)) and builtins.any(
            isinstance(e, Tracer) for e in q)):
        raise TraceError(f"{name} on traced values needs a constant q{where()}")
    # NumPy's result dtype: the data's float dtype, promoted with q's unless q is a
    # Python number (weak, NEP 50); integers give float64
    q_dtype = None if isinstance(q, (int, float)) else np.asarray(q).dtype
    q = np.asarray(q, dtype=np.float64) / scale
    if np.any((q < 0) | (q > 1)):
        raise TraceError(f"{name}: quantiles must be in the range [0, 1]{where()}")
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


# -- shapes ----------------------------------------------------------------------------
@implements(np.rollaxis)
def rollaxis(a, axis, start=0):
    a = _arr(a)
    nd = ndim_of(a)
    axis = _single_axis(axis, nd)
    if start < 0:
        start += nd
    if not 0 <= start <= nd:
        raise TraceError(f"np.rollaxis: start {start} out of range{where()}")
    if axis < start:
        start -= 1
    if axis == start:
        return a
    axes = [d for d in range(nd) if d != axis]
    axes.insert(start, axis)
    return transpose(a, axes)


def _strict_split(name, axis_of):
    def handler(ary, indices_or_sections):
        ary = _arr(ary)
        axis = axis_of(ndim_of(ary))
        if axis is None:
            raise TraceError(f"np.{name} needs an array of more dimensions{where()}")
        return split(ary, indices_or_sections, axis)
    return handler


FUNCTIONS[np.vsplit] = _strict_split("vsplit", lambda nd: 0 if nd >= 2 else None)
FUNCTIONS[np.hsplit] = _strict_split("hsplit", lambda nd: (1 if nd > 1 else 0) if nd else None)
FUNCTIONS[np.dsplit] = _strict_split("dsplit", lambda nd: 2 if nd >= 3 else None)


@implements(np.column_stack)
def column_stack(tup):
    arrays = []
    for a in tup:
        a = _arr(a)
        if ndim_of(a) < 2:
            a = reshape(a, (-1, 1))
        arrays.append(a)
    return concatenate(arrays, axis=1)


@implements(np.dstack)
def dstack(tup):
    return concatenate([np.atleast_3d(_arr(a)) for a in tup], axis=2)


if hasattr(np, "row_stack"):
    FUNCTIONS[np.row_stack] = lambda tup, **kw: np.vstack(tup, **kw)


@implements(np.flipud)
def flipud(m):
    return flip(m, 0)


@implements(np.fliplr)
def fliplr(m):
    m = _arr(m)
    if ndim_of(m) < 2:
        raise TraceError(f"np.fliplr needs an array of at least 2 dimensions{where()}")
    return flip(m, 1)


@implements(np.rot90)
def rot90(m, k=1, axes=(0, 1)):
    m = _arr(m)
    nd = ndim_of(m)
    a0, a1 = (_single_axis(ax, nd) for ax in axes)
    if a0 == a1:
        raise TraceError(f"np.rot90: axes must be different{where()}")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return flip(flip(m, a0), a1)
    perm = list(range(nd))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    return transpose(flip(m, a1), perm) if k == 1 else flip(transpose(m, perm), a1)


@implements(np.append)
def append(arr, values, axis=None):
    arr, values = _arr(arr), _arr(values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], axis=0)
    return concatenate([arr, values], axis=axis)


@implements(np.meshgrid)
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise TraceError(f"np.meshgrid: indexing must be 'xy' or 'ij'{where()}")
    xs = [ravel(_arr(x)) for x in xi]
    nd = len(xs)
    shapes = []
    for i, x in enumerate(xs):
        shape = [1] * nd
        shape[(1 - i if i < 2 else i) if indexing == "xy" and nd > 1 else i] = shape_of(x)[0]
        shapes.append(tuple(shape))
    full = np.broadcast_shapes(*shapes)
    outs = []
    for x, shape in zip(xs, shapes):
        if copy:
            # NumPy's copy=True results are arrays of their own: a gather, not a
            # broadcast view of the input
            idx = np.arange(shape_of(x)[0]).reshape(shape)
            outs.append(getitem(x, (idx if sparse else np.ascontiguousarray(
                np.broadcast_to(idx, full)),)))
        else:
            out = reshape(x, shape)
            outs.append(out if sparse else broadcast_to(out, full))
    return tuple(outs)


@implements(np.take)
def take(a, indices, axis=None, out=None, mode="raise"):
    _reject("np.take", out=out)
    a, axis = _axis_or_flat(a, axis)
    indices = _arr(indices)
    if mode in ("wrap", "clip"):
        n = shape_of(a)[axis]
        indices = np.mod(indices, n) if mode == "wrap" else np.clip(indices, 0, n - 1)
    elif mode != "raise":
        raise TraceError(f"np.take: mode {mode!r} is not supported{where()}")
    return getitem(a, (slice(None),) * axis + (indices,))


@implements(np.take_along_axis)
def take_along_axis(arr, indices, axis=-1):
    arr, axis = _axis_or_flat(arr, axis)
    indices = _arr(indices)
    if ndim_of(indices) != ndim_of(arr):
        raise TraceError(f"np.take_along_axis: indices and arr must have the same number "
                         f"of dimensions{where()}")
    return _along(arr, indices, axis)


@implements(np.put_along_axis)
def put_along_axis(arr, indices, values, axis):
    """In place, as in NumPy: on a traced ``arr`` it is recorded like ``z[i] = v`` (``arr``
    names the updated array afterwards)."""
    if not isinstance(arr, Tracer):
        raise TraceError(f"np.put_along_axis(arr, ...) would write traced values into the "
                         f"plain NumPy array arr and lose their gradient: start from a traced "
                         f"array (arr = np.zeros_like(x)){where()}")
    if axis is None:
        raise TraceError(f"np.put_along_axis with axis=None is not supported on traced "
                         f"values (reshape first){where()}")
    axis = _single_axis(operator_index(axis), ndim_of(arr))
    arr[_along_key(arr, _arr(indices), axis)] = values


# -- arithmetic ------------------------------------------------------------------------
@implements(np.diff)
def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):  # noqa: A002
    a = _arr(a)
    axis = _single_axis(axis, ndim_of(a))
    parts = []
    for extra in (prepend, append):
        if extra is np._NoValue:
            parts.append(None)
            continue
        extra = _arr(extra)
        if ndim_of(extra) == 0:
            shape = list(shape_of(a))
            shape[axis] = 1
            extra = broadcast_to(extra, tuple(shape))
        parts.append(extra)
    pieces = [p for p in (parts[0], a, parts[1]) if p is not None]
    if len(pieces) > 1:
        a = concatenate(pieces, axis=axis)
    lead = (slice(None),) * axis
    op = "not_equal" if dtype_of(a).kind == "b" else "sub"    # NumPy's diff of booleans
    for _ in range(operator_index(n)):
        a = apply(op, getitem(a, lead + (slice(1, None),)), getitem(a, lead + (slice(None, -1),)))
    return a


@implements(np.ediff1d)
def ediff1d(ary, to_end=None, to_begin=None):
    ary = _arr(ary)
    if dtype_of(ary).kind == "b":      # np.ediff1d subtracts, even booleans (TypeError)
        raise TraceError(f"np.ediff1d of a boolean array: NumPy's boolean subtract is not "
                         f"supported (use np.diff, which compares){where()}")
    d = diff(ravel(ary))
    parts = [ravel(_arr(x)) for x in (to_begin,) if x is not None] + [d] + \
        [ravel(_arr(x)) for x in (to_end,) if x is not None]
    return concatenate(parts) if len(parts) > 1 else d


def _gradient_axis(f, axis, h, edge_order):
    n = shape_of(f)[axis]
    lead = (slice(None),) * axis

    def sl(s):
        return getitem(f, lead + (s,))
    if n < edge_order + 1:
        raise TraceError(f"np.gradient needs at least {edge_order + 1} points along an axis"
                         f"{where()}")
    bshape = [1] * ndim_of(f)
    bshape[axis] = -1
    if np.ndim(h) == 0:
        inner = (sl(slice(2, None)) - sl(slice(None, -2))) / (2.0 * h)
        if edge_order == 1:
            first = (sl(slice(1, 2)) - sl(slice(0, 1))) / h
            last = (sl(slice(-1, None)) - sl(slice(-2, -1))) / h
        else:
            first = (-1.5 * sl(slice(0, 1)) + 2.0 * sl(slice(1, 2)) - 0.5 * sl(slice(2, 3))) / h
            last = (0.5 * sl(slice(-3, -2)) - 2.0 * sl(slice(-2, -1)) + 1.5 * sl(slice(-1, None))) / h
    else:
        dx = np.diff(np.asarray(h, dtype=np.float64))
        if dx.shape != (n - 1,):
            raise TraceError(f"np.gradient: coordinates must match the axis length{where()}")
        dx1, dx2 = dx[:-1], dx[1:]
        a = (-(dx2) / (dx1 * (dx1 + dx2))).reshape(bshape)
        b = ((dx2 - dx1) / (dx1 * dx2)).reshape(bshape)
        c = (dx1 / (dx2 * (dx1 + dx2))).reshape(bshape)
        inner = a * sl(slice(None, -2)) + b * sl(slice(1, -1)) + c * sl(slice(2, None))
        if edge_order == 1:
            first = (sl(slice(1, 2)) - sl(slice(0, 1))) / dx[0]
            last = (sl(slice(-1, None)) - sl(slice(-2, -1))) / dx[-1]
        else:
            d1, d2 = dx[0], dx[1]
            first = (-(2.0 * d1 + d2) / (d1 * (d1 + d2)) * sl(slice(0, 1))
                     + (d1 + d2) / (d1 * d2) * sl(slice(1, 2))
                     - d1 / (d2 * (d1 + d2)) * sl(slice(2, 3)))
            d1, d2 = dx[-2], dx[-1]
            last = (d2 / (d1 * (d1 + d2)) * sl(slice(-3, -2))
                    - (d2 + d1) / (d1 * d2) * sl(slice(-2, -1))
                    + (2.0 * d2 + d1) / (d2 * (d1 + d2)) * sl(slice(-1, None)))
    return concatenate([first, inner, last], axis=axis)


@implements(np.gradient)
def gradient(f, *varargs, axis=None, edge_order=1):
    f = _arr(f)
    if dtype_of(f).kind == "b":
        raise TraceError(f"np.gradient of a boolean array: NumPy subtracts booleans here and "
                         f"raises TypeError{where()}")
    if dtype_of(f).kind in "iu":
        f = astype(f, np.float64)
    nd = ndim_of(f)
    axes = list(range(nd)) if axis is None else (
        [axis] if isinstance(axis, (int, np.integer)) else list(axis))
    axes = [_single_axis(ax, nd) for ax in axes]
    if edge_order not in (1, 2):
        raise TraceError(f"np.gradient: edge_order must be 1 or 2{where()}")
    if builtins.any(isinstance(v, Tracer) for v in varargs):
        raise TraceError(f"np.gradient on traced values needs constant spacings{where()}")
    if not varargs:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacing = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TraceError(f"np.gradient: invalid number of spacing arguments{where()}")
    outs = [_gradient_axis(f, ax, h, edge_order) for ax, h in zip(axes, spacing)]
    return outs[0] if len(outs) == 1 else tuple(outs)


@implements(np.kron)
def kron(a, b):
    a, b = _arr(a), _arr(b)
    nd = builtins.max(ndim_of(a), ndim_of(b))
    sa = (1,) * (nd - ndim_of(a)) + tuple(shape_of(a))
    sb = (1,) * (nd - ndim_of(b)) + tuple(shape_of(b))
    a = reshape(a, tuple(x for n in sa for x in (n, 1)))
    b = reshape(b, tuple(x for n in sb for x in (1, n)))
    return reshape(apply("mul", a, b), tuple(m * n for m, n in zip(sa, sb)))


@implements(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    a = moveaxis(_arr(a), axisa, -1)
    b = moveaxis(_arr(b), axisb, -1)
    na, nb = shape_of(a)[-1], shape_of(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise TraceError(f"incompatible dimensions for cross product (dimension must be 2 or "
                         f"3){where()}")

    def comp(v, i, n):
        return getitem(v, (Ellipsis, i)) if i < n else 0.0
    a0, a1, a2 = (comp(a, i, na) for i in range(3))
    b0, b1, b2 = (comp(b, i, nb) for i in range(3))
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return z
    c = np.stack(_broadcast_all(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, z), axis=-1)
    return moveaxis(c, -1, axisc)


def _broadcast_all(*xs):
    shape = np.broadcast_shapes(*(shape_of(x) for x in xs))
    return [broadcast_to(x if isinstance(x, Tracer) else np.asarray(x), shape) for x in xs]


@implements(np.select)
def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise TraceError(f"np.select: list of cases must be same length as list of "
                         f"conditions{where()}")
    choices = [_arr(c) for c in choicelist]
    # NumPy's result dtype: the choices', with a Python-number default weak (NEP 50)
    weak = isinstance(default, (bool, int, float, complex))
    dt = np.result_type(*[dtype_of(c) for c in choices],
                        default if weak else dtype_of(_arr(default)))
    out = astype(_arr(default), dt)
    for cond, choice in reversed(list(zip(condlist, choices))):
        out = np.where(_arr(cond), astype(choice, dt), out)
    return out


@implements(np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = _arr(x)
    dt = dtype_of(x)
    if dt.kind == "c":
        # NumPy replaces in the real and the imaginary part separately
        parts = [nan_to_num(apply(p, x), nan=nan, posinf=posinf, neginf=neginf)
                 for p in ("real", "imag")]
        fixed = apply("add", parts[0], apply("mul", parts[1], np.asarray(1j, dt)))
        return apply("select", apply("isfinite", x), x, fixed)
    if dt.kind not in "f":
        return x
    big = np.finfo(dt).max
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    x = apply("select", apply("isnan", x), np.asarray(nan, dt), x)
    x = apply("select", apply("equal", x, np.inf), np.asarray(posinf, dt), x)
    return apply("select", apply("equal", x, -np.inf), np.asarray(neginf, dt), x)


@implements(np.cumprod)
def cumprod(a, axis=None, dtype=None, out=None):
    """``prod`` over a lower-triangular mask: exact at zeros to every order (O(n^2) work)."""
    _reject("np.cumprod", out=out)
    a, axis = _axis_or_flat(a, axis)
    if dtype is not None:
        a = astype(a, dtype)
    n = shape_of(a)[axis]
    if dtype_of(a).kind == "c" and n:
        # NumPy multiplies in sequence; a masked product's extra factors (1 + 0j) would
        # turn an infinite or NaN part into NaN in the other part too
        lead = (slice(None),) * axis
        outs = [getitem(a, lead + (slice(0, 1),))]
        for k in range(1, n):
            outs.append(outs[-1] * getitem(a, lead + (slice(k, k + 1),)))
        return concatenate(outs, axis=axis)
    a = moveaxis(a, axis, -1)
    rows = reshape(a, tuple(shape_of(a)[:-1]) + (1, n))
    tri = np.tril(np.ones((n, n), dtype=bool))
    masked = apply("select", tri, rows, np.ones((), dtype_of(a)))
    result = apply("prod", masked, axis=(ndim_of(masked) - 1,), keepdims=False)
    if dtype is not None:
        result = astype(result, dtype)      # the product accumulates small integers in int64
    return moveaxis(result, -1, axis)


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


@implements(np.interp)
def interp(x, xp, fp, left=None, right=None, period=None):
    """Piecewise linear, as JAX's ``jnp.interp``: differentiable in ``x``, ``xp`` and
    ``fp``; at a knot the gradient in ``x`` is the slope of the segment to the right."""
    x, xp, fp = _arr(x), _arr(xp), _arr(fp)
    if ndim_of(xp) != 1 or ndim_of(fp) != 1:
        raise TraceError(f"np.interp: xp and fp must be 1-D{where()}")
    if shape_of(xp)[0] != shape_of(fp)[0] or shape_of(xp)[0] == 0:
        raise TraceError(f"np.interp: fp and xp are not of the same length, or empty{where()}")
    if dtype_of(x).kind == "c" or dtype_of(xp).kind == "c":
        raise TraceError(f"np.interp: x and xp must be real (NumPy cannot cast complex values "
                         f"to float64, TypeError){where()}")
    # NumPy's interp computes in float64, or complex128 for complex fp
    fp = astype(fp, np.complex128 if dtype_of(fp).kind == "c" else np.float64)
    x, xp = astype(x, np.float64), astype(xp, np.float64)
    if period is not None:
        if isinstance(period, Tracer):
            raise TraceError(f"np.interp on traced values needs a constant period{where()}")
        if period == 0:
            raise TraceError(f"np.interp: period must be a non-zero value{where()}")
        # NumPy's normalisation: everything modulo the period, the knots sorted and
        # extended by one on each side
        period, left, right = abs(float(period)), None, None
        x, xp = np.remainder(x, period), np.remainder(xp, period)
        order = argsort(xp)
        xp, fp = take(xp, order), take(fp, order)
        xp = concatenate([getitem(xp, (slice(-1, None),)) - period, xp,
                          getitem(xp, (slice(0, 1),)) + period])
        fp = concatenate([getitem(fp, (slice(-1, None),)), fp, getitem(fp, (slice(0, 1),))])
    n = shape_of(xp)[0]
    lval = take(fp, 0) if left is None else left
    rval = take(fp, n - 1) if right is None else right
    if n == 1:
        f = broadcast_to(take(fp, 0), tuple(shape_of(x)))
    else:
        # NumPy's compiled loop: j, the last knot at or below x; on a segment
        # slope * (x - xp[j]) + fp[j], then from the right end if that is NaN, then fp[j]
        # if both are NaN and the segment is flat; at the last knot fp[-1]
        j = searchsorted(xp, x, side="right") - 1
        jc = np.clip(j, 0, n - 2)
        x0, x1 = take(xp, jc), take(xp, jc + 1)
        f0, f1 = take(fp, jc), take(fp, jc + 1)
        slope = (f1 - f0) / (x1 - x0)
        at_end = j >= n - 1
        f = np.where(at_end, slope * (x - x1) + f1, slope * (x - x0) + f0)
        f = np.where(np.isnan(f) & at_end, f1, f)
        f = np.where(np.isnan(f) & (x == x0), f0, f)            # exact hit, repeated knot
        f = np.where(np.isnan(f), slope * (x - x1) + f1, f)
        f = np.where(np.isnan(f) & (f0 == f1), f0, f)
    f = np.where(x < take(xp, 0), lval, f)
    f = np.where(x > take(xp, n - 1), rval, f)
    return np.where(np.isnan(x), np.asarray(np.nan, dtype_of(f)), f)


def _full_convolve(a, v):
    n, m = shape_of(a)[0], shape_of(v)[0]
    k = np.arange(n + m - 1)[:, None]
    i = np.arange(n)[None, :]
    idx = k - i
    ok = (idx >= 0) & (idx < m)
    gathered = getitem(v, (np.clip(idx, 0, m - 1),))          # (n + m - 1, n)
    zero = np.zeros((), np.result_type(dtype_of(a), dtype_of(v)))
    return np.matmul(apply("select", ok, gathered, zero), a)


@implements(np.convolve)
def convolve(a, v, mode="full"):
    a, v = ravel(_arr(a)), ravel(_arr(v))
    n, m = shape_of(a)[0], shape_of(v)[0]
    if n == 0 or m == 0:
        raise TraceError(f"np.convolve: inputs cannot be empty{where()}")
    full = _full_convolve(a, v)
    lo, hi = builtins.min(n, m), builtins.max(n, m)
    if mode == "full":
        return full
    if mode == "same":
        start = (lo - 1) // 2
        return getitem(full, (slice(start, start + hi),))
    if mode == "valid":
        return getitem(full, (slice(lo - 1, hi),))
    raise TraceError(f"np.convolve: mode {mode!r} is not supported{where()}")


@implements(np.correlate)
def correlate(a, v, mode="valid"):
    a, v = ravel(_arr(a)), ravel(_arr(v))
    n, m = shape_of(a)[0], shape_of(v)[0]
    if dtype_of(v).kind == "c":          # NumPy's correlate conjugates v
        v = apply("conj", v)
    full = convolve(a, flip(v), "full")
    lo, hi = builtins.min(n, m), builtins.max(n, m)
    if mode == "full":
        return full
    if mode == "same":      # NumPy's alignment (it swaps the arguments when v is longer)
        start = (m - 1) // 2 if m <= n else n // 2
        return getitem(full, (slice(start, start + hi),))
    if mode == "valid":
        return getitem(full, (slice(lo - 1, hi),))
    raise TraceError(f"np.correlate: mode {mode!r} is not supported{where()}")


@implements(np.linspace)
def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
    """NumPy's recipe, ``start + arange(num) * step`` with the end set to ``stop``:
    differentiable in ``start`` and ``stop`` (a constant ``num``)."""
    num = operator_index(num)
    if num < 0:
        raise TraceError(f"np.linspace: number of samples, {num}, must be non-negative{where()}")
    start, stop = coerce(start), coerce(stop)
    div = (num - 1) if endpoint else num
    dt = np.result_type(dtype_of(start), dtype_of(stop), 1.0)    # 1.0: a weak float
    start, stop = astype(start, dt), astype(stop, dt)
    delta = stop - start
    extra = ndim_of(delta)
    steps = np.arange(num, dtype=dt).reshape((-1,) + (1,) * extra)
    step = delta / div if div > 0 else None
    if step is not None:
        y = steps * step + start
    else:
        y = steps * delta + start
    if endpoint and num > 1:
        y = concatenate([getitem(y, (slice(None, -1),)), reshape(stop, (1,) + shape_of(stop))])
    y = broadcast_to(y, (num,) + tuple(np.broadcast_shapes(shape_of(start), shape_of(stop))))
    if axis != 0:
        y = moveaxis(y, 0, axis)
    if dtype is not None:
        if np.dtype(dtype).kind in "iu":
            y = np.floor(y)
        y = astype(y, dtype)
    if retstep:
        return y, (step if step is not None else np.nan)
    return y


@implements(np.trapezoid)
def trapezoid(y, x=None, dx=1.0, axis=-1):
    y = _arr(y)
    axis = _single_axis(axis, ndim_of(y))
    lead = (slice(None),) * axis
    pair = getitem(y, lead + (slice(1, None),)) + getitem(y, lead + (slice(None, -1),))
    if x is None:
        widths = dx
    else:
        x = _arr(x)
        widths = diff(x, axis=axis if ndim_of(x) > 1 else -1)
        if ndim_of(x) == 1:
            shape = [1] * ndim_of(y)
            shape[axis] = -1
            widths = reshape(widths, tuple(shape))
    return np.sum(widths * pair, axis=axis) / 2.0


# -- comparisons -------------------------------------------------------------------------
@implements(np.isclose)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """A traced boolean array (no gradient): NumPy's rule, ``|a - b| <= atol + rtol |b|``,
    with infinities equal only to themselves."""
    a, b = _arr(a), _arr(b)
    if dtype_of(a).kind in "iub":
        a = astype(a, np.float64)
    if dtype_of(b).kind in "iub":
        b = astype(b, np.float64)
    finite = np.isfinite(a) & np.isfinite(b)
    close = np.abs(a - b) <= atol + rtol * np.abs(b)
    out = np.where(finite, close, a == b)
    if equal_nan:
        out = out | (np.isnan(a) & np.isnan(b))
    return out


@implements(np.allclose)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """A Python bool, recorded as a guard (like ``bool()``)."""
    return bool(np.all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


@implements(np.array_equal)
def array_equal(a1, a2, equal_nan=False):
    """A Python bool, recorded as a guard (like ``bool()``)."""
    a1, a2 = _arr(a1), _arr(a2)
    if tuple(shape_of(a1)) != tuple(shape_of(a2)):
        return False
    same = a1 == a2
    if equal_nan:
        same = same | (np.isnan(a1) & np.isnan(a2))
    return bool(np.all(same))


@implements(np.array_equiv)
def array_equiv(a1, a2):
    a1, a2 = _arr(a1), _arr(a2)
    try:
        np.broadcast_shapes(shape_of(a1), shape_of(a2))
    except ValueError:
        return False
    return bool(np.all(a1 == a2))
