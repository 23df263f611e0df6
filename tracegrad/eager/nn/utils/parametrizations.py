"""``tg.nn.utils.parametrizations``: ``weight_norm`` and ``spectral_norm`` as
parametrizations (``register_parametrization``), with PyTorch's names
(``parametrizations.weight.original0`` / ``original1``, ``parametrizations.weight.original``
with the ``_u`` / ``_v`` buffers) and PyTorch's draws of the power iteration's vectors."""
from __future__ import annotations

from ... import linalg
from ...grad_mode import no_grad
from .. import functional as F
from ..modules import Module
from . import parametrize

__all__ = ["spectral_norm", "weight_norm"]


def _norm_except_dim(v, pow_, dim):
    """``torch.norm_except_dim``: the ``pow_``-norm over every dimension but ``dim`` (kept
    with size 1), or of the whole tensor when ``dim == -1``."""
    if dim == -1:
        return linalg.vector_norm(v, pow_)
    dim = dim % v.ndim
    others = tuple(d for d in range(v.ndim) if d != dim)
    if not others:
        return v.abs()
    return linalg.vector_norm(v, pow_, dim=others, keepdim=True)


def _weight_norm(v, g, dim=0):
    """``torch._weight_norm``: ``v * (g / ||v||)``, the norm taken over all dims but ``dim``."""
    return v * (g / _norm_except_dim(v, 2, dim))


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return _norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as ``g * v / ||v||``: ``original0`` is ``g`` (the
    norms, over all dims but ``dim``; the whole tensor's when ``dim`` is None) and
    ``original1`` is ``v``. A state_dict with the legacy ``<name>_g`` / ``<name>_v`` keys
    loads into it."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _legacy_keys(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                     error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_legacy_keys)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            with no_grad():
                mat = self._reshape_weight_to_matrix(weight)
                h, w = mat.shape
                # drawn as PyTorch draws them: u first, then v, from the default generator
                u = mat.new_empty(h).normal_(0, 1)
                v = mat.new_empty(w).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat, n_power_iterations):
        with no_grad():
            for _ in range(n_power_iterations):
                # written into the buffers in place (PyTorch's normalize(..., out=))
                self._u.copy_(F.normalize(mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(mat.H.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        mv = mat.mv(v)
        sigma = (u.conj() if u.is_complex() else u).dot(mv)
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Reparametrize ``module.<name>`` as ``W / sigma(W)``, ``sigma`` estimated by power
    iteration on the buffers ``_u`` and ``_v`` (one step per training-mode read; 15 at
    registration). ``dim`` defaults to 1 for transposed convolutions, else 0."""
    from ...tensor import Tensor
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if _is_conv_transpose(module) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


def _is_conv_transpose(module):
    from .. import layers
    kinds = tuple(getattr(layers, n) for n in ("ConvTranspose1d", "ConvTranspose2d",
                                               "ConvTranspose3d") if hasattr(layers, n))
    return isinstance(module, kinds)
