"""Operators, ndarray methods and NumPy's dispatch protocols on ``Tracer``.

Operators go through NumPy's own ufuncs (``x + y`` is ``np.add(x, y)``), so
there is one path from any spelling to the handlers in ``numpy_api``.
"""
import math

import numpy as np

from ..errors import TraceError
from ..ir.source import where
from . import numpy_api as api
from . import scipy_sparse as _sparse
from .core import Tracer, add_to_top, is_constant, weak_result
from .indexing import getitem, setitem
from .scipy_calls import ScipyAttributeError, refuse_in_scipy
from .views import alias, assigned, ensure_writable, new_array, reshape_is_view, set_shape


def _binary(ufunc, name):
    # Python numbers stay Python numbers under Python's operators (NEP 50 weak typing)
    prim = api.DIRECT.get(ufunc)
    if name in ("matmul", "mul"):
        # a scipy.sparse matrix operand: sparse.py (A @ x reaches __rmatmul__ from SciPy)
        return _sparse_aware(prim, ufunc, name)
    if prim is None:
        return (lambda self, other: weak_result(ufunc(self, other), self, other),
                lambda self, other: weak_result(ufunc(other, self), other, self))
    simple = api._SIMPLE

    # the fast path: what ufunc(self, other) comes to through __array_ufunc__ and
    # handle_ufunc for a plain tracer and a tracer or Python number
    def forward(self, other):
        if type(self) is Tracer and (type(other) in simple or (
                type(other) is np.ndarray and other.dtype != object)):
            return weak_result(add_to_top(prim, (self, other), {}), self, other)
        return weak_result(ufunc(self, other), self, other)

    def reflected(self, other):
        if type(self) is Tracer and type(other) in simple:
            return weak_result(add_to_top(prim, (other, self), {}), other, self)
        return weak_result(ufunc(other, self), other, self)

    return forward, reflected


def _sparse_aware(prim, ufunc, name):
    simple = api._SIMPLE
    plain = (Tracer, np.ndarray)

    def forward(self, other):
        t = type(other)
        if type(self) is Tracer and prim is not None and (t in simple or (
                t is np.ndarray and other.dtype != object)):
            return weak_result(add_to_top(prim, (self, other), {}), self, other)
        if t not in simple and t not in plain and _sparse.is_sparse(other):
            return _sparse.binary(name, self, other)
        return weak_result(ufunc(self, other), self, other)

    def reflected(self, other):
        t = type(other)
        if type(self) is Tracer and prim is not None and t in simple:
            return weak_result(add_to_top(prim, (other, self), {}), other, self)
        if t not in simple and t not in plain and _sparse.is_sparse(other):
            return _sparse.binary("r" + name, self, other)
        return weak_result(ufunc(other, self), other, self)

    return forward, reflected


