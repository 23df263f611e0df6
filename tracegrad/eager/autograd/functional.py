"""``tg.autograd.functional``: ``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``hvp`` and
``vhp`` with PyTorch's signatures, nesting, flags and errors.

Every function is built on ``tg.autograd.grad`` the way PyTorch builds its own on
``torch.autograd.grad`` (``jvp`` and ``hvp`` by the double-backward trick), so which
gradients are missing (zeros, or an error with ``strict=True``) and which results stay
connected to the inputs (``create_graph=True``) follow PyTorch's rules. A gradient
computed with ``create_graph=True`` that reaches no tensor requiring grad is detached
here, as PyTorch's would not require grad (``2 * x``'s gradient is a constant).

``vectorize=True`` and ``strategy="forward-mode"`` give the same numbers, computed one
row at a time in reverse mode; forward mode's results take the outputs' dtypes, as
PyTorch's do.
"""
from __future__ import annotations

import numpy as np

from .. import grad_mode
from ..engine import grad as _autograd_grad
from ..tape import STOP_GRADIENT, AccumulateGrad, walk
from ..tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# -- PyTorch's argument handling -------------------------------------------------------------
def _as_tuple(value, what, fn):
    """(whether ``value`` was a tuple, ``value`` as a tuple of tensors)."""
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, el in enumerate(items):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if is_tuple else f"given {what}"
            raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of "
                            f"Tensors but the {where} has type {type(el)}.")
    return is_tuple, items


def _unpack(res, keep):
    """Undo ``_as_tuple``: ``keep`` a flag, or (outer, inner) flags of a nested tuple."""
    if isinstance(keep, tuple):
        outer, inner = keep
        if not inner:
            res = tuple(row[0] for row in res)
        return res if outer else res[0]
    return res if keep else res[0]


def _prepare(tensors, create_graph, need_graph):
    """New tensor objects for the function's arguments (a tensor the user's function
    captures is then told apart from its argument): a differentiable view when the result
    must stay connected to it, else a detached leaf."""
    out = []
    for t in tensors:
        if create_graph and t.requires_grad:
            out.append(t.view_as(t))
        else:
            d = t.detach()
            out.append(d.requires_grad_(True) if need_graph else d)
    return tuple(out)


def _finish(res, create_graph):
    if not create_graph:
        return tuple(_finish(r, False) if isinstance(r, tuple) else r.detach() for r in res)
    return res


def _check_v(v, refs, refs_tuple):
    if len(v) != len(refs):
        if refs_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(refs)} but "
                               f"got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, refs)):
        if tuple(a.shape) != tuple(b.shape):
            pre = f"Entry {i} in " if refs_tuple else ""
            raise RuntimeError(f"{pre}v has invalid size: should be {b.size()} but got "
                               f"{a.size()}.")


def _prepare_v(v, refs, refs_tuple, create_graph, fn, none_msg):
    if v is None:
        if len(refs) != 1 or refs[0].numel() != 1:
            raise RuntimeError(none_msg)
        return None
    v = _as_tuple(v, "v", fn)[1]
    v = _prepare(v, create_graph, False)
    _check_v(v, refs, refs_tuple)
    return v


_NONE_OUT = ("The vector v can only be None if the user-provided function returns a single "
             "Tensor with a single element.")
_NONE_IN = ("The vector v can only be None if the input to the user-provided function is a "
            "single Tensor with a single element.")


def _check_requires_grad(tensors, kind, strict):
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        if t.requires_grad:
            continue
        if kind == "hessian":
            raise RuntimeError(
                f"The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs.")
        if kind == "jacobian":
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided "
                f"function with respect to input {i} is independent of the input. This is not "
                "allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example).")
        if kind == "grad_inputs":
            raise RuntimeError(
                f"The gradient with respect to input {i} is independent of the inputs of the "
                "user-provided function. This is not allowed in strict mode.")
        raise RuntimeError(
            f"Output {i} of the user-provided function does not require gradients. The "
            "outputs must be computed in a differentiable manner from the input when running "
            "in strict mode.")


