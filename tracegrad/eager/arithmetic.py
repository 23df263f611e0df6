"""Tensor arithmetic (``ArithmeticMethods``): binary and unary operations, comparisons,
powers, products, ``clamp``, ``maximum``/``minimum``; the fast path of a binary operation.

Each operation is NumPy code handed to ``dispatch.call`` with PyTorch's name for its
backward node; composite ones (``sigmoid``, ``logsumexp``, ``std``) are several primitives
on the tape under one ``grad_fn`` name, as PyTorch shows them.
"""
from __future__ import annotations

import builtins
import contextvars
from collections import namedtuple

import numpy as np

from ..ir import apply
from ..tracer import Tracer
from ..tracer import user_src as _user_src
from ..tracer import where as _at_user_line
from ..tracer.numpy_api import DIRECT as _DIRECT
from . import dispatch as _dispatch
from .dispatch import call
from .grad_mode import is_grad_enabled as _grad_enabled
from .profiler import current as _profiling
from .promotion import cast, category, promoted, result_type
from .tape import TAPE, EagerTracer
from .tensor_base import TensorBase, _scalar_name, default_dtype

MinMax = namedtuple("MinMax", ["values", "indices"])


def _err(message):
    """PyTorch's wording, and the user's line it happened at."""
    return RuntimeError(message + _at_user_line())


def _as_tensor(x, like):
    """``x`` as a tensor, made by ``like``'s constructors (a tensor, or ``tg.Tensor``)."""
    return x if isinstance(x, TensorBase) else like._plain(np.asarray(x))


def _tensor_operand(x, like=None):
    """``x``, which torch takes as a tensor: a number or an array beside a tensor ``like``
    becomes one made by ``like``'s constructors; anything else is torch's TypeError."""
    if isinstance(x, TensorBase):
        return x
    if like is not None:
        return like._plain(np.asarray(x))
    raise TypeError(f"expected Tensor as argument, but got {type(x).__name__}")


def _shape(x):
    return tuple(x.shape) if isinstance(x, TensorBase) else np.shape(x)


