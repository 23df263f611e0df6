"""Comparing whole traced arrays: ``isclose`` (a traced boolean array), ``allclose``,
``array_equal`` and ``array_equiv`` (Python booleans, recorded as guards like
``bool()``).
"""
from __future__ import annotations

import numpy as np

from .np_base import as_array, astype, dtype_of, implements, shape_of

_arr = as_array


@implements(np.isclose)
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """A traced boolean array (no gradient): NumPy's rule, ``|a - b| <= atol + rtol |b|``,
    with infinities equal only to themselves."""
    a, b = _arr(a), _arr(b)
    if dtype_of(a).kind in "iub":
        a = astype(a, np.float64)
    if dtype_of(b).kind in "iub":
        b = astype(b, np.float64)
    finite = np.isfinite(a) & np.isfinite(b)
    close = np.abs(a - b) <= atol + rtol * np.abs(b)
    out = np.where(finite, close, a == b)
    if equal_nan:
        out = out | (np.isnan(a) & np.isnan(b))
    return out


@implements(np.allclose)
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """A Python bool, recorded as a guard (like ``bool()``)."""
    return bool(np.all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)))


@implements(np.array_equal)
def array_equal(a1, a2, equal_nan=False):
    """A Python bool, recorded as a guard (like ``bool()``)."""
    a1, a2 = _arr(a1), _arr(a2)
    if tuple(shape_of(a1)) != tuple(shape_of(a2)):
        return False
    same = a1 == a2
    if equal_nan:
        same = same | (np.isnan(a1) & np.isnan(a2))
    return bool(np.all(same))


@implements(np.array_equiv)
def array_equiv(a1, a2):
    a1, a2 = _arr(a1), _arr(a2)
    try:
        np.broadcast_shapes(shape_of(a1), shape_of(a2))
    except ValueError:
        return False
    return bool(np.all(a1 == a2))
