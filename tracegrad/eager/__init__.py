"""The PyTorch-style eager front end: ``tg.tensor``, ``.backward()``, ``tg.autograd``,
``tg.nn``, ``tg.optim``, recorded on the same IR the transforms use."""
from typing import TYPE_CHECKING, Any

from . import ops as _ops  # noqa: F401  (installs the tensor operations)
from .creation import (
    arange,
    as_tensor,
    bool_,
    empty,
    empty_like,
    eye,
    float16,
    float32,
    float64,
    from_numpy,
    full,
    full_like,
    get_default_dtype,
    int8,
    int32,
    int64,
    is_floating_point,
    is_tensor,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    set_default_dtype,
    tensor,
    uint8,
    zeros,
    zeros_like,
)
from .generator import Generator
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .ops import FUNCTIONS
from .serialization import load, save
from .tape import recorded_graph
from .tensor import Size, Tensor

globals().update(FUNCTIONS)

if TYPE_CHECKING:
    # For type checkers only: the eager functions (tg.cat, tg.exp, ...) come from a table.
    def __getattr__(name: str) -> Any: ...

__all__ = ["Tensor", "Size", "tensor", "as_tensor", "from_numpy", "ones", "zeros", "full",
           "empty", "eye", "rand", "randn", "randint", "randperm", "ones_like", "zeros_like",
           "full_like", "empty_like", "rand_like", "randn_like", "arange", "linspace",
           "manual_seed", "set_default_dtype", "get_default_dtype", "is_tensor",
           "is_floating_point", "float16", "float32", "float64", "int8", "int32", "int64",
           "uint8", "bool_", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
           "recorded_graph"]
__all__ += ["Generator", "save", "load"]
__all__ += list(FUNCTIONS)   # (a separate line: the doc generator reads the names above statically)
