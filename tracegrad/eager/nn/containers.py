"""Containers: ``Sequential`` (modules applied in order) and ``ModuleList`` (modules the
owner registers and calls itself). Children are named "0", "1", ... as in PyTorch, so
state_dict keys match PyTorch's for the same model."""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from .modules import Module, Parameter, _addindent

__all__ = ["Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"]


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
        # PyTorch renumbers the children that are left
        mods = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(mods):
            self._modules[str(i)] = m

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self._modules[str(i)] = m
        return self

    def pop(self, key):
        m = self[key]
        del self[key]
        return m


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

    def insert(self, index, module):
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self._modules[str(i)] = m

    def __iadd__(self, modules):
        return self.extend(modules)

    def __repr__(self):
        # PyTorch's: consecutive equal children print once, as "(0-2): 3 x Linear(...)"
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        blocks = []
        for i, r in enumerate(reprs):
            if blocks and blocks[-1][2] == r:
                blocks[-1][1] = i
            else:
                blocks.append([i, i, r])
        lines = [_addindent(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}", 2)
                 for a, b, r in blocks]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """Modules by name, registered with the owner (keys are their state_dict names)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key):
        m = self._modules[key]
        del self._modules[key]
        return m

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for key, m in items:
            self[key] = m


def _param_line(key, p):
    from ..tensor import Tensor
    if isinstance(p, Tensor):
        size = "x".join(str(s) for s in p.shape)
        kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
        return f"  ({key}): {kind} containing: [{_torch_dtype(p.dtype)} of size {size}]"
    return f"  ({key}): Object of type: {type(p).__name__}"


def _torch_dtype(dtype):
    return "torch." + np.dtype(dtype).name


class ParameterList(Module):
    """A list of parameters registered with the owner, named "0", "1", ..."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        for v in values or ():
            self.append(v)

    def _set(self, idx, value):
        from ..tensor import Tensor
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, str(idx), value)

    def append(self, value):
        self._size += 1
        self._set(self._size - 1, value)
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def __len__(self):
        return self._size

    def __iter__(self):
        return (getattr(self, str(i)) for i in range(self._size))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList(list(self)[idx])
        return getattr(self, str(_index(idx, self._size)))

    def __setitem__(self, idx, value):
        self._set(_index(idx, self._size), value)

    def __iadd__(self, values):
        return self.extend(values)

    def extra_repr(self):
        return "\n".join(_param_line(k, p) for k, p in enumerate(self))


class ParameterDict(Module):
    """Parameters by name, registered with the owner."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, value):
        from ..tensor import Tensor
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        self._keys[key] = None
        setattr(self, key, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def update(self, parameters):
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for k, v in items:
            self[k] = v

    def extra_repr(self):
        return "\n".join(_param_line(k, p) for k, p in self.items())
