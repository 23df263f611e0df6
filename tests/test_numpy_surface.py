"""The NumPy surface the tracer intercepts, checked name by name against JAX.

Each case is a user function written once against ``xp`` and run with
``xp=numpy`` under tracegrad and ``xp=jax.numpy`` under JAX (see ``oracles.check``):
values to 1e-12, gradients to 1e-10 relative, Hessians and finite differences
for some.
"""
import operator

import numpy as np
import pytest

import tracegrad as tg

from oracles import GRAD_RTOL, assert_close, check, finite_diff_grad, jax, jnp, rand

X = rand(3, 4, seed=1)                     # values in (-1, 1)
Y = rand(3, 4, seed=2)
POS = rand(3, 4, seed=3, low=0.5, high=2.0)  # for log, sqrt, ...
ROW = rand(4, seed=5)
UNIT = rand(3, 4, seed=6, low=-0.9, high=0.9)  # inside arcsin / arctanh's domain
BIG = rand(3, 4, seed=7, low=1.2, high=3.0)    # arccosh's domain
V = rand(5, seed=8)
A = rand(4, 4, seed=9) + 4 * np.eye(4)       # well conditioned
B = rand(4, 3, seed=10)


def case(name, fn, *args, **kw):
    """One row: ``fn(xp, *args)`` and the options of ``oracles.check``."""
    return pytest.param(fn, args, kw, id=name)


def run(fn, args, kw):
    check(fn, *args, **kw)


