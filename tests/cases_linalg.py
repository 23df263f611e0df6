"""Cases for the spectral linear-algebra primitives (tracegrad/ir/prims/spectral.py):
eigh (values, vectors), svd (values, U, Vh) and qr (Q, R), batched over leading axes.

Inputs have well-separated spectra (eigenvalues / singular values at least ~0.3 apart),
so that the eigenvector and singular-vector derivatives are well conditioned and finite
differences are valid. ``eigh`` reads only the lower triangle, as NumPy does, and its
rules differentiate that triangle: its inputs are *not* symmetric (noise above the
diagonal, never read), and the finite differences are those of NumPy's function itself.
The JAX twins compute the same functions: ``jnp.linalg.eigh`` of the lower triangle
mirrored (it would symmetrise the whole input), and the vectors of XLA's solvers with
each column's sign aligned to NumPy's (a constant: the lowerings of ``eigh_vectors``,
``svd_u`` and ``svd_vh`` are host callbacks to NumPy, which JAX cannot differentiate).
"""
from __future__ import annotations

import numpy as np

from tracegrad.ir import REGISTRY

from primitive_cases import Case, _rng, add


def lopsided(a):
    """``a`` plus noise strictly above the diagonal: NumPy's eigh / cholesky read the same
    lower triangle, and no test can pass by symmetrising."""
    return a + np.triu(_rng.uniform(-1.0, 1.0, a.shape), 1)


def jax_lower(a):
    """What NumPy's eigh / cholesky read, in JAX: the lower triangle, mirrored."""
    import jax.numpy as jnp
    return jnp.tril(a) + jnp.swapaxes(jnp.tril(a, -1), -1, -2)


def _signs_like(v, prim, a):
    """+-1 per column of ``v`` that turns it into NumPy's (the callback lowering of
    ``prim`` at ``a``, outside differentiation)."""
    import jax
    import jax.numpy as jnp
    ref = REGISTRY[prim].jax(jax.lax.stop_gradient(a))
    return jax.lax.stop_gradient(jnp.sign(jnp.sum(v * ref, axis=-2, keepdims=True)))


def jax_eigvalsh(a):
    import jax.numpy as jnp
    return jnp.linalg.eigvalsh(jax_lower(a))


def jax_eigh_vectors(a):
    import jax.numpy as jnp
    v = jnp.linalg.eigh(jax_lower(a))[1]
    return v * _signs_like(v, "eigh_vectors", a)


def jax_svd(a, which):
    import jax.numpy as jnp
    u, _, vh = jnp.linalg.svd(a, full_matrices=False)
    sign = _signs_like(u, "svd_u", a)
    return u * sign if which == "svd_u" else vh * jnp.swapaxes(sign, -1, -2)


_JAX_TWINS = {"eigvalsh": jax_eigvalsh, "eigh_vectors": jax_eigh_vectors,
              "svd_u": lambda a: jax_svd(a, "svd_u"), "svd_vh": lambda a: jax_svd(a, "svd_vh")}


def symmetric_spread(n, batch=()):
    """Symmetric matrices with eigenvalues spread out (gaps >= 0.3), of either sign."""
    q, _ = np.linalg.qr(_rng.standard_normal(batch + (n, n)))
    lam = np.linspace(-1.5, 2.0, n) if n > 1 else np.array([0.7])
    lam = lam + _rng.uniform(-0.1, 0.1, batch + (n,))
    a = (q * lam[..., None, :]) @ np.swapaxes(q, -1, -2)
    # exactly symmetric (rounding leaves q Λ qᵀ a few ulps off): property tests recognise
    # symmetric operands by equality and then perturb them symmetrically
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def spread_singular(m, n, batch=()):
    """m x n matrices with singular values 1 .. 3 (gaps >= 0.3)."""
    k = min(m, n)
    u, _ = np.linalg.qr(_rng.standard_normal(batch + (m, k)))
    v, _ = np.linalg.qr(_rng.standard_normal(batch + (n, k)))
    s = np.linspace(3.0, 1.0, k) + _rng.uniform(-0.1, 0.1, batch + (k,))
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


def tall(m, n, batch=()):
    """Full column rank, well conditioned: QR's derivatives need a nonsingular R."""
    a = _rng.uniform(-1.0, 1.0, batch + (m, n))
    a[..., :n, :] += 2.0 * np.eye(n)
    return a


