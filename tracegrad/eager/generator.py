"""``tg.Generator``: a random-number generator object as PyTorch's (``manual_seed``,
``initial_seed``, ``seed``), held by what takes a ``generator=`` argument (``DataLoader``,
``random_split``, the samplers). It wraps a NumPy ``Generator``: its draws are NumPy's,
reproducible under one seed, but not the same numbers as PyTorch's generator."""
from __future__ import annotations

import numpy as np

from .creation import generator as _global_generator

__all__ = ["Generator"]


class Generator:
    """A seeded source of random numbers (CPU only)."""

    def __init__(self, device="cpu"):
        if str(device) not in ("cpu", "cpu:0"):
            raise RuntimeError(f"Generator: only the CPU is supported here, not {device!r}; "
                               "use the JAX backend (tg.jit) for accelerators")
        self.device = "cpu"
        self.manual_seed(int(np.random.SeedSequence().entropy % (2 ** 63)))

    def manual_seed(self, seed):
        """Seed the generator; returns it (``tg.Generator().manual_seed(0)``)."""
        seed = int(seed)
        self._seed = seed
        self._rng = np.random.default_rng(seed % (2 ** 64))
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        """Re-seed from fresh entropy; returns the new seed."""
        seed = int(np.random.SeedSequence().entropy % (2 ** 63))
        self.manual_seed(seed)
        return seed

    def get_state(self):
        """The NumPy bit generator's state (a dict, not PyTorch's byte tensor)."""
        return self._rng.bit_generator.state

    def set_state(self, state):
        self._rng.bit_generator.state = state
        return self

    def __repr__(self):
        return f"<tracegrad.Generator seed={self._seed}>"


def numpy_generator(generator=None) -> np.random.Generator:
    """The NumPy generator behind ``generator``: a ``tg.Generator``, a NumPy ``Generator``,
    or ``None`` for the global one (``tg.manual_seed``)."""
    if generator is None:
        return _global_generator()
    if isinstance(generator, Generator):
        return generator._rng
    if isinstance(generator, np.random.Generator):
        return generator
    raise TypeError(f"generator must be a tracegrad.Generator, not {type(generator).__name__}")
