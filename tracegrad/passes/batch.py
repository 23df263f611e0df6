"""Batching as a graph-to-graph pass (vmap in the spirit of JAX).

``batch(graph, batched_inputs, size)`` gives a graph whose listed inputs carry a new
leading axis of length ``size``; every node that depends on them computes the value for
each of the ``size`` rows at once, with the batch axis first. Nodes that depend on no
batched input are replayed unchanged (they are computed once, not once per row).

Each primitive's batching rule lives in ``RULES`` below, keyed by primitive name. A rule
is called as ``rule(size, args, batched, out_shape, **params)`` where ``args`` are the
operands in the batched graph (batched ones have the batch axis in front), ``batched``
flags which ones do, and ``out_shape`` is the node's unbatched output shape; it returns
the batched output (batch axis in front). Rules are NumPy code on traced values, like
the VJP rules, so the result is an ordinary graph: it can be pruned, compiled,
differentiated. A primitive without a rule (or a case a rule declines by returning
``NotImplemented``) is evaluated row by row: the per-row results are stacked, so
correctness never depends on a rule existing.
"""
from __future__ import annotations

import string

import numpy as np

from ..errors import TraceError
from ..ir import REGISTRY, Aval, Graph, apply
from ..ir.indexspec import Arg, Index, Slice
from ..tracer import Tracer, new_trace, source_override
from .common import at_node, finish

__all__ = ["batch", "RULES", "fallback"]


# -- helpers -----------------------------------------------------------------------------
def _shape(x):
    return tuple(np.shape(x))


def _reshape(x, shape):
    shape = tuple(shape)
    return x if _shape(x) == shape else apply("reshape", x, shape=shape)


def _bcast(x, size):
    """An unbatched operand given the batch axis (every row the same)."""
    return apply("broadcast_to", x, shape=(size,) + _shape(x))


def _lift_rank(x, rank):
    """A batched ``x`` (batch axis first) with size-1 axes inserted after the batch axis so
    that its unbatched part has ``rank`` axes: it then broadcasts against unbatched
    operands as the row would, with the batch axis staying in front."""
    s = _shape(x)
    missing = rank - (len(s) - 1)
    return _reshape(x, s[:1] + (1,) * missing + s[1:]) if missing > 0 else x


def _shift_axes(axis):
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        return tuple(int(a) + 1 for a in axis)
    return int(axis) + 1


def _norm(axis, ndim):
    return int(axis) % ndim if ndim else int(axis)


# -- the rules -----------------------------------------------------------------------------
def _elementwise(name):
    def rule(size, args, batched, out_shape, **params):
        rank = len(out_shape)
        ops = [_lift_rank(a, rank) if b else a for a, b in zip(args, batched)]
        return apply(name, *ops, **params)
    return rule


def _reduction(name):
    def rule(size, args, batched, out_shape, axis, keepdims):
        (x,) = args
        nd = len(_shape(x)) - 1
        axes = tuple(_norm(a, nd) + 1 for a in (range(nd) if axis is None else axis))
        return apply(name, x, axis=axes, keepdims=keepdims)
    return rule


def _arg_reduction(name):
    def rule(size, args, batched, out_shape, axis, keepdims):
        (x,) = args
        if axis is None:
            flat = _reshape(x, (size, int(np.prod(_shape(x)[1:], dtype=np.int64))))
            r = apply(name, flat, axis=1, keepdims=False)
            return _reshape(r, (size,) + tuple(out_shape))
        return apply(name, x, axis=_norm(axis, len(_shape(x)) - 1) + 1, keepdims=keepdims)
    return rule


def _cumsum(size, args, batched, out_shape, axis):
    (x,) = args
    return apply("cumsum", x, axis=_norm(axis, len(_shape(x)) - 1) + 1)


def _reshape_rule(size, args, batched, out_shape, shape):
    return apply("reshape", args[0], shape=(size,) + tuple(out_shape))


def _transpose(size, args, batched, out_shape, axes):
    return apply("transpose", args[0], axes=(0,) + tuple(int(a) + 1 for a in axes))


def _broadcast_to(size, args, batched, out_shape, shape):
    x = _lift_rank(args[0], len(shape))
    return apply("broadcast_to", x, shape=(size,) + tuple(shape))


