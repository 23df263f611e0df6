"""Complex numbers on traced values: ``np.real``, ``np.imag``, ``np.conj``/``conjugate``,
``np.angle``, ``np.real_if_close``, ``np.iscomplexobj``/``isrealobj`` and
``np.iscomplex``/``isreal``, and the ``.real``, ``.imag``, ``.conj()`` attributes.

On a real array NumPy's ``real`` and ``conj`` are the array itself and ``imag`` is zeros;
so they are here, without a node (the zeros are a constant: no gradient).
"""
from __future__ import annotations

import numpy as np

from ..ir import apply
from .core import Tracer
from .np_base import UFUNCS, astype, coerce, dtype_of, implements, numpy_loop


def _is_complex(x):
    return dtype_of(x).kind == "c"


@implements(np.real)
def real(val):
    val = coerce(val)
    return apply("real", val) if _is_complex(val) else val


@implements(np.imag)
def imag(val):
    val = coerce(val)
    if _is_complex(val):
        return apply("imag", val)
    return np.zeros(np.shape(val), dtype_of(val))


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


Tracer.real = property(real)
Tracer.imag = property(imag)
Tracer.conj = Tracer.conjugate = conjugate
