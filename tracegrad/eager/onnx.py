"""``tg.onnx``: present so that ``import torch.onnx`` works; tracegrad writes no ONNX.
Its own format is JSON: the recorded graph of a forward pass, ``tg.recorded_graph(out)``
(or a ``tg.jit`` function's graph), saved with ``.to_json()`` and loaded again with
``tg.Graph.from_json``."""
from __future__ import annotations

__all__ = ["export", "is_in_onnx_export"]

_HOW = ("tracegrad cannot write ONNX. To save a model's computation as a graph, record a "
        "forward pass and write tracegrad's JSON instead: "
        "`out = model(*args); open(path, 'w').write(torch.recorded_graph(out).to_json())` "
        "(load it again with torch.Graph.from_json); to save the weights, use "
        "torch.save(model.state_dict(), path).")


def export(model, args=(), f=None, *more, **kwargs):
    """Refused: tracegrad has no ONNX writer (the message says how to save JSON)."""
    raise RuntimeError(_HOW)


def dynamo_export(*args, **kwargs):
    raise RuntimeError(_HOW)


def is_in_onnx_export():
    """Always ``False``: nothing is ever being exported to ONNX."""
    return False
