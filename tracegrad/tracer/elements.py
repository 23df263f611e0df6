"""Elements of traced arrays inside the object arrays NumPy builds from them.

``np.array`` and ``np.asarray`` never reach a protocol: NumPy asks each
tracer for ``__array__`` and builds an object array. ``Tracer.__array__``
answers with an object array of the tracer's own shape whose entries are
``Element``s: references to one position, not graph nodes. So
``np.asarray(t).shape == t.shape``, ``np.array([t1, t2])`` becomes one
concatenate (or gather) when a traced NumPy call or the function's return
meets it (``numpy_api.coerce``), and NumPy's element-by-element arithmetic on
such an object array still computes the right thing: each element it touches
becomes a 0-d traced value (correct, if one node per element).
"""
import operator
import os
import sys
import sysconfig
import threading

import numpy as np

from ..ir.source import TRACEGRAD_FOLDER, code_path
from . import samplers as _samplers
from . import scipy_sparse as _sparse
from .calls import calling
from .state import LOCAL


class Element:
    __slots__ = ("tracer", "index")

    def __init__(self, tracer, index):
        self.tracer = tracer
        self.index = index      # a tuple of ints into tracer.shape

    def __repr__(self):
        return f"Element({self.tracer!r}[{','.join(map(str, self.index))}])"

    @property
    def flat_index(self):
        return int(np.ravel_multi_index(self.index, self.tracer.shape)) if self.index else 0

    def value(self):
        """This element as a 0-d traced value (records a getitem node)."""
        return self.tracer[self.index]

    def __getattr__(self, name):
        # NumPy's object loops call methods named after the ufunc (x.sin(), x.exp())
        ufunc = getattr(np, name, None)
        if isinstance(ufunc, np.ufunc):
            return lambda *args: ufunc(self.value(), *map(_value, args))
        raise AttributeError(f"'Element' object has no attribute {name!r}")

    def __bool__(self):
        return bool(self.value())

    def __float__(self):
        return float(self.value())      # raises the lost-gradient TraceError

    def __int__(self):
        return int(self.value())

    def __complex__(self):
        return complex(self.value())

    def __index__(self):
        return operator.index(self.value())

    __hash__ = None


def _value(x):
    return x.value() if isinstance(x, Element) else x


def _forward(op):
    return lambda self, *other: op(self.value(), *map(_value, other))


def _reflected(op):
    return lambda self, other: op(_value(other), self.value())


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor"):
    _op = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    setattr(Element, f"__{_name}__", _forward(_op))
    setattr(Element, f"__r{_name}__", _reflected(_op))
for _name in ("eq", "ne", "lt", "le", "gt", "ge", "neg", "pos", "abs", "invert"):
    setattr(Element, f"__{_name}__", _forward(getattr(operator, _name)))


def element_array(tracer):
    """The object array standing for ``tracer``: its shape, one ``Element`` per entry."""
    out = np.empty(tracer.shape, dtype=object)
    for index in np.ndindex(*tracer.shape):
        out[index] = Element(tracer, index)
    return out


# -- np.array / np.asarray of traced values -------------------------------------------------
# NumPy's array constructors are C functions that no protocol reaches: np.array([t0, t1])
# of traced scalars is an object array, on which np.exp fails (its loop looks for a
# method) and np.linalg.det refuses the dtype. So while a trace is active, ``np.array``,
# ``np.asarray`` and ``np.asanyarray`` are wrapped: an argument holding traced values gives
# a traced array (one gather of the elements); any other argument goes to NumPy untouched.
_CONSTRUCTORS = {name: getattr(np, name) for name in ("array", "asarray", "asanyarray")}


