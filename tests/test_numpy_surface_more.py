"""More of NumPy's everyday surface: the ufuncs ``fmod``, ``heaviside``, ``logaddexp2`` and
``sinc`` (``tracegrad/tracer/np_ufuncs.py``), sorting and quantiles (``np_sorting.py``),
shapes (``np_shapes.py``), differences, gradients and interpolation (``np_calculus.py``),
``kron``/``cross``/``convolve`` (``np_products.py``), ``select``/``nan_to_num``
(``np_elementwise.py``), ``linspace`` (``np_arrays.py``), the NaN-ignoring reductions
(``np_nanfunctions.py``) and the whole-array comparisons (``np_comparisons.py``), checked
against NumPy (values), JAX (gradients, x64, JAX's conventions) and central differences,
as in ``test_numpy_surface.py``: each function is written once against ``xp``.
"""
import numpy as np
import pytest

import tracegrad as tg

from oracles import GRAD_RTOL, assert_close, check, finite_diff_grad, jax, jnp, rand

X = rand(3, 4, seed=101)
Y = rand(3, 4, seed=102)
POS = rand(3, 4, seed=103, low=0.5, high=2.0)
V = rand(5, seed=104)
W = rand(3, seed=105)
M3 = rand(2, 3, 4, seed=106)
KNOTS = np.array([-1.0, -0.6, -0.1, 0.3, 0.45, 0.9])


def case(name, fn, *args, **kw):
    return pytest.param(fn, args, kw, id=name)


def _both(np_fn, jax_fn):
    """One function for ``check`` that differs between NumPy and JAX spellings."""
    return lambda xp, *a: np_fn(*a) if xp is np else jax_fn(*a)


def _put(x, v):
    z = x * 1.0
    np.put_along_axis(z, np.array([[1], [3], [0]]), v[:, None] * 2.0, axis=1)
    return z


def _put_jax(x, v):
    return jnp.put_along_axis(x * 1.0, jnp.array([[1], [3], [0]]), v[:, None] * 2.0, axis=1,
                              inplace=False)


def _with_nans(xp, x):
    return xp.where(X > 0.6, xp.nan, x)


