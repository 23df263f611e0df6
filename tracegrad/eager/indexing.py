"""Indexing tensors: ``t[key]`` and ``t[key] = v`` on values or tape tracers."""
import numpy as np

from ..ir import apply
from ..tracer import Tracer, coerce
from ..tracer.indexing import normalize
from .tape import TAPE, EagerTracer, Version


def is_basic(key):
    """Whether ``key`` selects a view (ints, slices, None, Ellipsis only)."""
    items = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, (slice, int, np.integer))
               and not isinstance(k, (bool, np.bool_)) for k in items)


def getitem_name(key):
    items = key if isinstance(key, tuple) else (key,)
    if not is_basic(key):
        return "IndexBackward0"
    real = [k for k in items if k is not None and k is not Ellipsis]
    if real and isinstance(real[-1], (int, np.integer)):
        return "SelectBackward0"
    return "SliceBackward0" if real else "AliasBackward0"


def index_update(x, key, v):
    """``x`` with ``x[key]`` replaced by ``v``, as a new value."""
    if isinstance(x, Tracer) or isinstance(v, Tracer):
        index, operands = normalize(key)
        return apply("index_update", x, coerce(v), *operands, index=index, mode="set")
    y = np.array(x, copy=True)
    y[key] = v
    return y


def operand_key(x, key):
    """On the tape, integer index arrays that come from data (targets, sampled indices)
    are operands of the node rather than constants in its params, so the backward plan of
    the next batch is the same plan."""
    if not isinstance(x, EagerTracer):
        return key
    items = key if isinstance(key, tuple) else (key,)
    out = tuple(TAPE.input(k, Version()) if isinstance(k, np.ndarray) and k.dtype.kind in "iu"
                and k.size > 1 else k for k in items)
    return out if isinstance(key, tuple) else out[0]
