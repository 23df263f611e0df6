"""Building, selecting and rearranging arrays on traced values, as NumPy does it:
``empty_like``, ``broadcast_arrays``, ``block``, ``resize``, ``unstack``, ``ix_``,
``diagflat``, ``matrix_transpose``, ``astype``, ``linspace`` (differentiable in ``start``
and ``stop``), ``logspace``, ``delete``, ``insert``, ``compress``, ``extract``,
``choose``, ``piecewise``, ``apply_along_axis``, ``apply_over_axes``, ``vdot``,
``isneginf``/``isposinf``, ``lexsort`` (stable argsorts, least significant key first),
``unravel_index``/``ravel_multi_index`` (integer arithmetic), and the shape-only
``diag_indices_from``, ``tril_indices_from``, ``triu_indices_from``, ``can_cast``,
``einsum_path``.

Where a result's shape depends on values (``compress``/``extract``'s condition,
``delete``'s or ``insert``'s traced positions, ``argwhere``, ``flatnonzero``,
``trim_zeros``), those values are read at trace time and recorded as guards, as
``np.nonzero`` does; ``packbits``/``unpackbits`` take integer or boolean arrays only, whose
values carry no gradient, and are computed by NumPy on the value read (a guard).
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from ..errors import TraceError
from ..ir.source import where
from .core import Tracer
from .indexing import getitem
from .np_base import (
    _single_axis,
    as_array,
    astype,
    broadcast_to,
    coerce,
    concatenate,
    dtype_of,
    full_like_tracer,
    implements,
    known,
    ndim_of,
    operator_index,
    reshape,
    reshape_view,
    shape_of,
)
from .np_shapes import moveaxis

_arr = as_array


def _fresh(x):
    """A new array holding ``x`` (NumPy's result is never a view where this is used)."""
    return np.copy(x) if isinstance(x, Tracer) else np.array(x, copy=True)


@implements(np.empty_like)
def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    """Zeros (NumPy leaves the values unspecified), traced so that writes are recorded."""
    return full_like_tracer(coerce(prototype), 0, dtype, shape)


@implements(np.broadcast_arrays)
def broadcast_arrays(*args, subok=False):
    args = [_arr(a) for a in args]
    shape = np.broadcast_shapes(*(tuple(shape_of(a)) for a in args))
    return tuple(np.broadcast_to(a, shape) for a in args)


@implements(np.diag_indices_from)
def diag_indices_from(arr):
    shape = shape_of(arr)
    if len(shape) < 2:
        raise TraceError(f"input array must be at least 2-d{where()}")
    if len(set(shape)) != 1:
        raise TraceError(f"All dimensions of input must be of equal length{where()}")
    return np.diag_indices(shape[0], len(shape))


@implements(np.tril_indices_from)
def tril_indices_from(arr, k=0):
    if ndim_of(arr) != 2:
        raise TraceError(f"input array must be 2-d{where()}")
    return np.tril_indices(shape_of(arr)[-2], k=k, m=shape_of(arr)[-1])


@implements(np.triu_indices_from)
def triu_indices_from(arr, k=0):
    if ndim_of(arr) != 2:
        raise TraceError(f"input array must be 2-d{where()}")
    return np.triu_indices(shape_of(arr)[-2], k=k, m=shape_of(arr)[-1])


@implements(np.can_cast)
def can_cast(from_, to, casting="safe"):
    return np.can_cast(dtype_of(from_), to, casting)


@implements(np.einsum_path)
def einsum_path(*operands, optimize="greedy", einsum_call=False):
    """The contraction order depends on shapes only: NumPy's, on zeros of those shapes."""
    stand_ins = [np.zeros(shape_of(o), dtype_of(o)) if isinstance(o, Tracer) else o
                 for o in operands]
    return np.einsum_path(*stand_ins, optimize=optimize, einsum_call=einsum_call)


# -- building ---------------------------------------------------------------------------
def _depth(x):
    if isinstance(x, tuple):
        raise TraceError(f"np.block: tuples are not allowed, use lists{where()}")
    if isinstance(x, list):
        if not x:
            raise TraceError(f"np.block: lists cannot be empty{where()}")
        depths = {_depth(e) for e in x}
        if len(depths) != 1:
            raise TraceError(f"np.block: list depths are mismatched{where()}")
        return 1 + depths.pop()
    return 0


def _max_ndim(x):
    if isinstance(x, list):
        return builtins.max(_max_ndim(e) for e in x)
    return ndim_of(_arr(x))


@implements(np.block)
def block(arrays):
    depth = _depth(arrays)
    nd = builtins.max(depth, _max_ndim(arrays))

    def build(x, level):
        if isinstance(x, list):
            return concatenate([build(e, level + 1) for e in x], axis=-(depth - level))
        x = _arr(x)
        return reshape(x, (1,) * (nd - ndim_of(x)) + tuple(shape_of(x)))

    out = build(arrays, 0)
    return _fresh(out) if depth == 0 else out


@implements(np.resize)
def resize(a, new_shape):
    a = np.ravel(_arr(a))
    new_shape = (new_shape,) if isinstance(new_shape, (int, np.integer)) else tuple(new_shape)
    new_size = math.prod(new_shape)
    if builtins.any(d < 0 for d in new_shape):
        raise TraceError(f"all elements of `new_shape` must be non-negative{where()}")
    size = shape_of(a)[0]
    if size == 0 or new_size == 0:
        return np.zeros(new_shape, dtype_of(a))
    repeats = -(-new_size // size)
    # a gather (never a view of the input, as NumPy's result is new)
    a = _take(concatenate((a,) * repeats) if repeats > 1 else a, np.arange(new_size), 0)
    return reshape(a, new_shape)


@implements(np.unstack)
def unstack(x, /, *, axis=0):
    x = _arr(x)
    if ndim_of(x) == 0:
        raise TraceError(f"Input array must be at least 1-d.{where()}")
    axis = _single_axis(operator.index(axis), ndim_of(x))
    return tuple(x[(slice(None),) * axis + (i,)] for i in range(shape_of(x)[axis]))


@implements(np.ix_)
def ix_(*args):
    out = []
    nd = len(args)
    for k, a in enumerate(args):
        a = _arr(a)
        if ndim_of(a) != 1:
            raise TraceError(f"Cross index must be 1 dimensional{where()}")
        if dtype_of(a).kind == "b":
            a = np.nonzero(a)[0]
        out.append(reshape_view(a, (1,) * k + (shape_of(a)[0],) + (1,) * (nd - k - 1)))
    return tuple(out)


@implements(np.diagflat)
def diagflat(v, k=0):
    return np.diag(np.ravel(_arr(v)), k)


@implements(np.matrix_transpose, np.linalg.matrix_transpose)
def matrix_transpose(x, /):
    x = _arr(x)
    if ndim_of(x) < 2:
        raise TraceError(f"Input array must be at least 2-dimensional, but it is "
                         f"{ndim_of(x)}{where()}")
    return np.swapaxes(x, -1, -2)


@implements(np.astype)
def astype_(x, dtype, /, *, copy=True, device=None):
    x = _arr(x)
    out = astype(x, dtype)
    return _fresh(out) if copy and out is x else out


@implements(np.logspace)
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    y = np.linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    base = _arr(base)
    if ndim_of(base) and axis != 0:
        base = np.expand_dims(base, axis)
    out = np.power(base, y)
    return out if dtype is None else astype(out, dtype)


# -- selecting --------------------------------------------------------------------------
def _axis_of(arr, axis):
    if axis is None:
        return np.ravel(arr), 0
    return arr, _single_axis(operator.index(axis), ndim_of(arr))


def _take(arr, idx, axis):
    return np.take(arr, np.asarray(idx, dtype=np.intp), axis=axis)


@implements(np.delete)
def delete(arr, obj, axis=None):
    arr, axis = _axis_of(_arr(arr), axis)
    n = shape_of(arr)[axis]
    keep = np.ones(n, dtype=bool)
    if isinstance(obj, slice):
        keep[obj] = False
    else:
        idx = known(_arr(obj), "np.delete's positions")
        if idx.dtype == bool:
            if idx.shape != (n,):
                raise TraceError(f"boolean array argument obj to delete must be one "
                                 f"dimensional and match the axis length of {n}{where()}")
            keep = ~idx
        else:
            if idx.size and idx.dtype.kind not in "iu":
                raise TraceError(f"arrays used as indices must be of integer (or boolean) "
                                 f"type{where()}")
            idx = idx.astype(np.intp)
            if idx.size and (idx.min() < -n or idx.max() >= n):
                raise TraceError(f"index {idx} is out of bounds for axis {axis} with size "
                                 f"{n}{where()}")
            keep[idx] = False
    return _take(arr, np.flatnonzero(keep), axis)


@implements(np.insert)
def insert(arr, obj, values, axis=None):
    """NumPy's positions (several positions: each counted in the original array), the
    values cast to ``arr``'s dtype, gathered from ``arr`` and the broadcast values."""
    arr, axis = _axis_of(_arr(arr), axis)
    nd, n = ndim_of(arr), shape_of(arr)[axis]
    values = _arr(values)
    if isinstance(obj, slice):
        indices = np.arange(*obj.indices(n), dtype=np.intp)
    else:
        indices = np.array(known(_arr(obj), "np.insert's positions"))
        if indices.dtype == bool:
            if indices.ndim != 1:
                raise TraceError(f"boolean array argument obj to insert must be one "
                                 f"dimensional{where()}")
            indices = np.flatnonzero(indices)
        elif indices.ndim > 1:
            raise TraceError(f"index array argument obj to insert must be one dimensional "
                             f"or scalar{where()}")
    if indices.size == 1:
        index = int(indices.item())
        if index < -n or index > n:
            raise TraceError(f"index {index} is out of bounds for axis {axis} with size {n}"
                             f"{where()}")
        index += n if index < 0 else 0
        values = astype(values, dtype_of(arr))
        if ndim_of(values) < nd:
            values = reshape(values, (1,) * (nd - ndim_of(values)) + tuple(shape_of(values)))
        if indices.ndim == 0:
            values = np.moveaxis(values, 0, axis)
        numnew = shape_of(values)[axis]
        shape = list(shape_of(arr))
        shape[axis] = numnew
        values = broadcast_to(values, tuple(shape))
        head = (slice(None),) * axis
        return concatenate([arr[head + (slice(None, index),)], values,
                            arr[head + (slice(index, None),)]], axis=axis)
    if indices.size and indices.dtype.kind not in "iu":
        raise TraceError(f"index array argument obj to insert must be one dimensional or "
                         f"scalar{where()}")
    indices = indices.astype(np.intp)
    if indices.size and (indices.min() < -n or indices.max() > n):
        raise TraceError(f"index {indices} is out of bounds for axis {axis} with size {n}"
                         f"{where()}")
    indices = np.where(indices < 0, indices + n, indices)
    numnew = indices.size
    order = indices.argsort(kind="mergesort")
    indices[order] += np.arange(numnew)
    source = np.empty(n + numnew, np.intp)
    old = np.ones(n + numnew, bool)
    old[indices] = False
    source[old] = np.arange(n)
    source[indices] = n + np.arange(numnew)
    shape = list(shape_of(arr))
    shape[axis] = numnew
    values = broadcast_to(astype(values, dtype_of(arr)), tuple(shape))
    return _take(concatenate([arr, values], axis=axis), source, axis)


@implements(np.compress)
def compress(condition, a, axis=None, out=None):
    cond = known(_arr(condition), "np.compress's condition")
    if cond.ndim != 1:
        raise TraceError(f"condition must be a 1-d array{where()}")
    a, axis = _axis_of(_arr(a), axis)
    picked = np.flatnonzero(cond)
    if picked.size and picked[-1] >= shape_of(a)[axis]:
        raise TraceError(f"index {picked[-1]} is out of bounds for axis {axis} with size "
                         f"{shape_of(a)[axis]}{where()}")
    return _take(a, picked, axis)


@implements(np.extract)
def extract(condition, arr):
    cond = known(_arr(condition) != 0, "np.extract's condition")
    return _take(np.ravel(_arr(arr)), np.flatnonzero(cond), 0)


@implements(np.flatnonzero)
def flatnonzero(a):
    return np.flatnonzero(known(_arr(a) != 0, "np.flatnonzero"))


@implements(np.argwhere)
def argwhere(a):
    return np.argwhere(known(_arr(a) != 0, "np.argwhere"))


@implements(np.trim_zeros)
def trim_zeros(filt, trim="fb", axis=None):
    filt = _arr(filt)
    nz = known(filt != 0, "np.trim_zeros")
    trim = trim.lower()
    if ndim_of(filt) == 1 and axis is None:
        where_nz = np.flatnonzero(nz)
        if where_nz.size == 0:      # an empty result (NumPy's shares no memory)
            return _take(filt, np.zeros(0, np.intp), 0) if ("f" in trim or "b" in trim) \
                else filt
        start = int(where_nz[0]) if "f" in trim else 0
        stop = int(where_nz[-1]) + 1 if "b" in trim else shape_of(filt)[0]
        return filt[start:stop]
    raise TraceError(f"np.trim_zeros of a {ndim_of(filt)}-d traced array (or with axis=) is "
                     f"not supported: 1-d only{where()}")


@implements(np.choose)
def choose(a, choices, out=None, mode="raise"):
    a = _arr(a)
    choices = [_arr(c) for c in choices] if isinstance(choices, (list, tuple)) else \
        list(np.moveaxis(_arr(choices), 0, 0)[i] for i in range(shape_of(_arr(choices))[0]))
    n = len(choices)
    idx = known(a, "np.choose's index array") if isinstance(a, Tracer) else np.asarray(a)
    if idx.dtype.kind not in "iub":
        raise TraceError(f"np.choose needs an integer index array{where()}")
    idx = idx.astype(np.intp)
    if mode == "raise":
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise TraceError(f"invalid entry in choice array{where()}")
    elif mode == "wrap":
        idx = idx % n
    elif mode == "clip":
        idx = np.clip(idx, 0, n - 1)
    dt = np.result_type(*[dtype_of(c) for c in choices])
    shape = np.broadcast_shapes(idx.shape, *(tuple(shape_of(c)) for c in choices))
    stacked = np.stack([broadcast_to(astype(c, dt), shape) for c in choices])
    return np.take_along_axis(stacked, np.broadcast_to(idx, shape)[None], axis=0)[0]


@implements(np.piecewise)
def piecewise(x, condlist, funclist, *args, **kw):
    """NumPy's loop: each function applied to the entries its condition selects (the
    conditions are read at trace time, guards), written into zeros of ``x``'s dtype."""
    x = _arr(x)
    n2 = len(funclist)
    if isinstance(condlist, (np.ndarray, Tracer)):
        first_is_array = ndim_of(condlist) >= 2        # condlist[0] is an array
    else:
        first_is_array = not np.isscalar(condlist) and isinstance(
            condlist[0], (list, np.ndarray, Tracer))
    if np.isscalar(condlist) or (not first_is_array and ndim_of(x) != 0):
        condlist = [condlist]
    conds = [known(astype(_arr(c), bool), "np.piecewise's conditions") for c in condlist]
    conds = [np.broadcast_to(c, shape_of(x)) for c in conds]
    if len(conds) == n2 - 1:
        conds.append(~np.any(np.stack(conds), axis=0) if conds else
                     np.ones(shape_of(x), bool))
    elif len(conds) != n2:
        raise TraceError(f"with {len(conds)} condition(s), either {len(conds)} or "
                         f"{len(conds) + 1} functions are expected{where()}")
    y = full_like_tracer(x, 0)
    for cond, func in zip(conds, funclist):
        if not callable(func):
            y[cond] = func
        else:
            vals = x[cond]
            if np.size(vals) > 0:
                y[cond] = func(vals, *args, **kw)
    return y


@implements(np.apply_along_axis)
def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    arr = _arr(arr)
    nd = ndim_of(arr)
    axis = _single_axis(operator.index(axis), nd)
    moved = np.moveaxis(arr, axis, -1)
    outer = tuple(shape_of(moved)[:-1])
    if math.prod(outer) == 0:
        raise TraceError(f"Cannot apply_along_axis when any iteration dimensions are 0"
                         f"{where()}")
    results = [_arr(func1d(moved[ind], *args, **kwargs)) for ind in np.ndindex(*outer)]
    dt = dtype_of(results[0])
    res_nd = ndim_of(results[0])
    buff = reshape(np.stack([astype(r, dt) for r in results]), outer + tuple(
        shape_of(results[0])))
    dims = list(range(ndim_of(buff)))
    perm = dims[:axis] + dims[len(dims) - res_nd:] + dims[axis:len(dims) - res_nd]
    return np.transpose(buff, perm)


@implements(np.apply_over_axes)
def apply_over_axes(func, a, axes):
    val = _arr(a)
    n = ndim_of(val)
    axes = (axes,) if np.ndim(axes) == 0 else tuple(axes)
    for axis in axes:
        axis = axis + n if axis < 0 else axis
        res = _arr(func(val, axis))
        if ndim_of(res) == ndim_of(val):
            val = res
        else:
            res = np.expand_dims(res, axis)
            if ndim_of(res) != ndim_of(val):
                raise TraceError(f"function is not returning an array of the correct shape"
                                 f"{where()}")
            val = res
    return val


@implements(np.vdot)
def vdot(a, b, /):
    a, b = np.ravel(_arr(a)), np.ravel(_arr(b))
    if dtype_of(a).kind == "c":
        a = np.conj(a)
    return np.dot(a, b)


def _signed_inf(name, x, negative):
    x = _arr(x)
    if dtype_of(x).kind == "c":
        raise TraceError(f"This operation is not supported for complex values because it "
                         f"would be ambiguous ({name}){where()}")
    return np.isinf(x) & ((x < 0) if negative else (x > 0))


@implements(np.isneginf)
def isneginf(x, out=None):
    return _signed_inf("np.isneginf", x, True)


@implements(np.isposinf)
def isposinf(x, out=None):
    return _signed_inf("np.isposinf", x, False)


@implements(np.lexsort)
def lexsort(keys, axis=-1):
    """Stable argsorts, from the least significant key (the first) to the last."""
    if isinstance(keys, tuple | list):
        keys = [_arr(k) for k in keys]
    else:
        keys = _arr(keys)
        keys = [keys[i] for i in range(shape_of(keys)[0])]
    if not keys:
        raise TraceError(f"need sequence of keys with len > 0 in lexsort{where()}")
    shape = np.broadcast_shapes(*(tuple(shape_of(k)) for k in keys))
    keys = [np.broadcast_to(k, shape) for k in keys]
    if not shape:
        return np.zeros((), np.intp)
    axis = _single_axis(operator.index(axis), len(shape))
    perm = np.broadcast_to(np.expand_dims(np.arange(shape[axis]),
                                          tuple(d for d in range(len(shape)) if d != axis)),
                           shape)
    for k in keys:
        step = np.argsort(np.take_along_axis(k, perm, axis=axis), axis=axis, kind="stable")
        perm = np.take_along_axis(perm, step, axis=axis)
    return astype(perm, np.intp)


@implements(np.unravel_index)
def unravel_index(indices, shape, order="C"):
    indices = _arr(indices)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if dtype_of(indices).kind not in "iu":
        raise TraceError(f"only int indices permitted{where()}")
    size = math.prod(shape)
    value = known(indices, "np.unravel_index's indices")
    if value.size and (value.min() < 0 or value.max() >= size):
        raise TraceError(f"index {value.max()} is out of bounds for array with size {size}"
                         f"{where()}")
    dims = list(enumerate(shape))
    strides = {}
    acc = 1
    for d, n in (dims[::-1] if order == "C" else dims):
        strides[d] = acc
        acc *= n
    idx = astype(indices, np.intp)
    return tuple((idx // strides[d]) % n for d, n in dims)


@implements(np.ravel_multi_index)
def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    dims = tuple(dims)
    parts = [astype(_arr(m), np.intp) for m in multi_index]
    if len(parts) != len(dims):
        raise TraceError(f"parameter multi_index must be a sequence of length {len(dims)}"
                         f"{where()}")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    fixed = []
    for p, n, m in zip(parts, dims, modes):
        if m == "raise":
            v = known(p, "np.ravel_multi_index's indices")
            if v.size and (v.min() < 0 or v.max() >= n):
                raise TraceError(f"invalid entry in coordinates array{where()}")
        elif m == "wrap":
            p = p % n
        elif m == "clip":
            p = np.clip(p, 0, n - 1)
        fixed.append(p)
    order_dims = list(range(len(dims)))
    acc, out = 1, 0
    for d in (order_dims[::-1] if order == "C" else order_dims):
        out = out + fixed[d] * acc
        acc *= dims[d]
    return astype(_arr(out), np.intp)


def _bits(name, fn, a, **kw):
    a = _arr(a)
    if dtype_of(a).kind not in "iub":
        raise TraceError(f"Expected an input array of integer or boolean data type ({name})"
                         f"{where()}")
    return fn(known(a, name), **kw)


@implements(np.packbits)
def packbits(a, /, axis=None, bitorder="big"):
    return _bits("np.packbits", np.packbits, a, axis=axis, bitorder=bitorder)


@implements(np.unpackbits)
def unpackbits(a, /, axis=None, count=None, bitorder="big"):
    return _bits("np.unpackbits", np.unpackbits, a, axis=axis, count=count, bitorder=bitorder)


@implements(np.sort_complex)
def sort_complex(a):
    b = np.sort(_arr(a))
    if dtype_of(b).kind != "c":
        char = dtype_of(b).char
        b = astype(b, "F" if char in "bhBH" else ("G" if char == "g" else "D"))
    return b


@implements(np.geomspace)
def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """NumPy's steps: ``logspace`` of the base-10 logarithms of ``|start|`` and
    ``|stop|`` (signs taken out), the ends set to ``start`` and ``stop`` exactly."""
    start, stop = _arr(start), _arr(stop)
    if bool(np.any(start == 0)) or bool(np.any(stop == 0)):
        raise TraceError(f"Geometric sequence cannot include zero{where()}")
    dt = np.result_type(dtype_of(start), dtype_of(stop), float(num),
                        np.zeros((), dtype).dtype)
    dtype = dt if dtype is None else np.dtype(dtype)
    start, stop = astype(start, dt), astype(stop, dt)
    out_sign = np.sign(start)
    start = astype(start / out_sign, dt)
    stop = stop / out_sign
    result = logspace(np.log10(start), np.log10(stop), num=num, endpoint=endpoint,
                      base=10.0, dtype=dt)
    if num > 0:
        shape = tuple(shape_of(result))
        parts = [np.broadcast_to(start, shape[1:])[None]]
        inner_end = num - 1 if (num > 1 and endpoint) else num
        if inner_end > 1:
            parts.append(result[1:inner_end])
        if num > 1 and endpoint:
            parts.append(np.broadcast_to(stop, shape[1:])[None])
        result = astype(concatenate([astype(p, dt) for p in parts], axis=0), dt)
    result = result * out_sign
    if axis != 0:
        result = np.moveaxis(result, 0, axis)
    return astype(result, dtype)


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
