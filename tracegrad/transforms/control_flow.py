"""Structured control flow with JAX's signatures: ``cond``, ``fori_loop``, ``while_loop``,
``scan``.

Each traces its function(s) once, abstractly, into a sub-graph held by one node (see
``higher/control.py``), so a loop of a million steps is a graph of a few nodes; the node
gives all the loop's (or branch's) outputs from one run. The
functions must not branch on the values they get (use ``tg.cond`` or ``np.where``).
Values they close over that are being traced become operands of the node, so
derivatives with respect to them are not lost.
"""
from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from .._typing import PyTree
from ..autodiff.keys import Uncacheable, freeze_params
from ..errors import TraceError
from ..ir import Aval, apply
from ..ir.lru import LRU
from ..passes.prune import prune
from ..tracer import Tracer, flatten, new_trace, randomness, unflatten, where


def _aval(x):
    if isinstance(x, Tracer):
        return Aval(tuple(x.shape), np.dtype(x.dtype))
    arr = np.asarray(x)
    if arr.dtype.kind not in "biufc":
        raise TraceError(f"loop values must be arrays or numbers, got {type(x).__name__}{where()}")
    return Aval(arr.shape, arr.dtype)


def _arrays(leaves):
    """Plain leaves as arrays of their own dtype: a Python 0 in a carry is an int64 counter,
    not a number to be promoted to the dtype of the traced operands beside it."""
    return [x if isinstance(x, Tracer) else np.asarray(x) for x in leaves]


# structure -> the one graph object standing for it (see ``_shared``)
_GRAPHS = LRU(256)


def _structure(graph):
    """A key equal for two graphs exactly when they are the same computation: each node's
    operation, operands, shape, dtype, parameters (constants by value) and line, and the
    inputs and outputs; None where a parameter cannot be keyed (a large constant) or the
    graph carries more than its nodes (guards, extra node attributes). A sub-graph or
    custom rule parameter is keyed by identity (the cache entry holds it, so that its id
    is not reused while the entry lives)."""
    if graph.guards:
        return None
    parts = []
    try:
        for n, node in graph.items():
            if node._extra:
                return None
            parts.append((n, node.op, node.args, tuple(node.shape), str(node.dtype),
                          freeze_params(node.params, objects=True), node.src))
    except Uncacheable:
        return None
    return tuple(parts), tuple(graph.inputs), tuple(graph.outputs)


def _shared(graph):
    """The graph made before for the same structure, if any (else ``graph``, kept for the
    next time): a loop or branch traced again (each call of an un-jitted derivative
    traces its loops again) gets the same graph object, whose generated code and
    derived graphs (``higher.subgraph.derived``, cached by graph object) are made once.
    Sub-graphs are never changed once made, so one object can serve every trace."""
    key = _structure(graph)
    if key is None:
        return graph
    hit = _GRAPHS.get(key)
    if hit is not None:
        return hit
    _GRAPHS.put(key, graph)
    return graph


