"""``tg.autograd.Function``: a user's forward and backward, recorded as one node per output.

Eagerly (``Fn.apply`` on tensors), each floating output of ``forward`` becomes a
``custom_vjp_call`` node of the tape whose rule is the ``apply``'s ``_Rule``. The
engine (``engine.py``) cuts the recorded graph at those nodes: it runs the backward
graph down to them, then calls the user's ``backward`` on concrete tensors, as PyTorch
does (so boolean-mask assignment, ``.item()``, ``.numpy()`` and data-dependent Python
work there), and goes on from the inputs with what it returned. With
``create_graph=True`` the backward runs with grad mode on, so its operations are
recorded and can be differentiated again.

Inside the functional transforms (``apply`` receiving traced NumPy values, or tensors
standing for them), the node's VJP rule calls ``backward`` on tensors standing for
traced values instead (``_Rule.backward``): there the backward is traced.
"""
from __future__ import annotations

import functools
import time
import weakref

import numpy as np

from ...errors import TraceError
from ...ir import REGISTRY
from ...ir import apply as apply_primitive
from ...tracer import Tracer, user_src
from .. import anomaly, grad_mode, profiler
from ..dispatch import _SYMBOLIC, CAPTURE, mode_of
from ..tape import TAPE, EagerTracer, RuleRef, Version, modified_error
from ..tensor import Tensor, _relabelled, is_floating


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward``: holds saved tensors and any
    attribute the user sets on it."""

    def __init__(self):
        self._saved = ()
        self._saved_versions = ()
        self._saved_now = None
        self._freed = False
        self._non_differentiable = ()
        self._dirty = ()
        self.needs_input_grad = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        self._saved = tensors

    @property
    def saved_tensors(self):
        if self._saved_now is not None:
            return self._saved_now
        if self._freed:
            raise RuntimeError(_FREED)
        return self._saved

    saved_variables = saved_tensors

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tensors

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


_FREED = ("Trying to backward through the graph a second time (or directly access saved "
          "tensors after they have already been freed). Saved intermediate values of the graph "
          "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if "
          "you need to backward through the graph a second time or if you need to access saved "
          "tensors after calling backward.")
_TWICE = ("trying to differentiate twice a function that was marked with "
          "@once_differentiable")


def once_differentiable(fn):
    """``backward`` runs without recording; differentiating its results again raises."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with grad_mode.no_grad():
            outputs = fn(ctx, *args)
        if not grad_mode.is_grad_enabled() or not any(
                isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        marked = tuple(_fake_requires_grad(o) for o in outs)
        result = _DelayedErrorFunction.apply(*marked)
        result = result if isinstance(result, tuple) else (result,)
        return result[0] if single else result
    return wrapper


def _fake_requires_grad(t):
    if not isinstance(t, Tensor) or not is_floating(t.dtype):
        return t
    t = t.detach()
    t.requires_grad_(True)
    return t


class _Rule:
    """What the ``custom_vjp_call`` nodes of one ``apply`` need to call ``backward``."""

    def __init__(self, cls, ctx, args, outputs, tensor_pos):
        self.cls, self.ctx = cls, ctx
        self.name = f"{cls.__name__}Backward"
        self.args = args                # the forward's arguments, as given
        self.outputs = outputs          # the forward's output tensors
        self.tensor_pos = tensor_pos    # positions of the arguments that are operands
        self.nodes = ()                 # eager: tape node of each output (None: not recorded)
        self.operand_nodes = ()         # eager: tape node of each operand (tensor_pos order)

    def __repr__(self):
        return f"Function({self.cls.__name__})"

    # Eagerly, the output tensors are held weakly (``hold_outputs_weakly``): their nodes
    # hold this rule, and a strong reference back would make a cycle of every apply.
    # ``out_meta`` keeps what a missing gradient is made from: (shape, dtype), or None
    # for an output that is no tensor.
    _weak = None
    out_meta = None

    @property
    def outputs(self):
        if self._weak is None:
            return self._outputs
        return tuple(r() if type(r) is weakref.ref else r for r in self._weak)

    @outputs.setter
    def outputs(self, value):
        self._outputs = value
        self._weak = None

    def hold_outputs_weakly(self):
        outs = self._outputs
        if len(outs) == 1 and type(outs[0]) is Tensor and type(outs[0]._data) is np.ndarray:
            o = outs[0]
            self.out_meta = ((o._data.shape, o._data.dtype),)
            self._weak = (weakref.ref(o),)
        else:
            self.out_meta = tuple((tuple(o.shape), o.dtype) if isinstance(o, Tensor) else None
                                  for o in outs)
            self._weak = tuple(weakref.ref(o) if isinstance(o, Tensor) else o for o in outs)
        self._outputs = None

    def _meta(self):
        if self.out_meta is not None:
            return self.out_meta
        return tuple((tuple(o.shape), o.dtype) if isinstance(o, Tensor) else None
                     for o in self.outputs)

    # -- eager: concrete tensors -----------------------------------------------------
    def run(self, cts, create_graph, node_of):
        """Call ``backward`` with the cotangents ``cts`` (output node -> array, or a
        tensor with ``create_graph``) of this apply's outputs; the cotangents of its
        operands as ``[(tape node, value)]``. ``node_of`` is the handle that names this
        backward (errors, anomaly checks, the profiler)."""
        ctx = self.ctx
        # (a freed ``ctx`` raises when the backward reads ``saved_tensors``, as PyTorch's:
        # one that reads nothing saved runs again)
        _check_versions(ctx, self.name)
        grads = []
        for meta, n in zip(self._meta(), self.nodes):
            ct = cts.get(n) if n is not None else None
            if ct is None:
                if meta is None:
                    grads.append(None)
                elif ctx.materialize_grads:
                    grads.append(Tensor._plain(np.zeros(*meta)))
                else:
                    grads.append(None)
            elif isinstance(ct, Tensor):
                grads.append(ct)
            else:
                if not ct.flags.writeable:
                    ct = np.array(ct, copy=True)
                grads.append(Tensor._plain(ct))
        prof = profiler.current()
        started = time.perf_counter() if prof is not None else 0.0
        enabled = grad_mode.is_grad_enabled()
        grad_mode._set(create_graph)
        try:
            result = self.cls.backward(ctx, *grads)
        finally:
            grad_mode._set(enabled)
        if prof is not None:
            prof.add(self.name, time.perf_counter() - started)
        result = self._check_result(result)
        out = []
        checking = anomaly.is_anomaly_enabled()
        for pos, node in zip(self.tensor_pos, self.operand_nodes):
            r = result[pos]
            a = self.args[pos]
            if r is None or not a.requires_grad:
                continue
            if not isinstance(r, Tensor):
                raise RuntimeError(f"expected Variable or None (got {type(r).__name__})")
            r = _fit(r, a, pos, self.name)
            if checking:
                anomaly.check(r._data, node_of, pos)
            if create_graph and r.requires_grad:
                out.append((node, r))
            else:
                out.append((node, Tensor._plain(r._data) if create_graph else r._data))
        return out

    def _check_result(self, result):
        if not isinstance(result, tuple):
            result = (result,)
        n = len(self.args)
        if len(result) != n:
            if len(result) > n and all(r is None for r in result[n:]):
                result = result[:n]
            else:
                raise RuntimeError(f"function {self.name} returned an incorrect number of "
                                   f"gradients (expected {n}, got {len(result)})")
        tensors = set(self.tensor_pos)
        for i, r in enumerate(result):
            if r is not None and i not in tensors:
                raise RuntimeError(f"function {self.name} returned a gradient different than "
                                   f"None at position {i + 1}, but the corresponding forward "
                                   "input was not a Variable")
        return result

    # -- inside a transform: traced values -------------------------------------------
    def backward(self, g, index, operands, out=None):
        grads = []
        for k, meta in enumerate(self._meta()):
            if k == index:
                grads.append(Tensor._symbolic(g) if isinstance(g, Tracer) else Tensor._plain(g))
            else:
                grads.append(Tensor._plain(np.zeros(*meta)))
        stand_in = {}
        for pos, op in zip(self.tensor_pos, operands):
            stand_in[id(self.args[pos])] = op
        if out is not None:
            stand_in.setdefault(id(self.outputs[index]), out)
        saved = tuple(_stand_in(t, stand_in) for t in self.ctx._saved)
        self.ctx._saved_now = saved
        try:
            result = self.cls.backward(self.ctx, *grads)
        finally:
            self.ctx._saved_now = None
        result = self._check_result(result)
        cts = []
        for pos in self.tensor_pos:
            r = result[pos]
            if r is None:
                cts.append(None)
            elif isinstance(r, Tensor):
                cts.append(r._tracer if r._tracer is not None and not isinstance(
                    r._tracer, EagerTracer) else r._data)
            else:
                cts.append(np.asarray(r))
        return cts


def _check_versions(ctx, name):
    for t, v in zip(ctx._saved, ctx._saved_versions):
        if t is not None and t._vc.v != v:
            fn = t.grad_fn
            raise modified_error(t.dtype, t.shape, None if fn is None else fn.name(), t._vc.v, v)


def _fit(r, a, pos, name):
    """``r``, the gradient ``backward`` returned for input ``a``, in ``a``'s shape (summed
    over broadcast dimensions, as PyTorch accepts) and dtype."""
    rd, ad = r._data, a._data
    if type(rd) is np.ndarray and type(ad) is np.ndarray and rd.shape == ad.shape and \
            rd.dtype == ad.dtype:
        return r
    shape, want = tuple(r.shape), tuple(a.shape)
    if shape != want:
        if not _expandable(want, shape):
            raise RuntimeError(f"Function {name} returned an invalid gradient at index {pos} - "
                               f"got {list(shape)} but expected shape compatible with "
                               f"{list(want)}")
        lead = len(shape) - len(want)
        axes = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(want)
                                           if n == 1 and shape[lead + i] != 1)
        r = r.sum(dim=axes, keepdim=True) if axes else r
        r = r.reshape(want)
    if r.dtype != a.dtype:
        r = r.to(a.dtype)
    return r


