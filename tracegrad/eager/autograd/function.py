"""``tg.autograd.Function``: a user's forward and backward, recorded as one node.

The node is the registry's ``custom_vjp_call`` (the primitive behind ``tg.custom_vjp``):
its VJP rule calls the user's ``backward`` with tensors standing for traced values, so
the backward becomes ordinary nodes of the backward graph (and can be differentiated
again, through the inputs and outputs it saved). The same class works inside the
functional transforms, where ``apply`` receives traced NumPy values.
"""
from __future__ import annotations

import functools

import numpy as np

from ...errors import TraceError
from ...ir import apply as apply_primitive
from ...tracer import Tracer
from .. import grad_mode
from ..dispatch import _SYMBOLIC, mode_of
from ..tape import TAPE, EagerTracer, Version
from ..tensor import Tensor, is_floating


class FunctionCtx:
    """The ``ctx`` passed to ``forward`` and ``backward``: holds saved tensors and any
    attribute the user sets on it."""

    def __init__(self):
        self._saved = ()
        self._saved_now = None
        self.needs_input_grad = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors):
        self._saved = tensors

    @property
    def saved_tensors(self):
        return self._saved if self._saved_now is None else self._saved_now

    def mark_non_differentiable(self, *tensors):
        pass

    def mark_dirty(self, *tensors):
        pass

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


def once_differentiable(fn):
    """Accepted for compatibility: tracegrad records the backward either way."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        return fn(ctx, *args)
    return wrapper


class _Rule:
    """What the ``custom_vjp_call`` nodes of one ``apply`` need to call ``backward``."""

    def __init__(self, cls, ctx, args, outputs, tensor_pos):
        self.cls, self.ctx = cls, ctx
        self.name = f"{cls.__name__}Backward"
        self.args = args                # the forward's arguments, as given
        self.outputs = outputs          # the forward's output tensors
        self.tensor_pos = tensor_pos    # positions of the arguments that are operands

    def __repr__(self):
        return f"Function({self.cls.__name__})"

    def backward(self, g, index, operands, out=None):
        grads = []
        for k, o in enumerate(self.outputs):
            if k == index:
                grads.append(Tensor._symbolic(g) if isinstance(g, Tracer) else Tensor._plain(g))
            else:
                grads.append(Tensor._plain(np.zeros(tuple(o.shape), o.dtype)))
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
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) < len(self.args) or any(r is not None for r in result[len(self.args):]):
            raise RuntimeError(f"function {self.name} returned an incorrect number of gradients "
                               f"(expected {len(self.args)}, got {len(result)})")
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


def _stand_in(t, stand_in):
    if not isinstance(t, Tensor):
        return t
    op = stand_in.get(id(t))
    if op is None:
        return Tensor._plain(t._data) if t._data is not None else t
    return Tensor._symbolic(op) if isinstance(op, Tracer) else Tensor._plain(np.asarray(op))


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call
    ``YourFunction.apply(*args)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode AD.")

    vjp = backward

    @classmethod
    def apply(cls, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{cls.__name__}.apply() takes positional arguments only")
        if any(isinstance(a, Tracer) and not isinstance(a, EagerTracer) for a in args) or \
                mode_of(args, Tensor) == _SYMBOLIC:
            return _apply_traced(cls, args)
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        with grad_mode.no_grad():
            outputs = cls.forward(ctx, *args)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        record = grad_mode.is_grad_enabled() and any(ctx.needs_input_grad)
        if not record:
            return outputs
        tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        operands = [args[i]._traced() for i in tensor_pos]
        outs = tuple(o if isinstance(o, Tensor) else Tensor._plain(np.asarray(o)) for o in outs)
        rule = _Rule(cls, ctx, args, outs, tensor_pos)
        results = []
        for k, o in enumerate(outs):
            if not is_floating(o.dtype):
                results.append(o)
                continue
            primal = TAPE.input(o._data, Version())
            node = apply_primitive("custom_vjp_call", primal, *operands, rule=rule, index=k)
            node._handle._name = rule.name
            t = Tensor._recorded(node)
            results.append(t)
        # saved outputs are the returned tensors: let them stand for the recorded ones
        ctx._saved = tuple(_swap(s, outs, results) for s in ctx._saved)
        rule.outputs = tuple(results)
        return results[0] if single else tuple(results)


def _swap(t, old, new):
    for o, n in zip(old, new):
        if t is o:
            return n
    return t


def _apply_traced(cls, args):
    """``apply`` inside a functional transform: the forward is traced, and the node's
    rule is the user's backward."""
    raw = [not isinstance(a, Tensor) and isinstance(a, Tracer) for a in args]
    targs = tuple(Tensor._symbolic(a) if r else a for a, r in zip(args, raw))
    ctx = FunctionCtx()
    ctx.needs_input_grad = tuple(isinstance(a, Tensor) for a in targs)
    outputs = cls.forward(ctx, *targs)
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
