"""Statistics and counting on traced values, NumPy's own steps on traced arrays:
``cov``, ``corrcoef``, ``ptp``, ``count_nonzero``, ``bincount`` and ``histogram`` /
``histogram_bin_edges`` (differentiable in ``weights``; ``density=True`` also in the
data, through the bin edges), the NaN-ignoring ``nanmedian``, ``nanquantile``,
``nanpercentile``, ``nanargmin``, ``nanargmax``, ``nancumprod``, the array API's
``cumulative_sum``/``cumulative_prod``, ``unwrap`` and ``i0`` (NumPy's Chebyshev series,
so its derivative is that series' derivative).

Where a result's shape depends on values (``bincount``'s length, which entries of a
``nan*`` slice are NaN) they are read at trace time and recorded as guards, as
``bool()`` is: a compiled function traces again when they change.
"""
from __future__ import annotations

import builtins
import math
import operator
import warnings

import numpy as np

from ..errors import TraceError
from ..ir.source import where
from .core import Tracer
from .np_base import (
    _axis_tuple,
    _reject,
    _single_axis,
    as_array,
    astype,
    concatenate,
    dtype_of,
    implements,
    known,
    ndim_of,
    shape_of,
)
from .np_sorting import _constant_q, _segment_sum

_arr = as_array


@implements(np.ptp)
def ptp(a, axis=None, out=None, keepdims=False):
    a = _arr(a)
    return np.subtract(np.max(a, axis=axis, keepdims=keepdims),
                       np.min(a, axis=axis, keepdims=keepdims))


@implements(np.count_nonzero)
def count_nonzero(a, axis=None, *, keepdims=False):
    """An ``intp`` count (NumPy gives a Python int for ``axis=None``: here a 0-d array)."""
    a = _arr(a)
    return np.sum(a != 0, axis=axis, dtype=np.intp, keepdims=keepdims)


