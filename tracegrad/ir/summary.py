"""``graph.summary()``: what a graph costs, at a glance.

FLOPs are estimates from shapes alone, counting a multiply-add as two; each
primitive's entry holds its rule (``Primitive.cost``): one per output element for
elementwise work, one per input element for reductions, ``2·m·k·n`` per matrix
product, the full index space for ``einsum`` and convolutions, and ``n³``-order
terms for the dense linear algebra. Views (reshape, transpose, indexing,
broadcasting) cost nothing.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .dtypes import aval_str
from .registry import REGISTRY


def flops(graph, n) -> int:
    """Node ``n``'s estimated FLOPs: its primitive's ``cost`` rule (see ``registry``)."""
    d = graph.node(n)
    if d["op"] in ("input", "const"):
        return 0
    args = [graph.node(a)["shape"] for a in d["args"]]
    return int(REGISTRY[d["op"]].cost(tuple(d["shape"]), args, d["params"]))


@dataclass
class Summary:
    nodes: int
    ops: Counter
    flops: int
    intermediate_bytes: int
    constant_bytes: int
    depth: int
    inputs: list
    outputs: list

    def __str__(self):
        lines = [f"{self.nodes} nodes, depth {self.depth}, ~{_si(self.flops)}FLOP, "
                 f"{_si(self.intermediate_bytes)}B of intermediates, "
                 f"{_si(self.constant_bytes)}B of constants",
                 "inputs:  " + ", ".join(self.inputs),
                 "outputs: " + ", ".join(self.outputs),
                 "ops:     " + ", ".join(f"{op} {k}" for op, k in self.ops.most_common())]
        return "\n".join(lines)


def _si(x):
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= scale:
            return f"{x / scale:.3g} {unit}"
    return f"{x} "


def summarize(graph) -> Summary:
    ops = Counter(graph.ops())
    intermediates = constants = total = 0
    for n, d in graph.items():
        nbytes = math.prod(d["shape"]) * np.dtype(d["dtype"]).itemsize
        if d["op"] == "const":
            constants += nbytes
        elif d["op"] != "input":
            intermediates += nbytes
        total += flops(graph, n)
    depth = max(graph.levels().values(), default=0)

    def aval(n):
        d = graph.node(n)
        return f"%{n}:{aval_str(d['shape'], d['dtype'])}"

    return Summary(len(graph), ops, total, intermediates, constants, depth,
                   [aval(n) for n in graph.inputs], [aval(n) for n in graph.outputs])
