"""Branches decided by an equality on a value being differentiated.

``if np.allclose(x, self._last_x): return self._last_value`` (a memoised model), ``if x ==
0: ...``, ``if x in table: ...``: the function is traced with concrete values, and the
branch taken is recorded as a guard. For a decision such as ``x > 0`` that is right: it
holds on a whole neighbourhood of ``x``, so the branch taken *is* the function near ``x``
and its derivative is the function's. A decision that holds only because two values are
exactly equal does not: step off the point (as finite differences do) and the other branch
runs, so the derivative of the branch taken (zero, for a cached value) is not the
function's. tracegrad refuses it, naming the line, rather than return a silently wrong
derivative. An equality that came out *False* is fine (the values differ on a whole
neighbourhood), and so is one on integers or on values no differentiated input reaches
(``tg.stop_gradient`` says "I mean this branch").

The test runs on the node a guard is taken on (``Trace.guard``): which exact equalities
between floating values does the decision imply? It follows the boolean operations
NumPy's comparisons are recorded as (``np.all`` is a count of the false entries compared
with 0, ``np.any`` a count compared with 0, ``np.isclose`` a ``select`` whose one arm is
``a == b``: a closeness test counts as an equality) and is conservative where a decision
does not say which operand decided it (``select``, ``and`` that came out True).
"""
from __future__ import annotations

import os
import sys

import numpy as np

from ..errors import TraceError
from ..ir.source import where

_FLIP = frozenset({"logical_not", "invert"})
_SAME = frozenset({"convert", "reshape", "broadcast_to", "transpose", "getitem", "copy",
                   "squeeze", "expand_dims"})
_AND = frozenset({"logical_and", "bitwise_and"})
_OR = frozenset({"logical_or", "bitwise_or"})

_MESSAGE = (
    "a branch was decided by an exact equality of a value being differentiated ({what}; "
    "==, !=, `in`, np.allclose, np.isclose, np.array_equal and np.array_equiv all test "
    "equality). The branch taken is the function only at exactly this point: step off it "
    "(as finite differences do) and the other branch runs, so the derivative of the branch "
    "taken (zero, for a cached or memoised result) is not the function's derivative, and "
    "tracegrad will not return it silently. Compute the value without the test, or, if "
    "this branch is what you mean to differentiate, compare tg.stop_gradient(x) instead of "
    "x{at}")


def _node(trace, n):
    """(op, operand ids, dtype) of node ``n`` of ``trace``."""
    op, args, _, _, dtype = trace.record(n)
    return op, args, np.dtype(dtype)


def _is_zero_const(trace, n):
    op, _, params, _, _ = trace.record(n)
    if op != "const":
        return False
    value = np.asarray(params["value"])
    return value.shape == () and value == 0


def _counted(trace, n):
    """The boolean node whose true entries node ``n`` counts (``np.any``/``np.all``: a sum
    of it converted to integers), else None."""
    op, args, _ = _node(trace, n)
    if op != "sum":
        return None
    op, args2, _ = _node(trace, args[0])
    if op != "convert":
        return None
    if _node(trace, args2[0])[2] != np.dtype(bool):
        return None
    return args2[0]


