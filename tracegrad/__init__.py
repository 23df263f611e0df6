"""tracegrad: a tracing autodiff compiler for plain NumPy code.

    import numpy as np
    import tracegrad as tg

    @tg.grad
    def loss(w):
        return np.sum((w * x - y) ** 2)
"""
from . import passes
from .api import custom_vjp, grad, hessian, jacobian, jvp, stop_gradient, trace, value_and_grad, vjp
from .compiled import jit
from .errors import RetraceWarning, TraceError
from .ir import Graph

__version__ = "0.1.0"

__all__ = ["TraceError", "RetraceWarning", "Graph", "jit", "passes", "grad", "value_and_grad", "vjp", "jvp",
           "jacobian", "hessian", "trace", "stop_gradient", "custom_vjp"]
