"""NumPy's API on traced values: the dispatch from ufuncs and array functions to handlers.

Each supported NumPy name maps to a handler that applies primitives (or
composes them: ``mean`` is ``sum / n``, ``stack`` is reshapes and a
``concatenate``). Anything not listed raises ``TraceError`` naming it, so an
unsupported function can never silently produce a wrong number. This module fills the
ufunc table and holds the two entry points, ``handle_ufunc`` and ``handle_function``;
the array-function handlers live by family in ``np_reductions``, ``np_elementwise``,
``np_products``, ``np_shapes``, ``np_creation`` and ``np_linalg`` (on the shared helpers
of ``np_base``), are registered when this module imports them, and are re-exported
here, where ``methods`` and the rest of the tracer find them.
"""
from __future__ import annotations

import builtins
import math
import sys

import numpy as np

from ..errors import TraceError
from ..ir import REGISTRY, apply
from ..ir.source import where
from . import np_complex, np_fft, np_more  # noqa: F401  (more handlers: they register themselves)
from .core import Tracer, add_to_top, resolve_weak
from .np_base import (
    FUNCTIONS,
    TAKES_KEYWORDS,
    UFUNC_METHODS,
    UFUNCS,
    astype,
    broadcast_to,
    coerce,
    concatenate,
    dtype_of,
    expand_dims,
    full_like_tracer,
    implements,
    ndim_of,
    numpy_loop,
    operator_index,
    ravel,
    reshape,
    reshape_view,
    shape_of,
    stack,
    transpose,
)
from .np_creation import copy, copyto, full_like, ones_like, zeros_like
from .np_elementwise import abs_, clip, nonzero, round_, where_
from .np_linalg import cholesky, det, inv, norm, slogdet, solve
from .np_products import dot, einsum, inner, matmul, outer, tensordot
from .np_reductions import (  # NumPy's names, so five of them shadow builtins here
    all,  # noqa: A004
    any,  # noqa: A004
    argmax,
    argmin,
    cumsum,
    max,  # noqa: A004
    mean,
    min,  # noqa: A004
    prod,
    std,
    sum,  # noqa: A004
    var,
)
from .np_shapes import (
    broadcast_to_,
    diag,
    diagonal,
    flip,
    hstack,
    moveaxis,
    ndim_,
    pad,
    repeat,
    reshape_,
    result_type,
    roll,
    shape_,
    size_,
    split,
    squeeze,
    swapaxes,
    tile,
    trace,
    transpose_,
    tril,
    triu,
    vstack,
)
from .views import new_array

__all__ = [
    # dispatch
    "FUNCTIONS", "UFUNCS", "handle_function", "handle_ufunc", "implements", "np_name",
    "unsupported",
    # shared helpers (np_base)
    "astype", "broadcast_to", "coerce", "concatenate", "dtype_of", "expand_dims",
    "full_like_tracer", "ndim_of", "operator_index", "ravel", "reshape", "reshape_view",
    "shape_of", "stack", "transpose",
    # handlers
    "abs_", "all", "any", "argmax", "argmin", "broadcast_to_", "cholesky", "clip", "copy",
    "copyto", "cumsum", "det", "diag", "diagonal", "dot", "einsum", "flip", "full_like",
    "hstack", "inner", "inv", "matmul", "max", "mean", "min", "moveaxis", "ndim_", "nonzero",
    "norm", "ones_like", "outer", "pad", "prod", "repeat", "reshape_", "result_type", "roll",
    "round_", "shape_", "size_", "slogdet", "solve", "split", "squeeze", "std", "sum",
    "swapaxes", "tensordot", "tile", "trace", "transpose_", "tril", "triu", "var", "vstack",
    "where_", "zeros_like",
]


def np_name(fn) -> str:
    module = getattr(fn, "__module__", None) or "numpy"
    module = module.replace("numpy._core", "numpy").replace("numpy.core", "numpy")
    prefix = "np" + module[len("numpy"):] if module.startswith("numpy") else module
    return f"{prefix}.{fn.__name__}"


def unsupported(fn, why=""):
    name = f"scipy.special.{fn.__name__}" if _scipy_ufunc(fn) else np_name(fn)
    return TraceError(f"{name} is not supported by tracegrad{why}{where()}")


def _scipy_ufunc(ufunc):
    """Whether ``ufunc`` is one of ``scipy.special``'s (SciPy imported already: its ufuncs
    only reach a tracer once it is); ``gammaln`` and company route to their primitives."""
    special = sys.modules.get("scipy.special")
    return special is not None and getattr(special, getattr(ufunc, "__name__", ""), None) is ufunc


def _route_scipy_ufuncs():
    """Add ``scipy.special``'s ufuncs that have a primitive (``extra["scipy"]``, see
    ``ir/prims/scipy_special.py``) to the ufunc table, once SciPy is imported."""
    special = sys.modules.get("scipy.special")
    if special is None or _SCIPY_ROUTED:
        return
    _SCIPY_ROUTED.append(True)
    for prim in REGISTRY.values():
        fn = getattr(special, prim.extra.get("scipy", ""), None)
        if isinstance(fn, np.ufunc):
            UFUNCS.setdefault(fn, _prim_ufunc(prim.name))


_SCIPY_ROUTED: list = []


# -- ufuncs ---------------------------------------------------------------------------
def _prim_ufunc(prim):
    return lambda *args: apply(prim, *args)


# a primitive whose registry entry names its ufunc (``Primitive.ufunc``) handles that ufunc
for _prim in REGISTRY.values():
    if _prim.ufunc is not None:
        UFUNCS[_prim.ufunc] = _prim_ufunc(_prim.name)
