"""tg.debug.print: printed on every call (jit on both backends, grad), with NumPy's
formatting of the values the call computes; tracers format like arrays where their value
is known, and an abstract one raises a TraceError that says what to do."""
import numpy as np
import pytest

import tracegrad as tg


def f(x, y):
    z = np.sin(x) * y
    tg.debug.print("z={z} s={s:.4f} y={}", y, z=z, s=np.sum(z))
    tg.debug.print("tree={t}", t={"a": x[0], "b": (2.0, x[1] * 2)})
    return np.sum(z)


def expected(x, y):
    z = np.sin(x) * y
    tree = {"a": np.asarray(x[0]), "b": (2.0, np.asarray(x[1] * 2))}
    return [f"z={z} s={np.sum(z):.4f} y={np.asarray(y)}", f"tree={tree}"]


INPUTS = [(np.array([1.0, 2.0]), 3.0), (np.array([0.5, -2.0]), 1.5), (np.array([0.5, -2.0]), 1.5)]


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_jit_prints_on_every_call(backend, capsys):
    jf = tg.jit(f, backend=backend)
    for x, y in INPUTS:
        out = jf(x, y)
        assert np.isclose(out, np.sum(np.sin(x) * y), rtol=1e-14)
        assert capsys.readouterr().out.splitlines() == expected(x, y)
    assert jf.cache_size == 1


def test_transforms_that_run_the_function_print_at_once(capsys):
    x, y = INPUTS[0]
    g = tg.grad(f)(x, y)
    assert np.allclose(g, np.cos(x) * y, rtol=1e-14)
    assert capsys.readouterr().out.splitlines() == expected(x, y)
    tg.jacobian(f)(x, y)
    assert capsys.readouterr().out.splitlines() == expected(x, y)
    f(x, y)                                          # outside any transform: plain NumPy
    assert capsys.readouterr().out.splitlines() == expected(x, y)


def test_print_in_a_loop_body_is_a_trace_error():
    def body(c, x):
        tg.debug.print("c={c}", c=c)
        return c + x, c

    with pytest.raises(tg.TraceError, match="only known abstractly"):
        tg.scan(body, 0.0, np.arange(3.0))


def test_tracers_format_like_arrays(capsys):
    seen = []

    def g(x):
        s = np.sum(x)
        seen.append((f"{s:.3f}", format(x), str(x), f"{x[1]:>8.2e}", f"{x}"))
        return s

    x = np.array([1.23456, -2.5])
    tg.grad(g)(x)
    tg.jit(g, backend="jax")(x)
    want = (f"{np.sum(x):.3f}", format(x), str(x), f"{x[1]:>8.2e}", f"{x}")
    assert seen == [want, want]
    with pytest.raises(TypeError):          # as NumPy: no format spec for an n-d array
        tg.grad(lambda v: (f"{v:.2f}", np.sum(v))[1])(x)

    def body(c, _):
        return c + len(str(c)), c

    with pytest.raises(tg.TraceError, match="tg.debug.print"):
        tg.scan(body, 0.0, np.arange(2.0))


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_jit_of_grad_prints_on_every_call(backend, capsys):
    jg = tg.jit(tg.grad(f), backend=backend)
    jh = tg.jit(tg.hessian(f), backend=backend)
    for x, y in INPUTS:
        assert np.allclose(jg(x, y), np.cos(x) * y, rtol=1e-14)
        assert capsys.readouterr().out.splitlines() == expected(x, y)
        assert np.allclose(jh(x, y), np.diag(-np.sin(x) * y), rtol=1e-14)
        assert capsys.readouterr().out.splitlines() == expected(x, y)
