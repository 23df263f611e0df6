"""``jacobian`` (reverse or forward mode) and ``hessian``: the adjoint or tangent graph
batched over one-hot seeds (``passes.batch``), run a chunk of rows at a time."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal, overload

import numpy as np

from .. import passes
from .._typing import ArgNums, P
from ..errors import TraceError
from ..ir import Graph
from ..ir.aliasing import writeable
from ..ir.dtypes import is_float
from ..ir.evaluate import call
from ..runtime import run_each
from ..tracer import (
    unflatten,
    user_src,
)
from .reverse import _check_holomorphic, grad
from .tracing import _argnums, _at, _fun_name, _Traced, _transform

__all__ = ["jacobian", "hessian"]


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
             chunk_size: int | None = None, _fwd_output_dtype: bool = False) -> Callable[P, Any]:
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
        _fwd_output_dtype: (internal: torch.func's ``jacfwd``) forward mode's blocks in
            their output's dtype, as the tangents are computed, instead of the input's.

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
        blocks = _jacobian_rev(t, chunk_size) if mode == "rev" else \
            _jacobian_fwd(t, chunk_size, _fwd_output_dtype)
        jac = unflatten(t.out_tree, [t.unflatten_inputs(b, single) for b in blocks])
        if has_aux:
            outs = call(passes.prune(t.graph), t.eval_args, owned=True)
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


def _jacobian_fwd(t, chunk_size, output_dtype=False):
    """Per output leaf, one block per input leaf: the tangent graph batched over the
    one-hot tangents of every input element (the columns of the Jacobian). The blocks
    have the input's dtype (a complex output's for real inputs), or with ``output_dtype``
    the output's: the columns are computed in it, so a float64 output of a float32 input
    must not be rounded to float32 on the way (torch's jacfwd is float64-exact there)."""
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
                out_dtype if output_dtype or out_dtype.kind == "c" else d)
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
        results = [call(batched, fill(s), owned=True) for s in starts]
    if len(results) == 1 and not pad:
        return [writeable(r) if concrete else r for r in results[0]]
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
