"""``scipy.special`` on traced values: SciPy's own ufuncs route to tracegrad's primitives
(their rules are checked per primitive in ``cases_special.py``); SciPy's ``logsumexp``,
``softmax`` and ``log_softmax`` trace through NumPy; ``tracegrad.scipy.special`` adds
them with SciPy's signatures. Oracles: SciPy's values, JAX's gradients (x64), finite
differences."""
import sys

import jax
import jax.scipy.special as jsp
import numpy as np
import pytest
import scipy.special as ss
from conftest import assert_close, fd_vjp

import tracegrad as tg
import tracegrad.scipy.special as ts

RNG = np.random.default_rng(15)
X = RNG.uniform(0.3, 2.5, (2, 3))
UNIT = RNG.uniform(0.1, 0.9, (2, 3))

# one row per function: the SciPy name, its operands (domain), JAX's twin
ROUTED = [
    ("gammaln", (X,)), ("digamma", (X,)), ("psi", (X,)), ("gamma", (X,)),
    ("beta", (X, X[::-1])), ("betaln", (X, X[::-1])), ("erf", (X - 1.0,)),
    ("erfc", (X - 1.0,)), ("erfinv", (UNIT - 0.5,)), ("erfcinv", (UNIT,)),
    ("ndtr", (X - 1.0,)), ("ndtri", (UNIT,)), ("log_ndtr", (X - 2.0,)), ("expit", (X - 1.0,)),
    ("logit", (UNIT,)), ("xlogy", (X - 1.0, X)), ("xlog1py", (X - 1.0, X)), ("i0", (X,)),
    ("i1", (X,)), ("i0e", (X,)), ("i1e", (X,)),
]


def _jax_twin(name):
    if name == "psi":
        return jsp.digamma
    if name == "erfcinv":
        return lambda x: -jsp.ndtri(x / 2) / np.sqrt(2.0)
    return getattr(jsp, name)


@pytest.mark.parametrize("name,args", ROUTED, ids=[r[0] for r in ROUTED])
def test_scipy_ufuncs_on_tracers_match_scipy_and_jax(name, args):
    fn = getattr(ss, name)
    w = RNG.standard_normal(np.broadcast_shapes(*(a.shape for a in args)))

    def loss(*xs):
        return np.sum(w * fn(*xs))

    graph = tg.trace(loss, *args)
    prim = "digamma" if name == "psi" else name
    assert prim in graph.ops()
    assert_close(graph(*args), np.sum(w * fn(*args)), 1e-12, "value")
    argnums = tuple(range(len(args)))
    got = tg.grad(loss, argnums=argnums)(*args)
    want = jax.grad(lambda *xs: jax.numpy.sum(w * _jax_twin(name)(*xs)), argnums=argnums)(*args)
    for g, j in zip(got, want):
        assert_close(g, np.asarray(j), 1e-10, f"{name} vs JAX")


def test_an_unsupported_scipy_ufunc_is_named_as_scipy():
    with pytest.raises(tg.TraceError, match=r"scipy\.special\.struve is not supported") as e:
        tg.grad(lambda x: np.sum(ss.struve(0.0, x)))(X)
    assert "test_scipy_special.py" in str(e.value)


def test_scipy_ufuncs_compile_on_both_backends():
    def f(x):
        return np.sum(ss.gammaln(x) * ss.expit(x) + ss.xlogy(x, x))

    want = tg.grad(f)(X)
    assert_close(tg.jit(tg.grad(f))(X), want, 1e-12, "numpy backend")
    assert_close(tg.jit(tg.grad(f), backend="jax")(X), want, 1e-12, "jax backend")
    assert_close(want, fd_vjp(f, [X], 1.0)[0], 1e-7, "finite differences", floor=1.0)


def test_second_derivatives_of_gammaln_are_trigamma():
    h = tg.hessian(lambda x: np.sum(ss.gammaln(x)))(X[0])
    assert_close(np.diag(h), ss.polygamma(1, X[0]), 1e-12, "trigamma")


def test_missing_scipy_is_a_clear_error(monkeypatch):
    from tracegrad.ir.prims.scipy_special import special
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    with pytest.raises(tg.TraceError, match=r"pip install 'tracegrad\[scipy\]'"):
        special()


