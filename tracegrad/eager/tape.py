"""The eager tape: operations on tensors that require grad, recorded as a ``tg.Graph``.

The tape is a ``Trace`` like the one the functional transforms use, so an eager
operation goes through the same NumPy handlers and primitives and becomes a node
of the same kind of graph. Unlike a transform's trace it is always concrete: a
node's value is computed when the node is recorded.

Every node is a ``GradFn`` object (a tensor's ``grad_fn``) that holds the node's
IR record (an ``ir`` ``Node``: op, operands, params, shape, dtype, the user's line),
its value and its parents' ``GradFn`` objects. The graph is nothing but those
references: there is no registry of nodes, so when the last tensor whose history
reaches a node is gone, its ``GradFn`` is collected, as PyTorch frees its autograd
graph, and tensors may be used from any thread. ``walk`` is the one traversal of it
(what a backward runs over, ``recorded_graph``, ``autograd.functional``).

The ``Tape`` itself (the current user line, the shared scalar constants) is per
thread: ``TAPE`` is one object, so every tape tracer belongs to the same trace, whose
attributes each thread sees its own of.
"""
from __future__ import annotations

import itertools
import threading
import weakref

import numpy as np

from ..errors import TraceError
from ..ir import PROJ, REGISTRY, Graph
from ..ir.graph import Node as IRNode
from ..ir.graph import dtype_name
from ..ir.registry import default_torch_name
from ..tracer import Trace, Tracer, sync, user_src, where
from ..tracer.core import _as_const
from ..tracer.numpy_api import DIRECT, handle_ufunc


class HookList(list):
    """The hooks on one tensor's gradient. ``at``: when the first was registered (one
    count for all tensors): PyTorch runs the hooks of a node's several outputs tensor by
    tensor in that order (each tensor's hooks are one pre-hook of the node, added by its
    first ``register_hook``), each tensor's in registration order."""
    __slots__ = ("at",)

    def __init__(self):
        super().__init__()
        self.at = next(_HOOK_COUNT)


_HOOK_COUNT = itertools.count()


class Version:
    """An in-place change counter, shared by a tensor, its views and its detach()."""
    __slots__ = ("v",)

    def __init__(self):
        self.v = 0


# Node ids: unique in the process (a tensor may move to another thread) and increasing in
# recording order, so a node's parents have smaller ids and sorted ids are a topological
# order. ``next`` on a ``count`` is one atomic step.
_IDS = itertools.count()


def modified_error(dtype, shape, grad_fn_name, now, expected) -> RuntimeError:
    """PyTorch's error for a saved variable changed in place since it was saved: a tensor of
    ``dtype`` and ``shape`` (``grad_fn_name``: the node it is output 0 of, or None for a
    leaf), now at version ``now`` where its reader saw ``expected``."""
    from .promotion import type_name
    what = f"[torch.{type_name(dtype)} {list(shape)}]"
    if grad_fn_name is not None:
        what += f", which is output 0 of {grad_fn_name},"
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: {what} is at version {now}; expected version {expected} "
        "instead. Hint: enable anomaly detection to find the operation that failed to "
        "compute its gradient, with torch.autograd.set_detect_anomaly(True).")