# -- covariance -------------------------------------------------------------------------
@implements(np.cov)
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    if ddof is not None and ddof != int(ddof):
        raise TraceError(f"ddof must be integer{where()}")
    m = _arr(m)
    if ndim_of(m) > 2:
        raise TraceError(f"m has more than 2 dimensions{where()}")
    if y is not None:
        y = _arr(y)
        if ndim_of(y) > 2:
            raise TraceError(f"y has more than 2 dimensions{where()}")
    if dtype is None:
        dtype = np.result_type(dtype_of(m), np.float64) if y is None else \
            np.result_type(dtype_of(m), dtype_of(y), np.float64)
    x = astype(np.atleast_2d(m), dtype)
    if not rowvar and ndim_of(m) != 1:
        x = x.T
    if shape_of(x)[0] == 0:
        return np.array([]).reshape(0, 0)
    if y is not None:
        y = astype(np.atleast_2d(y), dtype)
        if not rowvar and shape_of(y)[0] != 1:
            y = y.T
        x = concatenate([x, y], axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    w = None
    if fweights is not None:
        fweights = astype(_arr(fweights), float)
        if not bool(np.all(fweights == np.around(fweights))):
            raise TraceError(f"fweights must be integer{where()}")
        if ndim_of(fweights) > 1 or shape_of(fweights)[0] != shape_of(x)[1]:
            raise TraceError(f"incompatible numbers of samples and fweights{where()}")
        if bool(np.any(fweights < 0)):
            raise TraceError(f"fweights cannot be negative{where()}")
        w = fweights
    if aweights is not None:
        aweights = astype(_arr(aweights), float)
        if ndim_of(aweights) > 1 or shape_of(aweights)[0] != shape_of(x)[1]:
            raise TraceError(f"incompatible numbers of samples and aweights{where()}")
        if bool(np.any(aweights < 0)):
            raise TraceError(f"aweights cannot be negative{where()}")
        w = aweights if w is None else w * aweights
    if w is None:
        avg = np.mean(x, axis=1)
        fact = shape_of(x)[1] - ddof
    else:
        w_sum = np.sum(w)
        avg = np.sum(x * w, axis=1) / w_sum     # np.average's steps
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * np.sum(w * aweights) / w_sum
    if bool(fact <= 0):
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    x = astype(x - avg[:, None], dtype_of(x))            # NumPy: X -= avg[:, None]
    x_t = x.T if w is None else (x * w).T
    c = np.dot(x, np.conj(x_t))
    c = astype(c * np.true_divide(1, fact), dtype_of(c))  # c *= 1 / fact
    return np.squeeze(c)


@implements(np.corrcoef)
def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    c = cov(x, y, rowvar, dtype=dtype)
    if ndim_of(c) == 0:
        return c / c
    stddev = np.sqrt(np.real(np.diag(c)))
    c = c / stddev[:, None]
    c = c / stddev[None, :]
    if dtype_of(c).kind == "c":
        return np.clip(np.real(c), -1, 1) + 1j * np.clip(np.imag(c), -1, 1)
    return np.clip(c, -1, 1)


# -- counting ---------------------------------------------------------------------------
@implements(np.bincount)
def bincount(x, weights=None, minlength=0):
    """Counts (``intp``) or sums of ``weights`` (float64, as NumPy casts them) per value
    of ``x``; the length ``max(x) + 1`` is read at trace time (a guard)."""
    x = _arr(x)
    if ndim_of(x) != 1:
        raise TraceError(f"object too deep for desired array (np.bincount needs 1-d x)"
                         f"{where()}")
    if dtype_of(x).kind not in "iub":
        raise TraceError(f"Cannot cast array data from {dtype_of(x)} to int64 according "
                         f"to the rule 'safe' (np.bincount){where()}")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise TraceError(f"'minlength' must not be negative{where()}")
    values = known(x, "np.bincount's x")
    if values.size and values.min() < 0:
        raise TraceError(f"'list' argument must have no negative elements{where()}")
    n = builtins.max(int(values.max()) + 1 if values.size else 0, minlength)
    x = astype(x, np.intp)
    if weights is None:
        ones = np.ones(shape_of(x), np.intp)
        return _segment_sum(ones, x, n) if isinstance(x, Tracer) else \
            np.bincount(known(x, ""), minlength=n)
    weights = _arr(weights)
    if dtype_of(weights).kind == "c":
        raise TraceError(f"Cannot cast array data from {dtype_of(weights)} to float64 "
                         f"according to the rule 'safe' (np.bincount){where()}")
    if shape_of(weights) != shape_of(x):
        raise TraceError(f"The weights and list don't have the same length.{where()}")
    return _segment_sum(astype(weights, np.float64), x, n)


def _outer_edges(a, range_):
    if range_ is not None:
        first, last = range_
        if bool(first > last):
            raise TraceError(f"max must be larger than min in range parameter.{where()}")
        if not bool(np.isfinite(first) & np.isfinite(last)):
            raise TraceError(f"supplied range of [{first}, {last}] is not finite{where()}")
        return first, last
    if np.size(a) == 0:
        return 0, 1
    first, last = np.min(a), np.max(a)
    if not bool(np.isfinite(first) & np.isfinite(last)):
        raise TraceError(f"autodetected range of [{first}, {last}] is not finite{where()}")
    return first, last


def _bin_edges(a, bins, range_, weights):
    """NumPy's ``_get_bin_edges``: the edges, and ``(first, last, n)`` for equal bins."""
    if isinstance(bins, str):
        raise TraceError(f"np.histogram(bins={bins!r}) on traced values: the bin-width "
                         f"estimators are not supported; pass a number of bins or the edges"
                         f"{where()}")
    if np.ndim(bins) == 0 and not isinstance(bins, Tracer):
        try:
            n = operator.index(bins)
        except TypeError:
            raise TraceError(f"`bins` must be an integer, a string, or an array{where()}") \
                from None
        if n < 1:
            raise TraceError(f"`bins` must be positive, when an integer{where()}")
        lo, hi = _outer_edges(a, range_)
        if bool(lo == hi):
            lo, hi = lo - 0.5, hi + 0.5
        bin_type = np.result_type(dtype_of(a), *(dtype_of(e) if isinstance(
            e, (Tracer, np.generic)) else e for e in (lo, hi)))
        if bin_type.kind in "iub":
            bin_type = np.result_type(bin_type, float)
        edges = np.linspace(lo, hi, n + 1, endpoint=True, dtype=bin_type)
        return edges, (lo, hi, n)
    edges = _arr(bins)
    if ndim_of(edges) != 1:
        raise TraceError(f"`bins` must be 1d, when an array{where()}")
    if bool(np.any(edges[:-1] > edges[1:])):
        raise TraceError(f"`bins` must increase monotonically, when an array{where()}")
    return edges, None


@implements(np.histogram_bin_edges)
def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
    a = np.ravel(_arr(a))
    return _bin_edges(a, bins, range, weights)[0]


@implements(np.histogram)
def histogram(a, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """NumPy's bins: equal bins by NumPy's index arithmetic, explicit edges by sorted
    cumulative sums. Counts have no gradient; weighted sums are differentiable in the
    weights, and ``density=True`` in the data too (through the edges)."""
    a = np.ravel(_arr(a))
    if dtype_of(a).kind == "c":
        raise TraceError(f"np.histogram of complex values (NumPy cannot order them){where()}")
    if weights is not None:
        weights = np.ravel(_arr(weights))
        if shape_of(weights) != shape_of(a):
            raise TraceError(f"weights should have the same shape as a.{where()}")
    edges, equal = _bin_edges(a, bins, range, weights)
    ntype = np.dtype(np.intp) if weights is None else dtype_of(weights)
    if equal is not None:
        lo, hi, n = equal
        keep = (a >= lo) & (a <= hi)
        ta = astype(a, dtype_of(edges))
        f_idx = ((ta - lo) / (hi - lo)) * n
        idx = astype(np.where(keep, f_idx, 0), np.intp)
        idx = np.where(idx == n, n - 1, idx)
        idx = np.where(ta < np.take(edges, idx), idx - 1, idx)
        idx = np.where((ta >= np.take(edges, idx + 1)) & (idx != n - 1), idx + 1, idx)
        idx = np.where(keep, idx, n)                      # out of range: a bin thrown away
        if not isinstance(idx, Tracer):
            idx = np.asarray(idx)
        w = np.ones(shape_of(a), np.intp) if weights is None else astype(weights, np.float64)
        counts = _segment_sum(w, idx, n + 1)[:n]
        counts = astype(counts, ntype)
    else:
        order = np.argsort(a, kind="stable")
        sa = np.take(a, order)
        inclusive = concatenate([np.searchsorted(sa, edges[:-1], "left"),
                                 np.searchsorted(sa, edges[-1:], "right")])
        if weights is None:
            cum = astype(inclusive, ntype)
        else:
            sw = np.take(weights, order)
            cw = concatenate([np.zeros(1, ntype), np.cumsum(sw)])
            cum = np.take(cw, inclusive)
        counts = np.diff(cum)
    if density:
        db = astype(np.diff(edges), float)
        return counts / db / np.sum(counts), edges
    return counts, edges


# -- NaN-ignoring order statistics ------------------------------------------------------
def _nan_quantile(name, a, q, axis, out, overwrite_input, method, keepdims, weights=None,
                  scale=1.0):
    """Each slice's NaNs dropped (which entries are NaN is read at trace time, a guard),
    then NumPy's quantile of what is left: sort (NaN last) and interpolate at positions
    that depend on each slice's count."""
    _reject(name, weights=weights)
    q, q_dtype = _constant_q(name, q, scale)
    a = _arr(a)
    if dtype_of(a).kind not in "fc":
        if dtype_of(a).kind == "b" and name != "np.nanmedian":
            raise TraceError(f"{name} of a boolean array: NumPy raises TypeError{where()}")
        fn = {"np.nanmedian": np.median}.get(name)
        if fn is not None:
            return np.median(a, axis=axis, keepdims=keepdims)
        return np.quantile(a, q if q_dtype is None else q.astype(q_dtype), axis=axis,
                           method=method, keepdims=keepdims)
    if dtype_of(a).kind == "c":
        raise TraceError(f"{name} of complex values: NumPy refuses to order them{where()}")
    shape = tuple(shape_of(a))
    nd = len(shape)
    axes = tuple(range(nd)) if axis is None else _axis_tuple(axis, a)
    rest = [d for d in range(nd) if d not in axes]
    rows = np.reshape(np.transpose(a, rest + list(axes)),
                      (int(np.prod([shape[d] for d in rest])), -1))
    nan = known(np.isnan(rows), f"{name}: which entries are NaN")
    counts = (~nan).sum(axis=1)                           # per row
    s = np.sort(rows, axis=1)                             # NaN last
    r = np.arange(counts.size)
    dt = dtype_of(a)
    if q_dtype is not None and q_dtype.kind == "f":
        dt = np.result_type(dt, q_dtype)
    outs = []
    for qv in q.reshape(-1):
        nlast = np.maximum(counts - 1, 0)
        pos = qv * nlast
        lo = np.floor(pos).astype(np.intp)
        hi = np.minimum(lo + 1, nlast)
        frac = pos - lo
        at = lambda idx: s[r, idx]  # noqa: E731
        if method == "linear":
            a_lo, a_hi = at(lo), at(hi)
            t = frac.astype(dtype_of(s))
            diff = a_hi - a_lo
            v = np.where(t >= 0.5, a_hi - diff * (1 - t), a_lo + diff * t)
        elif method == "lower":
            v = at(lo)
        elif method == "higher":
            v = at(np.where(frac > 0, hi, lo))
        elif method == "nearest":
            v = at(np.where(np.around(pos) == hi, hi, lo))
        elif method in ("midpoint", "median"):
            v = (at(lo) + at(np.where(frac > 0, hi, lo))) * 0.5
            if method == "median":
                v = v + 0.0
        else:
            raise TraceError(f"{name}: method {method!r} is not supported on traced values "
                             f"(linear, lower, higher, nearest, midpoint){where()}")
        v = np.where(counts == 0, np.asarray(np.nan, dtype_of(s)), v)
        outs.append(v)
    if counts.size and np.any(counts == 0):
        warnings.warn("All-NaN slice encountered", RuntimeWarning, stacklevel=3)
    out_shape = [shape[d] for d in rest]
    if keepdims:
        out_shape = [1 if d in axes else n for d, n in enumerate(shape)]
    res = np.reshape(np.stack(outs), q.shape + tuple(out_shape))
    return astype(res, dt)


@implements(np.nanquantile)
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None, interpolation=None):
    _reject("np.nanquantile", interpolation=interpolation)
    return _nan_quantile("np.nanquantile", a, q, axis, out, overwrite_input, method,
                         keepdims, weights)


@implements(np.nanpercentile)
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None, interpolation=None):
    _reject("np.nanpercentile", interpolation=interpolation)
    return _nan_quantile("np.nanpercentile", a, q, axis, out, overwrite_input, method,
                         keepdims, weights, scale=100.0)


