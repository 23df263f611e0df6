"""Batching as a graph-to-graph pass (vmap in the spirit of JAX).

``batch(graph, batched_inputs, size)`` gives a graph whose listed inputs carry a new
leading axis of length ``size``; every node that depends on them computes the value for
each of the ``size`` rows at once, with the batch axis first. Nodes that depend on no
batched input are replayed unchanged (they are computed once, not once per row).

Each primitive's batching rule is its registry entry's ``batch`` field (see
``ir.registry``; shared rules and helpers in ``ir/prims/batching.py``). A rule is called
as ``rule(size, args, batched, out_shape, **params)`` where ``args`` are the operands in
the batched graph (batched ones have the batch axis in front), ``batched`` flags which
ones do, and ``out_shape`` is the node's unbatched output shape (a tuple of them for a
multi-output primitive); it returns the batched output (batch axis in front; a tuple
for a multi-output primitive). Rules are NumPy code on traced values, like the VJP
rules, so the result is an ordinary graph: it can be pruned, compiled, differentiated.
A primitive without a rule (``batch=None``, or a case a rule declines by returning
``NotImplemented``) is evaluated row by row: the per-row results are stacked, so
correctness never depends on a rule existing.

The pass is the one evaluator (``ir.evaluate``) run on ``Batched`` values, as JAX's
vmap runs a function on batch tracers: a value knows whether it has the batch axis, and
its ``__tg_bind__`` records a node none of whose operands has it unchanged (computed
once, not per row), and applies the batching rule to the others; ``out_shape`` comes
from the primitive's shape rule on the rows' avals.
"""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..ir import PROJ, REGISTRY, Aval, Graph, apply
from ..ir.evaluate import evaluate
from ..ir.indexspec import Index
from ..ir.prims.batching import bcast, reshape, shape
from ..tracer import Tracer, new_trace, source_override
from .common import at_node, finish

__all__ = ["batch", "batch_rules", "fallback"]


def batch_rules() -> dict:
    """Primitive name -> its batching rule, for every registered primitive that has one
    (a copy: a table to change and pass to ``batch(..., rules=)``)."""
    return {name: prim.batch for name, prim in REGISTRY.items() if prim.batch is not None}


def fallback(size, args, batched, out_shape, op, **params):
    """Any primitive, row by row: apply it to each row of the batched operands (the
    unbatched ones as they are) and stack the results."""
    rows = []
    for i in range(size):
        row_args = [apply("getitem", a, index=Index((i,))) if b else a
                    for a, b in zip(args, batched)]
        r = apply(op, *row_args, **params)
        rows.append(reshape(r, (1,) + shape(r)))
    if not rows:
        raise TraceError(f"cannot batch {op} over an empty batch")
    return rows[0] if size == 1 else apply("concatenate", *rows, axis=0)


def _fallback_multi(size, args, batched, op, **params):
    """``fallback`` for a multi-output primitive: each output stacked on its own."""
    rows = []
    for i in range(size):
        row_args = [apply("getitem", a, index=Index((i,))) if b else a
                    for a, b in zip(args, batched)]
        rows.append([reshape(r, (1,) + shape(r)) for r in apply(op, *row_args, **params)])
    if not rows:
        raise TraceError(f"cannot batch {op} over an empty batch")
    return tuple(col[0] if size == 1 else apply("concatenate", *col, axis=0)
                 for col in zip(*rows))


