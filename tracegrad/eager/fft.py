"""``tg.fft`` (``torch.fft``): PyTorch's discrete Fourier transforms on eager tensors, and
``tg.stft`` / ``tg.istft``.

Each transform checks its arguments as torch does (``n``/``s``, ``dim``, ``norm``, with
torch's messages and exception types), promotes the input as torch's
``promote_tensor_fft``: complex stays, float32/float64 stay (float16 is refused, as on
torch's CPU), integers and booleans become the default float; a complex result is the
complex type of that float (NumPy's pocketfft is told to give it). Then NumPy's
``np.fft`` code goes to ``dispatch.call``: on plain arrays pocketfft's numbers, on the
tape the registry's ``fft``/``rfft``/``irfft`` primitives (``ir/prims/fft.py``, through
the tracer's ``np.fft`` handlers), so gradients come from those primitives' rules. A
complex intermediate between real tensors gets torch's gradients: the real leaves' .grad
is the derivative of a real loss, whichever complex convention the tape runs in.

NumPy has no ``hfft2``/``hfftn``/``ihfft2``/``ihfftn``; as torch computes them:
``hfftn(x, s, dim, norm)`` is ``irfftn(conj(x), s, dim)`` with the opposite direction's
scaling, ``ihfftn(x)`` is ``conj(rfftn(x))`` likewise (the last of ``dim`` is the
Hermitian one).

``stft``/``istft`` are torch's algorithm (``aten/src/ATen/native/SpectralOps.cpp``)
written with eager operations (``F.pad``, ``unfold``, the transforms here, ``F.fold`` for
the overlap-add), so their gradients are those operations'.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from .arithmetic import _err
from .dispatch import call
from .tensor import Tensor, default_dtype
from .tensor_base import TensorBase, _scalar_name

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]

_NORMS = ("backward", "ortho", "forward")
_SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}
_COMPLEX = {np.dtype(np.float32): np.dtype(np.complex64),
            np.dtype(np.float64): np.dtype(np.complex128)}
_REAL = {v: k for k, v in _COMPLEX.items()}


# -- argument checks ------------------------------------------------------------------------
def _input(name, x):
    if not isinstance(x, TensorBase):
        raise TypeError(f"fft_{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


def _int(name, arg, v):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"fft_{name}(): argument '{arg}' must be int, not {type(v).__name__}")
    return int(v)


def _ints(name, arg, v):
    """``s``/``dim`` of the n-dimensional transforms: an int or a sequence of ints."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return [int(v)]
    if isinstance(v, TensorBase) or not isinstance(v, (tuple, list)):
        raise TypeError(f"fft_{name}(): argument '{arg}' must be tuple of ints, not "
                        f"{type(v).__name__}")
    out = []
    for k, e in enumerate(v):
        if isinstance(e, (bool, np.bool_)) or not isinstance(e, (int, np.integer)):
            raise TypeError(f"fft_{name}(): argument '{arg}' failed to unpack the object at "
                            f"pos {k + 1} with error \"type must be tuple of ints,but got "
                            f"{type(e).__name__}\"")
        out.append(int(e))
    return out


def _norm(norm):
    if norm is None:
        return "backward"
    if not isinstance(norm, str):
        raise TypeError(f"argument 'norm' must be str, not {type(norm).__name__}")
    if norm not in _NORMS:
        raise _err(f'Invalid normalization mode: "{norm}"')
    return norm


def _dim(t, d):
    """One dim, wrapped as torch's ``maybe_wrap_dim(..., wrap_scalar=false)``."""
    nd = t.dim()
    if nd == 0:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    if not -nd <= d < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, "
                         f"{nd - 1}], but got {d})")
    return d % nd


def _points(n):
    if n < 1:
        raise _err(f"Invalid number of data points ({n}) specified")
    return n


