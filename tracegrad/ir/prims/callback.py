"""``pure_callback``: a Python function run on concrete NumPy values inside a graph.

The node's ``callback`` parameter is an object (made by ``tracegrad.transforms.pure_callback``) with
``run(arrays) -> tuple of arrays`` (it calls the user's function and checks what it
returns against the declared shapes and dtypes), ``out_avals`` (the declared
``(shape, dtype)`` of each output), ``name`` and ``vectorized``, and ``batched(size)``, the
same callback for operands with a batch axis in front. A callback object may also carry
``vjp(gs, outs, *operands)`` and ``jvp(tangents, outs, *operands)`` rules (with the
primitive's rule signatures): tracegrad's own callbacks do (``scipy.integrate.odeint``);
``tg.pure_callback``'s do not. It is Python code: a graph holding
one cannot be saved as JSON, and the primitive has no derivative (wrap the call in
``tg.custom_vjp``). ``tracegrad.transforms.pure_callback`` applies it; here are its rules.
"""
import numpy as np

from ...errors import TraceError
from ..registry import apply, register
from ..source import where
from .batching import bcast
from .util import free


def _impl(*operands, callback):
    return callback.run(operands)


def _abstract(*avals, callback):
    return list(callback.out_avals)


def _no_derivative(mode):
    def rule(*args, callback, **kw):
        raise TraceError(f"tg.pure_callback({callback.name}) has no derivative ({mode}): it "
                         f"runs Python code on concrete values. Wrap the function that calls "
                         f"it in tg.custom_vjp and give it a VJP rule{where()}")
    return rule


def _vjp(gs, outs, *operands, callback):
    rule = getattr(callback, "vjp", None)   # a callback tracegrad made with its own rules
    if rule is not None:
        return rule(gs, outs, *operands)
    return _no_derivative("reverse mode")(callback=callback)


def _jvp(tangents, outs, *operands, callback):
    rule = getattr(callback, "jvp", None)
    if rule is not None:
        return rule(tangents, outs, *operands)
    return _no_derivative("forward mode, tg.jvp")(callback=callback)


def _jax(*operands, callback):
    import jax

    shapes = tuple(jax.ShapeDtypeStruct(tuple(s), np.dtype(d)) for s, d in callback.out_avals)
    out = jax.pure_callback(lambda *a: tuple(callback.run(a)), shapes, *operands,
                            vmap_method="broadcast_all" if callback.vectorized else "sequential")
    return tuple(out)


def _batch(size, args, batched, out_shape, callback):
    """A ``vectorized`` callback takes every operand with the batch axis in front (the
    unbatched ones broadcast to it) and gives its outputs so; otherwise row by row."""
    if not callback.vectorized:
        return NotImplemented
    ops = [a if b else bcast(a, size) for a, b in zip(args, batched)]
    return apply("pure_callback", *ops, callback=callback.batched(size))


def _n_outputs(callback):
    return len(callback.out_avals)


register(
    "pure_callback", _impl, abstract=_abstract, vjp=_vjp, jvp=_jvp, jax=_jax,
    family="special", outputs=_n_outputs, extra={"reverse_mode": False},
    doc="tg.pure_callback: the user's function on concrete values, declared outputs",
    # a copy of what the function returned; never folded (it is the user's code, maybe
    # with effects the user wants at run time); vectorized ones batch by calling it once
    batch=_batch,
    cost=free,
    complex=False,
)
