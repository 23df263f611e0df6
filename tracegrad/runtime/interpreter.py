"""The reference NumPy interpreter: one primitive implementation call per node.

Values are dropped as soon as their last user has run, so peak memory is what
the program needs, not the sum of every intermediate.
"""
import numpy as np

from ..errors import TraceError
from ..ir import REGISTRY, Graph
from ..tracer import Tracer, replay, where
from ..tracer.core import _guard_holds, guard_failure_message
from .aliasing import own, plan


def _last_uses(graph: Graph):
    """node -> the nodes whose values can be dropped once it has run."""
    last = {}
    for n in graph:
        for a in graph.args(n):
            last[a] = n
    keep = set(graph.outputs) | {n for n, _ in graph.guards}
    drops = {}
    for a, n in last.items():
        if a not in keep:
            drops.setdefault(n, []).append(a)
    return drops


def check_args(graph: Graph, args):
    if len(args) != len(graph.inputs):
        raise TraceError(f"this graph takes {len(graph.inputs)} inputs, got {len(args)}"
                         f"{where()}")
    for i, (n, a) in enumerate(zip(graph.inputs, args)):
        d = graph.node(n)
        if tuple(np.shape(a)) != d["shape"]:
            raise TraceError(f"input {i} of this graph has shape {d['shape']}, got "
                             f"{tuple(np.shape(a))}{where()}")


def run(graph: Graph, args, env=None, observe=None, bases=None):
    """Evaluate ``graph`` on concrete arrays; returns the list of outputs. ``observe(node,
    value)``, when given, sees each computed value and returns the value to keep (the
    eager front end runs hooks, anomaly checks and the profiler through it). The outputs
    are the caller's own arrays, except where ``bases`` (see ``aliasing``; by default
    read off the graph) make one an input or a NumPy view of one."""
    env = dict(zip(graph.inputs, args)) if env is None else dict(env)
    inputs = [env.get(n) for n in graph.inputs]
    drops = _last_uses(graph)
    guards: dict = {}
    for n, expected in graph.guards:
        guards.setdefault(n, []).append(expected)
    nodes = graph.by_id
    for n in graph:
        if n not in env:
            d = nodes[n]
            op = d["op"]
            if op == "const":
                env[n] = d["params"]["value"]
            else:
                env[n] = REGISTRY[op].impl(*[env[a] for a in d["args"]], **d["params"])
            if observe is not None:
                env[n] = observe(n, env[n])
        # a branch decision is checked as soon as it is known: nothing after it runs
        # on inputs that take another branch
        for expected in guards.get(n, ()):
            if not _guard_holds(env[n], expected):
                raise TraceError(guard_failure_message(graph, n, expected, env[n]))
        for a in drops.get(n, ()):
            env.pop(a, None)
    return owned_outputs(graph, [env[o] for o in graph.outputs], inputs, bases)


def owned_outputs(graph: Graph, outs, inputs, bases=None):
    """``outs`` with a copy of each one that may share memory it must not (``aliasing``)."""
    consts = {n: d["params"]["value"] for n, d in graph.items() if d["op"] == "const"}
    suspects = {id(v) for v in inputs} | {id(v) for v in consts.values()}
    arrays = [v for v in outs if isinstance(v, np.ndarray)]
    if len({id(v) for v in arrays}) == len(arrays) and all(
            v.base is None and id(v) not in suspects for v in arrays):
        return outs     # every output is a buffer of its own (the common case): no copies
    # loop bodies run once per iteration: the plan is made once per graph and bases
    key = (tuple(graph.inputs), tuple(graph.outputs), len(graph),
           None if bases is None else tuple(bases))
    cache = graph.__dict__.setdefault("_alias_plans", {})
    if key not in cache:
        cache.clear()
        cache[key] = plan(graph, bases)
    result = []
    for v, (same, ins, cs, earlier, from_const) in zip(outs, cache[key]):
        if same is not None:
            result.append(result[same])
            continue
        others = [inputs[i] for i in ins] + [consts[c] for c in cs] + [result[j] for j in earlier]
        result.append(own(v, others, from_const))
    return result


def run_each(graph: Graph, args, last_values):
    """Run ``graph`` once per value of its last input (``args`` fill the others). The
    nodes that do not depend on that input are evaluated once and shared."""
    seed = graph.inputs[-1]
    varying = {seed}
    for n in graph:
        if any(a in varying for a in graph.args(n)):
            varying.add(n)
    shared = [n for n in graph if n not in varying]
    fixed = dict(zip(shared, run(graph.subgraph(shared, keep=set(shared) | {seed}),
                                 list(args) + [last_values[0]])))
    return [run(graph, [], env={**fixed, seed: value}) for value in last_values]


def call_graph(graph: Graph, args):
    """Run ``graph``: on NumPy, or inlined into the active trace if ``args`` are traced."""
    check_args(graph, args)
    if any(isinstance(a, Tracer) for a in args):
        env = replay(graph, args)
        return [env[o] for o in graph.outputs]
    return run(graph, [np.asarray(a) for a in args])
