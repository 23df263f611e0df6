"""``backward()`` and ``autograd.grad()``: the adjoint pass applied to the recorded graph.

The part of the tape the roots depend on becomes a standalone graph; the adjoint
pass turns it into a backward graph whose inputs are the forward values its rules
read (PyTorch's saved tensors). Training loops record the same structure every
step, so backward graphs are cached by structure and, from their second use, run
as generated NumPy code: one call per backward.
"""
from __future__ import annotations

import contextvars
import threading
import time
from itertools import chain

import numpy as np

from ..autodiff import PLANS, Runner, Uncacheable, backward_graph, freeze_params
from ..ir import Graph, apply
from ..ir.evaluate import evaluate
from ..passes.cse import cse
from ..runtime.interpreter import run as interpret
from ..tracer import source_override
from . import anomaly, grad_mode, profiler
from .tape import TAPE, AccumulateGrad, EagerTracer, Saved, modified_error, walk
from .tensor_base import CAPTURE, TensorBase

_FREED = ("Trying to backward through the graph a second time (or directly access saved "
          "tensors after they have already been freed). Saved intermediate values of the graph "
          "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
          "you need to backward through the graph a second time or if you need to access saved "
          "tensors after calling backward.")
_NO_GRAD = "element {i} of tensors does not require grad and does not have a grad_fn"
_NONE: dict = {}
_ONES: dict = {}            # dtype -> the seed of a 0-d root


class _Plan:
    """A backward graph for one structure of recorded graph, in local node numbers."""

    def __init__(self, bw, local):
        self.graph = bw.graph
        self.saved = [local[n] for n in bw.saved]
        self.seeds = bw.seeds
        self.outputs = bw.outputs
        self.taps = {bw.taps[n]: local[n] for n in bw.taps}
        self.origin = {b: local[f] for b, f in bw.origin.items()}
        # forward nodes whose rules read each saved value: those must not have been freed
        self.readers = []
        users = {}
        for n in self.graph:
            for a in self.graph.args(n):
                users.setdefault(a, set()).add(n)
        for n in self.graph.inputs[:len(self.saved)]:
            self.readers.append({self.origin[u] for u in users.get(n, ()) if u in self.origin})
        position = {n: k for k, n in enumerate(self.graph.inputs[:len(self.saved)])}
        self.returned = {}
        for f, nodes in bw.returned.items():
            for k, b in enumerate(nodes):
                self.returned.setdefault(b._node, (local[f], k))
                if b._node in position:     # a rule that hands a saved value straight back
                    self.readers[position[b._node]].add(local[f])
        # compiled, one node per distinct computation (the rules of x * x compute g * x
        # twice); the observed runs (hooks, anomaly checks) interpret the graph as made
        self.run = Runner(self.graph, prepare=cse)


def _key(order, local, roots, wrt, taps, cut, functions, handles):
    parts = []
    at = local.__getitem__
    for n in order:
        d = handles[n]._ir
        op = d.op
        if op == "input" or op == "const" or n in cut:
            parts.append((d.shape, d.dtype))
        elif n in functions:    # its rule is looked up when the plan runs (_FunctionSlot)
            parts.append((op, tuple(map(at, d.args)), d.shape, d.dtype, d.params["index"]))
        else:
            # a parameter object (a custom rule) is keyed by identity: the cached plan
            # holds it, so the identity cannot be reused while the entry exists
            params = d.params
            parts.append((op, tuple(map(at, d.args)), d.shape, d.dtype,
                          freeze_params(params, objects=True, max_array=None)
                          if params else ()))
    return ("eager", tuple(parts), tuple(map(at, roots)), tuple(map(at, wrt)),
            tuple(map(at, taps)))


def _forward_graph(order, roots, cut, functions, handles):
    g = Graph()
    for k, n in enumerate(order):
        d = handles[n]._ir
        if d.op == "input" or d.op == "const" or n in cut:
            g.put(n, {"op": "input", "args": (), "shape": d.shape, "dtype": d.dtype,
                      "params": {"index": len(g.inputs)}, "src": d.src})
            g.inputs.append(n)
        elif n in functions:
            g.put(n, dict(d, params={"rule": _FunctionSlot(k), "index": d.params["index"]}))
        else:
            g.put(n, d)
    g.outputs = list(roots)
    return g


def _plan(order, roots, wrt, taps, cut, handles, functions=_NONE):
    local = {n: i for i, n in enumerate(order)}
    try:
        key = _key(order, local, roots, wrt, taps, cut, functions, handles)
    except (Uncacheable, TypeError):
        key = None
    plan = PLANS.get(key) if key is not None else None
    if plan is not None:
        return plan
    bw = backward_graph(_forward_graph(order, roots, cut, functions, handles), wrt, taps=taps)
    plan = _Plan(bw, local)
    if key is not None:
        PLANS.put(key, plan)
    return plan


def _check_saved(plan, order, handles):
    """Every saved value the backward graph reads is there, and at the version its reader
    saw when it was recorded (as PyTorch's saved variables check)."""
    readers = plan.readers
    for k, i in enumerate(plan.saved):
        h = handles[order[i]]
        if h._value is None:
            raise RuntimeError(_FREED)
        now = h._counter.v
        stale = None
        for f in readers[k]:
            r = handles[order[f]]
            if r._freed:
                raise RuntimeError(_FREED)
            if r is h:
                seen = h._saved_version     # a rule reading its node's own output
            else:
                parents = r._parents
                seen = r._pver[parents.index(h)] if h in parents else h._saved_version
            if seen != now:
                stale = seen
        if stale is not None:
            v = h._value
            raise modified_error(v.dtype, np.shape(v), None if isinstance(
                h, (AccumulateGrad, Saved)) else h.name(), h._counter.v, stale)


