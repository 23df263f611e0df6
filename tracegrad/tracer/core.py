"""Traces and tracer values.

A ``Trace`` owns the ``Graph`` being recorded. A ``Tracer`` stands for one
node of it and, while a user's function runs on real inputs, also holds the
node's concrete value, so Python control flow on traced values works. Inside
the passes, tracers are abstract (``value is None``): only shape and dtype are
known.

Traces nest (``grad(grad(f))``): each has a level, and an operation is
recorded in the innermost trace among its operands. A tracer of an outer
trace used inside an inner one is *captured*: it becomes an extra input of the
inner graph, so derivatives with respect to it are not lost.
"""
from __future__ import annotations

import contextvars
import dis
import sys
from contextlib import contextmanager
from math import copysign

import numpy as np

from ..errors import TraceError
from ..ir import PROJ, REGISTRY, Aval, Graph
from ..ir.evaluate import Nodes, evaluate
from ..ir.source import source_override, user_frame, user_src, where
from . import pytree as _pytree
from . import samplers as _samplers
from . import scipy_sparse as _sparse
from .calls import called_function, math_function, random_sampler
from .compiled_calls import converting_callee, locate
from .compiled_calls import refusal as compiled_refusal
from .elements import _holds_traced, wrap_constructors
from .equality import check_branch, reaches_differentiated
from .samplers import SampleArray as _SampleArray
from .scipy_calls import refuse_in_scipy
from .state import LOCAL
from .views import sync

# True while tg.vmap traces its function on one example: a decision NumPy takes from the
# values of the whole batch (eig's real or complex results) cannot be taken per example
BATCHING = contextvars.ContextVar("tracegrad_batching", default=False)

_LOST = ("{what} would lose its gradient: tracegrad can only follow a traced value while it "
         "stays an array. {instead}{at}")
_KEEP_TRACED = ("Keep computing with the array itself (x * 2.0, np.where(x > 0, ...)); wrap it "
                "in tg.stop_gradient(...) first if no gradient should flow through it")
_STORE = ("Writing a traced value into a plain NumPy array the function did not make "
          "(z[...] = t, where z is an argument, a global or another caller's array)")
_BUILD_TRACED = ("Write into an array the function makes instead (z = np.zeros(n) or "
                 "z = np.zeros_like(x) inside it, or z = np.copy(z) first: then z[...] = t "
                 "is recorded), or build the result with np.stack([...]) or np.array([...])")
# z[i] = v compiles to STORE_SUBSCR; from Python 3.12, z[a:b] = v to STORE_SLICE
_STORE_OPS = {dis.opmap[name] for name in ("STORE_SUBSCR", "STORE_SLICE") if name in dis.opmap}


def _user_is_storing_item():
    """True while the user's line runs ``z[...] = value``: NumPy converts the value
    (float() or __array__) from inside that store, so this is how we tell the user what
    really happened rather than blaming a float() they never wrote."""
    frame = user_frame()
    if frame is None or frame.f_lasti < 0:
        return False
    code = frame.f_code.co_code
    return frame.f_lasti < len(code) and code[frame.f_lasti] in _STORE_OPS


_SUBSCR_OPS = {dis.opmap[name] for name in ("BINARY_SUBSCR", "BINARY_SLICE")
               if name in dis.opmap}


def _user_is_subscripting():
    """True while the user's line runs ``plain[...]`` and NumPy converts a traced index."""
    frame = user_frame()
    if frame is None or frame.f_lasti < 0:
        return False
    code = frame.f_code.co_code
    return frame.f_lasti < len(code) and code[frame.f_lasti] in _SUBSCR_OPS


def _random_sampler_call():
    """``(name, callee text, callee)`` when the user's line is calling a NumPy random
    sampler (a method of a Generator or RandomState), else None."""
    callee, text = called_function()
    if callee is None:
        return None
    name = random_sampler(callee)
    return None if name is None else (name, text, callee)


def _float_refused(what):
    """The error for float() (or complex()) of a traced value that carries a gradient:
    named for the math.* function the user's line calls, where it is one."""
    callee, _ = called_function()
    found = math_function(callee) if callee is not None else None
    if found is not None and not _user_is_storing_item():
        name, instead = found
        use = (f"use {instead} instead: NumPy's functions are traced, and differentiated"
               if instead else "write it with NumPy's functions, which are traced")
        return TraceError(f"{name}(...) of a traced value: Python's math functions convert "
                          f"their argument to a Python float (float(x)), which would lose its "
                          f"gradient; {use}{where()}")
    return lost_gradient(what, ". math.sin(x) and the other math.* functions call float(): "
                               "use np.sin(x) and NumPy's other functions, which are traced")


def lost_gradient(what, hint=""):
    """The error for a conversion that would drop a traced value's gradient; ``hint``, a
    sentence added to the advice. Inside a SciPy function, the refusal names it."""
    refused = refuse_in_scipy(f"converts its traced argument ({what[:1].lower()}{what[1:]}), "
                              "which would lose its gradient")
    if refused is not None:
        return refused
    if _user_is_storing_item():
        return TraceError(_LOST.format(what=_STORE, instead=_BUILD_TRACED, at=where()))
    refused = converting_callee(what)       # a library's compiled function converting it
    if refused is not None:
        return refused
    return TraceError(_LOST.format(what=f"{what} on a traced value",
                                   instead=_KEEP_TRACED + hint, at=where()))


_ESCAPED = ("a traced value escaped the function that made it (was it stored in a global, "
            "or returned through has_aux, and used after the transform finished?). Return "
            "it from the function instead, or compute with the transform's results")


