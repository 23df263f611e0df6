"""The general (non-symmetric) eigendecomposition: ``np.linalg.eig`` and ``eigvals`` on
real or complex square matrices, batched over leading axes. ``eig`` is a multi-output
primitive (``ir/registry.py``): one node, one factorisation, the eigenvalues and the
eigenvectors (as columns). ``eigvals`` alone is ``np.linalg.eigvals``; ``eig_vectors``
stays registered for graphs saved before (JSON version 1).

Conventions:

- **Complex results, always.** Both primitives return complex arrays (``complex64`` for
  ``float32`` / ``complex64`` input, ``complex128`` otherwise), as ``jnp.linalg.eig``
  does. NumPy returns *real* arrays when every eigenvalue of a real matrix happens to
  be real; a graph must know its dtypes without looking at values, so here the result
  is complex even then (its imaginary parts are zero; ``np.real`` recovers NumPy's).
- **Order and normalisation** are NumPy's own (LAPACK's ``geev``): the eigenvalues come
  in the order LAPACK finds them (not sorted), ``eigvals`` and ``eig_vectors`` share
  that order, and each eigenvector has unit 2-norm with its largest-magnitude entry
  real, of the sign LAPACK left (locally constant, so the rules below are the
  derivatives of exactly these vectors). On the JAX backend both primitives run NumPy
  on the host (``spectral.host_lowering``): XLA's ``eig`` (CPU only anyway) may order
  the eigenvalues and sign the eigenvectors otherwise.
- **Derivatives** (distinct eigenvalues). With ``A = V diag(w) V^-1`` and
  ``M = V^-1 dA V``: ``dw = diag(M)``; ``dV = V (F o M) + V diag(c)``, with
  ``F_ij = 1 / (w_j - w_i)`` off the diagonal and ``0`` on it, and ``c_j`` the multiple
  of ``v_j`` that keeps LAPACK's normalisation: ``Re(c_j) = -Re(v_j^H u_j)`` keeps the
  unit norm, ``Im(c_j) = -Im(u_kj) / v_kj`` keeps entry ``k`` (the largest of ``v_j``)
  real, where ``u_j`` is column ``j`` of ``V (F o M)``. So ``dV`` is the derivative of
  the eigenvectors the impl returns, not merely of some phase choice (JAX's ``eig``
  JVP makes the same choice). The VJPs are the transposes of these JVPs under the real
  pairing ``Re(sum(ct * t))`` (JAX's convention, no conjugation):
  ``ct_A = V^-T diag(ct_w) V^T`` and ``ct_A = V^-T (F o (V^T ct_U)) V^T`` with
  ``ct_U = ct - conj(V) Re(s) - 1j * E Im(s) / v_k``, ``s_j = sum_i ct_ij V_ij`` and ``E``
  the one-hot matrix of the largest entries. A real ``A`` gets the real part.
- **Repeated eigenvalues** have no derivative. As for ``eigh`` (``spectral.py``), two
  eigenvalues are *tied* when ``|w_i - w_j| <= 1000 * eps * max|w|``; the eigenvector
  rules use ``F_ij = 0`` for tied pairs and the eigenvalue rules average the cotangent
  (tangent) over each tied cluster. For a *diagonalisable* matrix with a repeated
  eigenvalue (``V`` invertible) that gives finite numbers and is the exact limit for
  functions that do not depend on how the tie is resolved: symmetric functions of the
  eigenvalues (``sum``, ``prod``: the trace and the determinant), and functions of
  the eigenvectors that depend only on the tied eigenspace (a spectral projector).
  Anything else is not differentiable there, and the numbers are one choice among
  many. A *defective* matrix (a repeated eigenvalue short of eigenvectors, like
  ``[[1, 1], [0, 1]]``) has a ``V`` that is singular to rounding, and its eigenvalues
  are not differentiable at all (they move like the square root of a perturbation):
  the rules solve with ``V`` and their numbers mean nothing there; they may be huge,
  inf or NaN, or finite and wrong (the gradient of ``prod(w)`` at ``[[1, 1], [0, 1]]``
  comes out as the identity, not ``det(A) A^-T``). Only ``sum(w)`` (the trace) stays
  right. Nothing inside a graph detects this case; check ``cond(V)`` yourself if it
  can happen.
  Near-ties (gaps above the tolerance but small) give correct but large derivatives,
  ``~1 / gap``, as the true derivative is.
"""
import functools

import numpy as np

from ..registry import apply
from ..registry import register as _register
from .spectral import cluster_average, host_lowering, host_lowering_multi, inverse_gaps, stacked_multi
from .util import complex_dtype, mT, square

# Both come from one factorisation shared between the two nodes (``aliasing="unknown"``);
# row by row under vmap; the JAX lowering runs on the host, on the operands as they are.
register = functools.partial(_register, batch=None)

# -- values (impl: xp = numpy; lowering: xp = jax) -------------------------------------------------


def _eig(a):
    """NumPy's eig, both results complex (NumPy gives real ones when all are real)."""
    a = square(np.asarray(a))
    w, v = np.linalg.eig(a)
    dtype = complex_dtype(a.dtype)
    return w.astype(dtype, copy=False), v.astype(dtype, copy=False)


# Not "linalg": the JAX backend casts an integer operand of that family to the node's dtype
# (complex here), and NumPy's eig of a complex matrix orders its eigenvalues otherwise.
FAMILY = "eig"


