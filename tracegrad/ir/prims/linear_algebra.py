"""Linear algebra: matmul, einsum and the np.linalg primitives (batched over leading axes)."""
import math
import string

import numpy as np

from ..registry import apply, register
from ..schema import SUBSCRIPTS, Spec  # the loader's parameter kinds
from . import batching
from .batching import lift_rank, reshape
from .batching import shape as shape_of
from .spectral import from_lower, is_complex, lower_cotangent, mH, stacked_multi
from .util import cubic, mT, square, transposed_matrix, unbroadcast

# None of these is an elementwise ufunc, a reduction or a structural-zero source of its
# own; the JAX lowering converts integer operands to the floating result dtype.


def _float(dtype):
    """NumPy's result dtype for linear algebra: floats keep theirs (float32 stays float32),
    integers and booleans give float64."""
    dtype = np.dtype(dtype)
    return dtype if dtype.kind in "fc" else np.dtype(np.float64)


def _jax(fn):
    def lower(*args, **params):
        import jax.numpy as jnp
        return fn(jnp, *args, **params)
    return lower


# -- matmul ---------------------------------------------------------------------------
def _as_matrices(a, b):
    """Shapes of ``a`` and ``b`` after NumPy's 1-D promotion, and of their product."""
    if len(a) == 0 or len(b) == 0:
        raise ValueError("matmul: a 0-d operand is not allowed (use * for scalars)")
    a2 = tuple(a) if len(a) > 1 else (1,) + tuple(a)
    b2 = tuple(b) if len(b) > 1 else tuple(b) + (1,)
    if a2[-1] != b2[-2]:
        raise ValueError(f"matmul: shapes {tuple(a)} and {tuple(b)} do not line up "
                         f"({a2[-1]} != {b2[-2]})")
    out2 = np.broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1])
    return a2, b2, out2


def _matmul_abstract(a, b):
    _, _, out2 = _as_matrices(a.shape, b.shape)
    shape = out2
    if b.ndim == 1:
        shape = shape[:-1]
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:] if b.ndim > 1 else shape[:-1]
    return shape, np.result_type(a.dtype, b.dtype)


def _matmul_vjp(g, out, a, b):
    if len(a.shape) == 2 and len(b.shape) == 2:
        # PyTorch's mm backward: an operand laid out transposed (``x @ w.T``, a linear
        # layer's weight) gets its cotangent in that layout too, computed as the
        # transpose of a product in C order. Its memory is then the layout of the array
        # the operand was transposed from, and an update of that array walks both alike.
        ga = mT(b @ mT(g)) if transposed_matrix(a) else g @ mT(b)
        gb = mT(mT(g) @ a) if transposed_matrix(b) else mT(a) @ g
        return ga, gb
    a2s, b2s, out2 = _as_matrices(a.shape, b.shape)
    a2, b2 = np.reshape(a, a2s), np.reshape(b, b2s)
    g2 = np.reshape(g, out2)
    ga = np.reshape(unbroadcast(g2 @ mT(b2), a2s), a.shape)
    gb = np.reshape(unbroadcast(mT(a2) @ g2, b2s), b.shape)
    return ga, gb


def _bilinear_jvp(op):
    def jvp(t, out, a, b):
        parts = []
        if t[0] is not None:
            parts.append(op(t[0], b))
        if t[1] is not None:
            parts.append(op(a, t[1]))
        return parts[0] if len(parts) == 1 else parts[0] + parts[1]
    return jvp


def _matmul_batch(size, args, batched, out_shape):
    a, b = args
    ka = len(shape_of(a)) - batched[0]
    kb = len(shape_of(b)) - batched[1]
    # NumPy's 1-D promotion, made explicit so that the batch axis is a stacking axis
    if ka == 1:
        a = reshape(a, shape_of(a)[:-1] + (1,) + shape_of(a)[-1:])
    if kb == 1:
        b = reshape(b, shape_of(b) + (1,))
    stack = max(max(ka, 2) - 2, max(kb, 2) - 2)
    ops = [lift_rank(x, stack + 2) if f else x for x, f in zip((a, b), batched)]
    out = apply("matmul", *ops)
    return reshape(out, (size,) + tuple(out_shape))


def _matmul_cost(out_shape, arg_shapes, params):
    a = arg_shapes[0]
    return 2 * math.prod(out_shape) * (a[-1] if a else 1)


