"""The functional transforms: grad, value_and_grad, vjp, jvp, jacobian, hessian, trace.

Every transform works the same way: trace the function on its (concrete)
arguments into a graph, derive a new graph with a pass, and evaluate that
graph. Evaluating it on traced arguments inlines it into the enclosing trace,
which is how transforms compose: ``tg.hessian(f)`` traces ``tg.grad(f)`` and
so differentiates the adjoint graph again.
"""
from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any, Literal, overload

import numpy as np

from .. import passes
from .._typing import ArgNums, P, PyTree, T
from ..autodiff import plans
from ..errors import TraceError
from ..ir import REGISTRY, Aval, Graph, apply
from ..ir.aliasing import fresh_bases
from ..ir.dtypes import is_float
from ..ir.evaluate import check_guard
from ..passes.prune import live_nodes
from ..runtime import run, run_each
from ..tracer import (
    Tracer,
    coerce,
    flatten,
    new_trace,
    replay,
    source_override,
    sync,
    unflatten,
    user_src,
    where,
)
from ..tracer.core import current_trace

__all__ = ["grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian", "trace",
           "stop_gradient", "custom_vjp"]


# -- shared machinery --------------------------------------------------------------------
def _at(src):
    return f" (at {src})" if src else ""


def _fun_name(fun):
    if isinstance(fun, functools.partial):
        return f"partial({_fun_name(fun.func)})"
    return getattr(fun, "__name__", None) or type(fun).__name__


def _argnums(argnums, nargs, src, fun, kwargs=None):
    single = isinstance(argnums, (int, np.integer))
    nums = (int(argnums),) if single else tuple(argnums)
    if not nums or not all(isinstance(i, (int, np.integer)) for i in nums):
        raise TraceError(f"argnums must be an int or a non-empty tuple of ints, got "
                         f"{argnums!r}{_at(src)}")
    for i in nums:
        if not -nargs <= i < nargs:
            hint = (f"; arguments passed by keyword ({', '.join(sorted(kwargs))}) are not "
                    f"differentiated: pass the ones to differentiate positionally"
                    if kwargs else "")
            raise TraceError(f"argnums={argnums!r} is out of range: {_fun_name(fun)} was "
                             f"called with {nargs} positional argument(s){hint}{_at(src)}")
    nums = tuple(int(i) % nargs for i in nums)
    repeated = sorted({i for i in nums if nums.count(i) > 1})
    if repeated:
        # JAX refuses too: a second input for the same argument would silently get none
        # of the gradient
        raise TraceError(f"argnums={argnums!r} repeats argument {repeated[0]} (negative "
                         f"numbers count from the end): each argument can be differentiated "
                         f"once{_at(src)}")
    return nums, single


def _numeric_array(x, what, src):
    """``x`` as a NumPy array of numbers, or a TraceError saying what was expected."""
    try:
        arr = np.asarray(x)
    except Exception:
        arr = np.asarray(None, dtype=object)
    if arr.dtype.kind not in "biufc":
        raise TraceError(f"{what} must be arrays, Python numbers, or tuples/lists/dicts of "
                         f"them; got {type(x).__name__}{_at(src)}")
    return arr


def _leaf_aval(x, src, differentiable, skip_hint="leave it out of argnums"):
    """The aval of argument leaf ``x``; gradients need floating-point leaves."""
    if isinstance(x, Tracer):
        aval = Aval(x.shape, x.dtype)
    else:
        arr = _numeric_array(x, "arguments", src)
        aval = Aval(arr.shape, arr.dtype)
    if differentiable and aval.dtype.kind not in "fc":
        raise TraceError(f"cannot differentiate with respect to an argument of dtype "
                         f"{aval.dtype.name}: only floating-point inputs have gradients. "
                         f"Pass it as a float (e.g. np.asarray(x, dtype=float)) or "
                         f"{skip_hint}{_at(src)}")
    return aval


def _check_complex_rules(graph: Graph, src, check_all=False):
    """A TraceError for the first node that takes or makes a complex value on the way
    to the outputs and whose primitive has no complex derivative rule (``sign``,
    ``cholesky``, ...): its real rule would give a silently wrong derivative. Sub-graphs
    (loop bodies, branches) are checked node by node."""
    live = live_nodes(graph, graph.outputs)
    reached = {}   # node -> depends on a floating-point input (whatever the rules say)
    for n, d in graph.items():
        if d["op"] in ("input", "const"):
            reached[n] = d["op"] == "input" and is_float(d["dtype"])
            continue
        reached[n] = any(reached[a] for a in d["args"])
        if not check_all and not (reached[n] and n in live):
            continue
        prim = REGISTRY[d["op"]]
        dtypes = [np.dtype(d["dtype"])] + [np.dtype(graph.node(a)["dtype"]) for a in d["args"]]
        if not prim.complex and dtypes[0].kind in "fc" and any(t.kind == "c" for t in dtypes):
            raise TraceError(f"{d['op']} has no derivative rule for complex values yet (it "
                             f"takes or makes a complex value here). Differentiate through "
                             f"real arrays, e.g. np.real(z) and np.imag(z) as two arrays"
                             f"{_at(d['src'] or src)}")
        for v in d["params"].values():
            if isinstance(v, Graph):
                _check_complex_rules(v, src, check_all=True)


def _may_hold_complex(records):
    """Whether ``_check_complex_rules`` could find anything in a trace of these records:
    a complex value, or a sub-graph (looked into node by node). Checked on the records,
    the trace's graph is not built for nothing."""
    for _, _, params, _, dtype, _ in records:
        if np.dtype(dtype).kind == "c":
            return True
        if params:
            for v in params.values():
                if isinstance(v, Graph):
                    return True
    return False


