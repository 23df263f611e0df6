"""Lowering a graph to JAX: ``ir.evaluate`` on jax arrays, each node through its
primitive's ``jax`` rule (``lower_node``), the whole graph under one ``jax.jit``.

float64 stays float64: tracing, compiling and running happen inside
``jax.enable_x64(True)``, so users need not switch JAX's x64 mode on globally.
Guards cannot be decided inside XLA, so their values are extra outputs,
checked on the host after the call.

XLA cannot raise either: an index out of bounds is clamped, an integer to a negative
power is some number. Lowerings that NumPy would make raise call ``runtime_check``;
``jax.experimental.checkify`` carries the first failed check out of the compiled
function (through scans, loops and conds too), and the call raises NumPy's own
exception after the run (see ``JaxCompiled.__call__``).
"""
from __future__ import annotations

import contextvars

import numpy as np

from ..errors import TraceError
from ..ir import REGISTRY, Graph
from ..ir.evaluate import evaluate
from ..ir.jax_checks import CHECKING as _CHECKING
from ..ir.jax_checks import EXCEPTIONS as _EXCEPTIONS
from ..ir.jax_checks import runtime_check  # noqa: F401  (lowerings import it from here too)
from ..ir.prims.jax_numpy import astype
from .codegen import GUARD_FAILED


def import_jax():
    try:
        import jax
    except ImportError:
        raise TraceError('backend="jax" needs JAX: pip install "tracegrad[jax]"') from None
    return jax




def _subgraphs(graph: Graph):
    """The graphs held in ``graph``'s params (loop bodies, branches, checkpoints)."""
    for n in graph:
        for value in graph.node(n)["params"].values():
            for v in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(v, Graph):
                    yield v


def needs_checks(graph: Graph) -> bool:
    """Whether some node's lowering calls ``runtime_check``: its primitive's entry says so
    (``extra["jax_checks"](node)``: integer indexing, integer powers, LAPACK's failures),
    sub-graphs of control flow included. Graphs without any skip checkify, whose error
    value is read on the host after every call (a device sync)."""
    for n in graph:
        d = graph.node(n)
        prim = REGISTRY.get(d["op"])        # None for inputs and constants
        says = prim.extra.get("jax_checks") if prim is not None else None
        if says is not None and says(d):
            return True
    return any(needs_checks(sub) for sub in _subgraphs(graph))


def _taking_one(fn):
    def run(*args):
        token = _ONE.set(args[-1])
        try:
            return fn(*args[:-1])
        finally:
            _ONE.reset(token)
    return run


def _checked(fn):
    """``fn`` under checkify: returns ``(error, result)``."""
    from jax.experimental import checkify

    def run(*args):
        token = _CHECKING.set(True)
        try:
            return fn(*args)
        finally:
            _CHECKING.reset(token)
    return checkify.checkify(run, errors=checkify.user_checks)


# XLA (and LLVM below it) rewrite x + 0.0 to x, but -0.0 + 0.0 is +0.0 in IEEE
# arithmetic, and in NumPy. A constant holding a +0.0 is therefore multiplied by a 1.0
# that XLA cannot see: a scalar argument of the compiled function (``_ONE``, which loop
# and branch bodies close over). x * 1.0 is exact for every x, signed zeros and NaNs
# included. (An optimization barrier is not enough: fused loops still fold it.)
_ONE = contextvars.ContextVar("tracegrad_jax_one", default=None)


def _holds_positive_zero(value):
    value = np.asarray(value)
    if value.dtype.kind == "c":
        return _holds_positive_zero(value.real) or _holds_positive_zero(value.imag)
    return value.dtype.kind == "f" and bool(np.any((value == 0) & ~np.signbit(value)))


def _opaque_constants(graph: Graph) -> set:
    nodes = graph.by_id
    return {n for n in graph if nodes[n]["op"] == "const"
            and _holds_positive_zero(nodes[n]["params"]["value"])}


def needs_one(graph: Graph) -> bool:
    """Whether ``graph`` (or a sub-graph) has a constant that must be hidden from XLA."""
    return bool(_opaque_constants(graph)) or any(needs_one(sub) for sub in _subgraphs(graph))


def _hidden(jax, value):
    one = _ONE.get()
    if one is None:             # a graph lowered on its own: the barrier is the best left
        return jax.lax.optimization_barrier(value)
    if value.dtype.kind == "c":  # complex products mix the parts: scale each part alone
        return jax.lax.complex(value.real * one.astype(value.real.dtype),
                               value.imag * one.astype(value.real.dtype))
    return value * one.astype(value.dtype)


