"""``scipy.signal`` convolutions with SciPy's signatures, on traced and plain values alike:
``convolve``, ``correlate``, ``convolve2d``, ``correlate2d`` and ``fftconvolve``.

They are written on traced NumPy operations, so their derivatives (in both inputs, at
every order), ``vmap``, ``jit`` and the JAX backend come from the registry's rules:

- the direct method pads the larger input with zeros, gathers its sliding windows (one
  advanced index per axis) and contracts them with the flipped smaller input
  (``tensordot``): the sum SciPy's direct method computes, in the inputs' common dtype
  (integers stay integers, exactly, as SciPy's do);
- ``fftconvolve`` (and ``method="fft"``) multiplies real or complex FFTs
  (``np.fft.rfftn``/``fftn``) padded to the full size, as SciPy does.

The output shapes are SciPy's: ``"full"``; ``"same"``, the size of ``in1`` centred on the
full result (from index ``(len(in2) - 1) // 2`` along each axis); ``"valid"``, where
one input must be at least as large as the other along every axis (the inputs are
swapped when ``in2`` is the larger, as SciPy does; ``correlate2d`` then flips the result,
as SciPy's does). ``correlate2d``'s ``"same"`` window starts at ``len(in2) // 2``
(SciPy's ``correlate2d`` and ``correlate`` differ there for even lengths; each is
followed). SciPy is not needed.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import TraceError
from ..ir.source import where

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve"]

_MODES = ("full", "valid", "same")


def _array(x):
    return x if hasattr(x, "_trace") else np.asarray(x)


def _conj(x):
    return np.conj(x) if np.dtype(x.dtype).kind == "c" else x


def _flip_all(x):
    return x[(slice(None, None, -1),) * np.ndim(x)]


def _check_mode(mode, name):
    if mode not in _MODES:
        raise ValueError(f"{name}: acceptable mode flags are 'valid', 'same', or 'full' "
                         f"(got {mode!r})")


def _swap_needed(mode, shape1, shape2, axes=None):
    """SciPy's rule: in ``"valid"`` mode one input must be at least as large as the other
    along every (convolved) axis; the inputs are swapped when it is ``in2``."""
    if mode != "valid" or not shape1:
        return False
    axes = range(len(shape1)) if axes is None else axes
    ok1 = all(shape1[i] >= shape2[i] for i in axes)
    ok2 = all(shape2[i] >= shape1[i] for i in axes)
    if not (ok1 or ok2):
        raise ValueError("For 'valid' mode, one must be at least as large as the other in "
                         "every dimension")
    return not ok1


def _crop(full, shape1, shape2, mode, axes=None, late=False):
    """SciPy's ``mode`` window of a full convolution of inputs of shapes ``shape1`` and
    ``shape2`` (``shape1`` the larger in ``"valid"`` mode), along ``axes``. ``late``:
    ``correlate2d``'s ``"same"`` window, which starts at ``len(in2) // 2`` rather than
    ``(len(in2) - 1) // 2`` (they differ for an even length)."""
    if mode == "full":
        return full
    axes = range(np.ndim(full)) if axes is None else axes
    index = [slice(None)] * np.ndim(full)
    for a in axes:
        size = shape1[a] if mode == "same" else shape1[a] - shape2[a] + 1
        start = (full.shape[a] - size + (1 if late else 0)) // 2
        index[a] = slice(start, start + size)
    return full[tuple(index)]


def _direct_full(x, w):
    """The full n-d convolution of ``x`` and ``w`` (same ndim, both non-empty): the
    sliding windows of the zero-padded larger input, contracted with the flipped
    smaller one."""
    if math.prod(w.shape) > math.prod(x.shape):
        x, w = w, x
    nd = np.ndim(x)
    if nd == 0:
        return x * w
    padded = np.pad(x, [(m - 1, m - 1) for m in w.shape])
    index = []
    for d, (n, m) in enumerate(zip(x.shape, w.shape)):
        window = np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]
        index.append(window.reshape((1,) * (2 * d) + window.shape + (1,) * (2 * (nd - d - 1))))
    windows = padded[tuple(index)]               # (K0, M0, K1, M1, ...)
    return np.tensordot(windows, _flip_all(w), axes=(list(range(1, 2 * nd, 2)),
                                                     list(range(nd))))


def _prepare(in1, in2, name):
    in1, in2 = _array(in1), _array(in2)
    if np.ndim(in1) != np.ndim(in2):
        raise ValueError(f"{name}: in1 and in2 should have the same dimensionality")
    dtype = np.result_type(in1.dtype, in2.dtype)
    if dtype.kind not in "biufc":
        raise TraceError(f"{name}: inputs of dtype {dtype} are not supported{where()}")
    return in1.astype(dtype), in2.astype(dtype)


def convolve(in1, in2, mode="full", method="auto"):
    """SciPy's ``convolve``: the n-d convolution of ``in1`` and ``in2`` (the same number
    of dimensions), in their common dtype. ``method="fft"`` computes it with FFTs and,
    for integer inputs, rounds back to integers (as SciPy); ``"auto"`` and ``"direct"``
    compute the sums directly."""
    _check_mode(mode, "convolve")
    if method not in ("auto", "direct", "fft"):
        raise ValueError("Acceptable method flags are 'auto', 'direct', or 'fft'.")
    in1, in2 = _prepare(in1, in2, "convolve")
    if np.ndim(in1) == 0:
        return in1 * in2
    if _swap_needed(mode, in1.shape, in2.shape):
        in1, in2 = in2, in1
    if in1.size == 0 or in2.size == 0:
        return np.zeros((0,), in1.dtype)
    if method == "fft":
        out = fftconvolve(in1, in2, mode)
        if in1.dtype.kind in "iub":
            out = np.round(out)
        return out.astype(in1.dtype)
    return _crop(_direct_full(in1, in2), in1.shape, in2.shape, mode)