class _Traced:
    """A function traced at some arguments, ready for a pass.

    With ``plan_extra`` (what else a cached derivative depends on: argnums, seeds), the
    trace keeps its values and is looked up in ``tracegrad.autodiff.plans`` by its structure;
    ``plan`` is then the cached plan (a hit), None (a miss: ``plan_key`` says where to
    store one), or ``plan_key`` is None when this trace cannot be cached (traced
    arguments of an enclosing transform, a captured outer value, a parameter that cannot
    be keyed)."""

    def __init__(self, fun, args, kwargs, argnums, src, *, has_aux=False,
                 differentiable=True, skip_hint="leave it out of argnums",
                 check_complex=None, plan_extra=None, differentiates=True):
        self.src = src
        self.trees, leaves = [], []
        for i in argnums:
            arg_leaves, tree = flatten(args[i])
            self.trees.append(tree)
            leaves.extend(arg_leaves)
        # a Python number's gradient is a NumPy scalar (a weakly typed input's gradient
        # passes through a cast, which would make it a 0-d array)
        self.numbers = [type(x) in (int, float, complex) or getattr(x, "_weak", None) is not None
                        for x in leaves]
        leaves = [coerce(x) for x in leaves]      # np.asarray(t) of an outer tracer
        outer = False
        for x in leaves:
            if isinstance(x, Tracer):
                sync(x)                           # a view of an outer array assigned into
                outer = True
        avals = [_leaf_aval(x, src, differentiable, skip_hint) for x in leaves]
        self.in_avals = avals
        with new_trace() as trace:
            if plan_extra is not None and not outer:
                trace.keep_values()
            inputs = [trace.new_input(x._value if isinstance(x, Tracer) else x, aval, src)
                      for x, aval in zip(leaves, avals)]
            # (the function may assign into an input tracer, which then names a new node)
            self.input_nodes = [x._node for x in inputs]
            self.input_tracers = inputs
            # what a branch on an exact equality must not depend on (tracer/equality.py)
            trace.differentiated = set(self.input_nodes) if differentiates else None
            trace.input_of = dict(zip(self.input_nodes, leaves))
            trace.outer_args = leaves       # what the inputs stand for (tg.debug.print)
            for inp, x in zip(inputs, leaves):
                if isinstance(x, Tracer):
                    inp._weak = x._weak         # a Python number traced by an outer transform
            new_args, it = list(args), iter(inputs)
            for i, tree in zip(argnums, self.trees):
                new_args[i] = unflatten(tree, [next(it) for _ in range(tree.num_leaves)])
            out = fun(*new_args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, (tuple, list)) and len(out) == 2):
                    raise TraceError(f"with has_aux=True, {_fun_name(fun)} must return a pair "
                                     f"(output, aux){_at(src)}")
                out, aux = out
            out_leaves, self.out_tree = flatten(out)
            aux_leaves, self.aux_tree = flatten(aux)
            self.out_values = [self._as_node_value(trace, x) for x in out_leaves]
            self.aux_values = [self._as_node_value(trace, x) for x in aux_leaves]
        self.trace = trace
        self._graph = None
        self.outputs = [v._node for v in self.out_values + self.aux_values]
        self.n_out = len(self.out_values)
        self.n_in = len(inputs)
        # Evaluating a derived graph takes the arguments, then the outer values
        # the function closed over (captured while tracing).
        self.eval_args = list(leaves) + trace.captured_outer
        # concrete: the forward values can be read off the trace (not after a loop, whose
        # value tracing leaves to the runtime)
        self.concrete = not any(isinstance(a, Tracer) for a in self.eval_args) and all(
            v._value is not None for v in self.out_values + self.aux_values)
        self.plan = self.plan_key = None
        if plan_extra is not None and self.concrete and trace.values is not None \
                and not trace.captured:
            self.plan_key = plans.structure_key(trace.records, self.outputs,
                                                (plan_extra, self.n_out))
            if self.plan_key is not None:
                self.plan = plans.lookup(self.plan_key)
        if self.plan_key is None:
            trace.values = None     # the uncached path recomputes what it needs
        # inside an enclosing transform: the derivative is inlined into its trace, and
        # the adjoint graph to inline is cached by structure (``plans.Replay``)
        self.replay = self.replay_key = None
        if plan_extra is not None and self.plan_key is None and \
                any(isinstance(a, Tracer) for a in self.eval_args):
            self.guards = list(trace._guards)
            self.replay_key = plans.structure_key(
                trace.records, self.outputs,
                ("replay", plan_extra, self.n_out, tuple(self.input_nodes),
                 tuple([n for n, _ in self.guards])))
            if self.replay_key is not None:
                self.replay = plans.lookup(self.replay_key)
        if isinstance(self.plan, plans.Plan) or isinstance(self.replay, plans.Replay):
            return                  # this structure passed every check below before
        if (differentiable if check_complex is None else check_complex) and \
                _may_hold_complex(trace.records):
            _check_complex_rules(self.graph, src)

    @property
    def graph(self) -> Graph:
        if self._graph is None:
            self._graph = self.trace.graph
            self._graph.outputs = list(self.outputs)
        return self._graph

    def _as_node_value(self, trace, x):
        x = coerce(x)
        if isinstance(x, Tracer):
            sync(x)
            return x if x._trace is trace else trace.lift(x)
        return trace.const(_numeric_array(x, "outputs", self.src))

    def unflatten_inputs(self, leaves, single, numbers_as_scalars=False):
        if numbers_as_scalars:
            leaves = [_as_scalar(v) if number else v for v, number in zip(leaves, self.numbers)]
        out, it = [], iter(leaves)
        for tree in self.trees:
            out.append(unflatten(tree, [next(it) for _ in range(tree.num_leaves)]))
        return out[0] if single else tuple(out)

    def out_aval(self, k):
        v = self.out_values[k]
        return tuple(v.shape), np.dtype(v.dtype)


def _as_scalar(v):
    """A 0-d gradient as a NumPy scalar: the cast back from a weakly typed input's dtype
    (``astype``) would give a 0-d array where NumPy's arithmetic gives a scalar."""
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v[()]
    if isinstance(v, Tracer) and v.ndim == 0:
        d = v._trace.graph.node(v._node)
        if d["op"] == "convert":
            with source_override(d["src"]):
                return v[()]
    return v


def _evaluate(graph: Graph, args, known=None, keep=None):
    """``graph``'s outputs on ``args``: inlined into the active trace when they hold
    tracers (``known``, ``keep``: nodes already recorded there, and a dict that receives
    the nodes this records), else run."""
    if any(isinstance(a, Tracer) for a in args):
        if current_trace() is None:
            raise TraceError("a traced value was used after the transform that made it "
                             "finished (was it stored in a global?)")
        env = replay(graph, args, known)
        if keep is not None:
            keep.update(env)
        return [env[o] for o in graph.outputs]
    # derived values (derivatives, tangents) are the caller's own arrays, never an input
    # handed back (the cotangent of lambda x: x) or a view of one
    return [_writeable(v) for v in run(graph, [np.asarray(a) for a in args],
                                       bases=fresh_bases(graph))]


def _own_result(value, tracer, inputs):
    """``value``, copied where it shares memory with an input although the traced value
    is no NumPy view (``getattr(tracer, "_view")`` is None; an input handed back as it
    is, ``lambda x: x``, is not passed here)."""
    if (isinstance(value, np.ndarray) and getattr(tracer, "_view", None) is None
            and any(np.may_share_memory(value, a) for a in inputs)):
        return value.copy()
    return value


