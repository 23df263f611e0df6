"""Cases for the general eigendecomposition (tracegrad/ir/prims/eig.py): ``eigvals`` and
``eig_vectors`` of real and complex square matrices, batched over leading axes.

The matrices are ``S diag(w) S^-1`` with a well-conditioned, non-orthogonal ``S`` (so the
matrices are not normal) and eigenvalues ``w`` at least ~0.5 apart, so the eigenvector
derivatives are well conditioned and finite differences valid. One real matrix has a
complex-conjugate pair (a 2x2 rotation-scaling block in place of two diagonal entries).

The eigenvector rules differentiate LAPACK's normalisation itself (unit norm, largest
entry real), as JAX's do, so the raw eigenvectors are compared with JAX and with finite
differences. The JAX side is ``jax_eig_like_numpy``: JAX's differentiable ``eig`` put in
NumPy's order and signs (the primitives' lowerings are host callbacks to NumPy); the
``phase-free`` cases check functions that do not depend on the normalisation at all
(``|v|**2`` and ``v * conj(v[0])`` columnwise, normalised).
"""
from __future__ import annotations

import numpy as np

from tracegrad.ir import REGISTRY, apply

from primitive_cases import Case, _rng, add


def _basis(n, batch, complex_):
    s = np.eye(n) + _rng.uniform(-0.3, 0.3, batch + (n, n))
    if complex_:
        s = s + 1j * _rng.uniform(-0.3, 0.3, batch + (n, n))
    return s


def spread(n, batch=(), complex_=False, pair=False):
    """``S diag(w) S^-1``: eigenvalues spread over [-2, 2] (complex: imaginary parts in
    [-1, 1]); ``pair``: a real matrix whose first two eigenvalues are ``x +- 1.2j``."""
    w = np.linspace(-2.0, 2.0, n) + _rng.uniform(-0.1, 0.1, batch + (n,))
    if complex_:
        w = w + 1j * _rng.uniform(-1.0, 1.0, batch + (n,))
    d = w[..., None, :] * np.eye(n)
    if pair:
        d[..., 0, 1], d[..., 1, 0] = 1.2, -1.2
        d[..., 1, 1] = d[..., 0, 0]
    s = _basis(n, batch, complex_)
    return s @ d @ np.linalg.inv(s)


def _jnp():
    import jax.numpy as jnp
    return jnp


def jax_eig_like_numpy(a):
    """``(w, v)`` of ``jax.lax.linalg.eig`` (differentiable, LAPACK's gauge: unit norm,
    largest entry real) in NumPy's order, each column times the constant +-1 that makes
    it NumPy's: the same function as the primitives, for JAX's derivatives."""
    import jax
    jnp = _jnp()
    a = jnp.asarray(a)
    if not jnp.issubdtype(a.dtype, jnp.inexact):
        a = a.astype(jnp.float64)
    w, v = jax.lax.linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
    fixed = jax.lax.stop_gradient(a)
    w_np = REGISTRY["eigvals"].jax(fixed)
    v_np = REGISTRY["eig_vectors"].jax(fixed)
    order = jnp.argmin(jnp.abs(w_np[..., :, None] - jax.lax.stop_gradient(w)[..., None, :]), -1)
    w = jnp.take_along_axis(w, order, axis=-1).astype(w_np.dtype)
    v = jnp.take_along_axis(v, order[..., None, :], axis=-1).astype(v_np.dtype)
    overlap = jnp.sum(jnp.conj(v_np) * jax.lax.stop_gradient(v), axis=-2, keepdims=True)
    return w, v * jnp.sign(jnp.real(overlap))


def _phase_free(xp, v):
    """Functions of the eigenvectors that no choice of phase changes: ``|v|**2`` and
    ``v_i0 conj(v_00)`` per column (the first row as the reference), stacked."""
    ref = xp.conj(v[..., :1, :])
    return xp.concatenate([xp.real(v * xp.conj(v)), xp.real(v * ref), xp.imag(v * ref)], axis=-1)