def correlate(in1, in2, mode="full", method="auto"):
    """SciPy's ``correlate``: ``z[k] = sum_l in1[l] * conj(in2[l - k])``, the convolution
    of ``in1`` with ``in2`` reversed along every axis and conjugated."""
    _check_mode(mode, "correlate")
    in1, in2 = _array(in1), _array(in2)
    if np.ndim(in1) == 0 and np.ndim(in2) == 0:
        return in1 * _conj(in2)
    return convolve(in1, _conj(_flip_all(in2)), mode, method)


def _check_2d(in1, in2, mode, boundary, fillvalue, name):
    _check_mode(mode, name)
    if boundary not in ("fill", "pad"):
        raise TraceError(f"{name}: boundary={boundary!r} is not supported by tracegrad "
                         f"(only 'fill', with fillvalue=0){where()}")
    if hasattr(fillvalue, "_trace") or np.any(np.asarray(fillvalue) != 0):
        raise TraceError(f"{name}: fillvalue={fillvalue!r} is not supported by tracegrad "
                         f"(only 0); pad the input with np.pad instead{where()}")
    in1, in2 = _prepare(in1, in2, name)
    if np.ndim(in1) != 2 or np.ndim(in2) != 2:
        raise ValueError(f"{name} inputs must both be 2-D arrays")
    return in1, in2


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """SciPy's ``convolve2d`` with its default zero boundary (``boundary="fill"``,
    ``fillvalue=0``); other boundaries raise a TraceError."""
    in1, in2 = _check_2d(in1, in2, mode, boundary, fillvalue, "convolve2d")
    if _swap_needed(mode, in1.shape, in2.shape):
        in1, in2 = in2, in1
    return _crop(_direct_full(in1, in2), in1.shape, in2.shape, mode)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    """SciPy's ``correlate2d`` (zero boundary only). As SciPy's, in ``"valid"`` mode with
    ``in2`` the larger it correlates ``in2`` with ``in1`` and reverses the result (for
    complex inputs that is the conjugate of ``correlate``'s)."""
    in1, in2 = _check_2d(in1, in2, mode, boundary, fillvalue, "correlate2d")
    swapped = _swap_needed(mode, in1.shape, in2.shape)
    if swapped:
        in1, in2 = in2, in1
    out = _crop(_direct_full(in1, _conj(_flip_all(in2))), in1.shape, in2.shape, mode,
                late=True)
    return _flip_all(out) if swapped else out


def fftconvolve(in1, in2, mode="full", axes=None):
    """SciPy's ``fftconvolve``: the convolution along ``axes`` (all by default; along the
    others the inputs broadcast) by FFTs of the full size. Real inputs give a real
    result (float64 for integers), complex inputs a complex one."""
    _check_mode(mode, "fftconvolve")
    in1, in2 = _array(in1), _array(in2)
    if np.ndim(in1) == 0 and np.ndim(in2) == 0:
        return in1 * in2
    if np.ndim(in1) != np.ndim(in2):
        raise ValueError("in1 and in2 should have the same dimensionality")
    if in1.size == 0 or in2.size == 0:
        return np.zeros((0,))
    nd = np.ndim(in1)
    if axes is None:
        axes = list(range(nd))
    else:
        axes = [int(a) for a in np.atleast_1d(axes)]
        axes = sorted({a + nd if a < 0 else a for a in axes})
        if any(a < 0 or a >= nd for a in axes):
            raise ValueError("axes exceeds dimensionality of input")
    for a in range(nd):
        if a not in axes and in1.shape[a] != in2.shape[a] and 1 not in (in1.shape[a],
                                                                           in2.shape[a]):
            raise ValueError("incompatible shapes for in1 and in2: "
                             f"{in1.shape} and {in2.shape}")
    # axes where one input has length 1 along a convolved axis are kept (SciPy drops
    # them from the FFT only for speed: a length-1 convolution is a product)
    if _swap_needed(mode, in1.shape, in2.shape, axes):
        in1, in2 = in2, in1
    dtype = np.result_type(in1.dtype, in2.dtype)      # SciPy's: float64 for integers,
    if dtype.kind in "iub":                             # float32 for float16 (scipy.fft)
        dtype = np.dtype(np.float64)
    elif dtype == np.float16:
        dtype = np.dtype(np.float32)
    if dtype.kind not in "fc":
        raise TraceError(f"fftconvolve: inputs of dtype {dtype} are not supported{where()}")
    size = [in1.shape[a] + in2.shape[a] - 1 for a in axes]
    if dtype.kind == "c":
        spec = np.fft.fftn(in1, size, axes) * np.fft.fftn(in2, size, axes)
        out = np.fft.ifftn(spec, size, axes)
    else:
        spec = np.fft.rfftn(in1, size, axes) * np.fft.rfftn(in2, size, axes)
        out = np.fft.irfftn(spec, size, axes)
    out = out.astype(dtype)
    return _crop(out, in1.shape, in2.shape, mode, axes)
