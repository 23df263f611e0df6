"""np.einsum in full on traced values: NumPy's broadcasting of size-1 labelled axes, the
interleaved (operand, sublist, ..., [out]) form, an index repeated within one operand
(diagonals and traces), ellipses and optimize=. Values against NumPy, gradients against
JAX (x64) and finite differences; generated specs through bounded()."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close, bounded, fd_vjp

import tracegrad as tg

# (subscripts, operand shapes)
SPECS = [
    ("ii->i", [(3, 3)]),
    ("ii", [(4, 4)]),
    ("lli->i", [(2, 2, 3)]),
    ("iij,jk->ik", [(3, 3, 2), (2, 4)]),
    ("iji->j", [(3, 2, 3)]),
    ("ijk,ijk->", [(1, 3, 1), (2, 1, 4)]),          # size-1 axes broadcast, as NumPy does
    ("ijk,ik->j", [(1, 40, 1), (20, 20)]),
    ("ij,jk->ik", [(2, 1), (3, 4)]),
    ("...i,...i->...", [(2, 3, 4), (3, 4)]),
    ("i...,i->...", [(3, 2, 2), (3,)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 2)]),
    ("i,j->ij", [(3,), (2,)]),
    ("ij->", [(3, 4)]),
    ("ij->ji", [(3, 4)]),
    ("iij->ji", [(2, 2, 3)]),
]
OPTIMIZE = [False, True, "greedy", "optimal"]
CASES = bounded(list(itertools.product(range(len(SPECS)), OPTIMIZE)), 40)


def _operands(shapes, seed):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=s) for s in shapes]


def _jax_einsum(spec, *ops):
    """JAX's einsum, with size-1 axes broadcast first (JAX refuses what NumPy broadcasts)."""
    ins, _, _ = spec.partition("->")
    sizes = {}
    for sub, op in zip(ins.split(","), ops):
        if "..." in sub:
            continue
        for c, n in zip(sub, op.shape):
            sizes[c] = max(sizes.get(c, 1), n)
    fixed = []
    for sub, op in zip(ins.split(","), ops):
        if "..." not in sub and len(set(sub)) == len(sub):
            op = jnp.broadcast_to(op, tuple(sizes[c] for c in sub))
        fixed.append(op)
    return jnp.einsum(spec, *fixed)


@pytest.mark.parametrize("k, optimize", CASES, ids=lambda v: str(v))
def test_values_and_gradients(k, optimize):
    spec, shapes = SPECS[k]
    ops = _operands(shapes, k)

    def f(*xs):
        return np.einsum(spec, *xs, optimize=optimize)

    expected = np.einsum(spec, *ops, optimize=optimize)
    assert_close(tg.jit(f)(*ops), expected, 1e-13, "jit numpy")
    assert_close(tg.jit(f, backend="jax")(*ops), expected, 1e-13, "jit jax")
    ct = np.random.default_rng(100 + k).normal(size=np.shape(expected))
    argnums = tuple(range(len(ops)))
    grads = tg.grad(lambda *xs: np.sum(f(*xs) * ct), argnums=argnums)(*ops)
    jgrads = jax.grad(lambda *xs: jnp.sum(_jax_einsum(spec, *xs) * ct), argnums=argnums)(*ops)
    fds = fd_vjp(f, ops, ct)
    for g, jg, fd, op in zip(grads, jgrads, fds, ops):
        assert g.shape == op.shape
        assert_close(g, np.asarray(jg), 1e-12, "vs jax")
        assert_close(g, fd, 1e-6, "vs fd", floor=1.0)


INTERLEAVED = [
    ("matrix product", lambda a, b: ((a, [0, 1], b, [1, 2], [0, 2]), "ij,jk->ik")),
    ("implicit output", lambda a, b: ((a, [0, 1], b, [1, 2]), "ij,jk")),
    ("diagonal", lambda a, b: ((a[:, :3], [5, 5]), "ff")),
    ("ellipsis", lambda a, b: ((a, [Ellipsis, 1], b, [1, Ellipsis], [Ellipsis]), "...j,j...->...")),
    ("capital letters", lambda a, b: ((a, [30, 31], b, [31, 40], [40, 30]), "EF,FO->OE")),
]


@pytest.mark.parametrize("name", [n for n, _ in INTERLEAVED])
def test_interleaved_form(name):
    build = dict(INTERLEAVED)[name]
    a, b = _operands([(3, 4), (4, 3)], 7)
    args, spec = build(a, b)
    ops = [x for x in args[0::2] if isinstance(x, np.ndarray)]

    def f(*xs):
        it = iter(xs)
        return np.einsum(*[next(it) if isinstance(x, np.ndarray) else x for x in args])

    def by_string(*xs):
        return np.einsum(spec, *xs)

    assert_close(tg.jit(f)(*ops), np.einsum(*args), 1e-13)
    assert_close(np.einsum(*args), by_string(*ops), 1e-13)
    g = tg.grad(lambda *xs: np.sum(np.sin(f(*xs))), argnums=tuple(range(len(ops))))(*ops)
    fd = fd_vjp(lambda *xs: np.sin(by_string(*xs)), ops, np.ones(np.shape(by_string(*ops))))
    for u, v in zip(g, fd):
        assert_close(u, v, 1e-6, floor=1.0)


def test_einsum_mistakes_raise_as_numpy_does():
    a = np.ones((2, 3))
    with pytest.raises(ValueError):
        tg.grad(lambda x: np.sum(np.einsum(x, [0, 60])))(a)
    with pytest.raises((ValueError, tg.TraceError)):
        tg.grad(lambda x: np.einsum("ij,jk->ik", x, x))(a)
