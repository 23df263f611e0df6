"""Complex numbers on traced values: ``np.real``, ``np.imag``, ``np.conj``/``conjugate``,
``np.angle``, ``np.real_if_close``, ``np.iscomplexobj``/``isrealobj`` and
``np.iscomplex``/``isreal``, and the ``.real``, ``.imag``, ``.conj()`` attributes.

On a real array NumPy's ``real`` and ``conj`` are the array itself and ``imag`` is zeros;
so they are here, without a node (the zeros are a constant: no gradient).
"""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.source import where
from .core import Tracer
from .np_base import UFUNCS, astype, coerce, dtype_of, implements, numpy_loop
from .views import mark_view


def _is_complex(x):
    return dtype_of(x).kind == "c"


@implements(np.real)
def real(val):
    val = coerce(val)
    return _part_view(apply("real", val), val, "real") if _is_complex(val) else val


@implements(np.imag)
def imag(val):
    val = coerce(val)
    if _is_complex(val):
        return _part_view(apply("imag", val), val, "imag")
    return np.zeros(np.shape(val), dtype_of(val))


def _part_view(part, z, name):
    """NumPy's real and imag parts of a complex array are views of it: this one sees later
    writes to ``z``. Writing through it would need z rebuilt as re + 1j * im, which turns
    an infinite part into NaN, so it raises rather than give a wrong number."""
    def refuse(base, view):
        raise TraceError(f"writing into np.{name}(z) of a traced complex z is not supported "
                         f"(NumPy writes through the view): assign z itself, e.g. "
                         f"z = np.real(z) + 1j * new_imag{where()}")
    # its layout is z's with every stride doubled, which reshapes without a copy exactly
    # when z's does: z's own stand-in serves
    return mark_view(part, z, lambda base: apply(name, base), refuse, lambda arr: arr)


def conjugate(x):
    x = coerce(x)
    return apply("conj", x) if _is_complex(x) else x


UFUNCS[np.conjugate] = numpy_loop(np.conjugate, conjugate)


@implements(np.angle)
def angle(z, deg=False):
    """``arctan2(imag, real)``; its derivative is zero for real values, as in JAX."""
    z = coerce(z)
    if _is_complex(z):
        a = apply("arctan2", imag(z), real(z))
    else:
        # NumPy's arctan2(0, z): a weak 0, so int8 data gives float16
        z = astype(z, np.arctan2.resolve_dtypes((int, dtype_of(z), None))[-1])
        a = apply("arctan2", np.zeros(np.shape(z), dtype_of(z)), z)
    return a * (180.0 / np.pi) if deg else a


@implements(np.real_if_close)
def real_if_close(a, tol=100):
    """The real part when every imaginary part is within ``tol`` machine epsilons of
    zero. Which one it returns depends on the values, so the decision is read at trace
    time and recorded as a guard (a compiled function traces again when a later call
    decides differently)."""
    a = coerce(a)
    if not _is_complex(a):
        return a
    eps = np.finfo(dtype_of(a)).eps
    limit = tol * eps if tol > 1 else tol
    small = bool(np.all(np.abs(imag(a)) < limit))   # bool() of a tracer: a guard
    return real(a) if small else a


@implements(np.iscomplexobj)
def iscomplexobj(x):
    return _is_complex(coerce(x))


@implements(np.isrealobj)
def isrealobj(x):
    return not _is_complex(coerce(x))


@implements(np.iscomplex)
def iscomplex(x):
    x = coerce(x)
    if not _is_complex(x):
        return np.zeros(np.shape(x), bool)
    return apply("not_equal", apply("imag", x), 0.0)


@implements(np.isreal)
def isreal(x):
    x = coerce(x)
    if not _is_complex(x):
        return np.ones(np.shape(x), bool)
    return apply("equal", apply("imag", x), 0.0)


def _set_real(self, value):
    if _is_complex(self):
        raise TraceError(f"assigning z.real of a traced complex z is not supported: assign z "
                         f"itself, e.g. z = new_real + 1j * np.imag(z){where()}")
    self[...] = value               # a real array is its own real part


def _set_imag(self, value):
    if not _is_complex(self):
        raise TypeError(f"array does not have imaginary part to set{where()}")
    raise TraceError(f"assigning z.imag of a traced complex z is not supported: assign z "
                     f"itself, e.g. z = np.real(z) + 1j * new_imag{where()}")


Tracer.real = property(real, _set_real)
Tracer.imag = property(imag, _set_imag)
Tracer.conj = Tracer.conjugate = conjugate
