"""Structured control flow: ``scan``, ``while_loop`` and ``cond`` nodes holding sub-graphs.

A loop is one node however many steps it runs, so graphs (and trace and compile time)
do not grow with the trip count. Each is a multi-output node (``ir/registry.py``): one
run of the loop or the branch gives all its outputs, which ``proj`` nodes pick apart
(``%5:f64[], %6:f64[3] = scan ...`` in a dump).

- ``scan``: operands ``*init, *xs, *consts``; ``body`` maps ``(*carry, *x_t, *consts)`` to
  ``(*carry, *y_t)``. Outputs: the final carries, then the ys stacked along a new
  leading axis of ``length``. Its VJP is two scans: one keeping the carry that enters
  each step, one running the body's adjoint backwards in time over them, for the
  cotangents of every output at once. Its JVP is a scan of the body's tangent graph.
  ``tg.fori_loop`` is a scan over the step numbers.
- ``while_loop``: ``cond`` and ``body`` graphs over the carries (and their constants);
  its outputs are the final carries. Its JVP is a while loop of the body's tangent
  graph; its VJP a ``while_derived`` node (``while_reverse.py``), which counts the steps
  and differentiates the scan of that many steps.
- ``cond``: ``pred`` picks the ``true`` or the ``false`` graph (same signature); its
  outputs are the branch's. VJP and JVP are one ``cond`` of the branches' adjoint and
  tangent graphs.

The graphs the rules derive from a body (its adjoint step, its tangent graph) are made
once per body (``subgraph.derived``). Running, tracing and differentiating sub-graphs
use the runtime, the tracer and the passes: this layer sits above them, and registers
its primitives into the IR's open registry when ``tracegrad`` is imported.
"""
import functools

import numpy as np

from ..ir.evaluate import call
from ..ir.registry import apply
from ..ir.registry import register as _register
from ..ir.schema import (  # the loader's parameter kinds
    BOOL,
    GRAPH,
    INT,
    MAX_INT,
    OUTPUTS,
    Spec,
    _cond,
    _scan,
    _while,
)
from ..runtime.jax_backend import graph_function, import_jax
from .subgraph import (
    adjoint_of,
    avals_of,
    compiled,
    derived,
    outputs_of,
    seeded,
    tangent_graph,
    trace_graph,
    zero_tangents,
)
from .while_reverse import while_vjp

# Loops and branches hold sub-graphs; whether those may see complex values is checked
# node by node inside them.
register = functools.partial(_register, complex=True)


def _zeros(graph, n, lead=()):
    ((shape, dtype),) = avals_of(graph, [n])
    return np.zeros(lead + shape, dtype)


def _call(graph, args):
    return call(graph, list(args))


# -- scan -------------------------------------------------------------------------------------
def _scan_impl(*operands, body, n_carry, n_x, length, reverse):
    fn = compiled(body)
    carry = [np.asarray(c) for c in operands[:n_carry]]
    xs = [np.asarray(x) for x in operands[n_carry:n_carry + n_x]]
    consts = [np.asarray(c) for c in operands[n_carry + n_x:]]
    ys = [_zeros(body, n, (length,)) for n in body.outputs[n_carry:]]
    for t in (range(length - 1, -1, -1) if reverse else range(length)):
        outs = fn(*carry, *[x[t] for x in xs], *consts)
        carry = [np.asarray(c) for c in outs[:n_carry]]
        for y, v in zip(ys, outs[n_carry:]):
            y[t] = v
    return tuple(carry + ys)


def _scan_abstract(*avals, body, n_carry, n_x, length, reverse):
    outs = avals_of(body, body.outputs)
    return outs[:n_carry] + [((length,) + shape, dtype) for shape, dtype in outs[n_carry:]]


def _with_carry_history(body, n_carry):
    """``body`` that also outputs the carries it was given (one more y per carry)."""
    return body.subgraph(list(body.outputs) + list(body.inputs[:n_carry]))


