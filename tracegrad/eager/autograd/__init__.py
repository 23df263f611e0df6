"""``tg.autograd``: PyTorch's autograd API over tracegrad's recorded graphs."""
from .. import profiler
from ..anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from ..engine import backward, grad
from . import functional, graph
from .function import Function, FunctionCtx, once_differentiable
from .gradcheck import GradcheckError, gradcheck, gradgradcheck


def Variable(tensor, requires_grad=False, volatile=False):  # noqa: N802 - PyTorch's name
    """The pre-0.4 wrapper: returns the tensor itself (``requires_grad`` set if asked)."""
    if requires_grad:
        tensor.requires_grad_(True)
    return tensor


__all__ = ["backward", "grad", "Function", "FunctionCtx", "once_differentiable", "gradcheck",
           "gradgradcheck", "GradcheckError", "functional", "profiler", "detect_anomaly",
           "set_detect_anomaly", "is_anomaly_enabled", "Variable", "graph"]