def _holds_traced(obj, depth=0, dependent=False):
    """Whether ``obj`` holds traced values (with ``dependent``, ones that depend on the
    traced inputs, not only constants)."""
    from .core import Tracer, is_constant
    if isinstance(obj, Tracer):
        return not (dependent and is_constant(obj))
    if isinstance(obj, Element) or type(obj) is _samplers.SampleArray:
        return True
    if isinstance(obj, np.ndarray):
        return obj.dtype == object and any(_holds_traced(e, depth + 1, dependent)
                                           for e in obj.flat)
    if isinstance(obj, (list, tuple)) and depth < 64:
        return any(_holds_traced(e, depth + 1, dependent) for e in obj)
    return False


def _traced_array(name, obj, dtype=None, *, copy=True, ndmin=0):
    from . import numpy_api as api
    from .core import Tracer
    if LOCAL.samples:
        obj = _samplers.untangle(obj)
    if isinstance(obj, Tracer):
        # np.array copies (a new array that later writes to obj do not reach); asarray is obj
        result = api.copy(obj) if name == "array" and copy else obj
    else:
        original = _CONSTRUCTORS["array"]
        result = api.coerce(original(obj, dtype=object))
        if not isinstance(result, Tracer):          # no traced leaf reached NumPy after all
            return original(obj, dtype=dtype, ndmin=ndmin)
        if dtype is not None and result.dtype.kind == "c" and np.dtype(dtype).kind != "c":
            # NumPy converts each complex element with float(): an error, not a cast
            from ..ir.source import where
            raise TypeError(f"float() argument must be a string or a real number, not "
                            f"'complex' (np.{name} of complex values with dtype="
                            f"{np.dtype(dtype).name}){where()}")
    if dtype is not None:
        result = api.astype(result, dtype)
    if ndmin > result.ndim:
        result = api.reshape(result, (1,) * (ndmin - result.ndim) + tuple(result.shape))
    return result


# arguments that can hold no traced value
_PLAIN = frozenset({float, int, bool, complex, str, type(None), np.float64, np.float32,
                    np.int64, np.int32, np.bool_, np.complex128, np.complex64})


def _wrapped(name):
    original = _CONSTRUCTORS[name]

    def constructor(obj, dtype=None, *args, **kwargs):
        if not LOCAL.stack:                 # no trace in this thread: NumPy's own
            return original(obj, dtype, *args, **kwargs)
        t = type(obj)
        if t in _PLAIN or (t is np.ndarray and obj.dtype != object):
            return original(obj, dtype, *args, **kwargs)    # the common case, at once
        if sys._getframe(1).f_globals.get("__name__", "").startswith("scipy.sparse") \
                and _holds_traced(obj):
            # A @ x: scipy.sparse hands the product to x; elsewhere a TraceError (sparse.py)
            if name == "asanyarray" and _sparse.declines(sys._getframe(1)):
                return _sparse.opaque(obj)
            if not _sparse.probes(sys._getframe(1)):
                _sparse.refuse_in_scipy()
        if isinstance(obj, (list, tuple, np.ndarray, Element)) or hasattr(obj, "_trace"):
            if _holds_traced(obj) and not (_kind(sys._getframe(1).f_code) == 4 and
                                           not _holds_traced(obj, dependent=True)):
                # (a library's np.asarray of constants only is NumPy's own array, which its
                # compiled code needs; the user's own np.asarray(z) stays z)
                copy = kwargs.get("copy", True if name == "array" else None)
                if isinstance(copy, np._CopyMode):  # the array API wrappers pass these
                    copy = copy is np._CopyMode.ALWAYS
                return _traced_array(name, obj, dtype, copy=bool(copy),
                                     ndmin=kwargs.get("ndmin", 0))
        return original(obj, dtype, *args, **kwargs)
    constructor.__name__ = constructor.__qualname__ = name
    constructor.__doc__ = original.__doc__
    constructor.__wrapped__ = original
    return constructor


_WRAPPERS = {name: _wrapped(name) for name in _CONSTRUCTORS}

