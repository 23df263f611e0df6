"""Discrete Fourier transforms: three primitives that every ``np.fft`` name is built from.

- ``fft``: the complex transform over ``axes`` (a sorted tuple of distinct axes), forward
  or ``inverse``, scaled by ``norm`` ("backward", "ortho" or "forward", never None). A
  real operand is read as complex. The transform is complex-linear and its matrix
  ``exp(-+2 pi i j k / n)`` (times the norm's factor) is symmetric, so under JAX's
  convention (a VJP is the plain transpose of the JVP, no conjugation) both rules are
  the primitive itself: on the tangent, and on the cotangent.
- ``rfft``: real to complex along one ``axis``, keeping the ``n // 2 + 1`` non-negative
  frequencies of an axis of length ``n``. Its transpose: the cotangent zero-padded back
  to ``n`` entries, the complex ``fft`` of that (same norm; the matrix is symmetric) and
  its real part (the operand is real).
- ``irfft``: complex (``n // 2 + 1`` entries along ``axis``) to real (``n`` entries).
  Written out, ``y_j = c * Re(sum_k w_k X_k exp(2 pi i j k / n))`` with ``w_k = 2``
  for the frequencies that stand for a conjugate pair and ``1`` for ``k = 0`` (and for
  ``k = n / 2`` when ``n`` is even): the imaginary parts of those are ignored, as NumPy
  does. Pairing with a real cotangent gives ``ct_X = w * conj(rfft(ct))``, with the
  rfft scaled like ``c`` (the "backward" 1/n of irfft is the "forward" one of rfft).

Multi-axis real transforms, ``n``/``s`` padding and cropping, ``hfft``/``ihfft`` and the
shifts are composed from these (``tracegrad/tracer/np_fft.py``).
"""

import numpy as np

from ..registry import apply, register
from ..schema import (  # the loader's parameter kinds
    AXES,
    AXIS,
    BOOL,
    FFT_NORM,
    INT,
    MAX_ELEMENTS,
    Spec,
    _fft_axes,
)
from .batching import shift_axes
from .util import complex_dtype, real_dtype

# New arrays from NumPy's pocketfft, but not declared fresh (no generated code reuses
# their buffers yet); the JAX lowering takes the operands as they are.

NORMS = ("backward", "ortho", "forward")
# the scaling of the opposite direction: rfft(., forward) undoes irfft(., backward)'s 1/n
SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _moved(shape, axis, n):
    return tuple(n if i == axis else m for i, m in enumerate(shape))


def _lazy(fn):
    def lower(*args, **params):
        import jax.numpy as jnp
        return fn(jnp, *args, **params)
    return lower


# -- fft: complex to complex over several axes ---------------------------------------------
def _fft_impl(x, axes, inverse, norm):
    transform = np.fft.ifftn if inverse else np.fft.fftn
    return transform(x, axes=axes, norm=norm).astype(complex_dtype(x.dtype), copy=False)


def _fft_jax(jnp, x, axes, inverse, norm):
    transform = jnp.fft.ifftn if inverse else jnp.fft.fftn
    x = x.astype(complex_dtype(x.dtype))
    # XLA transforms at most three axes at once: the rest in further passes
    for start in range(0, len(axes), 3):
        x = transform(x, axes=axes[start:start + 3], norm=norm)
    return x


def _fft_vjp(g, out, x, axes, inverse, norm):
    ct = apply("fft", g, axes=axes, inverse=inverse, norm=norm)
    return (ct if np.dtype(x.dtype).kind == "c" else apply("real", ct),)


def _fft_jvp(t, out, x, axes, inverse, norm):
    return apply("fft", t[0], axes=axes, inverse=inverse, norm=norm)


register(
    "fft", _fft_impl,
    abstract=lambda x, axes, inverse, norm: (x.shape, complex_dtype(x.dtype)),
    vjp=_fft_vjp, jvp=_fft_jvp, jax=_lazy(_fft_jax),
    family="fft",
    # one operand and named axes: the batch axis in front is one more axis left alone
    batch=lambda size, args, batched, out_shape, axes, inverse, norm: apply(
        "fft", args[0], axes=shift_axes(axes), inverse=inverse, norm=norm),
    doc="np.fft.fftn / ifftn(x, axes=axes, norm=norm): complex DFT over distinct axes",
    schema=Spec({"axes": AXES, "inverse": BOOL, "norm": FFT_NORM}, 1, _fft_axes),
)


