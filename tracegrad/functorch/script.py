"""``torch.jit`` for programs that import tracegrad as torch: ``torch.jit.script``,
``torch.jit.trace``, ``ignore``, ``unused``, ``export``, ``is_scripting``,
``is_tracing``, ``annotate``, ``fork``/``wait``, ``freeze``.

There is no TorchScript here. ``script`` and ``trace`` give an object that calls the
module or function through ``tracegrad.compile`` when that exists, and runs it eagerly
otherwise, with eager's numbers either way (Python control flow is followed on every
call, where a TorchScript trace would have frozen the branches of its example inputs).
``trace`` keeps its example inputs: its ``.graph`` is the tracegrad ``Graph`` recorded by
running the function symbolically on them, and ``.code`` the NumPy source ``tg.jit``
generates for it. Saving TorchScript archives (``torch.jit.save``/``load``) is not
possible and raises ``RuntimeError``.

``tracegrad.jit`` itself stays the functional ``tg.jit``; these names are attached to
it as attributes, and ``import tracegrad.jit`` / ``from tracegrad.jit import script``
find this module.
"""
from __future__ import annotations

import copy
import functools
import sys
import threading
import typing
import weakref
from collections.abc import Callable
from typing import Any

from ..eager.grad_mode import no_grad
from ..eager.nn.modules import Module
from ..eager.random import default_generator
from ..transforms.jit import jit as tg_jit
from ..transforms.tracing import trace as tg_trace
from . import func as _func

__all__ = ["script", "trace", "trace_module", "script_method", "ignore", "unused", "export",
           "is_scripting", "is_tracing", "annotate", "Attribute", "Final", "fork", "wait", "freeze", "save",
           "load", "ScriptModule", "ScriptFunction", "RecursiveScriptModule",
           "TopLevelTracedModule"]

_LOCAL = threading.local()
Final = typing.Final


def is_scripting() -> bool:
    """False: tracegrad runs a scripted function as Python (eagerly or compiled)."""
    return False


def is_tracing() -> bool:
    """True while ``trace`` records a function's graph (in this thread)."""
    return getattr(_LOCAL, "tracing", 0) > 0


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """``@torch.jit.ignore`` and ``@torch.jit.ignore(drop=True)``: the function is left
    as it is (everything here runs as Python)."""
    if callable(drop):
        return drop
    return lambda fn: fn


