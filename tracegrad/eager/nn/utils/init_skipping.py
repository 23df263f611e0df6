"""``tg.nn.utils.skip_init``: build a module without spending its initialisation's draws."""
from __future__ import annotations

import inspect

from ..modules import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with its parameters left uninitialized as far as
    the random generator is concerned: PyTorch builds it on the meta device and allocates
    empty storage; tracegrad (CPU only) builds it normally and then puts the default
    generator back where it was, so later draws are PyTorch's. The parameters' values
    are unspecified (as PyTorch's are)."""
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    from ... import torch_random as _random
    state = _random.get_rng_state()
    try:
        return module_cls(*args, **kwargs)
    finally:
        _random.set_rng_state(state)