class Trace:
    """The graph being recorded, and the values seen while recording it.

    Nodes are recorded as plain tuples (``records``) and copied into the ``Graph`` only
    when someone reads ``graph``: a transform whose derivative is already cached by the
    structure of the records (``tracegrad.autodiff.plans``) never builds the graph at all.
    ``keep_values`` (set before recording) keeps each node's concrete value in
    ``values``, indexed by node id, for such a cached derivative to read.
    """

    def __init__(self, level):
        self.level = level
        self._graph = None         # made when first read (see ``graph``)
        self._guards: list = []    # the graph's guards, kept here until it exists
        # node id -> (op, operand ids, params, shape, dtype, src); ops "input" / "const"
        self.records: list[tuple] = []
        self._flushed = 0          # records already copied into _graph
        self._live = False         # once the graph was handed out, it is kept up to date
        self.values: list | None = None
        self.active = True
        # (id(outer tracer), its node) -> (alias of it, inner input, the outer tracer);
        # the outer tracer itself is held so that its id stays unique meanwhile
        self.captured: dict[tuple, tuple] = {}
        self._snapshots: dict[int, tuple] = {}    # id(user array) -> (it, the copy taken)
        self._deps: list[bool] = []     # node id -> whether an input reaches it
        # const node id -> the one tracer holding it, for the arrays the function makes
        # (np.zeros inside it): written with constants while nothing used the node yet,
        # its value is written in place (see ``write_in_place``)
        self._owned: dict[int, Tracer] = {}
        self._has_fresh = False         # the function made such an array
        self._float_consts: dict = {}   # (number, sign, dtype, line) -> its const node

    # The input nodes a differentiating transform (grad, jvp, jacobian, ...) differentiates
    # with respect to, None for a trace that differentiates nothing (tg.jit, tg.vmap);
    # and the values an input stands for (an enclosing trace's tracers, or plain arrays).
    # A branch on an exact equality of a differentiated value is refused (equality.py).
    differentiated: set | None = None
    input_of: dict | None = None

    def __repr__(self):
        return f"<Trace level={self.level}>"

    @property
    def graph_backed(self):
        """Whether nodes are read from ``graph`` (a subclass: the eager tape) rather than
        from ``records``."""
        return type(self) is not Trace

    def record(self, n):
        """``(op, operand ids, params, shape, dtype)`` of node ``n``, wherever it is kept
        (``records``, or the tape's ``graph``)."""
        if self.graph_backed:
            d = self.graph.node(n)
            return d.op, d.args, d.params, d.shape, d.dtype
        return self.records[n][:5]

    @property
    def graph(self) -> Graph:
        """The recorded graph. Once read, it is kept up to date: a caller holding it sees
        the nodes recorded later."""
        if self._graph is None:
            self._graph = Graph()
            self._graph.guards = self._guards
        if self._flushed < len(self.records):
            self._flush()
        self._live = True
        return self._graph

    def keep_values(self):
        """From now on, keep every node's value in ``values`` (a node recorded earlier has
        None there)."""
        if self.values is None:
            self.values = [None] * len(self.records)

    def _flush(self):
        g = self._graph
        records = self.records
        for n in range(self._flushed, len(records)):
            op, args, params, shape, dtype, src = records[n]
            if op == "input":
                m = g.add_input(shape, dtype, src=src)
            elif op == "const":
                m = g.add_const(params["value"], src=src)
            else:
                m = g.add_node(op, args, params, shape=shape, dtype=dtype, src=src)
            if m != n:
                raise AssertionError(f"internal error: node {n} of a trace became node {m}")
            self._flushed = n + 1

    def _record(self, op, args, params, shape, dtype, src, value):
        if type(self) is not Trace:
            # a subclass (the eager tape) numbers its nodes through its graph directly
            g = self.graph
            if op == "input":
                return g.add_input(shape, dtype, src=src)
            if op == "const":
                return g.add_const(params["value"], src=src)
            return g.add_node(op, args, params, shape=shape, dtype=dtype, src=src)
        records = self.records
        n = len(records)
        records.append((op, args, params, shape, dtype, src))
        if self.values is not None:
            self.values.append(value)
        if self._live:
            self._flush()
        return n

    # -- making values ----------------------------------------------------
    def new_input(self, value=None, aval=None, src=None) -> Tracer:
        """An input of the graph. A Python int, float or complex ``value`` makes a weakly
        typed input (NEP 50): the function sees a Python number, so ``w_f32 - lr * w_f32``
        stays float32 for ``lr=0.5``, as in NumPy (see ``_resolve_weak``)."""
        weak = type(value) if type(value) in _WEAK_KINDS else None
        if value is not None:
            value = np.asarray(value)
            aval = Aval(value.shape, value.dtype)
        elif aval is None:
            raise ValueError("an input needs a value or an aval")
        shape, dtype = tuple(aval.shape), np.dtype(aval.dtype)
        node = self._record("input", (), None, shape, dtype, src or user_src(), value)
        t = Tracer(self, node, shape, dtype, value)
        t._weak = weak
        return t

    def const(self, value, snapshot=True) -> Tracer:
        """A constant node. ``snapshot=False`` for values nobody else can change (a
        graph's own constants), which need no private copy."""
        value = self._snapshot(value) if snapshot else np.asarray(value)
        node = self._record("const", (), {"value": value}, value.shape, value.dtype,
                            user_src(), value)
        return Tracer(self, node, value.shape, value.dtype, value)

    def _snapshot(self, value):
        """A private copy of a user's array: NumPy code may change the original in place
        later (w += 1), and the graph must keep the value it saw. Uses of an unchanged
        array share one copy."""
        if not isinstance(value, np.ndarray) or value.ndim == 0:
            return np.array(value)
        hit = self._snapshots.get(id(value))
        if hit is not None and hit[0] is value and hit[1].shape == value.shape and \
                hit[1].dtype == value.dtype and np.array_equal(hit[1], value, equal_nan=True):
            return hit[1]
        copy = value.copy()
        self._snapshots[id(value)] = (value, copy)   # holding value keeps its id unique
        return copy

    def lift(self, outer: Tracer) -> Tracer:
        """The inner-trace input standing for tracer ``outer`` of an enclosing trace."""
        sync(outer)
        # Keyed by node as well: an outer array assigned into (x += 1) while the inner
        # function runs is a new value, and needs its own input. The entry keeps an
        # alias of the node captured, so later writes to ``outer`` do not change it.
        key = (id(outer), outer._node)
        disown(outer)           # the inner input holds its value
        hit = self.captured.get(key)
        if hit is None:
            inner = self.new_input(outer._value, Aval(outer.shape, outer.dtype))
            inner._weak = outer._weak
            alias = Tracer(outer._trace, outer._node, outer.shape, outer.dtype, outer._value)
            hit = self.captured[key] = (alias, inner, outer)
        return hit[1]

    @property
    def captured_outer(self):
        """The outer tracers captured, in the order of their graph inputs."""
        return [alias for alias, _, _ in self.captured.values()]

    # -- recording operations ----------------------------------------------
    def add(self, prim, args, params) -> Tracer:
        for a in args:
            if isinstance(a, Tracer) and a._weak is not None:
                args = resolve_weak(args)
                break
            if type(a) is _SampleArray:     # a sample standing for a traced value
                return self.add(prim, _samplers.untangle(args), params)
        ids, vals = [], []
        tracer_dtypes = None
        concrete = True
        src = user_src()
        for a in args:
            if isinstance(a, Tracer):
                if a._view is not None:
                    sync(a)
                if a._trace is not self:
                    if not a._trace.active:
                        raise TraceError(f"{_ESCAPED}{where()}")
                    a = self.lift(a)
                ids.append(a._node)
                value = a._value
                if value is None:
                    concrete = False
                vals.append(value)
            else:
                if tracer_dtypes is None:
                    tracer_dtypes = tuple(b.dtype for b in args if isinstance(b, Tracer))
                if type(a) is float:    # a new array: no snapshot needed
                    dtype = _float_const_dtype(tracer_dtypes)
                    # one node per number, dtype and line (rules and loops write the same
                    # 1.0 over and over); -0.0 apart from 0.0
                    key = (a, copysign(1.0, a), dtype, src)
                    node = self._float_consts.get(key)
                    if node is not None:
                        ids.append(node)
                        vals.append(self.records[node][2]["value"])
                        continue
                    value = np.array(a, dtype)
                else:
                    value = self._snapshot(_as_const(a, tracer_dtypes))
                node = self._record("const", (), {"value": value}, value.shape, value.dtype,
                                    src, value)
                if type(a) is float and type(self) is Trace:
                    self._float_consts[key] = node
                ids.append(node)
                vals.append(value)
        # a loop's value is not computed while tracing: tracing (and so compiling) a loop
        # costs the same whatever its trip count
        if concrete and "lazy" in prim.extra:
            concrete = not prim.extra["lazy"]
        if prim.multi:
            return self._add_multi(prim, tuple(ids), vals, params, concrete, src)
        if self._has_fresh and concrete and prim.foldable and \
                not any(self._dependent(n) for n in ids):
            return self._folded(prim, ids, vals, params, src)
        try:
            if concrete:
                value = prim.impl(*vals, **params)
                if isinstance(value, (np.ndarray, np.generic)):
                    shape, dtype = value.shape, value.dtype
                else:
                    shape, dtype = np.shape(value), np.asarray(value).dtype
            else:
                value = None
                with np.errstate(all="ignore"):
                    shape, dtype = prim.shape_dtype(self._operand_avals(ids), params)
                shape, dtype = tuple(shape), np.dtype(dtype)
        except TraceError:
            raise
        except (ValueError, TypeError, IndexError, ArithmeticError) as e:
            raise self._failed(prim, ids, e, src) from None
        ids = tuple(ids)
        node = self._record(prim.name, ids, params, shape, dtype, src, value)
        return Tracer(self, node, shape, dtype, value)

    def _dependent(self, node):
        """Whether an input of the graph reaches ``node`` (node ids are in order: one
        forward pass over the records not yet looked at)."""
        deps = self._deps
        if node < len(deps):
            return deps[node]
        records, append = self.records, deps.append
        for n in range(len(deps), node + 1):
            record = records[n]
            if record[0] == "input":
                append(True)
                continue
            for a in record[1]:
                if deps[a]:
                    append(True)
                    break
            else:
                append(False)
        return deps[node]

    def _folded(self, prim, ids, vals, params, src):
        """A primitive on constants only, in a trace where the function made arrays
        (np.arange(4.0) there is a constant of the trace): its value, computed by NumPy,
        as a constant node, as it was before the arrays were traced. A new array of its
        own is the result's to write in place (see ``write_in_place``)."""
        try:
            value = np.asarray(prim.impl(*vals, **params))
        except TraceError:
            raise
        except (ValueError, TypeError, IndexError, ArithmeticError) as e:
            raise self._failed(prim, ids, e, src) from None
        node = self._record("const", (), {"value": value}, value.shape, value.dtype, src,
                            value)
        t = Tracer(self, node, value.shape, value.dtype, value)
        if value.ndim and value.base is None and value.flags.writeable and \
                not any(value is v for v in vals):
            self._owned[node] = t
        return t

    def _failed(self, prim, ids, error, src):
        """The TraceError for NumPy's own error applying ``prim`` to these operands."""
        shapes = ", ".join(f"{a.shape} {a.dtype.name}" for a in self._operand_avals(ids))
        return TraceError(f"{prim.name} failed on operands of shape {shapes}: "
                          f"{error}{where(src)}")

    def _add_multi(self, prim, ids, vals, params, concrete, src) -> tuple:
        """A multi-output primitive: its head node, then one ``proj`` node per output
        (``ir/registry.py``); returns the projections' tracers."""
        try:
            if concrete:
                values = tuple(prim.impl(*vals, **params))
                avals = [(np.shape(v), np.asarray(v).dtype) for v in values]
            else:
                values = (None,) * prim.n_outputs(params)
                with np.errstate(all="ignore"):
                    avals = prim.shape_dtype(self._operand_avals(ids), params)
        except TraceError:
            raise
        except (ValueError, TypeError, IndexError, ArithmeticError) as e:
            raise self._failed(prim, ids, e, src) from None
        head = self._record(prim.name, ids, params, (), np.dtype(avals[0][1]), src,
                            values if concrete else None)
        outs = []
        for i, ((shape, dtype), value) in enumerate(zip(avals, values)):
            shape, dtype = tuple(shape), np.dtype(dtype)
            node = self._record(PROJ, (head,), {"index": i}, shape, dtype, src, value)
            outs.append(Tracer(self, node, shape, dtype, value))
        return tuple(outs)

    def _operand_avals(self, ids):
        """The avals of the nodes ``ids``."""
        out = []
        for n in ids:
            if type(self) is Trace:
                _, _, _, shape, dtype, _ = self.records[n]
            else:
                d = self.graph.node(n)
                shape, dtype = d["shape"], d["dtype"]
            out.append(Aval(tuple(shape), np.dtype(dtype)))
        return out

    def guard(self, tracer: Tracer, expected):
        if type(expected) is bool or type(expected) is np.bool_:
            check_branch(self, tracer._node, bool(expected))
        elif type(expected) is np.ndarray and expected.dtype == bool and expected.ndim == 0:
            check_branch(self, tracer._node, bool(expected))   # (x == c).item(), int(x == c)
        self._guards.append((tracer._node, expected))


