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

Inside the body of ``tg.scan`` / ``tg.fori_loop`` (and ``tg.while_loop(max_steps=...)``)
the body is traced once, abstractly: its printed values become extra outputs of the loop
(stacked, one row per step), and the print is made once per step, in order, with that
step's values, as JAX prints from a loop (after the loop has run; under ``tg.jit`` on
every call). A derivative's recomputation of the loop does not print again. Under
``tg.vmap`` the function is traced once on one example: the printed values are batched
with it and, as ``jax.debug.print`` under ``jax.vmap``, each print is made once per
example, in order (print 1 for every example, then print 2 ...; under nested vmaps the
inner axis varies slowest, as in JAX); a print whose values do not depend on the mapped
arguments is made once.

In a branch of ``tg.cond`` both branches are traced; the prints of the branch taken are
made (under ``tg.vmap`` with a batched predicate: each branch prints the examples that
take it; JAX, which runs both branches there, prints every example in both). In the
body of ``tg.while_loop`` (whose number of steps is known only when it runs) a callback
runs the loop again on the same values to print its steps, in program order (under
``tg.vmap``: example by example).
"""
from __future__ import annotations

import builtins
import contextvars
import itertools
from typing import Any

import numpy as np

from ..errors import TraceError
from ..ir import Graph
from ..tracer import Trace, Tracer, flatten, replay, sync, unflatten, where
from ..tracer.core import current_trace

__all__ = ["print"]


class _Sink:
    """The prints recorded while a graph is traced: by ``tg.jit`` (a specialisation), by
    ``tg.vmap`` (the function, on one example) or by ``tg.scan``/``tg.fori_loop`` (the
    body). The printed values become extra outputs of the graph; whoever runs it prints
    them (``forward``) when it has them: every call, every step, every example."""

    def __init__(self, trace, lift_outer=False):
        self.trace = trace
        self.records = []      # (fmt, treedef, slots): ("out", k, index) or ("const", v)
        self.tracers = []      # the values to hand out, in slot order
        self._slot = {}
        # a loop body: values of the enclosing trace it prints become captured operands
        # (so their value is known every step); jit keeps their value at trace time
        self.lift_outer = lift_outer

    def slot(self, x):
        k = self._slot.get(id(x))
        if k is None:
            sync(x)
            k = self._slot[id(x)] = len(self.tracers)
            self.tracers.append(x)
        return k


EFFECTS: contextvars.ContextVar[_Sink | None] = contextvars.ContextVar(
    "tracegrad_debug_effects", default=None)


def print(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:  # noqa: A001
    """Print ``fmt.format(*args, **kwargs)`` with the values the function computes when it
    runs (on every call of a jitted function, once per step of a loop body, once per
    example under ``tg.vmap``). ``args``/``kwargs`` may be arrays, numbers, traced values or
    pytrees of them. ``ordered`` is accepted for JAX's signature (the prints of one
    function always come in program order here)."""
    if not isinstance(fmt, str):
        raise TraceError(f"tg.debug.print needs a format string first, got "
                         f"{type(fmt).__name__}{where()}")
    leaves, tree = flatten((args, kwargs))
    items = [("val", x, ()) if isinstance(x, Tracer) else ("const", x) for x in leaves]
    when = WHEN.get()
    if when is not None:
        items.append(("when", when, ()))
    forward(fmt, tree, items)


# the step of tg.while_loop(max_steps=...) a print belongs to is taken or not
WHEN: contextvars.ContextVar[Any] = contextvars.ContextVar("tracegrad_debug_when",
                                                            default=None)


def forward(fmt, tree, items):
    """Print, or record in the sink of the graph being traced, one print whose leaves are
    ``items``: ``("val", x, index)`` (``x[index]``, ``x`` traced or not) or
    ``("const", v)``; a last ``("when", b, index)`` prints only where ``b`` is true."""
    sink = EFFECTS.get()
    if sink is not None and current_trace() is not sink.trace:
        # inside a transform nested in the traced graph (tg.jit(tg.grad(f))): the values,
        # computed again from the sink's trace's own inputs
        lifted = [_lift(it[1], sink.trace) if it[0] != "const" and isinstance(it[1], Tracer)
                  else it[1] for it in items]
        if all(v is not None for v in lifted):
            items = [(it[0], v, it[2]) if it[0] != "const" else it
                     for it, v in zip(items, lifted)]
    if sink is not None and (current_trace() is sink.trace or any(
            it[0] != "const" and isinstance(it[1], Tracer) and it[1]._trace is sink.trace
            for it in items)):
        slots = []
        for it in items:
            x = it[1]
            if it[0] != "const" and isinstance(x, Tracer) and x._trace is not sink.trace \
                    and sink.lift_outer:
                x = sink.trace.lift(x)
            if it[0] != "const" and isinstance(x, Tracer) and x._trace is sink.trace:
                slots.append(("out" if it[0] == "val" else "when", sink.slot(x), it[2]))
            elif it[0] == "val":    # an outer value captured: its trace-time value
                slots.append(("const", _row(_value_now(x), it[2])))
            elif it[0] == "when":
                slots.append(("when", np.asarray(_row(_value_now(x), it[2])), ()))
            else:
                slots.append(it)
        sink.records.append((fmt, tree, slots))
        return
    if items and items[-1][0] == "when":
        if not np.any(_row(_value_now(items[-1][1]), items[-1][2])):
            return
        items = items[:-1]
    _emit(fmt, tree, [_row(_value_now(it[1]), it[2]) if it[0] == "val" else it[1]
                      for it in items])


def forward_all(records, values, index=(), leads=None, when=None):
    """Hand on the prints a sink recorded, given its values (the extra outputs of the
    graph it recorded, run), each taken at ``index`` (a loop step), or at ``leads[k]``
    for value ``k`` (under vmap: one example, or row 0 of one that is not batched);
    with ``when``, only where it is true (the branch of tg.cond taken)."""
    for fmt, tree, slots in records:
        items = [("val" if v[0] == "out" else "when", values[v[1]],
                  (index if leads is None else leads[v[1]]) + v[2])
                 if v[0] in ("out", "when") and isinstance(v[1], int) else v for v in slots]
        if when is not None:
            if items and items[-1][0] == "when":
                last = items.pop()
                when = np.logical_and(_row(last[1], last[2]), when)
            items.append(("when", when, ()))
        forward(fmt, tree, items)


def _row(value, index):
    return value[index] if index else value


def _prefix(x):
    """The part of ``x``'s trace that computes it, as a graph, and what each of its
    inputs stands for (an argument of the transform or a captured value of the
    enclosing trace; None where not known: a loop body traced abstractly)."""
    trace = x._trace
    outer_args = getattr(trace, "outer_args", None)
    if outer_args is None or type(trace) is not Trace:
        return None, None
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
    graph.outputs = [x._node]
    return graph, inputs


def _lift(x, target):
    """``x``, a value of a trace nested inside ``target``, as a value of ``target``: the
    part of each inner trace that computes it, replayed on what its inputs stand for
    (the arguments and captured values of the enclosing trace). None where an inner
    trace's inputs are not known (a loop body traced abstractly)."""
    while isinstance(x, Tracer) and x._trace is not target:
        if x._trace.level <= target.level:
            return None
        graph, inputs = _prefix(x)
        if graph is None or any(v is None for v in inputs):
            return None
        x = replay(graph, inputs)[x._node]
    return x


