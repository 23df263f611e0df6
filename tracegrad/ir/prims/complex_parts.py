"""The parts of complex numbers: ``real``, ``imag`` and ``conj``.

They are R-linear but not holomorphic, so their rules spell out JAX's convention,
which every complex rule in the registry follows: a VJP is the transpose of the
JVP under the pairing ``Re(sum(ct * t))``, with no conjugation. The cotangent of
``real(z)`` enters ``z`` as it is, that of ``imag(z)`` as ``-1j * g``, and
``conj`` conjugates its cotangent. A real operand of a complex computation gets
the real part of its cotangent (the adjoint pass does that when it casts a
cotangent back to its operand's dtype).
"""
import numpy as np

from ..registry import register
from .elementwise import elementwise_facts
from .util import jnp_fn


def _part_abstract(x):
    dtype = np.dtype(x.dtype)
    return x.shape, np.finfo(dtype).dtype if dtype.kind == "c" else dtype


register(
    "real", np.real, abstract=_part_abstract,
    vjp=lambda g, out, x: (g,),
    jvp=lambda t, out, x: np.real(t[0]),
    jax=jnp_fn("real"), family="elementwise",
    # a real operand itself, a complex one's view
    **elementwise_facts("real", complex=True, aliasing="unknown"),
    doc="np.real(z)",
)
register(
    "imag", np.imag, abstract=_part_abstract,
    vjp=lambda g, out, x: (g * -1j,),
    jvp=lambda t, out, x: np.imag(t[0]),
    jax=jnp_fn("imag"), family="elementwise",
    # new zeros for a real operand, a complex one's view
    **elementwise_facts("imag", complex=True, aliasing="unknown"),
    doc="np.imag(z)",
)
register(
    "conj", np.conjugate, abstract=lambda x: (x.shape, x.dtype),
    vjp=lambda g, out, x: (np.conjugate(g),),
    jvp=lambda t, out, x: np.conjugate(t[0]),
    jax=jnp_fn("conjugate"), family="elementwise",
    # np.conjugate is a ufunc, but NumPy's conj of a real array is the array itself, which
    # the tracer's handler (np_complex) keeps: the primitive is no ufunc's spelling
    **elementwise_facts("conj", complex=True, aliasing="fresh"),
    doc="np.conj(z)",
)
