"""Forward mode: ``jvp``, the tangent graph of the traced function (``passes.jvp``)."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import passes
from .._typing import PyTree
from ..errors import TraceError
from ..ir.evaluate import call
from ..tracer import (
    flatten,
    unflatten,
    user_src,
)
from .tracing import _at, _check_cotangent, _Traced

__all__ = ["jvp"]


def jvp(fun: Callable[..., Any], primals: Sequence[PyTree],
        tangents: Sequence[PyTree]) -> tuple[PyTree, PyTree]:
    """Forward mode: ``fun``'s value and one Jacobian-vector product.

    Args:
        fun: the function to differentiate.
        primals: a tuple (or list) of the arguments to call ``fun`` with.
        tangents: a tuple of tangents, one per primal with its structure, shape and
            dtype.

    Returns:
        ``(fun(*primals), tangent_out)``, ``tangent_out`` with the structure of the
        output.

    Raises:
        TraceError: ``primals`` and ``tangents`` are not tuples of the same structure,
            a tangent's shape or dtype does not match its primal, or tracing fails.
    """
    src = user_src()
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TraceError(f"tg.jvp takes primals and tangents as tuples, e.g. "
                         f"tg.jvp(f, (x,), (v,)){_at(src)}")
    if len(primals) != len(tangents):
        raise TraceError(f"tg.jvp got {len(primals)} primals but {len(tangents)} tangents"
                         f"{_at(src)}")
    nums = tuple(range(len(primals)))
    t = _Traced(fun, tuple(primals), {}, nums, src, differentiable=False, check_complex=True)
    tan_leaves, tan_tree = flatten(tuple(tangents))
    primal_tree = flatten(tuple(primals))[1]
    if tan_tree != primal_tree:
        raise TraceError(f"tangents have structure {tan_tree!r}, primals "
                         f"{primal_tree!r}{_at(src)}")
    tans = []
    for n, tl in zip(t.graph.inputs, tan_leaves):
        d = t.graph.node(n)
        tans.append(_check_cotangent(tl, d["shape"], np.dtype(d["dtype"]), src, "a tangent"))
    # values the function closed over are constants for this jvp: zero tangents
    captured_zeros = [np.zeros(t.graph.node(n)["shape"], t.graph.node(n)["dtype"])
                      for n in t.graph.inputs[t.n_in:]]
    tangent_graph = passes.jvp(t.graph)
    n_fwd = len(t.graph.outputs)
    keep = tangent_graph.outputs[:t.n_out] + tangent_graph.outputs[n_fwd:n_fwd + t.n_out]
    tangent_graph = passes.prune(tangent_graph, keep)
    outs = call(tangent_graph, t.eval_args + tans + captured_zeros, owned=True)
    return unflatten(t.out_tree, outs[:t.n_out]), unflatten(t.out_tree, outs[t.n_out:])
