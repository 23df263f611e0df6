"""The ufuncs that need more than a primitive of their own, and the ufunc methods.

Ufuncs: ``np.ldexp`` (a Python int exponent stays an integer, as in NumPy's loop),
``np.frexp`` and ``np.modf`` (one two-output node, NumPy's loop dtypes), and the
generalised ufuncs ``np.vecdot``, ``np.matvec`` and ``np.vecmat`` (products: ``vecdot``
and ``vecmat`` conjugate their vector, as NumPy's do); ``np.logaddexp2``, ``np.fmod``,
``np.heaviside`` (zero gradient in ``x1``; ``x2`` where ``x1 == 0``), composed of
primitives on NumPy's loop dtypes, and ``np.sinc``.

Methods (``np.<ufunc>.reduce``, ``accumulate``, ``outer``, ``at``, ``reduceat``), for every
ufunc the tracer handles, with NumPy's result dtypes and errors: NumPy's own method is
first run on stand-ins of the operands' shapes and dtypes (zero-stride arrays of ones,
no data), which gives the dtype the result must have and raises NumPy's error (no
identity for an empty reduction, a ufunc that is not reorderable reduced over several
axes, a ``where=`` without ``initial=``) as a ``TraceError`` naming the user's line.

- ``reduce``: ``add`` and ``multiply`` are ``np.sum``/``np.prod``, ``maximum`` and
  ``minimum`` are ``np.max``/``np.min``, ``logical_and``/``logical_or`` are
  ``np.all``/``np.any``, ``logaddexp``/``logaddexp2`` a stable log-sum-exp (the maximum
  taken out first, with no derivative of its own: the gradient is the softmax weights).
  Any other binary ufunc is applied along the axis: a tree of ``log2(n)`` steps for the
  reorderable ones (those NumPy reduces over several axes at once), in NumPy's order
  (``((x0 op x1) op x2) ...``) for the others;
- ``accumulate``: ``add`` is ``np.cumsum``, ``multiply`` ``np.cumprod``; reorderable
  ufuncs a prefix scan of ``log2(n)`` steps, the others step by step;
- ``reduceat``: one reduction per segment, joined along the axis;
- ``outer``: the ufunc on operands shaped to broadcast (``a[..., None, ...] op b``);
- ``at``: an in-place update of a traced array, like ``z[i] = v``: ``add`` and
  ``subtract`` accumulate repeated indices in one ``index_update``; any other ufunc is
  applied in rounds, each round updating every index once, in NumPy's order. Indices
  computed by the program are read at trace time under a guard (as boolean masks are),
  except for ``add``/``subtract``, where they are operands.

``out=`` on a method raises a ``TraceError`` (assign the result).
"""
from __future__ import annotations

import builtins
import functools
import math

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.prims.softmax import logsumexp
from ..ir.source import where
from .core import Tracer
from .indexing import getitem, normalize, setitem
from .ndarray_methods import _binary, _in_place
from .np_base import (
    TAKES_KEYWORDS,
    UFUNC_METHODS,
    UFUNCS,
    as_array,
    astype,
    broadcast_to,
    coerce,
    concatenate,
    dtype_of,
    implements,
    ndim_of,
    numpy_loop,
    reshape,
    shape_of,
    transpose,
)
from .np_calculus import cumprod
from .np_reductions import all as all_
from .np_reductions import any as any_
from .np_reductions import cumsum, prod
from .np_reductions import max as max_
from .np_reductions import min as min_
from .np_reductions import sum as sum_of
from .views import assigned, ensure_writable, sync

_NO = np._NoValue


def _is_number(x):
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


# -- ufuncs ------------------------------------------------------------------------------
def _loop(ufunc, args):
    """NumPy's loop dtypes for ``args`` (Python numbers weak, as NumPy types them)."""
    dts = tuple(type(a) if _is_number(a) else dtype_of(a) for a in args)
    try:
        return ufunc.resolve_dtypes(dts + (None,) * ufunc.nout)
    except TypeError as e:
        raise TraceError(f"np.{ufunc.__name__}: {e}{where()}") from None


def _typed(a, dtype):
    return np.asarray(a, dtype) if _is_number(a) else astype(coerce(a), dtype)


def ldexp(x, e):
    loop = _loop(np.ldexp, (x, e))
    return apply("ldexp", _typed(x, loop[0]), _typed(e, loop[1]))


def _two_outputs(ufunc, name):
    def handler(x):
        loop = _loop(ufunc, (x,))
        outs = apply(name, _typed(x, loop[0]))
        return tuple(astype(o, dt) for o, dt in zip(outs, loop[1:]))
    return handler


