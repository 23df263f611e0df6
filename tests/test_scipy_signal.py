"""tracegrad.scipy.signal against scipy.signal: values, shapes and dtypes of every mode
(SciPy's 'same' centring and 'valid' swap), and derivatives in both inputs against
central differences of SciPy's own functions; jit on both backends, vmap, second order."""
import numpy as np
import pytest
from conftest import bounded, central_diff

ss = pytest.importorskip("scipy.signal")

import tracegrad as tg  # noqa: E402
from tracegrad.scipy import signal as ts  # noqa: E402

MODES = ["full", "same", "valid"]
# (shape of in1, shape of in2): 1-d, 2-d, 3-d; in2 larger than in1; even and odd lengths
SHAPES = [((5,), (3,)), ((4,), (4,)), ((3,), (6,)), ((1,), (4,)),
          ((4, 5), (2, 3)), ((3, 4), (5, 6)), ((4, 3), (2, 2)), ((2, 5), (3, 5)),
          ((3, 4, 2), (2, 2, 2)), ((2, 2, 3), (3, 2, 4))]
VALID_OK = {i for i, (a, b) in enumerate(SHAPES)
            if all(x >= y for x, y in zip(a, b)) or all(y >= x for x, y in zip(a, b))}
CASES = [(i, mode) for i in range(len(SHAPES)) for mode in MODES
         if mode != "valid" or i in VALID_OK]


def _inputs(i, complex_=False, seed=0):
    rng = np.random.default_rng(100 * i + seed)
    a, b = (rng.standard_normal(s) for s in SHAPES[i])
    if complex_:
        a = a + 1j * rng.standard_normal(a.shape)
        b = b + 1j * rng.standard_normal(b.shape)
    return a, b


def _case_id(case):
    i, mode = case
    return f"{'x'.join(map(str, SHAPES[i][0]))}-{'x'.join(map(str, SHAPES[i][1]))}-{mode}"


def _pairs(i):
    """(ours, SciPy's) for every function that applies to the shapes of case i."""
    out = [(ts.convolve, lambda a, b, m: ss.convolve(a, b, m, method="direct")),
           (lambda a, b, m: ts.convolve(a, b, m, method="fft"),
            lambda a, b, m: ss.convolve(a, b, m, method="fft")),
           (ts.correlate, lambda a, b, m: ss.correlate(a, b, m, method="direct")),
           (ts.fftconvolve, ss.fftconvolve)]
    if len(SHAPES[i][0]) == 2:
        out += [(ts.convolve2d, ss.convolve2d), (ts.correlate2d, ss.correlate2d)]
    return out


@pytest.mark.parametrize("case", CASES, ids=_case_id)
@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
def test_values_shapes_dtypes_match_scipy(case, complex_):
    i, mode = case
    a, b = _inputs(i, complex_)
    for ours, theirs in _pairs(i):
        want = theirs(a, b, mode)
        got = ours(a, b, mode)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", bounded(CASES, 14), ids=_case_id)
