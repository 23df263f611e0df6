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


def _complex_dtype(re, im):
    return np.result_type(np.dtype(re.dtype), np.dtype(im.dtype), np.complex64)


def _complex_impl(re, im):
    """``re + 1j * im``. Real parts are copied in (no product: an infinite imaginary part
    stays itself, where ``1j * inf`` is ``nan + inf j``); complex ones are combined as
    the formula says (the map is linear, so holomorphic in each operand)."""
    re, im = np.broadcast_arrays(np.asarray(re), np.asarray(im))
    dtype = _complex_dtype(re, im)
    if re.dtype.kind == "c" or im.dtype.kind == "c":
        return (re + im * 1j).astype(dtype)
    out = np.empty(re.shape, dtype)
    out.real, out.imag = re, im
    return out


def _complex_jvp(t, out, re, im):
    t_re, t_im = t
    total = None
    for part in (t_re, None if t_im is None else t_im * 1j):
        if part is not None:
            total = part if total is None else total + part
    return None if total is None else total + np.zeros(out.shape, out.dtype)


def _complex_jax(re, im):
    import jax.numpy as jnp
    from jax import lax
    dtype = _complex_dtype(re, im)
    if np.dtype(re.dtype).kind == "c" or np.dtype(im.dtype).kind == "c":
        return (re + im * 1j).astype(dtype)
    part = np.finfo(dtype).dtype
    re, im = jnp.broadcast_arrays(re.astype(part), im.astype(part))
    return lax.complex(re, im)


register(
    "complex", _complex_impl,
    abstract=lambda re, im: (np.broadcast_shapes(tuple(re.shape), tuple(im.shape)),
                             _complex_dtype(re, im)),
    # holomorphic in each operand, derivatives 1 and 1j (JAX's convention: g * f'(z); a
    # real operand takes the real part, the adjoint pass's cast: Re(g) and -Im(g))
    vjp=lambda g, out, re, im: (g, g * 1j),
    jvp=_complex_jvp,
    jax=_complex_jax, family="elementwise",
    **elementwise_facts("complex", complex=True, aliasing="fresh"),
    doc="re + 1j * im, each part copied in for real operands (torch.complex, lax.complex)",
)