def _backward_step(body, n_carry, n_x):
    """One step of a scan's backward: the body's adjoint for all its outputs. Carries:
    the carry cotangents, then the constants' accumulated cotangents; xs: the carry that
    entered the step, the step's xs, the ys' cotangents; then the constants. Its ys are
    the xs' cotangents."""
    n_y = len(body.outputs) - n_carry
    n_c = len(body.inputs) - n_carry - n_x
    adj = adjoint_of(body, tuple(range(len(body.outputs))))
    n_out, n_in = len(body.outputs), len(body.inputs)

    def step(*args):
        ct_carry, acc = args[:n_carry], args[n_carry:n_carry + n_c]
        rest = args[n_carry + n_c:]
        carry_t = rest[:n_carry]
        x_t = rest[n_carry:n_carry + n_x]
        ct_y_t = rest[n_carry + n_x:n_carry + n_x + n_y]
        c = rest[n_carry + n_x + n_y:]
        res = _call(adj, [*carry_t, *x_t, *c, *ct_carry, *ct_y_t])
        cts = res[n_out:n_out + n_in]
        new_acc = [a + ct for a, ct in zip(acc, cts[n_carry + n_x:])]
        return [*cts[:n_carry], *new_acc, *cts[n_carry:n_carry + n_x]]

    carry_avals = avals_of(body, body.inputs[:n_carry])
    x_avals = avals_of(body, body.inputs[n_carry:n_carry + n_x])
    c_avals = avals_of(body, body.inputs[n_carry + n_x:])
    y_avals = avals_of(body, body.outputs[n_carry:])
    return trace_graph(step, carry_avals + c_avals + carry_avals + x_avals + y_avals + c_avals)


def _scan_vjp(gs, outs, *operands, body, n_carry, n_x, length, reverse):
    n_y = len(body.outputs) - n_carry
    n_c = len(operands) - n_carry - n_x
    xs, consts = operands[n_carry:n_carry + n_x], operands[n_carry + n_x:]
    # 1. the carry entering every step, stacked: the last n_carry ys of one more scan
    hist_body = derived(body, ("carry_history", n_carry),
                        lambda b: _with_carry_history(b, n_carry))
    hist = apply("scan", *operands, body=hist_body, n_carry=n_carry, n_x=n_x, length=length,
                 reverse=reverse)[n_carry + n_y:]
    # 2. one scan backwards in time over them, for the cotangents of every output at once
    step = derived(body, ("scan_backward", n_carry, n_x),
                   lambda b: _backward_step(b, n_carry, n_x))
    carry_avals = avals_of(body, body.inputs[:n_carry])
    c_avals = avals_of(body, body.inputs[n_carry + n_x:])
    y_avals = avals_of(body, body.outputs[n_carry:])
    ct_init = [np.zeros(s, d) if g is None else g for g, (s, d) in zip(gs, carry_avals)]
    ct_ys = [np.zeros((length,) + s, d) if g is None else g
             for g, (s, d) in zip(gs[n_carry:], y_avals)]
    acc0 = [np.zeros(s, d) for s, d in c_avals]
    n_carry_b = n_carry + n_c
    back = apply("scan", *ct_init, *acc0, *hist, *xs, *ct_ys, *consts, body=step,
                 n_carry=n_carry_b, n_x=n_carry + n_x + n_y, length=length,
                 reverse=not reverse)
    # cotangents of the initial carries, of the xs (the backward scan's ys), of the
    # constants (its accumulated carries)
    return (tuple(back[:n_carry]) + tuple(back[n_carry_b:n_carry_b + n_x])
            + tuple(back[n_carry:n_carry_b]))


def _tangent_step(body, n_carry, n_x):
    """A scan body carrying the tangents beside the values: inputs ``*carry, *t_carry,
    *x, *t_x, *consts, *t_consts``; outputs ``*carry, *t_carry, *y, *t_y``."""
    jb = tangent_graph(body)  # inputs: *inputs, *input tangents; outputs: *outputs, *tangents
    n_in, n_out = len(body.inputs), len(body.outputs)
    n_c = n_in - n_carry - n_x

    def step(*args):
        c, tc = args[:n_carry], args[n_carry:2 * n_carry]
        x, tx = args[2 * n_carry:2 * n_carry + n_x], args[2 * n_carry + n_x:2 * (n_carry + n_x)]
        k, tk = args[2 * (n_carry + n_x):2 * (n_carry + n_x) + n_c], args[2 * (n_carry + n_x) + n_c:]
        res = _call(jb, [*c, *x, *k, *tc, *tx, *tk])
        outs, touts = res[:n_out], res[n_out:]
        return [*outs[:n_carry], *touts[:n_carry], *outs[n_carry:], *touts[n_carry:]]

    avals = avals_of(body, body.inputs)
    ca, xa, ka = avals[:n_carry], avals[n_carry:n_carry + n_x], avals[n_carry + n_x:]
    return trace_graph(step, ca + ca + xa + xa + ka + ka)


