"""``tg.Tensor``: a NumPy array with PyTorch's autograd semantics.

A tensor holds its value (``_data``, a NumPy array it may share with views and
``detach()``) and, when it is the result of a recorded operation, the tape tracer
of that operation (``_tracer``; its ``Node`` is the ``grad_fn``). Leaves have no
tracer: one that requires grad gets a fresh tape input each time it is used at a
new version.
"""
from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import DTypeLike

from ..ir import apply
from . import aliasing, dispatch, grad_mode
from .dispatch import call
from .tape import TAPE, EagerTracer, Version
from .tensor_repr import tensor_repr

_MODES = grad_mode._state       # this thread's grad and inference modes

_LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
_VIEW_INPLACE = ("a view of a leaf Variable that requires grad is being used in an in-place "
                 "operation.")

_COMPLEX_GRAD = ("complex tensors cannot require grad in tracegrad's eager autograd yet "
                 "(PyTorch's conjugate-Wirtinger gradients are not implemented); the "
                 "functional transforms differentiate complex code with JAX's convention: "
                 "tg.grad(f)(z), tg.grad(f, holomorphic=True)(z)")
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
    if isinstance(data, Tensor):
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
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, (list, tuple)):
        return [_untensor(d) for d in data]
    return data


class Tensor:
    """A NumPy array with PyTorch's autograd semantics (``tg.tensor`` makes one).

    Operations on tensors that require grad are recorded; ``backward()`` runs the
    adjoint of the recorded graph and accumulates into the leaves' ``.grad``.
    """

    __slots__ = ("_data", "_tracer", "_requires_grad", "_grad", "_vc", "_input",
                 "_hooks", "_base", "_retains", "_creation", "_inference", "__weakref__")
    __array_priority__ = 1000

    if TYPE_CHECKING:
        # For type checkers only: arithmetic.py, reductions.py, shapes.py & co. install the
        # operators and most methods (sum, exp, view, ...) when tracegrad is imported.
        def __getattr__(self, name: str) -> Any: ...
        def __getitem__(self, key: Any) -> Tensor: ...
        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __floordiv__(self, other: Any) -> Tensor: ...
        def __rfloordiv__(self, other: Any) -> Tensor: ...
        def __mod__(self, other: Any) -> Tensor: ...
        def __rmod__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __rpow__(self, other: Any) -> Tensor: ...
        def __matmul__(self, other: Any) -> Tensor: ...
        def __rmatmul__(self, other: Any) -> Tensor: ...
        def __and__(self, other: Any) -> Tensor: ...
        def __rand__(self, other: Any) -> Tensor: ...
        def __or__(self, other: Any) -> Tensor: ...
        def __ror__(self, other: Any) -> Tensor: ...
        def __xor__(self, other: Any) -> Tensor: ...
        def __rxor__(self, other: Any) -> Tensor: ...
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        def __eq__(self, other: Any) -> Tensor: ...  # type: ignore[override]
        def __ne__(self, other: Any) -> Tensor: ...  # type: ignore[override]
        def __neg__(self) -> Tensor: ...
        def __pos__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __invert__(self) -> Tensor: ...

    # -- construction (internal) ---------------------------------------------------
    @classmethod
    def _plain(cls, data, requires_grad=False):
        t = object.__new__(cls)
        # _set_fields, inlined (every operation makes a tensor)
        t._data = data
        t._tracer = None
        t._requires_grad = requires_grad
        t._grad = None
        t._vc = Version()
        t._input = None
        t._hooks = None
        t._base = None
        t._retains = False
        t._creation = None
        if _MODES.inference:        # made under tg.inference_mode (eager/inference.py)
            t._inference = True
        return t

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
        if _MODES.inference:
            self._inference = True

    @classmethod
    def _recorded(cls, tracer):
        t = object.__new__(cls)
        # _plain's fields, with the node's value and in-place counter
        t._data = tracer._value
        t._tracer = tracer
        t._requires_grad = False
        t._grad = None
        t._vc = tracer._handle._counter
        t._input = None
        t._hooks = None
        t._base = None
        t._retains = False
        t._creation = None
        return t

    @classmethod
    def _symbolic(cls, tracer):
        """A tensor standing for a value traced by a transform (``_data`` may be None)."""
        t = cls._plain(tracer._value)
        t._tracer = tracer
        return t

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

    # -- autograd attributes ---------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._tracer is not None or self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if self._tracer is not None:
            if not flag:
                raise RuntimeError("you can only change requires_grad flags of leaf variables. "
                                   "If you want to use a computed variable in a subgraph that "
                                   "doesn't require differentiation use var_no_grad = var.detach().")
            return
        if flag and not is_floating(self._data.dtype):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        if flag and self._data.dtype.kind == "c":
            # PyTorch hands out conjugate-Wirtinger gradients; the eager engine does not
            # convert to them yet, and a gradient in the other convention would be wrong
            raise RuntimeError(_COMPLEX_GRAD)
        self._requires_grad = bool(flag)
        self._input = None

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if requires_grad and self._tracer is None and not is_floating(self._data.dtype):
            # PyTorch's method words it so (its setter and factories as requires_grad does)
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    @property
    def _version(self):
        """How many in-place changes this tensor's storage has seen (PyTorch's counter)."""
        return self._vc.v

    @property
    def is_leaf(self) -> bool:
        return self._tracer is None

    @property
    def grad_fn(self) -> Any:
        t = self._tracer
        return t._handle if isinstance(t, EagerTracer) else None

    @property
    def grad(self) -> Tensor | None:
        if self._grad is None and self._tracer is not None and not self._retains:
            import warnings
            warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being "
                          "accessed. Its .grad attribute won't be populated during "
                          "autograd.backward(). If you indeed want the .grad field to be "
                          "populated for a non-leaf Tensor, use .retain_grad() on the non-leaf "
                          "Tensor.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None and not isinstance(value, Tensor):
            raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                            f"type {type(value).__name__}")
        if value is not None and value.shape != self.shape:
            raise RuntimeError(f"assigned grad has data of a different size: {list(value.shape)} "
                               f"vs {list(self.shape)}")
        self._grad = value

    @property
    def retains_grad(self):
        return self._retains

    def retain_grad(self) -> None:
        if self._tracer is None:
            if not self._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
            return
        self._retains = True
        import weakref
        self._tracer._handle._retain = weakref.ref(self)

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """``hook(grad)`` runs when this tensor's gradient is computed; if it returns a
        tensor, that replaces the gradient. Returns a handle with ``remove()``."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._tracer is None:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        else:
            h = self._tracer._handle
            if h._hooks is None:
                h._hooks = []
            hooks = h._hooks
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Sequence[Tensor] | None = None) -> None:
        from .engine import backward
        backward([self], None if gradient is None else [gradient], retain_graph, create_graph,
                 inputs=inputs)

    def detach(self) -> Tensor:
        # the same memory and version counter, but no view in PyTorch (``_base`` is None):
        # an in-place change of it or of its views is no change of this tensor's history
        t = Tensor._plain(self._data)
        t._vc = self._vc
        return t

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

    def detach_(self) -> Tensor:
        if self._base is not None and self._tracer is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        if self._tracer is not None:
            self._data = self._tracer._value
            self._tracer = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> Tensor:
        """The value as a tensor that does not require grad and has its own version
        counter: changes made through it are not seen by autograd."""
        t = Tensor._plain(self._data)
        return t

    @data.setter
    def data(self, other: Any) -> None:
        other = other._data if isinstance(other, Tensor) else np.asarray(other)
        self._data = other
        self._input = None
        if self._tracer is not None:
            self._tracer = _relabelled(self._tracer, other)

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
        return self._data

    def numpy(self) -> np.ndarray:
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self._concrete("numpy()")

    def item(self) -> Any:
        data = self._concrete("item()")
        if data.size != 1:
            raise RuntimeError(f"a Tensor with {data.size} elements cannot be converted to "
                               "Scalar")
        return data.item()

    def tolist(self) -> Any:
        return self._concrete("tolist()").tolist()

    def _one_element(self):
        """The one element ``float()`` / ``int()`` read (PyTorch's ValueError for more)."""
        data = self._concrete("float()")
        if data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self):
        return float(self._one_element())

    def __int__(self):
        return int(self._one_element())

    def __bool__(self):
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

    # -- in place ----------------------------------------------------------------------
    def _check_inplace(self, others=(), fills=False):
        """PyTorch's checks before an in-place change: of a leaf, of a view of one, of a
        view made under no_grad or by split; then, unless the operation only ``fills``
        (fill_, masked_fill_: they may write one place twice), that no two elements share
        memory (an expanded view)."""
        base = self._base
        if base is None:
            if self._tracer is None and self._requires_grad and grad_mode.is_grad_enabled():
                raise RuntimeError(_LEAF_INPLACE)
            # (a tensor that is no view can still be expanded: one loaded by tg.load)
            if not fills and self._data is not None and aliasing.overlapping(self._data):
                raise RuntimeError(aliasing.OVERLAP)
            return
        if grad_mode.is_grad_enabled():
            self._check_creation(self._creation, others)
            if self._tracer is not None and base._tracer is None and base._requires_grad:
                raise RuntimeError(_VIEW_INPLACE)
        if not fills and aliasing.overlapping(self._data):
            raise RuntimeError(aliasing.OVERLAP)

    def _check_creation(self, creation, others):
        """PyTorch's refusal to record an in-place change of a view made under no_grad or
        returned with others by one function (``split``), when gradients are involved."""
        if creation is not None and grad_mode.is_grad_enabled() and (
                self._base.requires_grad or self.requires_grad or any(
                    isinstance(o, Tensor) and o.requires_grad for o in others)):
            raise RuntimeError(aliasing.inplace_error(creation))

    def _inplace(self, fn, *others, name=None, reads_self=True, cast=False, fills=False):
        """Replace this tensor's value by ``fn(self, *others)`` in place, recording it when
        gradients are involved: the tensor then names the new node (its history is
        rebased, as in PyTorch), and its version goes up. Unless ``cast`` (copy_, fill_,
        indexed assignment), a result of a higher dtype category is an error."""
        self._check_inplace(others, fills)
        if self._data is not None and not self._data.flags.writeable:
            raise RuntimeError(aliasing.OVERLAP)
        mode = None
        if len(others) == 1 and not grad_mode.is_grad_enabled():
            # the common case (an update under no_grad): what mode_of finds, in one go
            o, st = others[0], self._tracer
            to = type(o)
            if (st is None or type(st) is EagerTracer) and (
                    to is int or to is float or to is Tensor and (
                        o._tracer is None or type(o._tracer) is EagerTracer)):
                mode = dispatch._PLAIN
        if mode is None:
            mode = dispatch.mode_of((self,) + others, Tensor)
        if mode == dispatch._SYMBOLIC:
            new = call(fn, self, *others)
            self._tracer, self._data = new._tracer, new._data
            return self
        _RECORD = dispatch._RECORD
        if mode == _RECORD and self._data.dtype.kind not in "fc":
            mode = None         # an integer or boolean tensor gets the value, never a history
        if mode != _RECORD:
            new = np.asarray(fn(self._data, *[o._data if isinstance(o, Tensor) else o
                                              for o in others]))
            if not cast and new.dtype != self._data.dtype and \
                    _kind_rank(new.dtype) > _kind_rank(self._data.dtype):
                raise RuntimeError(f"result type {_scalar_name(new.dtype)} can't be cast to the "
                                   f"desired output type {_scalar_name(self._data.dtype)}")
            if fills and self._base is not None and aliasing.overlapping(self._data):
                # one place seen as several elements: written where the fill changes it
                # (as PyTorch writes only the filled ones)
                np.copyto(self._data, new, casting="unsafe", where=new != self._data)
            else:
                np.copyto(self._data, new, casting="unsafe")
            self._vc.v += 1
            return self
        if self._base is not None:
            return self._inplace_view(fn, others, name, reads_self, cast)
        first = self._traced()
        res, ins = self._inplace_result(fn, first, others, reads_self, cast)
        np.copyto(self._data, res._value, casting="unsafe")
        self._vc.v += 1
        handle = res._handle
        handle._value = self._data
        handle._counter = self._vc
        handle._saved_version = self._vc.v
        if name is not None:
            handle._name = name
            # the snapshot of the old value is ours, not PyTorch's: the edge is the old node
            handle._inputs = dispatch.edges(name, [first, *ins])
        self._tracer = _relabelled(res, self._data)
        self._requires_grad = False
        return self

    def _inplace_result(self, fn, first, others, reads_self, cast):
        """The recorded new value ``fn(first, *others)`` in this tensor's dtype (PyTorch's
        refusal of a result of a higher dtype category unless ``cast``), and the traced
        operands."""
        old = _private_copy(first) if reads_self else first
        ins = [o._traced() if isinstance(o, Tensor) else o for o in others]
        res = fn(old, *ins)
        if not cast and _kind_rank(res.dtype) > _kind_rank(self._data.dtype):
            raise RuntimeError(f"result type {_scalar_name(res.dtype)} can't be cast to the "
                               f"desired output type {_scalar_name(self._data.dtype)}")
        if res.dtype != self._data.dtype:
            res = res.astype(self._data.dtype)
        return res, ins

    def _inplace_view(self, fn, others, name, reads_self, cast):
        """``_inplace``'s recorded case for a view: the new values are the operation's
        node, the base's history becomes the old base with the view's elements replaced
        by them (``CopySlices``) and the view's is the view of that (PyTorch's rebase)."""
        base = self._base
        if self._data.dtype != base._data.dtype:
            raise RuntimeError(_VIEW_DTYPE)
        idx = aliasing.index_map(self._data, base._data)
        first = self._traced() if self._tracer is not None else \
            aliasing.gathered(base._traced(), idx)
        res, ins = self._inplace_result(fn, first, others, reads_self, cast)
        edges = dispatch.edges(name or "", [first, *ins])
        if name is not None:
            res._handle._name = name
            res._handle._inputs = edges
        was = base._traced()
        new = aliasing.copy_slices(was, idx, res)
        np.copyto(self._data, res._value, casting="unsafe")
        self._vc.v += 1
        h = new._handle
        # PyTorch's CopySlices: the old base, then the operation's other operands
        h._name, h._inputs = "CopySlices", (was._handle,) + edges[1:]
        h._value, h._counter, h._saved_version = base._data, base._vc, base._vc.v
        base._tracer = _relabelled(new, base._data)
        base._requires_grad = False
        self._tracer = None
        self._rebased()
        return self

    def __setitem__(self, key, value):
        key = _index_key(key)
        if self._creation is not None:
            from .indexing import getitem_name, is_basic
            items = key if isinstance(key, tuple) else (key,)
            whole = all(k is Ellipsis for k in items)
            # PyTorch writes through a view of the view (a select, a slice), named so
            self._check_creation(self._creation if whole or not is_basic(key) else
                                 aliasing.derived(self._creation, getitem_name(key)), (value,))
        number = not isinstance(value, (Tensor, np.ndarray))
        if not isinstance(value, Tensor):
            value = np.asarray(value, dtype=self.dtype) if not isinstance(value, np.ndarray) \
                else value
            if not (grad_mode.is_grad_enabled() and (self.requires_grad or self._base is not None
                                                      and self._base.requires_grad)):
                self._check_inplace(fills=number)
                self._data[key] = value
                self._vc.v += 1
                return
            value = Tensor._plain(np.asarray(value))
        from .indexing import index_update, is_basic
        self._inplace(lambda x, v: index_update(x, key, v), value,
                      name="CopySlices" if is_basic(key) else "IndexPutBackward0",
                      reads_self=False, cast=True, fills=number)


dispatch.Tensor = Tensor


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
    if isinstance(key, Tensor):
        return key._concrete("indexing")
    if isinstance(key, list) and any(isinstance(k, Tensor) for k in key):
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
    fn = t.grad_fn
    return tensor_repr(t._data, default_dtype(), None if fn is None else fn.name(),
                       t.requires_grad, t.shape)