def implied_equalities(trace, n, decision: bool, depth=0) -> list:
    """The ``equal`` / ``not_equal`` nodes between floating operands whose exact equality
    the boolean node ``n`` coming out ``decision`` implies (conservatively)."""
    if depth > 64:
        return []
    op, args, _ = _node(trace, n)
    if op in ("equal", "not_equal"):
        a_dtype, b_dtype = (_node(trace, a)[2] for a in args)
        if a_dtype.kind in "fc" or b_dtype.kind in "fc":
            if args[0] == args[1]:
                return []            # x == x: NaN or not, nothing to step off from
            holds = decision if op == "equal" else not decision
            return [n] if holds else []
        # integers: a count of true entries compared with zero (np.all, np.any)
        for count, zero in ((args[0], args[1]), (args[1], args[0])):
            b = _counted(trace, count)
            if b is not None and _is_zero_const(trace, zero):
                none_true = decision if op == "equal" else not decision
                return implied_equalities(trace, b, not none_true, depth + 1)
        return []
    if op == "greater":
        b = _counted(trace, args[0])
        if b is not None and _is_zero_const(trace, args[1]):     # np.any
            return implied_equalities(trace, b, decision, depth + 1)
        return []
    if op in _FLIP:
        return implied_equalities(trace, args[0], not decision, depth + 1)
    if op in _SAME:
        if _node(trace, args[0])[2] != np.dtype(bool):
            return []
        return implied_equalities(trace, args[0], decision, depth + 1)
    if op in _AND and decision or op in _OR and not decision:
        return [e for a in args for e in implied_equalities(trace, a, decision, depth + 1)]
    if op == "select":       # either arm may have decided (np.isclose: the a == b arm)
        return [e for a in args[1:] for e in implied_equalities(trace, a, decision, depth + 1)]
    return []


def reaches_differentiated(trace, n) -> bool:
    """Whether node ``n`` of ``trace`` depends on an input being differentiated (an
    argument of a differentiating transform, of this trace or of an enclosing one through
    a captured value or an argument), other than through ``stop_gradient``."""
    if trace.differentiated is None and not trace.captured and trace.input_of is None:
        return False        # nothing of this trace is differentiated (the eager tape)
    seen, todo = set(), [n]
    outer = None
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        op, args, dtype = _node(trace, m)
        if op == "stop_gradient":
            continue
        if op == "input":
            if dtype.kind not in "fc":
                continue
            if trace.differentiated is not None and m in trace.differentiated:
                return True
            if outer is None:
                outer = {inner._node: o for _, inner, o in trace.captured.values()}
                outer.update(trace.input_of or {})
            o = outer.get(m)
            if o is not None and hasattr(o, "_trace") and o._trace.active and \
                    reaches_differentiated(o._trace, o._node):
                return True
            continue
        todo.extend(args)
    return False


_HERE = os.path.dirname(__file__)
_BOOL_PATH = {os.path.join(_HERE, name)
              for name in ("core.py", "ndarray_methods.py", "equality.py", "elements.py",
                           "numpy_api.py")}
# tracegrad's handlers of NumPy functions that give a Python bool: their decision is the
# caller's (``if np.allclose(x, last):``)
_ANSWERING = {"allclose", "array_equal", "array_equiv"}
_TRACEGRAD = os.path.dirname(_HERE) + os.sep
_NUMPY = os.path.dirname(np.__file__) + os.sep


def _decided_by_user_code():
    """Whether the code that turned a traced boolean into a Python bool (``if``, ``while``,
    ``and``) is the user's or a library's: not NumPy's own Python code, whose decisions on
    equalities are its algorithm's (``np.polydiv`` stripping exact leading zeros), nor
    tracegrad's rules (which kind of result ``eig`` gives)."""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        name = code.co_filename
        if not (name in _BOOL_PATH or name.startswith("<__array_function__")
                or (code.co_name in _ANSWERING and name.startswith(_HERE))):
            break
        frame = frame.f_back
    if frame is None:
        return True
    name = frame.f_code.co_filename
    return not (name.startswith(_TRACEGRAD) or name.startswith(_NUMPY))


def check_branch(trace, node, decision: bool):
    """Raise if the branch decision ``decision`` on boolean node ``node`` holds only
    because of an exact equality of values being differentiated."""
    if _node(trace, node)[2] != np.dtype(bool):
        return
    if not _decided_by_user_code():
        return      # NumPy's own code (polydiv's leading zeros) or tracegrad's (eig's kind)
    for eq in implied_equalities(trace, node, decision):
        op, args, _ = _node(trace, eq)
        if any(reaches_differentiated(trace, a) for a in args):
            what = "a == b came out True" if op == "equal" else "a != b came out False"
            raise TraceError(_MESSAGE.format(what=what, at=where()))
