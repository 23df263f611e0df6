"""``torch.utils.checkpoint``: activation checkpointing on the eager tape.

``checkpoint(fn, *args, use_reentrant=...)`` runs ``fn`` keeping none of its
intermediate values; the backward runs ``fn`` again (with the random generator's state
of the forward, so dropout draws the same masks) and differentiates that.

* ``use_reentrant=True`` (torch's default when the argument is not given, with its
  warning) is torch's ``CheckpointFunction`` on tracegrad's ``autograd.Function``: the
  forward under ``no_grad``, the backward a nested ``backward()`` of the recomputed
  outputs, which accumulates into ``.grad`` of the parameters used inside (and of the
  detached inputs, whose gradients it returns). As with torch, an input that requires
  grad is needed for anything to get a gradient, and ``autograd.grad`` or
  ``backward(inputs=...)`` raise.
* ``use_reentrant=False`` records ``fn``'s forward once to find the tensors that require
  grad it reads from outside (its arguments and whatever it captures: parameters), then
  drops that recording: one custom Function node stands for the region, from those
  tensors to its outputs. Its backward recomputes ``fn`` and takes ``autograd.grad`` of
  the recomputed outputs with respect to them, so parameters get their gradients through
  the outer graph (``autograd.grad`` works, as with torch).

Inside ``tg.compile`` the function is captured as it runs (the compiled graph is one
program: nothing is recomputed; values and gradients are those of eager).
"""
from __future__ import annotations

import contextlib
import warnings

from .. import engine, grad_mode
from ..autograd.function import Function
from ..random import default_generator, fork_rng
from ..tape import _IDS, TAPE, AccumulateGrad, EagerTracer, Saved, walk
from ..tensor import Tensor
from ..tensor_base import CAPTURE

__all__ = ["checkpoint", "checkpoint_sequential", "detach_variable", "check_backward_validity",
           "noop_context_fn", "CheckpointError", "CheckpointFunction"]


class CheckpointError(RuntimeError):
    pass


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    if isinstance(inputs, tuple):
        out = []
        for inp in inputs:
            if not isinstance(inp, Tensor):
                out.append(inp)
                continue
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            out.append(x)
        return tuple(out)
    raise RuntimeError("Only tuple of tensors is supported. Got Unsupported input type: "
                       f"{type(inputs).__name__}")


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)


def _checkpoint_valid():
    """torch.autograd._is_checkpoint_valid: False inside a backward started by
    ``autograd.grad`` or by ``backward(inputs=...)``, at any depth of nesting (the engine's
    ``CHECKPOINT_VALID``)."""
    return engine.CHECKPOINT_VALID.get()


_REENTRANT_GRAD = ("When use_reentrant=True, torch.utils.checkpoint is incompatible with "
                   ".grad() or passing an `inputs` parameter to .backward(). To resolve this "
                   "error, you can either set use_reentrant=False, or call .backward() without "
                   "passing the `inputs` argument.")


