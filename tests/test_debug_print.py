"""tg.debug.print: printed on every call (jit on both backends, grad), with NumPy's
formatting of the values the call computes; tracers format like arrays where their value
is known, and an abstract one raises a TraceError that says what to do."""
import jax
import jax.numpy as jnp
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


def _lines(capsys):
    return capsys.readouterr().out.splitlines()


def _body(c, x):
    tg.debug.print("c={c} x={x:.1f}", c=c, x=x)
    return c * x + 1.0, c


def _scan_steps(c, xs, reverse=False):
    """What the body prints, step by step, as NumPy formats it."""
    lines = []
    for x in (xs[::-1] if reverse else xs):
        lines.append(f"c={np.asarray(c)} x={x:.1f}")
        c = c * x + 1.0
    return lines


@pytest.mark.parametrize("reverse", [False, True])
def test_scan_body_prints_once_per_step(reverse, capsys):
    xs = np.array([2.0, -1.0, 0.5])
    carry, ys = tg.scan(_body, 1.5, xs, reverse=reverse)
    assert _lines(capsys) == _scan_steps(1.5, xs, reverse)
    # and the loop's results are unchanged by the print
    assert np.allclose(carry, tg.scan(lambda c, x: (c * x + 1.0, c), 1.5, xs,
                                      reverse=reverse)[0], rtol=0)


@pytest.mark.parametrize("transform", ["grad", "jit-numpy", "jit-jax", "jit-grad", "jvp"])
def test_scan_body_prints_under_transforms(transform, capsys):
    xs = np.array([2.0, -1.0, 0.5])

    def f(c):
        return tg.scan(_body, c, xs)[0]

    run = {"grad": tg.grad(f), "jit-numpy": tg.jit(f), "jit-jax": tg.jit(f, backend="jax"),
           "jit-grad": tg.jit(tg.grad(f)),
           "jvp": lambda c: tg.jvp(f, (c,), (1.0,))}[transform]
    for c in (1.5, -0.25):              # printed on every call, with that call's values
        run(c)
        assert _lines(capsys) == _scan_steps(c, xs)      # once per step, not again backwards


def test_fori_loop_and_nested_loops(capsys):
    out = tg.fori_loop(2, 5, lambda i, v: (tg.debug.print("i={} v={}", i, v), v * i)[1], 1.0)
    assert out == 24.0
    assert _lines(capsys) == ["i=2 v=1.0", "i=3 v=2.0", "i=4 v=6.0"]

    def outer(c, x):
        # the inner body prints a value of the outer body (captured) and its own
        inner = lambda d, y: (tg.debug.print("c={} y={}", c, y), (d + x * y, None))[1]  # noqa: E731
        return tg.scan(inner, c, np.arange(2.0))[0], None

    for run in (lambda: tg.scan(outer, 1.0, np.array([1.0, 10.0])),
                lambda: tg.jit(lambda a: tg.scan(outer, a, np.array([1.0, 10.0])))(1.0)):
        assert run()[0] == 12.0
        assert _lines(capsys) == ["c=1.0 y=0.0", "c=1.0 y=1.0", "c=2.0 y=0.0", "c=2.0 y=1.0"]


def test_while_loop_prints_the_steps_taken_with_max_steps(capsys):
    def body(v):
        tg.debug.print("k={} x={}", v[0], v[1])
        return v[0] + 2, v[1] * 2.0

    def f(x):
        return tg.while_loop(lambda v: v[0] < 5, body, (0, x), max_steps=6)[1]

    for run in (f, tg.jit(f), tg.jit(f, backend="jax")):
        assert run(1.0) == 8.0
        assert _lines(capsys) == ["k=0 x=1.0", "k=2 x=2.0", "k=4 x=4.0"]


def test_while_loop_prints_every_step_in_program_order(capsys):
    def body(v):
        tg.debug.print("k={} x={}", v[0], v[1])
        return v[0] + 2, v[1] * 2.0

    def f(x):
        tg.debug.print("before {}", x)
        y = tg.while_loop(lambda v: v[0] < 5, body, (0, x))[1]
        tg.debug.print("after {}", y)
        return y

    for run in (f, tg.grad(f), tg.jit(f), tg.jit(f, backend="jax"), tg.jit(tg.grad(f))):
        for x in (1.0, -0.5):
            run(x)
            assert _lines(capsys) == [f"before {x}", f"k=0 x={x}", f"k=2 x={2 * x}",
                                      f"k=4 x={4 * x}", f"after {8 * x}"]
    # inside a scan: every step's loop, with its own trip count
    out = tg.scan(lambda c, x: (tg.while_loop(
        lambda v: v < x, lambda v: (tg.debug.print("v={}", v), v + 1.0)[1], c), None),
        0.0, np.array([1.0, 3.0]))[0]
    assert out == 3.0
    assert _lines(capsys) == ["v=0.0", "v=1.0", "v=2.0"]


