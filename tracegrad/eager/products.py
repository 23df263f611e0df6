"""``matmul`` recorded as PyTorch records it, so that ``grad_fn`` trees match.

PyTorch reduces ``a @ b`` to ``dot``, ``mv``, ``mm`` or ``bmm`` on reshaped operands:
a vector times a matrix is ``unsqueeze(0)``, ``mm``, ``squeeze``; a batch times a matrix
or vector folds the batch into the rows (``view``, ``mm``/``mv``, ``_unsafe_view``); two
batches are expanded to a common batch shape, viewed as 3-D, multiplied by ``bmm`` and
viewed back. The values are NumPy's ``matmul`` of the same numbers.
"""
from __future__ import annotations

import numpy as np

from .dispatch import call, unviewed
from .tensor_base import CAPTURE


def layout(t):
    """The array whose memory layout ``t`` has: its data, or under tg.compile the value
    the capture computed (the graph's code computes it the same way, so with the same
    strides); None where no value is known."""
    data = t._data
    if type(data) is np.ndarray:
        return data
    if CAPTURE.get() is None:       # (a transform's tracer: no layout to follow)
        return None
    value = getattr(data, "_value", None)
    if type(value) is not np.ndarray or value.shape != tuple(t.shape):
        return None
    return value


def is_contiguous(t):
    """PyTorch's ``is_contiguous``. Only PyTorch's views (``t._base``) can be strided:
    where NumPy returns a view and PyTorch a copy (``flip``), the tensor counts as
    contiguous whatever the array's strides. Under tg.compile, the captured value's
    layout: eager's choices made on it (``contiguous()`` copying, ``matmul`` folding a
    batch into rows) are the graph's, and so are NumPy's summation orders after them."""
    data = t._data
    if type(data) is np.ndarray:
        return data.flags.c_contiguous or (t._base is None and data.base is not None)
    data = layout(t)
    # (a capture records no ``_base``: the NumPy views PyTorch copies instead, ``flip``,
    # are told by their negative strides, which no PyTorch view has)
    return data is None or data.flags.c_contiguous or min(data.strides, default=0) < 0


def _product(a, b, name):
    return call(np.matmul, a, b, name=name)


def _renamed(t, name):
    if t.grad_fn is not None:
        t.grad_fn._name = name
    return t


def _unsafe_view(t, shape):
    # PyTorch's _unsafe_view shares the product's memory but is no view of it
    return _renamed(unviewed(t.reshape(shape)), "UnsafeViewBackward0")


def _as_matrices(t, batch):
    """``t`` expanded to ``batch`` and reshaped to a stack of matrices (a view where the
    strides allow, else a copy, as PyTorch's reshape)."""
    n, m = t.shape[-2:]
    return t.expand(*batch, n, m).reshape(int(np.prod(batch, dtype=np.int64)), n, m)


def matmul(a, b):
    da, db = a.dim(), b.dim()
    if da == 1 and db == 1:
        return _product(a, b, "DotBackward0")
    if da == 2 and db == 1:
        return _product(a, b, "MvBackward0")
    if da == 2 and db == 2:
        return _product(a, b, None)     # (MmBackward0: matmul's)
    if da == 1 and db == 2:
        return _renamed(_product(a.unsqueeze(0), b, None).squeeze(0),
                        "SqueezeBackward4")
    if da >= 3 and db in (1, 2):
        rows = a.reshape(-1, a.shape[-1]) if a._data is None or is_contiguous(a) else None
        if rows is not None:
            out = _product(rows, b, "MvBackward0" if db == 1 else None)
            return _unsafe_view(out, tuple(a.shape[:-1]) + tuple(b.shape[1:]))
    if da >= 3 and db >= 3:
        try:
            batch = tuple(np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
        except ValueError:
            raise RuntimeError(f"The batch dimensions of tensors of shape {list(a.shape)} and "
                               f"{list(b.shape)} cannot be broadcast together") from None
        out = _product(_as_matrices(a, batch), _as_matrices(b, batch), "BmmBackward0")
        return _unsafe_view(out, batch + (a.shape[-2], b.shape[-1]))
    # a matrix or vector times a batch: one node (PyTorch transposes and folds here)
    return _product(a, b, "MatmulBackward0")

