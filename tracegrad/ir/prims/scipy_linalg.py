"""``scipy.linalg`` matrix functions as primitives: ``expm`` and ``sqrtm``
(``tracegrad.scipy.linalg`` applies them; SciPy is imported inside the implementations).

``expm``'s derivative is its Fréchet derivative, read off the exponential of a block
matrix: ``expm([[A, E], [0, A]])`` holds ``L(A, E)`` in its upper right block (the JVP),
and the VJP is ``L(Aᵀ, G)``. Both apply ``expm`` again, so they differentiate to any order.
``sqrtm``'s derivative solves the Sylvester equation ``X dX + dX X = dA`` (``X = sqrtm(A)``;
the VJP the transposed one) as a linear system of size n² per matrix, on traced NumPy.
"""
import numpy as np

from ..registry import apply, register
from .scipy_special import special
from .util import cubic, mT, square


def _linalg():
    special()   # the same error when SciPy is missing
    import scipy.linalg
    return scipy.linalg


def _block_frechet(a, e):
    """The upper right block of expm([[a, e], [0, a]]): L(a, e)."""
    n = a.shape[-1]
    top = np.concatenate([a, e], axis=-1)
    bottom = np.concatenate([np.zeros_like(a), a], axis=-1)
    big = apply("expm", np.concatenate([top, bottom], axis=-2))
    return big[..., :n, n:]


def _expm_impl(a):
    return _linalg().expm(square(np.asarray(a)))


def _float_abstract(a):
    square(a)
    dtype = np.dtype(a.dtype)
    return a.shape, dtype if dtype.kind == "f" else np.dtype(np.float64)


def _expm_jax(a):
    import jax.scipy.linalg as jsl
    return jsl.expm(a)


def _batch_matrix(name):
    def rule(size, args, batched, out_shape):
        return apply(name, args[0])    # the implementations take stacks of matrices
    return rule


register(
    "expm", _expm_impl, abstract=_float_abstract,
    vjp=lambda g, out, a: (_block_frechet(mT(a), g),),
    jvp=lambda t, out, a: _block_frechet(a, t[0]),
    jax=_expm_jax, family="linalg", doc="scipy.linalg.expm: the matrix exponential",
    batch=_batch_matrix("expm"), complex=False, aliasing="fresh",
    cost=cubic(12), torch_name="LinalgMatrixExpBackward0",
)


def _sqrtm_impl(a):
    a = square(np.asarray(a))
    if a.shape[-1] == 0:    # matrices of size 0 (a stack of them too): empty
        return np.zeros(a.shape, a.dtype if a.dtype.kind in "fc" else np.float64)
    if a.ndim > 2:      # SciPy's stacks (older SciPy takes one matrix): matrix by matrix
        flat = np.reshape(a, (-1,) + a.shape[-2:])
        out = np.reshape(np.stack([_linalg().sqrtm(m) for m in flat]), a.shape)
    else:
        out = _linalg().sqrtm(a)
    if np.iscomplexobj(out) and a.dtype.kind != "c":
        if np.max(np.abs(out.imag), initial=0.0) > 1e-8 * max(np.max(np.abs(out)), 1.0):
            raise np.linalg.LinAlgError("sqrtm of a real matrix without a real square root "
                                        "(negative eigenvalues): not supported")
        out = out.real
    dtype = a.dtype if a.dtype.kind in "fc" else np.dtype(np.float64)
    return np.asarray(out).astype(dtype, copy=False)


def _sylvester(x, rhs):
    """``y`` with ``x y + y x = rhs`` (stacks of matrices too), as one linear system on
    vec(y) per matrix."""
    n, batch = x.shape[-1], tuple(x.shape[:-2])
    eye = np.eye(n, dtype=x.dtype)
    # row-major vec: vec(x y) = (x ⊗ I) vec(y), vec(y x) = (I ⊗ xᵀ) vec(y)
    k = (x[..., :, None, :, None] * eye[None, :, None, :] +
         eye[:, None, :, None] * mT(x)[..., None, :, None, :])
    vec = np.linalg.solve(np.reshape(k, batch + (n * n, n * n)),
                          np.reshape(rhs, batch + (n * n, 1)))
    return np.reshape(vec, batch + (n, n))


def _sqrtm_jax(a):
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl
    if a.shape[-1] == 0:    # JAX's Schur form fails on a 0 x 0 matrix; SciPy's is empty
        return a
    out = jnp.vectorize(jsl.sqrtm, signature="(n,n)->(n,n)")(a)
    return out if jnp.iscomplexobj(a) else jnp.real(out).astype(a.dtype)


register(
    "sqrtm", _sqrtm_impl, abstract=_float_abstract,
    vjp=lambda g, out, a: (_sylvester(mT(out), g),),
    jvp=lambda t, out, a: _sylvester(out, t[0]),
    jax=_sqrtm_jax, family="linalg",
    doc="scipy.linalg.sqrtm: the principal square root (real matrices with a real one)",
    batch=_batch_matrix("sqrtm"), complex=False, aliasing="fresh",
    cost=cubic(10),
)