class CheckpointFunction(Function):
    """torch's reentrant checkpoint."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = default_generator.get_state()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with grad_mode.no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        if not _checkpoint_valid():
            raise RuntimeError(_REENTRANT_GRAD)
        inputs = list(ctx.inputs)
        tensors = ctx.saved_tensors
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = tensors[i]
        with fork_rng(enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                default_generator.set_state(ctx.fwd_cpu_state)
            detached_inputs = detach_variable(tuple(inputs))
            with grad_mode.enable_grad():
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outputs_with_grad, args_with_grad = [], []
        for i in range(len(outputs)):
            if isinstance(outputs[i], Tensor) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        engine.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, Tensor) else None for inp in detached_inputs)
        return (None, None) + grads


# -- the non-reentrant variant -------------------------------------------------------------
def _flatten(x, leaves):
    """The leaves of ``x`` (nested tuples, lists and dicts), and how to rebuild it."""
    if isinstance(x, (tuple, list)):
        parts = [_flatten(v, leaves) for v in x]
        if isinstance(x, tuple) and hasattr(x, "_fields"):        # a namedtuple
            return lambda it: type(x)(*(p(it) for p in parts))
        return lambda it: type(x)(p(it) for p in parts)
    if isinstance(x, dict):
        parts = {k: _flatten(v, leaves) for k, v in x.items()}
        return lambda it: type(x)((k, p(it)) for k, p in parts.items())
    leaves.append(x)
    return lambda it: next(it)


class _Region:
    """What the backward of one non-reentrant checkpoint needs."""
    __slots__ = ("function", "args", "kwargs", "state", "recompute_ctx", "boundary",
                 "picked", "values")


class _NonReentrant(Function):
    """One node for a checkpointed region: from the tensors it reads from outside
    (``boundary``) to its outputs that require grad."""

    @staticmethod
    def forward(ctx, region, *boundary):
        ctx.region = region
        ctx.set_materialize_grads(False)
        # saved: a backward that did not retain the graph frees them, and a later one
        # raises reading them (torch's recomputation reads the freed saved tensors)
        ctx.save_for_backward(*boundary)
        values, region.values = region.values, None
        return tuple(Tensor._plain(v) for v in values)

    @staticmethod
    def backward(ctx, *grads):
        r = ctx.region
        ctx.saved_tensors       # noqa: B018  (raises once freed)
        with fork_rng(enabled=r.state is not None):
            if r.state is not None:
                default_generator.set_state(r.state)
            create_graph = grad_mode.is_grad_enabled()
            with grad_mode.enable_grad(), r.recompute_ctx:
                out = r.function(*r.args, **r.kwargs)
        leaves: list = []
        _flatten(out, leaves)
        outs, cts = [], []
        for k, g in zip(r.picked, grads):
            o = leaves[k] if k < len(leaves) else None
            if g is None or not isinstance(o, Tensor) or not o.requires_grad:
                continue
            outs.append(o)
            cts.append(g)
        n = len(r.boundary)
        if not outs:
            return (None,) * (n + 1)
        # the boundary's own hooks and retain_grad run in the outer backward, once: not in
        # this inner one (torch's recomputation is no backward of its own)
        quiet = []
        for t in r.boundary:
            quiet.append((t, t._hooks, None))
            t._hooks = None
            if t._tracer is not None:
                h = t._tracer._handle
                quiet.append((h, h._hooks, h._retain))
                h._hooks, h._retain = None, None
        try:
            got = engine.grad(outs, list(r.boundary), cts, retain_graph=True,
                              create_graph=create_graph, allow_unused=True)
        finally:
            for obj, hooks, retain in quiet:
                obj._hooks = hooks
                if retain is not None:
                    obj._retain = retain
        return (None,) + tuple(got)


def _boundary(outputs, start):
    """Tensors standing for the nodes outside the region (recorded before node id
    ``start``, or leaves) that the region's nodes read and that get gradients."""
    scan = walk([o._tracer._handle for o in outputs])
    found: dict = {}
    for n, h in scan.nodes.items():
        if n < start or type(h) is AccumulateGrad or type(h) is Saved:
            continue
        for p in h._parents:
            if p is None or type(p) is Saved or p._id in found:
                continue
            if type(p) is AccumulateGrad:
                t = p._tensor()
                if t is not None and t._requires_grad and not any(
                        s is t for s in found.values()):
                    found[p._id] = t
            elif p._id < start:
                found[p._id] = _standing_for(p)
    return [found[k] for k in sorted(found)]


def _standing_for(handle):
    """A tensor whose history is the recorded node ``handle``."""
    tracer = EagerTracer(TAPE, handle._id, handle._value.shape, handle._value.dtype,
                         handle._value)
    tracer._handle = handle
    return Tensor._recorded(tracer)


def _checkpoint_without_reentrant(function, preserve, context_fn, args, kwargs):
    forward_ctx, recompute_ctx = context_fn()
    if not grad_mode.is_grad_enabled():
        with forward_ctx:
            return function(*args, **kwargs)
    state = default_generator.get_state() if preserve else None
    start = next(_IDS)
    with forward_ctx:
        out = function(*args, **kwargs)
    leaves: list = []
    rebuild = _flatten(out, leaves)
    picked = [k for k, o in enumerate(leaves)
              if isinstance(o, Tensor) and isinstance(o._tracer, EagerTracer)
              and o._tracer._node > start]
    if not picked:
        return out
    recorded = [leaves[k] for k in picked]
    boundary = _boundary(recorded, start)
    region = _Region()
    region.function, region.args, region.kwargs = function, args, kwargs
    region.state, region.recompute_ctx = state, recompute_ctx
    region.boundary, region.picked = tuple(boundary), picked
    region.values = [o._data for o in recorded]
    del recorded, out       # the recorded region goes with them
    made = _NonReentrant.apply(region, *boundary)
    if not isinstance(made, tuple):
        made = (made,)
    for k, t in zip(picked, made):
        leaves[k] = t
    return rebuild(iter(leaves))


# -- the entry points ------------------------------------------------------------------------
def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn,
               determinism_check="default", debug=False, early_stop=True, **kwargs):
    """Run ``function(*args)`` keeping no intermediate values; the backward recomputes
    it."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
            "without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
    elif determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if CAPTURE.get() is not None:
        # tg.compile: one captured program, nothing to recompute; the reentrant variant's
        # outputs need an input that requires grad, as eagerly
        if use_reentrant:
            check_backward_validity(args)
            if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
                with grad_mode.no_grad():
                    return function(*args)
            return function(*args)
        forward_ctx, _ = context_fn()
        with forward_ctx:
            return function(*args, **kwargs)
    if use_reentrant:
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run the modules (or functions) ``functions`` in ``segments`` chunks, each but the
    last checkpointed."""
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
            "parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if _is_sequential(functions):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)


def _is_sequential(x):
    # nn.Sequential (nn is not imported here: it is no dependency of the checkpoint)
    return any(c.__name__ == "Sequential" and c.__module__.endswith("nn.containers")
               for c in type(x).__mro__)