def _standin(x):
    """An array of ``x``'s shape and dtype that costs no memory (ones: no division by 0)."""
    if _is_number(x):
        return x
    if isinstance(x, Tracer):
        return np.broadcast_to(np.ones((), x.dtype), x.shape)
    return np.asarray(x)


def _numpy(ufunc, what, fn, *args, **kwargs):
    """``fn`` (NumPy's own) on stand-ins: its result's shape and dtype, or its error as a
    TraceError naming the user's line."""
    try:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*(_standin(a) for a in args), **kwargs))
    except (TypeError, ValueError, IndexError) as e:
        raise TraceError(f"np.{ufunc.__name__}{what}: {e}{where()}") from None


def _gufunc(ufunc, kind):
    def handler(a, b, axis=None, axes=None):
        if axes is not None:
            raise TraceError(f"np.{ufunc.__name__}(..., axes=...) is not supported on traced "
                             f"values{where()}")
        if axis is not None and kind != "vecdot":
            raise TraceError(f"np.{ufunc.__name__} takes no axis={where()}")
        a, b = coerce(a), coerce(b)
        kw = {} if axis is None else {"axis": axis}
        ref = _numpy(ufunc, "", ufunc, a, b, **kw)
        if kind == "vecdot":
            if axis is not None:        # each operand's own axis is its core dimension
                a, b = np.moveaxis(a, axis, -1), np.moveaxis(b, axis, -1)
            result = sum_of(np.multiply(_conj(a), b), axis=-1)
        elif kind == "matvec":
            result = np.matmul(a, np.expand_dims(b, -1))[..., 0]
        else:   # vecmat: conj(v) @ A
            result = np.matmul(np.expand_dims(_conj(a), -2), b)[..., 0, :]
        return astype(result, ref.dtype)
    return handler


def _conj(x):
    return apply("conj", x) if dtype_of(x).kind == "c" else x


UFUNCS[np.ldexp] = ldexp
UFUNCS[np.frexp] = _two_outputs(np.frexp, "frexp")
UFUNCS[np.modf] = _two_outputs(np.modf, "modf")
for _uf in (np.vecdot, np.matvec, np.vecmat):
    UFUNCS[_uf] = _gufunc(_uf, _uf.__name__)
TAKES_KEYWORDS.update({np.vecdot, np.matvec, np.vecmat})   # handle_ufunc passes axis= on

# the shift operators, as methods.py installs the others: x << k is np.left_shift(x, k)
for _name, _uf in [("lshift", np.left_shift), ("rshift", np.right_shift)]:
    _fwd, _rev = _binary(_uf, _name)
    setattr(Tracer, f"__{_name}__", _fwd)
    setattr(Tracer, f"__r{_name}__", _rev)
    setattr(Tracer, f"__i{_name}__", (lambda uf: lambda self, other: _in_place(self, uf, other))(
        _uf))


# -- methods -----------------------------------------------------------------------------
def ufunc_method(ufunc, inputs, kwargs, method):
    """``np.<ufunc>.<method>(*inputs, **kwargs)`` with a traced operand."""
    handler = _METHODS[method]
    out = kwargs.pop("out", None)
    if out is not None and builtins.any(o is not None for o in out):
        raise TraceError(f"np.{ufunc.__name__}.{method}(..., out=...) is not supported on "
                         f"traced values: assign the result instead{where()}")
    if ufunc not in UFUNCS:
        raise TraceError(f"np.{ufunc.__name__}.{method}: np.{ufunc.__name__} is not supported "
                         f"by tracegrad{where()}")
    return handler(ufunc, *inputs, **kwargs)


def _call(ufunc, *args):
    """The ufunc itself on traced operands (its handler, through NumPy's dispatch)."""
    return ufunc(*args)


def _axes(axis, nd):
    if axis is None:
        return tuple(range(nd))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(int(a) % nd for a in axes)


def _reorderable(ufunc):
    """Whether NumPy reduces ``ufunc`` over several axes at once (its grouping is free)."""
    try:
        ufunc.reduce(np.ones((1, 1)), axis=(0, 1))
    except (TypeError, ValueError):
        return False
    return True


def _to_last(x, axes):
    """``x`` with ``axes`` moved to the end and merged into one."""
    nd = ndim_of(x)
    rest = [i for i in range(nd) if i not in axes]
    shape = shape_of(x)
    x = transpose(x, tuple(rest) + tuple(axes))
    return reshape(x, tuple(shape[i] for i in rest) + (math.prod(shape[i] for i in axes),))