# NumPy's reductions of a list (np.mean([a, b]), np.std([x, y]), np.sum([t1, t2], axis=0))
# reach no protocol either: NumPy builds the object array itself and then converts a
# traced result with float64(...). While a trace is active they are wrapped likewise: a
# list or tuple holding traced values becomes one traced array first.
_REDUCTIONS = {name: getattr(np, name) for name in (
    "mean", "std", "var", "sum", "prod", "max", "min", "amax", "amin", "average", "median",
    "cumsum", "cumprod", "ptp", "nanmean", "nansum", "nanstd", "nanvar", "nanmax", "nanmin",
    "argmax", "argmin", "all", "any", "sort", "diff")}


def _wrapped_reduction(name):
    original = _REDUCTIONS[name]

    def reduction(a, *args, **kwargs):
        if LOCAL.stack and type(a) in (list, tuple) and _holds_traced(a):
            a = _traced_array("asarray", a)
        return original(a, *args, **kwargs)
    reduction.__name__ = reduction.__qualname__ = name
    reduction.__doc__ = original.__doc__
    reduction.__wrapped__ = original
    return reduction


_WRAPPERS.update({name: _wrapped_reduction(name) for name in _REDUCTIONS})


# -- arrays the traced function makes -------------------------------------------------------
# While a thread traces, NumPy's creation functions called from outside tracegrad and
# NumPy (the user's code, SciPy's, scikit-learn's) give a *fresh* traced array: a constant
# node of the innermost trace. It is the function's own array, so ``z[i] = t``, ``z += t``,
# ``np.add(a, b, out=z)`` and writes through its views are recorded like writes into any
# traced array. Until a traced value reaches it, it stands for its constant value wherever
# NumPy converts it (``Tracer.__array__``), so C code handed it gets the numbers.
_CREATORS = {name: getattr(np, name) for name in (
    "zeros", "empty", "ones", "full", "zeros_like", "empty_like", "ones_like", "full_like",
    "eye", "identity", "arange", "linspace", "copy")}


def _traced_fill(name, args, kwargs):
    """``np.full(shape, t)`` / ``np.full_like(a, t)`` with a traced fill value: the fill
    broadcast to the shape, as a new array; None when the fill is not traced."""
    from . import numpy_api as api
    from .core import Tracer
    params = ("shape" if name == "full" else "a", "fill_value", "dtype", "order")
    bound = dict(zip(params, args), **kwargs)
    fill = bound.get("fill_value")
    if not (isinstance(fill, (Tracer, Element)) or _holds_traced(fill)):
        return None
    fill = api.coerce(_traced_array("asarray", fill) if not isinstance(fill, Tracer) else fill)
    if name == "full":
        shape, dtype = bound["shape"], bound.get("dtype")
    else:
        template = bound["a"]
        shape = bound.get("shape") or np.shape(template)
        dtype = bound.get("dtype") or api.dtype_of(template)
    if dtype is not None:
        fill = api.astype(fill, dtype)
    return api.copy(api.broadcast_to(fill, shape))


_NUMPY = os.path.dirname(np.__file__) + os.sep
# tracegrad's code that runs NumPy and SciPy on concrete values (a primitive's
# implementation, a graph run by the interpreter or as generated code, a callback): what it
# calls makes NumPy's own arrays, even while a trace is active
_RUNNERS = tuple(TRACEGRAD_FOLDER + p for p in (
    "ir" + os.sep, "runtime" + os.sep, os.path.join("transforms", "pure_callback.py"),
    os.path.join("tracer", "core.py")))
# installed packages and the standard library: code the user did not write
_LIBRARIES = tuple({os.path.abspath(sysconfig.get_paths()[k]) + os.sep
                    for k in ("purelib", "platlib", "stdlib", "platstdlib")})
_KINDS: dict = {}   # code object -> 0 user, 1 NumPy, 2 a runner, 3 tracegrad, 4 a library


def _kind(code):
    kind = _KINDS.get(code)
    if kind is None:
        name = code_path(code)
        kind = _KINDS[code] = (
            2 if name.startswith(_RUNNERS) or name.startswith("<tracegrad-generated") else
            3 if name.startswith(TRACEGRAD_FOLDER) else
            1 if name.startswith(_NUMPY) or name.startswith("<__array_function__") else
            4 if os.path.abspath(name).startswith(_LIBRARIES) else 0)
    return kind


