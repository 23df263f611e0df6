"""Batching rules shared by several primitives, and the helpers rules are written with.

A rule (the ``batch`` field of a registry entry, see ``registry``) is called as
``rule(size, args, batched, out_shape, **params)``: ``args`` are the operands in the
batched graph (batched ones carry the batch axis in front), ``batched`` flags which
do, ``out_shape`` is the node's unbatched output shape (for a multi-output primitive,
a tuple of its outputs' shapes). It returns the batched output (batch axis in front; a
tuple for a multi-output primitive), or ``NotImplemented`` for a case it declines:
``passes.batch`` then evaluates the node row by row. Rules are NumPy code on traced
values, like the VJP rules, so the result is an ordinary graph. Rules specific to one
primitive sit next to its registration.
"""
from __future__ import annotations

import numpy as np

from ..indexspec import Arg, Slice
from ..registry import apply

FULL = Slice(None, None, None)


# -- helpers ---------------------------------------------------------------------------
def shape(x):
    # a tracer's or an array's own attribute: np.shape on a tracer goes through NumPy's
    # function protocol, a cost per call that batching pays on every node
    s = getattr(x, "shape", None)
    return tuple(np.shape(x)) if s is None else tuple(s)


def reshape(x, new_shape):
    new_shape = tuple(new_shape)
    return x if shape(x) == new_shape else apply("reshape", x, shape=new_shape)


def bcast(x, size):
    """An unbatched operand given the batch axis (every row the same)."""
    return apply("broadcast_to", x, shape=(size,) + shape(x))


def lift_rank(x, rank):
    """A batched ``x`` (batch axis first) with size-1 axes inserted after the batch axis so
    that its unbatched part has ``rank`` axes: it then broadcasts against unbatched
    operands as the row would, with the batch axis staying in front."""
    s = shape(x)
    missing = rank - (len(s) - 1)
    return reshape(x, s[:1] + (1,) * missing + s[1:]) if missing > 0 else x


def shift_axes(axis):
    """Axis numbers of a row, as axis numbers of the batched operand."""
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        return tuple(int(a) + 1 for a in axis)
    return int(axis) + 1


def norm(axis, ndim):
    return int(axis) % ndim if ndim else int(axis)


def advanced(item):
    return isinstance(item, (Arg, np.ndarray))


def index_ok(index):
    """True when prepending a full slice to ``index`` keeps the batch axis in front: no
    advanced (array) index, or all advanced entries side by side (NumPy then keeps their
    result axes in place rather than moving them to the front)."""
    items = list(index)
    if not any(advanced(i) for i in items):
        return True
    # with an array present, integers are advanced indices too
    adv = [k for k, i in enumerate(items)
           if advanced(i) or (isinstance(i, (int, np.integer)) and not isinstance(i, bool))]
    return adv == list(range(adv[0], adv[-1] + 1))


# -- rules shared by a family ----------------------------------------------------------------
def elementwise(name):
    """Broadcasting elementwise primitives: batched operands get the row's rank."""
    def rule(size, args, batched, out_shape, **params):
        rank = len(out_shape)
        ops = [lift_rank(a, rank) if b else a for a, b in zip(args, batched)]
        return apply(name, *ops, **params)
    return rule


def reduction(name):
    def rule(size, args, batched, out_shape, axis, keepdims):
        (x,) = args
        nd = len(shape(x)) - 1
        axes = tuple(norm(a, nd) + 1 for a in (range(nd) if axis is None else axis))
        return apply(name, x, axis=axes, keepdims=keepdims)
    return rule


def arg_reduction(name):
    def rule(size, args, batched, out_shape, axis, keepdims):
        (x,) = args
        if axis is None:
            flat = reshape(x, (size, int(np.prod(shape(x)[1:], dtype=np.int64))))
            r = apply(name, flat, axis=1, keepdims=False)
            return reshape(r, (size,) + tuple(out_shape))
        return apply(name, x, axis=norm(axis, len(shape(x)) - 1) + 1, keepdims=keepdims)
    return rule


def stacked(name):
    """Primitives of one operand that already act on a stack of matrices."""
    def rule(size, args, batched, out_shape):
        return apply(name, args[0])
    return rule


def fold_into_n(name):
    """conv2d / conv_transpose2d / pools: a batched image folds into N (weights unbatched)."""
    def rule(size, args, batched, out_shape, **params):
        if any(batched[1:]):
            return NotImplemented
        x = args[0]
        s = shape(x)
        y = apply(name, reshape(x, (size * s[1],) + s[2:]), *args[1:], **params)
        return reshape(y, (size,) + tuple(out_shape))
    return rule
