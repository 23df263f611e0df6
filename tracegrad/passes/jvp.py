"""Forward mode as a graph-to-graph pass: the one evaluator (``ir.evaluate``) run on dual
values, as ``batch`` runs it on batched ones.

A ``Dual`` holds a node's value in the tangent graph (a tracer of the pass's trace; a
tuple of them for a multi-output node) and its tangent (None where no differentiated
input reaches it, or where it is not floating-point). Its ``__tg_bind__`` records the
node on the primal values and applies the primitive's JVP rule to the operands'
tangents, so the primal and tangent graphs are built in one walk, node by node.
"""
from __future__ import annotations

import numpy as np

from ..ir import PROJ, REGISTRY, Graph, apply
from ..ir.dtypes import is_float
from ..ir.evaluate import evaluate, guard_holds
from ..tracer import Tracer, new_trace, source_override
from .common import abstract_inputs, at_node, finish, fit, zeros


class Dual:
    """A value of the graph being differentiated in forward mode, as ``ir.evaluate``
    holds it: ``primal`` (its value in the tangent graph) and ``tangent`` (or None)."""
    __slots__ = ("primal", "tangent")

    def __init__(self, primal, tangent):
        self.primal, self.tangent = primal, tangent

    def __repr__(self):
        return f"Dual({self.primal!r}, {self.tangent!r})"

    @staticmethod
    def __tg_bind__(name, args, params, src=None):
        primals = [a.primal if isinstance(a, Dual) else a for a in args]
        tangents = [a.tangent if isinstance(a, Dual) else None for a in args]
        if name == PROJ:    # one output of a multi-output node: picked out of its tangents
            k = params["index"]
            primal = primals[0][k]
            head = tangents[0]
            t = None if head is None else head[k]
            if t is not None:
                with source_override(src):
                    t = fit(t, np.shape(primal), primal.dtype, tangent=True)
            return Dual(primal, t)
        prim = REGISTRY[name]
        node = {"src": src}
        with at_node(node):
            primal = apply(name, *primals, **params)
        if not (prim.multi or is_float(primal.dtype)):  # (a multi-output node: its
            return Dual(primal, None)                   # projections' dtypes decide)
        tangents = [None if i in prim.nondiff_args else t for i, t in enumerate(tangents)]
        if prim.jvp is None or all(t is None for t in tangents):
            return Dual(primal, None)
        with at_node(node):
            t = prim.jvp(tangents, primal, *primals, **params)
            if t is not None:
                t = tuple(t) if prim.multi else fit(t, np.shape(primal), primal.dtype,
                                                     tangent=True)
        return Dual(primal, t)

    def __tg_guard__(self, expected):
        # a branch decision of the graph: recorded in the tangent graph's trace
        if isinstance(self.primal, Tracer):
            self.primal.__tg_guard__(expected)
        elif not guard_holds(self.primal, expected):
            raise AssertionError("internal error: a constant branch decision changed")


def jvp(graph: Graph) -> Graph:
    """The tangent graph of ``graph``.

    Its inputs are ``graph``'s inputs followed by one tangent per input; its
    outputs are ``graph``'s outputs followed by one tangent per output.
    """
    with new_trace() as trace:
        primals = abstract_inputs(trace, graph, graph.inputs)
        tangents_in = abstract_inputs(trace, graph, graph.inputs)
        env = {n: Dual(p, t if is_float(graph.node(n)["dtype"]) else None)
               for n, p, t in zip(graph.inputs, primals, tangents_in)}

        def const(value, src):
            with source_override(src):
                return Dual(trace.const(value, snapshot=False), None)
        evaluate(graph, env, const=const)
        outs, out_tangents = [], []
        for o in graph.outputs:
            v = env[o]
            primal, t = (v.primal, v.tangent) if isinstance(v, Dual) else (v, None)
            outs.append(primal)
            d = graph.node(o)
            out_tangents.append(t if t is not None else zeros(trace, d["shape"], d["dtype"]))
        return finish(trace, outs + out_tangents)
