"""The NumPy kernels written for speed give the very values of their plain formulations.

- ``select`` (np.where) on big masks goes through integer bit masks: the same bits as
  ``np.where`` (signed zeros, NaN payloads, weak Python scalars, broadcasting, dtypes; a
  +0 branch, relu's and max pooling's, in fewer passes);
- ``conv2d`` fills the im2col matrix offset by offset (or pixel by pixel, flattened or
  not) and ``conv_transpose2d`` adds its columns back offset by offset: the numbers of
  ``np.tensordot`` over the strided windows (in float64, to float32's or float64's
  accuracy: the products group their sums per image, so the rounding differs);
- ``max_pool2d``'s VJP works offset by offset: all of g to the first maximum of each
  window in row-major order (a NaN counting as the maximum, np.argmax's rule), summed
  window by window where windows overlap, like ``np.add.at`` over argmax positions.
"""
import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

from tracegrad.ir import REGISTRY

SELECT = REGISTRY["select"].impl


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8", "bool", "float16"])
def test_select_gives_np_where_bits(dtype):
    rng = np.random.default_rng(0)
    c = rng.random((70, 90)) < 0.5
    x = (rng.standard_normal((70, 90)) * 10).astype(dtype)
    y = (rng.standard_normal(90) * 10).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[0, :4] = [np.nan, -0.0, np.inf, -np.inf]
    zero = np.zeros((), dtype)
    neg = np.negative(zero) if np.dtype(dtype).kind == "f" else zero     # -0.0: not +0
    for a, b in ((x, y), (x, 0), (x, 2.5), (1.5, x), (y, x), (x, zero), (zero, x), (0, x),
                 (x, neg), (neg, y), (zero, zero)):
        got, want = SELECT(c, a, b), np.where(c, a, b)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.flags.c_contiguous and got.flags.writeable
        assert got.tobytes() == want.tobytes()


def _windows(xp, khw, stride, dilation):
    n, c, h, w = xp.shape
    out = tuple((size - d * (k - 1) - 1) // s + 1
                for size, k, s, d in zip((h, w), khw, stride, dilation))
    st = xp.strides
    return as_strided(xp, (n, c) + out + tuple(khw),
                      (st[0], st[1], st[2] * stride[0], st[3] * stride[1], st[2] * dilation[0],
                       st[3] * dilation[1]))


def _conv_reference(x, w, stride, padding, dilation):
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    cols = _windows(xp, w.shape[2:], stride, dilation)
    out = np.tensordot(cols, w, axes=((1, 4, 5), (1, 2, 3)))
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))


def _tol(dtype):
    return 1e-5 if dtype == "float32" else 1e-12


# (input, weight, stride, padding, dilation): each of conv2d's kernels at least once
CONV_CASES = [
    ((4, 3, 11, 9), (5, 3, 3, 3), (1, 1), (0, 0), (1, 1)),     # few pixels: one NHWC product
    ((2, 2, 9, 10), (3, 2, 3, 2), (2, 1), (1, 2), (1, 2)),
    ((3, 4, 6, 7), (2, 4, 5, 6), (1, 1), (0, 0), (1, 1)),      # more offsets than pixels
    ((2, 5, 8, 8), (4, 5, 1, 1), (3, 2), (0, 1), (1, 1)),
    ((2, 3, 12, 11), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1)),    # per image, flattened
    ((2, 2, 14, 13), (3, 2, 2, 3), (1, 1), (0, 2), (2, 2)),    # ... dilated
    ((2, 3, 20, 19), (4, 3, 3, 2), (2, 1), (1, 0), (2, 1)),    # per image, strided
    ((2, 3, 9, 9), (2, 3, 4, 4), (1, 1), (0, 0), (2, 2)),      # wide kernel, dilated
    ((2, 2, 9, 30), (3, 2, 2, 20), (1, 1), (0, 0), (1, 1)),    # image too wide to flatten
    ((2, 3, 20, 18), (2, 3, 3, 3), (1, 1), (1, 1), (1, 1)),    # weight gradient per sample
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, wshape, stride, padding, dilation", CONV_CASES)
def test_conv2d_equals_tensordot_over_windows(dtype, shape, wshape, stride, padding, dilation):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal(wshape).astype(dtype)
    got = REGISTRY["conv2d"].impl(x, w, stride=stride, padding=padding, dilation=dilation)
    want = _conv_reference(x.astype(np.float64), w.astype(np.float64), stride, padding,
                           dilation)
    assert got.dtype == np.dtype(dtype) and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=_tol(dtype), atol=_tol(dtype) * np.abs(want).max())
    # the weight gradient is a conv2d whose kernel is the image-sized cotangent
    g = rng.standard_normal(got.shape).astype(dtype)
    gx, gw = REGISTRY["conv2d"].vjp(g, got, x, w, stride=stride, padding=padding,
                                    dilation=dilation)
    win = _windows(np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding)), w.shape[2:],
                   stride, dilation).astype(np.float64)
    want_gw = np.einsum("nchwij,nohw->ocij", win, g.astype(np.float64))
    np.testing.assert_allclose(gw, want_gw, rtol=1e-4 if dtype == "float32" else 1e-12,
                               atol=1e-4 if dtype == "float32" else 1e-12)
    # the input gradient is a conv_transpose2d: each window's share added back
    want_gx = np.zeros(tuple(x.shape[:2]) + tuple(n + 2 * p for n, p in zip(x.shape[2:], padding)))
    gwin = _windows(want_gx, w.shape[2:], stride, dilation)
    share = np.einsum("nohw,ocij->nchwij", g.astype(np.float64), w.astype(np.float64))
    for idx in np.ndindex(*share.shape[2:]):        # overlapping windows: one at a time
        view = gwin[(slice(None), slice(None)) + idx]
        view += share[(slice(None), slice(None)) + idx]
    want_gx = want_gx[:, :, padding[0]:padding[0] + x.shape[2], padding[1]:padding[1] + x.shape[3]]
    np.testing.assert_allclose(gx, want_gx, rtol=1e-4 if dtype == "float32" else 1e-12,
                               atol=1e-4 if dtype == "float32" else 1e-12)


