"""Tensor arithmetic, reductions, shape operations and their in-place forms.

Each operation is NumPy code handed to ``dispatch.call`` with PyTorch's name for its
backward node; composite ones (``sigmoid``, ``logsumexp``, ``std``) are several primitives
on the tape under one ``grad_fn`` name, as PyTorch shows them.
"""
from __future__ import annotations

import builtins
import contextvars
from collections import namedtuple

import numpy as np

from ..ir import REGISTRY, apply
from ..tracer import Tracer
from ..tracer import user_src as _user_src
from ..tracer import where as _at_user_line
from ..tracer.numpy_api import DIRECT as _DIRECT
from . import dispatch as _dispatch
from .aliasing import overlapping as _overlapping
from .device import CPU as _CPU
from .device import is_device as _is_device
from .device import resolve as _resolve
from .dispatch import call
from .grad_mode import is_grad_enabled as _grad_enabled
from .indexing import getitem_name, is_basic
from .products import is_contiguous
from .profiler import current as _profiling
from .promotion import cast, category, promoted, result_type
from .random import draw_dtype
from .tape import TAPE, EagerTracer, Version
from .tensor import Tensor, _index_key, _kind_rank, _private_copy, _scalar_name, default_dtype

MinMax = namedtuple("MinMax", ["values", "indices"])


def _err(message):
    """PyTorch's wording, and the user's line it happened at."""
    return RuntimeError(message + _at_user_line())


def _as_tensor(x):
    return x if isinstance(x, Tensor) else Tensor._plain(np.asarray(x))


def _shape(x):
    return tuple(x.shape) if isinstance(x, Tensor) else np.shape(x)


def _check_broadcast(a, b):
    ta, tb = type(a), type(b)
    if tb in _NUMBERS or ta in _NUMBERS:
        return
    if ta is Tensor and tb is Tensor and type(a._data) is np.ndarray and \
            type(b._data) is np.ndarray:
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


def _elementwise(fn, *operands, name=None):
    """``fn`` on the operands converted to PyTorch's result dtype (see promotion.py)."""
    if len(operands) == 2 and FAST.get():
        out = _fast_binary(fn, operands[0], operands[1], name)
        if out is not None:
            return out
    dtype = result_type(*operands, default_float=default_dtype())
    if fn is _true_divide and category(dtype) < category(np.float32):
        dtype = default_dtype()             # integer division gives the default float
    return call(promoted(fn, dtype), *operands, name=name)


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
    if ta is Tensor:
        va, tr = a._data, a._tracer
        if type(va) is not np.ndarray or (tr is not None and type(tr) is not EagerTracer):
            return None
        ka, ga = (va.dtype, va.ndim == 0), tr is not None or a._requires_grad
    elif ta in _NUMBERS:
        va, ka, ga = a, ta, False
    else:
        return None
    if tb is Tensor:
        vb, tr = b._data, b._tracer
        if type(vb) is not np.ndarray or (tr is not None and type(tr) is not EagerTracer):
            return None
        kb, gb = (vb.dtype, vb.ndim == 0), tr is not None or b._requires_grad
    elif tb in _NUMBERS:
        vb, kb, gb = b, tb, False
    else:
        return None
    if _profiling() is not None:
        return None
    if check and ta is Tensor and tb is Tensor and va.shape != vb.shape:
        _check_broadcast(a, b)
    default = default_dtype()
    key = (ka, kb, default, fn is _true_divide)
    dtype = _RESULT_TYPES.get(key)
    if dtype is None:
        dtype = result_type(a, b, default_float=default)
        if fn is _true_divide and category(dtype) < category(np.float32):
            dtype = default
        _RESULT_TYPES[key] = dtype
    if (ga or gb) and _grad_enabled():
        return _record_binary(fn, a, b, ta is Tensor, tb is Tensor, dtype, name)
    out = fn(va if ta is not Tensor or va.dtype == dtype else va.astype(dtype),
             vb if tb is not Tensor or vb.dtype == dtype else vb.astype(dtype))
    if type(out) is np.ndarray and out.base is None and out is not va and out is not vb:
        return Tensor._plain(out)       # a new array of its own: what _owned + _wrap give
    return _dispatch._wrap(_dispatch._owned(out, [va, vb]), Tensor, None, None, None)


def _promotion_key(x):
    t = type(x)
    if t is Tensor:
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


def _record_binary(fn, a, b, a_tensor, b_tensor, dtype, name):
    """``_fast_binary`` when an operand requires grad: ``dispatch._call``'s recording."""
    if a_tensor and b_tensor:
        prim = _ONE_PRIMITIVE.get(fn)
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
                return Tensor._recorded(out)
    outer = TAPE.src
    if outer is None:
        TAPE.src = _user_src(3)     # (above _fast_binary and the operation that called it)
    try:
        ia = a._traced() if a_tensor else a
        ib = b._traced() if b_tensor else b
        ca = ia if not a_tensor or ia._dtype == dtype else cast(ia, dtype)
        cb = ib if not b_tensor or ib._dtype == dtype else cast(ib, dtype)
        prim = _ONE_PRIMITIVE.get(fn)
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
            return _dispatch._from_tracer(out, Tensor, name, ins, None)
        # _from_tracer's steps for a new node
        handle = out._handle
        handle._name = name
        if not (direct and ia._dtype.kind in "fc" and ib._dtype.kind in "fc"):
            # (else the node's parents are the operands: those are its edges)
            inputs = _dispatch.edges(name, ins)
            if inputs != handle._parents:
                handle._inputs = inputs
        return Tensor._recorded(out)
    out = _dispatch._owned(out, [i._value for i in ins if isinstance(i, EagerTracer)])
    return _dispatch._wrap(out, Tensor, name, ins, None)


def _binary(fn, name):
    def op(self, other):
        if FAST.get():
            out = _fast_binary(fn, self, other, name, check=True)
            if out is not None:
                return out
        _check_broadcast(self, other)
        return _elementwise(fn, self, other, name=name)

    def rop(self, other):
        _check_broadcast(other, self)
        return _elementwise(fn, other, self, name=name)
    return op, rop


def _true_divide(a, b):
    return np.true_divide(a, b)


# the operations that are one primitive on tape tracers (EagerTracer.__array_ufunc__)
_ONE_PRIMITIVE = {np.add: _DIRECT[np.add], np.subtract: _DIRECT[np.subtract],
                  np.multiply: _DIRECT[np.multiply], _true_divide: _DIRECT[np.true_divide],
                  np.power: _DIRECT[np.power]}


def _is_bool(x):
    if type(x) is Tensor and type(x._data) is np.ndarray:
        return x._data.dtype.kind == "b"
    return (x.dtype == np.bool_) if isinstance(x, Tensor) else isinstance(x, (bool, np.bool_))


def _subtract(a, b):
    if _is_bool(a) or _is_bool(b):
        raise _err("Subtraction, the `-` operator, with a bool tensor is not supported. If you "
                   "are trying to invert a mask, use the `~` or `logical_not()` operator "
                   "instead.")
    return _elementwise(np.subtract, a, b, name="SubBackward0")


def _sub_op(self, other):
    if FAST.get() and not _is_bool(self) and not _is_bool(other):
        out = _fast_binary(np.subtract, self, other, "SubBackward0", check=True)
        if out is not None:
            return out
    _check_broadcast(self, other)
    return _subtract(self, other)


def _rsub_op(self, other):
    _check_broadcast(other, self)
    if _is_bool(self) or _is_bool(other):
        return _subtract(other, self)
    return _elementwise(lambda x, o: o - x, self, other, name="RsubBackward1")


def _commuted(fn, name):
    """``other + self``: PyTorch records it as ``self + other`` (its edges in that order)."""
    op, _ = _binary(fn, name)
    return op, op


def _rtruediv(self, other):
    # PyTorch computes ``number / t`` as ``reciprocal(t) * number``: the same rounding
    _check_broadcast(other, self)
    return self.reciprocal() * other


def _bitwise(logical, bitwise, what):
    def fn(a, b):
        _check_broadcast(a, b)
        for x in (a, b):
            if isinstance(x, Tensor) and x.dtype.kind in "fc" or isinstance(x, float):
                kind = "Float" if isinstance(x, Tensor) and x.dtype == np.float32 else "Double"
                raise NotImplementedError(f'"{what}_cpu" not implemented for \'{kind}\'')
        return _elementwise(logical if _is_bool(a) and _is_bool(b) else bitwise, a, b)
    return (lambda self, other: fn(self, other)), (lambda self, other: fn(other, self))


