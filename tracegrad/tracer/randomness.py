"""Noticing that a traced function drew random numbers with NumPy or Python's ``random``.

``np.random.rand(3)``, ``rng.normal(size=3)`` or ``random.random()`` inside a traced
function is code the tracer never sees (no traced value takes part), and the numbers it
returns are constants of the graph. Compiled (``tg.jit``), such a function would return
the same numbers on every call, where the plain function draws fresh ones. tracegrad does
not patch ``np.random`` or ``random`` (other threads share them), so it notices the draw by
its effect: the state of the random source moved while the function was traced. The
sources watched:

- NumPy's global ``RandomState`` (``np.random.rand``, ``np.random.normal``, ...: bound
  methods of ``np.random.mtrand._rand``) and Python's ``random`` module's generator
  (``random.random``, ``random.randint``, ...), whoever called them;
- every ``np.random.Generator``, ``RandomState``, bit generator or ``random.Random`` (not
  ``SystemRandom``, which has no state to compare) the function can reach
  directly: among its arguments (static ones included), in its closure or its parameters'
  default values, in the globals its code names, on the object of a bound method or callable object, following
  ``functools.partial``, ``functools.wraps`` (``__wrapped__``) and the functions those
  refer to, two levels deep.

A generator made inside the function, or reached only through other objects, is not
watched: a seeded one gives the same numbers on every call anyway.

What each user does with it: ``tg.jit`` runs a function that drew without compiling it
(see ``compiled.py``: on every call, exactly as NumPy would, bit for bit), and the loops
and ``tg.cond``, whose bodies are traced once for all their steps, refuse it.
"""
from __future__ import annotations

import functools
import random
import types

import numpy as np

_KINDS = (np.random.Generator, np.random.RandomState, np.random.BitGenerator, random.Random)
PYTHON = random.randint.__self__        # the generator behind the ``random`` module


def _global_state():
    return np.random.mtrand._rand


def _collect(obj, out, seen, depth, receiver=False):
    """Append to ``out`` the random sources ``obj`` refers to (see the module's
    docstring); ``receiver``: also look at ``obj``'s attributes (an argument, the object of
    a bound method)."""
    if seen.get(id(obj), -1) >= depth:     # seen already, as deep or deeper
        return
    seen[id(obj)] = depth
    if isinstance(obj, _KINDS):
        seen[id(obj)] = 99
        if not isinstance(obj, random.SystemRandom):
            out.append(obj)
        return
    if depth <= 0 or isinstance(obj, _SKIP):
        return
    if isinstance(obj, (list, tuple)):
        for x in obj[:64]:
            _collect(x, out, seen, depth - 1, receiver)
        return
    if isinstance(obj, dict):
        for x in list(obj.values())[:64]:
            _collect(x, out, seen, depth - 1, receiver)
        return
    if isinstance(obj, functools.partial):
        _collect(obj.func, out, seen, depth)
        _collect(obj.args, out, seen, depth, True)
        _collect(obj.keywords, out, seen, depth, True)
        return
    if isinstance(obj, types.MethodType):
        _collect(obj.__func__, out, seen, depth)
        _collect(obj.__self__, out, seen, depth, True)
        return
    if isinstance(obj, types.FunctionType):
        # default values (lambda q, r=rng: ...) are the function's own, as its closure
        _collect(obj.__defaults__ or (), out, seen, depth, True)
        _collect(obj.__kwdefaults__ or {}, out, seen, depth, True)
        for cell in obj.__closure__ or ():
            try:
                _collect(cell.cell_contents, out, seen, depth - 1, True)
            except ValueError:          # an empty cell
                pass
        glob = obj.__globals__
        for name in _names(obj.__code__):
            if name in glob:
                _collect(glob[name], out, seen, depth - 1, True)
        wrapped = obj.__dict__.get("__wrapped__")       # functools.wraps: tg.grad(f)
        if wrapped is not None:
            _collect(wrapped, out, seen, depth)
        return
    attrs = getattr(type(obj), "__dict__", {})
    if not receiver and "__call__" not in attrs:
        return
    # a callable object (a tg.jit-compiled function, a model), or an argument
    inner = vars(obj) if hasattr(obj, "__dict__") else {}
    for name in ("fun", "__wrapped__"):
        if callable(inner.get(name)):
            _collect(inner[name], out, seen, depth)
    _collect(inner, out, seen, depth - 1)


_SKIP = (np.ndarray, np.generic, int, float, complex, str, bytes, types.ModuleType, type)


def _names(code):
    """The global names ``code`` and the code objects nested in it (lambdas, inner
    functions) refer to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def sources(fun, args=(), kwargs=None) -> list:
    """The random sources ``fun`` called with ``args`` and ``kwargs`` may draw from."""
    out = [_global_state(), PYTHON]
    seen = {id(out[0]): 99, id(PYTHON): 99}
    _collect(fun, out, seen, 3)
    _collect(tuple(args), out, seen, 3, True)
    _collect(kwargs or {}, out, seen, 3, True)
    return out


def _state(source):
    if isinstance(source, random.Random):
        return source.getstate()
    if isinstance(source, np.random.RandomState):
        return source.get_state(legacy=False)      # with the cached Gaussian
    if isinstance(source, np.random.Generator):
        return source.bit_generator.state
    return source.state


def _same(a, b):
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and np.array_equal(a, b)
    return type(a) is type(b) and a == b


class Watch:
    """The states of some random sources now; ``drawn()`` says whether any moved since."""

    def __init__(self, srcs):
        self.sources = srcs
        self.states = [_state(s) for s in srcs]

    def restore(self):
        """Put every source back in the state it had."""
        for source, state in zip(self.sources, self.states):
            if isinstance(source, random.Random):
                source.setstate(state)
            elif isinstance(source, np.random.RandomState):
                source.set_state(state)
            elif isinstance(source, np.random.Generator):
                source.bit_generator.state = state
            else:
                source.state = state

    def drawn(self) -> list:
        """The sources whose state moved, described for a message."""
        return [describe(s) for s in self.moved()]

    def moved(self) -> list:
        """The sources whose state moved."""
        return [s for s, before in zip(self.sources, self.states)
                if not _same(_state(s), before)]


def watch(fun, args=(), kwargs=None) -> Watch:
    return Watch(sources(fun, args, kwargs))


def describe(source):
    if source is _global_state():
        return "NumPy's global random state (np.random.*)"
    if source is PYTHON:
        return "Python's random module (random.*)"
    return f"a {type(source).__name__}"
