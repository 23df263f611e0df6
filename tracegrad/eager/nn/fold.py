"""``F.unfold`` / ``F.fold`` and ``nn.Unfold`` / ``nn.Fold``: PyTorch's im2col and its
adjoint col2im.

``unfold`` takes every ``kernel_size`` block of a padded (N, C, H, W) input and lays it
out as a column: (N, C * kh * kw, L), channel first then the kernel's rows and columns,
the blocks ``L`` in row-major order. ``fold`` adds the columns back into an image of
``output_size``; overlapping blocks are summed in the kernel's order, starting from
zero, as PyTorch's col2im does, so the bits agree. Both are one NumPy function recorded
with PyTorch's ``grad_fn`` name, differentiated by the registry's slicing rules.
"""
from __future__ import annotations

import numpy as np

from ..creation import _torch_name
from ..dispatch import call
from ..tensor import Tensor
from .modules import Module

__all__ = ["unfold", "fold", "Unfold", "Fold"]


def _pair(value, what):
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise RuntimeError(f"It is expected {what} equals to 2, but got size {len(value)}")
        return int(value[0]), int(value[1])
    return int(value), int(value)


def _options(kernel_size, dilation, padding, stride):
    kernel = _pair(kernel_size, "kernel_size")
    dilation = _pair(dilation, "dilation")
    padding = _pair(padding, "padding")
    stride = _pair(stride, "stride")
    for pair, what, name, low in ((kernel, "kernel size", "kernel", 1),
                                  (dilation, "dilation", "dilation", 1),
                                  (padding, "padding", "pad", 0),
                                  (stride, "stride", "stride", 1)):
        if min(pair) < low:
            relation = "greater than zero" if low else "non-negative"
            raise RuntimeError(f"{what} should be {relation}, but got {name}_height: "
                               f"{pair[0]} {name}_width: {pair[1]}")
    return kernel, dilation, padding, stride


def _check_dtype(input, op):
    dtype = np.dtype(input.dtype)
    if dtype.kind in "iu":
        raise NotImplementedError(f'"{op}_out_cpu" not implemented for '
                                  f"'{_torch_name(dtype)}'")


def _blocks(size, kernel, dilation, padding, stride):
    return tuple((n + 2 * p - (d * (k - 1) + 1)) // s + 1
                 for n, k, d, p, s in zip(size, kernel, dilation, padding, stride))


def _options_text(kernel, dilation, padding, stride):
    return (f"kernel_size={kernel}, dilation={dilation}, padding={padding}, "
            f"stride={stride}")


