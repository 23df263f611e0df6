"""NumPy's API on traced values: ufuncs, array functions, operators and methods.

Each supported NumPy name maps to a handler that applies primitives (or
composes them: ``mean`` is ``sum / n``, ``stack`` is reshapes and a
``concatenate``). Anything not listed raises ``TraceError`` naming it, so an
unsupported function can never silently produce a wrong number.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.prims.util import norm_axes
from .core import Tracer
from .elements import Element
from .indexing import getitem
from .source import where
from .source import where as where_text
from .views import mark_view, reshape_is_view, sync

UFUNCS: dict = {}
FUNCTIONS: dict = {}


def np_name(fn) -> str:
    module = getattr(fn, "__module__", None) or "numpy"
    module = module.replace("numpy._core", "numpy").replace("numpy.core", "numpy")
    prefix = "np" + module[len("numpy"):] if module.startswith("numpy") else module
    return f"{prefix}.{fn.__name__}"


def unsupported(fn, why=""):
    return TraceError(f"{np_name(fn)} is not supported by tracegrad{why}{where()}")


def implements(*fns, table=FUNCTIONS):
    def deco(handler):
        for fn in fns:
            table[fn] = handler
        return handler
    return deco


# -- helpers --------------------------------------------------------------------------
def coerce(x):
    """An object array or list holding tracers (``np.array([t1, t2])``, ``np.asarray(t)``)
    as one traced array."""
    if isinstance(x, Element):
        return x.value()
    if isinstance(x, np.ndarray) and x.dtype == object:
        flat = list(x.flat)
        if builtins.any(isinstance(e, (Tracer, Element)) for e in flat):
            return _from_object_array(x, flat)
    elif isinstance(x, (list, tuple)) and _holds_tracer(x):
        return stack([coerce(e) for e in x])
    return x


def _from_object_array(x, flat):
    if builtins.any(isinstance(e, Tracer) and e.shape for e in flat):
        # whole traced arrays put into an object array by hand: stack them
        shapes = {tuple(np.shape(e)) for e in flat}
        if len(shapes) != 1:
            raise TraceError("np.array of traced values needs elements of one shape, got "
                             f"{sorted(shapes)}; use np.stack{where()}")
        return reshape(stack([e.value() if isinstance(e, Element) else e for e in flat]),
                       x.shape + shapes.pop())
    # Every entry is one scalar: an element of a traced array, a 0-d tracer or a
    # number. Concatenate the arrays they come from and gather the entries: one
    # or two nodes, however many entries.
    sources, slot, picks, numbers = [], {}, [], []
    for e in flat:
        if isinstance(e, (Element, Tracer)):
            src, pos = (e.tracer, e.flat_index) if isinstance(e, Element) else (e, 0)
            if id(src) not in slot:
                slot[id(src)] = len(sources)
                sources.append(src)
            picks.append((slot[id(src)], pos))
        else:
            picks.append((None, len(numbers)))
            numbers.append(e)
    if len(sources) == 1 and not numbers and sources[0].shape == x.shape and all(
            k == 0 and pos == i for i, (k, pos) in enumerate(picks)):
        return sources[0]                       # np.asarray(t) given back unchanged
    parts = [ravel(s) for s in sources] + ([np.asarray(numbers)] if numbers else [])
    starts = np.cumsum([0] + [int(np.prod(shape_of(p))) for p in parts])
    idx = np.array([starts[len(sources) if k is None else k] + pos for k, pos in picks],
                   dtype=np.intp)
    whole = parts[0] if len(parts) == 1 else concatenate(parts)
    if not np.array_equal(idx, np.arange(starts[-1])):
        whole = getitem(whole, (idx,))
    return reshape(whole, x.shape)


def _holds_tracer(x):
    if isinstance(x, Tracer):
        return True
    if isinstance(x, (list, tuple)):
        return builtins.any(_holds_tracer(e) for e in x)
    if isinstance(x, np.ndarray) and x.dtype == object:
        return builtins.any(isinstance(e, (Tracer, Element)) for e in x.flat)
    return False


def shape_of(x):
    return x.shape if isinstance(x, Tracer) else np.shape(x)


def ndim_of(x):
    return len(shape_of(x))


def dtype_of(x):
    return x.dtype if isinstance(x, Tracer) else np.result_type(x)


def _reject(fn_name, **kwargs):
    for k, v in kwargs.items():
        if v is not None and v is not np._NoValue:
            hint = ": tracegrad records functional operations; assign the result instead" \
                if k == "out" else ""
            raise TraceError(f"{fn_name}(..., {k}=...) is not supported on traced values{hint}"
                             f"{where()}")


def _axis_tuple(axis, x):
    try:
        return norm_axes(axis, ndim_of(x))
    except np.exceptions.AxisError as e:
        raise TraceError(f"{e}{where()}") from None


def _single_axis(axis, ndim):
    if not -ndim <= axis < ndim:
        raise TraceError(f"axis {axis} is out of bounds for an array of dimension {ndim}"
                         f"{where()}")
    return axis % ndim


def astype(x, dtype):
    dtype = np.dtype(dtype)
    if dtype_of(x) == dtype:
        return x
    return apply("convert", x, dtype=dtype)


def reshape(x, shape, order="C"):
    if order != "C":
        raise TraceError(f"reshape with order={order!r} is not supported{where()}")
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    shape = tuple(operator_index(s) for s in shape)
    size = math.prod(shape_of(x))
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        shape = tuple(size // known if known and s == -1 else s for s in shape)
    if math.prod(shape) != size:
        raise TraceError(f"cannot reshape an array of shape {shape_of(x)} (size {size}) "
                         f"into shape {shape}{where()}")
    if shape == tuple(shape_of(x)):
        return x
    return apply("reshape", x, shape=shape)


def operator_index(v):
    import operator
    return operator.index(v)


def transpose(x, axes=None):
    nd = ndim_of(x)
    axes = tuple(range(nd))[::-1] if axes is None else tuple(_single_axis(a, nd) for a in axes)
    if sorted(axes) != list(range(nd)):
        raise TraceError(f"axes {axes} don't match an array of dimension {nd}{where()}")
    if axes == tuple(range(nd)):
        return x
    inverse = tuple(int(i) for i in np.argsort(axes))
    return mark_view(apply("transpose", x, axes=axes), x,   # NumPy's transpose is a view
                     lambda base: apply("transpose", base, axes=axes),
                     lambda base, view: apply("transpose", view, axes=inverse),
                     lambda arr: arr.transpose(axes))


def reshape_view(x, shape, order="C"):
    """``reshape``, as a NumPy view of ``x`` where NumPy's reshape would be one (it is
    whenever no copy is needed), so writes into it reach ``x``."""
    result = reshape(x, shape, order)
    if isinstance(x, Tracer) and result is not x and reshape_is_view(x, result.shape):
        new_shape, old_shape = result.shape, x.shape
        mark_view(result, x, lambda base: reshape(base, new_shape),
                  lambda base, view: reshape(view, old_shape),
                  lambda arr: arr.reshape(new_shape))
    return result


def broadcast_to(x, shape):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if tuple(shape_of(x)) == shape:
        return x
    return apply("broadcast_to", x, shape=shape)


def full_like_tracer(x, fill, dtype=None, shape=None):
    """A constant of ``x``'s shape as a traced value (so ``z[i] = t`` works on it)."""
    dtype = np.dtype(dtype) if dtype is not None else dtype_of(x)
    shape = shape_of(x) if shape is None else shape
    trace = x._trace if isinstance(x, Tracer) else None
    value = np.array(fill, dtype=dtype)
    c = trace.const(value) if trace is not None else value
    return apply("broadcast_to", c, shape=tuple(shape))


