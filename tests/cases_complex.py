"""Complex cases: the ``real``/``imag``/``conj`` primitives, and complex operands for the
primitives whose rules hold for them (``Primitive.complex``), checked against JAX's
``vjp``/``jvp`` (its convention: no conjugation in a VJP) and complex finite differences,
to second order through the two Hessian-vector products."""
import numpy as np

from tracegrad.ir import apply

from primitive_cases import Case, add, cuniform, jax_slogdet, uniform

for _prim in ("real", "imag", "conj"):
    add(Case(_prim, (cuniform((2, 3)),), second=True))
    add(Case(_prim, (cuniform(()),)))
    add(Case(_prim, (cuniform((3,)).astype(np.complex64),)))
# a real operand: conj is the identity, imag is zero
add(Case("conj", (uniform((3,)),), tag="real"))
add(Case("real", (uniform((2, 2)),), tag="real"))
add(Case("imag", (uniform((2, 2)),), tag="real"))

# holomorphic ufuncs: away from branch cuts and poles
_SAFE = {"log": lambda s: cuniform(s, 0.5, 2.0), "sqrt": lambda s: cuniform(s, 0.5, 2.0),
         "log1p": lambda s: cuniform(s, 0.2, 1.5), "log2": lambda s: cuniform(s, 0.5, 2.0),
         "log10": lambda s: cuniform(s, 0.5, 2.0), "arcsin": lambda s: cuniform(s, -0.5, 0.5),
         "arccos": lambda s: cuniform(s, -0.5, 0.5), "arctan": lambda s: cuniform(s, -0.5, 0.5),
         "arctanh": lambda s: cuniform(s, -0.5, 0.5), "arccosh": lambda s: cuniform(s, 1.2, 2.0),
         "tan": lambda s: cuniform(s, -0.6, 0.6)}
for _prim in ("neg", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos",
              "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
              "arccosh", "arctanh"):
    add(Case(_prim, (_SAFE.get(_prim, lambda s: cuniform(s, -1.0, 1.0))((2, 3)),),
             tag="complex", second=_prim in ("exp", "log", "sqrt", "tanh")))
for _prim in ("add", "sub", "mul", "div"):
    add(Case(_prim, (cuniform((2, 3)), cuniform((3,), 0.5, 1.5)), tag="complex",
             second=_prim in ("mul", "div")))
    # a real and a complex operand: the real one's cotangent is the real part
    add(Case(_prim, (uniform((2, 3)), cuniform((2, 3), 0.5, 1.5)), tag="mixed"))
add(Case("pow", (cuniform((2, 3), 0.5, 1.5), cuniform((2, 3), 0.5, 1.5)), tag="complex",
         second=True))
add(Case("pow", (cuniform((4,), 0.5, 1.5), np.array(3.0)), tag="complex-real-exponent"))

# |z|: real output; conj(z)/|z| is its (JAX-convention) cotangent
add(Case("abs", (cuniform((2, 3), 0.3, 1.5),), tag="complex", second=True))
add(Case("abs", (cuniform((4,), 0.3, 1.5).astype(np.complex64),), tag="complex"))

add(Case("select", (uniform((2, 3)) > 0, cuniform((2, 3)), cuniform((2, 3))), tag="complex",
         second=True))
add(Case("convert", (uniform((2, 3)),), {"dtype": np.dtype(np.complex128)}, tag="to-complex",
         second=True))
add(Case("convert", (cuniform((2, 3)),), {"dtype": np.dtype(np.complex64)}, tag="complex"))

# linear and holomorphic matrix functions
add(Case("matmul", (cuniform((2, 3)), cuniform((3, 4))), tag="complex", second=True))
add(Case("matmul", (uniform((2, 3)), cuniform((3,))), tag="mixed"))
add(Case("einsum", (cuniform((2, 3)), cuniform((3, 2))), {"subscripts": "ij,jk->ik"},
         tag="complex", second=True))
_a = cuniform((3, 3), -0.3, 0.3) + 2.0 * np.eye(3)
add(Case("inv", (_a,), tag="complex", second=True))
add(Case("solve", (_a, cuniform((3, 2))), tag="complex"))
add(Case("det", (_a,), tag="complex", second=True))
add(Case("logabsdet", (_a,), tag="complex", second=True))

