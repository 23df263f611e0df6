"""``torch.func`` over eager tensors and modules: ``grad``, ``grad_and_value``, ``vjp``,
``jvp``, ``linearize``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap``,
``functional_call``, ``stack_module_state``, ``functionalize``,
``replace_all_batch_norm_modules_``, ``debug_unwrap`` and ``rearrange``, with torch 2.13's
signatures, results and error messages (``import tracegrad as torch; from torch.func import
grad, vmap``).

Each transform is a second front door to tracegrad's functional transforms
(``tracegrad/transforms``): the user's eager function is traced by ``tg.grad``,
``tg.vjp``, ``tg.jvp``, ``tg.jacobian`` or ``tg.vmap`` with its tensor arguments standing
for that transform's tracers (an eager ``Tensor`` wrapping a tracer runs symbolically:
``dispatch._SYMBOLIC``), and the transform's arrays come back as eager tensors. Nested
transforms (``grad(grad(f))``, ``jacrev(jacfwd(f))``, ``vmap(grad(f))``) nest the
functional transforms the same way: an inner transform's arguments are the outer one's
symbolic tensors, whose tracers it takes.

Given tensors that require grad (grad mode on), ``grad``, ``grad_and_value``,
``jacrev``, ``jacfwd``, ``hessian`` and ``vmap`` record one operation on the eager tape
(a custom ``autograd.Function`` whose backward is ``vjp`` of the transform), so a
``.backward()`` through their results reaches those arguments, as torch's does. Tensors
that require grad which the function only closes over (a module's own parameters), and
the arguments of ``vjp``/``jvp``/``linearize``, are not reached: a warning says so.
"""
from __future__ import annotations

import contextlib
import functools
import math
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..eager.autograd.function import Function
from ..eager.functions import FUNCTIONS
from ..eager.grad_mode import (
    enable_grad,
    functional_derivative,
    is_grad_enabled,
    no_grad,
    watch_dropped,
)
from ..eager.nn.utils.stateless import _functional_call
from ..eager.random import default_generator
from ..eager.tape import EagerTracer
from ..eager.tensor import Tensor
from ..errors import TraceError
from ..ir.aliasing import storage_root
from ..tracer import Tracer
from ..tracer.pytree import flatten, unflatten
from ..transforms import forward as _forward
from ..transforms import jacobians as _jacobians
from ..transforms import reverse as _reverse
from ..transforms import vmap as _vmap

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd",
           "hessian", "vmap", "functional_call", "stack_module_state", "functionalize",
           "replace_all_batch_norm_modules_", "debug_unwrap", "rearrange"]


# -- eager tensors <-> the functional transforms' values ---------------------------------------
def _inner(t):
    """An eager tensor as the transforms see it: the tracer of an enclosing transform, or
    its NumPy value."""
    tracer = t._tracer
    if tracer is not None and not isinstance(tracer, EagerTracer):
        return tracer
    return t._data


def _outer(v):
    """A transform's value as an eager tensor (symbolic while it is traced)."""
    if isinstance(v, Tracer) and not isinstance(v, EagerTracer):
        return Tensor._symbolic(v)
    if isinstance(v, Tensor):
        return v
    return Tensor._plain(np.asarray(v))


def _to_inner(args):
    """``args`` with every tensor leaf replaced by its inner value, and which leaves were
    tensors (to turn them back into tensors inside the traced function)."""
    leaves, tree = flatten(args)
    mask = [isinstance(x, Tensor) for x in leaves]
    return unflatten(tree, [_inner(x) if m else x for x, m in zip(leaves, mask)]), mask


def _to_outer(args, mask):
    leaves, tree = flatten(args)
    return unflatten(tree, [_outer(x) if m else x for x, m in zip(leaves, mask)])


def _tensors_out(tree):
    """Every leaf of a transform's result as an eager tensor."""
    leaves, td = flatten(tree)
    return unflatten(td, [_outer(x) for x in leaves])


def _unwrap_out(tree, what):
    """A traced function's result (tensors) as the transform's values; ``what(type)``
    raises torch's error for a leaf that is not a tensor."""
    leaves, td = flatten(tree)
    out = []
    for x in leaves:
        if not isinstance(x, Tensor):
            what(type(x))
        out.append(_inner(x))
    return unflatten(td, out)


def _name(func):
    if isinstance(func, functools.partial):
        return _name(func.func)
    return getattr(func, "__name__", None) or repr(func)


def _draw_mark():
    """Where the default generator stands (compared after a trace: was a number drawn?)."""
    g = default_generator
    state = g._bits.state["state"]
    return g._bits, int(state["pos"]), np.array(state["key"]), g._next_normal


def _drew(mark):
    g = default_generator
    bits, pos, key, nxt = mark
    if g._bits is not bits or g._next_normal is not nxt:
        return True
    state = bits.state["state"]
    return int(state["pos"]) != pos or not np.array_equal(state["key"], key)


@contextlib.contextmanager
def _watched(api, args):
    """A transform's run: a warning when tensors that require grad took part that a
    backward through the results would not reach (read inside the function, or given to
    a transform that ``_bridged`` does not wrap), where torch's would reach them."""
    recording = is_grad_enabled()
    with watch_dropped() as dropped:
        yield
    inputs = [x for x in flatten(args)[0] if isinstance(x, Tensor) and (
        x._requires_grad or isinstance(x._tracer, EagerTracer))]
    if recording and (inputs or dropped):
        n = len({id(t) for t in inputs + dropped})
        warnings.warn(f"torch.func.{api}: {n} tensor(s) that require grad took part (read "
                      f"by the function{', or given to ' + api if inputs else ''}), but a "
                      f".backward() through the results does not reach them in tracegrad "
                      f"(torch's would): pass them as arguments of grad/jacrev/jacfwd/"
                      f"hessian/vmap, or detach them (or use no_grad) to silence this",
                      UserWarning, stacklevel=_user_stacklevel())


