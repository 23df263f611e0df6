"""The neural-network operations PyTorch also exports at its top level (``torch.conv2d``,
``torch.layer_norm``, ``torch.dropout``, ``torch.lstm_cell``, ...), with the signatures of
its native functions, which differ from ``torch.nn.functional``'s: ``torch.dropout(input,
p, train)`` has no defaults, ``torch.embedding(weight, indices)`` takes the weight first,
``torch.batch_norm`` orders its tensors (weight, bias, running_mean, running_var), the
losses take the reduction as an integer (1 mean, 2 sum, else none). Where PyTorch's
functional form is the same function, the name is the same function here too."""
from __future__ import annotations

from . import functional as F
from . import rnn as _rnn


def _reduction(value):
    """The reduction of an integer as PyTorch's Python bindings read it: 1 mean, 2 sum,
    anything else none (their default too, whatever the schema's ``Mean`` says)."""
    return {1: "mean", 2: "sum"}.get(int(value), "none")


def _stride(stride):
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else stride


# -- dropouts --------------------------------------------------------------------------------
def dropout(input, p, train):
    return F.dropout(input, p, train)


def dropout_(input, p, train):
    return F.dropout(input, p, train, inplace=True)


def feature_dropout(input, p, train):
    F._check_p(p)
    return F._feature_dropout(input, p, train, False, F._feature_shape(input))


def feature_dropout_(input, p, train):
    F._check_p(p)
    return F._feature_dropout(input, p, train, True, F._feature_shape(input))


def alpha_dropout(input, p, train):
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input, p, train):
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout(input, p, train):
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    return F.feature_alpha_dropout(input, p, train, inplace=True)


# -- embedding and normalisation ----------------------------------------------------------------
def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """``torch.embedding``: the weight first; a negative ``padding_idx`` is none."""
    return F.embedding(indices, weight, None if padding_idx < 0 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return F.rms_norm(input, normalized_shape, weight, eps)


# -- pooling and padding -------------------------------------------------------------------------
def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode, True)


def adaptive_max_pool1d(input, output_size):
    """``torch.adaptive_max_pool1d``: the values and their indices."""
    return F.adaptive_max_pool1d(input, output_size, True)


def constant_pad_nd(input, pad, value=0):
    return F.pad(input, list(pad), "constant", value)


# -- activations ---------------------------------------------------------------------------------
def selu(input):
    return F.selu(input)


def celu(input, alpha=1.0):
    return F.celu(input, alpha)


def threshold(input, threshold, value):
    return F.threshold(input, threshold, value)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    if generator is not None:
        raise NotImplementedError("torch.rrelu: a generator= other than the default one is "
                                  "not supported")
    return F.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    if generator is not None:
        raise NotImplementedError("torch.rrelu_: a generator= other than the default one is "
                                  "not supported")
    return F.rrelu(input, lower, upper, training, inplace=True)


# -- losses (the reduction an integer) -------------------------------------------------------------
def kl_div(input, target, reduction=0, *, log_target=False):
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=0):
    return F.binary_cross_entropy_with_logits(input, target, weight,
                                              reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False,
                        reduction=0):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction), zero_infinity)


# -- recurrent cells -----------------------------------------------------------------------------
def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step as ``nn.LSTMCell``'s: ``(h', c')`` from ``hx = (h, c)``."""
    h, c = hx
    return _rnn._lstm_cell(F.linear(input, w_ih, b_ih), (h, c), w_hh, b_hh)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _rnn._gru_cell(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _rnn._rnn_cell(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh, False)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    return _rnn._rnn_cell(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh, True)


NATIVES = {fn.__name__: fn for fn in (
    dropout, dropout_, feature_dropout, feature_dropout_, alpha_dropout, alpha_dropout_,
    feature_alpha_dropout, feature_alpha_dropout_, embedding, layer_norm, group_norm,
    batch_norm, instance_norm, rms_norm, max_pool1d, max_pool2d, max_pool3d,
    max_pool1d_with_indices, adaptive_max_pool1d, constant_pad_nd, selu, celu, threshold,
    rrelu, rrelu_, kl_div, binary_cross_entropy_with_logits, cosine_embedding_loss,
    hinge_embedding_loss, margin_ranking_loss, triplet_margin_loss, poisson_nll_loss, ctc_loss,
    lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell)}
# the functional form is PyTorch's native function itself
NATIVES.update({name: getattr(F, name) for name in (
    "adaptive_avg_pool1d", "avg_pool1d", "bilinear", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc", "cosine_similarity",
    "hardshrink", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle", "prelu", "pdist",
    "channel_shuffle", "native_channel_shuffle", "selu_", "celu_", "threshold_")})
