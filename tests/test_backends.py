"""The code generator and the JAX backend agree with the reference interpreter, on every
primitive case of the registry and on derivative graphs."""
import linecache

import numpy as np
import pytest
from conftest import bounded, zero_buffers

import tracegrad as tg
from tracegrad.runtime import run
from tracegrad.runtime.codegen import GUARD_FAILED, generate

from primitive_cases import CASES

jax = pytest.importorskip("jax")
from tracegrad.runtime.jax_backend import JaxCompiled  # noqa: E402

ALL = [pytest.param(case, id=f"{name}-{i}") for name, cases in sorted(CASES.items())
       for i, case in enumerate(cases)]


def _signature(param):
    """A case's primitive and operand dtypes."""
    case = param.values[0]
    return case.prim, tuple(np.asarray(a).dtype.str for a in case.args)


# The JAX backend compiles every case (about 30 ms each): by default every primitive at
# every operand dtype signature it has cases for (381 of them), rotating over its shapes
# and tags, filled up to 400; all 996 with TRACEGRAD_EXHAUSTIVE=1
JAX_CASES = bounded(ALL, 400, key=_signature)


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


@pytest.mark.parametrize("case", JAX_CASES)
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


# -- the JAX backend gives NumPy's numbers and errors where XLA gives others ----------------
def _jax_after_valid_call(f, valid, *args):
    """``f`` under the JAX backend, traced (and compiled) on ``valid`` inputs, then called
    on ``args``: the check must happen at run time, not while tracing."""
    jf = tg.jit(f, backend="jax")
    jf(*valid)
    return jf(*args)


def _update(x, i):
    y = x.copy()
    y[i] = 1.0
    return y


def _accumulate(x, i):
    y = x.copy()
    y[:, i] += 1.0
    return y


def _scan_gather(x, i):
    def body(carry, k):
        total, rows = carry
        return (total + rows[k], rows), rows[k] * 2.0
    (total, _), ys = tg.scan(body, (np.zeros(3), x), i)
    return total, ys


OUT_OF_BOUNDS = [
    ("getitem", lambda x, i: x[i], np.array([1, 7])),
    ("negative", lambda x, i: x[i], np.array([-5, 0])),
    ("take", lambda x, i: np.take(x, i, axis=0), np.array([0, 4])),
    ("take_along_axis", lambda x, i: np.take_along_axis(x, i[:, None] + np.zeros((1, 3), int),
                                                        axis=0), np.array([2, 4])),
    ("second_axis", lambda x, i: x[:, i], np.array([0, 3])),
    ("scalar", lambda x, i: x[i[0]], np.array([4, 0])),
    ("set", _update, np.array([1, 4])),
    ("add", _accumulate, np.array([-4, 1])),
    ("scan_body", _scan_gather, np.array([0, 4])),
]


@pytest.mark.parametrize("name,f,bad", OUT_OF_BOUNDS, ids=[c[0] for c in OUT_OF_BOUNDS])
def test_jax_backend_raises_numpys_index_error(name, f, bad):
    x = np.arange(12.0).reshape(4, 3)
    good = np.array([0, -1])
    numpy_backend = tg.jit(f)
    numpy_backend(x, good)
    with pytest.raises(IndexError) as expected:
        numpy_backend(x, bad)      # the NumPy code generator: NumPy's own error
    with pytest.raises(IndexError) as got:
        _jax_after_valid_call(f, (x, good), x, bad)
    assert str(got.value) == str(expected.value)
    assert "is out of bounds for axis" in str(got.value)
    # in-range indices, negative ones wrapping, still give NumPy's numbers
    for a, b in zip(tg.jit(f, backend="jax")(x, good), f(x, good)) if name == "scan_body" \
            else [(tg.jit(f, backend="jax")(x, good), f(x, good))]:
        np.testing.assert_array_equal(np.asarray(a), b)


def _bitwise_equal(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    np.testing.assert_array_equal(got, want)
    if want.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]),
                                      np.signbit(want[~np.isnan(want)]))


