"""``TensorBase``: what every tensor is, below the operations ``tg.Tensor`` inherits.

A tensor holds its value (``_data``, a NumPy array it may share with views and
``detach()``) and, when it is the result of a recorded operation, the tape tracer
of that operation (``_tracer``; its ``Node`` is the ``grad_fn``). Leaves have no
tracer: one that requires grad gets a fresh tape input each time it is used at a
new version.

This module holds the fields, the autograd attributes and the conversions to Python and
NumPy; the operations are the mixins of the concern modules (arithmetic.py,
reductions.py, shapes.py, views.py, inplace.py, conversion.py, tensor_methods.py), and
``tensor.py`` puts them together as ``Tensor``. The modules below ``tensor.py`` never
name that class: they test ``isinstance(x, TensorBase)`` and make results with the
constructors of a tensor in hand (``x._plain(value)``, ``type(x)._recorded(tracer)``),
which make a ``Tensor`` whatever subclass ``x`` is.
"""
from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike

from ..ir import apply
from . import aliasing, grad_mode
from .tape import TAPE, EagerTracer, Version
from .tensor_repr import tensor_repr

_MODES = grad_mode._state       # this thread's grad and inference modes (per thread)

# the ``tg.compile`` capture running in this thread (or asyncio task), else None: while
# one runs, every operation goes to it (``eager/compile/capture.py``), so that tensors
# whose values are its tracers are recorded into its graph
CAPTURE: contextvars.ContextVar = contextvars.ContextVar("tracegrad_capture", default=None)

# the ``tg.compile`` call running eagerly after a graph break in this thread (or task), else
# None: while it runs, the submodules it calls and ``optimizer.step()`` run through their
# own compiled captures (``eager/compile/partial.py``)
BROKEN: contextvars.ContextVar = contextvars.ContextVar("tracegrad_broken", default=None)


def _leaving_capture(what):
    """Under a ``tg.compile`` capture, a tensor's value leaving for Python or NumPy code is a
    graph break (``eager/compile``): the value is not known until the graph runs."""
    capture = CAPTURE.get()
    if capture is not None:
        capture.graph_break(what)

if TYPE_CHECKING:
    pass

_VIEW_DTYPE = ("tracegrad records in-place changes of a view only when the view has its "
               "base's dtype (not through view_as_real, view_as_complex, real or imag)")
# torch.set_default_dtype's dtype: per thread (and per asyncio task), not a process-wide
# switch another thread's code would see change under it; a new thread starts at float32
_default_float: contextvars.ContextVar = contextvars.ContextVar("tracegrad_default_float",
                                                                default=None)
_FLOAT32 = np.dtype(np.float32)


def default_dtype():
    dtype = _default_float.get()
    return _FLOAT32 if dtype is None else dtype


def is_floating(dtype):
    return np.dtype(dtype).kind in "fc"


def as_array(data, dtype=None):
    """``data`` as a fresh NumPy array with PyTorch's dtype rules: Python floats take the
    default float dtype, NumPy arrays keep theirs, integers are int64."""
    if isinstance(data, TensorBase):
        arr = np.array(data._data, copy=True)
    elif isinstance(data, (np.ndarray, np.generic)):
        arr = np.array(data, copy=True)
    else:
        data = _untensor(data)
        arr = np.array(data)
        if arr.dtype == object or arr.dtype.kind not in "biufc":
            raise TypeError(f"Could not infer dtype of {type(data).__name__}")
        if dtype is not None:      # straight from Python's numbers: no rounding on the way
            return arr.astype(dtype)
        mixed = _sequence_dtype(data) if isinstance(data, (list, tuple)) else None
        if mixed is not None:      # NumPy scalars or arrays among the elements
            return arr.astype(mixed)
        if arr.dtype == np.float64:
            arr = arr.astype(default_dtype())
        elif arr.dtype == np.complex128:    # the complex type of the default float dtype
            arr = arr.astype(np.result_type(default_dtype(), np.complex64))
        elif arr.dtype.kind in "iu":
            arr = arr.astype(np.int64)
    if dtype is not None:
        arr = arr.astype(dtype)
    return arr


def _sequence_dtype(data):
    """PyTorch's dtype for a nested sequence holding NumPy scalars or arrays (each counts
    with its own dtype, a Python float with the default one, an int as int64; promoted
    with PyTorch's rules: ``[np.float64(1.0)]`` is float64, ``[np.int32(1)]`` int32), or
    None when it holds Python numbers only (the rule above applies)."""
    from .promotion import promote_types
    found, dtype = False, None
    stack = [data]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
            continue
        if isinstance(v, (np.ndarray, np.generic)):
            found, d = True, v.dtype
        elif isinstance(v, bool):
            d = np.dtype(np.bool_)
        elif isinstance(v, int):
            d = np.dtype(np.int64)
        elif isinstance(v, float):
            d = np.dtype(default_dtype())
        elif isinstance(v, complex):
            d = np.result_type(default_dtype(), np.complex64)
        else:
            return None
        dtype = promote_types(dtype, d)
    return dtype if found else None


