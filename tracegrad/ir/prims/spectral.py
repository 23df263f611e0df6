"""Spectral linear algebra: ``eigh``, ``svd`` and ``qr``, batched over leading axes
(values and derivatives of real or complex matrices; complex ones in JAX's convention,
see docs/complex.md). ``eigh``, ``svd`` and
``qr`` are multi-output primitives (``ir/registry.py``): one node, one factorisation,
every result (``w, v``; ``u, s, vh``; ``q, r``), and rules that see the cotangents
(tangents) of all of them at once. ``eigvalsh`` and ``svdvals`` are NumPy's cheaper
values-only calls. The one-result primitives of earlier versions (``eigh_vectors``,
``svd_u``, ``svd_vh``, ``qr_q``, ``qr_r``) stay registered, so that graphs saved by them
(JSON version 1) load and run; the tracer no longer records them.

Conventions (see docs of ``np.linalg.eigh`` / ``svd`` on traced values):

- **Signs.** Eigenvectors and singular vectors are only defined up to sign (phase);
  the impls return NumPy's own (``np.linalg.eigh`` / ``svd``), so a function of them
  gives NumPy's number. The sign LAPACK picks is locally constant, so the rules, which
  are written in terms of the vectors returned, are the derivatives of exactly those
  vectors. Complex phases are not locally constant, but LAPACK keeps one row real
  (``eigh``: the first, or the last for ``UPLO='U'``; ``svd``: the first of ``V`` when
  ``m >= n``, else of ``U``): the complex rules add the rotation that keeps it real
  (``phase_fixed``), so they too are the derivatives of NumPy's vectors. On the JAX
  backend ``eigh_vectors``, ``svd_u`` and ``svd_vh`` run NumPy on the host
  (``host_lowering``): XLA's solvers pick their own signs.
- **Symmetric input.** ``eigh`` (and ``cholesky``, ``linalg.py``) read the lower
  triangle, as NumPy does; the upper one is never read, and the derivatives are those
  of NumPy's function: with respect to the lower triangle (``from_lower`` /
  ``lower_cotangent``), zero above the diagonal. (JAX symmetrises instead: its
  gradient differs from finite differences of NumPy's function on a non-symmetric
  input.) ``UPLO='U'`` is a parameter of ``eigvalsh`` / ``eigh_vectors``: LAPACK's
  eigenvectors of the upper triangle may have other signs than those of the lower
  triangle of ``a^H``. ``cholesky(upper=True)`` is ``L^H`` of ``a^H`` (a unique factor).
- **Where NumPy's signs jump.** At some matrices the sign LAPACK picks is decided by
  rounding-level quantities (for ``eigh``, seen at matrices with eigenvalues ``l`` and
  ``-l``: LAPACK's iteration compares magnitudes to choose its direction): there a
  perturbation of 1e-8 flips a column of NumPy's result, which has no derivative; the
  rules give that of the sign held. Functions of the vectors that do not depend on
  their signs (projectors, ``v**2``) are smooth there.
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
import functools

import numpy as np

from ...errors import TraceError
from ..registry import REGISTRY, Aval, apply
from ..registry import register as _register
from .util import mT, square

# The factorisations: real matrices unless a registration says ``complex=True``,
# one FLOP per output element as an estimate; a result may come from a factorisation
# shared with a sibling node (``aliasing="unknown"``). The JAX lowering converts integer
# operands to the floating result dtype.
register = functools.partial(_register, batch=None)

# -- values -------------------------------------------------------------------------------------


def _float(dtype):
    """The dtype of the vectors: floats and complex keep theirs, integers give float64."""
    dtype = np.dtype(dtype)
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def _real(dtype):
    """The dtype of eigenvalues / singular values: the real counterpart of ``_float``."""
    return np.finfo(_float(dtype)).dtype


def _matrix(a):
    if a.ndim < 2:
        raise ValueError(f"expected a matrix (or a batch of them), got shape {a.shape}")
    return a


def host_lowering(name):
    """The JAX lowering of primitive ``name`` that runs its NumPy impl on the host
    (``jax.pure_callback``). For results that only NumPy's LAPACK defines: the signs
    (phases) of eigenvectors and singular vectors are whatever its ``syevd`` / ``gesdd``
    return, which no formula reproduces and XLA's solvers need not match; a function of
    them (``U @ diag(s)[:, :1]``) must give NumPy's number on every backend."""
    def lower(*args, **params):
        import jax

        prim = REGISTRY[name]
        avals = [Aval(tuple(a.shape), np.dtype(a.dtype)) for a in args]
        shape, dtype = prim.shape_dtype(avals, params)

        def host(*xs):
            return np.asarray(prim.impl(*(np.asarray(x) for x in xs), **params), dtype=dtype)

        # expand_dims: the impls are batched over leading axes, as jax.vmap needs
        return jax.pure_callback(host, jax.ShapeDtypeStruct(shape, dtype), *args,
                                 vmap_method="expand_dims")
    lower.__name__ = f"host:{name}"
    return lower


