"""Shape primitives: reshape, transpose, broadcast, concatenate, pad, indexing.

Everything else that moves data (squeeze, stack, flip, roll, tile, repeat,
split, diag, ...) is composed from these by the tracer.
"""
import functools

import numpy as np

from ..indexspec import Arg, Index, Slice
from ..registry import Aval, apply, get
from ..registry import register as _register
from ..schema import (  # the loader's parameter kinds
    AXIS,
    CHOICE,
    INDEX,
    PERMUTATION,
    SCALAR,
    SHAPE,
    WIDTHS,
    Spec,
    _getitem,
    _index_update,
    _reshape,
)
from . import batching
from .batching import FULL, bcast, index_ok, lift_rank, norm
from .util import free, unbroadcast

# Every shape primitive moves or copies elements (coefficients 0 and 1), so its rules
# hold for complex values unchanged; none computes anything (no FLOPs), none is a ufunc
# or a reduction, and the JAX lowering takes the operands' dtypes as they are.
register = functools.partial(_register, cost=free)


# -- batching rules: the batch axis stays in front -------------------------------------
def _reshape_batch(size, args, batched, out_shape, shape):
    return apply("reshape", args[0], shape=(size,) + tuple(out_shape))


def _transpose_batch(size, args, batched, out_shape, axes):
    return apply("transpose", args[0], axes=(0,) + tuple(int(a) + 1 for a in axes))


def _broadcast_to_batch(size, args, batched, out_shape, shape):
    x = lift_rank(args[0], len(shape))
    return apply("broadcast_to", x, shape=(size,) + tuple(shape))


def _concatenate_batch(size, args, batched, out_shape, axis):
    ops = [a if b else bcast(a, size) for a, b in zip(args, batched)]
    return apply("concatenate", *ops, axis=norm(axis, len(out_shape)) + 1)


def _pad_batch(size, args, batched, out_shape, widths, value):
    return apply("pad", args[0], widths=((0, 0),) + tuple(tuple(w) for w in widths),
                 value=value)


def _batched_index(size, row_ndim, index, idx, idx_batched):
    """A row's advanced ``index`` (with operands ``idx``, ``idx_batched`` flagging the
    batched ones) as an index of the batched operand (batch axis in front): an
    ``arange(size)`` index on the batch axis joins the advanced entries, each batched
    index operand gets the batch axis broadcast against it. NumPy puts the result's
    advanced axes (batch axis first) in front, where the row may keep them in place:
    returns ``(index, operands, perm)``, ``perm`` the transpose from NumPy's result to
    the batched row's layout (None when it is one already); None for a boolean index."""
    items = []
    for item in index:          # spell the Ellipsis out: axes are counted below
        if item is Ellipsis:
            used = sum(1 for i in index if i is not None and i is not Ellipsis)
            items += [FULL] * (row_ndim - used)
        else:
            items.append(item)
    shapes = []
    for item in items:
        if isinstance(item, np.ndarray):
            if item.dtype == bool:
                return None
            shapes.append(item.shape)
        elif isinstance(item, Arg):
            if np.dtype(idx[item.k].dtype) == bool:
                return None
            s = batching.shape(idx[item.k])
            shapes.append(s[1:] if idx_batched[item.k] else s)
        elif isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            shapes.append(())
    bshape = np.broadcast_shapes(*shapes)
    rank = len(bshape)
    ops = [lift_rank(a, rank) if b else a for a, b in zip(idx, idx_batched)]
    out, first, pre = [np.arange(size).reshape((size,) + (1,) * rank)], None, 0
    for k, item in enumerate(items):
        adv = isinstance(item, (np.ndarray, Arg)) or (
            isinstance(item, (int, np.integer)) and not isinstance(item, bool))
        if adv and first is None:
            first = k
        if not adv and first is None:
            pre += 1            # a slice or a None before the advanced block: one axis
        out.append(np.asarray(item) if isinstance(item, (int, np.integer)) else item)
    # the row keeps its advanced axes in place when they are side by side
    adv_at = [k for k, i in enumerate(items) if isinstance(i, (np.ndarray, Arg)) or (
        isinstance(i, (int, np.integer)) and not isinstance(i, bool))]
    in_place = adv_at == list(range(adv_at[0], adv_at[-1] + 1))
    if not in_place or pre == 0:
        return Index(out), ops, None
    # NumPy's result: (size, *bshape, *pre axes, *rest); the row's: (*pre, *bshape, *rest)
    perm = ((0,) + tuple(range(1 + rank, 1 + rank + pre)) + tuple(range(1, 1 + rank)))
    return Index(out), ops, perm


