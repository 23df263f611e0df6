"""The structural key of a recorded computation, shared by both front ends.

A backward plan depends only on the *structure* of what was recorded: each node's
operation, operands, shape, dtype and parameters (not on the values of its inputs and
constants, which are passed on each run). The tracer's records (``Trace.records``) and
the eager tape's nodes supply the same facts; ``freeze_params`` turns a node's parameters
into a hashable key, ``freeze`` one parameter's value.
"""
from __future__ import annotations

import numpy as np

MAX_PARAM_ARRAY = 4096      # elements of an array parameter (a constant index) keyed by value


class Uncacheable(Exception):
    """A parameter whose equality cannot be trusted as a cache key."""


def freeze(v, objects=False, max_array=MAX_PARAM_ARRAY):
    """A hashable stand-in for parameter ``v`` that is equal for two parameters exactly
    when they are interchangeable in a plan: floats by their bits (``0.0`` and ``-0.0``
    apart, NaN equal to NaN), arrays by shape, dtype and bytes.

    Anything else (a graph, a custom rule) raises ``Uncacheable``, unless ``objects``:
    then a hashable object is keyed by itself (by identity, for most), which is safe
    where the cache entry holds the object, so that its identity cannot be reused while
    the entry exists. ``max_array``: a larger array parameter is ``Uncacheable`` (None:
    no limit)."""
    t = type(v)
    if t is int or t is str or v is None or v is Ellipsis:
        return v
    if t is tuple:
        for x in v:
            if type(x) is not int:
                break
        else:
            return v        # ints only (axes, shapes): its own key, apart from every tagged one
        return ("tuple",) + tuple([freeze(x, objects, max_array) for x in v])
    if t is list:
        return ("list",) + tuple([freeze(x, objects, max_array) for x in v])
    if t is bool:
        return ("bool", v)
    if t is float:
        return ("float", v.hex())
    if t is complex:
        return ("complex", v.real.hex(), v.imag.hex())
    if t is dict:
        return ("dict",) + tuple([(k, freeze(x, objects, max_array)) for k, x in v.items()])
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    if isinstance(v, np.generic):
        return ("np", v.dtype.str, v.tobytes())
    if isinstance(v, np.ndarray):
        if v.dtype == object or (max_array is not None and v.size > max_array):
            raise Uncacheable
        return ("nd", v.shape, v.dtype.str, v.tobytes())
    if isinstance(v, tuple):                    # NamedTuples and tuple subclasses (Index)
        return (t.__module__, t.__qualname__) + tuple(freeze(x, objects, max_array) for x in v)
    if isinstance(v, slice):
        return ("slice", freeze(v.start, objects, max_array), freeze(v.stop, objects, max_array),
                freeze(v.step, objects, max_array))
    if isinstance(v, type) and v.__module__ in ("builtins", "numpy"):
        return ("type", v.__module__, v.__qualname__)
    if objects:
        try:
            hash(v)
        except TypeError:
            raise Uncacheable from None
        return ("object", v)
    raise Uncacheable                           # graphs, custom rules, anything else


def freeze_params(params, objects=False, max_array=MAX_PARAM_ARRAY):
    """A node's parameters (a dict) as a key: ``()`` for none."""
    if not params:
        return ()
    return tuple([(k, freeze(v, objects, max_array)) for k, v in params.items()])
