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
