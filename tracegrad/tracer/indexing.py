"""Turning a NumPy index (``x[1:, idx, None]``) into a static ``Index`` plus operands."""
import operator

import numpy as np

from ..errors import TraceError
from ..ir import Arg, Index, Slice, apply
from ..ir.source import where
from .core import Tracer, is_constant, write_in_place
from .views import assigned, ensure_writable, mark_view, sync


def _int_or_none(v):
    return None if v is None else operator.index(v)  # a traced int records a guard


def normalize(key):
    """``(Index, operands)`` for ``key``; traced integer arrays become operands."""
    if not isinstance(key, tuple):
        key = (key,)
    items, operands = [], []
    for k in key:
        if k is None or k is Ellipsis:
            items.append(k)
        elif isinstance(k, slice):
            items.append(Slice(_int_or_none(k.start), _int_or_none(k.stop), _int_or_none(k.step)))
        elif isinstance(k, (bool, np.bool_)):
            raise TraceError(f"indexing with a scalar boolean is not supported{where()}")
        elif isinstance(k, (int, np.integer)):
            items.append(int(k))
        elif isinstance(k, Tracer) and k.dtype.kind in "iu" and is_constant(k):
            # an index the function made (np.arange(n), an element of one): a constant,
            # as NumPy's own array would be
            value = np.asarray(k._value)
            items.append(int(value) if value.ndim == 0 else value)
        elif isinstance(k, Tracer):
            if k.dtype == bool:
                items.extend(_mask_positions(k))
            elif k.dtype.kind in "iu":
                if k._weak is not None:
                    # a Python int traced (a loop's step number): an index, not a number
                    # meeting the indexed array's dtype, so it stays an integer (NEP 50)
                    k = Tracer(k._trace, k._node, k.shape, k.dtype, k._value)
                items.append(Arg(len(operands)))
                operands.append(k)
            else:
                raise TraceError("arrays used as indices must be of integer or boolean type, "
                                 f"got {k.dtype}{where()}")
        else:
            arr = np.asarray(k)
            if arr.dtype == object:
                from .numpy_api import coerce
                return normalize(tuple(coerce(k) if j is k else j for j in key))
            if arr.dtype == bool:
                items.extend(np.nonzero(arr))
            elif arr.dtype.kind in "iu":
                items.append(arr)
            else:
                raise TraceError("arrays used as indices must be of integer or boolean type, "
                                 f"got {arr.dtype}{where()}")
    return Index(items), operands


def _mask_positions(mask: Tracer):
    """A traced boolean mask is read at trace time: the result's shape depends on it.
    The mask's value is recorded as a guard, so the graph is only reused when the
    same positions are selected."""
    value = mask._concrete("indexing with a boolean mask")
    mask._trace.guard(mask, np.array(value, copy=True))
    return np.nonzero(value)


def getitem(x, key):
    owned = getattr(x._trace, "_owned", None) if type(x) is Tracer else None
    if owned and owned.get(x._node) is x and x._view is None and (
            type(key) is int and len(x.shape) == 1 or type(key) is tuple and
            len(key) == len(x.shape) and all(type(k) is int for k in key)):
        return x._value[key]    # one element of an array the function made: NumPy's scalar
    index, operands = normalize(key)
    result = apply("getitem", x, *operands, index=index)
    # NumPy gives a view (keep it in step with x), except for a single element picked by
    # integers alone (a[0] of a vector), which is a scalar: a copy, blind to later writes
    scalar = result.shape == () and Ellipsis not in index
    if index.is_basic and not operands and not scalar:
        result = mark_view(result, x, lambda base: apply("getitem", base, index=index),
                  lambda base, view: apply("index_update", base, view, index=index, mode="set"),
                  lambda arr: arr[index.to_numpy()])
    return result


def setitem(x: Tracer, key, value):
    """``x[key] = value`` recorded as a functional update; ``x`` now names the result."""
    if write_in_place(x, key, value):
        return
    from .numpy_api import coerce

    sync(x)
    ensure_writable(x)
    index, operands = normalize(key)
    new = apply("index_update", x, coerce(value), *operands, index=index, mode="set")
    if new._trace is not x._trace:
        raise TraceError("assigning a value traced by an inner transform into an array "
                         f"of an outer one is not supported{where()}")
    x._node, x._value = new._node, new._value
    assigned(x)             # x's views fall behind; if x is a view, its base changes too
