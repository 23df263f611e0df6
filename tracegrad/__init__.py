"""tracegrad: a tracing autodiff compiler for plain NumPy code.

    import numpy as np
    import tracegrad as tg

    @tg.grad
    def loss(w):
        return np.sum((w * x - y) ** 2)
"""
from typing import TYPE_CHECKING, Any

from . import eager as _eager
from . import higher, passes, scipy  # noqa: F401  (higher: registers the higher-order primitives)
from .eager import *  # noqa: F403  (the PyTorch-style API: tg.tensor, tg.ones, tg.cat, ...)
from .eager import autograd
from .eager.creation import bool_ as bool  # noqa: A001  (PyTorch's name for the dtype)
from .eager.creation import float32 as float  # noqa: A001
from .eager.creation import float64 as double
from .eager.creation import int32 as int  # noqa: A001
from .eager.creation import int64 as long
from .errors import RetraceWarning, TraceError
from .ir import Graph
from .transforms.checkpoint import checkpoint
from .transforms.control_flow import cond, fori_loop, scan, while_loop
from .transforms.custom_rules import custom_vjp
from .transforms.forward import jvp
from .transforms.jacobians import hessian, jacobian
from .transforms.jit import jit
from .transforms.pure_callback import ShapeDtypeStruct, pure_callback
from .transforms.reverse import grad, value_and_grad, vjp
from .transforms.tracing import stop_gradient, trace
from .transforms.vmap import vmap

__version__ = "0.1.0"

if TYPE_CHECKING:
    # For type checkers only: the eager functions (tg.cat, tg.exp, ...) come from a table.
    def __getattr__(name: str) -> Any: ...


def _alias_eager_modules():
    """``import tracegrad.autograd`` (``from tracegrad.autograd import Function``) as with
    torch: the eager packages live in ``tracegrad/eager`` but answer to the short names."""
    import sys

    prefix = __name__ + ".eager."
    for name, module in list(sys.modules.items()):
        if name.startswith(prefix):
            short = __name__ + "." + name[len(prefix):]
            if short.split(".")[1] in ("autograd", "nn", "optim", "utils", "onnx", "linalg",
                                       "return_types", "distributions"):
                sys.modules.setdefault(short, module)


from .eager import distributions, linalg, nn, onnx, optim, return_types, utils  # noqa: E402
from .eager.compile import compile  # noqa: E402,A001  (torch.compile)

_alias_eager_modules()

# torch.random (tracegrad/eager/torch_random.py): get_rng_state, set_rng_state, fork_rng, ...
from .eager import torch_random as random  # noqa: E402

__import__("sys").modules.setdefault(__name__ + ".random", random)

# the JAX surface (issue 15): pytrees, ravel_pytree, debug printing, optimizers
from .transforms import debug, flatten_util, optimizers, tree_util  # noqa: E402


def _alias_public_modules():
    """``import tracegrad.tree_util`` (and ``debug``, ``flatten_util``, ``optimizers``), as
    with ``jax.tree_util``: these live in ``tracegrad/transforms`` but answer to the
    short names."""
    import sys

    for module in (debug, flatten_util, optimizers, tree_util):
        sys.modules.setdefault(__name__ + "." + module.__name__.rsplit(".", 1)[1], module)


_alias_public_modules()

# torch.func and torch.jit (issue 25): ``from torch.func import grad, vmap`` and
# ``torch.jit.script`` where torch is tracegrad; tg.jit stays the functional jit, with
# script/trace/... as its attributes (tracegrad/functorch/script.py)
from .functorch import func  # noqa: E402
from .functorch import script as _torch_jit  # noqa: E402


def _alias_torch_modules():
    import sys
    sys.modules.setdefault(__name__ + ".func", func)
    sys.modules.setdefault(__name__ + ".jit", _torch_jit)


_alias_torch_modules()

__all__ = ["TraceError", "RetraceWarning", "Graph", "jit", "passes", "grad", "value_and_grad", "vjp",
           "jvp", "jacobian", "hessian", "trace", "stop_gradient", "custom_vjp", "checkpoint",
           "cond", "fori_loop", "while_loop", "scan", "vmap", "autograd", "bool", "float", "double", "int",
           "long", "func", "nn", "onnx", "optim", "utils", "compile", "linalg", "return_types",
           "pure_callback", "ShapeDtypeStruct", "scipy", "distributions",
           "tree_util", "flatten_util", "debug", "optimizers", *_eager.__all__]

# torch.conv2d, torch.layer_norm, torch.dropout, ...: the nn operations torch exports at its
# top level, with its native functions' signatures (tracegrad/eager/nn/natives.py)
from .eager.nn.natives import NATIVES as _NATIVES  # noqa: E402

globals().update({k: v for k, v in _NATIVES.items() if k not in globals()})
__all__ += [k for k in _NATIVES if k not in __all__]
# torch.lu, torch.triangular_solve, torch.addmv, ... (and the removed names' errors)
from .eager.linalg import LEGACY_FUNCTIONS as _LEGACY_LINALG  # noqa: E402

globals().update({k: v for k, v in _LEGACY_LINALG.items() if k not in globals()})
__all__ += [k for k in _LEGACY_LINALG if k not in __all__]

# implicit differentiation (issue 15): roots and linear solves
from .transforms.implicit_diff import custom_linear_solve, custom_root  # noqa: E402

__all__ += ["custom_root", "custom_linear_solve"]

# torch.fft (tracegrad/eager/fft.py): tg.fft.rfft, ``from tracegrad.fft import rfft``
from .eager import fft  # noqa: E402

__import__("sys").modules.setdefault(__name__ + ".fft", fft)
__all__ += ["fft"]

# torch.special (tracegrad/eager/torch_special.py): tg.special.erfcx,
# ``from tracegrad.special import expit``
from .eager import torch_special as special  # noqa: E402

__import__("sys").modules.setdefault(__name__ + ".special", special)
__all__ += ["special"]

# torch.testing, torch.amp / torch.autocast / torch.GradScaler, torch.cuda.amp
# (tracegrad/eager/testing.py, tracegrad/eager/amp.py)
from .eager import amp, testing  # noqa: E402

autocast, GradScaler, is_autocast_enabled = amp.autocast, amp.GradScaler, amp.is_autocast_enabled
for _m, _name in ((testing, "testing"), (amp, "amp"), (amp.cuda_amp, "cuda.amp")):
    __import__("sys").modules.setdefault(__name__ + "." + _name, _m)
del _m, _name
__all__ += ["testing", "amp", "autocast", "GradScaler", "is_autocast_enabled"]

# torch.pi, torch.set_num_threads, torch.isin, torch.asarray, torch.exp_(t), ...
# (tracegrad/eager/torch_misc.py)
from .eager.torch_misc import FUNCTIONS as _MISC  # noqa: E402

globals().update({k: v for k, v in _MISC.items() if k not in globals()})
__all__ += [k for k in _MISC if k not in __all__]

# torch.compiler, torch.cpu, torch.version (tracegrad/eager/torch_compiler.py)
from .eager.torch_compiler import compiler, cpu, version  # noqa: E402

version.__version__ = __version__
for _m in (compiler, cpu, version):
    __import__("sys").modules.setdefault(_m.__name__, _m)
del _m
__all__ += ["compiler", "cpu", "version"]
