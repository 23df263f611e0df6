"""NumPy views of traced arrays: writes through a view reach its base, and a view sees
later writes to its base.

In NumPy, ``row = z[0]`` (basic indexing) and ``z.T`` share memory with ``z``:
``z[0][1] = v`` changes ``z``, and ``row`` shows a later ``z[0, 1] = w``. A
traced array is a value, so tracegrad keeps that sharing by bookkeeping: a view
remembers its base, how to derive itself from the base and how to write itself
back into it, and the base's version when the two were last in step. Without
it, ``z[0][1] = v`` would silently leave ``z`` unchanged.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np


class View(NamedTuple):
    base: object                  # the Tracer this one is a view of
    derive: Callable              # base -> a fresh value of this view
    write_back: Callable          # (base, view) -> base with the view's part replaced
    on_layout: Callable           # the same view taken of a NumPy array (see ``layout``)
    version: int                  # base._version when the two were last in step


def mark_view(result, base, derive, write_back, on_layout):
    """Record that ``result`` (a Tracer) is a NumPy view of ``base``."""
    if result is not base and hasattr(result, "_view") and hasattr(base, "_view"):
        result._view = View(base, derive, write_back, on_layout, base._version)
    return result


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
    return v.on_layout(layout(v.base))


def reshape_is_view(t, shape):
    """Whether NumPy's ``t.reshape(shape)`` would be a view (no copy) of ``t``."""
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
        fresh = v.derive(v.base)
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
    new_base = v.write_back(base, t)
    base._node, base._value = new_base._node, new_base._value
    t._view = v._replace(version=base._version + 1)
    assigned(base)
