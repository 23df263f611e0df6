"""The gradient IR: pow's plain rule for a constant exponent, and ``tg.passes.optimize``."""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad.passes import adjoint, cse, jvp, optimize, prune, simplify
from tracegrad.passes.prune import live_nodes
from tracegrad.runtime import run

from oracles import jax, jnp

EXPONENTS = [0, 1, 2, 3, 0.0, 1.0, 2.0, 3.0, 0.5, -1, -1.0, 2.5]
POINTS = np.array([0.0, -1.5, -0.5, 0.7, 2.0])
# x ** c at 0 and at negative x: NaN and inf on purpose
pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in power:RuntimeWarning")


def _first(c, x):
    """d(x**c)/dx, with the limits the rules promise: 0 for c = 0 (x**0 is the constant
    1), 1 for c = 1 (x**1 is x), also at x = 0."""
    with np.errstate(all="ignore"):
        if c == 0:
            return np.zeros_like(x)
        if c == 1:
            return np.ones_like(x)
        return c * x ** (c - 1.0)


def _second(c, x):
    with np.errstate(all="ignore"):
        if c in (0, 1):
            return np.zeros_like(x)
        if c == 2:
            return np.full_like(x, 2.0)
        return c * (c - 1.0) * x ** (c - 2.0)


def _graphs(c):
    g = tg.trace(lambda x: x ** c, POINTS)
    d1 = adjoint(g)                                     # (x, ct) -> (x**c, dx)
    d1 = prune(d1, [d1.outputs[1]])
    d2 = adjoint(d1, wrt=[d1.inputs[0]])                # d/dx sum(ct * dx)
    return g, d1, d2


@pytest.mark.parametrize("c", EXPONENTS, ids=repr)
def test_pow_constant_exponent_rule_values(c):
    g, d1, d2 = _graphs(c)
    ones = np.ones_like(POINTS)
    with np.errstate(all="ignore"):
        got1 = run(d1, [POINTS, ones])[0]
        got2 = run(d2, [POINTS, ones, ones])[1]
        tangent = run(jvp(g), [POINTS, ones])[1]
    np.testing.assert_allclose(got1, _first(c, POINTS), rtol=1e-14, equal_nan=True)
    np.testing.assert_allclose(tangent, _first(c, POINTS), rtol=1e-14, equal_nan=True)
    np.testing.assert_allclose(got2, _second(c, POINTS), rtol=1e-14, equal_nan=True)
    # the guarded rule (tg.grad's cached plans turn constants into inputs) agrees
    with np.errstate(all="ignore"):
        guarded = tg.grad(lambda x: np.sum(x ** c))(POINTS)
    np.testing.assert_allclose(got1, guarded, rtol=1e-14, equal_nan=True)


@pytest.mark.parametrize("c", [1, 2, 3, 0.5, -1, 2.5], ids=repr)
def test_pow_constant_exponent_rule_against_jax_and_differences(c):
    """The reference formulas above against JAX (x64) away from 0, and central differences
    where x**c is smooth."""
    x = POINTS[POINTS != 0]
    g = tg.trace(lambda x: x ** c, x)
    d1 = prune(adjoint(g), [adjoint(g).outputs[1]])
    d2 = adjoint(d1, wrt=[d1.inputs[0]])
    ones = np.ones_like(x)
    with np.errstate(all="ignore"):
        got1 = run(d1, [x, ones])[0]
        got2 = run(d2, [x, ones, ones])[1]
    f = lambda v: v ** c  # noqa: E731
    want1 = np.asarray(jax.vmap(jax.grad(f))(jnp.asarray(x)))
    want2 = np.asarray(jax.vmap(jax.grad(jax.grad(f)))(jnp.asarray(x)))
    np.testing.assert_allclose(got1, want1, rtol=1e-13, equal_nan=True)
    np.testing.assert_allclose(got2, want2, rtol=1e-13, equal_nan=True)
    pos = x[x > 0]
    h = 1e-6
    fd = ((pos + h) ** c - (pos - h) ** c) / (2 * h)
    np.testing.assert_allclose(got1[x > 0], fd, rtol=1e-6)


@pytest.mark.parametrize("c", [2, 2.0, 3, 0.5, -1.0])
def test_pow_constant_exponent_rule_is_plain(c):
    """x ** 2 differentiates to 2 * x: no comparison, select or log of the exponent."""
    g = tg.trace(lambda x: np.sum(x ** c), np.ones(3))
    for d in (prune(adjoint(g)), prune(jvp(g))):
        assert not {"equal", "select", "log"} & set(d.ops()), d
    two = prune(adjoint(tg.trace(lambda x: np.sum(x ** 2), np.ones(3))))
    assert two.ops().count("pow") == 1          # the forward's own x ** 2 only