def _remainder(self, other):
    _check_broadcast(self, other)
    return _elementwise(np.remainder, self, other, name="RemainderBackward1"
                        if isinstance(other, Tensor) else "RemainderBackward0")


Tensor.__add__, Tensor.__radd__ = _commuted(np.add, "AddBackward0")
Tensor.__sub__, Tensor.__rsub__ = _sub_op, _rsub_op
Tensor.__mul__, Tensor.__rmul__ = _commuted(np.multiply, "MulBackward0")
Tensor.__truediv__, _ = _binary(_true_divide, "DivBackward0")
Tensor.__rtruediv__ = _rtruediv
def _no_kernel(kernel, dtype, kinds):
    """PyTorch's error for an operation with no kernel for ``dtype`` (kinds ``b``/``c``)."""
    if np.dtype(dtype).kind in kinds:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_scalar_name(dtype)}\'')


def _integer_division(op):
    """An integer division by zero raises, as in PyTorch (NumPy gives 0 and a warning)."""
    def checked(self, other):
        a, b = (self, other) if op.__name__.startswith("__") else (other, self)
        dtype = result_type(a, b, default_float=default_dtype())
        _no_kernel("div_floor_cpu" if "floordiv" in op.__name__ or op.__name__ == "rf"
                   else "remainder_cpu", dtype, "bc")
        divisor = b._data if isinstance(b, Tensor) else np.asarray(b)
        if category(dtype) == category(np.int64) and divisor is not None and \
                np.any(divisor == 0):
            raise _err("ZeroDivisionError")
        return op(self, other)
    return checked


_fdiv, _rfdiv = _binary(np.floor_divide, "FloorDivideBackward0")
_fdiv.__name__, _rfdiv.__name__ = "__floordiv__", "rf"
_rmod = _binary(np.remainder, "RemainderBackward1")[1]
_rmod.__name__ = "rm"
_remainder.__name__ = "__mod__"
Tensor.__floordiv__, Tensor.__rfloordiv__ = _integer_division(_fdiv), _integer_division(_rfdiv)
Tensor.__mod__, Tensor.__rmod__ = _integer_division(_remainder), _integer_division(_rmod)
Tensor.floor_divide = lambda self, other: self // other
Tensor.remainder = lambda self, other: self % other


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


def fmod(self, other):
    """C's remainder: the sign of the dividend (``remainder`` takes the divisor's)."""
    _check_broadcast(self, other)
    dtype = result_type(self, other, default_float=default_dtype())
    _no_kernel("fmod_cpu", dtype, "bc")
    if dtype.kind in "iu" and np.any(np.asarray(other._data if isinstance(other, Tensor)
                                                else other) == 0):
        raise _err("ZeroDivisionError")
    return _elementwise(_fmod, self, other, name="FmodBackward1"
                        if isinstance(other, Tensor) else "FmodBackward0")


Tensor.fmod = fmod
Tensor.__and__, Tensor.__rand__ = _bitwise(np.logical_and, np.bitwise_and, "bitwise_and")
Tensor.__or__, Tensor.__ror__ = _bitwise(np.logical_or, np.bitwise_or, "bitwise_or")
Tensor.__xor__, Tensor.__rxor__ = _bitwise(np.logical_xor, np.bitwise_xor, "bitwise_xor")


_ORDER = {np.less: "lt_cpu", np.less_equal: "le_cpu", np.greater: "gt_cpu",
          np.greater_equal: "ge_cpu"}


def _cmp(fn):
    def op(self, other):
        if other is None:
            return NotImplemented
        _check_broadcast(self, other)
        if fn in _ORDER:
            _no_kernel(_ORDER[fn], result_type(self, other, default_float=default_dtype()), "c")
        return _elementwise(fn, self, other)
    return op


Tensor.__lt__, Tensor.__le__ = _cmp(np.less), _cmp(np.less_equal)
Tensor.__gt__, Tensor.__ge__ = _cmp(np.greater), _cmp(np.greater_equal)
Tensor.__eq__, Tensor.__ne__ = _cmp(np.equal), _cmp(np.not_equal)
Tensor.__hash__ = object.__hash__


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
    return np.power(a, b)


def _check_pow(base, exponent):
    dtype = _cached_result_type(base, exponent)
    if isinstance(exponent, Tensor):
        _no_kernel("pow", dtype, "b")
    if dtype.kind in "iu" and not isinstance(exponent, Tensor):
        if np.any(np.asarray(exponent) < 0):
            raise _err("Integers to negative integer powers are not allowed.")


def __pow__(self, exponent):
    if FAST.get() and (type(exponent) is int or type(exponent) is float) and \
            type(self) is Tensor and type(self._data) is np.ndarray and \
            self._data.dtype.kind == "f":
        # a floating tensor to a Python number's power: one ufunc (what _power comes to);
        # the square as x * x, which NumPy's power computes for it too (the same values,
        # and the gradient 2 * x * g is two products instead of pow's general rule)
        if exponent == 2:
            out = _fast_binary(np.multiply, self, self, "PowBackward0")
            if out is not None and out._tracer is not None:
                handle = out._tracer._handle
                handle._inputs = handle._parents[:1]    # PowBackward0's one edge
        elif exponent == 3 or exponent == -2:
            out = _fast_binary(_power, self, exponent, "PowBackward0")
        else:
            out = _fast_binary(np.power, self, exponent, "PowBackward0")
        if out is not None:
            return out
    _check_broadcast(self, exponent)
    _check_pow(self, exponent)
    name = "PowBackward1" if isinstance(exponent, Tensor) else "PowBackward0"
    return _elementwise(_power, self, exponent, name=name)


def __rpow__(self, base):
    _check_pow(base, self)
    return _elementwise(_power, base, self, name="PowBackward2" if not isinstance(
        base, Tensor) else "PowBackward1")


Tensor.__pow__, Tensor.__rpow__ = __pow__, __rpow__

