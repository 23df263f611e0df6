"""Higher-order primitives: nodes whose params are graphs.

``scan``, ``while_loop`` and ``cond`` (``control``), ``while_derived`` (``while_reverse``:
reverse mode through ``while_loop``), ``custom_root`` (``implicit``: ``tg.custom_root``)
and ``remat_call`` (``subgraph``, for ``tg.checkpoint``). Their rules run, trace and
differentiate their sub-graphs, so this layer sits above the tracer, the passes and the
runtime; importing it registers the primitives into the IR's open registry
(``ir.register``). ``tracegrad/__init__`` imports it first, so the registry is complete
whenever ``tracegrad`` is imported (``Graph.from_json`` of a graph holding a scan
included).
"""
from . import control_primitives, custom_root, subgraph, while_reverse  # noqa: F401  (registers the primitives)