def _writeable(v):
    if isinstance(v, np.ndarray) and not v.flags.writeable:
        return np.array(v)  # broadcast zeros and views of constants: hand out real arrays
    return v


def _check_cotangent(ct, shape, dtype, src, what):
    """``ct`` as a (co)tangent for a value of ``shape`` and ``dtype``: the shape must match;
    the dtype is made to match, so a float64 cotangent for a float32 output still gives
    float32 gradients."""
    ct_shape = ct.shape if isinstance(ct, Tracer) else np.shape(ct)
    if tuple(ct_shape) != tuple(shape):
        raise TraceError(f"{what} has shape {tuple(ct_shape)} but the value it pairs with has "
                         f"shape {tuple(shape)}{_at(src)}")
    ct_dtype = np.dtype(ct.dtype if isinstance(ct, Tracer) else np.asarray(ct).dtype)
    if ct_dtype.kind == "c" and np.dtype(dtype).kind != "c":
        raise TraceError(f"{what} has dtype {ct_dtype.name} but the value it pairs with is real "
                         f"({np.dtype(dtype).name}): pass a real one{_at(src)}")
    if isinstance(ct, Tracer):
        return ct if ct.dtype == dtype else ct.astype(dtype)
    return np.asarray(ct, dtype=dtype)


def _transform(make: Callable[..., Any]) -> Callable[..., Any]:
    """Let a transform be used as ``@t``, ``@t(...)`` and ``t(f, ...)``."""
    @functools.wraps(make)
    def transform(fun: Callable[..., Any] | None = None, *args: Any, **kwargs: Any) -> Any:
        if fun is None:
            return lambda f: make(f, *args, **kwargs)
        return make(fun, *args, **kwargs)
    return transform


# -- grad / value_and_grad -------------------------------------------------------------------
def _check_holomorphic(t, who, holomorphic, src, outputs=True, inputs=True):
    """JAX's dtype rules for complex differentiation. ``holomorphic=True`` needs complex
    inputs and outputs; without it, ``outputs``/``inputs`` say which side must be real
    (reverse mode: the outputs, whose cotangent seeds are real; forward mode: the inputs)."""
    in_dtypes = [np.dtype(a.dtype) for a in t.in_avals]
    out_dtypes = [t.out_aval(k)[1] for k in range(t.n_out)]
    if holomorphic:
        for side, dtypes in (("inputs", in_dtypes), ("outputs", out_dtypes)):
            for dt in dtypes:
                if dt.kind != "c":
                    raise TraceError(f"{who} with holomorphic=True requires {side} with "
                                     f"complex dtype, but got {dt.name}{_at(src)}")
        return
    for side, dtypes, check in (("outputs", out_dtypes, outputs), ("inputs", in_dtypes, inputs)):
        for dt in dtypes:
            if check and dt.kind == "c":
                other = "tg.vjp" if side == "outputs" else "tg.jvp"
                raise TraceError(f"{who} requires real-valued {side} (a floating-point dtype), "
                                 f"but got {dt.name}. For holomorphic differentiation, pass "
                                 f"holomorphic=True. For differentiating non-holomorphic "
                                 f"functions involving complex {side}, use {other} directly"
                                 f"{_at(src)}")


_GRAD_PLAN = ("rev", (0,))


def _planned(t, seeds, seed_values, values=None):
    """The cotangents of ``t``'s inputs from its cached plan, given the cotangents
    ``seed_values`` of its outputs ``seeds`` and the forward ``values`` (by default the
    trace's); None without a plan (the caller takes the uncached path). On a miss the
    plan is made by its first use (``plans.first_use``)."""
    if t.plan_key is None:
        return None
    values = t.trace.values if values is None else values
    plan = t.plan
    if plan is None:
        plan, grads = plans.first_use(t.trace.records, t.outputs, t.input_nodes, seeds,
                                      values, seed_values)
        plans.store(t.plan_key, plan)
        t.plan = plan
        return grads if plan else None
    return plan(values, seed_values) if plan else None


def _replayed(t, seeds, fwd, seed_values, recorded=None):
    """``_evaluate`` of ``t``'s adjoint graph (its forward outputs ``fwd``, then the
    cotangents of its inputs) when ``t`` is traced inside another transform, from the
    graph cached for its structure (made now on a miss); None when it has none. This
    call's branch decisions are recorded in the enclosing trace, as the uncached path's
    replay of the guards does. ``recorded``: trace node -> its replay already recorded
    in the enclosing trace (tg.vjp's forward pass), which the adjoint reuses."""
    if t.replay_key is None:
        return None
    rp = t.replay
    if rp is None:
        guard_nodes = list(dict.fromkeys(n for n, _ in t.guards))
        try:
            rp = plans.Replay(t.trace.records, t.outputs, t.input_nodes, seeds, guard_nodes)
        except Exception:   # e.g. a rule that reads a constant's value: not cached
            rp = False
        plans.store(t.replay_key, rp)
    if not rp:
        return None
    graph, used = rp.graph(tuple(fwd))
    known = None
    if recorded:
        known = {m: recorded[n] for m, n in rp.forward_of.items() if n in recorded}
    outs = _evaluate(graph, rp.args(t.trace.records, t.eval_args, seed_values, used), known)
    k = len(fwd)
    if t.guards:
        at = {n: k + i for i, n in enumerate(dict.fromkeys(n for n, _ in t.guards))}
        for n, expected in t.guards:
            check_guard(graph, graph.outputs[at[n]], outs[at[n]], expected)
        del outs[k:k + len(at)]
    return outs


