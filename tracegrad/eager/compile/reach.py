"""What a compiled function can reach from outside: its arguments, the cells it closes
over, the globals its code names, a bound method's object; through modules, optimizers,
LR schedulers, lists, tuples and dicts (and the functions it calls, their closures and
globals), a few levels deep. The tensors found are lifted to graph inputs; the modules,
optimizers and schedulers found are guarded (``training``, hyper-parameters) and
watched for Python state the capture would lose."""
from __future__ import annotations

import random
import types

import numpy as np

_DEPTH = 6
# random number generators a function may hold (draws from them are no graph operation)
_GENERATORS = (random.Random, np.random.Generator, np.random.RandomState,
               np.random.BitGenerator)


class Reached:
    def __init__(self):
        self.tensors: list = []         # (tensor, path) in order found; path: (dict, key)
        self.modules: list = []
        self.optimizers: list = []
        self.schedulers: list = []
        self.containers: list = []      # the lists and dicts reached (their stores replay)
        self.generators: list = []      # random.Random, np.random Generator / RandomState
        self._seen: set[int] = set()

    def tensor_ids(self):
        return {id(t) for t, _ in self.tensors}


def reach(fn, args, kwargs, Tensor, Module, Optimizer, Scheduler) -> Reached:
    out = Reached()
    seen = out._seen

    def visit(obj, depth, path=None):
        if depth > _DEPTH or obj is None:
            return
        if isinstance(obj, (bool, int, float, complex, str, bytes, np.ndarray, np.generic,
                            type, types.ModuleType)):
            return
        i = id(obj)
        if i in seen:
            return
        seen.add(i)
        if isinstance(obj, Tensor):
            out.tensors.append((obj, path))     # (its .grad is lifted through it)
            return
        if isinstance(obj, _GENERATORS):
            out.generators.append(obj)
            return
        if type(obj).__module__ == "tracegrad.eager.random":
            return      # tracegrad's own generator: its draws are the capture's (capture.py)
        if isinstance(obj, Module):
            out.modules.append(obj)
            d = obj.__dict__
            for key in ("_parameters", "_buffers"):
                store = d.get(key) or {}
                for name, t in store.items():
                    visit(t, depth + 1, (store, name))
            for m in (d.get("_modules") or {}).values():
                visit(m, depth + 1)
            for k, v in d.items():
                if k not in ("_parameters", "_buffers", "_modules"):
                    visit(v, depth + 1, (d, k))
            return
        if isinstance(obj, Optimizer):
            out.optimizers.append(obj)
            for g in obj.param_groups:
                for p in g["params"]:
                    visit(p, depth + 1)
            for p in obj.state:
                visit(p, depth + 1)
            return
        if isinstance(obj, Scheduler):
            out.schedulers.append(obj)
            visit(getattr(obj, "optimizer", None), depth + 1)
            return
        if isinstance(obj, dict):
            out.containers.append(obj)
            for k, v in list(obj.items()):
                visit(v, depth + 1, (obj, k))
            return
        if isinstance(obj, (list, tuple)):
            if isinstance(obj, list):
                out.containers.append(obj)
            for v in obj:
                visit(v, depth + 1)
            return
        if isinstance(obj, types.MethodType):
            visit(obj.__self__, depth)
            visit(obj.__func__, depth)
            return
        if isinstance(obj, types.FunctionType):
            visit_function(obj, depth)
            return
        if isinstance(obj, __import__("functools").partial):
            visit(obj.func, depth + 1)
            visit(obj.args, depth + 1)
            visit(obj.keywords, depth + 1)
            return
        d = getattr(obj, "__dict__", None)
        if isinstance(d, dict) and type(obj).__module__ != "builtins":
            for k, v in list(d.items()):
                visit(v, depth + 1, (d, k))

    def visit_function(f, depth):
        if (getattr(f, "__module__", None) or "").startswith("tracegrad"):
            return      # the library's own functions: nothing of the user's there
        if f.__closure__:
            for cell in f.__closure__:
                try:
                    visit(cell.cell_contents, depth + 1)
                except ValueError:      # an empty cell
                    pass
        g = f.__globals__
        for name in _names(f.__code__):
            if name in g:
                visit(g[name], depth + 1, (g, name))
        if f.__defaults__:
            visit(f.__defaults__, depth + 1)

    visit(fn, 0)
    for a in args:
        visit(a, 1)
    for v in kwargs.values():
        visit(v, 1)
    return out


def _names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names