_WEAK_KINDS = (int, float, complex)
_WEAK_SAMPLE = {int: 0, float: 0.0, complex: 0j}


def _is_python_number(a):
    return type(a) in _WEAK_KINDS or type(a) is bool


def resolve_weak(args):
    """NEP 50 for weakly typed inputs: where a Python-number input meets a typed operand,
    it takes the dtype NumPy gives the Python number there (``np.result_type(f32, 0.5)``
    is float32, ``np.result_type(int8, 3)`` int8), through a convert node. Among Python
    numbers only, it keeps its default dtype (int64, float64, complex128). A Python int
    that does not fit the integer dtype raises, as NumPy's OverflowError does, and a
    guard makes a compiled function retrace (and raise) for such a value."""
    strong = []
    for a in args:
        if isinstance(a, Tracer):
            if a._weak is None:
                strong.append(a.dtype)
        elif type(a) is np.ndarray:
            strong.append(a.dtype)
        elif not _is_python_number(a):
            strong.append(np.asarray(a).dtype)
    if not strong:
        return args
    strong = tuple(strong)
    out = []
    for a in args:
        if isinstance(a, Tracer) and a._weak is not None:
            try:
                target = _weak_target(strong, a._weak)
            except TypeError:
                out.append(a)        # no common dtype: the operation itself says what fails
                continue
            if a._weak is int and target.kind in "iu":
                _check_fits(a, target)
            if target != a.dtype:
                a = a._trace.add(REGISTRY["convert"], (a,), {"dtype": target})
            else:
                a = Tracer(a._trace, a._node, a.shape, a.dtype, a._value)   # now typed
        out.append(a)
    return out


