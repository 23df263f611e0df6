"""Spectral linear algebra on real matrices: ``eigh``, ``svd`` and ``qr``, batched over
leading axes. Every result is its own primitive (``eigvalsh`` / ``eigh_vectors``,
``svdvals`` / ``svd_u`` / ``svd_vh``, ``qr_q`` / ``qr_r``), as ``slogdet`` is split into
``slogdet_sign`` and ``logabsdet``; a rule that needs another result applies that
primitive (the passes' CSE merges repeated applications).

Conventions (see docs of ``np.linalg.eigh`` / ``svd`` on traced values):

- **Signs.** Eigenvectors and singular vectors are only defined up to sign; the impls
  and the JAX lowerings both fix it the same way: in each column of ``V`` (``eigh``) or
  ``U`` (``svd``) the first entry of largest magnitude is positive (``svd`` flips the
  matching row of ``Vh``). The result is a valid NumPy decomposition, but its signs may
  differ from what ``np.linalg`` returns on a plain array.
- **Symmetric input.** ``eigh`` reads the lower triangle, as NumPy does; its derivatives
  are those of the symmetrised input (the cotangent is symmetric), as in JAX: only
  symmetric perturbations keep the matrix symmetric.
- **Degenerate spectra.** Two eigenvalues (singular values) are *tied* when they differ
  by at most ``1000 * eps * max|lambda|``. The eigenvector (singular vector) rules use
  ``F_ij = 1 / (lambda_j - lambda_i)`` (``1 / (s_j**2 - s_i**2)``) for untied pairs and
  ``0`` for tied ones: within a tied cluster the vectors are an arbitrary basis of the
  eigenspace, and for a function that does not depend on that choice (a projector, a
  matrix function ``V f(L) V^T``, ``pinv``) this is the exact limit. The eigenvalue
  (singular value) rules average the cotangent over each tied cluster, which makes the
  gradient independent of the basis LAPACK picked: exact for functions symmetric in
  the tied values (``sum(f(lambda))``, ``logdet``, nuclear norm), and the minimum-norm
  subgradient for ``max`` (the spectral norm at a tie). Nothing here produces NaN or
  inf from a tie; ``svd``'s rules for a rectangular matrix with zero singular values
  drop the ``1 / s`` terms of the zero ones (the same masking).
- **QR.** ``qr_q`` / ``qr_r`` are NumPy's reduced QR; their derivatives need
  ``m >= n`` and a nonsingular ``R`` (full column rank). ``np.linalg.qr`` on traced
  values builds a wide matrix's QR from the square one of its first ``m`` columns.
"""
import numpy as np

from ...errors import TraceError
from ..registry import apply, register
from .util import mT, square

# -- helpers shared by impls (xp = numpy) and JAX lowerings (xp = jax.numpy) ---------------------


def _col_signs(xp, v):
    """+1/-1 per column of ``v`` (..., n, k), shaped (..., 1, k): the first entry whose
    magnitude is the column's largest (to within 1e-4) becomes positive."""
    if v.shape[-2] == 0 or v.shape[-1] == 0:
        return xp.ones(v.shape[:-2] + (1, v.shape[-1]), dtype=v.dtype)
    mag = xp.abs(v)
    big = mag >= xp.max(mag, axis=-2, keepdims=True) * (1 - 1e-4)
    idx = xp.argmax(big, axis=-2)
    pick = xp.take_along_axis(v, idx[..., None, :], axis=-2)
    return xp.where(pick < 0, -1.0, 1.0).astype(v.dtype)


def _eigh(xp, a):
    w, v = xp.linalg.eigh(a)
    return w, v * _col_signs(xp, v)


def _svd(xp, a):
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    sg = _col_signs(xp, u)
    return u * sg, s, vh * xp.swapaxes(sg, -1, -2)


def _jax(fn):
    def lower(*args, **params):
        import jax.numpy as jnp
        return fn(jnp, *args, **params)
    return lower


def _float(dtype):
    dtype = np.dtype(dtype)
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _matrix(a):
    if a.ndim < 2:
        raise ValueError(f"expected a matrix (or a batch of them), got shape {a.shape}")
    return a


# -- traced helpers for the rules --------------------------------------------------------------
DEGENERATE_RTOL_EPS = 1000   # tied: |lambda_i - lambda_j| <= 1000 * eps * max|lambda|


def _tolerance(w):
    """The tie tolerance per matrix of the batch, shaped (..., 1, 1) (for real or complex
    values: ``eig``'s eigenvalues share these rules)."""
    eps = np.finfo(np.dtype(w.dtype)).eps
    scale = np.max(np.abs(w), axis=-1, keepdims=True)
    return np.expand_dims(scale * (DEGENERATE_RTOL_EPS * eps), -1)


def _untied(w):
    """Boolean (..., n, n): True where w_i and w_j are not tied (False on the diagonal)."""
    diff = np.expand_dims(w, -2) - np.expand_dims(w, -1)
    return np.abs(diff) > _tolerance(w), diff


