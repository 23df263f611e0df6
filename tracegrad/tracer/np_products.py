"""Products of traced arrays: ``matmul``, ``np.dot``, ``np.inner``, ``np.outer``,
``np.tensordot``, ``np.einsum``, ``np.kron``, ``np.cross``, and the 1-D ``np.convolve``
and ``np.correlate`` (a matrix product with a gathered Toeplitz matrix). Matrix products
apply the ``matmul`` primitive; the N-D forms are spelled as einsum subscripts, which are
normalised here (``...`` written out in letters no operand uses) before the ``einsum``
primitive sees them.
"""
from __future__ import annotations

import builtins
import operator
import string

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.source import where
from .core import Tracer
from .indexing import getitem
from .np_base import (
    _reject,
    _single_axis,
    as_array,
    broadcast_to,
    coerce,
    dtype_of,
    implements,
    ndim_of,
    ravel,
    reshape,
    shape_of,
)
from .np_shapes import flip, moveaxis


def _array(x):
    """An operand of a product as NumPy's ``asarray`` sees it: ``np.dot``, ``np.inner``,
    ``np.tensordot`` and ``np.einsum`` make arrays of Python numbers first, so a Python
    float is float64 there, not a weak scalar (``np.dot(float32_array, 2.0)`` is float64),
    and so is a traced Python number passed to the function."""
    x = coerce(x)
    if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
        return np.asarray(x)
    if type(x) is Tracer and x._weak is not None:
        return Tracer(x._trace, x._node, x.shape, x.dtype, x._value)    # now typed
    return x


def matmul(a, b):
    a, b = _array(a), _array(b)
    if ndim_of(a) == 0 or ndim_of(b) == 0:
        raise TraceError(f"matmul: input operand does not have enough dimensions (a 0-d array "
                         f"is not allowed; use * for scalars){where()}")
    return apply("matmul", a, b)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@implements(np.dot)
def dot(a, b, out=None):
    _reject("np.dot", out=out)
    a, b = _array(a), _array(b)
    na, nb = ndim_of(a), ndim_of(b)
    if na == 0 or nb == 0:
        return apply("mul", a, b)
    if na <= 2 and nb <= 2:
        return apply("matmul", a, b)
    # N-D dot: sum over the last axis of a and the second-to-last of b
    la = _LETTERS[:na]
    lb = _LETTERS[na:na + nb - 2] + la[-1] + (_LETTERS[na + nb - 2] if nb > 1 else "")
    if nb == 1:
        lb = la[-1]
    out_s = la[:-1] + lb.replace(la[-1], "")
    return einsum(f"{la},{lb}->{out_s}", a, b)


@implements(np.inner)
def inner(a, b):
    a, b = _array(a), _array(b)
    na, nb = ndim_of(a), ndim_of(b)
    if na == 0 or nb == 0:
        return apply("mul", a, b)
    la = _LETTERS[:na - 1] + "z"
    lb = _LETTERS[na - 1:na + nb - 2] + "z"
    return einsum(f"{la},{lb}->{la[:-1] + lb[:-1]}", a, b)


@implements(np.outer)
def outer(a, b, out=None):
    _reject("np.outer", out=out)
    a, b = ravel(coerce(a)), ravel(coerce(b))
    return apply("mul", reshape(a, (shape_of(a)[0], 1)), b)


@implements(np.tensordot)
def tensordot(a, b, axes=2):
    a, b = _array(a), _array(b)
    na, nb = ndim_of(a), ndim_of(b)
    if isinstance(axes, (int, np.integer)):
        ax_a, ax_b = list(range(na - axes, na)), list(range(axes))
    else:
        ax_a, ax_b = axes
        ax_a = [ax_a] if isinstance(ax_a, (int, np.integer)) else list(ax_a)
        ax_b = [ax_b] if isinstance(ax_b, (int, np.integer)) else list(ax_b)
    ax_a = [_single_axis(i, na) for i in ax_a]
    ax_b = [_single_axis(i, nb) for i in ax_b]
    la = list(_LETTERS[:na])
    lb = list(_LETTERS[na:na + nb])
    for i, j in zip(ax_a, ax_b):
        lb[j] = la[i]
    out_s = [c for i, c in enumerate(la) if i not in ax_a] + [
        c for j, c in enumerate(lb) if j not in ax_b]
    return einsum(f"{''.join(la)},{''.join(lb)}->{''.join(out_s)}", a, b)


def _normalize_subscripts(subscripts, shapes):
    """Explicit subscripts with '...' spelled out in letters no operand uses."""
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        ins, out = subscripts.split("->")
    else:
        ins, out = subscripts, None
    ins = ins.split(",")
    if len(ins) != len(shapes):
        raise TraceError(f"np.einsum: {len(ins)} operand subscripts for {len(shapes)} "
                         f"operands{where()}")
    used = set("".join(ins))
    free = [c for c in _LETTERS if c not in used]
    n_ell = builtins.max([len(s) - len(i.replace("...", "")) for i, s in zip(ins, shapes)
                          if "..." in i] or [0])
    ell = "".join(free[:n_ell])
    full = []
    for i, s in zip(ins, shapes):
        if "..." in i:
            k = len(s) - len(i.replace("...", ""))
            i = i.replace("...", ell[n_ell - k:])
        full.append(i)
    if out is None:
        counts = {}
        for c in "".join(full):
            counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    else:
        out = out.replace("...", ell)
    return ",".join(full) + "->" + out