def _check_broadcast(a, b):
    ta, tb = type(a), type(b)
    if tb in _NUMBERS or ta in _NUMBERS:
        return
    if isinstance(a, TensorBase) and isinstance(b, TensorBase) and \
            type(a._data) is np.ndarray and type(b._data) is np.ndarray:
        sa, sb = a._data.shape, b._data.shape
    else:
        sa, sb = _shape(a), _shape(b)
    if sa == sb:
        return
    n = builtins.max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
    for i in range(n - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            raise _err(f"The size of tensor a ({pa[i]}) must match the size of tensor b "
                               f"({pb[i]}) at non-singleton dimension {i}")


def _elementwise(fn, *operands, name=None, like=None):
    """``fn`` on the operands converted to PyTorch's result dtype (see promotion.py);
    ``like`` makes the result when no operand is a tensor (``dispatch.call``)."""
    if len(operands) == 2 and FAST.get():
        out = _fast_binary(fn, operands[0], operands[1], name)
        if out is not None:
            return out
    dtype = result_type(*operands, default_float=default_dtype())
    if fn is _true_divide and category(dtype) < category(np.float32):
        dtype = default_dtype()             # integer division gives the default float
    return call(promoted(fn, dtype), *operands, name=name, like=like)


# -- the fast path of a binary elementwise operation --------------------------------------
# Most operations of a training step are one of these on a concrete tensor (or one the
# tape recorded) and a tensor or a Python number. ``_fast_binary`` takes the same steps as
# ``_elementwise`` + ``dispatch.call`` for them, without the generic walks over operands:
# the result dtype is looked up by what promotion reads of each operand (its dtype and
# whether it is 0-d, or the Python number's type). ``FAST.set(False)`` turns it off in the
# calling thread (the differential test compares both paths).
FAST: contextvars.ContextVar = contextvars.ContextVar("tracegrad_eager_fast_paths", default=True)
_RESULT_TYPES: dict = {}
_NUMBERS = frozenset({int, float, bool})


def _fast_binary(fn, a, b, name, check=False):
    """``check``: the shapes are not checked yet (``_check_broadcast``)."""
    ta, tb = type(a), type(b)
    if isinstance(a, TensorBase):
        va, tr = a._data, a._tracer
        if type(va) is not np.ndarray or (tr is not None and type(tr) is not EagerTracer):
            return None
        ka, ga, at = (va.dtype, va.ndim == 0), tr is not None or a._requires_grad, True
    elif ta is float or ta is int or ta is bool:
        va, ka, ga, at = a, ta, False, False
    else:
        return None
    if tb is float or tb is int or tb is bool:
        vb, kb, gb, bt = b, tb, False, False
    elif tb is ta and at or isinstance(b, TensorBase):
        vb, tr = b._data, b._tracer
        if type(vb) is not np.ndarray or (tr is not None and type(tr) is not EagerTracer):
            return None
        kb, gb, bt = (vb.dtype, vb.ndim == 0), tr is not None or b._requires_grad, True
    else:
        return None
    if _profiling() is not None or not (at or bt):
        return None
    if check and at and bt and va.shape != vb.shape:
        _check_broadcast(a, b)
    default = default_dtype()
    key = (ka, kb, default, fn is _true_divide)
    dtype = _RESULT_TYPES.get(key)
    if dtype is None:
        dtype = result_type(a, b, default_float=default)
        if fn is _true_divide and category(dtype) < category(np.float32):
            dtype = default
        _RESULT_TYPES[key] = dtype
    like = a if at else b
    if (ga or gb) and _grad_enabled():
        return _record_binary(fn, a, b, at, bt, dtype, name, like)
    out = fn(va if not at or va.dtype == dtype else va.astype(dtype),
             vb if not bt or vb.dtype == dtype else vb.astype(dtype))
    if type(out) is np.ndarray and out.base is None and out is not va and out is not vb:
        return like._plain(out)         # a new array of its own: what _owned + _wrap give
    return _dispatch._wrap(_dispatch._owned(out, [va, vb]), like, None, None, None)


def _promotion_key(x):
    t = type(x)
    if isinstance(x, TensorBase):
        v = x._data
        return (v.dtype, v.ndim == 0) if type(v) is np.ndarray else None
    return t if t in _NUMBERS else None


def _cached_result_type(a, b):
    """``result_type(a, b)``, looked up in ``_fast_binary``'s table when it can be."""
    ka, kb = _promotion_key(a), _promotion_key(b)
    default = default_dtype()
    if ka is None or kb is None:
        return result_type(a, b, default_float=default)
    key = (ka, kb, default, False)
    dtype = _RESULT_TYPES.get(key)
    if dtype is None:
        dtype = _RESULT_TYPES[key] = result_type(a, b, default_float=default)
    return dtype


def _record_binary(fn, a, b, a_tensor, b_tensor, dtype, name, like):
    """``_fast_binary`` when an operand requires grad: ``dispatch._call``'s recording
    (no ``name``: the ``torch_name`` of the one primitive ``fn`` records)."""
    prim = _ONE_PRIMITIVE.get(fn)
    if name is None and prim is not None:
        name = prim.torch_name
    if a_tensor and b_tensor:
        if prim is not None:
            # (tape tracers: _fast_binary took only concrete or taped tensors)
            ia, ib = a._traced(), b._traced()
            if ia._dtype == dtype and ib._dtype == dtype and ia._view is None and \
                    ib._view is None and ia._weak is None and ib._weak is None and \
                    dtype.kind in "fc":
                # two tensors of the result's floating dtype: one node, whose edges are its
                # parents (what the steps below come to for them)
                src = TAPE.src
                out = TAPE.add2(prim, ia, ib, src if src is not None else _user_src(3))
                out._handle._name = name
                return like._recorded(out)
    outer = TAPE.src
    if outer is None:
        TAPE.src = _user_src(3)     # (above _fast_binary and the operation that called it)
    try:
        ia = a._traced() if a_tensor else a
        ib = b._traced() if b_tensor else b
        ca = ia if not a_tensor or ia._dtype == dtype else cast(ia, dtype)
        cb = ib if not b_tensor or ib._dtype == dtype else cast(ib, dtype)
        if prim is not None and (type(ca) is EagerTracer and ca._weak is None or (
                type(ca) is float or type(ca) is int)) and (
                type(cb) is EagerTracer and cb._weak is None or (
                type(cb) is float or type(cb) is int)):
            out = TAPE.add(prim, (ca, cb), {})  # what fn(ca, cb) comes to on the tape
            direct = ca is ia and cb is ib and a_tensor and b_tensor
        else:
            out = fn(ca, cb)
            direct = False
    finally:
        TAPE.src = outer
    ins = (ia, ib)
    if type(out) is EagerTracer:
        v = out._value
        if not (type(v) is np.ndarray and v.base is None and (
                not a_tensor or v is not ia._value) and (not b_tensor or v is not ib._value)):
            out = _dispatch._owned(out, [i._value for i in ins if isinstance(i, EagerTracer)])
        if name is None or out is ia or out is ib or out._dtype.kind not in "fc":
            return _dispatch._from_tracer(out, like, name, ins, None)
        # _from_tracer's steps for a new node
        handle = out._handle
        handle._name = name
        if not (direct and ia._dtype.kind in "fc" and ib._dtype.kind in "fc"):
            # (else the node's parents are the operands: those are its edges)
            inputs = _dispatch.edges(name, ins)
            if inputs != handle._parents:
                handle._inputs = inputs
        return like._recorded(out)
    out = _dispatch._owned(out, [i._value for i in ins if isinstance(i, EagerTracer)])
    return _dispatch._wrap(out, like, name, ins, None)


def _binary(self, other, fn, name):
    """``self <fn> other``: the fast path, else the checks and ``_elementwise``."""
    if FAST.get():
        out = _fast_binary(fn, self, other, name, check=True)
        if out is not None:
            return out
    _check_broadcast(self, other)
    return _elementwise(fn, self, other, name=name)


def _rbinary(self, other, fn, name):
    """``other <fn> self``, ``other`` not a tensor (a reflected operator)."""
    _check_broadcast(other, self)
    return _elementwise(fn, other, self, name=name)


def _true_divide(a, b):
    return np.true_divide(a, b)


_true_divide.__wrapped__ = np.true_divide     # (the profiler's name for it: div)


# the operations that are one primitive on tape tracers (EagerTracer.__array_ufunc__)
_ONE_PRIMITIVE = {np.add: _DIRECT[np.add], np.subtract: _DIRECT[np.subtract],
                  np.multiply: _DIRECT[np.multiply], _true_divide: _DIRECT[np.true_divide],
                  np.power: _DIRECT[np.power]}


def _is_bool(x):
    if isinstance(x, TensorBase):
        data = x._data
        return data.dtype.kind == "b" if type(data) is np.ndarray else x.dtype == np.bool_
    return isinstance(x, (bool, np.bool_))


def _subtract(a, b):
    if _is_bool(a) or _is_bool(b):
        raise _err("Subtraction, the `-` operator, with a bool tensor is not supported. If you "
                   "are trying to invert a mask, use the `~` or `logical_not()` operator "
                   "instead.")
    return _elementwise(np.subtract, a, b)


def _bitwise(a, b, logical, bitwise, what):
    _check_broadcast(a, b)
    for x in (a, b):
        if isinstance(x, TensorBase) and x.dtype.kind in "fc" or isinstance(x, float):
            kind = "Float" if isinstance(x, TensorBase) and x.dtype == np.float32 else "Double"
            raise NotImplementedError(f'"{what}_cpu" not implemented for \'{kind}\'')
    return _elementwise(logical if _is_bool(a) and _is_bool(b) else bitwise, a, b)


def _remainder(self, other):
    _check_broadcast(self, other)
    return _elementwise(np.remainder, self, other, name="RemainderBackward1"
                        if isinstance(other, TensorBase) else "RemainderBackward0")




def _no_kernel(kernel, dtype, kinds):
    """PyTorch's error for an operation with no kernel for ``dtype`` (kinds ``b``/``c``)."""
    if np.dtype(dtype).kind in kinds:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_scalar_name(dtype)}\'')


