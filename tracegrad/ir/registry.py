"""The primitive registry: one entry per primitive, every fact about it side by side.

A primitive entry holds its rules
  - ``impl(*arrays, **params)``: the NumPy implementation;
  - ``abstract(*avals, **params) -> (shape, dtype)``: the shape/dtype rule, used
    when a graph is built without concrete values (inside the passes). When
    omitted, the rule runs ``impl`` on stand-in arrays of the right shapes
    made with zero strides, which is cheap for views and small reductions;
  - ``vjp(g, out, *args, **params)``: one cotangent per operand (``None`` for
    a zero or for a non-differentiable operand). ``vjp=None`` means no
    gradient flows through the primitive at all. An entry may add, in ``extra``,
    ``vjp_needed(needed, g, out, *args, **params)``: the same cotangents, where
    ``needed[i]`` False lets it skip (return None for) operand ``i``'s, whose graph nodes
    the reverse pass would only drop (``mul`` by a constant: no ``g * x`` for it);
  - ``jvp(tangents, out, *args, **params)``: the output tangent, where
    ``tangents`` has ``None`` for operands whose tangent is zero;
  - ``jax(*arrays, **params)``: the lowering to jax.numpy (optional);
  - ``batch(size, args, batched, out_shape, **params)``: the batching rule (vmap).
    ``args`` are the operands with the batch axis in front of the batched ones,
    ``batched`` flags which are, ``out_shape`` is the unbatched output shape; it
    returns the output with the batch axis in front, or ``NotImplemented`` for a
    case it declines. ``batch=None``: evaluated row by row (``passes.batch``'s
    fallback, always correct, slower);

and its facts, which the passes, runtimes and front ends read instead of keeping
tables of their own (the fields listed in ``FACTS``; ``register`` records which of
them an entry or its family states in ``declared``; every built-in primitive belongs to a
family of ``FAMILIES``, which decides every fact but ``batch``, and states where it
differs):
  - ``complex``: True when the VJP and JVP rules also hold for complex operands,
    with JAX's convention (a VJP is the transpose of the JVP, no conjugation:
    ``g * f'(z)`` for a holomorphic ``f``). Differentiating a primitive that is
    not marked through complex values raises ``TraceError``, never a wrong number;
  - ``aliasing``: what memory ``impl``'s result may share (the generated code
    writes into buffers it owns, and copies outputs that would alias the caller's):
      ``"fresh"``: always a new array (every ufunc, ``matmul``, reductions; each
      output of a multi-output one an array of its own);
      ``"view"``: NumPy's own result is a view of operand 0 (or operand 0 itself),
      as a user's program sees it (``reshape``, ``transpose``, basic indexing);
      ``"identity"``: may be operand 0 itself (``stop_gradient``, a cast to the
      same dtype), but is no view NumPy would give the user;
      ``"unknown"``: may share memory with any operand (``einsum``, ``np.real``):
      never written into, never followed as a view;
  - ``ufunc``: the NumPy ufunc ``impl`` is (a traced ``np.<ufunc>`` call records this
    primitive; the code generator calls it with ``out=``), or None;
  - ``spelling``: the Python source the code generator writes for a node, a
    ``str.format`` template with ``{0}``, ``{1}``… for the operands and ``{param}``
    for a parameter's literal (``"{0} + {1}"``, ``"{0}.reshape({shape})"``; an
    ``Index`` parameter is written as a subscript whose array entries are the
    operands after the first), or None (a call to ``impl``). Where a parameter has no
    literal the generator calls ``impl`` instead;
  - ``reducer``: the ufunc whose ``.reduce(x, axis, None, None, keepdims)`` this
    reduction is (``sum``: ``np.add``), or None;
  - ``zeros``: when the result is a structural zero (``simplify``; the ``zeros``
    primitive a pass makes for a missing cotangent stands for "no contribution"):
      ``"first"``: when operand 0 is one (linear in operand 0);
      ``"any"``: when any operand is one (multilinear: ``mul``, ``matmul``);
      ``"all"``: when every operand outside ``nondiff_args`` is one;
      None: never derived from its operands;
  - ``foldable``: ``simplify`` may evaluate a node whose operands are all constants
    (False for structural zeros, user callbacks, and free views that would only
    become big constants);
  - ``cost(out_shape, arg_shapes, params) -> int``: estimated FLOPs of one node from
    shapes alone, a multiply-add counting two (``graph.summary()``);
  - ``torch_name``: PyTorch's name for the ``grad_fn`` of a tensor this primitive
    made on the eager tape (``exp``: ``"ExpBackward0"``);
  - ``jax_casts``: how the JAX lowering casts operands to get NumPy's dtypes where
    JAX promotes otherwise:
      ``"ufunc"``: operands to the result dtype (comparisons: to their common dtype),
      as NumPy's ufunc loop computes;
      ``"accumulate"``: integer and boolean operands to an integer result dtype
      (NumPy's int64 accumulator for sums and products);
      ``"float"``: integer operands to a floating result dtype (matrix functions);
      None: operands as they are.
    An entry that does not state it gets its family's (``"elementwise"``: ``"ufunc"``,
    ``"reduce"``: ``"accumulate"``, ``"linalg"``: ``"float"``, the rest None).

Rules are NumPy code: applied to traced values they record graph nodes, which
is what lets the adjoint pass differentiate its own output again.

**Multi-output primitives** (``outputs=k > 1``: ``svd`` gives ``u, s, vh`` from one
factorisation; or ``outputs=fn``, ``fn(**params)`` giving the count, for primitives whose
count depends on their params: a loop's carries. ``Primitive.multi`` says whether an
entry is one, ``Primitive.n_outputs(params)`` how many outputs a node has).
``impl`` returns a tuple of ``k`` arrays, ``abstract`` a list of ``k``
``(shape, dtype)`` pairs, ``jax`` a tuple. In a graph the application is one node (the
*head*) whose value is that tuple, followed at once by one ``proj`` node per output
(``proj %head index=i``, consecutive ids; a pass may drop the unused ones). Every other
node uses the projections, never the head; the head's own ``shape`` is ``()`` and its
``dtype`` that of its first output. Printing, DOT and JSON show the head and its
projections as one node with several outputs. ``apply`` on traced operands returns the
tuple of the projections' tracers. The rules see tuples: ``vjp(gs, outs, *args)`` gets
one cotangent per output (``None`` for an output that receives none) and the tuple of
outputs; ``jvp(tangents, outs, *args)`` returns one tangent per output (``None`` for a
zero one).
"""
from __future__ import annotations