def test_gradients_in_both_inputs_match_finite_differences(case):
    i, mode = case
    a, b = _inputs(i, seed=1)
    for ours, theirs in _pairs(i):
        shape = theirs(a, b, mode).shape
        w = np.random.default_rng(i).uniform(0.5, 1.5, shape)

        def f(x, y):
            return np.sum(ours(x, y, mode) * w)

        ga, gb = tg.grad(f, (0, 1))(a, b)
        np.testing.assert_allclose(ga, central_diff(lambda x: np.sum(theirs(x, b, mode) * w), a),
                                   rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(gb, central_diff(lambda y: np.sum(theirs(a, y, mode) * w), b),
                                   rtol=1e-6, atol=1e-7)
        # forward mode agrees with reverse mode
        ta, tb = (np.random.default_rng(7).standard_normal(s) for s in SHAPES[i])
        _, tangent = tg.jvp(f, (a, b), (ta, tb))
        np.testing.assert_allclose(tangent, np.sum(ga * ta) + np.sum(gb * tb), rtol=1e-10)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_jit_second_order_and_vmap(backend):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((3, 2))

    def f(x, y):
        return np.sum(ts.convolve(x, y, "same") ** 2) + np.sum(ts.correlate2d(x, y, "valid") ** 3)

    jf = tg.jit(tg.grad(f, (0, 1)), backend=backend)
    ga, gb = jf(a, b)
    np.testing.assert_allclose(ga, central_diff(lambda x: f(x, b), a), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gb, central_diff(lambda y: f(a, y), b), rtol=1e-6, atol=1e-7)
    # the mixed second derivative d/db (df/da) . v, against differences of the gradient
    v = rng.standard_normal(a.shape)
    hvp = tg.grad(lambda y: np.sum(tg.grad(f)(a, y) * v))(b)
    fd = central_diff(lambda y: np.sum(tg.grad(f)(a, y) * v), b)
    np.testing.assert_allclose(hvp, fd, rtol=1e-6, atol=1e-7)
    # vmap over a batch of signals, one kernel
    batch = rng.standard_normal((3, 7))
    kern = rng.standard_normal(3)
    fn = tg.jit(tg.vmap(lambda s, k: ts.fftconvolve(s, k, "valid"), in_axes=(0, None)),
                backend=backend)
    np.testing.assert_allclose(fn(batch, kern),
                               np.stack([ss.fftconvolve(s, kern, "valid") for s in batch]),
                               rtol=1e-12, atol=1e-12)


def test_integer_and_mixed_dtypes_are_scipys():
    rng = np.random.default_rng(4)
    ai, bi = rng.integers(-9, 9, (4, 5)), rng.integers(-9, 9, (2, 3))
    f32 = rng.standard_normal(3).astype(np.float32)
    for mode in MODES:
        for ours, theirs in [(ts.convolve, ss.convolve), (ts.correlate, ss.correlate),
                             (ts.convolve2d, ss.convolve2d), (ts.correlate2d, ss.correlate2d),
                             (ts.fftconvolve, ss.fftconvolve)]:
            want, got = theirs(ai, bi, mode), ours(ai, bi, mode)
            assert got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)
        got = ts.convolve(ai, bi, mode, method="fft")
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, ss.convolve(ai, bi, mode))
        for ours, theirs in [(ts.convolve, ss.convolve), (ts.fftconvolve, ss.fftconvolve)]:
            assert ours(f32, f32, mode).dtype == theirs(f32, f32, mode).dtype == np.float32
            assert ours(ai[0], f32, mode).dtype == theirs(ai[0], f32, mode).dtype
    # the gradient in a float input of a convolution with an integer one
    g = tg.grad(lambda k: np.sum(ts.convolve(ai, k, "valid")))(bi * 1.0)
    np.testing.assert_allclose(g, central_diff(lambda k: np.sum(ss.convolve(ai, k, "valid")),
                                               bi * 1.0), rtol=1e-6)


def test_fftconvolve_axes_broadcast_like_scipy():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((3, 8)), rng.standard_normal((1, 4))
    for mode in MODES:
        np.testing.assert_allclose(ts.fftconvolve(a, b, mode, axes=1),
                                   ss.fftconvolve(a, b, mode, axes=1), rtol=1e-12, atol=1e-12)
    g = tg.grad(lambda x: np.sum(ts.fftconvolve(x, b, "same", axes=[-1]) ** 2))(a)
    np.testing.assert_allclose(
        g, central_diff(lambda x: np.sum(ss.fftconvolve(x, b, "same", axes=[-1]) ** 2), a),
        rtol=1e-6, atol=1e-7)


def test_errors():
    a, b = np.ones((3, 4)), np.ones((2, 5))
    with pytest.raises(ValueError, match="at least as large"):
        ts.convolve(a, b, "valid")
    with pytest.raises(ValueError, match="same dimensionality"):
        ts.convolve(np.ones(3), b)
    with pytest.raises(ValueError, match="mode"):
        ts.correlate(a, b, "middle")
    with pytest.raises(tg.TraceError, match="boundary='wrap' is not supported"):
        tg.grad(lambda x: np.sum(ts.convolve2d(x, b, boundary="wrap")))(a)
    with pytest.raises(tg.TraceError, match="fillvalue=1.5 is not supported.*np.pad"):
        ts.correlate2d(a, b, fillvalue=1.5)
    with pytest.raises(ValueError, match="2-D"):
        ts.convolve2d(np.ones(3), np.ones(2))