def _check_division(a, b, kernel):
    """PyTorch's errors for ``a // b`` and ``a % b``: no kernel for bool or complex, and an
    integer division by zero raises (NumPy gives 0 and a warning)."""
    dtype = result_type(a, b, default_float=default_dtype())
    _no_kernel(kernel, dtype, "bc")
    divisor = b._data if isinstance(b, TensorBase) else np.asarray(b)
    if category(dtype) == category(np.int64) and divisor is not None and \
            np.any(divisor == 0):
        raise _err("ZeroDivisionError")


def _fmod(a, b):
    """``np.fmod``'s value with PyTorch's derivative: 1 for ``a``, ``-trunc(a / b)`` for
    ``b`` (the value taken exactly from ``np.fmod``, the derivative from ``a - b * q``)."""
    if not isinstance(a, Tracer) and not isinstance(b, Tracer):
        return np.fmod(a, b)
    if np.result_type(a, b).kind not in "fc":
        return np.fmod(a, b)
    q = apply("stop_gradient", np.trunc(a / b))
    smooth = a - b * q
    return smooth + apply("stop_gradient", np.fmod(a, b) - smooth)


_ORDER = {np.less: "lt_cpu", np.less_equal: "le_cpu", np.greater: "gt_cpu",
          np.greater_equal: "ge_cpu"}


def _compare(self, other, fn):
    if other is None:
        return NotImplemented
    _check_broadcast(self, other)
    if fn in _ORDER:
        _no_kernel(_ORDER[fn], result_type(self, other, default_float=default_dtype()), "c")
    return _elementwise(fn, self, other)


def _dtype_of(x):
    t = type(x)
    return x.dtype if t is np.ndarray or t is EagerTracer else np.result_type(x)


def _power(a, b):
    da = _dtype_of(a)
    if da.kind == "b" and _dtype_of(b).kind == "b":
        return np.logical_or(a, np.logical_not(b))      # bool ** bool stays bool in PyTorch
    if type(b) in (int, float) and b in (3, -2) and da.kind == "f":
        # PyTorch's kernel computes these powers by multiplying (its numbers, and faster
        # than pow): x ** 3 is x * x * x, x ** -2 is 1 / (x * x)
        return a * a * a if b == 3 else 1 / (a * a)
    if type(b) in (int, float) and b in _BY_PRODUCTS and da == np.float32:
        return _float32_power(a, int(b))
    return np.power(a, b)


_BY_PRODUCTS = (4, 5, 6, 7, 8)


def _float32_power(a, n):
    """``a ** n`` for float32 ``a`` and n in 4..8, by products in float64 rounded once to
    float32. PyTorch's kernel calls a vectorised ``pow`` (1 ulp); NumPy's float32
    ``power`` is about 60 ns an element on x86-64, 20x PyTorch's. A float32 square is exact
    in float64, and the at most three more float64 products each err by 2**-53 of their
    value, so the result rounds to the float32 nearest the exact power but where that
    lies within about 2**-51 of the value of a halfway point between two float32s:
    float32's ``power`` correctly rounded, but for such rare cases."""
    w = a.astype(np.float64)
    sq = w * w
    p = sq * sq                                      # n = 4
    if n == 5:
        p = p * w
    elif n == 6:
        p = p * sq
    elif n == 7:
        p = p * sq * w
    elif n == 8:
        p = p * p
    return p.astype(np.float32)


def _check_pow(base, exponent):
    dtype = _cached_result_type(base, exponent)
    if isinstance(exponent, TensorBase):
        _no_kernel("pow", dtype, "b")
    if dtype.kind in "iu" and not isinstance(exponent, TensorBase):
        if np.any(np.asarray(exponent) < 0):
            raise _err("Integers to negative integer powers are not allowed.")