# (input, weight, stride, padding, output_padding, dilation)
TRANSPOSE_CASES = [
    ((2, 3, 5, 4), (3, 2, 3, 3), (1, 1), (0, 0), (0, 0), (1, 1)),    # few pixels: batch at once
    ((2, 3, 9, 10), (3, 4, 3, 2), (1, 1), (1, 0), (0, 0), (1, 1)),   # flattened, cropped
    ((2, 2, 8, 9), (2, 3, 2, 3), (1, 1), (0, 1), (0, 1), (1, 2)),    # ... dilation, out padding
    ((2, 3, 9, 8), (3, 8, 3, 2), (1, 1), (1, 1), (1, 0), (2, 1)),    # ... from shifted copies
    ((2, 3, 8, 9), (3, 2, 3, 3), (2, 3), (1, 2), (1, 2), (1, 1)),    # strided, per image
    ((1, 2, 3, 4), (2, 2, 4, 3), (3, 2), (2, 1), (2, 0), (1, 1)),    # strided, few pixels
    ((2, 3, 7, 6), (3, 16, 2, 3), (1, 1), (2, 1), (0, 1), (1, 2)),   # many channels: a conv
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, wshape, stride, padding, output_padding, dilation",
                         TRANSPOSE_CASES)
def test_conv_transpose2d_equals_window_sums(dtype, shape, wshape, stride, padding,
                                             output_padding, dilation):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(dtype)
    w = rng.standard_normal(wshape).astype(dtype)
    got = REGISTRY["conv_transpose2d"].impl(x, w, stride=stride, padding=padding,
                                            output_padding=output_padding, dilation=dilation)
    # every input pixel's (C_out, kH, kW) share, added at r*s + i*d of a full-size output
    (h, wd), (kh, kw) = shape[2:], wshape[2:]
    full = np.zeros((shape[0], wshape[1]) + tuple(
        (n - 1) * s + d * (k - 1) + 1 + p + op
        for n, k, s, d, p, op in zip((h, wd), (kh, kw), stride, dilation, padding, output_padding)))
    share = np.einsum("nchw,coij->nohwij", x.astype(np.float64), w.astype(np.float64))
    for r in range(h):
        for q in range(wd):
            full[:, :, r * stride[0]:r * stride[0] + dilation[0] * (kh - 1) + 1:dilation[0],
                 q * stride[1]:q * stride[1] + dilation[1] * (kw - 1) + 1:dilation[1]] += \
                share[:, :, r, q]
    want = full[:, :, padding[0]:padding[0] + got.shape[2], padding[1]:padding[1] + got.shape[3]]
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=_tol(dtype), atol=_tol(dtype) * np.abs(want).max())


def _max_pool_vjp_reference(g, x, kernel, stride, padding, dilation):
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding), constant_values=-np.inf)
    win = _windows(xp, kernel, stride, dilation)
    flat = win.reshape(win.shape[:4] + (-1,))
    first = np.argmax(flat, axis=-1)                      # NaN first, else first maximum
    n, c, ho, wo = g.shape
    gxp = np.zeros(xp.shape, g.dtype)
    for a in range(ho):                                   # windows in order
        for b in range(wo):
            i, j = np.divmod(first[:, :, a, b], kernel[1])
            rows = a * stride[0] + i * dilation[0]
            cols = b * stride[1] + j * dilation[1]
            nn, cc = np.meshgrid(np.arange(n), np.arange(c), indexing="ij")
            np.add.at(gxp, (nn, cc, rows, cols), g[:, :, a, b])
    ph, pw = padding
    return gxp[:, :, ph:ph + x.shape[2], pw:pw + x.shape[3]]


@pytest.mark.parametrize("kernel, stride, padding, dilation", [
    ((2, 2), (2, 2), (0, 0), (1, 1)),
    ((3, 3), (1, 1), (1, 1), (1, 1)),       # overlapping windows, three or more sharing
    ((3, 2), (2, 1), (1, 1), (1, 2)),
])
def test_max_pool2d_vjp_first_maximum_window_by_window(kernel, stride, padding, dilation):
    rng = np.random.default_rng(2)
    x = np.round(rng.standard_normal((2, 3, 9, 8)) * 2) / 2     # many ties
    x[0, 0, 2, 3] = np.nan
    params = dict(kernel=kernel, stride=stride, padding=padding, dilation=dilation)
    prim = REGISTRY["max_pool2d"]
    out = prim.impl(x, **params)
    win = _windows(np.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in padding),
                          constant_values=-np.inf), kernel, stride, dilation)
    np.testing.assert_array_equal(out, np.max(win, axis=(4, 5)))
    g = rng.standard_normal(out.shape) * 1e3 + 1.0 / 3.0
    with np.errstate(invalid="ignore"):
        (gx,) = prim.vjp(g, out, x, **params)
    np.testing.assert_array_equal(gx, _max_pool_vjp_reference(g, x, **params))