def _getitem_batch(size, args, batched, out_shape, index):
    if not any(batched[1:]) and index_ok(index):
        return apply("getitem", args[0], *args[1:], index=Index((FULL,) + tuple(index)))
    x = args[0] if batched[0] else bcast(args[0], size)
    found = _batched_index(size, len(batching.shape(x)) - 1, index, args[1:], batched[1:])
    if found is None:
        return NotImplemented
    new, ops, perm = found
    y = apply("getitem", x, *ops, index=new)
    if perm is not None:
        perm = perm + tuple(range(len(perm), len(out_shape) + 1))
        y = apply("transpose", y, axes=perm)
    return y


def _index_update_batch(size, args, batched, out_shape, index, mode):
    x, v, idx = args[0], args[1], args[2:]
    if not batched[0]:
        x = bcast(x, size)
    # the slot x[index] of one row; the update broadcasts into it from the right
    slot, _ = get("getitem").shape_dtype(
        [Aval(out_shape, np.dtype(x.dtype))] + [
            Aval(batching.shape(i)[1:] if b else batching.shape(i), np.dtype(i.dtype))
            for i, b in zip(idx, batched[2:])], {"index": index})
    if not any(batched[2:]) and index_ok(index):
        if batched[1]:
            v = lift_rank(v, len(slot))
        return apply("index_update", x, v, *idx, index=Index((FULL,) + tuple(index)),
                     mode=mode)
    found = _batched_index(size, len(out_shape), index, idx, batched[2:])
    if found is None:
        return NotImplemented
    new, ops, perm = found
    if batched[1]:
        v = apply("broadcast_to", lift_rank(v, len(slot)), shape=(size,) + tuple(slot))
    else:
        v = bcast(apply("broadcast_to", v, shape=tuple(slot)), size)
    if perm is not None:
        perm = perm + tuple(range(len(perm), len(slot) + 1))
        v = apply("transpose", v, axes=tuple(int(i) for i in np.argsort(perm)))
    return apply("index_update", x, v, *ops, index=new, mode=mode)


def _jax(fn):
    def lower(*args, **params):
        import jax.numpy as jnp
        return fn(jnp, *args, **params)
    return lower


register(
    "reshape", lambda x, shape: np.reshape(x, shape),
    abstract=lambda x, shape: (shape, x.dtype),
    vjp=lambda g, out, x, shape: (np.reshape(g, x.shape),),
    jvp=lambda t, out, x, shape: np.reshape(t[0], shape),
    jax=_jax(lambda jnp, x, shape: jnp.reshape(x, shape)), family="shape",
    batch=_reshape_batch, spelling="{0}.reshape({shape})",
    torch_name="ViewBackward0",
    schema=Spec({"shape": SHAPE}, 1, _reshape),
)
register(
    "transpose", lambda x, axes: np.transpose(x, axes),
    abstract=lambda x, axes: (tuple(x.shape[a] for a in axes), x.dtype),
    vjp=lambda g, out, x, axes: (np.transpose(g, tuple(np.argsort(axes).tolist())),),
    jvp=lambda t, out, x, axes: np.transpose(t[0], axes),
    jax=_jax(lambda jnp, x, axes: jnp.transpose(x, axes)), family="shape",
    batch=_transpose_batch, spelling="{0}.transpose({axes})",
    torch_name="PermuteBackward0",
    schema=Spec({"axes": PERMUTATION}, 1),
)


def _broadcast_abstract(x, shape):
    np.broadcast_shapes(x.shape, shape)  # raises on a bad target
    if len(shape) < x.ndim or np.broadcast_shapes(x.shape, shape) != tuple(shape):
        raise ValueError(f"cannot broadcast {x.shape} to {shape}")
    return shape, x.dtype


