"""Random draws for the distributions that tracegrad's tensor API does not already offer:
gamma variates (and the Dirichlet vectors built from them), plus the implicit
reparameterisation gradient that makes gamma draws differentiable in their shape.

Gamma variates use Marsaglia and Tsang's squeeze-and-reject method ("A simple method for
generating gamma variables", ACM TOMS 26(3), 2000) with their boosting trick for shapes
below one. The draws come from tracegrad's generator one at a time: a 53-bit uniform for
the boost (when the shape is below one), then, per attempt, one Box-Muller normal and one
53-bit uniform. Uniforms enter as ``1 - u`` so their logarithm is finite. Working out by
experiment which constants PyTorch's CPU kernel keeps in single precision (1/3 and 0.0331
always; the shape itself and ``d = shape - 1/3`` when the tensor is float32) makes the
numbers equal to PyTorch's for the same seed.
"""
from __future__ import annotations

import math

import numpy as np

import tracegrad.eager as tg

from ..creation import _finish
from ..dispatch import CAPTURE
from ..random import generator_of

_THIRD = float(np.float32(1.0) / np.float32(3.0))
_SQUEEZE = float(np.float32(0.0331))


def _gamma_variate(shape, gen, single):
    """One Gamma(``shape``, 1) variate as a Python float (``single``: float32 arithmetic
    on the shape, as for a float32 tensor)."""
    one = np.float32(1.0) if single else 1.0
    a = np.float32(shape) if single else float(shape)
    if a == 0:
        return 0.0
    boost = 1.0
    if a < 1:
        # Gamma(a) = Gamma(a + 1) * U^(1/a): sample the easier shape a + 1 instead
        boost = (1.0 - gen._uniform53()) ** float(one / a)
        a = a + one
    d = float(a - np.float32(_THIRD)) if single else a - _THIRD
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        z = gen._one_normal()
        t = 1.0 + c * z
        if t <= 0:
            continue                      # outside the transformation's range: redraw z
        v = t * t * t
        u = 1.0 - gen._uniform53()
        z2 = z * z
        if u < 1.0 - _SQUEEZE * z2 * z2:  # cheap acceptance test (the squeeze)
            return boost * d * v
        if math.log(u) < 0.5 * z2 + d * (1.0 - v + math.log(v)):
            return boost * d * v


def _draw(alpha, single):
    """Gamma variates (float64 array) for every element of the array ``alpha`` in C
    order; recorded as the generator's draws when ``tg.compile`` is capturing."""
    gen = generator_of(None)

    def make():
        flat = [_gamma_variate(a, gen, single) for a in alpha.reshape(-1).tolist()]
        return np.array(flat, np.float64).reshape(alpha.shape)
    capture = CAPTURE.get()
    return make() if capture is None else capture.drawn(gen, make)


def standard_gamma(alpha):
    """Gamma(``alpha``, 1) draws of ``alpha``'s shape and dtype (no gradient), at least the
    dtype's smallest normal number so that a log density stays finite."""
    a = np.asarray(alpha.detach()._concrete("gamma sampling"))
    out = _draw(a, a.dtype == np.float32).astype(a.dtype)
    return _finish(np.maximum(out, np.finfo(a.dtype).tiny), False)


def dirichlet(alpha):
    """Dirichlet(``alpha``) draws over the last dimension: gamma variates drawn in double
    precision, normalised by their sum, rounded to ``alpha``'s dtype and kept inside
    the open simplex."""
    a = np.asarray(alpha.detach()._concrete("Dirichlet sampling"))
    g = np.maximum(_draw(a.astype(np.float64), False), np.finfo(np.float64).tiny)
    out = (g / g.sum(-1, keepdims=True)).astype(a.dtype)
    below_one = np.nextafter(a.dtype.type(1), a.dtype.type(0))
    return _finish(np.clip(out, np.finfo(a.dtype).tiny, below_one), False)


def _dx_dalpha(x, alpha):
    """How a Gamma(alpha, 1) draw ``x`` moves with ``alpha`` when it is seen as the
    inverse CDF of a fixed uniform: differentiating ``P(alpha, x) = u`` gives
    ``dx/dalpha = -(dP/dalpha) / pdf(x)``, with ``P`` the regularised lower incomplete
    gamma function. Exact up to float64 rounding."""
    from ...ir.prims.incomplete_gamma import gammainc_da
    from ...ir.prims.scipy_special import special
    sp = special()
    xv = np.asarray(x, np.float64)
    av = np.asarray(alpha, np.float64)
    with np.errstate(all="ignore"):
        log_pdf = (av - 1.0) * np.log(xv) - xv - sp.gammaln(av)
        grad = -gammainc_da(av, xv, sp.gammaln, sp.digamma) * np.exp(-log_pdf)
    return np.nan_to_num(grad, nan=0.0, posinf=0.0, neginf=0.0).astype(np.asarray(x).dtype)


class _GammaDraw(tg.autograd.Function):
    """Gamma(alpha, 1) draws whose backward is the implicit reparameterisation
    gradient in ``alpha``."""

    @staticmethod
    def forward(ctx, alpha):
        x = standard_gamma(alpha)
        ctx.save_for_backward(x, alpha)
        return x

    @staticmethod
    def backward(ctx, grad_out):
        x, alpha = ctx.saved_tensors
        slope = _dx_dalpha(x.detach().numpy(), alpha.detach().numpy())
        return grad_out * tg.as_tensor(slope)


def standard_gamma_rsample(alpha):
    """``standard_gamma`` with gradients flowing back to ``alpha``."""
    return _GammaDraw.apply(alpha)