# -- logsumexp, softmax, log_softmax: SciPy's own (traced through NumPy) and ours ------------------
A = RNG.standard_normal((3, 4))
B = RNG.uniform(0.5, 2.0, (3, 4))
LSE = [
    ("all", {}), ("axis0", {"axis": 0}), ("axis1-keepdims", {"axis": 1, "keepdims": True}),
    ("weights", {"axis": 1, "b": B}), ("axes", {"axis": (0, 1)}),
]


@pytest.mark.parametrize("impl", ["scipy", "tracegrad"])
@pytest.mark.parametrize("tag,kw", LSE, ids=[r[0] for r in LSE])
def test_logsumexp(impl, tag, kw):
    fn = ss.logsumexp if impl == "scipy" else ts.logsumexp
    w = RNG.standard_normal(np.shape(ss.logsumexp(A, **kw)))
    assert_close(ts.logsumexp(A, **kw), ss.logsumexp(A, **kw), 1e-12, "value")
    got = tg.grad(lambda a: np.sum(w * fn(a, **kw)))(A)
    jkw = dict(kw)
    want = jax.grad(lambda a: jax.numpy.sum(w * jsp.logsumexp(a, **jkw)))(A)
    assert_close(got, np.asarray(want), 1e-10, "vs JAX")


def test_logsumexp_return_sign_and_weights_gradient():
    b = np.array([[1.0, -0.5, 2.0], [0.5, 0.0, -3.0]])
    a = A[:2, :3]
    out, sign = ts.logsumexp(a, axis=1, b=b, return_sign=True)
    s_out, s_sign = ss.logsumexp(a, axis=1, b=b, return_sign=True)
    assert_close(out, s_out, 1e-12, "value")
    np.testing.assert_array_equal(sign, s_sign)
    f = lambda a, b: np.sum(ts.logsumexp(a, axis=1, b=b, return_sign=True)[0])  # noqa: E731
    got = tg.grad(f, argnums=(0, 1))(a, b)
    fd = fd_vjp(f, [a, b], 1.0)
    for g, d in zip(got, fd):
        assert_close(g, d, 1e-7, "finite differences", floor=1.0)
    # no sign asked: a negative sum is NaN, as SciPy's
    assert np.isnan(ts.logsumexp(np.array([0.0, 1.0]), b=np.array([1.0, -2.0])))


