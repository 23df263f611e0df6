"""Which C function the user's line is calling, when NumPy or Python converts a traced
value from inside it (``__array__``, ``__float__``): no Python frame of that function
exists, so it is read off the user's frame. The instruction running there is the call; its
source span (``co_positions``) is the call expression; its callee, when it is a plain
chain of names and attributes (``np.random.normal``, ``rng.normal``, ``math.sin``), is
looked up in the frame (attribute lookups only: no code of the user's runs again, and
nothing is called)."""
from __future__ import annotations

import ast
import dis
import linecache
import threading

from ..ir.source import user_frame

_MISSING = object()
_PRECALL = dis.opmap.get("PRECALL", -1)
_CACHE = dis.opmap.get("CACHE", -1)


# CPython 3.11's AST constructor keeps its recursion depth in interpreter-wide state:
# ast.parse in two threads at once can fail with "AST constructor recursion depth
# mismatch" (gh-106905). tracegrad's parses take turns, and each call is parsed once.
_PARSING = threading.Lock()
_CALLS: dict = {}       # (code, instruction offset) -> its ast.Call, or None
_MAX_CALLS = 100_000


def _call_node(frame):
    """The ``ast.Call`` the frame's current instruction belongs to, or None."""
    key = (frame.f_code, frame.f_lasti)
    call = _CALLS.get(key, _MISSING)
    if call is _MISSING:
        with _PARSING:
            call = _parse_call(frame)
        if len(_CALLS) > _MAX_CALLS:
            _CALLS.clear()
        _CALLS[key] = call
    return call


def _parse_call(frame):
    code = frame.f_code
    try:
        positions = list(code.co_positions())
    except AttributeError:          # Python < 3.11
        return None
    k = frame.f_lasti // 2
    raw = code.co_code
    if 0 <= 2 * k < len(raw) and raw[2 * k] == _PRECALL:
        # Python 3.11 stops at PRECALL while a builtin runs; its span is the callee's:
        # the CALL after it (past its inline caches) spans the call
        k += 1
        while 2 * k < len(raw) and raw[2 * k] == _CACHE:
            k += 1
    if not 0 <= k < len(positions):
        return None
    line, end_line, col, end_col = positions[k]
    if None in (line, end_line, col, end_col):
        return None
    lines = [linecache.getline(code.co_filename, n) for n in range(line, end_line + 1)]
    if not all(lines):
        return None
    if len(lines) == 1:
        text = lines[0][col:end_col]
    else:
        text = lines[0][col:] + "".join(lines[1:-1]) + lines[-1][:end_col]
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return None
    return tree.body if isinstance(tree.body, ast.Call) else None


def _lookup(expr, frame):
    """The value of a chain of names and attributes in ``frame``, else _MISSING."""
    if isinstance(expr, ast.Name):
        for scope in (frame.f_locals, frame.f_globals, frame.f_builtins):
            if expr.id in scope:
                return scope[expr.id]
        return _MISSING
    if isinstance(expr, ast.Attribute):
        base = _lookup(expr.value, frame)
        if base is _MISSING:
            return _MISSING
        try:
            return getattr(base, expr.attr)
        except Exception:       # noqa: BLE001  (an attribute lookup the user's code defines)
            return _MISSING
    return _MISSING


def called_function():
    """``(callee, source text of the callee)`` of the call the user's line is making now,
    or ``(None, None)`` when it cannot be told safely."""
    frame = user_frame()
    if frame is None or frame.f_lasti < 0:
        return None, None
    call = _call_node(frame)
    if call is None:
        return None, None
    callee = _lookup(call.func, frame)
    if callee is _MISSING:
        return None, ast.unparse(call.func)
    return callee, ast.unparse(call.func)


def random_sampler(callee):
    """For a method of a NumPy random generator (``np.random.normal`` is one of the global
    ``RandomState``): its name; else None."""
    import numpy as np
    owner = getattr(callee, "__self__", None)
    if not isinstance(owner, (np.random.Generator, np.random.RandomState)):
        return None
    return getattr(callee, "__name__", "")


# math.* functions whose NumPy counterpart has another name (the rest are np.<same name>)
_MATH_TO_NUMPY = {"fsum": "np.sum", "pow": "np.power", "dist": "np.linalg.norm(p - q)",
                  "erf": "scipy.special.erf", "erfc": "scipy.special.erfc",
                  "gamma": "scipy.special.gamma", "lgamma": "scipy.special.gammaln"}


def math_function(callee):
    """For a function of Python's ``math`` or ``cmath`` module: ``(its name, the NumPy
    function to use instead or None)``; else None."""
    import numpy as np
    if getattr(callee, "__module__", None) not in ("math", "cmath"):
        return None
    name = getattr(callee, "__name__", "")
    if name in _MATH_TO_NUMPY:
        return f"{callee.__module__}.{name}", _MATH_TO_NUMPY[name]
    return f"{callee.__module__}.{name}", f"np.{name}" if hasattr(np, name) else None


_CALLEES: dict = {}     # (code, instruction offset) -> the callee expression, or None
# the instructions that call: CALL, CALL_FUNCTION_EX, CALL_KW, PRECALL, by Python version
_CALL_OPS = frozenset(op for name, op in dis.opmap.items()
                      if name.startswith("CALL") or name == "PRECALL")


def calling(frame, fn) -> bool:
    """Whether ``frame``'s current instruction is a call of ``fn`` itself (its callee
    expression looked up in the frame). False when the frame is calling something else, so
    that ``fn`` runs below compiled code that no Python frame shows (``np.random.choice``
    calling ``np.arange`` from Cython, or a property setter of compiled code assigned on
    the line). Where the frame's source cannot be read (code compiled from a string that
    ``linecache`` does not hold), it is taken not to be: a plain array is safe (a traced
    write into it is refused), a traced one handed to compiled code is not. A callee that
    is no chain of names (``make().zeros(3)``) is taken to be when its name is ``fn``'s."""
    key = (frame.f_code, frame.f_lasti)
    func = _CALLEES.get(key, _MISSING)
    if func is _MISSING:
        code = frame.f_code.co_code
        at = frame.f_lasti
        while 0 < at < len(code) and code[at] == _CACHE:
            at -= 2                 # (a Python callee's caller stops in CALL's caches)
        if not 0 <= at < len(code) or code[at] not in _CALL_OPS:
            func = False            # an assignment, an operator: no call of fn itself
        else:
            call = _call_node(frame)
            func = False if call is None else call.func
        _CALLEES[key] = func
    if func is False:
        return False
    callee = _lookup(func, frame)
    if callee is _MISSING:      # not a chain of names (make()(3), fns[0](3)): by its name
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        return name == fn.__name__
    return callee is fn
