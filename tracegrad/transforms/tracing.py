"""The tracing session every functional transform starts from, and ``trace``.

A transform traces the function on its (concrete) arguments into a graph (``_Traced``),
derives a new graph with a pass, and runs that graph (``ir.evaluate.call``). Running it
on traced arguments inlines it into the enclosing trace, which is how transforms
compose: ``tg.hessian(f)`` traces ``tg.grad(f)`` and so differentiates the adjoint
graph again. Here too: the checks of arguments, argnums and (co)tangents the
transforms share, ``trace`` (the IR of a function) and ``stop_gradient``.
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from .._typing import PyTree, T
from ..autodiff import plans
from ..errors import TraceError
from ..ir import REGISTRY, Aval, Graph, apply
from ..ir.dtypes import is_float
from ..passes.prune import live_nodes
from ..tracer import (
    Tracer,
    coerce,
    flatten,
    new_trace,
    source_override,
    sync,
    unflatten,
    user_src,
)

__all__ = ["trace", "stop_gradient"]


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


def _own_result(value, tracer, inputs):
    """``value``, copied where it shares memory with an input although the traced value
    is no NumPy view (``getattr(tracer, "_view")`` is None; an input handed back as it
    is, ``lambda x: x``, is not passed here)."""
    if (isinstance(value, np.ndarray) and getattr(tracer, "_view", None) is None
            and any(np.may_share_memory(value, a) for a in inputs)):
        return value.copy()
    return value


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