# -- gradients ----------------------------------------------------------------------------
def _connected(t):
    """Whether ``t`` was computed from a tensor that requires grad: what PyTorch's
    ``requires_grad`` says of a gradient made with ``create_graph=True``."""
    if not t.requires_grad:
        return False
    if t._tracer is None:
        return True
    h = t._tracer._handle
    w = walk([h])
    for n in w.reached([h._id], ends=STOP_GRADIENT):
        leaf = w.nodes[n]
        if type(leaf) is AccumulateGrad:
            tensor = leaf._tensor()
            if tensor is None or tensor.requires_grad:
                return True
    return False


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``autograd.grad`` over the outputs that require grad; None for the inputs no
    output reaches (every one when no output requires grad)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    outs, gos = [], []
    for o, g in zip(outputs, grad_outputs):
        if o is not None and o.requires_grad:
            outs.append(o)
            gos.append(g)
    if not outs:
        return (None,) * len(inputs)
    grads = _autograd_grad(outs, list(inputs), gos, retain_graph=retain_graph,
                           create_graph=create_graph, allow_unused=True)
    if create_graph:
        grads = tuple(g if g is None or _connected(g) else g.detach() for g in grads)
    return grads


_STAGE_MISSING = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
            "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward "
                         "mode AD.",
}


def _zeros_for_missing(grads, refs, strict, create_graph, stage):
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_STAGE_MISSING[stage].format(i=i))
            g = _zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        res.append(g)
    return tuple(res)


def _zeros_like(t):
    return Tensor._plain(np.zeros(tuple(t.shape), t.dtype))


def _onehot(out, j):
    seed = np.zeros(out.numel(), out.dtype)
    seed[j] = 1
    return Tensor._plain(seed.reshape(tuple(out.shape)))


def _stack(rows, shape):
    from ..functions import FUNCTIONS
    if not rows:
        raise RuntimeError("stack expects a non-empty TensorList")
    return FUNCTIONS["stack"](rows).view(shape)


def _stand_ins(tensors):
    """Zeros shaped as ``tensors``, requiring grad: the cotangents of PyTorch's
    double-backward trick (the backward is linear in them: their value does not matter)."""
    return tuple(Tensor._plain(np.zeros(tuple(t.shape), t.dtype), requires_grad=True)
                 for t in tensors)


# -- the public functions --------------------------------------------------------------------
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product, shaped as the inputs."""
    with grad_mode.enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, True)
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                       "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        v = _prepare_v(v, outputs, out_tuple, create_graph, "vjp", _NONE_OUT)
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        res = _grad(outputs, inputs, v, create_graph=create_graph)
        res = _zeros_for_missing(res, inputs, strict, create_graph, "back")
    return (_unpack(_finish(outputs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), in_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)``: the Jacobian-vector product, shaped as the outputs
    (PyTorch's double-backward trick)."""
    with grad_mode.enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, True)
        v = _prepare_v(v, inputs, in_tuple, create_graph, "jvp", _NONE_IN)
        out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function",
                                       "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        dummies = _stand_ins(outputs)
        grad_inputs = _grad(outputs, inputs, dummies, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        res = _grad(grad_inputs, dummies, v, create_graph=create_graph)
        res = _zeros_for_missing(res, outputs, strict, create_graph, "back_trick")
    return (_unpack(_finish(outputs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), out_tuple))


_STRATEGY = ('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
             'function has more outputs than inputs, "forward-mode" tends to be more '
             'performant. Otherwise, prefer to use "reverse-mode".')


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for an output of shape O and an input of
    shape I, a tensor of shape O + I; tuples of inputs or outputs give (nested) tuples."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(_STRATEGY)
    if strategy == "forward-mode":
        return _jacobian_forward(func, inputs, create_graph, strict, vectorize)
    with grad_mode.enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, True)
        out_tuple, outputs = _as_tuple(func(*inputs),
                                       "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either "
                               "set `strict=False` or `vectorize=False`.")
        blocks = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            for j in range(out.numel()):
                vj = _grad((out,), inputs, (_onehot(out, j),), create_graph=create_graph,
                           retain_graph=True)
                for k, (g, x) in enumerate(zip(vj, inputs)):
                    if g is not None:
                        if strict and create_graph and not g.requires_grad:
                            raise RuntimeError(
                                "The jacobian of the user-provided function is independent "
                                f"of input {i}. This is not allowed in strict mode when "
                                "create_graph=True.")
                        rows[k].append(g)
                    else:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent "
                                f"of input {k}. This is not allowed in strict mode.")
                        rows[k].append(_zeros_like(x))
            if vectorize and out.numel() == 0:      # an empty block, not an empty stack
                blocks.append(tuple(Tensor._plain(np.zeros(tuple(out.shape) + tuple(x.shape),
                                                           x.dtype)) for x in inputs))
                continue
            blocks.append(tuple(_stack(r, tuple(out.shape) + tuple(x.shape))
                                for r, x in zip(rows, inputs)))
        if vectorize and create_graph:
            blocks = _one_tensor_per_input(blocks)
        blocks = _finish(tuple(blocks), create_graph)
    return _unpack(blocks, (out_tuple, in_tuple))


