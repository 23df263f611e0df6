"""``tg.compile``: ``torch.compile``'s front door over tracegrad's own graphs.

A compiled function's first call runs eagerly (as the project's interpret-then-compile
policy: PyTorch's lazily made state, an optimizer's moments, exists afterwards); the
second captures the call (``capture.py``) into one graph, optimised (``prune``, ``cse``,
``simplify``) and compiled (generated NumPy code, or one XLA executable), then runs it.
Later calls whose guards hold run the compiled graph and write its outputs back where
the eager code would have left them; a failed guard captures again, up to
``RECOMPILE_LIMIT`` graphs per function, after which the function runs eagerly with a
warning. A call that cannot be captured (a graph break) runs eagerly, and says why in
``explain()``.
"""
from __future__ import annotations

import functools
import gc
import threading
import types
import warnings
from typing import Any

import numpy as np

from ... import passes
from ...errors import TraceError
from ...ir.aliasing import fresh_bases, is_view, storage_root
from ...passes.broadcasts import elide_broadcasts
from ...runtime.codegen import GUARD_FAILED, generate
from ...tracer import Tracer, flatten, new_trace, randomness, sync, unflatten
from .. import grad_mode
from ..dispatch import CAPTURE
from ..tape import TAPE, EagerTracer, modified_error
from ..tensor import Tensor
from ..tensor_base import BROKEN
from . import draws as _draws
from . import partial as _partial
from .capture import Capture, GraphBreak
from .reach import LENGTH, reach
from .scalars import TracedInt

RECOMPILE_LIMIT = 8
BACKENDS = ("numpy", "jax", "inductor", "eager", "aot_eager")


class InvalidBackend(RuntimeError):
    """An unknown ``backend=`` (PyTorch raises ``torch._dynamo.exc.InvalidBackend``)."""


def _host_rng_state():
    """Python's ``random`` and NumPy's global ``np.random`` states: a capture that draws
    from them (dynamic_net's ``random.randint`` depth) is a graph break, as the draws of a
    capture would otherwise be constants of the graph."""
    import random
    return random.getstate(), np.random.get_state()


def _numpy_rng_same(saved):
    """Whether NumPy's global ``np.random`` state is still ``saved``."""
    _, keys, pos, has_gauss, _ = saved
    now = np.random.get_state()
    return now[2] == pos and now[3] == has_gauss and np.array_equal(now[1], keys)


def _host_rng_same(saved):
    import random
    return random.getstate() == saved[0] and _numpy_rng_same(saved[1])


def _host_rng_restore(saved):
    import random
    random.setstate(saved[0])
    np.random.set_state(saved[1])


class _DrawsSeen(GraphBreak):
    """A capture drew from Python's random module while not recording its draws."""


def _recorded_draws(recorder, host_rng, captured):
    """The Python ``random`` draws of a capture that changed the host generators' states,
    to replay on each call (``draws.py``), as ``(calls, results)``; the module's state is
    put back to where the capture started. Raises a graph break where they cannot be
    replayed: NumPy's global ``np.random`` drawn from, a draw the recorder did not see or
    cannot make again, or graphs already captured for ``RECOMPILE_LIMIT // 2`` other
    outcomes of the draws (``captured``: their numbers keep changing)."""
    import random
    reason = ("the function calls Python's random module or NumPy's global np.random: the "
              "numbers drawn while capturing would be frozen into the graph")
    if not _numpy_rng_same(host_rng[1]):
        raise GraphBreak(reason)
    if recorder is None:
        raise _DrawsSeen(reason)
    if not recorder.active:
        raise GraphBreak(reason + " (another profiler is active: its draws are not recorded)")
    if recorder.refused is not None:
        raise GraphBreak(f"the function calls {recorder.refused}, whose draws tg.compile does "
                         f"not replay (it replays random.randint and random.randrange)")
    if not _draws.replays(recorder.draws, host_rng[0], random.getstate()):
        raise GraphBreak(reason + " (other than through random.randint or random.randrange)")
    outcome = _draws.outcome_of(recorder.draws)
    if len(captured | {outcome}) > RECOMPILE_LIMIT // 2:
        raise GraphBreak(f"the function's draws from Python's random module gave more than "
                         f"{RECOMPILE_LIMIT // 2} different outcomes: one graph each would "
                         f"be too many")
    return outcome