def test_pow_traced_or_zero_exponent_keeps_the_guarded_rule():
    g = tg.trace(lambda x, y: np.sum(x ** y), np.ones(3), np.ones(3))
    assert "select" in prune(adjoint(g)).ops()
    g = tg.trace(lambda x: np.sum(x ** np.arange(3.0)), np.ones(3))   # holds a 0
    assert "select" in prune(adjoint(g)).ops()


def test_pow_plain_rule_keeps_float32():
    x = np.array([0.5, -2.0], np.float32)
    g = tg.trace(lambda x: np.sum(x ** 3), x)
    a = adjoint(g)
    assert all(a.node(n)["dtype"] == "float32" for n in a if a.op(n) != "input")
    out = run(a, [x, np.float32(1.0)])[1]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, 3 * x.astype(np.float64) ** 2, rtol=1e-6)


# -- optimize -------------------------------------------------------------------------------
X, Y = np.array([1.0, 2.0]), np.array([5.0, 7.0])


def loss(w, b):
    return np.sum((w * X + b - Y) ** 2)


def _dead(graph):
    live = live_nodes(graph, list(graph.outputs) + [n for n, _ in graph.guards])
    return [n for n in graph if n not in live and graph.op(n) != "input"]


def _graphs_to_optimize():
    return [tg.trace(tg.grad(loss, argnums=(0, 1)), 1.0, 0.0),
            adjoint(tg.trace(loss, 1.0, 0.0)),
            tg.trace(tg.hessian(lambda v: np.sum(np.sin(v) * v ** 2)), np.ones(3)),
            jvp(tg.trace(lambda v: np.tanh(v) @ v + v[0] * 1.0, np.ones(3)))]


@pytest.mark.parametrize("k", range(4))
def test_optimize_leaves_no_dead_node_and_is_a_fixed_point(k):
    g = _graphs_to_optimize()[k]
    o = optimize(g)
    assert _dead(o) == []
    assert str(optimize(o)) == str(o)
    assert len(o) <= len(simplify(cse(prune(g))))
    args = [np.full(g.node(n)["shape"], 0.3 + i, g.node(n)["dtype"])
            for i, n in enumerate(g.inputs)]
    for a, b in zip(run(g, args), run(o, args)):
        np.testing.assert_array_equal(a, b)


def test_optimize_readme_gradient():
    g = tg.trace(tg.grad(loss, argnums=(0, 1)), 1.0, 0.0)
    o = optimize(g)
    assert _dead(simplify(cse(prune(g)))) != []     # README's old order left dead nodes
    assert not {"equal", "select", "pow"} & set(o.ops())
    assert len(o) <= 12
    assert [float(v) for v in o(1.0, 0.0)] == [-28.0, -18.0]


def test_lowered_text_reads_on_its_own():
    """``lower(...).as_text()`` shows the constants the code reads, and runs as it is."""
    def f(w, b):
        return loss(w, b) + np.sum(np.sin(w * X)[::2]) + np.full(3, w)[0]

    jitted = tg.jit(tg.grad(f, argnums=(0, 1)))
    text = jitted.lower(1.0, 0.0).as_text()
    assert text.startswith("def ")
    assert "np.array([1.0, 2.0], dtype=np.float64)" in text
    assert "np.array([5.0, 7.0], dtype=np.float64)" in text
    namespace: dict = {}
    exec(compile(text, "<lowered>", "exec"), namespace)   # noqa: S102 - our own text
    fn = namespace[text[4:text.index("(")]]
    got = fn(np.float64(1.0), np.float64(0.0))
    want = jitted(1.0, 0.0)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("c", [2, 2.0, np.float64(2.0), np.int64(3), np.array([1, 2]), 2.5, -1],
                         ids=repr)
def test_pow_plain_rule_matches_the_guarded_rule_bit_for_bit_in_float32(c):
    """The plain rule computes in the dtype the guarded one did (a float64 exponent
    promotes, a weak Python number does not), so the two agree exactly."""
    x = np.array([0.3, -1.7], np.float32)

    def f(v):
        return np.sum(v ** c)

    with np.errstate(all="ignore"):
        plain = tg.passes.adjoint(tg.trace(f, x))(x, np.float32(1.0))[1]
        guarded = tg.grad(f)(x)       # a cached plan: the exponent is an input there
    assert plain.dtype == guarded.dtype == np.float32
    np.testing.assert_array_equal(plain, guarded)