def _concatenate(size, args, batched, out_shape, axis):
    ops = [a if b else _bcast(a, size) for a, b in zip(args, batched)]
    return apply("concatenate", *ops, axis=_norm(axis, len(out_shape)) + 1)


def _pad(size, args, batched, out_shape, widths, value):
    return apply("pad", args[0], widths=((0, 0),) + tuple(tuple(w) for w in widths),
                 value=value)


_FULL = Slice(None, None, None)


def _advanced(item):
    return isinstance(item, (Arg, np.ndarray))


def _index_ok(index):
    """True when prepending a full slice to ``index`` keeps the batch axis in front: no
    advanced (array) index, or all advanced entries side by side (NumPy then keeps their
    result axes in place rather than moving them to the front)."""
    items = list(index)
    if not any(_advanced(i) for i in items):
        return True
    # with an array present, integers are advanced indices too
    adv = [k for k, i in enumerate(items)
           if _advanced(i) or (isinstance(i, (int, np.integer)) and not isinstance(i, bool))]
    return adv == list(range(adv[0], adv[-1] + 1))


def _getitem(size, args, batched, out_shape, index):
    if any(batched[1:]) or not _index_ok(index):
        return NotImplemented
    return apply("getitem", args[0], *args[1:], index=Index((_FULL,) + tuple(index)))


def _index_update(size, args, batched, out_shape, index, mode):
    if any(batched[2:]) or not _index_ok(index):
        return NotImplemented
    x, v, idx = args[0], args[1], args[2:]
    if not batched[0]:
        x = _bcast(x, size)
    if batched[1]:
        # the slot x[index] of one row; the update broadcasts into it from the right
        slot, _ = REGISTRY["getitem"].shape_dtype(
            [Aval(out_shape, np.dtype(x.dtype))] + [Aval(_shape(i), np.dtype(i.dtype))
                                                    for i in idx], {"index": index})
        v = _lift_rank(v, len(slot))
    return apply("index_update", x, v, *idx, index=Index((_FULL,) + tuple(index)), mode=mode)


def _matmul(size, args, batched, out_shape):
    a, b = args
    ka = len(_shape(a)) - batched[0]
    kb = len(_shape(b)) - batched[1]
    # NumPy's 1-D promotion, made explicit so that the batch axis is a stacking axis
    if ka == 1:
        a = _reshape(a, _shape(a)[:-1] + (1,) + _shape(a)[-1:])
    if kb == 1:
        b = _reshape(b, _shape(b) + (1,))
    stack = max(max(ka, 2) - 2, max(kb, 2) - 2)
    ops = [_lift_rank(x, stack + 2) if f else x for x, f in zip((a, b), batched)]
    out = apply("matmul", *ops)
    return _reshape(out, (size,) + tuple(out_shape))


def _einsum(size, args, batched, out_shape, subscripts):
    ins, out = subscripts.split("->")
    ins = ins.split(",")
    free = next(c for c in string.ascii_letters if c not in subscripts)
    ins = [free + s if b else s for s, b in zip(ins, batched)]
    return apply("einsum", *args, subscripts=",".join(ins) + "->" + free + out)


def _linalg_unary(name):
    def rule(size, args, batched, out_shape):
        return apply(name, args[0])
    return rule


def _solve(size, args, batched, out_shape):
    a, b = args
    ka = len(_shape(a)) - batched[0]
    kb = len(_shape(b)) - batched[1]
    vector = kb == 1
    if vector and not batched[1]:
        # a 1-D right-hand side broadcasts against a's (batched) stack
        return apply("solve", a, b)
    if vector:
        b = _reshape(b, _shape(b) + (1,))
        kb = 2
    stack = max(ka - 2, kb - 2)
    ops = [_lift_rank(x, stack + 2) if f else x for x, f in zip((a, b), batched)]
    return _reshape(apply("solve", *ops), (size,) + tuple(out_shape))


def _fold_into_n(name):
    """conv2d / conv_transpose2d / pools: a batched image folds into N (weights unbatched)."""
    def rule(size, args, batched, out_shape, **params):
        if any(batched[1:]):
            return NotImplemented
        x = args[0]
        s = _shape(x)
        y = apply(name, _reshape(x, (size * s[1],) + s[2:]), *args[1:], **params)
        return _reshape(y, (size,) + tuple(out_shape))
    return rule