class Explanation:
    """What ``compiled.explain()`` gives, as ``torch._dynamo.explain``'s output: the graphs
    captured, the graph breaks with their reasons and lines, the recompilations."""

    def __init__(self, fn):
        self.name = getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))
        self.graphs: list = []
        self.break_reasons: list[str] = []
        self.recompile_reasons: list[str] = []
        self.capture_seconds: list[float] = []
        self.children: list = []    # the Explanations of callees compiled under its breaks

    @property
    def graph_count(self):
        """The graphs captured, counting those of callees compiled under its breaks."""
        return len(self.graphs) + sum(c.graph_count for c in self.children)

    @property
    def compiled_under_breaks(self):
        """The names of the submodules / optimizer steps compiled under graph breaks."""
        return [c.name for c in self.children if c.graph_count]

    @property
    def graph_break_count(self):
        return len(self.break_reasons)

    def __str__(self):
        lines = [f"tg.compile explanation of {self.name}:",
                 f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            lines += [f"  {r}" for r in self.break_reasons]
        if self.recompile_reasons:
            lines.append("Recompile Reasons:")
            lines += [f"  {r}" for r in self.recompile_reasons]
        for k, (g, s) in enumerate(zip(self.graphs, self.capture_seconds)):
            lines.append(f"Graph {k}: {len(g)} nodes, {len(g.inputs)} inputs, "
                         f"{len(g.outputs)} outputs, captured and compiled in {s * 1e3:.1f} ms")
        for c in self.children:
            lines.append("Compiled under a graph break: "
                         + str(c).replace("\n", "\n  "))
        return "\n".join(lines)

    __repr__ = __str__


def _classes():
    from ..nn.modules import Module
    from ..optim.lr_scheduler import LRScheduler
    from ..optim.optimizer import Optimizer
    return Module, Optimizer, LRScheduler


def _watch(reached):
    """Shallow copies of the Python state reached: the modules', optimizers' and
    schedulers' attributes, the optimizers' param_groups, the lists and dicts. After the
    capture, a tensor stored there is replayed by every compiled call (``last[0] = loss``,
    ``self.out = y``); any other change is undone and the call runs eagerly (a compiled
    call would not repeat it)."""
    snaps = []
    for obj in reached.modules + reached.optimizers + reached.schedulers:
        snaps.append((obj.__dict__, dict(obj.__dict__)))
    for opt in reached.optimizers:
        for g in opt.param_groups:
            snaps.append((g, dict(g)))
        snaps.append((opt.state, dict(opt.state)))
    for c in reached.containers:
        snaps.append((c, dict(c) if isinstance(c, dict) else list(c)))
    return snaps


def _stores(snaps, Tensor):
    """The changes the capture made to the Python state watched: a list of (container,
    key, new tensor); raises GraphBreak for any other change."""
    stores = []
    for d, saved in snaps:
        if isinstance(d, list):
            if len(d) != len(saved):
                raise GraphBreak("the function changes the length of a list it can reach "
                                 "(append, pop): a compiled call would not repeat it")
            items = [(k, saved[k], d[k]) for k in range(len(d))]
        else:
            if d.keys() != saved.keys():
                k = next(iter(d.keys() ^ saved.keys()))
                # (a key may be a parameter, whose repr would read a traced value)
                what = repr(k) if type(k) in (str, int, float, bool) else \
                    f"a {type(k).__name__}"
                e = GraphBreak(f"the function adds or removes {what} in a dict, module, "
                               f"optimizer or scheduler it can reach (an optimizer's state "
                               f"made for a parameter's first gradient): it runs eagerly "
                               f"this time and is captured again on a later call")
                e.transient = True
                raise e
            items = [(k, v, d[k]) for k, v in saved.items()]
        for k, v, w in items:
            if w is v or type(v) in (int, float, bool, str) and type(w) is type(v) and w == v:
                continue
            if type(w) is Tensor or _tensors_only(w, Tensor):
                stores.append((d, k, w))    # (a tuple of them: an LSTM's hidden state)
                continue
            raise GraphBreak(f"the function changes Python state the graph cannot hold "
                             f"({k!r}: {type(v).__name__} -> {type(w).__name__})")
    return stores


def _tensors_only(value, Tensor):
    """Whether ``value`` is a tuple or list (nested) of tensors and nothing else."""
    return type(value) in (tuple, list) and all(
        type(v) is Tensor or _tensors_only(v, Tensor) for v in value)


def _unwatch(snaps):
    for d, saved in snaps:
        if isinstance(d, list):
            d[:] = saved
        else:
            d.clear()
            d.update(saved)


def _hyper(optimizers):
    """The hyper-parameters of the optimizers' groups (everything but the parameters)."""
    out = []
    for opt in optimizers:
        for g in opt.param_groups:
            out.append(tuple((k, v if type(v) in _VALUES or _hashable(v) else id(v))
                             for k, v in g.items() if k != "params"))
    return tuple(out)


def _hashable(v):
    try:
        hash(v)
        return True
    except TypeError:
        return False


def _arg_key(leaves, Tensor):
    key = []
    for x in leaves:
        if isinstance(x, Tensor):
            d = x._data
            g = x._grad
            key.append(("T", d.shape, d.dtype, x._requires_grad, x._tracer is not None,
                        None if g is None else (g._data.shape, g._data.dtype),
                        not x._hooks))      # (a gradient hook: a backward inside breaks)
        elif isinstance(x, np.ndarray):
            key.append(("A", x.shape, x.dtype, x.tobytes()))
        elif _hashable(x):
            key.append((type(x), x))
        else:
            key.append(("id", id(x)))
    return tuple(key)


class _Entry:
    """One captured graph and what it reads and writes."""

    def __init__(self, graph, fn, arg_key, state_of, state, getters, writes, returned,
                 tree):
        self.graph, self.fn = graph, fn
        self.arg_key, self.state_of, self.state = arg_key, state_of, state
        self.getters, self.writes, self.returned, self.tree = getters, writes, returned, tree
        self.tape = None
        self.inplace: list = []     # (input position, the array its output is copied into)
        self.histories: list = []   # (result position, _Freed)
        # the Python random draws replayed first (draws.py) and the numbers they gave
        self.calls = self.results = ()

    def drawn(self, outcome):
        """Whether this call's Python random draws (``outcome``) are the capture's."""
        return not self.calls or outcome.matches(self.calls, self.results)

    def __call__(self, leaves, Tensor):
        arrays = [g(leaves) for g in self.getters]
        if self.inplace:
            _fence(arrays, leaves, self.inplace)
        out = self.fn(*arrays)
        if out is GUARD_FAILED:
            return GUARD_FAILED
        out = [np.asarray(o) for o in out]
        made: dict = {}     # output position -> the tensor a store made of it
        for w in self.writes:
            if w.__class__ is _Store:
                w(out, made)
            else:
                w(out, leaves)
        result = []
        tape = None
        if self.tape is not None:
            # its results require grad as captured (grad mode on there, the entry's key),
            # though the call may be under no_grad (the function enabling grad itself)
            with grad_mode.enable_grad():
                tape = self.tape.apply(out, leaves)
        for kind, v in self.returned:
            if kind == "out":
                result.append(Tensor._plain(out[v]))
            elif kind == "tape":
                result.append(tape[v[1]])
            elif kind == "arg":
                result.append(leaves[v])
            elif kind == "same":
                result.append(result[v])
            elif kind == "stored":
                result.append(made[v])
            elif kind == "view":
                result.append(Tensor._plain(_view_array(v, out, leaves, result)))
            else:
                result.append(v)
        for i, h in self.histories:     # a backward inside freed their graphs
            h.attach(result[i])
        return unflatten(self.tree, result)


def _freed_histories(cap, rg_out, arg_slot):
    """The results of a capture that called ``backward`` which require grad: each one's
    ``_Freed`` history (id(result) -> it), where eager's backward from it after the call
    raises "Trying to backward through the graph a second time" (the backward inside
    freed its graph). A result whose graph is still live in eager (``retain_graph=True``,
    or made apart from the backward) would need a history a compiled call cannot give it:
    a graph break, the call runs eagerly."""
    out = {}
    for r in rg_out:
        if not cap.raises_again(r):
            raise GraphBreak("the function calls backward() and returns a tensor that "
                             "requires grad through a graph that backward did not free "
                             "(retain_graph=True, or computed apart from it): a compiled "
                             "call cannot give it that autograd history")
        history = cap.history([r])
        read = {a for n in history for a in cap.trace.records[n][1]}
        targets = {id(s.owner): s.owner for s in cap.slots if s.kind == "data" and
                   s.node in read and s.owner._requires_grad and id(s.owner) not in arg_slot}
        out[id(r)] = _Freed(list(targets.values()), r._data.dtype)
    return out


class _Freed:
    """The autograd history of a result of a compiled call whose graph a ``backward``
    inside the function freed, as eager leaves it: the result requires grad, its
    ``grad_fn`` (a ``CompiledFunctionBackward``, as ``torch.compile``'s) has been freed, so
    a backward through it raises PyTorch's "Trying to backward through the graph a
    second time" and ``.numpy()`` asks for ``detach()``. One freed custom Function node is
    made at the first call (``template``); each call gives its results a copy of it of
    their own (a new node id, the tensor's value and version counter), a few objects."""

    def __init__(self, targets, dtype):
        self.targets = targets      # the parameters its graph reaches (next_functions)
        self.dtype = dtype
        self.template = None

    def _make(self, t):
        from ..autograd.function import Function

        class CompiledFunction(Function):
            @staticmethod
            def forward(ctx, x, *params):
                return Tensor._plain(np.array(x._data))

            @staticmethod
            def backward(ctx, *grads):     # (never called: the node is freed)
                from ..engine import _FREED
                raise RuntimeError(_FREED)
        leaves = self.targets or [Tensor._plain(np.zeros((), self.dtype), requires_grad=True)]
        with grad_mode.enable_grad():
            out = CompiledFunction.apply(Tensor._plain(t._data), *leaves)
        rule = out._tracer._handle._rule
        rule.ctx._freed = True
        out._tracer._handle._name = "CompiledFunctionBackward"
        return out._tracer

    def attach(self, t):
        tmpl = self.template
        if tmpl is None:
            tmpl = self.template = self._make(t)
        value = t._data
        h = tmpl._handle.copied(value, t._vc)
        h._freed = True     # (as eager's after the backward inside: a second one raises)
        tracer = EagerTracer(TAPE, h._id, value.shape, value.dtype, value)
        tracer._handle = h
        t._tracer = tracer


def _fence(arrays, leaves, inplace):
    """The compiled code writes some outputs into their input arrays: one that is not the
    array the write-back copies into, that is read-only, or that may share memory with
    another input is passed as a copy instead (the write-back then copies, as without)."""
    owners, count = [], {}
    for a in arrays:
        base = getattr(a, "base", None)
        o = id(a if base is None else base)
        owners.append(o)
        count[o] = count.get(o, 0) + 1
    for i, target in inplace:
        a = arrays[i]
        if a is not target(leaves) or not a.flags.writeable or count[owners[i]] > 1:
            arrays[i] = a.copy()


class _Call:
    """What one call's tape node holds: the forward results, the saved values."""
    __slots__ = ("results", "saved", "checked", "versions")

    def __init__(self, results, saved):
        self.results, self.saved = results, saved
        self.versions = None    # the versions of the tensors ``checked`` at the call


class _TapeNode:
    """A compiled forward's results as one node of the eager tape (PyTorch's
    ``CompiledFunctionBackward``): its backward runs the compiled adjoint graph on the
    forward values the graph saved, and hands the leaves their gradients."""

    def __init__(self, bw, saved, targets, seeds, checked, bw_fn):
        from ..autograd.function import Function
        self.saved, self.targets, self.checked = saved, targets, checked
        n_targets = len(targets)

        class CompiledFunction(Function):
            @staticmethod
            def forward(ctx, call, *tensors):
                ctx.call = call
                return tuple(Tensor._plain(r) for r in call.results)

            @staticmethod
            def backward(ctx, *grads):
                call = ctx.call
                if call.versions:
                    _check_versions(call.versions, call.checked)
                given = [g._data if g is not None else np.zeros(shape, dtype)
                         for g, (shape, dtype) in zip(grads, seeds)]
                outs = bw_fn(*call.saved, *[given[i] for i in bw.seeds])
                if outs is GUARD_FAILED:
                    raise TraceError("a tg.compile'd forward's backward branches on values "
                                     "other than the ones it was captured with")
                res = [None]
                for j, _ in targets:
                    k = bw.outputs[j]
                    res.append(None if k is None else Tensor._plain(np.asarray(outs[k])))
                if grad_mode.is_grad_enabled():     # backward(create_graph=True)
                    res[1:] = _no_double_backward(res[1:])
                return tuple(res) + (None,) * (1 + n_targets - len(res))
        self.function = CompiledFunction
        self.result_index: list = []     # per result: its position among the outputs

    def apply(self, out, leaves):
        tensors = [leaves[a] if kind == "arg" else a for _, (kind, a) in self.targets]
        call = _Call([out[k] for k in self.result_index],
                     [out[v] if kind == "out" else v for kind, v in self.saved])
        if self.checked:
            call.checked = [leaves[a] if kind == "arg" else a for kind, a in self.checked]
            call.versions = [t._vc.v for t in call.checked]
        return self.function.apply(call, *tensors)


def _check_versions(versions, tensors):
    """The version check of PyTorch's saved variables: a tensor whose value a compiled
    forward's backward reads was changed in place after the forward (eager's backward, and
    ``torch.compile``'s, raise; the values saved are the old ones)."""
    for v, t in zip(versions, tensors):
        if t._vc.v != v:
            raise modified_error(t.dtype, t.shape, None, t._vc.v, v)


_DOUBLE = ("torch.compile with aot_autograd does not currently support double backward "
           "(tg.compile: the backward of a compiled forward is not differentiated again)")


def _no_double_backward(grads):
    """The gradients a compiled forward's backward gives under ``create_graph=True``, as
    PyTorch's: they require grad (they depend on what the forward saved) through a node
    whose backward raises, so that differentiating them again is a clear error instead of
    a silently missing second-order term."""
    from ..autograd.function import Function

    class CompiledFunctionBackward(Function):
        @staticmethod
        def forward(ctx, *xs):
            return tuple(Tensor._plain(np.array(x._data)) for x in xs)

        @staticmethod
        def backward(ctx, *gs):
            raise RuntimeError(_DOUBLE)

    live = [g for g in grads if g is not None]
    if not live:
        return grads
    marked = []
    for g in live:
        g = g.detach()
        g.requires_grad_(True)
        marked.append(g)
    out = CompiledFunctionBackward.apply(*marked)
    out = iter(out if isinstance(out, tuple) else (out,))
    return [None if g is None else next(out) for g in grads]


class CompiledFunction:
    """A function compiled by ``tg.compile``: call it as the function."""

    def __init__(self, fn, fullgraph=False, dynamic=None, backend="numpy", mode=None,
                 options=None):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.backend = _backend(backend)
        self.mode = mode
        self.options = dict(options or {})
        self._entries: list[_Entry] = []
        self._calls = 0
        self._explain = Explanation(fn)
        self._warned = False
        self._broken: dict = {}         # arg key -> reason: it runs eagerly
        self._value_fails: dict = {}    # arg key -> failed value guards
        self._records_draws = False     # its captures record Python random draws
        self._transient = 0             # breaks on state made lazily: captured again
        self._state_fns: dict = {}      # what the graphs' guards read -> its reader
        self._lock = threading.Lock()
        self._region = None             # its callees compiled under breaks (partial.py)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return functools.partial(self, obj)

    def explain(self) -> Explanation:
        """The graphs captured so far, the graph breaks and why, the recompilations."""
        return self._explain

    @property
    def graphs(self):
        """The optimised graphs captured (a ``tg.Graph`` each: ``print``, ``.to_dot()``,
        ``.to_json()``)."""
        return [e.graph for e in self._entries]

    def __call__(self, *args, **kwargs):
        if BROKEN.get() is not None:
            # called from another compiled function's broken call: the modules this one
            # reaches are its own to capture (or, when it breaks, its own children)
            token = BROKEN.set(None)
            try:
                return self(*args, **kwargs)
            finally:
                BROKEN.reset(token)
        if CAPTURE.get() is not None:       # called while another capture records
            return self._fn(*args, **kwargs)
        self._calls += 1
        leaves, tree = flatten((args, kwargs))
        key = (_arg_key(leaves, Tensor), grad_mode.is_grad_enabled())
        reasons = []
        outcome = _draws.Outcome()      # the Python random draws the graphs replay
        states: dict = {}               # state reader -> the state it read this call
        for entry in self._entries:
            if entry.arg_key != key:
                reasons.append("the arguments' shapes, dtypes, requires_grad or values "
                               "changed")
                continue
            if not entry.drawn(outcome):
                reasons.append("a draw from Python's random module gave a number the graph "
                               "was not captured for")
                continue
            state = states.get(entry.state_of)
            if state is None:
                state = states[entry.state_of] = entry.state_of()
            if state != entry.state:
                reasons.append(_why(entry.state, state, entry.state_of.places))
                continue
            if entry.alias_of(leaves) != entry.alias:
                reasons.append("which tensors share memory (the same tensor or array passed "
                               "twice, views of one array) changed")
                continue
            out = entry(leaves, Tensor)
            if out is not GUARD_FAILED:
                return out
            reasons.append("a value the graph branched on changed")
            fails = self._value_fails[key] = self._value_fails.get(key, 0) + 1
            if fails >= 2:      # it branches on values that keep changing: eager from now
                self._broken[key] = reasons[-1]
                self._explain.break_reasons.append(
                    "the graph branches on tensor values that change from call to call "
                    "(a boolean mask, a value-dependent shape): these arguments run eagerly")
        outcome.undo()      # no graph ran: the function draws its own numbers
        if key in self._broken:     # eagerly, its submodules and optimizer.step compiled
            return _partial.run_broken(self, args, kwargs)
        if self._calls == 1:
            return self._fn(*args, **kwargs)
        if len(self._entries) >= RECOMPILE_LIMIT:
            if not self._warned:
                self._warned = True
                warnings.warn(f"tg.compile hit the recompile limit ({RECOMPILE_LIMIT}) for "
                              f"function {self._explain.name}: it was captured "
                              f"{len(self._entries)} times (last reason: "
                              f"{reasons[-1] if reasons else 'unknown'}). It runs eagerly "
                              f"from now on, as torch._dynamo does on hitting "
                              f"config.recompile_limit", UserWarning, stacklevel=2)
            return self._fn(*args, **kwargs)
        if self._entries and reasons:
            self._explain.recompile_reasons.append(reasons[-1])
        import time
        started = time.perf_counter()
        try:
            with self._lock:        # one capture at a time (each changes what it reaches)
                try:
                    entry = self._capture(args, kwargs, leaves, tree, key, Tensor,
                                          self._records_draws)
                except _DrawsSeen:      # again, recording its Python random draws
                    self._records_draws = True
                    entry = self._capture(args, kwargs, leaves, tree, key, Tensor, True)
        except GraphBreak as e:
            self._explain.break_reasons.append(str(e))
            if self.fullgraph:
                raise TraceError(f"tg.compile(fullgraph=True): graph break in "
                                 f"{self._explain.name}: {e.reason}"
                                 + (f" (at {e.src})" if e.src else "")) from None
            if getattr(e, "transient", False) and self._transient < 2:
                self._transient += 1        # (the eager run makes what it made)
            else:
                self._broken[key] = str(e)
            return _partial.run_broken(self, args, kwargs)
        self._explain.capture_seconds.append(time.perf_counter() - started)
        self._explain.graphs.append(entry.graph)
        self._entries.insert(0, entry)
        outcome = _draws.Outcome()
        out = entry(leaves, Tensor) if entry.drawn(outcome) else GUARD_FAILED
        if out is GUARD_FAILED:
            outcome.undo()
            raise TraceError(f"{self._explain.name} takes a different branch each time it "
                             "is captured on these inputs")
        return out

    # -- capturing ---------------------------------------------------------------------
    def _capture(self, args, kwargs, leaves, tree, key, Tensor, record_draws=False):
        Module, Optimizer, Scheduler = _classes()
        from ..random import default_generator
        arg_ids = {id(x) for x in leaves if isinstance(x, Tensor)}
        reached = reach(self._fn, [x for x in leaves if not isinstance(x, Tensor)], {},
                        Tensor, Module, Optimizer, Scheduler)
        # (a tensor with a recorded history, say the last step's loss kept in a list, is
        # not lifted: an operation reading it is a graph break, storing over it is fine)
        # (a tensor reached that is also an argument is lifted as the argument; its array is
        # still compared with the arguments' on each call, see ``_alias_sources``)
        also_args = [t for t, _ in reached.tensors if id(t) in arg_ids]
        reached.tensors = [(t, p) for t, p in reached.tensors
                           if id(t) not in arg_ids and t._tracer is None]
        snaps = _watch(reached)
        rng = _rng_state(default_generator)
        rng_saved = default_generator.get_state()
        host_rng = _host_rng_state()
        # the generators it holds (the random module's and NumPy's global: host_rng)
        held = randomness.Watch([g for g in reached.generators
                                 if g is not randomness.PYTHON and g is not np.random.mtrand._rand])
        gc_was = gc.isenabled()
        gc.disable()
        cap = None
        token = None
        try:
            with new_trace() as trace:
                cap = Capture(trace)
                getters = []
                owners = []     # per getter: the tensor whose value it reads, if any
                keys = []       # per getter: what it reads, as the write-backs name it
                arg_slot = {}
                drawing = set()     # the getters that draw random numbers
                for i, x in enumerate(leaves):
                    if isinstance(x, Tensor):
                        n = len(trace.records)
                        cap.lift_tensor(x, argument=True)
                        arg_slot[id(x)] = i
                        if len(trace.records) > n:
                            getters.append(_arg_getter(i))
                            owners.append(None)
                            keys.append(("arg", i))
                tensors = [t for t, _ in reached.tensors]
                for t in tensors:
                    n = len(trace.records)
                    cap.lift_tensor(t)
                    if len(trace.records) > n:
                        getters.append(_data_getter(t))
                        owners.append(t)
                        keys.append(("data", id(t)))
                params = [t for t in tensors if t._requires_grad]
                for p in params:
                    n = len(trace.records)
                    cap.lift_grad(p)
                    if len(trace.records) > n:
                        getters.append(_grad_getter(p))
                        owners.append(p._grad)
                        keys.append(("grad", id(p)))
                for i, x in enumerate(leaves):      # an argument's .grad: per call
                    if isinstance(x, Tensor) and x._requires_grad and arg_slot.get(id(x)) == i \
                            and not any(x is h for h, _, _ in cap.histories):
                        n = len(trace.records)
                        cap.lift_grad(x)
                        if len(trace.records) > n:
                            getters.append(_arg_grad_getter(i))
                            owners.append(None)
                            keys.append(("arggrad", i))
                for opt in reached.optimizers:
                    for st in opt.state.values():
                        for k in list(st):
                            n = len(trace.records)
                            item_key = _item_key(st, k, Tensor)
                            cap.lift_item(st, k)
                            if len(trace.records) > n:
                                getters.append(_item_getter(st, k))
                                owners.append(None)
                                keys.append(item_key)
                cap.optimizers = {id(o) for o in reached.optimizers}
                token = CAPTURE.set(cap)
                recorder = _draws.Recorder() if record_draws else None
                try:
                    if recorder is None:
                        result = self._fn(*args, **kwargs)
                    else:
                        with recorder:
                            result = self._fn(*args, **kwargs)
                finally:
                    CAPTURE.reset(token)
                stores = _stores(snaps, Tensor)
                for getter, t, kind in cap.late:     # draws, tensors lifted late
                    if kind == "draw":      # drawn on every call, read or not
                        drawing.add(len(getters))
                    getters.append(getter)
                    owners.append(t if kind == "data" else None)
                    keys.append((kind, id(t)) if kind in ("data", "grad") else None)
                    if kind == "data":
                        reached.tensors.append((t, None))
                    elif kind == "grad":        # its .grad is read: guarded
                        params.append(t)
                for gen, state in cap.generators.values():
                    gen.set_state(state)        # the compiled call draws them again
                if _rng_state(default_generator) != rng:
                    raise GraphBreak("the function draws random numbers other than through "
                                     "tracegrad's generator's words")
                moved = held.moved()
                if moved:
                    raise GraphBreak(f"the function draws from {randomness.describe(moved[0])} "
                                     f"it holds: the numbers drawn while capturing would be "
                                     f"frozen into the graph")
                draws = ((), ())
                if not _host_rng_same(host_rng):
                    outcomes = {(e.calls, e.results) for e in self._entries if e.calls}
                    draws = _recorded_draws(recorder, host_rng, outcomes)
                outputs, writes = [], []
                self._writes(cap, outputs, writes, arg_slot, Tensor)
                stored_at = {}      # id(stored tensor) -> its output's position
                for d, k, stored in stores:
                    parts, tree = flatten(stored)
                    made = []       # per tensor: its output's position, or the tensor
                    for t in parts:
                        if type(t._data) is Tracer:
                            sync(t._data)
                            outputs.append(t._data._node)
                            made.append(len(outputs) - 1)
                            stored_at.setdefault(id(t), len(outputs) - 1)
                        else:
                            made.append(t)
                    writes.append(_Store(d, k, made, tree))
                res_leaves, res_tree = flatten(result)
                returned = []
                rg_out = list({id(x): x for x in res_leaves if isinstance(x, Tensor) and
                               x._requires_grad and type(x._data) is Tracer}.values())
                tape = None
                freed = {}      # id(result) -> the _Freed history it is given each call
                if rg_out and cap.backwards == 0:
                    # a compiled forward whose results are differentiated later, outside:
                    # one tape node whose backward is the compiled adjoint
                    tape = self._tape(cap, rg_out, outputs, arg_slot, Tensor)
                else:       # (a parameter or argument returned is itself)
                    freed = _freed_histories(cap, [x for x in rg_out if id(x) not in
                                                   cap.lifted and id(x) not in arg_slot],
                                             arg_slot)
                first = {}      # id(tensor) -> its first place among the results
                histories = []  # (place among the results, its _Freed)
                # the arrays a returned view may be a view of: the tracers the lifted tensors
                # still hold (an argument's, a parameter's), and the results before it
                bases = {}
                for slot in cap.slots:
                    if slot.kind == "data" and slot.owner._data is slot.input:
                        t = slot.owner
                        bases[id(slot.input)] = ("arg", arg_slot[id(t)]) if id(t) in \
                            arg_slot else ("obj", t)
                for x in res_leaves:
                    if isinstance(x, Tensor) and id(x) in first:
                        returned.append(("same", first[id(x)]))     # (one tensor, as eager)
                        continue
                    if isinstance(x, Tensor):
                        first[id(x)] = len(returned)
                        if tape is not None and x._requires_grad and type(x._data) is Tracer:
                            sync(x._data)
                            outputs.append(x._data._node)
                            returned.append(("tape", (len(outputs) - 1,
                                                      next(j for j, r in enumerate(rg_out)
                                                           if r is x))))
                        elif id(x) in cap.lifted and id(x) not in arg_slot:
                            returned.append(("const", x))   # a parameter: itself
                        elif id(x) in arg_slot:
                            returned.append(("arg", arg_slot[id(x)]))
                        elif id(x) in stored_at:
                            # also stored (``self.last = loss; return loss``): one tensor
                            returned.append(("stored", stored_at[id(x)]))
                        elif type(x._data) is Tracer:
                            sync(x._data)
                            outputs.append(x._data._node)
                            view = _view_of(x._data, bases)
                            if view is None:
                                returned.append(("out", len(outputs) - 1))
                            else:   # a view of an argument, parameter or result, as eager's
                                returned.append(("view", (len(outputs) - 1,) + view))
                            bases[id(x._data)] = ("result", len(returned) - 1)
                        else:
                            returned.append(("const", Tensor._plain(np.array(x._data))))
                    elif isinstance(x, (Tracer, np.ndarray)):
                        raise GraphBreak("the function returns an array")
                    elif type(x) is TracedInt:
                        raise GraphBreak("the function returns a number read by "
                                         "Tensor.item() (a Python int known only when the "
                                         "graph runs)")
                    else:
                        returned.append(("const", x))
                    if id(x) in freed:
                        histories.append((len(returned) - 1, freed[id(x)]))
                graph = trace.graph
                graph.outputs = list(outputs)
        except BaseException as e:      # undone; whatever else failed, eager will say it
            if cap is not None:
                cap.restore()
                for gen, state in cap.generators.values():
                    gen.set_state(state)
            _unwatch(snaps)
            default_generator.set_state(rng_saved)
            _host_rng_restore(host_rng)
            held.restore()
            # a graph break, and KeyboardInterrupt & co., are raised as they are
            if isinstance(e, GraphBreak) or not isinstance(e, Exception):
                raise
            from ...ir.source import user_src
            raise GraphBreak(f"{type(e).__name__}: {e}", user_src()) from e
        finally:
            if gc_was:
                gc.enable()
        cap.restore()
        _unwatch(snaps)
        graph = _optimize(graph)
        # the inputs nothing reads (tensors the function can reach but did not touch, a
        # dataset held in a global) are dropped: not read, not guarded on each call
        kept = _drop_unused_inputs(graph, drawing)
        getters = [getters[k] for k in kept]
        keys = [keys[k] for k in kept]
        used = {id(owners[k]) for k in kept if owners[k] is not None} | cap.written
        reached.tensors = [(t, path) for t, path in reached.tensors if id(t) in used]
        # a place the function stores into is not guarded (it reads what it stored), unless
        # it reads the tensors of the tuple or list that was there (a carried hidden state)
        stored = {(id(d), k) for d, k, _ in stores}
        read_from = {(id(r[0]), r[1]) for r in (reached.roots.get(id(t))
                                                for t, _ in reached.tensors) if r is not None}
        reached.places = [p for p in reached.places
                          if (id(p[0]), p[1]) not in stored or (id(p[0]), p[1]) in read_from]
        params = [p for p in params if id(p) in used or p._grad is not None and
                  id(p._grad) in used or any(w is p for w in cap.leaves)]
        # which of the arrays read share memory: a graph holds one input per array, so it is
        # right only for the sharing it was captured with (guarded on each call); a write
        # into one of two arrays that overlap (views of one array) it cannot follow
        groups: dict = {}   # the tensors lifted as one input (one array: w and w.data)
        for slot in cap.slots:
            if slot.kind == "data":
                groups.setdefault(id(slot.input), []).append(slot.owner)
        shared = [t for g in groups.values() if len(g) > 1 for t in g if id(t) not in arg_slot]
        alias_of = _alias_sources(leaves, list({id(t): t for t in [
            t for t, _ in reached.tensors] + also_args + shared}.values()), Tensor)
        alias = alias_of(leaves)
        overlapping = {i for a in alias if a[0] == "overlap" for i in a[1:]}
        if overlapping and any(id(alias_of.tensors(leaves)[i]) in cap.written
                               for i in overlapping):
            raise GraphBreak("the function writes in place into a tensor that shares memory "
                             "with another tensor it reads (views of one array passed or "
                             "reached separately): a graph reads them as separate values")
        # a parameter's update is written straight into its array where the code can
        position = {k: i for i, k in enumerate(keys) if k is not None}
        into = {w.k: position[w.key] for w in writes
                if getattr(w, "key", None) in position}
        fn, done = self._compile(graph, into, () if tape is None else
                                 [v for kind, v in tape[1] if kind == "out"])
        state_of = _state_function(reached, params, Module, self._state_fns)
        entry = _Entry(graph, fn, key, state_of, state_of(), getters, writes, returned,
                       res_tree)
        entry.alias_of, entry.alias = alias_of, alias
        entry.histories = histories
        entry.calls, entry.results = draws
        # the objects whose identities the guards compare, held so no id is reused
        entry.held = [_at(p) for p in state_of.places]
        entry.inplace = [(i, next(w.target for w in writes if getattr(w, "k", None) == k
                                  and getattr(w, "key", None) is not None))
                         for k, i in done.items()]
        if type(fn) is _JaxRun:     # (outputs copied into arrays, or saved: not copied)
            kept = {w.k for w in writes if getattr(w, "target", None) is not None}
            if tape is not None:
                kept |= {v for kind, v in tape[1] if kind == "out"}
            fn.fresh = [i for i in range(len(graph.outputs)) if i not in kept]
        if tape is not None:
            entry.tape = _TapeNode(*tape, self._compile(tape[0].graph)[0])
            index = {}
            for kind, v in returned:
                if kind == "tape":
                    index[v[1]] = v[0]
            entry.tape.result_index = [index[j] for j in range(len(index))]
        return entry

    def _tape(self, cap, rg_out, outputs, arg_slot, Tensor):
        """The backward graph of the results ``rg_out`` with respect to the leaves that
        require grad, and the forward values it reads (made outputs of the graph)."""
        from ...passes.adjoint import backward_graph
        g, local, wrt, wrt_of = cap.subgraph(rg_out, cap.leaves)
        if not wrt:
            raise GraphBreak("the function returns a tensor that requires grad through no "
                             "parameter or argument it could differentiate")
        bw = backward_graph(g, [local[n] for n in wrt], origins=False)
        inv = {m: n for n, m in local.items()}
        records = cap.trace.records
        saved = []      # per saved value: ("out", output position) or ("const", array)
        # the tensors from outside whose values (or views of them: a linear layer's w.t())
        # the backward reads: an in-place change of one of them between the call and the
        # backward makes eager's backward raise (its saved variable's version check)
        owner = {s.node: s.owner for s in cap.slots if s.kind == "data"}
        checked = {}
        for m in bw.saved:
            n = inv[m]
            while is_view(records[n][0]) and records[n][1]:
                n = records[n][1][0]
            t = owner.get(n) if records[n][0] == "input" else None
            if t is not None and id(t) not in checked:
                checked[id(t)] = ("arg", arg_slot[id(t)]) if id(t) in arg_slot else ("obj", t)
        for m in bw.saved:
            op, _, params = records[inv[m]][:3]
            if op == "const":   # passed as it is, not returned by every forward call
                saved.append(("const", params["value"]))
                continue
            outputs.append(inv[m])
            saved.append(("out", len(outputs) - 1))
        targets = []        # (position in wrt, how to find the tensor at call time)
        for j, n in enumerate(wrt):
            for t in wrt_of[n]:
                targets.append((j, ("arg", arg_slot[id(t)]) if id(t) in arg_slot
                                else ("obj", t)))
        seeds = [(tuple(r.shape), r.dtype) for r in rg_out]
        return bw, saved, targets, seeds, list(checked.values())

    def _writes(self, cap, outputs, writes, arg_slot, Tensor):
        """The graph outputs and the write-backs for the slots the capture changed."""
        grad_of = {id(s.original): s.owner for s in cap.slots
                   if s.kind == "grad" and s.original is not None}
        for slot in cap.slots:
            final = slot.get()
            if slot.kind == "data":
                if type(final) is not Tracer:
                    raise GraphBreak("a tensor's value was replaced by a plain array")
                sync(final)
                if final._node == slot.node:
                    continue
                outputs.append(final._node)
                k = len(outputs) - 1
                t = slot.owner
                cap.written.add(id(t))
                if any(t is h for h, _, _ in cap.histories):
                    raise GraphBreak("the function changes in place an argument with an "
                                     "autograd history made outside it")
                if id(t) in grad_of:
                    p = grad_of[id(t)]
                    writes.append(_write_grad_data(p, k, arg_slot.get(id(p))))
                elif id(t) in arg_slot:
                    writes.append(_write_arg(arg_slot[id(t)], k))
                else:
                    writes.append(_write_data(t, k))
            elif slot.kind == "grad":
                p = slot.owner
                if final is slot.original:
                    continue
                arg = arg_slot.get(id(p))
                if final is None:
                    writes.append(_write_grad_none(p, arg))
                    continue
                v = final._data
                if type(v) is Tracer:
                    sync(v)
                    outputs.append(v._node)
                    writes.append(_write_grad_new(p, len(outputs) - 1, arg))
                else:
                    writes.append(_write_grad_const(p, np.array(v), arg))
            else:
                if final is slot.original:
                    continue
                if type(final) is Tracer:
                    sync(final)
                    if final is slot.input and final._node == slot.node:
                        continue
                    outputs.append(final._node)
                    writes.append(_write_item(slot, len(outputs) - 1))
                else:
                    raise GraphBreak(f"optimizer state {slot.key!r} changed to a "
                                     f"{type(final).__name__}")

    def _compile(self, graph, inplace=None, saved=()):
        """The graph's function, and which outputs it writes into which inputs' arrays
        (output position -> input position). ``saved``: the output positions only a
        compiled backward reads (which never writes into its inputs): they may share memory
        with one another, not with an input or another output."""
        if self.backend == "jax":
            from ...runtime.jax_backend import JaxCompiled
            return _JaxRun(JaxCompiled(graph)), {}
        graph = elide_broadcasts(graph)     # np.broadcast_to costs more than the ufunc's
        bases = fresh_bases(graph)
        for k in saved:
            bases[k] = ("saved", None)
        compiled = generate(graph, name=_safe(self._explain.name), bases=bases,
                            inplace=inplace)
        return compiled.fn, compiled.inplace


class _JaxRun:
    """A graph compiled by XLA, called on NumPy arrays. The arrays its outputs come back
    as are read-only views of XLA's buffers: those handed on (returned tensors, new
    ``.grad``s and state entries) are copied, as eager's are arrays of their own that
    in-place operations write into; ``fresh`` names them (None: every output), the others
    are only copied into existing arrays or read by a backward."""

    def __init__(self, compiled):
        self.compiled = compiled
        self.fresh = None

    def __call__(self, *arrays):
        out = self.compiled(*arrays)
        if out is GUARD_FAILED:
            return out
        out = [np.asarray(o) for o in out]
        for i in range(len(out)) if self.fresh is None else self.fresh:
            if not out[i].flags.writeable:
                out[i] = out[i].copy()
        return out


def _view_of(tracer, bases):
    """How to take the returned ``tracer`` as a NumPy view of the array one of ``bases``
    (id(tracer) -> ("arg", i) / ("obj", tensor) / ("result", j)) holds after a call:
    ``(base, steps)``, each step a ``views.View`` whose ``on_layout`` takes it of its base's
    array; None where ``tracer`` is no view of them (a view taken with a number read by
    ``item()``, whose capture-time index ``on_layout`` would hold, is not followed)."""
    hit = bases.get(id(tracer))
    if hit is not None:         # the array itself (``p.detach()``, ``p.data``)
        return hit, ()
    steps = []
    v = tracer._view
    while v is not None:
        if "Capture.getitem" in getattr(v.on_layout, "__qualname__", ""):
            return None
        steps.append(v)
        hit = bases.get(id(v.base))
        if hit is not None:
            return hit, tuple(reversed(steps))
        v = v.base._view
    return None


def _view_array(spec, out, leaves, result):
    """A returned view (``_view_of``) taken of the array its base holds after this call;
    the graph's output for it (a copy) where the view taken does not give its values."""
    from ...tracer.views import _no_copy_reshape
    k, (kind, where), steps = spec
    value = out[k]
    if kind == "arg":
        arr = leaves[where]._data
    elif kind == "obj":
        arr = where._data
    else:
        arr = result[where]._data
    try:
        for v in steps:
            arr = v.on_layout(_no_copy_reshape(arr, v.base_shape))
    except (ValueError, AttributeError, TypeError, IndexError):
        return value
    if type(arr) is not np.ndarray or arr.shape != value.shape or arr.dtype != value.dtype \
            or not np.array_equal(arr, value):
        return value
    return arr


def _alias_sources(leaves, tensors, Tensor):
    """The function giving, for a call's ``leaves``, which of the tensor arguments' and the
    ``tensors``' arrays share memory: ``("same", i, j)`` where source ``i``'s array is
    source ``j``'s, ``("overlap", j, i)`` where two arrays overlap (views of one array).
    Empty when no two do (the usual case: one pass of dictionary lookups)."""
    positions = [i for i, x in enumerate(leaves) if isinstance(x, Tensor)]
    tensors = list(tensors)

    def sources(leaves):
        return [leaves[i] for i in positions] + tensors

    def alias_of(leaves):
        arrays = [t._data for t in sources(leaves)]
        if len({id(storage_root(a)) for a in arrays}) == len(arrays):
            return ()       # (every array its own memory: no two share any)
        objects, roots, out = {}, {}, []
        for i, a in enumerate(arrays):
            if type(a) is not np.ndarray:
                continue
            j = objects.setdefault(id(a), i)
            if j != i:
                out.append(("same", i, j))
                continue
            seen = roots.setdefault(id(storage_root(a)), [])
            for j, b in seen:
                if np.may_share_memory(a, b):
                    out.append(("overlap", j, i))
            seen.append((i, a))
        return tuple(out)
    alias_of.tensors = sources
    return alias_of


def _rng_state(gen):
    s = gen.get_state()
    bits = s["bits"]["state"]
    return (s["seed"], s["next_normal"], bits["pos"], bits["key"].tobytes())


def _drop_unused_inputs(graph, keep=()):
    """Remove the inputs no node, output or guard reads, but those at the positions
    ``keep`` (random draws: unread, the generator must still move on); the positions of
    those kept."""
    used = set(graph.outputs) | {n for n, _ in graph.guards} | {graph.inputs[k] for k in keep}
    for n in graph:
        used.update(graph.args(n))
    kept = [k for k, n in enumerate(graph.inputs) if n in used]
    inputs = [graph.inputs[k] for k in kept]
    for n in graph.inputs:
        if n not in used:
            graph.remove(n)
    for k, n in enumerate(inputs):
        graph.node(n).params["index"] = k       # (each input's own params dict)
    graph.inputs = inputs
    return kept


def _optimize(graph):
    """``prune`` and ``cse``. Not ``simplify``: ``x + 0`` -> ``x`` can hand on a value in
    another memory layout (a transposed view, where eager has a fresh C-ordered array),
    and NumPy's sums then add in another order: eager's numbers bit for bit come first."""
    graph = passes.prune(graph)
    graph = passes.cse(graph)
    return passes.prune(graph)


def _safe(name):
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return name if name and not name[0].isdigit() else f"fn_{name}"


def _why(old, new, places=()):
    names = ("grad mode", "module training flags", "optimizer hyper-parameters",
             "which parameters have a .grad", "the tensors' shapes, dtypes, requires_grad, "
             "gradient hooks or identity", "optimizer state", "a Python value the function "
             "can reach (an attribute, a global, a closure variable)",
             "the length of a list, or the keys of a dict or the attributes of an object, the "
             "function can reach (a hook, an attribute, a submodule or an element added)")
    for k, (name, a, b) in enumerate(zip(names, old, new)):
        if a != b:
            if k == 6:
                place = _changed_place(a, b, places)
                if place is not None:
                    return f"{name} changed: {place}"
            return f"{name} changed"
    return "guards failed"


def _changed_place(old, new, places):
    """The first place of ``places`` whose value differs between two readings of the
    Python state (``(types, values, ids)``, see ``_state_function``), described."""
    types_old, types_new = old[0], new[0]
    values = ids = 0        # positions in the values and ids parts
    for i, (t, u) in enumerate(zip(types_old, types_new)):
        by_value = t in _VALUES
        if t is not u or (old[1][values] != new[1][values] if by_value
                          else old[2][ids] != new[2][ids]):
            if i >= len(places):
                return None
            c, key = places[i]
            if type(c) is types.CellType:
                return "a variable the function closes over"
            if key is LENGTH:
                return ("the length of a list" if isinstance(c, list) else
                        "the keys of a dict or the attributes of an object (one added: a "
                        "hook, an attribute, a submodule)")
            if type(c) is types.FunctionType:
                return f"the default arguments of {c.__qualname__}"
            if isinstance(c, list):
                return f"element {key} of a list"
            return f"{key!r}" if type(key) in (str, int) else "an entry of a dict"
        if by_value:
            values += 1
        else:
            ids += 1
    return None


def _state_function(reached, params, Module, known):
    """The function reading the state a graph's guards compare (``_Entry.state``). Graphs
    of one compiled function that read the same objects share one (``known``, keyed by
    their identities), so that a call computes it once whichever graph it tries."""
    tensors = list(reached.tensors)
    modules = list(reached.modules)
    optimizers = list(reached.optimizers)
    places = list(reached.places)
    key = (tuple(id(t) for t, _ in tensors),
           tuple(None if p is None else (id(p[0]), p[1]) for _, p in tensors),
           tuple(map(id, modules)), tuple(map(id, optimizers)), tuple(map(id, params)),
           tuple((id(c), k) for c, k in places))
    if key in known:
        return known[key][0]
    # the lists and dicts whose lengths are guarded (reach.LENGTH): one len() each
    sized = [c for c, k in places if k is LENGTH]
    places = [p for p in places if p[1] is not LENGTH]

    def state_of():
        values = [_at(p) for p in places]
        return (grad_mode.is_grad_enabled(),
                tuple(m.training for m in modules),
                _hyper(optimizers),
                tuple(p._grad is None or (p._grad._data.shape, p._grad._data.dtype)
                      for p in params),
                tuple((t._data.shape, t._data.dtype, t._requires_grad, t._tracer is None,
                       path is None or _at(path) is t, not t._hooks)
                      for t, path in tensors),
                tuple((id(st), tuple(sorted(st))) for opt in optimizers
                      for st in opt.state.values()),
                # Python state: the types first (so that the values compared with == are
                # numbers, strings and None), then those values, then the others' ids
                (tuple(map(type, values)),
                 tuple(v for v in values if type(v) in _VALUES),
                 tuple(id(v) for v in values if type(v) not in _VALUES)),
                tuple(map(len, sized)))
    state_of.places = places
    # (the objects are held with it: an id is not reused while the key is known)
    known[key] = (state_of, tensors, modules, optimizers, params, places)
    return state_of


# Python values a guard compares by value (others by identity)
_VALUES = frozenset({bool, int, float, complex, str, bytes, type(None), np.float64,
                     np.float32, np.int64, np.int32, np.bool_})


def _at(place):
    """The value at a place of ``Reached.places``: ``d[key]``, ``lst[index]``, a dict's or
    list's length (``LENGTH``), a function's defaults or a closure cell's value."""
    c, k = place
    if isinstance(c, dict):
        return len(c) if k is LENGTH else c.get(k, _MISSING)
    if k is LENGTH:
        return len(c)
    if type(c) is types.CellType:
        try:
            return c.cell_contents
        except ValueError:      # emptied
            return _MISSING
    if isinstance(c, list):
        return c[k] if k < len(c) else _MISSING
    return getattr(c, k)        # a function's __defaults__ or __kwdefaults__


_MISSING = object()


# -- reading inputs and writing outputs back -----------------------------------------------
def _arg_getter(i):
    return lambda leaves: leaves[i]._data


def _data_getter(t):
    return lambda leaves: t._data


def _grad_getter(p):
    return lambda leaves: p._grad._data


def _item_getter(d, k):
    return lambda leaves: np.asarray(d[k])


def _item_key(d, k, Tensor):
    """What ``_item_getter(d, k)`` reads, as the write-backs name it."""
    v = d[k]
    if isinstance(v, Tensor):
        return ("data", id(v))
    return ("item", id(d), k) if type(v) is np.ndarray else None


def _write_arg(i, k):
    def write(out, leaves):
        t = leaves[i]
        if out[k] is not t._data:       # (else the code wrote into it)
            np.copyto(t._data, out[k])
        t._vc.v += 1
    write.k, write.key, write.target = k, ("arg", i), lambda leaves: leaves[i]._data
    return write


def _write_data(t, k):
    def write(out, leaves):
        if out[k] is not t._data:
            np.copyto(t._data, out[k])
        t._vc.v += 1
    write.k, write.key, write.target = k, ("data", id(t)), lambda leaves: t._data
    return write


def _arg_grad_getter(i):
    return lambda leaves: leaves[i]._grad._data


def _write_grad_data(p, k, arg=None):
    def write(out, leaves):
        g = (p if arg is None else leaves[arg])._grad
        if out[k] is not g._data:
            np.copyto(g._data, out[k])
        g._vc.v += 1

    def target(leaves):
        return (p if arg is None else leaves[arg])._grad._data
    write.k, write.key, write.target = k, ("grad", id(p)) if arg is None else ("arggrad", arg), \
        target
    return write


def _write_grad_none(p, arg=None):
    def write(out, leaves):
        (p if arg is None else leaves[arg])._grad = None
    return write


def _write_grad_new(p, k, arg=None):

    def write(out, leaves):
        (p if arg is None else leaves[arg])._grad = Tensor._plain(out[k])
    return write


def _write_grad_const(p, value, arg=None):

    def write(out, leaves):
        (p if arg is None else leaves[arg])._grad = Tensor._plain(value.copy())
    return write


def _write_item(slot, k):
    d, key, original = slot.owner, slot.key, slot.original

    if type(original) is np.ndarray:
        def write(out, leaves):
            cur = d.get(key)
            if cur is out[k]:       # the code wrote into it
                return
            if type(cur) is np.ndarray and cur.shape == out[k].shape:
                np.copyto(cur, out[k])
            else:
                d[key] = out[k] if out[k].flags.writeable else out[k].copy()
        write.k, write.key, write.target = k, ("item", id(d), key), lambda leaves: d.get(key)
    elif type(original) in (int, float):
        kind = type(original)

        def write(out, leaves):
            d[key] = kind(out[k])
    else:
        def write(out, leaves):
            d[key] = out[k]
    return write


class _Store:
    """``d[key] = `` the stored tensor (or tuple or list of them, ``tree``): per tensor,
    the graph's output at a position, or a tensor the capture made from constants. The
    tensors it makes are noted by output position (``made``), so that a result that is
    the stored tensor is that same object, as in eager."""
    __slots__ = ("d", "key", "parts", "tree")

    def __init__(self, d, key, parts, tree):
        self.d, self.key, self.parts, self.tree = d, key, parts, tree

    def __call__(self, out, made):
        tensors = []
        for k in self.parts:
            if type(k) is int:
                t = made.get(k)
                if t is None:
                    t = made[k] = Tensor._plain(out[k])
                k = t
            tensors.append(k)
        self.d[self.key] = tensors[0] if self.tree.kind == "leaf" else \
            unflatten(self.tree, tensors)



def explain(fn: Any) -> Any:
    """``torch._dynamo.explain(fn)(*args)``: ``fn`` captured on these arguments at once
    (no eager first call), run once, and the ``Explanation`` returned: the graphs, the
    graph breaks and their reasons."""
    def run(*args: Any, **kwargs: Any) -> Explanation:
        compiled = CompiledFunction(fn)
        compiled._calls = 1
        compiled(*args, **kwargs)
        return compiled.explain()
    return run


# -- the front door -------------------------------------------------------------------------
def _backend(backend):
    if callable(backend) and not isinstance(backend, str):
        raise InvalidBackend("tg.compile takes backend='numpy' or 'jax' (a callable backend "
                             "is a torch._dynamo graph compiler, which tracegrad does not run)")
    if backend in ("inductor", "eager", "aot_eager"):
        return "numpy"      # torch's names for its own compilers: the NumPy backend here
    if backend not in ("numpy", "jax"):
        raise InvalidBackend(f"Invalid backend: {backend!r}, see "
                             f"`tracegrad.compile` for available backends ('numpy', 'jax')")
    return backend


def compile(model: Any = None, *, fullgraph: bool = False, dynamic: bool | None = None,
            backend: Any = "numpy", mode: str | None = None, options: dict | None = None,
            disable: bool = False) -> Any:
    """``torch.compile``: ``tg.compile(module)``, ``tg.compile(fn)``, ``@tg.compile``,
    ``@tg.compile(fullgraph=True)``.

    Args:
        model: a function or an ``nn.Module`` (leave it out for a decorator).
        fullgraph: raise a ``TraceError`` naming the line at a graph break, instead of
            running that call eagerly.
        dynamic: accepted; shapes are always specialised (a new shape captures again).
        backend: ``"numpy"`` (generated NumPy code; ``"inductor"``, torch's default,
            ``"eager"`` and ``"aot_eager"`` mean it too) or ``"jax"`` (one XLA executable).
        mode: accepted (``"default"``, ``"reduce-overhead"``, ``"max-autotune"``);
            changes nothing.
        options: accepted, ignored.
        disable: return the function (module) itself, uncompiled.

    Returns:
        A ``CompiledFunction`` (an ``OptimizedModule`` for a module), or a decorator.
    """
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    _backend(backend)
    if disable:
        return model
    Module = _classes()[0]
    if isinstance(model, Module):
        from .module import OptimizedModule
        compiled = CompiledFunction(model.__call__, fullgraph, dynamic, backend, mode, options)
        compiled._explain.name = type(model).__name__
        return OptimizedModule(model, compiled)
    if not callable(model):
        raise RuntimeError("torch.compile() argument must be callable")
    return CompiledFunction(model, fullgraph, dynamic, backend, mode, options)