def _grad_core(fun, argnums, has_aux, with_value, holomorphic=False):
    """The shared body of grad and value_and_grad: returns (value or None, aux, grads)."""

    def run_grad(args, kwargs, src):
        nums, single = _argnums(argnums, len(args), src, fun, kwargs)
        t = _Traced(fun, args, kwargs, nums, src, has_aux=has_aux, plan_extra=_GRAD_PLAN)
        if t.n_out != 1 or t.out_tree.kind != "leaf":
            tree = t.out_tree
            aux = ""
            if tree.kind in ("tuple", "list") and len(tree.children) == 2 and \
                    tree.children[0].kind == "leaf" and t.out_aval(0)[0] in ((), (1,)):
                aux = (f"; if it returns (loss, aux), with aux not to be differentiated, pass "
                       f"has_aux=True: {'tg.value_and_grad' if with_value else 'tg.grad'}"
                       f"(f, has_aux=True) gives "
                       f"{'((loss, aux), grad)' if with_value else '(grad, aux)'}")
            raise TraceError(f"tg.grad needs {_fun_name(fun)} to return one scalar, but it "
                             f"returned {t.out_tree!r}{aux}; use tg.jacobian or tg.vjp for "
                             f"several outputs{_at(src)}")
        shape, dtype = t.out_aval(0)
        if math.prod(shape) != 1:
            out_src = t.graph.node(t.graph.outputs[0])["src"]
            raise TraceError(
                f"tg.grad needs {_fun_name(fun)} to return a scalar, but it returned an array "
                f"of shape {shape} (made at {out_src}). Reduce it (e.g. np.sum) or use "
                f"tg.jacobian for the full derivative, or tg.vjp to pull back a "
                f"cotangent{_at(src)}")
        if not is_float(dtype):
            raise TraceError(f"tg.grad needs a real floating-point output (or a complex one "
                             f"with holomorphic=True), but "
                             f"{_fun_name(fun)} returned dtype {dtype.name}{_at(src)}")
        _check_holomorphic(t, "tg.grad", holomorphic, src, inputs=False)
        grads = _planned(t, [0], [np.ones(shape, dtype)])
        if grads is not None:
            grads = t.unflatten_inputs(grads, single, numbers_as_scalars=True)
            fwd = [v._value for v in t.out_values + t.aux_values]
            return fwd[0], unflatten(t.aux_tree, fwd[1:]) if has_aux else None, grads
        n_fwd = len(t.outputs)
        # forward outputs: read off the trace when it ran on concrete values, else
        # evaluated only when asked for
        fwd_idx = []
        if not t.concrete:
            fwd_idx = ([0] if with_value else []) + (list(range(1, n_fwd)) if has_aux else [])
        outs = _replayed(t, [0], fwd_idx, [np.ones(shape, dtype)])
        if outs is None:
            adj = passes.adjoint(t.graph, seeds=[0])
            keep = [adj.outputs[i] for i in fwd_idx] + adj.outputs[n_fwd:n_fwd + t.n_in]
            outs = _evaluate(passes.prune(adj, keep), t.eval_args + [np.ones(shape, dtype)])
        grads = t.unflatten_inputs(outs[len(fwd_idx):], single, numbers_as_scalars=True)
        if t.concrete:
            fwd = [v._value for v in t.out_values + t.aux_values]
        else:
            known = dict(zip(fwd_idx, outs))
            fwd = [known.get(i) for i in range(n_fwd)]
        aux = unflatten(t.aux_tree, fwd[1:]) if has_aux else None
        return fwd[0], aux, grads

    return run_grad


@overload
def value_and_grad(fun: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
                   holomorphic: bool = False) -> Callable[P, tuple[Any, Any]]: ...
@overload
def value_and_grad(fun: None = None, argnums: ArgNums = 0, has_aux: bool = False,
                   holomorphic: bool = False
                   ) -> Callable[[Callable[P, Any]], Callable[P, tuple[Any, Any]]]: ...
@_transform
def value_and_grad(fun: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
                   holomorphic: bool = False) -> Callable[P, tuple[Any, Any]]:
    """Like ``grad``, but the function returns the value of ``fun`` with the gradient.

    The function is traced once per call; the value comes from that same trace.

    Args:
        fun: the function to differentiate, as for ``grad``.
        argnums: as for ``grad``.
        has_aux: ``fun`` returns ``(scalar, aux)``; the result is then
            ``((value, aux), grad)``.
        holomorphic: as for ``grad``.

    Returns:
        A function taking ``fun``'s arguments and returning ``(value, grad)``, or
        ``((value, aux), grad)`` with ``has_aux``.

    Raises:
        TraceError: as for ``grad``.
    """
    core = _grad_core(fun, argnums, has_aux, with_value=True, holomorphic=holomorphic)

    @functools.wraps(fun)
    def value_and_grad_fun(*args: P.args, **kwargs: P.kwargs) -> tuple[Any, Any]:
        value, aux, grads = core(args, kwargs, user_src())
        return ((value, aux), grads) if has_aux else (value, grads)

    return value_and_grad_fun


@overload
def grad(fun: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
         holomorphic: bool = False) -> Callable[P, Any]: ...
@overload
def grad(fun: None = None, argnums: ArgNums = 0, has_aux: bool = False,
         holomorphic: bool = False) -> Callable[[Callable[P, Any]], Callable[P, Any]]: ...
@_transform
def grad(fun: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
         holomorphic: bool = False) -> Callable[P, Any]:
    """The gradient of scalar-valued ``fun`` with respect to ``args[argnums]``.

    Usable as ``tg.grad(f)``, ``@tg.grad`` and ``@tg.grad(argnums=1)``. ``fun`` is
    traced on the concrete arguments of each call, so Python control flow on their
    values works.

    Complex numbers follow JAX: for a real-valued ``fun`` of complex ``z`` the result is
    ``df/dx - 1j * df/dy`` (``z = x + 1j*y``; the conjugate of the steepest-ascent
    direction). A complex-valued ``fun`` needs ``holomorphic=True`` (and complex
    inputs); the result is then the complex derivative ``f'(z)``.

    Args:
        fun: a function of arrays, numbers or pytrees of them, written with NumPy,
            returning a scalar (0-d or size 1, floating point).
        argnums: the position of the argument to differentiate, or a tuple of
            positions (the gradient is then a tuple, one entry per position).
        has_aux: ``fun`` returns ``(scalar, aux)``; ``aux`` is passed through and the
            result is ``(grad, aux)``.
        holomorphic: differentiate a complex-valued ``fun`` of complex arguments.

    Returns:
        A function taking ``fun``'s arguments and returning the gradient, with the
        structure, shape and dtype of the differentiated arguments (a Python number's
        gradient is a NumPy scalar).

    Raises:
        TraceError: ``fun`` does not return a scalar (use ``jacobian`` or ``vjp``), an
            argument in ``argnums`` is an integer or boolean array, ``argnums`` is out
            of range, or tracing fails; the message names the line of your code.
    """
    core = _grad_core(fun, argnums, has_aux, with_value=False, holomorphic=holomorphic)

    @functools.wraps(fun)
    def grad_fun(*args: P.args, **kwargs: P.kwargs) -> Any:
        _, aux, grads = core(args, kwargs, user_src())
        return (grads, aux) if has_aux else grads

    grad_fun._tg_grad_argnums = argnums     # names its outputs in tg.trace (dw)
    return grad_fun


