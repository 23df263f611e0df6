"""Structured control flow: ``scan``, ``while_loop`` and ``cond`` nodes holding sub-graphs.

A loop is one node however many steps it runs, so graphs (and trace and compile time)
do not grow with the trip count. Like every node, a control-flow node has one value:
a loop with several carries is several sibling nodes (param ``index``) that share one
run of the loop (``_memo``).

- ``scan``: operands ``*init, *xs, *consts``; ``body`` maps ``(*carry, *x_t, *consts)`` to
  ``(*carry, *y_t)``. Outputs: the final carries, then the ys stacked along a new
  leading axis of ``length``. Its VJP is two scans: one keeping the carry that enters
  each step, one running the body's adjoint backwards in time over them. Its JVP is a
  scan of the body's tangent graph. ``tg.fori_loop`` is a scan over the step numbers.
- ``while_loop``: ``cond`` and ``body`` graphs over the carries (and their constants).
  Forward mode only: reverse mode raises, since the trip count depends on the data.
- ``cond``: ``pred`` picks the ``true`` or the ``false`` graph (same signature); VJP and
  JVP are ``cond`` of the branches' adjoint and tangent graphs.

Running, tracing and differentiating sub-graphs use the runtime, the tracer and the
passes: this layer sits above them, and registers its primitives into the IR's open
registry when ``tracegrad`` is imported.
"""
import functools

import numpy as np

from ..errors import TraceError
from ..ir.registry import Aval, apply, per_output_element
from ..ir.registry import register as _register
from ..passes.adjoint import adjoint
from ..passes.jvp import jvp
from ..passes.prune import prune
from ..runtime.interpreter import call_graph
from ..runtime.jax_backend import graph_function, import_jax
from ..tracer import Tracer, new_trace
from .subgraph import compiled, shared_run

# Loops and branches hold sub-graphs; whether those may see complex values is checked
# node by node inside them.
register = functools.partial(_register, complex=True)


def _aval(graph, n):
    d = graph.node(n)
    return tuple(d["shape"]), np.dtype(d["dtype"])


def _zeros(graph, n, lead=()):
    shape, dtype = _aval(graph, n)
    return np.zeros(lead + shape, dtype)


def _trace(fn, avals):
    """A graph of ``fn`` over inputs of ``avals`` (all captured values must be operands)."""
    with new_trace() as trace:
        ins = [trace.new_input(aval=Aval(tuple(s), np.dtype(d))) for s, d in avals]
        outs = fn(*ins)
        if trace.captured:
            raise TraceError("internal: a derived loop body captured an outer value")
        trace.graph.outputs = [(o if isinstance(o, Tracer) else trace.const(o))._node
                               for o in outs]
    return _pruned(trace.graph)


def _pruned(graph):
    """Without the nodes no output needs (a rule's cotangent for a constant operand, which
    may even warn: log of a negative base)."""
    return prune(graph)


def _call(graph, args):
    return call_graph(graph, list(args))


def _avals_of(graph, nodes):
    return [_aval(graph, n) for n in nodes]


# -- scan -------------------------------------------------------------------------------------
def _scan_run(operands, body, n_carry, n_x, length, reverse):
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
    return carry + ys


def _scan_impl(*operands, body, n_carry, n_x, length, reverse, index):
    return shared_run((body,), operands, index,
                      lambda: _scan_run(operands, body, n_carry, n_x, length, reverse))


def _scan_abstract(*avals, body, n_carry, n_x, length, reverse, index):
    shape, dtype = _aval(body, body.outputs[index])
    return ((length,) + shape if index >= n_carry else shape), dtype


def _with_carry_history(body, n_carry):
    """``body`` that also outputs the carries it was given (one more y per carry)."""
    return body.subgraph(list(body.outputs) + list(body.inputs[:n_carry]))


def _scan_vjp(g, out, *operands, body, n_carry, n_x, length, reverse, index):
    n_y = len(body.outputs) - n_carry
    n_c = len(operands) - n_carry - n_x
    xs, consts = operands[n_carry:n_carry + n_x], operands[n_carry + n_x:]
    # 1. the carry entering every step, stacked
    hist_body = _with_carry_history(body, n_carry)
    hist = [apply("scan", *operands, body=hist_body, n_carry=n_carry, n_x=n_x, length=length,
                  reverse=reverse, index=n_carry + n_y + k) for k in range(n_carry)]
    # 2. one step of the backward: the body's adjoint for all its outputs
    adj = _pruned(adjoint(body))
    n_out, n_in = len(body.outputs), len(body.inputs)

    def backward_step(*args):
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

    carry_avals = _avals_of(body, body.inputs[:n_carry])
    x_avals = _avals_of(body, body.inputs[n_carry:n_carry + n_x])
    c_avals = _avals_of(body, body.inputs[n_carry + n_x:])
    y_avals = _avals_of(body, body.outputs[n_carry:])
    step = _trace(backward_step, carry_avals + c_avals + carry_avals + x_avals + y_avals + c_avals)
    ct_init = [g if k == index else np.zeros(s, d) for k, (s, d) in enumerate(carry_avals)]
    ct_ys = [g if n_carry + j == index else np.zeros((length,) + s, d)
             for j, (s, d) in enumerate(y_avals)]
    acc0 = [np.zeros(s, d) for s, d in c_avals]
    ops_b = [*ct_init, *acc0, *hist, *xs, *ct_ys, *consts]
    n_carry_b = n_carry + n_c

    def out_b(k):
        return apply("scan", *ops_b, body=step, n_carry=n_carry_b, n_x=n_carry + n_x + n_y,
                     length=length, reverse=not reverse, index=k)
    return tuple([out_b(k) for k in range(n_carry)] +
                 [out_b(n_carry_b + j) for j in range(n_x)] +
                 [out_b(n_carry + k) for k in range(n_c)])


