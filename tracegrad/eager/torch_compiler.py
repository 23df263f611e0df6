"""``torch.compiler``, ``torch.cpu`` and ``torch.version`` (``tg.compiler``, ``tg.cpu``,
``tg.version``): the names programs use around ``torch.compile`` and to ask about the
machine.

``compiler.disable(fn)`` makes a call of ``fn`` inside a ``tg.compile`` capture a graph
break (the compiled function's call runs eagerly, its submodules and optimizer steps
compiled: docs/compile.md), as torch runs a disabled function outside the graph;
``is_compiling()`` is True while a capture runs. ``reset()`` has nothing to clear: each
``tg.compile`` object holds its own graphs (there is no process-wide cache).
"""
from __future__ import annotations

import functools
import types

from ..ir.source import user_src
from .compile import compile as _compile
from .compile.capture import GraphBreak
from .tensor_base import CAPTURE

# -- torch.compiler ---------------------------------------------------------------------------
compiler = types.ModuleType("tracegrad.compiler", __doc__)


def is_compiling():
    """True while ``tg.compile`` is capturing (the code runs on traced tensors)."""
    return CAPTURE.get() is not None


def disable(fn=None, recursive=True, *, reason=None):
    """``fn`` run eagerly: called during a capture, it is a graph break."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)

    @functools.wraps(fn)
    def outside_the_graph(*args, **kwargs):
        if CAPTURE.get() is not None:
            name = getattr(fn, "__qualname__", repr(fn))
            raise GraphBreak(f"{name} is marked torch.compiler.disable"
                             + (f" ({reason})" if reason else ""), user_src())
        return fn(*args, **kwargs)
    return outside_the_graph


def reset():
    """Nothing to clear: each ``tg.compile`` object keeps its own graphs."""


def allow_in_graph(fn):
    """``fn`` itself: tg.compile captures what it calls (its operations are recorded)."""
    return fn


def assume_constant_result(fn):
    return fn


def list_backends(exclude_tags=()):
    return ["jax", "numpy"]


def cudagraph_mark_step_begin():
    """No CUDA graphs here: nothing to mark."""


for _f in (is_compiling, disable, reset, allow_in_graph, assume_constant_result, list_backends,
           cudagraph_mark_step_begin):
    setattr(compiler, _f.__name__, _f)
compiler.compile = _compile
compiler.is_dynamo_compiling = is_compiling
compiler.is_exporting = lambda: False

# -- torch.cpu --------------------------------------------------------------------------------
cpu = types.ModuleType("tracegrad.cpu", "``torch.cpu``: the one device tensors live on.")
cpu.is_available = lambda: True
cpu.is_initialized = lambda: True
cpu.device_count = lambda: 1
cpu.current_device = lambda: "cpu"
cpu.synchronize = lambda device=None: None


def _set_device(device):
    """Only the CPU is there (``"cpu"`` or 0 is accepted)."""
    if device not in ("cpu", 0, None) and str(device) != "cpu":
        raise ValueError(f"Expected a cpu device, but got: {device}")


cpu.set_device = _set_device

# -- torch.version ----------------------------------------------------------------------------
version = types.ModuleType("tracegrad.version", "``torch.version``: this build (CPU only).")
version.cuda = None
version.hip = None
version.debug = False
version.git_version = "unknown"
del _f
