"""Capturing one call of an eager function as a graph (``tg.compile``).

The function runs once on tensors whose values are tracers of one functional ``Trace``
(tracing on concrete values, as ``tg.jit`` does): every tensor it can reach from outside
(its tensor arguments, module parameters and buffers, ``.grad``s, the optimizers'
state arrays and step counts) has its ``_data`` replaced by an input tracer for the
call. The eager code then runs unchanged, in its NumPy form, on those tracers:

- an operation (``dispatch.call``) applies its NumPy function to the operands' values
  (tracers), recording nodes; the result is a tensor whose value is the result tracer,
  requiring grad as in eager (grad mode on and an operand requiring grad);
- an in-place operation writes the tracer in place (NumPy's semantics: its views and
  aliases, ``p.data`` and ``p.detach()``, see the change);
- the optimizers, BatchNorm's running statistics and ``zero_grad`` are NumPy code on
  ``_data``: on tracers, they record;
- ``loss.backward()`` applies the adjoint pass to the part of the graph recorded by
  operations that required grad, from the leaves' current nodes to the loss, and
  replays it into the same graph: the gradients are tracers, accumulated into
  ``.grad`` as eager accumulates them.

At the end, every reachable slot whose value changed (a tensor written in place, a new
``.grad``, an optimizer state entry) is an output of the graph, written back after each
compiled call. What cannot be captured raises ``GraphBreak``: the caller runs the call
eagerly instead.
"""
from __future__ import annotations

import numpy as np

from ...ir import PROJ, REGISTRY, Graph
from ...ir.source import user_src
from ...passes.adjoint import _pull
from ...tracer import Tracer, sync
from ...tracer.views import assigned
from .. import grad_mode
from ..tensor import Tensor
from .scalars import TracedInt, holds_traced_int

_NO_GRAD = "element {i} of tensors does not require grad and does not have a grad_fn"


class GraphBreak(Exception):
    """The capture cannot go on: ``reason``, at the user's ``src`` (file:line)."""

    def __init__(self, reason, src=None):
        self.reason, self.src = reason, src
        super().__init__(f"{reason}" + (f" (at {src})" if src else ""))


class Slot:
    """A place outside the function holding a value the capture reads or writes."""
    __slots__ = ("kind", "owner", "key", "original", "input", "node")

    def __init__(self, kind, owner, key, original):
        # kind "data": owner is a tensor, its _data; "grad": owner's _grad (a tensor or
        # None); "item": owner is a dict, owner[key]
        self.kind, self.owner, self.key, self.original = kind, owner, key, original
        self.input = None       # the input tracer standing for it, if lifted
        self.node = None        # that input's node

    def get(self):
        if self.kind == "data":
            return self.owner._data
        if self.kind == "grad":
            return self.owner._grad
        return self.owner.get(self.key, _MISSING)

    def set(self, value):
        if self.kind == "data":
            self.owner._data = value
        elif self.kind == "grad":
            self.owner._grad = value
        elif value is _MISSING:
            self.owner.pop(self.key, None)
        else:
            self.owner[self.key] = value


_MISSING = object()