def _user_stacklevel():
    """The ``stacklevel`` of the first frame outside tracegrad (and contextlib)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and (
            os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep)
            or frame.f_code.co_filename == contextlib.__file__):
        frame, level = frame.f_back, level + 1
    return level


def _recording(x):
    """Whether eager autograd records through tensor ``x`` (a leaf that requires grad, or
    a recorded result), as opposed to a transform's symbolic tensor or a constant."""
    return isinstance(x, Tensor) and x.dtype.kind in "fc" and (
        x._requires_grad or isinstance(x._tracer, EagerTracer))


def _bridged(transform):
    """``transform`` (a torch.func transform of a function) as an operation eager
    autograd records: called with tensor arguments that require grad (grad mode on), it
    runs as a custom ``autograd.Function`` whose backward is ``vjp`` of the transform at
    those arguments, so a ``.backward()`` through its results reaches them, as torch's
    does. (Tensors the function closes over are not reached: see ``_watched``.)"""
    @functools.wraps(transform)
    def bridged(*args, **kwargs):
        if not is_grad_enabled():
            return transform(*args, **kwargs)
        leaves, tree = flatten(args)
        pos = [k for k, x in enumerate(leaves) if _recording(x)]
        if not pos:
            return transform(*args, **kwargs)
        box = {}

        def compute(*xs):
            full = list(leaves)
            for k, x in zip(pos, xs):
                full[k] = x
            out_leaves, box["tree"] = flatten(transform(*unflatten(tree, full), **kwargs))
            box["float"] = [k for k, o in enumerate(out_leaves) if o.dtype.kind in "fc"]
            return tuple(out_leaves)
        outs = _Bridge.apply(compute, box, *[leaves[k] for k in pos])
        return unflatten(box["tree"], list(outs))
    return bridged


class _Bridge(Function):
    """A torch.func transform applied to tensors that require grad, as one recorded
    operation (``_bridged``)."""

    @staticmethod
    def forward(ctx, compute, box, *xs):
        plain = [x.detach() for x in xs]
        ctx.compute, ctx.box, ctx.plain = compute, box, plain
        with enable_grad():             # (the transform's own grad mode rules apply)
            return compute(*plain)

    @staticmethod
    def backward(ctx, *grads):
        picked = ctx.box["float"]

        def floats(*xs):
            out = ctx.compute(*xs)
            return tuple(out[k] for k in picked)
        _, pull = vjp(floats, *ctx.plain)
        return (None, None) + tuple(pull(tuple(grads[k] for k in picked)))


_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please "
                 "either use the 'same' or 'different' randomness flags on vmap or perform "
                 "the randomness operation out of vmap")


# -- argnums and argument checks ------------------------------------------------------------
def _argnums(argnums, nargs):
    """torch's checks of ``argnums``: the positions (non-negative) and whether one."""
    if isinstance(argnums, bool) or not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    single = isinstance(argnums, int)
    nums = (argnums,) if single else argnums
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    for a in nums:
        if isinstance(a, bool) or not isinstance(a, int):
            raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
    if len(set(a % nargs for a in nums)) != len(nums):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    nums = tuple(a % nargs for a in nums)
    return (nums[0] if single else nums), nums


def _check_tensors(tree, need_float=True, forward=False):
    for x in flatten(tree)[0]:
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        if need_float and x.dtype.kind not in "fc":
            if forward:
                raise ValueError(f"Expected primal to be floating point or complex, but got: "
                                 f"{_dtype_name(x.dtype)}")
            raise RuntimeError("only Tensors of floating point dtype can require gradients")


def _dtype_name(dtype):
    return f"torch.{np.dtype(dtype).name}"


def _split_aux(out, api):
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if "
                           f"has_aux is True")
    return out


def _aux_inner(aux):
    def bad(t):
        raise RuntimeError(f"Expected tensors, got unsupported type {t}")
    return _unwrap_out(aux, bad)