# -- Python operators, unary and reflected forms ----------------------------------------
OPERATORS = [
    case("add", lambda xp, x, y: x + y, X, Y, argnums=(0, 1), hessian=False),
    case("sub", lambda xp, x, y: x - y, X, Y, argnums=(0, 1)),
    case("mul", lambda xp, x, y: x * y, X, Y, argnums=(0, 1)),
    case("truediv", lambda xp, x, y: x / y, X, POS, argnums=(0, 1)),
    case("floordiv", lambda xp, x, y: x // y + x, X * 5, POS, argnums=(0, 1)),
    case("mod", lambda xp, x, y: x % y, X * 5, POS, argnums=0),
    case("pow", lambda xp, x, y: x ** y, POS, Y, argnums=(0, 1)),
    case("pow_int", lambda xp, x: x ** 3, X, hessian=True, fd=True),
    case("pow_half", lambda xp, x: x ** 0.5, POS),
    case("matmul", lambda xp, a, b: a @ b, X, B, argnums=(0, 1)),
    case("matmul_vec", lambda xp, a, v: a @ v, X, ROW, argnums=(0, 1)),
    case("matmul_vecvec", lambda xp, u, v: u @ v, ROW, ROW * 2, argnums=(0, 1)),
    case("neg", lambda xp, x: -x, X),
    case("pos", lambda xp, x: +x, X),
    case("abs", lambda xp, x: abs(x), X),
    case("radd", lambda xp, x: 2.0 + x, X),
    case("rsub", lambda xp, x: 2.0 - x, X),
    case("rmul", lambda xp, x: 3.0 * x, X),
    case("rtruediv", lambda xp, x: 2.0 / x, POS, hessian=True),
    case("rpow", lambda xp, x: 2.0 ** x, X),
    case("rmatmul_ndarray", lambda xp, b: X @ b, B),
    case("rfloordiv", lambda xp, x: 7.0 // x + x, POS),
    case("rmod", lambda xp, x: 7.0 % x, POS),
    case("ndarray_radd", lambda xp, x: ROW + x, X),
    case("ndarray_rsub", lambda xp, x: ROW - x, X),
    case("ndarray_rmul", lambda xp, x: ROW * x, X),
    case("ndarray_rdiv", lambda xp, x: ROW / x, POS),
    case("iadd", lambda xp, x: _iadd(x, ROW), X),
    case("imul", lambda xp, x: _imul(x, x), X),
]


def _iadd(x, y):
    z = x * 1.0     # the plain-NumPy run of the oracle must not change X in place
    z += y
    return z


def _imul(x, y):
    z = x * 1.0
    z *= y
    return z


@pytest.mark.parametrize("fn,args,kw", OPERATORS)
def test_operator(fn, args, kw):
    run(fn, args, kw)


@pytest.mark.parametrize("op", [operator.lt, operator.le, operator.gt, operator.ge,
                                operator.eq, operator.ne])
def test_comparison_gives_boolean_tracer(op):
    fn = lambda xp, x, y: xp.where(op(x, y), x * y, x - y)
    check(fn, X, np.where(X > 0, X, Y), argnums=(0, 1))

    def inner(x):
        mask = op(x, 0.1)
        assert isinstance(mask, tg.tracer.Tracer) and mask.dtype == bool
        assert mask.shape == x.shape
        return np.sum(x * mask)
    assert_close(tg.grad(inner)(X), op(X, 0.1).astype(float), GRAD_RTOL)


def test_attributes_len_and_iteration():
    seen = {}

    def f(x):
        seen.update(shape=x.shape, ndim=x.ndim, size=x.size, dtype=x.dtype, len=len(x))
        total = 0.0
        for row in x:               # iteration over the first axis
            total = total + np.sum(row * row)
        return total + np.sum(x.T[0])
    g = tg.grad(f)(X)
    assert seen == dict(shape=(3, 4), ndim=2, size=12, dtype=np.float64, len=3)
    expected = 2 * X
    expected[:, 0] += 1.0
    assert_close(g, expected, GRAD_RTOL)


# -- methods ------------------------------------------------------------------------------
METHODS = [
    case("sum", lambda xp, x: x.sum(), X, hessian=True),
    case("sum_axis", lambda xp, x: x.sum(axis=0), X),
    case("sum_keepdims", lambda xp, x: x.sum(axis=1, keepdims=True) * x, X),
    case("mean", lambda xp, x: x.mean(axis=1), X),
    case("max", lambda xp, x: x.max(axis=0), X),
    case("max_all", lambda xp, x: x.max(), X),
    case("min", lambda xp, x: x.min(axis=1), X),
    case("prod", lambda xp, x: x.prod(axis=1), X, hessian=True),
    case("reshape", lambda xp, x: x.reshape(2, 6) * xp.arange(6.0), X),
    case("reshape_tuple", lambda xp, x: x.reshape((4, -1)) @ ROW[:3], X),
    case("transpose", lambda xp, x: x.transpose() @ X, X),
    case("transpose_axes", lambda xp, x: x.reshape(3, 2, 2).transpose(2, 0, 1), X),
    case("T", lambda xp, x: x.T @ Y, X),
    case("astype", lambda xp, x: x.astype(np.float32).astype(np.float64) * 0 + x * 2, X),
    case("clip", lambda xp, x: x.clip(-0.5, 0.5), X),
    case("dot", lambda xp, x: x.dot(B), X),
    case("squeeze", lambda xp, x: x.reshape(3, 1, 4).squeeze() * Y, X),
    case("squeeze_axis", lambda xp, x: x.reshape(1, 3, 4).squeeze(axis=0) * Y, X),
    case("ravel", lambda xp, x: x.ravel() * xp.arange(12.0), X),
    case("flatten", lambda xp, x: x.flatten() * xp.arange(12.0), X),
]


@pytest.mark.parametrize("fn,args,kw", METHODS)
def test_method(fn, args, kw):
    run(fn, args, kw)


# -- indexing -------------------------------------------------------------------------------
IDX = np.array([2, 0, 2, 1])
M3 = rand(4, 3, 5, seed=11)
INDEXING = [
    case("int", lambda xp, x: x[1], X),
    case("neg_int", lambda xp, x: x[-1, -2], X),
    case("slice", lambda xp, x: x[1:, :3], X),
    case("step", lambda xp, x: x[::2, 1::2], X),
    case("neg_step", lambda xp, x: x[::-1, -1:0:-2], X),
    case("neg_bounds", lambda xp, x: x[-2:, :-1], X),
    case("newaxis", lambda xp, x: x[None, :, None, 1] * X[:, :1, None], X),
    case("ellipsis", lambda xp, x: x[..., 1] + x[1, ...].sum(), M3),
    case("int_array", lambda xp, x: x[IDX], X),
    case("int_array_repeated_grad", lambda xp, x: x[:, IDX] * xp.arange(4.0), X),
    case("int_arrays_paired", lambda xp, x: x[IDX[:3], np.array([0, 3, 3])], X),
    case("int_array_and_slice", lambda xp, x: x[1:, IDX[:2]], M3),
    case("bool_mask_const", lambda xp, x: x[X > 0], X),
    case("bool_mask_traced", lambda xp, x: x[x > 0] ** 2, X),
    case("bool_mask_rows", lambda xp, x: x[np.array([True, False, True])], X),
    case("differences", lambda xp, x: x[1:] - x[:-1], V, hessian=True),
    case("traced_int_index", lambda xp, x: x[xp.argmax(x[:, 0])], X),
    case("traced_int_array_index", lambda xp, x: x[xp.argmax(x, axis=0)], X),
]


@pytest.mark.parametrize("fn,args,kw", INDEXING)
def test_indexing(fn, args, kw):
    run(fn, args, kw)


# -- indexed assignment: NumPy's in-place syntax vs JAX's .at[] ------------------------------
# JAX arrays are immutable, so each case is written twice: as the user writes it
# for tracegrad, and with .at[] for the oracle.
def _set_int(x):
    z = np.zeros_like(x)
    z[0] = x[1] * 2.0
    z[2] = np.sin(x[0])
    return z * x


def _set_int_jax(x):
    z = jnp.zeros_like(x).at[0].set(x[1] * 2.0).at[2].set(jnp.sin(x[0]))
    return z * x


def _iadd_slice(x):
    z = x * 1.0
    z[1:] += x[:-1] ** 2
    return z


def _iadd_slice_jax(x):
    return (x * 1.0).at[1:].add(x[:-1] ** 2)


def _overwrite_part(x, v):
    z = x * 3.0
    z[:, 1] = v                 # the untouched part of z still carries x's gradient
    z[0, ::2] = v[0] * 2.0
    return z


def _overwrite_part_jax(x, v):
    z = (x * 3.0).at[:, 1].set(v)
    return z.at[0, ::2].set(v[0] * 2.0)


def _set_int_array(x, v):
    z = x ** 2
    z[np.array([0, 2])] = v[:2, None] * x[1]
    return z


def _set_int_array_jax(x, v):
    return (x ** 2).at[jnp.array([0, 2])].set(v[:2, None] * x[1])


def _iadd_repeated(x, v):
    z = x * 1.0
    z[np.array([0, 0, 2])] += v[:3, None]
    return z


def _iadd_repeated_jax(x, v):
    # NumPy's z[idx] += v is z[idx] = z[idx] + v: with a repeated index the last
    # write wins (np.add.at would accumulate), so the oracle spells it that way
    idx = jnp.array([0, 0, 2])
    z = x * 1.0
    return z.at[idx].set(z[idx] + v[:3, None])


def _set_mask(x):
    z = x * 2.0
    z[x < 0] = 0.0
    return z


def _set_mask_jax(x):
    z = x * 2.0
    return jnp.where(x < 0, 0.0, z)


def _set_plain_into_traced(x):
    z = x * 1.0
    z[0] = np.arange(4.0)       # a constant written into a traced array
    return z


def _set_plain_into_traced_jax(x):
    return (x * 1.0).at[0].set(jnp.arange(4.0))


SETITEM = [
    (_set_int, _set_int_jax, (V,)),
    (_iadd_slice, _iadd_slice_jax, (V,)),
    (_overwrite_part, _overwrite_part_jax, (X, rand(3, seed=12))),
    (_set_int_array, _set_int_array_jax, (X, rand(3, seed=13))),
    (_iadd_repeated, _iadd_repeated_jax, (X, rand(3, seed=14))),
    (_set_mask, _set_mask_jax, (X,)),
    (_set_plain_into_traced, _set_plain_into_traced_jax, (X,)),
]


@pytest.mark.parametrize("np_fn,jax_fn,args", SETITEM,
                         ids=[(s if callable(s[0]) else s.values)[0].__name__[1:] for s in SETITEM])
def test_indexed_assignment(np_fn, jax_fn, args):
    fn = lambda xp, *a: np_fn(*a) if xp is np else jax_fn(*(jnp.asarray(v) for v in a))
    check(fn, *args, argnums=tuple(range(len(args))))
    if len(args) == 1:
        check(fn, *args, hessian=True)


def test_set_with_repeated_index_gradient_goes_to_last_write():
    def f(v):
        z = np.zeros_like(v)
        z[np.array([0, 0, 2])] = v      # v[0] is overwritten by v[1]
        return np.sum(z * np.array([1.0, 2.0, 3.0]))
    assert_close(tg.grad(f)(np.array([1.0, 2.0, 3.0])), np.array([0.0, 1.0, 3.0]), GRAD_RTOL)


def test_indexed_assignment_leaves_caller_array_alone():
    x = V.copy()
    tg.grad(lambda x: np.sum(_iadd_slice(x)))(x)
    np.testing.assert_array_equal(x, V)


# -- ufuncs ------------------------------------------------------------------------------
UNARY = {  # name -> input domain
    "negative": X, "square": X, "sqrt": POS, "exp": X, "expm1": X, "log": POS,
    "log1p": POS, "log2": POS, "log10": POS, "sin": X, "cos": X, "tan": X, "arcsin": UNIT,
    "arccos": UNIT, "arctan": X, "sinh": X, "cosh": X, "tanh": X, "arcsinh": X,
    "arccosh": BIG, "arctanh": UNIT, "absolute": X, "fabs": X, "reciprocal": POS,
    "sign": X, "floor": X * 3, "ceil": X * 3, "rint": X * 3,
}
HESSIAN_UNARY = {"sqrt", "exp", "log", "sin", "tan", "arcsin", "tanh", "arccosh", "reciprocal"}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ufunc(name):
    fn = lambda xp, x: getattr(xp, name)(x)
    check(fn, UNARY[name], hessian=name in HESSIAN_UNARY, fd=name in {"sin", "log1p"})


def test_zero_gradient_ufuncs():
    for name in ("sign", "floor", "ceil", "rint"):
        g = tg.grad(lambda x: np.sum(getattr(np, name)(x) * x))(X * 3)
        assert_close(g, getattr(np, name)(X * 3), GRAD_RTOL, name)


BINARY = {  # name -> (x, y)
    "add": (X, Y), "subtract": (X, Y), "multiply": (X, Y), "divide": (X, POS),
    "true_divide": (X, POS), "power": (POS, Y), "arctan2": (X, Y), "maximum": (X, Y),
    "minimum": (X, Y), "fmax": (X, Y), "fmin": (X, Y), "hypot": (X, Y), "logaddexp": (X, Y),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_ufunc(name):
    fn = lambda xp, x, y: getattr(xp, name)(x, y)
    x, y = BINARY[name]
    check(fn, x, y, argnums=(0, 1))
    check(fn, x, y[0], argnums=(0, 1))                         # broadcasting a row
    check(lambda xp, x: getattr(xp, name)(x, 0.75), x, hessian=name in {"power", "hypot"})


@pytest.mark.parametrize("name", ["equal", "not_equal", "less", "less_equal", "greater",
                                  "greater_equal", "logical_and", "logical_or", "logical_xor"])
def test_boolean_ufunc(name):
    fn = lambda xp, x, y: getattr(xp, name)(x > 0, y > 0) if name.startswith("logical") \
        else getattr(xp, name)(x, y)
    check(fn, X, np.where(X > 0.3, X, Y))
    # no gradient flows through a boolean result
    g = tg.grad(lambda x: np.sum(np.where(fn(np, x, Y), x, 2.0 * x)))(X)
    assert_close(g, np.where(fn(np, X, Y), 1.0, 2.0), GRAD_RTOL)


def test_logical_not():
    check(lambda xp, x: xp.where(xp.logical_not(x > 0), x, x ** 2), X)


def test_ufunc_methods():
    check(lambda xp, x: xp.add.reduce(x, axis=1) if xp is np else jnp.sum(x, axis=1), X)
    check(lambda xp, x: xp.multiply.outer(x[0], x[1]) if xp is np else jnp.outer(x[0], x[1]), X)


# -- NumPy functions ----------------------------------------------------------------------
def _split(xp, x):
    a, b = xp.split(x, [1], axis=0)
    c, d = xp.split(x, 2, axis=1)
    return a.sum() * b, c * d.sum()


FUNCTIONS = [
    case("sum", lambda xp, x: xp.sum(x * x, axis=(0, 1)), X, hessian=True, fd=True),
    case("sum_axis_neg", lambda xp, x: xp.sum(x, axis=-1, keepdims=True) * x, X),
    case("mean", lambda xp, x: xp.mean(x, axis=0), X),
    case("prod", lambda xp, x: xp.prod(x), X, hessian=True),
    case("prod_with_zero", lambda xp, x: xp.prod(x * xp.array([1.0, 0.0, 1.0, 1.0]), axis=1), X),
    case("max", lambda xp, x: xp.max(x, axis=1), X),
    case("min", lambda xp, x: xp.min(x), X),
    case("amax", lambda xp, x: xp.amax(x, axis=0), X),
    case("amin", lambda xp, x: xp.amin(x, axis=0, keepdims=True), X),
    case("argmax", lambda xp, x: xp.argmax(x, axis=1), X),
    case("argmin", lambda xp, x: xp.argmin(x), X),
    case("any", lambda xp, x: xp.where(xp.any(x > 0.5, axis=1, keepdims=True), x, -x), X),
    case("all", lambda xp, x: xp.where(xp.all(x > -0.9, axis=0), x * 2.0, x), X),
    case("any_all_methods", lambda xp, x: (x > 0).any(axis=0) & (x < 0.9).all(axis=0), X),
    case("cumsum", lambda xp, x: xp.cumsum(x, axis=1), X),
    case("cumsum_flat", lambda xp, x: xp.cumsum(x), X),
    case("var", lambda xp, x: xp.var(x, axis=0), X, hessian=True),
    case("var_ddof", lambda xp, x: xp.var(x, ddof=1), X),
    case("std", lambda xp, x: xp.std(x, axis=1), X, fd=True),
    case("round", lambda xp, x: xp.round(x * 10.0, 1) * x + xp.around(x, 2), X),
    case("round_builtin", lambda xp, x: round(x[0, 0] * 7.0, 1) * x, X),
    case("divmod", lambda xp, x: divmod(x, 0.3)[1] * x + xp.divmod(x, 0.7)[0], X),
    case("where", lambda xp, x, y: xp.where(x > y, x, y * 2.0), X, Y, argnums=(0, 1)),
    case("where_scalar", lambda xp, x: xp.where(x > 0, x, 0.0), X),
    case("clip", lambda xp, x: xp.clip(x, -0.5, 0.3), X),
    case("clip_none", lambda xp, x: xp.clip(x, None, 0.3), X),
    case("dot", lambda xp, a, b: xp.dot(a, b), X, B, argnums=(0, 1)),
    case("dot_vec", lambda xp, a, b: xp.dot(a, b), ROW, ROW, argnums=(0, 1), hessian=True),
    case("dot_nd", lambda xp, a, b: xp.dot(a, b), M3, rand(5, 2, seed=15), argnums=(0, 1)),
    case("matmul", lambda xp, a, b: xp.matmul(a, b), M3, rand(5, 2, seed=16), argnums=(0, 1)),
    case("inner", lambda xp, a, b: xp.inner(a, b), X, Y, argnums=(0, 1)),
    case("outer", lambda xp, a, b: xp.outer(a, b), ROW, V, argnums=(0, 1)),
    case("tensordot", lambda xp, a, b: xp.tensordot(a, b, axes=([0, 1], [1, 0])), X, X.T.copy(),
         argnums=(0, 1)),
    case("tensordot_int", lambda xp, a, b: xp.tensordot(a, b, axes=1), X, B, argnums=(0, 1)),
    case("einsum", lambda xp, a, b: xp.einsum("ij,jk->ik", a, b), X, B, argnums=(0, 1),
         hessian=False),
    case("einsum_trace_free", lambda xp, a: xp.einsum("ij,ij->", a, a), X, hessian=True),
    case("einsum_ellipsis", lambda xp, a, b: xp.einsum("...j,j->...", a, b), M3, V,
         argnums=(0, 1)),
    case("einsum_implicit", lambda xp, a, b: xp.einsum("ij,jk", a, b), X, B, argnums=(0, 1)),
    case("reshape", lambda xp, x: xp.reshape(x, (2, 6)), X),
    case("transpose", lambda xp, x: xp.transpose(x, (1, 0)) * ROW[:, None], X),
    case("swapaxes", lambda xp, x: xp.swapaxes(x, 0, 2), M3),
    case("moveaxis", lambda xp, x: xp.moveaxis(x, 0, -1), M3),
    case("squeeze", lambda xp, x: xp.squeeze(x[:, None, :1]), X),
    case("expand_dims", lambda xp, x: xp.expand_dims(x, 1) * M3[:3, :1, :4], X),
    case("broadcast_to", lambda xp, x: xp.broadcast_to(x, (2, 3, 4)) * M3[:2, :, :4], X),
    case("concatenate", lambda xp, x, y: xp.concatenate([x, y[:1]], axis=0), X, Y,
         argnums=(0, 1)),
    case("concatenate_axis1", lambda xp, x: xp.concatenate((x, x ** 2), axis=1), X),
    case("stack", lambda xp, x, y: xp.stack([x, y, x * y], axis=1), X, Y, argnums=(0, 1)),
    case("vstack", lambda xp, x: xp.vstack([x, ROW, x[0]]), X),
    case("hstack", lambda xp, x: xp.hstack([x[0], ROW, x[1] ** 2]), X),
    case("split", _split, X),
    case("flip", lambda xp, x: xp.flip(x, axis=1) * Y, X),
    case("flip_all", lambda xp, x: xp.flip(x) * Y, X),
    case("roll", lambda xp, x: xp.roll(x, 2, axis=1) * Y, X),
    case("roll_flat", lambda xp, x: xp.roll(x, -5) * Y, X),
    case("tile", lambda xp, x: xp.tile(x, (2, 1, 3)), X),
    case("repeat", lambda xp, x: xp.repeat(x, 2, axis=0), X),
    case("repeat_flat", lambda xp, x: xp.repeat(x, 3), V),
    case("pad", lambda xp, x: xp.pad(x, ((1, 0), (2, 1))), X),
    case("pad_edge", lambda xp, x: xp.pad(x, 2, mode="edge"), X),
    case("pad_reflect", lambda xp, x: xp.pad(x, ((1, 2), (0, 1)), mode="reflect"), X),
    case("diag_vec", lambda xp, x: xp.diag(x, k=1), V),
    case("diag_mat", lambda xp, x: xp.diag(x), X),
    case("trace", lambda xp, x: xp.trace(x), X, hessian=True),
    case("trace_offset", lambda xp, x: xp.trace(x, offset=1), X),
    case("triu", lambda xp, x: xp.triu(x), X),
    case("tril", lambda xp, x: xp.tril(x, k=-1), X),
    case("zeros_like", lambda xp, x: xp.zeros_like(x) + x, X),
    case("ones_like", lambda xp, x: xp.ones_like(x) * x, X),
    case("full_like", lambda xp, x: xp.full_like(x, 2.5) * x, X),
    case("norm", lambda xp, x: xp.linalg.norm(x), X, hessian=True, fd=True),
    case("norm_axis", lambda xp, x: xp.linalg.norm(x, axis=1), X),
    case("norm_ord1", lambda xp, x: xp.linalg.norm(x, ord=1, axis=0), X),
    case("norm_inf", lambda xp, x: xp.linalg.norm(x, ord=np.inf), V),
    case("norm_fro", lambda xp, x: xp.linalg.norm(x, "fro"), X),
    case("solve", lambda xp, a, b: xp.linalg.solve(a, b), A, B, argnums=(0, 1)),
    case("solve_vec", lambda xp, a, b: xp.linalg.solve(a, b), A, ROW, argnums=(0, 1)),
    case("inv", lambda xp, a: xp.linalg.inv(a), A, hessian=True),
    case("det", lambda xp, a: xp.linalg.det(a), A, hessian=True, fd=True),
    case("slogdet", lambda xp, a: xp.linalg.slogdet(a)[1] * xp.linalg.slogdet(a)[0], A),
    case("cholesky", lambda xp, a: xp.linalg.cholesky(a @ a.T), A, hessian=True),
]


@pytest.mark.parametrize("fn,args,kw", FUNCTIONS)
def test_function(fn, args, kw):
    run(fn, args, kw)


def test_linalg_slogdet_pair():
    def f(a):
        sign, logdet = np.linalg.slogdet(a)
        return sign * logdet

    def fj(a):
        sign, logdet = jnp.linalg.slogdet(a)
        return sign * logdet
    assert_close(tg.grad(f)(-A), jax.grad(fj)(-A), GRAD_RTOL)


# -- shapes: broadcasting, 0-d, size 0 ---------------------------------------------------
BROADCAST = [
    case("row_col", lambda xp, x, y: x * y, rand(3, 1, seed=20), rand(1, 4, seed=21),
         argnums=(0, 1)),
    case("scalar_array", lambda xp, x, y: xp.sin(x) * y + x, np.float64(0.3), X, argnums=(0, 1)),
    case("rank_promotion", lambda xp, x, y: xp.maximum(x, y), M3, rand(5, seed=22),
         argnums=(0, 1)),
    case("where_broadcast", lambda xp, x, y: xp.where(x > 0, x, y), X, rand(4, seed=23),
         argnums=(0, 1)),
    case("matmul_batch", lambda xp, a, b: a @ b, rand(2, 3, 4, seed=24), B, argnums=(0, 1)),
    case("zero_d", lambda xp, x: xp.exp(x) * x, np.array(0.7), hessian=True, fd=True),
    case("zero_d_sum", lambda xp, x: xp.sum(x ** 2), np.array(-1.5), hessian=True),
    case("size0_sum", lambda xp, x: xp.sum(xp.sin(x)), np.zeros((0,))),
    case("size0_rows", lambda xp, x: xp.sum(x @ B) + xp.sum(x ** 2), np.zeros((0, 4))),
    case("size0_concat", lambda xp, x, y: xp.concatenate([x, y]) * 2.0, np.zeros(0), V,
         argnums=(0, 1)),
    case("size0_mean_axis", lambda xp, x: xp.mean(x, axis=0), np.ones((2, 0))),
]


@pytest.mark.parametrize("fn,args,kw", BROADCAST)
def test_shapes(fn, args, kw):
    run(fn, args, kw)


def test_float32_in_float32_gradient_out():
    x32 = X.astype(np.float32)
    f = lambda x: np.sum(np.sin(x) * x * 2.0 + x ** 2) / 3.0
    g = tg.grad(f)(x32)
    assert g.dtype == np.float32
    gj = jax.grad(lambda x: jnp.sum(jnp.sin(x) * x * 2.0 + x ** 2) / 3.0)(x32)
    np.testing.assert_allclose(g, gj, rtol=1e-5)
    # mixed: a float32 argument next to a float64 one keeps its own dtype
    g32, g64 = tg.grad(lambda a, b: np.sum(a * b), argnums=(0, 1))(x32, Y)
    assert (g32.dtype, g64.dtype) == (np.float32, np.float64)
    assert_close(g32, Y.astype(np.float32), 1e-6)
    # a float64 cotangent or tangent does not turn float32 results into float64
    (gv,) = tg.vjp(lambda x: np.sin(x) * 2.0, x32)[1](np.ones((3, 4)))
    assert gv.dtype == np.float32
    assert_close(gv, 2.0 * np.cos(x32), 1e-6)
    out, tangent = tg.jvp(lambda x: np.sin(x) * 2.0, (x32,), (np.ones((3, 4)),))
    assert out.dtype == tangent.dtype == np.float32
    h = tg.hessian(lambda x: np.sum(x ** 3))(x32[0])
    assert h.dtype == np.float32
    np.testing.assert_allclose(h, np.diag(6 * x32[0]), rtol=1e-5)


FLOAT32_CASES = {
    **{name: (lambda name: lambda xp, x: getattr(xp, name)(x))(name) for name in UNARY},
    "mean_var": lambda xp, x: xp.mean(x, axis=0) * xp.var(x),
    "matmul_solve": lambda xp, x: xp.linalg.solve(A.astype(np.float32), x.T @ x),
    "norm": lambda xp, x: xp.linalg.norm(x, axis=1),
    "softmax": lambda xp, x: xp.exp(x) / xp.sum(xp.exp(x), axis=1, keepdims=True),
    "where_clip": lambda xp, x: xp.where(x > 0, xp.clip(x, 0.1, 0.5), x * 2.0),
}


@pytest.mark.parametrize("name", sorted(FLOAT32_CASES))
def test_float32_values_and_gradients(name):
    fn = FLOAT32_CASES[name]
    x = UNARY.get(name, X).astype(np.float32)
    w = rand(*np.shape(fn(np, x)), seed=50, low=0.5, high=1.5).astype(np.float32)
    out = tg.vjp(lambda x: fn(np, x), x)[0]
    assert out.dtype == fn(np, x).dtype == np.float32
    np.testing.assert_allclose(out, fn(np, x), rtol=1e-6)
    g = tg.grad(lambda x: np.sum(fn(np, x) * w))(x)
    gj = jax.grad(lambda x: jnp.sum(fn(jnp, x) * w))(x)
    assert g.dtype == gj.dtype == np.float32
    np.testing.assert_allclose(g, gj, rtol=2e-5, atol=2e-5 * float(np.max(np.abs(gj))))


def test_python_float_arguments():
    check(lambda xp, a, b: xp.sin(a) * b + a ** 2, 0.4, 1.3, argnums=(0, 1), hessian=False)
    g = tg.grad(lambda a: a * a * 3.0)(2.0)
    assert isinstance(g, (float, np.floating, np.ndarray)) and np.shape(g) == ()
    assert g == 12.0
    assert tg.hessian(lambda a: a ** 4)(2.0) == 48.0
    # a Python int left out of argnums is a constant
    assert tg.grad(lambda x, n: x ** n)(2.0, 3) == 12.0


def test_pytree_arguments_and_results():
    params = {"w": X, "b": ROW, "extra": [V, (np.array(0.5),)]}

    def model(xp, p, x):
        h = xp.tanh(x @ p["w"] + p["b"])
        return xp.sum(h ** 2) * p["extra"][1][0] + xp.sum(p["extra"][0] ** 2)

    g = check(model, params, rand(2, 3, seed=30), argnums=0)
    assert set(g) == {"w", "b", "extra"} and isinstance(g["extra"], list)
    assert isinstance(g["extra"][1], tuple) and g["extra"][1][0].shape == ()

    # pytree results through jacobian and vjp
    f = lambda xp, x: {"a": xp.sin(x), "b": (x[:2] * 2.0, [xp.sum(x)])}
    check(f, V)
    jac = tg.jacobian(lambda x: f(np, x))(V)
    jj = jax.jacobian(lambda x: f(jnp, x))(V)
    assert_close(jac, jj, GRAD_RTOL)
    out, pullback = tg.vjp(lambda x: f(np, x), V)
    ct = {"a": np.ones(5), "b": (np.array([1.0, -1.0]), [np.array(2.0)])}
    (gx,) = pullback(ct)
    assert_close(gx, np.cos(V) + np.array([2.0, -2.0, 0, 0, 0]) + 2.0, GRAD_RTOL)


def test_has_aux():
    def loss(w, x):
        pred = x @ w
        return np.mean(pred ** 2), {"pred": pred, "n": 3}

    def loss_j(w, x):
        pred = x @ w
        return jnp.mean(pred ** 2), {"pred": pred, "n": 3}

    x = rand(3, 4, seed=31)
    g, aux = tg.grad(loss, has_aux=True)(ROW, x)
    gj, auxj = jax.grad(loss_j, has_aux=True)(ROW, x)
    assert_close(g, gj, GRAD_RTOL)
    assert_close(aux["pred"], auxj["pred"], 1e-12)
    assert aux["n"] == 3
    (v, aux2), g2 = tg.value_and_grad(loss, has_aux=True)(ROW, x)
    assert_close(v, np.mean((x @ ROW) ** 2), 1e-12)
    assert_close(g2, gj, GRAD_RTOL)
    assert_close(aux2["pred"], x @ ROW, 1e-12)
    assert isinstance(aux2["pred"], np.ndarray)


def test_array_of_traced_values():
    f = lambda xp, a: xp.sum(xp.array([a[0] * a[1], xp.sin(a[2]), a[1] ** 2]) * V[:3])
    check(f, V, hessian=True)
    g = tg.grad(lambda a: np.sum(np.asarray([[a[0], 1.0], [a[1], a[0] * 2]]) ** 2))(V[:2])
    assert_close(g, np.array([2 * V[0] + 8 * V[0], 2 * V[1]]), GRAD_RTOL)


def test_finite_differences_of_a_composite():
    f = lambda x, w: np.sum(np.tanh(x @ w) ** 2) + np.linalg.norm(w) + np.mean(np.exp(-x))
    args = (X, B)
    for i in (0, 1):
        g = tg.grad(f, argnums=i)(*args)
        want = finite_diff_grad(f, args, i)
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)


def test_max_over_a_nonempty_axis_of_a_size_zero_array():
    x = np.zeros((0, 3))
    assert tg.grad(lambda x: np.sum(np.max(x, axis=1)))(x).shape == (0, 3)
    with pytest.raises(tg.TraceError, match="zero-size array"):
        tg.grad(lambda x: np.sum(np.max(x, axis=0)))(x)