def _check_matmul(a, b):
    sa, sb = _shape(a), _shape(b)
    if not sa or not sb:
        raise _err("both arguments to matmul need to be at least 1D, but they are "
                           f"{len(sa)}D and {len(sb)}D")
    k_a = sa[-1]
    k_b = sb[0] if len(sb) == 1 else sb[-2]
    if k_a != k_b:
        if len(sa) == 2 and len(sb) == 2:
            raise _err(f"mat1 and mat2 shapes cannot be multiplied ({sa[0]}x{sa[1]} and "
                               f"{sb[0]}x{sb[1]})")
        raise _err(f"size mismatch in matmul: got shapes {list(sa)} and {list(sb)} "
                           f"(inner dimensions {k_a} and {k_b})")


_C_NAMES = {"float64": "double", "float32": "float", "float16": "c10::Half", "int64": "long int",
            "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
            "bool": "bool", "complex64": "c10::complex<float>",
            "complex128": "c10::complex<double>"}


def _check_product_dtypes(a, b, form=None):
    """PyTorch multiplies matrices of one dtype only (no promotion): its error, in the
    wording of the kernel ``a @ b`` comes to (``form``: that kernel, else from the ranks)."""
    da, db = (np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype for x in (a, b))
    if da == db:
        return
    if form is None:
        ra, rb = len(_shape(a)), len(_shape(b))
        form = "dot" if ra == rb == 1 else "mv" if rb == 1 else \
            "mm" if rb == 2 and ra in (1, 2) else "bmm"
        if ra >= 3 and rb == 2:
            form = "mm"
    if form == "dot":
        raise _err(f"dot : expected both vectors to have same dtype, but found "
                   f"{_scalar_name(da)} and {_scalar_name(db)}")
    if form == "mv":
        raise _err(f"addmv input tensors must have the same dtype, but got {_scalar_name(db)}, "
                   f"{_scalar_name(da)}, and {_scalar_name(db)}")
    if form == "mm":
        raise _err(f"expected m1 and m2 to have the same dtype, but got: "
                   f"{_C_NAMES.get(da.name, da.name)} != {_C_NAMES.get(db.name, db.name)}")
    raise _err(f"expected scalar type {_scalar_name(da)} but found {_scalar_name(db)}")


# -- unary ---------------------------------------------------------------------------
def _sigmoid(x):
    # PyTorch's 1 / (1 + exp(-x)) (the ``sigmoid`` primitive: no overflow warning, and
    # out * (1 - out) as its derivative)
    return apply("sigmoid", x)


def _relu(x):
    # PyTorch's threshold_backward passes the gradient wherever the value is not <= 0, NaN
    # included
    return np.where(x <= 0, np.zeros((), x.dtype), x)


def _abs(x):
    """``|x|`` as ``x * sgn(x)``, the derivative PyTorch uses: ``g * sgn(x)``, 0 at 0 and
    at NaN (times an infinite ``g`` that is NaN, as in PyTorch)."""
    if not isinstance(x, Tracer) or x.dtype.kind != "f":
        return np.abs(x)
    return x * apply("stop_gradient", _sign(x)) + 0.0     # + 0.0: |-0.0| is +0.0


def _sign(x):
    if x.dtype == np.bool_:
        return np.copy(x) if not isinstance(x, Tracer) else x
    s = np.sign(x)
    if s.dtype.kind in "fc":
        s = np.where(np.isnan(x), np.zeros((), s.dtype), s)     # PyTorch: sign(nan) is 0
    return s


def _rsqrt(x):
    return 1 / np.sqrt(x)


# name: PyTorch's for the grad_fn where it is not the torch_name of the primitive the
# function records (None: that one's, ExpBackward0 & co.)
_UNARY = {
    "exp": (np.exp, None), "log": (np.log, None),
    "log2": (np.log2, None), "log10": (np.log10, None),
    "log1p": (np.log1p, None), "expm1": (np.expm1, None),
    "sqrt": (np.sqrt, None), "rsqrt": (_rsqrt, "RsqrtBackward0"),
    "abs": (_abs, "AbsBackward0"), "neg": (np.negative, None),
    "sin": (np.sin, None), "cos": (np.cos, None),
    "tan": (np.tan, None), "sinh": (np.sinh, None),
    "cosh": (np.cosh, None), "tanh": (np.tanh, None),
    "asin": (np.arcsin, None), "acos": (np.arccos, None),
    "atan": (np.arctan, None), "sigmoid": (_sigmoid, None),
    "relu": (_relu, "ReluBackward0"), "floor": (np.floor, "FloorBackward0"),
    "ceil": (np.ceil, "CeilBackward0"), "round": (np.round, "RoundBackward0"),
    "trunc": (np.trunc, "TruncBackward0"), "sign": (_sign, "SignBackward0"),
    "square": (np.square, "PowBackward0"), "reciprocal": (np.reciprocal, "ReciprocalBackward0"),
}
def _zero_derivative(fn):
    """``fn`` (piecewise constant) with PyTorch's backward: an explicit zero gradient for
    the operand, which then flows on (0 / 0 further back is NaN in PyTorch too), rather
    than no gradient at all."""
    def op(x):
        return np.where(np.ones(np.shape(x), bool), fn(x), x)
    op.__name__ = fn.__name__
    return op


for _n in ("floor", "ceil", "round", "trunc", "sign"):
    _UNARY[_n] = (_zero_derivative(_UNARY[_n][0]), _UNARY[_n][1])