# -- traced helpers for the rules (the tie handling is eigh's: spectral.py) -----------------------
def _largest(v):
    """The one-hot (..., n, n) real mask of each column's largest-magnitude entry (the
    first of equals, as LAPACK's ``i?amax``): the entry ``geev`` makes real."""
    n = v.shape[-1]
    k = np.argmax(np.abs(v), axis=-2)
    rows = np.arange(n).reshape(n, 1)
    return (rows == np.expand_dims(k, -2)).astype(np.finfo(np.dtype(v.dtype)).dtype)


def _gauge(u, v):
    """c_j: the multiple of v_j added to u_j that keeps ||v_j|| = 1 and its largest
    entry real (see the module docstring)."""
    e = _largest(v)
    re = -np.real(np.sum(np.conj(v) * u, axis=-2))
    im = -np.imag(np.sum(e * u, axis=-2)) / np.real(np.sum(e * v, axis=-2))
    return re + 1j * im


def _complex_tangent(t, v):
    return t if np.dtype(t.dtype) == np.dtype(v.dtype) else t.astype(v.dtype)


# -- eigvals -----------------------------------------------------------------------------------------
def _eigvals_vjp(g, out, a):
    v = apply("eig_vectors", a)
    g = cluster_average(g, out)
    # ct_A = V^-T diag(g) V^T
    return (np.linalg.solve(mT(v), np.expand_dims(g, -1) * mT(v)),)


def _eigvals_jvp(t, out, a):
    v = apply("eig_vectors", a)
    m = np.linalg.solve(v, _complex_tangent(t[0], v))       # V^-1 dA
    dw = np.sum(m * mT(v), axis=-1)                         # diag(V^-1 dA V)
    return cluster_average(dw, out)


register(
    "eigvals", lambda a: _eig(a)[0],
    abstract=lambda a: (square(a).shape[:-1], complex_dtype(a.dtype)),
    vjp=_eigvals_vjp, jvp=_eigvals_jvp, jax=host_lowering("eigvals"),
    family=FAMILY, torch_name="EigvalsBackward0",
    doc="the eigenvalues of np.linalg.eig (always complex; LAPACK's order, shared with "
        "eig_vectors; tied eigenvalues share their cotangent; no derivative at a "
        "defective matrix)",
)


# -- eig_vectors -------------------------------------------------------------------------------------
def _eig_vectors_vjp(g, out, a):
    v, w = out, apply("eigvals", a)
    g = _complex_tangent(g, v)
    # the transpose of the gauge term: the cotangent reaching U = V (F o M)
    s = np.sum(g * v, axis=-2)
    e = _largest(v)
    vk = np.real(np.sum(e * v, axis=-2))
    gu = (g - np.conj(v) * np.expand_dims(np.real(s), -2)
          - 1j * e * np.expand_dims(np.imag(s) / vk, -2))
    x = inverse_gaps(w) * (mT(v) @ gu)
    # ct_A = V^-T x V^T
    return (np.linalg.solve(mT(v), x @ mT(v)),)


def _eig_vectors_jvp(t, out, a):
    v, w = out, apply("eigvals", a)
    m = np.linalg.solve(v, _complex_tangent(t[0], v) @ v)  # V^-1 dA V
    u = v @ (inverse_gaps(w) * m)
    return u + v * np.expand_dims(_gauge(u, v), -2)


register(
    "eig_vectors", lambda a: _eig(a)[1],
    abstract=lambda a: (square(a).shape, complex_dtype(a.dtype)),
    vjp=_eig_vectors_vjp, jvp=_eig_vectors_jvp, jax=host_lowering("eig_vectors"),
    family=FAMILY, torch_name="EigVectorsBackward0",
    doc="the eigenvectors of np.linalg.eig (columns, always complex; NumPy's: unit norm, "
        "largest entry real; tied pairs masked in the rules; no derivative at a "
        "defective matrix)",
)


# -- eig: one node, two outputs (w, v) from one factorisation --------------------------------------
def _eig_vjp(g, outs, a):
    (gw, gv), (w, v) = g, outs
    x = None
    if gw is not None:     # ct_A = V^-T diag(g) V^T
        x = np.expand_dims(cluster_average(gw, w), -1) * mT(v)
    if gv is not None:
        gv = _complex_tangent(gv, v)
        s = np.sum(gv * v, axis=-2)
        e = _largest(v)
        vk = np.real(np.sum(e * v, axis=-2))
        gu = (gv - np.conj(v) * np.expand_dims(np.real(s), -2)
              - 1j * e * np.expand_dims(np.imag(s) / vk, -2))
        part = (inverse_gaps(w) * (mT(v) @ gu)) @ mT(v)
        x = part if x is None else x + part
    return (np.linalg.solve(mT(v), x),)


def _eig_jvp(t, outs, a):
    w, v = outs
    m = np.linalg.solve(v, _complex_tangent(t[0], v) @ v)  # V^-1 dA V
    dw = cluster_average(np.sum(m * np.eye(m.shape[-1], dtype=np.dtype(m.dtype)), axis=-1), w)
    u = v @ (inverse_gaps(w) * m)
    return dw, u + v * np.expand_dims(_gauge(u, v), -2)


register(
    "eig", _eig, outputs=2,
    abstract=lambda a: [(square(a).shape[:-1], complex_dtype(a.dtype)),
                        (square(a).shape, complex_dtype(a.dtype))],
    vjp=_eig_vjp, jvp=_eig_jvp, jax=host_lowering_multi("eig"), batch=stacked_multi("eig"),
    family=FAMILY, torch_name="LinalgEigBackward0", foldable=False,
    doc="np.linalg.eig: eigenvalues and eigenvectors from one factorisation (always "
        "complex; NumPy's order and normalisation; tied pairs masked in the rules; no "
        "derivative at a defective matrix)",
)
