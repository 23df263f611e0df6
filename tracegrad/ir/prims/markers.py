"""Primitives made by tracegrad itself: custom_vjp output markers and structural zeros."""
import numpy as np

from ...errors import TraceError
from ..registry import register
from ..schema import DTYPE, SHAPE, Spec  # the loader's parameter kinds
from .util import free, jnp_fn


def _custom_vjp_vjp(g, out, primal_out, *operands, rule, index):
    # The user's bwd replaces the derivative of everything fwd computed, so
    # nothing flows to primal_out (fwd's own graph) or to the residuals. ``out`` is
    # this node's own output, for rules whose residuals include the result.
    arg_cts = rule.backward(g, index, operands, out)
    return (None,) + tuple(arg_cts)


def _custom_vjp_jvp(t, out, *operands, rule, index):
    raise TraceError(f"forward mode (tg.jvp) through the custom_vjp function "
                     f"{rule.name} is not supported: it only defines a reverse-mode rule")


register(
    "custom_vjp_call", lambda primal_out, *operands, rule, index: primal_out,
    abstract=lambda primal_out, *operands, rule, index: (primal_out.shape, primal_out.dtype),
    vjp=_custom_vjp_vjp, jvp=_custom_vjp_jvp,
    jax=lambda primal_out, *operands, rule, index: primal_out,
    family="special",
    doc="output `index` of a tg.custom_vjp function; operands: its residuals then traced args",
    # the value is operand 0 itself (fwd's own output); never folded (the user's rule);
    # row by row under vmap
    batch=None, aliasing="identity",
    cost=free, torch_name="CustomFunctionBackward",
)


# Structural zeros: the cotangent of an input no output depends on, a missing
# tangent. Unlike a zero the user computed, multiplying one by anything is
# zero (``simplify`` may drop it even when the other factor could be inf).
def _zeros_impl(shape, dtype):
    return np.zeros(shape, dtype)


register(
    "zeros", _zeros_impl, abstract=lambda shape, dtype: (shape, dtype),
    jax=jnp_fn("zeros"),
    family="special", doc="a structural zero made by a pass (no operands)",
    # no operands to batch; never folded into a constant (it would stop being structural)
    batch=None,
    cost=free,
    schema=Spec({"shape": SHAPE, "dtype": DTYPE}, 0),
)