_UNARY["absolute"] = _UNARY["abs"]
_UNARY["negative"] = _UNARY["neg"]
_UNARY["arcsin"], _UNARY["arccos"], _UNARY["arctan"] = _UNARY["asin"], _UNARY["acos"], \
    _UNARY["atan"]


# these keep an integer or boolean dtype; the rest compute in the default float dtype
_EXACT = {_abs, np.negative, _relu, *(_UNARY[n][0] for n in
                                                   ("floor", "ceil", "round", "trunc", "sign"))}


def _clamp_bound(b, dtype):
    """A bound in ``dtype``; a Python number wraps into an integer dtype as PyTorch casts it
    (``-1`` is 255 for uint8), and stays a weak number for a floating one."""
    if isinstance(b, TensorBase):
        return cast(b._data, dtype)
    if b is not None and np.dtype(dtype).kind in "iub":
        return np.asarray(b).astype(dtype)
    return b


def _clamp_fn(lo, hi, x, what):
    """``clamp``'s NumPy code, in the dtype PyTorch gives ``x`` with the bounds (their
    ``result_type``: ``int_tensor.clamp(max=2.5)`` is float32)."""
    if lo is None and hi is None:
        if what != "clamp":
            raise TypeError(f"{what}() received an invalid combination of arguments - got "
                            f"(NoneType), but expected (Tensor {what[6:]}) or (Number {what[6:]})")
        raise _err("torch.clamp: At least one of 'min' or 'max' must not be None")
    dtype = result_type(x, lo, hi, default_float=default_dtype())
    if dtype == np.bool_ and not isinstance(lo, TensorBase) and not isinstance(hi, TensorBase):
        if what == "clamp" and (lo is None or hi is None):
            what = "clamp_min" if hi is None else "clamp_max"
        kernel = what + ("_scalar_cpu" if not isinstance(lo if lo is not None else hi, TensorBase)
                         else "_cpu")
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
    tensors = [b for b in (lo, hi) if isinstance(b, TensorBase)]
    if tensors:
        # tensor bounds are operands (``fn.operands``, passed after x): differentiated
        # and batched as x is (their concrete values would be constants)
        return _clamp_tensor_fn(lo, hi, dtype, tensors)
    lo, hi = (_clamp_bound(b, dtype) for b in (lo, hi))

    def fn(x):
        # PyTorch: min(max(x, lo), hi), the gradient where lo <= x <= hi (both ends
        # included, never at NaN)
        x = cast(x, dtype)
        y = x
        if lo is not None:
            y = np.where(y < lo, lo, y)
        if hi is not None:
            y = np.where(y > hi, hi, y)
        if isinstance(x, Tracer) and x.dtype.kind == "f":
            y = np.where(np.isnan(x), apply("stop_gradient", x), y)
        return y
    fn.operands = ()
    return fn


def _clamp_tensor_fn(lo, hi, dtype, tensors):
    """``clamp`` with tensor bounds, ``fn(x, *bounds)``: min(max(x, lo), hi) with torch's
    derivative (clamp_backward_min_max): x's where lo <= x <= hi; lo's where x < lo < hi;
    hi's where x > hi or hi < lo; none where lo == hi > x (nor at a NaN x)."""
    lo_t, hi_t = isinstance(lo, TensorBase), isinstance(hi, TensorBase)
    lo_c = None if lo_t else _clamp_bound(lo, dtype)
    hi_c = None if hi_t else _clamp_bound(hi, dtype)

    def fn(x, *bounds):
        x = cast(x, dtype)
        it = iter(bounds)
        lo_v = cast(next(it), dtype) if lo_t else lo_c
        hi_v = cast(next(it), dtype) if hi_t else hi_c
        value = x
        if lo_v is not None:
            value = np.where(value < lo_v, lo_v, value)
        if hi_v is not None:
            value = np.where(value > hi_v, hi_v, value)
        if not any(isinstance(v, Tracer) for v in (x, lo_v, hi_v)):
            return value
        keep = None
        y = apply("stop_gradient", value) if isinstance(value, Tracer) else value
        if hi_v is not None:
            above = ~(x <= hi_v)
            if lo_v is not None:
                above = above | (hi_v < lo_v)
            y = np.where(above, hi_v, y)
            keep = x <= hi_v
        if lo_v is not None:
            below = ~(x >= lo_v)
            if hi_v is not None:
                below = below & (lo_v < hi_v)
            y = np.where(below, lo_v, y)
            keep = (x >= lo_v) if keep is None else keep & (x >= lo_v)
        y = np.where(keep, x, y)
        if x.dtype.kind == "f":
            y = np.where(np.isnan(x), apply("stop_gradient", value) if isinstance(
                value, Tracer) else value, y)
        return y
    fn.operands = tuple(tensors)
    return fn


def _clamp_name(lo, hi):
    """PyTorch's: ``ClampBackward0`` for tensor bounds, ``ClampBackward1`` for numbers."""
    return "ClampBackward0" if isinstance(lo, TensorBase) or isinstance(hi, TensorBase) \
        else "ClampBackward1"


def _with_alpha(fn, other, alpha):
    if alpha == 1:
        return fn, other
    return (lambda a, b: fn(a, b * alpha)), other


def _maximum(a, b):
    """``np.maximum`` with PyTorch's derivative: half to each of tied operands, and the
    whole of it to both where one is NaN (the value is NaN there either way)."""
    return np.where(a > b, a, np.where(a < b, b, np.where(a == b, a * 0.5 + b * 0.5, a + b)))