# -- grad ---------------------------------------------------------------------------------------
def grad_and_value(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable[..., Any]:
    """``torch.func.grad_and_value``: the gradient of scalar-valued ``func`` with
    respect to ``args[argnums]`` and its value: ``(grad, value)``, or
    ``(grad, (value, aux))`` with ``has_aux``. Traced by ``tg.value_and_grad``."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        api = "grad_and_value(f)(*args)"
        picked, nums = _argnums(argnums, len(args))
        for i in nums:
            _check_tensors(args[i])
        inner, mask = _to_inner(args)

        def traced(*a):
            out = func(*_to_outer(a, mask), **kwargs)
            aux = None
            if has_aux:
                out, aux = _split_aux(out, api)
            if not isinstance(out, Tensor):
                raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got "
                                   f"{type(out)}")
            if out.dim() != 0:
                raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.dim()} dims. Maybe you wanted to use the "
                                   f"vjp or jacrev APIs instead?")
            return (_inner(out), _aux_inner(aux)) if has_aux else _inner(out)

        vg = _reverse.value_and_grad(traced, argnums=picked, has_aux=has_aux)
        with _watched("grad", args), functional_derivative():
            value, grads = vg(*inner)
        grads = _tensors_out(grads)
        if has_aux:
            value, aux = value
            return grads, (_outer(value), _tensors_out(aux))
        return grads, _outer(value)
    return _bridged(wrapper)


def grad(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
         has_aux: bool = False) -> Callable[..., Any]:
    """``torch.func.grad``: the gradient of scalar-valued ``func`` (a 0-dim tensor) with
    respect to ``args[argnums]`` (an int, or a tuple of them: a tuple of gradients);
    ``(grad, aux)`` with ``has_aux``. Pytrees (dicts, tuples, lists) of tensors are
    differentiated leaf by leaf."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = gv(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads
    return wrapper


# -- vjp / jvp / linearize ---------------------------------------------------------------------
def _only_tensors(api, what="f(*primals)"):
    def bad(t):
        raise RuntimeError(f"{api}: expected {what} to return only tensors, got unsupported "
                           f"type {t}")
    return bad


def _shape_str(shape):
    return f"torch.Size([{', '.join(str(int(s)) for s in shape)}])"


def vjp(func: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """``torch.func.vjp``: ``(output, vjp_fn)`` (``(output, vjp_fn, aux)`` with
    ``has_aux``); ``vjp_fn(cotangents)`` gives one cotangent per primal, as a tuple.
    Traced once by ``tg.vjp``; ``vjp_fn`` can be called many times."""
    api = "vjp(f, *primals)"
    _check_tensors(primals)
    inner, mask = _to_inner(primals)

    def traced(*a):
        out = func(*_to_outer(a, mask))
        aux = None
        if has_aux:
            out, aux = _split_aux(out, api)
        out = _unwrap_out(out, _only_tensors(api))
        return (out, _aux_inner(aux)) if has_aux else out

    with _watched("vjp", primals), functional_derivative():
        res = _reverse.vjp(traced, *inner, has_aux=has_aux)
    out, pull = res[0], res[1]
    out_leaves, out_tree = flatten(out)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        leaves, tree = flatten(cotangents)
        if tree != out_tree:
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as "
                               f"pytree structure of outputs to the function. cotangents: "
                               f"{tree!r}, primal output: {out_tree!r}")
        cts = []
        for k, (c, o) in enumerate(zip(leaves, out_leaves)):
            if not isinstance(c, Tensor):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(c)}")
            if tuple(c.shape) != tuple(np.shape(o)):
                raise RuntimeError(f"Mismatch in shape: grad_output[{k}] has a shape of "
                                   f"{_shape_str(c.shape)} and output[{k}] has a shape of "
                                   f"{_shape_str(np.shape(o))}.")
            v = _inner(c)
            dtype = np.dtype(o.dtype)
            if np.dtype(c.dtype) != dtype:
                v = v.astype(dtype)
            cts.append(v)
        return _tensors_out(pull(unflatten(tree, cts)))

    result = (_tensors_out(out), vjp_fn)
    return result + (_tensors_out(res[2]),) if has_aux else result


def _jvp_checks(primals, tangents):
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid "
                           f"to call f(*primals).")
    if not isinstance(tangents, tuple):
        raise RuntimeError(f"{api}: Expected tangents to be a tuple. E.g. it should be valid "
                           f"to call f(*primals).")
    p_leaves, p_tree = flatten(primals)
    t_leaves, t_tree = flatten(tangents)
    if p_tree != t_tree:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, "
                           f"tangents also must be. Got primals with structure {p_tree!r} and "
                           f"tangents with structure {t_tree!r}")
    if not p_leaves:
        raise RuntimeError(f"{api}: Expected primals to contain at least one Tensor.")
    for p in p_leaves:
        if not isinstance(p, Tensor):
            raise RuntimeError(f"{api}: Expected primals to only contain Tensors, got "
                               f"{type(p)}")
    for t in t_leaves:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{api}: Expected tangents to only contain Tensors, got "
                               f"{type(t)}")
    for p in p_leaves:
        if p.dtype.kind not in "fc":
            raise ValueError(f"Expected primal to be floating point or complex, but got: "
                             f"{_dtype_name(p.dtype)}")
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(
                f"Trying to set a forward gradient that has a different size than that of "
                f"the original Tensor, this is not supported. Tensor is of size "
                f"[{', '.join(map(str, p.shape))}] while the given forward gradient is of "
                f"size [{', '.join(map(str, t.shape))}].")
    return p_leaves, t_leaves, p_tree