def _value_now(x):
    if not isinstance(x, Tracer):
        return x
    sync(x)
    value = x._value
    if value is None:
        # after a loop (whose value is not computed while tracing): computed now from
        # the transform's arguments
        graph, inputs = _prefix(x)
        if graph is not None and all(v is not None for v in inputs):
            try:
                args = [_value_now(v) for v in inputs]
            except TraceError:
                args = None
            if args is not None:
                value = np.asarray(replay(graph, args)[x._node])
    if value is None:
        raise TraceError(f"tg.debug.print: the value is only known abstractly here (inside "
                         f"a graph transformation), so it cannot be printed; print the "
                         f"results instead{where()}")
    return value


# the lines a tg.while_loop printed when it ran (a callback), by token, until the print
# holding the token is made: so they come in program order, also under tg.jit
_HELD: dict[int, list[str]] = {}
_TOKENS = itertools.count(1)


def hold(lines):
    """Keep ``lines`` until the print of the token returned is made."""
    token = next(_TOKENS)
    _HELD[token] = lines
    return token


def _emit(fmt, tree, values, out=None):
    if fmt is None:             # a token: print the lines it holds
        for token in np.ravel(np.asarray(values[0])).tolist():
            for line in _HELD.pop(token, ()):
                builtins.print(line)
        return
    values = [np.asarray(v) if isinstance(v, (np.ndarray, np.generic)) else v for v in values]
    args, kwargs = unflatten(tree, values)
    if out is not None:
        out.append(fmt.format(*args, **kwargs))
    else:
        builtins.print(fmt.format(*args, **kwargs))


def emit_all(records, outs, out=None):
    """Print a compiled function's recorded prints, given its extra outputs (or, with
    ``out``, a list, append the lines to it)."""
    for fmt, tree, slots in records:
        if slots and slots[-1][0] == "when":
            k, index = slots[-1][1:]
            if not np.any(_row(np.asarray(outs[k]) if isinstance(k, int) else k, index)):
                continue
            slots = slots[:-1]
        _emit(fmt, tree, [_row(np.asarray(outs[s[1]]), s[2])
                          if s[0] == "out" else s[1] for s in slots], out)