def _windows(blocks, kernel, dilation, stride):
    """Per kernel position (row-major), the (row, column) slices of the padded image
    that position reads in every block."""
    return [(slice(i * dilation[0], i * dilation[0] + stride[0] * (blocks[0] - 1) + 1,
                   stride[0]),
             slice(j * dilation[1], j * dilation[1] + stride[1] * (blocks[1] - 1) + 1,
                   stride[1]))
            for i in range(kernel[0]) for j in range(kernel[1])]


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """The sliding blocks of a (N, C, H, W) or (C, H, W) input as columns:
    (N, C * kh * kw, L)."""
    kernel, dilation, padding, stride = _options(kernel_size, dilation, padding, stride)
    shape = tuple(input.shape)
    if len(shape) not in (3, 4) or 0 in shape[-3:]:
        if len(shape) < 3:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-max(len(shape), 1)}, {max(len(shape), 1) - 1}], but got 2)")
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           f"and other non-zero dimensions for input, but got: {list(shape)}")
    _check_dtype(input, "im2col")
    blocks = _blocks(shape[-2:], kernel, dilation, padding, stride)
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {tuple(shape[-2:])}, "
                           f"kernel_size={kernel}, dilation={dilation}, padding={padding}, "
                           "calculated "
                           f"shape of the array of sliding blocks as {blocks}, but its "
                           "components must be at least one.")
    windows = _windows(blocks, kernel, dilation, stride)
    widths = [(0, 0)] * (len(shape) - 2) + [(padding[0], padding[0]), (padding[1], padding[1])]

    def im2col(x):
        padded = np.pad(x, widths) if any(padding) else x
        # the blocks read last kernel position first: the derivative adds its users'
        # contributions latest first, so x's gradient sums the positions in the kernel's
        # order, as PyTorch's col2im (unfold's derivative) does
        read = [padded[..., rows, columns] for rows, columns in reversed(windows)]
        cols = np.stack(read[::-1], axis=-3)
        lead = cols.shape[:-4]
        return cols.reshape(*lead, cols.shape[-4] * len(windows), blocks[0] * blocks[1])

    return call(im2col, input, name="Im2ColBackward0")


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """The adjoint of ``unfold``: (N, C * kh * kw, L) columns summed into
    (N, C, *output_size)."""
    size = _pair(output_size, "output_size")
    kernel, dilation, padding, stride = _options(kernel_size, dilation, padding, stride)
    shape = tuple(input.shape)
    if len(shape) not in (2, 3) or 0 in shape[-2:]:
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           "batch size and non-zero dimensions for input, but got: "
                           f"{list(shape)}")
    positions = kernel[0] * kernel[1]
    if shape[-2] % positions:
        # (PyTorch counts the dimensions of the batched form, an unbatched input too)
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={shape[-2]} and "
                           f"kernel_size={kernel}.")
    blocks = _blocks(size, kernel, dilation, padding, stride)
    if shape[-1] != blocks[0] * blocks[1] or min(blocks) < 1:
        raise RuntimeError(f"Given output_size={size}, "
                           f"{_options_text(kernel, dilation, padding, stride)}, expected "
                           "size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {max(blocks[0], 0)} * "
                           f"{max(blocks[1], 0)} = {max(blocks[0], 0) * max(blocks[1], 0)}, "
                           f"but got input.size(2)={shape[-1]}.")
    _check_dtype(input, "col2im")
    windows = _windows(blocks, kernel, dilation, stride)
    padded_size = (size[0] + 2 * padding[0], size[1] + 2 * padding[1])
    channels = shape[-2] // positions

    def col2im(cols):
        lead = cols.shape[:-2]
        cols = cols.reshape(*lead, channels, positions, blocks[0], blocks[1])
        out = np.zeros((*lead, channels) + padded_size, dtype=cols.dtype)
        for k, (rows, columns) in enumerate(windows):
            # each block's contribution placed in a zero image: adding zeros leaves every
            # sum PyTorch's, whose col2im adds the kernel positions in this order
            widths = [(0, 0)] * (len(lead) + 1) + [
                (rows.start, padded_size[0] - rows.start - stride[0] * (blocks[0] - 1) - 1),
                (columns.start,
                 padded_size[1] - columns.start - stride[1] * (blocks[1] - 1) - 1)]
            patch = cols[..., k, :, :]
            if stride != (1, 1):
                patch = _dilated(patch, stride)
            out = out + np.pad(patch, widths)
        return out[..., padding[0]:padding[0] + size[0], padding[1]:padding[1] + size[1]]

    return call(col2im, input, name="Col2ImBackward0")


def _dilated(patch, stride):
    """``patch`` with ``stride - 1`` zeros after each of its rows but the last, and
    after each of its columns but the last."""
    for new, step in ((-2, stride[0]), (-1, stride[1])):
        if step == 1:
            continue
        # (..., r, c) -> (..., r, step, c) or (..., r, c, step), zeros after the first
        spaced = np.expand_dims(patch, new)
        widths = [(0, 0)] * spaced.ndim
        widths[new] = (0, step - 1)
        spaced = np.pad(spaced, widths)
        shape = list(patch.shape)
        n = shape[new]
        if new == -2:
            shape[-2] = n * step
            patch = spaced.reshape(shape)[..., :(n - 1) * step + 1, :]
        else:
            shape[-1] = n * step
            patch = spaced.reshape(shape)[..., :(n - 1) * step + 1]
    return patch


class Unfold(Module):
    """``F.unfold`` as a module."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """``F.fold`` as a module."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                    self.stride)

    def extra_repr(self):
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")