def jvp(func: Callable[..., Any], primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple[Any, ...]:
    """``torch.func.jvp``: ``(output, jvp_out)`` (``(output, jvp_out, aux)`` with
    ``has_aux``), forward mode through ``tg.jvp``. ``primals`` and ``tangents`` are tuples
    of the same structure."""
    if strict:
        raise RuntimeError("jvp(f, primals, tangents, strict=True): strict=True is not "
                           "implemented (as in torch.func)")
    p_leaves, t_leaves, p_tree = _jvp_checks(primals, tangents)
    api = "jvp(f, primals, tangents)"
    inner, mask = _to_inner(primals)
    tans = unflatten(p_tree, [_inner(t) if t.dtype == p.dtype else _inner(t).astype(p.dtype)
                              for p, t in zip(p_leaves, t_leaves)])
    aux_box = {}

    def traced(*a):
        out = func(*_to_outer(a, mask))
        if has_aux:
            out, aux = _split_aux(out, api)
            aux_leaves, aux_box["tree"] = flatten(aux)
            for x in aux_leaves:
                if not isinstance(x, Tensor):
                    raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
            # (the aux values ride along as outputs; their tangents are dropped)
            return _unwrap_out(out, _only_tensors(api)), [_inner(x) for x in aux_leaves]
        return _unwrap_out(out, _only_tensors(api))

    # (forward mode is not reverse-mode autograd: no_grad leaves it alone, as in torch)
    with _watched("jvp", primals):
        out, tangent_out = _forward.jvp(traced, tuple(inner), tans)
    if has_aux:
        return (_tensors_out(out[0]), _tensors_out(tangent_out[0]),
                _tensors_out(unflatten(aux_box["tree"], out[1])))
    return _tensors_out(out), _tensors_out(tangent_out)


def linearize(func: Callable[..., Any], *primals: Any) -> tuple[Any, Callable[..., Any]]:
    """``torch.func.linearize``: ``(output, jvp_fn)``; ``jvp_fn(*tangents)`` is the
    Jacobian-vector product at ``primals`` (each call runs ``tg.jvp`` at the saved
    primals)."""
    primals = tuple(primals)
    _check_tensors(primals, forward=True)
    p_leaves, p_tree = flatten(primals)
    out, _ = jvp(func, primals, unflatten(p_tree, [_zeros_like(p) for p in p_leaves]))

    def jvp_fn(*tangents):
        t_leaves, t_tree = flatten(tangents)
        if t_tree != p_tree:
            raise RuntimeError(f"Expected the tangents {t_tree!r} to have the same argument "
                               f"structure as the primals {p_tree!r}")
        for k, (p, t) in enumerate(zip(p_leaves, t_leaves)):
            if not isinstance(t, Tensor):
                raise RuntimeError(f"Expected tensors, got unsupported type {type(t)}")
            if tuple(t.shape) != tuple(p.shape):
                raise RuntimeError(f"tangent:{k} with shape {_shape_str(t.shape)} in flattened "
                                   f"pytree doesn't match the shape {_shape_str(p.shape)} of "
                                   f"the corresponding primal.")
        return jvp(func, primals, tuple(tangents))[1]

    return out, jvp_fn


def _zeros_like(t):
    return Tensor._plain(np.zeros(tuple(t.shape), t.dtype))


# -- jacobians ---------------------------------------------------------------------------------
def _jacobian(func, argnums, has_aux, chunk_size, mode, randomness="error"):
    api = "vjp(f, *primals)"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        picked, nums = _argnums(argnums, len(args))
        for i in nums:
            _check_tensors(args[i], forward=mode == "fwd")
        inner, mask = _to_inner(args)

        out_dtypes = []

        def traced(*a):
            out = func(*_to_outer(a, mask), **kwargs)
            aux = None
            if has_aux:
                out, aux = _split_aux(out, api)
            out = _unwrap_out(out, _only_tensors(api))
            out_dtypes[:] = [np.dtype(o.dtype) for o in flatten(out)[0]]
            return (out, _aux_inner(aux)) if has_aux else out

        mark, saved = _draw_mark(), default_generator.get_state()
        # (no_grad in func cuts reverse mode only, as in torch)
        with _watched("jacrev" if mode == "rev" else "jacfwd", args), \
                functional_derivative() if mode == "rev" else contextlib.nullcontext():
            res = _jacobians.jacobian(traced, picked, has_aux, mode=mode,
                                      chunk_size=chunk_size,
                                      _fwd_output_dtype=mode == "fwd")(*inner)
        if mode == "fwd" and _drew(mark) and randomness != "same":
            default_generator.set_state(saved)
            if randomness == "error":
                raise RuntimeError(_RANDOM_ERROR)
            raise RuntimeError("jacfwd(randomness='different'): tracegrad computes every "
                               "column from one trace, so the columns share their random "
                               "numbers; pass randomness='same'")
        if mode == "fwd":
            # torch's forward mode: each block has its output's dtype (the tangents are
            # cast with the primals), where reverse mode's has its input's (the core
            # computes them so, _fwd_output_dtype above: a cast here after rounding to
            # the input's dtype lost float64 digits; this only checks what is left)
            n_in = len(flatten(tuple(args[i] for i in nums))[0])
            jac = res[0] if has_aux else res
            leaves, tree = flatten(jac)
            leaves = [j if np.dtype(j.dtype) == out_dtypes[k // n_in] else
                      _cast(j, out_dtypes[k // n_in]) for k, j in enumerate(leaves)]
            jac = unflatten(tree, leaves)
            res = (jac, res[1]) if has_aux else jac
        if has_aux:
            return _tensors_out(res[0]), _tensors_out(res[1])
        return _tensors_out(res)
    return _bridged(wrapper)


def _cast(v, dtype):
    """A transform's value (an array or a tracer) in ``dtype``."""
    return v.astype(dtype)


def jacrev(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0, *,
           has_aux: bool = False, chunk_size: int | None = None,
           _preallocate_and_copy: bool = False) -> Callable[..., Any]:
    """``torch.func.jacrev``: the Jacobian by reverse mode (``tg.jacobian(mode="rev")``,
    all rows in one batched run, ``chunk_size`` rows at a time)."""
    if chunk_size is not None and not chunk_size > 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian(func, argnums, has_aux, chunk_size, "rev")


def jacfwd(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0,
           has_aux: bool = False, *, randomness: str = "error") -> Callable[..., Any]:
    """``torch.func.jacfwd``: the Jacobian by forward mode (``tg.jacobian(mode="fwd")``).
    A function drawing random numbers needs ``randomness="same"``."""
    _check_randomness(randomness)
    return _jacobian(func, argnums, has_aux, None, "fwd", randomness)


def hessian(func: Callable[..., Any], argnums: int | tuple[int, ...] = 0) -> Callable[..., Any]:
    """``torch.func.hessian``: ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)


# -- vmap ---------------------------------------------------------------------------------------
def _check_randomness(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")


def _broadcast(prefix, tree, what, prefix_repr, tree_repr):
    """One dim per leaf of ``tree`` from ``prefix`` (torch's ``in_dims``/``out_dims``): an
    int or None stands for a whole subtree; tuples, lists and dicts must match."""
    out = []

    def go(p, t):
        if p is None or (isinstance(p, int) and not isinstance(p, bool)):
            out.extend([p] * len(flatten(t)[0]))
            return
        if isinstance(p, (tuple, list)) and isinstance(t, (tuple, list)) and \
                type(p) is type(t) and len(p) == len(t):
            for a, b in zip(p, t):
                go(a, b)
            return
        if isinstance(p, dict) and isinstance(t, dict) and set(p) == set(t):
            for k in sorted(t) if all(isinstance(k, str) for k in t) else t:
                go(p[k], t[k])
            return
        raise ValueError(f"{what} is not compatible with the structure of `{tree_repr}`. "
                         f"{prefix_repr} has structure {flatten(prefix)[1]!r} but "
                         f"{tree_repr} has structure {flatten(tree)[1]!r}.")
    go(prefix, tree)
    return out


def _dims(prefix, tree, what, name):
    """Per leaf dims, ordered as ``flatten`` orders the leaves."""
    # ``flatten`` sorts dict keys; ``_broadcast`` walks them in the same order
    return _broadcast(prefix, tree, what, name, "inputs" if name == "in_dims" else "outputs")


def vmap(func: Callable[..., Any], in_dims: Any = 0, out_dims: Any = 0,
         randomness: str = "error", *, chunk_size: int | None = None) -> Callable[..., Any]:
    """``torch.func.vmap``: ``func`` mapped over a dimension of its tensor arguments, run
    as one batched computation (``tg.vmap``: traced on one example, the graph batched).

    ``in_dims``: an int, or a tuple with one entry per positional argument (each an int,
    None, or a nested tuple/list/dict prefix of that argument); keyword arguments are not
    mapped. ``out_dims`` likewise for the outputs. ``randomness``: ``"error"`` refuses a
    random draw in ``func``; ``"same"`` gives every example the same random numbers;
    ``"different"`` gives each its own (``func`` then runs once per example).
    ``chunk_size`` maps that many examples at a time."""
    _check_randomness(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")
    name = _name(func)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        where = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
        if not args:
            raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                             f"inputs, or you are trying to vmap over a function with no "
                             f"inputs. The latter is unsupported.")
        if isinstance(in_dims, bool) or not isinstance(in_dims, (int, tuple)):
            raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) "
                             f"tuple matching the structure of inputs, got: {type(in_dims)}.")
        prefix = (in_dims,) * len(args) if isinstance(in_dims, int) else in_dims
        if len(prefix) != len(args):
            raise ValueError(f"{where}: in_dims is not compatible with the structure of "
                             f"`inputs`. in_dims has structure {flatten(in_dims)[1]!r} but "
                             f"inputs has structure {flatten(args)[1]!r}.")
        leaves, tree = flatten(tuple(args))
        dims = _dims(prefix, tuple(args), "in_dims", "in_dims")
        sizes = []
        for x, d in zip(leaves, dims):
            if d is None:
                continue
            if not isinstance(x, Tensor):
                raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of "
                                 f"type {type(x)}. We cannot vmap over non-Tensor arguments, "
                                 f"please use None as the respective in_dim")
            nd = x.dim()
            if not -nd <= d < nd:
                raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is "
                                 f"a Tensor of dimensionality {nd} so expected in_dim to "
                                 f"satisfy -{nd} <= in_dim < {nd}.")
            sizes.append(x.shape[d])
        if not sizes:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): at least one "
                             f"input must be a Tensor to vmap over (in_dims is None for "
                             f"every input)")
        if len(set(sizes)) != 1:
            raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        size = sizes[0]
        dims = [None if d is None else d % leaves[k].dim() for k, d in enumerate(dims)]
        with _watched("vmap", args):
            return _mapped(leaves, dims, size, tree, kwargs)

    def _mapped(leaves, dims, size, tree, kwargs):
        run = functools.partial(_vmap_run, func, name, out_dims, randomness, tree, kwargs)
        if size == 0:
            return _empty_batch(run, leaves, dims)
        if chunk_size is None or chunk_size >= size:
            return run(leaves, dims, size)[0]
        parts = [run([x if d is None else _narrow(x, d, s, min(chunk_size, size - s))
                      for x, d in zip(leaves, dims)], dims, min(chunk_size, size - s))
                 for s in range(0, size, chunk_size)]
        out_tree, out_dim_list = parts[0][1], parts[0][2]
        joined = []
        for k, od in enumerate(out_dim_list):
            pieces = [flatten(p[0])[0][k] for p in parts]
            if od is None:
                joined.append(pieces[0])
            else:
                joined.append(FUNCTIONS["cat"](pieces, dim=od))
        return unflatten(out_tree, joined)

    return _bridged(wrapper)


class _Chunk(tuple):
    """One run of the mapped function: (result, its tree, its per-leaf out dims)."""


def _narrow(x, d, start, n):
    index = [slice(None)] * x.dim()
    index[d] = slice(start, start + n)
    return x[tuple(index)]


def _empty_batch(run, leaves, dims):
    """A batch of size 0 (torch gives outputs with an empty batch dimension): the
    function is mapped over one example of zeros, and the outputs keep none of it."""
    ones = []
    for x, d in zip(leaves, dims):
        if d is None:
            ones.append(x)
            continue
        shape = list(x.shape)
        shape[d] = 1
        ones.append(Tensor._plain(np.zeros(shape, x.dtype)))
    res = run(ones, dims, 1)
    out, out_tree, out_dims = res
    leaves_out = [o if od is None else _narrow(o, od, 0, 0)
                  for o, od in zip(flatten(out)[0], out_dims)]
    return unflatten(out_tree, leaves_out)


def _vmap_run(func, name, out_dims, randomness, tree, kwargs, leaves, dims, size):
    """``func`` mapped over ``leaves`` (tensors mapped at ``dims``): returns a
    ``_Chunk`` of the result, its tree and each output leaf's dim."""
    mask = [isinstance(x, Tensor) for x in leaves]
    inner = [_inner(x) if m else x for x, m in zip(leaves, mask)]
    box = {}

    def traced(*flat):
        args = unflatten(tree, [_outer(x) if m else x for x, m in zip(flat, mask)])
        out = func(*args, **kwargs)
        out_leaves, out_tree = flatten(out)
        for x in out_leaves:
            if not isinstance(x, Tensor):
                raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got "
                                 f"type {type(x)}. Did you mean to set out_dims= to None for "
                                 f"output?")
        box["tree"] = out_tree
        box["out"] = out
        # out_axes are read by tg.vmap after this trace: filled in here, one per leaf
        box["axes"][:] = [None if d is None else 0 for d in _out_dims(out_dims, out, name)]
        return [_inner(x) for x in out_leaves]

    box["axes"] = []
    mark, saved = _draw_mark(), default_generator.get_state()
    try:
        flat_out = _vmap.vmap(traced, in_axes=tuple(dims), out_axes=box["axes"])(*inner)
    except TraceError as e:
        if "out_axes=None" in str(e):
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                             f"when out_dim is None") from None
        raise
    if _drew(mark) and randomness != "same":
        default_generator.set_state(saved)
        if randomness == "error":
            raise RuntimeError(_RANDOM_ERROR)
        return _per_example(func, name, out_dims, tree, kwargs, leaves, dims, size)
    return _place(flat_out, box["tree"], box["out"], out_dims, name)


def _out_dims(out_dims, out, name):
    """torch's ``out_dims`` as one dim (an int or None) per output leaf."""
    if isinstance(out_dims, bool) or not isinstance(out_dims, (int, tuple)) and \
            out_dims is not None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, "
                         f"None or a python collection of ints representing where in the "
                         f"outputs the vmapped dimension should appear.")
    if isinstance(out_dims, tuple) and len(out_dims) == 1 and isinstance(out, Tensor):
        out_dims = out_dims[0]
    try:
        return _broadcast(out_dims, out, "out_dims", "out_dims", "outputs")
    except ValueError as e:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): {e}") from None


def _moved(x, od, name):
    """A batched output (batch first) with its batch dimension at ``od``."""
    nd = x.dim()
    if not -nd <= od < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, "
                         f"{nd - 1}], but got {od})")
    return x if od % nd == 0 else x.movedim(0, od)


def _place(flat_out, out_tree, out, out_dims, name):
    dims = _out_dims(out_dims, out, name)
    leaves = [_outer(v) if d is None else _moved(_outer(v), d, name)
              for v, d in zip(flat_out, dims)]
    return _Chunk((unflatten(out_tree, leaves), out_tree, dims))


def _per_example(func, name, out_dims, tree, kwargs, leaves, dims, size):
    """``randomness="different"``: ``func`` run on each example in turn (each draws its
    own random numbers), the results stacked."""
    results = []
    out_tree = out = None
    for b in range(size):
        args = unflatten(tree, [x if d is None else x.select(d, b)
                                for x, d in zip(leaves, dims)])
        out = func(*args, **kwargs)
        out_leaves, out_tree = flatten(out)
        for x in out_leaves:
            if not isinstance(x, Tensor):
                raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got "
                                 f"type {type(x)}. Did you mean to set out_dims= to None for "
                                 f"output?")
        results.append(out_leaves)
    per_leaf = _out_dims(out_dims, out, name)
    stacked = []
    for k, od in enumerate(per_leaf):
        column = [r[k] for r in results]
        if od is None:
            stacked.append(column[0])
        else:
            stacked.append(_moved(FUNCTIONS["stack"](column), od, name))
    return _Chunk((unflatten(out_tree, stacked), out_tree, per_leaf))