CASES = [
    # ufuncs
    case("logaddexp2", lambda xp, x, y: xp.logaddexp2(x, y), X, Y, argnums=(0, 1)),
    case("logaddexp2_hess", lambda xp, x: xp.logaddexp2(x, 0.3), X, hessian=True, fd=True),
    case("fmod", lambda xp, x, y: xp.fmod(x * 5.0, y), X, POS, argnums=(0, 1), fd=True),
    case("fmod_neg_divisor", lambda xp, x: xp.fmod(x * 5.0, -0.7), X),
    case("mod", lambda xp, x, y: xp.mod(x * 5.0, y), X, POS, argnums=(0, 1)),
    case("heaviside", lambda xp, x, h: xp.heaviside(x, h) * 2.0 + x,
         np.array([-1.0, 0.0, 0.5, 0.0, -0.0]), rand(5, seed=107), argnums=(0, 1)),
    case("sinc", lambda xp, x: xp.sinc(x * 3.0), X, hessian=True, fd=True),
    case("sinc_at_zero", lambda xp, x: xp.sinc(x), np.array([0.0, 0.5, -1.5])),
    case("exp2", lambda xp, x: xp.exp2(x), X, hessian=True),
    case("deg2rad_rad2deg", lambda xp, x: xp.deg2rad(x) * xp.rad2deg(x) + xp.radians(x)
         + xp.degrees(x), X),
    # sorting and order statistics
    case("sort", lambda xp, x: xp.sort(x), X, hessian=True, fd=True),
    case("sort_axis0", lambda xp, x: xp.sort(x, axis=0), X),
    case("sort_flat", lambda xp, x: xp.sort(x, axis=None), X),
    case("sort_3d", lambda xp, x: xp.sort(x, axis=1), M3),
    case("argsort", lambda xp, x: xp.argsort(x, axis=0), X),
    case("argsort_ties", lambda xp, x: xp.argsort(x), np.array([1.0, 0.0, 1.0, 0.0, 1.0])),
    case("take_sorted", lambda xp, x: xp.take_along_axis(x, xp.argsort(x, axis=1), axis=1) * Y,
         X),
    case("median", lambda xp, x: xp.median(x), X, hessian=True, fd=True),
    case("median_odd_axis", lambda xp, x: xp.median(x, axis=0), X),
    case("median_even_axis_keepdims", lambda xp, x: xp.median(x, axis=1, keepdims=True), X),
    case("median_axes", lambda xp, x: xp.median(x, axis=(0, 2)), M3),
    case("quantile", lambda xp, x: xp.quantile(x, 0.3), X, fd=True),
    case("quantile_list_axis", lambda xp, x: xp.quantile(x, np.array([0.0, 0.25, 0.9, 1.0]),
                                                         axis=1), X),
    case("quantile_keepdims", lambda xp, x: xp.quantile(x, 0.7, axis=0, keepdims=True), M3),
    case("percentile", lambda xp, x: xp.percentile(x, 40.0, axis=1), X, hessian=True),
    case("percentile_list", lambda xp, x: xp.percentile(x, np.array([10.0, 50.0])), V),
    *[case(f"quantile_{m}", (lambda m: lambda xp, x: xp.quantile(x, np.array([0.1, 0.35, 0.5, 0.8]),
                                                                 axis=0, method=m))(m), X)
      for m in ("linear", "lower", "higher", "nearest", "midpoint")],
    case("searchsorted", lambda xp, a, v: xp.searchsorted(a, v), KNOTS, X),
    case("searchsorted_right", lambda xp, v: xp.searchsorted(KNOTS, v, side="right"),
         np.array([-0.6, 0.0, 0.45, 2.0, -3.0])),
    case("digitize", lambda xp, x: xp.digitize(x, KNOTS), X),
    case("digitize_right", lambda xp, x: xp.digitize(x, KNOTS, right=True),
         np.array([-0.6, 0.0, 0.45, 2.0])),
    case("digitize_decreasing", lambda xp, x: xp.digitize(x, KNOTS[::-1]), X),
    # shapes
    case("rollaxis", lambda xp, x: xp.rollaxis(x, 2) * 1.0, M3),
    case("rollaxis_start", lambda xp, x: xp.rollaxis(x, 0, 3), M3),
    case("vsplit", lambda xp, x: [p * (i + 1.0) for i, p in enumerate(xp.vsplit(x, [1]))], X),
    case("hsplit", lambda xp, x: [p * (i + 1.0) for i, p in enumerate(xp.hsplit(x, 2))], X),
    case("dsplit", lambda xp, x: [p * (i + 1.0) for i, p in enumerate(xp.dsplit(x, [1, 3]))], M3),
    case("array_split_unequal", lambda xp, x: [p * (i + 1.0) for i, p in
                                               enumerate(xp.array_split(x, 3, axis=1))], X),
    case("array_split_flat", lambda xp, x: [p * (i + 1.0) for i, p in
                                            enumerate(xp.array_split(x, 3))], V),
    case("column_stack", lambda xp, x, y: xp.column_stack([x, y, x * y]), V, V[::-1].copy(),
         argnums=(0, 1)),
    case("column_stack_2d", lambda xp, x: xp.column_stack([x, x[:, :1]]), X),
    case("row_stack", _both(lambda x: np.vstack([x, x[0]]), lambda x: jnp.vstack([x, x[0]])), X),
    case("dstack", lambda xp, x: xp.dstack([x, x * 2.0]), X),
    case("diagonal", lambda xp, x: xp.diagonal(x, 1), X),
    case("diagonal_axes", lambda xp, x: xp.diagonal(x, -1, axis1=2, axis2=1), M3),
    case("flipud", lambda xp, x: xp.flipud(x) * Y, X),
    case("fliplr", lambda xp, x: xp.fliplr(x) * Y, X),
    *[case(f"rot90_k{k}", (lambda k: lambda xp, x: xp.rot90(x, k))(k), X) for k in (1, 2, 3, -1)],
    case("rot90_axes", lambda xp, x: xp.rot90(x, 1, axes=(2, 0)), M3),
    case("append", lambda xp, x: xp.append(x, V), X),
    case("append_axis", lambda xp, x: xp.append(x, x[:1] * 2.0, axis=0), X),
    case("meshgrid", lambda xp, x, y: xp.meshgrid(x, y), V, W, argnums=(0, 1)),
    case("meshgrid_ij_sparse", lambda xp, x, y: [g * 1.0 for g in
                                                 xp.meshgrid(x, y, V, indexing="ij", sparse=True)],
         W, W * 2.0, argnums=(0, 1)),
    case("take", lambda xp, x: xp.take(x, np.array([3, 0, 3, 11])), X),
    case("take_axis", lambda xp, x: xp.take(x, np.array([[2, 0], [1, 1]]), axis=1), X),
    case("take_along_axis", lambda xp, x: xp.take_along_axis(x, np.array([[0, 2], [1, 1],
                                                                          [3, 0]]), axis=1), X),
    case("take_along_axis_none", lambda xp, x: xp.take_along_axis(x, np.array([5, 0, 5]),
                                                                  axis=None), X),
    case("put_along_axis", _both(_put, _put_jax), X, W, argnums=(0, 1)),
    # arithmetic
    case("diff", lambda xp, x: xp.diff(x), X, hessian=True),
    case("diff_n2_axis0", lambda xp, x: xp.diff(x, n=2, axis=0), X),
    case("diff_prepend_append", lambda xp, x: xp.diff(x, prepend=0.5, append=x[:, :1]), X),
    case("ediff1d", lambda xp, x: xp.ediff1d(x, to_begin=np.array([1.0])), X),
    case("gradient", lambda xp, x: xp.gradient(x), X),
    case("gradient_1d_spacing", lambda xp, x: xp.gradient(x, 0.3), V, fd=True),
    case("gradient_axis", lambda xp, x: xp.gradient(x, 2.0, axis=1), M3),
    case("gradient_coords", lambda xp, x: xp.gradient(x, np.array([0.0, 0.4, 0.5, 1.3]),
                                                      axis=-1), X),
    case("kron", lambda xp, a, b: xp.kron(a, b), X[:2, :3], W, argnums=(0, 1)),
    case("kron_2d", lambda xp, a, b: xp.kron(a, b), X[:2], Y[:2, :2], argnums=(0, 1),
         fd=True),
    case("cross", lambda xp, a, b: xp.cross(a, b), X[:, :3], Y[:, 1:], argnums=(0, 1),
         fd=True),
    case("cross_hessian", lambda xp, a: xp.cross(a, a ** 2), W, hessian=True),
    case("cross_axis", lambda xp, a, b: xp.cross(a, b, axis=0), X[:, :3], Y[:, :3],
         argnums=(0, 1)),
    case("cross_broadcast", lambda xp, a, b: xp.cross(a, b), X[:, :3], W, argnums=(0, 1)),
    case("select", lambda xp, x: xp.select([x > 0.5, x < -0.2], [x ** 2, xp.sin(x)], x * 3.0),
         X),
    case("select_default", lambda xp, x: xp.select([x > 0], [x]), X),
    case("nan_to_num", lambda xp, x: xp.nan_to_num(xp.log(x)), X),
    case("nan_to_num_values", lambda xp, x: xp.nan_to_num(x / xp.where(x > 0, 0.0, 1.0),
                                                          nan=2.0, posinf=5.0, neginf=-7.0), X,
         grad=False),
    case("cumprod", lambda xp, x: xp.cumprod(x, axis=1), X, hessian=True, fd=True),
    case("cumprod_flat_zero", lambda xp, x: xp.cumprod(x * np.array([1, 0, 1, 1.0])), X,
         hessian=True),
    case("nansum", lambda xp, x: xp.nansum(_with_nans(xp, x), axis=0), X),
    case("nanmean", lambda xp, x: xp.nanmean(_with_nans(xp, x), axis=1), X, hessian=True),
    case("nanmean_all", lambda xp, x: xp.nanmean(_with_nans(xp, x)), X),
    case("nanprod", lambda xp, x: xp.nanprod(_with_nans(xp, x), axis=0), X),
    case("nanmax", lambda xp, x: xp.nanmax(_with_nans(xp, x), axis=1), X),
    case("nanmin", lambda xp, x: xp.nanmin(_with_nans(xp, x)), X),
    case("nanvar", lambda xp, x: xp.nanvar(_with_nans(xp, x), axis=0), X),
    case("nanstd", lambda xp, x: xp.nanstd(_with_nans(xp, x), ddof=1), X),
    case("nancumsum", lambda xp, x: xp.nancumsum(_with_nans(xp, x), axis=1), X),
    case("interp", lambda xp, x, fp: xp.interp(x, KNOTS, fp), X * 1.2, rand(6, seed=108),
         argnums=(0, 1), fd=True),
    case("interp_xp", lambda xp, knots: xp.interp(X * 1.2, knots, xp.cos(knots * 3.0)), KNOTS,
         fd=True),
    case("interp_left_right", lambda xp, x: xp.interp(x, KNOTS, xp.sin(KNOTS), left=-3.0,
                                                      right=4.0), X * 1.5),
    case("interp_fp_hessian", lambda xp, fp: xp.interp(X, KNOTS, fp ** 2), rand(6, seed=109),
         hessian=True),
    case("interp_period", lambda xp, x, fp: xp.interp(x * 3.0, KNOTS, fp, period=1.5), X,
         rand(6, seed=110), argnums=(0, 1), fd=True),
    case("interp_complex_fp", lambda xp, fp: xp.real(xp.interp(X, KNOTS, fp * (1 + 2j)))
         + xp.imag(xp.interp(X, KNOTS, fp * (1 + 2j))), rand(6, seed=111)),
    *[case(f"convolve_{mode}_{n}_{m}", (lambda mode: lambda xp, a, v: xp.convolve(a, v, mode))(
        mode), rand(n, seed=110 + n), rand(m, seed=120 + m), argnums=(0, 1))
      for mode in ("full", "same", "valid") for n, m in ((5, 3), (3, 5), (4, 4), (1, 3))],
    *[case(f"correlate_{mode}_{n}_{m}", (lambda mode: lambda xp, a, v: xp.correlate(a, v, mode))(
        mode), rand(n, seed=130 + n), rand(m, seed=140 + m), argnums=(0, 1))
      for mode in ("full", "same", "valid") for n, m in ((5, 3), (3, 6), (4, 4), (6, 1))],
    case("convolve_hessian", lambda xp, a: xp.convolve(a, a ** 2), V, hessian=True, fd=True),
    case("linspace", lambda xp, a, b: xp.linspace(a, b, 7), np.float64(-0.4), np.float64(1.3),
         argnums=(0, 1), hessian=True),
    case("linspace_arrays_axis", lambda xp, a, b: xp.linspace(a, b, 4, endpoint=False, axis=1),
         V, W[:1], argnums=(0, 1)),
    case("linspace_stop_only", lambda xp, b: xp.linspace(0.0, b, 5) ** 2, np.float64(2.5),
         fd=True),
    case("trapezoid", lambda xp, y: xp.trapezoid(y, dx=0.5), X),
    case("trapezoid_x", lambda xp, y: xp.trapezoid(y, np.array([0.0, 0.2, 0.9]), axis=0), X),
]