# reductions and shapes
add(Case("sum", (cuniform((2, 3)),), {"axis": (1,), "keepdims": False}, tag="complex",
         second=True))
add(Case("prod", (cuniform((2, 3), 0.5, 1.5),), {"axis": (1,), "keepdims": False},
         tag="complex", second=True))
add(Case("cumsum", (cuniform((2, 3)),), {"axis": 1}, tag="complex"))
add(Case("reshape", (cuniform((2, 3)),), {"shape": (3, 2)}, tag="complex"))
add(Case("transpose", (cuniform((2, 3)),), {"axes": (1, 0)}, tag="complex"))
add(Case("broadcast_to", (cuniform((3,)),), {"shape": (2, 3)}, tag="complex"))
add(Case("concatenate", (cuniform((2, 3)), cuniform((1, 3))), {"axis": 0}, tag="complex"))
# sign(det A) of a complex matrix moves on the unit circle (a real one's is constant)
add(Case("slogdet_sign", (_a,), tag="complex", second=True))
add(Case("slogdet_sign", (cuniform((2, 2, 2), -0.3, 0.3) + 2.0 * np.eye(2),), tag="complex"))
for _which, _tag in ((0, "sign"), (1, "logabsdet")):
    add(Case("slogdet", (_a,), tag=f"complex-{_tag}", second=True,
             fn=lambda x, w=_which: apply("slogdet", x)[w],
             ref_fn=lambda x, w=_which: np.linalg.slogdet(x)[w],
             jax_fn=jax_slogdet(_which)))

# maximum / minimum / fmax / fmin: NumPy's lexicographic order (real part, then imaginary
# part); the rule is the selection. Where the real parts are equal the imaginary ones
# decide, and the function has a kink along the real axis, as at a tie (each side half,
# as JAX's): finite differences cannot check those (fd=False), JAX does.
_lx = np.array([[1.0 + 2.0j, 3.0 - 1.0j, -0.5 + 0.25j], [0.7 - 1.2j, -1.1 + 0.3j, 2.0 + 2.0j]])
# no real part of _ly is one of _lx (test_crossings draws broadcast operands from these)
_ly = np.array([[1.3 + 1.0j, 2.2 + 5.0j, -0.9 + 0.75j], [0.2 + 1.9j, -0.4 - 0.8j, 2.4 - 2.0j]])
_lz = np.array([[1.0 + 1.0j, 3.0 + 5.0j, -0.5 + 0.75j], [0.7 + 1.9j, -1.1 - 0.8j, 2.0 + 2.0j]])
for _prim in ("maximum", "minimum", "fmax", "fmin"):
    add(Case(_prim, (_lx, _ly), tag="complex", second=_prim in ("maximum", "minimum")))
    if _prim in ("maximum", "minimum"):
        add(Case(_prim, (_lx, _lz), tag="complex-equal-real-parts-and-a-tie", fd=False))
    else:   # jnp.fmax gives a tie to one side (so do the real cases: no tie checked)
        add(Case(_prim, (_lx[:, :2], _lz[:, :2]), tag="complex-equal-real-parts", fd=False))
    add(Case(_prim, (_lx[:, :2], np.array([0.9, -0.2])), tag="mixed"))


# -- Hermitian factorisations: eigh / eigvalsh / cholesky of complex matrices ----------------
# NumPy (LAPACK) reads the lower triangle and the real part of the diagonal: the inputs
# carry noise above the diagonal and an imaginary part on it, which must not count. The
# JAX twins see the same Hermitian matrix. Eigenvectors are defined up to a phase per
# column (NumPy's is LAPACK's): the cases differentiate functions that do not depend on it
# (|v|^2 weighted by the eigenvalues, V f(w) V^H), which finite differences can check.
def _hermitian_lopsided(a):
    noise = cuniform(a.shape, -1.0, 1.0)
    return a + np.triu(noise, 1) + 1j * np.eye(a.shape[-1]) * noise.real


def _hermitian_spread(n, batch=()):
    q, _ = np.linalg.qr(cuniform(batch + (n, n), -1.0, 1.0))
    lam = np.linspace(-1.5, 2.0, n) + uniform(batch + (n,), -0.1, 0.1)
    return _hermitian_lopsided((q * lam[..., None, :]) @ np.conj(np.swapaxes(q, -1, -2)))


