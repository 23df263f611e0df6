"""Activation modules: each holds its options and calls ``tg.nn.functional``."""
from __future__ import annotations

from ..creation import empty
from . import functional as F
from . import init
from .modules import Module, Parameter

__all__ = ["GELU", "SiLU", "Mish", "ELU", "SELU", "CELU", "Softplus", "Hardtanh", "ReLU6",
           "Hardsigmoid", "Hardswish", "LogSigmoid", "Softsign", "Tanhshrink", "Softmin",
           "PReLU", "Threshold", "GLU", "Softmax2d", "Hardshrink", "Softshrink", "RReLU"]


def _inplace_repr(inplace):
    return "inplace=True" if inplace else ""


class _Simple(Module):
    """An activation with only the ``inplace`` option (ignored by those without one)."""

    _fn = None

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        fn = type(self)._fn
        return fn(input, inplace=True) if self.inplace else fn(input)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class SiLU(_Simple):
    _fn = staticmethod(F.silu)


class Mish(_Simple):
    _fn = staticmethod(F.mish)


class SELU(_Simple):
    _fn = staticmethod(F.selu)


class Hardsigmoid(_Simple):
    _fn = staticmethod(F.hardsigmoid)


class Hardswish(_Simple):
    _fn = staticmethod(F.hardswish)


class LogSigmoid(Module):
    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(Module):
    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    def forward(self, input):
        return F.tanhshrink(input)


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class ELU(Module):
    _fn = staticmethod(F.elu)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return type(self)._fn(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    _fn = staticmethod(F.celu)


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if not max_val > min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return (f"min_val={self.min_val}, max_val={self.max_val}"
                + (", inplace=True" if self.inplace else ""))


class ReLU6(Hardtanh):
    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Softmin(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmin(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """``max(0, x) + a * min(0, x)`` with a learnt slope ``a`` (one, or one per channel),
    initialised to ``init``."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(empty(num_parameters, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        init_.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


init_ = init


class Threshold(Module):
    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return (f"threshold={self.threshold}, value={self.value}"
                + (", inplace=True" if self.inplace else ""))


class GLU(Module):
    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels (dimension -3) of (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             "instead")
        return F.softmax(input, -3)


class Hardshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    def forward(self, input):
        return F.softshrink(input, self.lambd)


class RReLU(Module):
    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace
                                                            else "")