def _shape_and_dims(name, t, s, dim):
    """torch's ``canonicalize_fft_shape_and_dim_args``: lists of sizes and dims."""
    dims = None
    if dim is not None:
        dims = [_dim(t, d) for d in _ints(name, "dim", dim)]
        if len(set(dims)) != len(dims):
            raise _err("FFT dims must be unique")
    if s is not None:
        s = _ints(name, "s", s)
        if dims is not None and len(dims) != len(s):
            raise _err("When given, dim and shape arguments must have the same length")
        if len(s) > t.dim():
            raise _err(f"Got shape with {len(s)} values but input tensor only has "
                       f"{t.dim()} dimensions.")
        if dims is None:
            dims = list(range(t.dim() - len(s), t.dim()))
        sizes = [t.shape[d] if n == -1 else n for n, d in zip(s, dims)]
    elif dims is None:
        dims = list(range(t.dim()))
        sizes = list(t.shape)
    else:
        sizes = [t.shape[d] for d in dims]
    for n in sizes:
        _points(n)
    return sizes, dims


def _c2r_shape_and_dims(name, t, s, dim):
    """The same for the complex-to-real transforms: the last size is that of the output
    (``2 * (m - 1)`` of the input's ``m`` by default or for -1)."""
    sizes, dims = _shape_and_dims(name, t, s, dim)
    if not dims:
        raise _err(f"{name} must transform at least one axis")
    if s is None or _ints(name, "s", s)[-1] == -1:
        sizes[-1] = 2 * (t.shape[dims[-1]] - 1)
    _points(sizes[-1])
    return sizes, dims


def _promote(t, require_complex=False):
    """torch's ``promote_tensor_fft``: the input in the dtype the transform runs in."""
    dt = np.dtype(t.dtype)
    if dt.kind == "c":
        return t
    if dt.kind != "f":
        dt = np.dtype(default_dtype())
    elif dt not in _COMPLEX:
        raise _err(f"Unsupported dtype {_scalar_name(dt)}")
    if require_complex:
        dt = _COMPLEX[dt]
    return t if np.dtype(t.dtype) == dt else t.to(dt)


def _complex_of(t):
    dt = np.dtype(t.dtype)
    return dt if dt.kind == "c" else _COMPLEX[dt]


def _real_input(name, t, ndim):
    if np.dtype(t.dtype).kind == "c":
        got = _scalar_name(t.dtype)
        if not ndim:
            raise _err(f"{name} expects a real input tensor, but got {got}")
        if name.startswith("rfft"):
            raise _err(f"rfftn expects a real-valued input tensor, but got {got}")
        raise _err(f"Only supports floating-point dtypes, but found: {got}")
    return _promote(t)


def _finish(name, result, out):
    """``out=``: the result written into ``out`` (same shape; torch's dtype check)."""
    if out is None:
        return result
    want = np.dtype(result.dtype).kind
    if want == "c" and np.dtype(out.dtype).kind != "c":
        raise _err(f"{name} expects a complex output tensor, but got {_scalar_name(out.dtype)}")
    if want == "f" and np.dtype(out.dtype).kind != "f":
        raise _err(f"{name} expects a floating point output tensor, but got "
                   f"{_scalar_name(out.dtype)}")
    if tuple(out.shape) != tuple(result.shape):
        raise _err(f"tracegrad's torch.fft.{name}: out= of shape {list(out.shape)} cannot "
                   f"take the result of shape {list(result.shape)} (resizing out= is not "
                   f"supported)")
    with _no_grad():
        out.copy_(result)
    return out


def _no_grad():
    from .grad_mode import no_grad
    return no_grad()


# -- the complex transforms -----------------------------------------------------------------
def _c2c(name, t, sizes, dims, norm, inverse):
    x = _promote(t)
    cdt = _complex_of(x)
    real = np.dtype(x.dtype).kind != "c"

    def fn(a):
        if not dims:
            return a.astype(cdt)
        transform = np.fft.ifftn if inverse else np.fft.fftn
        return transform(a, s=sizes, axes=dims, norm=norm).astype(cdt, copy=False)
    # torch's node: a real input's forward transform is one r2c, its inverse the conj of one
    node = "FftC2CBackward0" if not real or not dims or len(dims) > 1 else \
        "ConjBackward0" if inverse else "FftR2CBackward0"
    return call(fn, x, name=node)


