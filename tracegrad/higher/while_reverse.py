"""Reverse mode through ``while_loop``: ``while_derived``, a derivative of the loop taken
once its trip count is known.

For inputs that take ``T`` steps, a while loop computes what a scan of ``T`` steps of its
body computes, and so do its derivatives (the trip count is piecewise constant in the
inputs). A ``while_derived`` node holds the loop (``cond``, ``body``, ``n_carry``,
``n_cond``, as ``while_loop``'s params) and ``chain``, the transforms to apply to the
loop's function: ``("adjoint", seeds)`` (``passes.adjoint``, seeded with the outputs
``seeds``) or ``("jvp",)`` (``passes.jvp``). Its operands are the inputs of the derived
function: the loop's own operands first (``*init, *cconsts, *bconsts``), then the
cotangents and tangents the chain adds. When it runs, it counts the loop's steps on those
first operands (a forward run), then evaluates the chain applied to the scan of that
many steps (the scan's VJP keeps the carries entering each step and runs the body's
adjoint backwards over them), and gives the outputs ``select``.

Checkpointing bounds the memory of the backward pass: for a trip count ``T`` above
``CHECKPOINT_ABOVE``, the scan of ``T`` steps is written as a scan of ``T // k`` segments,
each a scan of ``k = ceil(sqrt(T))`` steps, then a scan of the ``T % k`` steps left. The
outer scan's VJP keeps only the carry entering each segment; its backward step is the
VJP of one segment, which recomputes that segment's ``k`` carries from its checkpoint
right before running the body's adjoint backwards over them. So about ``2 sqrt(T)``
carries are alive at once instead of ``T``, for one more forward run of the body
(``3T`` body steps in all instead of ``2T``). Values and the cotangents of the loop's
initial carry are the same bits either way (the same steps in the same order); the
cotangents of the values the body closes over are summed segment by segment, so they
agree to rounding.

Its own VJP and JVP are ``while_derived`` nodes with one more transform in the chain, so
a loop is differentiated to any order (a fixed-point solver twice). The derived graphs
are made once per trip count (``subgraph.derived``). XLA cannot count steps inside a
compiled function: on the JAX backend the node runs on the host (a callback), and
``tg.while_loop(..., max_steps=n)`` is the bounded loop XLA compiles and differentiates.
"""
import collections
import math

import numpy as np

from ..ir import schema
from ..ir.evaluate import call
from ..ir.registry import REGISTRY, apply, register
from ..passes.adjoint import adjoint
from ..passes.jvp import jvp
from ..passes.prune import prune
from ..runtime.jax_backend import import_jax
from .subgraph import avals_of, compiled, derived, seeded, trace_graph, zero_tangents

KEEP_TRIP_COUNTS = 8
MAX_CHAIN = 4       # transforms in a chain (a loaded document's bound; 4th derivatives)
CHECKPOINT_ABOVE = 64   # trip counts above this are checkpointed (segments of ceil(sqrt(T)))


def segment_length(steps):
    """The steps between two kept carries in the backward pass of a loop of ``steps``
    steps: ``ceil(sqrt(steps))`` above ``CHECKPOINT_ABOVE``, else every carry is kept
    (``steps`` itself, no segments)."""
    if steps <= CHECKPOINT_ABOVE:
        return steps
    return math.isqrt(steps - 1) + 1