def _jax_eigvalsh(a, UPLO="L"):  # noqa: N803
    """Eigenvalues from one triangle alone, as NumPy's ``syevd`` reads it:
    ``jnp.linalg.eigh`` would symmetrise ``a`` first and change them for a
    non-symmetric input."""
    import jax
    return jax.lax.linalg.eigh(a, lower=UPLO == "L", symmetrize_input=False)[1]


def _jax(fn):
    def lower(*args, **params):
        import jax.numpy as jnp
        return fn(jnp, *args, **params)
    return lower


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


def _lower_masks(t):
    """The strictly lower triangle and the diagonal, as 0/1 matrices of ``t``'s dtype."""
    n = t.shape[-1]
    dtype = np.dtype(t.dtype)
    return np.tril(np.ones((n, n)), -1).astype(dtype), np.eye(n, dtype=dtype)


def is_complex(x):
    return np.dtype(x.dtype).kind == "c"


def mH(x):  # noqa: N802
    """The conjugate transpose of a batch of matrices (the transpose of real ones)."""
    return np.conj(mT(x)) if is_complex(x) else mT(x)


def from_lower(t, UPLO="L"):  # noqa: N803
    """The symmetric (Hermitian) matrix NumPy's ``eigh`` / ``cholesky`` see in ``t``: its
    lower triangle (``UPLO='U'``: upper), mirrored (the other triangle is never read;
    of a complex diagonal, LAPACK reads the real part only)."""
    if UPLO == "U":
        return mT(from_lower(mT(t)))
    low, eye = _lower_masks(t)
    return t * low + mH(t * low) + (np.real(t) if is_complex(t) else t) * eye


def lower_cotangent(g, UPLO="L"):  # noqa: N803
    """The adjoint of ``from_lower``: the cotangent of the triangle that was read (zero
    in the other one), so that the rules are the derivatives of NumPy's own function,
    also for a non-symmetric input. For complex values ``g`` is the cotangent in JAX's
    convention (``Re sum(g * dA)``) and so is the result: ``(g + g^H)`` below the
    diagonal, the real part of ``g`` on it (the imaginary part of the diagonal is not
    read)."""
    if UPLO == "U":
        return mT(lower_cotangent(mT(g)))
    low, eye = _lower_masks(g)
    return (g + mH(g)) * low + (np.real(g) if is_complex(g) else g) * eye


