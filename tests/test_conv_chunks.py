"""The flattened convolution kernels work a few images at a time (``_CHUNK_BYTES`` of
im2col columns per product), in scratch memory reused from call to call; with tiny
chunks, one image or two per product and a last chunk that is short, the forward, the
transposed convolution and the weight gradient must give the float64 window sums all the
same."""
import numpy as np
import pytest

from tracegrad.ir import REGISTRY
from tracegrad.ir.prims import nn as nn_prims


def _windows(xp, khw, dilation):
    n, c, h, w = xp.shape
    (kh, kw), (dh, dw) = khw, dilation
    ho, wo = h - dh * (kh - 1), w - dw * (kw - 1)
    return np.stack([np.stack([xp[:, :, i * dh:i * dh + ho, j * dw:j * dw + wo]
                               for j in range(kw)], axis=-1) for i in range(kh)], axis=-2)


# (input, weight, padding, dilation), stride 1: the flattened forward and the shifted col2im
CASES = [
    ((5, 6, 12, 11), (4, 6, 3, 3), (0, 0), (1, 1)),
    ((3, 2, 10, 12), (3, 2, 2, 3), (1, 2), (1, 2)),
    ((5, 8, 9, 9), (8, 8, 3, 3), (1, 1), (1, 1)),
    ((3, 2, 18, 18), (2, 2, 3, 3), (0, 0), (1, 1)),     # weight gradient sample by sample
]


@pytest.mark.parametrize("images", [1, 2])
@pytest.mark.parametrize("shape, wshape, padding, dilation", CASES)
def test_chunked_conv2d_and_transpose_match_window_sums(monkeypatch, images, shape, wshape,
                                                        padding, dilation):
    # chunks of the forward's columns for ``images`` images (the last chunk shorter)
    c, kh, kw = wshape[1:]
    ho, width = shape[2] + 2 * padding[0] - dilation[0] * (kh - 1), shape[3] + 2 * padding[1]
    monkeypatch.setattr(nn_prims, "_CHUNK_BYTES", images * c * kh * kw * ho * width * 4)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(wshape).astype(np.float32)
    params = dict(stride=(1, 1), padding=padding, dilation=dilation)
    got = REGISTRY["conv2d"].impl(x, w, **params)
    pads = ((0, 0), (0, 0)) + tuple((p, p) for p in padding)
    win = _windows(np.pad(x.astype(np.float64), pads), wshape[2:], dilation)
    want = np.einsum("nchwij,ocij->nohw", win, w.astype(np.float64))
    assert got.dtype == np.float32 and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())

    # conv_transpose2d of an image-sized g with the (O, C, kH, kW) weight read as
    # (C_in, C_out, ...): every pixel's share added back over its window
    g = rng.standard_normal(got.shape).astype(np.float32)
    gx = REGISTRY["conv_transpose2d"].impl(g, w, output_padding=(0, 0), **params)
    full = np.zeros(np.pad(x, pads).shape)
    share = np.einsum("nohw,ocij->nchwij", g.astype(np.float64), w.astype(np.float64))
    (dh, dw), (ho, wo) = dilation, got.shape[2:]
    for i in range(kh):
        for j in range(kw):
            full[:, :, i * dh:i * dh + ho, j * dw:j * dw + wo] += share[:, :, :, :, i, j]
    want_gx = full[:, :, padding[0]:padding[0] + shape[2], padding[1]:padding[1] + shape[3]]
    np.testing.assert_allclose(gx, want_gx, rtol=1e-5, atol=1e-5 * np.abs(want_gx).max())

    # the weight gradient: a conv2d whose kernel is the image-sized g
    _, gw = REGISTRY["conv2d"].vjp(g, got, x, w, **params)
    want_gw = np.einsum("nchwij,nohw->ocij", win, g.astype(np.float64))
    np.testing.assert_allclose(gw, want_gw, rtol=1e-5, atol=1e-5 * np.abs(want_gw).max())
