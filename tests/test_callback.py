"""``tg.pure_callback``: a Python function on concrete values inside a trace, with declared
result shapes; derivatives through ``tg.custom_vjp`` (checked against finite differences);
``tg.jit`` on both backends; clear errors for a wrong declaration, a derivative asked of
the callback itself and a JSON save."""
import numpy as np
import pytest
from conftest import assert_close, fd_vjp

import tracegrad as tg

X = np.array([0.3, -1.2, 2.0, 0.7])
BACKENDS = ["numpy", "jax"]


def host_sort(x):
    assert type(x) is np.ndarray      # concrete values, never tracers
    return np.sort(x)


def spec(x):
    return tg.ShapeDtypeStruct(np.shape(x), x.dtype)


def test_values_inside_and_outside_a_trace():
    f = lambda x: tg.pure_callback(host_sort, spec(x), x) * np.arange(4.0)  # noqa: E731
    want = np.sort(X) * np.arange(4.0)
    assert_close(f(X), want, 0.0, "outside a trace")
    graph = tg.trace(f, X)
    assert "pure_callback" in graph.ops()
    assert_close(graph(X[::-1].copy()), want, 0.0, "the graph runs the function again")
    # np.empty(...) declares a result just as well
    g = lambda x: tg.pure_callback(host_sort, np.empty(4), x)  # noqa: E731
    assert_close(tg.jit(g)(X), np.sort(X), 0.0, "np.empty declaration")


@pytest.mark.parametrize("backend", BACKENDS)
def test_jit_pytrees_and_several_results(backend):
    def stats(d, scale):
        return {"lo": np.min(d["x"]) * scale, "both": (np.sort(d["x"]), d["y"].astype(np.float32))}

    def f(x, y):
        out = tg.pure_callback(stats, {"lo": tg.ShapeDtypeStruct((), np.float64),
                                       "both": (spec(x), tg.ShapeDtypeStruct((2,), np.float32))},
                               {"x": x, "y": y}, 2.0)
        return out["lo"] + np.sum(out["both"][0]) + np.sum(out["both"][1])

    y = np.array([1.5, 2.5])
    want = 2 * np.min(X) + np.sum(X) + 4.0
    jitted = tg.jit(f, backend=backend)
    assert_close(jitted(X, y), want, 1e-12, backend)
    assert_close(jitted(X + 1.0, y), want + 6.0, 1e-12, "the compiled function calls it anew")


@tg.custom_vjp
def host_tanh(x):
    return tg.pure_callback(np.tanh, spec(x), x)


def _tanh_fwd(x):
    y = host_tanh(x)
    return y, y


def _tanh_bwd(y, g):
    # the VJP calls back too: 1 - tanh² computed on the host
    return (g * tg.pure_callback(lambda v: 1.0 - v * v, spec(y), y),)


host_tanh.defvjp(_tanh_fwd, _tanh_bwd)


@pytest.mark.parametrize("backend", [None, *BACKENDS])
def test_gradients_through_custom_vjp(backend):
    def loss(x):
        return np.sum(host_tanh(x * x) * X)

    grad = tg.grad(loss) if backend is None else tg.jit(tg.grad(loss), backend=backend)
    assert_close(grad(X), fd_vjp(loss, [X], 1.0)[0], 1e-7, "vs finite differences", floor=1.0)
    assert_close(grad(X), 2 * X * X * (1 - np.tanh(X * X) ** 2), 1e-12, "the formula")


def test_a_callback_without_a_rule_has_no_derivative():
    f = lambda x: np.sum(tg.pure_callback(host_sort, spec(x), x) * X)  # noqa: E731
    with pytest.raises(tg.TraceError, match=r"pure_callback\(host_sort\) has no derivative.*"
                                            r"tg\.custom_vjp"):
        tg.grad(f)(X)
    with pytest.raises(tg.TraceError, match="has no derivative"):
        tg.jvp(f, (X,), (X,))
    # integer results and stopped gradients need none
    g = lambda x: np.sum(x * tg.pure_callback(np.argsort, tg.ShapeDtypeStruct((4,), np.int64),  # noqa: E731
                                              x))
    assert_close(tg.grad(g)(X), np.argsort(X).astype(float), 0.0, "integer result")


