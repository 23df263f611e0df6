"""Arrays made from traced ones, and writes into arrays.

``np.zeros_like``, ``np.ones_like`` and ``np.full_like`` of a traced array give traced
constants (so ``z[i] = t`` works on them), ``np.copy`` a new name for the same node.
``write_into`` is NumPy's ``out=`` (of ufuncs and of every function that takes one) and
``np.copyto``; ``np.fill_diagonal``, ``np.place`` and ``np.put`` write through the flat
positions. A traced destination (the function's own array) records the write; a plain
ndarray the caller passed in takes constant values only (a traced one raises).
"""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..ir.source import where as where_text
from .core import Trace, Tracer, depends_on_input, disown, is_constant, own
from .indexing import getitem, setitem
from .np_base import (
    astype,
    broadcast_to,
    coerce,
    dtype_of,
    full_like_tracer,
    implements,
    ravel,
    shape_of,
)
from .views import assigned, ensure_writable, sync


@implements(np.zeros_like)
def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return full_like_tracer(coerce(a), 0, dtype, shape)


@implements(np.empty_like)
def empty_like(prototype, dtype=None, order="K", subok=True, shape=None, *, device=None):
    # NumPy leaves the values unset; zeros are one choice of them
    return full_like_tracer(coerce(prototype), 0, dtype, shape)


@implements(np.ones_like)
def ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return full_like_tracer(coerce(a), 1, dtype, shape)


@implements(np.full_like)
def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    a = coerce(a)
    if isinstance(fill_value, Tracer):
        return broadcast_to(astype(fill_value, dtype or dtype_of(a)),
                            shape_of(a) if shape is None else shape)
    return full_like_tracer(a, fill_value, dtype, shape)


@implements(np.copy)
def copy(a, order="K", subok=False):
    a = coerce(a)
    if not isinstance(a, Tracer):
        return a
    sync(a)
    if a._value is not None and type(a._trace) is Trace and a._trace.active and \
            is_constant(a):
        # a constant's copy is a new array of its own (written in place like np.zeros's)
        return own(a._trace.const(np.array(a._value, copy=True), snapshot=False))
    disown(a)
    return Tracer(a._trace, a._node, a.shape, a.dtype, a._value)


# -- writing into arrays: out=, np.copyto, np.fill_diagonal, np.place, np.put ---------------
def _constant_value(x):
    """``x``'s value if it holds no traced value that depends on an input (a plain array,
    a number, a fresh array nothing traced was written into); else None."""
    x = coerce(x)
    if not isinstance(x, Tracer):
        return np.asarray(x)
    if x._value is None or depends_on_input(x):
        return None
    return np.asarray(x._value)


def _into_plain(what):
    return TraceError(f"{what} would write a traced value into a plain NumPy array the "
                      f"function did not make, and lose its gradient (z += t on a plain "
                      f"ndarray does this): write z = z + t, or start from a traced or fresh "
                      f"array (z = np.zeros_like(x), z = np.zeros(n) inside the function)"
                      f"{where_text()}")


def write_into(dst, result, what, casting="same_kind", where=True):
    """Write ``result`` into ``dst`` as NumPy's ``out=``/``np.copyto`` do (broadcast to
    ``dst``'s shape, cast to its dtype under ``casting``, only where ``where`` holds), and
    return ``dst``. A traced ``dst`` now names the result (its views and, if it is a view,
    its base see the write); a plain ndarray takes constant values only."""
    from .np_elementwise import where_
    result = coerce(result)
    if not isinstance(dst, Tracer):
        value = _constant_value(result)
        mask = True if where is True else _constant_value(where)
        if value is None or mask is None:
            raise _into_plain(what)
        np.copyto(dst, value, casting=casting, where=mask)
        return dst
    sync(dst)
    ensure_writable(dst)
    rshape, rdtype = tuple(np.shape(result)) if not isinstance(result, Tracer) else \
        tuple(result.shape), dtype_of(result)
    try:
        fits = np.broadcast_shapes(rshape, tuple(dst.shape)) == tuple(dst.shape)
    except ValueError:
        fits = False
    if not fits:
        raise TraceError(f"{what}: non-broadcastable output operand with shape {dst.shape} "
                         f"doesn't match the broadcast shape {rshape}{where_text()}")
    if not isinstance(result, Tracer) and type(result) in (int, float, complex, bool):
        rdtype = np.result_type(dst.dtype, result)      # NEP 50: a Python number is weak
    if not np.can_cast(rdtype, dst.dtype, casting=casting):
        raise TraceError(f"{what}: cannot cast output from {rdtype} to {dst.dtype} with "
                         f"casting rule '{casting}'{where_text()}")
    if where is not True:
        result = where_(where, result, dst)
    if not isinstance(result, Tracer):
        result = dst._trace.const(np.asarray(result))
    disown(result)              # dst may name its node
    if result._trace is not dst._trace or tuple(result.shape) != tuple(dst.shape) or \
            not dst.shape:
        # broadcast and cast by an assignment (a broadcast's value would share memory
        # with its operand); it lifts an outer value, or says why it cannot. A 0-d dst
        # too: the result of a ufunc on 0-d operands is a NumPy scalar when it runs, and
        # out= gives back the array (an assignment's value is one)
        setitem(dst, Ellipsis, astype(result, dst.dtype))
        return dst
    new = astype(result, dst.dtype)
    dst._node, dst._value = new._node, new._value
    assigned(dst)
    return dst


