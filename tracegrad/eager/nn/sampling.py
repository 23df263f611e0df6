"""``F.affine_grid`` and ``F.grid_sample``: the spatial transformer's sampling grid and the
(bi/tri)linear, nearest or (2-D) bicubic sampling of an image at it, with PyTorch's coordinate
conventions (``align_corners``), padding modes (zeros, border, reflection) and errors.

Both are NumPy code run by ``call``, so each is one recorded node (``grid_sample``'s named
``GridSampler2DBackward0`` / ``GridSampler3DBackward0``) whose derivative, to the image and
to the grid, comes from the primitives it is made of: the corner weights are linear in the
coordinates, the corner positions (a ``floor``) carry no derivative, and the clamp and
reflection of the coordinates pass theirs through as PyTorch's kernels do.
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from ..dispatch import call
from ..tensor import Tensor

__all__ = ["affine_grid", "grid_sample"]

_DEFAULT_CHANGED = ("Default grid_sample and affine_grid behavior has changed to "
                    "align_corners=False since 1.3.0. Please specify align_corners=True if "
                    "the old behavior is desired. See the documentation of grid_sample for "
                    "details.")


def _base(n, align_corners, dtype):
    """PyTorch's ``linspace_from_neg_one``: the pixel centres (or corners) in [-1, 1]."""
    if n <= 1:
        return np.zeros(n, dtype)
    r = np.linspace(-1, 1, n).astype(dtype)
    if not align_corners:
        r = (r * dtype.type(n - 1) / dtype.type(n)).astype(dtype)
    return r


def affine_grid(theta, size, align_corners=None):
    """The (N, H, W, 2) (or (N, D, H, W, 3)) grid of ``theta`` (N, 2, 3) (or (N, 3, 4))
    applied to the normalised output coordinates of ``size``."""
    if align_corners is None:
        warnings.warn(_DEFAULT_CHANGED, UserWarning, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{_torch_dtype(theta.dtype)}")
    size = tuple(int(s) for s in size)
    shape = tuple(theta.shape)
    if len(size) == 4:
        if theta.dim() != 3 or shape[-2] != 2 or shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{_size_text(size)}. Got {_size_text(shape, True)}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or shape[-2] != 3 or shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{_size_text(size)}. Got {_size_text(shape, True)}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size "
                                  f"{_size_text(size)}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      UserWarning, stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {_size_text(size)}")
    if shape[0] != size[0]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{size[0]}, {shape[2]}] but got: [{shape[0]}, {shape[2]}].")
    dtype = np.dtype(theta.dtype)
    axes = [_base(n, align_corners, dtype) for n in spatial]      # (D,) H, W
    mesh = np.meshgrid(*axes, indexing="ij")
    # the last axis: x (width), y (height)[, z (depth)], then 1
    base = np.stack([m.ravel() for m in reversed(mesh)] + [np.ones(mesh[0].size, dtype)],
                    axis=-1)
    out_shape = (size[0],) + tuple(spatial) + (len(spatial),)
    return call(lambda t: np.reshape(np.matmul(base, np.swapaxes(t, 1, 2)), out_shape), theta,
                name="AffineGridGeneratorBackward0")


def _unnormalize(coord, size, align_corners):
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _clip(coord, size):
    """Clamped to [0, size - 1], with PyTorch's derivative: 1 strictly inside, 0 on and
    beyond the edges."""
    inside = (coord > 0) & (coord < size - 1)
    edge = np.where(coord <= 0, 0, size - 1).astype(coord.dtype)
    return np.where(inside, coord, edge)


def _reflect(coord, twice_low, twice_high):
    if twice_low == twice_high:
        return coord * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    coord = coord - low
    coord = np.where(coord < 0, -coord, coord)     # (PyTorch's derivative at 0: +1)
    extra = np.fmod(coord, span)
    flips = np.floor(coord / span)
    return np.where(np.fmod(flips, 2) == 0, extra + low, span - extra + low)


def _source(coord, size, padding_mode, align_corners):
    """PyTorch's ``grid_sampler_compute_source_index``."""
    return _padded(_unnormalize(coord, size, align_corners), size, padding_mode, align_corners)


def _padded(coord, size, padding_mode, align_corners):
    """PyTorch's ``compute_coordinates``: a pixel coordinate brought inside by the padding
    mode (unchanged for zeros)."""
    if padding_mode == "border":
        coord = _clip(coord, size)
    elif padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else \
            _reflect(coord, -1, 2 * size - 1)
        coord = _clip(coord, size)
    return coord


_A = -0.75      # the cubic convolution's parameter (PyTorch's, OpenCV's)


