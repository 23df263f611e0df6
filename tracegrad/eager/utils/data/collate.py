"""``default_collate`` and ``default_convert``: how ``DataLoader`` turns a list of samples
into a batch, with PyTorch's rules: tensors and NumPy arrays stacked on a new first
dimension (``stack``: PyTorch's type promotion, its error for unequal sizes); NumPy scalars
and Python ints made one tensor whose dtype comes from every element (``tensor(batch)``:
``[1, 2.5]`` is float32, ``[True, False]`` bool); a batch whose first element is a Python
float float64; dicts (their class kept), named tuples and sequences collated field by
field (tuples become lists); strings and bytes left as a list."""
from __future__ import annotations

import collections.abc
import copy

import numpy as np

from ...creation import tensor
from ...functions import stack
from ...promotion import promote_types
from ...tensor import Tensor, default_dtype

__all__ = ["default_collate", "default_convert"]

_BAD = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; "
        "found {}")


def _stringlike(dtype):
    """NumPy's string and object dtypes, which PyTorch does not make tensors of."""
    return dtype.kind in "SUO"


def _numbers(batch):
    """``torch.tensor(batch)`` of numbers: the dtype promoted over every element, a NumPy
    scalar counting with its own dtype, a Python float with the default one."""
    dtype = None
    for v in batch:
        if isinstance(v, (np.bool_, np.number)):
            d = v.dtype
        elif isinstance(v, bool):
            d = np.dtype(np.bool_)
        elif isinstance(v, int):
            d = np.dtype(np.int64)
        elif isinstance(v, float):
            d = default_dtype()
        else:
            return tensor(batch)                # its error
        dtype = promote_types(dtype, d)
    if dtype.kind in "iu" and any(isinstance(v, np.bool_) for v in batch):
        # PyTorch reads each element as the result's type: a NumPy bool is no integer
        raise TypeError("'numpy.bool' object cannot be interpreted as an integer")
    return tensor([v.item() if isinstance(v, np.generic) else v for v in batch], dtype=dtype)


def default_collate(batch):
    """One batch from a list of samples (see the module docstring)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if isinstance(elem, np.ndarray):
        if _stringlike(elem.dtype):
            raise TypeError(_BAD.format(elem.dtype))
        return default_collate([Tensor._plain(np.array(b)) for b in batch])
    if isinstance(elem, (np.bool_, np.number, np.object_)):     # NumPy scalars
        return _numbers(batch)
    if isinstance(elem, float):
        return tensor(batch, dtype=np.float64)
    if isinstance(elem, int):                                  # bools too
        return _numbers(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        fields = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                out = copy.copy(elem)                           # its class and attributes
                out.update(fields)
                return out
            return type(elem)(fields)
        except TypeError:
            return fields
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):   # namedtuple
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = [default_collate(s) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return transposed                         # PyTorch gives a list for tuples
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                out = copy.copy(elem)
                for i, v in enumerate(transposed):
                    out[i] = v
                return out
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
