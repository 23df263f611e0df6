"""``graph.summary()``: what a graph costs, at a glance.

FLOPs are estimates from shapes alone, counting a multiply-add as two: one per
output element for elementwise work, one per input element for reductions,
``2·m·k·n`` per matrix product, the full index space for ``einsum`` and
convolutions, and ``n³``-order terms for the dense linear algebra. Views
(reshape, transpose, indexing, broadcasting) cost nothing.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .dtypes import aval_str

_FREE = {"input", "const", "reshape", "transpose", "broadcast_to", "getitem", "stop_gradient",
         "custom_vjp_call", "zeros", "convert", "concatenate", "pad", "index_update"}
_REDUCTIONS = {"sum", "prod", "max", "min", "argmax", "argmin", "cumsum"}
_CUBIC = {"inv": 1.0, "solve": 2 / 3, "det": 2 / 3, "logabsdet": 2 / 3, "slogdet_sign": 2 / 3,
          "cholesky": 1 / 3}


def _size(shape):
    return math.prod(shape)


def flops(graph, n) -> int:
    d = graph.node(n)
    op, shape = d["op"], d["shape"]
    args = [graph.node(a)["shape"] for a in d["args"]]
    if op in _FREE:
        return 0
    if op in _REDUCTIONS:
        return _size(args[0])
    if op == "matmul":
        a, b = args
        k = a[-1] if a else 1
        return 2 * _size(shape) * k
    if op == "einsum":
        ins, _ = d["params"]["subscripts"].split("->")
        sizes = {}
        for letters, s in zip(ins.split(","), args):
            sizes.update(zip(letters, s))
        return 2 * math.prod(sizes.values())
    if op in ("conv2d", "conv_transpose2d"):
        w = args[1]
        return 2 * _size(shape) * _size(w[1:] if op == "conv2d" else (w[0],) + w[2:])
    if op in ("max_pool2d", "avg_pool2d"):
        return _size(shape) * _size(d["params"].get("kernel", (1, 1)))
    if op in _CUBIC:
        n_ = args[0][-1] if args and args[0] else 1
        batch = _size(args[0][:-2]) if args and len(args[0]) > 2 else 1
        return int(batch * _CUBIC[op] * 2 * n_ ** 3)
    return _size(shape)  # elementwise


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
        nbytes = _size(d["shape"]) * np.dtype(d["dtype"]).itemsize
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