def _one_tensor_per_input(blocks):
    """PyTorch's vectorized Jacobian is one tensor per input, split into the blocks of the
    outputs: the blocks of an input are connected to the inputs if any of them is."""
    from ..functions import FUNCTIONS
    cols = []
    for col in zip(*blocks):
        if any(b.requires_grad for b in col):
            flat = FUNCTIONS["cat"]([b.reshape(-1) for b in col])
            parts, start = [], 0
            for b in col:
                parts.append(flat[start:start + b.numel()].view(tuple(b.shape)))
                start += b.numel()
            col = tuple(parts)
        cols.append(col)
    return [tuple(row) for row in zip(*cols)]


def _jacobian_forward(func, inputs, create_graph, strict, vectorize):
    if create_graph:
        raise NotImplementedError(
            "torch.autograd.functional.jacobian: `create_graph=True` and "
            '`strategy="forward-mode"` are not supported together (yet). Please either set '
            '`create_graph=False` or `strategy="reverse-mode"`.')
    if strict:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and "
            '`strategy="forward-mode"` are not supported together (yet). Please either set '
            '`strict=False` or `strategy="reverse-mode"`.')
    in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse "
                                  "Hessian isonly implemented for `vectorize=True`.")
    seen = []

    def recording(*xs):
        out = func(*xs)
        seen.append(out)
        return out

    res = jacobian(recording, inputs, vectorize=True)
    out_tuple, outputs = _as_tuple(seen[-1], "outputs", "jacobian")
    blocks = res if out_tuple else (res,)       # rows of blocks: ``inputs`` is a tuple
    # forward mode's Jacobian has the outputs' dtypes, and PyTorch's lists for tuples
    blocks = [[b if b.dtype == o.dtype else b.to(o.dtype) for b in row]
              for row, o in zip(blocks, outputs)]
    if not in_tuple:
        blocks = tuple(row[0] for row in blocks)
    return blocks if out_tuple else blocks[0]


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of scalar ``func`` at ``inputs``: shape I + I for one input, a nested
    tuple of blocks for a tuple of inputs."""
    in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or '
                             '"reverse-mode".')

    def scalar(*xs):
        out = func(*xs)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.squeeze()

    def gradient(*xs):
        if outer_jacobian_strategy == "forward-mode":
            xs = tuple(x.requires_grad_(True) for x in xs)
        jac = jacobian(scalar, xs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict,
                   vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _unpack(res, (in_tuple, in_tuple))


def _second_order_setup(func, inputs, v, create_graph, strict, fn):
    in_tuple, inputs = _as_tuple(inputs, "inputs", fn)
    inputs = _prepare(inputs, create_graph, True)
    v = _prepare_v(v, inputs, in_tuple, create_graph, fn, _NONE_IN)
    out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn)
    _check_requires_grad(outputs, "outputs", strict)
    if out_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain "
                           "a single element")
    jac = _grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return in_tuple, inputs, v, out_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)`` for scalar ``func``, shaped as the inputs."""
    with grad_mode.enable_grad():
        in_tuple, inputs, v, out_tuple, outputs, jac = _second_order_setup(
            func, inputs, v, create_graph, strict, "vhp")
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        res = _grad(jac, inputs, v, create_graph=create_graph)
        res = _zeros_for_missing(res, inputs, strict, create_graph, "double_back")
    return (_unpack(_finish(outputs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), in_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` for scalar ``func``, shaped as the inputs (PyTorch's
    double-backward trick)."""
    with grad_mode.enable_grad():
        in_tuple, inputs, v, out_tuple, outputs, jac = _second_order_setup(
            func, inputs, v, create_graph, strict, "hvp")
        dummies = _stand_ins(inputs)
        double_back = _grad(jac, inputs, dummies, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with grad_mode.set_grad_enabled(True if create_graph else grad_mode.is_grad_enabled()):
        res = _grad(double_back, dummies, v, create_graph=create_graph)
        res = _zeros_for_missing(res, inputs, strict, create_graph, "double_back_trick")
    return (_unpack(_finish(outputs, create_graph), out_tuple),
            _unpack(_finish(res, create_graph), in_tuple))