# -- vjp / jvp --------------------------------------------------------------------------------
def vjp(fun: Callable[..., Any], *primals: PyTree, has_aux: bool = False) -> tuple[Any, ...]:
    """Reverse mode: the value of ``fun`` and a function pulling cotangents back.

    ``fun`` is traced once; ``vjp_fn`` may be called many times.

    Args:
        fun: the function to differentiate.
        *primals: the arguments to call it with (arrays, numbers or pytrees); every
            one is differentiated.
        has_aux: ``fun`` returns ``(out, aux)``; ``aux`` is returned as a third item.

    Returns:
        ``(out, vjp_fn)``, or ``(out, vjp_fn, aux)`` with ``has_aux``.
        ``vjp_fn(cotangent)`` takes a cotangent with the structure, shapes and dtypes
        of ``out`` and returns a tuple with one cotangent per primal.

    Raises:
        TraceError: a primal is an integer or boolean array, a cotangent does not
            match ``out``, or tracing fails.
    """
    src = user_src()
    nums = tuple(range(len(primals)))
    t = _Traced(fun, primals, {}, nums, src, has_aux=has_aux,
                skip_hint="close over it: tg.vjp(lambda x: f(x, n), x)", plan_extra="vjp")
    # inside another transform, the forward pass is inlined into the enclosing trace here
    # (its outputs are tracers of it), and vjp_fn's adjoint reuses what it recorded
    recorded = {}
    if t.concrete:
        outs = [v._value for v in t.out_values + t.aux_values]
    else:
        fwd_graph = passes.prune(t.graph)
        outs = _evaluate(fwd_graph, t.eval_args, keep=recorded)
        for o in fwd_graph.outputs:     # (handed out: the caller may write into them)
            recorded.pop(o, None)
        recorded = {n: v for n, v in recorded.items() if isinstance(v, Tracer)}
    out_leaves = [_writeable(np.asarray(v)) if not isinstance(v, Tracer) else v
                  for v in outs[:t.n_out]]
    if t.concrete:
        # NumPy's result is the caller's own array unless NumPy gives a view (x.reshape):
        # np.copy(x), +x and x.flatten() of a primal are new arrays, as outside tg.vjp
        inputs = [a for a in flatten(list(primals))[0] if isinstance(a, np.ndarray)]
        given = getattr(t, "input_tracers", ())
        out_leaves = [v if any(tracer is g for g in given) else _own_result(v, tracer, inputs)
                      for v, tracer in zip(out_leaves, t.out_values[:t.n_out])]
    out = unflatten(t.out_tree, out_leaves)
    adj = saved = None
    if t.plan_key is not None and t.plan is not False:
        # the forward values the plan reads (every value, while the plan is still to be
        # made by the first vjp_fn call), kept apart from the arrays handed out: the
        # caller may change those in place before calling vjp_fn
        handed = [v for v in out_leaves + list(outs[t.n_out:]) if isinstance(v, np.ndarray)]
        values = t.trace.values
        saved = {}
        for n in (range(len(values)) if t.plan is None else t.plan.saved):
            v = values[n]
            if isinstance(v, np.ndarray) and any(np.may_share_memory(v, h) for h in handed):
                v = v.copy()
            saved[n] = v
    elif t.replay_key is None:  # (else made when first needed, or cached: vjp_fn)
        n_fwd = len(t.graph.outputs)
        adj = passes.adjoint(t.graph, seeds=range(t.n_out))
        adj = passes.prune(adj, adj.outputs[n_fwd:n_fwd + t.n_in])

    def vjp_fn(cotangent: PyTree) -> tuple[Any, ...]:
        nonlocal adj
        call_src = user_src()
        leaves, tree = flatten(cotangent)
        if tree != t.out_tree:
            raise TraceError(f"the cotangent has structure {tree!r} but the output has "
                             f"structure {t.out_tree!r}{_at(call_src)}")
        cts = [_check_cotangent(c, *t.out_aval(k), call_src, "the cotangent")
               for k, c in enumerate(leaves)]
        grads = None
        if saved is not None and not any(isinstance(c, Tracer) for c in cts):
            grads = _planned(t, list(range(t.n_out)), cts, saved)
        if grads is None:
            # inside another transform, from the adjoint graph cached for this structure
            grads = None if adj is not None else _replayed(t, list(range(t.n_out)), (), cts,
                                                           recorded)
            if grads is not None:
                return t.unflatten_inputs(grads, single=False, numbers_as_scalars=True)
            if adj is None:     # traced cotangents: the adjoint graph is inlined
                n_fwd = len(t.graph.outputs)
                adj = passes.adjoint(t.graph, seeds=range(t.n_out))
                adj = passes.prune(adj, adj.outputs[n_fwd:n_fwd + t.n_in])
            grads = _evaluate(adj, t.eval_args + cts)
        return t.unflatten_inputs(grads, single=False, numbers_as_scalars=True)

    if has_aux:
        return out, vjp_fn, unflatten(t.aux_tree, outs[t.n_out:])
    return out, vjp_fn


def jvp(fun: Callable[..., Any], primals: Sequence[PyTree],
        tangents: Sequence[PyTree]) -> tuple[PyTree, PyTree]:
    """Forward mode: ``fun``'s value and one Jacobian-vector product.

    Args:
        fun: the function to differentiate.
        primals: a tuple (or list) of the arguments to call ``fun`` with.
        tangents: a tuple of tangents, one per primal with its structure, shape and
            dtype.

    Returns:
        ``(fun(*primals), tangent_out)``, ``tangent_out`` with the structure of the
        output.

    Raises:
        TraceError: ``primals`` and ``tangents`` are not tuples of the same structure,
            a tangent's shape or dtype does not match its primal, or tracing fails.
    """
    src = user_src()
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TraceError(f"tg.jvp takes primals and tangents as tuples, e.g. "
                         f"tg.jvp(f, (x,), (v,)){_at(src)}")
    if len(primals) != len(tangents):
        raise TraceError(f"tg.jvp got {len(primals)} primals but {len(tangents)} tangents"
                         f"{_at(src)}")
    nums = tuple(range(len(primals)))
    t = _Traced(fun, tuple(primals), {}, nums, src, differentiable=False, check_complex=True)
    tan_leaves, tan_tree = flatten(tuple(tangents))
    primal_tree = flatten(tuple(primals))[1]
    if tan_tree != primal_tree:
        raise TraceError(f"tangents have structure {tan_tree!r}, primals "
                         f"{primal_tree!r}{_at(src)}")
    tans = []
    for n, tl in zip(t.graph.inputs, tan_leaves):
        d = t.graph.node(n)
        tans.append(_check_cotangent(tl, d["shape"], np.dtype(d["dtype"]), src, "a tangent"))
    # values the function closed over are constants for this jvp: zero tangents
    captured_zeros = [np.zeros(t.graph.node(n)["shape"], t.graph.node(n)["dtype"])
                      for n in t.graph.inputs[t.n_in:]]
    tangent_graph = passes.jvp(t.graph)
    n_fwd = len(t.graph.outputs)
    keep = tangent_graph.outputs[:t.n_out] + tangent_graph.outputs[n_fwd:n_fwd + t.n_out]
    tangent_graph = passes.prune(tangent_graph, keep)
    outs = _evaluate(tangent_graph, t.eval_args + tans + captured_zeros)
    return unflatten(t.out_tree, outs[:t.n_out]), unflatten(t.out_tree, outs[t.n_out:])


