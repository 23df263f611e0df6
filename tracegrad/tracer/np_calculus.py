"""Discrete calculus on sampled values, traced: differences (``diff``, ``ediff1d``),
derivatives (``gradient``, second order inside, first or second order at the edges),
integrals (``trapezoid``), running products (``cumprod``, exact at zeros) and piecewise
linear interpolation (``interp``, differentiable in ``x``, ``xp`` and ``fp``).
"""
from __future__ import annotations

import builtins

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.source import where
from .core import Tracer
from .indexing import getitem
from .np_base import (
    _reject,
    _single_axis,
    as_array,
    astype,
    broadcast_to,
    concatenate,
    dtype_of,
    implements,
    ndim_of,
    operator_index,
    ravel,
    reshape,
    shape_of,
)
from .np_shapes import _axis_or_flat, moveaxis, take
from .np_sorting import argsort, searchsorted

_arr = as_array


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
