"""Every real floating dtype through every transform: gradients keep the input's dtype
(no silent upcast), integer and boolean intermediates carry no gradient, comparisons
used in arithmetic differentiate like JAX, and complex values are refused clearly."""
import numpy as np
import pytest

import tracegrad as tg

from oracles import jax, jnp

FLOATS = [np.float16, np.float32, np.float64, np.longdouble]
JAX_FLOATS = [np.float16, np.float32, np.float64]      # JAX has no longdouble
# tolerance of a result computed in the dtype against the float64 reference
RTOL = {np.dtype(np.float16): 2e-2, np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12,
        np.dtype(np.longdouble): 1e-12}
LONG_IS_WIDER = np.finfo(np.longdouble).eps < np.finfo(np.float64).eps


def f_xp(xp, x):
    """Scalar, with transcendental functions, powers, a reduction and Python constants."""
    return xp.sum(xp.sin(x) * x ** 2 + xp.exp(x) / (1.0 + x * x) + 2.0 * xp.tanh(x)
                  + xp.sqrt(x * x + 1.0)) + xp.mean(x) * x[0]


def fv_xp(xp, x):
    """Vector-valued."""
    return xp.sin(x) * x[0] + x ** 3 - xp.cumsum(x)


f = lambda x: f_xp(np, x)
fv = lambda x: fv_xp(np, x)
X64 = np.array([0.3, -0.5, 0.9])


def expect(actual, expected, dtype, what=""):
    """``actual`` has ``dtype`` and equals ``expected`` to the dtype's tolerance."""
    dtype = np.dtype(dtype)
    actual = np.asarray(actual)
    assert actual.dtype == dtype, f"{what}: dtype {actual.dtype} != {dtype}"
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    scale = float(np.max(np.abs(expected), initial=0.0)) or 1.0
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=RTOL[dtype],
                               atol=RTOL[dtype] * scale, err_msg=what)


# -- every transform keeps the input's dtype ----------------------------------------------
@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: np.dtype(d).name)
def test_every_transform_keeps_the_dtype(dt):
    x = X64.astype(dt)
    v = np.array([1.0, -2.0, 0.5])
    ref_g = tg.grad(f)(X64)
    ref_j = tg.jacobian(fv)(X64)
    ref_h = tg.hessian(f)(X64)

    expect(tg.grad(f)(x), ref_g, dt, "grad")
    value, g = tg.value_and_grad(f)(x)
    expect(value, f(X64), dt, "value_and_grad value")
    expect(g, ref_g, dt, "value_and_grad grad")
    expect(tg.jacobian(fv)(x), ref_j, dt, "jacobian rev")
    expect(tg.jacobian(fv, mode="fwd")(x), ref_j, dt, "jacobian fwd")
    expect(tg.jacobian(fv, chunk_size=2)(x), ref_j, dt, "jacobian rev, chunked")
    expect(tg.hessian(f)(x), ref_h, dt, "hessian")
    expect(tg.grad(lambda y: np.sum(tg.grad(f)(y) * y))(x),
           tg.grad(lambda y: np.sum(tg.grad(f)(y) * y))(X64), dt, "grad of grad")
    out, jv = tg.jvp(fv, (x,), (v.astype(dt),))
    expect(out, fv(X64), dt, "jvp primal")
    expect(jv, ref_j @ v, dt, "jvp tangent")
    out, pullback = tg.vjp(fv, x)
    expect(out, fv(X64), dt, "vjp primal")
    expect(pullback(v.astype(dt))[0], v @ ref_j, dt, "vjp cotangent")
    expect(tg.jit(tg.grad(f))(x), ref_g, dt, "jit(grad)")
    expect(tg.jit(tg.hessian(f))(x), ref_h, dt, "jit(hessian)")


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: np.dtype(d).name)
def test_float64_seeds_do_not_upcast(dt):
    """A float64 tangent or cotangent (the default dtype of np.ones) for a lower-precision
    function still gives results of the function's dtype."""
    x = X64.astype(dt)
    _, jv = tg.jvp(fv, (x,), (np.ones(3),))
    assert jv.dtype == dt
    _, pullback = tg.vjp(fv, x)
    assert pullback(np.ones(3))[0].dtype == dt


