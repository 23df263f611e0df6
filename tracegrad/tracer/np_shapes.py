"""Shape manipulation on traced values: reshaping, transposing, moving and rolling axes,
squeezing, stacking and splitting, flipping and rotating, rolling, tiling, repeating and
padding, diagonals and triangles, ``append``, ``meshgrid``, ``take``,
``take_along_axis`` and ``put_along_axis`` (in place on a traced array, like
``z[i] = v``), and the queries ``np.shape``, ``np.ndim``, ``np.size`` and
``np.result_type``. Most are compositions: gathers at constant positions (``roll``,
``repeat``, ``pad``'s edge modes), reshapes and broadcasts (``tile``), or a ``select``
against a constant mask (``triu``, ``tril``). ``reshape``, ``ravel``, ``concatenate``,
``stack`` and ``expand_dims`` live in ``np_base`` because ``coerce`` needs them.
"""
from __future__ import annotations

import builtins
import functools
import math

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.source import where
from .core import Tracer
from .indexing import getitem
from .np_base import (
    FUNCTIONS,
    _axis_tuple,
    _reject,
    _single_axis,
    as_array,
    broadcast_to,
    coerce,
    concatenate,
    dtype_of,
    full_like_tracer,
    implements,
    ndim_of,
    operator_index,
    ravel,
    reshape,
    reshape_view,
    shape_of,
    transpose,
)
from .np_reductions import sum  # noqa: A004  (np.sum's handler, for np.trace)
from .views import mark_view


@implements(np.reshape)
def reshape_(a, *args, shape=None, order="C", newshape=None, copy=None):
    if args:
        shape = args[0]
        if len(args) > 1:
            order = args[1]
    shape = newshape if shape is None else shape
    return (reshape if copy else reshape_view)(coerce(a), shape, order)


@implements(np.transpose)
def transpose_(a, axes=None):
    return transpose(coerce(a), axes)


@implements(np.swapaxes)
def swapaxes(a, axis1, axis2):
    a = coerce(a)
    nd = ndim_of(a)
    axes = list(range(nd))
    i, j = _single_axis(axis1, nd), _single_axis(axis2, nd)
    axes[i], axes[j] = axes[j], axes[i]
    return transpose(a, axes)


@implements(np.moveaxis)
def moveaxis(a, source, destination):
    a = coerce(a)
    nd = ndim_of(a)
    src = [source] if isinstance(source, (int, np.integer)) else list(source)
    dst = [destination] if isinstance(destination, (int, np.integer)) else list(destination)
    src = [_single_axis(s, nd) for s in src]
    dst = [_single_axis(d, nd) for d in dst]
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


@implements(np.squeeze)
def squeeze(a, axis=None):
    a = coerce(a)
    shape = shape_of(a)
    if axis is None:
        axes = tuple(i for i, n in enumerate(shape) if n == 1)
    else:
        axes = _axis_tuple(axis, a)
        if builtins.any(shape[i] != 1 for i in axes):
            raise TraceError(f"cannot select an axis to squeeze out which has size not equal "
                             f"to one (shape {shape}, axis {axis}){where()}")
    return reshape_view(a, tuple(n for i, n in enumerate(shape) if i not in axes))


@implements(np.broadcast_to)
def broadcast_to_(array, shape, subok=False):
    array = coerce(array)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    # a read-only view in NumPy: it sees later writes to ``array``, and refuses writes
    return mark_view(broadcast_to(array, shape), array, lambda base: broadcast_to(base, shape),
                     None, lambda arr: np.broadcast_to(arr, shape), "np.broadcast_to")


def _atleast_nd(n):
    def handler(*arys):
        outs = []
        for a in arys:
            a = coerce(a)
            shape = tuple(shape_of(a))
            if len(shape) < n:
                if n == 3 and len(shape) == 2:
                    shape = shape + (1,)
                elif n == 3 and len(shape) == 1:
                    shape = (1,) + shape + (1,)
                else:
                    shape = (1,) * (n - len(shape)) + shape
                a = reshape_view(a, shape)     # a view, as NumPy's
            outs.append(a)
        return outs[0] if len(outs) == 1 else outs
    return handler


FUNCTIONS[np.atleast_1d] = _atleast_nd(1)
FUNCTIONS[np.atleast_2d] = _atleast_nd(2)
FUNCTIONS[np.atleast_3d] = _atleast_nd(3)