register(
    "matmul", np.matmul, abstract=_matmul_abstract, vjp=_matmul_vjp,
    jvp=_bilinear_jvp(np.matmul), jax=_jax(lambda jnp, a, b: jnp.matmul(a, b)), family="linalg",
    batch=_matmul_batch, aliasing="fresh", spelling="{0} @ {1}", zeros="any",
    cost=_matmul_cost, torch_name="MmBackward0",
)


# -- einsum (explicit subscripts, no letter repeated within one operand) ----------------------
def parse_subscripts(subscripts):
    ins, out = subscripts.split("->")
    return ins.split(","), out


def _einsum_impl(*ops, subscripts):
    return np.einsum(subscripts, *ops, optimize=len(ops) > 2)


def _einsum_abstract(*ops, subscripts):
    ins, out = parse_subscripts(subscripts)
    sizes = {}
    for letters, op in zip(ins, ops):
        if len(letters) != op.ndim:
            raise ValueError(f"einsum: operand of shape {op.shape} does not match '{letters}'")
        for c, n in zip(letters, op.shape):
            seen = sizes.setdefault(c, n)
            if seen == 1:          # NumPy broadcasts an index of size 1 against any size
                sizes[c] = n
            elif n != 1 and n != seen:
                raise ValueError(f"einsum: index '{c}' has sizes {seen} and {n}")
    return tuple(sizes[c] for c in out), np.result_type(*(op.dtype for op in ops))


def _einsum_vjp(g, out, *ops, subscripts):
    ins, out_s = parse_subscripts(subscripts)
    cts = []
    for k, op in enumerate(ops):
        others = [j for j in range(len(ops)) if j != k]
        available = set(out_s).union(*(ins[j] for j in others))
        kept = "".join(c for c in ins[k] if c in available)
        spec = ",".join([out_s] + [ins[j] for j in others]) + "->" + kept
        ct = np.einsum(spec, g, *(ops[j] for j in others))
        # an index of size 1 in operand k that the others broadcast: its cotangent sums
        # over that index; one the others have at size 1: the cotangent is broadcast
        full = dict(zip(ins[k], op.shape))
        summed = tuple(i for i, c in enumerate(kept) if full[c] == 1 and ct.shape[i] != 1)
        if summed:
            ct = np.sum(ct, axis=summed, keepdims=True)
        want = tuple(full[c] for c in kept)
        if ct.shape != want:
            ct = np.broadcast_to(ct, want)
        if kept != ins[k]:  # letters summed within operand k alone: broadcast back
            ct = np.reshape(ct, tuple(n if c in kept else 1 for c, n in zip(ins[k], op.shape)))
            ct = np.broadcast_to(ct, op.shape)
        cts.append(ct)
    return tuple(cts)


def _einsum_jvp(t, out, *ops, subscripts):
    total = None
    for k, tk in enumerate(t):
        if tk is None:
            continue
        term = np.einsum(subscripts, *(tk if j == k else op for j, op in enumerate(ops)))
        total = term if total is None else total + term
    return total


def _einsum_batch(size, args, batched, out_shape, subscripts):
    ins, out = subscripts.split("->")
    ins = ins.split(",")
    free = next(c for c in string.ascii_letters if c not in subscripts)
    ins = [free + s if b else s for s, b in zip(ins, batched)]
    return apply("einsum", *args, subscripts=",".join(ins) + "->" + free + out)


def _einsum_cost(out_shape, arg_shapes, params):
    """The full index space, a multiply-add per point."""
    ins, _ = params["subscripts"].split("->")
    sizes = {}
    for letters, s in zip(ins.split(","), arg_shapes):
        sizes.update(zip(letters, s))
    return 2 * math.prod(sizes.values())


register(
    "einsum", _einsum_impl, abstract=_einsum_abstract, vjp=_einsum_vjp, jvp=_einsum_jvp,
    jax=_jax(lambda jnp, *ops, subscripts: jnp.einsum(subscripts, *ops)), family="linalg",
    # np.einsum("ij->ji", a) is a view of a; other subscripts give new arrays
    batch=_einsum_batch, zeros="any",
    cost=_einsum_cost,
    schema=Spec({"subscripts": SUBSCRIPTS}, minimum=1),
)


# -- np.linalg --------------------------------------------------------------------------
# NumPy raises LinAlgError where LAPACK reports failure (an exactly zero pivot, a matrix
# that is not positive definite); XLA returns inf or NaN. The JAX lowerings compute
# LAPACK's criterion as a runtime check: the call then raises NumPy's own LinAlgError
# (runtime.jax_backend). ``jax_checks`` tells the backend that these nodes carry one.
def _check_lapack(failed, message):
    from ..jax_checks import runtime_check
    runtime_check(~failed, "LinAlgError", message)


