"""``F.ctc_loss`` and ``F.multi_margin_loss`` with their modules ``nn.CTCLoss`` and
``nn.MultiMarginLoss``.

The CTC loss is the forward (alpha) recursion of Graves et al. in log space, written in
NumPy over the batch and the blank-extended label positions, one time step at a time, and
recorded as one ``CtcLossBackward0`` node; its derivative comes from the recursion's
primitives. PyTorch's own backward hands ``log_probs`` the gradient of the loss *plus*
``exp(log_probs)`` at each valid time step (which is the true gradient once it flows back
through the ``log_softmax`` that makes ``log_probs``, where the extra term vanishes); the
node adds that term (of value zero) so that the gradients are PyTorch's either way.
Impossible alignments (an input shorter than its target needs) are known from the lengths
alone: their loss is ``inf``, or 0 with ``zero_infinity``, without a gradient.
"""
from __future__ import annotations

import numpy as np

from ...ir import apply
from ..dispatch import call
from ..tensor import Tensor, _scalar_name
from .losses import _check_reduction, legacy_reduction
from .modules import Module

__all__ = ["ctc_loss", "multi_margin_loss", "CTCLoss", "MultiMarginLoss"]

_NEG = -1e30        # log(0) kept finite: no NaN reaches a derivative through exp/log


def _ints(v, what):
    a = v._data if isinstance(v, Tensor) else np.asarray(v)
    if a.dtype.kind == "f":
        a = a.astype(np.int64)
    return a.astype(np.int64).reshape(-1) if a.ndim else a.astype(np.int64).reshape(1)


def _lse(*xs):
    m = xs[0]
    for x in xs[1:]:
        m = np.maximum(m, x)
    m = apply("stop_gradient", m)
    total = None
    for x in xs:
        e = np.exp(x - m)
        total = e if total is None else total + e
    return m + np.log(total)