# -- rfft: real to complex along one axis --------------------------------------------------
def _rfft_abstract(x, axis, norm):
    if np.dtype(x.dtype).kind == "c":       # NumPy's rfft refuses complex input too
        raise TypeError("rfft takes a real input, got a complex one")
    return _moved(x.shape, axis, x.shape[axis] // 2 + 1), complex_dtype(x.dtype)


def _rfft_impl(x, axis, norm):
    return np.fft.rfft(x, axis=axis, norm=norm).astype(complex_dtype(x.dtype), copy=False)


def _rfft_vjp(g, out, x, axis, norm):
    n, m = x.shape[axis], g.shape[axis]
    if n > m:   # the frequencies rfft leaves out get no cotangent
        widths = tuple((0, n - m) if i == axis else (0, 0) for i in range(len(x.shape)))
        g = apply("pad", g, widths=widths, value=0.0)
    full = apply("fft", g, axes=(axis,), inverse=False, norm=norm)
    return (apply("real", full),)


register(
    "rfft", _rfft_impl, abstract=_rfft_abstract,
    vjp=_rfft_vjp,
    jvp=lambda t, out, x, axis, norm: apply("rfft", t[0], axis=axis, norm=norm),
    jax=_lazy(lambda jnp, x, axis, norm: jnp.fft.rfft(x, axis=axis, norm=norm)),
    family="fft",
    batch=lambda size, args, batched, out_shape, axis, norm: apply(
        "rfft", args[0], axis=axis + 1, norm=norm),
    doc="np.fft.rfft(x, axis=axis, norm=norm): the n//2+1 non-negative frequencies of real x",
    schema=Spec({"axis": AXIS, "norm": FFT_NORM}, 1, _fft_axes),
)


# -- irfft: complex to real along one axis -------------------------------------------------
def _irfft_abstract(x, n, axis, norm):
    if x.shape[axis] != n // 2 + 1:
        raise ValueError(f"irfft to {n} points takes {n // 2 + 1} frequencies along axis "
                         f"{axis}, got {x.shape[axis]}")
    return _moved(x.shape, axis, n), real_dtype(x.dtype)


def _irfft_impl(x, n, axis, norm):
    _irfft_abstract(x, n, axis, norm)
    return np.fft.irfft(x, n=n, axis=axis, norm=norm).astype(real_dtype(x.dtype), copy=False)


def pair_weights(n, axis, ndim, dtype):
    """1 for the frequencies without a mirror image (0, and n/2 for even n), 2 for the
    others, shaped to broadcast along ``axis`` of an ``ndim``-dimensional array."""
    w = np.full(n // 2 + 1, 2.0, dtype=dtype)
    w[0] = 1.0
    if n % 2 == 0:
        w[-1] = 1.0
    return w.reshape(_moved((1,) * ndim, axis, n // 2 + 1))


def _irfft_vjp(g, out, x, n, axis, norm):
    spectrum = apply("rfft", g, axis=axis, norm=SWAPPED[norm])
    w = pair_weights(n, axis, len(x.shape), real_dtype(x.dtype))
    return (apply("conj", spectrum) * w,)


register(
    "irfft", _irfft_impl, abstract=_irfft_abstract,
    vjp=_irfft_vjp,
    jvp=lambda t, out, x, n, axis, norm: apply("irfft", t[0], n=n, axis=axis, norm=norm),
    jax=_lazy(lambda jnp, x, n, axis, norm: jnp.fft.irfft(x, n=n, axis=axis, norm=norm)),
    family="fft",
    batch=lambda size, args, batched, out_shape, n, axis, norm: apply(
        "irfft", args[0], n=n, axis=axis + 1, norm=norm),
    doc="np.fft.irfft(x, n=n, axis=axis, norm=norm) with exactly n//2+1 input frequencies",
    schema=Spec({"n": INT(1, MAX_ELEMENTS), "axis": AXIS, "norm": FFT_NORM}, 1),
)