def _seed(root, grad, i, Tensor, shared=False):
    """The seed of ``root``'s backward; ``shared``: nothing the user sees gets it, so a 0-d
    one may be the read-only one kept per dtype."""
    if grad is None:
        if root.numel() != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        shape, dtype = tuple(root.shape), root.dtype
        if shape == () and shared:
            one = _ONES.get(dtype)
            if one is None:
                # read-only: the backward graph never writes into its inputs, and a
                # gradient that is the seed itself is copied (_fresh)
                one = _ONES[dtype] = np.ones((), dtype)
                one.flags.writeable = False
            return one
        return np.ones(shape, dtype)
    if not isinstance(grad, TensorBase):
        grad = Tensor._plain(np.asarray(grad, dtype=root.dtype))
    if tuple(grad.shape) != tuple(root.shape):
        raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                           f"{grad.shape!r} and output[{i}] has a shape of {root.shape!r}.")
    return grad


class _Capture(dict):
    """What ``autograd.grad`` returns for targets whose own node runs (it leads to another
    target): node -> the gradient before the node's hooks (PyTorch captures it before it
    calls the node, whose hooks then run; a target whose node does not run is captured
    after its hooks). ``want``: those targets (None: an undefined gradient)."""
    __slots__ = ("want",)

    def __init__(self):
        super().__init__()
        self.want = set()

    def take(self, n, value):
        if n in self.want:
            self[n] = value


def _run(roots, grads, targets, retain_graph, create_graph, scan, everything=False,
         marks=(), retained=None, tapped=None, capture=None):
    """Cotangents of the tape nodes ``targets`` from the roots, whose history is
    ``scan`` (a ``tape.Walk``): node -> array (a Tensor with create_graph) for those
    reached, the arrays the backward graph was given, and the nodes a custom Function's
    backward sent a gradient to. ``everything``: PyTorch runs every node of the graph
    (``backward()`` without ``inputs``), else only those on a path to a target (its
    ``exec_info``): hooks elsewhere are not called, custom backwards elsewhere not run;
    ``marks``: more nodes that count as targets there (and get no gradient).
    ``retained``: retain_grad()-ed nodes, left holding those that run (made targets).
    ``tapped``: gets the leaves whose hooks ran while the backward ran (when a leaf's
    gradient is complete, as PyTorch's AccumulateGrad runs as soon as it is ready).
    ``capture``: a ``_Capture`` for ``autograd.grad``, filled with the gradients of the
    targets whose node runs, as they were before its hooks."""
    Tensor = type(roots[0])     # (its constructors make a tg.Tensor, whatever subclass)
    tracers = []
    for i, r in enumerate(roots):
        if not r.requires_grad:
            raise RuntimeError(_NO_GRAD.format(i=i))
        tracers.append(r._traced())
    handles, functions, hooked = scan.nodes, scan.functions, scan.hooked
    shared = not hooked and not scan.leaf_hooks and not create_graph
    seeds = [_seed(r, g, i, Tensor, shared) for i, (r, g) in enumerate(zip(roots, grads))]
    root_nodes = [t._node for t in tracers]
    needed = None
    if not everything and (hooked or functions or retained or scan.leaf_hooks):
        # (PyTorch's node of a custom Function is one for all its outputs: when one is a
        # target, what leads to the others is needed too)
        marks = set(targets).union(marks)
        for n, r in functions.items():
            if n in marks:
                marks.update(m for m in r.nodes if m is not None)
        needed = scan.leading_to(marks)
    first = targets             # (those asked for)
    if retained:
        retained[:] = [n for n in retained if needed is None or n in needed]
        asked = set(targets)
        targets = list(targets) + [n for n in retained if n not in asked]
    idle = frozenset()
    if needed is not None and functions:
        # a Function's backward runs when one of its inputs leads to a target (a Function
        # whose output is a target, and no more, only hands that output's gradient on):
        # the others' nodes are where the backward graphs stop
        dropped = {n for n in functions
                   if not any(p._id in needed for p in handles[n]._parents)}
        if dropped:
            functions = {n: r for n, r in functions.items() if n not in dropped}
            idle = frozenset(n for n in dropped if n in needed)
            if idle:
                # their gradients are asked for (the Functions that lead to them run)
                targets = list(targets) + sorted(idle.difference(targets))
    else:
        dropped = frozenset()
    if capture is not None and needed is not None and hooked:
        every = scan.functions
        for n in first:
            h = handles.get(n)
            if h is None or type(h) is AccumulateGrad or not h._hooks:
                continue
            if n in functions if n in every else any(p._id in needed for p in h._parents):
                capture.want.add(n)
    if capture is not None and not capture.want:
        capture = None
    leaves = _NONE
    if scan.leaf_hooks and tapped is not None and (hooked or functions or len(
            scan.leaf_hooks) > 1):
        # (a leaf with one node in this graph: one with several versions gets its hooks
        # after the backward)
        count: dict = {}
        for t in scan.leaf_hooks.values():
            count[id(t)] = count.get(id(t), 0) + 1
        leaves = {n: t for n, t in scan.leaf_hooks.items() if count[id(t)] == 1
                  and (needed is None or n in needed)}
    if not functions:
        result, given = _stage(root_nodes, seeds, targets, create_graph, handles, handles,
                               dropped, Tensor, hooked=hooked, order=scan.order,
                               needed=needed, idle=idle, leaves=leaves, tapped=tapped,
                               capture=capture)
        sent, ran, rules = (), handles, ()
    elif FUSED.get() and not create_graph and _fusable(functions):
        try:
            result, given, sent, rules = _fused(root_nodes, seeds, targets, scan, Tensor,
                                                functions, needed, dropped, idle, leaves,
                                                tapped, capture)
            ran = handles
        except _Stale:
            if capture is not None:
                capture.clear()
            result, given, sent, ran, rules = _staged(root_nodes, seeds, targets, False,
                                                      scan, Tensor, functions, needed, idle,
                                                      dropped, leaves, tapped, capture)
    else:
        result, given, sent, ran, rules = _staged(root_nodes, seeds, targets, create_graph,
                                                  scan, Tensor, functions, needed, idle,
                                                  dropped, leaves, tapped, capture)
    if len(rules) < len(scan.functions) and ran is handles:
        # a Function whose backward did not run (no input needed it) keeps its values
        called = {id(r) for r in rules}
        every = scan.functions
        ran = [n for n in handles if n not in every or id(every[n]) in called]
    if not retain_graph:
        # values only this graph held go now; a tensor used again gives its value back
        # (Tensor._traced)
        for h in (handles.values() if ran is handles else map(handles.__getitem__, ran)):
            if type(h) is not AccumulateGrad and type(h) is not Saved:
                h._freed = True
                h._value = None
        for rule in rules:
            rule.ctx._freed = True
    return result, given, sent


