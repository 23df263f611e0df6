"""``tg.nn.utils``: gradient clipping and flattening parameters into one vector."""
from __future__ import annotations

import math

import numpy as np

from ...functions import cat
from ...grad_mode import no_grad
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grads_with_norm_", "clip_grad_value_",
           "get_total_norm", "parameters_to_vector",
           "vector_to_parameters"]


def _params(parameters):
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def _grads(parameters):
    return [p._grad for p in _params(parameters) if p._grad is not None]


def _writable(g):
    """``g``'s array, made writable (a gradient may be a read-only broadcast view)."""
    if g._tracer is not None:
        raise RuntimeError("clipping a gradient that has a history (create_graph=True) is "
                           "not supported")
    if type(g._data) is np.ndarray and not g._data.flags.writeable:
        g._data = np.array(g._data, copy=True)
    return g._data


def _vector_norm(a, p):
    # summed in C order whatever the gradient's layout (a transposed matmul or conv
    # result): flattened first, eagerly and under tg.compile alike (a tracer's reshape is
    # the generated code's np.reshape, a C-ordered copy of a non-contiguous value), so
    # the norm, and the clipped numbers, do not depend on how the array was made
    a = np.abs(a.reshape(-1))
    if p == math.inf:
        return np.max(a) if a.size else np.zeros((), a.dtype)
    if p == -math.inf:
        return np.min(a)
    if p == 0:
        return np.asarray(np.count_nonzero(a), a.dtype)
    return np.sum(a ** p) ** (1.0 / p)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The ``norm_type``-norm of all of ``tensors`` together (as one long vector)."""
    tensors = _params(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return Tensor._plain(np.zeros((), np.float32))
    norms = np.stack([np.asarray(_vector_norm(t._data, norm_type)) for t in tensors])
    total = np.asarray(_vector_norm(norms, norm_type), dtype=norms.dtype)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm anyway, "
                           "set `error_if_nonfinite=False`")
    return Tensor._plain(total)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale the gradients of ``parameters`` in place so that their joint ``norm_type``
    norm is at most ``max_norm`` (factor ``max_norm / (norm + 1e-6)``, capped at 1, as
    PyTorch's); return the norm before clipping."""
    grads = _grads(parameters)
    if not grads:
        return Tensor._plain(np.zeros((), np.float32))
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    if type(total._data) is not np.ndarray:
        # under tg.compile the norm is a tracer: the same float64 arithmetic as an array
        coef = np.minimum(float(max_norm) / (total._data.astype(np.float64) + 1e-6), 1.0)
        for g in grads:
            g._data *= coef.astype(g._data.dtype)
        return total
    coef = min(float(max_norm) / (float(total._data) + 1e-6), 1.0)
    for g in grads:
        data = _writable(g)
        np.multiply(data, np.asarray(coef, data.dtype), out=data)
        g._vc.v += 1
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient of ``parameters`` to [-clip_value, clip_value] in place."""
    clip_value = float(clip_value)
    for g in _grads(parameters):
        data = _writable(g)
        if type(data) is not np.ndarray:    # a tg.compile tracer: written in place
            data[...] = np.clip(data, -clip_value, clip_value)
            continue
        np.clip(data, -clip_value, clip_value, out=data)
        g._vc.v += 1


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one vector (differentiable)."""
    return cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters):
    """Copy consecutive slices of ``vec`` into ``parameters`` (not recorded)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    data = vec._data
    offset = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            np.copyto(p._data, data[offset:offset + n].reshape(tuple(p.shape)),
                      casting="unsafe")
            p._vc.v += 1
            offset += n


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale the gradients of ``parameters`` in place by ``min(max_norm / (total_norm +
    1e-6), 1)``, computed in ``total_norm``'s dtype as PyTorch computes it."""
    grads = _grads(parameters)
    if not grads:
        return
    total = total_norm._data if isinstance(total_norm, Tensor) else np.asarray(total_norm)
    dt = total.dtype if total.dtype.kind == "f" else np.dtype(np.float32)
    coef = np.asarray(max_norm, dt) / (total.astype(dt) + np.asarray(1e-6, dt))
    coef = np.minimum(coef, np.asarray(1.0, dt))
    for g in grads:
        data = _writable(g)
        if type(data) is not np.ndarray:    # a tg.compile tracer: written in place
            data[...] = data * coef.astype(data.dtype)
            continue
        np.multiply(data, coef.astype(data.dtype), out=data)
        g._vc.v += 1


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of ``clip_grad_norm_`` (with PyTorch's FutureWarning)."""
    import warnings
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)