# -- modules ------------------------------------------------------------------------------------
functional_call = _functional_call      # (eager/nn/utils/stateless.py: modules are eager's)


def stack_module_state(models: Any) -> tuple[dict, dict]:
    """``torch.func.stack_module_state``: the parameters and buffers of ``models`` (of one
    class, all in training or all in eval mode) stacked along a new first dimension:
    ``(params, buffers)``, two dicts by name. Stacked parameters are new leaves that
    require grad where the models' do."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    if len({type(m) for m in models}) != 1:
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stacked_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stacked_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers


def _stacked_leaf(tensors, name):
    grads = [t.requires_grad for t in tensors]
    if any(grads) and not all(grads):
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    with no_grad():
        out = FUNCTIONS["stack"]([t.detach() for t in tensors])
    if all(grads):
        out.requires_grad_()
    return out


# -- functionalize, replace_all_batch_norm_modules_, debug_unwrap ------------------------------
_REMOVE = ("functionalize(f, remove='mutations'): received invalid argument for remove={}."
           " Valid options are:\n"
           "     remove='mutations': all inplace and out= operators will be removed from the "
           "program, and replaced with their out-of-place equivalents.\n"
           "     remove='mutations_and_views': In addition to the above, all aliasing operators "
           "{{view}} will be replaced with their non-aliasing counterparts, {{view}}_copy.\n")


def _storage(t):
    """The NumPy array at the root of tensor ``t``'s value (its storage), or None."""
    a = t._data
    return storage_root(a) if type(a) is np.ndarray else None


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    """``torch.func.functionalize``: ``func`` with its mutations (``remove=
    'mutations_and_views'``: and views) removed, the same results. tracegrad's transforms
    already trace functions functionally, so ``func`` runs as it is, with torch's observable
    behaviour: inputs it changes in place are changed, and a result that shares storage
    with such an input comes back as a copy of its own (torch's unwrapped result), while
    one aliasing an input left unchanged is that input (or, with ``remove='mutations'``,
    its view; ``'mutations_and_views'`` gives a copy instead), as in torch. Works under
    ``grad``/``vmap`` and around them."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(_REMOVE.format(remove))

    views = remove == "mutations"

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        inputs = [t for t in flatten((args, kwargs))[0] if isinstance(t, Tensor)]
        versions = [t._version for t in inputs]
        out = func(*args, **kwargs)
        changed = [t._version != v for t, v in zip(inputs, versions)]
        if views and not any(changed):
            return out

        def copied(x):
            # torch's unwrapped result: its own storage when it aliases an input that was
            # changed, or (views removed too) any input it is not itself
            if not isinstance(x, Tensor) or _storage(x) is None:
                return False
            for t, c in zip(inputs, changed):
                if _storage(t) is _storage(x) and (c or not views and x is not t):
                    return True
            return False
        leaves, tree = flatten(out)
        return unflatten(tree, [x.clone() if copied(x) else x for x in leaves])
    return wrapped


def replace_all_batch_norm_modules_(root: Any) -> Any:
    """``torch.func.replace_all_batch_norm_modules_``: every BatchNorm module of ``root``
    (``root`` included) that tracks running statistics stops doing so (``running_mean``,
    ``running_var`` and ``num_batches_tracked`` set to None, ``track_running_stats`` to
    False), so that it normalises with the batch's statistics in training and in eval
    mode; ``root`` is changed in place and returned. InstanceNorm modules are left alone,
    as torch's (they are not its ``_BatchNorm``)."""
    _without_running_stats(root)
    for module in root.modules():
        _without_running_stats(module)
    return root