@pytest.mark.parametrize("dt", FLOATS, ids=lambda d: np.dtype(d).name)
def test_scalar_and_pytree_arguments_keep_their_dtypes(dt):
    s = dt(0.5)
    expect(tg.grad(lambda s: s * s * np.sin(s))(s), 2 * 0.5 * np.sin(0.5) + 0.25 * np.cos(0.5),
           dt, "0-d scalar")
    params = {"w": X64.astype(dt), "b": np.float64(0.25)}
    g = tg.grad(lambda p: np.sum(np.tanh(p["w"] * p["b"])))(params)
    assert g["w"].dtype == dt and g["b"].dtype == np.float64


@pytest.mark.parametrize("dt", JAX_FLOATS, ids=lambda d: np.dtype(d).name)
def test_against_jax_at_the_same_dtype(dt):
    """JAX (x64 on) keeps float16/float32 too: tracegrad's results have JAX's dtype, and
    the JAX backend of tg.jit gives the same."""
    x = X64.astype(dt)
    fj = lambda x: f_xp(jnp, x)
    fvj = lambda x: fv_xp(jnp, x)
    # every JAX reference in one jit program: one XLA compile, not one per operation
    ref = jax.jit(lambda x: {
        "grad": jax.grad(fj)(x), "jacobian": jax.jacrev(fvj)(x), "jacfwd": jax.jacfwd(fvj)(x),
        "hessian": jax.hessian(fj)(x), "jvp": jax.jvp(fvj, (x,), (x,))[1],
        "vjp": jax.vjp(fvj, x)[1](x)[0]})(x)
    for ours, theirs, what in [
            (tg.grad(f)(x), ref["grad"], "grad"),
            (tg.jacobian(fv)(x), ref["jacobian"], "jacobian"),
            (tg.jacobian(fv, mode="fwd")(x), ref["jacfwd"], "jacobian fwd"),
            (tg.hessian(f)(x), ref["hessian"], "hessian"),
            (tg.jvp(fv, (x,), (x,))[1], ref["jvp"], "jvp"),
            (tg.vjp(fv, x)[1](x)[0], ref["vjp"], "vjp"),
            (tg.jit(tg.grad(f), backend="jax")(x), ref["grad"], "jit(grad) on JAX"),
            (tg.jit(tg.hessian(f), backend="jax")(x), ref["hessian"], "jit(hessian) on JAX")]:
        theirs = np.asarray(theirs)
        assert theirs.dtype == dt, what
        expect(np.asarray(ours), theirs.astype(np.float64), dt, what)


def test_longdouble_on_the_jax_backend_is_refused():
    """JAX has no longdouble: the JAX backend cannot run it (NumPy's backend can)."""
    x = X64.astype(np.longdouble)
    assert tg.jit(tg.grad(f))(x).dtype == np.longdouble
    with pytest.raises((tg.TraceError, TypeError)):
        tg.jit(tg.grad(f), backend="jax")(x)