def _scan_steps(body, n_carry, init, bconsts, steps):
    """The carries after ``steps`` steps of ``body``: one scan, or checkpointed segments
    (see the module docstring)."""
    k = segment_length(steps)
    if k >= steps:
        return list(apply("scan", *init, *bconsts, body=body, n_carry=n_carry, n_x=0,
                          length=steps, reverse=False))
    segment = derived(body, ("while_segment", n_carry, k),
                      lambda b: trace_graph(lambda *ops: list(apply(
                          "scan", *ops, body=b, n_carry=n_carry, n_x=0, length=k,
                          reverse=False)), avals_of(b, b.inputs)))
    carry = list(apply("scan", *init, *bconsts, body=segment, n_carry=n_carry, n_x=0,
                       length=steps // k, reverse=False))
    if steps % k:
        carry = list(apply("scan", *carry, *bconsts, body=body, n_carry=n_carry, n_x=0,
                           length=steps % k, reverse=False))
    return carry


def _n_while(body, n_carry, n_cond):
    return n_carry + n_cond + len(body.inputs) - n_carry


def trip_count(operands, cond, body, n_carry, n_cond):
    """How many steps the loop takes from ``operands`` (``*init, *cconsts, *bconsts``)."""
    test, step = compiled(cond), compiled(body)
    carry = [np.asarray(c) for c in operands[:n_carry]]
    cconsts, bconsts = operands[n_carry:n_carry + n_cond], operands[n_carry + n_cond:]
    steps = 0
    while bool(test(*carry, *cconsts)[0]):
        carry = [np.asarray(c) for c in step(*carry, *bconsts)]
        steps += 1
    return steps


def chain_graph(cond, body, n_carry, n_cond, chain, steps):
    """The loop's function for inputs taking ``steps`` steps (a scan, checkpointed above
    ``CHECKPOINT_ABOVE`` steps), transformed by ``chain``; made once per loop, chain and
    trip count (the last ``KEEP_TRIP_COUNTS`` trip counts' are kept)."""
    def make(_):
        avals = (avals_of(body, body.inputs[:n_carry]) + avals_of(cond, cond.inputs[n_carry:])
                 + avals_of(body, body.inputs[n_carry:]))

        def loop(*ops):
            init, bconsts = ops[:n_carry], ops[n_carry + n_cond:]
            return _scan_steps(body, n_carry, init, bconsts, steps)
        graph = trace_graph(loop, avals)
        for step in chain:
            graph = prune(adjoint(graph, seeds=list(step[1])) if step[0] == "adjoint"
                          else jvp(graph))
        return graph
    # the graphs of the last few trip counts seen, per loop and chain
    made = derived(body, ("while_chain", cond, n_carry, n_cond, chain),
                   lambda _: collections.OrderedDict())
    key = (steps, segment_length(steps))
    if key in made:
        made.move_to_end(key)
    else:
        made[key] = make(body)
        if len(made) > KEEP_TRIP_COUNTS:
            made.popitem(last=False)
    return made[key]


def _impl(*operands, cond, body, n_carry, n_cond, chain, select):
    steps = trip_count(operands[:_n_while(body, n_carry, n_cond)], cond, body, n_carry, n_cond)
    graph = chain_graph(cond, body, n_carry, n_cond, chain, steps)
    # only what the outputs need (an adjoint graph also gives the function's own outputs)
    needed = derived(graph, ("select", select),
                     lambda g: prune(g, outputs=[g.outputs[i] for i in select]))
    return tuple(call(needed, [np.asarray(o) for o in operands]))


def _abstract(*avals, cond, body, n_carry, n_cond, chain, select):
    graph = chain_graph(cond, body, n_carry, n_cond, chain, 0)   # avals do not depend on it
    return [avals_of(graph, [graph.outputs[i]])[0] for i in select]


def _vjp(gs, outs, *operands, cond, body, n_carry, n_cond, chain, select):
    present = seeded(gs)
    graph = chain_graph(cond, body, n_carry, n_cond, chain, 0)
    n_out = len(graph.outputs)
    res = apply("while_derived", *operands, *[gs[i] for i in present], cond=cond, body=body,
                n_carry=n_carry, n_cond=n_cond,
                chain=chain + (("adjoint", tuple(select[i] for i in present)),),
                select=tuple(range(n_out, n_out + len(operands))))
    return tuple(res)


def _jvp(tangents, outs, *operands, cond, body, n_carry, n_cond, chain, select):
    graph = chain_graph(cond, body, n_carry, n_cond, chain, 0)
    n_out = len(graph.outputs)
    res = apply("while_derived", *operands, *zero_tangents(operands, tangents), cond=cond,
                body=body, n_carry=n_carry, n_cond=n_cond, chain=chain + (("jvp",),),
                select=tuple(n_out + i for i in select))
    return tuple(res)


def _jax(*operands, **params):
    """XLA cannot count the steps inside a compiled function: the node runs on the host
    (``jax.pure_callback``); ``tg.while_loop(..., max_steps=n)`` is the loop XLA compiles."""
    jax = import_jax()
    outs = _abstract(*operands, **params)

    def host(*xs):
        values = _impl(*(np.asarray(x) for x in xs), **params)
        return tuple(np.asarray(v, dtype=d) for v, (_, d) in zip(values, outs))
    return tuple(jax.pure_callback(host, tuple(jax.ShapeDtypeStruct(s, d) for s, d in outs),
                                   *operands, vmap_method="sequential"))


def while_vjp(gs, operands, cond, body, n_carry, n_cond):
    """``while_loop``'s VJP: one ``while_derived`` node giving every operand's cotangent."""
    present = seeded(gs)
    return tuple(apply("while_derived", *operands, *[gs[i] for i in present], cond=cond,
                       body=body, n_carry=n_carry, n_cond=n_cond,
                       chain=(("adjoint", present),),
                       select=tuple(range(n_carry, n_carry + len(operands)))))




# -- what a loaded node may hold (``ir/schema.py``) -----------------------------------------------
def _chain_param(v, avals):
    schema._need(type(v) is tuple and 1 <= len(v) <= MAX_CHAIN and all(
        type(s) is tuple and ((len(s) == 1 and s[0] == "jvp") or (
            len(s) == 2 and s[0] == "adjoint" and type(s[1]) is tuple
            and all(type(i) is int and 0 <= i < 2**20 for i in s[1])
            and len(set(s[1])) == len(s[1]))) for s in v),
        f"must be a chain of at most {MAX_CHAIN} ('adjoint', seeds) or ('jvp',) steps, got "
        f"{v!r:.60}")


def _select_param(v, avals):
    schema._need(type(v) is tuple and 1 <= len(v) <= 2**20
                 and all(type(i) is int and 0 <= i < 2**20 for i in v), "must be a tuple of "
                 f"output positions, got {v!r:.60}")


def _check(avals, params):
    cond, body, nc, ncond = params["cond"], params["body"], params["n_carry"], params["n_cond"]
    n_while = _n_while(body, nc, ncond)
    schema._need(n_while <= len(avals), "fewer operands than the loop takes")
    REGISTRY["while_loop"].schema.check(avals[:n_while], params)
    # the transforms, step by step: each adjoint seeds outputs the function has
    n_in, n_out = n_while, nc
    for step in params["chain"]:
        if step[0] == "adjoint":
            schema._need(all(i < n_out for i in step[1]), f"seeds {step[1]} but the function "
                                                           f"has {n_out} outputs")
            n_in, n_out = n_in + len(step[1]), n_out + n_in
        else:
            n_in, n_out = 2 * n_in, 2 * n_out
    schema._need(n_in == len(avals), f"the derived function takes {n_in} operands, the node "
                                     f"has {len(avals)}")
    graph = chain_graph(cond, body, nc, ncond, params["chain"], 0)
    schema._same(avals, graph, graph.inputs, "while_derived")
    schema._need(all(i < len(graph.outputs) for i in params["select"]),
                 f"select past the derived function's {len(graph.outputs)} outputs")


register(
    "while_derived", _impl, abstract=_abstract, vjp=_vjp, jvp=_jvp, jax=_jax,
    family="control", extra={"lazy": True}, outputs=lambda **params: len(params["select"]),
    doc="outputs `select` of the loop's function transformed by `chain` (derivatives of "
        "tg.while_loop), for the trip count its operands take",
    # facts (registry): row by row under vmap, outputs may share the operands' memory
    batch=None,
    cost=lambda out_shape, arg_shapes, params: 0,
    torch_name="WhileLoopBackward0",
    schema=schema.Spec({"cond": schema.GRAPH, "body": schema.GRAPH,
                        "n_carry": schema.INT(0, 2**20), "n_cond": schema.INT(0, 2**20),
                        "chain": _chain_param, "select": _select_param}, None, _check),
)
