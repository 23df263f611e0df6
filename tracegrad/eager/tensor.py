"""``tg.Tensor``: a NumPy array with PyTorch's autograd semantics.

The class is put together here, once. Its fields, shape attributes and conversions to
Python and NumPy are ``TensorBase`` (tensor_base.py); its constructors and autograd
attributes (``requires_grad``, ``grad``, ``backward``, ``detach``, hooks) are below; its
operations are the mixin of each concern module, every method a ``def`` in one of their
class bodies (``def softmax`` is in reductions.py):

- ``ArithmeticMethods`` (arithmetic.py): operators, unary functions, comparisons,
  products, ``clamp``, ``maximum``;
- ``ReductionMethods`` (reductions.py): ``sum``, ``mean``, ``max``, ``std``, ``softmax``,
  ``norm``, ``cumsum``, ...;
- ``ShapeMethods`` (shapes.py): ``view``, ``reshape``, ``permute``, ``expand``,
  indexing, ``split``, ``gather``, ...;
- ``ViewMethods`` (views.py): ``select``, ``unfold``, ``as_strided``, ``real``, ``H``, ...;
- ``InplaceMethods`` (inplace.py): ``add_`` & co., indexed assignment, fills, the
  in-place machinery;
- ``ConversionMethods`` (conversion.py): ``to``, ``float()``, ``new_zeros``, ...;
- ``MoreMethods`` (tensor_methods.py): sorting, tests, logical operations, scattering,
  triangles, queries;
- ``IndexedMethods`` (indexed_ops.py): ``index_add``, ``scatter_reduce``, ``kthvalue``,
  ``diff``;
- ``LinalgMethods`` (linalg.py): torch's older linear-algebra names (``det``, ``svd``,
  ``cholesky``, ``inverse``, ...);
- ``MultinomialMethods`` (multinomial.py): ``multinomial``;
- ``InferenceMethods`` (inference.py): ``is_inference``;
- ``MathMethods`` (math_ops.py): ``erf``, ``lgamma``, ``xlogy``, ``hypot``, ``cummax``, ...;
- ``ShapeExtraMethods`` (shape_extras.py): ``repeat_interleave``, ``tensor_split``,
  ``take``, ``index_put``, ``masked_scatter``, ``rot90``, ``unsqueeze_``, ...;
- ``SamplingMethods`` (sampling_methods.py): ``bernoulli``, ``exponential_``, ``cauchy_``, ...;
- ``MiscMethods`` (tensor_misc.py): ``storage_offset``, ``data_ptr``, ``resize_``,
  ``apply_``/``map_``, ``prelu``, ``narrow_copy``, ``is_conj``, ``dim_order``, ...

Nothing assigns methods onto ``Tensor`` after this class statement
(``tests/test_eager_tensor_layout.py`` checks it).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..ir import apply
from .arithmetic import ArithmeticMethods
from .conversion import ConversionMethods
from .indexed_ops import IndexedMethods
from .inference import InferenceMethods
from .inplace import InplaceMethods
from .linalg import LinalgMethods
from .math_ops import MathMethods
from .multinomial import MultinomialMethods
from .reductions import ReductionMethods
from .sampling_methods import SamplingMethods
from .shape_extras import ShapeExtraMethods
from .shapes import ShapeMethods
from .tape import EagerTracer, HookList, Version
from .tensor_base import (  # noqa: F401  (re-exported: the modules above import them here)
    _MODES,
    CAPTURE,
    RemovableHandle,
    Size,
    TensorBase,
    _default_float,
    _leaving_capture,
    _private_copy,
    _relabelled,
    _scalar_name,
    as_array,
    default_dtype,
    format_tensor,
    is_floating,
)
from .tensor_methods import MoreMethods
from .tensor_misc import MiscMethods
from .views import ViewMethods

_COMPLEX_GRAD = ("complex tensors cannot require grad in tracegrad's eager autograd yet "
                 "(PyTorch's conjugate-Wirtinger gradients are not implemented); the "
                 "functional transforms differentiate complex code with JAX's convention: "
                 "tg.grad(f)(z), tg.grad(f, holomorphic=True)(z)")


class Tensor(ArithmeticMethods, ReductionMethods, ShapeMethods, ViewMethods, InplaceMethods,
             ConversionMethods, MoreMethods, IndexedMethods, LinalgMethods, MultinomialMethods,
             InferenceMethods, MathMethods, ShapeExtraMethods, SamplingMethods, MiscMethods,
             TensorBase):
    """A NumPy array with PyTorch's autograd semantics (``tg.tensor`` makes one).

    Operations on tensors that require grad are recorded; ``backward()`` runs the
    adjoint of the recorded graph and accumulates into the leaves' ``.grad``.
    """

    __slots__ = ()

    # -- construction (internal) ---------------------------------------------------
    # The constructors of every result: a ``Tensor``, whatever subclass (``Parameter``)
    # they are reached through; the modules below reach them through a tensor in hand.
    @staticmethod
    def _plain(data, requires_grad=False):
        t = object.__new__(Tensor)
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
        if CAPTURE.get() is not None:     # made inside a tg.compile capture
            CAPTURE.get().made(t)
        return t

    @staticmethod
    def _recorded(tracer):
        t = object.__new__(Tensor)
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

    @staticmethod
    def _symbolic(tracer):
        """A tensor standing for a value traced by a transform (``_data`` may be None)."""
        t = Tensor._plain(tracer._value)
        t._tracer = tracer
        return t

    # -- autograd ----------------------------------------------------------------------
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
        if value is not None and not isinstance(value, TensorBase):
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
        _leaving_capture("Tensor.retain_grad()")
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
        _leaving_capture("Tensor.register_hook")
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._tracer is None:
            if self._hooks is None:
                self._hooks = HookList()
            hooks = self._hooks
        else:
            h = self._tracer._handle
            if h._hooks is None:
                h._hooks = HookList()
            hooks = h._hooks
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def detach(self) -> Tensor:
        # the same memory and version counter, but no view in PyTorch (``_base`` is None):
        # an in-place change of it or of its views is no change of this tensor's history
        traced = self._tracer
        if traced is not None and not isinstance(traced, EagerTracer):
            # a transform's traced value (torch.func): the value, with no derivative
            return Tensor._symbolic(apply("stop_gradient", traced))
        t = self._plain(self._data)
        t._vc = self._vc
        return t

    def detach_(self) -> Tensor:
        if self._base is not None and self._tracer is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        if self._tracer is not None and not isinstance(self._tracer, EagerTracer):
            self._tracer = apply("stop_gradient", self._tracer)    # (torch.func: see detach)
            return self
        if self._tracer is not None:
            self._data = self._tracer._value
            self._tracer = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> Tensor:
        """The value as a tensor that does not require grad and has its own version
        counter: changes made through it are not seen by autograd."""
        traced = self._tracer
        if traced is not None and not isinstance(traced, EagerTracer):
            return Tensor._symbolic(apply("stop_gradient", traced))   # (torch.func)
        return self._plain(self._data)

    @data.setter
    def data(self, other: Any) -> None:
        other = other._data if isinstance(other, TensorBase) else np.asarray(other)
        self._data = other
        self._input = None
        if self._tracer is not None:
            self._tracer = _relabelled(self._tracer, other)

    def backward(self, gradient: Tensor | None = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Sequence[Tensor] | None = None) -> None:
        from .engine import backward
        backward([self], None if gradient is None else [gradient], retain_graph, create_graph,
                 inputs=inputs)
