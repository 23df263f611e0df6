"""Batching as a graph-to-graph pass (vmap in the spirit of JAX).

``batch(graph, batched_inputs, size)`` gives a graph whose listed inputs carry a new
leading axis of length ``size``; every node that depends on them computes the value for
each of the ``size`` rows at once, with the batch axis first. Nodes that depend on no
batched input are replayed unchanged (they are computed once, not once per row).

Each primitive's batching rule is its registry entry's ``batch`` field (see
``ir.registry``; shared rules and helpers in ``ir/prims/batching.py``). A rule is called
as ``rule(size, args, batched, out_shape, **params)`` where ``args`` are the operands in
the batched graph (batched ones have the batch axis in front), ``batched`` flags which
ones do, and ``out_shape`` is the node's unbatched output shape; it returns the batched
output (batch axis in front). Rules are NumPy code on traced values, like the VJP rules,
so the result is an ordinary graph: it can be pruned, compiled, differentiated. A
primitive without a rule (``batch=None``, or a case a rule declines by returning
``NotImplemented``) is evaluated row by row: the per-row results are stacked, so
correctness never depends on a rule existing.
"""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..ir import PROJ, REGISTRY, Aval, Graph, apply
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
    """
    size = int(size)
    if size < 1:
        raise TraceError(f"batch needs a batch size of at least 1, got {size}")
    table = rules
    positions = {int(i) % len(graph.inputs) for i in batched_inputs} if graph.inputs else set()
    with new_trace() as trace:
        env, batched = {}, {}
        for k, n in enumerate(graph.inputs):
            d = graph.node(n)
            lead = (size,) if k in positions else ()
            with source_override(d["src"]):
                env[n] = trace.new_input(aval=Aval(lead + tuple(d["shape"]),
                                                   np.dtype(d["dtype"])))
            batched[n] = k in positions
        for n, d in graph.items():
            op = d["op"]
            if op == "input":
                continue
            if op == "const":
                with source_override(d["src"]):
                    env[n] = trace.const(d["params"]["value"], snapshot=False)
                batched[n] = False
                continue
            if op == PROJ:    # an output of a multi-output node: batched with it
                env[n] = env[d["args"][0]][d["params"]["index"]]
                batched[n] = batched[d["args"][0]]
                continue
            args = [env[a] for a in d["args"]]
            flags = [batched[a] for a in d["args"]]
            with at_node(d):
                if not any(flags):
                    env[n], batched[n] = apply(op, *args, **d["params"]), False
                    continue
                rule = REGISTRY[op].batch if table is None else table.get(op)
                out = NotImplemented if rule is None else rule(
                    size, args, flags, tuple(d["shape"]), **d["params"])
                if out is NotImplemented and REGISTRY[op].multi:
                    out = _fallback_multi(size, args, flags, op, **d["params"])
                    kind = "fallback"
                elif out is NotImplemented:
                    out = fallback(size, args, flags, tuple(d["shape"]), op, **d["params"])
                    kind = "fallback"
                    if stats is not None:
                        stats[f"fallback:{op}"] = stats.get(f"fallback:{op}", 0) + 1
                else:
                    kind = "rule"
                if stats is not None:
                    stats[kind] = stats.get(kind, 0) + 1
                if REGISTRY[op].multi:     # a tuple: its projections are checked
                    env[n], batched[n] = tuple(out), True
                    continue
                want = (size,) + tuple(d["shape"])
                if shape(out) != want:
                    raise TraceError(f"the batching rule of {op} gave shape {shape(out)}, "
                                     f"expected {want}")
                if np.dtype(out.dtype) != np.dtype(d["dtype"]):
                    out = out.astype(d["dtype"])
                env[n], batched[n] = out, True
        for n, expected in graph.guards:
            if batched[n]:
                raise TraceError("cannot batch a graph with a branch that depends on a batched "
                                 f"input (the condition at {graph.node(n)['src']})")
            if isinstance(env[n], Tracer):
                trace.guard(env[n], expected)
        outs = []
        for o in graph.outputs:
            with source_override(graph.node(o)["src"]):
                outs.append(env[o] if batched[o] else bcast(env[o], size))
        return finish(trace, outs)
