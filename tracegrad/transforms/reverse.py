"""Reverse mode: ``grad``, ``value_and_grad`` and ``vjp``, from a cached plan
(``tracegrad.autodiff.plans``) or the adjoint graph of the traced function."""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, overload

import numpy as np

from .. import passes
from .._typing import ArgNums, P, PyTree
from ..autodiff import plans
from ..errors import TraceError
from ..ir.aliasing import writeable
from ..ir.dtypes import is_float
from ..ir.evaluate import call, check_guard
from ..tracer import (
    Tracer,
    flatten,
    snapshot_tracer,
    unflatten,
    user_src,
)
from .tracing import _argnums, _at, _check_cotangent, _fun_name, _own_result, _Traced, _transform

__all__ = ["grad", "value_and_grad", "vjp"]


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
    trace's); None without a plan (the caller takes the uncached path). A structure met
    for the first time is differentiated by one sweep on the values (``plans.once``);
    met again, its plan is made from that sweep (``plans.again``), or else by its first
    use (``plans.first_use``)."""
    if t.plan_key is None:
        return None
    values = t.trace.values if values is None else values
    plan = t.plan
    if plan is None or isinstance(plan, plans.Seen):
        if plan is None:
            # met for the first time: one sweep on the values, the plan made from it
            # when the structure is met again
            grads = plans.once(t.plan_key, t.trace.records, t.outputs, t.input_nodes,
                               seeds, values, seed_values)
            if grads is not None:
                t.plan = plans.lookup(t.plan_key)
                return grads
        else:
            made = plans.again(t.plan_key, plan, t.trace.records, t.input_nodes)
            if made is not None:
                t.plan = made
                return made(values, seed_values)
        plan, grads = plans.first_use(t.trace.records, t.outputs, t.input_nodes, seeds,
                                      values, seed_values)
        plans.store(t.plan_key, plan)
        t.plan = plan
        return grads if plan else None
    return plan(values, seed_values) if plan else None


def _replayed(t, seeds, fwd, seed_values, recorded=None):
    """``call`` of ``t``'s adjoint graph (its forward outputs ``fwd``, then the
    cotangents of its inputs) when ``t`` is traced inside another transform, from the
    graph cached for its structure (made when the structure was met ``REPLAY_AFTER``
    times; before, by ``plans.inline``); None when it has none. This
    call's branch decisions are recorded in the enclosing trace, as the uncached path's
    replay of the guards does. ``recorded``: trace node -> its replay already recorded
    in the enclosing trace (tg.vjp's forward pass), which the adjoint reuses."""
    if t.replay_key is None:
        return None
    rp = t.replay
    if rp is None or isinstance(rp, plans.Seen):
        if not plans.due(t.replay_key, rp, plans.REPLAY_AFTER):
            # a structure met fewer times than a Replay takes to pay: one sweep on the
            # enclosing trace's values, recorded there
            outs = plans.inline(t.graph, t.eval_args, t.input_nodes, seeds, seed_values,
                                fwd, t.guards, recorded or None)
            if outs is not None:
                return outs
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
    outs = call(graph, rp.args(t.trace.records, t.eval_args, seed_values, used), owned=True,
                known=known)
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
            outs = call(passes.prune(adj, keep), t.eval_args + [np.ones(shape, dtype)],
                        owned=True)
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
        outs = call(fwd_graph, t.eval_args, owned=True, keep=recorded)
        recorded = {n: v for n, v in recorded.items() if isinstance(v, Tracer)}
        for o in fwd_graph.outputs:
            # handed out: the caller may write into them before calling vjp_fn (a write
            # rebinds the tracer to a new node), so the adjoint keeps the node as it is now
            v = recorded.get(o)
            if v is not None:
                recorded[o] = snapshot_tracer(v)
    out_leaves = [writeable(np.asarray(v)) if not isinstance(v, Tracer) else v
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
        for n in (t.plan.saved if isinstance(t.plan, plans.Plan) else range(len(values))):
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
            grads = call(adj, t.eval_args + cts, owned=True)
        return t.unflatten_inputs(grads, single=False, numbers_as_scalars=True)

    if has_aux:
        return out, vjp_fn, unflatten(t.aux_tree, outs[t.n_out:])
    return out, vjp_fn
