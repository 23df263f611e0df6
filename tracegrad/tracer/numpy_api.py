"""NumPy's API on traced values: the dispatch from ufuncs and array functions to handlers.

Each supported NumPy name maps to a handler that applies primitives (or
composes them: ``mean`` is ``sum / n``, ``stack`` is reshapes and a
``concatenate``). Anything not listed raises ``TraceError`` naming it, so an
unsupported function can never silently produce a wrong number. This module fills the
ufunc table and holds the two entry points, ``handle_ufunc`` and ``handle_function``;
the array-function handlers live by family in ``np_reductions``, ``np_elementwise``,
``np_products``, ``np_shapes``, ``np_creation`` and ``np_linalg`` (on the shared helpers
of ``np_base``), are registered when this module imports them, and are re-exported
here, where ``methods`` and the rest of the tracer find them. The rest of NumPy's
surface registers itself the same way from ``np_sorting``, ``np_calculus``,
``np_nanfunctions``, ``np_comparisons``, ``np_complex``, ``np_fft``, ``np_polynomial``,
``np_statistics``, ``np_setops``, ``np_arrays`` and ``np_linalg_more`` (and, imported by
the package after this module, ``np_ufuncs``).
"""
from __future__ import annotations

import builtins
import inspect
import math
import sys

import numpy as np

from ..errors import TraceError
from ..ir import REGISTRY, apply
from ..ir.source import where
from . import (  # noqa: F401  (more handlers: they register themselves)
    np_arrays,
    np_calculus,
    np_comparisons,
    np_complex,
    np_fft,
    np_linalg_more,
    np_nanfunctions,
    np_polynomial,
    np_setops,
    np_sorting,
    np_statistics,
)
from .core import Tracer, add_to_top, is_constant, resolve_weak
from .elements import Element
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
from .np_creation import copy, copyto, full_like, ones_like, write_into, zeros_like
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
from .scipy_calls import RUNS_AS_NUMPY, refusal, refuse_in_scipy, scipy_function
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


# what an unsupported name's message says to do
ALTERNATIVES = (". docs/numpy-coverage.md lists what is supported: write it with those "
                "functions, or call it on concrete values through tg.pure_callback(fn, "
                "result_shape_dtypes, *args) (no derivative through it unless you give one "
                "with tg.custom_vjp)")


def unsupported(fn, why=""):
    # a ufunc SciPy's Python function applies (scipy.special.zeta applies _zeta)
    refused = refuse_in_scipy(f"applies {_ufunc_name(fn)}{why}, which has no derivative "
                              f"rule in tracegrad", always=True)
    if refused is not None:
        return refused
    name = _ufunc_name(fn)
    if _scipy_ufunc(fn):
        why += (": it has no derivative rule in tracegrad (docs/scipy.md lists the "
                "scipy.special functions that have one); wrap the call in tg.pure_callback "
                "for its value without a derivative")
    else:
        why += ALTERNATIVES
    return TraceError(f"{name} is not supported by tracegrad{why}{where()}")


def _ufunc_name(fn):
    return f"scipy.special.{fn.__name__}" if _scipy_ufunc(fn) else np_name(fn)


def _scipy_ufunc(ufunc):
    """Whether ``ufunc`` is one of ``scipy.special``'s (SciPy imported already: its ufuncs
    only reach a tracer once it is); ``gammaln`` and company route to their primitives.
    Its private ones (``_zeta``) count too: NumPy's have a ``numpy`` module."""
    special = sys.modules.get("scipy.special")
    if special is None or not isinstance(ufunc, np.ufunc):
        return False
    name = getattr(ufunc, "__name__", "")
    if getattr(special, name, None) is ufunc:
        return True
    return getattr(np, name, None) is not ufunc and not name.startswith("np.")


def _route_scipy_ufuncs():
    """Add ``scipy.special``'s ufuncs that have a primitive (``extra["scipy"]``, see
    ``ir/prims/scipy_special.py``) to the ufunc table, once SciPy is imported."""
    special = sys.modules.get("scipy.special")
    if special is None or _SCIPY_ROUTED:
        return
    _SCIPY_ROUTED.append(True)
    ufuncs = getattr(special, "_ufuncs", None)     # private ones (_zeta) live there
    for prim in REGISTRY.values():
        name = prim.extra.get("scipy", "")
        fn = getattr(special, name, None) or getattr(ufuncs, name, None)
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
            raise TraceError(f"{_ufunc_name(ufunc)}.{method} is not supported by tracegrad"
                             f"{ALTERNATIVES}{where()}")
        return handler(ufunc, inputs, kwargs)
    inputs = tuple(coerce(x) for x in inputs)
    if builtins.any(isinstance(x, Tracer) and x._weak is not None for x in inputs):
        # NEP 50 before the handler looks at dtypes: a Python number's input takes the
        # dtype NumPy would give the number among these operands
        inputs = tuple(resolve_weak(inputs))
    out = kwargs.pop("out", None)
    if out is not None and builtins.any(o is not None for o in out):
        return _ufunc_out(ufunc, method, inputs, kwargs, out)
    where_ = kwargs.pop("where", True)
    if where_ is not True:
        raise TraceError(f"{_ufunc_name(ufunc)}(..., where=...) is not supported on traced "
                         f"values; use np.where{where()}")
    dtype = kwargs.pop("dtype", None)
    for k in ("casting", "order", "subok", "signature"):
        kwargs.pop(k, None)
    handler = UFUNCS.get(ufunc)
    if handler is None and not _SCIPY_ROUTED:
        _route_scipy_ufuncs()
        handler = UFUNCS.get(ufunc)
    if handler is None or (kwargs and ufunc not in TAKES_KEYWORDS):
        folded = on_constants(ufunc, inputs, kwargs)
        if folded is not NOT_CONSTANT:
            return folded
        raise unsupported(ufunc, f" (with {sorted(kwargs)})" if kwargs and handler else "")
    result = handler(*inputs, **kwargs)
    # a ufunc's result is always a new array (np.positive(a), np.conj of a real a)
    return new_array(result if dtype is None else astype(result, dtype), inputs)