def _trace(fn, avals, what, prints=None):
    """(graph, captured outer tracers, output tree): ``fn`` over abstract leaves. With
    ``prints`` (a list), the ``tg.debug.print`` calls of ``fn`` are recorded (a sink is
    appended to it) and the printed values are extra outputs after ``fn``'s."""
    from . import debug
    drawing = randomness.watch(fn)
    with new_trace() as trace:
        ins = [trace.new_input(aval=a) for a in avals]
        sink = debug._Sink(trace, lift_outer=True) if prints is not None else None
        token = debug.EFFECTS.set(sink)     # a body without a sink refuses to print
        try:
            out = fn(ins)
        except TraceError as e:
            if "only known abstractly" in str(e) and "tg.debug.print" not in str(e):
                raise TraceError(f"{what} cannot branch on or convert the values it is given: "
                                 "they are traced abstractly, once for every step. Use tg.cond "
                                 f"or np.where instead ({e})") from None
            raise
        finally:
            debug.EFFECTS.reset(token)
        drawn = drawing.drawn()
        if drawn:
            drawing.restore()
            raise TraceError(f"{what} drew random numbers with NumPy ({drawn[0]}) while it was "
                             "traced: it is traced once for all its runs, so every step would "
                             "get the same numbers (and a branch not taken would draw too). "
                             "Draw them outside and pass them in (to tg.scan as xs, one row "
                             f"per step){where()}")
        leaves, tree = flatten(out)
        if sink is not None:
            prints.append(sink)
            leaves = list(leaves) + list(sink.tracers)
        graph = trace.graph
        # A result computed only from values the function closes over (tg.cond's
        # branches without operands) was recorded in the enclosing trace: it enters
        # this graph as a captured input.
        graph.outputs = [(v if isinstance(v, Tracer) and v._trace is trace else
                          trace.lift(v) if isinstance(v, Tracer) else
                          trace.const(np.asarray(v)))._node for v in leaves]
        captured = trace.captured_outer
        printing = sink is not None and sink.records
    graph = prune(graph)
    return (graph if printing else _shared(graph)), captured, tree


def _apply(name, outputs, *operands, **params):
    """The outputs of one ``name`` node (a multi-output node: one run gives them all); a
    loop or branch with no ``outputs`` at all computes nothing and is no node."""
    if not outputs:
        return []
    return list(apply(name, *operands, **params))


def _check_carry(graph, avals, what):
    for k, (n, a) in enumerate(zip(graph.outputs, avals)):
        d = graph.node(n)
        if tuple(d["shape"]) != tuple(a.shape) or np.dtype(d["dtype"]) != np.dtype(a.dtype):
            raise TraceError(f"{what} must return a carry of the same shapes and dtypes as it "
                             f"was given: leaf {k} went in as {np.dtype(a.dtype).name}"
                             f"{list(a.shape)} and came out as {d['dtype']}{list(d['shape'])} "
                             f"(give the initial value the final dtype, e.g. 0.0 rather than 0)"
                             f"{where()}")


def scan(f: Callable[[PyTree, PyTree], tuple[PyTree, PyTree]], init: PyTree, xs: PyTree = None,
         length: int | None = None, reverse: bool = False) -> tuple[PyTree, PyTree]:
    """``carry, ys = scan(f, init, xs)``: ``carry, y = f(carry, x)`` for each x along the
    leading axis of ``xs`` (a pytree), ys stacked along a new leading axis.

    ``f`` is traced once, abstractly, into one node; differentiable in both modes.

    Args:
        f: ``f(carry, x) -> (carry, y)``; the carry keeps its structure, shapes and
            dtypes from step to step.
        init: the initial carry.
        xs: a pytree of arrays sharing their leading length, or ``None``.
        length: the number of steps, when ``xs`` is ``None`` (or to check it).
        reverse: run from the last element of ``xs`` to the first.

    Returns:
        ``(carry, ys)``: the final carry and the ``y`` of every step stacked.

    Raises:
        TraceError: the lengths disagree or are missing, ``f`` changes the carry's
            structure, shapes or dtypes, or branches on the values it is given.
    """
    init_leaves, init_tree = flatten(init)
    x_leaves, x_tree = flatten(xs)
    init_leaves, x_leaves = _arrays(init_leaves), _arrays(x_leaves)
    lengths = {int(np.shape(x)[0]) for x in x_leaves if np.ndim(x) > 0}
    if length is not None:
        lengths.add(operator.index(length))
    if len(lengths) != 1:
        raise TraceError(f"scan needs xs with one leading length, or length=, got "
                         f"{sorted(lengths) or 'none'}{where()}")
    (n,) = lengths
    carry_avals = [_aval(c) for c in init_leaves]
    x_avals = [Aval(_aval(x).shape[1:], _aval(x).dtype) for x in x_leaves]
    n_carry = len(init_leaves)
    trees = {}

    def body(ins):
        carry = unflatten(init_tree, ins[:n_carry])
        x = unflatten(x_tree, ins[n_carry:])
        out = f(carry, x)
        if not isinstance(out, tuple) or len(out) != 2:
            raise TraceError(f"the function given to scan must return (carry, y), got "
                             f"{type(out).__name__}{where()}")
        new_carry, y = out
        c_leaves, c_tree = flatten(new_carry)
        if c_tree != init_tree:
            raise TraceError(f"the scan body returned a carry of structure {c_tree!r}, but "
                             f"init has structure {init_tree!r}{where()}")
        y_leaves, trees["y"] = flatten(y)
        return c_leaves + y_leaves

    prints = []
    graph, consts, _ = _trace(body, carry_avals + x_avals, "the function given to scan",
                              prints)
    _check_carry(graph, carry_avals, "the function given to scan")
    operands = list(init_leaves) + list(x_leaves) + list(consts)
    outs = _apply("scan", graph.outputs, *operands, body=graph, n_carry=n_carry,
                  n_x=len(x_leaves), length=n, reverse=bool(reverse))
    n_out = len(outs) - len(prints[0].tracers)
    if prints[0].records:       # tg.debug.print in the body: its values, step by step
        from . import debug
        for t in (range(n - 1, -1, -1) if reverse else range(n)):
            debug.forward_all(prints[0].records, outs[n_out:], (t,))
    return unflatten(init_tree, outs[:n_carry]), unflatten(trees["y"], outs[n_carry:n_out])