I8 = np.array([-128, -7, -1, 0, 1, 7, 127], np.int8)
U8 = np.array([0, 1, 2, 7, 128, 255, 200], np.uint8)
I64 = np.array([np.iinfo(np.int64).min, -7, -1, 0, 1, 7, np.iinfo(np.int64).max])
F64 = np.array([-np.inf, -2.5, -0.0, 0.0, 0.5, np.nan, np.inf])
# no subnormal results: XLA flushes them to zero (docs/backends.md)
F32 = np.array([3e38, -3e38, -0.0, 0.0, np.nan, np.inf, -np.inf], np.float32)

INTEGER_AND_EDGE_OPS = [
    ("floor_divide", lambda x, y: x // y, I8, I8[::-1]),
    ("floor_divide_by_zero", lambda x, y: x // y, I64, np.zeros(7, np.int64)),
    ("remainder_by_zero", lambda x, y: x % y, I8, np.zeros(7, np.int8)),
    ("remainder", lambda x, y: np.remainder(x[:, None], y), I8, I8),
    ("divmod", lambda x, y: np.divmod(x[:, None], y)[0], U8, U8),
    ("mixed_signs", lambda x, y: x[:, None] // y, I8, U8),
    ("int_min_by_minus_one", lambda x, y: (x // y, x % y), I64[:1], -np.ones(1, np.int64)),
    ("power_wraps", lambda x, y: x[:, None] ** y, I8, U8),
    ("abs_int_min", lambda x, y: np.remainder(np.abs(x), np.abs(y)), I8, I8[::-1]),
    ("wrap_add_mul", lambda x, y: (x + y, x * y, x - y), U8, U8[::-1]),
    ("float_floor_divide", lambda x, y: x[:, None] // y, F64, F64),
    ("float_remainder", lambda x, y: x[:, None] % y, F64, F64),
    ("float16_remainder", lambda x, y: x.astype(np.float16)[:, None] % y.astype(np.float16),
     F64, F64),
    ("true_divide_broadcast", lambda x, y: x[:, None] / y, F32, F32),
    ("true_divide_scalar", lambda x, y: x / 3.0, F64 * 1.1, F64),
    ("int_true_divide", lambda x, y: x[:, None] / y, I8, U8),
    ("sign_of_zero", lambda x, y: np.sign(x), F64, F64),
    ("maximum_ties_and_nan", lambda x, y: (np.maximum(x[:, None], y), np.minimum(x[:, None], y),
                                           np.fmax(x[:, None], y), np.fmin(x[:, None], y)),
     F64, F64),
    ("float16_maximum", lambda x, y: np.maximum(x.astype(np.float16)[:, None],
                                                y.astype(np.float16)), F64, F64),
    ("clip_nan", lambda x, y: np.clip(x, -1.0, 1.0), F64, F64),
    ("argsort_nan_and_zero", lambda x, y: np.argsort(np.concatenate([x, -x, y]),
                                                     kind="stable"), F64, F64[::-1]),
    ("sqrt_by_power", lambda x, y: (x ** 0.5, x ** 2, x ** -1), F64, F64),
    ("bool_times_inf", lambda x, y: (x > 0) * y, F64, F64[::-1]),
    ("rint_half_even", lambda x, y: np.rint(x * 0 + np.arange(-3.5, 3.5)), F64, F64),
    ("int8_to_float16", lambda x, y: np.log1p(x) + y.astype(np.float32), I8, F32),
    ("float64_to_float16", lambda x, y: (x * 1.0000001).astype(np.float16),
     np.linspace(-70000.0, 70000.0, 20001), F64),
    ("int_compared_with_float16", lambda x, y: x == x.astype(np.float16), I64, I64),
    ("uint8_cumsum", lambda x, y: (np.cumsum(x), np.sum(x), np.cumsum(x > 1)), U8, U8),
    ("zero_sums", lambda x, y: (np.sum(-np.abs(x)[:, None] * 0.0, axis=1),
                                np.cumsum(np.full(3, -0.0))), F64, F64),
    ("complex_argmax", lambda x, y: (np.argmax(x + 1j * y), np.argmin(x[:, None] + 1j * y, axis=0)),
     np.array([1.0, 2.0, 2.0, -1.0, 2.0, 0.0, 2.0]), np.array([0.0, 1.0, 3.0, 5.0, 3.0, 1.0, -1.0])),
    ("complex_argmax_nan", lambda x, y: np.argmax(x + 1j * y), F64[::-1], F64),
]


@pytest.mark.parametrize("name,f,x,y", INTEGER_AND_EDGE_OPS,
                         ids=[c[0] for c in INTEGER_AND_EDGE_OPS])
def test_jax_backend_gives_numpys_integer_and_edge_values(name, f, x, y):
    with np.errstate(all="ignore"):
        want = f(x, y)
        got = tg.jit(f, backend="jax")(x, y)
    for g, w in zip(got, want) if isinstance(want, tuple) else [(got, want)]:
        _bitwise_equal(g, w)


def test_jax_backend_raises_numpys_error_for_negative_integer_powers():
    f = tg.jit(lambda x, y: x ** y, backend="jax")
    x = np.array([2, 3], np.int64)
    np.testing.assert_array_equal(f(x, np.array([3, 0])), [8, 1])
    with pytest.raises(ValueError) as expected:
        x ** np.array([1, -1])
    with pytest.raises(ValueError) as got:
        f(x, np.array([1, -1]))
    assert str(got.value) == str(expected.value)


def test_jax_backend_checks_only_graphs_that_can_fail():
    """checkify's error value is read on the host after each call (a device sync): only
    graphs with integer indexing or integer powers carry it, sub-graphs included."""
    from tracegrad.runtime.jax_backend import needs_checks

    x, i = np.arange(4.0), np.array([1, 2])
    assert not needs_checks(tg.trace(lambda x: np.sin(x[1:]) ** 2.0, x))
    assert needs_checks(tg.trace(lambda x, i: x[i], x, i))
    assert needs_checks(tg.trace(lambda x, i: x ** i, i, i))
    assert needs_checks(tg.trace(
        lambda x, i: tg.scan(lambda c, k: (c + x[k], c), 0.0, i)[0], x, i))
    f = tg.jit(lambda x: np.sin(x[1:]) * 2.0, backend="jax")
    np.testing.assert_allclose(f(x), np.sin(x[1:]) * 2.0, rtol=1e-15)


def test_jax_backend_exponential_integrals_in_a_checked_graph():
    """Ei and E1 where the graph carries checks (an integer index): jax.scipy's expi, a
    vmap over branches with while loops, is refused by checkify there; the lowering runs
    SciPy's on the host, with SciPy's values at the edges too."""
    scipy_special = pytest.importorskip("scipy.special")
    x = np.array([-700.0, -3.0, -1e-8, 0.0, 1e-9, 0.5, 40.0, np.inf, -np.inf, np.nan])
    i = np.array([1, 5])

    def f(x, i):
        return scipy_special.expi(x) + scipy_special.exp1(np.abs(x))[i].sum()
    got = tg.jit(f, backend="jax")(x, i)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, f(x, i))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint64])
def test_jax_backend_small_integer_indices_on_a_long_axis(dtype):
    # JAX wraps a negative index in the index's own dtype: int8 cannot hold 300
    x = np.arange(300.0)
    i = np.array([3, 127] if dtype == np.uint64 or np.dtype(dtype).kind == "u" else [-100, 5],
                 dtype)

    def update(x, i):
        y = x.copy()
        y[i] = -1.0
        return y

    for f in (lambda x, i: x[i], update):
        np.testing.assert_array_equal(tg.jit(f, backend="jax")(x, i), f(x, i))


@pytest.mark.parametrize("f", [lambda x: np.arctan2(x + 0.0, -1.0),
                               lambda x: np.arctan2(x + np.zeros(3), -1.0),
                               lambda x: np.arctan2((x + 0j + 0.0).real, -1.0),
                               lambda x: 1.0 / (x + 0.0),
                               lambda x: tg.fori_loop(0, 2, lambda i, c: c + 0.0, x),
                               lambda x: tg.cond(True, lambda v: v + 0.0, lambda v: v, x)],
                         ids=["scalar", "array", "complex", "reciprocal", "loop", "cond"])
@pytest.mark.parametrize("x", [np.array(-0.0), np.array([-0.0]),
                               np.array([-0.0, 0.0, 1.5], np.float32)], ids=["0d", "1", "f32"])
def test_jax_backend_keeps_the_sign_rule_of_adding_zero(f, x):
    # -0.0 + 0.0 is +0.0; XLA (and LLVM) would fold x + 0.0 to x and keep -0.0
    want = f(x)
    for backend in ("numpy", "jax"):
        got = np.asarray(tg.jit(f, backend=backend)(x))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)   # XLA's arctan: an ulp apart
        assert np.array_equal(np.signbit(got), np.signbit(want)), backend


def test_jax_backend_assigns_a_value_with_leading_unit_axes_as_numpy():
    """``y[1:3] = v`` with ``v`` of shape (1, 2, 5): NumPy drops the leading unit axis, and
    so must the JAX lowering (found by the loader fuzzer)."""
    def f(x, v):
        y = x * 1.0
        y[1:3] = v
        return y
    x = np.arange(20.0).reshape(4, 5)
    v = np.linspace(-1.0, 1.0, 10).reshape(1, 2, 5)
    want = f(x.copy(), v)
    for backend in ("numpy", "jax"):
        np.testing.assert_array_equal(tg.jit(f, backend=backend)(x, v), want)


def _bits(a):
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}"))


def test_gradient_of_disjoint_slices_is_added_into_one_buffer_with_the_same_bits():
    # the adjoint of slicing: each slice's gradient scattered into zeros, then summed;
    # for disjoint slices the code adds them all into one buffer of zeros. -0.0 in a
    # slice's gradient must still come out +0.0 (0.0 + -0.0), NaN and inf unchanged.
    def f(x):
        return (np.sum(x[:, :2] ** 2) + np.sum(x[:, 2:4] * 3.0)
                + np.sum(np.sin(x[:, 5:])))

    x = np.array([[-0.0, 1.0, np.nan, 2.0, 5.0, -0.0], [0.5, -0.0, 3.0, np.inf, 1.0, 2.0]])
    graph = tg.trace(tg.grad(f), x)
    compiled = generate(graph)
    assert zero_buffers(compiled.source) == 1, compiled.source
    out, ref = compiled(x)[0], run(graph, [x])[0]
    np.testing.assert_array_equal(_bits(out), _bits(ref))
    assert out[0, 0] == 0 and not np.signbit(out[0, 0]) and not np.signbit(out[1, 1])

    def overlapping(x):        # slices that overlap: each into zeros of its own, as before
        return np.sum(x[:, :3] ** 2) + np.sum(x[:, 2:] * 3.0)

    graph = tg.trace(tg.grad(overlapping), x)
    compiled = generate(graph)
    assert zero_buffers(compiled.source) == 2, compiled.source
    np.testing.assert_array_equal(_bits(compiled(x)[0]), _bits(run(graph, [x])[0]))


def test_an_output_the_caller_copies_into_an_input_is_computed_into_it():
    def update(w, g):
        return w - 0.5 * g

    w, g = np.arange(6.0).reshape(2, 3), np.full((2, 3), 3.0)
    graph = tg.trace(update, w, g)
    compiled = generate(graph, inplace={0: 0})
    assert compiled.inplace == {0: 0} and "out=x0" in compiled.source
    w_in = w.copy()
    out = compiled(w_in, g)[0]
    assert out is w_in
    np.testing.assert_array_equal(out, w - 0.5 * g)

    def reads_after(w, g):      # the old value is read after the update: no writing into it
        new = w - 0.5 * g
        return new, np.sum(w * new)

    graph = tg.trace(reads_after, w, g)
    compiled = generate(graph, inplace={0: 0})
    assert compiled.inplace == {}
    w_in = w.copy()
    compiled(w_in, g)
    np.testing.assert_array_equal(w_in, w)


def test_jax_lowering_of_a_node_without_operands():
    # a structural zero (made by passes) has no operand: the lowering's evaluate meets no
    # lowered value there and must still apply the JAX rule
    from tracegrad.ir import Graph
    graph = Graph()
    x = graph.add_input(shape=(3,), dtype=np.dtype(np.float64))
    z = graph.add_node("zeros", (), {"shape": (3,), "dtype": np.dtype(np.float64)},
                       shape=(3,), dtype=np.dtype(np.float64))
    graph.outputs = [graph.add_node("add", (x, z), {}, shape=(3,),
                                    dtype=np.dtype(np.float64))]
    v = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(np.asarray(JaxCompiled(graph)(v)[0]), v)