@implements(np.nanmedian)
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    return _nan_quantile("np.nanmedian", a, 0.5, axis, out, overwrite_input, "median",
                         keepdims)


def _nan_arg(name, fn, fill, a, axis, out, keepdims):
    a = _arr(a)
    if dtype_of(a).kind not in "fc":
        return fn(a, axis=axis, keepdims=keepdims)
    nan = np.isnan(a)
    if bool(np.any(np.all(nan, axis=axis))):
        raise TraceError(f"All-NaN slice encountered ({name}: NumPy raises ValueError)"
                         f"{where()}")
    return fn(np.where(nan, fill, a), axis=axis, keepdims=keepdims)


@implements(np.nanargmin)
def nanargmin(a, axis=None, out=None, *, keepdims=np._NoValue):
    return _nan_arg("np.nanargmin", np.argmin, np.inf, a, axis, out,
                    keepdims is True)


@implements(np.nanargmax)
def nanargmax(a, axis=None, out=None, *, keepdims=np._NoValue):
    return _nan_arg("np.nanargmax", np.argmax, -np.inf, a, axis, out,
                    keepdims is True)


@implements(np.nancumprod)
def nancumprod(a, axis=None, dtype=None, out=None):
    a = _arr(a)
    if dtype_of(a).kind in "fc":
        a = np.where(np.isnan(a), np.ones((), dtype_of(a)), a)
    return np.cumprod(a, axis=axis, dtype=dtype)