def _concrete_int(v, what):
    try:
        return operator.index(v)
    except TypeError:
        raise TraceError(f"{what} must be an integer known when tracing (the loop's length is "
                         f"part of the graph){where()}") from None


def fori_loop(lower: int, upper: int, body_fun: Callable[[Any, PyTree], PyTree],
              init_val: PyTree) -> PyTree:
    """``val = body_fun(i, val)`` for i in ``range(lower, upper)``; one node however many
    steps. Differentiable in both modes.

    Args:
        lower: the first step number, an integer known when tracing.
        upper: one past the last step number, an integer known when tracing.
        body_fun: ``body_fun(i, val) -> val``, keeping ``val``'s structure, shapes and
            dtypes.
        init_val: the initial value (a pytree).

    Returns:
        The final value.

    Raises:
        TraceError: ``lower`` or ``upper`` is not a known integer, or as for ``scan``.
    """
    lo, hi = _concrete_int(lower, "lower"), _concrete_int(upper, "upper")
    # the step number rides in the carry, so no array of the steps is made
    (_, carry), _ = scan(lambda c, _: ((c[0] + 1, body_fun(_step_number(c[0]), c[1])), None),
                         (np.int64(lo), init_val), None, length=max(0, hi - lo))
    return carry


def _step_number(i):
    """The step number as a Python ``for i in range(...)`` loop gives it: a Python int, so
    ``0.1 * i`` is a weak Python float and keeps a float32 carry float32 (NEP 50)."""
    if not isinstance(i, Tracer):
        return int(i)
    step = Tracer(i._trace, i._node, i.shape, i.dtype, i._value)
    step._weak = int
    return step