# -- ufuncs ---------------------------------------------------------------------------
def _prim_ufunc(prim):
    return lambda *args: apply(prim, *args)


_UFUNC_PRIMS = {
    np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "div",
    np.negative: "neg", np.power: "pow", np.sqrt: "sqrt", np.cbrt: "cbrt", np.exp: "exp",
    np.expm1: "expm1", np.log: "log", np.log1p: "log1p", np.log2: "log2", np.log10: "log10",
    np.sin: "sin", np.cos: "cos", np.tan: "tan", np.arcsin: "arcsin", np.arccos: "arccos",
    np.arctan: "arctan", np.sinh: "sinh", np.cosh: "cosh", np.tanh: "tanh",
    np.arcsinh: "arcsinh", np.arccosh: "arccosh", np.arctanh: "arctanh",
    np.absolute: "abs", np.fabs: "abs", np.sign: "sign", np.floor: "floor", np.ceil: "ceil",
    np.rint: "rint", np.trunc: "trunc", np.maximum: "maximum", np.minimum: "minimum",
    np.fmax: "fmax", np.fmin: "fmin", np.arctan2: "arctan2", np.hypot: "hypot",
    np.logaddexp: "logaddexp", np.remainder: "remainder", np.floor_divide: "floor_divide",
    np.equal: "equal", np.not_equal: "not_equal", np.less: "less", np.less_equal: "less_equal",
    np.greater: "greater", np.greater_equal: "greater_equal", np.logical_and: "logical_and",
    np.logical_or: "logical_or", np.logical_xor: "logical_xor", np.logical_not: "logical_not",
    np.isnan: "isnan", np.isinf: "isinf", np.isfinite: "isfinite",
    np.bitwise_and: "bitwise_and", np.bitwise_or: "bitwise_or", np.bitwise_xor: "bitwise_xor",
    np.invert: "invert",
}
for _uf, _prim in _UFUNC_PRIMS.items():
    UFUNCS[_uf] = _prim_ufunc(_prim)