def _check_fits(a, dtype):
    info = np.iinfo(dtype)
    if a._value is not None and not info.min <= int(a._value) <= info.max:
        raise TraceError(f"Python integer {int(a._value)} out of bounds for {dtype.name} "
                         f"(NumPy raises OverflowError){where()}")
    if info.min <= np.iinfo(a.dtype).min and info.max >= np.iinfo(a.dtype).max:
        return
    trace = a._trace
    low = trace.add(REGISTRY["greater_equal"], (a, int(info.min)), {})
    high = trace.add(REGISTRY["less_equal"], (a, int(info.max)), {})
    fits = trace.add(REGISTRY["logical_and"], (low, high), {})
    trace.guard(fits, True)


def weak_result(result, *operands):
    """``result`` of a Python operator (``lr * 2``, ``-lr``): weakly typed again when every
    operand is a weakly typed input or a Python number, as Python's own arithmetic on
    Python numbers gives a Python number."""
    if not isinstance(result, Tracer) or result.shape:
        return result
    if not all((isinstance(o, Tracer) and o._weak is not None) or _is_python_number(o)
               for o in operands):
        return result
    if not any(isinstance(o, Tracer) for o in operands):
        return result
    kind = {"i": int, "f": float, "c": complex}.get(result.dtype.kind)
    if kind is not None and result.dtype in (np.dtype(np.int64), np.dtype(np.float64),
                                             np.dtype(np.complex128)):
        result._weak = kind
    return result


_FLOAT_CONST_DTYPES: dict = {}


def _float_const_dtype(tracer_dtypes):
    """``np.result_type(*tracer_dtypes, x)`` for a Python float ``x`` (NEP 50: it does
    not depend on x's value), memoised."""
    dtype = _FLOAT_CONST_DTYPES.get(tracer_dtypes)
    if dtype is None:
        dtype = _FLOAT_CONST_DTYPES[tracer_dtypes] = np.result_type(*tracer_dtypes, 0.0)
    return dtype


_WEAK_TARGETS: dict = {}


def _weak_target(strong, kind):
    """The dtype a weakly typed input of Python type ``kind`` takes among operands of the
    ``strong`` dtypes (NEP 50); for float and complex it does not depend on the value."""
    key = (strong, kind)
    dtype = _WEAK_TARGETS.get(key)
    if dtype is None:
        dtype = np.result_type(*strong, _WEAK_SAMPLE[kind])
        if kind is not int:
            _WEAK_TARGETS[key] = dtype
    return dtype


