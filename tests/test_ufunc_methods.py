"""Ufunc methods on traced values (``tracegrad/tracer/np_ufuncs.py``): ``reduce``,
``accumulate``, ``reduceat``, ``outer`` and ``at``, generated over ufuncs x methods x
shapes and axes. Each case is checked against NumPy's own method (values, dtype and
shape), through ``tg.jit`` on the NumPy and the JAX backend, and its gradient against
central finite differences. The ufuncs of the methods and the new ones (``frexp``,
``ldexp``, ``vecdot``, ...) called on traced values are checked the same way, and so are
the dtype fixes of issue 22 (``dtype=`` of the reductions, products with Python numbers,
``np.tile`` a new array). A bounded slice runs by default; TRACEGRAD_EXHAUSTIVE=1 runs
every case.
"""
import numpy as np
import pytest
from conftest import bounded, central_diff

import tracegrad as tg

_rng = np.random.default_rng(2211)
X = _rng.uniform(0.5, 2.0, (3, 4))
X3 = _rng.uniform(0.5, 2.0, (2, 3, 2))
W = _rng.uniform(-1.0, 1.0, (5, 5, 5))      # weights for the scalar f's gradient

# binary ufuncs whose methods are differentiable on [0.5, 2]
BINARY = [np.add, np.subtract, np.multiply, np.divide, np.maximum, np.minimum, np.fmax,
          np.fmin, np.logaddexp, np.logaddexp2, np.hypot, np.power, np.copysign]
# NumPy 2.4's own power.reduce and arctan2.reduce along a contiguous axis are not the
# fold ((x0 op x1) op x2) ... its documentation defines (nor any order of it): along a
# strided axis they are, and so is tracegrad's, which is checked there
NOT_FOLDED = {np.power, np.arctan2}


def _reduce_cases():
    out = []
    for uf in BINARY:
        for x, axes in [(X, [0, 1, -1, None, (0, 1)]), (X3, [1, (0, 2), None])]:
            for axis in axes:
                for keep in (False, True):
                    try:
                        uf.reduce(x, axis=axis, keepdims=keep)
                    except ValueError:
                        continue            # not reorderable: NumPy refuses (test below)
                    if uf in NOT_FOLDED and axis not in (0,):
                        continue
                    out.append((f"{uf.__name__}.reduce-{x.ndim}d-axis{axis}-keep{keep}",
                                lambda x, uf=uf, a=axis, k=keep: uf.reduce(x, axis=a, keepdims=k),
                                x))
    return out


def _other_cases():
    out = []
    for uf in BINARY:
        name = uf.__name__
        for x, axis in [(X, 0), (X, 1), (X3, 2)]:
            out.append((f"{name}.accumulate-{x.ndim}d-axis{axis}",
                        lambda x, uf=uf, a=axis: uf.accumulate(x, axis=a), x))
        out.append((f"{name}.outer", lambda x, uf=uf: uf.outer(x[0], x[:, 1:3]), X))
        out.append((f"{name}.outer-scalar", lambda x, uf=uf: uf.outer(x[1, 2], x[0]), X))
        for idx, axis in [([0, 2, 1, 3], 1), ([0, 2], 0), ([1, 1, 0], 1)]:
            if uf in NOT_FOLDED and axis != 0:
                continue
            out.append((f"{name}.reduceat-{idx}-axis{axis}",
                        lambda x, uf=uf, i=idx, a=axis: uf.reduceat(x, i, axis=a), X))
        # at: repeated indices apply again, in NumPy's order
        for key, tag, value in [
                ((np.array([0, 2, 0, 0]), np.array([1, 1, 1, 3])), "repeats", lambda x: x[0]),
                (np.array([2, 0, 2]), "rows", lambda x: x[1]),
                ((slice(None), 1), "slice", lambda x: x[:, 2])]:
            def at(x, uf=uf, key=key, value=value):
                z = x * 1.0
                uf.at(z, key, value(x))
                return z
            out.append((f"{name}.at-{tag}", at, X))
    return out


CASES = _reduce_cases() + _other_cases()
DEFAULT = bounded(CASES, 28, key=lambda c: c[0].split("-")[0])
JAX_SLICE = bounded(CASES, 6, key=lambda c: c[0].split(".")[1].split("-")[0])


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    rtol = 1e-6 if want.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * 0.1, equal_nan=True)