def _leaves_at_use(order, nodes, leaves):
    """``order`` with each of the ``leaves`` moved to just before its first user: the
    backward sweep, which goes through the nodes last first, comes to a leaf as soon as
    its gradient is complete, as PyTorch runs a leaf's AccumulateGrad as soon as it is
    ready (leaves of one user in the order of its operands)."""
    lt = set(leaves)
    before: dict = {}
    placed = set()
    for m in order:
        if m in lt:
            continue
        for p in nodes[m]._parents:
            i = p._id
            if i in lt and i not in placed:
                placed.add(i)
                before.setdefault(m, []).append(i)
    out = []
    for m in order:
        if m in lt:
            if m not in placed:
                out.append(m)
            continue
        b = before.get(m)
        if b is not None:
            out.extend(reversed(b))
        out.append(m)
    return out


def _hooks_of(h):
    """The hooks on node ``h``'s gradient: a leaf's are its tensor's."""
    if type(h) is AccumulateGrad:
        t = h._tensor()
        return t._hooks if t is not None else None
    return h._hooks


class _Stale(Exception):
    """A fused backward graph reads a freed or changed saved value: the error is raised
    where PyTorch raises it, by running the backward in stages."""


def _stage(root_nodes, seeds, targets, create_graph, handles, nodes, cut, Tensor,
           functions=_NONE, run=None, hooked=True, order=None, needed=None, idle=(),
           leaves=_NONE, tapped=None, capture=None):
    """One backward graph over ``nodes`` (a part of ``handles``; the nodes in ``cut``
    taken as inputs) from ``seeds`` at ``root_nodes``: node -> cotangent for the
    ``targets`` among ``nodes``, and the arrays the graph was given. The custom
    Functions' nodes in ``functions`` are in the graph, their backwards called while it
    runs (``_fused``: ``run``). ``order``: ``nodes``' ids sorted, when known. ``needed``:
    the nodes whose hooks run (all when None); ``idle``: nodes in ``cut`` whose hooks
    run all the same (a custom Function's outputs whose backward does not run);
    ``leaves``: leaves whose hooks run in the graph (``tapped`` gets those that ran);
    ``capture``: a ``_Capture`` (``_run``)."""
    if order is None:
        order = sorted(nodes)
    taps = [n for n in order if nodes[n]._hooks and type(nodes[n]) is not AccumulateGrad
            and (n not in cut or n in idle) and (needed is None or n in needed)] \
        if hooked else []
    if leaves:
        at = [n for n in leaves if n in nodes]
        if at:
            order = _leaves_at_use(order, nodes, at)
            taps = taps + at
    if run is not None:
        run.order = order
    for n in taps:
        if np.dtype(nodes[n]._ir.dtype).kind == "c":
            raise RuntimeError("hooks on complex tensors are not supported by tracegrad's "
                               "eager autograd yet (PyTorch's conjugate-Wirtinger gradients "
                               "are not implemented)")
    wrt = [n for n in dict.fromkeys(list(targets) + taps) if n in nodes]
    plan = _plan(order, root_nodes, wrt, taps, cut, handles, functions)
    try:
        _check_saved(plan, order, handles)
    except RuntimeError:
        if functions:
            # PyTorch finds a freed or changed saved value when the node reading it runs,
            # after the custom backwards above it: those run first (``_staged``)
            raise _Stale from None
        raise
    saved = [handles[order[i]] for i in plan.saved]
    seed_args = [seeds[k] for k in plan.seeds]
    if create_graph:
        outs = _replay(plan, saved, seed_args, order, handles, Tensor, tapped, capture)
        args = []
    else:
        args = [h._value for h in saved] + [s._data if isinstance(s, TensorBase) else s
                                           for s in seed_args]
        observe = _observer(plan, order, handles, Tensor, tapped, run, capture)
        if observe is None:
            outs = plan.run(args)
        else:
            outs = interpret(plan.graph, args, observe=observe)
            observe.finish()
    result = {}
    for n, pos in zip(wrt, plan.outputs):
        if pos is not None:
            result[n] = outs[pos]
    return result, list(args)