def _scan_jvp(tangents, out, *operands, body, n_carry, n_x, length, reverse, index):
    n_y = len(body.outputs) - n_carry
    tangents = [np.zeros(np.shape(o), np.result_type(o)) if t is None else t
                for o, t in zip(operands, tangents)]
    jb = _pruned(jvp(body))  # inputs: *inputs, *input tangents; outputs: *outputs, *tangents
    n_in, n_out = len(body.inputs), len(body.outputs)
    n_c = n_in - n_carry - n_x

    def step(*args):
        # args: *carry, *t_carry, *x, *t_x, *consts, *t_consts
        c, tc = args[:n_carry], args[n_carry:2 * n_carry]
        x, tx = args[2 * n_carry:2 * n_carry + n_x], args[2 * n_carry + n_x:2 * (n_carry + n_x)]
        k, tk = args[2 * (n_carry + n_x):2 * (n_carry + n_x) + n_c], args[2 * (n_carry + n_x) + n_c:]
        res = _call(jb, [*c, *x, *k, *tc, *tx, *tk])
        outs, touts = res[:n_out], res[n_out:]
        return [*outs[:n_carry], *touts[:n_carry], *outs[n_carry:], *touts[n_carry:]]

    avals = _avals_of(body, body.inputs)
    ca, xa, ka = avals[:n_carry], avals[n_carry:n_carry + n_x], avals[n_carry + n_x:]
    graph = _trace(step, ca + ca + xa + xa + ka + ka)
    init, xs, consts = (operands[:n_carry], operands[n_carry:n_carry + n_x],
                        operands[n_carry + n_x:])
    t_init, t_xs, t_consts = (tangents[:n_carry], tangents[n_carry:n_carry + n_x],
                              tangents[n_carry + n_x:])
    new_index = n_carry + index if index < n_carry else 2 * n_carry + n_y + (index - n_carry)
    return apply("scan", *init, *t_init, *xs, *t_xs, *consts, *t_consts, body=graph,
                 n_carry=2 * n_carry, n_x=2 * n_x, length=length, reverse=reverse,
                 index=new_index)


def _scan_jax(*operands, body, n_carry, n_x, length, reverse, index):
    lax = import_jax().lax
    fn = graph_function(body)
    consts = operands[n_carry + n_x:]

    def step(carry, x):
        outs = fn(*carry, *x, *consts)
        return tuple(outs[:n_carry]), tuple(outs[n_carry:])
    carry, ys = lax.scan(step, tuple(operands[:n_carry]), tuple(operands[n_carry:n_carry + n_x]),
                         length=length, reverse=reverse)
    return (list(carry) + list(ys))[index]


register(
    "scan", _scan_impl, abstract=_scan_abstract, vjp=_scan_vjp, jvp=_scan_jvp, jax=_scan_jax,
    family="control", extra={"lazy": True},
    doc="output `index` of a scan of `body` over the leading axis of the xs (tg.scan, "
        "tg.fori_loop)",
    # facts (registry): row by row under vmap, outputs may share the operands' memory
    batch=None, aliasing="unknown", ufunc=None, spelling=None, reducer=None,
    zeros=None, foldable=True, cost=per_output_element, torch_name="ScanBackward0", jax_casts=None,
)


# -- while_loop ---------------------------------------------------------------------------------
def _while_run(operands, cond, body, n_carry, n_cond):
    test, step = compiled(cond), compiled(body)
    carry = [np.asarray(c) for c in operands[:n_carry]]
    cconsts = operands[n_carry:n_carry + n_cond]
    bconsts = operands[n_carry + n_cond:]
    while bool(test(*carry, *cconsts)[0]):
        carry = [np.asarray(c) for c in step(*carry, *bconsts)]
    return carry


def _while_impl(*operands, cond, body, n_carry, n_cond, index):
    return shared_run((cond, body), operands, index,
                      lambda: _while_run(operands, cond, body, n_carry, n_cond))


def _while_abstract(*avals, cond, body, n_carry, n_cond, index):
    return _aval(body, body.outputs[index])


def _while_vjp(g, out, *operands, cond, body, n_carry, n_cond, index):
    raise TraceError("reverse-mode differentiation of tg.while_loop is not supported: its "
                     "number of steps depends on the values, so the backward pass cannot know "
                     "what to store. Use tg.fori_loop or tg.scan with a fixed number of steps "
                     "(stopping early inside the body with np.where), or forward mode (tg.jvp)")