def _ctc_nll(lp, ext, skip, init, in_len, last, feasible):
    """Per sample ``-log p(target | log_probs)`` for ``lp`` (T, N, C)."""
    t_max, n, _ = lp.shape
    width = ext.shape[1]
    emit = np.take_along_axis(lp, np.broadcast_to(ext[None], (t_max, n, width)), axis=2)
    neg = np.asarray(_NEG, lp.dtype)
    alpha = np.where(init, emit[0], neg)
    pad1 = np.full((n, 1), _NEG, lp.dtype)
    pad2 = np.full((n, 2), _NEG, lp.dtype)
    for t in range(1, t_max):
        a1 = np.concatenate([pad1, alpha[:, :-1]], axis=1)
        a2 = np.where(skip, np.concatenate([pad2, alpha[:, :-2]], axis=1), neg)
        new = _lse(alpha, a1, a2) + emit[t]
        alpha = np.where((t < in_len)[:, None], new, alpha)
    rows = np.arange(n)
    end_blank = alpha[rows, last]
    end_label = np.where(last >= 1, alpha[rows, np.maximum(last - 1, 0)], neg)
    nll = -_lse(end_blank, end_label)
    # PyTorch's backward: + exp(log_probs) at every valid step (value 0)
    valid = (np.arange(t_max)[:, None] < in_len[None, :]).astype(lp.dtype)[:, :, None]
    e = np.exp(lp) * valid
    nll = nll + np.sum(e - apply("stop_gradient", e), axis=(0, 2))
    return np.where(feasible, nll, np.asarray(np.inf, lp.dtype))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """The connectionist temporal classification loss of ``log_probs`` (T, N, C) (or
    (T, C)) against ``targets`` (N, S) padded or 1-D concatenated."""
    _check_reduction(reduction)
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    if lp.dim() != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs of 2 or 3 dimensions, got "
                           f"{log_probs.dim()}")
    t_max, n, c = lp.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    in_len, tl = _ints(input_lengths, "input_lengths"), _ints(target_lengths, "target_lengths")
    if len(in_len) != n:
        raise RuntimeError(f"input_lengths must be of size batch_size, but got {len(in_len)}")
    if len(tl) != n:
        raise RuntimeError(f"target_lengths must be of size batch_size, but got {len(tl)}")
    if in_len.max(initial=0) > t_max:
        raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got "
                           f"value {int(in_len.max())} (while checking arguments for "
                           "ctc_loss_allocate_outputs)")
    tg = targets._data if isinstance(targets, Tensor) else np.asarray(targets)
    tg = tg.astype(np.int64)
    if not batched and tg.ndim == 1 and len(tl) == 1 and tg.shape[0] >= tl[0]:
        tg = tg[None]
    if tg.ndim == 2:
        if tg.shape[1] < tl.max(initial=0):
            raise RuntimeError(f"Expected tensor to have size at least {int(tl.max())} at "
                               f"dimension 1, but got size {tg.shape[1]} for argument #2 "
                               "'targets' (while checking arguments for "
                               "ctc_loss_allocate_outputs)")
        labels = [tg[i, :tl[i]] for i in range(n)]
    else:
        if tg.shape[0] < tl.sum():
            raise RuntimeError(f"Expected tensor to have size at least {int(tl.sum())} at "
                               f"dimension 0, but got size {tg.shape[0]} for argument #2 "
                               "'targets' (while checking arguments for "
                               "ctc_loss_allocate_outputs)")
        starts = np.concatenate([[0], np.cumsum(tl)])
        labels = [tg[starts[i]:starts[i + 1]] for i in range(n)]
    width = 2 * int(tl.max(initial=0)) + 1
    ext = np.full((n, width), blank, np.int64)
    skip = np.zeros((n, width), bool)
    feasible = np.ones(n, bool)
    for i, lab in enumerate(labels):
        ext[i, 1:2 * len(lab):2] = lab
        s = np.arange(width)
        skip[i] = (s >= 2) & (ext[i] != blank) & (ext[i] != np.roll(ext[i], 2))
        repeats = int(np.sum(lab[1:] == lab[:-1])) if len(lab) > 1 else 0
        feasible[i] = in_len[i] >= len(lab) + repeats and (in_len[i] > 0 or len(lab) == 0)
    init = np.zeros((n, width), bool)
    init[:, 0] = True
    init[:, 1] = tl > 0
    last = (2 * tl).astype(np.int64)
    losses = call(lambda v: _ctc_nll(v, ext, skip, init, in_len, last, feasible), lp,
                  name="CtcLossBackward0")
    if zero_infinity:       # as PyTorch: where(loss == inf, 0, loss), no gradient there
        losses = call(lambda v: np.where(feasible, v, np.zeros((), v.dtype)), losses,
                      name="WhereBackward0")
    if reduction == "none":
        return losses if batched else losses.squeeze(0)
    if reduction == "sum":
        return losses.sum()
    lengths = Tensor._plain(np.maximum(tl, 1).astype(np.dtype(lp.dtype)))
    return (losses / lengths).mean()


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """The multi-class hinge loss: for each sample, ``sum_{i != y} max(0, margin - x[y] +
    x[i]) ** p`` (times ``weight[y]``), over the number of classes."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    shape = tuple(input.shape)
    t = target._data if isinstance(target, Tensor) else np.asarray(target)
    if t.dtype != np.int64:
        raise RuntimeError(f"expected scalar type Long but found {_scalar_name(t.dtype)}")
    if input.dim() > 2:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(shape)}")
    n = shape[0] if input.dim() == 2 else 1
    classes = shape[-1] if input.dim() else 1
    if t.size != n or (input.dim() == 2 and t.ndim != 1) or t.ndim > 1:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to "
                           f"the number of input samples (batch size). Expected target size "
                           f"[{n}], but got {list(t.shape)}. Input has shape {list(shape)}.")
    if np.any((t < 0) | (t >= classes)):
        raise RuntimeError("target out of range")
    if weight is not None and tuple(weight.shape) != (classes,):
        raise RuntimeError(f"inconsistent weight size, expected {classes} but got "
                           f"{list(weight.shape)}")
    y = t.reshape(n)
    others = np.ones((n, classes), bool)
    others[np.arange(n), y] = False
    out_shape = () if input.dim() <= 1 and t.ndim == 0 else (n,)

    def fn(x, *w):
        x2 = np.reshape(x, (n, classes))
        xy = np.take_along_axis(x2, y[:, None], axis=1)
        z = margin - xy + x2
        h = np.where((z > 0) & others, z, np.zeros((), x2.dtype))
        if p == 2:
            h = h * h
        if w:
            h = h * np.reshape(np.take(w[0], y), (n, 1))
        per = np.sum(h, axis=1) / classes
        if reduction == "none":
            return np.reshape(per, out_shape)
        return np.sum(per) if reduction == "sum" else np.mean(per)
    args = (input,) if weight is None else (input, weight)
    return call(fn, *args, name="MultiMarginLossBackward0")


class CTCLoss(Module):
    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__()
        _check_reduction(reduction)
        self.blank, self.reduction, self.zero_infinity = blank, reduction, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                        self.reduction, self.zero_infinity)


class MultiMarginLoss(Module):
    def __init__(self, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                 reduction="mean"):
        super().__init__()
        reduction = legacy_reduction(size_average, reduce, reduction)
        _check_reduction(reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.dim()}D instead")
        self.register_buffer("weight", weight)
        self.p, self.margin, self.reduction = p, margin, reduction

    def forward(self, input, target):
        return multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                 weight=self.weight, reduction=self.reduction)