for _name, _uf in [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                   ("truediv", np.true_divide), ("floordiv", np.floor_divide),
                   ("mod", np.remainder), ("pow", np.power), ("matmul", np.matmul),
                   ("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor)]:
    _fwd, _rev = _binary(_uf, _name)
    setattr(Tracer, f"__{_name}__", _fwd)
    setattr(Tracer, f"__r{_name}__", _rev)
    setattr(Tracer, f"__i{_name}__", (lambda uf: lambda self, other: _in_place(self, uf, other))(
        _uf))

def _in_place(x, ufunc, other):
    """``x op= other`` as NumPy does it: ``x`` itself changes, so other names for it, its
    views and (if it is a view) its base all see the result. Recorded as a new node that
    ``x`` now names, like an indexed assignment."""
    ensure_writable(x)
    new = ufunc(x, other)
    if tuple(new.shape) != tuple(x.shape):
        raise TraceError(f"non-broadcastable output operand with shape {x.shape} doesn't match "
                         f"the broadcast shape {new.shape} of the in-place {ufunc.__name__}"
                         f"{where()}")
    if new.dtype != x.dtype:
        if not np.can_cast(new.dtype, x.dtype, casting="same_kind"):
            raise TraceError(f"Cannot cast ufunc '{ufunc.__name__}' output from {new.dtype} to "
                             f"{x.dtype} with casting rule 'same_kind' (write x = x + y, a new "
                             f"array, instead){where()}")
        new = api.astype(new, x.dtype)
    if new._trace is not x._trace:
        raise TraceError("an in-place operation on an array traced by an outer transform with "
                         f"a value traced by an inner one is not supported; write x = x + y "
                         f"for a new array{where()}")
    x._node, x._value = new._node, new._value
    assigned(x)
    return x


for _name, _uf in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
                   ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]:
    setattr(Tracer, f"__{_name}__", (lambda uf: lambda self, other: uf(self, other))(_uf))

Tracer.__divmod__ = lambda self, other: np.divmod(self, other)
Tracer.__rdivmod__ = lambda self, other: np.divmod(other, self)
Tracer.__round__ = lambda self, ndigits=None: new_array(api.round_(self, ndigits or 0), [self])
Tracer.round = lambda self, decimals=0, out=None: new_array(api.round_(self, decimals, out),
                                                                [self])
Tracer.__neg__ = lambda self: weak_result(np.negative(self), self)
Tracer.__pos__ = lambda self: weak_result(np.positive(self), self)   # a new array, as NumPy's
Tracer.__abs__ = lambda self: weak_result(np.absolute(self), self)
Tracer.__invert__ = lambda self: np.invert(self)
Tracer.__getitem__ = getitem
Tracer.__setitem__ = setitem


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    return api.handle_ufunc(ufunc, method, inputs, kwargs)


def _array_function(self, func, types, args, kwargs):
    return api.handle_function(func, args, kwargs)


# The array API's protocol: a traced array's namespace is NumPy's (whose functions reach
# the tracer through the protocols above). Array-API-aware code such as SciPy's
# ``logsumexp``/``softmax`` then takes a tracer for an array it may update (x[i] = v).
Tracer.__array_namespace__ = lambda self, api_version=None: np
# NumPy 2's ``ndarray.device`` (always "cpu"): SciPy's array API code reads it to make
# arrays alongside (logsumexp of an empty array: ``xp.full(..., device=xp_device(a))``)
Tracer.device = property(lambda self: "cpu")


Tracer.__array_ufunc__ = _array_ufunc
Tracer.__array_function__ = _array_function


# -- ndarray methods --------------------------------------------------------------------
def _shape_args(args):
    return args[0] if len(args) == 1 and not isinstance(args[0], (int, np.integer)) else args


Tracer.T = property(lambda self: api.transpose(self))
Tracer.mT = property(lambda self: api.swapaxes(self, -1, -2))
Tracer.reshape = lambda self, *shape, order="C", copy=None: (
    api.reshape if copy else api.reshape_view)(self, _shape_args(shape), order)
Tracer.transpose = lambda self, *axes: api.transpose(self, _shape_args(axes) if axes else None)
Tracer.astype = lambda self, dtype, copy=True, **kw: (
    new_array if copy else lambda r, _: r)(api.astype(self, dtype), [self])
Tracer.ravel = lambda self, order="C": api.ravel(self, order)
Tracer.flatten = lambda self, order="C": new_array(api.reshape(self, (-1,), order), [self])
Tracer.squeeze = lambda self, axis=None: api.squeeze(self, axis)
Tracer.swapaxes = lambda self, a, b: api.swapaxes(self, a, b)
Tracer.copy = lambda self, order="C": api.copy(self)
Tracer.dot = lambda self, b, out=None: (_sparse.rmatmul(self, b) if out is None and _sparse.is_sparse(b)
                                        else api.dot(self, b, out))
Tracer.clip = lambda self, min=None, max=None, out=None: new_array(  # noqa: A002
    api.clip(self, min, max, out), [self])
Tracer.repeat = lambda self, repeats, axis=None: api.repeat(self, repeats, axis)
Tracer.diagonal = lambda self, offset=0, axis1=0, axis2=1: api.diagonal(self, offset, axis1, axis2)
Tracer.trace = lambda self, offset=0, axis1=0, axis2=1, dtype=None, out=None: api.trace(
    self, offset, axis1, axis2, dtype, out)
Tracer.sum = lambda self, axis=None, dtype=None, out=None, keepdims=False: api.sum(
    self, axis, dtype, out, keepdims)
Tracer.prod = lambda self, axis=None, dtype=None, out=None, keepdims=False: api.prod(
    self, axis, dtype, out, keepdims)
Tracer.mean = lambda self, axis=None, dtype=None, out=None, keepdims=False: api.mean(
    self, axis, dtype, out, keepdims)
Tracer.var = lambda self, axis=None, dtype=None, out=None, ddof=0, keepdims=False: api.var(
    self, axis, dtype, out, ddof, keepdims)
Tracer.std = lambda self, axis=None, dtype=None, out=None, ddof=0, keepdims=False: api.std(
    self, axis, dtype, out, ddof, keepdims)
Tracer.max = lambda self, axis=None, out=None, keepdims=False: api.max(self, axis, out, keepdims)
Tracer.min = lambda self, axis=None, out=None, keepdims=False: api.min(self, axis, out, keepdims)
Tracer.argmax = lambda self, axis=None, out=None, keepdims=False: api.argmax(
    self, axis, out, keepdims=keepdims)
Tracer.argmin = lambda self, axis=None, out=None, keepdims=False: api.argmin(
    self, axis, out, keepdims=keepdims)
Tracer.cumsum = lambda self, axis=None, dtype=None, out=None: api.cumsum(self, axis, dtype, out)
Tracer.nonzero = lambda self: api.nonzero(self)
Tracer.any = lambda self, axis=None, out=None, keepdims=False: api.any(self, axis, out, keepdims)
Tracer.all = lambda self, axis=None, out=None, keepdims=False: api.all(self, axis, out, keepdims)


# -- attributes NumPy lets you assign ---------------------------------------------------
def _set_shape(self, shape):
    """``a.shape = s``: NumPy reshapes ``a`` itself, never copying; a shape that would
    need a copy raises its AttributeError, a wrong size its ValueError."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if -1 not in shape and math.prod(shape) != self.size:
        raise TraceError(f"cannot reshape array of size {self.size} into shape {shape}"
                         f"{where()}")
    new = api.reshape(self, shape)
    if not reshape_is_view(self, new.shape):
        raise AttributeError("Incompatible shape for in-place modification. Use `.reshape()` "
                             f"to make a copy with the desired shape.{where()}")
    set_shape(self, new.shape, new)


def _set_dtype(self, dtype):
    if np.dtype(dtype) != self.dtype:
        raise TraceError(f"a.dtype = {np.dtype(dtype).name} reinterprets the array's bytes in "
                         f"NumPy, which tracegrad does not trace: convert with "
                         f"a.astype({np.dtype(dtype).name}) instead{where()}")


def _unassignable(name):
    def get(self):
        return _missing_attribute(self, name)

    def put(self, value):
        raise TraceError(f"assigning a.{name} is not supported on traced values by tracegrad "
                         f"(a NumPy array's memory layout is not traced){where()}")
    return property(get, put)


Tracer.shape = property(Tracer.shape.fget, _set_shape)
Tracer.dtype = property(Tracer.dtype.fget, _set_dtype)
for _name in ("strides", "data", "flat", "base"):
    setattr(Tracer, _name, _unassignable(_name))


def _view(self, dtype=None, type=None):  # noqa: A002  (NumPy's names)
    if type is not None or (dtype is not None and np.dtype(dtype) != self.dtype):
        raise TraceError(f"a.view(...) with another dtype or type reinterprets memory, which "
                         f"tracegrad does not trace; use a.astype(...) instead{where()}")
    return alias(self)


Tracer.view = _view


def _missing_attribute(self, name):
    # A constant (a fresh array nothing traced was written into) is NumPy's array for
    # what tracegrad does not trace (a.flags, a.fill(0), a.ctypes): its memory, which it
    # keeps holding, so writes through the attribute are what it holds next.
    if not name.startswith("__") and hasattr(np.ndarray, name) and is_constant(self):
        return getattr(self.__array__(), name)
    # An AttributeError still (hasattr() must keep working), but one that tells the
    # user this is an ndarray feature tracegrad does not trace, and where they used it.
    if not name.startswith("__") and hasattr(np.ndarray, name):
        refused = refuse_in_scipy(f"reads the NumPy attribute .{name} of its traced argument "
                                  "(it computes on NumPy arrays only)",
                                  ScipyAttributeError)
        if refused is not None:
            raise refused
        raise AttributeError(f"ndarray.{name} is not supported on traced values by tracegrad"
                             f"{where()}")
    raise AttributeError(f"'Tracer' object has no attribute {name!r}")


Tracer.__getattr__ = _missing_attribute