import math
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


def per_output_element(out_shape, arg_shapes, params) -> int:
    """The default cost: one FLOP per output element (elementwise work)."""
    return math.prod(out_shape)


def default_torch_name(name: str) -> str:
    """PyTorch's naming convention: ``log_softmax`` -> ``LogSoftmaxBackward0``."""
    return "".join(part.capitalize() for part in name.split("_")) + "Backward0"


# The facts every built-in primitive states (see the module docstring).
FACTS = ("batch", "complex", "aliasing", "ufunc", "spelling", "reducer", "zeros",
         "foldable", "cost", "torch_name", "jax_casts")
ALIASING = ("fresh", "view", "identity", "unknown")
ZEROS = ("first", "any", "all", None)
JAX_CASTS = ("ufunc", "accumulate", "float", None)


@dataclass(eq=False)
class Primitive:
    name: str
    impl: Callable
    vjp: Callable | None = None
    jvp: Callable | None = None
    abstract: Callable | None = None
    jax: Callable | None = None
    batch: Callable | None = None
    # Operand positions that never carry a gradient (index arrays, conditions).
    nondiff_args: tuple = ()
    doc: str = ""
    family: str = ""
    # -- facts (module docstring); the defaults are the cautious "not known" ----------
    complex: bool = False
    aliasing: str = "unknown"
    ufunc: np.ufunc | None = None
    spelling: str | None = None
    reducer: np.ufunc | None = None
    zeros: str | None = None
    foldable: bool = True
    cost: Callable = per_output_element
    torch_name: str = ""
    jax_casts: str | None = None
    extra: dict = field(default_factory=dict)
    # what a loaded document's node of this primitive may hold (``ir/schema.py``'s
    # ``Spec``): needed where the implementation's signature does not say it
    schema: object = None
    # how many outputs one application gives (module docstring: multi-output primitives):
    # a number, or a function of the node's params for primitives whose count depends on
    # them (a loop gives one output per carry); use ``multi`` and ``n_outputs(params)``
    outputs: int | Callable[..., int] = 1
    # the FACTS this entry's registration stated (the rest are defaults)
    declared: frozenset = field(default=frozenset(), repr=False)
    # whether an application is a head node with ``proj`` nodes (module docstring): read
    # once per node by every pass, so worked out from ``outputs`` once, here
    multi: bool = field(init=False, repr=False, default=False)

    def __post_init__(self):
        self.multi = callable(self.outputs) or self.outputs > 1
        if not self.torch_name:
            self.torch_name = default_torch_name(self.name)
        for fact, value, allowed in (("aliasing", self.aliasing, ALIASING),
                                     ("zeros", self.zeros, ZEROS),
                                     ("jax_casts", self.jax_casts, JAX_CASTS)):
            if value not in allowed:
                raise ValueError(f"primitive {self.name!r}: {fact}={value!r} is not one of "
                                 f"{allowed}")

    def __repr__(self):
        return f"<primitive {self.name}>"

    def n_outputs(self, params) -> int:
        """How many outputs an application with ``params`` gives."""
        return self.outputs(**params) if callable(self.outputs) else self.outputs

    def shape_dtype(self, avals, params):
        """``(shape, dtype)`` of the result; for a multi-output primitive, a list of them."""
        if self.abstract is not None:
            if self.multi:
                return [(tuple(shape), np.dtype(dtype))
                        for shape, dtype in self.abstract(*avals, **params)]
            shape, dtype = self.abstract(*avals, **params)
            return tuple(shape), np.dtype(dtype)
        out = self.impl(*(_standin(a) for a in avals), **params)
        if self.multi:
            return [(o.shape, o.dtype) for o in out]
        return out.shape, out.dtype


