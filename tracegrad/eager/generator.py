"""``tg.Generator``: PyTorch's CPU generator (``eager/random.py``), held by what takes a
``generator=`` argument (``DataLoader``, ``random_split``, the samplers, ``randperm``)."""
from __future__ import annotations

import numpy as np

from .creation import generator as _generator_of
from .random import Generator

__all__ = ["Generator", "numpy_generator", "torch_generator"]


def torch_generator(generator=None) -> Generator:
    """``generator`` (a ``tg.Generator``), or the default one ``tg.manual_seed`` seeds."""
    return _generator_of(generator)


def numpy_generator(generator=None) -> np.random.Generator:
    """A NumPy generator seeded from ``generator``'s stream, for draws PyTorch makes with
    kernels of its own (``multinomial``): reproducible under a seed, not PyTorch's numbers."""
    if isinstance(generator, np.random.Generator):
        return generator
    return np.random.default_rng(int(torch_generator(generator).random64(1)[0]))