class GradFn:
    """The ``grad_fn`` of a tensor: one node of the tape (PyTorch's autograd ``Node``)."""
    __slots__ = ("_id", "_ir", "_parents", "_pver", "_name", "_inputs", "_value", "_counter",
                 "_saved_version", "_freed", "_hooks", "_retain", "_metadata", "_rule",
                 "__weakref__")

    def __init__(self, ir, parents, value, counter):
        self._id = ir.id
        self._ir = ir               # the IR record: op, operand ids, params, shape, dtype, src
        self._parents = parents
        # the versions of the parents' values now, when this node's rule may save them
        # (PyTorch's saved variables keep theirs): a backward checks them (engine)
        n = len(parents)
        if n == 2:
            self._pver = (parents[0]._counter.v, parents[1]._counter.v)
        elif n == 1:
            self._pver = (parents[0]._counter.v,)
        elif not n:
            self._pver = ()
        else:
            self._pver = tuple(p._counter.v for p in parents)
        self._name = None
        self._inputs = None          # what next_functions shows, when not the parents
        self._value = value
        self._counter = counter
        self._saved_version = counter.v
        self._freed = False
        self._hooks = None           # hooks on this node's output gradient
        self._retain = None          # weakref to a tensor that retain_grad()-ed this node
        self._metadata = None        # made when first read
        self._rule = None            # a custom Function's output: its apply's rule

    def copied(self, value, counter) -> GradFn:
        """This node again, under an id of its own, for another tensor (``value``, version
        ``counter``): the same record, parents, name and rule (a compiled call gives each
        of its results a copy of one freed node)."""
        h = GradFn.__new__(GradFn)
        h._id = next(_IDS)
        h._ir, h._parents, h._pver = self._ir, self._parents, self._pver
        h._name, h._inputs, h._rule = self._name, self._inputs, self._rule
        h._value, h._counter, h._saved_version = value, counter, counter.v
        h._freed, h._hooks, h._retain, h._metadata = self._freed, None, None, None
        return h

    @property
    def metadata(self) -> dict:
        """A dict of the user's, kept with the node (PyTorch's ``grad_fn.metadata``)."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def name(self) -> str:
        if self._name is None:
            self._name = backward_name(self._ir.op)
        return self._name

    @property
    def next_functions(self):
        return tuple((p if p is not None and p.has_grad else None, 0) for p in self._edges())

    def _edges(self):
        """PyTorch's edges of this node (``next_functions``), None for an operand shown
        without one: the parents, or the operands of the operation when it was recorded
        as several nodes."""
        return self._parents if self._inputs is None else self._inputs

    @property
    def has_grad(self):
        return True

    @property
    def src(self):
        """The user's ``file.py:LINE`` that recorded this node."""
        return self._ir.src

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"


class AccumulateGrad(GradFn):
    """The node of a leaf tensor that requires grad (where its gradient is accumulated)."""
    __slots__ = ("_tensor",)

    def name(self):
        return "torch::autograd::AccumulateGrad"

    @property
    def variable(self):
        return self._tensor()

    def __repr__(self):
        return f"<AccumulateGrad object at {id(self):#x}>"


class Saved(GradFn):
    """The node of a tensor that does not require grad, or of a constant."""
    __slots__ = ()

    @property
    def has_grad(self):
        return False


class RuleRef:
    """A custom ``Function``'s rule as the ``rule`` param of its tape nodes: a weak
    reference (the nodes' ``GradFn`` objects hold the rule). A strong one would make a
    cycle (the rule holds the outputs, whose nodes hold their params), which only the
    garbage collector frees, where the tape frees a step's nodes as it goes. Attributes
    are the rule's."""
    __slots__ = ("_ref",)

    def __init__(self, rule):
        self._ref = weakref.ref(rule)

    def __call__(self):
        return self._ref()

    def __getattr__(self, name):
        rule = self._ref()
        if rule is None:
            raise RuntimeError("this custom Function's backward was freed with its outputs")
        return getattr(rule, name)

    def __repr__(self):
        return repr(self._ref())


def resolved(params):
    """``params`` with a ``RuleRef`` replaced by its rule (a standalone graph holds it)."""
    rule = params.get("rule")
    if type(rule) is RuleRef and rule() is not None:
        return dict(params, rule=rule())
    return params


class EagerTracer(Tracer):
    __slots__ = ("_handle",)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # ``handle_ufunc``'s fast path, which takes exactly ``Tracer``: a plain call of a
        # ufunc that is one primitive, on tape tracers, Python numbers and NumPy arrays, is
        # that primitive on the tape (what the general path comes to for these)
        if not kwargs and method == "__call__":
            prim = DIRECT.get(ufunc)
            if prim is not None and TAPE.active:
                for x in inputs:
                    t = type(x)
                    if t is EagerTracer:
                        if x._trace is not TAPE or x._weak is not None:
                            break
                    elif t is not float and t is not int and not (
                            t is np.ndarray and x.dtype != object):
                        break
                else:
                    return TAPE.add(prim, inputs, {})
        return handle_ufunc(ufunc, method, inputs, kwargs)


def backward_name(op: str) -> str:
    """PyTorch's name for the backward of primitive ``op`` (its ``torch_name``):
    ``exp`` -> ``ExpBackward0``."""
    prim = REGISTRY.get(op)     # None for inputs and constants
    return prim.torch_name if prim is not None else default_torch_name(op)


_NUMBER_DTYPES: dict = {}


