"""``np.fft`` on traced values: ``fft``, ``ifft``, ``fft2``, ``ifft2``, ``fftn``, ``ifftn``,
``rfft``, ``irfft``, ``rfft2``, ``irfft2``, ``rfftn``, ``irfftn``, ``hfft``, ``ihfft``,
``fftshift`` and ``ifftshift``, with NumPy's arguments (``n``, ``s``, ``axis``/``axes``,
``norm``).

Everything is built from three primitives (``tracegrad/ir/prims/fft.py``): ``fft`` (complex,
any distinct axes), ``rfft`` and ``irfft`` (one axis), plus zero-padding and slicing for
``n``/``s``, ``conj`` for the Hermitian pair (NumPy's own definitions: ``hfft(a, n)`` is
``irfft(conj(a), n)`` and ``ihfft(a, n)`` is ``conj(rfft(a, n))``, both with the norm of
the opposite direction) and a slice-and-concatenate for the shifts. The multi-axis real
transforms are NumPy's too: ``rfftn`` is the real transform along the last of ``axes``
followed by the complex one along the others, ``irfftn`` the reverse.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.prims.fft import NORMS, SWAPPED
from ..ir.prims.util import complex_dtype
from ..ir.source import where
from .np_base import (
    _reject,
    _single_axis,
    astype,
    coerce,
    concatenate,
    dtype_of,
    implements,
    ndim_of,
    shape_of,
)


# -- argument checks ----------------------------------------------------------------------
def _norm(norm):
    if norm is None:
        return "backward"
    if isinstance(norm, str) and norm in NORMS:
        return norm
    raise TraceError(f'Invalid norm value {norm!r}; should be "backward", "ortho" or '
                     f'"forward"{where()}')


def _points(n, what="n"):
    try:
        n = operator.index(n)
    except TypeError:
        raise TraceError(f"np.fft: {what} must be an integer, got {n!r}{where()}") from None
    if n < 1:
        raise TraceError(f"Invalid number of FFT data points ({n}) specified{where()}")
    return n


def _real_input(a, name):
    """``a`` as a floating array (integers and booleans as float64, float16 as float32,
    which gives NumPy's result dtypes); complex input is refused, as by NumPy."""
    dt = dtype_of(a)
    if dt.kind == "c":
        raise TraceError(f"np.fft.{name} takes a real array, got {dt.name}{where()}")
    if dt.kind in "biu":
        return apply("convert", a, dtype=np.dtype(np.float64))
    if dt == np.float16:
        return apply("convert", a, dtype=np.dtype(np.float32))
    return a


def _complex_input(a):
    dt = dtype_of(a)
    want = complex_dtype(dt)
    return a if dt == want else apply("convert", a, dtype=want)


def _array(a, name):
    a = coerce(a)
    if ndim_of(a) == 0:
        raise TraceError(f"np.fft.{name} needs an array of at least one dimension{where()}")
    return a


# -- padding and cropping along one axis ---------------------------------------------------
def _resize(a, axis, n):
    """``a`` cut to, or zero-padded to, ``n`` entries along ``axis`` (as NumPy's ``n``/``s``)."""
    have = shape_of(a)[axis]
    if n == have:
        return a
    if n < have:
        return a[(slice(None),) * axis + (slice(0, n),)]
    widths = tuple((0, n - have) if i == axis else (0, 0) for i in range(ndim_of(a)))
    return apply("pad", a, widths=widths, value=0.0)


# -- the complex transforms --------------------------------------------------------------------
def _c2c(a, sizes, axes, inverse, norm):
    """The complex transform over ``axes`` (as given, possibly repeated) with ``sizes``."""
    a = _complex_input(a)
    if len(set(axes)) == len(axes):
        for ax, n in zip(axes, sizes):
            a = _resize(a, ax, n)
        return apply("fft", a, axes=tuple(sorted(axes)), inverse=inverse, norm=norm)
    # a repeated axis is transformed once per mention, last mention first (as NumPy)
    for ax, n in reversed(list(zip(axes, sizes))):
        a = apply("fft", _resize(a, ax, n), axes=(ax,), inverse=inverse, norm=norm)
    return a


def _one_axis(a, n, axis, name):
    axis = _single_axis(operator.index(axis), ndim_of(a))
    n = shape_of(a)[axis] if n is None else _points(n)
    return n, axis


def _fft1(name, inverse):
    def handler(a, n=None, axis=-1, norm=None, out=None):
        _reject(f"np.fft.{name}", out=out)
        a = _array(a, name)
        n, axis = _one_axis(a, n, axis, name)
        return _c2c(a, (n,), (axis,), inverse, _norm(norm))
    handler.__name__ = name
    return handler


fft = implements(np.fft.fft)(_fft1("fft", False))
ifft = implements(np.fft.ifft)(_fft1("ifft", True))


def _cook(a, s, axes, name, real_inverse=False):
    """NumPy's ``s`` and ``axes`` resolved: lists of sizes and non-negative axes. ``s=None``
    keeps every size (for ``irfftn`` the last axis gets ``2 * (m - 1)``); ``-1`` in ``s``
    means that default; ``axes=None`` means every axis, or the last ``len(s)``."""
    nd = ndim_of(a)
    if s is not None:
        s = [s] if np.ndim(s) == 0 else list(s)
        if axes is None:
            warnings.warn("`axes` should not be `None` if `s` is not `None` (Deprecated in "
                          "NumPy 2.0): pass the axes explicitly", DeprecationWarning,
                          stacklevel=4)
            axes = list(range(nd - len(s), nd))
    if axes is None:
        axes = list(range(nd))
    axes = [axes] if np.ndim(axes) == 0 else list(axes)
    axes = [_single_axis(operator.index(ax), nd) for ax in axes]
    if s is None:
        s = [-1] * len(axes)
    if len(s) != len(axes):
        raise TraceError(f"np.fft.{name}: Shape and axes have different lengths "
                         f"(s={tuple(s)}, axes={tuple(axes)}){where()}")
    sizes = []
    for i, (n, ax) in enumerate(zip(s, axes)):
        if n is None or _is_minus_one(n):
            n = shape_of(a)[ax]
            if real_inverse and i == len(axes) - 1:
                n = 2 * (n - 1)
        sizes.append(_points(n, "s"))
    return sizes, axes


def _is_minus_one(n):
    try:
        return operator.index(n) == -1
    except TypeError:
        return False


def _fftn(name, inverse, default_axes=None):
    def handler(a, s=None, axes=default_axes, norm=None, out=None):
        _reject(f"np.fft.{name}", out=out)
        a = _array(a, name)
        sizes, axes = _cook(a, s, axes, name)
        if not axes:
            return a      # NumPy hands the array back untouched
        return _c2c(a, sizes, axes, inverse, _norm(norm))
    handler.__name__ = name
    return handler


fftn = implements(np.fft.fftn)(_fftn("fftn", False))
ifftn = implements(np.fft.ifftn)(_fftn("ifftn", True))
fft2 = implements(np.fft.fft2)(_fftn("fft2", False, (-2, -1)))
ifft2 = implements(np.fft.ifft2)(_fftn("ifft2", True, (-2, -1)))


# -- the real transforms ------------------------------------------------------------------------
def _rfft_along(a, n, axis, norm, name):
    a = _resize(_real_input(a, name), axis, n)
    return apply("rfft", a, axis=axis, norm=norm)


def _irfft_along(a, n, axis, norm):
    a = _resize(_complex_input(a), axis, n // 2 + 1)
    return apply("irfft", a, n=n, axis=axis, norm=norm)


@implements(np.fft.rfft)
def rfft(a, n=None, axis=-1, norm=None, out=None):
    _reject("np.fft.rfft", out=out)
    a = _array(a, "rfft")
    n, axis = _one_axis(a, n, axis, "rfft")
    return _rfft_along(a, n, axis, _norm(norm), "rfft")


@implements(np.fft.irfft)
def irfft(a, n=None, axis=-1, norm=None, out=None):
    _reject("np.fft.irfft", out=out)
    a = _array(a, "irfft")
    axis = _single_axis(operator.index(axis), ndim_of(a))
    n = _points(2 * (shape_of(a)[axis] - 1) if n is None else n)
    return _half_back(a, _irfft_along(a, n, axis, _norm(norm)))


def _half_back(a, result):
    """NumPy's irfft/hfft of float16 data give float16 (its real output dtype is
    result_type(a.real.dtype, 1.0)); the transform itself runs in float32."""
    return astype(result, np.float16) if dtype_of(a) == np.float16 else result


def _rfftn(name, default_axes=None):
    def handler(a, s=None, axes=default_axes, norm=None, out=None):
        _reject(f"np.fft.{name}", out=out)
        a = _array(a, name)
        sizes, axes = _cook(a, s, axes, name)
        if not axes:
            raise TraceError(f"np.fft.{name} needs at least one axis{where()}")
        norm = _norm(norm)
        a = _rfft_along(a, sizes[-1], axes[-1], norm, name)
        if len(axes) > 1:
            a = _c2c(a, sizes[:-1], axes[:-1], False, norm)
        return a
    handler.__name__ = name
    return handler


def _irfftn(name, default_axes=None):
    def handler(a, s=None, axes=default_axes, norm=None, out=None):
        _reject(f"np.fft.{name}", out=out)
        a = _array(a, name)
        sizes, axes = _cook(a, s, axes, name, real_inverse=True)
        if not axes:
            raise TraceError(f"np.fft.{name} needs at least one axis{where()}")
        norm = _norm(norm)
        if len(axes) > 1:
            a = _c2c(a, sizes[:-1], axes[:-1], True, norm)
        return _irfft_along(a, sizes[-1], axes[-1], norm)
    handler.__name__ = name
    return handler


rfftn = implements(np.fft.rfftn)(_rfftn("rfftn"))
rfft2 = implements(np.fft.rfft2)(_rfftn("rfft2", (-2, -1)))
irfftn = implements(np.fft.irfftn)(_irfftn("irfftn"))
irfft2 = implements(np.fft.irfft2)(_irfftn("irfft2", (-2, -1)))


# -- Hermitian pairs: a conjugate and the opposite direction's scaling ---------------------------
def _conj(a):
    return apply("conj", a) if dtype_of(a).kind == "c" else a


@implements(np.fft.hfft)
def hfft(a, n=None, axis=-1, norm=None, out=None):
    """The real signal whose spectrum is Hermitian with the half ``a``."""
    _reject("np.fft.hfft", out=out)
    a = _array(a, "hfft")
    axis = _single_axis(operator.index(axis), ndim_of(a))
    n = _points(2 * (shape_of(a)[axis] - 1) if n is None else n)
    return _half_back(a, _irfft_along(_complex_input(_conj(a)), n, axis, SWAPPED[_norm(norm)]))


@implements(np.fft.ihfft)
def ihfft(a, n=None, axis=-1, norm=None, out=None):
    """The inverse of ``hfft``: the half spectrum of a real signal, conjugated."""
    _reject("np.fft.ihfft", out=out)
    a = _array(a, "ihfft")
    n, axis = _one_axis(a, n, axis, "ihfft")
    return apply("conj", _rfft_along(a, n, axis, SWAPPED[_norm(norm)], "ihfft"))


# -- shifts: the zero frequency to the middle, and back ------------------------------------------
def _shift(x, axes, sign):
    x = coerce(x)
    nd = ndim_of(x)
    if axes is None:
        axes = range(nd)
    axes = [axes] if np.ndim(axes) == 0 else list(axes)
    for ax in axes:
        ax = _single_axis(operator.index(ax), nd)
        n = shape_of(x)[ax]
        k = (sign * (n // 2)) % n if n else 0
        if k:   # a roll by k: the last k entries move to the front
            lead = (slice(None),) * ax
            x = concatenate([x[lead + (slice(n - k, n),)], x[lead + (slice(0, n - k),)]],
                            axis=ax)
    return x


@implements(np.fft.fftshift)
def fftshift(x, axes=None):
    return _shift(x, axes, 1)


@implements(np.fft.ifftshift)
def ifftshift(x, axes=None):
    return _shift(x, axes, -1)
