"""The losses of ``tg.nn.functional`` (re-exported there).

Each loss is one recorded node: the whole formula, reduction included, is the NumPy
function given to ``call``, so its ``grad_fn`` carries PyTorch's name and its backward
is one adjoint sweep. Targets that are class indices are checked here (dtype, range,
batch size) with PyTorch's messages.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ...tracer import Tracer
from ..dispatch import call
from ..indexing import operand_key as _operand_key
from ..promotion import promote_types
from ..tape import EagerTracer
from ..tensor import Tensor, _scalar_name

__all__ = ["mse_loss", "l1_loss", "nll_loss", "cross_entropy", "binary_cross_entropy_with_logits",
           "one_hot", "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "kl_div",
           "soft_margin_loss", "poisson_nll_loss", "margin_ranking_loss", "hinge_embedding_loss",
           "cosine_embedding_loss", "pairwise_distance", "triplet_margin_loss",
           "multilabel_soft_margin_loss", "gaussian_nll_loss"]


def _reduce(values, reduction):
    if reduction == "none":
        return values
    if reduction == "sum":
        return np.sum(values)
    return np.mean(values)


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def legacy_reduction(size_average, reduce, reduction, stacklevel=3):
    """``reduction``, or what the deprecated ``size_average`` / ``reduce`` flags mean when
    either is given (they then override it): PyTorch's ``_Reduction.legacy_get_string``,
    with its deprecation warning. A flag left at None counts as True."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", UserWarning, stacklevel=stacklevel)
    return ret


def _target_like(input, target, what):
    if not isinstance(target, Tensor):
        target = Tensor._plain(np.asarray(target, dtype=input.dtype))
    elif target.dtype != input.dtype and \
            promote_types(input.dtype, target.dtype) == np.dtype(input.dtype):
        # PyTorch's promotion (float32 input, int64 target: float32), not NumPy's
        target = target.to(input.dtype)
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.",
                      UserWarning, stacklevel=3)
        try:
            np.broadcast_shapes(tuple(input.shape), tuple(target.shape))
        except ValueError:
            raise RuntimeError(f"{what}: the size of input {list(input.shape)} and target "
                               f"{list(target.shape)} cannot be broadcast together") from None
    return target


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    target = _target_like(input, target, "mse_loss")
    return call(lambda x, y: _reduce((x - y) ** 2, reduction), input, target,
                name="MseLossBackward0")


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    target = _target_like(input, target, "l1_loss")
    # PyTorch composes l1_loss: (input - target).abs(), then the reduction
    loss = (input - target).abs()
    return loss if reduction == "none" else loss.sum() if reduction == "sum" else loss.mean()


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    target = _target_like(input, target, "binary_cross_entropy_with_logits")
    w = None if weight is None else _array(weight)
    pw = None if pos_weight is None else _array(pos_weight)

    def fn(x, y):
        # log(1 + exp(-|x|)) never overflows; the max terms restore the sign
        softplus_neg = np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)   # -log sigmoid(x)
        softplus_pos = softplus_neg + x                                      # -log(1 - sigmoid(x))
        loss = (1 - y) * softplus_pos + (y if pw is None else pw * y) * softplus_neg
        return _reduce(loss if w is None else loss * w, reduction)
    return call(fn, input, target, name="BinaryCrossEntropyWithLogitsBackward0")


def _array(t):
    return t._data if isinstance(t, Tensor) else np.asarray(t)


def _class_targets(input, target, weight, ignore_index):
    """The index that picks each sample's target class out of ``input`` (class dimension
    1, or 0 for one unbatched sample; an ignored sample picks class 0), which samples
    count, and each sample's weight (0 where ignored).

    The picking is indexing, as PyTorch's gather: a NaN or infinity elsewhere in a row
    stays out of the loss and of its gradient (a dense mask ``sum(x * picks)`` would make
    them NaN). The index arrays are operands of the node (``_operand_key``), so the
    backward plan of the next batch is the same plan.
    """
    t = _array(target)
    # the targets of a transform's trace (torch.func.vmap over the samples) are its
    # tracer, never its values (those of the first sample only)
    symbolic = isinstance(target, Tensor) and target._tracer is not None and \
        not isinstance(target._tracer, EagerTracer)
    if symbolic:
        t = target._tracer
    shape = tuple(input.shape)
    if len(shape) == 1:
        if t.ndim != 0:
            raise RuntimeError(f"0D or 1D target tensor expected, multi-target not supported "
                               f"(got target of size {list(t.shape)} for input of size "
                               f"{list(shape)})")
    elif len(shape) < 1 or t.shape != shape[:1] + shape[2:]:
        if len(shape) >= 1 and t.shape[:1] != shape[:1]:
            raise ValueError(f"Expected input batch_size ({shape[0]}) to match target "
                             f"batch_size ({t.shape[0] if t.ndim else 0}).")
        raise RuntimeError(f"Expected target size {[shape[0]] + list(shape[2:])}, got "
                           f"{list(t.shape)}")
    if t.dtype not in (np.int64, np.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{_scalar_name(t.dtype)}")
    class_dim = 0 if len(shape) == 1 else 1
    n_classes = shape[class_dim]
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= n_classes))
    if not symbolic and np.any(bad):
        raise IndexError(f"Target {int(t[bad].flat[0])} is out of bounds.")
    w = valid.astype(input.dtype)
    if weight is not None:
        weight = _array(weight)
        if weight.shape != (n_classes,):
            raise RuntimeError(f"weight tensor should be defined either for all {n_classes} "
                               f"classes or no classes but got weight tensor of shape: "
                               f"{list(weight.shape)}")
        w = w * weight[np.where(valid, t, 0)].astype(input.dtype)
    safe = np.where(valid, t, 0).astype(np.int64)
    if class_dim == 0:
        key = (safe,)
    else:
        grids = np.indices(t.shape, sparse=True)
        key = (grids[0], safe, *grids[1:])
    return key, valid, w