def while_loop(cond_fun: Callable[[PyTree], Any], body_fun: Callable[[PyTree], PyTree],
               init_val: PyTree, max_steps: int | None = None) -> PyTree:
    """``while cond_fun(val): val = body_fun(val)``, as one node.

    Both modes differentiate it, to any order. Reverse mode (unlike JAX's) needs no
    bound on the steps: the backward pass counts the steps the inputs take, keeps the
    value entering each and runs the body's adjoint backwards over them. XLA cannot
    count steps inside a compiled function: on the JAX backend that backward pass runs
    on the host (a callback), unless ``max_steps`` bounds the loop.

    Args:
        cond_fun: ``cond_fun(val) -> bool`` scalar.
        body_fun: ``body_fun(val) -> val``, keeping ``val``'s structure, shapes and
            dtypes.
        init_val: the initial value (a pytree).
        max_steps: when given (an integer known when tracing), the loop stops after at
            most that many steps, and is a ``fori_loop`` of ``max_steps`` steps that
            keeps ``val`` once ``cond_fun`` is false (so ``body_fun`` also runs on the
            final value: it must not fail there). Differentiable on every backend.

    Returns:
        The final value.

    Raises:
        TraceError: ``cond_fun`` does not return one boolean scalar, ``body_fun``
            changes the value's structure, shapes or dtypes, or either branches on the
            values it is given; ``max_steps`` is not a known integer.
    """
    if max_steps is not None:
        return _bounded_while(cond_fun, body_fun, init_val,
                              _concrete_int(max_steps, "max_steps"))
    leaves, tree = flatten(init_val)
    leaves = _arrays(leaves)
    avals = [_aval(c) for c in leaves]
    cond_graph, cond_consts, _ = _trace(lambda ins: cond_fun(unflatten(tree, ins)), avals,
                                        "the cond_fun given to while_loop")
    if len(cond_graph.outputs) != 1 or cond_graph.node(cond_graph.outputs[0])["shape"] != ():
        raise TraceError(f"cond_fun must return one boolean scalar{where()}")

    def body(ins):
        out = body_fun(unflatten(tree, ins))
        out_leaves, out_tree = flatten(out)
        if out_tree != tree:
            raise TraceError(f"body_fun returned a value of structure {out_tree!r}, but "
                             f"init_val has structure {tree!r}{where()}")
        return out_leaves

    prints = []
    body_graph, body_consts, _ = _trace(body, avals, "the body_fun given to while_loop",
                                        prints)
    printing = body_graph
    if prints[0].records:
        body_graph = prune(body_graph, body_graph.outputs[:len(leaves)])
    _check_carry(body_graph, avals, "the body_fun given to while_loop")
    operands = list(leaves) + list(cond_consts) + list(body_consts)
    outs = _apply("while_loop", leaves, *operands, cond=cond_graph, body=body_graph,
                  n_carry=len(leaves), n_cond=len(cond_consts))
    if prints[0].records:
        _print_while(cond_graph, printing, prints[0].records, leaves, cond_consts, body_consts)
    return unflatten(tree, outs)


def _print_while(cond_graph, printing, records, leaves, cond_consts, body_consts):
    """tg.debug.print in a while_loop's body (its number of steps is known only when it
    runs): a callback runs the loop again on the same values with ``printing`` (the body,
    giving the printed values too) and keeps the lines of every step; its result, a token
    for them, is printed as a print of its own, so they come in program order, where the
    function runs (every call under tg.jit)."""
    from ..ir.evaluate import call
    from . import debug
    from .pure_callback import ShapeDtypeStruct, pure_callback
    n, n_cond = len(leaves), len(cond_consts)

    def run(*arrays):
        if debug.EFFECTS.get() is not None:      # tg.jit tracing: it prints when it runs
            return np.zeros((), np.int64)
        carry, consts, lines = list(arrays[:n]), list(arrays[n + n_cond:]), []
        while bool(call(cond_graph, carry + list(arrays[n:n + n_cond]))[0]):
            res = call(printing, carry + consts)
            debug.emit_all(records, res[n:], lines)
            carry = [np.asarray(r) for r in res[:n]]
        return np.asarray(debug.hold(lines), np.int64)

    token = pure_callback(run, ShapeDtypeStruct((), np.int64), *leaves, *cond_consts,
                          *body_consts)
    debug.forward(None, None, [("val", token, ())])


