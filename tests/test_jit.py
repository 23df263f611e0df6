"""tg.jit: the cache, guards, retracing, both backends, composition with transforms."""
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.runtime import run

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

X = np.array([1.0, 2.0])
Y = np.array([5.0, 7.0])


def loss(w, b):
    return np.sum((w * X + b - Y) ** 2)


def test_jit_of_grad_gives_the_seed_numbers_and_caches():
    g = tg.jit(tg.grad(loss, argnums=(0, 1)))
    assert g(1.0, 0.0) == (-28.0, -18.0)
    assert g(2.0, 0.0) == (-18.0, -12.0)
    assert g.cache_size == 1  # same signature: one specialisation


def test_cache_keys_on_shape_and_dtype():
    f = tg.jit(lambda x: np.sum(x * x))
    f(np.ones(3))
    f(np.ones(3) * 2)
    assert f.cache_size == 1
    f(np.ones(4))
    f(np.ones(3, dtype=np.float32))
    assert f.cache_size == 3
    assert f(np.ones(3, dtype=np.float32)).dtype == np.float32


def test_pytree_arguments_and_results():
    @tg.jit
    def f(params, x):
        return {"y": params["w"] @ x + params["b"], "n": np.sum(x)}

    params = {"w": np.eye(2) * 3, "b": np.ones(2)}
    out = f(params, np.array([1.0, 2.0]))
    np.testing.assert_allclose(out["y"], [4.0, 7.0])
    assert out["n"] == 3.0


def test_guards_pick_the_branch_for_each_input():
    calls = []

    @tg.jit
    def f(x):
        calls.append(1)
        if x.sum() > 0:
            return x * 2
        return x * 3

    pos, neg = np.ones(3), -np.ones(3)
    for _ in range(3):  # alternate: every result must be right
        np.testing.assert_array_equal(f(pos), 2 * pos)
        np.testing.assert_array_equal(f(neg), 3 * neg)
    assert f.cache_size == 2
    assert len(calls) == 2  # traced once per branch, then served from the cache


def test_loop_counts_from_int_arguments_are_guards():
    @tg.jit
    def power(x, n):
        y = x
        for _ in range(n - 1):
            y = y * x
        return y

    x = np.array([2.0, 3.0])
    np.testing.assert_array_equal(power(x, 3), x ** 3)
    np.testing.assert_array_equal(power(x, 2), x ** 2)
    np.testing.assert_array_equal(power(x, 3), x ** 3)
    assert power.cache_size == 2


def test_boolean_mask_guard():
    @tg.jit
    def f(x):
        return np.sum(x[x > 0])

    assert f(np.array([1.0, -1.0, 2.0])) == 3.0
    assert f(np.array([-1.0, 4.0, 2.0])) == 6.0  # another mask: retraced, not reused
    assert f(np.array([1.0, -1.0, 5.0])) == 6.0


def test_static_argnums_specialise_on_value():
    f = tg.jit(lambda x, mode: x * 2 if mode == "double" else x * 3, static_argnums=1)
    assert f(np.ones(2), "double")[0] == 2.0
    assert f(np.ones(2), "triple")[0] == 3.0
    assert f.cache_size == 2


def test_retracing_is_bounded_with_a_warning(monkeypatch):
    monkeypatch.setattr("tracegrad.transforms.jit.MAX_SPECIALIZATIONS", 3)

    @tg.jit
    def f(x, n):
        for _ in range(n):  # a loop count: each value of n is a guard
            x = x + 1.0
        return x

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 7):
            assert f(np.zeros(2), n)[0] == n
    assert f.cache_size == 3
    assert any(issubclass(w.category, tg.RetraceWarning) for w in caught)


def test_lower_gives_graph_and_readable_source():
    g = tg.jit(tg.grad(loss))
    lowered = g.lower(1.0, 0.0)
    assert isinstance(lowered.graph, tg.Graph)
    text = lowered.as_text()
    assert text.startswith("def ")
    assert "test_jit.py:" in text  # statements carry the user's line
    compile(text, "<check>", "exec")  # it is valid Python
    np.testing.assert_allclose(run(lowered.graph, [np.float64(1.0), np.float64(0.0)])[0], -28.0)


def test_grad_of_jit_and_jit_of_hessian():
    def f(v):
        return np.sum(np.sin(v) * v ** 2)

    v = np.array([0.3, -1.2, 2.0])
    np.testing.assert_allclose(tg.grad(tg.jit(f))(v), tg.grad(f)(v), rtol=1e-13)
    np.testing.assert_allclose(tg.jit(tg.hessian(f))(v), tg.hessian(f)(v), rtol=1e-13)
    expected = jax.hessian(lambda v: jnp.sum(jnp.sin(v) * v ** 2))(v)
    np.testing.assert_allclose(tg.jit(tg.hessian(f))(v), expected, rtol=1e-12)


