"""A library's compiled code handed a traced value: the ``TraceError`` naming the library
function the user's line called, and that line.

Compiled functions (C, Cython, Fortran wrappers) take their array arguments through
NumPy's C API: a type check (SciPy's ``SuperLU.solve``: "argument 1 must be
numpy.ndarray, not Tracer"), a typed argument ("Cannot convert Tracer to
numpy.ndarray"), a Cython fused-type dispatch on the argument's type ("Function call with
ambiguous argument types", scikit-learn's losses), the buffer protocol. None of these
asks a NumPy protocol of the tracer, so no code of tracegrad's runs before they fail, and
patching the libraries would be seen by every thread. The failure is recognised instead
as it leaves the trace (``core.new_trace``), from its traceback alone:

- the innermost frame of the user's code (not tracegrad's, NumPy's, SciPy's, an
  installed package's or the standard library's) is calling a library function, and no
  frame of tracegrad's runs below it (tracegrad's own errors are its own);
- the deepest Python frame (the user's, or the library's code below it) is calling
  compiled code: its callee is no Python function, or only Cython's frames follow;
- a traced value is among that call's arguments (a name of the frame bound to a tracer,
  or to a list, tuple, dict or object array holding one);
- the message is one of compiled code refusing an object it cannot compute with (it
  names the ``Tracer`` type, an object dtype, a buffer, a failed signature match, ...).

Only then is the error replaced, by one naming the outermost library function the user's
line called, by its public name (``scipy.sparse.linalg.SuperLU.solve``,
``sklearn._loss.HalfBinomialLoss.loss``), and the user's file:line, saying what to do.
An error the library raises on plain values, or on traced values for another reason,
stays as it is. The callee is read off the frame as ``calls.py`` does (attribute lookups
on a chain of names; nothing is called).

Two more cases name the library function: compiled code that converts a traced argument
itself (``cKDTree(pts).query(t)`` asks ``np.asarray(t, float)``: ``converting_callee``,
from ``Tracer.__array__``), and a ``TraceError`` of tracegrad's raised below a library's
Python code, which names the library's line (``locate`` adds the function the user's line
called and that line).
"""
from __future__ import annotations

import ast
import builtins
import dis
import itertools
import os
import re
import sys
import sysconfig
import types

import numpy as np

from ..errors import TraceError
from ..ir.printing import printable
from ..ir.source import TRACEGRAD_FOLDER, code_path
from .calls import _MISSING, _call_node, _lookup
from .scipy_calls import ALTERNATIVES

_LIBRARIES = tuple({os.path.abspath(sysconfig.get_paths()[k]) + os.sep
                    for k in ("purelib", "platlib", "stdlib", "platstdlib")} |
                   {os.path.dirname(os.path.dirname(np.__file__)) + os.sep})
_USER, _LIBRARY, _CYTHON, _OURS = 0, 1, 2, 3
_KINDS: dict = {}      # code object -> its kind
_ELEMENTS = __name__.rsplit(".", 1)[0] + ".elements"   # (its Element: an object array's)

# what compiled code says when handed an object it cannot compute with
_SYMPTOMS = re.compile(
    r"\bTracer\b|ambiguous argument types|No matching signature|Buffer dtype mismatch|"
    r"Python object|object arrays?\b|dtype\(?'?O'?\)|dtype object|data types? .*not "
    r"supported|unsupported data types?|not supported for the input types|bytes-like|"
    r"buffer interface|must be real number|Cannot convert", re.IGNORECASE)
_CALL_OPS = frozenset(op for name, op in dis.opmap.items()
                      if name.startswith("CALL") or name == "PRECALL")
_CACHE = dis.opmap.get("CACHE", -1)