# -- jacobian / hessian ------------------------------------------------------------------------
@overload
def jacobian(fun: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
             holomorphic: bool = False, *, mode: Literal["rev", "fwd"] = "rev",
             chunk_size: int | None = None) -> Callable[P, Any]: ...
@overload
def jacobian(fun: None = None, argnums: ArgNums = 0, has_aux: bool = False,
             holomorphic: bool = False, *, mode: Literal["rev", "fwd"] = "rev",
             chunk_size: int | None = None) -> Callable[[Callable[P, Any]], Callable[P, Any]]: ...
@_transform
def jacobian(fun: Callable[P, Any], argnums: ArgNums = 0, has_aux: bool = False,
             holomorphic: bool = False, *, mode: Literal["rev", "fwd"] = "rev",
             chunk_size: int | None = None) -> Callable[P, Any]:
    """The Jacobian: for each output leaf, an array of shape ``out.shape + arg.shape``.

    Usable as a decorator like ``grad``.

    The function is traced once. ``mode="rev"`` (the default) batches its adjoint graph
    over the one-hot cotangents of each output (``tg.passes.batch``), so all rows come
    from one batched run; ``mode="fwd"`` batches the tangent graph over one-hot tangents
    of the inputs instead, which costs one column per input element: the better choice
    for tall Jacobians (few inputs, many outputs). ``chunk_size`` bounds memory: the
    batched graph then runs over at most that many rows (columns) at a time. The part of
    the graph that does not depend on the seeds is evaluated only once.

    Complex numbers follow JAX's ``jacrev``/``jacfwd``: reverse mode needs real outputs
    (complex inputs give JAX's conjugate form), forward mode real inputs;
    ``holomorphic=True`` takes complex inputs and outputs and gives ``df/dz``.

    Args:
        fun: the function to differentiate; it may return any pytree of floating-point
            arrays.
        argnums: as for ``grad``; a tuple gives a tuple of blocks per output leaf.
        has_aux: ``fun`` returns ``(out, aux)``; the result is then ``(jac, aux)``.
        holomorphic: as for ``grad``.
        mode: ``"rev"`` (reverse mode, one row per output element) or ``"fwd"``
            (forward mode, one column per input element).
        chunk_size: at most this many rows (``"rev"``) or columns (``"fwd"``) per
            batched run; ``None`` runs them all at once.

    Returns:
        A function taking ``fun``'s arguments and returning the Jacobian, with the
        output's structure.

    Raises:
        TraceError: an output is not floating point, ``mode`` or ``chunk_size`` is
            invalid, or as for ``grad``.
    """
    if mode not in ("rev", "fwd"):
        raise TraceError(f"tg.jacobian: mode must be 'rev' or 'fwd', got {mode!r}")
    if chunk_size is not None and (not isinstance(chunk_size, (int, np.integer))
                                   or isinstance(chunk_size, bool) or chunk_size < 1):
        raise TraceError(f"tg.jacobian: chunk_size must be a positive int or None, got "
                         f"{chunk_size!r}")

    @functools.wraps(fun)
    def jacobian_fun(*args: P.args, **kwargs: P.kwargs) -> Any:
        src = user_src()
        nums, single = _argnums(argnums, len(args), src, fun, kwargs)
        t = _Traced(fun, args, kwargs, nums, src, has_aux=has_aux)
        for k in range(t.n_out):
            dtype = t.out_aval(k)[1]
            if not is_float(dtype):
                raise TraceError(f"tg.jacobian needs floating-point outputs; output {k} of "
                                 f"{_fun_name(fun)} has dtype {dtype.name}{_at(src)}")
        _check_holomorphic(t, f"tg.jacobian(mode={mode!r})", holomorphic, src,
                           outputs=mode == "rev", inputs=mode == "fwd")
        blocks = (_jacobian_rev if mode == "rev" else _jacobian_fwd)(t, chunk_size)
        jac = unflatten(t.out_tree, [t.unflatten_inputs(b, single) for b in blocks])
        if has_aux:
            outs = _evaluate(passes.prune(t.graph), t.eval_args)
            return jac, unflatten(t.aux_tree, outs[t.n_out:])
        return jac

    return jacobian_fun


def _in_avals(t):
    return [(tuple(t.graph.node(n)["shape"]), np.dtype(t.graph.node(n)["dtype"]))
            for n in t.graph.inputs[:t.n_in]]


def _jacobian_rev(t, chunk_size):
    """Per output leaf, one block per input leaf: the adjoint graph batched over the
    one-hot cotangents of that output."""
    n_fwd = len(t.graph.outputs)
    in_avals = _in_avals(t)
    per_output = []
    for k in range(t.n_out):
        shape, dtype = t.out_aval(k)
        size = int(np.prod(shape, dtype=np.int64))
        if size == 0 or not in_avals:
            per_output.append([np.zeros(tuple(shape) + s, d) for s, d in in_avals])
            continue
        adj = passes.adjoint(t.graph, seeds=[k])
        adj = passes.prune(adj, adj.outputs[n_fwd:n_fwd + t.n_in])
        seeds = np.eye(size, dtype=dtype).reshape((size,) + tuple(shape))
        rows = _run_batched(adj, t.eval_args + [None], [len(t.eval_args)], [seeds], size,
                            chunk_size, t.concrete)
        per_output.append([np.reshape(r, tuple(shape) + s) for r, (s, _) in zip(rows, in_avals)])
    return per_output