def _last(x, k):
    return getitem(x, (Ellipsis, k))


def _fill(value, dtype, shape, like):
    c = np.asarray(value).astype(dtype)
    if isinstance(like, Tracer):
        c = like._trace.const(c)
    return broadcast_to(c, shape)


def reduce(ufunc, array, axis=0, dtype=None, keepdims=False, initial=_NO, where=True):
    x = coerce(array)
    kw = {"axis": axis, "dtype": dtype, "keepdims": keepdims}
    if initial is not _NO:
        kw["initial"] = initial
    masked = where is not True
    if masked:
        kw["where"] = _standin(coerce(where))
    ref = _numpy(ufunc, ".reduce", ufunc.reduce, x, **kw)
    nd = ndim_of(x)
    if nd == 0:                         # a 0-d operand: its value, as a new array
        return _copy(x) if dtype_of(x) == ref.dtype else astype(x, ref.dtype)
    axes = _axes(axis, nd)
    w = None if not masked else astype(coerce(where), bool)
    named = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min"}
    if ufunc in named:
        fn = {"sum": sum_of, "prod": prod, "max": max_, "min": min_}[named[ufunc]]
        extra = {"dtype": ref.dtype} if ufunc in (np.add, np.multiply) else {}
        result = fn(x, axis=axes, keepdims=keepdims, initial=None if initial is _NO else initial,
                    where=w, **extra)
        return astype(result, ref.dtype)
    if ufunc in (np.logical_and, np.logical_or) and initial is _NO and not masked:
        return (all_ if ufunc is np.logical_and else any_)(x, axis=axes, keepdims=keepdims)
    x = astype(x, ref.dtype)
    if ufunc in (np.logaddexp, np.logaddexp2):
        result = _logsumexp(ufunc, x, axes, w, initial)
    else:
        result = _fold(ufunc, x, axes, w, initial, ref.dtype)
    if keepdims:
        result = reshape(result, ref.shape)
    return astype(result, ref.dtype)


def _logsumexp(ufunc, x, axes, w, initial):
    """log(sum(exp(x))) along ``axes`` (base 2 for logaddexp2): ``prims.softmax.logsumexp``,
    masked entries made ``-inf`` first."""
    if w is not None:
        x = apply("select", broadcast_to(w, shape_of(x)), x, np.asarray(-np.inf, dtype_of(x)))
    result = logsumexp(x, tuple(axes), base2=ufunc is np.logaddexp2)
    if initial is not _NO:
        result = ufunc(result, np.asarray(initial, dtype_of(x)))
    return result


def _fold(ufunc, x, axes, w, initial, dtype):
    """``ufunc`` folded along ``axes``: a tree for reorderable ufuncs, NumPy's order else."""
    if w is not None:
        w = _to_last(broadcast_to(w, shape_of(x)), axes)
    x = _to_last(x, axes)
    n = shape_of(x)[-1]
    out_shape = tuple(shape_of(x)[:-1])
    start = initial if initial is not _NO else ufunc.identity
    if n == 0:
        return _fill(start, dtype, out_shape, x)
    if w is None and _reorderable(ufunc):
        acc = _tree(ufunc, x, n)
        return acc if initial is _NO else _call(ufunc, np.asarray(initial, dtype), acc)
    if w is not None:
        # masked entries are skipped: each step keeps the running value where w is False
        acc = _fill(start, dtype, out_shape, x)
        for k in range(n):
            acc = apply("select", _last(w, k), astype(_call(ufunc, acc, _last(x, k)), dtype), acc)
        return acc
    acc = _last(x, 0)
    if initial is not _NO:
        acc = _call(ufunc, np.asarray(initial, dtype), acc)
    for k in range(1, n):
        acc = astype(_call(ufunc, acc, _last(x, k)), dtype)
    return acc


def _tree(ufunc, x, n):
    """Pairwise halving along the last axis: ``log2(n)`` applications of ``ufunc``."""
    dtype = dtype_of(x)
    while n > 1:
        h = n // 2
        pair = astype(_call(ufunc, getitem(x, (Ellipsis, slice(0, h))),
                            getitem(x, (Ellipsis, slice(h, 2 * h)))), dtype)
        x = pair if n % 2 == 0 else concatenate([pair, getitem(x, (Ellipsis, slice(2 * h, n)))],
                                                axis=-1)
        n = h + n % 2
    return _last(x, 0)