def test_cond_prints_the_branch_taken(capsys):
    def yes(v):
        tg.debug.print("yes v={}", v)
        return v + 1.0

    def no(v):
        tg.debug.print("no v={} w={}", v, 2 * v)
        return v * 3.0

    def f(p, x):
        return tg.cond(p > 0, yes, no, x)

    for run in (f, tg.grad(f, 1), tg.jit(f), tg.jit(f, backend="jax")):
        run(1.0, 2.5)
        assert _lines(capsys) == ["yes v=2.5"]
        run(-1.0, 4.0)
        assert _lines(capsys) == ["no v=4.0 w=8.0"]
    # inside a loop: the branch of every step
    out = tg.scan(lambda c, x: (tg.cond(x > 0, yes, no, c), None), 1.0,
                  np.array([1.0, -1.0, 2.0]))[0]
    assert out == 7.0
    assert _lines(capsys) == ["yes v=1.0", "no v=2.0 w=4.0", "yes v=6.0"]


def _jax_lines(run, *args):
    """What jax.debug.print prints when ``run(*args)`` runs."""
    import io
    from contextlib import redirect_stdout
    buf = io.StringIO()
    with redirect_stdout(buf):
        jax.block_until_ready(run(*args))
        jax.effects_barrier()
    return buf.getvalue().splitlines()


def test_vmap_prints_each_example_as_jax(capsys):
    xs = np.arange(6.0).reshape(3, 2)

    def f(x, y, p=tg.debug.print, s=np.sum):
        p("x={} s={s} y={y}", x, s=s(x) * y, y=y)
        p("unbatched y={}", y)
        p("second x={}", x)
        return s(x) * y

    want = _jax_lines(jax.vmap(lambda x, y: f(x, y, jax.debug.print, jnp.sum),
                               in_axes=(0, None)), xs, 2.0)
    assert len(want) == 7 and want[0] == "x=[0. 1.] s=2.0 y=2.0"
    for run in (tg.vmap(f, in_axes=(0, None)), tg.jit(tg.vmap(f, in_axes=(0, None))),
                tg.jit(tg.vmap(f, in_axes=(0, None)), backend="jax")):
        np.testing.assert_array_equal(run(xs, 2.0), np.sum(xs, axis=1) * 2.0)
        assert _lines(capsys) == want

    # nested vmaps: the inner axis varies slowest, as in JAX
    def g(x, p=tg.debug.print):
        p("{}", x)
        return x

    want = _jax_lines(jax.vmap(jax.vmap(lambda x: g(x, jax.debug.print))), xs)
    tg.vmap(tg.vmap(g))(xs)
    assert _lines(capsys) == want and len(want) == 6

    # a loop inside vmap: every example at each step (JAX's prints, unordered effects,
    # come in no fixed order within a step; ours in the examples' order)
    def body(c, x, p=tg.debug.print):
        p("c={} x={}", c, x)
        return c * x + 1.0, None

    want = _jax_lines(jax.vmap(lambda x: jax.lax.scan(
        lambda c, v: body(c, v, jax.debug.print), 1.0, x)[0]), xs)
    out = tg.vmap(lambda x: tg.scan(body, 1.0, x)[0])(xs)
    np.testing.assert_array_equal(out, (xs[:, 0] + 1.0) * xs[:, 1] + 1.0)
    got = _lines(capsys)
    assert len(want) == len(got) == 6
    assert sorted(got[:3]) == sorted(want[:3]) and sorted(got[3:]) == sorted(want[3:])
    c = np.ones(3)
    for t in range(2):
        assert got[3 * t:3 * t + 3] == [f"c={c[b]} x={xs[b, t]}" for b in range(3)]
        c = c * xs[:, t] + 1.0


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


def test_cond_with_a_batched_predicate_prints_the_examples_taking_each_branch(capsys):
    """docs/guarantees.md: JAX prints every example in both branches there."""
    def g(x, p=tg.debug.print, cond=tg.cond):
        cond(x > 1, lambda: p("big {}", x), lambda: p("small {}", x))

    want = _jax_lines(jax.vmap(lambda x: g(x, jax.debug.print, lambda c, a, b: jax.lax.cond(
        c, a, b))), np.arange(3.0))
    assert want == ["small 0.0", "small 1.0", "small 2.0", "big 0.0", "big 1.0", "big 2.0"]
    tg.vmap(g)(np.arange(3.0))
    assert _lines(capsys) == ["big 2.0", "small 0.0", "small 1.0"]