@implements(np.copyto)
def copyto(dst, src, casting="same_kind", where=True):
    write_into(dst, src, "np.copyto", casting, where)


def _cycled(values, n):
    """``values`` flattened and repeated (or cut) to ``n`` entries, as NumPy's flat
    assignment and ``np.put``/``np.place`` use them."""
    values = ravel(coerce(values)) if isinstance(coerce(values), Tracer) else \
        np.ravel(np.asarray(values))
    size = shape_of(values)[0]
    if size == 0:
        raise TraceError(f"cannot write {n} values from an empty array{where_text()}")
    if size == n:
        return values
    picks = np.arange(n) % size
    return getitem(values, picks) if isinstance(values, Tracer) else values[picks]


def _write_flat(a, positions, values, what):
    """``a.flat[positions] = values`` (values cycled): a plain ``a`` takes constant values
    only."""
    positions = np.asarray(positions, dtype=np.intp)
    if not isinstance(a, Tracer):
        value = _constant_value(values)
        if value is None:
            raise _into_plain(what)
        a.flat[positions] = value
        return
    if positions.size == 0:
        return
    setitem(a, np.unravel_index(positions, tuple(a.shape)), _cycled(values, positions.size))


@implements(np.fill_diagonal)
def fill_diagonal(a, val, wrap=False):
    shape = tuple(np.shape(a)) if not isinstance(a, Tracer) else tuple(a.shape)
    if len(shape) < 2:
        raise TraceError(f"np.fill_diagonal: array must be at least 2-d{where_text()}")
    size = int(np.prod(shape))
    if len(shape) == 2:
        step, end = shape[1] + 1, None if wrap else shape[1] * shape[1]
    else:
        if len(set(shape)) != 1:
            raise TraceError(f"np.fill_diagonal: all dimensions of input must be of equal "
                             f"length{where_text()}")
        step, end = 1 + int(np.cumprod(shape[:-1]).sum()), None
    _write_flat(a, np.arange(size)[:end:step], val, "np.fill_diagonal")


@implements(np.place)
def place(arr, mask, vals):
    if isinstance(mask, Tracer):
        # the positions written are read at trace time, with a guard (as a boolean index)
        value = np.array(mask._concrete("np.place's mask"), copy=True)
        mask._trace.guard(mask, value)
        mask = value
    mask = np.asarray(mask, dtype=bool)
    size = int(np.prod(np.shape(arr) if not isinstance(arr, Tracer) else arr.shape))
    if mask.size != size:
        raise TraceError(f"np.place: mask and data must be the same size{where_text()}")
    _write_flat(arr, np.flatnonzero(mask), vals, "np.place")


@implements(np.put)
def put(a, ind, v, mode="raise"):
    ind = np.ravel(np.asarray(ind))
    if ind.dtype.kind not in "iu":
        raise TraceError(f"np.put: indices must be integers{where_text()}")
    size = int(np.prod(np.shape(a) if not isinstance(a, Tracer) else a.shape))
    if mode == "raise":
        if ind.size and (ind.min() < -size or ind.max() >= size):
            raise TraceError(f"np.put: index out of bounds for size {size}{where_text()}")
        ind = ind % size if size else ind
    elif mode == "wrap":
        ind = ind % size
    elif mode == "clip":
        ind = np.clip(ind, 0, size - 1)
    else:
        raise TraceError(f"np.put: mode must be 'raise', 'wrap' or 'clip'{where_text()}")
    _write_flat(a, ind, v, "np.put")