def _traceback(exc):
    """The traceback entries of ``exc`` (outermost first), the kind of each one's code,
    and the positions of the user's."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    kinds = [_kind(tb.tb_frame.f_code) for tb in frames]
    return frames, kinds, [k for k, kind in enumerate(kinds) if kind == _USER]


def _kind(code):
    kind = _KINDS.get(code)
    if kind is None:
        name = code_path(code)
        if name.startswith(("<tracegrad", "<__array_function__", TRACEGRAD_FOLDER)):
            kind = _OURS
        elif name == "<stringsource>" or (not os.path.isabs(name) and name.endswith(
                (".pyx", ".pxd", ".pxi"))):
            kind = _CYTHON          # the frames Cython makes up for its tracebacks
        elif name.startswith("<frozen") or os.path.abspath(name).startswith(_LIBRARIES):
            kind = _LIBRARY
        else:
            kind = _USER
        _KINDS[code] = kind
    return kind


class _At:
    """A frame of the traceback, at the instruction that raised (or called below)."""
    __slots__ = ("f_code", "f_lasti", "f_lineno", "f_locals", "f_globals", "f_builtins")

    def __init__(self, tb):
        self.f_code, self.f_lasti, self.f_lineno = tb.tb_frame.f_code, tb.tb_lasti, tb.tb_lineno
        self.f_locals = tb.tb_frame.f_locals
        self.f_globals, self.f_builtins = tb.tb_frame.f_globals, tb.tb_frame.f_builtins


def _calling(at):
    """Whether the frame's instruction is a call (not a ``raise``, an operator)."""
    code, k = at.f_code.co_code, at.f_lasti
    while 0 < k < len(code) and code[k] == _CACHE:
        k -= 2
    if not 0 <= k < len(code) or code[k] not in _CALL_OPS:
        return False
    at.f_lasti = k
    return True


def _is_python_function(fn):
    return isinstance(getattr(fn, "__func__", fn), types.FunctionType)


def _has_traced_argument(call, at):
    """Whether a name (or an attribute of one) among the call's arguments holds a traced
    value in the frame."""
    for arg in [*call.args, *(k.value for k in call.keywords)]:
        for node in ast.walk(arg):
            if isinstance(node, (ast.Name, ast.Attribute)) and _traced(_value(node, at)):
                return True
    return False


def _value(expr, at):
    """A chain of names and attributes looked up in the frame, stopping at a traced value
    (whose attributes would record nodes); _MISSING where it is no such chain."""
    if isinstance(expr, ast.Attribute):
        base = _value(expr.value, at)
        if base is _MISSING or _traced(base):
            return base
        try:
            return getattr(base, expr.attr)
        except Exception:       # noqa: BLE001 - an attribute lookup the library defines
            return _MISSING
    return _lookup(expr, at) if isinstance(expr, ast.Name) else _MISSING


def _traced(value, depth=0):
    """A tracer, an element of one (what np.asarray of a tracer holds), or a list, tuple,
    dict or object array holding one."""
    if value is _MISSING:
        return False
    kind = type(value)
    if getattr(kind, "__tg_bind__", None) is not None or kind.__module__ == _ELEMENTS:
        return True
    if depth > 2:
        return False
    if kind is dict:
        return any(_traced(v, depth + 1) for v in value.values())
    if kind in (list, tuple):
        return any(_traced(v, depth + 1) for v in value)
    if isinstance(value, np.ndarray) and value.dtype == object:
        return any(_traced(v, depth + 1) for v in itertools.islice(value.flat, 10_000))
    return False


def _attribute(module, name):
    """A module's attribute, without its ``__getattr__`` (deprecated names warn)."""
    try:
        return vars(module).get(name)
    except TypeError:       # an object in sys.modules that is no module
        return None


def _exporter(obj, module, name):
    """The shortest public module path (a prefix of ``module``, else any loaded module)
    whose attribute ``name`` is ``obj``: ``scipy.sparse.linalg`` for SuperLU."""
    if module and module != "builtins":
        parts = module.split(".")
        for k in range(1, len(parts) + 1):
            mod = sys.modules.get(".".join(parts[:k]))
            if mod is not None and _attribute(mod, name) is obj:
                return ".".join(parts[:k])
        return module
    if getattr(builtins, name, None) is obj:
        return "builtins"
    # a C type whose tp_name has no module (SciPy's SuperLU): where it is exported
    found = [m for m, mod in list(sys.modules.items())
             if mod is not None and not any(p.startswith("_") for p in m.split("."))
             and _attribute(mod, name) is obj]
    return min(found, key=lambda m: (m.count("."), len(m))) if found else None


def _class_name(cls):
    module = _exporter(cls, getattr(cls, "__module__", None), cls.__name__)
    return f"{module}.{cls.__qualname__}" if module else cls.__qualname__


