"""Products of traced arrays: ``matmul``, ``np.dot``, ``np.inner``, ``np.outer``,
``np.tensordot`` and ``np.einsum``. Matrix products apply the ``matmul`` primitive; the
N-D forms are spelled as einsum subscripts, which are normalised here (``...`` written
out in letters no operand uses) before the ``einsum`` primitive sees them.
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
from .np_base import _reject, _single_axis, coerce, implements, ndim_of, ravel, reshape, shape_of


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