# -- custom Functions inside one backward graph ---------------------------------------------
# The common case of a graph with custom Functions: each has one differentiable output and
# nothing asks for a double backward. Its node then stays in the graph: the adjoint pass
# gives it a ``pure_callback`` node that calls the Function's backward on the concrete
# cotangent while the (cached, compiled) backward graph runs, after every part of that
# cotangent was summed, as PyTorch's engine calls it. The other cases go through
# ``_staged``. ``FUSED.set(False)`` sends every case there, in the calling thread (the
# differential test compares both).
FUSED: contextvars.ContextVar = contextvars.ContextVar("tracegrad_eager_fused", default=True)
# False while a backward of autograd.grad or backward(inputs=...) runs, and in the backwards
# nested in it (torch.autograd._is_checkpoint_valid: the reentrant checkpoint refuses those)
CHECKPOINT_VALID: contextvars.ContextVar = contextvars.ContextVar(
    "tracegrad_checkpoint_valid", default=True)


class _Running(threading.local):
    runs: list = None       # this thread's fused backward runs in progress, innermost last


_RUNNING = _Running()


def _fusable(functions):
    if profiler.current() is not None or anomaly.is_anomaly_enabled():
        return False
    for rule in functions.values():
        if sum(n is not None for n in rule.nodes) != 1:
            return False
    return True


class _FunctionSlot:
    """The ``rule`` of a custom Function's node in a cached backward graph: the node's
    position in the recorded graph, for which ``_Fused.call`` finds the ``apply`` that
    recorded it this time."""
    __slots__ = ("slot",)

    def __init__(self, slot):
        self.slot = slot

    def __eq__(self, other):
        return type(other) is _FunctionSlot and other.slot == self.slot

    def __hash__(self):
        return hash((_FunctionSlot, self.slot))

    def __repr__(self):
        return f"<custom Function at position {self.slot}>"

    def backward(self, g, index, operands, out):
        avals = tuple((tuple(o.shape), np.dtype(o.dtype)) for o in operands)
        return list(apply("pure_callback", g, callback=_FunctionCall(self.slot, avals)))


class _FunctionCall:
    """``pure_callback``'s callback for ``_FunctionSlot``: the Function's backward."""
    __slots__ = ("slot", "out_avals")
    vectorized = False
    name = "custom Function backward"

    def __init__(self, slot, out_avals):
        self.slot = slot
        self.out_avals = out_avals

    def __repr__(self):
        return f"<backward of the custom Function at position {self.slot}>"

    def run(self, operands):
        return _RUNNING.runs[-1].call(self.slot, operands[0], self.out_avals)


class _Fused:
    """What a fused backward's callbacks need: the recorded graph, and what they did."""
    __slots__ = ("handles", "functions", "order", "sent", "rules", "dropped", "scan",
                 "roots", "_seen")

    def __init__(self, handles, functions, scan=None, roots=()):
        self.handles, self.functions = handles, functions
        self.order = None
        self.sent, self.rules = [], []
        self.dropped = False        # some backward returned None for an input needing grad
        self.scan, self.roots, self._seen = scan, roots, None

    def defined(self, n):
        """Whether node ``n``'s gradient is defined in PyTorch's sense: reached from the
        roots, or from where a custom backward sent a gradient, not only along the paths
        of the Nones (which reach the nodes below as undefined: the graph sums zeros)."""
        if not self.dropped:
            return True
        seen = self._seen
        if seen is None or seen[0] != len(self.sent):
            seen = self._seen = (len(self.sent),
                                 self.scan.reached(list(self.roots) + self.sent))
        return n in seen[1]

    def call(self, slot, ct, avals):
        n = self.order[slot]
        h = self.handles[n]
        rule = self.functions[n]
        self.rules.append(rule)     # (hooks on its output ran on ``ct``: a tap)
        # (a freed graph: the backward finds it when it reads ``ctx.saved_tensors``, as
        # PyTorch's; one that saved nothing runs again)
        pending = rule.run({n: ct} if self.defined(n) else {}, False, h)
        operands = rule.operand_nodes
        outs = [None] * len(operands)
        for m, v in pending:
            self.sent.append(m)
            for k, o in enumerate(operands):
                if o == m and outs[k] is None:
                    # a buffer of the graph's own (it may be written into)
                    outs[k] = np.array(v, dtype=avals[k][1], copy=True)
                    break
        for k, (shape, dtype) in enumerate(avals):
            if outs[k] is None:
                if type(self.handles[operands[k]]) is not Saved:
                    self.dropped = True
                outs[k] = np.zeros(shape, dtype)
        return tuple(outs)


def _fused(root_nodes, seeds, targets, scan, Tensor, functions, needed, dropped, idle,
           leaves=_NONE, tapped=None, capture=None):
    """``_run`` through custom Functions whose nodes stay in the backward graph."""
    handles = scan.nodes
    run = _Fused(handles, functions, scan, root_nodes)
    runs = _RUNNING.runs
    if runs is None:
        runs = _RUNNING.runs = []
    runs.append(run)
    enabled = grad_mode.is_grad_enabled()
    grad_mode._set(False)
    try:
        result, given = _stage(root_nodes, seeds, targets, False, handles, handles,
                               dropped, Tensor, functions, run, scan.hooked, scan.order,
                               needed, idle, leaves, tapped, capture)
    finally:
        grad_mode._set(enabled)
        runs.pop()
    if run.dropped:
        # a backward that returned None ends the path: what only it reached gets None,
        # as in PyTorch, not the zeros the graph summed for it
        seen = scan.reached(list(root_nodes) + run.sent)
        result = {n: v for n, v in result.items() if n in seen}
    return result, given, run.sent, run.rules


def _add(total, part):
    """A gradient with one more part (None: an undefined one, PyTorch's undefined tensor,
    which adds nothing)."""
    return part if total is None else total if part is None else total + part


def _hooked(hooks, v, Tensor, create_graph):
    """``v`` (an array, a tensor with ``create_graph``, or None) after ``hooks``."""
    out = _run_hooks(hooks, v if v is None or isinstance(v, TensorBase) else Tensor._plain(v),
                     Tensor)
    return None if out is None else out if create_graph else out._data


