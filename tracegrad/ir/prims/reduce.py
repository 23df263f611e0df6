"""Reductions and scans. ``axis`` params are normalised tuples of ints."""
import functools
import math

import numpy as np

from ..registry import apply
from ..registry import register as _register
from ..schema import ARG, AXIS, REDUCE, Spec  # the loader's parameter kinds
from . import batching, jax_numpy
from .util import per_input_element

# Sums, products, cumulative sums and choosers (max/min select an element, by NumPy's
# lexicographic order for complex) are holomorphic or selections: their rules hold for
# complex values unchanged. Every reduction returns a new array, costs a FLOP per operand
# element, and has its integer operands accumulated in NumPy's dtype by the JAX lowering.
register = functools.partial(_register, cost=per_input_element)


def _reduced_shape(shape, axis, keepdims):
    if keepdims:
        return tuple(1 if i in axis else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axis)


def _reduce_rule(impl):
    def abstract(x, axis, keepdims):
        dtype = impl(np.ones((1,) * x.ndim, x.dtype), axis=axis, keepdims=keepdims).dtype
        return _reduced_shape(x.shape, axis, keepdims), dtype
    return abstract


def _keep(g, axis, keepdims):
    """``g`` with the reduced axes put back as size-1 axes."""
    return g if keepdims or not axis else np.expand_dims(g, axis)


def _jax_reduce(name):
    def lower(x, axis, keepdims):
        import jax.numpy as jnp
        return getattr(jnp, name)(x, axis=axis, keepdims=keepdims)
    return lower


# -- sum --------------------------------------------------------------------------
def _sum_impl(x, axis, keepdims):
    return np.sum(x, axis=axis, keepdims=keepdims)


register(
    "sum", _sum_impl, abstract=_reduce_rule(_sum_impl),
    vjp=lambda g, out, x, axis, keepdims: (np.broadcast_to(_keep(g, axis, keepdims), x.shape),),
    jvp=lambda t, out, x, axis, keepdims: np.sum(t[0], axis=axis, keepdims=keepdims),
    jax=jax_numpy.sum_, family="reduce",
    batch=batching.reduction("sum"), reducer=np.add, zeros="first",
    schema=REDUCE,
)


# -- max / min: the gradient is shared equally between tied maxima (as in JAX) --
def _chooser_weights(out, x, axis, keepdims):
    hit = (x == _keep(out, axis, keepdims)).astype(x.dtype)    # float32 stays float32
    return hit / np.sum(hit, axis=axis, keepdims=True)


def _register_chooser(name, np_fn, reducer):
    def impl(x, axis, keepdims):
        return np_fn(x, axis=axis, keepdims=keepdims)

    register(
        name, impl, abstract=_reduce_rule(impl),
        vjp=lambda g, out, x, axis, keepdims: (
            _keep(g, axis, keepdims) * _chooser_weights(out, x, axis, keepdims),),
        jvp=lambda t, out, x, axis, keepdims: np.sum(
            t[0] * _chooser_weights(out, x, axis, keepdims), axis=axis, keepdims=keepdims),
        jax=_jax_reduce(name), family="reduce",
        batch=batching.reduction(name), reducer=reducer,
        torch_name=name.capitalize() + "Backward1",   # PyTorch's max() of a whole tensor
        schema=REDUCE,
    )


_register_chooser("max", np.max, np.maximum)
_register_chooser("min", np.min, np.minimum)


# -- prod: the gradient is the product of the *other* elements ------------------------------
def _prod_impl(x, axis, keepdims):
    return np.prod(x, axis=axis, keepdims=keepdims)


def _prod_others(out, x, axis, keepdims):
    """For each element, the product of the other elements of its slice.

    Built from products only, the way JAX does it: ``out / x`` is 0/0 at a zero,
    and masking the zeros out gives the right first derivative but a wrong
    second one (the masked branch is a constant). A pairwise product tree up
    and down the reduced axes is exact everywhere and differentiable again.
    """
    rest = tuple(i for i in range(x.ndim) if i not in axis)
    perm = rest + tuple(axis)
    batch = tuple(x.shape[i] for i in rest)
    n = math.prod(x.shape[i] for i in axis)
    level = np.reshape(np.transpose(x, perm), batch + (n,))
    width = 1 << max(n - 1, 0).bit_length()  # the next power of two, padded with ones
    if width != n:
        level = np.pad(level, [(0, 0)] * len(batch) + [(0, width - n)], constant_values=1.0)
    levels = []
    while level.shape[-1] > 1:  # up: products of pairs, of pairs of pairs, ...
        levels.append(level)
        level = level[..., 0::2] * level[..., 1::2]
    others = np.ones_like(level)
    for below in reversed(levels):  # down: each child gets its parent's others times its sibling
        pair = np.stack([others * below[..., 1::2], others * below[..., 0::2]], axis=-1)
        others = np.reshape(pair, batch + (below.shape[-1],))
    others = np.reshape(others[..., :n], tuple(x.shape[i] for i in perm))
    return np.transpose(others, tuple(np.argsort(perm).tolist()))


register(
    "prod", _prod_impl, abstract=_reduce_rule(_prod_impl),
    vjp=lambda g, out, x, axis, keepdims: (
        _keep(g, axis, keepdims) * _prod_others(out, x, axis, keepdims),),
    jvp=lambda t, out, x, axis, keepdims: np.sum(
        t[0] * _prod_others(out, x, axis, keepdims), axis=axis, keepdims=keepdims),
    jax=_jax_reduce("prod"), family="reduce",
    batch=batching.reduction("prod"), reducer=np.multiply,
    schema=REDUCE,
)


# -- argmax / argmin: integer results, no gradient ----------------------------------
def _register_arg(name, np_fn):
    def impl(x, axis, keepdims):
        return np.asarray(np_fn(x, axis=axis, keepdims=keepdims))

    def abstract(x, axis, keepdims):
        axes = tuple(range(x.ndim)) if axis is None else (axis,)
        if axis is None and keepdims:
            return (1,) * x.ndim, np.int64
        return _reduced_shape(x.shape, axes, keepdims), np.int64

    register(name, impl, abstract=abstract, jax=jax_numpy.arg_extreme(name), family="reduce",
             batch=batching.arg_reduction(name),
             torch_name=name.capitalize() + "Backward0", schema=ARG)


_register_arg("argmax", np.argmax)
_register_arg("argmin", np.argmin)


# -- cumsum -----------------------------------------------------------------------
def _cumsum_impl(x, axis):
    return np.cumsum(x, axis=axis)


def _reverse_cumsum(g, axis):
    return np.flip(np.cumsum(np.flip(g, axis), axis=axis), axis)


def _cumsum_batch(size, args, batched, out_shape, axis):
    (x,) = args
    return apply("cumsum", x, axis=batching.norm(axis, len(batching.shape(x)) - 1) + 1)


register(
    "cumsum", _cumsum_impl,
    abstract=lambda x, axis: (x.shape, _cumsum_impl(np.ones((1,) * x.ndim, x.dtype), axis).dtype),
    vjp=lambda g, out, x, axis: (_reverse_cumsum(g, axis),),
    jvp=lambda t, out, x, axis: np.cumsum(t[0], axis=axis),
    jax=jax_numpy.cumsum, family="reduce",
    batch=_cumsum_batch, zeros="first",
    schema=Spec({"axis": AXIS}, 1),
)