def _handles_traced_values(frame):
    """Whether a library function's frame holds a value that depends on the traced inputs
    (directly, or in a list, tuple or dict it holds)."""
    from .core import Tracer, depends_on_input
    for v in frame.f_locals.values():
        items = v.values() if type(v) is dict else v if type(v) in (list, tuple) else (v,)
        for item in items:
            if isinstance(item, Tracer) and (item._value is None or depends_on_input(item)):
                return True
    return False


def _called_by_traced_code(frame):
    """Whether a creation call from ``frame`` makes an array of the traced function: a
    call from the user's code, or from a library's code that is handling traced values
    (``scipy.optimize.rosen_hess(x)`` filling its ``np.zeros`` with them). Not from NumPy's
    or tracegrad's own code, nor from a library working on constants only (SciPy's
    ``expm`` making the work arrays its compiled code needs), nor below tracegrad running a
    primitive on concrete values."""
    kind = _kind(frame.f_code)
    if kind not in (0, 4):
        return False
    # a library's call (kind 4) counts when a library frame between it and the user's code
    # holds traced values (rosen_hess's x, above the array API's zeros that makes the array)
    traced = True if kind == 0 else None
    while frame is not None:
        kind = _kind(frame.f_code)
        if kind == 2:
            return False
        if kind == 3:
            return bool(traced)
        if traced is None:
            if kind == 0:
                traced = False      # the user's code called the library on constants only
            elif kind == 4 and _handles_traced_values(frame):
                traced = True
        frame = frame.f_back
    return bool(traced)


def _fresh(trace, value):
    """``value``, a new NumPy array, as a fresh traced array of ``trace``, which owns it."""
    from .core import own
    return own(trace.const(value, snapshot=False))


def _wrapped_creator(name):
    original = _CREATORS[name]
    # NumPy leaves np.empty's values unset; a fresh one holds zeros, so that a compiled
    # function and a cached derivative see the same constant on every call
    filled = _CREATORS.get(name.replace("empty", "zeros"), original)
    sampler_output = name == "empty"

    def creator(*args, **kwargs):
        stack = LOCAL.stack
        if sampler_output and LOCAL.sampling is not None:
            # NumPy's sampler making its output, its parameters traced (samplers.py)
            sample = _samplers.output(original, args, kwargs)
            if sample is not None:
                return sample
        if not stack or not _called_by_traced_code(sys._getframe(1)) \
                or not calling(sys._getframe(1), creator):
            # not tracing, or tracegrad's / NumPy's own call; or one from compiled code
            # (Cython's np.random.choice making its np.arange), which needs an ndarray
            return original(*args, **kwargs)
        if name in ("full", "full_like"):
            result = _traced_fill(name, args, kwargs)
            if result is not None:
                return result
        result = filled(*args, **kwargs)
        if type(result) is np.ndarray and result.dtype.kind in "biufc":
            return _fresh(stack[-1], result)
        return result
    creator.__name__ = creator.__qualname__ = name
    creator.__doc__ = original.__doc__
    creator.__wrapped__ = original
    return creator


_WRAPPERS.update({name: _wrapped_creator(name) for name in _CREATORS})
_ORIGINALS = {**_CONSTRUCTORS, **_REDUCTIONS, **_CREATORS}
_LOCK = threading.Lock()
_TRACING = [0]      # threads tracing now
_NP_DICT = vars(np)


def wrap_constructors(on):
    """A thread's outermost trace starts (``on``) or ends. The wrappers above are in the
    ``numpy`` module while any thread traces; each does NumPy's own work at once in a
    thread that is not tracing."""
    with _LOCK:
        _TRACING[0] += 1 if on else -1
        if _TRACING[0] == (1 if on else 0):
            _NP_DICT.update(_WRAPPERS if on else _ORIGINALS)    # (setattr, all at once)