def _negate(self):
    if self.dtype == np.bool_:
        raise _err("Negation, the `-` operator, on a bool tensor is not supported. If you are "
                   "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    return call(np.negative, self, name="NegBackward0")


Tensor.__neg__ = _negate
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: self.abs()
Tensor.__invert__ = lambda self: call(np.logical_not, self) if self.dtype == bool else \
    call(np.invert, self)


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


def matmul(self, other):
    _check_matmul(self, other)
    _check_product_dtypes(self, other)
    from .products import matmul as decomposed
    return decomposed(self, _as_tensor(other))


def __rmatmul__(self, other):
    _check_matmul(other, self)
    _check_product_dtypes(other, self)
    from .products import matmul as decomposed
    return decomposed(_as_tensor(other), self)


def _fixed_rank(name, ranks, message, form):
    """``mm`` / ``bmm`` / ``mv``: one node, operands of the given ranks only."""
    def op(self, other):
        other = _as_tensor(other)
        if (self.dim(), other.dim()) != ranks:
            raise _err(message)
        if ranks == (3, 3) and self.shape[0] != other.shape[0]:
            raise _err(f"Expected size for first two dimensions of batch2 tensor to be: "
                       f"[{self.shape[0]}, {self.shape[2]}] but got: "
                       f"[{other.shape[0]}, {other.shape[1]}].")
        _check_matmul(self, other)
        _check_product_dtypes(self, other, form)
        return call(np.matmul, self, other, name=name)
    return op


Tensor.__matmul__ = Tensor.matmul = matmul
Tensor.mm = _fixed_rank("MmBackward0", (2, 2), "self must be a matrix", "mm")
Tensor.bmm = _fixed_rank("BmmBackward0", (3, 3), "batch1 must be a 3D tensor", "bmm")
Tensor.mv = _fixed_rank("MvBackward0", (2, 1), "vector + matrix @ vector expected", "mv")
Tensor.__rmatmul__ = __rmatmul__


def dot(self, other):
    if len(_shape(self)) != 1 or len(_shape(other)) != 1:
        raise _err(f"1D tensors expected, but got {len(_shape(self))}D and "
                           f"{len(_shape(other))}D tensors")
    return matmul(self, other)


Tensor.dot = dot


# -- unary ---------------------------------------------------------------------------
def _sigmoid(x):
    # tanh form: no overflow for large |x|, unlike 1 / (1 + exp(-x))
    return 0.5 * np.tanh(0.5 * x) + 0.5


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


_UNARY = {
    "exp": (np.exp, "ExpBackward0"), "log": (np.log, "LogBackward0"),
    "log2": (np.log2, "Log2Backward0"), "log10": (np.log10, "Log10Backward0"),
    "log1p": (np.log1p, "Log1PBackward0"), "expm1": (np.expm1, "Expm1Backward0"),
    "sqrt": (np.sqrt, "SqrtBackward0"), "rsqrt": (_rsqrt, "RsqrtBackward0"),
    "abs": (_abs, "AbsBackward0"), "neg": (np.negative, "NegBackward0"),
    "sin": (np.sin, "SinBackward0"), "cos": (np.cos, "CosBackward0"),
    "tan": (np.tan, "TanBackward0"), "sinh": (np.sinh, "SinhBackward0"),
    "cosh": (np.cosh, "CoshBackward0"), "tanh": (np.tanh, "TanhBackward0"),
    "asin": (np.arcsin, "AsinBackward0"), "acos": (np.arccos, "AcosBackward0"),
    "atan": (np.arctan, "AtanBackward0"), "sigmoid": (_sigmoid, "SigmoidBackward0"),
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


def _unary(fn, name):
    def op(self):
        if fn is np.negative:
            return _negate(self)
        if fn not in _EXACT and self.dtype.kind in "biu":
            self = self.to(default_dtype())
        return call(fn, self, name=name)

    def op_(self):
        if fn is np.negative and self.dtype == np.bool_:
            _negate(self)                   # PyTorch's error
        return self._inplace(fn, name=name)
    return op, op_


for _n, (_fn, _name) in _UNARY.items():
    _op, _op_ = _unary(_fn, _name)
    _op.__name__, _op_.__name__ = _n, _n + "_"
    setattr(Tensor, _n, _op)
    setattr(Tensor, _n + "_", _op_)


# PyTorch's square is pow(x, 2): bool and integer tensors square to int64 (NumPy: int8)
Tensor.square = lambda self: self ** 2
Tensor.square_ = lambda self: self.pow_(2)


def clamp(self, min=None, max=None):
    if min is None and max is None:
        raise _err("torch.clamp: At least one of 'min' or 'max' must not be None")
    return call(_clamp_fn(min, max, self, "clamp"), self, name="ClampBackward1")


def _clamp_bound(b, dtype):
    """A bound in ``dtype``; a Python number wraps into an integer dtype as PyTorch casts it
    (``-1`` is 255 for uint8), and stays a weak number for a floating one."""
    if isinstance(b, Tensor):
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
    if dtype == np.bool_ and not isinstance(lo, Tensor) and not isinstance(hi, Tensor):
        if what == "clamp" and (lo is None or hi is None):
            what = "clamp_min" if hi is None else "clamp_max"
        kernel = what + ("_scalar_cpu" if not isinstance(lo if lo is not None else hi, Tensor)
                         else "_cpu")
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')
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
    return fn


Tensor.clamp = Tensor.clip = clamp
Tensor.clamp_ = Tensor.clip_ = lambda self, min=None, max=None: self._inplace(
    _clamp_fn(min, max, self, "clamp"), name="ClampBackward1")
Tensor.clamp_min = lambda self, min: call(_clamp_fn(min, None, self, "clamp_min"), self,
                                          name="ClampMinBackward0")
Tensor.clamp_max = lambda self, max: call(_clamp_fn(None, max, self, "clamp_max"), self,
                                          name="ClampMaxBackward0")


def pow(self, exponent):
    return self ** exponent


Tensor.pow = pow


def _with_alpha(fn, other, alpha):
    if alpha == 1:
        return fn, other
    return (lambda a, b: fn(a, b * alpha)), other


def add(self, other, alpha=1):
    _check_broadcast(self, other)
    fn, other = _with_alpha(np.add, other, alpha)
    return _elementwise(fn, self, other, name="AddBackward0")


def sub(self, other, alpha=1):
    _check_broadcast(self, other)
    if _is_bool(self) or _is_bool(other):
        return _subtract(self, other)
    fn, other = _with_alpha(np.subtract, other, alpha)
    return _elementwise(fn, self, other, name="SubBackward0")


Tensor.add, Tensor.sub = add, sub
Tensor.subtract = sub
Tensor.mul = Tensor.multiply = lambda self, other: self * other
Tensor.div = Tensor.divide = Tensor.true_divide = lambda self, other: self / other
def _maximum(a, b):
    """``np.maximum`` with PyTorch's derivative: half to each of tied operands, and the
    whole of it to both where one is NaN (the value is NaN there either way)."""
    return np.where(a > b, a, np.where(a < b, b, np.where(a == b, a * 0.5 + b * 0.5, a + b)))


def _minimum(a, b):
    return np.where(a < b, a, np.where(a > b, b, np.where(a == b, a * 0.5 + b * 0.5, a + b)))


def _extremes(fn, plain, name, what):
    def op(self, other):
        if not isinstance(other, Tensor):
            raise TypeError(f"{what}(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(other).__name__}")
        _check_broadcast(self, other)
        dtype = result_type(self, other, default_float=default_dtype())
        if dtype.kind == "c":
            raise _err(f"{what} not implemented for complex tensors.")
        floating = category(dtype) >= category(np.float32)
        return _elementwise(fn if floating else plain, self, other, name=name)
    return op


Tensor.maximum = _extremes(_maximum, np.maximum, "MaximumBackward0", "maximum")
Tensor.minimum = _extremes(_minimum, np.minimum, "MinimumBackward0", "minimum")
Tensor.eq, Tensor.ne = Tensor.__eq__, Tensor.__ne__
Tensor.lt, Tensor.le, Tensor.gt, Tensor.ge = (Tensor.__lt__, Tensor.__le__, Tensor.__gt__,
                                              Tensor.__ge__)


# -- in place --------------------------------------------------------------------------
def _inplace_binary(fn, name):
    def op_(self, other, alpha=1):
        fast = alpha == 1 and FAST.get() and not _grad_enabled()
        if fast and type(self) is Tensor and type(self._data) is np.ndarray and \
                self._data.dtype.kind in "fc" and (
                    type(other) is float or type(other) is int or type(other) is Tensor and
                    type(other._data) is np.ndarray and other._data.dtype.kind in "fc"):
            # floating operands: no bool error to raise first
            done = _fast_inplace(self, other, fn)
            if done is not None:
                return done
            fast = False        # it declined (another shape, a read-only array)
        _check_broadcast(self, other)
        if fn is np.subtract and (_is_bool(self) or _is_bool(other)):
            _subtract(self, other)          # PyTorch's error
        if fast:
            done = _fast_inplace(self, other, fn)
            if done is not None:
                return done
        f, other = _with_alpha(fn, other, alpha)
        data, to = self._data, type(other)
        if type(data) is np.ndarray and (to in _NUMBERS or to is Tensor and type(
                other._data) is np.ndarray and other._data.shape == data.shape):
            pass        # a number, or a tensor of the same shape: the shape stays
        elif tuple(np.broadcast_shapes(_shape(self), _shape(other))) != tuple(self.shape):
            raise _err(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(np.broadcast_shapes(_shape(self), _shape(other)))}")
        return self._inplace(f, other, name=name,
                             reads_self=fn in (np.multiply, np.true_divide, _power))
    return op_


def _fast_inplace(self, other, fn):
    """``Tensor._inplace``'s steps for ``self op= other`` under no_grad, on a concrete
    tensor and a tensor of the same shape or a Python number; None when they do not
    apply. (No history is recorded there, and no in-place check can fail.)"""
    data, to = self._data, type(other)
    st = self._tracer
    if type(data) is not np.ndarray or (st is not None and type(st) is not EagerTracer):
        return None
    if to is Tensor:
        value = other._data
        ot = other._tracer
        if type(value) is not np.ndarray or value.shape != data.shape or (
                ot is not None and type(ot) is not EagerTracer):
            return None
    elif to is float or to is int:
        value = other
    else:
        return None
    if not data.flags.writeable or _overlapping(data):
        return None                     # _inplace's error
    if data.dtype.kind == "f" and (to is float or to is Tensor and value.dtype == data.dtype) and (
            fn is np.add or fn is np.subtract or fn is np.multiply):
        fn(data, value, out=data)       # the result is the tensor's dtype: written in place
        self._vc.v += 1
        return self
    new = fn(data, value)
    if type(new) is not np.ndarray:
        new = np.asarray(new)
    if new.dtype != data.dtype and _kind_rank(new.dtype) > _kind_rank(data.dtype):
        raise RuntimeError(f"result type {_scalar_name(new.dtype)} can't be cast to the "
                           f"desired output type {_scalar_name(data.dtype)}")
    np.copyto(data, new, casting="unsafe")
    self._vc.v += 1
    return self


Tensor.add_ = _inplace_binary(np.add, "AddBackward0")
Tensor.sub_ = _inplace_binary(np.subtract, "SubBackward0")
Tensor.mul_ = _inplace_binary(np.multiply, "MulBackward0")
Tensor.div_ = _inplace_binary(np.true_divide, "DivBackward0")
_pow_scalar, _pow_tensor = (_inplace_binary(_power, "PowBackward0"),
                            _inplace_binary(_power, "PowBackward1"))
def pow_(self, other):
    _check_pow(self, other)
    return (_pow_tensor if isinstance(other, Tensor) else _pow_scalar)(self, other)


Tensor.pow_ = pow_
Tensor.__iadd__ = lambda self, other: Tensor.add_(self, other)
Tensor.__isub__ = lambda self, other: Tensor.sub_(self, other)
Tensor.__imul__ = lambda self, other: Tensor.mul_(self, other)
Tensor.__itruediv__ = lambda self, other: Tensor.div_(self, other)
Tensor.__ipow__ = lambda self, other: Tensor.pow_(self, other)


def _overwrite(x, v):
    """``v`` everywhere, as a node of ``x``: its derivative for ``x`` is an exact zero (not
    ``0 * g``, NaN where ``g`` is infinite) and an infinite ``x`` gives no NaN (``x * 0``)."""
    return np.where(np.ones(tuple(x.shape), bool), v, x)


def zero_(self):
    return self._inplace(lambda x: _overwrite(x, np.zeros((), x.dtype)), name="ZeroBackward0",
                         reads_self=False, cast=True, fills=True) \
        if self.requires_grad else _fill_plain(self, 0)


def fill_(self, value):
    if self.requires_grad or isinstance(value, Tensor) and value.requires_grad:
        return self._inplace(_overwrite, value, reads_self=False, cast=True, fills=True,
                             name="FillBackward3" if isinstance(value, Tensor) else "FillBackward2")
    return _fill_plain(self, value)


def _fill_plain(self, value):
    self._check_inplace(fills=True)
    self._data[...] = value._data if isinstance(value, Tensor) else value
    self._vc.v += 1
    return self


def copy_(self, src):
    src = src if isinstance(src, Tensor) else Tensor._plain(np.asarray(src))
    return self._inplace(_overwrite, src, name="CopyBackwards", reads_self=False,
                         cast=True)


def _random_fill(sample):
    def fill(self, *args, generator=None, **kwargs):
        from .creation import generator as generator_of
        return _fill_plain(self, sample(generator_of(generator), tuple(self.shape),
                                        np.dtype(self.dtype), *args, **kwargs))
    return fill


def _bernoulli_fill(g, shape, dtype, p=0.5):
    return g.bernoulli(shape, p)


def _random_ints(g, shape, dtype, low=None, high=None):
    if low is None:      # random_(): [0, 2**mantissa] for floats, [0, 2**63) for int64
        return g.random_int64(shape) if np.dtype(dtype).kind != "f" else \
            g.integers(0, 2 ** 24 + 1 if np.dtype(dtype) == np.float32 else 2 ** 53 + 1, shape)
    if high is None:
        low, high = 0, low
    return g.integers(low, high, shape)


Tensor.zero_, Tensor.fill_, Tensor.copy_ = zero_, fill_, copy_
Tensor.uniform_ = _random_fill(lambda g, s, d, a=0.0, b=1.0: g.uniform(s, draw_dtype(d), a, b))
Tensor.normal_ = _random_fill(
    lambda g, s, d, mean=0.0, std=1.0: g.normal(s, draw_dtype(d), mean, std))
Tensor.bernoulli_ = _random_fill(_bernoulli_fill)
Tensor.random_ = _random_fill(_random_ints)


def _fill_where(x, m, v):
    out = np.where(m, v, x)
    return out if out.dtype == x.dtype else out.astype(x.dtype)    # the tensor's dtype stays


def masked_fill(self, mask, value):
    return call(_fill_where, self, mask, value, name="MaskedFillBackward0")


Tensor.masked_fill = masked_fill
Tensor.masked_fill_ = lambda self, mask, value: self._inplace(
    _fill_where, mask, value, name="MaskedFillBackward0", reads_self=False,
    cast=True, fills=True)


# -- reductions -------------------------------------------------------------------------
def _axis(dim):
    if isinstance(dim, list):
        dim = tuple(dim)
    return dim


def _scalar_dim(t, dim):
    """``dim`` for NumPy, as PyTorch reads a reduction's dims: None, or an empty tuple or
    list, is every dim (None is returned); each given dim must be in range (PyTorch takes
    dim 0 or -1 of a 0-d tensor as its one element) and given once. A tuple comes back as
    a tuple of the dims counted from 0, an int as itself."""
    dim = _axis(dim)
    _check_dim(t, dim)
    if dim is None or t.dim() == 0 or dim == ():
        return None
    return dim


def _int_dim(name, dim, required=False):
    """The ``dim`` of a reduction PyTorch takes along one dim only (``prod``, ``argmax``,
    ``cumsum``): an int, with PyTorch's TypeError for a tuple or a list (and for None where
    ``required``)."""
    if isinstance(dim, (tuple, list)) or required and dim is None:
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    return dim


def _check_nonempty(t, name, dim):
    """PyTorch's errors for a reduction without an identity (``amax``, ``argmax``) over no
    elements: every dim of an empty tensor, or a given dim of size 0."""
    if t.numel() != 0:
        return
    if dim is None or dim == () or dim == []:
        raise _err(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                   "Specify the reduction dim with the 'dim' argument.")
    d = _first_empty_dim(t, dim)
    if d is not None:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _first_empty_dim(t, dim):
    """The first given dim (as given) of size 0, the dims before it checked for range
    (PyTorch looks at them in order, and stops there)."""
    for d in (dim if isinstance(dim, (tuple, list)) else (dim,)):
        _check_dim(t, d)
        if t.dim() and t.shape[d] == 0:
            return d
    return None


_OMITTED = object()     # prod's and max's dim not given (an explicit None is an error there)


def _reduction(fn, name0, name1):
    def op(self, dim=_OMITTED, keepdim=False, *, dtype=None, axis=None):
        if dim is _OMITTED:
            dim = None
        elif dim is None and fn is np.prod:
            raise TypeError("prod() received an invalid combination of arguments - got "
                            "(NoneType), but expected (int dim, bool keepdim = False)")
        if fn is np.sum and dim is None and axis is None and dtype is None and FAST.get():
            out = _fast_sum(self)
            if out is not None:
                return out
        given = axis if dim is None else dim
        if fn is np.prod:
            _int_dim("prod", given)
        x = self if dtype is None else self.to(dtype)
        if fn is np.mean and x.dtype.kind not in "fc":
            raise _err("mean(): could not infer output dtype. Input dtype must be either a "
                       f"floating point or complex dtype. Got: {_scalar_name(x.dtype)}")
        if fn is not np.mean and x.dtype.kind in "biu" and x.dtype != np.int64:
            x = x.to(np.int64)              # PyTorch sums and multiplies integers in int64
        dim = _scalar_dim(self, given)
        return call(lambda v: fn(v, axis=dim, keepdims=keepdim), x,
                    name=name0 if given is None else name1)
    return op


_SUM = REGISTRY["sum"]


def _fast_sum(x):
    """``x.sum()`` of a floating tensor the tape records: the one primitive ``np.sum``
    comes to (``call``'s steps, without its walks over the operands), or None."""
    tr = x._tracer
    if type(x) is not Tensor or type(x._data) is not np.ndarray or x._data.dtype.kind != "f" \
            or not (tr is None and x._requires_grad or type(tr) is EagerTracer) \
            or not _grad_enabled() or _profiling() is not None:
        return None
    t = x._traced()     # a tape tracer (checked above)
    if t._view is not None:
        return None
    src = TAPE.src
    out = TAPE.add1(_SUM, t, {"axis": tuple(range(t._value.ndim)), "keepdims": False},
                    src if src is not None else _user_src(3))
    out._handle._name = "SumBackward0"      # its one edge is its parent
    return Tensor._recorded(out)


def _check_dim(t, dim):
    if dim is None:
        return
    n = builtins.max(t.dim(), 1)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    for d in dims:
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                             f"but got {d})")
    seen = set()
    for d in dims:
        if d % n in seen:
            raise _err(f"dim {d % n} appears multiple times in the list of dims")
        seen.add(d % n)


Tensor.sum = _reduction(np.sum, "SumBackward0", "SumBackward1")
Tensor.mean = _reduction(np.mean, "MeanBackward0", "MeanBackward1")
Tensor.prod = _reduction(np.prod, "ProdBackward0", "ProdBackward1")
def _logical_reduction(fn):
    """``any`` / ``all``: bool, or uint8 for a uint8 tensor (PyTorch); an empty ``dim``
    list reduces nothing there (each element is tested alone)."""
    def op(self, dim=None, keepdim=False):
        empty = isinstance(dim, (tuple, list)) and len(dim) == 0
        dim = _scalar_dim(self, dim)
        out_dtype = np.uint8 if self.dtype == np.uint8 else np.bool_

        def run(v):
            out = v != 0 if empty else fn(v, axis=dim, keepdims=keepdim)
            return out.astype(out_dtype) if out_dtype != np.bool_ else out
        return call(run, self)
    return op


Tensor.all = _logical_reduction(np.all)
Tensor.any = _logical_reduction(np.any)


def _var_like(fn, name, what="std and var"):
    def op(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        if isinstance(dim, bool):           # std(False): the old positional `unbiased`
            dim, unbiased = None, dim
        ddof = correction if correction is not None else (0 if unbiased is False else 1)
        if self.dtype.kind not in "fc":
            raise _err(f"{what} only support floating point and complex dtypes")
        dim = _scalar_dim(self, dim)
        return call(lambda v: fn(v, axis=dim, ddof=ddof, keepdims=keepdim), self, name=name)
    return op


def _with_mean(spread, what):
    """``std_mean`` / ``var_mean``: the spread and the mean over the same dims."""
    def op(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        node = "StdMeanBackward0" if spread is not np.var else "VarMeanBackward0"
        first = _var_like(spread, node, what)(self, dim, unbiased, keepdim,
                                              correction=correction)
        mean = self.mean(dim, keepdim)
        if mean.grad_fn is not None:
            mean.grad_fn._name = node           # PyTorch: one node for both results
        return first, mean
    op.__name__ = what
    return op


def nansum(self, dim=None, keepdim=False, *, dtype=None):
    """The sum with NaN counted as 0."""
    x = self if dtype is None else self.to(dtype)
    if x.dtype.kind in "biu":
        return x.sum(dim, keepdim)
    dim = _scalar_dim(x, dim)
    return call(lambda v: np.sum(np.where(np.isnan(v), np.zeros((), v.dtype), v), axis=dim,
                                 keepdims=keepdim), x, name="NansumBackward0")


def nanmean(self, dim=None, keepdim=False, *, dtype=None):
    """The mean of the elements that are not NaN."""
    x = self if dtype is None else self.to(dtype)
    if x.dtype.kind not in "fc":
        raise _err("nanmean(): expected input to have floating point or complex dtype but "
                   f"got {_scalar_name(x.dtype)}")
    count = (~x.isnan()).sum(dim, keepdim)
    return x.nansum(dim, keepdim) / count


def _safe_root(s, p=2):
    """``s ** (1 / p)`` whose derivative is 0 where ``s`` is 0 (PyTorch's norm and std
    backward mask that point, where the plain rule would give 0 / 0)."""
    zero = s == 0
    safe = np.where(zero, np.ones((), s.dtype), s)
    root = np.sqrt(safe) if p == 2 else safe ** (1 / p)
    return np.where(zero, np.zeros((), s.dtype), root)


_safe_sqrt = _safe_root


def _std(v, axis=None, ddof=0, keepdims=False):
    return _safe_sqrt(np.var(v, axis=axis, ddof=ddof, keepdims=keepdims))


Tensor.std = _var_like(_std, "StdBackward0")
Tensor.var = _var_like(np.var, "VarBackward0")
Tensor.std_mean = _with_mean(_std, "std_mean")
Tensor.var_mean = _with_mean(np.var, "var_mean")
Tensor.nansum, Tensor.nanmean = nansum, nanmean


def _extremum(fn, argfn, name_all, name_dim):
    def op(self, dim=_OMITTED, keepdim=False):
        if dim is _OMITTED:
            dim = None
        elif dim is None:
            raise TypeError(f"{fn.__name__}() received an invalid combination of arguments - "
                            "got (NoneType), but expected (int dim, bool keepdim = False)")
        if isinstance(dim, Tensor):                   # torch.max(a, b): elementwise
            return (Tensor.maximum if fn is np.max else Tensor.minimum)(self, dim)
        _int_dim(fn.__name__, dim)
        if dim is None:
            if self.numel() == 0:
                raise _err(f"{fn.__name__}(): Expected reduction dim to be specified for "
                           "input.numel() == 0. Specify the reduction dim with the 'dim' "
                           "argument.")
            return call(fn, self, name=name_all)
        _check_dim(self, dim)
        if self.dim() == 0:
            return MinMax(call(lambda v: np.reshape(v, ()), self, name=name_dim),
                          Tensor._plain(np.zeros((), np.int64)))
        data = self._concrete("max(dim)")
        if data.shape[dim] == 0:
            raise IndexError(f"{fn.__name__}(): Expected reduction dim {dim % data.ndim} to have "
                             "non-zero size.")
        # the values are read at the returned indices, so that the whole gradient goes to
        # those (the first of tied elements), as PyTorch's MaxBackward0 sends it
        idx = np.expand_dims(argfn(data, axis=dim), dim)
        grids = np.indices(idx.shape, sparse=True)
        axis = dim % data.ndim
        key = tuple(idx if d == axis else grids[d] for d in range(data.ndim))

        def pick(v):
            out = v[_operand_key(v, key)]
            return out if keepdim else np.squeeze(out, axis=axis)
        values = call(pick, self, name=name_dim)
        if not keepdim:
            idx = np.squeeze(idx, axis=axis)
        return MinMax(values, Tensor._plain(np.asarray(idx, dtype=np.int64)))
    return op


Tensor.max = _extremum(np.max, np.argmax, "MaxBackward1", "MaxBackward0")
Tensor.min = _extremum(np.min, np.argmin, "MinBackward1", "MinBackward0")
def _amax_like(fn, name, node):
    def op(self, dim=None, keepdim=False):
        _check_nonempty(self, name, dim)
        axis = _scalar_dim(self, dim)
        return call(lambda v: fn(v, axis=axis, keepdims=keepdim), self, name=node)
    op.__name__ = name
    return op


Tensor.amax = _amax_like(np.max, "amax", "AmaxBackward0")
Tensor.amin = _amax_like(np.min, "amin", "AminBackward0")


def _arg(fn):
    def op(self, dim=None, keepdim=False):
        _int_dim(fn.__name__, dim)
        data = self._concrete("argmax")
        if data.dtype == np.bool_:
            raise _err(f"{fn.__name__}(): does not support bool input")
        dim = _scalar_dim(self, dim)
        try:
            _check_nonempty(self, fn.__name__, dim)
        except RuntimeError as e:           # PyTorch's arg-reductions say it as an IndexError
            raise IndexError(str(e).split(" Specify")[0]) from None
        idx = fn(data, axis=dim, keepdims=keepdim) if dim is not None else fn(data)
        if dim is None and keepdim:
            idx = np.reshape(idx, (1,) * data.ndim)
        return Tensor._plain(np.asarray(idx, dtype=np.int64))
    return op


Tensor.argmax, Tensor.argmin = _arg(np.argmax), _arg(np.argmin)


def _shift(x, dim):
    """The maximum along ``dim`` (an int or a tuple), outside the gradient, and 0 where it is
    infinite (PyTorch's logsumexp): subtracted for stability, it changes no derivative."""
    if any(x.shape[d] == 0 for d in (dim if isinstance(dim, tuple) else (dim,))):
        return np.zeros((), x.dtype)
    m = np.max(x, axis=dim, keepdims=True)
    m = apply("stop_gradient", m) if isinstance(m, Tracer) else m
    return np.where(np.isfinite(m), m, np.zeros((), m.dtype))


def _along(fn, dim):
    """``fn(x, dim)``, with a 0-d ``x`` taken as one element along dim 0 or -1 (PyTorch)."""
    def run(x):
        if np.ndim(x) == 0:
            if dim not in (0, -1):
                raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], "
                                 f"but got {dim})")
            return np.reshape(fn(np.reshape(x, (1,)), 0), ())
        return fn(x, dim)
    return run


def logsumexp(self, dim, keepdim=False):
    if self.dtype.kind not in "fc":
        self = self.to(default_dtype())     # PyTorch computes in the default float dtype
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' must be tuple of ints, not NoneType")
    empty = isinstance(dim, (tuple, list)) and len(dim) == 0
    axes = _scalar_dim(self, dim)
    if self.dim() == 0:
        return call(lambda x: x + np.zeros((), x.dtype), self, name="LogsumexpBackward0")
    if empty and not keepdim and self.numel():       # PyTorch 2's own error there (keepdim=True reduces all)
        raise _err(f"output with shape [] doesn't match the broadcast shape {[1] * self.dim()}")
    axes = tuple(range(self.dim())) if axes is None else axes

    def fn(x):
        m = _shift(x, axes)
        out = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
        return out if keepdim else np.squeeze(out, axis=axes)
    return call(fn, self, name="LogsumexpBackward0")


def _float_kernel(t, kernel):
    if t.dtype.kind not in "fc":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_scalar_name(t.dtype)}\'')