def _staged(root_nodes, seeds, targets, create_graph, scan, Tensor, functions, needed,
            idle=frozenset(), dropped=frozenset(), leaves=_NONE, tapped=None, capture=None):
    """``_run`` through custom Functions, as PyTorch's engine runs them: a backward graph
    from the roots down to the Functions' outputs and inputs (and the targets), then
    the latest of those: a Function's ``backward`` on concrete tensors, or a Function's
    input whose gradient is complete, from which the next backward graph starts; and so
    on until nothing is left waiting. Everything recorded after a node is handled before
    it, so each is handled once, with its whole gradient (a hook sees it once).

    A backward's None is PyTorch's undefined gradient: it goes on to the nodes below as
    None (``pending``/``waiting`` values), so the Functions there run all the same (with
    zeros, or None without materialize_grads) and the hooks there are called with None."""
    if create_graph:
        seeds = [s if isinstance(s, TensorBase) else Tensor._plain(s) for s in seeds]
    handles = scan.nodes
    wanted = set(targets)
    if needed is None:
        needed = scan.leading_to(wanted)
    functions = {n: r for n, r in functions.items() if n in needed}
    # a Function's inputs get gradients from its backward and maybe from elsewhere: the
    # backward graphs stop there too, until every part has arrived
    inputs = {m for r in functions.values() for m in r.operand_nodes
              if m in needed and m not in functions and handles[m]._parents}
    # leaves with hooks too: PyTorch runs a leaf's hooks as soon as its gradient is
    # complete, after its first user (in the order of its operands); ``key`` places them
    key = {}
    if leaves:
        placed = set()
        for m in scan.order:
            if m not in needed:
                continue
            for k, p in enumerate(handles[m]._parents):
                i = p._id
                if i in leaves and i not in placed and i in needed:
                    placed.add(i)
                    key[i] = m - 0.5 - 0.001 * k
    at = key.get
    # so do nodes with hooks below a Function or a hooked leaf: a hook sees its node's
    # whole gradient once (not one part per stage: a hook that clips would change the
    # sum), in PyTorch's order
    if functions or key:
        newest = max(list(functions) + list(key.values()))
        inputs |= {n for n in needed if n < newest and n not in functions
                   and handles[n]._hooks and handles[n]._parents}
    result, given, sent = {}, [], []
    waiting = {}                    # a stopping node -> its cotangent so far
    released = set()                # Function inputs whose gradient is complete
    ran, rules = set(), []
    uncalled = set(functions)       # the Functions' nodes whose backward has not run
    pending = list(zip(root_nodes, seeds))
    with grad_mode.set_grad_enabled(create_graph):
        while True:
            stage_roots, stage_seeds, undefined = [], [], []
            for n, v in pending:
                if n not in needed:
                    continue
                if n in functions or (n in inputs and n not in released):
                    waiting[n] = _add(waiting.get(n), v)
                elif n in idle:     # a Function's output that is a target, and no more
                    if n in released:
                        h = handles[n]
                        if h._hooks:
                            v = _hooked(h._hooks, v, Tensor, create_graph)
                        if v is not None:
                            result[n] = v
                    else:
                        waiting[n] = _add(waiting.get(n), v)
                elif n in key:      # a leaf with hooks
                    if n in released:
                        v = _hooked(_hooks_of(handles[n]), v, Tensor, create_graph)
                        if v is not None:
                            result[n] = v
                        tapped.add(n)
                    else:
                        waiting[n] = _add(waiting.get(n), v)
                elif not handles[n]._parents:         # a leaf or a saved value
                    if n in wanted and v is not None:
                        result[n] = _add(result.get(n), v)
                elif v is None:
                    undefined.append(n)
                else:
                    stage_roots.append(n)
                    stage_seeds.append(v)
            cut = functions.keys() | (inputs - released) | (dropped - released)
            nodes = ()
            if stage_roots:
                nodes = scan.below(stage_roots, cut)
                ran.update(nodes)
                outs, args = _stage(stage_roots, stage_seeds,
                                    list(targets) + [n for n in nodes if n in cut],
                                    create_graph, handles, nodes, cut, Tensor, needed=needed,
                                    capture=capture)
                given.extend(args)
                for n, v in outs.items():
                    if n in cut or n in key:
                        waiting[n] = _add(waiting.get(n), v)
                    else:
                        result[n] = _add(result.get(n), v)
            if undefined:
                # what only undefined gradients reach: the stops wait with None, the hooks
                # are called with None
                region = scan.below(undefined, cut)
                ran.update(region)
                for n in sorted(region, reverse=True):
                    if n in nodes or n not in needed:
                        continue
                    h = handles[n]
                    if n in cut or n in key:
                        if n not in waiting:
                            waiting[n] = None
                    elif h._hooks and h._parents:
                        v = _hooked(h._hooks, None, Tensor, create_graph)
                        if v is not None and n in wanted:
                            result[n] = v
            if not waiting:
                break
            top = max(waiting, key=lambda n: at(n, n))
            if top in key:
                released.add(top)
                pending = [(top, waiting.pop(top))]
                continue
            if top not in functions:
                # Function inputs later than every Function yet to run and every stop
                # nothing reached yet (the stage from them may reach it): their gradients
                # are complete (what is left to run comes before them). One stage from
                # all of them, so that a node below several (an LSTM cell below its h and
                # c) runs once, with its whole gradient, not once per input
                last = max((at(n, n) for n in chain(uncalled, inputs, idle, key)
                            if at(n, n) < top and n not in released and (
                                n in key or n in uncalled or n not in waiting)),
                           default=-1)
                ready = sorted((n for n in waiting if n > last and n not in key),
                               reverse=True)
                released.update(ready)
                pending = [(n, waiting.pop(n)) for n in ready]
                continue
            rule = functions[top]
            rules.append(rule)
            uncalled.difference_update(rule.nodes)
            outputs = [n for n in rule.nodes if n is not None]
            cts = {n: waiting.pop(n) for n in outputs if n in waiting}
            # the hooks of every output (with None where it got no gradient, one not in
            # this graph too), tensor by tensor in the order of their first registration,
            # as PyTorch's pre-hooks of the Function's node; a target's gradient is taken
            # before them
            for n, hooks in sorted(_output_hooks(rule, handles), key=lambda e: e[1].at):
                ct = cts.get(n)
                if capture is not None:
                    capture.take(n, ct)
                ct = _hooked(hooks, ct, Tensor, create_graph)
                if ct is not None or n in cts:
                    cts[n] = ct
            for n, ct in cts.items():
                if n in wanted and ct is not None:
                    result[n] = ct
            # (a freed graph: the backward finds it when it reads ``ctx.saved_tensors``,
            # as PyTorch's; one that saved nothing runs again)
            pending = rule.run(cts, create_graph, handles[max(cts) if cts else top])
            got = set()
            for n, v in pending:
                sent.append(n)
                got.add(n)
                if not create_graph:
                    given.append(v)
            # a None for an input that requires grad goes on, undefined
            pending.extend((m, None) for m in dict.fromkeys(rule.operand_nodes)
                           if m not in got and type(handles[m]) is not Saved)
    return result, given, sent, ran, rules


