"""Cases for the spectral linear-algebra primitives (tracegrad/ir/prims/spectral.py):
eigh (values, vectors), svd (values, U, Vh) and qr (Q, R), batched over leading axes.

Inputs have well-separated spectra (eigenvalues / singular values at least ~0.3 apart),
so that the eigenvector and singular-vector derivatives are well conditioned and finite
differences are valid. ``eigh`` reads only the lower triangle, as NumPy does, and
differentiates the symmetrised matrix, as JAX does: its finite differences go through a
symmetrised input, as cholesky's do.
"""
from __future__ import annotations

import numpy as np

from tracegrad.ir import apply

from primitive_cases import Case, _rng, add


def _sym_fd(prim):
    return lambda a: apply(prim, 0.5 * (a + np.swapaxes(a, -1, -2)))


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
    _a = symmetric_spread(_n, _batch)
    for _prim in ("eigvalsh", "eigh_vectors"):
        add(Case(_prim, (_a,), second=_second, fd_fn=_sym_fd(_prim)))
add(Case("eigvalsh", (symmetric_spread(3).astype(np.float32),)))
add(Case("eigh_vectors", (symmetric_spread(3).astype(np.float32),)))

for _shape, _batch, _second in [((3, 3), (), True), ((4, 2), (), True), ((2, 4), (), True),
                                ((3, 2), (2,), False), ((2, 3), (2, 1), False), ((1, 3), (), False),
                                ((3, 1), (), False), ((5, 3), (), False)]:
    _a = spread_singular(*_shape, _batch)
    for _prim in ("svdvals", "svd_u", "svd_vh"):
        add(Case(_prim, (_a,), second=_second))
for _prim in ("svdvals", "svd_u", "svd_vh"):
    add(Case(_prim, (spread_singular(3, 2).astype(np.float32),)))

for _shape, _batch, _second in [((3, 3), (), True), ((4, 2), (), True), ((3, 2), (2,), False),
                                ((5, 3), (), False), ((2, 2), (2, 1), False), ((3, 1), (), False)]:
    _a = tall(*_shape, _batch)
    add(Case("qr_q", (_a,), second=_second))
    add(Case("qr_r", (_a,), second=_second))
add(Case("qr_q", (tall(3, 2).astype(np.float32),)))
add(Case("qr_r", (tall(3, 2).astype(np.float32),)))