@pytest.mark.skipif(not LONG_IS_WIDER, reason="longdouble is float64 on this platform")
def test_longdouble_gradients_have_longdouble_precision():
    """Not float64 arithmetic cast at the end: the derivative rules run in longdouble."""
    L = np.longdouble
    x = np.array([L("0.3"), L("0.7"), L("1.1")])
    eps = float(np.finfo(L).eps)
    cases = [
        (lambda x: np.sum(np.sin(x) * x), lambda x: np.cos(x) * x + np.sin(x)),
        (lambda x: np.sum(np.exp(x) / np.sqrt(x)),
         lambda x: np.exp(x) / np.sqrt(x) - L("0.5") * np.exp(x) * x ** L("-1.5")),
        (lambda x: np.sum(np.log1p(x) ** 2), lambda x: 2 * np.log1p(x) / (1 + x)),
        (lambda x: np.sum(x ** x), lambda x: x ** x * (np.log(x) + 1)),
        (lambda x: np.linalg.norm(x), lambda x: x / np.sqrt(np.sum(x * x))),
        (lambda x: np.var(x), lambda x: 2 * (x - np.mean(x)) / 3),
    ]
    for fn, dfn in cases:
        g, want = tg.grad(fn)(x), dfn(x)
        assert g.dtype == L
        assert np.max(np.abs(g - want)) <= 20 * eps * np.max(np.abs(want))


# -- no float64 node in a float32 derivative graph ----------------------------------------
A32 = (np.arange(9.0).reshape(3, 3) / 10 + np.eye(3)).astype(np.float32)
NO_UPCAST = {
    "elementwise": lambda x: np.sin(x) * np.exp(x) / (2.0 + x) + np.sqrt(x * x + 1.0) ** 1.5,
    "log-tanh-arctan2": lambda x: np.log1p(x * x) + np.tanh(x) + np.arctan2(x, 1.5),
    "reductions": lambda x: np.mean(x) * np.var(x) + np.std(x) + np.prod(x) + np.cumsum(x),
    "norm": lambda x: np.linalg.norm(x) * x,
    "where": lambda x: np.where(x > 0, x, 0.0) + (x > 0) * x,
    # int8 promotes with float16 and float32 to themselves (wider ints to float64, in NumPy)
    "integer constants": lambda x: x * np.arange(3, dtype=np.int8) + x * 2 + x ** 2,
    "matmul-einsum": lambda x: A32.astype(x.dtype) @ x + np.einsum("ij,j->i", A32.astype(x.dtype),
                                                                  x * x),
    "abs-sign": lambda x: np.abs(x) + np.sign(x) * x + np.floor(x) * x,
    # max/maximum/clip are in KNOWN_UPCASTS below
}
# Rules that used to put float64 nodes into float32 derivative graphs (fixed; each stays
# checked, and still gives float32 results):
KNOWN_UPCASTS = {
    # ir/prims/reduce.py _max_min: ``hit / np.sum(hit, ...)`` divides a bool array by an
    # int64 count, which NumPy makes float64
    "max": lambda x: np.max(x * x) * x,
    # ir/prims/elementwise.py _chooser: ``np.where(x == out, np.where(y == out, 0.5, 1.0),
    # 0.0)`` builds its masks from Python floats, i.e. float64
    "maximum": lambda x: np.maximum(x, 0.1),
    "clip": lambda x: np.clip(x, -0.2, 0.4),
    # ir/prims/linalg.py: the abstract (shape/dtype) rules of inv, solve, det/logabsdet and
    # cholesky say ``np.result_type(a.dtype, np.float64)``, but NumPy keeps float32; so a
    # graph recorded abstractly (the adjoint pass, hence hessians) marks those nodes
    # float64 and casts around them
    "inv": lambda x: np.linalg.inv(A32 * x[:, None]) @ x,
    "solve": lambda x: np.linalg.solve(A32 * x[0], x),
    "det": lambda x: np.linalg.det(A32 * x[:, None]) * x,
}


def _float_dtypes(graph):
    found = set()
    for _, d in graph.nx.nodes(data=True):
        if np.dtype(d["dtype"]).kind == "f":
            found.add(np.dtype(d["dtype"]))
        for p in d["params"].values():
            if isinstance(p, tg.Graph):
                found |= _float_dtypes(p)
    return found