def add_to_top(prim, args, params):
    """``bind`` for a primitive entry and operands among which is a tracer: record it in
    the innermost trace (the operators' fast path)."""
    top = None
    for a in args:
        if isinstance(a, Tracer) and (top is None or a._trace.level > top.level):
            top = a._trace
    if not top.active:
        raise TraceError(f"{_ESCAPED}{where()}")
    return top.add(prim, args, params)


def _as_const(a, tracer_dtypes):
    """A non-traced operand as an array. Python scalars are weakly typed (NEP 50):
    ``x_f32 * 2.0`` stays float32, as in NumPy."""
    if isinstance(a, (bool, int, float, complex)) and not isinstance(a, np.generic):
        return np.asarray(a, dtype=np.result_type(*tracer_dtypes, a))
    if _sparse.is_sparse(a):
        raise TraceError(f"a scipy.sparse {type(a).__name__} cannot be an operand of NumPy's "
                         f"functions on a traced array (NumPy would make an object array of "
                         f"it): write A @ x, A.dot(x), A.T @ x or x @ A for products, or "
                         f"A.toarray() for a dense operand{where()}")
    arr = np.asarray(a)
    if arr.dtype.kind not in "biufc":
        hint = ("; build arrays of traced values with np.stack([...])" if arr.dtype == object
                else "")
        raise TraceError(f"a {type(a).__name__} of dtype {arr.dtype} cannot be an operand of "
                         f"a traced operation{hint}{where()}")
    return arr


def current_trace():
    """The innermost active trace of this thread, or None outside every transform."""
    stack = LOCAL.stack
    return stack[-1] if stack else None


@contextmanager
def new_trace():
    stack = LOCAL.stack
    trace = Trace(len(stack))
    if not stack:
        # np.array([t0, t1]) gives a traced array, np.zeros a fresh traced one
        # (elements.py): installed while any thread traces, acting in the tracing ones
        wrap_constructors(True)
    stack.append(trace)
    try:
        yield trace
    except (ValueError, TypeError) as e:
        # ``z[0] = t`` into a plain float array: NumPy calls float(t), and replaces the
        # TraceError that raises by its own "setting an array element with a sequence",
        # keeping ours as the cause. Give the user ours, which names their line.
        if isinstance(e.__cause__, TraceError) and not isinstance(e, TraceError):
            raise e.__cause__.with_traceback(e.__traceback__) from None
        # a library's compiled code handed a traced value (SciPy's SuperLU.solve, a
        # scikit-learn loss in Cython): name the function the user's line called
        refused = compiled_refusal(e)
        if refused is not None:
            raise refused.with_traceback(e.__traceback__) from None
        locate(e)       # an error inside a library's code names the user's line too
        raise
    finally:
        stack.pop()
        trace.active = False
        if not stack:
            LOCAL.sampling = None
            LOCAL.samples = False
            wrap_constructors(False)


def innermost(args):
    """The innermost trace among the tracers in ``args``, else None."""
    top = None
    for a in args:
        if isinstance(a, Tracer) and (top is None or a._trace.level > top.level):
            top = a._trace
    return top


def bind(name, *args, **params):
    """Apply primitive ``name``: record it if any operand is traced, else run NumPy."""
    prim = REGISTRY[name]
    if LOCAL.samples:
        args = _samplers.untangle(args)
    top = innermost(args)
    if top is None:
        return prim.impl(*args, **params)
    if not top.active:
        raise TraceError(f"{_ESCAPED}{where()}")
    return top.add(prim, args, params)


def _bind_at(name, args, params, src=None):
    """``Tracer.__tg_bind__``: ``ir.apply`` and ``ir.evaluate`` hand a primitive whose
    operands include a tracer here; it is ``bind``, and the node recorded keeps ``src``
    (the line a replayed graph's node came from) when given."""
    if LOCAL.samples:
        args = _samplers.untangle(args)
    top = innermost(args)
    if top is None:
        return REGISTRY[name].impl(*args, **params)
    if src is None:
        if not top.active:
            raise TraceError(f"{_ESCAPED}{where()}")
        return top.add(REGISTRY[name], args, params)
    with source_override(src):
        if not top.active:
            raise TraceError(f"{_ESCAPED}{where()}")
        return top.add(REGISTRY[name], args, params)


def replay(graph: Graph, args, known=None) -> dict:
    """Evaluate ``graph`` (``ir.evaluate``) on ``args``: inlines it into the active trace
    when ``args`` hold tracers (nodes keep their original source lines). Returns the
    environment, node id -> value. ``known`` (node -> tracer), when inlining: nodes
    whose value is already recorded, which are not recorded again."""
    top = innermost(args)
    # a graph's inputs are typed: a weakly typed argument takes the input's own dtype
    args = [Tracer(a._trace, a._node, a.shape, a.dtype, a._value)
            if isinstance(a, Tracer) and a._weak is not None else a for a in args]
    if top is None:
        return evaluate(graph, dict(zip(graph.inputs, args)))
    # Inlining: plain arrays and constants become constant nodes of the trace, so
    # operations on them are recorded (and left to simplify), not evaluated here into
    # large constants.
    env = {}
    for n, a in zip(graph.inputs, args):
        if known is None or n not in known:
            env[n] = a if isinstance(a, Tracer) else _const_at(top, a, graph.node(n)["src"])
    if known is not None:
        env.update(known)

    def const(value, src):
        return _const_at(top, value, src, snapshot=False)
    return evaluate(graph, env, const=const)


def _replay_call(graph: Graph, args, known=None) -> dict:
    """``Tracer.__tg_replay__``: ``replay`` for ``ir.evaluate.call`` (``Graph.__call__``,
    the transforms running a derived graph), refused outside every transform."""
    if current_trace() is None:
        raise TraceError(f"a traced value was used after the transform that made it "
                         f"finished (was it stored in a global?){where()}")
    return replay(graph, args, known)


