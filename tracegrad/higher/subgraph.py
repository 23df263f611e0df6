"""Primitives whose parameter is a graph: ``remat_call`` (``tg.checkpoint``), and the
caches every such primitive shares.

A ``remat_call`` node runs its ``graph`` param on its operands once and gives all of its
outputs (a multi-output node: one output per output of ``graph``, see
``ir/registry.py``). Only those outputs are kept: the sub-graph's intermediates live
while the node runs and are gone afterwards. Its VJP inlines the adjoint of the
sub-graph (seeded with the outputs that receive a cotangent), which recomputes the
forward values it needs: the backward pass rematerialises them instead of the forward
pass storing them. Running a sub-graph and deriving its adjoint use the runtime and the
passes: this layer sits above both, and registers its primitives into the IR's open
registry when ``tracegrad`` is imported.

Sub-graphs are values, never changed once held by a node: what is made from one (its
generated code, its adjoint or tangent graph) is made once and kept in ``derived``, a
cache keyed by the graph object that lets go of its entries with the graph.
"""
import functools
import weakref

import numpy as np

from ..errors import TraceError
from ..ir.evaluate import call
from ..ir.registry import Aval
from ..ir.registry import register as _register
from ..ir.schema import GRAPH, Spec, _remat  # the loader's parameter kinds
from ..passes.adjoint import adjoint
from ..passes.jvp import jvp
from ..passes.prune import prune
from ..runtime.codegen import generate
from ..runtime.jax_backend import graph_function, import_jax
from ..tracer import Tracer, new_trace

# The sub-graph's own nodes are checked for complex rules one by one.
register = functools.partial(_register, complex=True)

# graph -> {key: what was made from it}; an entry goes when its graph does
_DERIVED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def derived(graph, key, make):
    """``make(graph)``, made once per ``graph`` and ``key`` (a hashable description of
    what ``make`` makes: ``("adjoint", seeds)``)."""
    cache = _DERIVED.get(graph)
    if cache is None:
        cache = _DERIVED[graph] = {}
    if key not in cache:
        cache[key] = make(graph)
    return cache[key]


def avals_of(graph, nodes):
    """``(shape, dtype)`` of each of ``graph``'s ``nodes``."""
    return [(tuple(graph.node(n)["shape"]), np.dtype(graph.node(n)["dtype"])) for n in nodes]


def trace_graph(fn, avals):
    """A pruned graph of ``fn`` over inputs of ``avals`` (a rule's derived loop body: every
    value it uses is an input)."""
    with new_trace() as trace:
        ins = [trace.new_input(aval=Aval(tuple(s), np.dtype(d))) for s, d in avals]
        outs = fn(*ins)
        if trace.captured:
            raise TraceError("internal: a derived loop body captured an outer value")
        trace.graph.outputs = [(o if isinstance(o, Tracer) else trace.const(o))._node
                               for o in outs]
    # without the nodes no output needs (a rule's cotangent for a constant operand, which
    # may even warn: log of a negative base)
    return prune(trace.graph)


def compiled(graph):
    """``graph`` as generated NumPy code, made once per graph."""
    return derived(graph, "compiled", lambda g: generate(g, "tracegrad_body"))


def adjoint_of(graph, seeds):
    """``graph``'s adjoint seeded with the outputs ``seeds`` (a tuple), pruned, made once:
    its inputs are ``graph``'s then one cotangent per seed, its outputs ``graph``'s then one
    cotangent per input (``passes.adjoint``)."""
    return derived(graph, ("adjoint", seeds), lambda g: prune(adjoint(g, seeds=list(seeds))))


def tangent_graph(graph):
    """``graph``'s tangent graph (``passes.jvp``), pruned, made once."""
    return derived(graph, "jvp", lambda g: prune(jvp(g)))


def outputs_of(name):
    """The ``outputs=`` of a primitive giving one output per output of its graph param
    ``name``."""
    return lambda **params: len(params[name].outputs)


def seeded(gs):
    """The positions of the cotangents that are there (a multi-output VJP's ``gs`` has
    None for an output that receives none)."""
    return tuple(i for i, g in enumerate(gs) if g is not None)


def zero_tangents(operands, tangents):
    """``tangents`` with zeros for the operands that have none."""
    return [np.zeros(np.shape(o), o.dtype if hasattr(o, "dtype") else np.result_type(o))
            if t is None else t for o, t in zip(operands, tangents)]


def _remat_impl(*operands, graph):
    return tuple(compiled(graph)(*[np.asarray(o) for o in operands]))


def _remat_abstract(*avals, graph):
    return avals_of(graph, graph.outputs)


def _remat_vjp(gs, outs, *operands, graph):
    seeds = seeded(gs)
    cts = call(adjoint_of(graph, seeds), list(operands) + [gs[i] for i in seeds])
    return tuple(cts[len(graph.outputs):])


def _remat_jvp(tangents, outs, *operands, graph):
    res = call(tangent_graph(graph), list(operands) + zero_tangents(operands, tangents))
    return tuple(res[len(graph.outputs):])


def _remat_jax(*operands, graph):
    body = graph_function(graph)
    return tuple(import_jax().checkpoint(lambda *ops: body(*ops))(*operands))


register(
    "remat_call", _remat_impl, abstract=_remat_abstract, vjp=_remat_vjp, jvp=_remat_jvp,
    jax=_remat_jax, family="subgraph", outputs=outputs_of("graph"),
    doc="the outputs of `graph` run on the operands; its backward recomputes the graph "
        "(tg.checkpoint)",
    # facts (registry): row by row under vmap, outputs may share the operands' memory
    batch=None,
    schema=Spec({"graph": GRAPH}, None, _remat),
)