def _minimum(a, b):
    return np.where(a < b, a, np.where(a > b, b, np.where(a == b, a * 0.5 + b * 0.5, a + b)))


def _negate(self):
    if self.dtype == np.bool_:
        raise _err("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                   "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    return call(np.negative, self)


def _matmul(a, b):
    _check_matmul(a, b)
    _check_product_dtypes(a, b)
    from .products import matmul as decomposed
    return decomposed(a, b)


def _fixed_rank(self, other, name, ranks, message, form):
    """``mm`` / ``bmm`` / ``mv``: one node, operands of the given ranks only."""
    other = _as_tensor(other, self)
    if (self.dim(), other.dim()) != ranks:
        raise _err(message)
    if ranks == (3, 3) and self.shape[0] != other.shape[0]:
        raise _err(f"Expected size for first two dimensions of batch2 tensor to be: "
                   f"[{self.shape[0]}, {self.shape[2]}] but got: "
                   f"[{other.shape[0]}, {other.shape[1]}].")
    _check_matmul(self, other)
    _check_product_dtypes(self, other, form)
    return call(np.matmul, self, other, name=name)


def _unary(self, key):
    """The unary function ``_UNARY[key]`` of ``self`` (integers computed in the default
    float dtype, except the functions that keep them)."""
    fn, name = _UNARY[key]
    if fn not in _EXACT and self.dtype.kind in "biu":
        self = self.to(default_dtype())
    return call(fn, self, name=name)


def _unary_(self, key):
    fn, name = _UNARY[key]
    return self._inplace(fn, name=name)


def _extremes(self, other, fn, plain, name, what):
    if not isinstance(other, TensorBase):
        raise TypeError(f"{what}(): argument 'other' (position 1) must be Tensor, not "
                        f"{type(other).__name__}")
    _check_broadcast(self, other)
    dtype = result_type(self, other, default_float=default_dtype())
    if dtype.kind == "c":
        raise _err(f"{what} not implemented for complex tensors.")
    floating = category(dtype) >= category(np.float32)
    return _elementwise(fn if floating else plain, self, other, name=name)


_UNSET = object()       # div's rounding_mode not given (None is given: DivBackward2)


def _rounded_div(self, other, rounding_mode):
    """``div(self, other, rounding_mode=...)`` for a given ``rounding_mode``."""
    if rounding_mode is None:
        out = self / other
    elif rounding_mode not in ("trunc", "floor"):
        raise _err("div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                   f"'{rounding_mode}'")
    elif rounding_mode == "floor":
        out = self // other
    else:
        dtype = result_type(self, other, default_float=default_dtype())
        if np.dtype(dtype).kind in "fc":
            out = (self / other).trunc()
        else:       # integers: the quotient rounded toward zero, exactly (no gradient)
            a = np.asarray(self._concrete("div"), dtype)
            b = np.asarray(other._concrete("div") if isinstance(other, TensorBase) else
                           np.asarray(other), dtype)
            if np.any(b == 0):
                raise _err("ZeroDivisionError")
            q = np.floor_divide(a, b)
            q = q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0))).astype(dtype)
            return self._plain(np.asarray(q, dtype))
    if out.grad_fn is not None:
        out.grad_fn._name = "DivBackward2"
    return out