def _hermitian_pd(n, batch=()):
    b = cuniform(batch + (n, n), -1.0, 1.0)
    return _hermitian_lopsided(b @ np.conj(np.swapaxes(b, -1, -2)) + n * np.eye(n))


def _jax_hermitian(a):
    import jax.numpy as jnp
    low = jnp.tril(a, -1)
    diag = jnp.real(jnp.diagonal(a, axis1=-2, axis2=-1))
    return low + jnp.conj(jnp.swapaxes(low, -1, -2)) + diag[..., None] * jnp.eye(a.shape[-1])


def _eig_functions(xp, w, v):
    """Phase-free functions of eigh's (or svd's) vectors: |v|^2 weighted by w, and
    V sin(w) V^H."""
    vh = xp.conj(xp.swapaxes(v, -1, -2))
    return xp.abs(v) ** 2 * w[..., None, :], (v * xp.sin(w)[..., None, :]) @ vh


def _jax_eigh(a):
    import jax.numpy as jnp
    return jnp.linalg.eigh(_jax_hermitian(a))


for _n, _batch, _second in [(3, (), True), (2, (2,), False)]:
    _a = _hermitian_spread(_n, _batch)
    add(Case("eigvalsh", (_a,), tag="complex", second=_second,
             jax_fn=lambda a: _jax_eigh(a)[0]))
    add(Case("eigh", (_a,), tag="complex-w", second=_second, fn=lambda x: apply("eigh", x)[0],
             ref_fn=lambda x: np.linalg.eigh(x)[0], jax_fn=lambda a: _jax_eigh(a)[0]))
    for _k, _tag in ((0, "abs2-v"), (1, "v-sin-w-vh")):
        add(Case("eigh", (_a,), tag=f"complex-{_tag}", second=_second,
                 fn=lambda x, k=_k: _eig_functions(np, *apply("eigh", x))[k],
                 ref_fn=lambda x, k=_k: _eig_functions(np, *np.linalg.eigh(x))[k],
                 jax_fn=lambda a, k=_k: _eig_functions(_jnp_module(), *_jax_eigh(a))[k]))
    add(Case("eigh_vectors", (_a,), tag="complex-abs2", second=_second,
             fn=lambda x: np.abs(apply("eigh_vectors", x)) ** 2,
             ref_fn=lambda x: np.abs(np.linalg.eigh(x)[1]) ** 2,
             jax_fn=lambda a: _jnp_module().abs(_jax_eigh(a)[1]) ** 2))
    add(Case("cholesky", (_hermitian_pd(_n, _batch),), tag="complex", second=_second,
             jax_fn=lambda a: _jnp_module().linalg.cholesky(_jax_hermitian(a))))


def _jnp_module():
    import jax.numpy as jnp
    return jnp


# -- svd of complex matrices: s, and phase-free functions of u and vh ----------------------------
# A pair (u_i, v_i) is defined up to one common phase: |u|^2 s, |vh|^2 and U sin(S) V^H do
# not depend on it. Tall, square and wide matrices (the projector terms of dU, dV).
def _complex_spread_singular(m, n, batch=()):
    k = min(m, n)
    u, _ = np.linalg.qr(cuniform(batch + (m, k), -1.0, 1.0))
    v, _ = np.linalg.qr(cuniform(batch + (n, k), -1.0, 1.0))
    s = np.linspace(3.0, 1.0, k) + uniform(batch + (k,), -0.1, 0.1)
    return (u * s[..., None, :]) @ np.conj(np.swapaxes(v, -1, -2))


def _svd_functions(xp, u, s, vh):
    return (xp.abs(u) ** 2 * s[..., None, :], xp.abs(vh) ** 2,
            (u * xp.sin(s)[..., None, :]) @ vh)


def _jax_svd(a):
    return _jnp_module().linalg.svd(a, full_matrices=False)