def test_F7_jax_backend_matches_numpy_backend_and_lowers_to_stablehlo():
    x = np.array([1.0, 2.0])
    y = np.array([5.0, 7.0])

    def seed_loss(w, b, x, y):
        return np.sum((w * x + b - y) ** 2)

    g_np = tg.jit(tg.grad(seed_loss, argnums=(0, 1)))
    g_jax = tg.jit(tg.grad(seed_loss, argnums=(0, 1)), backend="jax")
    for a, b in zip(g_np(1.0, 0.0, x, y), g_jax(1.0, 0.0, x, y)):
        np.testing.assert_allclose(np.asarray(b), a, rtol=1e-12)
    assert tuple(float(v) for v in g_jax(1.0, 0.0, x, y)) == (-28.0, -18.0)
    text = g_jax.lower(1.0, 0.0, x, y).as_text()
    assert "stablehlo" in text and "f64" in text


def test_jax_backend_keeps_float64_without_global_x64():
    code = textwrap.dedent("""
        import numpy as np, jax, tracegrad as tg
        assert not jax.config.jax_enable_x64
        f = tg.jit(lambda x: np.sum(np.exp(x) * 1e-300), backend="jax")
        out = f(np.ones(3))
        assert out.dtype == np.float64, out.dtype
        assert float(out) > 0.0  # 1e-300 underflows to 0 in float32
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)
    assert result.stdout.strip() == "ok", result.stderr


def test_jax_backend_guards():
    @tg.jit(backend="jax")
    def f(x):
        return x * 2 if x.sum() > 0 else x * 3

    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(f(np.ones(2))), [2.0, 2.0])
        np.testing.assert_array_equal(np.asarray(f(-np.ones(2))), [-3.0, -3.0])


def test_sharded_gradient_on_four_cpu_devices():
    code = textwrap.dedent("""
        import os
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
        import numpy as np, jax
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        import tracegrad as tg
        assert len(jax.devices()) == 4
        mesh = Mesh(np.array(jax.devices()), ("data",))
        rows = NamedSharding(mesh, P("data"))
        X = np.arange(32.0).reshape(8, 4) / 10

        def loss(w, X):
            return np.sum(np.tanh(X @ w) ** 2)

        g = tg.jit(tg.grad(loss), backend="jax", in_shardings=(None, rows),
                   out_shardings=NamedSharding(mesh, P()))
        w = np.linspace(-1, 1, 4)
        # NumPy inputs are placed by in_shardings inside tracegrad's float64 scope
        # (a jax.device_put outside it would already have rounded X to float32)
        got = g(w, X)
        want = tg.grad(loss)(w, X)
        assert np.allclose(np.asarray(got), want, rtol=1e-12, atol=0), (got, want)
        assert got.sharding.is_fully_replicated
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)
    assert result.stdout.strip() == "ok", result.stderr[-2000:]


def test_bad_backend_is_a_clear_error():
    with pytest.raises(tg.TraceError, match="backend"):
        tg.jit(lambda x: x, backend="torch")


def test_without_jax_numpy_backend_works_and_jax_backend_says_how_to_install():
    code = textwrap.dedent("""
        import sys
        sys.modules["jax"] = None  # as if JAX were not installed
        import numpy as np, tracegrad as tg
        assert tg.jit(tg.grad(lambda x: np.sum(x * x)))(np.ones(2))[0] == 2.0
        try:
            tg.jit(lambda x: x, backend="jax")(np.ones(2))
        except tg.TraceError as e:
            print(e)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)
    assert 'pip install "tracegrad[jax]"' in result.stdout, result.stderr


def test_jax_arrays_are_keyed_by_shape_and_stay_on_device():
    f = tg.jit(lambda x: np.sum(x * x), backend="jax")
    with jax.enable_x64(True):
        a, b = jnp.ones(3), jnp.ones(5)
    assert float(f(a)) == 3.0 and float(f(b)) == 5.0  # two shapes: two specialisations
    assert f.cache_size == 2
    g = tg.jit(lambda x: np.sum(x * x))  # the NumPy backend takes them too
    assert g(a) == 3.0 and g(b) == 5.0


def test_jit_inside_grad_closing_over_the_traced_value():
    # the jitted function is called with a concrete value but closes over x
    assert tg.grad(lambda x: tg.jit(lambda y: x * y)(2.0))(3.0) == 2.0
    assert tg.grad(lambda x: tg.jit(lambda y: x * y * x)(np.float64(2.0)))(3.0) == 12.0


def test_jit_of_a_partial_or_a_callable_object():
    import functools

    class Doubler:
        def __call__(self, x):
            return np.sum(x * 2.0)

    f = tg.jit(functools.partial(lambda x, s=1.0: np.sum(x) * s, s=3.0))
    assert f(np.ones(2)) == 6.0 and f.__name__ == "<lambda>"
    assert tg.jit(Doubler())(np.ones(2)) == 4.0
