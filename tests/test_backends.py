"""The code generator and the JAX backend agree with the reference interpreter, on every
primitive case of the registry and on derivative graphs."""
import linecache

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.runtime import run
from tracegrad.runtime.codegen import GUARD_FAILED, generate

from primitive_cases import CASES

jax = pytest.importorskip("jax")
from tracegrad.runtime.jax_backend import JaxCompiled  # noqa: E402

ALL = [pytest.param(case, id=f"{name}-{i}") for name, cases in sorted(CASES.items())
       for i, case in enumerate(cases)]


def _close(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    # float64: 1e-12 (the contract); float32: NumPy and XLA round transcendental
    # functions differently, by an ulp or two. Relative to the array's scale: an entry
    # that is small by cancellation (1e-20 next to entries of size 1) carries the
    # rounding of the large ones, in whatever order each library sums
    if a.dtype.kind not in "fc":
        np.testing.assert_array_equal(a, b)
        return
    rtol = 1e-5 if np.finfo(a.dtype).eps > 1e-10 else 1e-12
    finite = np.isfinite(b)
    atol = rtol * float(np.max(np.abs(b[finite]), initial=0.0))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol or 1e-300, equal_nan=True)


@pytest.mark.parametrize("case", ALL)
def test_codegen_matches_interpreter(case):
    graph = tg.trace(case.fn, *case.args)
    compiled = generate(graph)
    with np.errstate(all="ignore"):
        for a, b in zip(compiled(*case.args), run(graph, list(case.args))):
            _close(a, b)


@pytest.mark.parametrize("case", ALL)
def test_jax_backend_matches_interpreter(case):
    graph = tg.trace(case.fn, *case.args)
    with np.errstate(all="ignore"):
        expected = run(graph, list(case.args))
        got = JaxCompiled(graph)(*case.args)
    for a, b in zip(got, expected):
        _close(np.asarray(a), b)


def _derivative_graphs():
    def f(x, w):
        h = np.tanh(x @ w)
        return np.sum(h * h) + np.sum(np.where(h > 0, h, 0.1 * h))

    x, w = np.linspace(-1, 1, 12).reshape(3, 4), np.linspace(0.5, -0.5, 8).reshape(4, 2)
    yield "grad", tg.trace(tg.grad(f, argnums=(0, 1)), x, w), (x, w)
    v = np.array([0.3, -0.7, 1.1])
    yield "hessian", tg.trace(tg.hessian(lambda v: np.sum(np.sin(v) * np.exp(v) + v ** 3)), v), (v,)


@pytest.mark.parametrize("name,graph,args", list(_derivative_graphs()))
def test_backends_agree_on_derivative_graphs(name, graph, args):
    expected = run(graph, list(args))
    for a, b in zip(generate(graph)(*args), expected):
        _close(a, b)
    for a, b in zip(JaxCompiled(graph)(*args), expected):
        _close(np.asarray(a), b)


def test_generated_source_is_readable_and_in_linecache():
    def f(x):
        y = np.exp(x)
        return np.sum(y * np.sin(x))

    compiled = generate(tg.trace(f, np.ones(3)), name="f")
    src = compiled.source
    assert src.startswith("def f(x0):")
    assert "_np_exp(x0)" in src and "test_backends.py:" in src
    assert "del " in src  # intermediates are released
    assert linecache.getline(compiled.filename, 1).startswith("def f(")


def test_generated_code_reuses_dead_buffers_but_never_a_live_view():
    def f(x):
        y = np.exp(x)          # a fresh buffer
        z = y.reshape(64, 64)  # a view of it, still needed below
        w = np.sin(y)        # y's last use: but its memory is z's
        return np.sum(z) + np.sum(w * 2.0)

    x = np.linspace(0, 1, 4096)  # large enough for reuse to pay
    graph = tg.trace(f, x)
    src = generate(graph).source
    sin_line = next(line for line in src.splitlines() if "_np_sin" in line)
    assert "out=" not in sin_line
    assert "out=" in next(line for line in src.splitlines() if "_np_multiply" in line)
    np.testing.assert_allclose(generate(graph)(x)[0], run(graph, [x])[0], rtol=1e-15)


def test_generated_code_never_writes_into_inputs():
    def f(x):
        return np.sin(np.exp(x) + x)

    x = np.linspace(0, 1, 4)
    x_copy = x.copy()
    generate(tg.trace(f, x))(x)
    np.testing.assert_array_equal(x, x_copy)


def test_generated_code_checks_guards():
    def f(x):
        return x * 2 if x.sum() > 0 else x * 3

    compiled = generate(tg.trace(f, np.ones(2)))
    np.testing.assert_array_equal(compiled(np.ones(2))[0], [2.0, 2.0])
    assert compiled(-np.ones(2)) is GUARD_FAILED


def test_tracebacks_point_into_generated_code():
    def f(x):
        return np.linalg.inv(x)

    compiled = generate(tg.trace(f, np.eye(2)))
    with pytest.raises(np.linalg.LinAlgError) as info:
        compiled(np.zeros((2, 2)))
    frames = [entry for entry in info.traceback if "tracegrad-generated" in str(entry.path)]
    assert frames and "_impl_inv" in str(frames[0].statement)