def public_name(fn):
    """A library callable by its public name: ``scipy.sparse.linalg.SuperLU.solve``,
    ``sklearn._loss.HalfBinomialLoss.loss``; None where it has none."""
    if isinstance(fn, type):
        return _class_name(fn)
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", None)
    if owner is not None and not isinstance(owner, types.ModuleType) and name:
        cls = owner if isinstance(owner, type) else type(owner)
        return f"{_class_name(cls)}.{name}"
    qualname = getattr(fn, "__qualname__", None) or name
    if not isinstance(qualname, str):
        # a callable object (a loss called as loss(y, p)): its class's __call__
        return f"{_class_name(type(fn))}.__call__" if callable(fn) else None
    module = getattr(fn, "__module__", None) or getattr(owner, "__name__", None)
    if "." in qualname or "<" in qualname:
        return f"{module}.{qualname}" if module else qualname
    module = _exporter(fn, module, qualname)
    return f"{module}.{qualname}" if module else qualname


def _frame_name(frame):
    """The public name of the library function running in ``frame``."""
    code = frame.f_code
    qualname = getattr(code, "co_qualname", code.co_name)
    self = frame.f_locals.get("self") if code.co_argcount else None
    if self is not None and "." in qualname and "<" not in qualname:
        return f"{_class_name(type(self))}.{qualname.rsplit('.', 1)[1]}"
    fn = frame.f_globals.get(code.co_name)
    if getattr(fn, "__code__", None) is code:
        return public_name(fn)
    return f"{frame.f_globals.get('__name__', '?')}.{qualname}"


def _callee(at):
    """``(the ast.Call, its callee or _MISSING, the callee's source text)`` of the call
    the frame is making; ``(None, _MISSING, None)`` where it cannot be read."""
    call = _call_node(at)
    if call is None:
        return None, _MISSING, None
    return call, _value(call.func, at), ast.unparse(call.func)


def refusal(exc):
    """The ``TraceError`` replacing ``exc`` (a ``TypeError`` or ``ValueError`` leaving a
    trace) when it is compiled code refusing a traced value (see the module docstring);
    else None."""
    if isinstance(exc, TraceError) or not isinstance(exc, (TypeError, ValueError)):
        return None
    message = str(exc)
    if not _SYMPTOMS.search(message):
        return None
    frames, kinds, users = _traceback(exc)
    if not users:
        return None
    u = users[-1]
    if _OURS in kinds[u + 1:]:
        return None                 # tracegrad's own code ran below the user's line
    python = [k for k in range(u, len(frames)) if kinds[k] != _CYTHON]
    c = python[-1]                  # the deepest frame of Python code
    inner = _At(frames[c])
    if not _calling(inner):
        return None
    call, callee, _ = _callee(inner)
    if call is None:
        return None
    names_tracer = re.search(r"\bTracer\b", message) is not None
    # a temporary (lu.solve(np.ones(3)): an array the function makes is traced) shows
    # only in the message, which names the tracer's type
    fresh = not _has_traced_argument(call, inner)
    if fresh and not names_tracer:
        return None
    below = c + 1 < len(frames)     # Cython's frames follow
    if callee is _MISSING:
        # a callee that is no chain of names (factorized(A)(b)): compiled code when
        # Cython's frames follow, or when the message names the tracer's type (a Python
        # function's own argument errors do not)
        if not below and not names_tracer:
            return None
    elif _is_python_function(callee) or not callable(callee):
        return None
    user = inner if c == u else _At(frames[u])
    maker = None
    if c == u:
        outer, text = callee, _callee(user)[2]
    else:
        _calling(user)
        _, outer, text = _callee(user)
        if outer is not _MISSING and not callable(outer):
            outer = _MISSING
    name = public_name(outer) if outer is not _MISSING else None
    if name is None and c != u:
        name = _frame_name(frames[u + 1].tb_frame)     # the library function called
    if name is None:
        # a function another call gave (scipy.sparse.linalg.factorized(A)(b)): named
        # after the function that made it
        call = _callee(user)[0]
        made_by = _value(call.func.func, user) if call is not None and isinstance(
            call.func, ast.Call) else _MISSING
        maker = public_name(made_by) if made_by is not _MISSING else None
        name = f"the function {maker} returns" if maker else text or "a library function"
    called = "" if not text or name == text or "." in text and name.endswith("." + text) \
        else f" (called as {text})"
    inner_name = public_name(callee) if callee is not _MISSING else None
    if c == u:
        what = "is compiled code, which cannot compute with a traced value"
    else:
        what = (f"hands a traced value to compiled code"
                f"{f' ({inner_name})' if inner_name not in (None, name) else ''}, which "
                f"cannot compute with it")
    alternative = ALTERNATIVES.get(name) or ALTERNATIVES.get(maker)
    hint = (f"; use {alternative}, which tracegrad differentiates" if alternative else
            "; compute it with NumPy functions on the traced values, which tracegrad "
            "follows, or call it through tg.pure_callback inside a tg.custom_vjp function "
            "that gives its derivative")
    at = f"{printable(os.path.basename(user.f_code.co_filename))}:{user.f_lineno}"
    first = message.strip().splitlines()[0] if message.strip() else ""
    note = ("; an array the traced function makes (np.zeros, np.ones, np.eye, ...) is a "
            "traced value too: make a constant one outside the function" if fresh else "")
    return TraceError(f"{name}{called} {what} ({type(exc).__name__}: {first}){hint}{note} "
                      f"(at {at})")