def _phase_free_case(a, **kw):
    add(Case("eig_vectors", (a,), tag="phase-free",
             fn=lambda x: _phase_free(np, apply("eig_vectors", x)),
             ref_fn=lambda x: _phase_free(np, REGISTRY["eig_vectors"].impl(x)),
             jax_fn=lambda x: _phase_free(_jnp(), jax_eig_like_numpy(x)[1]), **kw))


_JAX_TWIN = {"eigvals": lambda a: jax_eig_like_numpy(a)[0],
             "eig_vectors": lambda a: jax_eig_like_numpy(a)[1]}

for _n, _batch, _cplx, _pair, _second in [
        (3, (), False, False, True), (3, (), True, False, True), (2, (), False, False, False),
        (4, (), False, True, True), (4, (), True, False, False), (2, (2,), True, False, False),
        (3, (2,), False, True, False), (2, (2, 1), False, False, False), (3, (0,), False, False, False),
        (1, (), True, False, False)]:
    _a = spread(_n, _batch, _cplx, _pair)
    for _prim in ("eigvals", "eig_vectors"):
        add(Case(_prim, (_a,), tag="pair" if _pair else "", second=_second,
                 jax_fn=_JAX_TWIN[_prim]))



def _parts(xp, z):
    return xp.concatenate([xp.real(z), xp.imag(z)], axis=-1)


def _parts_case(prim, a, **kw):
    add(Case(prim, (a,), tag="parts", fn=lambda x: _parts(np, apply(prim, x)),
             ref_fn=lambda x: _parts(np, REGISTRY[prim].impl(x)),
             jax_fn=lambda x: _parts(_jnp(), _JAX_TWIN[prim](x)), **kw))


# float32 input (complex64 results), seen through their real and imaginary parts: the
# harness holds complex64 results to float64 tolerances (test_eig.py checks complex64);
# integer input (complex128 results, nothing to differentiate)
for _prim in ("eigvals", "eig_vectors"):
    _parts_case(_prim, spread(3, pair=True).astype(np.float32))
    _parts_case(_prim, spread(3, pair=True))
    add(Case(_prim, (np.array([[2, 1], [0, -1]]),), tag="int", jax_fn=_JAX_TWIN[_prim]))

# phase-independent functions of the eigenvectors (real outputs)
_phase_free_case(spread(3, pair=True), second=True)
_phase_free_case(spread(3, complex_=True), second=True)
_phase_free_case(spread(2, (2,)))
# a symmetric function of the eigenvalues: sum(w**2) = trace(A @ A), real for real A
add(Case("eigvals", (spread(3, pair=True),), tag="sum-of-squares",
         fn=lambda a: np.real(np.sum(apply("eigvals", a) ** 2, axis=-1)),
         ref_fn=lambda a: np.real(np.sum(REGISTRY["eigvals"].impl(a) ** 2, axis=-1)),
         jax_fn=lambda a: _jnp().real((jax_eig_like_numpy(a)[0] ** 2).sum(-1)),
         second=True))

# eig: one node, two outputs; each output's rule through the one node (the phase-free
# functions of the vectors, and the pair of both)
for _n, _batch, _cplx, _pair, _second in [(3, (), False, False, True), (3, (), True, False, False),
                                          (4, (), False, True, False), (2, (2,), True, False, False)]:
    _a = spread(_n, _batch, _cplx, _pair)
    add(Case("eig", (_a,), tag="w" + ("-pair" if _pair else ""), second=_second,
             fn=lambda x: apply("eig", x)[0], ref_fn=lambda x: REGISTRY["eigvals"].impl(x),
             jax_fn=_JAX_TWIN["eigvals"]))
    add(Case("eig", (_a,), tag="v" + ("-pair" if _pair else ""), second=_second,
             fn=lambda x: apply("eig", x)[1], ref_fn=lambda x: REGISTRY["eig_vectors"].impl(x),
             jax_fn=_JAX_TWIN["eig_vectors"]))
add(Case("eig", (spread(3, pair=True),), tag="v-phase-free", second=True,
         fn=lambda x: _phase_free(np, apply("eig", x)[1]),
         ref_fn=lambda x: _phase_free(np, REGISTRY["eig_vectors"].impl(x)),
         jax_fn=lambda x: _phase_free(_jnp(), jax_eig_like_numpy(x)[1])))