def _while_jvp(tangents, out, *operands, cond, body, n_carry, n_cond, index):
    tangents = [np.zeros(np.shape(o), np.result_type(o)) if t is None else t
                for o, t in zip(operands, tangents)]
    jb = _pruned(jvp(body))
    n_in, n_out = len(body.inputs), len(body.outputs)
    n_b = n_in - n_carry
    avals = _avals_of(body, body.inputs)
    ca, ba = avals[:n_carry], avals[n_carry:]
    cond_avals = _avals_of(cond, cond.inputs[n_carry:])

    def step(*args):     # *carry, *t_carry, *bconsts, *t_bconsts
        c, tc = args[:n_carry], args[n_carry:2 * n_carry]
        k, tk = args[2 * n_carry:2 * n_carry + n_b], args[2 * n_carry + n_b:]
        res = _call(jb, [*c, *k, *tc, *tk])
        return [*res[:n_out], *res[n_out:]]

    def test(*args):     # *carry, *t_carry, *cconsts
        return _call(cond, [*args[:n_carry], *args[2 * n_carry:]])

    body2 = _trace(step, ca + ca + ba + ba)
    cond2 = _trace(test, ca + ca + cond_avals)
    init, cconsts, bconsts = (operands[:n_carry], operands[n_carry:n_carry + n_cond],
                              operands[n_carry + n_cond:])
    t_init, t_b = tangents[:n_carry], tangents[n_carry + n_cond:]
    return apply("while_loop", *init, *t_init, *cconsts, *bconsts, *t_b, cond=cond2, body=body2,
                 n_carry=2 * n_carry, n_cond=n_cond, index=n_carry + index)


def _while_jax(*operands, cond, body, n_carry, n_cond, index):
    lax = import_jax().lax
    test, step = graph_function(cond), graph_function(body)
    cconsts, bconsts = operands[n_carry:n_carry + n_cond], operands[n_carry + n_cond:]
    out = lax.while_loop(lambda c: test(*c, *cconsts)[0], lambda c: tuple(step(*c, *bconsts)),
                         tuple(operands[:n_carry]))
    return out[index]


register(
    "while_loop", _while_impl, abstract=_while_abstract, vjp=_while_vjp, jvp=_while_jvp,
    jax=_while_jax, family="control", extra={"lazy": True, "reverse_mode": False},
    doc="output `index` of the carries once `cond` is false (tg.while_loop)",
    # facts (registry): row by row under vmap, outputs may share the operands' memory
    batch=None, aliasing="unknown", ufunc=None, spelling=None, reducer=None,
    zeros=None, foldable=True, cost=per_output_element, torch_name="WhileLoopBackward0", jax_casts=None,
)


# -- cond ------------------------------------------------------------------------------------------
def _cond_impl(pred, *operands, true, false, index):
    branch = true if bool(np.asarray(pred)) else false
    return shared_run((branch,), operands, index,
                      lambda: list(compiled(branch)(*[np.asarray(o) for o in operands])))


def _cond_abstract(pred, *avals, true, false, index):
    return _aval(true, true.outputs[index])


def _branch_graphs(true, false, index, make):
    cache = true.__dict__.setdefault("_derived", {})
    key = (make.__name__, index, id(false))
    if key not in cache:
        cache[key] = make(true, index), make(false, index)
    return cache[key]


def _adjoint_for(graph, index):
    return _pruned(adjoint(graph, seeds=[index]))


def _jvp_of(graph, index):
    return _pruned(jvp(graph))


def _cond_vjp(g, out, pred, *operands, true, false, index):
    adj_t, adj_f = _branch_graphs(true, false, index, _adjoint_for)
    n_out = len(true.outputs)
    return (None,) + tuple(apply("cond", pred, *operands, g, true=adj_t, false=adj_f,
                                 index=n_out + k) for k in range(len(operands)))


def _cond_jvp(tangents, out, pred, *operands, true, false, index):
    jt, jf = _branch_graphs(true, false, index, _jvp_of)
    ts = [np.zeros(np.shape(o), np.result_type(o)) if t is None else t
          for o, t in zip(operands, tangents[1:])]
    return apply("cond", pred, *operands, *ts, true=jt, false=jf,
                 index=len(true.outputs) + index)


def _cond_jax(pred, *operands, true, false, index):
    lax = import_jax().lax
    ft, ff = graph_function(true), graph_function(false)
    return lax.cond(pred, lambda *a: tuple(ft(*a)), lambda *a: tuple(ff(*a)), *operands)[index]


register(
    "cond", _cond_impl, abstract=_cond_abstract, vjp=_cond_vjp, jvp=_cond_jvp, jax=_cond_jax,
    nondiff_args=(0,), family="control",
    doc="output `index` of the `true` or the `false` graph, as `pred` says (tg.cond)",
    # facts (registry): row by row under vmap, outputs may share the operands' memory
    batch=None, aliasing="unknown", ufunc=None, spelling=None, reducer=None,
    zeros=None, foldable=True, cost=per_output_element, torch_name="CondBackward0", jax_casts=None,
)