class ArithmeticMethods:
    """``Tensor``'s arithmetic: operators, unary functions, comparisons, powers, products."""

    __slots__ = ()

    # -- binary operators ----------------------------------------------------------------
    # (the grad_fn of + - * /: the torch_name of the one primitive each records)
    def __add__(self, other):
        if FAST.get():
            out = _fast_binary(np.add, self, other, None, check=True)
            if out is not None:
                return out
        return _binary(self, other, np.add, None)

    # ``other + self``: PyTorch records it as ``self + other`` (its edges in that order)
    __radd__ = __add__

    def __sub__(self, other):
        if FAST.get() and not _is_bool(self) and not _is_bool(other):
            out = _fast_binary(np.subtract, self, other, None, check=True)
            if out is not None:
                return out
        _check_broadcast(self, other)
        return _subtract(self, other)

    def __rsub__(self, other):
        _check_broadcast(other, self)
        if _is_bool(self) or _is_bool(other):
            return _subtract(other, self)
        return _elementwise(lambda x, o: o - x, self, other, name="RsubBackward1")

    def __mul__(self, other):
        if FAST.get():
            out = _fast_binary(np.multiply, self, other, None, check=True)
            if out is not None:
                return out
        return _binary(self, other, np.multiply, None)

    __rmul__ = __mul__

    def __truediv__(self, other):
        if FAST.get():
            out = _fast_binary(_true_divide, self, other, None, check=True)
            if out is not None:
                return out
        return _binary(self, other, _true_divide, None)

    def __rtruediv__(self, other):
        # PyTorch computes ``number / t`` as ``reciprocal(t) * number``: the same rounding
        _check_broadcast(other, self)
        return self.reciprocal() * other

    def __floordiv__(self, other):
        _check_division(self, other, "div_floor_cpu")
        return _binary(self, other, np.floor_divide, None)

    def __rfloordiv__(self, other):
        _check_division(other, self, "div_floor_cpu")
        return _rbinary(self, other, np.floor_divide, None)

    def __mod__(self, other):
        _check_division(self, other, "remainder_cpu")
        return _remainder(self, other)

    def __rmod__(self, other):
        _check_division(other, self, "remainder_cpu")
        return _rbinary(self, other, np.remainder, "RemainderBackward1")

    def floor_divide(self, other):
        return self // other

    def remainder(self, other):
        return self % other

    def fmod(self, other):
        """C's remainder: the sign of the dividend (``remainder`` takes the divisor's)."""
        _check_broadcast(self, other)
        dtype = result_type(self, other, default_float=default_dtype())
        _no_kernel("fmod_cpu", dtype, "bc")
        if dtype.kind in "iu" and np.any(np.asarray(other._data if isinstance(other, TensorBase)
                                                    else other) == 0):
            raise _err("ZeroDivisionError")
        return _elementwise(_fmod, self, other, name="FmodBackward1"
                            if isinstance(other, TensorBase) else "FmodBackward0")

    def __and__(self, other):
        return _bitwise(self, other, np.logical_and, np.bitwise_and, "bitwise_and")

    def __rand__(self, other):
        return _bitwise(other, self, np.logical_and, np.bitwise_and, "bitwise_and")

    def __or__(self, other):
        return _bitwise(self, other, np.logical_or, np.bitwise_or, "bitwise_or")

    def __ror__(self, other):
        return _bitwise(other, self, np.logical_or, np.bitwise_or, "bitwise_or")

    def __xor__(self, other):
        return _bitwise(self, other, np.logical_xor, np.bitwise_xor, "bitwise_xor")

    def __rxor__(self, other):
        return _bitwise(other, self, np.logical_xor, np.bitwise_xor, "bitwise_xor")

    # -- comparisons ---------------------------------------------------------------------
    def __lt__(self, other):
        return _compare(self, other, np.less)

    def __le__(self, other):
        return _compare(self, other, np.less_equal)

    def __gt__(self, other):
        return _compare(self, other, np.greater)

    def __ge__(self, other):
        return _compare(self, other, np.greater_equal)

    def __eq__(self, other):
        return _compare(self, other, np.equal)

    def __ne__(self, other):
        return _compare(self, other, np.not_equal)

    lt, le, gt, ge, eq, ne = __lt__, __le__, __gt__, __ge__, __eq__, __ne__
    __hash__ = object.__hash__      # (defining __eq__ would make tensors unhashable)

    # -- powers ----------------------------------------------------------------------------
    def __pow__(self, exponent):
        if FAST.get() and (type(exponent) is int or type(exponent) is float) and \
                type(self._data) is np.ndarray and \
                self._data.dtype.kind == "f":
            # a floating tensor to a Python number's power: one ufunc (what _power comes to).
            # (The square stays a power, NumPy's x * x: recorded as a product of x with
            # itself, its gradient would be two terms g x + g x summed with x's other
            # cotangents, where PyTorch's and a compiled step's is one, g (2 x).)
            if exponent == 3 or exponent == -2 or exponent in _BY_PRODUCTS:
                out = _fast_binary(_power, self, exponent, "PowBackward0")
            else:
                out = _fast_binary(np.power, self, exponent, "PowBackward0")
            if out is not None:
                return out
        _check_broadcast(self, exponent)
        _check_pow(self, exponent)
        name = "PowBackward1" if isinstance(exponent, TensorBase) else "PowBackward0"
        return _elementwise(_power, self, exponent, name=name)

    def __rpow__(self, base):
        _check_pow(base, self)
        return _elementwise(_power, base, self, name="PowBackward2" if not isinstance(
            base, TensorBase) else "PowBackward1")

    def pow(self, exponent):
        return self ** exponent

    # PyTorch's square is pow(x, 2): bool and integer tensors square to int64 (NumPy: int8)
    def square(self):
        return self ** 2

    def square_(self):
        return self.pow_(2)

    # -- unary -------------------------------------------------------------------------------
    def __neg__(self):
        return _negate(self)

    def neg(self):
        return _negate(self)

    def neg_(self):
        if self.dtype == np.bool_:
            _negate(self)                   # PyTorch's error
        return _unary_(self, "neg")

    negative, negative_ = neg, neg_

    def __pos__(self):
        return self

    def __abs__(self):
        return self.abs()

    def __invert__(self):
        return call(np.logical_not, self) if self.dtype == bool else call(np.invert, self)

    def exp(self):
        return _unary(self, "exp")

    def exp_(self):
        return _unary_(self, "exp")

    def log(self):
        return _unary(self, "log")

    def log_(self):
        return _unary_(self, "log")

    def log2(self):
        return _unary(self, "log2")

    def log2_(self):
        return _unary_(self, "log2")

    def log10(self):
        return _unary(self, "log10")

    def log10_(self):
        return _unary_(self, "log10")

    def log1p(self):
        return _unary(self, "log1p")

    def log1p_(self):
        return _unary_(self, "log1p")

    def expm1(self):
        return _unary(self, "expm1")

    def expm1_(self):
        return _unary_(self, "expm1")

    def sqrt(self):
        return _unary(self, "sqrt")

    def sqrt_(self):
        return _unary_(self, "sqrt")

    def rsqrt(self):
        return _unary(self, "rsqrt")

    def rsqrt_(self):
        return _unary_(self, "rsqrt")

    def abs(self):
        return _unary(self, "abs")

    def abs_(self):
        return _unary_(self, "abs")

    absolute, absolute_ = abs, abs_  # noqa: A003  (the method)

    def sin(self):
        return _unary(self, "sin")

    def sin_(self):
        return _unary_(self, "sin")

    def cos(self):
        return _unary(self, "cos")

    def cos_(self):
        return _unary_(self, "cos")

    def tan(self):
        return _unary(self, "tan")

    def tan_(self):
        return _unary_(self, "tan")

    def sinh(self):
        return _unary(self, "sinh")

    def sinh_(self):
        return _unary_(self, "sinh")

    def cosh(self):
        return _unary(self, "cosh")

    def cosh_(self):
        return _unary_(self, "cosh")

    def tanh(self):
        return _unary(self, "tanh")

    def tanh_(self):
        return _unary_(self, "tanh")

    def asin(self):
        return _unary(self, "asin")

    def asin_(self):
        return _unary_(self, "asin")

    arcsin, arcsin_ = asin, asin_

    def acos(self):
        return _unary(self, "acos")

    def acos_(self):
        return _unary_(self, "acos")

    arccos, arccos_ = acos, acos_

    def atan(self):
        return _unary(self, "atan")

    def atan_(self):
        return _unary_(self, "atan")

    arctan, arctan_ = atan, atan_

    def sigmoid(self):
        return _unary(self, "sigmoid")

    def sigmoid_(self):
        return _unary_(self, "sigmoid")

    def relu(self):
        return _unary(self, "relu")

    def relu_(self):
        return _unary_(self, "relu")

    def floor(self):
        return _unary(self, "floor")

    def floor_(self):
        return _unary_(self, "floor")

    def ceil(self):
        return _unary(self, "ceil")

    def ceil_(self):
        return _unary_(self, "ceil")

    def round(self):
        return _unary(self, "round")

    def round_(self):
        return _unary_(self, "round")

    def trunc(self):
        return _unary(self, "trunc")

    def trunc_(self):
        return _unary_(self, "trunc")

    def sign(self):
        return _unary(self, "sign")

    def sign_(self):
        return _unary_(self, "sign")

    def reciprocal(self):
        return _unary(self, "reciprocal")

    def reciprocal_(self):
        return _unary_(self, "reciprocal")

    # -- products --------------------------------------------------------------------------
    def matmul(self, other):
        return _matmul(self, _as_tensor(other, self))

    __matmul__ = matmul

    def __rmatmul__(self, other):
        return _matmul(_as_tensor(other, self), self)

    def mm(self, other):
        return _fixed_rank(self, other, None, (2, 2), "self must be a matrix", "mm")

    def bmm(self, other):
        return _fixed_rank(self, other, "BmmBackward0", (3, 3), "batch1 must be a 3D tensor",
                           "bmm")

    def mv(self, other):
        return _fixed_rank(self, other, "MvBackward0", (2, 1),
                           "vector + matrix @ vector expected", "mv")

    def dot(self, other):
        if len(_shape(self)) != 1 or len(_shape(other)) != 1:
            raise _err(f"1D tensors expected, but got {len(_shape(self))}D and "
                       f"{len(_shape(other))}D tensors")
        return self.matmul(other)

    # -- clamp ---------------------------------------------------------------------------
    def clamp(self, min=None, max=None):
        if min is None and max is None:
            raise _err("torch.clamp: At least one of 'min' or 'max' must not be None")
        fn = _clamp_fn(min, max, self, "clamp")
        return call(fn, self, *fn.operands, name=_clamp_name(min, max))

    def clamp_(self, min=None, max=None):
        fn = _clamp_fn(min, max, self, "clamp")
        return self._inplace(fn, *fn.operands, name=_clamp_name(min, max))

    clip, clip_ = clamp, clamp_

    def clamp_min(self, min):
        fn = _clamp_fn(min, None, self, "clamp_min")
        return call(fn, self, *fn.operands,
                    name="ClampMinBackward1" if isinstance(min, TensorBase) else
                    "ClampMinBackward0")

    def clamp_max(self, max):
        fn = _clamp_fn(None, max, self, "clamp_max")
        return call(fn, self, *fn.operands,
                    name="ClampMaxBackward1" if isinstance(max, TensorBase) else
                    "ClampMaxBackward0")

    # -- named arithmetic ------------------------------------------------------------------
    def add(self, other, alpha=1):
        _check_broadcast(self, other)
        fn, other = _with_alpha(np.add, other, alpha)
        return _elementwise(fn, self, other)

    def sub(self, other, alpha=1):
        _check_broadcast(self, other)
        if _is_bool(self) or _is_bool(other):
            return _subtract(self, other)
        fn, other = _with_alpha(np.subtract, other, alpha)
        return _elementwise(fn, self, other)

    subtract = sub

    def mul(self, other):
        return self * other

    multiply = mul

    def div(self, other, *, rounding_mode=_UNSET):
        """``self / other``; ``rounding_mode='trunc'`` rounds toward zero, ``'floor'`` down
        (integers stay integers); the rounded forms have a zero gradient, as torch's. Given
        at all (None too), ``rounding_mode`` makes the node torch's ``DivBackward2``."""
        if rounding_mode is _UNSET:
            return self / other
        return _rounded_div(self, other, rounding_mode)

    divide = div

    def true_divide(self, other):
        return self / other

    def maximum(self, other):
        return _extremes(self, other, _maximum, np.maximum, "MaximumBackward0", "maximum")

    def minimum(self, other):
        return _extremes(self, other, _minimum, np.minimum, "MinimumBackward0", "minimum")
