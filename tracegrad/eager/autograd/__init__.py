"""``tg.autograd``: PyTorch's autograd API over tracegrad's recorded graphs."""
import functools
import threading

from .. import profiler
from ..anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from ..engine import backward, grad
from ..grad_mode import enable_grad, no_grad, set_grad_enabled
from ..inference import inference_mode
from ..tensor_base import TensorBase
from . import functional, graph
from .function import Function, FunctionCtx, once_differentiable
from .gradcheck import GradcheckError, gradcheck, gradgradcheck


def Variable(tensor, requires_grad=False, volatile=False):  # noqa: N802 - PyTorch's name
    """The pre-0.4 wrapper: returns the tensor itself (``requires_grad`` set if asked)."""
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


class _Threading(threading.local):
    enabled = True


_threading = _Threading()


def is_multithreading_enabled():
    """Whether backward may run on device worker threads (torch's per-thread setting;
    tracegrad's backward runs on the calling thread whatever it says)."""
    return _threading.enabled


class set_multithreading_enabled:  # noqa: N801  (torch's name)
    """torch's context manager (and function, and decorator): sets the per-thread flag
    ``is_multithreading_enabled`` reads when made, restores the old one on exit."""

    def __init__(self, mode):
        self.prev = _threading.enabled
        _threading.enabled = bool(mode)
        self.mode = mode

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _threading.enabled = self.prev

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, fn):
        # (as torch's: the flag set by making it stays set, and each call sets it again)
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper


def is_tensor_like(inp):
    """torch.overrides.is_tensor_like: a tensor (of any subclass), a tensor class, or an
    object with ``__torch_function__``."""
    return isinstance(inp, TensorBase) or (isinstance(inp, type) and issubclass(
        inp, TensorBase)) or hasattr(inp, "__torch_function__")


__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "gradcheck",
           "gradgradcheck", "GradcheckError", "functional", "profiler", "detect_anomaly",
           "set_detect_anomaly", "is_anomaly_enabled", "Variable", "graph", "no_grad",
           "enable_grad", "set_grad_enabled", "inference_mode", "is_multithreading_enabled",
           "set_multithreading_enabled", "is_tensor_like"]
