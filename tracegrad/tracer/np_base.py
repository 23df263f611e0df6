"""The ground every NumPy handler module stands on, so that none of them imports another
in a circle: the dispatch tables (``UFUNCS``, ``FUNCTIONS``) and ``implements`` that fills
them; shape, ndim and dtype queries and argument checks; the primitive-level
``astype``, ``reshape``, ``transpose``, ``broadcast_to`` and the view-keeping
``reshape_view``; and ``coerce``, which turns object arrays and lists holding tracers
into one traced array. ``coerce`` builds that array with ``stack``, ``concatenate`` and
``ravel``, which coerce their own inputs in turn, so those handlers (and ``expand_dims``,
which ``stack`` uses) live here too.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.prims.util import norm_axes
from ..ir.source import where
from .core import Tracer
from .elements import Element
from .indexing import getitem
from .samplers import SampleArray, holds_sample, untangle
from .views import alias, mark_view, reshape_is_view

UFUNCS: dict = {}
FUNCTIONS: dict = {}
# ufunc methods other than __call__ (``np.add.reduce``): method name -> handler(ufunc,
# inputs, kwargs), and the ufuncs whose UFUNCS handler takes NumPy's keywords (``axis=``
# of ``np.vecdot``); both filled by ``np_ufuncs``
UFUNC_METHODS: dict = {}
TAKES_KEYWORDS: set = set()


def implements(*fns, table=FUNCTIONS):
    def deco(handler):
        for fn in fns:
            table[fn] = handler
        return handler
    return deco


# -- helpers --------------------------------------------------------------------------
def coerce(x):
    """An object array or list holding tracers (``np.array([t1, t2])``, ``np.asarray(t)``)
    as one traced array (a sample NumPy drew with traced parameters, its traced value)."""
    if isinstance(x, Element):
        return x.value()
    if type(x) is SampleArray:
        return x.traced()
    if isinstance(x, np.ndarray) and x.dtype == object:
        flat = list(x.flat)
        if builtins.any(isinstance(e, (Tracer, Element)) for e in flat):
            return _from_object_array(x, flat)
    elif isinstance(x, (list, tuple)) and (_holds_tracer(x) or holds_sample(x)):
        return stack([coerce(e) for e in untangle(x)])
    return x


def as_array(x):
    """``x`` as a traced array, or as a plain one (a list or number becomes an ndarray)."""
    x = coerce(x)
    return x if isinstance(x, Tracer) else np.asarray(x)


def _from_object_array(x, flat):
    if builtins.any(isinstance(e, Tracer) and e.shape for e in flat):
        # whole traced arrays put into an object array by hand: stack them
        shapes = {tuple(np.shape(e)) for e in flat}
        if len(shapes) != 1:
            raise TraceError("np.array of traced values needs elements of one shape, got "
                             f"{sorted(shapes)}; use np.stack{where()}")
        return reshape(stack([e.value() if isinstance(e, Element) else e for e in flat]),
                       x.shape + shapes.pop())
    # Every entry is one scalar: an element of a traced array, a 0-d tracer or a
    # number. Concatenate the arrays they come from and gather the entries: one
    # or two nodes, however many entries.
    sources, slot, picks, numbers = [], {}, [], []
    for e in flat:
        if isinstance(e, (Element, Tracer)):
            src, pos = (e.tracer, e.flat_index) if isinstance(e, Element) else (e, 0)
            if id(src) not in slot:
                slot[id(src)] = len(sources)
                sources.append(src)
            picks.append((slot[id(src)], pos))
        else:
            picks.append((None, len(numbers)))
            numbers.append(e)
    if len(sources) == 1 and not numbers and sources[0].shape == x.shape and all(
            k == 0 and pos == i for i, (k, pos) in enumerate(picks)):
        return sources[0]                       # np.asarray(t) given back unchanged
    parts = [ravel(s) for s in sources] + ([np.asarray(numbers)] if numbers else [])
    starts = np.cumsum([0] + [int(np.prod(shape_of(p))) for p in parts])
    idx = np.array([starts[len(sources) if k is None else k] + pos for k, pos in picks],
                   dtype=np.intp)
    whole = parts[0] if len(parts) == 1 else concatenate(parts)
    if not np.array_equal(idx, np.arange(starts[-1])):
        whole = getitem(whole, (idx,))
    return reshape(whole, x.shape)


def _holds_tracer(x):
    if isinstance(x, Tracer):
        return True
    if isinstance(x, (list, tuple)):
        return builtins.any(_holds_tracer(e) for e in x)
    if isinstance(x, np.ndarray) and x.dtype == object:
        return builtins.any(isinstance(e, (Tracer, Element)) for e in x.flat)
    return False


def known(x, what):
    """The value of an integer or boolean array (a traced one read at trace time and
    recorded as a guard, as ``bool()`` is), as a plain NumPy array."""
    if isinstance(x, Tracer):
        return np.asarray(x._integer_value(what))
    return np.asarray(x)


def shape_of(x):
    return x.shape if isinstance(x, Tracer) else np.shape(x)


def ndim_of(x):
    return len(shape_of(x))


def dtype_of(x):
    return x.dtype if isinstance(x, Tracer) else np.result_type(x)


def _reject(fn_name, **kwargs):
    for k, v in kwargs.items():
        if v is not None and v is not np._NoValue:
            hint = ": tracegrad records functional operations; assign the result instead" \
                if k == "out" else ""
            raise TraceError(f"{fn_name}(..., {k}=...) is not supported on traced values{hint}"
                             f"{where()}")


def _axis_tuple(axis, x):
    try:
        return norm_axes(axis, ndim_of(x))
    except np.exceptions.AxisError as e:
        raise TraceError(f"{e}{where()}") from None


def _single_axis(axis, ndim):
    if not -ndim <= axis < ndim:
        raise TraceError(f"axis {axis} is out of bounds for an array of dimension {ndim}"
                         f"{where()}")
    return axis % ndim


def numpy_loop(ufunc, handler):
    """``handler`` (a composition of primitives standing for ``ufunc``) on the dtypes
    NumPy's own type resolution picks for ``ufunc``: the operands cast to the chosen
    loop's input dtypes, the results to its output dtypes; no loop (``np.fabs`` of a
    complex array) is NumPy's ``TypeError``, here a ``TraceError``. Python numbers stay
    weak (NEP 50), as they are for NumPy."""
    def run(*args):
        weak = [isinstance(a, (bool, int, float, complex)) and not isinstance(a, np.generic)
                for a in args]
        args = [a if w or isinstance(a, Tracer) else np.asarray(a) for a, w in zip(args, weak)]
        dts = tuple(type(a) if w else dtype_of(a) for a, w in zip(args, weak))
        try:
            loop = ufunc.resolve_dtypes(dts + (None,) * ufunc.nout)
        except TypeError as e:
            raise TraceError(f"np.{ufunc.__name__}: {e}{where()}") from None
        args = [a if w else astype(a, dt) for a, w, dt in zip(args, weak, loop)]
        out = handler(*args)
        if ufunc.nout == 1:
            return astype(out, loop[-1])
        return tuple(astype(o, dt) for o, dt in zip(out, loop[ufunc.nin:]))
    return run


def astype(x, dtype):
    dtype = np.dtype(dtype)
    if dtype_of(x) == dtype:
        return x
    return apply("convert", x, dtype=dtype)


def reshape(x, shape, order="C"):
    if order not in ("C", "F"):
        raise TraceError(f"reshape with order={order!r} is not supported on traced values "
                         f"(order='C' or 'F'){where()}")
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(operator_index(s) for s in shape)
    size = math.prod(shape_of(x))
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        shape = tuple(size // known if known and s == -1 else s for s in shape)
    if math.prod(shape) != size:
        raise TraceError(f"cannot reshape an array of shape {shape_of(x)} (size {size}) "
                         f"into shape {shape}{where()}")
    if shape == tuple(shape_of(x)):
        return x
    if order == "F" and (ndim_of(x) > 1 or len(shape) > 1):
        # Fortran order: the C reshape of the reversed axes, reversed back
        xt = apply("transpose", x, axes=tuple(range(ndim_of(x)))[::-1]) if ndim_of(x) > 1 else x
        r = apply("reshape", xt, shape=shape[::-1]) if tuple(shape_of(xt)) != shape[::-1] \
            else xt
        return apply("transpose", r, axes=tuple(range(len(shape)))[::-1]) if len(shape) > 1 \
            else r
    return apply("reshape", x, shape=shape)


def operator_index(v):
    import operator
    return operator.index(v)


def transpose(x, axes=None):
    nd = ndim_of(x)
    axes = tuple(range(nd))[::-1] if axes is None else tuple(_single_axis(a, nd) for a in axes)
    if sorted(axes) != list(range(nd)):
        raise TraceError(f"axes {axes} don't match an array of dimension {nd}{where()}")
    if axes == tuple(range(nd)):
        return alias(x) if isinstance(x, Tracer) else x     # still a new view in NumPy
    inverse = tuple(int(i) for i in np.argsort(axes))
    return mark_view(apply("transpose", x, axes=axes), x,   # NumPy's transpose is a view
                     lambda base: apply("transpose", base, axes=axes),
                     lambda base, view: apply("transpose", view, axes=inverse),
                     lambda arr: arr.transpose(axes))


def reshape_view(x, shape, order="C"):
    """``reshape``, as a NumPy view of ``x`` where NumPy's reshape would be one (it is
    whenever no copy is needed), so writes into it reach ``x``."""
    result = reshape(x, shape, order)
    if isinstance(x, Tracer) and result is x:
        return alias(x)                 # the same shape: NumPy's result is a new view
    if isinstance(x, Tracer) and order == "F":
        if reshape_is_view(x, result.shape, order):
            new_shape, old_shape = result.shape, x.shape
            result = mark_view(result, x, lambda base: reshape(base, new_shape, "F"),
                               lambda base, view: reshape(view, old_shape, "F"),
                               lambda arr: arr.reshape(new_shape, order="F"))
        return result
    if isinstance(x, Tracer) and reshape_is_view(x, result.shape):
        new_shape, old_shape = result.shape, x.shape
        result = mark_view(result, x, lambda base: reshape(base, new_shape),
                  lambda base, view: reshape(view, old_shape),
                  lambda arr: arr.reshape(new_shape))
    return result


def broadcast_to(x, shape):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if tuple(shape_of(x)) == shape:
        return x
    return apply("broadcast_to", x, shape=shape)


def full_like_tracer(x, fill, dtype=None, shape=None):
    """A constant of ``x``'s shape as a traced value (so ``z[i] = t`` works on it)."""
    dtype = np.dtype(dtype) if dtype is not None else dtype_of(x)
    shape = shape_of(x) if shape is None else shape
    trace = x._trace if isinstance(x, Tracer) else None
    value = np.array(fill, dtype=dtype)
    c = trace.const(value) if trace is not None else value
    return apply("broadcast_to", c, shape=tuple(shape))


