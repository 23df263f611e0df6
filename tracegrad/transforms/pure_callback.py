"""``tg.pure_callback``: call a Python function on concrete NumPy values inside a trace.

```python
def host_sort(x):                      # any Python: SciPy, a C library, ...
    return np.sort(x)

def f(x):
    y = tg.pure_callback(host_sort, tg.ShapeDtypeStruct(x.shape, x.dtype), x)
    return np.sum(y * x)
```

The call is one node of the graph (the ``pure_callback`` primitive, ``ir/prims/callback.py``)
whose output shapes and dtypes are the declared ones, so ``tg.jit`` compiles around it on
the NumPy backend and the JAX backend (``jax.pure_callback``). The function must be pure:
it may run once per trace, once per call, or not at all when its results are unused. It
has no derivative of its own: wrap it in ``tg.custom_vjp`` (whose ``bwd`` may itself use
``pure_callback``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..tracer import Tracer, flatten, unflatten, user_src

__all__ = ["ShapeDtypeStruct", "pure_callback"]


class ShapeDtypeStruct:
    """A declared result: a shape and a dtype, like ``jax.ShapeDtypeStruct``.

    Args:
        shape: a tuple of sizes.
        dtype: anything ``np.dtype`` takes.
    """
    __slots__ = ("shape", "dtype")

    def __init__(self, shape, dtype) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"

    def __eq__(self, other) -> bool:
        return isinstance(other, ShapeDtypeStruct) and (self.shape, self.dtype) == (
            other.shape, other.dtype)

    __hash__ = None


def _name(fn):
    return getattr(fn, "__name__", None) or type(fn).__name__


def _is_operand(leaf):
    return isinstance(leaf, (Tracer, np.ndarray, np.generic, float, int, complex, bool))


class PureCallback:
    """The ``callback`` parameter of a ``pure_callback`` node (``ir/prims/callback.py``)."""

    def __init__(self, fn, in_tree, static, out_tree, out_avals, vectorized, src):
        self.fn, self.in_tree, self.static = fn, in_tree, static
        self.out_tree, self.out_avals = out_tree, out_avals
        self.vectorized, self.src = vectorized, src
        self.name = _name(fn)

    def __repr__(self):
        return f"pure_callback({self.name})"

    def run(self, operands):
        """Call the function on concrete arrays; check and return its results."""
        it = iter(operands)
        leaves = [np.asarray(next(it)) if s is _OPERAND else s for s in self.static]
        result = self.fn(*unflatten(self.in_tree, leaves))
        out_leaves, out_tree = flatten(result)
        at = f" (the call at {self.src})" if self.src else ""
        if out_tree != self.out_tree:
            raise TraceError(f"tg.pure_callback({self.name}) returned a result of structure "
                             f"{out_tree!r}, but result_shape_dtypes declares {self.out_tree!r}"
                             f"{at}")
        outs = []
        for k, (leaf, (shape, dtype)) in enumerate(zip(out_leaves, self.out_avals)):
            arr = np.asarray(leaf)
            if arr.shape != shape:
                raise TraceError(f"tg.pure_callback({self.name}) returned shape {arr.shape} for "
                                 f"result {k}, but result_shape_dtypes declares {shape}{at}")
            if arr.dtype != dtype:
                # as JAX ("Incorrect output dtype"): never cast, even to a related dtype
                # (a float64 result declared float32 would lose precision unseen)
                raise TraceError(f"tg.pure_callback({self.name}) returned dtype "
                                 f"{arr.dtype.name} for result {k}, but result_shape_dtypes "
                                 f"declares {dtype.name}: return that dtype (for example "
                                 f"np.asarray(result, np.{dtype.name})){at}")
            outs.append(np.array(arr, copy=True))
        return tuple(outs)

    @classmethod
    def make(cls, fn, result_shape_dtypes, args, vectorized=False):
        """The callback of ``pure_callback(fn, result_shape_dtypes, *args)`` and its node's
        operands (the array leaves of ``args``)."""
        out_specs, out_tree = flatten(result_shape_dtypes)
        if not out_specs:
            raise TraceError(f"tg.pure_callback({_name(fn)}) needs at least one declared "
                             f"result{_at()}")
        try:
            out_avals = [(tuple(int(s) for s in spec.shape), np.dtype(spec.dtype))
                         for spec in out_specs]
        except (AttributeError, TypeError) as e:
            raise TraceError(f"tg.pure_callback: result_shape_dtypes must be a pytree of "
                             f"objects with .shape and .dtype (tg.ShapeDtypeStruct, "
                             f"np.empty(...)): {e}{_at()}") from None
        leaves, in_tree = flatten(tuple(args))
        static = [_OPERAND if _is_operand(leaf) else leaf for leaf in leaves]
        operands = [leaf for leaf in leaves if _is_operand(leaf)]
        return cls(fn, in_tree, static, out_tree, out_avals, bool(vectorized),
                   user_src()), operands

    def batched(self, size):
        """The same function given a batch axis in front of every operand and result."""
        return PureCallback(self.fn, self.in_tree, self.static, self.out_tree,
                         [((size,) + tuple(s), d) for s, d in self.out_avals],
                         self.vectorized, self.src)


_OPERAND = object()   # a leaf that travels as a node operand


def pure_callback(fn: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  vectorized: bool = False) -> Any:
    """Call ``fn(*args)`` on concrete NumPy arrays, also inside a trace or ``tg.jit``.

    Args:
        fn: a pure Python function of NumPy arrays (and whatever else ``args`` holds).
        result_shape_dtypes: a pytree of objects with ``.shape`` and ``.dtype``
            (``tg.ShapeDtypeStruct``, ``np.empty(...)``, ``jax.ShapeDtypeStruct``): what
            ``fn`` returns, in the same structure.
        *args: the arguments, a pytree whose array leaves may be traced.
        vectorized: ``fn`` accepts operands with a leading batch axis (every operand
            gets one under ``tg.vmap``) and returns results with it; otherwise
            ``tg.vmap`` calls it once per row.

    Returns:
        ``fn``'s results, in the declared structure, shapes and dtypes.

    Raises:
        TraceError: ``fn`` returned another structure, shape or dtype than declared
            (when it runs; as in JAX, a result is never cast to the declared dtype: a
            Python float is float64, an int int64), or a derivative was asked for (wrap
            the caller in ``tg.custom_vjp``).
    """
    callback, operands = PureCallback.make(fn, result_shape_dtypes, args, vectorized)
    if not any(isinstance(o, Tracer) for o in operands):
        return unflatten(callback.out_tree, list(callback.run(operands)))
    outs = apply("pure_callback", *operands, callback=callback)
    return unflatten(callback.out_tree, list(outs))


def _at():
    src = user_src()
    return f" (at {src})" if src else ""