class Tape(threading.local, Trace):
    """The eager trace. Its level is below every transform's, so a transform tracing
    code that touches eager tensors treats them as values from outside.

    Its attributes are per thread (``threading.local``: ``__init__`` runs once in each
    thread that uses it); the nodes it records are the ``GradFn`` objects, kept by the
    tensors, not by the tape."""

    def __init__(self):
        super().__init__(level=-1)
        self.src = None         # the user's line of the tensor operation running now
        self._consts: dict = {}

    @property
    def graph(self) -> Graph:
        raise TypeError("the eager tape keeps no graph of its own: its nodes are the tensors' "
                        "grad_fn objects (tg.recorded_graph(*tensors) gives their history as "
                        "a graph)")

    def reaches_input(self, tracer, through_stop_gradient=True) -> bool:
        """Whether an input node (a leaf, a saved value) is in ``tracer``'s history, other
        than through ``stop_gradient`` unless ``through_stop_gradient``."""
        w = walk([tracer._handle])
        found = w.nodes if through_stop_gradient else w.reached(
            [tracer._node], STOP_GRADIENT, edges=False)
        return any(w.nodes[n]._ir.op == "input" for n in found)

    def _src(self):
        return self.src if self.src is not None else user_src()

    def input(self, value, counter, tensor=None) -> EagerTracer:
        """A node for a tensor's current value: an ``AccumulateGrad`` leaf when ``tensor``
        (which requires grad) is given, else a value that gets no gradient."""
        src = self.src
        ir = IRNode(next(_IDS), "input", (), value.shape, dtype_name(value.dtype), {},
                    src if src is not None else user_src())
        if tensor is None:
            handle = Saved(ir, (), value, counter)
        else:
            handle = AccumulateGrad(ir, (), value, counter)
            handle._tensor = weakref.ref(tensor)
        return self._tracer(handle, value)

    def const(self, value, snapshot=True) -> EagerTracer:
        value = np.array(value) if snapshot else np.asarray(value)
        key = None
        if value.ndim == 0:
            # scalars (x * 2.0) share one node per value: no node to make and remove per use
            # (told apart by their bits: -0.0 == 0.0, yet x * -0.0 is -0.0 where x > 0)
            key = (value.dtype.str, value.tobytes())
            hit = self._consts.get(key)
            if hit is not None:
                return hit
        ir = IRNode(next(_IDS), "const", (), value.shape, dtype_name(value.dtype),
                    {"value": value}, self._src())
        t = self._tracer(Saved(ir, (), value, Version()), value)
        if key is not None:
            if len(self._consts) >= 1024:
                self._consts.clear()
            self._consts[key] = t
        return t

    def _tracer(self, handle, value):
        t = EagerTracer(self, handle._id, value.shape, value.dtype, value)
        t._handle = handle
        return t

    def add2(self, prim, a, b, src) -> EagerTracer:
        """``add(prim, (a, b), {})`` for two tape tracers that are no views, at the user's
        line ``src``: an eager binary operation's common case, in one step."""
        try:
            value = prim.impl(a._value, b._value)
            if type(value) is not np.ndarray:
                value = np.asarray(value)
        except (ValueError, TypeError, IndexError, ArithmeticError) as e:
            raise self._failed(prim, (a._value, b._value), e, src) from None
        return self._made(prim, (a._node, b._node), {}, value, (a._handle, b._handle), src)

    def add1(self, prim, a, params, src) -> EagerTracer:
        """``add(prim, (a,), params)`` for a tape tracer that is no view, at ``src``."""
        try:
            value = prim.impl(a._value, **params)
            if type(value) is not np.ndarray:
                value = np.asarray(value)
        except (ValueError, TypeError, IndexError, ArithmeticError) as e:
            raise self._failed(prim, (a._value,), e, src) from None
        return self._made(prim, (a._node,), params, value, (a._handle,), src)

    def _made(self, prim, ids, params, value, parents, src) -> EagerTracer:
        """The node of ``prim`` applied to the nodes ``ids`` (their ``GradFn`` objects
        ``parents``), whose value was computed: the tracer that stands for it."""
        n = next(_IDS)
        t = EagerTracer(self, n, value.shape, value.dtype, value)
        t._handle = GradFn(IRNode(n, prim.name, ids, value.shape, dtype_name(value.dtype),
                                  params, src), parents, value, Version())
        return t

    def _failed(self, prim, vals, error, src):
        shapes = ", ".join(f"{list(np.shape(v))}" for v in vals)
        return RuntimeError(f"{prim.name} failed on tensors of shape {shapes}: {error}"
                            f"{where(src)}")

    def add(self, prim, args, params) -> EagerTracer:
        if len(args) == 2 and type(args[0]) is EagerTracer and type(args[1]) is EagerTracer \
                and args[0]._trace is self and args[1]._trace is self \
                and args[0]._view is None and args[1]._view is None:
            # the common case: two tape tracers (the loop below, unrolled)
            a, b = args
            if not params and not prim.multi:
                src = self.src
                return self.add2(prim, a, b, src if src is not None else user_src())
            ids, vals, parents = (a._node, b._node), (a._value, b._value), (a._handle, b._handle)
        else:
            ids, vals, parents = self._operands(args)
        src = self.src
        if src is None:
            src = user_src()
        if prim.multi:
            return self._add_multi(prim, tuple(ids), vals, params, tuple(parents), src)
        try:
            value = prim.impl(*vals, **params) if params else prim.impl(*vals)
            if type(value) is not np.ndarray:
                value = np.asarray(value)
        except (ValueError, TypeError, IndexError, ArithmeticError) as e:
            raise self._failed(prim, vals, e, src) from None
        return self._made(prim, tuple(ids), params, value, tuple(parents), src)

    def _add_multi(self, prim, ids, vals, params, parents, src) -> tuple:
        """A multi-output primitive (``eigh``, ``svd``, ``slogdet``): its head node, whose
        ``GradFn`` holds the tuple of values, then one ``proj`` node per output, as the
        functional trace records it (``Trace._add_multi``)."""
        try:
            values = tuple(np.asarray(v) for v in prim.impl(*vals, **params))
        except (ValueError, TypeError, IndexError, ArithmeticError) as e:
            raise self._failed(prim, vals, e, src) from None
        n = next(_IDS)
        head = GradFn(IRNode(n, prim.name, ids, (), dtype_name(values[0].dtype), params, src),
                      parents, values, Version())
        outs = []
        for i, value in enumerate(values):
            m = next(_IDS)
            t = EagerTracer(self, m, value.shape, value.dtype, value)
            t._handle = GradFn(IRNode(m, PROJ, (n,), value.shape, dtype_name(value.dtype),
                                      {"index": i}, src), (head,), value, Version())
            t._handle._name = backward_name(prim.name)
            outs.append(t)
        return tuple(outs)

    def _operands(self, args):
        """Node ids, values and ``GradFn`` objects of ``args`` (a constant node for each
        value that is not traced)."""
        dtypes = None
        for a in args:
            if not isinstance(a, Tracer):
                dtypes = [a.dtype for a in args if isinstance(a, Tracer)]
                break
        ids, vals, parents = [], [], []
        for a in args:
            if isinstance(a, Tracer):
                if a._trace is not self:
                    raise TraceError("an eager tensor and a value traced by a transform met in "
                                     f"one operation{where()}")
                if a._view is not None:
                    sync(a)
            elif (type(a) is float or type(a) is int) and all(d.kind in "fc" for d in dtypes):
                # a Python number meeting floating tensors: its dtype does not depend on its
                # value (NEP 50), so it is looked up; the array made here is the tape's own
                key = (type(a), *dtypes)
                dt = _NUMBER_DTYPES.get(key)
                if dt is None:
                    dt = _NUMBER_DTYPES[key] = np.result_type(*dtypes, a)
                a = self.const(np.asarray(a, dtype=dt), snapshot=False)
            else:
                a = self.const(_as_const(a, dtypes))
            ids.append(a._node)
            vals.append(a._value)
            parents.append(a._handle)
        return ids, vals, parents

    def guard(self, tracer, expected):
        pass        # eager code runs once, on these values: there is nothing to re-check


