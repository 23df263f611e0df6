"""The interpret-then-compile policy both front ends run their backward plans by.

A plan is interpreted (``runtime.interpreter``) on its first uses and compiled to Python
source (``runtime.codegen``) once compiling pays: from its second use when it is small
(an eager training step's backward structure repeats every step), later when it is
large, since generating and compiling Python source costs more per node for a large
graph (about 15 us a node below ``LARGE_PLAN`` nodes, up to 80 above, where running it
compiled saves about 1.2 us a node per call).

The functional transforms' plans (``plans.Plan``: un-jitted ``tg.grad``/``tg.vjp`` of a
structure met again) wait for ``PLAN_COMPILE_AFTER`` uses: a small plan has a fixed cost
too (a 5-node backward graph takes about 300-450 us to generate and compile, then saves
about 40 us a call: 62 us interpreted, 20 compiled), and the structures such code meets
are often met only a few times (an optimiser's few Newton steps, the inner gradients of
a higher-order derivative, a fixed point's adjoint iterations).
"""
from __future__ import annotations

from ..ir.aliasing import fresh_bases
from ..passes.broadcasts import elide_broadcasts
from ..runtime.codegen import generate
from ..runtime.interpreter import run

COMPILE_AFTER = 2           # uses of a small plan before it is compiled to Python
PLAN_COMPILE_AFTER = 8      # ... of a small plan of the functional transforms
LARGE_PLAN = 1000           # nodes from which a plan counts as large
COMPILE_LARGE_AFTER = 12    # uses of a large plan before it is compiled


def compile_after(nodes, small=COMPILE_AFTER):
    """The use of a plan of ``nodes`` nodes from which it runs compiled: a large graph
    run only a few times costs less interpreted than generated, compiled and run (a
    fluid simulation's 80,000-node backward graph: 2 s to compile, 0.4 s a call
    interpreted, 0.2 s compiled)."""
    return small if nodes < LARGE_PLAN else max(small, COMPILE_LARGE_AFTER)


class Runner:
    """A graph run on lists of arguments by that policy.

    ``owned``: the outputs are the caller's own arrays (fresh, never an input's memory or
    a constant's; ``ir.aliasing``). ``prepare``, when given, turns the graph into the one
    compiled (the eager front end compiles its ``cse``); the interpreter runs the graph
    as made, so that observed runs (hooks, anomaly checks) see every node."""

    __slots__ = ("graph", "uses", "compiled", "bases", "prepare", "name", "after")

    def __init__(self, graph, owned=False, prepare=None, name="tracegrad_backward",
                 after=COMPILE_AFTER):
        self.graph = graph
        self.after = compile_after(len(graph), after)
        self.bases = fresh_bases(graph) if owned else None
        self.prepare = prepare
        self.name = name
        self.uses = 0
        self.compiled = None

    def __call__(self, args):
        self.uses += 1
        if self.compiled is None and self.uses >= self.after:
            g = self.graph if self.prepare is None else self.prepare(self.graph)
            self.compiled = generate(elide_broadcasts(g), self.name, bases=self.bases)
        if self.compiled is not None:
            return self.compiled(*args)
        return run(self.graph, args, bases=self.bases)