def _assert_no_upcast(fn, dt):
    x = np.array([0.3, -0.5, 0.9], dtype=dt)
    w = np.array([1.0, 2.0, 3.0], dtype=dt)
    s = lambda x: np.sum(fn(x) * w)
    assert tg.trace(fn, x).node(tg.trace(fn, x).outputs[0])["dtype"] == np.dtype(dt)
    for graph in (tg.trace(tg.grad(s), x), tg.trace(tg.hessian(s), x),
                  tg.trace(lambda x: tg.jvp(fn, (x,), (w,))[1], x)):
        assert _float_dtypes(graph) == {np.dtype(dt)}, str(graph)


@pytest.mark.parametrize("dt", [np.float32, np.float16], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(NO_UPCAST))
def test_derivative_graphs_hold_no_wider_float(name, dt):
    _assert_no_upcast(NO_UPCAST[name], dt)


@pytest.mark.parametrize("name", sorted(KNOWN_UPCASTS))
def test_known_upcasts_in_derivative_rules(name):
    _assert_no_upcast(KNOWN_UPCASTS[name], np.float32)


@pytest.mark.parametrize("name", sorted(KNOWN_UPCASTS))
def test_known_upcasts_still_give_float32_results(name):
    x = np.array([0.3, -0.5, 0.9], dtype=np.float32)
    fn = KNOWN_UPCASTS[name]
    assert tg.grad(lambda x: np.sum(fn(x)))(x).dtype == np.float32
    assert tg.hessian(lambda x: np.sum(fn(x)))(x).dtype == np.float32


def test_numpy_promotion_of_the_forward_value_is_numpy_s():
    """The forward value follows NumPy: float32 times a float64 array is float64 (as
    NumPy computes it); the gradient is still the input's dtype."""
    x = np.array([0.3, -0.5], dtype=np.float32)
    w = np.array([1.0, 2.0])
    value, g = tg.value_and_grad(lambda x: np.sum(x * w))(x)
    assert np.asarray(value).dtype == np.float64 and g.dtype == np.float32
    np.testing.assert_array_equal(g, w.astype(np.float32))
    # Python scalars are weak: float32 stays float32
    value, g = tg.value_and_grad(lambda x: np.sum(x * 2.0 + 1))(x)
    assert np.asarray(value).dtype == np.float32 and g.dtype == np.float32


# -- integer and boolean intermediates; comparisons in arithmetic ----------------------------
XS = np.array([-1.5, -1.0, 0.0, 0.25, 2.0])
PIECEWISE = {
    "(x > 0) * x": (lambda xp, x: (x > 0) * x),
    "(x >= 0) * x**2": (lambda xp, x: (x >= 0) * x ** 2),
    "where(x > 0, x, 0)": (lambda xp, x: xp.where(x > 0, x, 0)),
    "where(x < 0, x**2, sin x)": (lambda xp, x: xp.where(x < 0, x ** 2, xp.sin(x))),
    "bool astype": (lambda xp, x: (x > 0).astype(x.dtype) * x),
    "int astype": (lambda xp, x: x.astype(xp.int64) * x),
    "int32 astype": (lambda xp, x: x.astype(xp.int32) * x ** 2),
    "floor": (lambda xp, x: xp.floor(x) * x),
    "round": (lambda xp, x: xp.round(x) * x),
    "sign": (lambda xp, x: xp.sign(x) * x ** 3),
    "count of positives": (lambda xp, x: xp.sum(x > 0) * x),
    "logical_and": (lambda xp, x: xp.logical_and(x > -1.2, x < 1.0) * x),
    "relu via maximum": (lambda xp, x: xp.maximum(x, 0.0) ** 2),
    "abs away from 0": (lambda xp, x: xp.abs(x - 0.1) * x),
}


