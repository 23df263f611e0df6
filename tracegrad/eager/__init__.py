"""The PyTorch-style eager front end: ``tg.tensor``, ``.backward()``, ``tg.autograd``,
``tg.nn``, ``tg.optim``, recorded on the same IR the transforms use."""
from typing import TYPE_CHECKING, Any

from .conversion import public_result_type as result_type
from .creation import (
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    arange,
    as_tensor,
    bool_,
    complex64,
    complex128,
    empty,
    empty_like,
    eye,
    finfo,
    float16,
    float32,
    float64,
    from_numpy,
    full,
    full_like,
    get_default_dtype,
    iinfo,
    int8,
    int16,
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
    set_default_tensor_type,
    tensor,
    uint8,
    zeros,
    zeros_like,
)
from .device import accelerator, backends, cuda, device, get_default_device, set_default_device
from .functions import FUNCTIONS
from .generator import Generator
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .inference import inference_mode, is_inference_mode_enabled
from .promotion import can_cast
from .promotion import public_promote_types as promote_types
from .serialization import load, save
from .tape import recorded_graph
from .tensor import Size, Tensor

globals().update(FUNCTIONS)
half, short, cfloat, cdouble = float16, int16, complex64, complex128     # torch's other names

if TYPE_CHECKING:
    # For type checkers only: the eager functions (tg.cat, tg.exp, ...) come from a table.
    def __getattr__(name: str) -> Any: ...

__all__ = ["Tensor", "Size", "tensor", "as_tensor", "from_numpy", "ones", "zeros", "full",
           "empty", "eye", "rand", "randn", "randint", "randperm", "ones_like", "zeros_like",
           "full_like", "empty_like", "rand_like", "randn_like", "arange", "linspace",
           "manual_seed", "set_default_dtype", "get_default_dtype", "is_tensor",
           "is_floating_point", "float16", "float32", "float64", "int8", "int16", "int32",
           "int64", "uint8", "bool_", "complex64", "complex128", "half", "short", "cfloat",
           "cdouble", "promote_types", "result_type", "can_cast", "no_grad", "enable_grad",
           "set_grad_enabled", "is_grad_enabled", "recorded_graph", "device", "cuda", "backends",
           "accelerator", "set_default_device", "get_default_device", "FloatTensor",
           "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor", "CharTensor",
           "ByteTensor", "BoolTensor", "set_default_tensor_type", "finfo", "iinfo"]
__all__ += ["Generator", "save", "load", "inference_mode", "is_inference_mode_enabled"]
__all__ += list(FUNCTIONS)   # (a separate line: the doc generator reads the names above statically)
from .tensor_repr import set_printoptions  # noqa: E402  (torch.set_printoptions; repr(t) as torch's)

__all__ += ["set_printoptions"]
from .sparse_coo import sparse, sparse_coo, sparse_coo_tensor, spmm, strided  # noqa: E402

__all__ += ["sparse", "sparse_coo", "sparse_coo_tensor", "strided", "spmm"]
