"""Derivatives of the NumPy functions of ``np_polynomial``, ``np_statistics``,
``np_setops``, ``np_arrays`` and ``np_linalg_more``: each function written once against
``xp`` and compared (``oracles.check``) with NumPy's values and ``jax.grad`` in x64
(weighted sums of every output), with Hessians and central differences of NumPy's own
function for some; where JAX's function differs from NumPy's (``roots`` is complex,
``polydiv`` keeps leading zeros) the gradient is checked against central differences
only. Values, dtypes and fresh arrays for many more inputs are in the generated
``test_value_fidelity.py``.
"""
import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg

from oracles import check, finite_diff_grad, jnp, rand, weighted_sum

X = rand(3, 4, seed=201)
Y = rand(3, 4, seed=202)
V = rand(5, seed=203)
W = rand(3, seed=204)
POS = rand(3, 4, seed=205, low=0.5, high=2.0)
SQ = rand(3, 3, seed=206) + 3 * np.eye(3)
XS = np.linspace(0.1, 1.0, 7)
YS = np.sin(3 * XS) + rand(7, seed=207) * 0.1
NANS = rand(3, 5, seed=208)
NANS[0, 1] = NANS[1, 3] = np.nan
IDX = np.array([0, 3, 1, 3, 2])


def case(name, fn, *args, **kw):
    return pytest.param(fn, args, kw, id=name)


def _both(np_fn, jax_fn):
    return lambda xp, *a: np_fn(*a) if xp is np else jax_fn(*a)


def _nan(xp, x):
    return xp.where(np.isnan(NANS), xp.nan, x)


def _fill_diag(x, v):
    z = x * 1.0
    np.fill_diagonal(z, v)
    return z


def _put(x, v):
    z = x * 1.0
    np.put(z, [0, 5, 5, 11], v)
    return z


def _place(x, v):
    z = x * 1.0
    np.place(z, X > 0, v)
    return z