def _cumulative(name, fn, start, x, axis, dtype, out, include_initial):
    x = _arr(x)
    if axis is None:
        if ndim_of(x) > 1:
            raise TraceError(f"{name}: axis must be specified for a multi-dimensional array"
                             f"{where()}")
        axis = 0
    if ndim_of(x) == 0:
        raise TraceError(f"{name}: the input must be at least 1-d{where()}")
    axis = _single_axis(operator.index(axis), ndim_of(x))
    res = fn(x, axis=axis, dtype=dtype)
    if include_initial:
        shape = list(shape_of(res))
        shape[axis] = 1
        res = concatenate([np.full(shape, start, dtype_of(res)), res], axis=axis)
    return res


@implements(np.cumulative_sum)
def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    return _cumulative("np.cumulative_sum", np.cumsum, 0, x, axis, dtype, out,
                       include_initial)


@implements(np.cumulative_prod)
def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    return _cumulative("np.cumulative_prod", np.cumprod, 1, x, axis, dtype, out,
                       include_initial)


@implements(np.unwrap)
def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    p = _arr(p)
    nd = ndim_of(p)
    axis = _single_axis(operator.index(axis), nd)
    dd = np.diff(p, axis=axis)
    if discont is None:
        discont = period / 2
    dtype = np.result_type(dtype_of(dd), period)
    if np.issubdtype(dtype, np.integer):
        interval_high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        interval_high = period / 2
        ambiguous = True
    interval_low = -interval_high
    ddmod = np.mod(dd - interval_low, period) + interval_low
    if ambiguous:
        ddmod = np.where((ddmod == interval_low) & (dd > 0),
                         astype(np.asarray(interval_high), dtype_of(ddmod)), ddmod)
    ph_correct = ddmod - dd
    ph_correct = np.where(np.abs(dd) < discont, np.zeros((), dtype_of(ph_correct)), ph_correct)
    head = (slice(None),) * axis
    up = astype(p, dtype)
    rest = astype(up[head + (slice(1, None),)] + np.cumsum(ph_correct, axis=axis), dtype)
    return concatenate([up[head + (slice(0, 1),)], rest], axis=axis)


