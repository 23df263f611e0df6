"""Arrays a traced function makes (np.zeros, np.empty, np.full, np.eye, np.arange, ...,
np.copy of a plain array) and then writes with traced values: item, slice, fancy and
boolean assignment, in-place operators, views, ``out=`` of ufuncs and reductions,
``np.copyto``, ``np.fill_diagonal``, ``np.place``, ``np.put``. Values against the same
function run by NumPy, derivatives against central differences of it, traced and under
``tg.jit`` on both backends and ``tg.vmap``. A plain array the caller passed in stays the
caller's: a traced value written into it is refused, naming the line."""
import numpy as np
import pytest
import scipy.linalg
import scipy.optimize
from conftest import assert_close, central_diff

import tracegrad as tg

X = np.array([0.7, -1.3, 2.1, 0.4])
BATCH = np.stack([X, X[::-1] * 0.5, X + 1.0])


def items(x):
    z = np.zeros(5)
    z[0] = x[0]
    z[1:4] = x[1:] * 2.0
    z[-1] = 3.0                     # a constant written stays a constant
    return np.sum(z * z) + z[2]


def fancy_and_boolean(x):
    z = np.ones((2, 4))
    z[[0, 1], [1, 2]] = x[:2]
    m = np.arange(8).reshape(2, 4) % 3 == 0          # a mask the function makes
    z[m] = x[1:]
    return np.sum(z * np.cos(z))


def in_place(x):
    z = np.full(4, 2.0)
    z += x
    z *= x
    z -= 1.0
    z /= 3.0
    z **= 2
    return np.sum(z)


def traced_fill(x):
    z = np.full((2, 4), x[0], dtype=np.float64)
    z[1] = x
    w = np.full(3, x[2])
    return np.sum(np.sin(z)) + np.prod(w)


def ufunc_out(x):
    z = np.empty(4)
    np.tanh(x, out=z)
    np.multiply(z, x, out=z)
    r = np.add(z, 1.0, out=z)       # returns its out
    return np.sum(r * z)


def traced_buffer_out(x):
    a = np.outer(x, x)
    np.tanh(a, out=a)               # scikit-learn's MLP activations
    np.exp(a, out=a, where=np.eye(4, dtype=bool))
    return np.sum(a)


def reduction_out(x):
    z = np.zeros(4)
    m = np.zeros(4)
    np.sum(np.outer(x, x), axis=0, out=z)
    np.mean(np.outer(x, x * x), axis=1, out=m)
    return np.dot(z, m)


def diagonal_put_place(x):
    z = np.eye(4)
    np.fill_diagonal(z, x * x)
    w = np.zeros(6)
    np.put(w, [0, 2, -1], x[:3])
    np.place(w, np.arange(6) % 2 == 1, x[2:])       # cycles x[2:] like NumPy
    return np.sum(z @ x) + np.sum(w ** 2)


def copyto_where(x):
    z = np.zeros(4)
    np.copyto(z, x, where=np.arange(4) % 2 == 0)
    np.copyto(z[1:3], x[0])
    return np.sum(z * x)


def views(x):
    z = np.zeros((3, 4))
    row = z[1]
    row[:] = x                      # through a view into z
    col = z[:, 2]
    col += x[:3]                    # and an in-place operator on another
    z.T[0, 0] = x[3]
    return np.sum(z ** 2) + np.sum(row)


def creators(x):
    a = np.arange(4.0)
    a[1] = x[0]
    eye = np.identity(4)
    eye[0] = x
    lin = np.linspace(0.0, 1.0, 4)
    lin[2:] = x[:2]
    e = np.eye(4, 3)
    e[3] = x[1:]
    return np.sum(a * lin) + np.sum(eye @ x) + np.sum(e)


def likes_and_copies(x):
    p = np.ones(4)
    z = np.zeros_like(p)
    z[:] = x
    w = np.copy(p)
    w[1] = x[2]
    e = np.empty_like(p)
    e[...] = 2.0 * x
    o = np.ones_like(x)
    o[0] = x[3]
    f = np.full_like(p, x[1])
    return np.sum(z * w + e * o + f)