def _expandable(shape, target):
    """Whether ``shape`` broadcasts to ``target`` (PyTorch's is_expandable_to)."""
    if len(shape) > len(target):
        return False
    for s, t in zip(reversed(shape), reversed(target)):
        if s != t and s != 1:
            return False
    return True


def _stand_in(t, stand_in):
    if not isinstance(t, Tensor):
        return t
    op = stand_in.get(id(t))
    if op is None:
        return Tensor._plain(t._data) if t._data is not None else t
    return Tensor._symbolic(op) if isinstance(op, Tracer) else Tensor._plain(np.asarray(op))


_SPLIT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # cls -> setup_context?


def _is_setup_context_defined(cls):
    return getattr(cls.setup_context, "__func__", cls.setup_context) is not \
        Function.__dict__["setup_context"].__func__


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)`` (or
    ``forward(*args)`` with ``setup_context(ctx, inputs, output)``); call
    ``YourFunction.apply(*args)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def _forward(cls, ctx, args, kwargs):
        split = _SPLIT.get(cls)
        if split is None:
            split = _SPLIT[cls] = _is_setup_context_defined(cls)
        if split:
            outputs = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, outputs)
            return outputs
        return cls.forward(ctx, *args, **kwargs)

    @classmethod
    def apply(cls, *args, **kwargs):
        capture = CAPTURE.get()
        if capture is not None and not kwargs:      # tg.compile recording (eager/compile)
            return capture.function(cls, args)
        symbolic = generic = False
        needs = []
        for a in args:
            if type(a) is Tensor:       # the common case: what mode_of looks at, in one go
                tr = a._tracer
                if tr is not None and type(tr) is not EagerTracer:
                    symbolic = True
                    break
                needs.append(tr is not None or a._requires_grad)
            else:
                generic = True
                needs.append(isinstance(a, Tensor) and a.requires_grad)
        if symbolic or generic and (
                any(isinstance(a, Tracer) and not isinstance(a, EagerTracer) for a in args)
                or mode_of(args, Tensor) == _SYMBOLIC):
            if kwargs:
                raise TypeError(f"{cls.__name__}.apply() takes positional arguments only "
                                "inside a transform")
            return _apply_traced(cls, args)
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(needs)
        enabled = grad_mode.is_grad_enabled()
        grad_mode._set(False)
        try:
            outputs = cls._forward(ctx, args, kwargs)
        finally:
            grad_mode._set(enabled)
        dirty = ctx._dirty
        for t in dirty:         # PyTorch counts mark_dirty as one more change
            if isinstance(t, Tensor):
                t._vc.v += 1
        record = enabled and any(needs)
        if not record:
            return outputs
        for t in dirty:
            if isinstance(t, Tensor) and t._tracer is None and t._requires_grad:
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")
        for i, t in enumerate(ctx._saved):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {i} "
                                f"is of type {type(t).__name__}")
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        operands = [args[i]._traced() for i in tensor_pos]
        rule = _Rule(cls, ctx, args, outs, tensor_pos)
        results, nodes = [], []
        non_diff = {id(t) for t in ctx._non_differentiable} if ctx._non_differentiable else ()
        src = TAPE.src if TAPE.src is not None else user_src(2)
        ref = RuleRef(rule)
        inputs = tuple(op._handle for op in operands)
        for k, o in enumerate(outs):
            if not isinstance(o, Tensor) or not is_floating(o.dtype) or id(o) in non_diff:
                results.append(o)
                nodes.append(None)
                continue
            outer = TAPE.src
            TAPE.src = src
            try:
                primal = TAPE.input(o._data, Version())
                # what ir.apply does with tape tracers: the tape records it
                node = TAPE.add(_CUSTOM_VJP_CALL, (primal, *operands), {"rule": ref, "index": k})
            finally:
                TAPE.src = outer
            handle = node._handle
            handle._name = rule.name
            handle._inputs = inputs
            handle._rule = rule
            if dirty and any(o is d for d in dirty) and any(o is a for a in args):
                # an input modified in place and returned (mark_dirty): the input itself,
                # its history rebased onto this node, as an in-place operation does
                handle._value = o._data
                handle._counter = o._vc
                handle._saved_version = o._vc.v
                o._tracer = _relabelled(node, o._data)
                o._requires_grad = False
                t = o
            else:
                t = Tensor._recorded(node)
            results.append(t)
            nodes.append(node._node)
        rule.nodes = tuple(nodes)
        rule.operand_nodes = tuple(op._node for op in operands)
        # saved outputs are the returned tensors: let them stand for the recorded ones
        if any(s is o for s in ctx._saved for o in outs):
            ctx._saved = tuple(_swap(s, outs, results) for s in ctx._saved)
        ctx._saved_versions = tuple(s._vc.v if isinstance(s, Tensor) else 0 for s in ctx._saved)
        rule.outputs = tuple(results)
        rule.hold_outputs_weakly()
        return results[0] if single else tuple(results)


