"""NumPy reductions over lists of traced values (np.mean([a, b]), np.std of a list of
arrays, np.sum([t1, t2], axis=0)), integer casts of traced values, and a plain ndarray
indexed by a traced integer array (plain[ix, iy], np.take, np.take_along_axis): values
against NumPy, gradients against JAX (x64) and finite differences, under grad and jit on
both backends."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close, fd_vjp

import tracegrad as tg

X = np.array([0.3, 1.2, -0.7, 2.1])

# name -> (program written with NumPy, the same program with jax.numpy)
LISTS = {
    "mean of scalars": lambda m, x: m.mean(m.array([x[0] * x[1], x[2]])) + m.mean([x[0], x[3]]),
    "std of arrays": lambda m, x: m.std([x, m.sin(x)]),
    "var with axis": lambda m, x: m.sum(m.var([x, x ** 2, m.cos(x)], axis=0)),
    "sum of arrays along 0": lambda m, x: m.sum(m.sum([x, 2 * x, x ** 3], axis=0) ** 2),
    "max and min": lambda m, x: m.max([x[0], x[1] ** 2]) - m.min((x[2], x[3])),
    "prod of tuple": lambda m, x: m.prod((x[0], x[1], x[3])),
    "average with weights": lambda m, x: m.average([x[0], x[1]], weights=[1.0, 3.0]),
    "cumsum": lambda m, x: m.sum(m.cumsum([x[0], x[1], x[2]]) ** 2),
}


def _jax_version(prog):
    def jf(x):
        return prog(_JNP, x)
    return jf


class _JaxNumpy:
    """jax.numpy with NumPy's acceptance of lists (jnp refuses them)."""

    def __getattr__(self, name):
        fn = getattr(jnp, name)

        def call(a, *args, **kwargs):
            if isinstance(a, (list, tuple)):
                a = jnp.stack([jnp.asarray(e) for e in a])
            kwargs = {k: jnp.asarray(v) if isinstance(v, list) else v for k, v in kwargs.items()}
            return fn(a, *args, **kwargs)
        return call if name not in ("array", "sin", "cos") else fn


_JNP = _JaxNumpy()


@pytest.mark.parametrize("name", list(LISTS))
def test_reductions_over_lists(name):
    prog = LISTS[name]

    def f(x):
        return prog(np, x)

    expected = f(X)
    assert_close(tg.jit(f)(X), np.asarray(expected), 1e-14, "jit")
    g = tg.grad(f)(X)
    assert_close(g, np.asarray(jax.grad(_jax_version(prog))(X)), 1e-12, "vs jax")
    assert_close(g, fd_vjp(f, [X], 1.0)[0], 1e-6, "vs fd", floor=1.0)


def test_integer_casts_keep_values_and_have_no_gradient():
    def f(x):
        k = (x * 3).astype(int)
        return np.sum(x * k) + np.sum(k), k

    def jf(x):
        k = (x * 3).astype(int)
        return jnp.sum(x * k) + jnp.sum(k)

    out, k = tg.jit(f)(X)
    assert k.dtype == np.int64
    assert_close(k, (X * 3).astype(int), 0)
    g = tg.grad(lambda x: f(x)[0])(X)
    assert_close(g, np.asarray(jax.grad(jf)(X)), 1e-15)
    assert_close(g, (X * 3).astype(int).astype(float), 0)


F = np.arange(40.0).reshape(5, 8) ** 1.5
V = np.linspace(-2.0, 3.0, 9) ** 2


def lookup(m, x):
    """A fluid-simulation style lookup: a grid read at the cell that holds each point."""
    ix = m.floor(m.abs(x) * 2).astype(int) % 5
    iy = m.floor(m.abs(x) * 3 + 1).astype(int) % 8
    t = m.abs(x) * 2 - m.floor(m.abs(x) * 2)
    return (m.sum(F[ix, iy] * t) + m.sum(V[ix] * x ** 2)
            + m.sum(m.take(V, ix + 1) * x) + m.sum(F[(ix, iy)] * x)
            + m.sum(m.take_along_axis(F[:, :4], ix[None, :], axis=0)[0] * x))


@pytest.mark.parametrize("transform", ["grad", "jit numpy", "jit jax"])
def test_plain_arrays_indexed_by_traced_integers(transform):
    points = [X, X * 0.5 + 0.1, X]                 # other index values, then the first again
    if transform == "grad":
        fn = tg.grad(lambda x: lookup(np, x))
        for x in points:
            g = fn(x)
            assert_close(g, np.asarray(jax.grad(lambda v: lookup(jnp, v))(x)), 1e-12)
            assert_close(g, fd_vjp(lambda v: lookup(np, v), [x], 1.0)[0], 1e-6, floor=1.0)
        return
    fn = tg.jit(lambda x: lookup(np, x), backend=transform.split()[1])
    for x in points:
        assert_close(fn(x), np.asarray(lookup(np, x)), 1e-14)
    # the index values are guards: one specialisation per set of cells, reused
    assert fn.cache_size == 2


def test_traced_arrays_indexed_by_traced_integers_give_gradients_to_both():
    def f(x):
        grid = np.outer(x, x)
        ix = np.floor(np.abs(x) * 2).astype(int) % 4
        return np.sum(grid[ix, ix[::-1]] * x)

    def jf(x):
        grid = jnp.outer(x, x)
        ix = jnp.floor(jnp.abs(x) * 2).astype(int) % 4
        return jnp.sum(grid[ix, ix[::-1]] * x)

    assert_close(tg.grad(f)(X), np.asarray(jax.grad(jf)(X)), 1e-12)


def test_a_float_index_is_still_refused():
    with pytest.raises((IndexError, tg.TraceError)):
        tg.grad(lambda x: np.sum(V[x] * x))(X)