def _cast_operands(prim, operands, dtype):
    """``operands`` cast as the entry's ``jax_casts`` says, for a node whose NumPy result
    has ``dtype`` (see ``registry``)."""
    out_kind = np.dtype(dtype).kind
    casts = prim.jax_casts
    if out_kind in "iufc" and casts == "ufunc":
        # JAX promotes mixed dtypes its own way (float32 with int64 stays float32, where
        # NumPy computes in float64; uint8 ** int8 is not NumPy's int16): operands are
        # cast to the node's dtype first, so the arithmetic happens in it, as in NumPy's
        # ufunc loop
        return [astype(x, dtype) if i not in prim.nondiff_args
                and np.can_cast(x.dtype, dtype, "safe") else x
                for i, x in enumerate(operands)]
    if out_kind == "b" and casts == "ufunc" and len(
            {np.dtype(x.dtype) for x in operands}) > 1:
        # comparisons too: int32 == float16 compares in float64 in NumPy, in float16 in
        # JAX (INT_MIN becomes -inf)
        common = np.result_type(*(x.dtype for i, x in enumerate(operands)
                                  if i not in prim.nondiff_args))
        return [astype(x, common) if i not in prim.nondiff_args else x
                for i, x in enumerate(operands)]
    if out_kind in "iu" and casts == "accumulate":
        # np.sum/prod/cumsum of small integers and booleans accumulate in int64/uint64
        # (jnp.cumsum in the operand's own type, wrapping)
        return [astype(x, dtype) if np.dtype(x.dtype).kind in "iub"
                and np.can_cast(x.dtype, dtype, "safe") else x for x in operands]
    if out_kind in "fc" and casts == "float":
        # integer operands of a float matrix function are converted
        return [astype(x, dtype) if i not in prim.nondiff_args
                and np.dtype(x.dtype).kind in "iub" else x
                for i, x in enumerate(operands)]
    return operands


def lower_node(prim, operands, params, dtype):
    """The entry's ``jax`` rule applied to ``operands`` (jax arrays) for a node whose NumPy
    result has ``dtype``: operands cast as the entry's ``jax_casts`` says, the result cast
    to ``dtype`` (a multi-output node's tuple: its projections' dtypes, checked there)."""
    value = prim.jax(*_cast_operands(prim, operands, dtype), **params)
    if not prim.multi and value.dtype != dtype:
        value = astype(value, dtype)
    return value


def graph_function(graph: Graph):
    """A Python function of jax arrays computing ``graph``'s outputs and guard values:
    ``ir.evaluate`` with ``lower_node`` as its rule, the values jax arrays (a tuple of them
    for a multi-output node) inside the function ``jax.jit`` traces, as batching and
    forward mode run the evaluator on theirs. Guards are not decided here: their nodes'
    values are extra outputs, checked on the host."""
    jax = import_jax()
    jnp = jax.numpy
    nodes = graph.by_id
    for n in graph:
        op = nodes[n]["op"]
        if op not in ("input", "const") and REGISTRY[op].jax is None:
            raise TraceError(f"primitive {op} has no JAX lowering")
    opaque = _opaque_constants(graph)

    def rule(n, d, args):
        if d["op"] == "const":
            v = jnp.asarray(d["params"]["value"])
            return _hidden(jax, v) if n in opaque else v
        return lower_node(REGISTRY[d["op"]], args, d["params"], d["dtype"])

    def fn(*args):
        env = evaluate(graph, dict(zip(graph.inputs, args)), rule=rule, guards=False)
        outs = [env[o] for o in graph.outputs]
        if graph.guards:
            return outs, [env[g] for g, _ in graph.guards]
        return outs

    return fn


class JaxCompiled:
    def __init__(self, graph: Graph, **jit_options):
        self.jax = import_jax()
        self.graph = graph
        self.expected = [np.asarray(v) for _, v in graph.guards]
        self.checked = needs_checks(graph)
        fn = graph_function(graph)
        # the hidden 1.0 (``_ONE``) is a last argument, for graphs that need it
        self._extra = (np.float64(1.0),) if needs_one(graph) else ()
        if self._extra:
            fn = _taking_one(fn)
        if self.checked:
            fn = _checked(fn)
            if "out_shardings" in jit_options:  # the checks' error value comes first
                jit_options = {**jit_options,
                               "out_shardings": (None, jit_options["out_shardings"])}
        self.jitted = self.jax.jit(fn, **jit_options)
        self._x64 = self.jax.enable_x64(True)  # reusable: entering it is all a call costs

    def __call__(self, *args):
        with self._x64:
            out = self.jitted(*args, *self._extra)
        error, result = out if self.checked else (None, out)
        held = True
        if self.expected:
            result, guards = result
            held = all(np.array_equal(np.asarray(value), expected)
                       for value, expected in zip(guards, self.expected))
        message = None if error is None else error.get()
        if message is not None:
            return self._raise(message, args, held, result)
        return result if held else GUARD_FAILED

    def _raise(self, message, args, held, result):
        """NumPy's own exception: the reference interpreter runs the graph on the same
        inputs and raises it, with NumPy's message, or the guard failure that comes
        first in program order, as the NumPy backend would (then the caller traces
        again). Should NumPy not raise, the check was stricter than LAPACK (a NaN in a
        matrix: NumPy returns NaNs, as XLA does) and the result stands; the index and
        power checks are exact, so for them the check's own message is raised."""
        from .interpreter import run

        try:
            with np.errstate(all="ignore"):
                run(self.graph, [np.asarray(a) for a in args])
        except TraceError:
            if not held:
                return GUARD_FAILED
            raise
        if not held:
            return GUARD_FAILED
        name, _, text = message.partition(": ")
        if name == "LinAlgError":
            return result
        text = text.removesuffix(" (`check` failed)")
        raise _EXCEPTIONS.get(name, IndexError)(text)

    def as_text(self, *args):
        """The StableHLO module for arguments like ``args``."""
        with self.jax.enable_x64(True):
            return self.jitted.lower(*args, *self._extra).as_text()