# -- the batched values ------------------------------------------------------------------------
class BatchTrace:
    """One run of the pass: the batch size, the rules table, the counts; what the values
    of the walk (``Batched``) share, as JAX's batch trace is to its batch tracers."""

    def __init__(self, size, rules, stats):
        self.size, self.rules, self.stats = size, rules, stats

    def _count(self, key):
        if self.stats is not None:
            self.stats[key] = self.stats.get(key, 0) + 1

    def bind(self, name, args, params, src):
        """Node ``name`` applied to the ``Batched`` values ``args``: recorded as it is
        when no operand is batched, else through the primitive's batching rule (or row
        by row); a ``proj`` picks its output of the head's value."""
        # a node of no operands (``zeros``) ran NumPy: its value is a plain array
        values = [a.value if isinstance(a, Batched) else a for a in args]
        flags = [isinstance(a, Batched) and a.batched for a in args]
        if name == PROJ:    # an output of a multi-output node: batched with it
            return Batched(self, values[0][params["index"]], flags[0], src)
        with at_node({"src": src}):
            if not any(flags):
                return Batched(self, apply(name, *values, **params), False, src)
            return Batched(self, self._batched(name, values, flags, params), True, src)

    def _batched(self, name, args, flags, params):
        prim = REGISTRY[name]
        # the node's unbatched result, from the primitive's shape rule on the rows' avals
        avals = [Aval(shape(a)[1:] if b else shape(a), np.dtype(a.dtype))
                 for a, b in zip(args, flags)]
        with np.errstate(all="ignore"):
            result = prim.shape_dtype(avals, params)
        results = result if prim.multi else [result]
        out_shape = tuple(s for s, _ in results) if prim.multi else result[0]
        rule = prim.batch if self.rules is None else self.rules.get(name)
        out = NotImplemented if rule is None else rule(self.size, args, flags, out_shape,
                                                       **params)
        if out is NotImplemented:
            if prim.multi:
                out = _fallback_multi(self.size, args, flags, name, **params)
            else:
                out = fallback(self.size, args, flags, out_shape, name, **params)
            self._count("fallback")
            self._count(f"fallback:{name}")
        else:
            self._count("rule")
        outs = list(out) if prim.multi else [out]
        for k, (o, (want, dtype)) in enumerate(zip(outs, results)):
            want = (self.size,) + tuple(want)
            if shape(o) != want:
                raise TraceError(f"the batching rule of {name} gave shape {shape(o)}, "
                                 f"expected {want}")
            if np.dtype(o.dtype) != np.dtype(dtype):
                outs[k] = o.astype(dtype)
        return tuple(outs) if prim.multi else outs[0]


class Batched:
    """A value of the graph being batched, as ``ir.evaluate`` holds it: ``value`` is its
    value in the batched graph (a tracer of the pass's trace; a tuple of them for a
    multi-output node), with the batch axis in front when ``batched``.

    Unbatched values are wrapped too: ``registry.binder`` hands a node to the first
    operand whose type binds, and a plain tracer in front of a batched operand would
    record the node unbatched. ``__tg_bind__`` batches the node (``BatchTrace.bind``);
    ``__tg_guard__`` records a branch decided by an unbatched value in the trace, and
    refuses one decided by a batched value (each row could take another branch).
    """
    __slots__ = ("trace", "value", "batched", "src")

    def __init__(self, trace, value, batched, src):
        self.trace, self.value, self.batched, self.src = trace, value, batched, src

    def __repr__(self):
        return f"Batched({self.value!r}, batched={self.batched})"

    @staticmethod
    def __tg_bind__(name, args, params, src=None):
        trace = next(a.trace for a in args if isinstance(a, Batched))
        return trace.bind(name, args, params, src)

    def __tg_guard__(self, expected):
        if self.batched:
            raise TraceError("cannot batch a graph with a branch that depends on a batched "
                             f"input (the condition at {self.src})")
        if isinstance(self.value, Tracer):
            self.value.__tg_guard__(expected)


# -- the pass ----------------------------------------------------------------------------------
def batch(graph: Graph, batched_inputs, size: int, *, rules=None, stats=None) -> Graph:
    """``graph`` batched over a new leading axis of length ``size`` of the inputs at the
    positions ``batched_inputs`` (indices into ``graph.inputs``).

    The result has the same inputs (the listed ones with shape ``(size,) + shape``) and
    one output per output of ``graph``, each with the batch axis in front (an output
    that depends on no batched input is broadcast). ``rules``, a table keyed by primitive
    name (see ``batch_rules()``), replaces the registry's ``batch`` rules; ``stats``, a
    dict, counts the nodes batched by a rule (``"rule"``) and row by row (``"fallback"``,
    and per op as ``"fallback:<op>"``).

    The graph is evaluated (``ir.evaluate``) on ``Batched`` values, which apply each
    node's batching rule.
    """
    size = int(size)
    if size < 1:
        raise TraceError(f"batch needs a batch size of at least 1, got {size}")
    positions = {int(i) % len(graph.inputs) for i in batched_inputs} if graph.inputs else set()
    run = BatchTrace(size, rules, stats)
    with new_trace() as trace:
        env = {}
        for k, n in enumerate(graph.inputs):
            d = graph.node(n)
            lead = (size,) if k in positions else ()
            with source_override(d["src"]):
                value = trace.new_input(aval=Aval(lead + tuple(d["shape"]),
                                                  np.dtype(d["dtype"])))
            env[n] = Batched(run, value, k in positions, d["src"])

        def const(value, src):
            with source_override(src):
                return Batched(run, trace.const(value, snapshot=False), False, src)
        evaluate(graph, env, const=const)
        outs = []
        for o in graph.outputs:
            b = env[o]
            value, batched = (b.value, b.batched) if isinstance(b, Batched) else (b, False)
            with source_override(graph.node(o)["src"]):
                outs.append(value if batched else bcast(value, size))
        return finish(trace, outs)