_LAPACK_CHECKS = {"jax_checks": lambda node: True}


def _singular(a):
    """True when LU with partial pivoting (LAPACK's getrf, as NumPy's gesv) meets an
    exactly zero pivot in any matrix of the batch."""
    import jax
    import jax.numpy as jnp
    if a.shape[-1] == 0 or a.size == 0:
        return jnp.asarray(False)
    lu = jax.lax.linalg.lu(a)[0]
    return jnp.any(jnp.diagonal(lu, axis1=-2, axis2=-1) == 0)


def _jax_inv(a):
    import jax.numpy as jnp
    _check_lapack(_singular(a), "Singular matrix")
    return jnp.linalg.inv(a)


def _jax_solve(a, b):
    import jax.numpy as jnp
    _check_lapack(_singular(a), "Singular matrix")
    return jnp.linalg.solve(a, b)


def _inv_vjp(g, out, a):
    return (-(mT(out) @ g @ mT(out)),)


register(
    "inv", np.linalg.inv,
    abstract=lambda a: (square(a).shape, _float(a.dtype)),
    vjp=_inv_vjp, jvp=lambda t, out, a: -(out @ t[0] @ out),
    jax=_jax_inv, family="linalg", extra=_LAPACK_CHECKS,
    batch=batching.stacked("inv"), aliasing="fresh",
    cost=cubic(1.0),
)


def _solve_abstract(a, b):
    square(a)
    vector = b.ndim == 1
    if b.shape[0 if vector else -2] != a.shape[-1]:
        raise ValueError(f"solve: a of shape {a.shape} and b of shape {b.shape} do not match")
    batch = np.broadcast_shapes(a.shape[:-2], () if vector else b.shape[:-2])
    shape = batch + ((a.shape[-1],) if vector else (a.shape[-1], b.shape[-1]))
    return shape, _float(np.result_type(a.dtype, b.dtype))


def _solve_vjp(g, out, a, b):
    if b.ndim == 1:  # NumPy 2: a 1-D b is one right-hand side vector
        gb = np.linalg.solve(mT(a), g[..., None])
        return -(gb @ mT(out[..., None])), gb[..., 0]
    gb = np.linalg.solve(mT(a), g)
    return -(gb @ mT(out)), gb


def _solve_jvp(t, out, a, b):
    vector = b.ndim == 1
    x = out[..., None] if vector else out
    rhs = None
    if t[1] is not None:
        rhs = t[1][..., None] if vector else t[1]
    if t[0] is not None:
        rhs = -(t[0] @ x) if rhs is None else rhs - t[0] @ x
    dx = np.linalg.solve(a, rhs)
    return dx[..., 0] if vector else dx


def _solve_batch(size, args, batched, out_shape):
    a, b = args
    ka = len(shape_of(a)) - batched[0]
    kb = len(shape_of(b)) - batched[1]
    vector = kb == 1
    if vector and not batched[1]:
        # a 1-D right-hand side broadcasts against a's (batched) stack
        return apply("solve", a, b)
    if vector:
        b = reshape(b, shape_of(b) + (1,))
        kb = 2
    stack = max(ka - 2, kb - 2)
    ops = [lift_rank(x, stack + 2) if f else x for x, f in zip((a, b), batched)]
    return reshape(apply("solve", *ops), (size,) + tuple(out_shape))


register(
    "solve", np.linalg.solve, abstract=_solve_abstract, vjp=_solve_vjp, jvp=_solve_jvp,
    jax=_jax_solve, family="linalg", extra=_LAPACK_CHECKS,
    batch=_solve_batch, aliasing="fresh",
    cost=cubic(2 / 3),
)


def _batch_scalar_abstract(a):
    return square(a).shape[:-2], _float(a.dtype)


def _trace_of_product(p, q):
    """trace(p @ q) over the last two axes, batched."""
    return np.sum(mT(p) * q, axis=(-2, -1))


# Where the SVD branch of adj(A) takes over: the inverse's branch has a second derivative
# accurate to about cond(A) * eps, so it is kept up to cond(A) = 1e8
NEAR_SINGULAR = 1e-8


