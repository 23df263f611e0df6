"""Lowering a graph to JAX: each node through its primitive's ``jax`` rule, the whole
graph under one ``jax.jit``.

float64 stays float64: tracing, compiling and running happen inside
``jax.enable_x64(True)``, so users need not switch JAX's x64 mode on globally.
Guards cannot be decided inside XLA, so their values are extra outputs,
checked on the host after the call.
"""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..ir import REGISTRY, Graph
from .codegen import GUARD_FAILED


def import_jax():
    try:
        import jax
    except ImportError:
        raise TraceError('backend="jax" needs JAX: pip install "tracegrad[jax]"') from None
    return jax


_PROMOTING = ("elementwise", "linalg")   # families whose operands NumPy promotes together


def graph_function(graph: Graph):
    """A Python function of jax arrays computing ``graph``'s outputs and guard values."""
    jax = import_jax()
    jnp = jax.numpy
    nodes = graph.nx.nodes
    for n in graph:
        op = nodes[n]["op"]
        if op not in ("input", "const") and REGISTRY[op].jax is None:
            raise TraceError(f"primitive {op} has no JAX lowering")

    def fn(*args):
        env = dict(zip(graph.inputs, args))
        for n in graph:
            d = nodes[n]
            if d["op"] == "input":
                continue
            if d["op"] == "const":
                env[n] = jnp.asarray(d["params"]["value"])
            else:
                prim = REGISTRY[d["op"]]
                operands = [env[a] for a in d["args"]]
                out_kind = np.dtype(d["dtype"]).kind
                if out_kind in "fc" and prim.family in _PROMOTING:
                    # JAX promotes mixed dtypes its own way (float32 with int64 stays
                    # float32, where NumPy computes in float64): integer operands are cast
                    # to the node's dtype first, so the arithmetic happens in it
                    operands = [x.astype(d["dtype"]) if i not in prim.nondiff_args
                                and np.dtype(x.dtype).kind in "iub" else x
                                for i, x in enumerate(operands)]
                value = prim.jax(*operands, **d["params"])
                # the graph says what NumPy gives, and that is what the node must hold
                if value.dtype != d["dtype"]:
                    value = value.astype(d["dtype"])
                env[n] = value
        outs = [env[o] for o in graph.outputs]
        if graph.guards:
            return outs, [env[g] for g, _ in graph.guards]
        return outs

    return fn


class JaxCompiled:
    def __init__(self, graph: Graph, **jit_options):
        self.jax = import_jax()
        self.graph = graph
        self.expected = [np.asarray(v) for _, v in graph.guards]
        self.jitted = self.jax.jit(graph_function(graph), **jit_options)
        self._x64 = self.jax.enable_x64(True)  # reusable: entering it is all a call costs

    def __call__(self, *args):
        with self._x64:
            result = self.jitted(*args)
        if not self.expected:
            return result
        outs, guards = result
        for value, expected in zip(guards, self.expected):
            if not np.array_equal(np.asarray(value), expected):
                return GUARD_FAILED
        return outs

    def as_text(self, *args):
        """The StableHLO module for arguments like ``args``."""
        with self.jax.enable_x64(True):
            return self.jitted.lower(*args).as_text()