@implements(np.vstack)
def vstack(tup, dtype=None, casting=None):
    return concatenate([_atleast_nd(2)(coerce(a)) for a in tup], axis=0, dtype=dtype)


@implements(np.hstack)
def hstack(tup, dtype=None, casting=None):
    arrays = [_atleast_nd(1)(coerce(a)) for a in tup]
    return concatenate(arrays, axis=0 if ndim_of(arrays[0]) == 1 else 1, dtype=dtype)


@implements(np.array_split)
def array_split(ary, indices_or_sections, axis=0):
    """``np.array_split``: n sections of unequal length allowed (the first ones one
    longer), or split points (clipped to the axis, as NumPy does)."""
    ary = coerce(ary)
    axis = _single_axis(operator_index(axis), ndim_of(ary))
    n = shape_of(ary)[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise TraceError(f"number sections must be larger than 0{where()}")
        size, extra = divmod(n, sections)
        sizes = [size + 1] * extra + [size] * (sections - extra)
        bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
    else:
        bounds = [0] + [builtins.min(int(i), n) for i in indices_or_sections] + [n]
    lead = (slice(None),) * axis
    return [getitem(ary, lead + (slice(lo, builtins.max(lo, hi)),))
            for lo, hi in zip(bounds[:-1], bounds[1:])]


@implements(np.split)
def split(ary, indices_or_sections, axis=0):
    """``np.split``: as ``array_split``, but n sections must divide the axis equally."""
    if isinstance(indices_or_sections, (int, np.integer)):
        ary = coerce(ary)
        n = shape_of(ary)[_single_axis(operator_index(axis), ndim_of(ary))]
        if indices_or_sections > 0 and n % int(indices_or_sections):
            raise TraceError(f"array split does not result in an equal division ({n} into "
                             f"{int(indices_or_sections)}){where()}")
    return array_split(ary, indices_or_sections, axis)


@implements(np.flip)
def flip(m, axis=None):
    m = coerce(m)
    axes = _axis_tuple(axis, m)
    return getitem(m, tuple(slice(None, None, -1) if i in axes else slice(None)
                            for i in range(ndim_of(m))))


def _take_positions(a, positions, axis):
    """``a`` gathered along ``axis`` at the constant integer ``positions``."""
    return getitem(a, (slice(None),) * axis + (np.asarray(positions, dtype=np.intp),))


@functools.lru_cache(maxsize=4096)
def _roll_positions(n, shift):
    """``np.roll(np.arange(n), shift)``, read-only and shared: stencil code rolls the
    same axes by the same shifts thousands of times."""
    positions = np.roll(np.arange(n, dtype=np.intp), shift)
    positions.flags.writeable = False
    return positions


@implements(np.roll)
def roll(a, shift, axis=None):
    a = coerce(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), shape_of(a))
    if type(axis) is int and type(shift) is int:     # the common case, without NumPy's
        ax = _single_axis(axis, ndim_of(a))             # broadcasting of shifts and axes
        return _take_positions(a, _roll_positions(shape_of(a)[ax], shift), ax)
    shifts = np.broadcast_to(shift, np.shape(axis)).tolist() if np.ndim(axis) else [shift]
    axes = list(axis) if np.ndim(axis) else [axis]
    for s, ax in zip(shifts, axes):
        ax = _single_axis(ax, ndim_of(a))
        a = _take_positions(a, np.roll(np.arange(shape_of(a)[ax]), s), ax)
    return a