def _cubic_weights(t):
    """PyTorch's ``get_cubic_upsample_coefficients`` of the fraction ``t``."""
    def near(v):
        return ((_A + 2) * v - (_A + 3)) * v * v + 1

    def far(v):
        return ((_A * v - 5 * _A) * v + 8 * _A) * v - 4 * _A
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic(x, grid, padding_mode, align_corners):
    """PyTorch's 2-D bicubic sampling: 4 x 4 taps around each point, each tap's position
    brought inside by the padding mode (zeros: outside taps read 0)."""
    n, c, h, w = x.shape
    out_sp = tuple(grid.shape[1:-1])
    count = math.prod(out_sp)
    dtype = x.dtype
    ix = _unnormalize(np.reshape(grid[..., 0], (n, count)), dtype.type(w), align_corners)
    iy = _unnormalize(np.reshape(grid[..., 1], (n, count)), dtype.type(h), align_corners)
    x0, y0 = np.floor(ix), np.floor(iy)
    wx, wy = _cubic_weights(ix - x0), _cubic_weights(iy - y0)
    flat = np.reshape(x, (n, c, h * w))
    out = None
    for j in range(4):
        py = _padded(y0 + (j - 1), dtype.type(h), padding_mode, align_corners).astype(np.int64)
        row = None
        for i in range(4):
            px = _padded(x0 + (i - 1), dtype.type(w), padding_mode, align_corners)
            px = px.astype(np.int64)
            inside = (px >= 0) & (px < w) & (py >= 0) & (py < h)
            lin = np.clip(py, 0, h - 1) * w + np.clip(px, 0, w - 1)
            idx = np.broadcast_to(np.reshape(lin, (n, 1, count)), (n, c, count))
            vals = np.take_along_axis(flat, idx, axis=2) * \
                np.reshape(inside.astype(dtype), (n, 1, count))
            term = vals * np.reshape(wx[i], (n, 1, count))
            row = term if row is None else row + term
        term = row * np.reshape(wy[j], (n, 1, count))
        out = term if out is None else out + term
    return np.reshape(out, (n, c) + out_sp)


def _sample(x, grid, mode, padding_mode, align_corners):
    if mode == "bicubic":
        return _bicubic(x, grid, padding_mode, align_corners)
    n, c = x.shape[:2]
    sizes = tuple(x.shape[2:])
    d = len(sizes)
    out_sp = tuple(grid.shape[1:-1])
    count = math.prod(out_sp)
    dtype = x.dtype
    coords = [_source(np.reshape(grid[..., d - 1 - a], (n, count)), dtype.type(sizes[a]),
                      padding_mode, align_corners) for a in range(d)]
    flat = np.reshape(x, (n, c, math.prod(sizes)))
    strides = [math.prod(sizes[a + 1:]) for a in range(d)]
    if mode == "nearest":
        corners = [([np.rint(cd) for cd in coords], None)]
    else:
        lo = [np.floor(cd) for cd in coords]
        corners = []
        for bits in itertools.product((0, 1), repeat=d):
            pos = [lo[a] + b for a, b in enumerate(bits)]
            w = None
            for a, b in enumerate(bits):
                f = coords[a] - lo[a] if b else lo[a] + 1 - coords[a]
                w = f if w is None else w * f
            corners.append((pos, w))
    out = None
    for pos, w in corners:
        valid = None
        lin = None
        for a in range(d):
            inside = (pos[a] >= 0) & (pos[a] <= sizes[a] - 1)
            valid = inside if valid is None else valid & inside
            p = np.clip(pos[a], 0, sizes[a] - 1).astype(np.int64) * strides[a]
            lin = p if lin is None else lin + p
        idx = np.broadcast_to(np.reshape(lin, (n, 1, count)), (n, c, count))
        vals = np.take_along_axis(flat, idx, axis=2)
        weight = valid.astype(dtype) if w is None else w * valid.astype(dtype)
        term = vals * np.reshape(weight, (n, 1, count))
        out = term if out is None else out + term
    return np.reshape(out, (n, c) + out_sp)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """``input`` (N, C, H, W) (or (N, C, D, H, W)) sampled at ``grid`` (N, H_out, W_out, 2)
    (or (..., 3)) of normalised (x, y[, z]) coordinates."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_DEFAULT_CHANGED, UserWarning, stacklevel=2)
        align_corners = False
    if not isinstance(input, Tensor) or not isinstance(grid, Tensor):
        raise TypeError("grid_sample(): expected input and grid to be Tensors")
    xs, gs = list(input.shape), list(grid.shape)
    if input.dtype != grid.dtype:
        raise RuntimeError(f"expected scalar type {_scalar_name(input.dtype)} but found "
                           f"{_scalar_name(grid.dtype)}")
    if gs[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in "
                           f"last dimension, but got grid with sizes {gs}")
    if input.dim() != grid.dim() or input.dim() not in (4, 5):
        what = f"{input.dim()}D" if input.dim() in (4, 5) else "4D or 5D"
        raise RuntimeError(f"grid_sampler(): expected {what} input and grid with same number "
                           f"of dimensions, but got input with sizes {xs} and grid with sizes "
                           f"{gs}")
    if xs[0] != gs[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {xs} and grid with sizes {gs}")
    if mode == "bicubic" and input.dim() != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if any(s == 0 for s in xs[2:]):
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                           f"dimensions, but input has sizes {xs} with dimension "
                           f"{next(i for i, s in enumerate(xs) if i >= 2 and s == 0)} being "
                           "empty")
    name = "GridSampler2DBackward0" if input.dim() == 4 else "GridSampler3DBackward0"
    return call(lambda x, g: _sample(x, g, mode, padding_mode, align_corners), input, grid,
                name=name)


def _scalar_name(dtype):
    from ..tensor import _scalar_name as name
    return name(np.dtype(dtype))


def _torch_dtype(dtype):
    return "torch." + np.dtype(dtype).name


def _size_text(size, tensor_size=False):
    inner = ", ".join(str(s) for s in size)
    return f"torch.Size([{inner}])" if tensor_size else f"[{inner}]"
