"""Complex numbers through the functional transforms, with JAX's conventions.

The per-primitive rules are checked in test_primitives.py (cases_complex.py); here: the
transforms' dtype rules (``holomorphic=``), whole programs against ``jax.grad``/``jacrev``/
``jacfwd``/``hessian`` and complex finite differences, dtypes, the NumPy functions on
complex values, the backends, and the refusals.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close, fd_vjp

import tracegrad as tg
from tracegrad.ir import apply

jax.config.update("jax_enable_x64", True)

RTOL = 1e-10
rng = np.random.default_rng(7)
Z = rng.uniform(-1, 1, 4) + 1j * rng.uniform(-1, 1, 4)
X = rng.uniform(-1, 1, 4)
M = rng.uniform(-1, 1, (3, 3)) + 1j * rng.uniform(-1, 1, (3, 3)) + 2 * np.eye(3)


def _both(make):
    """The same program written once, run on NumPy (traced) and on jax.numpy."""
    return make(np), make(jnp)


# -- real-valued functions of complex inputs: JAX's conjugate form --------------------------------
REAL_OF_COMPLEX = {
    "abs2": lambda m: lambda z: m.sum(m.abs(z) ** 2),
    "re-sin-exp": lambda m: lambda z: m.real(m.sum(m.sin(z) * m.exp(z))),
    "imag-log": lambda m: lambda z: m.sum(m.imag(m.log(z + 3.0)) * m.real(z)),
    "conj-product": lambda m: lambda z: m.real(m.sum(z * m.conj(z[::-1]))),
    "angle": lambda m: lambda z: m.sum(m.angle(z) ** 2),
    "abs-of-poly": lambda m: lambda z: m.sum(m.abs(z ** 3 - 2j * z + 1.0)),
    "attributes": lambda m: lambda z: m.sum(z.real * z.imag + m.abs(z.conj() * 2.0)),
}


@pytest.mark.parametrize("name", sorted(REAL_OF_COMPLEX))
def test_grad_of_a_real_function_of_complex_inputs_is_jaxs(name):
    f, jf = _both(REAL_OF_COMPLEX[name])
    got = tg.grad(f)(Z)
    assert got.dtype == np.complex128
    assert_close(got, np.asarray(jax.grad(jf)(Z)), RTOL, "vs jax.grad")
    assert_close(got, fd_vjp(f, [Z], np.float64(1.0))[0], 1e-7, "vs finite differences",
                 floor=1.0)
    # and the value_and_grad / jacobian(mode="rev") spellings agree
    value, g = tg.value_and_grad(f)(Z)
    assert np.isclose(value, f(Z)) and np.allclose(g, got)
    assert_close(tg.jacobian(f)(Z), got, RTOL, "jacobian rev")


def test_gradient_descent_on_the_conjugate_of_jaxs_gradient_reaches_the_minimum():
    """The conjugate of the gradient is the steepest-ascent direction in the complex plane."""
    target = np.array([0.5 - 1j, 2 + 0.25j])

    def loss(z):
        return np.sum(np.abs(z - target) ** 2)

    z = np.zeros(2, complex)
    for _ in range(100):
        z = z - 0.1 * np.conj(tg.grad(loss)(z))
    np.testing.assert_allclose(z, target, atol=1e-8)


def test_real_inputs_through_complex_intermediates_get_real_gradients():
    """A Fourier sum: the cotangent of a real input is the real part (JAX's convention)."""
    k = np.arange(1.0, 5.0)

    def make(m):
        return lambda x: m.abs(m.sum(m.exp(1j * k * x) * (1.0 + 0.5j))) ** 2 + m.sum(
            m.real(m.exp(1j * x) * x))

    f, jf = _both(make)
    got = tg.grad(f)(X)
    assert got.dtype == np.float64
    assert_close(got, np.asarray(jax.grad(jf)(X)), RTOL, "vs jax.grad")
    assert_close(tg.hessian(f)(X), np.asarray(jax.hessian(jf)(X)), RTOL, "hessian vs jax")
    # complex constants mixed into real arithmetic: the former silent error (|i x|' = sign x)
    assert_close(tg.grad(lambda x: np.sum(np.abs(x * 1j)))(X), np.sign(X), RTOL, "|i x|")


# -- holomorphic functions ----------------------------------------------------------------------
HOLOMORPHIC = {
    "poly": (lambda m: lambda z: m.sum(z ** 3 - 2j * z), lambda z: 3 * z ** 2 - 2j),
    "sin-exp": (lambda m: lambda z: m.sum(m.sin(z) * m.exp(z)),
                lambda z: np.cos(z) * np.exp(z) + np.sin(z) * np.exp(z)),
    "log-sqrt": (lambda m: lambda z: m.sum(m.log(z + 3.0) + m.sqrt(z + 2.0)),
                 lambda z: 1 / (z + 3.0) + 0.5 / np.sqrt(z + 2.0)),
    "tanh-div": (lambda m: lambda z: m.sum(m.tanh(z) / (z + 4.0)),
                 lambda z: (1 - np.tanh(z) ** 2) / (z + 4) - np.tanh(z) / (z + 4) ** 2),
}


@pytest.mark.parametrize("name", sorted(HOLOMORPHIC))
def test_holomorphic_grad_is_the_complex_derivative(name):
    make, deriv = HOLOMORPHIC[name]
    f, jf = _both(make)
    got = tg.grad(f, holomorphic=True)(Z)
    assert got.dtype == np.complex128
    assert_close(got, deriv(Z), RTOL, "vs f'(z)")
    assert_close(got, np.asarray(jax.grad(jf, holomorphic=True)(Z)), RTOL, "vs jax.grad")
    h = tg.hessian(f, holomorphic=True)(Z)
    assert_close(h, np.asarray(jax.hessian(jf, holomorphic=True)(Z)), RTOL, "hessian")


def test_holomorphic_jacobians_in_both_modes_match_jax():
    def make(m):
        return lambda z: m.sin(z) * z[::-1] + m.exp(z).sum()

    f, jf = _both(make)
    want = np.asarray(jax.jacrev(jf, holomorphic=True)(Z))
    for mode in ("rev", "fwd"):
        got = tg.jacobian(f, holomorphic=True, mode=mode)(Z)
        assert got.dtype == np.complex128
        assert_close(got, want, RTOL, f"jacobian mode={mode}")


def test_complex_matrix_functions_are_holomorphic():
    def make(m):
        return lambda a: m.linalg.det(a) + m.sum(m.linalg.inv(a) @ a.T) + m.trace(
            m.linalg.solve(a, a @ a))

    f, jf = _both(make)
    assert_close(tg.grad(f, holomorphic=True)(M),
                 np.asarray(jax.grad(jf, holomorphic=True)(M)), 1e-9, "det/inv/solve")
    g, jg = _both(lambda m: lambda a: m.linalg.slogdet(a)[1] + m.abs(m.linalg.det(a)))
    assert_close(tg.grad(g)(M), np.asarray(jax.grad(jg)(M)), 1e-9, "log|det|")


def test_third_order_holomorphic_derivative():
    def f(z):
        return np.sin(z) * z

    d3 = tg.grad(tg.grad(tg.grad(f, holomorphic=True), holomorphic=True), holomorphic=True)
    z = 0.3 + 0.7j
    want = -3 * np.sin(z) - z * np.cos(z)          # (z sin z)''' = -3 sin z - z cos z
    assert np.isclose(d3(z), want, rtol=1e-12)


def test_jacobian_fwd_of_real_inputs_and_complex_outputs():
    f, jf = _both(lambda m: lambda x: m.exp(1j * x) * x[::-1])
    got = tg.jacobian(f, mode="fwd")(X)
    assert got.dtype == np.complex128
    assert_close(got, np.asarray(jax.jacfwd(jf)(X)), RTOL, "vs jax.jacfwd")


def test_vjp_and_jvp_of_non_holomorphic_complex_functions():
    f, jf = _both(lambda m: lambda z: m.conj(z) * z[::-1] + m.abs(z) * 1j)
    ct = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    t = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    out, pullback = tg.vjp(f, Z)
    assert_close(out, np.asarray(jf(Z)), RTOL, "value")
    assert_close(pullback(ct)[0], np.asarray(jax.vjp(jf, Z)[1](ct)[0]), RTOL, "vjp")
    assert_close(pullback(ct)[0], fd_vjp(f, [Z], ct)[0], 1e-7, "vjp vs fd", floor=1.0)
    assert_close(tg.jvp(f, (Z,), (t,))[1], np.asarray(jax.jvp(jf, (Z,), (t,))[1]), RTOL, "jvp")
    # mixed modes: the jvp of the pullback, and the pullback of the jvp
    hvp = tg.jvp(lambda z: tg.vjp(f, z)[1](ct)[0], (Z,), (t,))[1]
    jhvp = jax.jvp(lambda z: jax.vjp(jf, z)[1](ct)[0], (Z,), (t,))[1]
    assert_close(hvp, np.asarray(jhvp), RTOL, "jvp of vjp")


# -- factorisations, norms and selections of complex values (JAX's convention) --------------------
def _hermitian(m):
    return lambda a: (a + m.conj(m.swapaxes(a, -1, -2))) / 2.0


REAL_OF_COMPLEX_MATRIX = {
    "cholesky-logdet": lambda m: lambda a: m.sum(m.log(m.real(m.diagonal(
        m.linalg.cholesky(a @ m.conj(a.T) + 3.0 * m.eye(3)))))),
    "cholesky-abs": lambda m: lambda a: m.sum(m.abs(m.linalg.cholesky(
        a @ m.conj(a.T) + 3.0 * m.eye(3))) ** 2 * m.arange(1.0, 10.0).reshape(3, 3)),
    "eigvalsh": lambda m: lambda a: m.sum(m.linalg.eigvalsh(_hermitian(m)(a)) ** 3),
    "eigh-phase-free": lambda m: lambda a: (lambda w, v: m.sum(
        m.abs(v[:, :2]) ** 2 * w[:2]) + m.real(m.trace(
            (v * m.exp(w)) @ m.conj(v.T) @ a)))(*m.linalg.eigh(_hermitian(m)(a))),
    "svd-values": lambda m: lambda a: m.sum(m.linalg.svd(a, compute_uv=False) ** 2 * m.arange(
        1.0, 4.0)),
    "svd-phase-free": lambda m: lambda a: (lambda u, s, vh: m.sum(
        m.abs(u) ** 2 @ s) + m.abs(m.sum((u * m.tanh(s)) @ vh)))(
        *m.linalg.svd(a, full_matrices=False)),
    "qr": lambda m: lambda a: (lambda q, r: m.sum(m.abs(q[:, :2]) ** 3) + m.real(m.sum(
        r * m.arange(1.0, 10.0).reshape(3, 3))) + m.imag(m.trace(q)))(*m.linalg.qr(a)),
    "norms": lambda m: lambda a: (m.linalg.norm(a) + m.linalg.norm(a, "nuc")
                                  + m.linalg.norm(a, 2) + m.sum(m.linalg.norm(a, axis=1))
                                  + m.linalg.norm(a[0], 1) + m.linalg.norm(a[:, 1], 3)),
    "maximum-minimum-clip": lambda m: lambda a: m.sum(m.abs(
        m.maximum(a, a.T * 0.9) - m.minimum(a, 0.5 - 0.3j)) ** 2 + m.real(m.minimum(
            m.maximum(a, -0.2 + 0.1j), 1.0 + 0.5j) * a)),
}


@pytest.mark.parametrize("name", sorted(REAL_OF_COMPLEX_MATRIX))
def test_grad_through_complex_factorisations_norms_and_selections_is_jaxs(name):
    f, jf = _both(REAL_OF_COMPLEX_MATRIX[name])
    a = M - 2 * np.eye(3) + np.diag([2.0, 0.5, -1.0])   # spread spectra, no ties
    got = tg.grad(f)(a)
    assert got.dtype == np.complex128
    assert_close(got, np.asarray(jax.grad(jf)(a)), 1e-9, "vs jax.grad")
    assert_close(got, fd_vjp(f, [a], np.float64(1.0))[0], 1e-6, "vs finite differences",
                 floor=1.0)
    # forward mode along a complex direction, against JAX's jvp
    t = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    assert_close(tg.jvp(f, (a,), (t,))[1], np.asarray(jax.jvp(jf, (a,), (t,))[1]), 1e-9,
                 "jvp vs jax")


def test_numpy_clip_of_complex_values_is_lexicographic():
    """np.clip of complex values (which jnp.clip refuses) is NumPy's maximum then
    minimum, by real part then imaginary part; its derivative is the selection."""
    # 0.5 - 3j has the real part of the lower bound: its imaginary part decides (clipped)
    z = np.array([0.7 + 3.0j, 0.5 - 3.0j, -2.0 + 0.1j, 4.0 - 1.0j, 1.0 + 0.0j])
    lo, hi = 0.5 + 0.0j, 2.0 + 0.0j
    np.testing.assert_array_equal(tg.jit(lambda z: np.clip(z, lo, hi))(z), np.clip(z, lo, hi))
    g = tg.grad(lambda z: np.sum(np.abs(np.clip(z, lo, hi) + 1j) ** 2))(z)
    kept = (np.clip(z, lo, hi) == z)
    assert list(kept) == [True, False, False, False, True]
    assert_close(g, np.where(kept, 2 * np.conj(z + 1j), 0), RTOL, "selection")
    f = lambda z: np.sum(np.abs(np.clip(z, lo, hi) + 1j) ** 2)  # noqa: E731
    assert_close(g[[0, 2, 3, 4]], fd_vjp(f, [z], np.float64(1.0))[0][[0, 2, 3, 4]], 1e-7,
                 "vs finite differences (0.5-3j sits on a kink)", floor=1.0)


# -- dtypes ---------------------------------------------------------------------------------------
def test_complex64_stays_complex64():
    z = Z.astype(np.complex64)

    def f(z):
        return np.sum(np.abs(np.exp(z) * z) ** 2)

    g = tg.grad(f)(z)
    assert g.dtype == np.complex64
    np.testing.assert_allclose(g, tg.grad(f)(Z), rtol=1e-4)
    graph = tg.trace(tg.grad(f), z)
    wide = [n for n in graph if np.dtype(graph.node(n)["dtype"]) in (np.complex128, np.float64)]
    assert not wide, f"float64/complex128 nodes in a complex64 derivative graph: {wide}"
    assert tg.grad(lambda x: np.sum(np.abs(x * (1 + 1j))))(X.astype(np.float32)).dtype == \
        np.float32


def test_python_complex_scalars():
    assert np.isclose(tg.grad(lambda z: z * z, holomorphic=True)(1 + 2j), 2 * (1 + 2j))
    assert np.isclose(tg.grad(lambda z: abs(z) ** 2)(3 + 4j), 6 - 8j)


# -- the dtype rules of the transforms (JAX's) --------------------------------------------------------
def test_complex_output_needs_holomorphic():
    with pytest.raises(tg.TraceError, match="pass holomorphic=True") as info:
        tg.grad(lambda z: np.sum(z * z))(Z)  # COMPLEX_OUTPUT
    assert "test_complex.py" in str(info.value)
    with pytest.raises(tg.TraceError, match="requires real-valued outputs"):
        tg.jacobian(lambda z: z * z)(Z)
    with pytest.raises(tg.TraceError, match="requires real-valued inputs"):
        tg.jacobian(lambda z: np.abs(z), mode="fwd")(Z)
    # JAX's hessian of a complex input needs holomorphic too
    with pytest.raises(tg.TraceError, match="holomorphic"):
        tg.hessian(lambda z: np.sum(np.abs(z) ** 2))(Z)


def test_holomorphic_needs_complex_inputs_and_outputs():
    with pytest.raises(tg.TraceError, match="holomorphic=True requires inputs with complex"):
        tg.grad(lambda x: np.sum(x * 1j), holomorphic=True)(X)
    with pytest.raises(tg.TraceError, match="holomorphic=True requires outputs with complex"):
        tg.grad(lambda z: np.sum(np.abs(z)), holomorphic=True)(Z)
    with pytest.raises(tg.TraceError, match="holomorphic=True requires inputs"):
        tg.jacobian(lambda x: x * 1j, holomorphic=True, mode="fwd")(X)


def test_complex_cotangents_and_tangents_of_real_values_are_refused():
    _, pullback = tg.vjp(lambda z: np.abs(z), Z)
    with pytest.raises(tg.TraceError, match="cotangent has dtype complex128 but the value"):
        pullback(Z)
    with pytest.raises(tg.TraceError, match="tangent has dtype complex128"):
        tg.jvp(np.sin, (X,), (Z,))


def test_primitives_without_complex_rules_are_refused_naming_the_line():
    cases = {
        "sign": lambda: tg.grad(lambda z: np.sum(np.real(np.sign(z))))(Z),  # NO_RULE
        "relu": lambda: tg.jvp(lambda z: apply("relu", z), (Z,), (Z,)),  # NO_RULE
    }
    for op, call in cases.items():
        with pytest.raises(tg.TraceError, match="no derivative rule for complex") as info:
            call()
        assert op in str(info.value)
        assert "test_complex.py" in str(info.value)
    # tracing and compiling complex code (no derivative) is unrestricted
    assert tg.jit(lambda z: np.sign(z) * z)(1 + 2j) == np.sign(1 + 2j) * (1 + 2j)


# -- the NumPy functions on complex values --------------------------------------------------------
def test_numpy_complex_functions_on_traced_values():
    fns = {
        "real": np.real, "imag": np.imag, "conj": np.conj, "conjugate": np.conjugate,
        "angle": np.angle, "angle-deg": lambda z: np.angle(z, deg=True), "abs": np.abs,
        "iscomplex": np.iscomplex, "isreal": np.isreal,
        "attrs": lambda z: z.real + z.imag + z.conj() + z.conjugate(),
    }
    for name, fn in fns.items():
        for v in (Z, X):
            got = tg.jit(fn)(v)
            want = fn(v)
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), err_msg=name)
            assert np.asarray(got).dtype == np.asarray(want).dtype, name
    seen = []
    tg.trace(lambda z, x: seen.append((np.iscomplexobj(z), np.iscomplexobj(x),
                                       np.isrealobj(x))) or z, Z, X)
    assert seen == [(True, False, True)]