for _n, _batch, _second in [(3, (), True), (2, (2,), True), (4, (), False), (1, (), False),
                            (3, (2, 1), False), (2, (0,), False)]:
    _a = lopsided(symmetric_spread(_n, _batch))
    for _prim in ("eigvalsh", "eigh_vectors"):
        # 1x1: the derivative is exactly zero, JAX's is rounding noise (no relative scale)
        add(Case(_prim, (_a,), second=_second, jax_fn=_JAX_TWINS[_prim], jax_derivs=_n > 1))
    add(Case("eigvalsh", (symmetric_spread(_n, _batch),), tag="symmetric",
             jax_fn=jax_eigvalsh))
for _prim in ("eigvalsh", "eigh_vectors"):
    add(Case(_prim, (lopsided(symmetric_spread(3)).astype(np.float32),),
             jax_fn=_JAX_TWINS[_prim]))

for _shape, _batch, _second in [((3, 3), (), True), ((4, 2), (), True), ((2, 4), (), True),
                                ((3, 2), (2,), False), ((2, 3), (2, 1), False), ((1, 3), (), False),
                                ((3, 1), (), False), ((5, 3), (), False)]:
    _a = spread_singular(*_shape, _batch)
    for _prim in ("svdvals", "svd_u", "svd_vh"):
        add(Case(_prim, (_a,), second=_second, jax_fn=_JAX_TWINS.get(_prim)))
for _prim in ("svdvals", "svd_u", "svd_vh"):
    add(Case(_prim, (spread_singular(3, 2).astype(np.float32),), jax_fn=_JAX_TWINS.get(_prim)))

# svd: one node with three outputs (u, s, vh); each output's rule through the one node, and
# proj, the node that picks an output
_SVD_TWINS = {0: _JAX_TWINS["svd_u"], 1: lambda a: REGISTRY["svdvals"].jax(a),
              2: _JAX_TWINS["svd_vh"]}


def _svd_case(prim, a, which, second, tag):
    from tracegrad.ir import apply
    add(Case(prim, (a,), second=second, tag=tag,
             fn=lambda x: apply("svd", x)[which],
             ref_fn=lambda x: np.linalg.svd(x, full_matrices=False)[which],
             jax_fn=_SVD_TWINS[which]))


for _shape, _batch, _second in [((3, 3), (), True), ((4, 2), (), True), ((2, 4), (), False),
                                ((3, 2), (2,), False)]:
    _a = spread_singular(*_shape, _batch)
    for _which, _tag in enumerate(("u", "s", "vh")):
        _svd_case("svd", _a, _which, _second, _tag)
_svd_case("proj", spread_singular(3, 3), 1, True, "s")

for _shape, _batch, _second in [((3, 3), (), True), ((4, 2), (), True), ((3, 2), (2,), False),
                                ((5, 3), (), False), ((2, 2), (2, 1), False), ((3, 1), (), False)]:
    _a = tall(*_shape, _batch)
    add(Case("qr_q", (_a,), second=_second))
    add(Case("qr_r", (_a,), second=_second))
add(Case("qr_q", (tall(3, 2).astype(np.float32),)))
add(Case("qr_r", (tall(3, 2).astype(np.float32),)))


# eigh and qr: one node with two outputs each; each output's rule through the one node
def _output_case(prim, a, which, second, tag, reference, jax_fn, **params):
    from tracegrad.ir import apply
    add(Case(prim, (a,), second=second, tag=tag,
             fn=lambda x: apply(prim, x, **params)[which],
             ref_fn=lambda x: reference(x)[which], jax_fn=jax_fn))


for _n, _batch, _second in [(3, (), True), (2, (2,), False), (4, (), False)]:
    _a = lopsided(symmetric_spread(_n, _batch))
    _output_case("eigh", _a, 0, _second, "w", np.linalg.eigh, jax_eigvalsh)
    _output_case("eigh", _a, 1, _second, "v", np.linalg.eigh, jax_eigh_vectors)


def _jax_qr(which):
    def fn(a):
        import jax.numpy as jnp
        return jnp.linalg.qr(a)[which]
    return fn


for _shape, _batch, _second in [((3, 3), (), True), ((4, 2), (), True), ((3, 2), (2,), False)]:
    _a = tall(*_shape, _batch)
    _output_case("qr", _a, 0, _second, "q", np.linalg.qr, _jax_qr(0))
    _output_case("qr", _a, 1, _second, "r", np.linalg.qr, _jax_qr(1))
