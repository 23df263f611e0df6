"""Functions that join tensors or enumerate into new ones: ``cat``, ``stack``, ``hstack``,
``vstack``, ``meshgrid`` (with their PyTorch checks and dtype promotion), and
``column_stack``, ``row_stack``, ``dstack``, ``cartesian_prod``, ``combinations``,
``block_diag``, ``tril_indices``, ``triu_indices``, ``unravel_index``. They sit above
``tensor.py`` (they make tensors), below functions.py (the ``FUNCTIONS`` table)."""
from __future__ import annotations

import itertools
import math
import numbers

import numpy as np

from .arithmetic import _err
from .arithmetic import _tensor_operand as _as_tensor
from .dispatch import call
from .promotion import cast, result_type
from .shape_extras import _atleast, _tensors, _update
from .tensor import Tensor, default_dtype
from .tensor_base import TensorBase, _scalar_name


def _tensor_list(tensors):
    tensors = list(tensors)
    for k, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {k} in argument 0, but got "
                            f"{type(t).__name__}")
    return tensors


def cat(tensors, dim=0):
    tensors = _tensor_list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    ref = tuple(tensors[0].shape)
    for k, t in enumerate(tensors):
        if t.dim() == 0:
            raise _err(f"zero-dimensional tensor (at position {k}) cannot be concatenated")
    for k, t in enumerate(tensors[1:], 1):
        s = tuple(t.shape)
        if len(s) != len(ref):
            raise _err(f"Tensors must have same number of dimensions: got {len(ref)} and "
                               f"{len(s)}")
        d = dim % len(ref)
        for i, (a, b) in enumerate(zip(ref, s)):
            if i != d and a != b:
                raise _err(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {a} but got size {b} for tensor number {k} in "
                                   "the list.")
    dtype = result_type(*tensors, default_float=default_dtype())   # torch's, not NumPy's
    return call(lambda ts: np.concatenate([cast(t, dtype) for t in ts], axis=dim), tensors,
                name="CatBackward0")


def stack(tensors, dim=0):
    tensors = _tensor_list(tensors)
    if not tensors:
        raise _err("stack expects a non-empty TensorList")
    for k, t in enumerate(tensors[1:], 1):
        if tuple(t.shape) != tuple(tensors[0].shape):
            raise _err(f"stack expects each tensor to be equal size, but got "
                       f"{list(tensors[0].shape)} at entry 0 and {list(t.shape)} at entry {k}")
    dtype = result_type(*tensors, default_float=default_dtype())
    return call(lambda ts: np.stack([cast(t, dtype) for t in ts], axis=dim), tensors,
                name="StackBackward0")


def hstack(tensors):
    tensors = [_as_tensor(t) for t in tensors]
    return cat(tensors, 0 if tensors[0].dim() == 1 else 1)


def vstack(tensors):
    return cat([t if t.dim() >= 2 else t.reshape(1, -1) for t in
                (_as_tensor(t) for t in tensors)], 0)


def meshgrid(*tensors, indexing="ij"):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = tuple(t.numel() for t in tensors)
    if indexing == "xy" and len(shape) >= 2:
        shape = (shape[1], shape[0]) + shape[2:]
    out = []
    for k, t in enumerate(tensors):
        axis = k if indexing == "ij" or len(shape) < 2 else {0: 1, 1: 0}.get(k, k)
        view = [1] * len(shape)
        view[axis] = t.numel()
        out.append(t.reshape(view).expand(*shape))
    return tuple(out)


def _cat(tensors, dim):
    return cat(tensors, dim)


def column_stack(tensors):
    """The tensors side by side as columns (vectors and numbers as ``(n, 1)``)."""
    ts = [_as_tensor(t) for t in tensors]
    if not ts:
        raise _err("column_stack expects a non-empty TensorList")
    return _cat([t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in ts], 1)


def row_stack(tensors):
    return vstack(tensors)


def dstack(tensors):
    """The tensors stacked along a third dimension (each made at least 3-d)."""
    ts = [_as_tensor(t) for t in tensors]
    if not ts:
        raise _err("dstack expects a non-empty TensorList")
    return _cat(list(_atleast([ts], 3)), 2)