UFUNCS[np.positive] = lambda x: x
UFUNCS[np.square] = lambda x: apply("mul", x, x)
UFUNCS[np.reciprocal] = lambda x: apply("div", 1.0, x)
UFUNCS[np.float_power] = lambda x, y: apply("pow", astype(x, np.float64), astype(y, np.float64))
UFUNCS[np.exp2] = lambda x: apply("pow", 2.0, x)
UFUNCS[np.deg2rad] = UFUNCS[np.radians] = lambda x: apply("mul", x, math.pi / 180.0)
UFUNCS[np.rad2deg] = UFUNCS[np.degrees] = lambda x: apply("mul", x, 180.0 / math.pi)
UFUNCS[np.matmul] = lambda a, b: matmul(a, b)
UFUNCS[np.divmod] = lambda x, y: (apply("floor_divide", x, y), apply("remainder", x, y))


def handle_ufunc(ufunc, method, inputs, kwargs):
    inputs = tuple(coerce(x) for x in inputs)
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
    if method == "__call__":
        handler = UFUNCS.get(ufunc)
        if handler is None or kwargs:
            raise unsupported(ufunc, f" (with {sorted(kwargs)})" if kwargs and handler else "")
        result = handler(*inputs)
    elif method == "reduce":
        result = _ufunc_reduce(ufunc, inputs[0], **kwargs)
    elif method == "accumulate" and ufunc is np.add:
        result = cumsum(inputs[0], axis=kwargs.get("axis", 0))
    elif method == "outer" and ufunc in UFUNCS:
        a, b = inputs
        a = reshape(a, tuple(shape_of(a)) + (1,) * ndim_of(b))
        result = UFUNCS[ufunc](a, b)
    else:
        raise TraceError(f"np.{ufunc.__name__}.{method} is not supported by tracegrad{where()}")
    return result if dtype is None else astype(result, dtype)


_REDUCERS = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min"}


def _ufunc_reduce(ufunc, x, axis=0, keepdims=False, initial=np._NoValue):
    if ufunc not in _REDUCERS or initial is not np._NoValue:
        raise TraceError(f"np.{ufunc.__name__}.reduce is not supported by tracegrad{where()}")
    return apply(_REDUCERS[ufunc], x, axis=_axis_tuple(axis, x), keepdims=bool(keepdims))


# -- reductions -----------------------------------------------------------------------
def _reduction(prim, x, axis, keepdims, dtype=None):
    if dtype is not None:
        x = astype(x, dtype)
    axes = _axis_tuple(axis, x)
    if prim in ("max", "min") and builtins.any(shape_of(x)[i] == 0 for i in axes):
        raise TraceError(f"zero-size array to reduction operation {prim} which has no "
                         f"identity{where()}")
    return apply(prim, x, axis=axes, keepdims=bool(keepdims))


@implements(np.sum)
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    _reject("np.sum", out=out, initial=initial, where=where)
    return _reduction("sum", coerce(a), axis, keepdims, dtype)


@implements(np.prod)
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    _reject("np.prod", out=out, initial=initial, where=where)
    return _reduction("prod", coerce(a), axis, keepdims, dtype)


@implements(np.max, np.amax)
def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    _reject("np.max", out=out, initial=initial, where=where)
    return _reduction("max", coerce(a), axis, keepdims)


