"""The primitive registry: one entry per primitive, every rule side by side.

A primitive entry holds
  - ``impl(*arrays, **params)``: the NumPy implementation;
  - ``abstract(*avals, **params) -> (shape, dtype)``: the shape/dtype rule, used
    when a graph is built without concrete values (inside the passes). When
    omitted, the rule runs ``impl`` on stand-in arrays of the right shapes
    made with zero strides, which is cheap for views and small reductions;
  - ``vjp(g, out, *args, **params)``: one cotangent per operand (``None`` for
    a zero or for a non-differentiable operand). ``vjp=None`` means no
    gradient flows through the primitive at all;
  - ``jvp(tangents, out, *args, **params)``: the output tangent, where
    ``tangents`` has ``None`` for operands whose tangent is zero;
  - ``jax(*arrays, **params)``: the lowering to jax.numpy (optional);
  - ``complex``: True when the VJP and JVP rules also hold for complex operands,
    with JAX's convention (a VJP is the transpose of the JVP, no conjugation:
    ``g * f'(z)`` for a holomorphic ``f``). Differentiating a primitive that is
    not marked through complex values raises ``TraceError``, never a wrong number.

Rules are NumPy code: applied to traced values they record graph nodes, which
is what lets the adjoint pass differentiate its own output again.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ..errors import TraceError


class Aval(NamedTuple):
    """The abstract value of an operand: what is known without its data."""
    shape: tuple
    dtype: np.dtype

    @property
    def ndim(self):
        return len(self.shape)


@dataclass(eq=False)
class Primitive:
    name: str
    impl: Callable
    vjp: Callable | None = None
    jvp: Callable | None = None
    abstract: Callable | None = None
    jax: Callable | None = None
    # Operand positions that never carry a gradient (index arrays, conditions).
    nondiff_args: tuple = ()
    doc: str = ""
    family: str = ""
    complex: bool = False
    extra: dict = field(default_factory=dict)

    def __repr__(self):
        return f"<primitive {self.name}>"

    def shape_dtype(self, avals, params):
        if self.abstract is not None:
            shape, dtype = self.abstract(*avals, **params)
            return tuple(shape), np.dtype(dtype)
        out = self.impl(*(_standin(a) for a in avals), **params)
        return out.shape, out.dtype


def _standin(aval: Aval):
    """An array of ``aval``'s shape and dtype that costs no memory."""
    fill = 1 if np.dtype(aval.dtype).kind in "fc" else 0
    return np.broadcast_to(np.array(fill, dtype=aval.dtype), aval.shape)


REGISTRY: dict[str, Primitive] = {}


def register(name, impl, **rules) -> Primitive:
    if name in REGISTRY:
        raise ValueError(f"primitive {name!r} is registered twice")
    prim = Primitive(name, impl, **rules)
    REGISTRY[name] = prim
    return prim


def get(name) -> Primitive:
    try:
        return REGISTRY[name]
    except KeyError:
        raise TraceError(f"unknown primitive {name!r}") from None


# Applying a primitive dispatches on the operands' types, the way NumPy hands a ufunc to
# an operand's ``__array_ufunc__``: the first operand whose type defines
# ``__tg_bind__(name, args, params, src=None)`` handles the application (the tracer's
# ``Tracer`` records a graph node, in the innermost trace among all the operands), so rules
# can apply a primitive that has no NumPy spelling (``index_update``) and still be traced.
# On anything else, the primitive's NumPy implementation runs. type -> its
# ``__tg_bind__`` or None, looked up once per type (define it in the class body).
_BINDERS: dict = {}


def binder(args):
    """The ``__tg_bind__`` of the first of ``args`` whose type has one, else None."""
    for a in args:
        t = type(a)
        try:
            found = _BINDERS[t]
        except KeyError:
            found = _BINDERS[t] = getattr(t, "__tg_bind__", None)
        if found is not None:
            return found
    return None


def apply(name, *args, **params):
    """Apply primitive ``name``: a graph node on traced values, NumPy otherwise."""
    bind = binder(args)
    if bind is not None:
        return bind(name, args, params)
    return REGISTRY[name].impl(*args, **params)
