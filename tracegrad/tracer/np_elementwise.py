"""Elementwise NumPy functions that are not ufuncs: ``np.where`` (and ``np.nonzero``, its
one-argument form, read at trace time under a guard), ``np.clip``, ``np.round``,
``np.abs``, ``np.select`` and ``np.nan_to_num``. The ufuncs themselves map to primitives
in ``numpy_api``'s ``UFUNCS`` table.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.source import where
from .core import Tracer
from .np_base import _reject, as_array, astype, coerce, dtype_of, implements, operator_index


@implements(np.where)
def where_(condition, x=None, y=None):
    condition = coerce(condition)
    if x is None and y is None:
        return nonzero(condition)
    if x is None or y is None:
        raise TraceError(f"np.where needs either one argument or three{where()}")
    return apply("select", astype(condition, bool), coerce(x), coerce(y))


@implements(np.nonzero)
def nonzero(a):
    """Positions are read at trace time (the result's shape depends on them), with a guard."""
    if isinstance(a, Tracer):
        value = a._concrete("np.nonzero")
        a._trace.guard(apply("not_equal", a, 0), np.array(value != 0))
        return np.nonzero(value)
    return np.nonzero(a)


@implements(np.clip)
def clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue,  # noqa: A002
         max=np._NoValue, **kwargs):  # noqa: A002
    _reject("np.clip", out=out)
    lo = a_min if a_min is not np._NoValue else (None if min is np._NoValue else min)
    hi = a_max if a_max is not np._NoValue else (None if max is np._NoValue else max)
    x = coerce(a)
    if lo is not None:
        x = apply("maximum", x, _in_range(coerce(lo), x))
    if hi is not None:
        x = apply("minimum", x, _in_range(coerce(hi), x))
    return x


def _in_range(bound, x):
    """A Python integer bound outside an integer array's range is the range's end, as in
    NumPy's clip (np.clip(uint8_array, -1, 3) is uint8, clipped at 0 below)."""
    if isinstance(bound, int) and not isinstance(bound, bool) and dtype_of(x).kind in "iu":
        info = np.iinfo(dtype_of(x))
        return builtins.min(builtins.max(bound, int(info.min)), int(info.max))
    return bound


@implements(np.round, np.around)
def round_(a, decimals=0, out=None):
    """NumPy's own recipe: scale, round half to even, scale back (zero gradient)."""
    _reject("np.round", out=out)
    a = coerce(a)
    decimals = operator_index(decimals)
    if dtype_of(a).kind == "b":
        # NumPy rounds booleans with its float16 rint loop; with decimals it multiplies
        # into a boolean output, which it refuses (UFuncTypeError)
        if decimals:
            raise TraceError(f"np.round of a boolean array with decimals={decimals}: NumPy "
                             f"cannot cast the scaled values back to bool{where()}")
        return apply("rint", astype(a, np.float16))
    if dtype_of(a).kind in "iu":
        if decimals >= 0:
            return a
        scale = 10 ** -decimals
        return astype(apply("mul", apply("rint", apply("div", a, float(scale))), float(scale)),
                      dtype_of(a))
    if decimals == 0:
        return apply("rint", a)
    if decimals > 0:
        scale = 10.0 ** decimals
        return apply("div", apply("rint", apply("mul", a, scale)), scale)
    scale = 10.0 ** -decimals
    return apply("mul", apply("rint", apply("div", a, scale)), scale)


@implements(np.abs)
def abs_(x):
    return apply("abs", x)


_arr = as_array


@implements(np.select)
def select(condlist, choicelist, default=0):
    if len(condlist) != len(choicelist):
        raise TraceError(f"np.select: list of cases must be same length as list of "
                         f"conditions{where()}")
    choices = [_arr(c) for c in choicelist]
    # NumPy's result dtype: the choices', with a Python-number default weak (NEP 50)
    weak = isinstance(default, (bool, int, float, complex))
    dt = np.result_type(*[dtype_of(c) for c in choices],
                        default if weak else dtype_of(_arr(default)))
    out = astype(_arr(default), dt)
    for cond, choice in reversed(list(zip(condlist, choices))):
        out = np.where(_arr(cond), astype(choice, dt), out)
    return out


@implements(np.nan_to_num)
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    x = _arr(x)
    dt = dtype_of(x)
    if dt.kind == "c":
        # NumPy replaces in the real and the imaginary part separately
        parts = [nan_to_num(apply(p, x), nan=nan, posinf=posinf, neginf=neginf)
                 for p in ("real", "imag")]
        fixed = apply("add", parts[0], apply("mul", parts[1], np.asarray(1j, dt)))
        return apply("select", apply("isfinite", x), x, fixed)
    if dt.kind not in "f":
        return x
    big = np.finfo(dt).max
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    x = apply("select", apply("isnan", x), np.asarray(nan, dt), x)
    x = apply("select", apply("equal", x, np.inf), np.asarray(posinf, dt), x)
    return apply("select", apply("equal", x, -np.inf), np.asarray(neginf, dt), x)