def _without_running_stats(module):
    from ..eager.nn.normalization import _BatchNorm, _InstanceNorm
    if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm) \
            and module.track_running_stats:
        module.running_mean = None
        module.running_var = None
        module.num_batches_tracked = None
        module.track_running_stats = False


def debug_unwrap(tensor: Tensor, *, recurse: bool = True) -> Tensor:
    """``torch.func.debug_unwrap``: ``tensor`` without a transform's wrapping, for
    debugging. A tensor outside any transform is returned as it is. Inside ``grad``,
    ``jvp``, ``jacrev``..., it is the traced value as a plain tensor (torch's unwrapped
    tensor: the values, not requiring grad); under ``vmap``, which traces one example, it
    is the example's traced value detached (torch's has the batch dimension); ``recurse``
    changes nothing (tracegrad's transforms wrap nothing)."""
    if not isinstance(tensor, Tensor):
        raise TypeError("is_functorch_wrapped_tensor(): incompatible function arguments. The "
                        "following argument types are supported:\n    1. (arg0: torch.Tensor)"
                        f" -> bool\n\nInvoked with: {tensor!r}")
    tracer = tensor._tracer
    if tracer is None or isinstance(tracer, EagerTracer):
        return tensor
    from ..tracer.core import BATCHING
    if BATCHING.get() or tensor._data is None:
        return tensor.detach()      # vmap traces one example: stay its traced value
    return Tensor._plain(np.array(tensor._data, copy=True))


