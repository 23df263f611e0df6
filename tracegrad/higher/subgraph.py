"""Primitives whose parameter is a graph: ``remat_call`` (``tg.checkpoint``).

A ``remat_call`` node runs its ``graph`` param on its operands and gives output
``index`` of it. Only that output is kept: the sub-graph's intermediates live while the
node runs and are gone afterwards. Its VJP inlines the adjoint of the sub-graph, which
recomputes the forward values it needs: the backward pass rematerialises them instead
of the forward pass storing them. Running a sub-graph and deriving its adjoint use the
runtime and the passes: this layer sits above both, and registers its primitives into
the IR's open registry when ``tracegrad`` is imported.
"""
import functools
import threading

import numpy as np

from ..ir.registry import per_output_element
from ..ir.registry import register as _register
from ..passes.adjoint import adjoint
from ..passes.jvp import jvp
from ..runtime.codegen import generate
from ..runtime.interpreter import call_graph
from ..runtime.jax_backend import graph_function, import_jax

# The sub-graph's own nodes are checked for complex rules one by one.
register = functools.partial(_register, complex=True)

# Sibling nodes (one per output of one sub-graph call) see the same operand arrays: run
# the sub-graph once for all of them. The memo holds the graphs and operands themselves
# (compared by identity, so no id can be reused while it is kept) and the outputs not yet
# handed out: each sibling takes its own once, so a second request for an output starts a
# new run. A later evaluation on the same arrays, changed in place since, never sees the
# old results. One memo per thread.
_memo = threading.local()


def shared_run(graphs, operands, index, run):
    """Output ``index`` of ``run()`` (a list), run once for the siblings asking for the
    other outputs of the same ``graphs`` (a tuple) on the same ``operands``."""
    m = _memo.__dict__
    if (index in m.get("pending", ()) and len(m["graphs"]) == len(graphs)
            and all(a is b for a, b in zip(m["graphs"], graphs))
            and len(m["ops"]) == len(operands)
            and all(a is b for a, b in zip(m["ops"], operands))):
        m["pending"].discard(index)
        outs = m["outs"]
        if not m["pending"]:
            m.clear()           # every sibling served: hold no arrays any longer
        return outs[index]
    outs = run()
    m.update(graphs=tuple(graphs), ops=tuple(operands), outs=outs,
             pending=set(range(len(outs))) - {index})
    return outs[index]


def compiled(graph):
    """``graph`` as generated NumPy code, made once per graph."""
    fn = graph.__dict__.get("_compiled")
    if fn is None:
        fn = graph.__dict__["_compiled"] = generate(graph, "tracegrad_body")
    return fn


def _remat_impl(*operands, graph, index):
    return shared_run((graph,), operands, index,
                      lambda: list(compiled(graph)(*[np.asarray(o) for o in operands])))


def _remat_abstract(*avals, graph, index):
    d = graph.node(graph.outputs[index])
    return d["shape"], np.dtype(d["dtype"])


def _remat_vjp(g, out, *operands, graph, index):
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
    cache = graph.__dict__.setdefault("_remat_jvp", [])
    if not cache:
        cache.append(jvp(graph))
    tangents = [np.zeros(np.shape(o), np.asarray(o).dtype if not hasattr(o, "dtype") else o.dtype)
                if t is None else t for o, t in zip(operands, tangents)]
    outs = call_graph(cache[0], list(operands) + list(tangents))
    return outs[len(graph.outputs) + index]


def _remat_jax(*operands, graph, index):
    body = graph_function(graph)
    return import_jax().checkpoint(lambda *ops: body(*ops))(*operands)[index]


register(
    "remat_call", _remat_impl, abstract=_remat_abstract, vjp=_remat_vjp, jvp=_remat_jvp,
    jax=_remat_jax, family="subgraph",
    doc="output `index` of `graph` run on the operands; its backward recomputes the graph "
        "(tg.checkpoint)",
    # facts (registry): row by row under vmap, outputs may share the operands' memory
    batch=None, aliasing="unknown", ufunc=None, spelling=None, reducer=None,
    zeros=None, foldable=True, cost=per_output_element, torch_name="RematCallBackward0", jax_casts=None,
)