def _scan_jvp(tangents, outs, *operands, body, n_carry, n_x, length, reverse):
    n_y = len(body.outputs) - n_carry
    tangents = zero_tangents(operands, tangents)
    graph = derived(body, ("scan_tangent", n_carry, n_x),
                    lambda b: _tangent_step(b, n_carry, n_x))
    init, xs, consts = (operands[:n_carry], operands[n_carry:n_carry + n_x],
                        operands[n_carry + n_x:])
    t_init, t_xs, t_consts = (tangents[:n_carry], tangents[n_carry:n_carry + n_x],
                              tangents[n_carry + n_x:])
    res = apply("scan", *init, *t_init, *xs, *t_xs, *consts, *t_consts, body=graph,
                n_carry=2 * n_carry, n_x=2 * n_x, length=length, reverse=reverse)
    return tuple(res[n_carry:2 * n_carry]) + tuple(res[2 * n_carry + n_y:])


def _scan_jax(*operands, body, n_carry, n_x, length, reverse):
    lax = import_jax().lax
    fn = graph_function(body)
    consts = operands[n_carry + n_x:]

    def step(carry, x):
        outs = fn(*carry, *x, *consts)
        return tuple(outs[:n_carry]), tuple(outs[n_carry:])
    carry, ys = lax.scan(step, tuple(operands[:n_carry]), tuple(operands[n_carry:n_carry + n_x]),
                         length=length, reverse=reverse)
    return tuple(carry) + tuple(ys)


register(
    "scan", _scan_impl, abstract=_scan_abstract, vjp=_scan_vjp, jvp=_scan_jvp, jax=_scan_jax,
    family="control", extra={"lazy": True}, outputs=outputs_of("body"),
    doc="the final carries, then the stacked ys, of a scan of `body` over the leading axis "
        "of the xs (tg.scan, tg.fori_loop)",
    # facts (registry): row by row under vmap, outputs may share the operands' memory
    batch=None,
    schema=Spec({"body": GRAPH, "n_carry": OUTPUTS, "n_x": OUTPUTS, "length": INT(0, MAX_INT),
                  "reverse": BOOL}, None, _scan),
)


# -- while_loop ---------------------------------------------------------------------------------
def _while_impl(*operands, cond, body, n_carry, n_cond):
    test, step = compiled(cond), compiled(body)
    carry = [np.asarray(c) for c in operands[:n_carry]]
    cconsts = operands[n_carry:n_carry + n_cond]
    bconsts = operands[n_carry + n_cond:]
    while bool(test(*carry, *cconsts)[0]):
        carry = [np.asarray(c) for c in step(*carry, *bconsts)]
    return tuple(carry)


def _while_abstract(*avals, cond, body, n_carry, n_cond):
    return avals_of(body, body.outputs)


def _while_vjp(gs, outs, *operands, cond, body, n_carry, n_cond):
    # once the trip count is known, the loop is a scan of that many steps (while_reverse)
    return while_vjp(gs, operands, cond, body, n_carry, n_cond)


def _while_tangent_body(body, n_carry):
    """The body carrying the tangents beside the carries: inputs ``*carry, *t_carry,
    *bconsts, *t_bconsts``."""
    jb = tangent_graph(body)
    n_out, n_b = len(body.outputs), len(body.inputs) - n_carry
    avals = avals_of(body, body.inputs)
    ca, ba = avals[:n_carry], avals[n_carry:]

    def step(*args):
        c, tc = args[:n_carry], args[n_carry:2 * n_carry]
        k, tk = args[2 * n_carry:2 * n_carry + n_b], args[2 * n_carry + n_b:]
        res = _call(jb, [*c, *k, *tc, *tk])
        return [*res[:n_out], *res[n_out:]]

    return trace_graph(step, ca + ca + ba + ba)


