"""``tg.debug.print``: print values from inside a traced function when it runs.

Where a function runs as Python on every call (``tg.grad``, ``tg.jacobian``, ... trace it
on the call's own values), the values are printed at once. Under ``tg.jit`` the Python
runs only when a specialisation is traced, so the call is kept as an effect of the
compiled function instead: the printed values become extra outputs of its graph (on
both backends) and are printed, in program order, on every call. Formatting is
``str.format`` with the values as NumPy arrays (``"{x:.3f}"`` of a 0-d value works), as
``jax.debug.print`` does.

A print inside a transform nested in ``tg.jit`` (``tg.jit(tg.grad(f))``) is kept too:
the values are recomputed in the jitted graph from its own inputs.

Limits: inside the body of ``tg.scan``/``tg.while_loop``/``tg.cond`` values are only
known abstractly (a TraceError says so); under ``tg.vmap`` the function is traced once,
on the first example, and prints that one, once.
"""
from __future__ import annotations

import builtins
import contextvars
from typing import Any

import numpy as np

from .errors import TraceError
from .ir import Graph
from .tracer import Trace, Tracer, flatten, replay, sync, unflatten, where
from .tracer.core import BATCHING, current_trace

__all__ = ["print"]


class _Sink:
    """The prints recorded while ``tg.jit`` traces a specialisation."""

    def __init__(self, trace):
        self.trace = trace
        self.records = []      # (fmt, treedef, slots): a slot is ("out", k) or ("const", v)
        self.tracers = []      # the values to hand out, in slot order


EFFECTS: contextvars.ContextVar[_Sink | None] = contextvars.ContextVar(
    "tracegrad_debug_effects", default=None)


def print(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:  # noqa: A001
    """Print ``fmt.format(*args, **kwargs)`` with the values the function computes when it
    runs (on every call of a jitted function). ``args``/``kwargs`` may be arrays, numbers,
    traced values or pytrees of them. ``ordered`` is accepted for JAX's signature (the
    prints of one function always come in program order here)."""
    if not isinstance(fmt, str):
        raise TraceError(f"tg.debug.print needs a format string first, got "
                         f"{type(fmt).__name__}{where()}")
    leaves, tree = flatten((args, kwargs))
    sink = EFFECTS.get()
    if sink is not None and current_trace() is not sink.trace and not BATCHING.get():
        # inside a transform nested in tg.jit (tg.jit(tg.grad(f))): the values, computed
        # again from the jitted function's own inputs
        lifted = [_lift(x, sink.trace) if isinstance(x, Tracer) else x for x in leaves]
        if all(x is not None for x in lifted):
            leaves = lifted
    if sink is not None and any(isinstance(x, Tracer) and x._trace is sink.trace
                                for x in leaves) or sink is not None and \
            current_trace() is sink.trace:
        slots = []
        for x in leaves:
            if isinstance(x, Tracer) and x._trace is sink.trace:
                sync(x)
                slots.append(("out", len(sink.tracers)))
                sink.tracers.append(x)
            elif isinstance(x, Tracer):     # an outer value captured: its trace-time value
                slots.append(("const", _value_now(x)))
            else:
                slots.append(("const", x))
        sink.records.append((fmt, tree, slots))
        return
    _emit(fmt, tree, [_value_now(x) for x in leaves])


def _lift(x, target):
    """``x``, a value of a trace nested inside ``target``, as a value of ``target``: the
    part of each inner trace that computes it, replayed on what its inputs stand for
    (the arguments and captured values of the enclosing trace). None where an inner
    trace's inputs are not known (a loop body traced abstractly)."""
    while isinstance(x, Tracer) and x._trace is not target:
        trace = x._trace
        outer_args = getattr(trace, "outer_args", None)
        if outer_args is None or type(trace) is not Trace or trace.level <= target.level:
            return None
        sync(x)
        captured = {inner._node: alias for alias, inner, _ in trace.captured.values()}
        graph = Graph()
        inputs = []
        for n, (op, args, params, shape, dtype, src) in enumerate(trace.records[:x._node + 1]):
            if op == "input":
                graph.add_input(shape, dtype, src=src)
                inputs.append(outer_args[len(inputs)] if len(inputs) < len(outer_args)
                              else captured.get(n))
            elif op == "const":
                graph.add_const(params["value"], src=src)
            else:
                graph.add_node(op, args, params, shape=shape, dtype=dtype, src=src)
        if any(v is None for v in inputs):
            return None
        graph.outputs = [x._node]
        x = replay(graph, inputs)[x._node]
    return x


def _value_now(x):
    if not isinstance(x, Tracer):
        return x
    sync(x)
    if x._value is None:
        raise TraceError(f"tg.debug.print: the value is only known abstractly here (inside "
                         f"the body of tg.scan, tg.while_loop or tg.cond, or a graph "
                         f"transformation), so it cannot be printed; print the loop's "
                         f"results instead{where()}")
    return x._value


def _emit(fmt, tree, values):
    values = [np.asarray(v) if isinstance(v, (np.ndarray, np.generic)) else v for v in values]
    args, kwargs = unflatten(tree, values)
    builtins.print(fmt.format(*args, **kwargs))


def emit_all(records, outs):
    """Print a compiled function's recorded prints, given its extra outputs."""
    for fmt, tree, slots in records:
        _emit(fmt, tree, [np.asarray(outs[v]) if kind == "out" else v for kind, v in slots])
