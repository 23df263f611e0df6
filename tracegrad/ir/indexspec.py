"""A static description of a NumPy index, stored in ``getitem``/``index_update`` params.

``x[1:, idx, None, ...]`` becomes ``Index((Slice(1, None, None), Arg(0), None, ...))``:
slices and integers are kept by value, integer arrays known at trace time are
kept as arrays, and integer arrays computed by the traced program are operands
of the node, referred to by position (``Arg``).
"""
from typing import NamedTuple

import numpy as np


class Slice(NamedTuple):
    start: object
    stop: object
    step: object

    def format(self):
        s = "" if self.start is None else str(self.start)
        s += ":" + ("" if self.stop is None else str(self.stop))
        if self.step is not None:
            s += ":" + str(self.step)
        return s


class Arg(NamedTuple):
    """The k-th index operand of the node (after the array operands)."""
    k: int

    def format(self):
        return f"$idx{self.k}"


class Index(tuple):
    def format(self):
        parts = []
        for item in self:
            if isinstance(item, (Slice, Arg)):
                parts.append(item.format())
            elif item is None:
                parts.append("None")
            elif item is Ellipsis:
                parts.append("...")
            elif isinstance(item, np.ndarray):
                parts.append(np.array2string(item, separator=",", threshold=6).replace("\n", "")
                             if item.size <= 6 else f"<int[{','.join(map(str, item.shape))}]>")
            else:
                parts.append(str(item))
        return "[" + ", ".join(parts) + "]"

    def to_numpy(self, operands=()):
        """The index as NumPy takes it, with ``Arg`` entries filled from ``operands``."""
        out = []
        for item in self:
            if isinstance(item, Slice):
                out.append(slice(*item))
            elif isinstance(item, Arg):
                out.append(operands[item.k])
            else:
                out.append(item)
        return tuple(out)

    @property
    def is_basic(self):
        """Only slices, integers, None and ...: no duplicates can occur."""
        return not any(isinstance(i, (Arg, np.ndarray)) for i in self)