class Capture:
    """The state of one capture: its trace, the slots lifted, which nodes were recorded
    by operations that require grad (``diff``), and the backward passes it ran."""

    def __init__(self, trace):
        self.trace = trace
        trace.keep_values()
        self.Tensor = Tensor
        self.slots: list[Slot] = []
        self.by_array: dict[int, Tracer] = {}     # id(ndarray) -> its input tracer
        self.keep: list = []                      # keeps those ids unique meanwhile
        self.lifted: dict[int, object] = {}       # id(tensor) -> tensor (data slot lifted)
        self.leaves: list = []                    # lifted tensors that require grad
        self.diff: set[int] = set()
        self.backwards = 0
        # trace nodes a backward without retain_graph went through: eager frees them, and a
        # later backward through them raises
        self.freed: set[int] = set()
        self.draws: list = []                     # (generator, n) per draw, in order
        self.histories: list = []                 # (argument, its history, requires_grad)
        self.written: set[int] = set()            # ids of the tensors written back
        self.created: set[int] = set()            # ids of the tensors made while capturing
        # inputs made while the function runs, in order: (getter, tensor or None, kind)
        self.late: list = []
        self.generators: dict = {}                # id -> (generator, state before)
        self.optimizers: set[int] = set()         # ids of the optimizers lifted

    # -- lifting ---------------------------------------------------------------------
    def lift_array(self, value):
        hit = self.by_array.get(id(value))
        if hit is None:
            hit = self.trace.new_input(value)
            self.by_array[id(value)] = hit
            self.keep.append(value)
        return hit

    def lift_tensor(self, t, argument=False):
        if id(t) in self.lifted:
            return
        history = t._tracer
        if history is not None:
            if not argument or type(history) is Tracer:
                raise GraphBreak("the function reads a tensor with an autograd history "
                                 "recorded outside it (a non-leaf tensor made before the call)")
            # an argument with a history (a compiled loss applied to a model's output):
            # a leaf that requires grad while capturing; the call's results hang from its
            # history through the compiled function's tape node
            self.histories.append((t, history, t._requires_grad))
            t._tracer, t._requires_grad = None, True
        data = t._data
        if type(data) is not np.ndarray:
            raise GraphBreak(f"a tensor's value is a {type(data).__name__}")
        slot = Slot("data", t, None, data)
        slot.input = self.lift_array(data)
        slot.node = slot.input._node
        self.slots.append(slot)
        self.lifted[id(t)] = t
        t._data = slot.input
        if t._requires_grad:
            self.leaves.append(t)

    def lift_grad(self, p):
        slot = Slot("grad", p, None, p._grad)
        self.slots.append(slot)
        if p._grad is not None:
            self.lift_tensor(p._grad)

    def lift_item(self, d, key):
        v = d[key]
        slot = Slot("item", d, key, v)
        Tensor = self.Tensor
        if isinstance(v, Tensor):
            self.lift_tensor(v)
        elif type(v) is np.ndarray:
            slot.input = self.lift_array(v)
            slot.node = slot.input._node
            d[key] = slot.input
        elif type(v) in (int, float):      # a step count: a weakly typed input (NEP 50)
            slot.input = self.trace.new_input(v)
            slot.node = slot.input._node
            d[key] = slot.input
        self.slots.append(slot)

    def made(self, t):
        """``t`` was made while capturing (a constant of the graph, not a value from
        outside)."""
        self.created.add(id(t))
        self.keep.append(t)

    def late_lift(self, t):
        """A tensor from outside the function that the walk before the capture did not
        reach (an attribute deeper than it looks): lifted when an operation first reads
        it, with its ``.grad``, so that it is an input (and an output) like the others."""
        n = len(self.trace.records)
        self.lift_tensor(t)
        if len(self.trace.records) > n:
            self.late.append((lambda leaves, t=t: t._data, t, "data"))
        if t._requires_grad:
            n = len(self.trace.records)
            self.lift_grad(t)
            if len(self.trace.records) > n:
                self.late.append((lambda leaves, t=t: t._grad._data, t, "grad"))

    def restore(self):
        """Every slot back to the value it had before the capture."""
        for slot in reversed(self.slots):
            slot.set(slot.original)
        for t, history, rg in self.histories:
            t._tracer, t._requires_grad = history, rg
        self.histories = []

    def optimizer_step(self, opt):
        """``opt.step()`` while capturing: an optimizer the walk before the capture did
        not reach (held in ``__slots__``, say) has its state outside the graph, updated
        in place by NumPy and counted in Python: a graph break, before it changes any."""
        if id(opt) not in self.optimizers:
            raise GraphBreak(f"{type(opt).__name__}.step() of an optimizer tg.compile's walk "
                             "did not reach (its state would be changed outside the graph)",
                             user_src())

    # -- recording ---------------------------------------------------------------------
    def refuse(self, reason):
        """A graph break for ``reason``, at the user's line (for the layers below this
        package, which cannot import ``GraphBreak``)."""
        raise GraphBreak(reason, user_src())

    def graph_break(self, what):
        if what.startswith(("torch.autograd.grad", "Tensor.register_hook",
                            "Tensor.retain_grad")):
            raise GraphBreak(f"{what} is not captured", user_src())
        raise GraphBreak(f"{what} needs the tensor's value, known only when the graph runs",
                         user_src())

    def _requires(self, args):
        Tensor = self.Tensor
        for a in args:
            if isinstance(a, Tensor):
                if a._requires_grad or a._tracer is not None:
                    return True
            elif isinstance(a, (list, tuple)):
                if self._requires(a):
                    return True
        return False

    def _value(self, a, rg, Tensor):
        if isinstance(a, Tensor):
            tr = a._tracer
            if tr is not None:
                if type(tr) is not Tracer:
                    raise GraphBreak("an operation reads a tensor with an autograd history "
                                     "recorded outside the compiled function", user_src())
                return tr       # a custom Function's backward traced by the adjoint pass
            v = a._data
            if type(v) is np.ndarray and id(a) not in self.created and \
                    id(a) not in self.lifted:
                self.late_lift(a)
                v = a._data
            if rg and not a._requires_grad and type(v) is Tracer:
                # a detached value (x.detach(), x.data) of a node that carries a gradient:
                # the gradient must not flow through it
                sync(v)
                if v._node in self.diff:
                    from ...ir import apply
                    v = apply("stop_gradient", v)
            return v
        if isinstance(a, (list, tuple)) and any(isinstance(e, Tensor) for e in a):
            return type(a)(self._value(e, rg, Tensor) for e in a)
        return a

    def _wrap(self, out, rg):
        if isinstance(out, tuple):
            return tuple(self._wrap(o, rg) for o in out)
        Tensor = self.Tensor
        if type(out) is Tracer:
            t = Tensor._plain(out)
            t._requires_grad = rg and out.dtype.kind in "fc"
            return t
        return Tensor._plain(np.asarray(out))

    def call(self, fn, args, kwargs):
        rg = grad_mode.is_grad_enabled() and self._requires(args)
        Tensor = self.Tensor
        values = [self._value(a, rg, Tensor) for a in args]
        start = len(self.trace.records)
        out = fn(*values, **kwargs)
        if rg:
            self.diff.update(range(start, len(self.trace.records)))
        return self._wrap(out, rg)

    def inplace(self, t, fn, others, cast):
        """``t``'s value replaced by ``fn(t, *others)``, in place: the tracer itself takes
        the new node (its NumPy views and aliases see it)."""
        Tensor = self.Tensor
        rg = grad_mode.is_grad_enabled() and self._requires((t,) + others)
        if type(t._data) is np.ndarray and id(t) not in self.created and \
                id(t) not in self.lifted:
            self.late_lift(t)
        x = t._data
        values = [self._value(o, rg, Tensor) for o in others]
        start = len(self.trace.records)
        new = fn(self._value(t, rg, Tensor), *values)
        if type(x) is Tracer:
            if type(new) is not Tracer:
                new = self.trace.const(np.asarray(new))
            if new.dtype != x.dtype:
                new = new.astype(x.dtype)
            if tuple(new.shape) != tuple(x.shape):
                new = np.broadcast_to(new, x.shape)
            x._node, x._value = new._node, new._value
            assigned(x)
        elif type(new) is Tracer:      # a tensor the function made: it takes the tracer
            t._data = new.astype(x.dtype) if new.dtype != x.dtype else new
        else:
            np.copyto(x, new, casting="unsafe")
        if rg:
            self.diff.update(range(start, len(self.trace.records)))
            t._requires_grad = True
        return t

    def function(self, cls, args):
        """A custom ``autograd.Function``: its forward recorded, its output a
        ``custom_vjp_call`` node whose rule is the user's backward (as inside a
        functional transform), so that the adjoint pass runs that backward on tracers."""
        from ..autograd.function import _apply_traced
        Tensor = self.Tensor
        rg = grad_mode.is_grad_enabled() and self._requires(args)
        sym = tuple(Tensor._symbolic(a._data) if isinstance(a, Tensor) and a._tracer is None
                    and type(a._data) is Tracer and a._requires_grad else a for a in args)
        start = len(self.trace.records)
        out = _apply_traced(cls, sym)
        if rg:
            self.diff.update(range(start, len(self.trace.records)))

        def back(o):
            if isinstance(o, Tensor) and o._tracer is not None and type(o._tracer) is Tracer:
                t = Tensor._plain(o._tracer)
                t._requires_grad = rg and o._tracer.dtype.kind in "fc"
                return t
            return o
        return tuple(back(o) for o in out) if isinstance(out, tuple) else back(out)

    def item(self, t):
        """``t.item()`` while capturing: a ``TracedInt`` for a one-element integer tensor
        whose value is traced (``scalars.py``); a graph break for anything else (a float
        or bool feeds Python code)."""
        const = self._constant(t)
        if const is not None:
            return const.item()
        data = self._integers(t)
        if data is None or data.size != 1:
            self.graph_break("Tensor.item()")
        return self._number(data.reshape(()) if data.shape != () else data)

    # a tolist() of more integers than this breaks the graph (one node per number)
    TOLIST_LIMIT = 64

    def tolist(self, t):
        """``t.tolist()`` while capturing: nested lists of ``TracedInt`` for an integer
        tensor of at most ``TOLIST_LIMIT`` elements (the BiLSTM-CRF tutorial's
        ``argmax`` reads ``idx.view(-1).data.tolist()[0]``); a graph break otherwise."""
        const = self._constant(t)
        if const is not None:
            return const.tolist()
        data = self._integers(t)
        if data is None or data.ndim == 0 or data.size > self.TOLIST_LIMIT:
            self.graph_break("Tensor.tolist()")

        def nest(x):
            return self._number(x) if x.ndim == 0 else [nest(x[i]) for i in range(x.shape[0])]
        return nest(data)

    def _number(self, x):
        """The ``TracedInt`` standing for the 0-d integer tracer ``x``."""
        return TracedInt(self, x, int(np.asarray(x._value)))

    def _constant(self, t):
        """``t``'s value if ``t`` was made by the function from constants (the same on
        every call, like any constant of the graph); else None."""
        data = self._value(t, False, self.Tensor)
        if type(data) is np.ndarray and id(t) in self.created:
            return data
        return None

    def _integers(self, t):
        """``t``'s traced value as a tracer of its own (an in-place change of ``t`` later
        must not reach a number read from it) when ``t`` holds integers; else None."""
        data = self._value(t, False, self.Tensor)
        if type(data) is not Tracer or data.dtype.kind not in "iu":
            return None
        sync(data)
        return Tracer(data._trace, data._node, tuple(data.shape), data.dtype, data._value)

    @staticmethod
    def reads_item(key):
        """Whether the index ``key`` holds a number read by ``item()`` (a ``TracedInt``)."""
        return holds_traced_int(key)

    def getitem(self, t, key):
        """``t[key]`` where ``key`` holds ``TracedInt``s: the selection PyTorch makes
        with those ints (a view, for basic indexing), with their tracers as the index's
        operands, so that each compiled call selects by that call's values."""
        from ...ir import apply
        from ...tracer.indexing import normalize
        from ...tracer.views import mark_view
        items = key if isinstance(key, tuple) else (key,)
        plain = (int, slice, type(None), type(Ellipsis), TracedInt)
        if not all(isinstance(k, plain) and not isinstance(k, bool) for k in items):
            self.graph_break("indexing with a number read by Tensor.item() beside a tensor "
                             "or list index")
        if not any(k is Ellipsis for k in items):
            items = items + (Ellipsis,)     # PyTorch's x[0] of a vector is a 0-d view
        traced = tuple(k.tracer if type(k) is TracedInt else k for k in items)
        concrete = tuple(k.value if type(k) is TracedInt else k for k in items)

        def select(x):
            index, operands = normalize(traced)
            where = normalize(concrete)[0].to_numpy()
            result = apply("getitem", x, *operands, index=index)
            return mark_view(
                result, x, lambda base: apply("getitem", base, *operands, index=index),
                lambda base, view: apply("index_update", base, view, *operands, index=index,
                                         mode="set"),
                lambda arr: arr[where])
        return self.call(select, (t,), {})

    def setitem(self, t, key, value):
        """``t[key] = value``: an in-place update of the tracer. A boolean mask of a
        traced value selects with ``where`` (``x[mask]`` itself would be a shape that
        depends on the values: a guard on every element)."""
        from ..indexing import index_update
        Tensor = self.Tensor

        def raw(k):
            if type(k) is TracedInt:
                return k.tracer
            if isinstance(k, Tensor):
                return k._tracer if type(k._tracer) is Tracer else k._data
            if isinstance(k, tuple):
                return tuple(raw(e) for e in k)
            if isinstance(k, list) and any(isinstance(e, Tensor) for e in k):
                return [raw(e) for e in k]
            return k
        key = raw(key)
        if not isinstance(value, Tensor):
            value = Tensor._plain(np.asarray(value, dtype=t.dtype))
        if isinstance(key, Tracer) and key.dtype == np.bool_ and \
                tuple(key.shape) == tuple(t.shape)[:key.ndim] and value.ndim == 0:
            mask = key.reshape(tuple(key.shape) + (1,) * (t.ndim - key.ndim))
            return self.inplace(t, lambda x, v: np.where(mask, v, x), (value,), True)
        return self.inplace(t, lambda x, v: index_update(x, key, v), (value,), True)

    def draw(self, gen, n):
        """``gen.random(n)``'s words as an input of the graph: each compiled call draws
        them from the generator first, in the order the capture drew them, so that the
        streams (and the dropout masks made from them) are eager's."""
        if id(gen) not in self.generators:
            self.generators[id(gen)] = (gen, gen.get_state())
        t = self.trace.new_input(gen.words(n))
        self.draws.append((gen, n))
        self.late.append((lambda leaves: gen.words(n), None, "draw"))
        return t

    def drawn(self, gen, make):
        """``make()``, numbers drawn from ``gen`` by eager Python code (PyTorch's normals
        of a tensor under 16 elements, one Box-Muller pair at a time with a number kept
        for the next draw), as an input of the graph: each compiled call runs ``make``
        again at this point of its draws, so the numbers and the generator's state are
        eager's."""
        if id(gen) not in self.generators:
            self.generators[id(gen)] = (gen, gen.get_state())
        t = self.trace.new_input(make())
        self.draws.append((gen, make))
        self.late.append((lambda leaves: make(), None, "draw"))
        return t

    # -- backward ----------------------------------------------------------------------
    def subgraph(self, roots, targets):
        """The part of the trace the gradient of ``roots`` flows through, as a graph: the
        nodes recorded by operations that required grad, back from the roots, with the
        rest (and the current nodes of ``targets``) as its inputs. Returns the graph,
        trace node -> graph node, the target nodes among its inputs, and node -> the
        targets there."""
        records = self.trace.records
        wrt_of = {}
        for t in targets:
            v = t._data
            if type(v) is not Tracer:
                continue
            sync(v)
            wrt_of.setdefault(v._node, []).append(t)
        root_nodes = []
        for r in roots:
            sync(r._data)
            root_nodes.append(r._data._node)
        inside, boundary, todo = set(), set(), list(root_nodes)
        while todo:
            n = todo.pop()
            if n in inside or n in boundary:
                continue
            if n in self.diff and n not in wrt_of:
                inside.add(n)
                todo.extend(records[n][1])
            else:
                boundary.add(n)
        # every output of a multi-output node inside, used or not: the backward's rules read
        # them (lstm_cell's activations), and a missing one would be computed again there
        multi = [n for n in inside if getattr(REGISTRY.get(records[n][0]), "multi", False)]
        for n in multi:
            k = n + 1
            while k < len(records) and records[k][0] == PROJ and records[k][1][0] == n:
                inside.add(k)
                k += 1
        g = Graph()
        local = {}
        for n in sorted(inside | boundary):
            op, args, params, shape, dtype, src = records[n]
            if n in boundary:
                local[n] = g.add_input(shape, dtype, src=src)
            else:
                local[n] = g.add_node(op, tuple(local[a] for a in args), params, shape=shape,
                                      dtype=dtype, src=src)
        g.outputs = [local[n] for n in root_nodes]
        wrt = [n for n in wrt_of if n in boundary and records[n][4].kind in "fc"]
        return g, local, wrt, wrt_of

    def backward(self, roots, grads, inputs, create_graph, retain_graph=True):
        """``loss.backward()`` while capturing (``engine.backward``); ``retain_graph``:
        whether eager would keep the graph (False: the nodes walked are freed)."""
        if create_graph:
            raise GraphBreak("backward(create_graph=True)", user_src())
        Tensor = self.Tensor
        for i, r in enumerate(roots):
            if not r.requires_grad or type(r._data) is not Tracer:
                raise RuntimeError(_NO_GRAD.format(i=i))
        targets = inputs if inputs is not None else self.leaves
        if any(t is h for t in targets for h, _, _ in self.histories):
            raise GraphBreak("backward inside the function through an argument with an "
                             "autograd history made outside it", user_src())
        if any(t._hooks for t in targets):
            raise GraphBreak("a parameter has a gradient hook (register_hook): hooks are not "
                             "captured", user_src())
        trace = self.trace
        records, values = trace.records, trace.values
        if not retain_graph:    # eager frees every node this backward walks
            self.freed.update(self.history(roots))
        g, local, wrt, wrt_of = self.subgraph(roots, targets)
        if not wrt:
            return
        # the adjoint sweep right in the capture's trace, on its tracers (they hold their
        # values: a rule or a custom Function's backward may branch on them)
        env = {}
        for n, m in local.items():
            op, _, params, shape, dtype, _ = records[n]
            if op in REGISTRY and REGISTRY[op].multi:
                k = REGISTRY[op].n_outputs(params)
                env[m] = tuple(Tracer(trace, n + 1 + i, records[n + 1 + i][3],
                                      records[n + 1 + i][4], values[n + 1 + i])
                               for i in range(k))
            else:
                env[m] = Tracer(trace, n, shape, dtype, values[n])
        seeds = []
        for r, gr in zip(roots, grads):
            if gr is None:
                if r._data.size != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                seeds.append(trace.const(np.ones(r.shape, r.dtype)))
            else:
                v = gr._data if isinstance(gr, Tensor) else np.asarray(gr)
                seeds.append(v if type(v) is Tracer else trace.const(np.asarray(v)))
        sweep = _pull(g, env, range(len(roots)), seeds, wrt=[local[n] for n in wrt])
        cts = [sweep.final.get(local[n]) for n in wrt]
        self.backwards += 1
        with grad_mode.no_grad():
            for n, ct in zip(wrt, cts):
                if ct is None:
                    continue
                for t in wrt_of[n]:
                    self._accumulate(t, ct)

    def history(self, roots):
        """The trace nodes recorded by operations that required grad which the tensors
        ``roots`` depend on (what eager's backward from them walks)."""
        records, diff = self.trace.records, self.diff
        todo = []
        for r in roots:
            sync(r._data)
            todo.append(r._data._node)
        seen = set()
        while todo:
            n = todo.pop()
            if n in seen or n not in diff:
                continue
            seen.add(n)
            todo.extend(records[n][1])
        return seen

    def raises_again(self, r):
        """Whether eager's backward from the returned tensor ``r``, after the function
        returned, raises PyTorch's "Trying to backward through the graph a second time"
        (a value its backward reads was saved by a node, or is the output of a node, that
        a backward inside the function freed), as the engine's ``_check_saved`` finds."""
        from ...passes.adjoint import backward_graph
        history = self.history([r])
        if not history & self.freed:
            return False
        # (its inputs: the leaves' values it read, which the function may have updated
        # since, and the values that need no gradient)
        g, local, _, _ = self.subgraph([r], ())
        wrt = [m for m in g.inputs if np.dtype(g.node(m).dtype).kind in "fc"]
        if not wrt:
            return False
        bw = backward_graph(g, wrt)
        inv = {m: n for n, m in local.items()}
        users: dict = {}
        for m in bw.graph:
            for a in bw.graph.args(m):
                users.setdefault(a, set()).add(m)
        own = r._data._node     # (a backward restores the root's own value)
        for k, m in enumerate(bw.graph.inputs[:len(bw.saved)]):
            value = inv.get(bw.saved[k])
            if value is not None and value != own and value in self.freed:
                return True
            for u in users.get(m, ()):
                f = bw.origin.get(u)
                if f is not None and inv.get(f) in self.freed:
                    return True
        return False

    def _accumulate(self, t, ct):
        if ct.dtype != t.dtype:
            ct = ct.astype(t.dtype)
        if t._grad is None:
            t._grad = self.Tensor._plain(ct)
        else:
            g = t._grad
            if type(g._data) is Tracer:
                g._data += ct
            else:
                g._data = g._data + ct
