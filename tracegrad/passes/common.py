"""Small pieces the derivative passes share."""
from contextlib import contextmanager

import numpy as np

from ..errors import TraceError
from ..ir import REGISTRY, Aval, Graph, apply
from ..ir.dtypes import is_float
from ..ir.prims.util import unbroadcast
from ..tracer import Tracer, source_override, where


def abstract_inputs(trace, graph: Graph, nodes):
    """Value-free inputs of ``trace`` with the avals (and source lines) of ``graph``'s
    ``nodes``: a cotangent seed points at the line that made its output."""
    inputs = []
    for n in nodes:
        d = graph.node(n)
        with source_override(d["src"]):
            inputs.append(trace.new_input(aval=Aval(d["shape"], np.dtype(d["dtype"]))))
    return inputs


def zeros(trace, shape, dtype):
    """A structural zero (a missing cotangent or tangent), which ``simplify`` recognises."""
    return trace.add(REGISTRY["zeros"], (), {"shape": tuple(shape), "dtype": np.dtype(dtype)})


def _broadcast(x, shape):
    return apply("broadcast_to", x, shape=tuple(shape))


def _broadcasts_to(have, shape):
    try:
        return np.broadcast_shapes(have, shape) == shape
    except ValueError:
        return False


def fit(value, shape, dtype, tangent=False):
    """``value`` made to match a node's aval: a cotangent summed over the axes its operand
    was broadcast along (or broadcast, when a rule returns one that is constant along
    them); a ``tangent`` broadcast up to its node's shape. Then cast back (complex to
    real by taking the real part)."""
    # (a tracer's own shape: np.shape would go through NumPy's function dispatch)
    have = value.shape if type(value) is Tracer else tuple(np.shape(value))
    shape = tuple(shape)
    if have != shape:
        if _broadcasts_to(have, shape):
            # the tangent of y (1, 4) in y + c, c a constant (3, 4): no tangent of c
            # brought it to the result's shape
            value = _broadcast(value, shape)
        elif tangent:
            # summing a tangent down would be a silently wrong number
            raise TraceError(f"internal error: a JVP rule returned a tangent of shape {have} "
                             f"for a value of shape {shape}")
        else:
            value = unbroadcast(value, shape)
    if np.dtype(value.dtype) != np.dtype(dtype):
        if np.dtype(value.dtype).kind == "c" and np.dtype(dtype).kind != "c":
            # a real operand of a complex computation: its cotangent (tangent) is the real
            # part, the transpose of the real-to-complex cast (JAX's convention)
            value = apply("real", value)
        if np.dtype(value.dtype) != np.dtype(dtype):
            value = value.astype(dtype)
    return value


def carries_gradient(graph: Graph, sources=None) -> dict:
    """node -> True if its value depends differentiably on a floating-point input (on
    one of the nodes ``sources``, inputs or not, when given)."""
    flows = {}
    for n, d in graph.items():
        op = d.op
        if sources is not None and n in sources:
            flows[n] = is_float(d.dtype)
        elif op == "input":
            flows[n] = sources is None and is_float(d.dtype)
        elif op == "const":
            flows[n] = False
        else:
            prim = REGISTRY[op]
            nondiff = prim.nondiff_args
            if nondiff:
                reached = any(flows[a] for i, a in enumerate(d.args) if i not in nondiff)
            else:
                reached = True in [flows[a] for a in d.args]
            # (a multi-output node's dtype is its first output's: its projections say
            # which of its outputs are floating-point)
            flows[n] = reached and prim.vjp is not None and (prim.multi or is_float(d.dtype))
    return flows


def finish(trace, outputs) -> Graph:
    """Close a pass's trace: outputs become graph outputs (constants become nodes)."""
    if trace.captured:
        raise TraceError("a custom rule closed over a value traced outside of it; pass the "
                         "value as an argument instead")
    graph = trace.graph
    graph.outputs = [(v if isinstance(v, Tracer) else trace.const(v))._node for v in outputs]
    return graph


@contextmanager
def at_node(d):
    """Run a node's derivative rule: new nodes take the forward node's source line, and
    an error the rule raises names that line if it does not name one already."""
    with source_override(d["src"]):
        try:
            yield
        except TraceError as e:
            named = at_node_error(e, d)
            if named is e:
                raise
            raise named from None


def at_node_error(e, d):
    """The error ``e`` a rule of node ``d`` raised, naming ``d``'s line if it names
    none."""
    if d["src"] and " (at " not in str(e):
        return TraceError(f"{e}{where(d['src'])}")
    return e
