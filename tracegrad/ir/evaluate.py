"""The evaluator: one walk over a graph's nodes, shared by every consumer.

``evaluate`` visits the nodes in their (topological) order and applies each primitive
the way ``registry.apply`` does: on NumPy arrays it runs the primitive's implementation;
when an operand's type handles ``__tg_bind__`` (the tracer's ``Tracer``), that type
records the node instead, so evaluating a graph on traced values inlines it into the
active trace. Branch decisions (``graph.guards``) are checked as soon as their node is
known; a traced value records the guard in its own trace (``__tg_guard__``).

Its users, each an interpretation of the same walk:

- on NumPy arrays: the interpreter (``runtime.interpreter.run``, which adds dropping dead
  values and the ownership of outputs), ``call`` (``Graph.__call__``, and every rule that
  runs a sub-graph), the eager front end's backward pass;
- on values whose type binds (``__tg_bind__``): the tracer's ``replay`` (inlining a graph
  into a trace, which the passes build on), the batching pass (``passes.batch``, on
  ``Batched`` values applying batching rules) and the JVP pass (``passes.jvp``, on
  ``Dual`` values applying JVP rules);
- with a ``rule`` that sees the node itself: the JAX lowering (``runtime.jax_backend``,
  each node through its entry's ``jax`` rule, on jax arrays), the code generator
  (``runtime.codegen``, on ``Emitted`` values: a statement per node, a guard line where
  a guard is checked), ``simplify`` and ``cse`` (each node rebuilt in a new graph), and
  the reverse sweep of the adjoint pass (``passes.adjoint``), which walks the transposed
  graph: the nodes last first, each one's operands its users, each one's value what its
  VJP rule passed back to its operands.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import TraceError
from .aliasing import fresh_bases, owned_outputs, writeable
from .registry import REGISTRY, binder
from .source import where

if TYPE_CHECKING:     # graph.py imports this module (Graph.__call__)
    from .graph import Graph


class Nodes:
    """Nodes for ``evaluate`` to walk that are not a whole ``Graph``: ``by_id`` (node -> its
    attributes, at least ``"args"``, and ``"op"`` unless a ``rule`` computes every node)
    and ``order``, the order to visit them in. No guards."""
    __slots__ = ("by_id", "order")
    guards = ()

    def __init__(self, by_id, order):
        self.by_id, self.order = by_id, order

    def __iter__(self):
        return iter(self.order)


def guard_holds(value, expected):
    """The check the code generator writes (``codegen.guard_line``): a branch decided by
    ``bool(t)`` holds while ``bool(value)`` is the same, ``int(t)`` while the int is."""
    if isinstance(expected, (bool, np.bool_)):
        return bool(value) is bool(expected)
    if isinstance(expected, (int, np.integer)):
        return int(value) == int(expected)
    return np.array_equal(np.asarray(value), np.asarray(expected))


def _short(value):
    value = np.asarray(value)
    return repr(value.item()) if value.size == 1 else np.array2string(value, threshold=8)


def guard_failure_message(graph, n, expected, value):
    src = graph.node(n)["src"]
    return (f"these inputs take a different branch than the traced ones: the condition "
            f"at {src} was {_short(expected)} when traced and is now {_short(value)}. "
            "Trace the function again for these inputs (tg.trace / a transform call "
            "retraces; a saved graph does not)")


def check_guard(graph, n, value, expected):
    """Guard ``(n, expected)`` of ``graph`` on ``value``, node ``n``'s value: recorded in
    the trace of a traced value (its type's ``__tg_guard__``), else checked now."""
    record = getattr(type(value), "__tg_guard__", None)
    if record is not None:
        record(value, expected)
    elif not guard_holds(value, expected):
        raise TraceError(guard_failure_message(graph, n, expected, value))


def last_uses(graph: Graph) -> dict:
    """node -> the nodes whose values can be dropped once it has run (all but the
    outputs and the guarded nodes)."""
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


def evaluate(graph: Graph, env: dict, *, const=None, observe=None, drops=None,
             guards=True, rule=None) -> dict:
    """Evaluate ``graph`` into ``env`` (node -> value, holding at least the inputs; a node
    already in it is not evaluated again) and return ``env``.

    - ``const(value, src)``, when given, makes the value a constant node stands for (the
      tracer's replay makes it a constant node of the trace), else the array itself;
    - ``observe(node, value)``, when given, sees each value computed and returns the
      value to keep (hooks, anomaly checks and the profiler of the eager front end);
    - ``drops`` (``last_uses(graph)``): values removed from ``env`` once no node needs
      them, so peak memory is what the program needs;
    - ``guards=False`` skips ``graph.guards``;
    - ``rule(n, d, args)``, when given, computes every node not in ``env`` (inputs and
      constants included) from its attributes ``d`` and its operands' values ``args``:
      the interpretations that need the node itself rather than its primitive's
      implementation or its operands' ``__tg_bind__`` (the code generator emits a
      statement, ``simplify`` and ``cse`` rebuild the node in a new graph, the JAX
      lowering applies the entry's ``jax`` rule at the node's NumPy dtype).
    """
    checks: dict = {}
    if guards:
        for n, expected in graph.guards:
            checks.setdefault(n, []).append(expected)
    # whether a value may be traced: otherwise every node runs its NumPy implementation
    traced = const is not None or binder(env.values()) is not None
    nodes = graph.by_id
    for n in graph:
        if n not in env:
            d = nodes[n]
            if rule is not None:
                value = rule(n, d, [env[a] for a in d["args"]])
            elif (op := d["op"]) == "const":
                value = d["params"]["value"]
                if const is not None:
                    value = const(value, d["src"])
            elif op == "input":
                raise TraceError(f"input %{n} of the graph was given no value")
            else:
                args = [env[a] for a in d["args"]]
                bind = binder(args) if traced else None
                if bind is None:
                    value = REGISTRY[op].impl(*args, **d["params"])
                else:
                    value = bind(op, args, d["params"], d["src"])
            if observe is not None:
                value = observe(n, value)
            env[n] = value
        # a branch decision is checked as soon as it is known: nothing after it runs on
        # inputs that take another branch
        if n in checks:
            for expected in checks[n]:
                check_guard(graph, n, env[n], expected)
        if drops is not None:
            for a in drops.get(n, ()):
                env.pop(a, None)
    return env


def check_args(graph: Graph, args):
    """That ``args`` fit ``graph``'s inputs: their number, and each one's shape."""
    if len(args) != len(graph.inputs):
        raise TraceError(f"this graph takes {len(graph.inputs)} inputs, got {len(args)}"
                         f"{where()}")
    for i, (n, a) in enumerate(zip(graph.inputs, args)):
        d = graph.node(n)
        if tuple(np.shape(a)) != d["shape"]:
            raise TraceError(f"input {i} of this graph has shape {d['shape']}, got "
                             f"{tuple(np.shape(a))}{where()}")


def call(graph: Graph, args, *, owned=False, known=None, keep=None) -> list:
    """``graph``'s outputs on ``args``: inlined into the active trace when an argument's
    type replays graphs (``__tg_replay__``: a tracer), else run on NumPy, the outputs the
    caller's own arrays (``aliasing``). ``Graph.__call__``, the higher-order rules and
    the functional transforms.

    ``owned``: every output is a new writeable array, never an input, a view of one or a
    constant (derived values, derivatives and tangents, where NumPy would hand back the
    cotangent of ``lambda x: x`` itself). When inlining, ``known`` (node -> tracer): nodes
    already recorded in the trace, which are not recorded again; ``keep``: a dict that
    receives every node's value this records."""
    check_args(graph, args)
    for a in args:
        replay = getattr(type(a), "__tg_replay__", None)
        if replay is not None:
            env = replay(graph, args, known)
            if keep is not None:
                keep.update(env)
            return [env[o] for o in graph.outputs]
    arrays = [np.asarray(a) for a in args]
    env = evaluate(graph, dict(zip(graph.inputs, arrays)), drops=last_uses(graph))
    outs = owned_outputs(graph, [env[o] for o in graph.outputs], arrays,
                         fresh_bases(graph) if owned else None)
    return [writeable(v) for v in outs] if owned else outs