def library_write(x):
    # scipy.optimize.rosen_hess fills its own np.zeros with traced values
    return np.sum(scipy.optimize.rosen_hess(x) * np.outer(x, x))


def constants_to_scipy(x):
    # fresh arrays nothing traced was written into are NumPy's arrays for SciPy
    a = np.eye(4) * 3.0
    a[0, 1] = 1.0
    b = np.zeros(4)
    b[:] = 1.0
    s = scipy.linalg.solve(a, b)
    assert type(s) is np.ndarray
    return np.sum(s * x)


FUNCTIONS = [items, fancy_and_boolean, in_place, traced_fill, ufunc_out, traced_buffer_out,
             reduction_out, diagonal_put_place, copyto_where, views, creators,
             likes_and_copies, library_write, constants_to_scipy]
MODES = ["grad", "jit_numpy", "jit_jax", "vmap"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_fresh_arrays_match_numpy(f, mode):
    want = f(X)
    fd = central_diff(f, X)
    if mode == "grad":
        value, g = tg.value_and_grad(f)(X)
        assert_close(value, want, 1e-12)
        assert_close(g, fd, 1e-6, floor=1e-6)
    elif mode.startswith("jit"):
        backend = mode[4:]
        assert_close(tg.jit(f, backend=backend)(X), want, 1e-12)
        jg = tg.jit(tg.grad(f), backend=backend)
        assert_close(jg(X), fd, 1e-6, floor=1e-6)
        assert_close(jg(X[::-1].copy()), central_diff(f, X[::-1].copy()), 1e-6, floor=1e-6)
    else:
        assert_close(tg.vmap(f)(BATCH), np.array([f(r) for r in BATCH]), 1e-12)


def test_hessian_through_writes_matches_finite_differences():
    h = tg.hessian(items)(X)
    fd = np.stack([central_diff(lambda y: tg.grad(items)(y)[i], X) for i in range(4)])
    assert_close(h, fd, 1e-5, floor=1e-6)


def test_integer_and_bool_fresh_arrays_keep_numpy_dtypes():
    def f(x):
        n = np.zeros(4, dtype=np.int64)
        n[1] = 3
        b = np.ones(4, dtype=bool)
        b[0] = False
        z = np.zeros(4, dtype=np.float32)
        z[:] = x                    # cast to float32, as NumPy's assignment
        assert z.dtype == np.float32 and n.dtype == np.int64 and b.dtype == bool
        return np.sum(z * n * b)
    g = tg.grad(f)(X)
    assert_close(g, np.array([0.0, 3.0, 0.0, 0.0]), 1e-7)
    assert tg.grad(f)(X).dtype == np.float64


def test_plain_data_stays_plain():
    seen = {}

    def f(x):
        seen["array"] = type(np.array([1.0, 2.0]))
        seen["asarray"] = type(np.asarray([1.0]))
        seen["zeros"] = type(np.zeros(2))
        z = np.zeros(3)
        seen["flags"] = z.flags.c_contiguous         # ndarray attributes of a constant
        z.fill(2.0)                                   # and its in-place methods
        seen["hist"] = np.histogram(z, bins=2)[0]     # NumPy's own, not traced
        z[0] = x[0]
        return np.sum(z)
    assert_close(tg.grad(f)(X), np.array([1.0, 0, 0, 0]), 1e-12)
    assert seen["array"] is np.ndarray and seen["asarray"] is np.ndarray
    assert seen["zeros"] is tg.tracer.Tracer and seen["flags"]
    np.testing.assert_array_equal(seen["hist"], [0, 3])
    assert tg.grad(f)(X)[0] == 1.0 and f(X) == X[0] + 4.0


def test_a_write_by_compiled_code_into_a_constant_is_seen():
    def f(x):
        z = np.zeros(4)
        y = z + x                   # uses z before the write
        np.asarray(z)[:] = 5.0      # NumPy's own write into the constant's memory
        return np.sum(y * z)        # y saw zeros, z now holds fives
    assert_close(tg.grad(f)(X), np.full(4, 5.0), 1e-12)
    assert_close(tg.jit(f)(X), f(X), 1e-12)
    assert_close(tg.jit(tg.grad(f))(X), np.full(4, 5.0), 1e-12)


BUFFER = np.zeros(4)


def test_the_callers_array_stays_the_callers():
    def into_global(x):
        BUFFER[1] = x[0]  # STORE_GLOBAL
        return np.sum(x)

    def into_argument(x, buf):
        buf[:] = x  # STORE_ARG
        return np.sum(buf)

    def out_argument(x, buf):
        np.sin(x, out=buf)
        return np.sum(x)

    for fn, args, token in ((into_global, (X,), "STORE_GLOBAL"),
                            (into_argument, (X, BUFFER), "STORE_ARG"),
                            (out_argument, (X, BUFFER), "np.sin(x, out=buf)")):
        with pytest.raises((tg.TraceError, ValueError)) as info:
            tg.grad(fn)(*args)
        err = info.value if isinstance(info.value, tg.TraceError) else info.value.__cause__
        assert isinstance(err, tg.TraceError), info.value
        assert "plain NumPy array" in str(err) and "test_fresh_arrays.py:" in str(err)
        line = int(str(err).rsplit("test_fresh_arrays.py:", 1)[1].split(")")[0])
        import inspect
        source = inspect.getsource(fn).splitlines()[line - fn.__code__.co_firstlineno]
        assert token in source, source
    np.testing.assert_array_equal(BUFFER, 0.0)

    def copy_first(x, buf):         # what the message suggests
        buf = np.copy(buf)
        buf[:] = x
        return np.sum(buf * buf)
    assert_close(tg.grad(copy_first)(X, BUFFER), 2 * X, 1e-12)


def test_write_errors_follow_numpy():
    def shape(x):
        z = np.zeros(3)
        np.add(x, x, out=z)
        return np.sum(z)

    def cast(x):
        n = np.zeros(4, dtype=np.int64)
        np.multiply(x, 2.0, out=n)
        return np.sum(x)
    with pytest.raises(tg.TraceError, match="non-broadcastable"):
        tg.grad(shape)(X)
    with pytest.raises(tg.TraceError, match="same_kind"):
        tg.grad(cast)(X)
    with pytest.raises(ValueError):
        shape(X)
    with pytest.raises(TypeError):
        cast(X)


def test_building_a_constant_element_by_element_records_no_node_per_write():
    n = 30

    def f(x):
        k = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                k[i, j] += 1.0 / (1 + abs(i - j))     # NumPy's own writes, in place
        y = k @ x                   # uses k
        k[0, 0] = 7.0               # after a use: recorded, y keeps the k it saw
        k[1] *= 2.0
        c = np.copy(k)
        c[2, 2] = x[0]              # the copy is its own array
        return np.sum(y) + np.sum(k @ x) + np.sum(c)
    x = np.linspace(0.0, 1.0, n)
    assert len(tg.trace(f, x).ops()) < 25
    assert_close(tg.value_and_grad(f)(x)[0], f(x), 1e-12)
    assert_close(tg.grad(f)(x), central_diff(f, x), 1e-6, floor=1e-6)
    assert_close(tg.jit(f)(x), f(x), 1e-12)


def test_library_code_writing_into_its_own_and_traced_arrays():
    base = pytest.importorskip("sklearn.neural_network._base")

    def activations(x):
        a = np.outer(x, x[::-1]) * 0.5
        base.inplace_tanh(a)        # np.tanh(X, out=X) on a traced array
        base.inplace_logistic(a)
        base.inplace_softmax(a)
        return np.sum(a * np.arange(16.0).reshape(4, 4))

    def rosenbrock(x):
        return np.sum(scipy.optimize.rosen_hess_prod(x, x)) + np.sum(
            scipy.optimize.rosen_der(x) * x)
    for f in (activations, rosenbrock):
        assert_close(tg.grad(f)(X), central_diff(f, X), 1e-6, floor=1e-6)
        assert_close(tg.jit(f, backend="jax")(X), f(X), 1e-12)


def test_compiled_code_calling_numpys_creation_functions_gets_ndarrays():
    """Cython code (np.random's samplers, a bit generator's state setter) calls np.arange /
    np.empty through the numpy module with no Python frame of its own: it must get NumPy's
    arrays, not fresh traced ones (it would crash on them), while the user's own np.zeros
    on the same line's neighbours stays fresh."""
    rng = np.random.default_rng(7)
    start = rng.bit_generator.state

    def f(x):
        rng.bit_generator.state = start                 # a Cython property setter
        picks = np.random.default_rng(3).choice(4, size=3, replace=False)
        z = np.zeros(4)
        z[picks] = x[picks] * rng.standard_normal(3)
        return np.sum(z ** 2)

    g = tg.grad(f)(X)
    np.testing.assert_allclose(g, central_diff(f, X), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(tg.jit(f)(X), f(X), rtol=1e-13)


def test_out_of_the_new_numpy_functions_is_written_as_numpys():
    def f(x):
        z = np.zeros(4, bool)
        np.isneginf(x - 3.0, out=z)
        c = np.zeros(2)
        np.compress([True, False, False, True], x, out=c)
        m = np.zeros((2, 2))
        np.linalg.multi_dot([np.eye(2), np.eye(2) * x[1], np.eye(2)], out=m)
        return z, c, m
    for got, want in zip(tg.jit(f)(X), f(X)):
        np.testing.assert_array_equal(got, want)
    g = tg.grad(lambda x: np.sum(f(x)[1]) + np.sum(f(x)[2]))(X)
    np.testing.assert_allclose(g, [1.0, 2.0, 0.0, 1.0])


def _add_into_0d(x):
    o = np.zeros(())
    np.add(x.sum(), 1.0, out=o)
    return o


def _multiply_into_0d(x):
    o = np.zeros(())
    return np.multiply(x[0], x[1], out=o)       # out= gives back its out array


def _sum_into_0d(x):
    o = np.empty(())
    return np.sum(x * x, out=o)


def _sin_into_0d_twice(x):
    o = np.zeros(())
    r = np.sin(x[2], out=o)
    return r, o


@pytest.mark.parametrize("f", [_add_into_0d, _multiply_into_0d, _sum_into_0d,
                               _sin_into_0d_twice], ids=lambda f: f.__name__)
def test_out_into_a_0d_array_gives_back_the_array(f):
    """NumPy's out= into a 0-d array returns that array (a 0-d ndarray, not a NumPy scalar,
    as the same ufunc without out= gives): under tg.jit on both backends too."""
    want = f(X)
    wants = want if isinstance(want, tuple) else (want,)
    assert all(type(w) is np.ndarray and w.ndim == 0 for w in wants)
    for backend in ("numpy", "jax"):
        got = tg.jit(f, backend=backend)(X)
        gots = got if isinstance(got, tuple) else (got,)
        for g, w in zip(gots, wants, strict=True):
            assert np.shape(g) == () and not isinstance(g, (np.generic, float)), (backend, g)
            if backend == "numpy":
                assert type(g) is np.ndarray, g
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-15)
        if backend == "numpy" and len(gots) == 2:
            assert np.shares_memory(gots[0], gots[1])       # one array, as in NumPy

    def loss(x):
        return np.sum(np.stack(f(x)) ** 2) if isinstance(want, tuple) else f(x) ** 2
    for d in (tg.grad(loss), tg.jit(tg.grad(loss)), tg.jit(tg.grad(loss), backend="jax")):
        assert_close(np.asarray(d(X)), central_diff(loss, X), 1e-7)