def _output_hooks(rule, handles):
    """(node, hooks) for the outputs of a custom Function's ``rule`` with hooks."""
    out = []
    for k, n in enumerate(rule.nodes):
        if n is None:
            continue
        h = handles.get(n)
        if h is None:
            t = rule.outputs[k] if k < len(rule.outputs) else None
            tracer = getattr(t, "_tracer", None)
            h = getattr(tracer, "_handle", None)
            if h is None or h._id != n:
                continue
        if h._hooks:
            out.append((n, h._hooks))
    return out


def _observer(plan, order, handles, Tensor, tapped=None, run=None, capture=None):
    """The per-node callback for hooks, anomaly checks and the profiler, or None. ``run``:
    a fused backward's ``_Fused`` (a gradient it finds undefined reaches the hooks as
    None); ``capture``: a ``_Capture``."""
    checking = anomaly.is_anomaly_enabled()
    prof = profiler.current()
    if not plan.taps and not checking and prof is None:
        return None
    clock = [time.perf_counter()]
    spent: dict = {}

    def observe(n, value):
        if prof is not None:
            now = time.perf_counter()
            f = plan.origin.get(n)
            if f is not None:
                spent[f] = spent.get(f, 0.0) + now - clock[0]
            clock[0] = now
        if checking and n in plan.returned:
            f, k = plan.returned[n]
            anomaly.check(value, handles[order[f]], k)
        f = plan.taps.get(n)
        if f is not None:
            h = handles[order[f]]
            if type(h) is AccumulateGrad and tapped is not None:
                tapped.add(h._id)
            if run is not None and run.dropped and not run.defined(h._id):
                # undefined (a custom backward returned None): the graph carries zeros
                if capture is not None:
                    capture.take(h._id, None)
                out = _run_hooks(_hooks_of(h), None, Tensor)
                if out is not None:
                    value = out._data
            else:
                if capture is not None:
                    capture.take(h._id, value)
                value = _run_hooks(_hooks_of(h), Tensor._plain(value), Tensor)._data
        if prof is not None:
            clock[0] = time.perf_counter()
        return value

    def finish():
        if prof is not None:
            for f, seconds in spent.items():
                prof.add(handles[order[f]].name(), seconds)
    observe.finish = finish
    return observe


def _run_hooks(hooks, grad, Tensor):
    """``grad`` after the ``hooks``; None (an undefined gradient, PyTorch calls the hooks
    with None) stays None unless a hook returns a tensor."""
    for hook in list(hooks):
        out = hook(grad)
        if out is not None:
            if not isinstance(out, TensorBase):
                raise TypeError(f"a hook must return a Tensor or None, got {type(out).__name__}")
            if grad is not None and tuple(out.shape) != tuple(grad.shape):
                raise RuntimeError(f"hook returned a gradient of shape {list(out.shape)} for a "
                                   f"tensor of shape {list(grad.shape)}")
            grad = out
    return grad


def _replay(plan, saved, seed_args, order, handles, Tensor, tapped=None, capture=None):
    """Run the backward graph through the tape, so the gradients are recorded too: the
    IR's evaluator on tape tracers records every node (``ir.evaluate``)."""
    g = plan.graph
    env = {}
    for n, h in zip(g.inputs, saved):
        t = EagerTracer(TAPE, h._id, h._value.shape, h._value.dtype, h._value)
        t._handle = h
        env[n] = t
    for n, s in zip(g.inputs[len(saved):], seed_args):
        env[n] = s._traced() if isinstance(s, TensorBase) and s.requires_grad else (
            s._data if isinstance(s, TensorBase) else s)
    checking = anomaly.is_anomaly_enabled()
    seen: dict = {}

    def const(value, src):
        with source_override(src):
            return TAPE.const(value, snapshot=False)

    def observe(n, value):
        if checking and n in plan.returned:
            f, k = plan.returned[n]
            anomaly.check(_value(value), handles[order[f]], k)
        f = plan.taps.get(n)
        if f is not None:
            h = handles[order[f]]
            if type(h) is AccumulateGrad and tapped is not None:
                tapped.add(h._id)
            grad = _as_tensor(value, Tensor, seen)
            if capture is not None:
                capture.take(h._id, grad)
            out = _run_hooks(_hooks_of(h), grad, Tensor)
            value = out._traced() if out.requires_grad else out._data
        return value

    with grad_mode.enable_grad():
        evaluate(g, env, const=const, observe=observe, guards=False)
    return [_as_tensor(env[o], Tensor, seen) for o in g.outputs]