TAPE = Tape()


def recorded_graph(*tensors) -> Graph:
    """The part of the tape the given tensors' histories reach, as a standalone graph whose
    inputs are the leaves and saved values and whose outputs are the tensors."""
    w = walk([t._tracer._handle for t in tensors if t._tracer is not None])
    graph = Graph()
    local = {n: i for i, n in enumerate(w.order)}   # numbered from 0, as traced graphs
    for n, i in local.items():
        d = w.nodes[n]._ir
        if d.op == "input":
            graph.put(i, dict(d, params={"index": len(graph.inputs)}))
            graph.inputs.append(i)
        else:
            graph.put(i, dict(d, params=resolved(d.params)), args=[local[a] for a in d.args])
    graph.outputs = [local[t._tracer._node] for t in tensors if t._tracer is not None]
    return graph


# -- the one traversal of the tape ----------------------------------------------------------
# Where PyTorch's graph ends: a detached value (``stop_gradient``, which the eager ops use
# only inside compositions) and a custom Function, whose backward returning None leaves
# the input without a gradient.
STOP_GRADIENT = frozenset({"stop_gradient"})
EDGE_ENDS = frozenset({"stop_gradient", "custom_vjp_call"})


class Walk:
    """The part of the tape some roots' history reaches, found by ``walk``.

    ``nodes``: node id -> ``GradFn``, ``order``: their ids in recording order (a
    topological order: parents first); classified on the way: ``receiving``, the
    (id, GradFn) of the leaves that require grad and of the nodes a tensor
    retain_grad()-ed; ``functions``, the outputs of custom Functions applied eagerly
    (id -> the ``apply``'s rule); ``hooked``, whether a node has hooks; ``leaf_hooks``,
    the leaves whose tensor has hooks (id -> the tensor).

    The other questions a backward asks of this part are answered over ``order``
    (one sweep each, no further traversal): ``reached`` (from some nodes, along
    PyTorch's edges or the recorded operands, down to some ops or a cut), and
    ``leading_to`` (the nodes with a path to some targets)."""
    __slots__ = ("nodes", "order", "receiving", "functions", "hooked", "leaf_hooks")

    def reached(self, starts, ends=EDGE_ENDS, cut=(), edges=True) -> set:
        """The nodes reached from the node ids ``starts`` (those in this part): along
        PyTorch's edges (``next_functions``; ``edges=False``: the recorded operands), not
        going on from a node whose op is in ``ends`` or whose id is in ``cut``."""
        nodes = self.nodes
        marked = {n for n in starts if n in nodes}
        if not marked:
            return marked
        low = min(marked)
        for n in reversed(self.order):       # a node's edges go to earlier nodes
            if n < low:
                break
            if n not in marked or n in cut:
                continue
            h = nodes[n]
            if h._ir.op in ends:
                continue
            for p in (h._edges() if edges else h._parents):
                if p is not None:
                    m = p._id
                    if m in nodes:
                        marked.add(m)
                        if m < low:
                            low = m
        return marked

    def below(self, starts, cut) -> dict:
        """node id -> ``GradFn`` for the nodes the node ids ``starts`` depend on (along
        the recorded operands), not going on below the node ids in ``cut``; in order."""
        nodes = self.nodes
        return {n: nodes[n] for n in sorted(self.reached(starts, (), cut, edges=False))}

    def leading_to(self, targets) -> set:
        """The nodes with a path to one of the node ids ``targets`` (PyTorch runs only the
        backward nodes on such paths)."""
        nodes = self.nodes
        needed = set()
        for n in self.order:
            if n in targets:
                needed.add(n)
                continue
            for p in nodes[n]._parents:
                if p._id in needed:
                    needed.add(n)
                    break
        return needed


def walk(roots) -> Walk:
    """The part of the tape the ``GradFn`` objects ``roots`` depend on (``Walk``), in one
    depth-first traversal of the parents."""
    found = {}
    receiving, functions, leaf_hooks = [], {}, {}
    hooked = False
    stack = list(roots)
    while stack:
        h = stack.pop()
        n = h._id
        if n in found:
            continue
        found[n] = h
        if type(h) is AccumulateGrad:
            receiving.append((n, h))
            t = h._tensor()
            if t is not None and t._hooks:
                leaf_hooks[n] = t
        else:
            if h._retain is not None:
                receiving.append((n, h))
            rule = h._rule
            if rule is not None and rule.nodes:
                functions[n] = rule
            stack.extend(h._parents)
        if h._hooks:
            hooked = True
    w = Walk()
    w.nodes, w.order, w.receiving = found, sorted(found), receiving
    w.functions, w.hooked, w.leaf_hooks = functions, hooked, leaf_hooks
    return w