def _vectors(tensors, what):
    ts, _ = _tensors(tensors, what)
    ts = [_as_tensor(t) for t in ts]
    for t in ts:
        if t.dim() != 1:
            raise _err(f"Expect a 1D vector, but got shape {list(t.shape)}")
    return ts


def cartesian_prod(*tensors):
    """Every combination of one element of each vector, as rows."""
    ts = _vectors(tensors, "cartesian_prod")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return stack([g.flatten() for g in grids], 1)


def combinations(input, r=2, with_replacement=False):  # noqa: A002
    """The length-``r`` combinations of the elements of a vector, as rows (as
    ``itertools.combinations``, or ``combinations_with_replacement``)."""
    (x,) = _vectors((input,), "combinations")
    if r < 0:
        raise _err(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return x._plain(np.zeros((0,), x.dtype))
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = np.array(list(pick(range(x.shape[0]), r)), np.int64).reshape(-1, r)
    return stack([x.index_select(0, x._plain(np.ascontiguousarray(idx[:, k])))
                  for k in range(r)], 1)


def block_diag(*tensors):
    """The tensors (0-d, 1-d as a row, 2-d) along the diagonal of a matrix of zeros."""
    ts = [_as_tensor(t) for t in tensors]
    for k, t in enumerate(ts):
        if t.dim() > 2:
            raise _err(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input "
                       f"{k} has {t.dim()} dimensions")
    if not ts:
        return Tensor._plain(np.zeros((0, 0), default_dtype()))
    dtype = result_type(*ts, default_float=default_dtype())
    shapes = []
    for t in ts:
        s = tuple(t.shape)
        shapes.append((1, 1) if len(s) == 0 else (1, s[0]) if len(s) == 1 else s)
    rows, cols = sum(s[0] for s in shapes), sum(s[1] for s in shapes)
    keys = []
    r = c = 0
    for s in shapes:
        keys.append((slice(r, r + s[0]), slice(c, c + s[1])))
        r, c = r + s[0], c + s[1]

    def fn(*xs):
        out = np.zeros((rows, cols), dtype)
        for x, s, key in zip(xs, shapes, keys):
            out = _update(out, key, np.reshape(cast(x, dtype), s), "set")
        return out
    return call(fn, *ts, name="BlockDiagBackward0")


def _triangle_indices(row, col, offset, dtype, lower):
    if row < 0 or col < 0:
        raise _err(f"row must be non-negative, got{row}" if row < 0 else
                   f"col must be non-negative, got{col}")
    dtype = np.dtype(np.int64 if dtype is None else dtype)
    if dtype not in (np.int32, np.int64):
        raise NotImplementedError(f"\"{'tril' if lower else 'triu'}_indices\" not implemented for "
                   f"'{_scalar_name(dtype)}'")
    r, c = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    return Tensor._plain(np.stack([r, c]).astype(dtype).reshape(2, -1))


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The ``(2, N)`` coordinates of the lower triangle of a ``row`` x ``col`` matrix."""
    return _triangle_indices(row, col, offset, dtype, True)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """The ``(2, N)`` coordinates of the upper triangle of a ``row`` x ``col`` matrix."""
    return _triangle_indices(row, col, offset, dtype, False)


def unravel_index(indices, shape):
    """The coordinates in ``shape`` of flat ``indices`` (a tuple of tensors; indices out
    of range wrap around, as PyTorch's)."""
    idx = indices._concrete("unravel_index") if isinstance(indices, TensorBase) else \
        np.asarray(indices)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"expected 'indices' to be integer dtype, but got torch.{idx.dtype.name}")
    shape = (int(shape),) if isinstance(shape, numbers.Integral) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    idx = idx.astype(np.int64)
    out = []
    for k in range(len(shape)):
        inner = math.prod(shape[k + 1:])
        out.append(np.floor_divide(idx, inner) % shape[k] if shape[k] else idx * 0)
    return tuple(Tensor._plain(np.asarray(o, np.int64)) for o in out)


FUNCTIONS = {f.__name__: f for f in (
    cat, stack, hstack, vstack, meshgrid, column_stack, row_stack, dstack, cartesian_prod,
    combinations, block_diag, tril_indices, triu_indices, unravel_index)}