register(
    "broadcast_to", lambda x, shape: np.broadcast_to(x, shape),
    abstract=_broadcast_abstract,
    vjp=lambda g, out, x, shape: (unbroadcast(g, x.shape),),
    jvp=lambda t, out, x, shape: np.broadcast_to(t[0], shape),
    jax=_jax(lambda jnp, x, shape: jnp.broadcast_to(x, shape)), family="shape",
    # a free view: folding it would only make a big constant
    batch=_broadcast_to_batch, foldable=False,
    torch_name="ExpandBackward0",
    schema=Spec({"shape": SHAPE}, 1),
)


# -- concatenate ------------------------------------------------------------------
def _concat_abstract(*xs, axis):
    first = xs[0]
    for x in xs[1:]:
        if x.ndim != first.ndim or any(
                a != b for i, (a, b) in enumerate(zip(x.shape, first.shape)) if i != axis):
            raise ValueError("all the input array dimensions except for the concatenation "
                             f"axis must match exactly, got {[tuple(x.shape) for x in xs]}")
    shape = list(first.shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return tuple(shape), np.result_type(*(x.dtype for x in xs))


def _concat_vjp(g, out, *xs, axis):
    cts, start = [], 0
    for x in xs:
        stop = start + x.shape[axis]
        index = (slice(None),) * axis + (slice(start, stop),)
        cts.append(g[index])
        start = stop
    return tuple(cts)


register(
    "concatenate", lambda *xs, axis: np.concatenate(xs, axis=axis),
    abstract=_concat_abstract, vjp=_concat_vjp,
    jvp=lambda t, out, *xs, axis: np.concatenate(
        [np.zeros_like(x) if tx is None else tx for tx, x in zip(t, xs)], axis=axis),
    jax=_jax(lambda jnp, *xs, axis: jnp.concatenate(xs, axis=axis)), family="shape",
    batch=_concatenate_batch, aliasing="fresh", zeros="all",
    torch_name="CatBackward0",
    schema=Spec({"axis": AXIS}, minimum=1),
)


# -- pad with a constant ----------------------------------------------------------
register(
    "pad", lambda x, widths, value: np.pad(x, widths, mode="constant", constant_values=value),
    abstract=lambda x, widths, value: (
        tuple(n + lo + hi for n, (lo, hi) in zip(x.shape, widths)), x.dtype),
    vjp=lambda g, out, x, widths, value: (
        g[tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape, widths))],),
    jvp=lambda t, out, x, widths, value: np.pad(t[0], widths, mode="constant"),
    jax=_jax(lambda jnp, x, widths, value: jnp.pad(x, widths, constant_values=value)),
    family="shape",
    batch=_pad_batch, aliasing="fresh", zeros=None,
    schema=Spec({"widths": WIDTHS, "value": SCALAR}, 1),
)


# -- indexing ---------------------------------------------------------------------
def _getitem_impl(x, *idx, index):
    return x[index.to_numpy(idx)]


def _permuting(index, shape):
    """``(axis, inverse)`` when ``index`` takes every element once, in another order,
    along one axis (full slices and one constant 1-d integer array that is a permutation
    of that axis: ``np.roll``, ``np.flip`` by positions); else None."""
    if len(index) > len(shape):
        return None
    axis = None
    for i, item in enumerate(index):
        if isinstance(item, Slice) and item == (None, None, None):
            continue
        if axis is None and isinstance(item, np.ndarray) and item.ndim == 1 \
                and item.dtype.kind in "iu" and item.size == shape[i]:
            axis = i
            continue
        return None
    if axis is None:
        return None
    n = shape[axis]
    positions = index[axis].astype(np.intp) % n if n else index[axis].astype(np.intp)
    inverse = np.full(n, -1, dtype=np.intp)
    inverse[positions] = np.arange(n, dtype=np.intp)
    if (inverse < 0).any():
        return None                 # some position repeats: not a permutation
    return axis, inverse


