"""The reference NumPy interpreter: one primitive implementation call per node.

It runs the IR's one evaluator (``ir.evaluate``) on arrays. Values are dropped as soon
as their last user has run, so peak memory is what the program needs, not the sum of
every intermediate; the outputs are the caller's own arrays (``ir.aliasing``).
"""
import numpy as np

from ..ir import Graph
from ..ir.aliasing import owned_outputs
from ..ir.evaluate import check_args, evaluate, last_uses

__all__ = ["run", "run_each", "check_args", "owned_outputs"]


def run(graph: Graph, args, env=None, observe=None, bases=None):
    """Evaluate ``graph`` on concrete arrays; returns the list of outputs. ``observe(node,
    value)``, when given, sees each computed value and returns the value to keep (the
    eager front end runs hooks, anomaly checks and the profiler through it). The outputs
    are the caller's own arrays, except where ``bases`` (see ``aliasing``; by default
    read off the graph) make one an input or a NumPy view of one."""
    env = dict(zip(graph.inputs, args)) if env is None else dict(env)
    inputs = [env.get(n) for n in graph.inputs]
    env = evaluate(graph, env, observe=observe, drops=last_uses(graph))
    return owned_outputs(graph, [env[o] for o in graph.outputs], inputs, bases)


def run_each(graph: Graph, arg_lists, positions):
    """``run`` once per argument list, the lists differing only at the input
    ``positions``: the nodes that depend on none of those inputs are evaluated once and
    shared."""
    if len(arg_lists) == 1:
        return [run(graph, [np.asarray(a) for a in arg_lists[0]])]
    varying = {graph.inputs[p] for p in positions}
    for n in graph:
        if any(a in varying for a in graph.args(n)):
            varying.add(n)
    shared = [n for n in graph if n not in varying]
    first = [np.asarray(a) for a in arg_lists[0]]
    fixed = dict(zip(shared, run(graph.subgraph(shared, keep=set(shared) | varying), first)))
    out = []
    for args in arg_lists:
        env = dict(fixed)
        env.update({graph.inputs[p]: np.asarray(args[p]) for p in positions})
        out.append(run(graph, [], env=env))
    return out