def _picked(x, key, valid, w, plain=False):
    """Each sample's value at its target class times its weight; 0 for an ignored one.
    ``plain``: every sample counts with weight 1, so the value picked is the value (one
    node fewer each for the selection and the product, which would change nothing)."""
    picked = x[_operand_key(x, key)]
    if plain:
        return picked
    return np.where(valid, picked, np.zeros((), x.dtype)) * w


def _dtype_name(dtype):
    return {"float64": "Double", "float32": "Float", "int64": "Long", "int32": "Int",
            "bool": "Bool"}.get(np.dtype(dtype).name, np.dtype(dtype).name)


def _nll_name(input):
    return "NllLossBackward0" if input.dim() <= 2 else "NllLoss2DBackward0"


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of class indices; ``input`` holds log-probabilities along
    dimension 1 (dimension 0 for one unbatched sample). The mean is weighted: the sum of
    picked losses divided by the sum of their weights, as in PyTorch."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    key, valid, w = _class_targets(input, target, weight, ignore_index)
    plain = weight is None and not isinstance(valid, Tracer) and bool(valid.all())

    def fn(x):
        picked = -_picked(x, key, valid, w, plain)
        if reduction == "mean":
            return np.sum(picked) / np.sum(w)
        return picked if reduction == "none" else np.sum(picked)
    return call(fn, input, name=_nll_name(input))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """``nll_loss(log_softmax(input, 1), target)`` for class indices; for a floating
    ``target`` of ``input``'s shape, the cross-entropy with those class probabilities."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1
    logp = input.log_softmax(class_dim)
    # probabilities: a floating target of the input's shape (PyTorch's test); any other
    # target holds class indices
    is_probs = isinstance(target, Tensor) and target.is_floating_point() and \
        tuple(target.shape) == tuple(input.shape)
    if is_probs:
        return _cross_entropy_probs(logp, target, weight, reduction, label_smoothing, class_dim)
    if label_smoothing == 0.0:
        return nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    key, valid, w = _class_targets(logp, target, weight, ignore_index)
    n_classes = input.shape[class_dim]
    shape = [1] * input.dim()
    shape[class_dim] = n_classes
    cw = np.ones(shape, input.dtype) if weight is None else \
        _array(weight).astype(input.dtype).reshape(shape)
    eps = label_smoothing

    def fn(x):
        nll = -_picked(x, key, valid, w)
        smooth = np.where(valid, -np.sum(x * cw, axis=class_dim), np.zeros((), x.dtype))
        if reduction == "none":
            return (1 - eps) * nll + smooth * (eps / n_classes)
        if reduction == "sum":
            return (1 - eps) * np.sum(nll) + np.sum(smooth) * (eps / n_classes)
        # PyTorch normalises the smoothing term by the summed target weights too
        norm = np.sum(w) if weight is not None else np.sum(valid)
        return (1 - eps) * np.sum(nll) / np.sum(w) + np.sum(smooth) / norm * (eps / n_classes)
    return call(fn, logp, name="AddBackward0")


def _cross_entropy_probs(logp, target, weight, reduction, eps, class_dim):
    if target.shape != logp.shape:
        raise RuntimeError(f"Expected target of size {list(logp.shape)} (class probabilities), "
                           f"got {list(target.shape)}")
    n_classes = logp.shape[class_dim]
    shape = [1] * logp.dim()
    shape[class_dim] = n_classes
    cw = None if weight is None else _array(weight).astype(logp.dtype).reshape(shape)

    def fn(x, y):
        if eps:
            y = y * (1 - eps) + eps / n_classes
        terms = x * y if cw is None else x * y * cw
        loss = -np.sum(terms, axis=class_dim)
        if reduction == "mean":
            return np.sum(loss) / max(loss.size, 1)
        return loss if reduction == "none" else np.sum(loss)
    return call(fn, logp, target,
                name="DivBackward1" if reduction == "mean" else "NegBackward0")


def one_hot(tensor, num_classes=-1):
    if isinstance(tensor, Tensor) and tensor._tracer is not None and \
            not isinstance(tensor._tracer, EagerTracer):
        # a transform's traced labels (vmap, tg.compile): recorded, so each example's own;
        # the class count must then be given (it decides the result's shape)
        if np.dtype(tensor._tracer.dtype).kind not in "iu":
            raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
        if num_classes >= 0:
            return call(lambda t: (t[..., None] == np.arange(num_classes)).astype(np.int64),
                        tensor)
        tensor._concrete("one_hot without num_classes")
    t = _array(tensor)
    if t.dtype.kind not in "iu":
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    n = int(t.max()) + 1 if num_classes < 0 else num_classes
    if t.size and (t.min() < 0 or t.max() >= n):
        raise RuntimeError("Class values must be smaller than num_classes.")
    return Tensor._plain((t[..., None] == np.arange(n)).astype(np.int64))


def _elementwise_loss(fn, name, input, target, reduction, what, weight=None):
    """``fn(input, target)`` elementwise (times ``weight``), reduced: one node."""
    _check_reduction(reduction)
    target = _target_like(input, target, what)
    w = None if weight is None else _array(weight)

    def loss(x, y):
        v = fn(x, y)
        return _reduce(v if w is None else v * w, reduction)
    return call(loss, input, target, name=name)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d^2 / beta`` where ``|d| < beta``, ``|d| - 0.5 beta`` elsewhere (``d = input -
    target``); ``beta=0`` is the L1 loss."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0.0:
        return l1_loss(input, target, reduction=reduction)

    def fn(x, y):
        d = np.abs(x - y)
        return np.where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta)
    return _elementwise_loss(fn, "SmoothL1LossBackward0", input, target, reduction,
                             "smooth_l1_loss")


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d^2`` where ``|d| < delta``, ``delta (|d| - 0.5 delta)`` elsewhere."""
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")

    def fn(x, y):
        d = np.abs(x - y)
        return np.where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    return _elementwise_loss(fn, "HuberLossBackward0", input, target, reduction, "huber_loss",
                             weight)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """``-(t log x + (1 - t) log(1 - x))`` of probabilities ``x``, each log clamped at -100
    as PyTorch does (so x = 0 or 1 gives a finite loss)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if not isinstance(target, Tensor):
        target = Tensor._plain(np.asarray(target, dtype=input.dtype))
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         "size.")
    x = input._data
    if x.size and (np.any(x < 0) or np.any(x > 1) or np.any(np.isnan(x))):
        raise RuntimeError("all elements of input should be between 0 and 1")
    w = None if weight is None else np.broadcast_to(_array(weight), tuple(input.shape))

    def fn(x, y):
        log_x = np.maximum(np.log(x), -100.0)
        log_1mx = np.maximum(np.log1p(-x), -100.0)
        loss = -(y * log_x + (1 - y) * log_1mx)
        return _reduce(loss if w is None else loss * w, reduction)
    with np.errstate(divide="ignore"):
        return call(fn, input, target, name="BinaryCrossEntropyBackward0")


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """The pointwise KL divergence ``target * (log target - input)`` of log-probabilities
    ``input`` (``target`` itself in log space when ``log_target``); 0 where target is 0.
    ``reduction="batchmean"`` divides the sum by the batch size (the true KL divergence);
    ``"mean"`` divides by the number of elements, with PyTorch's warning."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning, stacklevel=2)
    batchmean = reduction == "batchmean"
    if not batchmean:
        _check_reduction(reduction)
    if not isinstance(target, Tensor):
        target = Tensor._plain(np.asarray(target, dtype=input.dtype))
    n = input.shape[0] if input.dim() and batchmean else 1

    def fn(x, y):
        if log_target:
            v = np.exp(y) * (y - x)
        else:
            pos = y > 0
            safe = np.where(pos, y, np.ones((), y.dtype))
            v = np.where(pos, y * np.log(safe), y * 0.0) - y * x
        if batchmean:
            return np.sum(v) / n
        return _reduce(v, reduction)
    name = ("DivBackward0" if batchmean else "SumBackward0" if reduction == "sum"
            else "MeanBackward0" if reduction == "mean"
            else "MulBackward0" if log_target else "SubBackward0")
    return call(fn, input, target, name=name)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _elementwise_loss(lambda x, y: np.log1p(np.exp(-y * x)), "SoftMarginLossBackward0",
                             input, target, reduction, "soft_margin_loss")


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)

    def fn(x, y):
        v = np.exp(x) - y * x if log_input else x - y * np.log(x + eps)
        if full:
            safe = np.where(y > 1, y, np.ones((), y.dtype))
            v = v + np.where(y > 1, safe * np.log(safe) - safe + 0.5 * np.log(2 * np.pi * safe),
                             y * 0.0)
        return _reduce(v, reduction)
    target = _target_like(input, target, "poisson_nll_loss")
    return call(fn, input, target, name="MeanBackward0" if reduction == "mean" else None)


