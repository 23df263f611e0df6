"""``tg.inference_mode`` (``torch.inference_mode``): grad mode off, and the tensors made
inside it marked as inference tensors (``t.is_inference()``).

A context manager and a decorator (``@inference_mode``, ``@inference_mode()``,
``@inference_mode(False)``); ``inference_mode(False)`` turns the marking off and grad
mode on (as torch's guard does, even inside ``no_grad``). The state is per thread
(``grad_mode._State``). Not reproduced: torch's errors for an inference tensor saved for
backward, or changed in place, outside inference mode.
"""
from __future__ import annotations

import functools

from . import grad_mode

__all__ = ["inference_mode", "is_inference_mode_enabled"]


def is_inference_mode_enabled() -> bool:
    """Whether this thread is inside ``inference_mode()`` (``torch.is_inference_mode_enabled``)."""
    return grad_mode._state.inference


class inference_mode:  # noqa: N801  (torch's name)
    """Inside it (``mode=True``) operations record nothing and their results are inference
    tensors."""

    def __new__(cls, mode=True):
        if mode is None or isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)          # @inference_mode, without parentheses

    def __init__(self, mode=True):
        self.mode = bool(mode)

    def __enter__(self):
        state = grad_mode._state
        self._prev = (state.enabled, state.inference)
        state.inference = self.mode
        state.enabled = not self.mode       # as torch's InferenceMode guard
        return self

    def __exit__(self, *exc):
        state = grad_mode._state
        state.enabled, state.inference = self._prev
        return False

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return inference_mode(self.mode)


class InferenceMethods:
    """``Tensor``'s ``is_inference`` (the ``_inference`` field is ``TensorBase``'s, set
    by its constructors inside ``inference_mode()``)."""

    __slots__ = ()

    def is_inference(self) -> bool:
        """Whether this tensor was made under ``inference_mode()``."""
        return getattr(self, "_inference", False)