_CUSTOM_VJP_CALL = REGISTRY["custom_vjp_call"]


def _swap(t, old, new):
    for o, n in zip(old, new):
        if t is o:
            return n
    return t


class _DelayedErrorFunction(Function):
    @staticmethod
    def forward(ctx, *xs):
        return tuple(x.clone() if isinstance(x, Tensor) else x for x in xs)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(_TWICE)


def _apply_traced(cls, args):
    """``apply`` inside a functional transform: the forward is traced, and the node's
    rule is the user's backward."""
    raw = [not isinstance(a, Tensor) and isinstance(a, Tracer) for a in args]
    targs = tuple(Tensor._symbolic(a) if r else a for a, r in zip(args, raw))
    ctx = FunctionCtx()
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) for a in targs)
    outputs = cls._forward(ctx, targs, {})
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    tensor_pos = [i for i, a in enumerate(targs) if isinstance(a, Tensor) and isinstance(
        a._tracer, Tracer) and not isinstance(a._tracer, EagerTracer)]
    operands = [targs[i]._tracer for i in tensor_pos]
    outs = tuple(o if isinstance(o, Tensor) else Tensor._plain(np.asarray(o)) for o in outs)
    rule = _Rule(cls, ctx, targs, outs, tensor_pos)
    results = []
    for k, o in enumerate(outs):
        primal = o._tracer if o._tracer is not None else o._data
        if primal is None:
            raise TraceError(f"{cls.__name__}.forward returned a value tracegrad cannot follow")
        node = apply_primitive("custom_vjp_call", primal, *operands, rule=rule, index=k)
        results.append(node if all(raw) or not any(isinstance(a, Tensor) for a in args)
                       else Tensor._symbolic(node))
    as_tensors = [r if isinstance(r, Tensor) else Tensor._symbolic(r) for r in results]
    ctx._saved = tuple(_swap(s, outs, as_tensors) for s in ctx._saved)
    rule.outputs = tuple(as_tensors)
    return results[0] if single else tuple(results)