@pytest.mark.parametrize("impl", ["scipy", "tracegrad"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_softmax_and_log_softmax(impl, axis):
    mod = ss if impl == "scipy" else ts
    w = RNG.standard_normal(A.shape)
    for name, twin in (("softmax", jax.nn.softmax), ("log_softmax", jax.nn.log_softmax)):
        fn = getattr(mod, name)
        assert_close(getattr(ts, name)(A, axis=axis), getattr(ss, name)(A, axis=axis), 1e-12,
                     name)
        got = tg.grad(lambda a: np.sum(w * fn(a, axis=axis)))(A)
        jaxis = (0, 1) if axis is None else axis
        want = jax.grad(lambda a: jax.numpy.sum(w * twin(a, axis=jaxis)))(A)
        assert_close(got, np.asarray(want), 1e-10, f"{name} vs JAX")


def test_logsumexp_second_derivative():
    h = tg.hessian(lambda a: ts.logsumexp(a))(A[0])
    want = jax.hessian(lambda a: jsp.logsumexp(a))(A[0])
    assert_close(h, np.asarray(want), 1e-10, "Hessian vs JAX")


def test_polygamma_and_multigammaln():
    x = X[0]
    for n in (0, 1, 3):
        assert_close(ts.polygamma(n, x), ss.polygamma(n, x), 1e-12, f"polygamma {n}")
        got = tg.grad(lambda v, n=n: np.sum(ts.polygamma(n, v)))(x)
        assert_close(got, ss.polygamma(n + 1, x), 1e-12, f"d polygamma {n}")
    assert_close(ts.multigammaln(X + 2, 3), ss.multigammaln(X + 2, 3), 1e-12, "multigammaln")
    f = lambda v: np.sum(ts.multigammaln(v + 2.0, 3))  # noqa: E731
    assert_close(tg.grad(f)(X), fd_vjp(f, [X], 1.0)[0], 1e-7, "finite differences", floor=1.0)


def test_scipy_stays_optional():
    """``import tracegrad`` (and ``tracegrad.scipy``) does not import SciPy: the ir layer
    imports it inside the implementations only."""
    import subprocess
    code = ("import sys, tracegrad, tracegrad.scipy.stats; "
            "assert 'scipy' not in sys.modules, 'scipy imported'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr


# -- incomplete gamma and beta: the derivatives in a, and the refusals ---------------------------------
# (a, x) on both sides of x = max(a, 1), where ∂P/∂a switches from series to fraction
A_GRID = np.array([0.1, 0.5, 0.5, 1.5, 1.5, 4.0, 4.0, 20.0, 20.0, 150.0, 150.0, 2.0])
X_GRID = np.array([0.05, 0.3, 3.0, 0.8, 6.0, 2.5, 9.0, 15.0, 30.0, 140.0, 170.0, 0.0])


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma_derivative_in_a_matches_jax_and_scipy_differences(name):
    fn, twin = getattr(ss, name), getattr(jsp, name)
    got_a, got_x = tg.grad(lambda a, x: np.sum(fn(a, x)), argnums=(0, 1))(A_GRID, X_GRID)
    want_a, want_x = jax.grad(lambda a, x: jax.numpy.sum(twin(a, x)), argnums=(0, 1))(A_GRID,
                                                                                     X_GRID)
    assert_close(got_a, np.asarray(want_a), 1e-11, "d/da vs JAX", floor=1e-3)
    assert_close(got_x[:-1], np.asarray(want_x)[:-1], 1e-11, "d/dx vs JAX")
    # central differences of SciPy's own function, step relative to a
    h = 1e-6 * np.maximum(A_GRID, 1.0)
    fd = (fn(A_GRID + h, X_GRID) - fn(A_GRID - h, X_GRID)) / (2 * h)
    assert_close(got_a, fd, 1e-6, "d/da vs SciPy's finite differences", floor=1e-2)
    assert got_a[-1] == 0.0                    # x = 0: P is 0 for every a


def test_incomplete_gamma_mixed_second_derivative_and_refused_second_in_a():
    a, x = A_GRID[:-1], X_GRID[:-1]
    # d/da of dP/dx (in JAX, dP/dx is a closed form it differentiates in a), both ways round
    want = jax.grad(lambda a: jax.numpy.sum(jax.vmap(jax.grad(jsp.gammainc, 1))(a, x)))(a)
    got_ax = tg.grad(lambda a: np.sum(tg.vmap(tg.grad(ss.gammainc, 1))(a, x)))(a)
    got_xa = tg.grad(lambda x: np.sum(tg.vmap(tg.grad(ss.gammainc, 0))(a, x)))(x)
    assert_close(got_ax, np.asarray(want), 1e-10, "d2/dadx vs JAX", floor=1e-3)
    assert_close(got_xa, np.asarray(want), 1e-10, "d2/dxda vs JAX", floor=1e-3)
    with pytest.raises(tg.TraceError, match=r"second derivative of gammainc.*test_scipy_special"):
        tg.hessian(lambda a: ss.gammainc(a, 0.7))(1.5)


@pytest.mark.parametrize("name", ["gammaincinv", "gammainccinv"])
def test_inverse_incomplete_gamma_derivatives_are_scipys_differences(name):
    fn = getattr(ss, name)
    a, y = np.array([0.5, 1.5, 4.0, 12.0]), np.array([0.2, 0.6, 0.4, 0.9])
    assert_close(getattr(ts, name)(a, y), fn(a, y), 1e-12, "value")
    got = tg.grad(lambda a, y: np.sum(fn(a, y)), argnums=(0, 1))(a, y)
    for k, (g, d) in enumerate(zip(got, fd_vjp(lambda a, y: np.sum(fn(a, y)), [a, y], 1.0))):
        assert_close(g, d, 1e-6, f"operand {k} vs finite differences", floor=1.0)


def test_betainc_is_differentiable_in_x_and_refuses_a_and_b():
    a, b, x = 2.5, 1.5, np.array([0.1, 0.5, 0.9])
    got = tg.grad(lambda x: np.sum(ss.betainc(a, b, x)))(x)
    want = jax.grad(lambda x: jax.numpy.sum(jsp.betainc(a, b, x)))(x)
    assert_close(got, np.asarray(want), 1e-12, "d/dx vs JAX")
    for argnums in (0, 1):
        with pytest.raises(tg.TraceError, match=r"betainc.*with respect to a and b.*"
                                                r"test_scipy_special\.py"):
            tg.grad(lambda a, b: np.sum(ss.betainc(a, b, x)), argnums=argnums)(a, b)
    with pytest.raises(tg.TraceError, match="with respect to a and b"):
        tg.jvp(lambda a: ss.betainc(a, b, x), (a,), (1.0,))
    # a traced a that is not differentiated is fine
    assert_close(tg.grad(lambda a, x: np.sum(ss.betainc(a, b, x)), argnums=1)(a, x), got,
                 1e-15, "d/dx with a traced")


# -- Bessel functions -------------------------------------------------------------------------------
# (SciPy name, order or None, SciPy's derivative function and its order argument)
BESSEL = [("j0", None, ss.jvp, 0), ("j1", None, ss.jvp, 1), ("y0", None, ss.yvp, 0),
          ("y1", None, ss.yvp, 1), ("k0", None, ss.kvp, 0), ("k1", None, ss.kvp, 1),
          ("jv", 1.3, ss.jvp, 1.3), ("jn", 2, ss.jvp, 2), ("yv", 0.7, ss.yvp, 0.7),
          ("yn", 3, ss.yvp, 3), ("iv", 2.5, ss.ivp, 2.5), ("kv", 0.4, ss.kvp, 0.4)]


@pytest.mark.parametrize("name,order,deriv,v", BESSEL, ids=[r[0] for r in BESSEL])
def test_bessel_derivatives_are_scipys_to_second_order(name, order, deriv, v):
    fn = getattr(ss, name)
    x = np.array([0.4, 1.7, 5.5])
    call = (lambda x: fn(x)) if order is None else (lambda x: fn(order, x))
    assert_close(getattr(ts, name)(*(() if order is None else (order,)), x), call(x), 1e-15,
                 "value")
    assert_close(tg.grad(lambda x: np.sum(call(x)))(x), deriv(v, x, 1), 1e-12, "first")
    h = tg.hessian(lambda x: np.sum(call(x)))(x)
    assert_close(np.diag(h), deriv(v, x, 2), 1e-11, "second")


def test_bessel_orders_are_refused_and_the_jax_backend_calls_scipy():
    x = np.array([0.5, 2.0])
    for name in ("jv", "yv", "iv", "ive", "kv", "kve"):
        with pytest.raises(tg.TraceError, match=rf"{name}\(v, x\) is differentiable in x only"
                                                r".*test_scipy_special\.py"):
            tg.grad(lambda v: np.sum(getattr(ss, name)(v, x)))(1.5)
    with pytest.raises(tg.TraceError, match="the order v"):
        tg.jvp(lambda v: ss.iv(v, x), (1.5,), (1.0,))

    def f(x):
        return np.sum(ss.jv(1.5, x) * ss.y0(x) + ss.ive(0.5, x) + ss.gammainc(x, x + 1.0)
                      + ss.betainc(2.0, 3.0, x / 3.0) + ss.rgamma(x))

    want = tg.grad(f)(x)
    assert_close(want, fd_vjp(f, [x], 1.0)[0], 1e-7, "finite differences", floor=1.0)
    assert_close(tg.jit(tg.grad(f), backend="jax")(x), want, 1e-12, "jax backend")
    batch = np.array([[0.5, 2.0], [1.0, 3.0]])
    assert_close(tg.vmap(tg.grad(f))(batch), np.stack([tg.grad(f)(r) for r in batch]), 1e-14,
                 "vmap")


def test_rgamma_and_gammasgn():
    x = np.array([-2.5, -1.0, 0.0, 0.5, 3.0])
    assert_close(ts.rgamma(x), ss.rgamma(x), 1e-15, "rgamma")
    # d(1/Γ)/dx = -ψ/Γ; at the poles -n it is (-1)^n n!
    want = np.array([-ss.digamma(-2.5) * ss.rgamma(-2.5), -1.0, 1.0,
                     -ss.digamma(0.5) * ss.rgamma(0.5), -ss.digamma(3.0) / 2.0])
    assert_close(tg.grad(lambda x: np.sum(ss.rgamma(x)))(x), want, 1e-12, "d rgamma")
    assert_close(tg.grad(lambda x: np.sum(ss.gammasgn(x) * x))(x), ss.gammasgn(x), 0,
                 "gammasgn is piecewise constant")