def inverse_gaps(w):
    """F_ij = 1 / (w_j - w_i) for untied pairs, 0 for tied ones and on the diagonal."""
    keep, diff = _untied(w)
    return np.where(keep, 1.0 / np.where(keep, diff, 1.0), 0.0)


def _inverse_square_gaps(s):
    """F_ij = 1 / (s_j**2 - s_i**2) for untied pairs, 0 for tied ones and on the diagonal."""
    keep, diff = _untied(s)
    total = np.expand_dims(s, -2) + np.expand_dims(s, -1)
    return np.where(keep, 1.0 / np.where(keep, diff * total, 1.0), 0.0)


def cluster_average(g, w):
    """``g`` (..., n) averaged over each cluster of tied values of ``w``: the identity when
    the values are distinct."""
    keep, _ = _untied(w)
    tied = 1.0 - keep.astype(g.dtype)
    return np.sum(tied * np.expand_dims(g, -2), axis=-1) / np.sum(tied, axis=-1)


def _safe_reciprocal(s):
    """1 / s, with 0 for singular values that are zero to within the tie tolerance."""
    keep = s > _tolerance(s)[..., 0]
    return np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)


def _sym(t):
    return 0.5 * (t + mT(t))


# -- eigh --------------------------------------------------------------------------------------
def _eigvalsh_abstract(a):
    return square(a).shape[:-1], _float(a.dtype)


def _eigvalsh_vjp(g, out, a):
    v = apply("eigh_vectors", a)
    g = cluster_average(g, out)
    return ((v * np.expand_dims(g, -2)) @ mT(v),)


def _eigvalsh_jvp(t, out, a):
    v = apply("eigh_vectors", a)
    dw = np.sum(v * (_sym(t[0]) @ v), axis=-2)
    return cluster_average(dw, out)


register(
    "eigvalsh", lambda a: _eigh(np, a)[0], abstract=_eigvalsh_abstract,
    vjp=_eigvalsh_vjp, jvp=_eigvalsh_jvp, jax=_jax(lambda jnp, a: _eigh(jnp, a)[0]),
    family="linalg",
    doc="the eigenvalues of np.linalg.eigh (ascending; lower triangle read, derivatives "
        "symmetrised; tied eigenvalues share their cotangent)",
)


def _eigh_vectors_vjp(g, out, a):
    w = apply("eigvalsh", a)
    s = out @ (inverse_gaps(w) * (mT(out) @ g)) @ mT(out)
    return (_sym(s),)


def _eigh_vectors_jvp(t, out, a):
    w = apply("eigvalsh", a)
    return out @ (inverse_gaps(w) * (mT(out) @ _sym(t[0]) @ out))


register(
    "eigh_vectors", lambda a: _eigh(np, a)[1],
    abstract=lambda a: (square(a).shape, _float(a.dtype)),
    vjp=_eigh_vectors_vjp, jvp=_eigh_vectors_jvp, jax=_jax(lambda jnp, a: _eigh(jnp, a)[1]),
    family="linalg",
    doc="the eigenvectors of np.linalg.eigh (columns; sign fixed; tied pairs masked in the rules)",
)


# -- svd (reduced) -------------------------------------------------------------------------------
def _svd_shapes(a):
    _matrix(a)
    m, n = a.shape[-2:]
    return a.shape[:-2], m, n, min(m, n)


def _svdvals_vjp(g, out, a):
    u, vh = apply("svd_u", a), apply("svd_vh", a)
    g = cluster_average(g, out)
    return ((u * np.expand_dims(g, -2)) @ vh,)


def _svdvals_jvp(t, out, a):
    u, vh = apply("svd_u", a), apply("svd_vh", a)
    ds = np.sum(u * (t[0] @ mT(vh)), axis=-2)
    return cluster_average(ds, out)


register(
    "svdvals", lambda a: np.linalg.svd(a, compute_uv=False),
    abstract=lambda a: (_svd_shapes(a)[0] + (_svd_shapes(a)[3],), _float(a.dtype)),
    vjp=_svdvals_vjp, jvp=_svdvals_jvp,
    jax=_jax(lambda jnp, a: jnp.linalg.svd(a, compute_uv=False)), family="linalg",
    doc="the singular values (descending); tied values share their cotangent",
)


def _svd_u_vjp(g, out, a):
    u, s, vh = out, apply("svdvals", a), apply("svd_vh", a)
    x = _inverse_square_gaps(s) * (mT(u) @ g)
    ga = u @ ((x + mT(x)) * np.expand_dims(s, -2)) @ vh
    m, n = a.shape[-2:]
    if m > n:
        ga = ga + ((g - u @ (mT(u) @ g)) * np.expand_dims(_safe_reciprocal(s), -2)) @ vh
    return (ga,)


def _svd_u_jvp(t, out, a):
    u, s, vh = out, apply("svdvals", a), apply("svd_vh", a)
    ds = mT(u) @ t[0] @ mT(vh)
    du = u @ (_inverse_square_gaps(s) * (ds * np.expand_dims(s, -2)
                                         + np.expand_dims(s, -1) * mT(ds)))
    m, n = a.shape[-2:]
    if m > n:
        dav = t[0] @ mT(vh)
        du = du + (dav - u @ (mT(u) @ dav)) * np.expand_dims(_safe_reciprocal(s), -2)
    return du