def _scalar(fn):
    def f(x):
        out = fn(x)
        shape = np.shape(out)
        return np.sum(W[tuple(slice(0, n) for n in shape) + (0,) * (3 - len(shape))] * out)
    return f


@pytest.mark.parametrize("name,fn,x", DEFAULT, ids=[c[0] for c in DEFAULT])
def test_value_and_gradient(name, fn, x):
    want = fn(x.copy())
    _same(tg.jit(fn)(x), want)
    g = tg.grad(_scalar(fn))(x)
    fd = central_diff(_scalar(fn), x)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name,fn,x", JAX_SLICE, ids=[c[0] for c in JAX_SLICE])
def test_jax_backend(name, fn, x):
    want = fn(x.copy())
    got = tg.jit(fn, backend="jax")(x)
    _same(np.asarray(got), want)
    g = tg.jit(tg.grad(_scalar(fn)), backend="jax")(x)
    np.testing.assert_allclose(np.asarray(g), tg.grad(_scalar(fn))(x), rtol=1e-10, atol=1e-12)


# -- dtypes, keywords and NumPy's errors ---------------------------------------------------------
I8 = (X * 40).astype(np.int8)


@pytest.mark.parametrize("fn", [
    lambda x: np.add.reduce(x, axis=1),                  # int64: NumPy's sum accumulator
    lambda x: np.subtract.reduce(x, axis=1),             # int8: the loop's dtype
    lambda x: np.multiply.reduce(x, axis=0, dtype=np.int16),
    lambda x: np.add.accumulate(x, axis=1),
    lambda x: np.maximum.accumulate(x, axis=1),
    lambda x: np.add.reduceat(x, [0, 2], axis=1),
    lambda x: np.bitwise_or.reduce(x, axis=0),
    lambda x: np.logical_and.reduce(x > 20, axis=1),
    lambda x: np.add.outer(x[0], x[1]),
    lambda x: np.gcd.reduce(x, axis=1),
    lambda x: np.add.reduce(x, axis=1, dtype=np.float32),
])
def test_integer_dtypes(fn):
    _same(tg.jit(fn)(I8), fn(I8))


@pytest.mark.parametrize("fn", [
    lambda x: np.add.reduce(x, axis=1, where=x > 1.0),
    lambda x: np.maximum.reduce(x, axis=1, where=x > 1.0, initial=0.25),
    lambda x: np.subtract.reduce(x, axis=1, where=x > 1.0, initial=1.0),
    lambda x: np.hypot.reduce(x, axis=0, initial=1.0),
    lambda x: np.logaddexp.reduce(x, axis=1, where=x > 1.0),
    lambda x: np.logaddexp.reduce(x, axis=(0, 1), keepdims=True),
    lambda x: np.multiply.reduce(x, axis=None, initial=2.0),
    lambda x: np.add.reduce(x[:, :0], axis=1),
    lambda x: np.logaddexp.reduce(x[:, :0], axis=1),
    lambda x: np.fmax.reduce(x, axis=0, where=x > 1.0, initial=0.0),
])
def test_where_and_initial(fn):
    _same(tg.jit(fn)(X), fn(X))
    if not np.all(np.isfinite(fn(X))):
        return                  # an empty logaddexp: -inf, no finite differences
    g = tg.grad(_scalar(fn))(X)
    np.testing.assert_allclose(g, central_diff(_scalar(fn), X), rtol=1e-6, atol=1e-6)