def _value(v):
    return v._value if isinstance(v, EagerTracer) else v


def _as_tensor(v, Tensor, seen=None):
    """A value the backward graph's replay computed, as a tensor: recorded when it depends
    on a tensor that requires grad (a gradient that is a constant, ``(x * -0.5).sum()``'s,
    does not require grad, as in PyTorch). ``seen``: what is known of the nodes so far."""
    if isinstance(v, EagerTracer):
        if v.dtype.kind in "fc" and _requires_grad(v._handle, {} if seen is None else seen):
            return Tensor._recorded(v)
        return Tensor._plain(v._value)
    return Tensor._plain(np.asarray(v))


def _requires_grad(handle, seen):
    """Whether the node ``handle`` depends on a leaf that requires grad (``seen``: node id
    -> the answer, for the nodes already looked at)."""
    known = seen.get(handle._id)
    if known is not None:
        return known
    stack = [(handle, False)]
    while stack:
        h, done = stack.pop()
        n = h._id
        if done:
            seen[n] = any(seen[p._id] for p in h._parents)
            continue
        if n in seen:
            continue
        if type(h) is AccumulateGrad:
            seen[n] = True
            continue
        if not h._parents:
            seen[n] = False
            continue
        stack.append((h, True))
        stack.extend((p, False) for p in h._parents if p._id not in seen)
    return seen[handle._id]


def _fresh(value, Tensor, inputs=()):
    """A gradient array as a tensor of its own: copied only when it may share memory with
    one of the backward graph's ``inputs`` (a saved value handed straight back) or is a
    read-only broadcast view, since ``.grad`` is accumulated in place."""
    if isinstance(value, TensorBase):
        return value
    if not value.flags.writeable:
        value = np.array(value, copy=True)
    elif value.base is None:
        # it owns its memory: only an input that is it, or a view of it, shares it
        for a in inputs:
            if a is value or type(a) is np.ndarray and a.base is value:
                value = np.array(value, copy=True)
                break
    elif any(np.may_share_memory(value, a) for a in inputs):
        value = np.array(value, copy=True)
    return Tensor._plain(value)


def _leaf_nodes(handles, tensor):
    return [n for n, h in handles.items() if type(h) is AccumulateGrad and h._tensor() is tensor]


def _tensor_nodes(handles, tensor):
    """The nodes standing for ``tensor`` in this graph (a leaf may have one per version)."""
    if tensor._tracer is not None:
        n = tensor._tracer._node
        return [n] if n in handles else []
    return _leaf_nodes(handles, tensor)


def _sum(parts):
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    return total