def _fft1(name, inverse):
    def transform(input, n=None, dim=-1, norm=None, *, out=None):
        t = _input(name, input)
        d = _dim(t, _int(name, "dim", dim))
        n = t.shape[d] if n is None else _points(_int(name, "n", n))
        return _finish(name, _c2c(name, t, [n], [d], _norm(norm), inverse), out)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"``torch.fft.{name}(input, n=None, dim=-1, norm=None)``"
    return transform


def _fftn(name, inverse, default_dim=None):
    def transform(input, s=None, dim=default_dim, norm=None, *, out=None):
        t = _input(name, input)
        sizes, dims = _shape_and_dims(name, t, s, dim)
        return _finish(name, _c2c(name, t, sizes, dims, _norm(norm), inverse), out)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"``torch.fft.{name}(input, s=None, dim={default_dim}, norm=None)``"
    return transform


fft = _fft1("fft", False)
ifft = _fft1("ifft", True)
fft2 = _fftn("fft2", False, (-2, -1))
ifft2 = _fftn("ifft2", True, (-2, -1))
fftn = _fftn("fftn", False)
ifftn = _fftn("ifftn", True)


# -- real to complex (rfft*, ihfft*) and complex to real (irfft*, hfft*) --------------------
def _r2c(name, t, sizes, dims, norm, hermitian, ndim):
    x = _real_input(name, t, ndim)
    cdt = _COMPLEX[np.dtype(x.dtype)]
    if hermitian:
        norm = _SWAPPED[norm]

    def fn(a):
        r = np.fft.rfftn(a, s=sizes, axes=dims, norm=norm)
        return (np.conj(r) if hermitian else r).astype(cdt, copy=False)
    node = "FftR2CBackward0" if not hermitian else \
        "ConjBackward0" if len(dims) == 1 else "FftC2CBackward0"
    return call(fn, x, name=node)


def _c2r(name, t, sizes, dims, norm, hermitian):
    x = _promote(t, require_complex=True)
    rdt = _REAL[np.dtype(x.dtype)]
    if hermitian:
        norm = _SWAPPED[norm]

    def fn(a):
        a = np.conj(a) if hermitian else a
        return np.fft.irfftn(a, s=sizes, axes=dims, norm=norm).astype(rdt, copy=False)
    return call(fn, x, name="FftC2RBackward0")


def _real1(name, direction, hermitian):
    def transform(input, n=None, dim=-1, norm=None, *, out=None):
        t = _input(name, input)
        d = _dim(t, _int(name, "dim", dim))
        if n is not None:
            n = _int(name, "n", n)
        norm = _norm(norm)
        if direction == "r2c":
            n = t.shape[d] if n is None else n
            result = _r2c(name, t, [_points(n)], [d], norm, hermitian, False)
        else:
            n = 2 * (t.shape[d] - 1) if n is None else n
            result = _c2r(name, t, [_points(n)], [d], norm, hermitian)
        return _finish(name, result, out)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"``torch.fft.{name}(input, n=None, dim=-1, norm=None)``"
    return transform


def _realn(name, direction, hermitian, default_dim=None):
    def transform(input, s=None, dim=default_dim, norm=None, *, out=None):
        t = _input(name, input)
        norm = _norm(norm)
        if direction == "r2c":
            sizes, dims = _shape_and_dims(name, t, s, dim)
            if not dims:
                raise _err(f"{name} must transform at least one axis")
            result = _r2c(name, t, sizes, dims, norm, hermitian, True)
        else:
            sizes, dims = _c2r_shape_and_dims(name, t, s, dim)
            result = _c2r(name, t, sizes, dims, norm, hermitian)
        return _finish(name, result, out)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = f"``torch.fft.{name}(input, s=None, dim={default_dim}, norm=None)``"
    return transform