def _bounded_while(cond_fun, body_fun, init_val, max_steps):
    """``while_loop`` of at most ``max_steps`` steps: a fori_loop whose steps after
    ``cond_fun`` turns false keep the value."""
    _, tree = flatten(init_val)

    from . import debug

    def step(_, val):
        go = cond_fun(val)
        if tuple(np.shape(go)) != ():
            raise TraceError(f"cond_fun must return one boolean scalar{where()}")
        when = debug.WHEN.set(go)      # tg.debug.print: only the steps taken print
        try:
            new_leaves, new_tree = flatten(body_fun(val))
        finally:
            debug.WHEN.reset(when)
        if new_tree != tree:
            raise TraceError(f"body_fun returned a value of structure {new_tree!r}, but "
                             f"init_val has structure {tree!r}{where()}")
        return unflatten(tree, [np.where(go, new, old)
                                for new, old in zip(new_leaves, flatten(val)[0])])
    return fori_loop(0, max(0, max_steps), step, init_val)


def cond(pred: Any, true_fun: Callable[..., PyTree], false_fun: Callable[..., PyTree],
         *operands: PyTree) -> PyTree:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, as one node: both
    branches are traced and must return the same structure, shapes and dtypes.

    Args:
        pred: a scalar (boolean or number), traced or not.
        true_fun: the branch taken when ``pred`` is true.
        false_fun: the branch taken otherwise.
        *operands: the arguments both branches are called with.

    Returns:
        The result of the branch taken.

    Raises:
        TraceError: the branches return different structures, shapes or dtypes, or
            ``pred`` is not a scalar.
    """
    leaves, tree = flatten(operands)
    leaves = _arrays(leaves)
    avals = [_aval(x) for x in leaves]
    branches, prints = [], []
    for fn, name in ((true_fun, "true_fun"), (false_fun, "false_fun")):
        branches.append(_trace(lambda ins, fn=fn: fn(*unflatten(tree, ins)), avals,
                               f"the {name} given to cond", prints))
    (gt, ct, tree_t), (gf, cf, tree_f) = branches
    # tg.debug.print in a branch: its printed values are extra outputs (the other branch
    # gives zeros there), printed after the node for the branch taken
    mt, mf = (len(g.outputs) - len(p.tracers) for g, p in zip((gt, gf), prints))

    def _avals(g, nodes):
        return [(tuple(d["shape"]), np.dtype(d["dtype"])) for d in (g.node(n) for n in nodes)]

    if tree_t != tree_f or _avals(gt, gt.outputs[:mt]) != _avals(gf, gf.outputs[:mf]):
        raise TraceError(f"the two branches of cond must return the same structure, shapes and "
                         f"dtypes{where()}")
    et, ef = _avals(gt, gt.outputs[mt:]), _avals(gf, gf.outputs[mf:])
    n = len(leaves)
    # both branches take (*operands, *true's captured values, *false's captured values)
    all_avals = avals + [_aval(c) for c in ct] + [_aval(c) for c in cf]
    from ..ir.evaluate import call

    def run_true(ins):
        return list(call(gt, ins[:n + len(ct)])) + [np.zeros(s, d) for s, d in ef]

    def run_false(ins):
        res = list(call(gf, ins[:n] + ins[n + len(ct):]))
        return res[:mf] + [np.zeros(s, d) for s, d in et] + res[mf:]

    true_graph, _, _ = _trace(run_true, all_avals, "cond")
    false_graph, _, _ = _trace(run_false, all_avals, "cond")
    pred_arr = pred if isinstance(pred, Tracer) else np.asarray(pred)
    if tuple(np.shape(pred_arr)) != ():
        raise TraceError(f"cond's predicate must be a scalar, got shape {np.shape(pred_arr)}"
                         f"{where()}")
    ops = list(leaves) + list(ct) + list(cf)
    outs = _apply("cond", gt.outputs, pred_arr, *ops, true=true_graph, false=false_graph)
    if prints[0].records or prints[1].records:
        from . import debug
        taken = np.not_equal(pred_arr, 0)
        debug.forward_all(prints[0].records, outs[mt:mt + len(et)], when=taken)
        debug.forward_all(prints[1].records, outs[mt + len(et):], when=np.logical_not(taken))
    return unflatten(tree_t, outs[:mt])