def _while_tangent_cond(cond, n_carry):
    """``cond`` over ``*carry, *t_carry, *cconsts`` (the tangents ignored)."""
    avals = avals_of(cond, cond.inputs)
    ca = avals[:n_carry]
    return trace_graph(lambda *args: _call(cond, [*args[:n_carry], *args[2 * n_carry:]]),
                  ca + ca + avals[n_carry:])


def _while_jvp(tangents, outs, *operands, cond, body, n_carry, n_cond):
    tangents = zero_tangents(operands, tangents)
    body2 = derived(body, ("while_tangent", n_carry), lambda b: _while_tangent_body(b, n_carry))
    cond2 = derived(cond, ("while_tangent", n_carry), lambda c: _while_tangent_cond(c, n_carry))
    init, cconsts, bconsts = (operands[:n_carry], operands[n_carry:n_carry + n_cond],
                              operands[n_carry + n_cond:])
    t_init, t_b = tangents[:n_carry], tangents[n_carry + n_cond:]
    res = apply("while_loop", *init, *t_init, *cconsts, *bconsts, *t_b, cond=cond2, body=body2,
                n_carry=2 * n_carry, n_cond=n_cond)
    return tuple(res[n_carry:])


def _while_jax(*operands, cond, body, n_carry, n_cond):
    lax = import_jax().lax
    test, step = graph_function(cond), graph_function(body)
    cconsts, bconsts = operands[n_carry:n_carry + n_cond], operands[n_carry + n_cond:]
    out = lax.while_loop(lambda c: test(*c, *cconsts)[0], lambda c: tuple(step(*c, *bconsts)),
                         tuple(operands[:n_carry]))
    return tuple(out)


register(
    "while_loop", _while_impl, abstract=_while_abstract, vjp=_while_vjp, jvp=_while_jvp,
    jax=_while_jax, family="control", extra={"lazy": True},
    outputs=outputs_of("body"),
    doc="the carries once `cond` is false (tg.while_loop)",
    # facts (registry): row by row under vmap, outputs may share the operands' memory
    batch=None,
    schema=Spec({"cond": GRAPH, "body": GRAPH, "n_carry": OUTPUTS, "n_cond": OUTPUTS},
                       None, _while),
)


# -- cond ------------------------------------------------------------------------------------------
def _cond_impl(pred, *operands, true, false):
    branch = true if bool(np.asarray(pred)) else false
    return tuple(compiled(branch)(*[np.asarray(o) for o in operands]))


def _cond_abstract(pred, *avals, true, false):
    return avals_of(true, true.outputs)


def _cond_vjp(gs, outs, pred, *operands, true, false):
    seeds = seeded(gs)
    res = apply("cond", pred, *operands, *[gs[i] for i in seeds],
                true=adjoint_of(true, seeds), false=adjoint_of(false, seeds))
    return (None,) + tuple(res[len(true.outputs):])


def _cond_jvp(tangents, outs, pred, *operands, true, false):
    ts = zero_tangents(operands, tangents[1:])
    res = apply("cond", pred, *operands, *ts, true=tangent_graph(true),
                false=tangent_graph(false))
    return tuple(res[len(true.outputs):])


def _cond_jax(pred, *operands, true, false):
    lax = import_jax().lax
    ft, ff = graph_function(true), graph_function(false)
    return tuple(lax.cond(pred, lambda *a: tuple(ft(*a)), lambda *a: tuple(ff(*a)), *operands))


register(
    "cond", _cond_impl, abstract=_cond_abstract, vjp=_cond_vjp, jvp=_cond_jvp, jax=_cond_jax,
    nondiff_args=(0,), family="control", outputs=outputs_of("true"),
    doc="the outputs of the `true` or the `false` graph, as `pred` says (tg.cond)",
    # facts (registry): row by row under vmap, outputs may share the operands' memory
    batch=None,
    schema=Spec({"true": GRAPH, "false": GRAPH}, None, _cond, minimum=1),
)
