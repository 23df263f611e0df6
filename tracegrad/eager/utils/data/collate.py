"""``default_collate`` and ``default_convert``: how ``DataLoader`` turns a list of samples
into a batch, with PyTorch's rules (tensors and NumPy arrays stacked on a new first
dimension keeping their dtype; Python floats → float64, ints → int64, bools → bool;
dicts, named tuples and sequences collated field by field; strings left as a list)."""
from __future__ import annotations

import collections.abc

import numpy as np

from ...ops import stack
from ...tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_BAD = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def _numeric_array(arr):
    if arr.dtype.kind in "SaUOV":
        raise TypeError(_BAD.format(arr.dtype))
    return arr


def default_collate(batch):
    """One batch from a list of samples (see the module docstring)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        if any(t.requires_grad for t in batch):
            return stack(batch, 0)
        shapes = {tuple(t.shape) for t in batch}
        if len(shapes) > 1:
            raise RuntimeError("stack expects each tensor to be equal size, but got "
                               f"{[list(t.shape) for t in batch]}")
        return Tensor._plain(np.stack([t._data for t in batch]))
    if isinstance(elem, np.ndarray):
        return Tensor._plain(_numeric_array(np.stack(batch)))
    if isinstance(elem, np.generic):                  # NumPy scalars keep their dtype
        return Tensor._plain(_numeric_array(np.array(batch)))
    if isinstance(elem, bool):
        return Tensor._plain(np.array(batch, dtype=np.bool_))
    if isinstance(elem, float):
        return Tensor._plain(np.array(batch, dtype=np.float64))
    if isinstance(elem, int):
        return Tensor._plain(np.array(batch, dtype=np.int64))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(collated) if type(elem) is not dict else collated
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):      # namedtuple
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(s) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed                         # PyTorch gives a list for tuples
        try:
            return type(elem)(transposed)
        except TypeError:
            return transposed
    raise TypeError(_BAD.format(type(elem)))


def default_convert(data):
    """A sample without batching: NumPy arrays (and inside dicts and sequences) become
    tensors; everything else is left as it is."""
    if isinstance(data, np.ndarray) and data.dtype.kind not in "SaUOV":
        return Tensor._plain(data)
    if isinstance(data, np.generic) and data.dtype.kind not in "SaUOV":
        return Tensor._plain(np.array(data))
    if isinstance(data, collections.abc.Mapping):
        return {k: default_convert(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