@pytest.mark.parametrize("dt", [np.float64, np.float32], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(PIECEWISE))
def test_piecewise_and_integer_intermediates_like_jax(name, dt):
    fn = PIECEWISE[name]
    x = XS.astype(dt)
    ours_f = lambda x: fn(np, x)
    jax_f = lambda x: fn(jnp, x)
    s_ours = lambda x: np.sum(ours_f(x) * np.arange(1, 6))
    s_jax = lambda x: jnp.sum(jax_f(x) * jnp.arange(1, 6))
    # every JAX reference in one jit program: one XLA compile, not one per operation
    ref = jax.jit(lambda x: {
        "grad": jax.grad(s_jax)(x), "jacobian": jax.jacrev(jax_f)(x),
        "jacfwd": jax.jacfwd(jax_f)(x), "hessian": jax.hessian(s_jax)(x),
        "jvp": jax.jvp(jax_f, (x,), (jnp.ones(5, dt),))[1]})(x)
    pairs = [
        (tg.grad(s_ours)(x), ref["grad"], "grad"),
        (tg.jacobian(ours_f)(x), ref["jacobian"], "jacobian"),
        (tg.jacobian(ours_f, mode="fwd")(x), ref["jacfwd"], "jacobian fwd"),
        (tg.hessian(s_ours)(x), ref["hessian"], "hessian"),
        (tg.jvp(ours_f, (x,), (np.ones(5, dt),))[1], ref["jvp"], "jvp"),
        (tg.jit(tg.grad(s_ours))(x), ref["grad"], "jit(grad)"),
        (tg.jit(tg.grad(s_ours), backend="jax")(x), ref["grad"], "jit(grad) on JAX"),
    ]
    # the forward value (and so the jvp) follows NumPy's promotion: an int64 or int32 times
    # float32 is float64 in NumPy (float32 in JAX); derivatives keep the input's dtype
    fwd_dtype = np.asarray(ours_f(x)).dtype
    for ours, theirs, what in pairs:
        ours, theirs = np.asarray(ours), np.asarray(theirs)
        want = fwd_dtype if what == "jvp" else dt
        assert ours.dtype == want and theirs.dtype == dt, what
        expect(ours, theirs.astype(np.float64), want, what)


def test_abs_at_zero_takes_the_zero_subgradient():
    """The one documented difference from JAX here: d|x|/dx at 0 is sign(0) = 0 (JAX
    takes 1); see the abs "at-zero" case in primitive_cases.py."""
    g = tg.grad(lambda x: np.sum(np.abs(x)))(np.array([-1.0, 0.0, 1.0]))
    np.testing.assert_array_equal(g, [-1.0, 0.0, 1.0])


def test_integer_and_boolean_values_have_no_gradient():
    x = np.array([0.5, 1.5, 2.5])
    # an int or bool intermediate is a constant for the derivative
    g = tg.grad(lambda x: np.sum((x * 2).astype(np.int64) * 1.0 + x))(x)
    np.testing.assert_array_equal(g, np.ones(3))
    # integer arguments, outputs and results are refused with a message, not a zero
    with pytest.raises(tg.TraceError, match="only floating-point inputs have gradients"):
        tg.grad(lambda n: np.sum(n * 1.0))(np.arange(3))
    with pytest.raises(tg.TraceError, match="only floating-point inputs have gradients"):
        tg.grad(lambda b: np.sum(b * 1.0))(np.array([True, False]))
    with pytest.raises(tg.TraceError, match="real floating-point output"):
        tg.grad(lambda x: np.sum(x > 1.0))(x)
    with pytest.raises(tg.TraceError, match="floating-point outputs"):
        tg.jacobian(lambda x: x > 1.0)(x)
    # an integer argument outside argnums is fine, and gets no gradient
    g = tg.grad(lambda x, n: np.sum(x ** n), argnums=0)(x, np.int32(3))
    expect(g, 3 * x ** 2, np.float64)
    # jvp takes integer primals (a constant); the tangent follows the float path
    out, t = tg.jvp(lambda x, n: x * n, (x, np.arange(3)), (np.ones(3), np.zeros(3)))
    np.testing.assert_array_equal(t, np.arange(3.0))
