"""What a compiled function can reach from outside: its arguments, the cells it closes
over, the globals its code names, a bound method's object; through modules, optimizers,
LR schedulers, lists, tuples and dicts (and the functions it calls, their closures and
globals), a few levels deep. The tensors found are lifted to graph inputs; the modules,
optimizers and schedulers found are guarded (``training``, hyper-parameters) and
watched for Python state the capture would lose."""
from __future__ import annotations

import dis
import functools
import random
import types

import numpy as np

_DEPTH = 6
# random number generators a function may hold (draws from them are no graph operation)
_GENERATORS = (random.Random, np.random.Generator, np.random.RandomState,
               np.random.BitGenerator)


class _Length:
    """The key of a place holding a list's length or a dict's number of keys
    (``(container, LENGTH)``): a hook, an attribute, a dict entry or a list element added
    between calls changes it, as a replaced one changes the value at its own place."""
    __slots__ = ()

    def __repr__(self):
        return "LENGTH"


LENGTH = _Length()


class Reached:
    def __init__(self):
        self.tensors: list = []         # (tensor, path) in order found; path: (dict, key)
        self.modules: list = []
        self.optimizers: list = []
        self.schedulers: list = []
        self.containers: list = []      # the lists and dicts reached (their stores replay)
        self.generators: list = []      # random.Random, np.random Generator / RandomState
        # the places holding the Python state reached: (dict, key), (list, index), (dict or
        # list, LENGTH) for its length, (function, "__defaults__" / "__kwdefaults__"), or
        # (cell, None) for a closure's cell; guarded on each call (``api._state_function``): a number,
        # string, None or bool by value, any other object (a submodule, a config object)
        # by identity
        self.places: list = []
        # id(tensor) -> the place its tuple or list hangs from (an LSTM's hidden state
        # kept as a module attribute), for the tensors found inside one
        self.roots: dict = {}
        self._seen: set[int] = set()

    def tensor_ids(self):
        return {id(t) for t, _ in self.tensors}


def reach(fn, args, kwargs, Tensor, Module, Optimizer, Scheduler) -> Reached:
    out = Reached()
    seen = out._seen

    def visit(obj, depth, path=None, root=None):
        if depth > _DEPTH:
            return
        if path is not None and not isinstance(obj, Tensor):
            out.places.append(path)
        if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes,
                                           np.ndarray, np.generic, type, types.ModuleType)):
            return
        i = id(obj)
        if i in seen:
            return
        seen.add(i)
        if isinstance(obj, Tensor):
            out.tensors.append((obj, path))     # (its .grad is lifted through it)
            if root is not None:
                out.roots[i] = root
            return
        if isinstance(obj, _GENERATORS):
            out.generators.append(obj)
            return
        if type(obj).__module__ == "tracegrad.eager.random":
            return      # tracegrad's own generator: its draws are the capture's (capture.py)
        if isinstance(obj, Module):
            out.modules.append(obj)
            d = obj.__dict__
            out.places.append((d, LENGTH))      # (a hook or an attribute added)
            for key in ("_parameters", "_buffers"):
                store = d.get(key)
                if isinstance(store, dict):
                    out.places.append((store, LENGTH))
                    for name, t in store.items():
                        visit(t, depth + 1, (store, name))
            subs = d.get("_modules")
            if isinstance(subs, dict):
                out.places.append((subs, LENGTH))   # (a ModuleList appended to)
                for name, m in subs.items():
                    visit(m, depth + 1, (subs, name))
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
            out.places.append((obj, LENGTH))
            for k, v in list(obj.items()):
                visit(v, depth + 1, (obj, k))
            return
        if isinstance(obj, list):
            # its elements and length are guarded (``scales[0] = 3.0``, an appended
            # tensor between calls), as a dict's entries
            out.containers.append(obj)
            out.places.append((obj, LENGTH))
            for k, v in enumerate(list(obj)):
                visit(v, depth + 1, (obj, k), path or root)
            return
        if isinstance(obj, tuple):
            for v in obj:
                visit(v, depth + 1, None, path or root)
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
        if type(obj).__module__ == "tracegrad.eager.compile.api":
            return      # a compiled function (a model's method replaced by one): its counts
        d = getattr(obj, "__dict__", None)
        if isinstance(d, dict) and type(obj).__module__ != "builtins":
            out.containers.append(d)    # its attributes: a store into one replays or breaks
            out.places.append((d, LENGTH))      # (an attribute added)
            for k, v in list(d.items()):
                visit(v, depth + 1, (d, k))

    def visit_function(f, depth):
        if (getattr(f, "__module__", None) or "").startswith("tracegrad"):
            return      # the library's own functions: nothing of the user's there
        if f.__closure__:
            for cell in f.__closure__:
                try:
                    visit(cell.cell_contents, depth + 1, (cell, None))
                except ValueError:      # an empty cell
                    pass
        g = f.__globals__
        if _stores_globals(f.__code__) and id(g) not in seen:
            seen.add(id(g))
            out.containers.append(g)    # ``global n; n += 1``: replayed or a graph break
        for name in _names(f.__code__):
            if name in g:
                visit(g[name], depth + 1, (g, name))
        # the default arguments: ``f.__defaults__ = (3.0,)`` between calls is guarded
        visit(f.__defaults__, depth + 1, (f, "__defaults__"))
        visit(f.__kwdefaults__, depth + 1, (f, "__kwdefaults__"))

    visit(fn, 0)
    for a in args:
        visit(a, 1)
    for v in kwargs.values():
        visit(v, 1)
    return out


@functools.lru_cache(maxsize=1024)
def _names(code):
    """The global names ``code`` (and the code inside it) reads or writes: not
    ``co_names``, which holds attribute names too (``opt.step()`` is no read of a global
    ``step``, a training loop's counter that changes on every call)."""
    names = set()
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME", "STORE_GLOBAL", "DELETE_GLOBAL"):
            names.add(ins.argval)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return frozenset(names)


@functools.lru_cache(maxsize=1024)
def _stores_globals(code):
    """Whether ``code`` (or a function or class body inside it) assigns a global name."""
    for ins in dis.get_instructions(code):
        if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            return True
    return any(isinstance(c, types.CodeType) and _stores_globals(c) for c in code.co_consts)