@implements(np.min, np.amin)
def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    _reject("np.min", out=out, initial=initial, where=where)
    return _reduction("min", coerce(a), axis, keepdims)


def _arg_reduction(prim, a, axis, out, keepdims):
    _reject(f"np.{prim}", out=out)
    a = coerce(a)
    if axis is not None:
        axis = _single_axis(operator_index(axis), ndim_of(a))
    return apply(prim, a, axis=axis, keepdims=bool(keepdims))


@implements(np.argmax)
def argmax(a, axis=None, out=None, *, keepdims=False):
    return _arg_reduction("argmax", a, axis, out, keepdims)


@implements(np.argmin)
def argmin(a, axis=None, out=None, *, keepdims=False):
    return _arg_reduction("argmin", a, axis, out, keepdims)


def _count(a, axes):
    return math.prod(shape_of(a)[i] for i in axes)


@implements(np.mean)
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    _reject("np.mean", out=out, where=where)
    a = coerce(a)
    if dtype is None and dtype_of(a).kind in "iub":
        dtype = np.float64
    total = _reduction("sum", a, axis, keepdims, dtype)
    return total / _count(a, _axis_tuple(axis, a))


@implements(np.var)
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    _reject("np.var", out=out, where=where, mean=mean, correction=correction)
    a = coerce(a)
    if dtype is None and dtype_of(a).kind in "iub":
        dtype = np.float64
    if dtype is not None:
        a = astype(a, dtype)
    centred = a - globals()["mean"](a, axis=axis, keepdims=True)
    total = sum(centred * centred, axis=axis, keepdims=keepdims)
    return total / builtins.max(_count(a, _axis_tuple(axis, a)) - ddof, 0)


@implements(np.std)
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    _reject("np.std", out=out, where=where, mean=mean, correction=correction)
    return apply("sqrt", var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims))


def _truth_count(a, axis, keepdims):
    """How many entries along ``axis`` are true (an integer array, no gradient)."""
    a = coerce(a)
    return _reduction("sum", astype(a, bool), axis, keepdims, np.int64)


