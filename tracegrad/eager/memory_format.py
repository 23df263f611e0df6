"""``torch.memory_format`` and its four values. tracegrad keeps every tensor it makes in C
order: ``contiguous``, ``clone``, ``to``, the ``*_like`` factories and ``empty`` accept a
memory format (checked, as torch checks its type) and make C-order tensors whatever it is.
The values are the same as torch's in every layout; what differs is the layout itself,
and tracegrad reports its real one: ``stride()``, and ``is_contiguous(memory_format=
torch.channels_last)``, which is False for a C-order 4-D tensor (unless its shape makes the
two layouts one)."""
from __future__ import annotations

import numpy as np


class memory_format:  # noqa: N801  (torch's class name)
    """A tensor layout: ``torch.contiguous_format`` (C order), ``torch.channels_last``
    (N, H, W, C in memory for an N, C, H, W tensor), ``torch.channels_last_3d``,
    ``torch.preserve_format``."""

    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"torch.{self._name}"

    def __reduce__(self):
        return self._name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
legacy_contiguous_format = contiguous_format


def check(value, what):
    """``value`` if it is a memory format (or None), else torch's TypeError."""
    if value is not None and not isinstance(value, memory_format):
        raise TypeError(f"{what}(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(value).__name__}")
    return value


def is_contiguous_as(shape, strides, itemsize, fmt):
    """Whether an array of ``shape`` and byte ``strides`` is laid out as ``fmt`` (torch's
    rule: dimensions of size 1 do not count)."""
    if fmt in (channels_last, channels_last_3d):
        want = 4 if fmt is channels_last else 5
        if len(shape) != want:
            return False
        order = [1] + list(range(len(shape) - 1, 1, -1)) + [0]     # C, then W, H, (D), N
        expected = itemsize
        for d in order:
            if shape[d] != 1 and strides[d] != expected:
                return False
            expected *= shape[d]
        return True
    expected = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


MEMORY_FORMATS = {"memory_format": memory_format, "contiguous_format": contiguous_format,
                  "channels_last": channels_last, "channels_last_3d": channels_last_3d,
                  "preserve_format": preserve_format,
                  "legacy_contiguous_format": legacy_contiguous_format}
del np