def _getitem_vjp(g, out, x, *idx, index):
    permuted = None if idx else _permuting(index, tuple(x.shape))
    if permuted is not None:
        # each element of x went to exactly one place: its cotangent is gathered back
        axis, inverse = permuted
        back = Index(tuple(inverse if i == axis else item for i, item in enumerate(index)))
        return (apply("getitem", g, index=back),)
    zeros = np.zeros_like(x)
    return (apply("index_update", zeros, g, *idx, index=index, mode="add"),) + (None,) * len(idx)


def check_bounds(shape, index, operands):
    """JAX clamps an integer index that is out of bounds (and drops such an update);
    NumPy raises IndexError. Every integer entry of ``index`` is checked against the
    axis it indexes, traced ones at run time (``runtime_check``)."""
    import jax.numpy as jnp

    from ..jax_checks import runtime_check

    taken = sum(1 for item in index if item is not None and item is not Ellipsis)
    axis = 0
    for item in index:
        if item is Ellipsis:
            axis += len(shape) - taken
            continue
        if item is None:
            continue
        if isinstance(item, (Arg, np.ndarray)) or (isinstance(item, int)
                                                   and not isinstance(item, Slice)):
            n = shape[axis]
            v = jnp.asarray(operands[item.k] if isinstance(item, Arg) else item)
            if v.dtype == np.uint64:
                bad = v >= np.uint64(n)
            else:   # compared in int64: an int8 index may address an axis of 300
                v = v.astype(np.int64)
                bad = (v < -n) | (v >= n)
            first = v.ravel()[jnp.argmax(bad.ravel())] if v.size else jnp.zeros((), v.dtype)
            runtime_check(~jnp.any(bad), "IndexError",
                          f"index {{}} is out of bounds for axis {axis} with size {n}", first)
        axis += 1


def _jax_index(index, idx):
    """``index`` for jax.numpy, integer arrays widened to int64: JAX wraps a negative
    int8 index by adding the axis length in int8, which overflows past 127."""
    import jax.numpy as jnp
    return tuple(jnp.asarray(item).astype(np.int64)
                 if hasattr(item, "dtype") and np.dtype(item.dtype).kind in "iu"
                 and np.dtype(item.dtype).itemsize < 8 else item
                 for item in index.to_numpy(idx))


def _getitem_jax(x, *idx, index):
    check_bounds(x.shape, index, idx)
    return x[_jax_index(index, idx)]


def _indexes_by_integers(node):
    """The JAX lowering checks bounds (NumPy's IndexError) where an index is an integer
    or an integer array, not where it is only slices."""
    return any(isinstance(item, (int, np.ndarray, Arg)) and not isinstance(item, Slice)
               for item in node["params"]["index"])


register(
    "getitem", _getitem_impl, vjp=_getitem_vjp,
    jvp=lambda t, out, x, *idx, index: apply("getitem", t[0], *idx, index=index),
    jax=_getitem_jax,
    nondiff_args=(), family="shape", doc="x[index]",
    batch=_getitem_batch, spelling="{0}[{index}]",
    torch_name="IndexBackward0",
    extra={"jax_checks": _indexes_by_integers},
    schema=Spec({"index": INDEX}, None, _getitem, minimum=1),
)


def _index_update_impl(x, v, *idx, index, mode):
    out = np.array(x, copy=True)
    where = index.to_numpy(idx)
    if mode == "set":
        out[where] = v
    elif index.is_basic:
        out[where] += v
    else:  # integer arrays may repeat positions: accumulate every one of them
        np.add.at(out, where, v)
    return out


def _last_writes(x_shape, gv, idx, index):
    """True where an update is the one NumPy keeps: with repeated integer indices,
    ``x[i] = v`` leaves the last write to each position."""
    ids = np.arange(int(np.prod(gv.shape)), dtype=np.int64).reshape(gv.shape)
    marks = apply("index_update", np.full(x_shape, -1, dtype=np.int64), ids, *idx,
                  index=index, mode="set")
    return apply("getitem", marks, *idx, index=index) == ids