def _legacy(size_average, reduce, reduction):
    reduction = legacy_reduction(size_average, reduce, reduction, stacklevel=4)
    _check_reduction(reduction)
    return reduction


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _legacy(size_average, reduce, reduction)
    if not input1.dim() == input2.dim() == target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.shape}, input2: {input2.shape}, "
                           f"target: {target.shape} ")
    return call(lambda a, b, y: _reduce(np.maximum(-y * (a - b) + margin, 0.0), reduction),
                input1, input2, target, name=_reduction_name(reduction, "ClampMinBackward0"))


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """``x`` where the target is 1, ``max(0, margin - x)`` where it is -1."""
    reduction = _legacy(size_average, reduce, reduction)
    t = _array(target)

    def fn(x):
        v = np.where(t != 1, np.maximum(margin - x, 0.0), x * 0.0) + np.where(t != -1, x, x * 0.0)
        return _reduce(v, reduction)
    return call(fn, input, name=_reduction_name(reduction, "AddBackward0"))


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` where the target is 1, ``max(0, cos(x1, x2) - margin)`` where it
    is -1 (cosine along the last dimension, each squared norm plus 1e-12 as in PyTorch)."""
    reduction = _legacy(size_average, reduce, reduction)
    t = _array(target)
    dim = input1.dim() - 1

    def fn(a, b):
        prod = np.sum(a * b, axis=dim)
        cos = prod / np.sqrt((np.sum(a * a, axis=dim) + 1e-12) * (np.sum(b * b, axis=dim) + 1e-12))
        v = np.where(t == 1, 1.0 - cos, cos * 0.0) + np.where(t == -1,
                                                             np.maximum(cos - margin, 0.0),
                                                             cos * 0.0)
        return _reduce(v, reduction)
    return call(fn, input1, input2, name=_reduction_name(reduction, "AddBackward0"))


def _pairwise(a, b, p, eps):
    d = np.abs(a - b + eps)
    return np.sum(d ** p, axis=-1) ** (1.0 / p)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    def fn(a, b):
        d = _pairwise(a, b, p, eps)
        return np.expand_dims(d, -1) if keepdim else d
    return call(fn, x1, x2, name="NormBackward1")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with ``d`` the p-norm distance."""
    reduction = _legacy(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")

    def fn(a, pos, neg):
        d_ap, d_an = _pairwise(a, pos, p, eps), _pairwise(a, neg, p, eps)
        if swap:
            d_an = np.minimum(d_an, _pairwise(pos, neg, p, eps))
        return _reduce(np.maximum(d_ap - d_an + margin, 0.0), reduction)
    return call(fn, anchor, positive, negative,
                name=_reduction_name(reduction, "ClampMinBackward0"))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    reduction = _legacy(size_average, reduce, reduction)
    w = None if weight is None else _array(weight)

    def fn(x, y):
        log_sig = np.minimum(x, 0.0) - np.log1p(np.exp(-np.abs(x)))
        log_sig_neg = log_sig - x
        v = -(y * log_sig + (1 - y) * log_sig_neg)
        if w is not None:
            v = v * w
        v = np.sum(v, axis=-1) / x.shape[-1]
        return _reduce(v, reduction)
    return call(fn, input, target, name=_reduction_name(reduction, "DivBackward0"))


def _reduction_name(reduction, none_name):
    return {"mean": "MeanBackward0", "sum": "SumBackward0"}.get(reduction, none_name)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """``0.5 (log var + (input - target)^2 / var)`` (+ ``0.5 log 2 pi`` when ``full``), with
    ``var`` clamped at ``eps`` invisibly to the gradient, as PyTorch's."""
    if not isinstance(var, Tensor):
        var = Tensor._plain(np.full(tuple(input.shape), float(var), input.dtype))
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.dim() == var.dim() and sum(
                y for x, y in zip(input.shape, var.shape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if np.any(var._data < 0):
        raise ValueError("var has negative entry/entries")

    def fn(x, y, v):
        from ...ir import apply
        v = v + apply("stop_gradient", np.maximum(v, eps) - v)
        loss = (np.log(v) + (x - y) ** 2 / v) * 0.5
        if full:
            loss = loss + 0.5 * math.log(2 * math.pi)
        return _reduce(loss, reduction)
    return call(fn, input, target, var, name=_reduction_name(reduction, "MulBackward0"))