def _as_list(x):
    if x is None:
        return None
    return list(x) if isinstance(x, (list, tuple)) else [x]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate the gradients of ``tensors`` into ``.grad`` of the leaves (of ``inputs``
    only, when given)."""
    tensors = _as_list(tensors)
    Tensor = type(tensors[0])   # (its constructors make a tg.Tensor, whatever subclass)
    grads = _as_list(grad_tensors) or [None] * len(tensors)
    capture = CAPTURE.get()
    if capture is not None:     # tg.compile recording: the adjoint into its graph
        retain = create_graph if retain_graph is None else bool(retain_graph)
        return capture.backward(tensors, grads, _as_list(inputs), create_graph, retain)
    if len(grads) != len(tensors):
        raise RuntimeError("grad can be implicitly created only for scalar outputs"
                           if not grads else f"got {len(grads)} gradients for {len(tensors)} "
                           "tensors")
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _as_list(inputs)
    if inputs is not None and not inputs:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    for i, r in enumerate(tensors):
        if not r.requires_grad:
            raise RuntimeError(_NO_GRAD.format(i=i))
    scan = walk([r._traced()._handle for r in tensors])
    handles = scan.nodes
    dead = []
    if inputs is None:
        receivers = {}
        for n, h in scan.receiving:
            if type(h) is AccumulateGrad:
                t = h._tensor()
                if t is not None and t._requires_grad:
                    receivers.setdefault(id(t), (t, []))[1].append(n)
                elif t is None:
                    # a leaf nothing refers to any more: no .grad to fill, but PyTorch's
                    # backward still runs the graph to it (and finds freed values there)
                    dead.append(n)
            else:
                t = h._retain()
                if t is not None and t._tracer is not None and t._tracer._node == n:
                    receivers.setdefault(id(t), (t, []))[1].append(n)
    else:
        receivers = {}
        for t in inputs:
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            receivers[id(t)] = (t, _tensor_nodes(handles, t))
    targets = [n for _, nodes in receivers.values() for n in nodes] + dead
    retained = _retained(scan) if inputs is not None else []
    reached = _Reached(scan, [r._traced()._node for r in tensors])
    tapped: set = set()
    token = CHECKPOINT_VALID.set(False) if inputs is not None else None
    try:
        result, inputs, sent = _run(tensors, grads, targets, retain_graph, create_graph, scan,
                                    everything=inputs is None, retained=retained,
                                    tapped=tapped)
    finally:
        if token is not None:
            CHECKPOINT_VALID.reset(token)
    reached.sent = sent
    with grad_mode.set_grad_enabled(create_graph):
        for t, nodes in receivers.values():
            g = _gradient_of(t, nodes, result, inputs, Tensor, reached, tapped)
            if g is not None:
                _accumulate(t, g, create_graph)
        _fill_retained(retained, handles, result, inputs, Tensor, create_graph)


def _retained(scan):
    """The nodes in ``scan`` that a live tensor retain_grad()-ed (it stands for them)."""
    out = []
    for n, h in scan.receiving:
        if type(h) is not AccumulateGrad:
            t = h._retain()
            if t is not None and t._tracer is not None and t._tracer._node == n:
                out.append(n)
    return out


def _fill_retained(retained, handles, result, handed, Tensor, create_graph):
    """``.grad`` of the retain_grad()-ed tensors whose node ran (``retained``, as ``_run``
    left it), from their gradient after their hooks (PyTorch's retains_grad hook runs
    when its node does, for ``autograd.grad`` and ``backward(inputs=...)`` too)."""
    for n in retained:
        if n in result:
            t = handles[n]._retain()
            if t is not None:
                g = _fresh(result[n], Tensor, handed)
                handed.append(g._data)
                _accumulate(t, g, create_graph)


class _Reached:
    """The nodes PyTorch's backward would visit (``Walk.reached``): from the roots, and
    from where custom Functions sent gradients (``sent``, set once the backward ran);
    every node on a path of recorded operations, whether or not its derivative is zero
    (``floor``, ``sign``). Worked out only when a gradient is missing."""

    def __init__(self, scan, roots):
        self.scan, self.roots, self.sent, self._seen = scan, roots, (), None

    def __contains__(self, n):
        if self._seen is None:
            self._seen = self.scan.reached(list(self.roots) + list(self.sent))
        return n in self._seen


def _gradient_of(t, nodes, result, handed, Tensor, reached=(), tapped=()):
    """``t``'s gradient from the cotangents of its ``nodes`` (a leaf may have one per
    version), after its hooks; None if no path reached it, zeros if every path has a
    zero derivative (PyTorch's FloorBackward0 hands on zeros). ``handed`` holds the
    arrays it must not share memory with (saved values, gradients already given out) and
    gets its."""
    if len(nodes) == 1:
        n = nodes[0]
        parts = [result[n]] if n in result else []
    else:
        parts = [result[n] for n in nodes if n in result]
    if not parts:
        if not any(n in reached for n in nodes):
            return None
        parts = [np.zeros(tuple(t.shape), t.dtype)]
    g = _fresh(_sum(parts) if len(parts) > 1 else parts[0], Tensor, handed)
    handed.append(g._data)
    if t._tracer is None and t._hooks and not any(n in tapped for n in nodes):
        g = _run_hooks(t._hooks, g, Tensor)
    return g


def _accumulate(t, g, create_graph):
    if g._data is None or t._data is None or g._data.dtype != t._data.dtype:
        if g.dtype != t.dtype:
            g = g.to(t.dtype)
    if t._grad is None:
        t._grad = g if (create_graph or not g.requires_grad) else g.detach()
    elif create_graph or t._grad.requires_grad:
        t._grad = t._grad + g
    else:
        t._grad._data += g._data
        t._grad._vc.v += 1


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, as a tuple; ``.grad``
    attributes are left alone."""
    if CAPTURE.get() is not None:
        CAPTURE.get().graph_break("torch.autograd.grad")
    outputs = _as_list(outputs)
    Tensor = type(outputs[0])   # (its constructors make a tg.Tensor, whatever subclass)
    inputs = _as_list(inputs)
    grads = _as_list(grad_outputs) or [None] * len(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if allow_unused is None:
        allow_unused = materialize_grads
    for i, r in enumerate(outputs):
        if not r.requires_grad:
            raise RuntimeError(_NO_GRAD.format(i=i))
    scan = walk([r._traced()._handle for r in outputs])
    handles = scan.nodes
    wanted, marks = [], []
    for t in inputs:
        if not isinstance(t, TensorBase):
            raise TypeError(f"inputs must be Tensors, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        wanted.append(_tensor_nodes(handles, t))
        if not wanted[-1] and t._tracer is not None and t._tracer._handle._rule is not None:
            # an output of a custom Function that is not in the graph, another one is: to
            # PyTorch the Function's node is, and what leads to it runs
            marks.extend(m for m in t._tracer._handle._rule.nodes if m in handles)
    retained = _retained(scan)
    reached = _Reached(scan, [r._traced()._node for r in outputs])
    tapped: set = set()
    capture = _Capture()
    token = CHECKPOINT_VALID.set(False)
    try:
        result, ins, sent = _run(outputs, grads, [n for nodes in wanted for n in nodes],
                                 retain_graph, create_graph, scan, marks=marks,
                                 retained=retained, tapped=tapped, capture=capture)
    finally:
        CHECKPOINT_VALID.reset(token)
    reached.sent = sent
    found = result
    if capture:
        # (``result`` stays as it is for retain_grad(): its hook runs after the others)
        found = dict(result)
        for n, v in capture.items():
            if v is None:
                found.pop(n, None)
            else:
                found[n] = v
    out = []
    with grad_mode.set_grad_enabled(create_graph):
        for i, (t, nodes) in enumerate(zip(inputs, wanted)):
            g = _gradient_of(t, nodes, found, ins, Tensor, reached, tapped)
            if g is None:
                if not allow_unused:
                    raise RuntimeError(f"The differentiated Tensor at index {i} appears to "
                                       "not have been used in the graph. Set allow_unused=True "
                                       "if this is the desired behavior.")
                out.append(Tensor._plain(np.zeros(tuple(t.shape), t.dtype))
                           if materialize_grads else None)
                continue
            out.append(g)
        _fill_retained(retained, handles, result, ins, Tensor, create_graph)
    return tuple(out)
