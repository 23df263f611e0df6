"""Primitives whose parameter is a graph: ``remat_call`` (``tg.checkpoint``).

A ``remat_call`` node runs its ``graph`` param on its operands and gives output
``index`` of it. Only that output is kept: the sub-graph's intermediates live while the
node runs and are gone afterwards. Its VJP inlines the adjoint of the sub-graph, which
recomputes the forward values it needs: the backward pass rematerialises them instead
of the forward pass storing them. Running a sub-graph and deriving its adjoint belong to
the layers above the IR (runtime, passes), so they are imported when a rule runs.
"""
import functools

import numpy as np

from ..registry import register as _register

# The sub-graph's own nodes are checked for complex rules one by one.
register = functools.partial(_register, complex=True)

# Sibling nodes (one per output of one sub-graph call) see the same operand arrays:
# run the sub-graph once for all of them.
_memo = {"key": None}


def shared_run(key, operands, run):
    """``run()``, unless the sibling node before this one ran it on the same operands."""
    full = key + tuple(id(o) for o in operands)
    if _memo["key"] == full and all(a is b for a, b in zip(_memo["ops"], operands)):
        return _memo["outs"]
    outs = run()
    _memo.update(key=full, ops=tuple(operands), outs=outs)
    return outs


def compiled(graph):
    """``graph`` as generated NumPy code, made once per graph."""
    fn = graph.__dict__.get("_compiled")
    if fn is None:
        from ...runtime.codegen import generate
        fn = graph.__dict__["_compiled"] = generate(graph, "tracegrad_body")
    return fn


def _run(graph, operands):
    return shared_run(("remat", id(graph)), operands,
                      lambda: list(compiled(graph)(*[np.asarray(o) for o in operands])))


def _remat_impl(*operands, graph, index):
    return _run(graph, operands)[index]


def _remat_abstract(*avals, graph, index):
    d = graph.node(graph.outputs[index])
    return d["shape"], np.dtype(d["dtype"])


def _remat_vjp(g, out, *operands, graph, index):
    from ...passes.adjoint import adjoint
    from ...runtime.interpreter import call_graph

    adj = _adjoints(graph, index, adjoint)
    cts = call_graph(adj, list(operands) + [g])
    return tuple(cts[len(graph.outputs):])


def _adjoints(graph, index, adjoint):
    """The sub-graph's adjoint for output ``index``, derived once per graph and output."""
    cache = graph.__dict__.setdefault("_remat_adjoints", {})
    if index not in cache:
        cache[index] = adjoint(graph, seeds=[index])
    return cache[index]


def _remat_jvp(tangents, out, *operands, graph, index):
    from ...passes.jvp import jvp
    from ...runtime.interpreter import call_graph

    cache = graph.__dict__.setdefault("_remat_jvp", [])
    if not cache:
        cache.append(jvp(graph))
    tangents = [np.zeros(np.shape(o), np.asarray(o).dtype if not hasattr(o, "dtype") else o.dtype)
                if t is None else t for o, t in zip(operands, tangents)]
    outs = call_graph(cache[0], list(operands) + list(tangents))
    return outs[len(graph.outputs) + index]


def _remat_jax(*operands, graph, index):
    from ...runtime.jax_backend import graph_function, import_jax

    body = graph_function(graph)
    return import_jax().checkpoint(lambda *ops: body(*ops))(*operands)[index]


register(
    "remat_call", _remat_impl, abstract=_remat_abstract, vjp=_remat_vjp, jvp=_remat_jvp,
    jax=_remat_jax, family="subgraph",
    doc="output `index` of `graph` run on the operands; its backward recomputes the graph "
        "(tg.checkpoint)",
)