for _shape, _batch, _second in [((3, 3), (), True), ((4, 2), (), True), ((2, 4), (), False),
                                ((3, 2), (2,), False)]:
    _a = _complex_spread_singular(*_shape, _batch)
    add(Case("svdvals", (_a,), tag="complex", second=_second,
             jax_fn=lambda a: _jnp_module().linalg.svd(a, compute_uv=False)))
    add(Case("svd", (_a,), tag="complex-s", second=_second, fn=lambda x: apply("svd", x)[1],
             ref_fn=lambda x: np.linalg.svd(x)[1], jax_fn=lambda a: _jax_svd(a)[1]))
    for _k, _tag in enumerate(("abs2-u-s", "abs2-vh", "u-sin-s-vh")):
        add(Case("svd", (_a,), tag=f"complex-{_tag}", second=_second and _k == 2,
                 fn=lambda x, k=_k: _svd_functions(np, *apply("svd", x))[k],
                 ref_fn=lambda x, k=_k: _svd_functions(
                     np, *np.linalg.svd(x, full_matrices=False))[k],
                 jax_fn=lambda a, k=_k: _svd_functions(_jnp_module(), *_jax_svd(a))[k]))
    add(Case("svd_u", (_a,), tag="complex-abs2", fn=lambda x: np.abs(apply("svd_u", x)) ** 2,
             ref_fn=lambda x: np.abs(np.linalg.svd(x, full_matrices=False)[0]) ** 2,
             jax_fn=lambda a: _jnp_module().abs(_jax_svd(a)[0]) ** 2))
    add(Case("svd_vh", (_a,), tag="complex-abs2", fn=lambda x: np.abs(apply("svd_vh", x)) ** 2,
             ref_fn=lambda x: np.abs(np.linalg.svd(x, full_matrices=False)[2]) ** 2,
             jax_fn=lambda a: _jnp_module().abs(_jax_svd(a)[2]) ** 2))


# -- qr of complex matrices: R's diagonal is real (LAPACK's), which fixes Q's phases ----------
def _complex_tall(m, n, batch=()):
    a = cuniform(batch + (m, n), -1.0, 1.0)
    a[..., :n, :] += 2.0 * np.eye(n)
    return a


def _jax_qr(which):
    return lambda a: _jnp_module().linalg.qr(a)[which]


for _shape, _batch, _second in [((3, 3), (), True), ((4, 2), (), False), ((3, 2), (2,), False)]:
    _a = _complex_tall(*_shape, _batch)
    for _k, _tag in ((0, "q"), (1, "r")):
        add(Case("qr", (_a,), tag=f"complex-{_tag}", second=_second,
                 fn=lambda x, k=_k: apply("qr", x)[k], ref_fn=lambda x, k=_k: np.linalg.qr(x)[k],
                 jax_fn=_jax_qr(_k)))
    add(Case("qr_q", (_a,), tag="complex", jax_fn=_jax_qr(0)))
    add(Case("qr_r", (_a,), tag="complex", jax_fn=_jax_qr(1)))


# -- convolutions (bilinear) and average pooling (linear) of complex images ---------------------
_CONV = {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2)}
add(Case("conv2d", (cuniform((1, 2, 5, 6)), cuniform((2, 2, 2, 2))), _CONV, tag="complex",
         second=True))
add(Case("conv2d", (cuniform((2, 2, 4, 4)), uniform((3, 2, 2, 2))),
         {"stride": (1, 1), "padding": (0, 0), "dilation": (1, 1)}, tag="mixed"))
add(Case("conv_transpose2d", (cuniform((1, 2, 3, 3)), cuniform((2, 2, 2, 2))),
         {"stride": (2, 2), "padding": (1, 1), "output_padding": (1, 0), "dilation": (1, 1)},
         tag="complex", second=True))
add(Case("conv_transpose2d", (uniform((1, 2, 3, 2)), cuniform((2, 1, 2, 2))),
         {"stride": (1, 1), "padding": (0, 0), "output_padding": (0, 0), "dilation": (1, 1)},
         tag="mixed"))
add(Case("avg_pool2d", (cuniform((2, 1, 5, 6)),),
         {"kernel": (3, 2), "stride": (2, 1), "padding": (1, 0)}, tag="complex", second=True))

# complex numbers from their parts: broadcast, and in float32
add(Case("complex", (uniform((2, 3)), uniform((2, 3))), second=True))
add(Case("complex", (uniform((2, 3)), uniform((3,)))))
add(Case("complex", (uniform((4,)).astype(np.float32), uniform((4,)).astype(np.float32))))
add(Case("complex", (cuniform((2, 3)), uniform((3,))), tag="complex-operand"))