# -- the joins coerce is built from ----------------------------------------------------
@implements(np.ravel)
def ravel(a, order="C"):
    return reshape_view(coerce(a), (-1,), order)


@implements(np.expand_dims)
def expand_dims(a, axis):
    a = coerce(a)
    shape = list(shape_of(a))
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    nd = len(shape) + len(axes)
    for ax in sorted(_single_axis(x, nd) for x in axes):
        shape.insert(ax, 1)
    return reshape_view(a, tuple(shape))


@implements(np.concatenate)
def concatenate(arrays, axis=0, out=None, dtype=None, casting=None):
    _reject("np.concatenate", out=out)
    arrays = [coerce(a) for a in arrays]
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    if not arrays:
        raise TraceError(f"need at least one array to concatenate{where()}")
    nd = ndim_of(arrays[0])
    if nd == 0:
        raise TraceError(f"zero-dimensional arrays cannot be concatenated{where()}")
    result = apply("concatenate", *arrays, axis=_single_axis(operator_index(axis), nd))
    return result if dtype is None else astype(result, dtype)


@implements(np.stack)
def stack(arrays, axis=0, out=None, dtype=None, casting=None):
    _reject("np.stack", out=out)
    arrays = [coerce(a) for a in arrays]
    if not arrays:
        raise TraceError(f"need at least one array to stack{where()}")
    shapes = {tuple(shape_of(a)) for a in arrays}
    if len(shapes) != 1:
        raise TraceError(f"all input arrays must have the same shape, got {sorted(shapes)}"
                         f"{where()}")
    axis = _single_axis(operator_index(axis), len(shapes.pop()) + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis, dtype=dtype)
