"""``proj``: one output of a multi-output node (see ``ir/registry.py``'s docstring).

A multi-output primitive's node (the head) has a tuple for its value; ``proj %head
index=i`` is its ``i``-th element. The tracer records the projections with the head, the
passes give them their cotangents and tangents through the head's rules (a ``proj`` has
no rule of its own to call: ``adjoint`` collects the cotangents of a head's projections
into one tuple, ``jvp`` picks the head's tangents apart), and printing, DOT and JSON fold
them into the head's line.
"""
from ...errors import TraceError
from ..registry import PROJ, register


def _abstract(head, index):
    raise TraceError("proj applies to the value of a multi-output node only; its shape "
                     "comes from the node's primitive")


def _no_rule(*args, **params):
    raise TraceError("internal error: a proj node's derivative is taken through its "
                     "multi-output node")


register(
    PROJ, lambda head, index: head[index], abstract=_abstract,
    vjp=_no_rule, jvp=_no_rule, jax=lambda head, index: head[index],
    batch=None,     # passes.batch picks the output of its batched multi-output node
    spelling="{0}[{index}]",

    cost=lambda out_shape, arg_shapes, params: 0,
    torch_name="ProjBackward0", family="multi",
    doc="output `index` of a multi-output node (its head's tuple value)",
)