def script_method(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``@torch.jit.script_method`` (a method of a ``ScriptModule`` subclass): left as it
    is."""
    return fn


def unused(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``@torch.jit.unused``: the function is left as it is."""
    return fn


def export(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``@torch.jit.export``: the method is left as it is (every method of a scripted
    module is callable here)."""
    return fn


def annotate(the_type: Any, the_value: Any) -> Any:
    """``torch.jit.annotate(type, value)``: ``value`` (a type hint for TorchScript)."""
    return the_value


class Attribute(typing.NamedTuple):
    """``torch.jit.Attribute(value, type)``, as torch's outside TorchScript: the pair."""
    value: Any
    type: Any


class _Future:
    def __init__(self, value):
        self._value = value

    def wait(self) -> Any:
        return self._value

    def value(self) -> Any:
        return self._value

    def done(self) -> bool:
        return True


def fork(func: Callable[..., Any], *args: Any, **kwargs: Any) -> _Future:
    """``torch.jit.fork``: runs ``func`` now (eager PyTorch runs it synchronously too)
    and returns a future holding its result."""
    return _Future(func(*args, **kwargs))


def wait(future: _Future) -> Any:
    """``torch.jit.wait``: the result of a ``fork``."""
    return future.wait()


def _compile_fn():
    """``tracegrad.compile``, looked up when needed (the package is imported by then)."""
    return getattr(sys.modules[__name__.split(".")[0]], "compile", None)


def _as_example(example_inputs):
    if example_inputs is None:
        return None
    return example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)


_NO_GRAPH = ("{what} has no graph: torch.jit.script does not record one here (tracegrad "
             "compiles or runs the Python function); torch.jit.trace(f, example_inputs)"
             ".graph is the tracegrad Graph recorded from its example inputs")


def _record(fn, example, what):
    """The tracegrad Graph of ``fn`` (a callable over eager tensors) run symbolically on
    ``example``, and the function over arrays that it traced (for ``.code``)."""
    if example is None:
        raise RuntimeError(_NO_GRAPH.format(what=what))
    inner, mask = _func._to_inner(example)

    def bad(t):
        raise RuntimeError(f"torch.jit.trace: {what} returned {t}; only tensors (and "
                           f"tuples, lists and dicts of them) can be recorded")

    def traced(*a):
        return _func._unwrap_out(fn(*_func._to_outer(a, mask)), bad)

    saved = default_generator.get_state()
    _LOCAL.tracing = getattr(_LOCAL, "tracing", 0) + 1
    try:
        graph = tg_trace(traced, *inner)
    finally:
        _LOCAL.tracing -= 1
        default_generator.set_state(saved)   # (a draw while recording is no draw)
    return graph, traced, inner


def _code(fn, example, what):
    graph, traced, inner = _record(fn, example, what)
    return tg_jit(traced).lower(*inner).as_text()


# -- functions ---------------------------------------------------------------------------------
class ScriptFunction:
    """A function given to ``torch.jit.script`` or ``torch.jit.trace``."""

    def __init__(self, fn: Callable[..., Any], example: tuple | None = None) -> None:
        self._fn = fn
        self._example = example
        self._run = None
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__wrapped__ = fn
        how = ("through tracegrad.compile" if _compile_fn() is not None else
               "eagerly, as plain tracegrad operations (tracegrad.compile is not available)")
        self.__doc__ = (f"{self.__name__}, given to torch.jit.{'trace' if example else 'script'}"
                        f": each call runs the Python function {how}, with eager's numbers."
                        + (f"\n\n{fn.__doc__}" if getattr(fn, "__doc__", None) else ""))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        run = self._run
        if run is None:
            comp = _compile_fn()
            run = self._run = comp(self._fn) if comp is not None else self._fn
        return run(*args, **kwargs)

    def __get__(self, obj, objtype=None):
        # a scripted function stored on a class is a method, as the function would be
        return self if obj is None else functools.partial(self, obj)

    @property
    def graph(self) -> Any:
        """The tracegrad Graph recorded from ``trace``'s example inputs."""
        return _record(self._fn, self._example, self.__name__)[0]

    @property
    def code(self) -> str:
        """The NumPy source ``tg.jit`` generates for the recorded graph."""
        return _code(self._fn, self._example, self.__name__)

    def save(self, f: Any, **kwargs: Any) -> None:
        save(self, f)

    def __repr__(self) -> str:
        return f"<tracegrad ScriptFunction {self.__name__}>"


# -- modules -----------------------------------------------------------------------------------
class ScriptModule(Module):
    """Base of the modules ``torch.jit.script`` and ``torch.jit.trace`` return: the module
    itself (its parameters, buffers, submodules and attributes are the original's, shared
    both ways), called through ``tracegrad.compile`` when that exists and eagerly
    otherwise."""

    _tg_example: tuple | None = None
    _tg_base: type | None = None     # the scripted module's class (None: a user subclass)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        comp = _compile_fn()
        if comp is None or self._tg_base is None:
            return super().__call__(*args, **kwargs)
        run = _COMPILED.get(self)
        if run is None:
            run = _COMPILED[self] = comp(self._tg_plain())
        return run(*args, **kwargs)

    def _tg_plain(self):
        """The original module's class on this module's attributes (no scripting)."""
        if self._tg_base is None:
            return self
        plain = object.__new__(self._tg_base)
        object.__setattr__(plain, "__dict__", self.__dict__)
        return plain

    @property
    def graph(self) -> Any:
        """The tracegrad Graph recorded from ``trace``'s example inputs (on a copy of the
        module: recording changes none of its buffers)."""
        return _record(copy.deepcopy(self._tg_plain()), self._tg_example,
                       type(self).__name__)[0]

    @property
    def code(self) -> str:
        """The NumPy source ``tg.jit`` generates for the recorded graph."""
        return _code(copy.deepcopy(self._tg_plain()), self._tg_example, type(self).__name__)

    def save(self, f: Any, **kwargs: Any) -> None:
        save(self, f)

    @property
    def original_name(self) -> str:
        return (self._tg_base or type(self)).__name__


class RecursiveScriptModule(ScriptModule):
    """What ``torch.jit.script(module)`` returns."""


class TopLevelTracedModule(ScriptModule):
    """What ``torch.jit.trace(module, example_inputs)`` returns."""


_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _wrap_module(module, kind, example=None):
    base = module._tg_base if isinstance(module, ScriptModule) else type(module)
    how = ("through tracegrad.compile" if _compile_fn() is not None else
           "eagerly, as plain tracegrad operations (tracegrad.compile is not available)")
    cls = type(kind.__name__, (kind, base), {
        "_tg_example": example, "_tg_base": base, "__module__": kind.__module__,
        "__doc__": f"{base.__name__} given to torch.jit: the module itself (its parameters "
                   f"are the original's), called {how}, with eager's numbers."})
    new = object.__new__(cls)
    object.__setattr__(new, "__dict__", module.__dict__)
    return new


# -- script / trace ----------------------------------------------------------------------------
def script(obj: Any, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:
    """``torch.jit.script``: a module (the module itself, shared) or function that runs
    through ``tracegrad.compile``, or eagerly while that is not available. A class, or
    anything else that is not a module or a function, raises ``RuntimeError``."""
    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if isinstance(obj, Module):
        return _wrap_module(obj, RecursiveScriptModule)
    if isinstance(obj, type):
        if obj.__module__ == "builtins":
            raise TypeError(f"{obj} is a built-in class")
        raise RuntimeError(f"torch.jit.script({obj.__name__}): tracegrad has no TorchScript "
                           f"classes; use the class as it is (its methods run as Python), "
                           f"or script a module or function")
    if callable(obj):
        return ScriptFunction(obj)
    raise RuntimeError(f"torch.jit.script: expected a module or a function, got "
                       f"{type(obj).__name__}")


def trace(func: Any, example_inputs: Any = None, optimize: Any = None,
          check_trace: bool = True, check_inputs: Any = None, check_tolerance: float = 1e-5,
          strict: bool = True, _force_outplace: bool = False, _module_class: Any = None,
          _compilation_unit: Any = None, example_kwarg_inputs: Any = None,
          _store_inputs: bool = True) -> Any:
    """``torch.jit.trace``: as ``script``, keeping ``example_inputs`` (a tensor or a
    tuple of them): ``.graph`` is the tracegrad Graph of the function run symbolically on
    them, ``.code`` its generated NumPy source. Each call runs the Python function, so
    branches follow the inputs (a TorchScript trace would replay the examples')."""
    if example_kwarg_inputs is not None:
        raise RuntimeError("torch.jit.trace: example_kwarg_inputs is not supported by "
                           "tracegrad; pass example_inputs positionally")
    if example_inputs is None:
        raise RuntimeError("torch.jit.trace needs example_inputs (a tensor or a tuple of "
                           "tensors)")
    example = _as_example(example_inputs)
    # torch's trace runs the function on the examples: once to record, and with
    # check_trace twice more as Python and twice as the recorded graph; the buffers
    # (BatchNorm's running statistics) and the random generator are left as that leaves
    # them
    _LOCAL.tracing = getattr(_LOCAL, "tracing", 0) + 1
    try:
        with no_grad():
            for _ in range(5 if check_trace else 1):
                func(*example)
    finally:
        _LOCAL.tracing -= 1
    if isinstance(func, ScriptModule):
        return _wrap_module(func, TopLevelTracedModule, example)
    if isinstance(func, ScriptFunction):
        return ScriptFunction(func._fn, example)
    if isinstance(func, Module):
        return _wrap_module(func, TopLevelTracedModule, example)
    if callable(func) and not isinstance(func, type):
        return ScriptFunction(func, example)
    raise RuntimeError(f"torch.jit.trace: expected a module or a function, got "
                       f"{type(func).__name__}")


def trace_module(mod: Any, inputs: dict, **kwargs: Any) -> Any:
    """``torch.jit.trace_module(mod, {"forward": example})``: ``trace`` of its forward."""
    if not isinstance(inputs, dict) or set(inputs) != {"forward"}:
        raise RuntimeError("torch.jit.trace_module: tracegrad traces a module's forward "
                           "only: pass inputs={'forward': example_inputs}")
    return trace(mod, inputs["forward"], **kwargs)


def freeze(mod: Any, preserved_attrs: Any = None, optimize_numerics: bool = True) -> Any:
    """``torch.jit.freeze``: the scripted module (it computes the same numbers; tracegrad
    has no separate frozen form)."""
    if not isinstance(mod, ScriptModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use "
                           "torch.jit.script or torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    return mod


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    """Not available: a TorchScript archive holds the compiled code, which tracegrad does
    not produce."""
    raise RuntimeError("torch.jit.save: tracegrad writes no TorchScript archives (they hold "
                       "compiled code; its script runs Python). Save the weights with "
                       "torch.save(model.state_dict(), f) and rebuild the model from its "
                       "class")


def load(f: Any, map_location: Any = None, _extra_files: Any = None,
         _restore_shapes: bool = False) -> Any:
    """Not available: see ``save``."""
    raise RuntimeError("torch.jit.load: tracegrad reads no TorchScript archives (they hold "
                       "compiled code); load a state dict with torch.load and "
                       "model.load_state_dict")


def _attach():
    """The names above as attributes of the functional ``tg.jit`` (``torch.jit.script``
    where ``torch`` is tracegrad), which keeps its own behaviour."""
    for name in __all__:
        setattr(tg_jit, name, globals()[name])


_attach()
