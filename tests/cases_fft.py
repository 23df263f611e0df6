"""Fourier transform cases: the ``fft`` (complex, several axes), ``rfft`` and ``irfft``
primitives over odd and even lengths, every norm, several axes, a real operand of ``fft``,
single precision once each; checked against JAX's ``vjp``/``jvp`` of ``jnp.fft`` and
complex finite differences, to second order for the cases marked so. (The ``np.fft``
names composed from them are tested in ``test_fft.py``.)"""
import numpy as np

from tracegrad.ir import REGISTRY, apply

from primitive_cases import Case, add, cuniform, uniform


def _spike(shape, dtype, at):
    """A unit spike at the origin of the transformed axes (``at``: the index of every
    row's spike) plus 10 % noise: every frequency (and its real part) stays near the
    spike's flat spectrum, away from zero, so float32 results compare relatively."""
    rng = np.random.default_rng(7)
    x = 0.1 * rng.uniform(-1.0, 1.0, shape)
    if np.dtype(dtype).kind == "c":
        x = x + 0.1j * rng.uniform(-1.0, 1.0, shape)
    x[at] += 1.0
    return x.astype(dtype)


def _single(prim, x, params, tag):
    """A single-precision case, and the same seen through the real part of its result."""
    add(Case(prim, (x,), params, tag=tag))
    add(Case(prim, (x,), params, tag=tag + "-realpart",
             fn=lambda v: np.real(apply(prim, v, **params)),
             ref_fn=lambda v: np.real(REGISTRY[prim].impl(v, **params)),
             jax_fn=lambda v: REGISTRY[prim].jax(v, **params).real))


def _fft(x, axes, inverse=False, norm="backward", **kw):
    add(Case("fft", (x,), {"axes": axes, "inverse": inverse, "norm": norm},
             tag=f"{'inv-' if inverse else ''}{norm}-ax{''.join(map(str, axes))}", **kw))


_fft(cuniform((5,)), (0,), second=True)
_fft(cuniform((3, 4)), (1,), inverse=True, norm="ortho")
_fft(cuniform((2, 3, 4)), (0, 2), norm="forward", second=True)
_fft(cuniform((4, 5)), (0, 1), inverse=True, second=True)
_fft(uniform((6,)), (0,), norm="ortho", second=True)                # a real operand
_single("fft", _spike((2, 5), np.float32, (slice(None), 0)),
        {"axes": (1,), "inverse": True, "norm": "backward"}, "inv-backward-ax1")
_single("fft", _spike((3, 4), np.complex64, (0, 0)),
        {"axes": (0, 1), "inverse": False, "norm": "ortho"}, "ortho-ax01")
_fft(cuniform((2, 2, 3, 2)), (0, 1, 2, 3), inverse=True, norm="forward")   # > 3 axes
_fft(cuniform((1, 3)), (0,))


def _rfft(x, axis, norm="backward", **kw):
    add(Case("rfft", (x,), {"axis": axis, "norm": norm}, tag=f"{norm}-ax{axis}", **kw))


_rfft(uniform((6,)), 0, second=True)
_rfft(uniform((5,)), 0, "ortho", second=True)
_rfft(uniform((3, 4)), 0, "forward")
_rfft(uniform((2, 7)), 1)
_rfft(uniform((2, 3, 4)), 1, "forward", second=True)
_rfft(uniform((1,)), 0)
_rfft(uniform((2,)), 0, "ortho")
_single("rfft", _spike((3, 6), np.float32, (slice(None), 0)), {"axis": 1, "norm": "ortho"}, "ortho-ax1")


def _irfft(x, n, axis, norm="backward", **kw):
    add(Case("irfft", (x,), {"n": n, "axis": axis, "norm": norm},
             tag=f"n{n}-{norm}-ax{axis}", **kw))


_irfft(cuniform((4,)), 6, 0, second=True)
_irfft(cuniform((3,)), 5, 0, "ortho", second=True)
_irfft(cuniform((3, 4)), 4, 0, "forward")
_irfft(cuniform((2, 4)), 7, 1)
_irfft(cuniform((2, 3, 2)), 3, 2, "forward", second=True)
_irfft(cuniform((1,)), 1, 0)
_irfft(cuniform((2,)), 2, 0, "ortho")
_irfft(_spike((3, 3), np.complex64, (slice(None), 0)), 5, 1, "ortho")