# -- i0 ---------------------------------------------------------------------------------
def _chbevl(x, vals):
    b0, b1 = vals[0], 0.0
    b2 = 0.0
    for c in vals[1:]:
        b2 = b1
        b1 = b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


@implements(np.i0)
def i0(x):
    """NumPy's Chebyshev expansions of the modified Bessel function I0, on |x| <= 8 and
    beyond (each branch evaluated where it is taken)."""
    from numpy.lib import _function_base_impl as impl
    x = _arr(x)
    if dtype_of(x).kind == "c":
        raise TraceError(f"i0 not supported for complex values{where()}")
    if dtype_of(x).kind != "f":
        x = astype(x, float)
    x = np.abs(x)
    small = x <= 8.0
    xs = np.where(small, x, 0.0)
    xl = np.where(small, 9.0, x)
    one = np.exp(xs) * _chbevl(xs / 2.0 - 2, impl._i0A)
    two = np.exp(xl) * _chbevl(32.0 / xl - 2.0, impl._i0B) / np.sqrt(xl)
    return astype(np.where(small, one, two), dtype_of(x))


@implements(np.histogramdd)
def histogramdd(sample, bins=10, range=None, density=None, weights=None):  # noqa: A002
    """NumPy's ``histogramdd``: per dimension, the bin of each point by ``searchsorted``
    on the edges (the last edge inclusive), then counts or weighted sums per cell
    (differentiable in the weights; ``density`` also in the points, through the edges)."""
    listed = isinstance(sample, (list, tuple))
    sample = _arr(sample)
    if listed or ndim_of(sample) != 2:        # a sequence of 1-d arrays
        sample = np.atleast_2d(sample).T
    n, d = shape_of(sample)
    if weights is not None:
        weights = _arr(weights)
    try:
        m = len(bins)
        if m != d:
            raise TraceError(f"The dimension of bins must be equal to the dimension of the "
                             f"sample x.{where()}")
    except TypeError:
        bins = d * [bins]
    ranges = (None,) * d if range is None else range
    edges, locs = [], []
    for i in builtins.range(d):
        col = sample[:, i]
        if np.ndim(bins[i]) == 0 and not isinstance(bins[i], Tracer):
            nb = operator.index(bins[i])
            if nb < 1:
                raise TraceError(f"`bins[{i}]` must be positive, when an integer{where()}")
            lo, hi = _outer_edges(col, ranges[i])
            if bool(lo == hi):
                lo, hi = lo - 0.5, hi + 0.5
            e = np.linspace(lo, hi, nb + 1)
        else:
            e = _arr(bins[i])
            if ndim_of(e) != 1:
                raise TraceError(f"`bins[{i}]` must be a scalar or 1d array{where()}")
            if bool(np.any(e[:-1] > e[1:])):
                raise TraceError(f"`bins[{i}]` must be monotonically increasing, when an "
                                 f"array{where()}")
        edges.append(e)
        nbin = shape_of(e)[0] + 1
        loc = np.searchsorted(e, col, side="right")
        on_edge = col == e[-1]
        loc = np.where(on_edge, loc - 1, loc)
        locs.append((loc, nbin))
    sizes = tuple(nb for _, nb in locs)
    flat = 0
    for (loc, _), stride in zip(locs, np.cumprod((1,) + sizes[::-1][:-1])[::-1]):
        flat = flat + astype(loc, np.intp) * int(stride)
    total = math.prod(sizes)
    if weights is None:
        ones = np.ones((n,), np.float64)
        hist = _segment_sum(ones, flat, total) if isinstance(flat, Tracer) else \
            np.bincount(flat, minlength=total).astype(np.float64)
    else:
        hist = _segment_sum(astype(weights, np.float64), flat, total)
        if not isinstance(weights, Tracer) and not isinstance(flat, Tracer):
            hist = np.bincount(flat, weights, minlength=total)
    hist = np.reshape(hist, sizes)
    hist = hist[(slice(1, -1),) * d]
    if density:
        s = np.sum(hist)
        for i in builtins.range(d):
            shape = [1] * d
            shape[i] = shape_of(hist)[i]
            hist = hist / np.reshape(np.diff(edges[i]), shape)
        hist = hist / s
    return hist, edges


@implements(np.histogram2d)
def histogram2d(x, y, bins=10, range=None, density=None, weights=None):  # noqa: A002
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n != 1 and n != 2:
        bins = [bins, bins]
    hist, edges = histogramdd(np.stack([np.ravel(_arr(x)), np.ravel(_arr(y))], axis=1),
                              bins, range, density, weights)
    return hist, edges[0], edges[1]
