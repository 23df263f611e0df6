"""Convolutions and pooling over NCHW images, with PyTorch's semantics.

``stride``, ``padding``, ``dilation``, ``kernel`` and ``output_padding`` are
pairs of ints (height, width); padding is symmetric. ``conv2d`` is a
cross-correlation with an (O, C, kH, kW) weight and no bias (an add composes
it); ``conv_transpose2d`` is its adjoint in the input, with a
(C_in, C_out, kH, kW) weight. Each is the other's derivative, so their VJPs
are expressed with each other and differentiate again to any order.
"""
import math
import threading

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..indexspec import Index, Slice
from ..registry import apply, register
from ..schema import PAIR, Spec, _conv  # the loader's parameter kinds
from .batching import fold_into_n

# A batch axis folds into N under vmap; the JAX lowering takes the operands as they are.
# The convolutions are bilinear and average pooling linear: their rules (each other,
# without conjugation) are JAX's for complex operands too (the family's ``complex``);
# max pooling and the rest take real images only (``complex=False``).


def _conv_cost(out_shape, arg_shapes, params):
    """A multiply-add per output element and weight entry it reads."""
    return 2 * math.prod(out_shape) * math.prod(arg_shapes[1][1:])


def _conv_transpose_cost(out_shape, arg_shapes, params):
    w = arg_shapes[1]
    return 2 * math.prod(out_shape) * math.prod((w[0],) + tuple(w[2:]))


def _pool_cost(out_shape, arg_shapes, params):
    return math.prod(out_shape) * math.prod(params.get("kernel", (1, 1)))

_ALL = Slice(None, None, None)
_CONV_DIMS = ("NCHW", "OIHW", "NCHW")


def _out_size(n, k, stride, padding, dilation):
    """Length of a window sweep along one axis (PyTorch's floor mode)."""
    return (n + 2 * padding - dilation * (k - 1) - 1) // stride + 1


def _out_hw(hw, khw, stride, padding, dilation):
    return tuple(_out_size(*a) for a in zip(hw, khw, stride, padding, dilation))


def _check_pairs(what, **pairs):
    for name, pair in pairs.items():
        low = 0 if name in ("padding", "output_padding") else 1
        if len(pair) != 2 or any(int(v) < low for v in pair):
            raise ValueError(f"{what}: {name} must be a pair of ints >= {low}, got {pair}")


def _check_image(what, x, name="input"):
    if x.ndim != 4:
        raise ValueError(f"{what}: expected a 4-D (N, C, H, W) {name}, got shape {tuple(x.shape)}")


def _check_out(what, x_shape, out_hw):
    if min(out_hw) < 1:
        raise ValueError(f"{what}: input of shape {tuple(x_shape)} gives an empty output "
                         f"{tuple(out_hw)}: the padded input is smaller than the kernel")


# -- NumPy implementations ----------------------------------------------------------
def _windows(xp, khw, stride, dilation):
    """The (N, C, Ho, Wo, kH, kW) view of every window of the already padded ``xp``."""
    n, c, h, w = xp.shape
    out_hw = _out_hw((h, w), khw, stride, (0, 0), dilation)
    s = xp.strides
    return as_strided(xp, (n, c) + out_hw + tuple(khw),
                      (s[0], s[1], s[2] * stride[0], s[3] * stride[1],
                       s[2] * dilation[0], s[3] * dilation[1]), writeable=False)


def _transpose_pads(khw, padding, output_padding, dilation):
    """Padding that turns conv_transpose2d into a stride-1 conv of the zero-spread input."""
    return tuple((d * (k - 1) - p, d * (k - 1) - p + op)
                 for k, p, op, d in zip(khw, padding, output_padding, dilation))


def _padded(x, pads, width=None):
    """``x`` padded with zeros by ``pads`` ((lo, hi) per spatial axis, none negative), in
    one copy, or ``x`` itself; ``width``: rows that long, the extra columns zeros too."""
    (top, bottom), (left, right) = pads
    n, c, h, w = x.shape
    width = w + left + right if width is None else width
    if not (top or bottom or left) and width == w:
        return x
    xp = np.zeros((n, c, h + top + bottom, width), x.dtype)
    xp[:, :, top:top + h, left:left + w] = x
    return xp


# Below this many output pixels per image, one (N*Ho*Wo, C*kH*kW) matrix product beats a
# product per image (whose matrices are then too thin for BLAS to run at full speed).
_PER_IMAGE = 64
# From this many kernel pixels on (a weight gradient's: the forward's output pixels), a
# wide-kernel convolution sums products per sample rather than making one long product.
_PER_SAMPLE = 256
# Below this many output channels, a transposed convolution with stride 1 is faster as
# col2im than as the convolution of its padded input with the flipped kernel.
_COL2IM = 16
# The im2col columns of this many bytes at most go into one product.
_CHUNK_BYTES = 1 << 21
# Temporaries up to this size come from a per-thread scratch buffer kept from call to call:
# a fresh multi-megabyte array each call costs its pages' faults again whenever the
# allocator has handed the memory back to the system (about as long as the product).
_SCRATCH_MAX = 1 << 22
_scratch = threading.local()