def _from_interleaved(args):
    """NumPy's interleaved form ``einsum(op0, sublist0, op1, sublist1, ..., [out])``, whose
    sublists hold integers in [0, 52) and ``Ellipsis``, as a subscripts string."""
    letters = string.ascii_letters

    def word(sublist):
        out = []
        for k in sublist:
            if k is Ellipsis:
                out.append("...")
                continue
            try:
                k = operator.index(k)
            except TypeError:
                raise TypeError(f"subscript is not within the valid range [0, 52): "
                                f"{k!r}") from None
            if not 0 <= k < len(letters):
                raise ValueError(f"subscript is not within the valid range [0, 52): {k}")
            out.append(letters[k])
        return "".join(out)

    args = list(args)
    out = None
    if len(args) % 2 == 1:
        out = word(args.pop())
    operands, words = args[0::2], [word(sub) for sub in args[1::2]]
    return ",".join(words) + ("" if out is None else "->" + out), operands


@implements(np.einsum)
def einsum(subscripts, *operands, out=None, optimize=False, **kwargs):
    _reject("np.einsum", out=out)
    if kwargs:
        raise TraceError(f"np.einsum(..., {sorted(kwargs)}) is not supported{where()}")
    if not isinstance(subscripts, str):
        subscripts, operands = _from_interleaved((subscripts,) + operands)
    operands = [_array(o) for o in operands]
    subs = _normalize_subscripts(subscripts, [shape_of(o) for o in operands])
    ins, out = subs.split("->")
    ins = ins.split(",")
    for k, i in enumerate(ins):
        operands[k], ins[k] = _diagonals(operands[k], i)
    return apply("einsum", *operands, subscripts=",".join(ins) + "->" + out)


def _diagonals(op, sub):
    """An index repeated within one operand ('ii') is that operand's diagonal: taken with
    np.diagonal (which puts it last) until every index is distinct."""
    while len(set(sub)) != len(sub):
        c = next(c for c in sub if sub.count(c) > 1)
        p = sub.index(c)
        q = sub.index(c, p + 1)
        if shape_of(op)[p] != shape_of(op)[q]:
            raise TraceError(f"np.einsum: dimensions in operand for collapsing index '{c}' "
                             f"don't match ({shape_of(op)[p]} != {shape_of(op)[q]}){where()}")
        op = np.diagonal(op, 0, p, q)
        sub = sub[:p] + sub[p + 1:q] + sub[q + 1:] + c
    return op, sub


_arr = as_array


@implements(np.kron)
def kron(a, b):
    a, b = _arr(a), _arr(b)
    nd = builtins.max(ndim_of(a), ndim_of(b))
    sa = (1,) * (nd - ndim_of(a)) + tuple(shape_of(a))
    sb = (1,) * (nd - ndim_of(b)) + tuple(shape_of(b))
    a = reshape(a, tuple(x for n in sa for x in (n, 1)))
    b = reshape(b, tuple(x for n in sb for x in (1, n)))
    return reshape(apply("mul", a, b), tuple(m * n for m, n in zip(sa, sb)))


@implements(np.cross)
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    a = moveaxis(_arr(a), axisa, -1)
    b = moveaxis(_arr(b), axisb, -1)
    na, nb = shape_of(a)[-1], shape_of(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise TraceError(f"incompatible dimensions for cross product (dimension must be 2 or "
                         f"3){where()}")

    def comp(v, i, n):
        return getitem(v, (Ellipsis, i)) if i < n else 0.0
    a0, a1, a2 = (comp(a, i, na) for i in range(3))
    b0, b1, b2 = (comp(b, i, nb) for i in range(3))
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return z
    c = np.stack(_broadcast_all(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, z), axis=-1)
    return moveaxis(c, -1, axisc)


def _broadcast_all(*xs):
    shape = np.broadcast_shapes(*(shape_of(x) for x in xs))
    return [broadcast_to(x if isinstance(x, Tracer) else np.asarray(x), shape) for x in xs]


def _full_convolve(a, v):
    n, m = shape_of(a)[0], shape_of(v)[0]
    k = np.arange(n + m - 1)[:, None]
    i = np.arange(n)[None, :]
    idx = k - i
    ok = (idx >= 0) & (idx < m)
    gathered = getitem(v, (np.clip(idx, 0, m - 1),))          # (n + m - 1, n)
    zero = np.zeros((), np.result_type(dtype_of(a), dtype_of(v)))
    return np.matmul(apply("select", ok, gathered, zero), a)


@implements(np.convolve)
def convolve(a, v, mode="full"):
    a, v = ravel(_arr(a)), ravel(_arr(v))
    n, m = shape_of(a)[0], shape_of(v)[0]
    if n == 0 or m == 0:
        raise TraceError(f"np.convolve: inputs cannot be empty{where()}")
    full = _full_convolve(a, v)
    lo, hi = builtins.min(n, m), builtins.max(n, m)
    if mode == "full":
        return full
    if mode == "same":
        start = (lo - 1) // 2
        return getitem(full, (slice(start, start + hi),))
    if mode == "valid":
        return getitem(full, (slice(lo - 1, hi),))
    raise TraceError(f"np.convolve: mode {mode!r} is not supported{where()}")


@implements(np.correlate)
def correlate(a, v, mode="valid"):
    a, v = ravel(_arr(a)), ravel(_arr(v))
    n, m = shape_of(a)[0], shape_of(v)[0]
    if dtype_of(v).kind == "c":          # NumPy's correlate conjugates v
        v = apply("conj", v)
    full = convolve(a, flip(v), "full")
    lo, hi = builtins.min(n, m), builtins.max(n, m)
    if mode == "full":
        return full
    if mode == "same":      # NumPy's alignment (it swaps the arguments when v is longer)
        start = (m - 1) // 2 if m <= n else n // 2
        return getitem(full, (slice(start, start + hi),))
    if mode == "valid":
        return getitem(full, (slice(lo - 1, hi),))
    raise TraceError(f"np.correlate: mode {mode!r} is not supported{where()}")