def _index_update_vjp(g, out, x, v, *idx, index, mode):
    gx = apply("index_update", g, 0.0, *idx, index=index, mode="set") if mode == "set" else g
    gv = apply("getitem", g, *idx, index=index)
    if mode == "set" and not index.is_basic:
        gv = np.where(_last_writes(x.shape, gv, idx, index), gv, 0.0)
    return (gx, gv) + (None,) * len(idx)


def _index_update_jvp(t, out, x, v, *idx, index, mode):
    tx, tv = t[0], t[1]
    if tv is None:
        return tx if mode == "add" else apply("index_update", tx, 0.0, *idx, index=index, mode="set")
    if tx is None:
        tx = np.zeros_like(x)
    return apply("index_update", tx, tv, *idx, index=index, mode=mode)


def _contiguous_block(index, shape):
    """(start, stop) per axis if ``index`` selects one unit-step block of an array of
    ``shape`` keeping every axis (x[1:], x[:, 2:5]); else None."""
    if not index.is_basic or len(index) > len(shape):
        return None
    bounds = []
    for item, n in zip(tuple(index) + (Slice(None, None, None),) * (len(shape) - len(index)),
                       shape):
        if not isinstance(item, Slice) or item.step not in (None, 1):
            return None
        start, stop, _ = slice(item.start, item.stop).indices(n)
        bounds.append((start, max(start, stop)))
    return bounds


def _index_update_jax(x, v, *idx, index, mode):
    import jax.numpy as jnp
    check_bounds(x.shape, index, idx)
    where = _jax_index(index, idx)
    # NumPy's assignment drops leading length-1 axes of the value (x[1:3] = v of shape
    # (1, 2, 5) into (2, 5) rows); JAX's does not
    ndim = len(jnp.shape(x[where]))
    while v.ndim > ndim and v.shape[0] == 1:
        v = v[0]
    block = _contiguous_block(index, x.shape)
    if block is not None and mode == "add":
        # a zero-padded add fuses with its neighbours; XLA's scatter does not
        widths = [(lo, n - hi) for (lo, hi), n in zip(block, x.shape)]
        v = jnp.broadcast_to(v, tuple(hi - lo for lo, hi in block)).astype(x.dtype)
        # (jnp.pad refuses the empty widths of a 0-d x, t[()] += v)
        return x + (jnp.pad(v, widths) if widths else v)
    if mode == "set" and _may_repeat(index, x.shape) and np.size(v) > 1:
        v = _last_writes_jax(x, v, where)
    ref = x.at[where]
    return ref.set(v) if mode == "set" else ref.add(v)


def _may_repeat(index, shape):
    """Whether ``x[index] = v`` may write one position twice: integer arrays computed by
    the program, or constant ones that do."""
    if index.is_basic:
        return False
    if any(isinstance(item, Arg) for item in index):
        return True
    counts = np.zeros(shape, dtype=np.int64)
    np.add.at(counts, index.to_numpy(), 1)
    return bool(counts.size) and int(counts.max()) > 1


def _last_writes_jax(x, v, where):
    """The values for ``x.at[where].set``: XLA applies repeated writes to one position in
    an unspecified order, NumPy keeps the last. Every write to a position is given the
    last one's value, so the order cannot matter."""
    import jax.numpy as jnp
    shape = x[where].shape
    ids = jnp.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    last = jnp.full(x.shape, -1, dtype=np.int64).at[where].max(ids)[where]
    return jnp.broadcast_to(jnp.asarray(v), shape).ravel()[last]


register(
    "index_update", _index_update_impl,
    abstract=lambda x, v, *idx, index, mode: (x.shape, x.dtype),
    vjp=_index_update_vjp, jvp=_index_update_jvp, jax=_index_update_jax,
    family="shape", doc="functional x[index] = v (mode='set') or x[index] += v (mode='add')",
    batch=_index_update_batch, aliasing="fresh", zeros=None,
    torch_name="CopySlices",
    extra={"jax_checks": _indexes_by_integers},
    schema=Spec({"index": INDEX, "mode": CHOICE("set", "add")}, None, _index_update,
                         minimum=2),
)

__all__ = ["Index", "Slice"]
