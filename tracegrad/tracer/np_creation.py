"""Arrays made from traced ones: ``np.zeros_like``, ``np.ones_like`` and ``np.full_like``
give traced constants (so ``z[i] = t`` works on them), ``np.copy`` a new name for the
same node, and ``np.copyto`` an error that says what to write instead, since it would
write a traced value into an array tracegrad cannot follow.
"""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..ir.source import where as where_text
from .core import Tracer
from .np_base import astype, broadcast_to, coerce, dtype_of, full_like_tracer, implements, shape_of
from .views import sync


@implements(np.zeros_like)
def zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return full_like_tracer(coerce(a), 0, dtype, shape)


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
    return Tracer(a._trace, a._node, a.shape, a.dtype, a._value)


@implements(np.copyto)
def copyto(dst, src, casting="same_kind", where=True):
    if isinstance(dst, Tracer):
        raise TraceError(f"np.copyto into a traced array is not supported: assign instead "
                         f"(x[...] = src){where_text()}")
    if _called_by_np_full():
        raise TraceError(f"np.full(shape, t, dtype=...) with a traced fill writes it into a plain "
                         f"NumPy array and would lose its gradient: write "
                         f"np.full_like(x, t, dtype=...) with a traced x, "
                         f"np.broadcast_to(t.astype(dtype), shape), or np.full(shape, t) "
                         f"without dtype{where_text()}")
    raise TraceError(f"np.copyto(dst, t) would write a traced value into the plain NumPy array "
                     f"dst and lose its gradient (np.full_like(plain, t) does this too): use "
                     f"np.full_like(x, t) with a traced x, or np.broadcast_to(t, shape)"
                     f"{where_text()}")


def _called_by_np_full():
    """Whether this ``copyto`` is the one inside ``np.full`` (its frame a few levels up)."""
    import sys
    full = getattr(np.full, "__code__", None)
    frame = sys._getframe(1)
    for _ in range(6):
        if frame is None:
            return False
        if frame.f_code is full:
            return True
        frame = frame.f_back
    return False
