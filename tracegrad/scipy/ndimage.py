"""``scipy.ndimage``'s linear filters with SciPy's signatures, on traced and plain values
alike: ``correlate1d``, ``convolve1d``, ``gaussian_filter1d``, ``gaussian_filter``,
``uniform_filter1d`` and ``uniform_filter``.

SciPy's filters compute in compiled code, which a tracer cannot follow; these pad the
input the way SciPy extends it beyond its edges (``np.pad``: ``"reflect"`` is NumPy's
``"symmetric"``, ``"mirror"`` NumPy's ``"reflect"``, ``"nearest"`` ``"edge"``, ``"wrap"``,
``"constant"`` with ``cval``) and sum shifted slices times the weights, so derivatives in
the input (every order), ``vmap``, ``jit`` and the JAX backend come from the registry's
rules. The weights are constants (SciPy's Gaussian kernel: ``exp(-x²/2σ²)``, normalised,
over ``radius = int(truncate·σ + 0.5)``). Output in the input's floating dtype (float64
for integers); ``output=`` is refused.
"""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..ir.source import where

__all__ = ["convolve1d", "correlate1d", "gaussian_filter", "gaussian_filter1d",
           "uniform_filter", "uniform_filter1d"]

_PAD = {"reflect": "symmetric", "grid-mirror": "symmetric", "mirror": "reflect",
        "nearest": "edge", "wrap": "wrap", "grid-wrap": "wrap", "constant": "constant",
        "grid-constant": "constant"}


def _array(x):
    x = x if hasattr(x, "_trace") else np.asarray(x)
    return x if x.dtype.kind in "fc" else x.astype(np.float64)


def _no_output(output, name):
    if output is not None:
        raise TraceError(f"{name}(..., output=...) is not supported: use the result{where()}")


def _axes(axes, ndim):
    if axes is None:
        return tuple(range(ndim))
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    return tuple(int(a) % ndim for a in axes)


def _per_axis(value, n):
    if np.ndim(value) == 0:
        return [value] * n
    value = list(value)
    if len(value) != n:
        raise TraceError(f"a sequence argument must have one entry per axis ({n}){where()}")
    return value


def correlate1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0,  # noqa: A002
                origin=0):
    """``scipy.ndimage.correlate1d``: ``out[i] = Σ_j weights[j]·in[i + j - center]`` along
    ``axis``, ``center = len(weights) // 2 + origin``."""
    _no_output(output, "correlate1d")
    x = _array(input)
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size == 0:
        raise TraceError(f"correlate1d: weights must be a non-empty 1-D sequence{where()}")
    if mode not in _PAD:
        raise TraceError(f"correlate1d: mode {mode!r} is not supported; one of "
                         f"{sorted(_PAD)}{where()}")
    n, axis = w.size, int(axis) % x.ndim
    center = n // 2 + int(origin)
    if not 0 <= center < n:
        raise TraceError(f"correlate1d: invalid origin {origin}{where()}")
    widths = [(0, 0)] * x.ndim
    widths[axis] = (center, n - 1 - center)
    kw = {"constant_values": cval} if _PAD[mode] == "constant" else {}
    padded = np.pad(x, widths, mode=_PAD[mode], **kw)
    size = x.shape[axis]
    out = None
    for j in range(n):
        index = [slice(None)] * x.ndim
        index[axis] = slice(j, j + size)
        term = padded[tuple(index)] * w[j]
        out = term if out is None else out + term
    return out


def convolve1d(input, weights, axis=-1, output=None, mode="reflect", cval=0.0,  # noqa: A002
               origin=0):
    """``scipy.ndimage.convolve1d``: ``correlate1d`` with the weights reversed (and the
    origin as SciPy moves it)."""
    w = np.asarray(weights, dtype=np.float64)[::-1]
    origin = -int(origin)
    if not w.size & 1:
        origin -= 1
    return correlate1d(input, w, axis, output, mode, cval, origin)


def _gaussian_kernel(sigma, order, radius):
    if order != 0:
        raise TraceError(f"gaussian_filter: only order=0 is supported by tracegrad (the "
                         f"derivative filters are not){where()}")
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    phi = np.exp(-0.5 * (x / float(sigma)) ** 2)
    return phi / phi.sum()


def gaussian_filter1d(input, sigma, axis=-1, order=0, output=None,  # noqa: A002
                      mode="reflect", cval=0.0, truncate=4.0, *, radius=None):
    """``scipy.ndimage.gaussian_filter1d`` (``order=0``)."""
    _no_output(output, "gaussian_filter1d")
    r = int(truncate * float(sigma) + 0.5) if radius is None else int(radius)
    return correlate1d(input, _gaussian_kernel(sigma, order, r), axis, None, mode, cval, 0)


def gaussian_filter(input, sigma, order=0, output=None, mode="reflect", cval=0.0,  # noqa: A002
                    truncate=4.0, *, radius=None, axes=None):
    """``scipy.ndimage.gaussian_filter`` (``order=0``): the 1-D filter along each axis."""
    _no_output(output, "gaussian_filter")
    x = _array(input)
    axes = _axes(axes, x.ndim)
    k = len(axes)
    for ax, s, o, m, r in zip(axes, _per_axis(sigma, k), _per_axis(order, k),
                              _per_axis(mode, k) if not isinstance(mode, str) else [mode] * k,
                              _per_axis(radius, k)):
        if float(s) > 1e-15:
            x = gaussian_filter1d(x, s, ax, o, None, m, cval, truncate, radius=r)
    return x


def uniform_filter1d(input, size, axis=-1, output=None, mode="reflect", cval=0.0,  # noqa: A002
                     origin=0):
    """``scipy.ndimage.uniform_filter1d``: the mean over ``size`` points."""
    _no_output(output, "uniform_filter1d")
    size = int(size)
    if size < 1:
        raise TraceError(f"uniform_filter1d: incorrect filter size {size}{where()}")
    return correlate1d(input, np.full(size, 1.0 / size), axis, None, mode, cval, origin)


def uniform_filter(input, size=3, output=None, mode="reflect", cval=0.0, origin=0,  # noqa: A002
                   *, axes=None):
    """``scipy.ndimage.uniform_filter``: the 1-D filter along each axis."""
    _no_output(output, "uniform_filter")
    x = _array(input)
    axes = _axes(axes, x.ndim)
    k = len(axes)
    modes = [mode] * k if isinstance(mode, str) else _per_axis(mode, k)
    for ax, s, m, o in zip(axes, _per_axis(size, k), modes, _per_axis(origin, k)):
        if int(s) > 1:
            x = uniform_filter1d(x, s, ax, None, m, cval, o)
    return x