class _Inlined(dict):
    """``replay``'s environment, made as it is read: node of ``graph`` -> its value in
    the trace ``top``, a node read for the first time recorded there then (with the
    nodes it depends on that are not recorded yet), as ``replay`` records it."""

    def __init__(self, graph, top):
        super().__init__()
        self.graph, self.top = graph, top

    def __missing__(self, n):
        nodes = self.graph.by_id
        todo, needed = [n], set()
        while todo:                     # (no recursion: a long chain of missing nodes)
            m = todo.pop()
            if m not in self and m not in needed:
                needed.add(m)
                todo.extend(nodes[m].args)
        top = self.top
        evaluate(Nodes(nodes, sorted(needed)), self, guards=False,     # (ids are in
                 const=lambda value, src: _const_at(top, value, src, snapshot=False))
        return self[n]                                                 # evaluation order)


def inlined(graph: Graph, args, known=None) -> dict:
    """``replay(graph, args, known)`` for the nodes someone reads: its environment, in
    which a node is recorded into the active trace when first read. ``args`` hold a
    tracer."""
    top = innermost(args)
    if top is None:
        raise ValueError("inlined() needs a traced argument")
    env = _Inlined(graph, top)
    for n, a in zip(graph.inputs, args):
        if known is None or n not in known:
            env[n] = as_operand(top, a, graph.node(n)["src"])
    if known is not None:
        env.update(known)
    return env


def as_operand(trace, a, src):
    """Argument ``a`` of a graph inlined into ``trace``, as ``replay`` takes it: a weakly
    typed tracer typed (the graph's inputs are), anything else a constant of ``trace``
    made at ``src``."""
    if isinstance(a, Tracer):
        return a if a._weak is None else Tracer(a._trace, a._node, a.shape, a.dtype, a._value)
    return _const_at(trace, a, src)


def _const_at(trace, value, src, snapshot=True):
    with source_override(src):
        return trace.const(value, snapshot=snapshot)


def _carries_gradient(t):
    """Whether some input of ``t``'s graph (an argument or a captured outer value)
    reaches ``t`` other than through a ``stop_gradient`` node."""
    sync(t)
    trace = t._trace
    if type(trace) is not Trace:        # the eager tape: its nodes are its tracers' own
        return trace.reaches_input(t, through_stop_gradient=False)
    records = trace.records
    node = lambda n: records[n][:2]     # noqa: E731  (op, args), no graph needed
    seen, todo = set(), [t._node]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        op, args = node(n)
        if op == "input":
            return True
        if op != "stop_gradient":
            todo.extend(args)
    return False


def depends_on_input(t):
    """Whether some input of ``t``'s graph (an argument or a captured outer value) reaches
    ``t`` at all; a tracer that reaches none is a constant (a fresh ``np.zeros`` not yet
    written with traced values)."""
    sync(t)
    trace = t._trace
    if type(trace) is Trace:
        # node ids are in order: one forward pass over the records not yet looked at
        return trace._dependent(t._node)
    return trace.reaches_input(t)       # the eager tape: its nodes are its tracers' own


def is_constant(t):
    """Whether tracer ``t`` is a concrete constant of a functional trace (no input reaches
    it); the eager API's tape never says so."""
    return t._value is not None and type(t._trace) is Trace and not depends_on_input(t)


def own(t):
    """Make constant tracer ``t`` (a new array the function made, its value nobody else's)
    the owner of its node."""
    if type(t._trace) is Trace:
        t._trace._owned[t._node] = t
        t._trace._has_fresh = True
    return t


def disown(t):
    """Another name (or node) now shares ``t``'s node: it is nobody's to write in place."""
    owned = getattr(t._trace, "_owned", None)
    if owned:
        owned.pop(t._node, None)


def snapshot_tracer(t):
    """A tracer of ``t``'s node as it is now, for a reader that must not see later writes
    into ``t`` (an assignment rebinds ``t`` to a new node; a view is brought up to date
    first). ``t``'s node is nobody's to write in place from now on."""
    sync(t)
    disown(t)
    alias = Tracer(t._trace, t._node, t.shape, t.dtype, t._value)
    alias._weak = t._weak
    return alias


def write_in_place(x, key, value):
    """``x[key] = value`` (``key is None``: ``value`` is the whole new array, computed by
    NumPy in ``x``'s memory) done by NumPy on ``x``'s value, where that changes no
    recorded node: ``x`` owns its constant node, nothing used it since it was recorded, and
    neither ``value`` nor ``key`` holds a traced value. Building a constant element by
    element then costs what it costs in NumPy. True when done."""
    trace = x._trace
    owned = getattr(trace, "_owned", None)
    if not owned or owned.get(x._node) is not x or x._view is not None or \
            x._node != len(trace.records) - 1 or not trace.active:
        return False
    if not (type(value) in _NUMBERS or not (isinstance(value, Tracer) or
                                            _holds_traced(value))) or not _plain_key(key):
        return False
    x._value[key] = value       # NumPy's write, and NumPy's errors
    x._version += 1
    return True


_NUMBERS = frozenset({int, float, complex, bool, np.float64, np.int64, np.float32})


def _plain_key(key):
    for k in key if type(key) is tuple else (key,):
        if type(k) is int:
            continue
        if isinstance(k, slice):
            if isinstance(k.start, Tracer) or isinstance(k.stop, Tracer) or \
                    isinstance(k.step, Tracer):
                return False
        elif isinstance(k, Tracer) or _holds_traced(k):
            return False
    return True


def _hand_out(t, dtype, copy):
    """``__array__`` of constant tracer ``t``: its value, as NumPy's own array. Unless a
    copy or another dtype is asked for, it is ``t``'s memory from now on: ``t`` names a new
    constant node holding it, so what C code writes into it is what ``t`` holds next (the
    nodes ``t`` named before, and other names for them, keep their values)."""
    if dtype is not None and np.dtype(dtype) == t.dtype:
        dtype = None
    value = np.array(t._value, dtype=dtype, copy=True)
    trace = t._trace
    if copy or dtype is not None or t._view is not None or type(trace) is not Trace \
            or not trace.active:
        return value                # (a view's writes could not reach its base)
    t._node = trace._record("const", (), {"value": value}, value.shape, value.dtype,
                            trace.records[t._node][5], value)
    t._value = value
    t._version += 1                 # its views read the new node from now on
    return value