def test_wrong_declarations_are_clear_errors():
    with pytest.raises(tg.TraceError, match=r"returned shape \(3,\) for result 0, but "
                                            r"result_shape_dtypes declares \(4,\)"):
        tg.jit(lambda x: tg.pure_callback(lambda v: v[:3], spec(x), x))(X)
    with pytest.raises(tg.TraceError, match="structure"):
        tg.trace(lambda x: tg.pure_callback(lambda v: (v, v), spec(x), x), X)
    with pytest.raises(tg.TraceError, match=r"\.shape and \.dtype"):
        tg.trace(lambda x: tg.pure_callback(host_sort, 4, x), X)
    with pytest.raises(tg.TraceError, match="returned dtype complex128"):
        tg.trace(lambda x: tg.pure_callback(lambda v: v + 1j, spec(x), x), X)


def test_json_save_refuses_a_callback():
    graph = tg.trace(lambda x: tg.pure_callback(host_sort, spec(x), x), X)
    with pytest.raises(tg.TraceError, match="tg.pure_callback functions .* have no JSON form"):
        graph.to_json()


@pytest.mark.parametrize("vectorized", [False, True])
def test_vmap(vectorized):
    calls = []

    def host(v):
        calls.append(v.shape)
        return np.sort(v, axis=-1)

    f = tg.vmap(lambda x: tg.pure_callback(host, spec(x), x, vectorized=vectorized))
    xs = np.stack([X, X[::-1] * 2.0, -X])
    assert_close(f(xs), np.sort(xs, axis=-1), 0.0, "rows")
    assert ((3, 4) in calls) == vectorized


# (what the callback returns, the declared shape and dtype): JAX refuses every one whose
# dtype or shape is not exactly the declared one, never casting
MISMATCHES = [
    (np.ones(2, np.float64), (2,), np.float32),
    (np.ones(2, np.float32), (2,), np.float64),
    (np.ones(2, np.int64), (2,), np.float64),
    (np.ones(2, np.int32), (2,), np.int64),
    (np.ones(2, np.complex128), (2,), np.float64),
    (np.ones(2, bool), (2,), np.int64),
    (np.ones(3), (2,), np.float64),
    (np.ones((2, 1)), (2,), np.float64),
    (1.0, (), np.float32),
    (1, (), np.float64),
    (1.0, (), np.float64),              # accepted by both: a Python float is float64
    (np.ones(2, np.float32), (2,), np.float32),
]


@pytest.mark.parametrize("case", MISMATCHES, ids=lambda c: f"{np.asarray(c[0]).dtype}"
                         f"{np.shape(c[0])}-as-{np.dtype(c[2]).name}{c[1]}")
@pytest.mark.parametrize("how", ["eager", "jit", "jit-jax"])
def test_result_dtype_and_shape_mismatches_are_refused_as_jax_does(case, how):
    import jax
    import jax.numpy as jnp
    value, shape, dtype = case
    x = np.ones(2)
    jf = lambda v: jax.pure_callback(lambda _: value, jax.ShapeDtypeStruct(shape, dtype), v)  # noqa: E731
    try:
        jax.block_until_ready(jf(jnp.asarray(x)))
        jax_error = None
    except Exception as e:  # noqa: BLE001 - JAX raises JaxRuntimeError
        jax_error = str(e)
    f = lambda v: tg.pure_callback(lambda _: value, tg.ShapeDtypeStruct(shape, dtype), v)  # noqa: E731
    run = {"eager": lambda v: f(v), "jit": tg.jit(f), "jit-jax": tg.jit(f, backend="jax")}[how]
    if jax_error is None:
        out = np.asarray(run(x))
        assert out.dtype == np.dtype(dtype) and out.shape == shape
        return
    kind = "dtype" if "Incorrect output dtype" in jax_error else "shape"
    assert f"Incorrect output {kind}" in jax_error
    with pytest.raises(tg.TraceError, match=f"returned {kind}"):
        np.asarray(run(x))