@implements(np.any)
def any(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    _reject("np.any", out=out, where=where)
    return apply("greater", _truth_count(a, axis, keepdims), 0)


@implements(np.all)
def all(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
    _reject("np.all", out=out, where=where)
    return apply("equal", _truth_count(apply("logical_not", coerce(a)), axis, keepdims), 0)


@implements(np.cumsum)
def cumsum(a, axis=None, dtype=None, out=None):
    _reject("np.cumsum", out=out)
    a = coerce(a)
    if dtype is not None:
        a = astype(a, dtype)
    if axis is None:
        a, axis = ravel(a), 0
    return apply("cumsum", a, axis=_single_axis(operator_index(axis), ndim_of(a)))


# -- elementwise functions that are not ufuncs ---------------------------------------------
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
        x = apply("maximum", x, coerce(lo))
    if hi is not None:
        x = apply("minimum", x, coerce(hi))
    return x


@implements(np.round, np.around)
def round_(a, decimals=0, out=None):
    """NumPy's own recipe: scale, round half to even, scale back (zero gradient)."""
    _reject("np.round", out=out)
    a = coerce(a)
    decimals = operator_index(decimals)
    if dtype_of(a).kind in "iub":
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


# -- products ---------------------------------------------------------------------------
def matmul(a, b):
    a, b = coerce(a), coerce(b)
    if ndim_of(a) == 0 or ndim_of(b) == 0:
        raise TraceError(f"matmul: input operand does not have enough dimensions (a 0-d array "
                         f"is not allowed; use * for scalars){where()}")
    return apply("matmul", a, b)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@implements(np.dot)
def dot(a, b, out=None):
    _reject("np.dot", out=out)
    a, b = coerce(a), coerce(b)
    na, nb = ndim_of(a), ndim_of(b)
    if na == 0 or nb == 0:
        return apply("mul", a, b)
    if na <= 2 and nb <= 2:
        return apply("matmul", a, b)
    # N-D dot: sum over the last axis of a and the second-to-last of b
    la = _LETTERS[:na]
    lb = _LETTERS[na:na + nb - 2] + la[-1] + (_LETTERS[na + nb - 2] if nb > 1 else "")
    if nb == 1:
        lb = la[-1]
    out_s = la[:-1] + lb.replace(la[-1], "")
    return einsum(f"{la},{lb}->{out_s}", a, b)


@implements(np.inner)
def inner(a, b):
    a, b = coerce(a), coerce(b)
    na, nb = ndim_of(a), ndim_of(b)
    if na == 0 or nb == 0:
        return apply("mul", a, b)
    la = _LETTERS[:na - 1] + "z"
    lb = _LETTERS[na - 1:na + nb - 2] + "z"
    return einsum(f"{la},{lb}->{la[:-1] + lb[:-1]}", a, b)


@implements(np.outer)
def outer(a, b, out=None):
    _reject("np.outer", out=out)
    a, b = ravel(coerce(a)), ravel(coerce(b))
    return apply("mul", reshape(a, (shape_of(a)[0], 1)), b)


@implements(np.tensordot)
def tensordot(a, b, axes=2):
    a, b = coerce(a), coerce(b)
    na, nb = ndim_of(a), ndim_of(b)
    if isinstance(axes, (int, np.integer)):
        ax_a, ax_b = list(range(na - axes, na)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
    ax_a = [_single_axis(i, na) for i in ax_a]
    ax_b = [_single_axis(i, nb) for i in ax_b]
    la = list(_LETTERS[:na])
    lb = list(_LETTERS[na:na + nb])
    for i, j in zip(ax_a, ax_b):
        lb[j] = la[i]
    out_s = [c for i, c in enumerate(la) if i not in ax_a] + [
        c for j, c in enumerate(lb) if j not in ax_b]
    return einsum(f"{''.join(la)},{''.join(lb)}->{''.join(out_s)}", a, b)


def _normalize_subscripts(subscripts, shapes):
    """Explicit subscripts with '...' spelled out in letters no operand uses."""
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        ins, out = subscripts.split("->")
    else:
        ins, out = subscripts, None
    ins = ins.split(",")
    if len(ins) != len(shapes):
        raise TraceError(f"np.einsum: {len(ins)} operand subscripts for {len(shapes)} "
                         f"operands{where()}")
    used = set("".join(ins))
    free = [c for c in _LETTERS if c not in used]
    n_ell = builtins.max([len(s) - len(i.replace("...", "")) for i, s in zip(ins, shapes)
                          if "..." in i] or [0])
    ell = "".join(free[:n_ell])
    full = []
    for i, s in zip(ins, shapes):
        if "..." in i:
            k = len(s) - len(i.replace("...", ""))
            i = i.replace("...", ell[n_ell - k:])
        full.append(i)
    if out is None:
        counts = {}
        for c in "".join(full):
            counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    for i in full:
        if len(set(i)) != len(i):
            raise TraceError(f"np.einsum with an index repeated within one operand ('{i}') is "
                             "not supported; use np.diagonal or np.trace for that part"
                             f"{where()}")
    return ",".join(full) + "->" + out


@implements(np.einsum)
def einsum(subscripts, *operands, out=None, optimize=False, **kwargs):
    _reject("np.einsum", out=out)
    if kwargs:
        raise TraceError(f"np.einsum(..., {sorted(kwargs)}) is not supported{where()}")
    if not isinstance(subscripts, str):
        raise TraceError(f"np.einsum in the interleaved (operand, sublist) form is not "
                         f"supported; use a subscripts string{where()}")
    operands = [coerce(o) for o in operands]
    subs = _normalize_subscripts(subscripts, [shape_of(o) for o in operands])
    return apply("einsum", *operands, subscripts=subs)


# -- shape manipulation ------------------------------------------------------------------
@implements(np.reshape)
def reshape_(a, *args, shape=None, order="C", newshape=None, copy=None):
    if args:
        shape = args[0]
        if len(args) > 1:
            order = args[1]
    shape = newshape if shape is None else shape
    return (reshape if copy else reshape_view)(coerce(a), shape, order)


@implements(np.ravel)
def ravel(a, order="C"):
    return reshape_view(coerce(a), (-1,), order)


@implements(np.transpose)
def transpose_(a, axes=None):
    return transpose(coerce(a), axes)


@implements(np.swapaxes)
def swapaxes(a, axis1, axis2):
    a = coerce(a)
    nd = ndim_of(a)
    axes = list(range(nd))
    i, j = _single_axis(axis1, nd), _single_axis(axis2, nd)
    axes[i], axes[j] = axes[j], axes[i]
    return transpose(a, axes)


@implements(np.moveaxis)
def moveaxis(a, source, destination):
    a = coerce(a)
    nd = ndim_of(a)
    src = [source] if isinstance(source, (int, np.integer)) else list(source)
    dst = [destination] if isinstance(destination, (int, np.integer)) else list(destination)
    src = [_single_axis(s, nd) for s in src]
    dst = [_single_axis(d, nd) for d in dst]
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return transpose(a, order)


@implements(np.squeeze)
def squeeze(a, axis=None):
    a = coerce(a)
    shape = shape_of(a)
    if axis is None:
        axes = tuple(i for i, n in enumerate(shape) if n == 1)
    else:
        axes = _axis_tuple(axis, a)
        if builtins.any(shape[i] != 1 for i in axes):
            raise TraceError(f"cannot select an axis to squeeze out which has size not equal "
                             f"to one (shape {shape}, axis {axis}){where()}")
    return reshape_view(a, tuple(n for i, n in enumerate(shape) if i not in axes))


@implements(np.expand_dims)
def expand_dims(a, axis):
    a = coerce(a)
    shape = list(shape_of(a))
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    nd = len(shape) + len(axes)
    for ax in sorted(_single_axis(x, nd) for x in axes):
        shape.insert(ax, 1)
    return reshape_view(a, tuple(shape))


@implements(np.broadcast_to)
def broadcast_to_(array, shape, subok=False):
    return broadcast_to(coerce(array), shape)


def _atleast_nd(n):
    def handler(*arys):
        outs = []
        for a in arys:
            a = coerce(a)
            shape = tuple(shape_of(a))
            if len(shape) < n:
                if n == 3 and len(shape) == 2:
                    shape = shape + (1,)
                elif n == 3 and len(shape) == 1:
                    shape = (1,) + shape + (1,)
                else:
                    shape = (1,) * (n - len(shape)) + shape
                a = reshape(a, shape)
            outs.append(a)
        return outs[0] if len(outs) == 1 else outs
    return handler


FUNCTIONS[np.atleast_1d] = _atleast_nd(1)
FUNCTIONS[np.atleast_2d] = _atleast_nd(2)
FUNCTIONS[np.atleast_3d] = _atleast_nd(3)


@implements(np.concatenate)
def concatenate(arrays, axis=0, out=None, dtype=None, casting=None):
    _reject("np.concatenate", out=out)
    arrays = [coerce(a) for a in arrays]
    if axis is None:
        arrays, axis = [ravel(a) for a in arrays], 0
    if not arrays:
        raise TraceError(f"need at least one array to concatenate{where()}")
    nd = ndim_of(arrays[0])
    if nd == 0:
        raise TraceError(f"zero-dimensional arrays cannot be concatenated{where()}")
    result = apply("concatenate", *arrays, axis=_single_axis(operator_index(axis), nd))
    return result if dtype is None else astype(result, dtype)


@implements(np.stack)
def stack(arrays, axis=0, out=None, dtype=None, casting=None):
    _reject("np.stack", out=out)
    arrays = [coerce(a) for a in arrays]
    if not arrays:
        raise TraceError(f"need at least one array to stack{where()}")
    shapes = {tuple(shape_of(a)) for a in arrays}
    if len(shapes) != 1:
        raise TraceError(f"all input arrays must have the same shape, got {sorted(shapes)}"
                         f"{where()}")
    axis = _single_axis(operator_index(axis), len(shapes.pop()) + 1)
    return concatenate([expand_dims(a, axis) for a in arrays], axis=axis, dtype=dtype)


@implements(np.vstack)
def vstack(tup, dtype=None, casting=None):
    return concatenate([_atleast_nd(2)(coerce(a)) for a in tup], axis=0, dtype=dtype)


@implements(np.hstack)
def hstack(tup, dtype=None, casting=None):
    arrays = [_atleast_nd(1)(coerce(a)) for a in tup]
    return concatenate(arrays, axis=0 if ndim_of(arrays[0]) == 1 else 1, dtype=dtype)


@implements(np.split, np.array_split)
def split(ary, indices_or_sections, axis=0):
    ary = coerce(ary)
    axis = _single_axis(operator_index(axis), ndim_of(ary))
    n = shape_of(ary)[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        sections = int(indices_or_sections)
        if n % sections:
            raise TraceError(f"array split does not result in an equal division ({n} into "
                             f"{sections}){where()}")
        bounds = [i * (n // sections) for i in range(sections + 1)]
    else:
        bounds = [0] + [builtins.min(int(i), n) for i in indices_or_sections] + [n]
    lead = (slice(None),) * axis
    return [getitem(ary, lead + (slice(lo, builtins.max(lo, hi)),))
            for lo, hi in zip(bounds[:-1], bounds[1:])]


@implements(np.flip)
def flip(m, axis=None):
    m = coerce(m)
    axes = _axis_tuple(axis, m)
    return getitem(m, tuple(slice(None, None, -1) if i in axes else slice(None)
                            for i in range(ndim_of(m))))


def _take_positions(a, positions, axis):
    """``a`` gathered along ``axis`` at the constant integer ``positions``."""
    return getitem(a, (slice(None),) * axis + (np.asarray(positions, dtype=np.intp),))


@implements(np.roll)
def roll(a, shift, axis=None):
    a = coerce(a)
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), shape_of(a))
    shifts = np.broadcast_to(shift, np.shape(axis)).tolist() if np.ndim(axis) else [shift]
    axes = list(axis) if np.ndim(axis) else [axis]
    for s, ax in zip(shifts, axes):
        ax = _single_axis(ax, ndim_of(a))
        a = _take_positions(a, np.roll(np.arange(shape_of(a)[ax]), s), ax)
    return a


@implements(np.tile)
def tile(A, reps):
    A = coerce(A)
    reps = (reps,) if isinstance(reps, (int, np.integer)) else tuple(reps)
    shape = tuple(shape_of(A))
    nd = builtins.max(len(shape), len(reps))
    shape = (1,) * (nd - len(shape)) + shape
    reps = (1,) * (nd - len(reps)) + reps
    interleaved = tuple(x for n in shape for x in (1, n))
    target = tuple(x for r, n in zip(reps, shape) for x in (r, n))
    tiled = broadcast_to(reshape(A, interleaved), target)
    return reshape(tiled, tuple(r * n for r, n in zip(reps, shape)))


@implements(np.repeat)
def repeat(a, repeats, axis=None):
    a = coerce(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = _single_axis(axis, ndim_of(a))
    positions = np.repeat(np.arange(shape_of(a)[axis]), repeats)
    return _take_positions(a, positions, axis)


@implements(np.pad)
def pad(array, pad_width, mode="constant", **kwargs):
    array = coerce(array)
    nd = ndim_of(array)
    widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (nd, 2)).tolist()
    if mode == "constant":
        value = kwargs.pop("constant_values", 0)
        if kwargs or np.ndim(value) or isinstance(value, Tracer):
            raise TraceError(f"np.pad(mode='constant') supports one scalar constant_values"
                             f"{where()}")
        return apply("pad", array, widths=tuple(map(tuple, widths)), value=value)
    if mode in ("edge", "reflect", "symmetric", "wrap") and not kwargs:
        for ax, (lo, hi) in enumerate(widths):
            positions = np.pad(np.arange(shape_of(array)[ax]), (lo, hi), mode=mode)
            array = _take_positions(array, positions, ax)
        return array
    raise TraceError(f"np.pad(mode={mode!r}) is not supported by tracegrad{where()}")


@implements(np.diagonal)
def diagonal(a, offset=0, axis1=0, axis2=1):
    a = coerce(a)
    a = moveaxis(a, (axis1, axis2), (-2, -1))
    n, m = shape_of(a)[-2:]
    rows = np.arange(builtins.max(0, -offset), builtins.min(n, m - offset))
    return getitem(a, (Ellipsis, rows, rows + offset))


@implements(np.diag)
def diag(v, k=0):
    v = coerce(v)
    if ndim_of(v) == 2:
        return diagonal(v, k)
    if ndim_of(v) != 1:
        raise TraceError(f"np.diag needs a 1-D or 2-D input{where()}")
    n = shape_of(v)[0] + builtins.abs(k)
    rows = np.arange(shape_of(v)[0]) + builtins.max(0, -k)
    zeros = full_like_tracer(v, 0, shape=(n, n))
    return apply("index_update", zeros, v, index=_index((rows, rows + k)), mode="set")


def _index(items):
    from ..ir import Index
    return Index(items)


@implements(np.trace)
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    _reject("np.trace", out=out)
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype)


def _tri_mask(shape, k, upper):
    n, m = shape[-2:]
    lower = np.tri(n, m, k - 1 if upper else k, dtype=bool)
    return ~lower if upper else lower


@implements(np.triu)
def triu(m, k=0):
    m = coerce(m)
    return apply("select", _tri_mask(shape_of(m), k, True), m, 0)


@implements(np.tril)
def tril(m, k=0):
    m = coerce(m)
    return apply("select", _tri_mask(shape_of(m), k, False), m, 0)


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
    raise TraceError(f"np.copyto(dst, t) would write a traced value into the plain NumPy array "
                     f"dst and lose its gradient (np.full_like(plain, t) does this too): use "
                     f"np.full_like(x, t) with a traced x, or np.broadcast_to(t, shape)"
                     f"{where_text()}")


@implements(np.shape)
def shape_(a):
    return tuple(shape_of(coerce(a)))


@implements(np.ndim)
def ndim_(a):
    return ndim_of(coerce(a))


@implements(np.size)
def size_(a, axis=None):
    s = shape_of(coerce(a))
    return math.prod(s) if axis is None else s[axis]


@implements(np.result_type)
def result_type(*arrays_and_dtypes):
    return np.result_type(*(a.dtype if isinstance(a, Tracer) else a for a in arrays_and_dtypes))


# -- np.linalg ----------------------------------------------------------------------------
@implements(np.linalg.inv)
def inv(a):
    return apply("inv", coerce(a))


@implements(np.linalg.solve)
def solve(a, b):
    return apply("solve", coerce(a), coerce(b))


@implements(np.linalg.det)
def det(a):
    return apply("det", coerce(a))


@implements(np.linalg.slogdet)
def slogdet(a):
    a = coerce(a)
    return apply("slogdet_sign", a), apply("logabsdet", a)


@implements(np.linalg.cholesky)
def cholesky(a, /, *, upper=False):
    L = apply("cholesky", coerce(a))
    return swapaxes(L, -1, -2) if upper else L


@implements(np.linalg.norm)
def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    x = coerce(x)
    nd = ndim_of(x)
    if axis is None:
        if ord is None:  # the 2-norm of the flattened array, whatever its shape
            return apply("sqrt", sum(x * x, axis=None, keepdims=keepdims))
        if nd not in (1, 2):
            raise TraceError(f"improper number of dimensions to norm{where()}")
        axis = tuple(range(nd))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(_single_axis(a, nd) for a in axes)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise TraceError(f"improper number of dimensions to norm{where()}")


def _vector_norm(x, ord, axes, keepdims):  # noqa: A002
    if ord is None or ord == 2:
        return apply("sqrt", sum(x * x, axis=axes, keepdims=keepdims))
    ax = apply("abs", x)
    if ord == np.inf:
        return max(ax, axis=axes, keepdims=keepdims)
    if ord == -np.inf:
        return min(ax, axis=axes, keepdims=keepdims)
    if ord == 0:
        return sum(astype(apply("not_equal", x, 0), dtype_of(x)), axis=axes, keepdims=keepdims)
    if ord == 1:
        return sum(ax, axis=axes, keepdims=keepdims)
    if isinstance(ord, str):
        raise TraceError(f"invalid norm order {ord!r} for vectors{where()}")
    return sum(ax ** float(ord), axis=axes, keepdims=keepdims) ** (1.0 / float(ord))


def _matrix_norm(x, ord, axes, keepdims):  # noqa: A002
    row, col = axes
    if ord is None or ord == "fro":
        return apply("sqrt", sum(x * x, axis=axes, keepdims=keepdims))
    ax = apply("abs", x)
    if ord in (1, -1):
        sums = sum(ax, axis=row, keepdims=True)
        pick = max if ord == 1 else min
        return pick(sums, axis=axes, keepdims=keepdims)
    if ord in (np.inf, -np.inf):
        sums = sum(ax, axis=col, keepdims=True)
        pick = max if ord == np.inf else min
        return pick(sums, axis=axes, keepdims=keepdims)
    raise TraceError(f"np.linalg.norm ord={ord!r} for matrices needs singular values, which "
                     f"tracegrad does not differentiate yet{where()}")


# -- dispatch entry point -------------------------------------------------------------------
def handle_function(func, args, kwargs):
    handler = FUNCTIONS.get(func)
    if handler is None:
        raise unsupported(func)
    return handler(*args, **kwargs)