class Tracer:
    """A traced array. Behaves like a NumPy array inside the user's function."""
    __slots__ = ("_trace", "_node", "_shape", "_dtype", "_value", "_view", "_version", "_weak",
                 "__weakref__")
    __array_priority__ = 1000

    def __init__(self, trace, node, shape, dtype, value=None):
        self._trace = trace
        self._node = node
        self._shape = shape
        self._dtype = dtype
        self._value = value
        self._view = None       # a views.View when this is a NumPy view of another tracer
        self._version = 0       # bumped by every indexed assignment into this array
        self._weak = None       # int/float/complex for a Python number's input (NEP 50)

    def __repr__(self):
        from ..ir.dtypes import aval_str
        return f"Tracer<{aval_str(self.shape, self.dtype)} %{self._node}>"

    # Printing reads the value where it is known (tracing runs on concrete values), as
    # NumPy formats it; it decides nothing, so it records no guard. Under tg.jit it runs
    # once, at trace time: tg.debug.print prints on every call.
    def __str__(self):
        return str(self._printable("str()"))

    def __format__(self, spec):
        value = self._printable("formatting")
        return format(value if spec else str(value), spec)

    def _made_by(self):
        """``(op, params)`` of the record that made this value in its trace."""
        op, _, params, _, _ = self._trace.record(self._node)
        return op, params

    def _printable(self, what):
        sync(self)
        if self._value is None:
            raise TraceError(f"{what} of a traced array needs its value, but it is only known "
                             f"abstractly here (inside a graph transformation); use "
                             f"tg.debug.print to print values when the function runs, or "
                             f"repr() for its shape and dtype{where()}")
        value = self._value
        return value[()] if isinstance(value, np.ndarray) and value.ndim == 0 else value

    # NumPy lets ``a.shape = ...`` and ``a.dtype = ...`` change an array in place; the
    # setters (methods.py) do that or raise, so neither is silently ignored
    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.shape[0]))

    # -- leaving the traced world ---------------------------------------------
    def _concrete(self, what):
        sync(self)
        if self._value is None:
            raise TraceError(f"{what} needs the concrete value of a traced array, but it is "
                             "only known abstractly here (inside a graph transformation)"
                             f"{where()}")
        return self._value

    def __bool__(self):
        value = self._concrete("bool()")
        try:
            decision = bool(value)
        except ValueError as e:
            raise TraceError(f"{e}{where()}") from None
        self._trace.guard(self, decision)
        return decision

    def __index__(self):
        if self.dtype.kind not in "iub" or self.shape:
            raise TypeError("only 0-d integer traced arrays can be used as an index")
        value = int(self._concrete("using a traced integer as an index or count"))
        self._trace.guard(self, value)
        return value

    def _integer_value(self, what):
        """An integer or boolean array has no gradient to lose, and neither has a value
        that reaches no input but through tg.stop_gradient (the error below recommends
        it): like bool(), reading its value is allowed, and recorded as a guard. Another
        floating one raises."""
        if self.dtype.kind not in "iub" and _carries_gradient(self):
            raise lost_gradient(what)
        value = self._concrete(what)
        self._trace.guard(self, np.array(value, copy=True))
        return value

    def __float__(self):
        if self.dtype.kind not in "iub" and _carries_gradient(self):
            if LOCAL.sampling is not None and _samplers.scalar_parameter(self):
                return float(self._concrete("float()"))     # a sampler's 0-d parameter
            raise _float_refused("float()")
        return float(self._integer_value("float()"))

    def __int__(self):
        if self.dtype.kind not in "iub" and _carries_gradient(self):
            raise lost_gradient("int()", ". For integer values that stay traced (no gradient, "
                                "the values kept) write x.astype(np.int64)")
        return int(self._integer_value("int()"))

    def __complex__(self):
        if self.dtype.kind not in "iub" and _carries_gradient(self):
            raise _float_refused("complex()")
        return complex(self._integer_value("complex()"))

    def item(self, *args):
        return self._integer_value(".item()").item(*args)

    def tolist(self):
        return self._integer_value(".tolist()").tolist()

    def __array__(self, dtype=None, copy=None):
        # NumPy asks for this in np.asarray(t) and when it builds an array from
        # a list holding tracers (np.array([a, b])): hand it an object array of
        # our shape holding references to our elements (see elements.py), which
        # the next traced NumPy call (or the return) turns back into a traced
        # array. A numeric dtype means the value would be written into a plain
        # ndarray, losing the gradient.
        # ``z[0] = t`` into a plain ndarray asks for it too (with no dtype): NumPy would
        # fail with "setting an array element with a sequence"; say what happened.
        if is_constant(self):
            # a constant (a fresh array no traced value was written into): NumPy's own
            # array, so NumPy and C code handed it compute with its numbers
            return _hand_out(self, dtype, copy)
        # scipy.sparse converting an operand of A @ x: "not an array" makes it hand the
        # product to __rmatmul__; elsewhere inside scipy.sparse, a TraceError (sparse.py)
        frame = sys._getframe(1)
        probing = False
        if frame.f_globals.get("__name__", "").startswith("scipy.sparse"):
            if _sparse.declines(frame):
                return _sparse.opaque(self)
            if not _sparse.probes(frame):
                _sparse.refuse_in_scipy()
            probing = True
        if self.dtype.kind in "iub" and (
                _user_is_subscripting() if dtype is None else np.dtype(dtype).kind in "iub"):
            return self._index_value(dtype)
        if dtype is not None and np.dtype(dtype).kind in "iub" and self.dtype.kind == "f" \
                and not _user_is_storing_item():
            return self._cast_value(np.dtype(dtype))
        if dtype is not None and np.dtype(dtype) != object and not _user_is_storing_item():
            sampler = _random_sampler_call()
            if sampler is not None:
                return self._sampler_parameter(sampler, np.dtype(dtype))
        if dtype is not None and np.dtype(dtype) != object or _user_is_storing_item():
            name = np.dtype(dtype).name
            raise lost_gradient(f"Converting to a NumPy array of dtype {name}",
                                "" if dtype is None else f". To change the dtype of a traced "
                                f"array and keep following it, write x.astype(np.{name})")
        refused = None if probing else refuse_in_scipy(
            "converts its traced arguments to NumPy arrays (np.asarray) and computes on them "
            "in compiled code, which tracegrad cannot follow")
        if refused is not None:
            raise refused
        from .elements import element_array
        # the elements refer to the value as it is now: the object array is a copy, so
        # later writes to this array do not show in it (np.array copies)
        sync(self)
        if type(self) is not Tracer:        # the eager API's tracers keep their tape handle
            return element_array(self)
        return element_array(Tracer(self._trace, self._node, self.shape, self.dtype,
                                    self._value))

    def _sampler_parameter(self, sampler, dtype):
        """A parameter of NumPy's random sampler (``rng.normal(loc, ...)``), which converts
        it to a plain array: allowed, as the value (a guard), where no gradient is lost
        (the value reaches no differentiated input, e.g. under tg.jit alone). Where the
        sampler is a transform of a standard one (``samplers.py``), the sample follows the
        differentiated parameters; for the others, refused."""
        name, text, callee = sampler
        sync(self)
        differentiated = reaches_differentiated(self._trace, self._node)
        if _samplers.handles(callee):
            # recorded for the np.empty NumPy's sampler makes its output with (samplers.py)
            _samplers.parameter(self, callee, text, differentiated, BATCHING.get())
            value = np.asarray(self._concrete(f"{text}(...) of a traced parameter"))
            if not differentiated:
                self._trace.guard(self, value.copy())
            return value.astype(dtype, copy=False)
        if differentiated:
            how = (f"{name} is not a transform of a standard sampler NumPy has, so the "
                   f"sample has no derivative with respect to its parameters here (those "
                   f"differentiated: {', '.join(_samplers.SAMPLERS)}): pass "
                   f"tg.stop_gradient(parameter) if none should flow through it")
            raise TraceError(f"{text}(...) with a parameter being differentiated: NumPy's "
                             f"sampler converts its parameters to plain numbers, so the sample "
                             f"would not follow them (a silently lost derivative). {how}"
                             f"{where()}")
        value = np.asarray(self._concrete(f"{text}(...) of a traced parameter"))
        self._trace.guard(self, value.copy())
        return value.astype(dtype, copy=False)

    def _cast_value(self, dtype):
        """``np.int64(x)`` / ``np.asarray(x, int)`` of a floating traced array: NumPy's own
        integer array of its values, as ``x.astype(np.int64)`` computes them. The cast's
        derivative is zero, so no gradient is lost; the value is a guard (a compiled
        function retraces for other values). Where the value is only known abstractly
        (under ``tg.jit``, in a loop body) no ndarray can be made: say how to write it."""
        sync(self)
        name = dtype.name if dtype.kind != "b" else "bool_"
        if self._value is None or BATCHING.get():
            why = ("tg.vmap traces one example for the whole batch" if BATCHING.get() else
                   "it is only known abstractly here (inside a loop body or a graph "
                   "transformation)")
            raise TraceError(f"np.{name}(x) of a traced array (or np.asarray(x, "
                             f"dtype={name})) makes a plain NumPy array of its values, but "
                             f"{why}. Write x.astype(np.{name}) instead: the same values, "
                             f"and they stay traced{where()}")
        value = np.asarray(self._value)
        self._trace.guard(self, value.copy())
        return value.astype(dtype)

    def _index_value(self, dtype):
        """An integer (or boolean) traced array as NumPy's own array: ``plain[ix]`` and
        ``np.take(plain, ix)`` of a plain ndarray, where NumPy converts the index itself
        and no protocol reaches the tracer. An integer array carries no gradient, so
        nothing is lost; its value is a guard (a compiled function retraces for other
        index values), and the result is a constant of the trace, as NumPy computes it.
        Index a traced array (``np.asarray``-free: ``tg``-traced ``f[ix]``) or use
        ``np.take_along_axis`` to keep the lookup in the graph."""
        sync(self)
        if self._value is None:
            raise TraceError(
                "plain[i], where plain is a NumPy array that is not traced and i a traced "
                "integer known only abstractly here (a loop's step number, or inside a graph "
                "transformation): NumPy indexes its own arrays itself, so the lookup cannot be "
                "recorded. Index a traced array instead: carry the array through the loop "
                "(init_val=(acc, plain)), hand it to tg.scan as xs, or pass it as an argument "
                f"of a tg.jit-compiled function{where()}")
        value = np.asarray(self._concrete("indexing a NumPy array with a traced integer array"))
        self._trace.guard(self, value.copy())
        return value if dtype is None else value.astype(dtype, copy=False)

    __hash__ = None

    # the protocol of ``ir.apply`` and ``ir.evaluate``: a primitive applied to a tracer is
    # recorded, a guard on one is recorded, a graph called on one is inlined
    __tg_bind__ = staticmethod(_bind_at)
    __tg_replay__ = staticmethod(_replay_call)

    def __tg_guard__(self, expected):
        self._trace.guard(self, expected)

    def __tg_constant__(self):
        """The value when this is a constant of a functional trace (no input reaches it),
        else None: a derivative rule writes a constant exponent's plain form with it."""
        return self._value if is_constant(self) else None

_pytree._LEAVES.add(Tracer)     # flatten's fast path: a tracer is always a leaf