CASES = [
    # polynomials
    case("polyval", lambda xp, p, x: xp.polyval(p, x), V, X, argnums=(0, 1), hessian=False, fd=True),
    case("polyval_hessian", lambda xp, x: xp.polyval(V, x), W, hessian=True),
    case("poly", lambda xp, r: xp.poly(r), V, fd=True),
    case("polyadd_polysub", lambda xp, a, b: xp.polysub(xp.polyadd(a, b), b * b), V, W,
         argnums=(0, 1)),
    case("polymul", lambda xp, a, b: xp.polymul(a, b), V, W, argnums=(0, 1), hessian=False),
    case("polyder", lambda xp, p: xp.polyder(p, 2), V),
    case("polyint", lambda xp, p: xp.polyint(p, 2, k=np.array([0.5, -1.0])), V),
    case("vander", lambda xp, x: xp.vander(x, 4), V, hessian=True),
    case("vander_increasing", lambda xp, x: xp.vander(x, increasing=True), W),
    case("polyfit", lambda xp, x, y: xp.polyfit(x, y, 2), XS, YS, argnums=(0, 1), fd=True),
    case("polyfit_weighted_2d", lambda xp, y, w: xp.polyfit(XS, y, 3, w=w),
         np.stack([YS, YS ** 2], 1), 1.0 + XS, argnums=(0, 1)),
    # statistics
    case("ptp", lambda xp, x: xp.ptp(x, axis=1), X),
    case("cov", lambda xp, x: xp.cov(x), X, hessian=True, fd=True),
    case("cov_xy_rowvar", lambda xp, x, y: xp.cov(x, y, rowvar=False), X, Y, argnums=(0, 1)),
    case("cov_aweights", lambda xp, x, w: xp.cov(x, aweights=w), X, 0.5 + POS[0], argnums=(0, 1),
         fd=True),
    case("cov_fweights_ddof", lambda xp, x: xp.cov(x, fweights=np.array([1, 2, 1, 3]), ddof=0), X),
    case("corrcoef", lambda xp, x: xp.corrcoef(x), X, fd=True),
    case("corrcoef_xy", lambda xp, x, y: xp.corrcoef(x, y), V, V ** 2 + W[0], argnums=(0, 1)),
    case("bincount_weights", _both(lambda w: np.bincount(IDX, weights=w),
                                   lambda w: jnp.bincount(IDX, weights=w, length=4)), V, fd=True),
    case("histogram_weights", lambda xp, w: xp.histogram(X, 5, weights=w)[0], Y, fd=True),
    case("histogram_edges_weights",
         lambda xp, w: xp.histogram(X, np.array([-1.0, -0.2, 0.1, 1.0]), weights=w)[0], Y),
    case("histogram_density", lambda xp, x: xp.histogram(x, 4, density=True), X, fd=True),
    case("nanmedian", lambda xp, x: xp.nanmedian(_nan(xp, x), axis=1), NANS, fd=True),
    case("nanquantile", lambda xp, x: xp.nanquantile(_nan(xp, x), np.array([0.2, 0.7]), axis=0),
         NANS),
    case("nanpercentile", lambda xp, x: xp.nanpercentile(_nan(xp, x), 30.0), NANS),
    case("nancumprod", lambda xp, x: xp.nancumprod(_nan(xp, x), axis=1), NANS, hessian=True),
    case("cumulative_sum", lambda xp, x: xp.cumulative_sum(x, axis=1, include_initial=True), X),
    case("cumulative_prod", lambda xp, x: xp.cumulative_prod(x, axis=0), X),
    case("unwrap", lambda xp, p: xp.unwrap(p), np.cumsum(rand(9, seed=209, low=-3, high=3)),
         fd=True),
    case("i0", lambda xp, x: xp.i0(x * 6.0), X * 2, hessian=True, fd=True),
    # arrays
    case("vdot", lambda xp, a, b: xp.vdot(a, b), X, Y, argnums=(0, 1)),
    case("block", lambda xp, a, b: xp.block([[a, b[:, :1]], [b[:1], a[:1, :1]]]), X, Y,
         argnums=(0, 1)),
    case("broadcast_arrays", lambda xp, a, b: [p * 1.0 for p in xp.broadcast_arrays(a, b)], X, X[0],
         argnums=(0, 1)),
    case("delete", lambda xp, x: xp.delete(x, np.array([0, 2]), axis=1), X),
    case("insert", lambda xp, x, v: xp.insert(x, 2, v, axis=1), X, W, argnums=(0, 1)),
    case("insert_several", lambda xp, x, v: xp.insert(x, np.array([1, 1, 4]), v), V, W,
         argnums=(0, 1)),
    case("compress", lambda xp, x: xp.compress(np.array([True, False, True]), x, axis=0), X),
    case("choose", lambda xp, a, b: xp.choose(np.array([[0, 1, 1, 0]] * 3), [a, b]), X, Y,
         argnums=(0, 1)),
    case("piecewise", lambda xp, x: xp.piecewise(x, [x < 0, x >= 0], [lambda t: t ** 3,
                                                                       lambda t: xp.sin(t)]), X),
    case("apply_along_axis", lambda xp, x: xp.apply_along_axis(lambda r: r * xp.sum(r ** 2), 1, x),
         X),
    case("apply_over_axes", lambda xp, x: xp.apply_over_axes(xp.sum, x ** 2, [0, 1]), X),
    case("diagflat", lambda xp, x: xp.diagflat(x, -1), W),
    case("resize", lambda xp, x: xp.resize(x, (4, 4)), W),
    case("logspace", lambda xp, a, b: xp.logspace(a, b, 5), np.float64(0.3), np.float64(1.2),
         argnums=(0, 1)),
    case("geomspace", lambda xp, a, b: xp.geomspace(a, b, 5), np.float64(0.3), np.float64(4.0),
         argnums=(0, 1), fd=True),
    case("fill_diagonal", _both(_fill_diag, lambda x, v: jnp.fill_diagonal(x * 1.0, v,
                                                                          inplace=False)),
         SQ, W, argnums=(0, 1)),
    case("put", _both(_put, lambda x, v: jnp.put(x * 1.0, np.array([0, 5, 5, 11]), v,
                                                 inplace=False)), X, W, argnums=(0, 1)),
    case("place", _both(_place, lambda x, v: jnp.place(x * 1.0, X > 0, v, inplace=False)), X,
         W[:2], argnums=(0, 1)),
    case("isin_mask", lambda xp, x: xp.where(xp.isin(x, X[0]), x, 2 * x), X),
    case("reshape_F", lambda xp, x: xp.reshape(x, (2, 6), order="F") * xp.arange(12.0).reshape(2, 6),
         X),
    case("ravel_F", lambda xp, x: xp.ravel(x.T, order="F") * xp.arange(12.0), X),
    # linalg
    case("multi_dot", lambda xp, a, b, c: xp.linalg.multi_dot([a, b, c, b.T]), X, Y.T, SQ,
         argnums=(0, 1, 2)),
    case("cond", lambda xp, a: xp.linalg.cond(a), SQ, fd=True),
    case("cond_fro", lambda xp, a: xp.linalg.cond(a, "fro"), SQ),
    case("vector_norm", lambda xp, x: xp.linalg.vector_norm(x, axis=(0, 1), ord=3), X),
    case("matrix_norm", lambda xp, x: xp.linalg.matrix_norm(x, ord=1) + xp.linalg.matrix_norm(x), X),
    case("svdvals", lambda xp, x: xp.linalg.svdvals(x), X, fd=True),
    case("tensorinv", lambda xp, a: xp.linalg.tensorinv(a.reshape(2, 2, 4), 2),
         rand(4, 4, seed=210) + 4 * np.eye(4)),
    case("tensorsolve", lambda xp, a, b: xp.linalg.tensorsolve(a.reshape(3, 3), b), SQ, W,
         argnums=(0, 1)),
    case("linalg_vecdot_trace", lambda xp, a, b: xp.linalg.vecdot(a, b) + xp.linalg.trace(a @ b.T),
         X, Y, argnums=(0, 1)),
]


