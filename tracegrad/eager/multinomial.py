"""``tg.multinomial`` (``torch.multinomial``) on PyTorch's CPU generator streams
(``eager/random.py``).

multinomial takes torch's two CPU paths:

- with replacement (and more than one sample): each row's cumulative distribution in the
  input's dtype, normalised by its sum, its last entry set to 1; each sample one 53-bit
  uniform double (``random64``), placed by a binary search (the first entry not below
  it), row by row, sample by sample;
- without replacement, or one sample: ``argmax`` / ``topk`` of ``p / q`` with ``q`` drawn
  from Exp(1) by torch's default CPU kernel, ``-log1p(-u)`` of one 53-bit uniform per
  element, in the input's order.

Both are torch's draws bit for bit for the same seed, and leave the generator where
torch's leaves it (tests/test_eager_multinomial.py, sizes on both sides of 16 elements).
"""
from __future__ import annotations

import numpy as np

from .arithmetic import _err
from .arithmetic import _tensor_operand as _as_tensor
from .random import generator_of
from .tensor_base import _scalar_name


def multinomial(input, num_samples, replacement=False, *, generator=None):  # noqa: A002
    """``num_samples`` category indices (int64) drawn from each row of the (1-d or 2-d)
    non-negative weights ``input``."""
    p = _as_tensor(input)
    if p.dtype.kind != "f":
        raise _err(f"multinomial only supports floating-point dtypes for input, got: "
                   f"{_scalar_name(p.dtype)}")
    if p.dim() not in (1, 2):
        raise _err("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise _err("cannot sample n_sample <= 0 samples")
    n_cat = p.shape[-1]
    if not replacement and num_samples > n_cat:
        raise _err("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    v = p._concrete("multinomial")
    gen = generator_of(generator)
    rows = v.reshape(-1, n_cat)
    if not replacement or num_samples == 1:
        if not (np.all(rows < np.inf) and np.all(rows >= 0)):      # NaN fails too
            raise _err("probability tensor contains either `inf`, `nan` or element < 0")
        if np.any(rows.sum(axis=1) == 0):
            raise _err("invalid multinomial distribution (sum of probabilities <= 0)")
        u = gen._unit(v.size, np.float64)
        q = (-np.log1p(-u)).astype(v.dtype).reshape(rows.shape)
        with np.errstate(divide="ignore"):
            ratio = rows / q
        if num_samples == 1:
            out = np.argmax(ratio, axis=1)[:, None]
        else:   # topk: the largest first (ties: the lower index)
            out = np.argsort(-ratio, axis=1, kind="stable")[:, :num_samples]
    else:
        out = np.empty((rows.shape[0], num_samples), np.int64)
        for i, row in enumerate(rows):
            if np.any(row < 0):
                raise _err("invalid multinomial distribution (encountering probability entry "
                           "< 0)")
            if not np.all(np.isfinite(row)):
                raise _err("invalid multinomial distribution (encountering probability entry "
                           "= infinity or NaN)")
            cum = np.cumsum(row, dtype=row.dtype)      # torch's running sum in the dtype
            total = cum[-1]
            if not total > 0:
                raise _err("invalid multinomial distribution (sum of probabilities <= 0)")
            cum = (cum / total).astype(row.dtype)
            cum[-1] = 1
            u = gen._unit(num_samples, np.float64)
            out[i] = np.searchsorted(cum.astype(np.float64), u, side="left")
    out = out.astype(np.int64)
    return p._plain(out.reshape(num_samples) if p.dim() == 1 else out)



class MultinomialMethods:
    """``Tensor``'s ``multinomial``."""

    __slots__ = ()

    def multinomial(self, num_samples, replacement=False, *, generator=None):
        return multinomial(self, num_samples, replacement, generator=generator)
