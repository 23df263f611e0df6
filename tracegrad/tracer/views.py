"""NumPy views of traced arrays: writes through a view reach its base, and a view sees
later writes to its base.

In NumPy, ``row = z[0]`` (basic indexing) and ``z.T`` share memory with ``z``:
``z[0][1] = v`` changes ``z``, and ``row`` shows a later ``z[0, 1] = w``. A
traced array is a value, so tracegrad keeps that sharing by bookkeeping: a view
remembers its base, how to derive itself from the base and how to write itself
back into it, and the base's version when the two were last in step. Without
it, ``z[0][1] = v`` would silently leave ``z`` unchanged. NumPy's read-only views
(``np.broadcast_to``, ``np.diagonal``) have no way back: writing into them raises
NumPy's ValueError, as a TraceError naming the user's line.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..errors import TraceError
from ..ir.source import where


class View(NamedTuple):
    base: object                  # the Tracer this one is a view of
    derive: Callable              # base -> a fresh value of this view
    write_back: Callable | None   # (base, view) -> base with the view's part replaced;
                                  # None for NumPy's read-only views (broadcast_to, diagonal)
    on_layout: Callable           # the same view taken of a NumPy array (see ``layout``)
    version: int                  # base._version when the two were last in step
    what: str = ""                # for a read-only view, the function that made it
    base_shape: tuple = ()        # base.shape when the view was taken (``base.shape = s``
                                  # may change it later; memory, and so the view, stay)


def mark_view(result, base, derive, write_back, on_layout, what=""):
    """Record that ``result`` (a Tracer) is a NumPy view of ``base``; ``write_back=None``
    makes it read-only, as NumPy's ``what`` is. Returns the view: when the operation gave
    ``base`` itself back (``x.T`` of a vector, a reshape to the same shape), a new name for
    it, since NumPy's view is a new array (``v.shape = ...`` must not change ``base``)."""
    if not (hasattr(result, "_view") and hasattr(base, "_view")):
        return result
    if result is base:
        if not _functional(base):
            return result       # the eager API makes its own node for an operand handed back
        sync(base)
        result = type(base)(base._trace, base._node, base.shape, base.dtype, base._value)
    result._view = View(base, derive, write_back, on_layout, base._version, what,
                        tuple(base.shape))
    return result


def _functional(t):
    """A tracer of the functional API's traces: a new name for it is a plain ``Tracer``
    (the eager API's tracers carry a tape handle, and make their own new nodes)."""
    from .core import Tracer
    return type(t) is Tracer


def _base_as_taken(v, base):
    """``base`` in the shape it had when view ``v`` was taken."""
    if tuple(base.shape) == v.base_shape:
        return base
    from ..ir import apply
    return apply("reshape", base, shape=v.base_shape)


def _no_copy_reshape(arr, shape):
    stand_in = arr.view()
    stand_in.shape = shape
    return stand_in


def alias(t):
    """A new view of all of ``t`` (``x.view()``, ``x.T`` of a vector, a reshape to the
    same shape): writes through either reach the other, but ``v.shape = ...`` is its own."""
    return mark_view(t, t, lambda base: base, lambda base, view: view, lambda arr: arr)


def ensure_writable(t):
    """Raise NumPy's error (as a TraceError, which is a ValueError) if ``t`` is, or is a
    view of, a read-only view."""
    v = t._view
    while v is not None:
        if v.write_back is None:
            raise TraceError(f"assignment destination is read-only: {v.what} returns a "
                             f"read-only view in NumPy (write into a copy, e.g. "
                             f"{v.what}(...).copy()){where()}")
        v = v.base._view


def layout(t):
    """A stand-in for ``t``'s memory layout: an array with the strides NumPy would give
    ``t`` (C order for a computed array, its base's seen through the view otherwise),
    over a one-byte buffer. It is only ever reshaped without copying, never read."""
    v = t._view
    if v is None:
        strides = [1] * len(t.shape)
        for i in range(len(t.shape) - 2, -1, -1):
            strides[i] = strides[i + 1] * max(t.shape[i + 1], 1)
        return np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=t.shape,
                                               strides=strides)
    return v.on_layout(_no_copy_reshape(layout(v.base), v.base_shape))


def reshape_is_view(t, shape, order="C"):
    """Whether NumPy's ``t.reshape(shape, order=order)`` would be a view (no copy) of
    ``t``."""
    if order != "C":
        try:
            layout(t).reshape(shape, order=order, copy=False)
        except ValueError:
            return False
        return True
    if t._view is None:
        return True                 # a computed array is C-contiguous
    stand_in = layout(t).view()
    try:
        stand_in.shape = shape      # NumPy's own no-copy check; it never copies
    except AttributeError:
        return False
    return True


def sync(t):
    """Bring view ``t`` up to date if its base was assigned into since it was taken."""
    v = t._view
    if v is None:
        return t
    sync(v.base)
    if v.base._version != v.version:
        fresh = v.derive(_base_as_taken(v, v.base))
        t._node, t._value = fresh._node, fresh._value
        t._view = v._replace(version=v.base._version)
        t._version += 1             # views of t are now behind too
    return t


def assigned(t):
    """``t``'s node was just replaced by an indexed assignment: views of ``t`` are now
    behind, and if ``t`` is itself a view, the write goes through to its base."""
    t._version += 1
    v = t._view
    if v is None:
        return
    base = v.base
    new_base = v.write_back(_base_as_taken(v, base), t)
    if tuple(new_base.shape) != tuple(base.shape):
        from ..ir import apply
        new_base = apply("reshape", new_base, shape=tuple(base.shape))
    base._node, base._value = new_base._node, new_base._value
    t._view = v._replace(version=base._version + 1)
    assigned(base)


def set_shape(t, shape, new_value):
    """``t.shape = shape`` (already checked to need no copy): ``t`` names ``new_value``, the
    reshaped array; if ``t`` is a view, it stays one of the same base."""
    sync(t)
    old_shape = tuple(t.shape)
    t._node, t._value, t._shape = new_value._node, new_value._value, tuple(shape)
    v = t._view
    if v is None:
        return
    from ..ir import apply
    derive, write_back, on_layout = v.derive, v.write_back, v.on_layout
    t._view = v._replace(
        derive=lambda base: apply("reshape", derive(base), shape=tuple(shape)),
        write_back=None if write_back is None else (
            lambda base, view: write_back(base, apply("reshape", view, shape=old_shape))),
        on_layout=lambda arr: _no_copy_reshape(on_layout(arr), shape))


def new_array(result, operands=()):
    """``result`` as a new array object where it is one of ``operands`` (a handler that
    gave back its input: ``+a``, ``a.astype(a.dtype)``, ``np.conj`` of a real array, a
    one-array ``np.meshgrid``). NumPy's result is a new array there; the same object would
    make a later write to either show in the other. Lists and tuples are looked into."""
    if type(result) in (list, tuple):
        return type(result)(new_array(r, operands) for r in result)
    if any(result is a for a in operands) and _functional(result):
        from .core import disown
        sync(result)
        disown(result)
        return type(result)(result._trace, result._node, result.shape, result.dtype,
                            result._value)
    return result