register(
    "svd_u", lambda a: _svd(np, a)[0],
    abstract=lambda a: (a.shape[:-1] + (_svd_shapes(a)[3],), _float(a.dtype)),
    vjp=_svd_u_vjp, jvp=_svd_u_jvp, jax=_jax(lambda jnp, a: _svd(jnp, a)[0]), family="linalg",
    doc="U of the reduced SVD (sign fixed; tied pairs masked in the rules)",
)


def _svd_vh_vjp(g, out, a):
    u, s, vh = apply("svd_u", a), apply("svdvals", a), out
    y = _inverse_square_gaps(s) * (vh @ mT(g))
    ga = u @ (np.expand_dims(s, -1) * (y + mT(y))) @ vh
    m, n = a.shape[-2:]
    if n > m:
        ga = ga + (u * np.expand_dims(_safe_reciprocal(s), -2)) @ (g - (g @ mT(vh)) @ vh)
    return (ga,)


def _svd_vh_jvp(t, out, a):
    u, s, vh = apply("svd_u", a), apply("svdvals", a), out
    ds = mT(u) @ t[0] @ mT(vh)
    dv = mT(vh) @ (_inverse_square_gaps(s) * (np.expand_dims(s, -1) * ds
                                              + mT(ds) * np.expand_dims(s, -2)))
    m, n = a.shape[-2:]
    if n > m:
        dau = mT(t[0]) @ u
        dv = dv + (dau - mT(vh) @ (vh @ dau)) * np.expand_dims(_safe_reciprocal(s), -2)
    return mT(dv)


register(
    "svd_vh", lambda a: _svd(np, a)[2],
    abstract=lambda a: (a.shape[:-2] + (_svd_shapes(a)[3], a.shape[-1]), _float(a.dtype)),
    vjp=_svd_vh_vjp, jvp=_svd_vh_jvp, jax=_jax(lambda jnp, a: _svd(jnp, a)[2]), family="linalg",
    doc="Vh of the reduced SVD (rows; sign matched to svd_u; tied pairs masked in the rules)",
)


# -- qr (reduced, m >= n for derivatives) -------------------------------------------------------
def _qr_check(a):
    m, n = a.shape[-2:]
    if m < n:
        raise TraceError(f"the derivative of the QR decomposition of a wide matrix (shape "
                         f"{tuple(a.shape)}) is taken through np.linalg.qr, which splits it; "
                         "the qr_q / qr_r primitives need m >= n")
    return n


def _strict_lower(n, dtype):
    return np.tril(np.ones((n, n)), -1).astype(dtype)


def _right_rinv_t(x, r):
    """x @ inv(r).T, by a solve."""
    return mT(np.linalg.solve(r, mT(x)))


def _qr_cotangent(gq, gr, q, r, n):
    """(gQ + Q copyltu(M)) R^-T with M = gR R^T - Q^T gQ (either cotangent may be None)."""
    m = None
    if gr is not None:
        m = gr @ mT(r)
    if gq is not None:
        m = -(mT(q) @ gq) if m is None else m - mT(q) @ gq
    upper = 1.0 - _strict_lower(n, m.dtype)
    m_up = m * upper
    sym = m_up + mT(m_up) * _strict_lower(n, m.dtype)
    b = q @ sym if gq is None else gq + q @ sym
    return _right_rinv_t(b, r)


def _qr_tangents(t, q, r, n):
    b = mT(np.linalg.solve(mT(r), mT(t)))      # dA R^-1
    c = mT(q) @ b
    low = c * _strict_lower(n, c.dtype)
    omega = low - mT(low)
    return q @ (omega - c) + b, (c - omega) @ r


def _qr_abstract(which):
    def rule(a):
        _matrix(a)
        m, n = a.shape[-2:]
        k = min(m, n)
        return a.shape[:-2] + ((m, k) if which == 0 else (k, n)), _float(a.dtype)
    return rule


register(
    "qr_q", lambda a: np.linalg.qr(a)[0], abstract=_qr_abstract(0),
    vjp=lambda g, out, a: (_qr_cotangent(g, None, out, apply("qr_r", a), _qr_check(a)),),
    jvp=lambda t, out, a: _qr_tangents(t[0], out, apply("qr_r", a), _qr_check(a))[0],
    jax=_jax(lambda jnp, a: jnp.linalg.qr(a)[0]), family="linalg",
    doc="Q of np.linalg.qr's reduced mode (derivatives: m >= n, full column rank)",
)
register(
    "qr_r", lambda a: np.linalg.qr(a)[1], abstract=_qr_abstract(1),
    vjp=lambda g, out, a: (_qr_cotangent(None, g, apply("qr_q", a), out, _qr_check(a)),),
    jvp=lambda t, out, a: _qr_tangents(t[0], apply("qr_q", a), out, _qr_check(a))[1],
    jax=_jax(lambda jnp, a: jnp.linalg.qr(a)[1]), family="linalg",
    doc="R of np.linalg.qr's reduced mode (derivatives: m >= n, full column rank)",
)