# The fast path of ``handle_ufunc`` (and of the operators, in ``methods``): a plain call
# of one of these on tracers and Python numbers is the primitive itself
DIRECT = {_prim.ufunc: _prim for _prim in REGISTRY.values() if _prim.ufunc is not None}
_SIMPLE = frozenset({Tracer, float, int})



def _reciprocal(x):
    """1 / x; for integers NumPy's C division, 1 // x truncated toward zero (0 unless
    |x| == 1), and at 0 whatever NumPy's integer loop gives on this machine."""
    dt = dtype_of(x)
    if dt.kind not in "iub":
        return apply("div", np.ones((), dt), x)
    with np.errstate(all="ignore"):
        at_zero = np.reciprocal(np.zeros((), dt))
    unit = apply("equal", apply("abs", x), np.ones((), dt))
    return apply("select", apply("equal", x, np.zeros((), dt)), at_zero,
                 apply("select", unit, x, np.zeros((), dt)))


# Compositions of primitives, run on NumPy's own loop dtypes (numpy_loop): np.fabs of
# an int8 array is float16, np.reciprocal of an int64 array is int64, np.positive of a
# boolean array is NumPy's TypeError.
_COMPOSED = {
    np.positive: lambda x: x,
    np.square: lambda x: apply("mul", x, x),
    np.reciprocal: _reciprocal,
    np.float_power: lambda x, y: apply("pow", x, y),
    np.exp2: lambda x: apply("pow", 2.0, x),
    np.deg2rad: lambda x: apply("mul", x, math.pi / 180.0),
    np.radians: lambda x: apply("mul", x, math.pi / 180.0),
    np.rad2deg: lambda x: apply("mul", x, 180.0 / math.pi),
    np.degrees: lambda x: apply("mul", x, 180.0 / math.pi),
    np.fabs: lambda x: apply("abs", x),
    np.divmod: lambda x, y: (apply("floor_divide", x, y), apply("remainder", x, y)),
}
for _uf, _handler in _COMPOSED.items():
    UFUNCS[_uf] = numpy_loop(_uf, _handler)
UFUNCS[np.matmul] = lambda a, b: matmul(a, b)


def handle_ufunc(ufunc, method, inputs, kwargs):
    if not kwargs and method == "__call__":
        prim = DIRECT.get(ufunc)
        if prim is not None:
            for x in inputs:
                if type(x) not in _SIMPLE and not (type(x) is np.ndarray and x.dtype != object):
                    break
            else:   # what the general path below does for these, in one step
                return add_to_top(prim, inputs, {})
    if method != "__call__":        # reduce, accumulate, outer, at, reduceat (np_ufuncs)
        handler = UFUNC_METHODS.get(method)
        if handler is None:
            raise TraceError(f"np.{ufunc.__name__}.{method} is not supported by tracegrad"
                             f"{where()}")
        return handler(ufunc, inputs, kwargs)
    inputs = tuple(coerce(x) for x in inputs)
    if builtins.any(isinstance(x, Tracer) and x._weak is not None for x in inputs):
        # NEP 50 before the handler looks at dtypes: a Python number's input takes the
        # dtype NumPy would give the number among these operands
        inputs = tuple(resolve_weak(inputs))
    out = kwargs.pop("out", None)
    if out is not None and builtins.any(o is not None for o in out):
        if builtins.any(o is not None and not isinstance(o, Tracer) for o in out):
            # z += t with z a plain ndarray arrives here as np.add(z, t, out=(z,))
            raise TraceError(f"np.{ufunc.__name__}(..., out=z) would write a traced value into "
                             f"the plain NumPy array z and lose its gradient (z += t on a plain "
                             f"ndarray does this): write z = z + t, or start from a traced "
                             f"array (z = np.zeros_like(x)){where()}")
        raise TraceError(f"np.{ufunc.__name__}(..., out=...) is not supported on traced values: "
                         f"tracegrad records functional operations; assign the result "
                         f"instead (y = np.{ufunc.__name__}(...)){where()}")
    where_ = kwargs.pop("where", True)
    if where_ is not True:
        raise TraceError(f"np.{ufunc.__name__}(..., where=...) is not supported on traced "
                         f"values; use np.where{where()}")
    dtype = kwargs.pop("dtype", None)
    for k in ("casting", "order", "subok", "signature"):
        kwargs.pop(k, None)
    handler = UFUNCS.get(ufunc)
    if handler is None and not _SCIPY_ROUTED:
        _route_scipy_ufuncs()
        handler = UFUNCS.get(ufunc)
    if handler is None or (kwargs and ufunc not in TAKES_KEYWORDS):
        raise unsupported(ufunc, f" (with {sorted(kwargs)})" if kwargs and handler else "")
    result = handler(*inputs, **kwargs)
    # a ufunc's result is always a new array (np.positive(a), np.conj of a real a)
    return new_array(result if dtype is None else astype(result, dtype), inputs)



# -- dispatch entry point -------------------------------------------------------------------
def handle_function(func, args, kwargs):
    handler = FUNCTIONS.get(func)
    if handler is None:
        raise unsupported(func)
    result = handler(*args, **kwargs)
    if func in _RETURN_THEIR_INPUT:
        return result
    return new_array(result, [*args, *kwargs.values()])


# NumPy functions that give back their argument itself when it already fits (np.real of a
# real array, np.atleast_2d of a matrix); every other result is a new array object
_RETURN_THEIR_INPUT = {np.real, np.real_if_close, np.atleast_1d, np.atleast_2d, np.atleast_3d}