@implements(np.tile)
def tile(A, reps):
    A = coerce(A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    shape = tuple(shape_of(A))
    nd = builtins.max(len(shape), len(reps))
    shape = (1,) * (nd - len(shape)) + shape
    reps = (1,) * (nd - len(reps)) + reps
    interleaved = tuple(x for n in shape for x in (1, n))
    target = tuple(x for r, n in zip(reps, shape) for x in (r, n))
    final = tuple(r * n for r, n in zip(reps, shape))
    tiled = broadcast_to(reshape(A, interleaved), target)
    if _tile_is_view(interleaved, target, final):
        # NumPy's tile is a new array; reshapes and a broadcast that copy nothing would
        # be A's memory (A itself for reps of ones; read-only for a repeated axis of
        # length 1), here and in the compiled code: a one-array concatenate is the copy
        flat = reshape(tiled, (math.prod(final),))
        return reshape(apply("concatenate", flat, axis=0), final)
    return reshape(tiled, final)


def _tile_is_view(interleaved, target, final):
    """Whether reshaping a contiguous array to ``interleaved``, broadcasting it to
    ``target`` and reshaping that to ``final`` can all be done without a copy."""
    probe = np.broadcast_to(np.empty(interleaved, np.uint8), target).view()
    try:
        probe.shape = final         # NumPy's own no-copy check; it never copies
    except AttributeError:
        return False
    return True


@implements(np.repeat)
def repeat(a, repeats, axis=None):
    a = coerce(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _single_axis(axis, ndim_of(a))
    positions = np.repeat(np.arange(shape_of(a)[axis]), repeats)
    return _take_positions(a, positions, axis)


@implements(np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    array = coerce(array)
    nd = ndim_of(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (nd, 2)).tolist()
    if mode == "constant":
        value = kwargs.pop("constant_values", 0)
        if kwargs or np.ndim(value) or isinstance(value, Tracer):
            raise TraceError(f"np.pad(mode='constant') supports one scalar constant_values"
                             f"{where()}")
        return apply("pad", array, widths=tuple(map(tuple, widths)), value=value)
    if mode in ("edge", "reflect", "symmetric", "wrap") and not kwargs:
        for ax, (lo, hi) in enumerate(widths):
            positions = np.pad(np.arange(shape_of(array)[ax]), (lo, hi), mode=mode)
            array = _take_positions(array, positions, ax)
        return array
    raise TraceError(f"np.pad(mode={mode!r}) is not supported by tracegrad{where()}")


@implements(np.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    a = coerce(a)
    moved = moveaxis(a, (axis1, axis2), (-2, -1))
    n, m = shape_of(moved)[-2:]
    rows = np.arange(builtins.max(0, -offset), builtins.min(n, m - offset))
    result = getitem(moved, (Ellipsis, rows, rows + offset))
    # a read-only view in NumPy: it sees later writes to ``a``, and refuses writes
    return mark_view(result, a, lambda base: diagonal(base, offset, axis1, axis2), None,
                     lambda arr: arr.diagonal(offset, axis1, axis2), "np.diagonal")


@implements(np.diag)
def diag(v, k=0):
    v = coerce(v)
    if ndim_of(v) == 2:
        return diagonal(v, k)
    if ndim_of(v) != 1:
        raise TraceError(f"np.diag needs a 1-D or 2-D input{where()}")
    n = shape_of(v)[0] + builtins.abs(k)
    rows = np.arange(shape_of(v)[0]) + builtins.max(0, -k)
    zeros = full_like_tracer(v, 0, shape=(n, n))
    return apply("index_update", zeros, v, index=_index((rows, rows + k)), mode="set")


def _index(items):
    from ..ir import Index
    return Index(items)


@implements(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _reject("np.trace", out=out)
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def _tri(m, k, upper):
    """NumPy's own recipe: ``where(tri(*m.shape[-2:], k), m, zeros(1, m.dtype))``, so a 1-D
    ``m`` broadcasts against the square mask and booleans stay booleans."""
    m = coerce(m)
    shape = shape_of(m)
    if not shape:
        raise TraceError(f"np.{'triu' if upper else 'tril'} needs an array of at least one "
                         f"dimension, got a 0-d one (NumPy's tri() then lacks N){where()}")
    lower = np.tri(*shape[-2:], k=k - 1 if upper else k, dtype=bool)
    return apply("select", ~lower if upper else lower, m, np.zeros((), dtype_of(m)))


@implements(np.triu)
def triu(m, k=0):
    return _tri(m, k, True)


@implements(np.tril)
def tril(m, k=0):
    return _tri(m, k, False)


@implements(np.shape)
def shape_(a):
    return tuple(shape_of(coerce(a)))


@implements(np.ndim)
def ndim_(a):
    return ndim_of(coerce(a))


@implements(np.size)
def size_(a, axis=None):
    s = shape_of(coerce(a))
    return math.prod(s) if axis is None else s[axis]


@implements(np.result_type)
def result_type(*arrays_and_dtypes):
    return np.result_type(*(a.dtype if isinstance(a, Tracer) else a for a in arrays_and_dtypes))


# -- along an axis, and the shapes NumPy builds from the others ------------------------
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