def locate(exc):
    """A ``TraceError`` tracegrad raised below a library function the user's line called
    (scikit-learn's ``mean_squared_error`` converting a traced value with ``float()``)
    names the library's line, the first one outside tracegrad, NumPy and SciPy: add the
    library function, by its public name, and the user's line. In place; a message that
    names the user's line already is left as it is."""
    if not isinstance(exc, TraceError) or not exc.args or not isinstance(exc.args[0], str):
        return
    frames, kinds, users = _traceback(exc)
    if not users or users[-1] + 1 >= len(frames) or kinds[users[-1] + 1] == _OURS:
        return                      # raised in tracegrad's code the user's line called
    u = users[-1]
    user = _At(frames[u])
    at = f"{printable(os.path.basename(user.f_code.co_filename))}:{user.f_lineno}"
    message = exc.args[0]
    if f"{at})" in message or f"{at}," in message or message.endswith(at):
        return
    _calling(user)
    _, outer, _ = _callee(user)
    name = public_name(outer) if outer is not _MISSING and callable(outer) else None
    name = name or _frame_name(frames[u + 1].tb_frame)
    if message.endswith(")") and " (at " in message:
        message = f"{message[:-1]}, in {name} called at {at})"
    else:
        message = f"{message} (in {name} called at {at})"
    exc.args = (message, *exc.args[1:])


_NOT_A_LIBRARY = ("numpy", "builtins", "math", "cmath", "tracegrad")


def converting_callee(what):
    """The refusal of a conversion of a traced value (``what``: ``float()``, "Converting to
    a NumPy array of dtype float64") asked for by compiled code that the innermost frame
    outside tracegrad, NumPy and SciPy calls directly (``cKDTree(pts).query(t)``), naming
    that function; None where that frame calls no such function (the user's own
    ``float(t)``, ``np.asarray(t, float)``, a Python function)."""
    from .calls import called_function
    callee, text = called_function()
    if callee is None or _is_python_function(callee) or not callable(callee):
        return None
    owner = getattr(callee, "__self__", None)
    modules = (getattr(callee, "__module__", None) or "",
               getattr(type(owner), "__module__", "") if owner is not None else "",
               getattr(owner, "__name__", "") if isinstance(owner, types.ModuleType) else "")
    if any(m.split(".")[0] in _NOT_A_LIBRARY for m in modules if m) or \
            isinstance(callee, type) and callee.__module__.split(".")[0] in _NOT_A_LIBRARY:
        return None
    name = public_name(callee) or text
    if name is None or name.split(".")[0] in _NOT_A_LIBRARY:
        return None
    called = "" if not text or name == text or "." in text and name.endswith("." + text) \
        else f" (called as {text})"
    alternative = ALTERNATIVES.get(name)
    hint = (f"; use {alternative}, which tracegrad differentiates" if alternative else
            "; compute it with NumPy functions on the traced values, which tracegrad "
            "follows, or call it through tg.pure_callback inside a tg.custom_vjp function "
            "that gives its derivative")
    from ..ir.source import where
    return TraceError(f"{name}{called} is compiled code, which converts its traced argument "
                      f"({what[:1].lower()}{what[1:]}), losing its gradient{hint}{where()}")