RULES: dict = {}

for _name, _prim in REGISTRY.items():
    if _prim.family == "elementwise":
        RULES[_name] = _elementwise(_name)
for _name in ("sum", "max", "min", "prod"):
    RULES[_name] = _reduction(_name)
for _name in ("argmax", "argmin"):
    RULES[_name] = _arg_reduction(_name)
for _name in ("inv", "det", "logabsdet", "slogdet_sign", "cholesky"):
    RULES[_name] = _linalg_unary(_name)
for _name in ("conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d"):
    RULES[_name] = _fold_into_n(_name)
RULES.update({
    "cumsum": _cumsum,
    "reshape": _reshape_rule,
    "transpose": _transpose,
    "broadcast_to": _broadcast_to,
    "concatenate": _concatenate,
    "pad": _pad,
    "getitem": _getitem,
    "index_update": _index_update,
    "matmul": _matmul,
    "einsum": _einsum,
    "solve": _solve,
})
del _name, _prim


# -- Fourier transforms (tracegrad/ir/prims/fft.py) ----------------------------------------------
# One operand, and the transformed axes are named: the batch axis in front is one more batch
# axis of the same primitive, with every axis number moved up by one.
RULES.update({
    "fft": lambda size, args, batched, out_shape, axes, inverse, norm: apply(
        "fft", args[0], axes=_shift_axes(axes), inverse=inverse, norm=norm),
    "rfft": lambda size, args, batched, out_shape, axis, norm: apply(
        "rfft", args[0], axis=axis + 1, norm=norm),
    "irfft": lambda size, args, batched, out_shape, n, axis, norm: apply(
        "irfft", args[0], n=n, axis=axis + 1, norm=norm),
})


def fallback(size, args, batched, out_shape, op, **params):
    """Any primitive, row by row: apply it to each row of the batched operands (the
    unbatched ones as they are) and stack the results."""
    rows = []
    for i in range(size):
        row_args = [apply("getitem", a, index=Index((i,))) if b else a
                    for a, b in zip(args, batched)]
        r = apply(op, *row_args, **params)
        rows.append(_reshape(r, (1,) + _shape(r)))
    if not rows:
        raise TraceError(f"cannot batch {op} over an empty batch")
    return rows[0] if size == 1 else apply("concatenate", *rows, axis=0)


# -- the pass ----------------------------------------------------------------------------------
def batch(graph: Graph, batched_inputs, size: int, *, rules=None, stats=None) -> Graph:
    """``graph`` batched over a new leading axis of length ``size`` of the inputs at the
    positions ``batched_inputs`` (indices into ``graph.inputs``).

    The result has the same inputs (the listed ones with shape ``(size,) + shape``) and
    one output per output of ``graph``, each with the batch axis in front (an output
    that depends on no batched input is broadcast). ``rules`` overrides ``RULES`` (a
    table keyed by primitive name); ``stats``, a dict, counts the nodes batched by a rule
    (``"rule"``) and row by row (``"fallback"``, and per op as ``"fallback:<op>"``).
    """
    size = int(size)
    if size < 1:
        raise TraceError(f"batch needs a batch size of at least 1, got {size}")
    rules = RULES if rules is None else rules
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
            args = [env[a] for a in d["args"]]
            flags = [batched[a] for a in d["args"]]
            with at_node(d):
                if not any(flags):
                    env[n], batched[n] = apply(op, *args, **d["params"]), False
                    continue
                rule = rules.get(op)
                out = NotImplemented if rule is None else rule(
                    size, args, flags, tuple(d["shape"]), **d["params"])
                if out is NotImplemented:
                    out = fallback(size, args, flags, tuple(d["shape"]), op, **d["params"])
                    kind = "fallback"
                    if stats is not None:
                        stats[f"fallback:{op}"] = stats.get(f"fallback:{op}", 0) + 1
                else:
                    kind = "rule"
                if stats is not None:
                    stats[kind] = stats.get(kind, 0) + 1
                want = (size,) + tuple(d["shape"])
                if _shape(out) != want:
                    raise TraceError(f"the batching rule of {op} gave shape {_shape(out)}, "
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
                outs.append(env[o] if batched[o] else _bcast(env[o], size))
        return finish(trace, outs)