# the JAX side compiles each case: by default a bounded slice, all with TRACEGRAD_EXHAUSTIVE=1
@pytest.mark.parametrize("fn,args,kw", bounded(CASES, 24))
def test_function(fn, args, kw):
    check(fn, *args, **kw)


def _fd_check(f, args, argnums):
    """tg.grad of a weighted sum of ``f``'s outputs against central differences of
    NumPy's own ``f``."""
    scalar = weighted_sum(lambda xp, *a: f(*a), f(*args))
    s = lambda *a: scalar(np, *a)  # noqa: E731
    g = tg.grad(s, argnums=argnums)(*args)
    for i, gi in zip(argnums, g):
        want = finite_diff_grad(s, args, i)
        np.testing.assert_allclose(gi, want, rtol=1e-6, atol=1e-6 * np.max(np.abs(want)))


@pytest.mark.parametrize("f,args", [
    pytest.param(lambda p: np.roots(p), (np.array([1.0, -0.5, -2.8, 1.2]),), id="roots_real"),
    pytest.param(lambda u, v: np.polydiv(u, v), (V, W[:2]), id="polydiv"),
    pytest.param(lambda x, y: np.polyfit(x, y, 1, cov=True), (XS, YS), id="polyfit_cov"),
    pytest.param(lambda x: np.histogramdd(np.stack([x, x ** 2], 1), bins=3, density=True)[0],
                 (V,), id="histogramdd_density"),
    pytest.param(lambda x, w: np.histogram2d(x, x[::-1], bins=2, weights=w)[0], (V, W[:1] + V),
                 id="histogram2d_weights"),
    pytest.param(lambda a: np.linalg.cond(a, 1), (SQ,), id="cond_1"),
    pytest.param(lambda x: np.sort_complex(x * 1j + x[::-1]).real, (V,), id="sort_complex"),
    pytest.param(lambda a, b: np.union1d(a, b) + 0.0, (V, W), id="union1d"),
    pytest.param(lambda a, b: np.setxor1d(a, b) * 2.0, (V, W), id="setxor1d"),
    pytest.param(lambda x: np.nanargmin(np.where(np.isnan(NANS[:2]), np.nan, x), axis=1) * x[:, 0],
                 (NANS[:2],), id="nanargmin_no_gradient"),
])
def test_against_finite_differences(f, args):
    _fd_check(f, args, tuple(range(len(args))))


def test_nan_positions_are_guards():
    """A compiled nanmedian traces again when the NaNs move (their positions decide the
    graph), and gives NumPy's value both times."""
    f = tg.jit(lambda x: np.nanmedian(x, axis=1))
    a = NANS.copy()
    np.testing.assert_allclose(f(a), np.nanmedian(a, axis=1), rtol=1e-12)
    b = np.where(np.isnan(a), 0.5, np.nan)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = np.nanmedian(b, axis=1)
    np.testing.assert_allclose(f(b), want, rtol=1e-12)


_CALLERS_3X3, _CALLERS_4 = np.zeros((3, 3)), np.zeros(4)


def test_writes_into_plain_arrays_are_refused():
    """Into the caller's plain arrays (an array the function makes is written: see
    test_fresh_arrays.py), and the caller's arrays stay unchanged."""
    for call in (lambda x: np.fill_diagonal(_CALLERS_3X3, x[0]),
                 lambda x: np.put(_CALLERS_4, [0], x[0]),
                 lambda x: np.place(_CALLERS_4, np.ones(4, bool), x)):
        with pytest.raises(tg.TraceError, match="plain NumPy array|lose its gradient"):
            tg.grad(lambda x: call(x) or np.sum(x))(V[:4])
    assert not _CALLERS_3X3.any() and not _CALLERS_4.any()