def accumulate(ufunc, array, axis=0, dtype=None):
    x = coerce(array)
    ref = _numpy(ufunc, ".accumulate", ufunc.accumulate, x, axis=axis, dtype=dtype)
    ax = int(axis) % ndim_of(x)
    if ufunc is np.add:
        return astype(cumsum(x, axis=ax, dtype=ref.dtype), ref.dtype)
    if ufunc is np.multiply:
        return astype(cumprod(x, axis=ax, dtype=ref.dtype), ref.dtype)
    x = astype(x, ref.dtype)
    n = shape_of(x)[ax]
    if n <= 1:
        return _copy(x)
    lead = (slice(None),) * ax
    if _reorderable(ufunc):
        # a prefix scan (Hillis-Steele): after the step with shift s, entry i holds the
        # ufunc over entries i-2s+1 .. i
        shift = 1
        while shift < n:
            head = getitem(x, lead + (slice(0, shift),))
            tail = astype(_call(ufunc, getitem(x, lead + (slice(0, n - shift),)),
                                getitem(x, lead + (slice(shift, n),))), ref.dtype)
            x = concatenate([head, tail], axis=ax)
            shift *= 2
        return x
    parts = [getitem(x, lead + (slice(0, 1),))]
    for k in range(1, n):
        parts.append(astype(_call(ufunc, parts[-1], getitem(x, lead + (slice(k, k + 1),))),
                            ref.dtype))
    return concatenate(parts, axis=ax)


def _copy(x):
    """A new array with ``x``'s values (NumPy's methods never give back their operand)."""
    flat = reshape(x, (math.prod(shape_of(x)),))
    return reshape(apply("concatenate", flat, axis=0), shape_of(x))


def reduceat(ufunc, array, indices, axis=0, dtype=None):
    x = coerce(array)
    idx = _concrete_indices(indices, f"np.{ufunc.__name__}.reduceat")
    ref = _numpy(ufunc, ".reduceat", ufunc.reduceat, x, idx, axis=axis, dtype=dtype)
    ax = int(axis) % ndim_of(x)
    n = shape_of(x)[ax]
    lead = (slice(None),) * ax
    parts = []
    for k, i in enumerate(idx.tolist()):
        stop = idx[k + 1] if k + 1 < len(idx) else n
        if stop <= i:
            stop = i + 1        # NumPy: a non-increasing index gives the entry itself
        piece = getitem(x, lead + (slice(i, int(stop)),))
        parts.append(reduce(ufunc, piece, axis=ax, dtype=ref.dtype, keepdims=True))
    if not parts:
        return _fill(0, ref.dtype, ref.shape, x)
    return astype(concatenate(parts, axis=ax), ref.dtype)


def _concrete_indices(indices, what):
    """Integer indices that fix the result's shape: a traced array is read at trace time,
    under a guard (the compiled graph is reused only for the same indices)."""
    if isinstance(indices, Tracer):
        value = np.array(indices._concrete(what), copy=True)
        indices._trace.guard(indices, value)
        return value
    return np.asarray(indices)


def outer(ufunc, a, b, **kwargs):
    if ufunc.signature is not None or ufunc.nin != 2:
        _numpy(ufunc, ".outer", ufunc.outer, coerce(a), coerce(b), **kwargs)   # NumPy's error
        raise TraceError(f"np.{ufunc.__name__}.outer is not supported by tracegrad{where()}")
    a, b = coerce(a), coerce(b)
    a = np.asarray(a) if _is_number(a) else a
    b = np.asarray(b) if _is_number(b) else b
    a = reshape(a, tuple(shape_of(a)) + (1,) * ndim_of(b))
    return ufunc(a, b, **kwargs)


def at(ufunc, a, indices, b=None):
    name = f"np.{ufunc.__name__}.at"
    if not isinstance(a, Tracer):
        raise TraceError(f"{name}(z, ...) would write a traced value into the plain NumPy "
                         f"array z and lose its gradient: start from a traced array "
                         f"(z = np.zeros_like(x)), or write z = z + ...{where()}")
    if (b is None) != (ufunc.nin == 1) or ufunc.nout != 1:
        raise TraceError(f"{name}: {'a second operand is' if b is None else 'no second operand'}"
                         f" expected{where()}")
    sync(a)
    ensure_writable(a)
    dtype = dtype_of(a)
    if b is not None:
        b = coerce(b)
        b = np.asarray(b) if _is_number(b) else b
        _numpy(ufunc, ".at", ufunc.at, np.ones(1, dtype), [0], np.ones((), dtype_of(b)))
    if ufunc in (np.add, np.subtract) and np.can_cast(dtype_of(b), dtype, "same_kind") \
            and dtype_of(b).kind not in "b":
        # repeated indices accumulate: one index_update in add mode
        value = astype(b if ufunc is np.add else np.negative(b), dtype)
        index, operands = normalize(indices)
        new = apply("index_update", a, value, *operands, index=index, mode="add")
    else:
        new = _at_rounds(ufunc, a, indices, b, name)
    if new._trace is not a._trace:
        raise TraceError(f"{name}: writing a value traced by an inner transform into an "
                         f"array of an outer one is not supported{where()}")
    a._node, a._value = new._node, new._value
    assigned(a)