def _adjugate_t(a, det_a):
    """adj(A)^T, the derivative of det(A), also at a singular A (where det(A) A^-T is
    0 * inf, and NumPy's inv refuses). Two branches, chosen per matrix:

    - ``det(A) A^-T`` where ``s_min > 1e-8 * s_max``: exact to every order;
    - otherwise, for ``n <= 4``, the cofactors themselves: ``det`` of every
      ``(n-1) x (n-1)`` minor, a polynomial in A, so its derivatives (through ``det``'s
      own rule on the minors) are exact at every rank to second order;
    - for larger ``n``, through the SVD ``A = U diag(s) Vh``: ``adj(A) = det(U) det(Vh)
      Vh^T diag(p) U^T``, ``p_i`` the product of the other singular values (no
      division; n^2 minors would cost O(n^5)). This branch's own derivative goes through
      the SVD's rules: exact where the singular values are distinct (one of them zero),
      the tie convention of spectral.py where they are not: the second derivative at
      ``diag(1, 1, 0, ...)``, or at a matrix of rank ``n - 2`` or less, is not exact.

    A complex A keeps ``det(A) A^-T`` alone (the SVD has no complex derivative rules
    here; NumPy's inv refuses an exactly singular one)."""
    if np.dtype(a.dtype).kind == "c":
        return det_a[..., None, None] * mT(np.linalg.inv(a))
    n = a.shape[-1]
    if n == 0:
        return a
    eye = np.eye(n, dtype=np.dtype(a.dtype))
    s = apply("svdvals", a)
    near = np.expand_dims(s[..., -1] <= NEAR_SINGULAR * s[..., 0], (-2, -1))
    # the inverse of a well-conditioned stand-in where A is near singular (not taken)
    regular = det_a[..., None, None] * mT(np.linalg.inv(np.where(near, eye, a)))
    if n <= 4:
        return np.where(near, _cofactors(a), regular)
    u, _, vh = apply("svd", a)
    others = np.prod(np.expand_dims(s, -2) * (1 - eye) + eye, axis=-1)
    # +-1 and locally constant: slogdet_sign carries no derivative for real matrices
    phase = apply("slogdet_sign", u) * apply("slogdet_sign", vh)
    through_svd = phase[..., None, None] * ((u * np.expand_dims(others, -2)) @ vh)
    return np.where(near, through_svd, regular)


def _cofactors(a):
    """The cofactor matrix of ``a`` (``adj(a)^T``): ``(-1)^(i+j) det`` of ``a`` without row i
    and column j, all n^2 minors gathered at once and their dets taken batched."""
    n = a.shape[-1]
    if n == 1:
        return np.ones_like(a)
    keep = np.array([[k for k in range(n) if k != i] for i in range(n)])     # (n, n-1)
    minors = a[..., keep[:, None, :, None], keep[None, :, None, :]]         # (..., n, n, n-1, n-1)
    signs = (-1.0) ** np.add.outer(np.arange(n), np.arange(n))
    return signs.astype(np.dtype(a.dtype)) * np.linalg.det(minors)


register(
    "det", np.linalg.det, abstract=_batch_scalar_abstract,
    vjp=lambda g, out, a: (np.expand_dims(g, (-2, -1)) * _adjugate_t(a, out),),
    jvp=lambda t, out, a: np.sum(_adjugate_t(a, out) * t[0], axis=(-2, -1)),
    jax=_jax(lambda jnp, a: jnp.linalg.det(a)), family="linalg",
    batch=batching.stacked("det"), aliasing="fresh",
    cost=cubic(2 / 3),
)
register(
    "logabsdet", lambda a: np.linalg.slogdet(a)[1],
    abstract=lambda a: (_batch_scalar_abstract(a)[0], np.finfo(_float(a.dtype)).dtype),
    vjp=lambda g, out, a: (g[..., None, None] * mT(np.linalg.inv(a)),),
    jvp=lambda t, out, a: _trace_of_product(np.linalg.inv(a), t[0]),
    jax=_jax(lambda jnp, a: jnp.linalg.slogdet(a)[1]), family="linalg",
    # log|det A| = Re(log det A): the real rule's g * A^-T holds
    doc="the second result of np.linalg.slogdet",
    batch=batching.stacked("logabsdet"), aliasing="fresh",
    cost=cubic(2 / 3),
)


# sign(det A) is piecewise constant for real A (no gradient); for complex A it is
# det/|det| on the unit circle: d sign = sign * 1j * Im(tr(A^-1 dA)).
def _sign_vjp(g, out, a):
    if np.dtype(a.dtype).kind != "c":
        return (None,)
    return ((1j * np.imag(g * out))[..., None, None] * mT(np.linalg.inv(a)),)


def _sign_jvp(t, out, a):
    if np.dtype(a.dtype).kind != "c":
        return None
    return out * (1j * np.imag(_trace_of_product(np.linalg.inv(a), t[0])))