def _temporary(slot, shape, dtype, zero=False):
    """An array for a kernel's own use, not returned: scratch memory of this thread
    (``slot`` names one of the arrays a kernel holds at once), or a fresh array if large.
    Its contents are undefined unless ``zero``."""
    dtype = np.dtype(dtype)
    size = math.prod(shape) * dtype.itemsize
    if size > _SCRATCH_MAX:
        return (np.zeros if zero else np.empty)(shape, dtype)
    buffers = _scratch.__dict__.setdefault("buffers", {})
    buf = buffers.get(slot)
    if buf is None or buf.nbytes < size:
        buf = buffers[slot] = np.empty(max(size, 1 << 16) // 16 + 1, np.complex128)
    out = buf.view(np.uint8)[:size].view(dtype).reshape(shape)
    if zero:
        out.fill(0)
    return out


# The im2col copies and col2im sums go one kernel offset at a time, each a whole-batch
# operation; where a stride (or dilation) of 1 makes neighbouring window elements
# neighbours in the image too, they go over the image flattened to one axis per channel
# ("flat" below): a window's rows then run into each other, which costs the product the
# few columns past each row's end (zeros, or values cropped afterwards) but turns each
# offset's copy into long contiguous runs instead of rows of a few elements.
def _conv_general(x, w, stride, pads, dilation):
    """lax.conv_general_dilated in NumPy (no input dilation): im2col, then a matrix product.

    With many output pixels each image is one product (O, C*kH*kW) @ (C*kH*kW, Ho*Wo),
    whose result is already NCHW; with few, the whole batch is one (N*Ho*Wo, C*kH*kW) @
    (C*kH*kW, O) product from the image in NHWC order. A kernel with more offsets than
    the output has pixels (a weight gradient) goes to ``_conv_wide_kernel``. Columns are
    in (c, kh, kw) order, the weight's."""
    dtype = np.result_type(x.dtype, w.dtype)
    o, c, kh, kw = w.shape
    n = x.shape[0]
    (sh, sw), (dh, dw) = stride, dilation
    padded = tuple(h + lo + hi for h, (lo, hi) in zip(x.shape[2:], pads))
    ho, wo = _out_hw(padded, (kh, kw), stride, (0, 0), dilation)
    if kh * kw > ho * wo:
        return _conv_wide_kernel(_padded(x, pads), w, stride, dilation, (ho, wo), dtype)
    weight = w.reshape(o, c * kh * kw).astype(dtype, copy=False)
    if ho * wo >= _PER_IMAGE and stride == (1, 1) and padded[1] <= 2 * wo:
        # flat: output pixel (r, q) at r * W + q of a (Ho, W) grid, W the padded width
        xp = np.ascontiguousarray(_padded(x, pads)).reshape(n, c, -1)
        width = padded[1]
        span = (ho - 1) * width + wo
        # a few images at a time: their columns stay in cache for the product
        step = max(1, min(n, _CHUNK_BYTES // (c * kh * kw * ho * width * dtype.itemsize)))
        cols = _temporary("cols", (step, c, kh, kw, ho * width), dtype)
        cols[..., span:] = 0
        out = np.empty((n, o, ho * width), dtype)
        for s in range(0, n, step):
            m = min(step, n - s)
            for i in range(kh):
                for j in range(kw):
                    at = i * dh * width + j * dw
                    cols[:m, :, i, j, :span] = xp[s:s + m, :, at:at + span]
            np.matmul(weight, cols[:m].reshape(m, c * kh * kw, ho * width), out=out[s:s + m])
        out = out.reshape(n, o, ho, width)
        return out if width == wo else np.ascontiguousarray(out[..., :wo])
    if ho * wo >= _PER_IMAGE:
        xp = _padded(x, pads)
        cols = np.empty((n, c, kh, kw, ho, wo), dtype)
        for i in range(kh):
            for j in range(kw):
                cols[:, :, i, j] = xp[:, :, i * dh:i * dh + sh * (ho - 1) + 1:sh,
                                      j * dw:j * dw + sw * (wo - 1) + 1:sw]
        return np.matmul(weight, cols.reshape(n, c * kh * kw, ho * wo)).reshape(n, o, ho, wo)
    cols = np.empty((n, ho, wo, c, kh, kw), dtype)
    (top, _), (left, _) = pads
    xh = np.zeros((n,) + padded + (c,), x.dtype)       # padded and NHWC in one copy
    xh[:, top:top + x.shape[2], left:left + x.shape[3]] = x.transpose(0, 2, 3, 1)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, :, :, i, j] = xh[:, i * dh:i * dh + sh * (ho - 1) + 1:sh,
                                        j * dw:j * dw + sw * (wo - 1) + 1:sw]
    out = np.dot(cols.reshape(n * ho * wo, c * kh * kw), weight.T).reshape(n, ho, wo, o)
    return np.ascontiguousarray(out.transpose(0, 3, 1, 2))


def _conv_wide_kernel(xp, w, stride, dilation, out_hw, dtype):
    """The convolution when the kernel is larger than the output: a weight gradient,
    where the "image" is the forward input with batch and channels swapped, (C, N, H, W),
    and the "kernel" the output cotangent, (O, N, Ho, Wo). One product (Ro*Qo*C, N*kH*kW)
    @ (N*kH*kW, O), the windows copied once per output pixel, or for a large kernel one
    per sample, summed."""
    a, b = xp.shape[:2]
    o, _, kh, kw = w.shape
    (ro, qo), (sh, sw), (dh, dw) = out_hw, stride, dilation
    width = xp.shape[3]
    kernel = w.transpose(1, 2, 3, 0)                    # (B, kH, kW, O)
    flat = dilation == (1, 1) and width <= 2 * kw
    if flat and kh * kw >= _PER_SAMPLE:
        # a product per sample b, (Ro*Qo*C, kH*kW) @ (kH*kW, O), summed: both operands
        # read in the order the forward arrays have them
        # (a few samples at a time, so that their columns stay in cache)
        xb = np.ascontiguousarray(xp.transpose(1, 0, 2, 3)).reshape(b, a, -1)
        span = (kh - 1) * width + kw
        step = max(1, min(b, _CHUNK_BYTES // (ro * qo * a * span * dtype.itemsize)))
        wide = _temporary("kernel", (step, o, kh, width), dtype, zero=True)
        cols = _temporary("cols", (step, ro, qo, a, span), dtype)
        per = np.empty((b, ro * qo * a, o), dtype)
        for s in range(0, b, step):
            m = min(step, b - s)
            wide[:m, ..., :kw] = w[:, s:s + m].transpose(1, 0, 2, 3)
            for r in range(ro):
                for q in range(qo):
                    at = r * sh * width + q * sw
                    cols[:m, r, q] = xb[s:s + m, :, at:at + span]
            kernel = wide[:m].reshape(m, o, kh * width)[:, :, :span].transpose(0, 2, 1)
            np.matmul(cols[:m].reshape(m, ro * qo * a, span), kernel, out=per[s:s + m])
        out = per.sum(axis=0)
        return np.ascontiguousarray(out.reshape(ro, qo, a, o).transpose(2, 3, 0, 1))
    if flat:
        # flat: kernel element (i, j) at i * W + j, the kernel's rows widened to the
        # image's with zeros, so that each window is one run of the flattened image
        xb = np.ascontiguousarray(xp.transpose(1, 0, 2, 3)).reshape(b, a, -1)
        span = (kh - 1) * width + kw
        wide = np.zeros((b, kh, width, o), dtype)
        wide[:, :, :kw] = kernel
        kernel = wide.reshape(b * kh * width, o)
        cols = np.empty((ro, qo, a, b, kh * width), dtype)
        cols[..., span:] = 0
        for r in range(ro):
            for q in range(qo):
                at = r * sh * width + q * sw
                cols[r, q, :, :, :span] = xb[:, :, at:at + span].transpose(1, 0, 2)
    else:
        xb = xp.transpose(1, 0, 2, 3)                   # (B, A, H, W)
        cols = np.empty((ro, qo, a, b, kh, kw), dtype)
        for r in range(ro):
            for q in range(qo):
                cols[r, q] = xb[:, :, r * sh:r * sh + dh * (kh - 1) + 1:dh,
                                q * sw:q * sw + dw * (kw - 1) + 1:dw].transpose(1, 0, 2, 3)
        kernel = np.ascontiguousarray(kernel, dtype=dtype).reshape(b * kh * kw, o)
    out = np.dot(cols.reshape(ro * qo * a, -1), kernel).reshape(ro, qo, a, o)
    return np.ascontiguousarray(out.transpose(2, 3, 0, 1))


def _col2im_range(n, k, d, s, p, size):
    """For kernel offset ``k`` along an axis of ``n`` input pixels: the input pixels
    [lo, hi) whose transposed-convolution output ``r*s + k*d - p`` falls inside
    [0, size), and the first such output position."""
    lo = max(0, -(-(p - k * d) // s))
    hi = min(n, (size - 1 + p - k * d) // s + 1)
    return lo, hi, lo * s + k * d - p


def _col2im_shifted(x, w, dh, dw, width, rows, dtype):
    """Flat col2im with stride 1 (the output's rows ``width`` long, ``rows`` of them): the
    kernel's columns shift the input, so kW shifted copies of it make one product per
    image, (kH*C_out, kW*C_in) @ (kW*C_in, H*width), then kH row-shifted sums (rather
    than kH*kW sums of a product kW times larger). A few images at a time, so that the
    copies stay in cache; the copies' gaps are zeros written once."""
    n, ci, h, wd = x.shape
    _, co, kh, kw = w.shape
    span = h * width + (kw - 1) * dw
    step = max(1, min(n, _CHUNK_BYTES // (kw * ci * span * dtype.itemsize)))
    shifted = _temporary("cols", (step, kw, ci, span), dtype, zero=True)
    weight = w.transpose(2, 1, 3, 0).reshape(kh * co, kw * ci).astype(dtype, copy=False)
    part = _temporary("product", (step, kh * co, span), dtype)
    full = np.empty((n, co, rows * width), dtype)
    for s in range(0, n, step):
        m = min(step, n - s)
        # the rows widened to ``width`` once; the other shifts copy that in long runs
        shifted[:m, 0, :, :h * width].reshape(m, ci, h, width)[..., :wd] = x[s:s + m]
        for j in range(1, kw):
            shifted[:m, j, :, j * dw:j * dw + h * width] = shifted[:m, 0, :, :h * width]
        np.matmul(weight, shifted[:m].reshape(m, kw * ci, span), out=part[:m])
        parts = part[:m].reshape(m, kh, co, span)
        out = full[s:s + m]
        for i in range(kh):     # past the buffer's end a row's share holds zeros only
            at = i * dh * width
            end = min(span, rows * width - at)
            if i == 0:
                out[:, :, :end] = parts[:, 0, :, :end]
                out[:, :, end:] = 0
            else:
                out[:, :, at:at + end] += parts[:, i, :, :end]
    return full


def _conv_transpose_general(x, w, stride, padding, output_padding, dilation):
    """conv_transpose2d as col2im: every input pixel times the weight, (C_out, kH, kW)
    values, one matrix product, then added into the output one kernel offset at a time
    (padding crops: what would fall outside is left out); or, with stride 1 and enough
    output channels, as the convolution of the padded input with the flipped kernel."""
    dtype = np.result_type(x.dtype, w.dtype)
    n, ci, h, wd = x.shape
    _, co, kh, kw = w.shape
    ho, wo = _transpose_hw((h, wd), (kh, kw), stride, padding, output_padding, dilation)
    (sh, sw), (dh, dw), (ph, pw) = stride, dilation, padding
    if stride == (1, 1) and co >= _COL2IM:
        # the convolution of the padded input with the flipped kernel: faster than col2im
        # unless its product, (C_out, C_in*kH*kW) @ (C_in*kH*kW, pixels), is too thin
        pads = _transpose_pads((kh, kw), padding, output_padding, dilation)
        crop = tuple(slice(max(-lo, 0), size - max(-hi, 0))
                     for size, (lo, hi) in zip((h, wd), pads))
        flipped = np.transpose(w[:, :, ::-1, ::-1], (1, 0, 2, 3))
        return _conv_general(x[(slice(None), slice(None)) + crop], flipped, (1, 1),
                             tuple((max(lo, 0), max(hi, 0)) for lo, hi in pads), dilation)
    weight = w.reshape(ci, co * kh * kw).astype(dtype, copy=False)
    # flat: input pixel (r, q) at r * R + q, R the row length of an uncropped output
    rows, width = max(h + dh * (kh - 1), ph + ho), max(wd + dw * (kw - 1), pw + wo)
    if h * wd >= _PER_IMAGE and stride == (1, 1) and width <= 2 * wd:
        if kh * co >= _COL2IM:
            full = _col2im_shifted(x, w, dh, dw, width, rows, dtype)
        else:           # each offset's (C_out, H*R) share added on its own
            xw = _padded(x, ((0, 0), (0, 0)), width).reshape(n, ci, h * width)
            cols = np.matmul(weight.T, xw).reshape(n, co, kh, kw, h * width)
            full = np.zeros((n, co, rows * width), dtype)
            span = (h - 1) * width + wd
            for i in range(kh):
                for j in range(kw):
                    at = i * dh * width + j * dw
                    full[:, :, at:at + span] += cols[:, :, i, j, :span]
        full = full.reshape(n, co, rows, width)
        if (rows, width) == (ho, wo):
            return full
        return np.ascontiguousarray(full[:, :, ph:ph + ho, pw:pw + wo])
    if h * wd >= _PER_IMAGE:    # per image (C_out*kH*kW, C_in) @ (C_in, H*W)
        cols = np.matmul(weight.T, x.reshape(n, ci, h * wd)).reshape(n, co, kh, kw, h, wd)
    else:                       # the batch at once, (N*H*W, C_in) @ (C_in, C_out*kH*kW)
        flat = np.ascontiguousarray(x.transpose(0, 2, 3, 1)).reshape(n * h * wd, ci)
        cols = np.dot(flat, weight).reshape(n, h, wd, co, kh, kw).transpose(0, 3, 4, 5, 1, 2)
    out = np.zeros((n, co, ho, wo), dtype)
    for i in range(kh):
        r0, r1, y = _col2im_range(h, i, dh, sh, ph, ho)
        for j in range(kw):
            q0, q1, z = _col2im_range(wd, j, dw, sw, pw, wo)
            if r0 < r1 and q0 < q1:
                out[:, :, y:y + sh * (r1 - r0 - 1) + 1:sh, z:z + sw * (q1 - q0 - 1) + 1:sw] += \
                    cols[:, :, i, j, r0:r1, q0:q1]
    return out


def _conv2d_impl(x, w, stride, padding, dilation):
    _conv2d_abstract(x, w, stride, padding, dilation)  # PyTorch's messages, not tensordot's
    return _conv_general(x, w, stride, tuple((p, p) for p in padding), dilation)


def _conv_transpose2d_impl(x, w, stride, padding, output_padding, dilation):
    _conv_transpose2d_abstract(x, w, stride, padding, output_padding, dilation)
    return _conv_transpose_general(x, w, stride, padding, output_padding, dilation)


# -- shape rules ------------------------------------------------------------------------------
def _conv2d_abstract(x, w, stride, padding, dilation):
    _check_image("conv2d", x)
    _check_image("conv2d", w, "weight")
    _check_pairs("conv2d", stride=stride, padding=padding, dilation=dilation)
    if x.shape[1] != w.shape[1]:
        raise ValueError(f"conv2d: input of shape {tuple(x.shape)} has {x.shape[1]} channels, "
                         f"weight of shape {tuple(w.shape)} expects {w.shape[1]}")
    out_hw = _out_hw(x.shape[2:], w.shape[2:], stride, padding, dilation)
    _check_out("conv2d", x.shape, out_hw)
    return (x.shape[0], w.shape[0]) + out_hw, np.result_type(x.dtype, w.dtype)


def _transpose_hw(hw, khw, stride, padding, output_padding, dilation):
    return tuple((n - 1) * s - 2 * p + d * (k - 1) + op + 1
                 for n, k, s, p, op, d in zip(hw, khw, stride, padding, output_padding, dilation))


def _conv_transpose2d_abstract(x, w, stride, padding, output_padding, dilation):
    what = "conv_transpose2d"
    _check_image(what, x)
    _check_image(what, w, "weight")
    _check_pairs(what, stride=stride, padding=padding, output_padding=output_padding,
                 dilation=dilation)
    if x.shape[1] != w.shape[0]:
        raise ValueError(f"{what}: input of shape {tuple(x.shape)} has {x.shape[1]} channels, "
                         f"weight of shape {tuple(w.shape)} expects {w.shape[0]}")
    out_hw = _transpose_hw(x.shape[2:], w.shape[2:], stride, padding, output_padding, dilation)
    _check_out(what, x.shape, out_hw)
    return (x.shape[0], w.shape[1]) + out_hw, np.result_type(x.dtype, w.dtype)


# -- derivatives: each convolution is the other's adjoint ------------------------------------
def _output_padding(hw, khw, stride, padding, dilation):
    """The output_padding that makes conv_transpose2d give back ``hw``: the rows the
    forward sweep's last stride step left out."""
    return tuple((n + 2 * p - d * (k - 1) - 1) % s
                 for n, k, s, p, d in zip(hw, khw, stride, padding, dilation))


def _crop_to(y, hw):
    if tuple(y.shape[2:]) == tuple(hw):
        return y
    return y[:, :, :hw[0], :hw[1]]


def _weight_grad(inp, g, khw, stride, padding, dilation):
    """sum over n, h, w of inp_padded[n, c, h*s + i*d, w*s + j*d] * g[n, o, h, w]: shape
    (O, C, kH, kW). A conv2d with batch and channels swapped, where the forward
    stride becomes the dilation and the dilation the stride; it may reach past the
    kernel when the last stride step left rows out, so it is cropped."""
    swap = (1, 0, 2, 3)
    corr = apply("conv2d", np.transpose(inp, swap), np.transpose(g, swap),
                 stride=dilation, padding=padding, dilation=stride)   # (C, O, kH', kW')
    return np.transpose(_crop_to(corr, khw), swap)


def _conv2d_vjp(g, out, x, w, stride, padding, dilation):
    khw = w.shape[2:]
    op = _output_padding(x.shape[2:], khw, stride, padding, dilation)
    gx = apply("conv_transpose2d", g, w, stride=stride, padding=padding, output_padding=op,
               dilation=dilation)
    return gx, _weight_grad(x, g, khw, stride, padding, dilation)


def _conv_transpose2d_vjp(g, out, x, w, stride, padding, output_padding, dilation):
    # an output_padding of a stride or more adds rows no input reaches: crop them
    gx = _crop_to(apply("conv2d", g, w, stride=stride, padding=padding, dilation=dilation),
                  x.shape[2:])
    return gx, _weight_grad(g, x, w.shape[2:], stride, padding, dilation)


def _bilinear_jvp(name):
    def jvp(t, out, x, w, **params):
        parts = []
        if t[0] is not None:
            parts.append(apply(name, t[0], w, **params))
        if t[1] is not None:
            parts.append(apply(name, x, t[1], **params))
        return parts[0] if len(parts) == 1 else parts[0] + parts[1]
    return jvp


# -- JAX lowerings ---------------------------------------------------------------------------
def _promoted(x, w):
    """Both operands in their result dtype (a real weight of a complex image): XLA's
    convolution takes one dtype."""
    import jax.numpy as jnp
    dtype = jnp.result_type(x, w)
    return x.astype(dtype), w.astype(dtype)


def _conv2d_jax(x, w, stride, padding, dilation):
    from jax import lax
    x, w = _promoted(x, w)
    return lax.conv_general_dilated(x, w, stride, [(p, p) for p in padding],
                                    rhs_dilation=dilation, dimension_numbers=_CONV_DIMS,
                                    precision=lax.Precision.HIGHEST)


def _conv_transpose2d_jax(x, w, stride, padding, output_padding, dilation):
    import jax.numpy as jnp
    from jax import lax
    x, w = _promoted(x, w)
    wt = jnp.transpose(w[:, :, ::-1, ::-1], (1, 0, 2, 3))
    pads = _transpose_pads(w.shape[2:], padding, output_padding, dilation)
    return lax.conv_general_dilated(x, wt, (1, 1), pads, lhs_dilation=stride,
                                    rhs_dilation=dilation, dimension_numbers=_CONV_DIMS,
                                    precision=lax.Precision.HIGHEST)


# -- batching: a batched image folds into N; a batched weight into O; both, as patches --
def _conv2d_batch(size, args, batched, out_shape, stride, padding, dilation):
    """conv2d under vmap. Weights unbatched: the batch folds into N (``fold_into_n``).
    Only the weight batched: it folds into O. Both (per-sample gradients: the weight's
    gradient is a convolution of the image with the output's gradient): the image's
    patches gathered by one advanced index and a batched matmul with the weights."""
    x, w = args
    if not batched[1]:
        return fold_into_n("conv2d")(size, args, batched, out_shape, stride=stride,
                                     padding=padding, dilation=dilation)
    ws = tuple(w.shape)                                   # (B, O, C, kh, kw)
    n, o, oh, ow = out_shape
    if not batched[0]:
        y = apply("conv2d", x, apply("reshape", w, shape=(size * ws[1],) + ws[2:]),
                  stride=stride, padding=padding, dilation=dilation)
        y = apply("reshape", y, shape=(n, size, o, oh, ow))
        return apply("transpose", y, axes=(1, 0, 2, 3, 4))
    c, kh, kw = ws[2:]
    if any(padding):
        x = apply("pad", x, widths=((0, 0),) * 3 + tuple((p, p) for p in padding), value=0)
    x = apply("transpose", x, axes=(0, 1, 3, 4, 2))       # (B, N, H, W, C)
    rows = (np.arange(oh) * stride[0])[:, None, None, None] + \
        (np.arange(kh) * dilation[0])[None, None, :, None]
    cols = (np.arange(ow) * stride[1])[None, :, None, None] + \
        (np.arange(kw) * dilation[1])[None, None, None, :]
    full = Slice(None, None, None)
    patches = apply("getitem", x, index=Index((full, full, rows, cols)))  # (B,N,oh,ow,kh,kw,C)
    patches = apply("reshape", patches, shape=(size, n * oh * ow, kh * kw * c))
    wm = apply("reshape", apply("transpose", w, axes=(0, 3, 4, 2, 1)),
               shape=(size, kh * kw * c, o))
    y = apply("reshape", apply("matmul", patches, wm), shape=(size, n, oh, ow, o))
    return apply("transpose", y, axes=(0, 1, 4, 2, 3))


register(
    "conv2d", _conv2d_impl, abstract=_conv2d_abstract, vjp=_conv2d_vjp,
    jvp=_bilinear_jvp("conv2d"), jax=_conv2d_jax, family="nn",
    batch=_conv2d_batch, cost=_conv_cost, torch_name="ConvolutionBackward0",
    doc="torch.nn.functional.conv2d without bias (groups=1)",
    schema=Spec({"stride": PAIR(1), "padding": PAIR(0), "dilation": PAIR(1)}, 2, _conv),
)
register(
    "conv_transpose2d", _conv_transpose2d_impl, abstract=_conv_transpose2d_abstract,
    vjp=_conv_transpose2d_vjp, jvp=_bilinear_jvp("conv_transpose2d"),
    jax=_conv_transpose2d_jax, family="nn",
    batch=fold_into_n("conv_transpose2d"), cost=_conv_transpose_cost,
    torch_name="ConvolutionBackward0",
    doc="torch.nn.functional.conv_transpose2d without bias (groups=1)",
    schema=Spec({"stride": PAIR(1), "padding": PAIR(0), "output_padding": PAIR(0),
                              "dilation": PAIR(1)}, 2, _conv),
)


# -- pooling ----------------------------------------------------------------------------------------
def _pool_abstract(what, x, kernel, stride, padding, dilation=(1, 1)):
    _check_image(what, x)
    _check_pairs(what, kernel=kernel, stride=stride, padding=padding, dilation=dilation)
    if any(2 * p > k for p, k in zip(padding, kernel)):
        # PyTorch's rule: otherwise a window could hold padding only
        raise ValueError(f"{what}: padding {padding} must be at most half the kernel {kernel}")
    if x.dtype.kind != "f" and not (x.dtype.kind == "c" and what == "avg_pool2d"):
        raise TypeError(f"{what}: expected a floating input, got {x.dtype}")
    out_hw = _out_hw(x.shape[2:], kernel, stride, padding, dilation)
    _check_out(what, x.shape, out_hw)
    return tuple(x.shape[:2]) + out_hw, x.dtype


def _spatial_pads(padding):
    return ((0, 0), (0, 0)) + tuple((p, p) for p in padding)


def _window_index(hw, kernel, stride, dilation):
    """Integer arrays (Ho, 1, kH, 1) and (1, Wo, 1, kW): padded positions of every window
    element, so that ``xp[:, :, rows, cols]`` is the (N, C, Ho, Wo, kH, kW) windows."""
    (ho, wo), (kh, kw) = hw, kernel
    rows = np.arange(ho)[:, None] * stride[0] + np.arange(kh)[None, :] * dilation[0]
    cols = np.arange(wo)[:, None] * stride[1] + np.arange(kw)[None, :] * dilation[1]
    return rows[:, None, :, None], cols[None, :, None, :]


def _first_max_onehot(x, out, kernel, stride, padding, dilation):
    """(N, C, Ho, Wo, kH, kW) booleans: the first maximum of each window, in row-major
    order. Windows are gathered with getitem, so this traces (it carries no gradient)."""
    xp = np.pad(x, _spatial_pads(padding), constant_values=-np.inf)
    rows, cols = _window_index(out.shape[2:], kernel, stride, dilation)
    win = np.reshape(xp[:, :, rows, cols], tuple(out.shape) + (kernel[0] * kernel[1],))
    first = np.argmax(win, axis=-1)
    hot = np.arange(kernel[0] * kernel[1]) == first[..., None]
    return np.reshape(hot, tuple(out.shape) + tuple(kernel)), (rows, cols)


def _offset_views(xp, out_hw, kernel, stride, dilation):
    """For each kernel offset (i, j), row-major: ``xp[:, :, i*dh::sh, j*dw::sw]`` cut to
    the output's (Ho, Wo), as a basic index. Pooling loops over the kH*kW offsets, each
    a whole-image operation, rather than reducing over strided windows."""
    (ho, wo), (kh, kw), (sh, sw), (dh, dw) = out_hw, kernel, stride, dilation
    return [Index((_ALL, _ALL, Slice(i * dh, i * dh + sh * (ho - 1) + 1, sh),
                   Slice(j * dw, j * dw + sw * (wo - 1) + 1, sw)))
            for i in range(kh) for j in range(kw)]


def _max_pool2d_impl(x, kernel, stride, padding, dilation):
    xp = np.pad(x, _spatial_pads(padding), constant_values=-np.inf) if any(padding) else x
    out_hw = _out_hw(xp.shape[2:], kernel, stride, (0, 0), dilation)
    views = _offset_views(xp, out_hw, kernel, stride, dilation)
    out = np.array(xp[views[0].to_numpy()], copy=True)
    for index in views[1:]:
        np.maximum(out, xp[index.to_numpy()], out=out)
    return out


def _max_pool2d_tiled_vjp(g, out, x, kernel):
    """The VJP for windows that tile the image (stride = kernel, no padding or dilation),
    with whole-image operations: the image is copied once into k = kH*kW planes, plane p
    holding place p (row-major) of every window, so that each step below runs over
    contiguous arrays. Plane p weighs 2**(k-1-p): a window's first maximum outweighs
    all its later ones together, so it is the hit weighing more than half the window's
    total. Each plane's share of g is then written back into its places."""
    n, c, h, w = x.shape
    (ho, wo), (kh, kw) = tuple(out.shape[2:]), kernel
    k = kh * kw
    xt = x if (h, w) == (ho * kh, wo * kw) else x[:, :, :ho * kh, :wo * kw]
    planes = np.reshape(np.transpose(np.reshape(xt, (n, c, ho, kh, wo, kw)), (3, 5, 0, 1, 2, 4)),
                        (k, n, c, ho, wo))
    hit = (planes == out) | (planes != planes)  # a NaN is its window's maximum: its first one
    bits = np.int8 if k <= 7 else np.int16 if k <= 15 else np.int32
    mine = hit * (2 ** np.arange(k - 1, -1, -1)).astype(bits).reshape(k, 1, 1, 1, 1)
    total = mine[0]
    for p in range(1, k):
        total = total + mine[p]
    share = np.where(mine > total // np.array(2, bits), g, np.zeros((), g.dtype))
    # every place is written: the zeros a broadcast, not an image-sized constant to copy
    gx = np.broadcast_to(np.zeros((), g.dtype), (n, c, ho, kh, wo, kw))
    for p in range(k):
        i, j = divmod(p, kw)
        gx = apply("index_update", gx, share[p], index=Index((_ALL, _ALL, _ALL, i, _ALL, j)),
                   mode="set")
    gx = np.reshape(gx, (n, c, ho * kh, wo * kw))
    if (h, w) != (ho * kh, wo * kw):
        gx = np.pad(gx, ((0, 0), (0, 0), (0, h - ho * kh), (0, w - wo * kw)))
    return (gx,)


def _max_pool2d_vjp(g, out, x, kernel, stride, padding, dilation):
    k = kernel[0] * kernel[1]
    if tuple(stride) == tuple(kernel) and not any(padding) and tuple(dilation) == (1, 1) \
            and k < 31:
        return _max_pool2d_tiled_vjp(g, out, x, kernel)
    # All of g goes to the first maximum of its window (row-major), as PyTorch and JAX's
    # reduce_window max both do (not split between ties like the max reduction): the
    # gradient then matches the oracles this primitive imitates. A NaN is a window's
    # maximum, its first NaN the place (np.argmax's rule). Offset by offset: the first
    # offset holding the maximum and not taken by an earlier one gets g.
    n, c, h, w = x.shape
    (ph, pw) = padding
    xp = np.pad(x, _spatial_pads(padding), constant_values=-np.inf) if any(padding) else x
    views = _offset_views(xp, tuple(out.shape[2:]), kernel, stride, dilation)
    zero = np.zeros((), g.dtype)
    taken = None
    contribs = []
    nan = xp != xp      # once over the whole image: cheaper than per (strided) offset
    for index in views:
        v = apply("getitem", xp, index=index)
        hit = (v == out) | apply("getitem", nan, index=index)
        if taken is not None:
            hit = hit & ~taken
        contribs.append(np.where(hit, g, zero))
        taken = hit if taken is None else taken | hit
    gxp = np.zeros((n, c, h + 2 * ph, w + 2 * pw), g.dtype)
    # backwards through the offsets: where windows overlap, each place then sums its
    # contributions window by window, in the order of the windows; where they do not
    # (a stride of the window's span or more, max_pool2d's default), each place gets
    # one contribution at most, written rather than added
    apart = all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))
    for index, contrib in zip(reversed(views), reversed(contribs)):
        gxp = apply("index_update", gxp, contrib, index=index, mode="set" if apart else "add")
    if ph or pw:
        gxp = gxp[:, :, ph:ph + h, pw:pw + w]
    return (gxp,)


def _max_pool2d_jvp(t, out, x, kernel, stride, padding, dilation):
    hot, (rows, cols) = _first_max_onehot(x, out, kernel, stride, padding, dilation)
    tp = np.pad(t[0], _spatial_pads(padding))
    return np.sum(np.where(hot, tp[:, :, rows, cols], np.zeros((), tp.dtype)), axis=(4, 5))


def _reduce_window_jax(x, init, op, kernel, stride, padding, dilation=(1, 1)):
    from jax import lax
    return lax.reduce_window(x, init, op, (1, 1) + tuple(kernel), (1, 1) + tuple(stride),
                             _spatial_pads(padding), window_dilation=(1, 1) + tuple(dilation))


def _max_pool2d_jax(x, kernel, stride, padding, dilation):
    from jax import lax
    return _reduce_window_jax(x, -np.inf, lax.max, kernel, stride, padding, dilation)


register(
    "max_pool2d", _max_pool2d_impl,
    abstract=lambda x, kernel, stride, padding, dilation: _pool_abstract(
        "max_pool2d", x, kernel, stride, padding, dilation),
    vjp=_max_pool2d_vjp, jvp=_max_pool2d_jvp, jax=_max_pool2d_jax, complex=False, family="nn",
    batch=fold_into_n("max_pool2d"), cost=_pool_cost,
    torch_name="MaxPool2DWithIndicesBackward0",
    doc="torch.nn.functional.max_pool2d (padding with -inf, floor mode)",
    schema=Spec({"kernel": PAIR(1), "stride": PAIR(1), "padding": PAIR(0),
                        "dilation": PAIR(1)}, 1),
)


def _avg_pool2d_impl(x, kernel, stride, padding):
    xp = np.pad(x, _spatial_pads(padding))
    return np.mean(_windows(xp, kernel, stride, (1, 1)), axis=(4, 5))


def _avg_pool2d_vjp(g, out, x, kernel, stride, padding):
    # Each window shares g equally among its kH*kW places (padding included): the
    # conv_transpose2d of g with a constant kernel, one image per (sample, channel).
    n, c, h, w = x.shape
    ones = np.full((1, 1) + tuple(kernel), 1.0 / (kernel[0] * kernel[1]), g.dtype)
    op = _output_padding((h, w), kernel, stride, padding, (1, 1))
    gx = apply("conv_transpose2d", np.reshape(g, (n * c, 1) + tuple(out.shape[2:])), ones,
               stride=stride, padding=padding, output_padding=op, dilation=(1, 1))
    # PyTorch's AvgPool2DBackward0 keeps x (its double backward gives zeros for x, where a
    # gradient that never saw x would be "unused"): a select that always takes gx keeps
    # the eager autograd's edge to x; simplify folds it away in compiled graphs
    return (apply("select", np.ones((), bool), np.reshape(gx, x.shape), x),)


def _avg_pool2d_jax(x, kernel, stride, padding):
    from jax import lax
    total = _reduce_window_jax(x, np.zeros((), x.dtype), lax.add, kernel, stride, padding)
    return total / (kernel[0] * kernel[1])


register(
    "avg_pool2d", _avg_pool2d_impl,
    abstract=lambda x, kernel, stride, padding: _pool_abstract(
        "avg_pool2d", x, kernel, stride, padding),
    vjp=_avg_pool2d_vjp, jvp=lambda t, out, x, **params: apply("avg_pool2d", t[0], **params),
    jax=_avg_pool2d_jax, family="nn",
    batch=fold_into_n("avg_pool2d"), cost=_pool_cost, torch_name="AvgPool2DBackward0",
    doc="torch.nn.functional.avg_pool2d (count_include_pad=True, floor mode)",
    schema=Spec({"kernel": PAIR(1), "stride": PAIR(1), "padding": PAIR(0)}, 1),
)