def _check_uplo(UPLO):  # noqa: N803
    if UPLO not in ("L", "U"):
        raise ValueError(f"UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO


# -- eigh --------------------------------------------------------------------------------------
def _eigvalsh_abstract(a, UPLO="L"):  # noqa: N803
    _check_uplo(UPLO)
    return square(a).shape[:-1], _real(a.dtype)


# Complex (Hermitian) matrices: A = V diag(w) V^H with w real. The cotangents are JAX's
# (``Re sum(g * dy)`` pairs a cotangent with a tangent; no conjugation in a VJP): the
# cotangent of A is conj(V) [diag(gw) + F o (V^T gV)] V^T, and the real formulas are
# that with conj(V) = V. The tangents: dw = Re diag(V^H dA V), dV = V (F o V^H dA V).
def _real_row(x, k):
    """Row ``k`` of a batch of complex matrices whose row ``k`` is real, as reals, and the
    one-hot column that puts a row back at ``k``."""
    n = x.shape[-2]
    return np.real(x[..., k, :]), np.expand_dims(np.arange(n) == k % n, -1)


def phase_fixed(dv, v, k):
    """``dv`` plus the rotation ``v diag(i theta)`` that keeps row ``k`` of ``v`` real, as
    LAPACK leaves it (``theta_j = -Im(dv_kj) / v_kj``)."""
    vk, _ = _real_row(v, k)
    theta = -np.imag(dv[..., k, :]) / vk
    return dv + v * np.expand_dims(1j * theta, -2)


def phase_cotangent(gv, v, k, c):
    """The adjoint of ``phase_fixed`` (JAX's convention) on ``gv``, the cotangent of its
    ``dv``, given ``c_j = -Im(sum_i g_ij v_ij)`` summed over the cotangents of every
    factor the rotation turns."""
    vk, hot = _real_row(v, k)
    return gv + hot * np.expand_dims(1j * c / vk, -2)


def _eigh_row(v, UPLO):  # noqa: N803
    """The row of LAPACK's Hermitian eigenvectors that is real: the reduction to a real
    tridiagonal matrix (``hetrd``) leaves the first (UPLO='L') or last (UPLO='U') basis
    vector alone."""
    return 0 if UPLO == "L" else v.shape[-2] - 1


def _eigh_cotangent(gw, gv, w, v, UPLO):  # noqa: N803
    """The cotangent of the triangle read, from those of w and v (either may be None)."""
    if gv is not None and is_complex(v):
        c = -np.imag(np.sum(gv * v, axis=-2))
        gv = phase_cotangent(gv, v, _eigh_row(v, UPLO), c)
    vc = np.conj(v) if is_complex(v) else v
    s = None
    if gw is not None:
        s = (vc * np.expand_dims(cluster_average(gw, w), -2)) @ mT(v)
    if gv is not None:
        part = vc @ (inverse_gaps(w) * (mT(v) @ gv)) @ mT(v)
        s = part if s is None else s + part
    return lower_cotangent(s, UPLO)


def _eigh_tangents(t, w, v, UPLO):  # noqa: N803
    """(dw, dv) from the tangent of the triangle read."""
    ta = from_lower(t, UPLO)
    x = mH(v) @ ta @ v
    dw = np.sum((np.conj(v) if is_complex(v) else v) * (ta @ v), axis=-2)
    dw = cluster_average(np.real(dw) if is_complex(dw) else dw, w)
    dv = v @ (inverse_gaps(w) * x)
    return dw, phase_fixed(dv, v, _eigh_row(v, UPLO)) if is_complex(v) else dv


def _eigvalsh_vjp(g, out, a, UPLO="L"):  # noqa: N803
    return (_eigh_cotangent(g, None, out, apply("eigh_vectors", a, UPLO=UPLO), UPLO),)


def _eigvalsh_jvp(t, out, a, UPLO="L"):  # noqa: N803
    v = apply("eigh_vectors", a, UPLO=UPLO)
    ta = from_lower(t[0], UPLO)
    dw = np.sum((np.conj(v) if is_complex(v) else v) * (ta @ v), axis=-2)
    return cluster_average(np.real(dw) if is_complex(dw) else dw, out)


register(
    "eigvalsh", lambda a, UPLO="L": np.linalg.eigvalsh(a, UPLO=UPLO),
    abstract=_eigvalsh_abstract,
    vjp=_eigvalsh_vjp, jvp=_eigvalsh_jvp, jax=_jax_eigvalsh, family="linalg",
    doc="the eigenvalues of np.linalg.eigh (ascending; only the UPLO triangle is read, "
        "and differentiated; tied eigenvalues share their cotangent)",
)


def _eigh_vectors_abstract(a, UPLO="L"):  # noqa: N803
    _check_uplo(UPLO)
    return square(a).shape, _float(a.dtype)


def _eigh_vectors_vjp(g, out, a, UPLO="L"):  # noqa: N803
    return (_eigh_cotangent(None, g, apply("eigvalsh", a, UPLO=UPLO), out, UPLO),)


def _eigh_vectors_jvp(t, out, a, UPLO="L"):  # noqa: N803
    return _eigh_tangents(t[0], apply("eigvalsh", a, UPLO=UPLO), out, UPLO)[1]


register(
    "eigh_vectors", lambda a, UPLO="L": np.linalg.eigh(a, UPLO=UPLO)[1],
    abstract=_eigh_vectors_abstract,
    vjp=_eigh_vectors_vjp, jvp=_eigh_vectors_jvp, jax=host_lowering("eigh_vectors"),
    family="linalg",
    doc="the eigenvectors of np.linalg.eigh (columns, NumPy's signs; UPLO triangle read; "
        "tied pairs masked in the rules)",
)


# eigh: one node, two outputs (w, v) from one factorisation (np.linalg.eigh)
def _eigh_abstract(a, UPLO="L"):  # noqa: N803
    return [_eigvalsh_abstract(a, UPLO), _eigh_vectors_abstract(a, UPLO)]


def _eigh_vjp(g, outs, a, UPLO="L"):  # noqa: N803
    (gw, gv), (w, v) = g, outs
    return (_eigh_cotangent(gw, gv, w, v, UPLO),)


def _eigh_jvp(t, outs, a, UPLO="L"):  # noqa: N803
    w, v = outs
    return _eigh_tangents(t[0], w, v, UPLO)


def _eigh_impl(a, UPLO="L"):  # noqa: N803
    w, v = np.linalg.eigh(a, UPLO=UPLO)
    return w, v


def _cubic_cost(out_shape, arg_shapes, params):
    """About ``10 n^3`` per matrix (a factorisation with its vectors)."""
    *batch, m, n = arg_shapes[0]
    return 10 * int(np.prod(batch, dtype=np.int64)) * m * n * min(m, n)


# -- svd (reduced) -------------------------------------------------------------------------------
def _svd_shapes(a):
    _matrix(a)
    m, n = a.shape[-2:]
    return a.shape[:-2], m, n, min(m, n)


def _svdvals_vjp(g, out, a):
    u, vh = apply("svd_u", a), apply("svd_vh", a)
    if is_complex(u):
        return _svd_vjp_complex((None, g, None), (u, out, vh), a)
    g = cluster_average(g, out)
    return ((u * np.expand_dims(g, -2)) @ vh,)


def _svdvals_jvp(t, out, a):
    u, vh = apply("svd_u", a), apply("svd_vh", a)
    if is_complex(u):
        return _svd_jvp_complex(t[0], (u, out, vh), a, which=(1,))[1]
    ds = np.sum(u * (t[0] @ mT(vh)), axis=-2)
    return cluster_average(ds, out)


register(
    "svdvals", lambda a: np.linalg.svd(a, compute_uv=False),
    abstract=lambda a: (_svd_shapes(a)[0] + (_svd_shapes(a)[3],), _real(a.dtype)),
    vjp=_svdvals_vjp, jvp=_svdvals_jvp,
    jax=_jax(lambda jnp, a: jnp.linalg.svd(a, compute_uv=False)), family="linalg",

    doc="the singular values (descending); tied values share their cotangent",
)


def _svd_u_vjp(g, out, a):
    u, s, vh = out, apply("svdvals", a), apply("svd_vh", a)
    if is_complex(u):
        return _svd_vjp_numpy((g, None, None), (u, s, vh), a)
    x = _inverse_square_gaps(s) * (mT(u) @ g)
    ga = u @ ((x + mT(x)) * np.expand_dims(s, -2)) @ vh
    m, n = a.shape[-2:]
    if m > n:
        ga = ga + ((g - u @ (mT(u) @ g)) * np.expand_dims(_safe_reciprocal(s), -2)) @ vh
    return (ga,)


def _svd_u_jvp(t, out, a):
    u, s, vh = out, apply("svdvals", a), apply("svd_vh", a)
    if is_complex(u):
        return _svd_jvp_numpy(t[0], (u, s, vh), a, which=(0,))[0]
    ds = mT(u) @ t[0] @ mT(vh)
    du = u @ (_inverse_square_gaps(s) * (ds * np.expand_dims(s, -2)
                                         + np.expand_dims(s, -1) * mT(ds)))
    m, n = a.shape[-2:]
    if m > n:
        dav = t[0] @ mT(vh)
        du = du + (dav - u @ (mT(u) @ dav)) * np.expand_dims(_safe_reciprocal(s), -2)
    return du


def _reduced_only(rule):
    """``rule`` of the reduced SVD. ``full_matrices=True`` adds, to a non-square matrix's
    ``U`` (tall) or ``Vh`` (wide), columns (rows) that are any orthonormal basis of a
    complement: LAPACK's, with no derivative (JAX refuses too). The other factor of that
    call may differ in sign from the reduced call's, whose factors the rules pair, so
    neither is differentiated."""
    def checked(x, out, a, full_matrices=False):
        m, n = a.shape[-2:]
        if full_matrices and m != n:
            raise TraceError(
                f"np.linalg.svd(full_matrices=True) of a {m}x{n} matrix has no derivative "
                f"(the extra {'columns of U' if m > n else 'rows of Vh'} are any "
                "orthonormal basis of a complement); pass full_matrices=False")
        return rule(x, out, a)
    return checked


def _svd_vectors_abstract(which):
    def abstract(a, full_matrices=False):
        batch, m, n, k = _svd_shapes(a)
        shape = (m, m if full_matrices else k) if which == "U" else (
            n if full_matrices else k, n)
        return batch + shape, _float(a.dtype)
    return abstract


register(
    "svd_u", lambda a, full_matrices=False: np.linalg.svd(a, full_matrices=full_matrices)[0],
    abstract=_svd_vectors_abstract("U"),
    vjp=_reduced_only(_svd_u_vjp), jvp=_reduced_only(_svd_u_jvp),
    jax=host_lowering("svd_u"), family="linalg",
    doc="U of the SVD (NumPy's signs; full_matrices: values only; tied pairs masked in "
        "the rules)",
)


def _svd_vh_vjp(g, out, a):
    u, s, vh = apply("svd_u", a), apply("svdvals", a), out
    if is_complex(vh):
        return _svd_vjp_numpy((None, None, g), (u, s, vh), a)
    y = _inverse_square_gaps(s) * (vh @ mT(g))
    ga = u @ (np.expand_dims(s, -1) * (y + mT(y))) @ vh
    m, n = a.shape[-2:]
    if n > m:
        ga = ga + (u * np.expand_dims(_safe_reciprocal(s), -2)) @ (g - (g @ mT(vh)) @ vh)
    return (ga,)


def _svd_vh_jvp(t, out, a):
    u, s, vh = apply("svd_u", a), apply("svdvals", a), out
    if is_complex(vh):
        return _svd_jvp_numpy(t[0], (u, s, vh), a, which=(2,))[2]
    ds = mT(u) @ t[0] @ mT(vh)
    dv = mT(vh) @ (_inverse_square_gaps(s) * (np.expand_dims(s, -1) * ds
                                              + mT(ds) * np.expand_dims(s, -2)))
    m, n = a.shape[-2:]
    if n > m:
        dau = mT(t[0]) @ u
        dv = dv + (dau - mT(vh) @ (vh @ dau)) * np.expand_dims(_safe_reciprocal(s), -2)
    return mT(dv)


register(
    "svd_vh", lambda a, full_matrices=False: np.linalg.svd(a, full_matrices=full_matrices)[2],
    abstract=_svd_vectors_abstract("Vh"),
    vjp=_reduced_only(_svd_vh_vjp), jvp=_reduced_only(_svd_vh_jvp),
    jax=host_lowering("svd_vh"), family="linalg",
    doc="Vh of the SVD (rows, NumPy's signs; full_matrices: values only; tied pairs "
        "masked in the rules)",
)


# -- svd: one node, three outputs (u, s, vh) from one factorisation ----------------------------
def _svd_abstract(a, full_matrices=False):
    batch, m, n, k = _svd_shapes(a)
    return [_svd_vectors_abstract("U")(a, full_matrices), (batch + (k,), _real(a.dtype)),
            _svd_vectors_abstract("Vh")(a, full_matrices)]


def _svd_reduced(outs, a, full_matrices):
    """The reduced factors of ``outs`` (those of ``full_matrices=True`` cut to ``k``)."""
    u, s, vh = outs
    if full_matrices:
        k = s.shape[-1]
        u, vh = u[..., :, :k], vh[..., :k, :]
    return u, s, vh


def _svd_check(gs_or_ts, a, full_matrices):
    m, n = a.shape[-2:]
    if full_matrices and m != n and (gs_or_ts[0] is not None or gs_or_ts[2] is not None):
        _reduced_only(None)(None, None, a, full_matrices)


def _svd_vjp(g, outs, a, full_matrices=False):
    gu, gs, gvh = g
    _svd_check(g, a, full_matrices)
    u, s, vh = _svd_reduced(outs, a, full_matrices)
    if is_complex(u):
        return _svd_vjp_numpy(g, (u, s, vh), a)
    m, n = a.shape[-2:]
    ga = None
    if gs is not None:
        ga = (u * np.expand_dims(cluster_average(gs, s), -2)) @ vh
    if gu is not None:
        x = _inverse_square_gaps(s) * (mT(u) @ gu)
        part = u @ ((x + mT(x)) * np.expand_dims(s, -2)) @ vh
        if m > n:
            part = part + ((gu - u @ (mT(u) @ gu))
                           * np.expand_dims(_safe_reciprocal(s), -2)) @ vh
        ga = part if ga is None else ga + part
    if gvh is not None:
        y = _inverse_square_gaps(s) * (vh @ mT(gvh))
        part = u @ (np.expand_dims(s, -1) * (y + mT(y))) @ vh
        if n > m:
            part = part + (u * np.expand_dims(_safe_reciprocal(s), -2)) @ (
                gvh - (gvh @ mT(vh)) @ vh)
        ga = part if ga is None else ga + part
    return (ga,)


def _svd_jvp(t, outs, a, full_matrices=False):
    u, s, vh = outs
    m, n = a.shape[-2:]
    if full_matrices and m != n:
        # s's tangent alone: the added columns (rows) of u (vh) have no derivative
        u, s, vh = _svd_reduced(outs, a, full_matrices)
        if is_complex(u):
            return None, _svd_jvp_complex(t[0], (u, s, vh), a, which=(1,))[1], None
        return None, cluster_average(np.sum(u * (t[0] @ mT(vh)), axis=-2), s), None
    if is_complex(u):
        return _svd_jvp_numpy(t[0], outs, a)
    ds = mT(u) @ t[0] @ mT(vh)
    dsv = cluster_average(np.sum(u * (t[0] @ mT(vh)), axis=-2), s)
    du = u @ (_inverse_square_gaps(s) * (ds * np.expand_dims(s, -2)
                                         + np.expand_dims(s, -1) * mT(ds)))
    if m > n:
        dav = t[0] @ mT(vh)
        du = du + (dav - u @ (mT(u) @ dav)) * np.expand_dims(_safe_reciprocal(s), -2)
    dv = mT(vh) @ (_inverse_square_gaps(s) * (np.expand_dims(s, -1) * ds
                                              + mT(ds) * np.expand_dims(s, -2)))
    if n > m:
        dau = mT(t[0]) @ u
        dv = dv + (dau - mT(vh) @ (vh @ dau)) * np.expand_dims(_safe_reciprocal(s), -2)
    return du, dsv, mT(dv)


# Complex matrices, A = U diag(s) V^H (vh = V^H). With P = U^H dA V (k x k) and
# F_ij = 1 / (s_j^2 - s_i^2) (untied pairs):
#   ds = Re diag(P)
#   dU = U (F o (P S + S P^H) + i Im diag(P) / S) + (I - U U^H) dA V / S
#   dV = V (F o (S P + P^H S)) + (I - V V^H) dA^H U / S
# The phase of each pair (u_i, v_i) is free; the term i Im diag(P) / S, which keeps
# U S V^H equal to A, is put on U (as JAX does). The VJP is the adjoint of that map
# (JAX's convention: conj of the adjoint taken on conj of the cotangents), with
# J = U^H conj(gU), K = V^H conj(gV), gV = gvh^H:
#   conj(A_bar) = U [diag(gs) + (F o (J - J^H)) S + i Im diag(J) / S
#                    + S (F o (K - K^H))] V^H
#                 + (I - U U^H) conj(gU) / S V^H + U / S conj(gV)^H (I - V V^H)
# LAPACK's phases: the reduction to a real bidiagonal matrix (``gebrd``) leaves the first
# basis vector of one side alone, so the first row of V (m >= n) or of U (m < n) is
# real. NumPy's pairs differ from those of the map above by a common rotation
# diag(i phi) of u_i and v_i that keeps that row real; the rules add it (and its
# adjoint), so they are the derivatives of NumPy's own vectors.
def _svd_phase_side(a):
    m, n = a.shape[-2:]
    return "v" if m >= n else "u"


def _svd_vjp_numpy(g, outs, a):
    gu, gs, gvh = g
    u, s, vh = outs
    if gu is not None or gvh is not None:
        v = mH(vh)
        gv = None if gvh is None else mH(gvh)
        c = 0.0
        if gu is not None:
            c = c - np.imag(np.sum(gu * u, axis=-2))
        if gv is not None:
            c = c - np.imag(np.sum(gv * v, axis=-2))
        if _svd_phase_side(a) == "v":
            gv = phase_cotangent(np.zeros(v.shape, v.dtype) if gv is None else gv, v, 0, c)
            gvh = mH(gv)
        else:
            gu = phase_cotangent(np.zeros(u.shape, u.dtype) if gu is None else gu, u, 0, c)
    return _svd_vjp_complex((gu, gs, gvh), outs, a)


def _svd_jvp_numpy(t, outs, a, which=(0, 1, 2)):
    u, s, vh = outs
    du, ds, dvh = _svd_jvp_complex(t, outs, a, which=(0, 1, 2) if set(which) & {0, 2}
                                   else which)
    if du is None:
        return du, ds, dvh
    v = mH(vh)
    dv = mH(dvh)
    ref, base = (dv, v) if _svd_phase_side(a) == "v" else (du, u)
    base0, _ = _real_row(base, 0)
    rot = np.expand_dims(1j * (-np.imag(ref[..., 0, :]) / base0), -2)
    return du + u * rot, ds, mH(dv + v * rot)


def _svd_vjp_complex(g, outs, a):
    gu, gs, gvh = g
    u, s, vh = outs
    m, n = a.shape[-2:]
    inv_s = _safe_reciprocal(s)
    diag = None if gs is None else cluster_average(gs, s).astype(u.dtype)
    inner = None    # the k x k matrix between U and V^H, less its diagonal
    ga = None
    if gu is not None:
        gu_ = np.conj(gu)
        j = mH(u) @ gu_
        f = _inverse_square_gaps(s) * (j - mH(j))
        inner = f * np.expand_dims(s, -2)
        d = 1j * np.imag(np.sum(np.conj(u) * gu_, axis=-2)) * inv_s
        diag = d if diag is None else diag + d
        if m > n:
            ga = ((gu_ - u @ (mH(u) @ gu_)) * np.expand_dims(inv_s, -2)) @ vh
    if gvh is not None:
        gv_ = mT(gvh)       # conj of V's cotangent
        v = mH(vh)
        k = mH(v) @ gv_
        part = np.expand_dims(s, -1) * (_inverse_square_gaps(s) * (k - mH(k)))
        inner = part if inner is None else inner + part
        if n > m:
            extra = (u * np.expand_dims(inv_s, -2)) @ (mH(gv_) - (mH(gv_) @ v) @ vh)
            ga = extra if ga is None else ga + extra
    total = None
    if inner is not None:
        total = u @ inner @ vh
    if diag is not None:
        part = (u * np.expand_dims(diag, -2)) @ vh
        total = part if total is None else total + part
    if ga is not None:
        total = ga if total is None else total + ga
    return (np.conj(total),)


def _svd_jvp_complex(t, outs, a, which=(0, 1, 2)):
    u, s, vh = outs
    m, n = a.shape[-2:]
    v = mH(vh)
    p = mH(u) @ t @ v
    pdiag = np.sum(np.conj(u) * (t @ v), axis=-2)
    inv_s = _safe_reciprocal(s)
    f = _inverse_square_gaps(s)
    srow, scol = np.expand_dims(s, -2), np.expand_dims(s, -1)
    du = dvh = ds = None
    if 1 in which:
        ds = cluster_average(np.real(pdiag), s)
    if 0 in which:
        ps = p * srow
        du = u @ (f * (ps + mH(ps))) + u * np.expand_dims(1j * np.imag(pdiag) * inv_s, -2)
        if m > n:
            dav = t @ v
            du = du + (dav - u @ (mH(u) @ dav)) * np.expand_dims(inv_s, -2)
    if 2 in which:
        sp = scol * p
        dv = v @ (f * (sp + mH(sp)))
        if n > m:
            dau = mH(t) @ u
            dv = dv + (dau - v @ (vh @ dau)) * np.expand_dims(inv_s, -2)
        dvh = mH(dv)
    return du, ds, dvh


def host_lowering_multi(name):
    """``host_lowering`` for a multi-output primitive: one host call, every output."""
    def lower(*args, **params):
        import jax

        prim = REGISTRY[name]
        avals = [Aval(tuple(a.shape), np.dtype(a.dtype)) for a in args]
        outs = prim.shape_dtype(avals, params)

        def host(*xs):
            values = prim.impl(*(np.asarray(x) for x in xs), **params)
            return tuple(np.asarray(v, dtype=d) for v, (_, d) in zip(values, outs))

        return tuple(jax.pure_callback(
            host, tuple(jax.ShapeDtypeStruct(sh, d) for sh, d in outs), *args,
            vmap_method="expand_dims"))
    lower.__name__ = f"host:{name}"
    return lower


def _svd_cost(out_shape, arg_shapes, params):
    """About ``4 m n k`` per matrix (Golub-Reinsch, vectors included)."""
    *batch, m, n = arg_shapes[0]
    return 4 * int(np.prod(batch, dtype=np.int64)) * m * n * min(m, n)


def stacked_multi(name):
    """The batching rule of a multi-output factorisation that already acts on a stack of
    matrices: the batched operand as it is (every output gets the batch axis in front)."""
    def rule(size, args, batched, out_shape, **params):
        return apply(name, args[0], **params)
    return rule


def _svd_impl(a, full_matrices=False):
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return u, s, vh


register(
    "eigh", _eigh_impl, abstract=_eigh_abstract, outputs=2,
    vjp=_eigh_vjp, jvp=_eigh_jvp, jax=host_lowering_multi("eigh"), family="linalg",
    torch_name="LinalgEighBackward0", foldable=False, cost=_cubic_cost,
    batch=stacked_multi("eigh"),
    doc="np.linalg.eigh: eigenvalues (ascending) and eigenvectors (NumPy's signs) from one "
        "factorisation; only the UPLO triangle is read, and differentiated",
)


register(
    "svd", _svd_impl, abstract=_svd_abstract, outputs=3,
    vjp=_svd_vjp, jvp=_svd_jvp, jax=host_lowering_multi("svd"), family="linalg",
    torch_name="LinalgSvdBackward0", foldable=False, cost=_svd_cost, batch=stacked_multi("svd"),
    doc="np.linalg.svd: u, s, vh from one factorisation (NumPy's signs; full_matrices: "
        "the derivatives of s only for a non-square matrix; tied pairs masked in the rules)",
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
    if is_complex(q):
        return _qr_cotangent_complex(gq, gr, q, r, n)
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
    c = mH(q) @ b
    low = c * _strict_lower(n, c.dtype)
    omega = low - mH(low)
    if is_complex(c):
        # R's diagonal stays real (LAPACK's): the imaginary part of diag(c) turns Q
        omega = omega + 1j * np.imag(c) * np.eye(n)
    return q @ (omega - c) + b, (c - omega) @ r


# Complex: with b = dA R^-1, c = Q^H b, w = tril(c, -1) - tril(c, -1)^H + i Im diag(c),
# dQ = Q (w - c) + b and dR = (c - w) R. The VJP is the adjoint (JAX's convention: conj
# of the adjoint on conj cotangents): with M = conj(gR) R^H - Q^H conj(gQ) and
# N = triu(M, 1) + Re diag(M) + tril(M^H, -1), conj(A_bar) = (conj(gQ) + Q N) R^-H.
def _qr_cotangent_complex(gq, gr, q, r, n):
    m = None
    if gr is not None:
        m = np.conj(gr) @ mH(r)
    if gq is not None:
        m = -(mH(q) @ np.conj(gq)) if m is None else m - mH(q) @ np.conj(gq)
    low = _strict_lower(n, _real(m.dtype))
    upper = 1.0 - low - np.eye(n)
    sym = m * upper + np.real(m) * np.eye(n) + mH(m) * low
    b = q @ sym if gq is None else np.conj(gq) + q @ sym
    return np.conj(mH(np.linalg.solve(r, mH(b))))      # conj(b R^-H)


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


def _qr_impl(a):
    q, r = np.linalg.qr(a)
    return q, r


def _qr_vjp(g, outs, a):
    (gq, gr), (q, r) = g, outs
    return (_qr_cotangent(gq, gr, q, r, _qr_check(a)),)


register(
    "qr", _qr_impl, abstract=lambda a: [_qr_abstract(0)(a), _qr_abstract(1)(a)], outputs=2,

    vjp=_qr_vjp, jvp=lambda t, outs, a: _qr_tangents(t[0], *outs, _qr_check(a)),
    jax=_jax(lambda jnp, a: tuple(jnp.linalg.qr(a))), family="linalg",
    torch_name="LinalgQrBackward0", foldable=False, cost=_cubic_cost, batch=stacked_multi("qr"),
    doc="np.linalg.qr's reduced mode: Q and R from one factorisation (derivatives: m >= n, "
        "full column rank)",
)
