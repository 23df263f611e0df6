"""Containers: ``Sequential`` (modules applied in order) and ``ModuleList`` (modules the
owner registers and calls itself). Children are named "0", "1", ... as in PyTorch, so
state_dict keys match PyTorch's for the same model."""
from __future__ import annotations

from collections import OrderedDict

from .modules import Module

__all__ = ["Sequential", "ModuleList"]


class _Children(Module):
    """What both containers do with their numbered children."""

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self


class Sequential(_Children):
    """Modules applied one after another; indexable, sliceable and iterable."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input

    def __getitem__(self, idx):
        mods = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(mods[idx]))
        return mods[_index(idx, len(mods))][1]

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self._modules))]
        setattr(self, key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        for key in (keys[idx] if isinstance(idx, slice) else [keys[_index(idx, len(keys))]]):
            del self._modules[key]


def _index(idx, n):
    idx = int(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range")
    return idx % n


class ModuleList(_Children):
    """A list of modules whose parameters the owner registers."""

    def __init__(self, modules=None):
        super().__init__()
        for m in modules or ():
            self.append(m)

    def __getitem__(self, idx):
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(mods[idx])
        return mods[_index(idx, len(mods))]

    def __setitem__(self, idx, module):
        self.add_module(str(_index(idx, len(self))), module)

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self