def _untensor(data):
    if isinstance(data, TensorBase):
        return data._data
    if isinstance(data, (list, tuple)):
        return [_untensor(d) for d in data]
    return data


class TensorBase:
    """The fields of a tensor and what reads them (``Tensor`` adds the autograd attributes
    and the operations)."""

    __slots__ = ("_data", "_tracer", "_requires_grad", "_grad", "_vc", "_input",
                 "_hooks", "_base", "_retains", "_creation", "_inference", "__weakref__")
    __array_priority__ = 1000

    # -- construction (internal) ---------------------------------------------------
    # (the constructors ``_plain``, ``_recorded`` and ``_symbolic`` are ``Tensor``'s, the
    # one place that names the class of a result)
    def _set_fields(self, data, requires_grad=False):
        self._data = data
        self._tracer = None
        self._requires_grad = requires_grad
        self._grad = None
        self._vc = Version()
        self._input = None
        self._hooks = None
        self._base = None
        self._retains = False
        self._creation = None
        if _MODES.inference:        # made under tg.inference_mode (eager/inference.py)
            self._inference = True
        if CAPTURE.get() is not None:     # made inside a tg.compile capture
            CAPTURE.get().made(self)

    def __init__(self, *args: Any, requires_grad: bool = False, dtype: DTypeLike = None,
                 device: Any = None) -> None:
        """``tg.Tensor(data)`` or ``tg.Tensor(*sizes)``, as ``torch.Tensor``: the default
        float dtype (``tg.Tensor([1, 2])`` is float32), zeros for sizes."""
        if device is not None:
            from .device import resolve
            resolve(device)
        dtype = default_dtype() if dtype is None else np.dtype(dtype)
        if len(args) == 1 and args[0] is None:
            args = ()
        if not args or all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                           for a in args) or len(args) == 1 and isinstance(args[0], Size):
            sizes = (0,) if not args else tuple(args[0]) if isinstance(args[0], Size) else args
            data = np.zeros(tuple(int(n) for n in sizes), dtype)
        elif len(args) == 1:
            data = as_array(args[0], dtype)
        else:
            raise TypeError(f"new() received an invalid combination of arguments - got "
                            f"({', '.join(type(a).__name__ for a in args)})")
        self._set_fields(data)
        if requires_grad:
            self.requires_grad = True

    def _traced(self):
        """This tensor as a tape tracer: its recorded node, or an input node for a leaf."""
        t = self._tracer
        if t is not None:
            if self._base is not None and self._base._tracer is not None and \
                    isinstance(t, EagerTracer) and t._handle._saved_version != self._vc.v:
                # PyTorch rebases the history of a view whose base changed in place (the
                # old one would skip the in-place operation's derivative): the view again,
                # from the base's history now. (A view of a leaf changed under no_grad keeps
                # a valid history: views read no values.)
                if self._creation is not None and self._creation[0] != "no_grad":
                    raise RuntimeError(aliasing.rebase_error(self._creation))
                return self._rebased()
            if t._handle._value is None:        # freed by a backward: this tensor still has it
                t._handle._value = self._data
            return t
        # one input node for this tensor's storage, whatever its version: the nodes that
        # read it keep the version they saw (``Node._pver``), which a backward checks
        hit = self._input
        if hit is not None and hit._value is self._data:
            return hit
        t = TAPE.input(self._data, self._vc, self if self._requires_grad else None)
        self._input = t
        return t

    @property
    def _version(self):
        """How many in-place changes this tensor's storage has seen (PyTorch's counter)."""
        return self._vc.v

    def _rebased(self):
        """This view's history made again from its base's current one (PyTorch's
        ``AsStridedBackward0``), after the base changed in place."""
        base = self._base
        if self._data.dtype != base._data.dtype:
            raise RuntimeError(_VIEW_DTYPE)
        of = base._traced()
        t = aliasing.gathered(of, aliasing.index_map(self._data, base._data))
        h = t._handle
        h._name, h._inputs = "AsStridedBackward0", (of._handle,)
        h._value, h._counter, h._saved_version = self._data, self._vc, self._vc.v
        self._tracer = t = _relabelled(t, self._data)
        return t

    # -- basic attributes -----------------------------------------------------------
    @property
    def shape(self) -> Size:
        data = self._data
        if type(data) is np.ndarray:
            return Size(data.shape)
        return Size(np.shape(data) if data is not None else self._tracer.shape)

    def size(self, dim: int | None = None) -> Any:
        shape = self.shape
        return shape if dim is None else shape[dim]

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype if self._data is not None else self._tracer.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        data = self._data
        if type(data) is np.ndarray:
            return data.size
        return int(np.prod(self.shape, dtype=np.int64))

    nelement = numel

    @property
    def device(self):
        from .device import CPU
        return CPU

    @property
    def is_cuda(self):
        return False

    @property
    def is_cpu(self):
        return True

    def get_device(self):
        return -1                           # PyTorch's answer for a CPU tensor

    def element_size(self):
        return self.dtype.itemsize

    def is_floating_point(self):
        return is_floating(self.dtype)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    # -- leaving the tensor world ---------------------------------------------------
    def _concrete(self, what):
        if self._data is None:
            from ..errors import TraceError
            raise TraceError(f"{what} needs a concrete value, but this tensor is traced "
                             "abstractly here (inside a graph transformation)")
        t = self._tracer
        if t is not None and not isinstance(t, EagerTracer):
            # a transform's traced value (torch.func): reading it is recorded as a guard,
            # as the tracer's own reads are, so that vmap refuses a value that is one
            # example's (a branch, .item(), an index) instead of using it for every row
            t._trace.guard(t, np.array(t._concrete(what), copy=True))
        return self._data

    def numpy(self) -> np.ndarray:
        _leaving_capture("Tensor.numpy()")
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self._concrete("numpy()")

    def item(self) -> Any:
        capture = CAPTURE.get()
        if capture is not None:     # an integer stays in the graph (compile/scalars.py)
            return capture.item(self)
        data = self._concrete("item()")
        if data.size != 1:
            raise RuntimeError(f"a Tensor with {data.size} elements cannot be converted to "
                               "Scalar")
        return data.item()

    def tolist(self) -> Any:
        capture = CAPTURE.get()
        if capture is not None:     # integers stay in the graph (compile/scalars.py)
            return capture.tolist(self)
        return self._concrete("tolist()").tolist()

    def _one_element(self):
        """The one element ``float()`` / ``int()`` read (PyTorch's ValueError for more)."""
        _leaving_capture("float() or int() of a tensor")
        data = self._concrete("float()")
        if data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self):
        return float(self._one_element())

    def __int__(self):
        return int(self._one_element())

    def __bool__(self):
        _leaving_capture("bool() of a tensor (Python control flow on its value)")
        data = self._concrete("bool()")
        if data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(data.item())

    def __index__(self):
        data = self._concrete("using a tensor as an index")
        if data.dtype.kind not in "iub" or data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(data.item())

    def __array__(self, dtype=None, copy=None):
        _leaving_capture("converting a tensor to a NumPy array")
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        data = self._concrete("converting to a NumPy array")
        return data if dtype is None else data.astype(dtype)

    def __repr__(self):
        return format_tensor(self)

    def __format__(self, spec):
        """``format(t, "+.2f")``: a 0-d tensor formats as its Python number; otherwise only
        the empty format (``str(t)``), as in PyTorch."""
        if self.dim() == 0 and self._data is not None:
            return format(self.item(), spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return repr(self)

    __hash__ = object.__hash__



def _kind_rank(dtype):
    """PyTorch's categories: an in-place result may not move up from bool to integer to
    floating to complex (``int_tensor += 1.5`` raises rather than truncating)."""
    return "biufc".index(np.dtype(dtype).kind.replace("u", "i"))


def _scalar_name(dtype):
    return {"float64": "Double", "float32": "Float", "float16": "Half", "int64": "Long",
            "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
            "complex128": "ComplexDouble", "complex64": "ComplexFloat"}.get(
        np.dtype(dtype).name, np.dtype(dtype).name)


def _private_copy(tracer):
    """A node standing for ``tracer``'s current value with a private copy of it: the
    in-place operation about to overwrite the storage must not change what its own
    backward reads."""
    snap = apply("reshape", tracer, shape=tuple(tracer.shape))
    value = np.array(tracer._value, copy=True)
    snap._value = snap._handle._value = value
    return snap


def _relabelled(tracer, value):
    t = EagerTracer(TAPE, tracer._node, value.shape, value.dtype, value)
    t._handle = tracer._handle
    return t


def _index_key(key):
    """A tensor used as an index becomes its NumPy value."""
    if isinstance(key, tuple):
        return tuple(_index_key(k) for k in key)
    if isinstance(key, TensorBase):
        return key._concrete("indexing")
    if isinstance(key, list) and any(isinstance(k, TensorBase) for k in key):
        return [_index_key(k) for k in key]
    return key


class Size(tuple):
    """``tensor.shape``: a tuple that prints as PyTorch's ``torch.Size([2, 3])``."""

    def __repr__(self):
        return f"torch.Size({list(self)})"

    def numel(self):
        return int(np.prod(self, dtype=np.int64))


class RemovableHandle:
    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        for i, h in enumerate(self._hooks):
            if h is self._hook:
                del self._hooks[i]
                return

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def format_tensor(t):
    _leaving_capture("printing a tensor")
    fn = t.grad_fn
    return tensor_repr(t._data, default_dtype(), None if fn is None else fn.name(),
                       t.requires_grad, t.shape)