def _standin(aval: Aval):
    """An array of ``aval``'s shape and dtype that costs no memory."""
    fill = 1 if np.dtype(aval.dtype).kind in "fc" else 0
    return np.broadcast_to(np.array(fill, dtype=aval.dtype), aval.shape)


REGISTRY: dict[str, Primitive] = {}
# the op of a multi-output node's outputs (``ir/prims/multi.py``; module docstring)
PROJ = "proj"


def _family(complex=True, aliasing="unknown", ufunc=None, spelling=None,  # noqa: A002
            reducer=None, zeros=None, foldable=True, cost=per_output_element, torch_name="",
            jax_casts=None):
    return dict(complex=complex, aliasing=aliasing, ufunc=ufunc, spelling=spelling,
                reducer=reducer, zeros=zeros, foldable=foldable, cost=cost,
                torch_name=torch_name, jax_casts=jax_casts)


# Every fact but ``batch`` (a rule each entry states, or None for row by row), decided
# once per family: an entry of a family states only the facts where it differs. An entry
# of no family (a user's primitive) gets the cautious defaults of ``Primitive``, and its
# ``declared`` lists only what it stated.
FAMILIES = {
    "elementwise": _family(complex=False, aliasing="fresh", jax_casts="ufunc"),
    "reduce": _family(aliasing="fresh", jax_casts="accumulate"),
    "linalg": _family(jax_casts="float"),
    "shape": _family(aliasing="view", zeros="first"),
    "eig": _family(),
    "fft": _family(),
    "nn": _family(),
    "sparse": _family(complex=False, aliasing="fresh", zeros="any"),
    "special": _family(aliasing="fresh", foldable=False),     # markers, structural zeros
    "multi": _family(foldable=False),
    "control": _family(foldable=False),                     # loops and branches
    "subgraph": _family(foldable=False),
}


def register(name, impl, **rules) -> Primitive:
    """Add primitive ``name``: its rules and facts as keywords (see the module docstring),
    over its family's facts (``FAMILIES``)."""
    if name in REGISTRY:
        raise ValueError(f"primitive {name!r} is registered twice")
    declared = frozenset(k for k in rules if k in FACTS)
    defaults = FAMILIES.get(rules.get("family", ""))
    if defaults is not None:
        declared |= frozenset(defaults)
        rules = {**defaults, **rules}
    prim = Primitive(name, impl, **rules, declared=declared)
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
