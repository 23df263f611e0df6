"""``tg.flatten_util.ravel_pytree``: a pytree of arrays as one flat vector, as
``jax.flatten_util`` gives it."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import TraceError
from ..tracer import Tracer, flatten, unflatten


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """``(flat, unravel)``: every leaf raveled and concatenated (in ``tree_flatten``'s
    order) into one 1-d array, and the function that splits such a vector back into the
    tree (shapes and dtypes restored). Both work on traced values, so gradients flow
    through them.

    The flat vector has the leaves' common dtype (NumPy's promotion); ``unravel`` casts
    each piece back to its leaf's dtype."""
    leaves, tree = flatten(pytree)
    shapes = [tuple(np.shape(x)) for x in leaves]
    dtypes = [np.dtype(x.dtype) if hasattr(x, "dtype") else np.asarray(x).dtype
              for x in leaves]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    total = sum(sizes)
    flat_dtype = np.result_type(*dtypes) if dtypes else np.dtype(np.float64)
    if leaves:
        pieces = [np.ravel(x if isinstance(x, Tracer) else np.asarray(x)) for x in leaves]
        flat = np.concatenate(pieces).astype(flat_dtype)
    else:
        flat = np.zeros(0, flat_dtype)
    offsets = np.cumsum([0] + sizes)

    def unravel(vector: Any) -> Any:
        if np.shape(vector) != (total,):
            raise TraceError(f"unravel expects a vector of shape ({total},), got shape "
                             f"{tuple(np.shape(vector))}")
        parts = []
        for k, (shape, dtype) in enumerate(zip(shapes, dtypes)):
            piece = np.reshape(vector[offsets[k]:offsets[k + 1]], shape)
            if np.dtype(piece.dtype) != dtype:
                piece = piece.astype(dtype)
            parts.append(piece)
        return unflatten(tree, parts)

    return flat, unravel