def _normalized(prim, kernel, name):
    """``softmax`` / ``log_softmax``: one node, as PyTorch records one
    (``ir/prims/softmax.py``)."""
    def op(self, dim, dtype=None):
        _float_kernel(self if dtype is None else Tensor._plain(np.empty(0, dtype)), kernel)
        if type(dim) is not int and not isinstance(dim, np.integer):
            raise TypeError(f"{prim}(): argument 'dim' (position 1) must be int, not "
                            f"{type(dim).__name__}")
        _check_dim(self, dim)

        def fn(x, dim):
            return apply(prim, x, axis=int(dim) % x.ndim)
        return call(_along(fn, dim), self if dtype is None else self.to(dtype), name=name)
    op.__name__ = prim
    return op


softmax = _normalized("softmax", "softmax_lastdim_kernel_impl", "SoftmaxBackward0")
log_softmax = _normalized("log_softmax", "log_softmax_lastdim_kernel_impl",
                          "LogSoftmaxBackward0")


Tensor.logsumexp, Tensor.softmax, Tensor.log_softmax = logsumexp, softmax, log_softmax


def norm(self, p="fro", dim=None, keepdim=False):
    if self.dtype.kind not in "fc":
        raise _err("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                   f"Got {_scalar_name(self.dtype)}")
    if p in (np.inf, -np.inf) and self.numel() == 0:
        if dim is None or not isinstance(dim, int) and len(dim) == 0:
            raise _err("linalg.vector_norm cannot compute the inf norm on an empty tensor "
                       "because the operation does not have an identity")
        d = _first_empty_dim(self, dim)
        if d is not None:
            raise _err(f"linalg.vector_norm cannot compute the inf norm on the dimension "
                       f"{d}because this dimension is empty and the operation does not "
                       "have an identity")
    axes = _scalar_dim(self, dim)
    t = _norm(self, p, axes, keepdim)
    if t.grad_fn is not None:
        t.grad_fn._name = "LinalgVectorNormBackward0"     # every p and dim in PyTorch 2
    return t


def _norm(self, p, dim, keepdim):
    if p in ("fro", 2, 2.0) or p is None:
        return call(lambda x: _safe_sqrt(np.sum(x * x, axis=_axis(dim), keepdims=keepdim)), self,
                    name="NormBackward1" if dim is not None else "NormBackward0")
    if p in (1, 1.0):
        return call(lambda x: np.sum(np.abs(x), axis=_axis(dim), keepdims=keepdim), self,
                    name="NormBackward1")
    if p in (np.inf, float("inf")):
        return call(lambda x: np.max(np.abs(x), axis=_axis(dim), keepdims=keepdim), self,
                    name="NormBackward1")
    return call(lambda x: _safe_root(np.sum(np.abs(x) ** p, axis=_axis(dim), keepdims=keepdim),
                                     p), self, name="NormBackward1")


Tensor.norm = norm


def cumsum(self, dim, *, dtype=None):
    _int_dim("cumsum", dim, required=True)
    _check_dim(self, dim)
    x = self if dtype is None else self.to(dtype)
    if x.dtype.kind in "biu" and x.dtype != np.int64 and dtype is None:
        x = x.to(np.int64)                  # PyTorch accumulates integers in int64
    return call(_along(lambda v, d: np.cumsum(v, axis=d), dim), x, name="CumsumBackward0")


Tensor.cumsum = cumsum


# -- shapes ------------------------------------------------------------------------------
def _sizes(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    return tuple(int(a) for a in args)


def _view(self, shape):
    return call(lambda x: np.reshape(x, shape), self, name="ViewBackward0", view_of=self)


def reshape(self, *shape):
    """A view when the strides allow one (``ViewBackward0``, or ``ReshapeAliasBackward0`` for
    a non-contiguous tensor), else a copy viewed (``UnsafeViewBackward0`` of a clone), as
    PyTorch records it."""
    shape = _resolve_shape(_sizes(shape), self.numel())
    data = self._data
    if data is None or is_contiguous(self):
        return _view(self, shape)
    try:
        np.reshape(data, shape, copy=False)
    except ValueError:
        t = _dispatch.unviewed(_view(self.clone(), shape))
        name = "UnsafeViewBackward0"
    else:
        t = _view(self, shape)
        name = "ReshapeAliasBackward0"
    if t.grad_fn is not None and t.grad_fn._name == "ViewBackward0":
        t.grad_fn._name = name
    return t


def view(self, *shape):
    shape = _resolve_shape(_sizes(shape), self.numel())
    if self._data is not None and not is_contiguous(self):
        try:
            np.reshape(self._data, shape, copy=False)
        except ValueError:
            raise _err("view size is not compatible with input tensor's size and stride (at "
                       "least one dimension spans across two contiguous subspaces). Use "
                       ".reshape(...) instead.") from None
    return _view(self, shape)


Tensor.reshape, Tensor.view = reshape, view


def _resolve_shape(shape, size):
    """``shape`` with a ``-1`` worked out; PyTorch's error if it cannot hold ``size``."""
    known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
    holes = shape.count(-1)
    if holes > 1 or any(s < -1 for s in shape) or (
            holes and (known == 0 or size % known)) or (not holes and known != size):
        raise _err(f"shape '{list(shape)}' is invalid for input of size {size}")
    return tuple(size // known if s == -1 else s for s in shape)
Tensor.view_as = lambda self, other: view(self, tuple(other.shape))
Tensor.reshape_as = lambda self, other: reshape(self, tuple(other.shape))


def flatten(self, start_dim=0, end_dim=-1):
    shape = tuple(self.shape)
    if not shape:
        return reshape(self, (1,))
    s, e = start_dim % len(shape), end_dim % len(shape)
    if s == e:
        return self                         # PyTorch hands the tensor itself back
    new = shape[:s] + (int(np.prod(shape[s:e + 1], dtype=np.int64)),) + shape[e + 1:]
    return reshape(self, new)


Tensor.flatten = flatten
Tensor.ravel = lambda self: reshape(self, (-1,))


def unflatten(self, dim, sizes):
    shape = tuple(self.shape)
    dim = dim % len(shape)
    return _view(self, shape[:dim] + tuple(sizes) + shape[dim + 1:])


Tensor.unflatten = unflatten


def squeeze(self, dim=None):
    shape = tuple(self.shape)
    if dim is None:
        new = tuple(s for s in shape if s != 1)
    else:
        dims = {d % builtins.max(len(shape), 1) for d in (dim if isinstance(dim, tuple) else (dim,))}
        new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
    t = _view(self, new)
    if t.grad_fn is not None and t.grad_fn._name == "ViewBackward0":
        t.grad_fn._name = "SqueezeBackward0" if dim is None else "SqueezeBackward1"
    return t


def unsqueeze(self, dim):
    shape = tuple(self.shape)
    n = len(shape) + 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    dim = dim % n
    t = _view(self, shape[:dim] + (1,) + shape[dim:])
    if t.grad_fn is not None and t.grad_fn._name == "ViewBackward0":
        t.grad_fn._name = "UnsqueezeBackward0"
    return t


Tensor.squeeze, Tensor.unsqueeze = squeeze, unsqueeze


def permute(self, *dims):
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    dims = _sizes(dims)
    if sorted(d % builtins.max(self.dim(), 1) for d in dims) != list(range(self.dim())):
        raise _err(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {self.dim()} is not equal to len(dims) = {len(dims)}")
    return call(lambda x: np.transpose(x, dims), self, name="PermuteBackward0", view_of=self)


def transpose(self, dim0, dim1):
    n = self.dim()
    if n == 0:
        return self
    perm = list(range(n))
    perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
    return call(lambda x: np.transpose(x, perm), self, name="TransposeBackward0", view_of=self)


def t(self):
    if self.dim() > 2:
        raise _err(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    return call(np.transpose, self, name="TBackward0", view_of=self)


Tensor.permute, Tensor.transpose, Tensor.t = permute, transpose, t
Tensor.swapaxes = Tensor.swapdims = transpose
Tensor.T = property(lambda self: call(np.transpose, self, name="PermuteBackward0", view_of=self))
Tensor.mT = property(lambda self: transpose(self, -2, -1))


def expand(self, *sizes):
    sizes = _sizes(sizes)
    shape = tuple(self.shape)
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise _err(f"expand: the number of sizes provided ({len(sizes)}) must be greater "
                           f"or equal to the number of dimensions in the tensor ({len(shape)})")
    target = tuple(shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    for i, s in enumerate(shape):
        if s != 1 and s != target[lead + i]:
            raise _err(f"The expanded size of the tensor ({target[lead + i]}) must match "
                               f"the existing size ({s}) at non-singleton dimension {lead + i}.  "
                               f"Target sizes: {list(sizes)}.  Tensor sizes: {list(shape)}")
    # expanding to the same shape makes no stride 0, so the view stays writable (PyTorch)
    grow = np.broadcast_to if target != shape else np.reshape
    return call(lambda x: grow(x, target), self, name="ExpandBackward0", view_of=self)


Tensor.expand = expand
Tensor.expand_as = lambda self, other: expand(self, tuple(other.shape))
Tensor.broadcast_to = expand


def repeat(self, *sizes):
    sizes = _sizes(sizes)
    return call(lambda x: np.tile(x, sizes), self, name="RepeatBackward0")


Tensor.repeat = repeat
Tensor.contiguous = lambda self, *a, **k: self if self._data is None or is_contiguous(self) \
    else call(_c_order, self, name="CloneBackward0")    # PyTorch copies a strided tensor


def _c_order(x):
    # a copy in C order (``clone`` keeps the strides, as PyTorch's preserve_format)
    if isinstance(x, EagerTracer):
        snap = _private_copy(x)
        snap._value = snap._handle._value = np.ascontiguousarray(snap._value)
        return snap
    return np.array(x, order="C", copy=True)
def _clone(x):
    # a node of its own holding a private copy: the tape must not share the operand's
    # node (its grad_fn, hooks and in-place history are the clone's own, as in PyTorch)
    if isinstance(x, EagerTracer):
        return _private_copy(x)
    return np.copy(x)


Tensor.clone = lambda self, *a, **k: call(_clone, self, name="CloneBackward0")
Tensor.flip = lambda self, *dims: call(lambda x: np.flip(x, _sizes(dims)), self,
                                       name="FlipBackward0")
Tensor.roll = lambda self, shifts, dims=None: call(lambda x: np.roll(x, shifts, dims), self,
                                                   name="RollBackward0")


def narrow(self, dim, start, length):
    key = (slice(None),) * (dim % self.dim()) + (slice(start, start + length),)
    return self[key]


def split(self, split_size, dim=0):
    n = self.shape[dim]
    if isinstance(split_size, int):
        bounds = list(range(0, n, split_size)) + [n]
    else:
        bounds = list(np.cumsum([0] + list(split_size)))
    pre = (slice(None),) * (dim % self.dim())
    return _renamed(tuple(self[pre + (slice(a, b),)] for a, b in zip(bounds[:-1], bounds[1:])),
                    "SplitBackward0" if isinstance(split_size, int) else "SplitWithSizesBackward0")


def _renamed(pieces, name):
    for k, p in enumerate(pieces):
        if p.grad_fn is not None:
            p.grad_fn._name = name
        if p._base is not None and p._creation is None and _grad_enabled():
            # one of several views one function returned (PyTorch's MULTI_OUTPUT_NODE)
            p._creation = ("multi" if p._base.requires_grad else "multi_plain", k,
                           name[:name.index("Backward")], False)
    return pieces


def chunk(self, chunks, dim=0):
    n = self.shape[dim]
    return split(self, -(-n // chunks), dim)


def unbind(self, dim=0):
    pre = (slice(None),) * (dim % self.dim())
    return _renamed(tuple(self[pre + (i,)] for i in range(self.shape[dim])), "UnbindBackward0")


Tensor.narrow, Tensor.split, Tensor.chunk, Tensor.unbind = narrow, split, chunk, unbind


def gather(self, dim, index):
    idx = index._concrete("gather") if isinstance(index, Tensor) else np.asarray(index)
    _check_dim(self, dim)
    if idx.dtype not in (np.int32, np.int64):
        raise _err("gather(): Expected dtype int32/int64 for index")
    if self.dim() == 0 or idx.ndim == 0:        # one element: gather(0) of it, or nothing
        if idx.ndim > 1 or self.dim() > 1:
            raise _err("Index tensor must have the same number of dimensions as input tensor")
        _check_gather_bounds(idx, 0, 1)
        return call(lambda x: np.reshape(x, (1,))[np.zeros(idx.shape, np.int64)], self,
                    name="GatherBackward0")
    if idx.ndim != self.dim():
        raise _err("Index tensor must have the same number of dimensions as input tensor")
    dim = dim % self.dim()
    for d in range(self.dim()):
        if d != dim and idx.shape[d] > self.shape[d]:
            raise _err(f"Size does not match at dimension {d} expected index {list(idx.shape)} "
                       f"to be no larger than self {list(self.shape)} apart from dimension "
                       f"{dim}")
    _check_gather_bounds(idx, dim, self.shape[dim])
    grids = np.indices(idx.shape, sparse=True)
    key = tuple(idx if d == dim else grids[d] for d in range(self.dim()))
    return call(lambda x: x[_operand_key(x, key)], self, name="GatherBackward0")


def _check_gather_bounds(idx, dim, size):
    """PyTorch's gather reads no index from the end: each must be in ``[0, size)``."""
    bad = (idx < 0) | (idx >= size)
    if bad.any():
        raise _err(f"index {idx[bad][0]} is out of bounds for dimension {dim} with size {size}")


def _operand_key(x, key):
    """On the tape, integer index arrays that come from data (targets, sampled indices)
    are operands of the node rather than constants in its params, so the backward plan of
    the next batch is the same plan."""
    if not isinstance(x, EagerTracer):
        return key
    items = key if isinstance(key, tuple) else (key,)
    out = tuple(TAPE.input(k, Version()) if isinstance(k, np.ndarray) and k.dtype.kind in "iu"
                and k.size > 1 else k for k in items)
    return out if isinstance(key, tuple) else out[0]


Tensor.gather = gather


def __getitem__(self, key):
    key = _index_key(key)
    if isinstance(key, list):
        key = np.asarray(key)
    elif isinstance(key, tuple) and any(isinstance(k, list) for k in key):
        key = tuple(np.asarray(k) if isinstance(k, list) else k for k in key)
    basic = is_basic(key)
    if basic:
        items = key if isinstance(key, tuple) else (key,)
        if not any(k is Ellipsis for k in items):
            # x[0] of NumPy is a copy when it is 0-d; x[0, ...] is the view PyTorch makes
            key = tuple(items) + (Ellipsis,)
    return call(lambda x: x[_operand_key(x, key)], self, name=getitem_name(key),
                view_of=self if basic else None)


Tensor.__getitem__ = __getitem__


# -- types ---------------------------------------------------------------------------------
def to_args(args, kwargs):
    """``(device, dtype, copy)`` from the arguments of ``Tensor.to`` / ``Module.to``:
    ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(other_tensor)``, keywords
    ``device=``, ``dtype=``, ``copy=``, ``non_blocking=``. A device other than the CPU
    raises PyTorch's error; the returned device is None when none was named."""
    dev, dtype = kwargs.get("device"), kwargs.get("dtype")
    copy = bool(kwargs.get("copy", False))
    for a in args:
        if isinstance(a, Tensor):
            dtype = a.dtype
            dev = _CPU
        elif _is_device(a) or isinstance(a, int) and not isinstance(a, bool):
            dev = a
        elif isinstance(a, bool):
            continue                        # the old positional non_blocking / copy
        elif a is not None:
            try:
                dtype = np.dtype(a)
            except TypeError:
                raise TypeError(f"to() received an invalid combination of arguments - got "
                                f"({type(a).__name__})") from None
    if dev is not None:
        dev = _resolve(dev)
    return dev, (None if dtype is None else np.dtype(dtype)), copy


def public_result_type(tensor1, tensor2):
    """``tg.result_type``: the dtype PyTorch gives an arithmetic operation on the two
    operands (tensors or Python numbers)."""
    return result_type(tensor1, tensor2, default_float=default_dtype())


def to(self, *args, **kwargs):
    """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``: this tensor when
    nothing changes (unless ``copy=True``), else a converted copy (``ToCopyBackward0``)."""
    _, dtype, copy = to_args(args, kwargs)
    if dtype is None or dtype == self.dtype:
        return call(_clone, self, name="ToCopyBackward0") if copy else self
    return call(lambda x: x.astype(dtype), self, name="ToCopyBackward0")


def _cast(dtype):
    def cast(self, memory_format=None):
        return to(self, dtype)
    return cast


def type_(self, dtype=None, non_blocking=False, **kwargs):
    """``t.type()``: PyTorch's legacy name (``"torch.FloatTensor"``); ``t.type(tg.float64)``
    or ``t.type("torch.DoubleTensor")``: the tensor converted."""
    from .promotion import dtype_of_type_name, type_name
    if dtype is None:
        return "torch." + type_name(self.dtype)
    if isinstance(dtype, str) and dtype.startswith("torch."):
        dtype = dtype_of_type_name(dtype)
    elif isinstance(dtype, type) and hasattr(dtype, "_dtype"):     # tg.FloatTensor
        dtype = dtype._dtype
    return to(self, dtype)


def _cuda(self, *args, **kwargs):
    from .device import device, unavailable
    raise unavailable(device("cuda"))


Tensor.to, Tensor.type = to, type_
Tensor.type_as = lambda self, other: to(self, other.dtype)
Tensor.float, Tensor.double = _cast(np.float32), _cast(np.float64)
Tensor.half = _cast(np.float16)
Tensor.long, Tensor.int, Tensor.bool = _cast(np.int64), _cast(np.int32), _cast(np.bool_)
Tensor.short, Tensor.char, Tensor.byte = _cast(np.int16), _cast(np.int8), _cast(np.uint8)
Tensor.cfloat, Tensor.cdouble = _cast(np.complex64), _cast(np.complex128)
Tensor.cpu = lambda self, *a, **k: self
Tensor.cuda = _cuda


def new_tensor(self, data, dtype=None, requires_grad=False):
    from .creation import tensor
    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)


Tensor.new_tensor = new_tensor
Tensor.new_zeros = lambda self, *size, dtype=None: Tensor._plain(
    np.zeros(_sizes(size), dtype or self.dtype))
Tensor.new_ones = lambda self, *size, dtype=None: Tensor._plain(
    np.ones(_sizes(size), dtype or self.dtype))


# -- module-level functions ----------------------------------------------------------------
def _method_function(name):
    def fn(input, *args, **kwargs):
        return getattr(_as_tensor(input), name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"``tg.{name}(t, ...)`` is ``t.{name}(...)``."
    return fn


FUNCTIONS = {}
for _name in ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "pow",
              "matmul", "mm", "bmm", "mv", "dot", "clamp", "clip", "sum", "mean", "prod", "std",
              "var", "max", "min", "amax", "amin", "nansum", "nanmean", "std_mean",
              "var_mean", "argmax", "argmin", "logsumexp", "softmax",
              "log_softmax", "norm", "cumsum", "reshape", "flatten", "unflatten", "squeeze",
              "unsqueeze", "permute", "transpose", "t", "swapaxes", "narrow", "split", "chunk",
              "unbind", "gather", "flip", "roll", "masked_fill", "maximum", "minimum", "all",
              "any", "eq", "ne", "lt", "le", "gt", "ge", "clone", "square", "numel",
              "floor_divide", "remainder", "fmod",
              *_UNARY]:
    FUNCTIONS[_name] = _method_function(_name)


def _tensor_list(tensors):
    tensors = list(tensors)
    for k, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got "
                            f"{type(t).__name__}")
    return tensors


def cat(tensors, dim=0):
    tensors = _tensor_list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    ref = tuple(tensors[0].shape)
    for k, t in enumerate(tensors):
        if t.dim() == 0:
            raise _err(f"zero-dimensional tensor (at position {k}) cannot be concatenated")
    for k, t in enumerate(tensors[1:], 1):
        s = tuple(t.shape)
        if len(s) != len(ref):
            raise _err(f"Tensors must have same number of dimensions: got {len(ref)} and "
                               f"{len(s)}")
        d = dim % len(ref)
        for i, (a, b) in enumerate(zip(ref, s)):
            if i != d and a != b:
                raise _err(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {a} but got size {b} for tensor number {k} in "
                                   "the list.")
    dtype = result_type(*tensors, default_float=default_dtype())   # torch's, not NumPy's
    return call(lambda ts: np.concatenate([cast(t, dtype) for t in ts], axis=dim), tensors,
                name="CatBackward0")


def stack(tensors, dim=0):
    tensors = _tensor_list(tensors)
    if not tensors:
        raise _err("stack expects a non-empty TensorList")
    for k, t in enumerate(tensors[1:], 1):
        if tuple(t.shape) != tuple(tensors[0].shape):
            raise _err(f"stack expects each tensor to be equal size, but got "
                       f"{list(tensors[0].shape)} at entry 0 and {list(t.shape)} at entry {k}")
    dtype = result_type(*tensors, default_float=default_dtype())
    return call(lambda ts: np.stack([cast(t, dtype) for t in ts], axis=dim), tensors,
                name="StackBackward0")


def where(condition, input=None, other=None):
    if input is None:
        return tuple(Tensor._plain(i.astype(np.int64)) for i in np.nonzero(_as_tensor(condition)._data))
    cond = condition._data if isinstance(condition, Tensor) else np.asarray(condition)
    _check_broadcast(input, other)
    _check_broadcast(cond, input)
    _check_broadcast(cond, other)
    return _elementwise(lambda a, b: np.where(cond, a, b), input, other, name="WhereBackward0")


def outer(a, b):
    # PyTorch: a.reshape(-1, 1) * b
    return _elementwise(np.multiply, reshape(_as_tensor(a), (-1, 1)), b, name="MulBackward0")


def einsum(spec, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return call(lambda *xs: np.einsum(spec, *xs), *operands, name="EinsumBackward0")


def _number_first(name, reflected):
    """``tg.add(2.5, t)``: PyTorch takes a number as the first operand as it takes a second
    one (a wrapped number, with its promotion), through the reflected operator."""
    method = FUNCTIONS[name]

    def fn(input, other, *args, **kwargs):
        if not isinstance(input, Tensor) and isinstance(other, Tensor) and not args and \
                not kwargs:
            return reflected(other, input)
        return method(input, other, *args, **kwargs)
    fn.__name__, fn.__doc__ = name, method.__doc__
    return fn


def _tensor_first(name):
    method = FUNCTIONS[name]

    def fn(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return method(input, *args, **kwargs)
    fn.__name__, fn.__doc__ = name, method.__doc__
    return fn


for _name, _rop in [("add", Tensor.__radd__), ("sub", Tensor.__rsub__),
                    ("subtract", Tensor.__rsub__), ("mul", Tensor.__rmul__),
                    ("multiply", Tensor.__rmul__), ("div", Tensor.__rtruediv__),
                    ("divide", Tensor.__rtruediv__), ("true_divide", Tensor.__rtruediv__),
                    ("floor_divide", Tensor.__rfloordiv__), ("remainder", Tensor.__rmod__),
                    ("pow", Tensor.__rpow__)]:
    FUNCTIONS[_name] = _number_first(_name, _rop)
for _name in ("maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "fmod"):
    FUNCTIONS[_name] = _tensor_first(_name)
FUNCTIONS.update(cat=cat, concat=cat, concatenate=cat, stack=stack, where=where, outer=outer,
                 ger=outer, einsum=einsum)
del _name, _n, _fn, _op, _op_, _rop


def _default():
    return default_dtype()
