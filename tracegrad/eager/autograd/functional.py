"""``tg.autograd.functional.jacobian`` / ``hessian`` with PyTorch's shapes and nesting."""
from __future__ import annotations

import numpy as np

from .. import grad_mode
from ..engine import grad as autograd_grad
from ..tensor import Tensor


def _tuple(x):
    return (tuple(x), True) if isinstance(x, (tuple, list)) else ((x,), False)


def _fresh_inputs(inputs):
    return tuple(x.detach().requires_grad_() if x.is_floating_point() else x.detach()
                 for x in inputs)


def _jacobian_blocks(outputs, inputs, create_graph):
    blocks = []
    for o in outputs:
        row = []
        cols = [np.zeros((o.numel(),) + tuple(x.shape), x.dtype) for x in inputs]
        grads_rows = [[] for _ in inputs]
        if o.requires_grad:
            for r in range(o.numel()):
                seed = np.zeros(o.numel(), o.dtype)
                seed[r] = 1
                grads = autograd_grad(o, list(inputs), grad_outputs=Tensor._plain(
                    seed.reshape(tuple(o.shape))), retain_graph=True, allow_unused=True,
                    create_graph=create_graph)
                for k, g in enumerate(grads):
                    if create_graph:
                        grads_rows[k].append(g if g is not None else Tensor._plain(
                            np.zeros(tuple(inputs[k].shape), inputs[k].dtype)))
                    elif g is not None:
                        cols[k][r] = g._data
        for k, x in enumerate(inputs):
            shape = tuple(o.shape) + tuple(x.shape)
            if create_graph and grads_rows[k]:
                from ..ops import FUNCTIONS
                row.append(FUNCTIONS["stack"](grads_rows[k]).reshape(shape))
            else:
                row.append(Tensor._plain(cols[k].reshape(shape)))
        blocks.append(row)
    return blocks


def _shape_result(blocks, out_is_tuple, in_is_tuple):
    if not out_is_tuple and not in_is_tuple:
        return blocks[0][0]
    if not out_is_tuple:
        return tuple(blocks[0])
    if not in_is_tuple:
        return tuple(row[0] for row in blocks)
    return tuple(tuple(row) for row in blocks)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output of shape O and input of shape I, a
    tensor of shape O + I; tuples of inputs or outputs give (nested) tuples."""
    inputs, in_is_tuple = _tuple(inputs)
    with grad_mode.enable_grad():
        xs = _fresh_inputs(inputs) if not create_graph else tuple(
            x if x.requires_grad else x.detach().requires_grad_() for x in inputs)
        outputs, out_is_tuple = _tuple(func(*xs))
        for o in outputs:
            if not isinstance(o, Tensor):
                raise TypeError(f"The outputs of the user-provided function given to jacobian "
                                f"must be Tensors, got {type(o).__name__}")
        blocks = _jacobian_blocks(outputs, xs, create_graph)
    return _shape_result(blocks, out_is_tuple, in_is_tuple)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of scalar ``func`` at ``inputs``: shape I + I for one input, a nested
    tuple of blocks for a tuple of inputs."""
    inputs, in_is_tuple = _tuple(inputs)

    def gradient(*xs):
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        grads = autograd_grad(out.reshape(()), list(xs), create_graph=True, allow_unused=True)
        return tuple(g if g is not None else Tensor._plain(np.zeros(tuple(x.shape), x.dtype))
                     for g, x in zip(grads, xs))

    with grad_mode.enable_grad():
        xs = _fresh_inputs(inputs)
        grads = gradient(*xs)
        blocks = _jacobian_blocks(grads, xs, create_graph)
    return _shape_result(blocks, in_is_tuple, in_is_tuple)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``."""
    inputs, in_is_tuple = _tuple(inputs)
    with grad_mode.enable_grad():
        xs = _fresh_inputs(inputs)
        out = func(*xs)
        outs, out_is_tuple = _tuple(out)
        vs = _tuple(v)[0] if v is not None else (None,) * len(outs)
        grads = autograd_grad(list(outs), list(xs), grad_outputs=list(vs), allow_unused=True,
                              create_graph=create_graph)
    grads = tuple(g if g is not None else Tensor._plain(np.zeros(tuple(x.shape), x.dtype))
                  for g, x in zip(grads, xs))
    outs = tuple(o.detach() for o in outs)
    return (outs if out_is_tuple else outs[0]), (grads if in_is_tuple else grads[0])