def test_real_if_close_decides_at_trace_time_under_a_guard():
    def f(z):
        return np.real_if_close(z * 2.0)

    out = tg.jit(f)(np.array([1 + 1e-17j, 2 + 0j]))
    assert out.dtype == np.float64
    assert np.iscomplexobj(tg.jit(f)(np.array([1 + 1j, 2 + 0j])))
    # the gradient goes through whichever branch the values chose
    g = tg.grad(lambda x: np.sum(np.real_if_close(np.exp(1j * x * 0.0)) * x))(X)
    np.testing.assert_allclose(g, np.ones(4))


# -- backends ---------------------------------------------------------------------------------------
def test_jit_and_the_jax_backend_run_complex_graphs():
    f, jf = _both(REAL_OF_COMPLEX["re-sin-exp"])
    want = np.asarray(jax.grad(jf)(Z))
    for backend in ("numpy", "jax"):
        got = tg.jit(tg.grad(f), backend=backend)(Z)
        assert_close(np.asarray(got), want, RTOL, backend)
        value = tg.jit(lambda z: np.sin(z) * np.conj(z), backend=backend)(Z)
        assert_close(np.asarray(value), np.sin(Z) * np.conj(Z), 1e-13, backend)
    h = tg.jit(tg.hessian(HOLOMORPHIC["poly"][0](np), holomorphic=True), backend="jax")(Z)
    assert_close(np.asarray(h), np.diag(6 * Z), 1e-12, "holomorphic hessian on JAX")


def test_complex_graphs_round_trip_through_json():
    graph = tg.trace(tg.grad(REAL_OF_COMPLEX["imag-log"](np)), Z)
    again = tg.Graph.from_json(graph.to_json())
    assert_close(again(Z), graph(Z), 0.0, "JSON round trip")
