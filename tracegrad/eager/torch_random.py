"""``torch.random`` (``tg.random``): the default generator's functions. Its state is a
``uint8`` tensor (tracegrad's layout of random.py's ``state_bytes``, not PyTorch's 5056
bytes) that ``set_rng_state`` takes back; this module sits above ``tensor.py`` to make
that tensor (random.py, below it, makes the draws every tensor operation uses)."""
from __future__ import annotations

from .random import (  # noqa: F401  (torch.random's names)
    Generator,
    default_generator,
    fork_rng,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
    state_bytes,
)
from .tensor import Tensor

__all__ = ["Generator", "default_generator", "get_rng_state", "set_rng_state", "manual_seed",
           "seed", "initial_seed", "fork_rng"]


def get_rng_state():
    """The default generator's state as a ``uint8`` tensor that ``set_rng_state`` takes."""
    return Tensor._plain(state_bytes(default_generator))


FUNCTIONS = {"get_rng_state": get_rng_state, "set_rng_state": set_rng_state,
             "initial_seed": initial_seed, "seed": seed}