def test_logaddexp_reduce_is_stable_and_its_gradient_the_softmax():
    x = np.array([[800.0, 801.0, -3.0], [-900.0, -901.0, -902.0]])
    f = lambda x: np.logaddexp.reduce(x, axis=1)   # noqa: E731
    _same(tg.jit(f)(x), f(x))
    g = tg.grad(lambda x: np.sum(f(x)))(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(g, e / e.sum(axis=1, keepdims=True), rtol=1e-12)


def test_add_at_accumulates_repeated_indices_into_a_traced_array():
    idx = np.array([0, 3, 0, 0, 2])

    def f(x, t):
        z = x * 0.0
        np.add.at(z, idx, t)
        np.subtract.at(z, [1, 1], t[:2])
        return z

    x, t = np.arange(4.0), np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    for fn in (f, tg.jit(f), tg.jit(f, backend="jax")):
        _same(np.asarray(fn(x, t)), f(x.copy(), t))
    jac = tg.jacobian(f, argnums=(0, 1))(x, t)[1]      # (x traced too: z is a traced array)
    want = np.zeros((4, 5))
    want[idx, np.arange(5)] = 1.0
    want[1, :2] -= 1.0
    np.testing.assert_array_equal(jac, want)


def test_at_with_traced_indices_and_views():
    def f(x, i):
        z = x.copy()
        np.add.at(z[1], i, x[0, :3])       # into a view: the write reaches z
        np.multiply.at(z, (i, i), 2.0)     # traced indices read under a guard
        return z

    i = np.array([2, 0, 2])
    jf = tg.jit(f)
    _same(jf(X, i), f(X.copy(), i))
    i2 = np.array([1, 1, 0])
    _same(jf(X, i2), f(X.copy(), i2))      # the guard retraces for other indices
    scalar = _scalar(lambda x: f(x, i))
    np.testing.assert_allclose(tg.grad(scalar)(X), central_diff(scalar, X), rtol=1e-7, atol=1e-8)


def test_unary_at_and_int_target():
    def f(x):
        z = x * 1.0
        np.negative.at(z, [0, 0, 2])
        k = np.floor(x * 3).astype(np.int64)
        np.add.at(k, [1, 1], 1.5)          # truncated back into int64 at each step
        return z, k

    got, want = tg.jit(f)(X), f(X.copy())
    for a, b in zip(got, want):
        _same(a, b)


@pytest.mark.parametrize("call,phrase", [
    (lambda x: np.subtract.reduce(x, axis=(0, 1)), "not reorderable"),
    (lambda x: np.maximum.reduce(x[:0], axis=0), "identity"),
    (lambda x: np.subtract.reduce(x, where=x > 1), "initial"),
    (lambda x: np.add.accumulate(x, out=np.empty((3, 4))), "out="),
    (lambda x: np.add.at(_CALLERS, [0], x[0, 0]), "plain NumPy array"),
], ids=["not-reorderable", "no-identity", "where-without-initial", "out",
        "plain-target"])
def test_numpy_errors_name_the_line(call, phrase):
    """(``_CALLERS`` is the caller's plain array: an ``at`` into it is refused and it stays
    unchanged; into an array the function makes, ``at`` is recorded: see below.)"""
    with pytest.raises(tg.TraceError, match="test_ufunc_methods.py") as info:
        tg.jit(call)(X)
    assert phrase in str(info.value)


# -- the ufuncs added with them ---------------------------------------------------------------------
UFUNC_CALLS = [
    ("frexp", lambda x: np.frexp(x * 3.0)[0] * np.frexp(x)[1]),
    ("modf", lambda x: np.modf(x * 3.0)[0] + np.modf(-x)[1]),
    ("ldexp", lambda x: np.ldexp(x, 3) + np.ldexp(x, np.array([1, -2, 0, 4]))),
    ("copysign", lambda x: np.copysign(x, x - 1.2)),
    ("nextafter", lambda x: np.nextafter(x, 0.0)),
    ("vecdot", lambda x: np.vecdot(x, x[::-1])),
    ("vecdot-axis", lambda x: np.vecdot(x, x[::-1] * 1.5, axis=0)),
    ("matvec", lambda x: np.matvec(x, x[0])),
    ("vecmat", lambda x: np.vecmat(x[:, 0], x)),
    ("float32", lambda x: np.vecdot(x.astype(np.float32), x.astype(np.float32))),
]


@pytest.mark.parametrize("name,fn", UFUNC_CALLS, ids=[c[0] for c in UFUNC_CALLS])
def test_new_ufuncs_on_traced_values(name, fn):
    want = fn(X)
    _same(tg.jit(fn)(X), want)
    if name in ("vecdot", "matvec", "frexp", "copysign"):
        _same(np.asarray(tg.jit(fn, backend="jax")(X)), want)
    if want.dtype == np.float64:
        g = tg.grad(_scalar(fn))(X)
        np.testing.assert_allclose(g, central_diff(_scalar(fn), X), rtol=1e-6, atol=1e-6)


def test_integer_ufuncs_on_traced_values():
    k = (X * 10).astype(np.int64)

    def f(k):
        return (np.gcd(k, 6), np.lcm(k, 4), np.left_shift(k, 2), np.right_shift(k, 1),
                np.bitwise_count(k), np.signbit(k - 12), np.frexp(k)[1], np.spacing(k * 1.0))

    for fn in (tg.jit(f), tg.jit(f, backend="jax")):
        for a, b in zip(fn(k), f(k)):
            _same(np.asarray(a), b)


# -- issue 22's dtype and copy fixes ----------------------------------------------------------------
B = np.arange(6).reshape(2, 3)


@pytest.mark.parametrize("fn", [np.sum, np.prod, np.mean, np.cumsum, np.cumprod, np.nansum,
                                np.nanprod, np.nanmean, np.nancumsum, np.var, np.std,
                                np.nanvar, np.nanstd])
@pytest.mark.parametrize("dtype", [np.int32, np.int16, np.float32])
def test_reduction_dtype_keyword(fn, dtype):
    f = lambda b: fn(b * 3 - 4, dtype=dtype)    # noqa: E731
    _same(tg.jit(f)(B), f(B))


@pytest.mark.parametrize("fn", [
    lambda a: np.dot(a, 2.0), lambda a: np.dot(2.0, a), lambda a: np.dot(a, 2),
    lambda a: np.inner(a, 2.0), lambda a: np.tensordot(a, 2.0, 0),
    lambda a: np.einsum("i,->i", a, 2.0), lambda a: np.dot(a, np.float32(2.0)),
    lambda a: np.dot(a.astype(np.int8), 300), lambda a: np.dot(a, np.array(2.0)),
])
def test_products_with_python_numbers_promote_as_numpy(fn):
    a = np.array([1.5, -2.0, 0.25], np.float32)
    _same(tg.jit(fn)(a), fn(a))


@pytest.mark.parametrize("shape", [(), (1,), (3,), (1, 3)])
@pytest.mark.parametrize("reps", [(), 1, 2, (1, 1), (2, 1)])
def test_tile_is_a_new_array(shape, reps):
    x = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    f = lambda x: np.tile(x, reps)     # noqa: E731
    for out in (tg.vjp(f, x)[0], tg.jvp(f, (x,), (x,))[0], tg.jit(f)(x)):
        _same(out, np.tile(x, reps))
        assert not np.shares_memory(out, x) and out.flags.writeable


def test_shift_operators():
    def f(k):
        j = k * 1
        j <<= 1
        j >>= np.int64(1) + k % 2
        return k << 2, k >> 1, 3 << k, 100 >> k, j

    k = np.arange(-3, 6)
    for a, b in zip(tg.jit(f)(k), f(k.copy())):
        _same(a, b)


@pytest.mark.parametrize("fn", [
    lambda x: np.frexp(x)[0] * np.frexp(x)[1], lambda x: np.logaddexp.reduce(x),
    lambda x: np.maximum.accumulate(x), lambda x: np.subtract.outer(x, x),
    lambda x: np.add.reduceat(x, [0, 2]), lambda x: np.vecdot(x, x),
    lambda x: (lambda z: (np.multiply.at(z, [0, 0, 2], x[1]), z)[1])(x * 1.0),
    lambda x: (lambda z: (np.add.at(z, [0, 0, 2], x[1]), z)[1])(x * 1.0),
], ids=["frexp", "logaddexp.reduce", "maximum.accumulate", "subtract.outer", "add.reduceat",
        "vecdot", "multiply.at", "add.at"])
def test_under_vmap(fn):
    got = tg.vmap(fn)(X)
    _same(got, np.stack([fn(row) for row in X]))


_CALLERS = np.zeros(3)


def test_at_into_an_array_the_function_makes():
    def f(x):
        z = np.zeros(3)
        np.add.at(z, [0, 2, 0], x)
        return z
    x = np.array([1.5, -2.0, 4.0])
    np.testing.assert_array_equal(tg.jit(f)(x), f(x))
    np.testing.assert_array_equal(tg.jacobian(f)(x), [[1, 0, 1], [0, 0, 0], [0, 1, 0]])
    assert not _CALLERS.any()