@pytest.mark.parametrize("fn,args,kw", CASES)
def test_function(fn, args, kw):
    check(fn, *args, **kw)


def test_gradient_edge_order_2():
    """JAX's jnp.gradient has no edge_order=2: values against NumPy, gradients against
    central differences (and the exact linearity: the Jacobian is constant)."""
    for f in (lambda x: np.gradient(x, 0.3, edge_order=2),
              lambda x: np.gradient(x, np.array([0.0, 0.4, 0.5, 1.3]), axis=1, edge_order=2),
              lambda x: np.gradient(x, edge_order=2)):
        x = X
        out = tg.vjp(f, x)[0]
        assert_close(out, f(x), 1e-12)
        w = [rand(*np.shape(o), seed=150 + k) for k, o in enumerate(_leaves(f(x)))]
        s = lambda x: sum(np.sum(o * wk) for o, wk in zip(_leaves(f(x)), w))
        g = tg.grad(s)(x)
        np.testing.assert_allclose(g, finite_diff_grad(s, (x,), 0), rtol=1e-6, atol=1e-6)
        assert_close(tg.hessian(s)(x), np.zeros(x.shape * 2), 1e-12)


def _leaves(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def test_partition_is_a_valid_partition():
    for kth, axis in ((1, -1), (2, 0), ([0, 3], 1)):
        out = tg.vjp(lambda x: np.partition(x, kth, axis=axis), X)[0]
        ref = np.partition(X, kth, axis=axis)
        np.testing.assert_array_equal(np.sort(out, axis=axis), np.sort(ref, axis=axis))
        for k in np.atleast_1d(kth):
            np.testing.assert_array_equal(np.take(out, k, axis=axis), np.take(ref, k, axis=axis))
    # the gradient of a partitioned entry is the gradient of that order statistic
    g = tg.grad(lambda x: np.sum(np.partition(x, 2, axis=1)[:, 2]))(X)
    gj = jax.grad(lambda x: jnp.sum(jnp.sort(x, axis=1)[:, 2]))(X)
    assert_close(g, gj, GRAD_RTOL)
    idx = tg.jit(lambda x: np.argpartition(x, 1))(X) if hasattr(tg, "jit") else None
    if idx is not None:
        np.testing.assert_array_equal(np.take_along_axis(X, idx, -1)[:, 1],
                                      np.partition(X, 1)[:, 1])


def test_integer_results_carry_no_gradient():
    """argsort, searchsorted, digitize: integer results; as in JAX, they contribute nothing."""
    for f, fj in [
            (lambda x: np.sum(x * np.argsort(x, axis=1)),
             lambda x: jnp.sum(x * jnp.argsort(x, axis=1))),
            (lambda x: np.sum(x * np.searchsorted(KNOTS, x)),
             lambda x: jnp.sum(x * jnp.searchsorted(KNOTS, x))),
            (lambda x: np.sum(x ** 2 * np.digitize(x, KNOTS)),
             lambda x: jnp.sum(x ** 2 * jnp.digitize(x, KNOTS)))]:
        assert_close(tg.grad(f)(X), jax.grad(fj)(X), GRAD_RTOL)
        assert_close(tg.hessian(f)(X), jax.hessian(fj)(X), GRAD_RTOL)


def test_heaviside_has_zero_gradient_in_x1():
    g = tg.grad(lambda x: np.sum(np.heaviside(x, 0.5)))(X)
    np.testing.assert_array_equal(g, np.zeros_like(X))
    assert_close(g, jax.grad(lambda x: jnp.sum(jnp.heaviside(x, 0.5)))(X), GRAD_RTOL)


def test_unique_values_carry_every_occurrences_gradient():
    x = np.array([0.5, -1.0, 0.5, 2.0, -1.0, np.nan, np.nan])
    out = tg.vjp(lambda x: np.unique(x * 2.0), x)[0]
    np.testing.assert_array_equal(out, np.unique(x * 2.0))
    # d/dx_i of sum(unique(x)**2) is 2 * x_i at every occurrence; NaNs are not distinct
    g = tg.grad(lambda x: np.nansum(np.unique(x) ** 2) + np.sum(x[:2]))(x)
    np.testing.assert_array_equal(g, np.array([2.0, -1.0, 1.0, 4.0, -2.0, 0, 0]))
    assert tg.vjp(lambda x: np.unique(x), np.zeros(0))[0].shape == (0,)
    counts = tg.jit(lambda x: np.unique(x, return_counts=True))(x)
    for got, want in zip(counts, np.unique(x, return_counts=True)):
        np.testing.assert_array_equal(got, want)
        assert got.dtype == want.dtype


PLAIN_3x4 = np.zeros((3, 4))    # a caller's array: writing traced values into it is refused


def test_put_along_axis_rebinds_like_setitem():
    def f(x):
        z = np.zeros_like(x)
        assert np.put_along_axis(z, np.argmax(x, axis=1)[:, None], x[:, :1] * 3.0, axis=1) is None
        return np.sum(z * Y)
    g = tg.grad(f)(X)
    gj = jax.grad(lambda x: jnp.sum(jnp.put_along_axis(
        jnp.zeros_like(x), jnp.argmax(x, axis=1)[:, None], x[:, :1] * 3.0, axis=1,
        inplace=False) * Y))(X)
    assert_close(g, gj, GRAD_RTOL)
    with pytest.raises(tg.TraceError, match="plain NumPy array"):
        tg.grad(lambda x: np.put_along_axis(PLAIN_3x4, np.zeros((3, 1), int), x[:, :1],
                                            axis=1) or np.sum(x))(X)


@pytest.mark.parametrize("which", ["allclose", "array_equal", "array_equiv", "isclose_all"])
def test_comparisons_are_guards(which):
    test = {"allclose": lambda x: np.allclose(x, X),
            "array_equal": lambda x: np.array_equal(x, X),
            "array_equiv": lambda x: np.array_equiv(x, X[0]) or np.array_equiv(x, X),
            "isclose_all": lambda x: bool(np.all(np.isclose(x, X, atol=0.0)))}[which]

    def f(x):
        return np.sum(x ** 2) if test(x) else np.sum(x ** 3)
    # the equality holds: the branch taken is not the function near X (issue 22), and
    # differentiating it is refused (tests/test_equality_branches.py)
    with pytest.raises(tg.TraceError, match="exact equality"):
        tg.grad(f)(X)
    assert_close(tg.grad(f)(X + 1.0), 3 * (X + 1.0) ** 2, GRAD_RTOL)
    assert_close(tg.jit(f)(X), np.sum(X ** 2), GRAD_RTOL)
    graph = tg.trace(f, X)
    assert graph.guards, "the comparison's outcome is recorded as a guard"


def test_isclose_is_a_traced_boolean_array():
    def f(x):
        close = np.isclose(x, np.array([0.0, 1.0, np.inf, np.nan]), equal_nan=True)
        assert isinstance(close, tg.tracer.Tracer) and close.dtype == bool
        return np.where(close, x * 2.0, x)
    x = np.array([1e-9, 1.1, np.inf, np.nan])
    out = tg.vjp(f, x)[0]
    np.testing.assert_array_equal(out, np.where(np.isclose(x, [0, 1, np.inf, np.nan],
                                                           equal_nan=True), x * 2, x))


def test_float32_stays_float32():
    x32 = X.astype(np.float32)
    for f in [lambda x: np.sort(x, axis=0) * np.median(x),
              lambda x: np.cumprod(x, axis=1),
              lambda x: np.interp(x, KNOTS.astype(np.float32), np.sin(KNOTS).astype(np.float32)),
              lambda x: np.convolve(x[0], x[1]),
              lambda x: np.logaddexp2(x, x * 2.0) + np.fmod(x, np.float32(0.3))]:
        out = tg.vjp(f, x32)[0]
        assert out.dtype == f(x32).dtype    # NumPy's: float32 (np.interp: always float64)
        g = tg.grad(lambda x: np.sum(f(x)))(x32)
        assert g.dtype == np.float32


@pytest.mark.parametrize("call, name", [
    (lambda x: np.fix(x), "np.fix"),
    (lambda x: np.interp(x, KNOTS, KNOTS, period=0.0), "period must be a non-zero"),
    (lambda x: np.quantile(x, 0.5, method="weibull"), "weibull"),
    (lambda x: np.sort(x, order="f"), "order"),
    (lambda x: np.quantile(x, x[0, 0] * 0 + 0.5), "constant q"),
    (lambda x: np.quantile(x, [0.2, x[0, 0] * 0 + 0.5]), "np.quantile on traced values needs a "
                                                          "constant q"),
    (lambda x: np.nanquantile(x, [0.2, x[0, 0] * 0 + 0.5]), "np.nanquantile on traced values "
                                                             "needs a constant q"),
])
def test_unsupported_raise_trace_error(call, name):
    with pytest.raises(tg.TraceError, match=name):
        tg.grad(lambda x: np.sum(call(x)))(X)


def test_second_order_through_sort_and_quantile():
    f = lambda xp, x: xp.sum(xp.sort(x ** 3, axis=0)[1] * xp.quantile(x, 0.4, axis=1)[:, None])
    check(f, X, hessian=True, fd=True)
    # forward mode too
    t = rand(3, 4, seed=160)
    out, tan = tg.jvp(lambda x: np.median(np.sin(x), axis=0), (X,), (t,))
    outj, tanj = jax.jvp(lambda x: jnp.median(jnp.sin(x), axis=0), (X,), (t,))
    assert_close(out, outj, 1e-12)
    assert_close(tan, tanj, GRAD_RTOL)