rfft = _real1("rfft", "r2c", False)
irfft = _real1("irfft", "c2r", False)
hfft = _real1("hfft", "c2r", True)
ihfft = _real1("ihfft", "r2c", True)
rfft2 = _realn("rfft2", "r2c", False, (-2, -1))
irfft2 = _realn("irfft2", "c2r", False, (-2, -1))
rfftn = _realn("rfftn", "r2c", False)
irfftn = _realn("irfftn", "c2r", False)
hfft2 = _realn("hfft2", "c2r", True, (-2, -1))
ihfft2 = _realn("ihfft2", "r2c", True, (-2, -1))
hfftn = _realn("hfftn", "c2r", True)
ihfftn = _realn("ihfftn", "r2c", True)


# -- frequencies and shifts -----------------------------------------------------------------
def _freq_args(name, n, d, dtype):
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"fft_{name}(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    n = int(n)
    if n < 0:
        raise _err(f"Trying to create tensor with negative dimension {n}: [{n}]")
    dtype = np.dtype(default_dtype() if dtype is None else dtype)
    if dtype.kind == "c":
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{_scalar_name(dtype)}'")
    if dtype.kind != "f":
        raise _err(f"{name} requires a floating point or complex dtype")
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.float64(1.0) / np.float64(n * float(d))
    return n, dtype, scale