# -- rearrange ----------------------------------------------------------------------------------
_ELLIPSIS = "\u2026"    # one character for "...", as torch's (and einops') parser


class _DimensionBindError(Exception):
    """``functorch.dim.DimensionBindError``: the sizes of a pattern's axes do not fit."""


_DimensionBindError.__name__ = _DimensionBindError.__qualname__ = "DimensionBindError"


class _Anonymous:
    """An axis given by a number in a pattern (only 1 is allowed in ``rearrange``)."""

    def __init__(self, value):
        self.value = int(value)
        if self.value < 1:
            raise ValueError(f"Anonymous axis should have positive length, not {self.value}")


def _axis_name_reason(name):
    if not str.isidentifier(name):
        return False, "not a valid python identifier"
    if name[0] == "_" or name[-1] == "_":
        return False, "axis name should should not start or end with underscore"
    import keyword
    if keyword.iskeyword(name):
        warnings.warn(f"It is discouraged to use axes names that are keywords: {name}",
                      RuntimeWarning, stacklevel=_user_stacklevel())
    if name == "axis":
        warnings.warn("It is discouraged to use 'axis' as an axis name and will raise an error "
                      "in future", FutureWarning, stacklevel=_user_stacklevel())
    return True, ""


class _Side:
    """One side of an einops pattern, parsed as torch's ``ParsedExpression`` parses it:
    ``composition`` holds a list of names per axis (empty for an axis ``1`` or ``()``) or
    the ellipsis."""

    def __init__(self, expression):
        self.has_ellipsis, self.parenthesized, self.non_unitary = False, None, False
        self.identifiers, self.composition = set(), []
        if "." in expression:
            if "..." not in expression:
                raise ValueError("Expression may contain dots only inside ellipsis (...)")
            if expression.count("...") != 1 or expression.count(".") != 3:
                raise ValueError("Expression may contain dots only inside ellipsis (...); only "
                                 "one ellipsis for tensor ")
            expression = expression.replace("...", _ELLIPSIS)
            self.has_ellipsis = True
        group, name = None, None
        for char in expression + " ":
            if char in "() ":
                if name is not None:
                    self._add(name, group)
                name = None
                if char == "(":
                    if group is not None:
                        raise ValueError("Axis composition is one-level (brackets inside "
                                         "brackets not allowed)")
                    group = []
                elif char == ")":
                    if group is None:
                        raise ValueError("Brackets are not balanced")
                    self.composition.append(group)
                    group = None
            elif str.isalnum(char) or char in ("_", _ELLIPSIS):
                name = char if name is None else name + char
            else:
                raise ValueError(f"Unknown character '{char}'")
        if group is not None:
            raise ValueError(f"Imbalanced parentheses in expression: '{expression}'")

    def _add(self, x, group):
        if x in self.identifiers:
            raise ValueError(f"Indexing expression contains duplicate dimension '{x}'")
        if x == _ELLIPSIS:
            self.identifiers.add(_ELLIPSIS)
            (self.composition if group is None else group).append(_ELLIPSIS)
            self.parenthesized = group is not None
            return
        number = str.isdecimal(x)
        if number and int(x) == 1:
            if group is None:
                self.composition.append([])
            return
        ok, reason = _axis_name_reason(x)
        if not (number or ok):
            raise ValueError(f"Invalid axis identifier: {x}\n{reason}")
        axis = _Anonymous(x) if number else x
        self.identifiers.add(axis)
        self.non_unitary |= number
        if group is None:
            self.composition.append([axis])
        else:
            group.append(axis)