def _jacobian_fwd(t, chunk_size):
    """Per output leaf, one block per input leaf: the tangent graph batched over the
    one-hot tangents of every input element (the columns of the Jacobian)."""
    n_fwd = len(t.graph.outputs)
    in_avals = _in_avals(t)
    sizes = [int(np.prod(s, dtype=np.int64)) for s, _ in in_avals]
    total = sum(sizes)
    out_avals = [t.out_aval(k) for k in range(t.n_out)]
    if total == 0:
        return [[np.zeros(tuple(o) + s, d) for s, d in in_avals] for o, _ in out_avals]
    tangent_graph = passes.jvp(t.graph)
    tangent_graph = passes.prune(tangent_graph, tangent_graph.outputs[n_fwd:n_fwd + t.n_out])
    offsets = np.cumsum([0] + sizes)
    seeds = [np.eye(total, dtype=d)[:, offsets[i]:offsets[i + 1]].reshape((total,) + s)
             for i, (s, d) in enumerate(in_avals)]
    # values the function closed over are constants here: zero tangents
    captured = [np.zeros(t.graph.node(n)["shape"], t.graph.node(n)["dtype"])
                for n in t.graph.inputs[t.n_in:]]
    n_args = len(t.eval_args)
    cols = _run_batched(tangent_graph, t.eval_args + [None] * t.n_in + captured,
                        [n_args + i for i in range(t.n_in)], seeds, total, chunk_size,
                        t.concrete)
    per_output = []
    for (shape, out_dtype), col in zip(out_avals, cols):
        size = int(np.prod(shape, dtype=np.int64))
        rows = np.transpose(np.reshape(col, (total, size)))
        per_output.append([
            np.reshape(rows[:, offsets[i]:offsets[i + 1]], tuple(shape) + s).astype(
                out_dtype if out_dtype.kind == "c" else d)   # real inputs, complex outputs
            for i, (s, d) in enumerate(in_avals)])
    return per_output


def _run_batched(graph: Graph, args, positions, values, n, chunk_size, concrete):
    """``graph`` batched over the inputs at ``positions`` (``args`` fill the others),
    run on ``values`` (each with ``n`` rows) at most ``chunk_size`` rows at a time;
    returns each output with its ``n`` rows stacked in front."""
    chunk = n if chunk_size is None else min(int(chunk_size), n)
    batched = passes.prune(passes.batch(graph, positions, chunk))
    pad = -n % chunk
    if pad:  # the last chunk is filled up with zero seeds, whose rows are dropped
        values = [np.concatenate([v, np.zeros((pad,) + v.shape[1:], v.dtype)]) for v in values]
    starts = range(0, n + pad, chunk)

    def fill(start):
        full = list(args)
        for p, v in zip(positions, values):
            full[p] = v[start:start + chunk]
        return full

    if concrete:
        results = run_each(batched, [fill(s) for s in starts], positions)
    else:
        results = [_evaluate(batched, fill(s)) for s in starts]
    if len(results) == 1 and not pad:
        return [_writeable(r) if concrete else r for r in results[0]]
    return [np.concatenate([r[k] for r in results])[:n] for k in range(len(batched.outputs))]


@overload
def hessian(fun: Callable[P, Any], argnums: ArgNums = 0, holomorphic: bool = False, *,
            chunk_size: int | None = None) -> Callable[P, Any]: ...
@overload
def hessian(fun: None = None, argnums: ArgNums = 0, holomorphic: bool = False, *,
            chunk_size: int | None = None) -> Callable[[Callable[P, Any]], Callable[P, Any]]: ...
@_transform
def hessian(fun: Callable[P, Any], argnums: ArgNums = 0, holomorphic: bool = False, *,
            chunk_size: int | None = None) -> Callable[P, Any]:
    """The Hessian of scalar-valued ``fun``: the Jacobian of its gradient.

    It is the adjoint pass applied to the adjoint graph, all rows in one batched run
    (``chunk_size`` rows at a time when given). Usable as a decorator like ``grad``.

    Args:
        fun: a function returning a scalar, as for ``grad``.
        argnums: as for ``grad``.
        holomorphic: the complex second derivative of a holomorphic ``fun`` of complex
            arguments.
        chunk_size: as for ``jacobian``.

    Returns:
        A function taking ``fun``'s arguments and returning an array of shape
        ``arg.shape + arg.shape`` (nested tuples of blocks for tuple ``argnums``).

    Raises:
        TraceError: as for ``grad``.
    """
    return jacobian(grad(fun, argnums, holomorphic=holomorphic), argnums,
                    holomorphic=holomorphic, chunk_size=chunk_size)


# -- tracing and gradient control ----------------------------------------------------------------
def trace(fun: Callable[..., Any], *example_args: PyTree, **kwargs: Any) -> Graph:
    """The IR of ``fun`` at the shapes and dtypes of ``example_args``.

    Args:
        fun: the function to trace.
        *example_args: arguments to trace it with; every array or number leaf of every
            argument becomes a graph input.
        **kwargs: keyword arguments passed to ``fun`` as they are (not graph inputs).

    Returns:
        A new ``Graph`` whose outputs are the leaves of ``fun``'s result.

    Raises:
        TraceError: tracing fails (an unsupported NumPy function, a shape mismatch,
            ...); the message names the line of your code.
    """
    src = user_src()
    t = _Traced(fun, example_args, kwargs, tuple(range(len(example_args))), src,
                differentiable=False, check_complex=False, differentiates=False)
    if len(t.eval_args) != t.n_in:
        raise TraceError(f"tg.trace was called inside another transform on a function that "
                         f"closes over its traced values{_at(src)}")
    graph = t.graph
    _name_nodes(graph, fun, t)
    return graph


def _name_nodes(graph: Graph, fun, t: _Traced) -> None:
    """The node attribute ``name`` (shown by drawings) on a traced graph's inputs, after
    ``fun``'s parameters (``w``; ``params[1]`` for the leaves of a pytree argument), and
    on the outputs of a ``tg.grad`` function (``dw``)."""
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return
    names, per_arg = [], []
    for i, tree in enumerate(t.trees):
        base = None
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY,
                                                  params[i].POSITIONAL_OR_KEYWORD):
            base = params[i].name
        elif params and params[-1].kind == params[-1].VAR_POSITIONAL and i >= len(params) - 1:
            base = f"{params[-1].name}[{i - len(params) + 1}]"
        k = tree.num_leaves
        leaf_names = [base if k == 1 or base is None else f"{base}[{j}]" for j in range(k)]
        per_arg.append(leaf_names)
        names.extend(leaf_names)
    for n, name in zip(graph.inputs, names):
        if name:
            graph.node(n)["name"] = name
    argnums = getattr(fun, "_tg_grad_argnums", None)
    if argnums is None:
        return
    wrt = [argnums] if isinstance(argnums, int) else list(argnums)
    grads = [name for a in wrt if 0 <= a < len(per_arg) for name in per_arg[a]]
    for o, name in zip(graph.outputs, grads):
        if name and "name" not in graph.node(o):
            graph.node(o)["name"] = "d" + name