def _freq_tensor(k, dtype, scale, requires_grad):
    with np.errstate(invalid="ignore", over="ignore"):
        values = k.astype(dtype) * np.asarray(scale, dtype=dtype)
    return Tensor._plain(values, requires_grad=bool(requires_grad))


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
            requires_grad=False):
    """``torch.fft.fftfreq``: ``[0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (n * d)``."""
    n, dtype, scale = _freq_args("fftfreq", n, d, dtype)
    k = np.concatenate([np.arange((n + 1) // 2), np.arange(-(n // 2), 0)])
    return _finish("fftfreq", _freq_tensor(k, dtype, scale, requires_grad), out)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """``torch.fft.rfftfreq``: ``[0, 1, ..., n//2] / (n * d)``."""
    n, dtype, scale = _freq_args("rfftfreq", n, d, dtype)
    return _finish("rfftfreq", _freq_tensor(np.arange(n // 2 + 1), dtype, scale,
                                            requires_grad), out)


def _shift(name, input, dim, inverse):
    t = _input(name, input)
    dims = list(range(t.dim())) if dim is None else [_dim(t, d) for d in _ints(name, "dim", dim)]
    if not dims:
        raise _err("`shifts` required")
    shifts = [(t.shape[d] + 1) // 2 if inverse else t.shape[d] // 2 for d in dims]
    return t.roll(shifts, dims)


def fftshift(input, dim=None):
    """``torch.fft.fftshift``: the zero frequency moved to the middle (a roll)."""
    return _shift("fftshift", input, dim, False)


def ifftshift(input, dim=None):
    """``torch.fft.ifftshift``: ``fftshift`` undone."""
    return _shift("ifftshift", input, dim, True)


# -- short-time Fourier transforms ----------------------------------------------------------
def _type_name(t):
    return f"torch.{_scalar_name(t.dtype)}Tensor"


def _window_repr(window):
    return "None" if window is None else f"{_type_name(window)}{{{list(window.shape)}}}"


def _centered_window(window, win_length, n_fft, like):
    """The window (ones when None) zero-padded on both sides to ``n_fft`` points."""
    from .nn import functional as F
    if window is None:
        window = Tensor._plain(np.ones(win_length, dtype=np.dtype(like)))
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = F.pad(window, (left, n_fft - win_length - left))
    return window


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """``torch.stft``: frames of ``n_fft`` points every ``hop_length``, windowed and
    transformed; the result is ``(batch?, frequencies, frames)``."""
    from .nn import functional as F
    input = _input("stft", input)
    complex_window = window is not None and np.dtype(window.dtype).kind == "c"
    if return_complex is None and not (np.dtype(input.dtype).kind == "c" or complex_window):
        raise _err("stft requires the return_complex parameter be given for real inputs, and "
                   "will further require that return_complex=True in a future PyTorch "
                   "release.")
    if return_complex is None:
        return_complex = True
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.\nNote: you can still call "
                      "torch.view_as_real on the complex output to recover the old return "
                      "format.", UserWarning, stacklevel=2)
    if align_to_window is not None and center:
        raise _err("stft align_to_window should only be set when center = false")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which "
                      "is known to cause spectral leakage. Other windows such as "
                      "torch.hann_window or torch.hamming_window are recommended to reduce "
                      "spectral leakage.To suppress this warning and use a rectangular "
                      "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.",
                      UserWarning, stacklevel=2)
    n_fft = operator.index(n_fft)
    x = input
    if center:
        extra = max(3, x.dim()) - x.dim()
        pad = n_fft // 2
        x = F.pad(x.reshape((1,) * extra + tuple(x.shape)), (pad, pad), mode=pad_mode)
        x = x.reshape(tuple(x.shape)[extra:])
    hop_length = n_fft >> 2 if hop_length is None else operator.index(hop_length)
    win_length = n_fft if win_length is None else operator.index(win_length)
    head = (f"stft({_type_name(x)}{list(x.shape)}, n_fft={n_fft}, hop_length={hop_length}, "
            f"win_length={win_length}, window={_window_repr(window)}, "
            f"normalized={int(bool(normalized))}, onesided="
            f"{'None' if onesided is None else int(bool(onesided))}, return_complex="
            f"{int(bool(return_complex))}, align_to_window="
            f"{'None' if align_to_window is None else int(bool(align_to_window))}) : ")
    if np.dtype(x.dtype).kind not in "fc":
        raise _err(head + "expected a tensor of floating point or complex values")
    if not 1 <= x.dim() <= 2:
        raise _err(head + "expected a 1D or 2D tensor")
    frames_of = x if x.dim() == 2 else x.unsqueeze(0)
    length = frames_of.shape[1]
    if n_fft <= 0 or n_fft > length:
        raise _err(head + f"expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise _err(head + f"expected hop_length > 0, but got hop_length={hop_length}")
    if win_length <= 0 or win_length > n_fft:
        raise _err(head + f"expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise _err(head + f"expected a 1D window tensor of size equal to win_length="
                   f"{win_length}, but got window with size {list(window.shape)}")
    if align_to_window and win_length < n_fft:
        # each frame's window (not its n_fft points) starts at a multiple of hop_length: the
        # signal zero-padded by the centred window's margins
        left = (n_fft - win_length) // 2
        frames_of = F.pad(frames_of, (left, n_fft - win_length - left))
    frames = frames_of.unfold(1, n_fft, hop_length)        # (batch, frames, n_fft)
    if window is not None or win_length < n_fft:
        frames = frames * _centered_window(window, win_length, n_fft, x.dtype)
    complex_fft = np.dtype(frames.dtype).kind == "c"
    onesided = (not complex_fft) if onesided is None else bool(onesided)
    norm = "ortho" if normalized else "backward"
    if complex_fft:
        if onesided:
            raise _err("Cannot have onesided output if window or input is complex")
        spec = fft(frames, dim=-1, norm=norm)
    elif onesided:
        spec = rfft(frames, dim=-1, norm=norm)
    else:
        spec = fft(frames, dim=-1, norm=norm)
    spec = spec.transpose(1, 2)
    if x.dim() == 1:
        spec = spec.squeeze(0)
    if not return_complex:
        spec = _as_real(spec)
    return spec


def _as_real(spec):
    """``view_as_real``'s values and gradient (a stack of the real and imaginary parts)."""
    from .stacking import stack
    return stack([spec.real, spec.imag], -1)


def _overlap_add(frames, hop_length, length):
    """torch's ``unfold_backward``: ``(batch, frames, n)`` summed into ``(batch, length)``."""
    from .nn import functional as F
    batch, _, n = frames.shape
    y = F.fold(frames.transpose(1, 2), output_size=(1, length), kernel_size=(1, n),
               stride=(1, hop_length))
    return y.reshape(batch, length)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """``torch.istft``: the overlap-add inverse of ``stft`` (least squares with the window's
    envelope)."""
    from .nn import functional as F
    input = _input("istft", input)
    hop_length = n_fft >> 2 if hop_length is None else operator.index(hop_length)
    win_length = n_fft if win_length is None else operator.index(win_length)
    if np.dtype(input.dtype).kind != "c":
        raise _err("istft requires a complex-valued input tensor matching the output from "
                   "stft with return_complex=True.")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please "
                      "provide the same window used by stft to make the inversion lossless.To "
                      "suppress this warning and use a rectangular window, explicitly set "
                      "`window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    head = (f"istft(CPU{_scalar_name(input.dtype)}Type{list(input.shape)}, n_fft={n_fft}, "
            f"hop_length={hop_length}, win_length={win_length}, "
            f"window={_window_repr(window)}, center={int(bool(center))}, "
            f"normalized={int(bool(normalized))}, onesided="
            f"{'None' if onesided is None else int(bool(onesided))}, length="
            f"{'None' if length is None else length}, return_complex="
            f"{int(bool(return_complex))})")
    real_dim = input.dim() + 1              # torch checks the view_as_real of the input
    if input.numel() == 0:
        raise _err(head + " : input tensor cannot be empty.")
    if real_dim not in (3, 4):
        raise _err(head + f" : expected a tensor with 3 or 4 dimensions, but got {real_dim}")
    n_frames, fft_size = input.shape[-1], input.shape[-2]
    expected = n_fft + hop_length * (n_frames - 1)
    onesided = fft_size != n_fft if onesided is None else bool(onesided)
    if onesided and n_fft // 2 + 1 != fft_size:
        raise _err(head + " : expected the frequency dimension (3rd to the last) of the input "
                   f"tensor to match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not onesided and n_fft != fft_size:
        raise _err(head + " : expected the frequency dimension (3rd to the last) of the input "
                   f"tensor to match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop_length <= win_length:
        raise _err(head + " : expected 0 < hop_length <= win_length")
    if not 0 < win_length <= n_fft:
        raise _err(head + " : expected 0 < win_length <= n_fft")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise _err(head + " : Invalid window shape. window has to be 1D and length of "
                   "`win_length`")
    real = _REAL[np.dtype(input.dtype)]
    win = _centered_window(window, win_length, n_fft, real)
    x = input if input.dim() == 3 else input.unsqueeze(0)
    x = x.transpose(1, 2)                                   # (channel, frames, fft_size)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if onesided:
            raise _err("Cannot have onesided output if window or input is complex")
        x = ifft(x, dim=-1, norm=norm)
    else:
        if window is not None and np.dtype(window.dtype).kind == "c":
            raise _err("Complex windows are incompatible with return_complex=False")
        if not onesided:
            x = x[..., :n_fft // 2 + 1]
        x = irfft(x, n=n_fft, dim=-1, norm=norm)
    y = x * win
    if np.dtype(y.dtype).kind == "c":
        y = _overlap_add(y.real, hop_length, expected) + \
            _overlap_add(y.imag, hop_length, expected) * 1j
    else:
        y = _overlap_add(y, hop_length, expected)
    envelope = _overlap_add((win * win).reshape(1, 1, n_fft).expand(1, n_frames, n_fft),
                            hop_length, expected)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else -(n_fft // 2) if center else expected
    y = y[:, start:end]
    envelope = envelope[:, start:end]
    if bool((envelope.abs().min() < 1e-11).item()):
        raise _err(head + " window overlap add min: 1")
    y = y / envelope
    if input.dim() == 2:
        y = y.squeeze(0)
    if end > expected:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        y = F.pad(y, (0, end - expected))
    return y