def _ufunc_out(ufunc, method, inputs, kwargs, out):
    """``ufunc(..., out=z)``: the result computed as without ``out``, then written into
    ``z`` (only where ``where=`` holds), which is returned, as NumPy does."""
    mask = kwargs.pop("where", True)
    casting = kwargs.pop("casting", "same_kind")
    result = handle_ufunc(ufunc, method, inputs, kwargs)
    results = result if isinstance(result, tuple) else (result,)
    if len(results) != len(out):
        raise TraceError(f"{_ufunc_name(ufunc)}: {len(out)} out= arrays for "
                         f"{len(results)} results{where()}")
    what = f"{_ufunc_name(ufunc)}(..., out=z)" if method == "__call__" else \
        f"{_ufunc_name(ufunc)}.{method}(..., out=z)"
    written = tuple(r if o is None else write_into(o, r, what, casting, mask)
                    for o, r in zip(out, results))
    return written if isinstance(result, tuple) else written[0]


# -- what tracegrad does not trace, on constants ------------------------------------------
NOT_CONSTANT = object()


class _Traced(Exception):
    pass


def on_constants(fn, args, kwargs):
    """NumPy's own ``fn(*args, **kwargs)`` where every traced value among the arguments is
    a constant (a fresh array nothing traced was written into): run on their values, which
    they hold from then on (what ``fn`` writes into them, they hold next); an argument
    handed back (``out=``) is given back as the tracer. ``NOT_CONSTANT`` otherwise."""
    given = {}

    def concrete(a, depth=0):
        if isinstance(a, Tracer):
            if not is_constant(a):
                raise _Traced
            value = a.__array__()
            given[id(value)] = a
            return value
        if isinstance(a, Element):
            raise _Traced
        if type(a) in (list, tuple) and depth < 2:
            return type(a)(concrete(e, depth + 1) for e in a)
        return a
    try:
        args = [concrete(a) for a in args]
        kwargs = {k: concrete(v) for k, v in kwargs.items()}
    except _Traced:
        return NOT_CONSTANT
    result = fn(*args, **kwargs)
    if type(result) is tuple:
        return tuple(given.get(id(r), r) for r in result)
    return given.get(id(result), result)


# -- dispatch entry point -------------------------------------------------------------------
def handle_function(func, args, kwargs):
    handler = FUNCTIONS.get(func)
    if handler is None:
        folded = on_constants(func, args, kwargs)
        if folded is not NOT_CONSTANT:
            return folded
        raise unsupported(func)
    # a SciPy function not known to be NumPy code on its arguments is refused at its first
    # NumPy call on a traced value: what follows is compiled code (scipy_calls).
    # scipy.optimize's test problems and helpers are NumPy code (rosen, rosen_der, ...);
    # scipy.sparse's products reach tracegrad's own rules, and tracer/sparse.py refuses
    # what cannot (its operators hand A @ x to the tracer's __rmatmul__).
    inside = scipy_function()
    if inside is not None and inside not in RUNS_AS_NUMPY \
            and not inside.startswith(("scipy.optimize.", "scipy.sparse.", "scipy.stats.")):
        raise refusal(inside, f"applies {np_name(func)} to its traced arguments on the way "
                              "to compiled code, which tracegrad cannot follow")
    out_at = _OUT_AT.get(handler, -2)
    if out_at == -2:
        out_at = _OUT_AT[handler] = _out_position(handler)
    if out_at >= 0 and (kwargs.get("out") is not None or
                        (len(args) > out_at and args[out_at] is not None)):
        # NumPy's out=: the result as without it, written into out, which is returned
        if "out" in kwargs:
            out = kwargs.pop("out")
        else:
            out, args = args[out_at], args[:out_at] + (None,) + args[out_at + 1:]
        result = handler(*args, **kwargs)
        if isinstance(out, tuple) and len(out) == 1:
            out = out[0]
        return write_into(out, result, f"{np_name(func)}(..., out=z)")
    result = handler(*args, **kwargs)
    if func in _RETURN_THEIR_INPUT:
        return result
    return new_array(result, [*args, *kwargs.values()])


# NumPy functions that give back their argument itself when it already fits (np.real of a
# real array, np.atleast_2d of a matrix); every other result is a new array object
_RETURN_THEIR_INPUT = {np.real, np.real_if_close, np.atleast_1d, np.atleast_2d, np.atleast_3d}


_OUT_AT: dict = {}    # handler -> position of its ``out`` parameter, -1 for none


def _out_position(handler):
    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):
        return -1
    for i, p in enumerate(params):
        if p.name == "out":
            return i if p.kind is p.POSITIONAL_OR_KEYWORD else 10_000
    return -1