def _at_rounds(ufunc, a, indices, b, name):
    """``ufunc.at`` in rounds: round r updates the entries met for the r-th time, in the
    order NumPy visits them (so a repeated index sees the earlier updates)."""
    key = indices if isinstance(indices, tuple) else (indices,)
    key = tuple(_concrete_indices(k, name) if isinstance(k, Tracer) else k for k in key)
    shape = tuple(shape_of(a))
    try:
        positions = np.asarray(np.arange(math.prod(shape)).reshape(shape)[key])
    except IndexError as e:
        raise TraceError(f"{name}: {e}{where()}") from None
    indexed_shape = positions.shape
    positions = positions.ravel()
    dtype = dtype_of(a)
    flat = reshape(a, (math.prod(shape),))
    values = None
    if b is not None:
        try:
            values = reshape(broadcast_to(b, indexed_shape), (positions.size,))
        except (ValueError, TraceError):
            raise TraceError(f"{name}: a value of shape {shape_of(b)} does not broadcast to "
                             f"the indexed shape {indexed_shape}{where()}") from None
    seen: dict = {}
    rounds = np.empty(positions.size, np.int64)
    for k, p in enumerate(positions.tolist()):
        rounds[k] = seen.get(p, 0)
        seen[p] = rounds[k] + 1
    for r in range(int(rounds.max()) + 1 if positions.size else 0):
        sel = np.flatnonzero(rounds == r)
        where_ = positions[sel]
        current = getitem(flat, (where_,))
        if values is None:
            updated = _call(ufunc, current)
        else:
            updated = _call(ufunc, current, getitem(values, (sel,)))
        flat = _set(flat, where_, astype(updated, dtype))
    return reshape(flat, shape)


def _set(flat, positions, value):
    out = reshape(flat, shape_of(flat))
    if out is flat:
        out = Tracer(flat._trace, flat._node, flat.shape, flat.dtype, flat._value)
    setitem(out, (positions,), value)
    return out


_METHODS = {"reduce": reduce, "accumulate": accumulate, "reduceat": reduceat,
            "outer": outer, "at": at}
UFUNC_METHODS.update({m: functools.partial(ufunc_method, method=m) for m in _METHODS})


# -- ufuncs composed of primitives ----------------------------------------------------
_arr = as_array
_LN2 = math.log(2.0)


def _fmod(x, y):
    # sign(x) * (|x| mod |y|): exact values (as C's fmod), d/dx = 1, d/dy = -trunc(x / y)
    return apply("mul", apply("sign", x), apply("remainder", apply("abs", x), apply("abs", y)))


def _heaviside(x1, x2):
    dt = np.result_type(dtype_of(x1), dtype_of(x2))
    inner = apply("select", apply("greater", x1, 0), np.ones((), dt), x2)
    inner = apply("select", apply("less", x1, 0), np.zeros((), dt), inner)
    if dtype_of(x1).kind == "f":         # NaN in x1 is NaN, whatever x2 says
        inner = apply("select", apply("isnan", x1), np.asarray(np.nan, dt), inner)
    return inner


UFUNCS[np.logaddexp2] = numpy_loop(np.logaddexp2, lambda x, y: apply(
    "div", apply("logaddexp", apply("mul", x, _LN2), apply("mul", y, _LN2)), _LN2))
UFUNCS[np.fmod] = numpy_loop(np.fmod, _fmod)
UFUNCS[np.heaviside] = numpy_loop(np.heaviside, _heaviside)


@implements(np.sinc)
def sinc(x):
    """sin(pi x) / (pi x), 1 at 0 (derivative 0 there; the second derivative at exactly 0
    is not the true -pi^2/3)."""
    x = _arr(x)
    if dtype_of(x).kind in "iub":
        x = astype(x, np.float64)
    zero = apply("equal", x, 0)
    safe = apply("mul", apply("select", zero, 1.0, x), math.pi)
    return apply("select", zero, 1.0, apply("div", apply("sin", safe), safe))