def _rearrange_plan(ndim, pattern, axes_lengths):
    """torch's checks of ``pattern`` for a tensor of ``ndim`` dims, and what it does: the
    left side's groups (each a list of axis numbers, or an int: an ellipsis dim), the
    axis numbers of the right side's groups, the anonymous axes (summed, as torch does),
    the number of axes, and each given length by axis number."""
    try:
        left_str, right_str = pattern.split("->")
    except ValueError:
        raise ValueError("Pattern must contain a single '->' separator") from None
    if _ELLIPSIS in axes_lengths:
        raise ValueError(f"'{_ELLIPSIS}' is not an allowed axis identifier")
    left, right = _Side(left_str), _Side(right_str)
    if not left.has_ellipsis and right.has_ellipsis:
        raise ValueError(f"Ellipsis found in right side, but not left side of a pattern {pattern}")
    if left.has_ellipsis and left.parenthesized:
        raise ValueError(f"Ellipsis is parenthesis in the left side is not allowed: {pattern}")
    for length in axes_lengths.values():
        if type(length) is not int:
            raise TypeError(f"rearrange axis lengths must be integers, got: {type(length)}")
    if left.non_unitary or right.non_unitary:
        raise ValueError("rearrange only supports unnamed axes of size 1")
    difference = left.identifiers ^ right.identifiers
    if difference:
        raise ValueError("Identifiers only on one side of rearrange expression (should be on "
                         f"both): {difference}")
    unmatched = axes_lengths.keys() - left.identifiers
    if unmatched:
        raise ValueError(f"Identifiers not found in rearrange expression: {unmatched}")
    n_anon = sum(not g for g in left.composition)
    if left.has_ellipsis:
        n_ellipsis = ndim - (len(left.composition) - 1)
        if (pattern_ndim := n_anon + len(left.identifiers) - 1) > ndim:
            raise ValueError(f"Number of dimensions in pattern ({pattern_ndim}) must be less "
                             f"than or equal to the number of dimensions in the tensor ({ndim})")
    else:
        n_ellipsis = 0
        if (pattern_ndim := len(left.composition)) != ndim:
            raise ValueError(f"Number of dimensions in pattern ({pattern_ndim}) must be equal to "
                             f"the number of dimensions in the tensor ({ndim})")
    axes, anon, groups, k = {}, [], [], 0
    for g in left.composition:
        if g == _ELLIPSIS:
            axes[_ELLIPSIS] = list(range(k, k + n_ellipsis))
            groups.extend(range(k, k + n_ellipsis))
            k += n_ellipsis
            continue
        if not g:
            anon.append(k)
            groups.append([k])
            k += 1
            continue
        groups.append(list(range(k, k + len(g))))
        for name in g:
            axes[name] = [k]
            k += 1
    right_groups = []
    for g in right.composition:
        if g == _ELLIPSIS:
            right_groups.extend([a] for a in axes[_ELLIPSIS])
        else:
            right_groups.append([a for name in g for a in axes[name]])
    lengths = {axes[name][0]: n for name, n in axes_lengths.items()}
    return groups, right_groups, anon, k, lengths


def _bind(size, dims, lengths, sizes):
    """functorch.dim's binding of a dimension pack ``dims`` (axis numbers) to a tensor dim
    of ``size``: at most one size unknown, inferred; its errors."""
    prod = 1
    for i, d in enumerate(dims):
        if d not in lengths:
            for e in dims[i + 1:]:
                if e not in lengths:
                    raise _DimensionBindError(f"cannot infer the sizes of two dimensions at "
                                              f"once d{d} and d{e}")
                prod *= lengths[e]
            if size % prod != 0:
                tup = tuple(lengths.get(e, "?") for e in dims)
                raise _DimensionBindError("inferred dimension does not evenly fit into larger "
                                          f"dimension: {size} vs {tup}")
            lengths[d] = size // prod
            prod = size
            break
        prod *= lengths[d]
    if prod != size:
        names = ", ".join(f"d{d}" for d in dims) + ("," if len(dims) == 1 else "")
        raise _DimensionBindError(f"Dimension sizes to do not match ({size} != {prod}) when "
                                  f"matching dimension pack ({names})")
    sizes.extend(lengths[d] for d in dims)


def rearrange(tensor: Any, pattern: str, **axes_lengths: int) -> Tensor:
    """``torch.func.rearrange``: torch's own implementation of ``einops.rearrange`` (it
    needs no einops): ``tensor`` (a sequence of tensors is stacked first) with its axes
    split, permuted and merged as ``pattern`` says (``"b (h w) c -> b c h w"``, ``h=4``),
    with torch's checks and messages (``DimensionBindError`` when the sizes do not fit). An
    axis ``1`` (or ``()``) on the left is summed, as torch's implementation does (a
    squeeze when its size is 1; integer tensors then become int64)."""
    if not isinstance(tensor, Tensor):
        tensor = FUNCTIONS["stack"](tensor)
    groups, right_groups, anon, n_axes, lengths = _rearrange_plan(tensor.dim(), pattern,
                                                                  axes_lengths)
    if n_axes == 0:
        return tensor
    sizes = []
    for dim, g in enumerate(groups):
        if isinstance(g, int):
            sizes.append(int(tensor.shape[dim]))
        else:
            _bind(int(tensor.shape[dim]), g, lengths, sizes)
    order = [a for g in right_groups for a in g]
    x = tensor.reshape(tuple(sizes)).permute(tuple(order + anon))
    if anon:
        x = x.sum(tuple(range(len(order), n_axes)))
    shape = tuple(math.prod(sizes[a] for a in g) for g in right_groups)
    return x.reshape(shape)