def stop_gradient(x: T) -> T:
    """``x`` itself, with no gradient flowing through it.

    Args:
        x: an array, a number or a pytree of them.

    Returns:
        ``x``, with the same structure; while tracing, each leaf is marked so that
        derivatives treat it as a constant.
    """
    leaves, tree = flatten(x)
    return unflatten(tree, [apply("stop_gradient", leaf) if isinstance(leaf, Tracer) else leaf
                            for leaf in leaves])


class _CustomRule:
    """What a ``custom_vjp_call`` node needs to run the user's ``bwd``."""

    def __init__(self, name, bwd, out_avals, out_tree, res_tree, res_leaves, arg_tree,
                 arg_leaves):
        self.name, self.bwd = name, bwd
        self.out_avals, self.out_tree = out_avals, out_tree
        self.res_tree, self.arg_tree = res_tree, arg_tree
        # Traced leaves travel as node operands; the rest is kept here by value.
        self.res_static = [None if isinstance(r, Tracer) else r for r in res_leaves]
        self.arg_traced = [isinstance(a, Tracer) for a in arg_leaves]
        self.arg_shapes = [tuple(np.shape(a)) for a in arg_leaves]
        self.n_res = sum(isinstance(r, Tracer) for r in res_leaves)

    def __repr__(self):
        return f"custom_vjp({self.name})"

    def backward(self, g, index, operands, out=None):
        """One cotangent per operand of the node: ``None`` for each residual (``bwd``
        replaces their derivative), then the user's cotangents for the traced args."""
        it = iter(operands[:self.n_res])
        res = unflatten(self.res_tree, [next(it) if s is None else s for s in self.res_static])
        cts = [g if k == index else np.zeros(shape, dtype)
               for k, (shape, dtype) in enumerate(self.out_avals)]
        result = self.bwd(res, unflatten(self.out_tree, cts))
        n_args = len(self.arg_tree.children)
        if not isinstance(result, (tuple, list)) or len(result) != n_args:
            raise TraceError(f"the bwd rule of custom_vjp function {self.name} must return a "
                             f"tuple with one cotangent per argument ({n_args}), got "
                             f"{type(result).__name__}{where()}")
        leaves = []
        for k, (ct, sub) in enumerate(zip(result, self.arg_tree.children)):
            if ct is None:
                leaves.extend([None] * sub.num_leaves)
                continue
            ct_leaves, ct_tree = flatten(ct)
            if ct_tree != sub:
                raise TraceError(f"the bwd rule of custom_vjp function {self.name} returned a "
                                 f"cotangent of structure {ct_tree!r} for argument {k}, which has "
                                 f"structure {sub!r}{where()}")
            leaves.extend(ct_leaves)
        for ct, shape in zip(leaves, self.arg_shapes):
            if ct is not None and not _fits(tuple(np.shape(ct)), shape):
                raise TraceError(f"the bwd rule of custom_vjp function {self.name} returned a "
                                 f"cotangent of shape {tuple(np.shape(ct))} for an argument of "
                                 f"shape {shape}: each cotangent must have its argument's shape"
                                 f"{where()}")
        return [None] * self.n_res + [ct for ct, traced in zip(leaves, self.arg_traced) if traced]


def _fits(ct_shape, shape):
    """A cotangent of ``ct_shape`` can stand for an argument of ``shape``: equal, or one
    broadcast from the other (the adjoint pass sums or broadcasts it into place)."""
    try:
        joint = np.broadcast_shapes(ct_shape, shape)
    except ValueError:
        return False
    return joint in (ct_shape, shape)


class custom_vjp:
    """A function with a hand-written reverse-mode rule, as in JAX.

    ```python
    @tg.custom_vjp
    def f(x, c): ...
    f.defvjp(fwd, bwd)   # fwd(*args) -> (out, residuals); bwd(residuals, g) -> tuple
    ```

    Called outside a transform (or from inside ``fwd``), the function just runs.

    Args:
        fun: the function whose derivative ``defvjp`` replaces.
    """

    def __init__(self, fun: Callable[..., Any]) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd = self.bwd = None
        self._in_fwd = 0    # > 0 while fwd runs: there, calling the function is its primal

    def defvjp(self, fwd: Callable[..., tuple[Any, Any]],
               bwd: Callable[[Any, Any], Sequence[Any]]) -> custom_vjp:
        """Set the rule.

        Args:
            fwd: ``fwd(*args) -> (out, residuals)``: the output and what ``bwd`` needs.
            bwd: ``bwd(residuals, g) -> tuple``: one cotangent per argument (``None``
                for none) given the output's cotangent ``g``.

        Returns:
            The function itself, so ``f = tg.custom_vjp(f).defvjp(fwd, bwd)`` works.
        """
        self.fwd, self.bwd = fwd, bwd
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = inspect.signature(self.fun).bind(*args, **kwargs).args
        arg_leaves, arg_tree = flatten(tuple(args))
        # JAX's documented fwd is ``def f_fwd(x): return f(x), x``: inside fwd, f is the
        # plain function, not another custom rule (which would recurse forever)
        if self._in_fwd or not any(isinstance(a, Tracer) for a in arg_leaves):
            return self.fun(*args)
        if self.fwd is None:
            raise TraceError(f"custom_vjp function {_fun_name(self.fun)} has no rule yet: call "
                             f"{_fun_name(self.fun)}.defvjp(fwd, bwd) first{_at(user_src())}")
        self._in_fwd += 1
        try:
            out, res = self.fwd(*args)
        finally:
            self._in_fwd -= 1
        out_leaves, out_tree = flatten(out)
        out_leaves = [coerce(o) for o in out_leaves]
        res_leaves, res_tree = flatten(res)
        out_avals = [(tuple(np.shape(o)), np.dtype(getattr(o, "dtype", np.result_type(o))))
                     for o in out_leaves]
        rule = _CustomRule(_fun_name(self.fun), self.bwd, out_avals, out_tree, res_tree,
                           res_leaves, arg_tree, arg_leaves)
        operands = [r for r in res_leaves if isinstance(r, Tracer)] + [
            a for a in arg_leaves if isinstance(a, Tracer)]
        marked = [apply("custom_vjp_call", o, *operands, rule=rule, index=k)
                  if is_float(aval[1]) else o for k, (o, aval) in enumerate(zip(out_leaves,
                                                                                 out_avals))]
        return unflatten(out_tree, marked)