register(
    "slogdet_sign", lambda a: np.linalg.slogdet(a)[0], abstract=_batch_scalar_abstract,
    vjp=_sign_vjp, jvp=_sign_jvp,
    jax=_jax(lambda jnp, a: jnp.linalg.slogdet(a)[0]), family="linalg",
    doc="the first result of np.linalg.slogdet (no gradient for real matrices)",
    batch=batching.stacked("slogdet_sign"), aliasing="fresh",
    cost=cubic(2 / 3),
)


# slogdet: one node, two outputs (sign, log|det|) from one LU factorisation
def _slogdet_abstract(a):
    shape, dtype = _batch_scalar_abstract(a)
    return [(shape, dtype), (shape, np.finfo(dtype).dtype)]


def _slogdet_vjp(g, outs, a):
    (gs, gl), (sign, _) = g, outs
    complex_a = np.dtype(a.dtype).kind == "c"
    if gl is None and (gs is None or not complex_a):
        return (None,)
    inv_t = mT(np.linalg.inv(a))
    scale = None
    if gl is not None:
        scale = gl
    if gs is not None and complex_a:
        part = 1j * np.imag(gs * sign)
        scale = part if scale is None else scale + part
    return (scale[..., None, None] * inv_t,)


def _slogdet_jvp(t, outs, a):
    sign = outs[0]
    tr = _trace_of_product(np.linalg.inv(a), t[0])
    if np.dtype(a.dtype).kind != "c":
        return None, tr
    return sign * (1j * np.imag(tr)), tr    # log|det|'s tangent: the real part (fit)


def _slogdet_impl(a):
    sign, logabsdet = np.linalg.slogdet(a)
    return sign, logabsdet


register(
    "slogdet", _slogdet_impl, abstract=_slogdet_abstract, outputs=2,
    vjp=_slogdet_vjp, jvp=_slogdet_jvp,
    jax=_jax(lambda jnp, a: tuple(jnp.linalg.slogdet(a))), family="linalg",
    doc="np.linalg.slogdet: sign and log|det| from one factorisation (the sign has no "
        "gradient for real matrices)",
    batch=stacked_multi("slogdet"),
    foldable=False, cost=cubic(2 / 3), torch_name="LinalgSlogdetBackward0",
)


def _phi_mask(n, dtype):
    """Lower triangle with the diagonal halved: the map Cholesky's derivative goes through."""
    return (np.tril(np.ones((n, n))) - 0.5 * np.eye(n)).astype(dtype)


# NumPy's cholesky reads the lower triangle of A only; the rules are the derivatives of
# that function (with respect to the lower triangle: zero above the diagonal), also for
# a non-symmetric A, as finite differences of np.linalg.cholesky see it (spectral.py).
# Complex (Hermitian) A = L L^H: dL = L phi(L^-1 dA L^-H); the cotangent (JAX's
# convention, spectral.py) of the matrix read is conj(L^-H phi(L^H conj(Lbar)) L^-1).
def _cholesky_vjp(g, out, a):
    # From L L^T = S (S: the symmetric matrix read): Sbar = L^-T phi(L^T Lbar) L^-1
    n = a.shape[-1]
    linv = np.linalg.inv(out)
    if is_complex(out):
        p = (mH(out) @ np.conj(g)) * _phi_mask(n, out.dtype)
        return (lower_cotangent(np.conj(mH(linv) @ p @ linv)),)
    p = (mT(out) @ g) * _phi_mask(n, out.dtype)
    return (lower_cotangent(mT(linv) @ p @ linv),)


def _cholesky_jvp(t, out, a):
    n = a.shape[-1]
    linv = np.linalg.inv(out)
    return out @ ((linv @ from_lower(t[0]) @ mH(linv)) * _phi_mask(n, out.dtype))


def _jax_cholesky(a):
    # jnp.linalg.cholesky symmetrises a first: another matrix than NumPy's when a is not
    # symmetric. XLA leaves NaN where LAPACK's potrf stops (a pivot <= 0 or NaN).
    import jax
    import jax.numpy as jnp
    low = jax.lax.linalg.cholesky(a, symmetrize_input=False)
    _check_lapack(jnp.any(jnp.isnan(low)), "Matrix is not positive definite")
    return low


register(
    "cholesky", np.linalg.cholesky,
    abstract=lambda a: (square(a).shape, _float(a.dtype)),
    vjp=_cholesky_vjp, jvp=_cholesky_jvp, jax=_jax_cholesky, family="linalg",
    extra=_LAPACK_CHECKS,
    doc="np.linalg.cholesky (lower triangle read, and differentiated)",
    batch=batching.stacked("cholesky"), aliasing="fresh",
    cost=cubic(1 / 3),
)
