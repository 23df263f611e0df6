"""``torch.autograd.graph``: ``Node`` (the class of every ``grad_fn``),
``increment_version``, ``save_on_cpu`` and ``disable_saved_tensors_hooks``.

``saved_tensors_hooks`` itself is not here: the engine compiles the adjoint of the
recorded graph and decides which forward values it reads (torch's saved tensors) only
when a backward runs, so it cannot call a pack hook per saved tensor when an operation
is recorded, as torch does. ``save_on_cpu`` moves saved tensors to the CPU, where every
tracegrad tensor already is: on a CPU-only machine it changes nothing, as torch's.
"""
from __future__ import annotations

import abc
import contextlib
import contextvars

from ..tape import GradFn
from ..tensor import Tensor

__all__ = ["Node", "increment_version", "save_on_cpu", "disable_saved_tensors_hooks"]


class Node(abc.ABC):  # noqa: B024  (torch's Node is for isinstance checks here)
    """The class of autograd graph nodes: ``isinstance(t.grad_fn, Node)`` holds."""


Node.register(GradFn)

_DISABLED: contextvars.ContextVar = contextvars.ContextVar("saved_tensors_hooks_disabled",
                                                           default=None)


def increment_version(tensor):
    """Bump the in-place counter of ``tensor`` (or of each tensor of an iterable), as an
    in-place change would."""
    tensors = (tensor,) if isinstance(tensor, Tensor) else tensor
    for t in tensors:
        t._vc.v += 1


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Inside, installing saved-tensor hooks (``save_on_cpu``) raises ``RuntimeError(
    error_message)``."""
    token = _DISABLED.set(error_message)
    try:
        yield
    finally:
        _DISABLED.reset(token)


class save_on_cpu:  # noqa: N801  (torch's name)
    """Saved tensors kept on the CPU: they are, so nothing changes (as with torch on a
    CPU-only machine, whose pack hook's ``tensor.cpu()`` returns the tensor itself)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        self.pin_memory = pin_memory
        self.device_type = device_type

    def __enter__(self):
        message = _DISABLED.get()
        if message is not None:
            raise RuntimeError(message)
        return self

    def __exit__(self, *exc):
        return False
