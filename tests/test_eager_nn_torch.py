"""tg.nn layers and losses against PyTorch (CPU, float64), one table row per layer or loss.

Each layer row builds the same module in both libraries from the same constructor call,
copies torch's initial state_dict into tracegrad's (so the weights are equal), runs the
same inputs through both, once per phase ("train" / "eval"), and compares: every output,
the gradients of the inputs and of every parameter (by torch's name) after a backward
of a random weighting of the outputs, and the state_dict afterwards (running statistics
of BatchNorm, num_batches_tracked). Each loss row runs the functional form and the
module form of one loss, with its options, the same way.
"""
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg

torch = pytest.importorskip("torch")

RTOL, ATOL = 1e-10, 1e-12


def _rng(name):
    return np.random.default_rng(sum(map(ord, name)))


@dataclass
class Layer:
    make: object                      # nn -> module (same call for torch.nn and tg.nn)
    inputs: list                      # shapes of float inputs (all differentiated) or arrays
    phases: tuple = ("train",)
    call: object = None               # (module, *inputs) -> output; default module(*inputs)
    ints: list = field(default_factory=list)   # integer arrays, passed after the floats
    tol: float = RTOL


def _h0(shape):
    return np.full(shape, 0.0) + np.linspace(-0.5, 0.5, int(np.prod(shape))).reshape(shape)


LAYERS = {
    "linear": Layer(lambda nn: nn.Linear(4, 3), [(5, 4)]),
    "conv1d": Layer(lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), [(2, 3, 9)]),
    "conv2d_groups_same_reflect": Layer(lambda nn: nn.Conv2d(4, 6, (3, 2), padding="same",
                                                             groups=2, padding_mode="reflect"),
                                        [(2, 4, 5, 4)]),
    "conv2d_depthwise_dilated_same": Layer(lambda nn: nn.Conv2d(3, 3, 2, padding="same",
                                                                dilation=2, groups=3, bias=False),
                                           [(1, 3, 5, 5)]),
    "conv2d_circular_strided": Layer(lambda nn: nn.Conv2d(2, 3, 3, stride=2, padding=1,
                                                          padding_mode="circular"), [(1, 2, 6, 5)]),
    "conv2d_valid": Layer(lambda nn: nn.Conv2d(2, 2, 3, padding="valid"), [(1, 2, 4, 4)]),
    "conv1d_same_groups_replicate": Layer(lambda nn: nn.Conv1d(4, 2, 4, padding="same", groups=2,
                                                               padding_mode="replicate"),
                                          [(2, 4, 7)]),
    "conv_transpose2d_groups": Layer(lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2),
                                     [(1, 4, 3, 3)]),
    "conv_transpose2d": Layer(lambda nn: nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1,
                                                            output_padding=1), [(2, 2, 4, 3)]),
    "batchnorm1d": Layer(lambda nn: nn.BatchNorm1d(3), [(6, 3)], ("train", "train", "eval")),
    "batchnorm1d_3d": Layer(lambda nn: nn.BatchNorm1d(3, momentum=0.3), [(4, 3, 5)],
                            ("train", "eval", "train")),
    "batchnorm2d": Layer(lambda nn: nn.BatchNorm2d(3), [(4, 3, 3, 2)], ("train", "train", "eval")),
    "batchnorm2d_cumulative": Layer(lambda nn: nn.BatchNorm2d(2, momentum=None),
                                    [(3, 2, 2, 2)], ("train", "train", "train", "eval")),
    "batchnorm2d_no_affine": Layer(lambda nn: nn.BatchNorm2d(2, affine=False),
                                   [(3, 2, 2, 2)], ("train", "eval")),
    "batchnorm2d_no_stats": Layer(lambda nn: nn.BatchNorm2d(2, track_running_stats=False),
                                  [(3, 2, 2, 2)], ("train", "eval")),
    "layernorm": Layer(lambda nn: nn.LayerNorm(5), [(3, 5)]),
    "layernorm_2d": Layer(lambda nn: nn.LayerNorm((3, 4), eps=1e-3), [(2, 3, 4)]),
    "layernorm_no_affine": Layer(lambda nn: nn.LayerNorm(4, elementwise_affine=False),
                                 [(2, 3, 4)]),
    "groupnorm": Layer(lambda nn: nn.GroupNorm(2, 4), [(3, 4, 2, 2)]),
    "embedding": Layer(lambda nn: nn.Embedding(6, 3), [], ints=[np.array([[0, 2, 5], [2, 2, 1]])]),
    "embedding_padding": Layer(lambda nn: nn.Embedding(6, 3, padding_idx=2), [],
                               ints=[np.array([[0, 2, 5], [2, 2, 1]])]),
    "rnn": Layer(lambda nn: nn.RNN(3, 4), [(5, 2, 3)]),
    "rnn_relu_2layers_bf": Layer(lambda nn: nn.RNN(3, 4, 2, nonlinearity="relu",
                                                   batch_first=True), [(2, 5, 3)]),
    "rnn_h0": Layer(lambda nn: nn.RNN(3, 4, num_layers=2), [(5, 2, 3), (2, 2, 4)]),
    "lstm": Layer(lambda nn: nn.LSTM(3, 4), [(5, 2, 3)]),
    "lstm_2layers_batch_first": Layer(lambda nn: nn.LSTM(3, 4, num_layers=2, batch_first=True),
                                      [(2, 6, 3)]),
    "lstm_bidirectional": Layer(lambda nn: nn.LSTM(3, 4, num_layers=2, bidirectional=True),
                                [(4, 2, 3)]),
    "lstm_h0_c0": Layer(lambda nn: nn.LSTM(3, 4), [(5, 2, 3), (1, 2, 4), (1, 2, 4)],
                        call=lambda m, x, h, c: m(x, (h, c))),
    "lstm_unbatched": Layer(lambda nn: nn.LSTM(3, 4, bias=False), [(5, 3)]),
    "gru": Layer(lambda nn: nn.GRU(3, 4), [(5, 2, 3)]),
    "gru_bidirectional_bf": Layer(lambda nn: nn.GRU(3, 4, batch_first=True,
                                                    bidirectional=True), [(2, 4, 3)]),
    "rnn_cell": Layer(lambda nn: nn.RNNCell(3, 4), [(2, 3), (2, 4)]),
    "lstm_cell": Layer(lambda nn: nn.LSTMCell(3, 4), [(2, 3), (2, 4), (2, 4)],
                       call=lambda m, x, h, c: m(x, (h, c))),
    "gru_cell": Layer(lambda nn: nn.GRUCell(3, 4), [(2, 3)]),
    "gelu": Layer(lambda nn: nn.GELU(), [(3, 4)]),
    "gelu_tanh": Layer(lambda nn: nn.GELU(approximate="tanh"), [(3, 4)]),
    "silu": Layer(lambda nn: nn.SiLU(), [(3, 4)]),
    "elu": Layer(lambda nn: nn.ELU(alpha=0.7), [(3, 4)]),
    "selu": Layer(lambda nn: nn.SELU(), [(3, 4)]),
    # torch differentiates celu with a single-precision step somewhere (2e-8 off)
    "celu": Layer(lambda nn: nn.CELU(alpha=1.3), [(3, 4)], tol=1e-7),
    "leaky_relu": Layer(lambda nn: nn.LeakyReLU(0.2), [(3, 4)]),
    "softplus": Layer(lambda nn: nn.Softplus(), [(3, 4)]),
    "softplus_beta_threshold": Layer(lambda nn: nn.Softplus(beta=2.0, threshold=1.5), [(3, 4)]),
    "softmax": Layer(lambda nn: nn.Softmax(dim=1), [(3, 4)]),
    "log_softmax": Layer(lambda nn: nn.LogSoftmax(dim=0), [(3, 4)]),
    "softmin": Layer(lambda nn: nn.Softmin(dim=1), [(3, 4)]),
    "tanh": Layer(lambda nn: nn.Tanh(), [(3, 4)]),
    "sigmoid": Layer(lambda nn: nn.Sigmoid(), [(3, 4)]),
    "hardtanh": Layer(lambda nn: nn.Hardtanh(-0.5, 0.8), [(3, 4)]),
    "relu6": Layer(lambda nn: nn.ReLU6(), [np.linspace(-3, 9, 12).reshape(3, 4) + 0.01]),
    "mish": Layer(lambda nn: nn.Mish(), [(3, 4)]),
    "prelu": Layer(lambda nn: nn.PReLU(), [(3, 4)]),
    "prelu_channels": Layer(lambda nn: nn.PReLU(3, init=0.1), [(2, 3, 4)]),
    # torch's hardsigmoid backward uses a float32 1/6
    "hardsigmoid": Layer(lambda nn: nn.Hardsigmoid(), [(3, 4)], tol=1e-7),
    "hardswish": Layer(lambda nn: nn.Hardswish(), [np.linspace(-4, 4, 12).reshape(3, 4) + 0.01]),
    "logsigmoid": Layer(lambda nn: nn.LogSigmoid(), [(3, 4)]),
    "softsign": Layer(lambda nn: nn.Softsign(), [(3, 4)]),
    "tanhshrink": Layer(lambda nn: nn.Tanhshrink(), [(3, 4)]),
    "threshold": Layer(lambda nn: nn.Threshold(0.1, -2.0), [(3, 4)]),
    "glu": Layer(lambda nn: nn.GLU(dim=1), [(3, 4)]),
    "softmax2d": Layer(lambda nn: nn.Softmax2d(), [(2, 3, 2, 2)]),
    "hardshrink": Layer(lambda nn: nn.Hardshrink(0.3), [(3, 4)]),
    "softshrink": Layer(lambda nn: nn.Softshrink(0.3), [(3, 4)]),
    "rrelu_eval": Layer(lambda nn: nn.RReLU(0.1, 0.3), [(3, 4)], ("eval",)),
    "bilinear": Layer(lambda nn: nn.Bilinear(3, 4, 2), [(5, 3), (5, 4)]),
    "bilinear_no_bias_3d": Layer(lambda nn: nn.Bilinear(2, 3, 4, bias=False), [(2, 5, 2),
                                                                               (2, 5, 3)]),
    "pixel_unshuffle": Layer(lambda nn: nn.PixelUnshuffle(2), [(1, 2, 4, 6)]),
    "flatten": Layer(lambda nn: nn.Flatten(), [(2, 3, 4)]),
    "unflatten": Layer(lambda nn: nn.Unflatten(1, (2, 3)), [(4, 6)]),
    "identity": Layer(lambda nn: nn.Identity(), [(3, 4)]),
    "adaptive_avg_pool2d": Layer(lambda nn: nn.AdaptiveAvgPool2d((3, 2)), [(2, 3, 7, 5)]),
    "adaptive_avg_pool2d_1": Layer(lambda nn: nn.AdaptiveAvgPool2d(1), [(2, 3, 4, 4)]),
    "adaptive_avg_pool2d_none": Layer(lambda nn: nn.AdaptiveAvgPool2d((None, 2)), [(1, 2, 3, 5)]),
    "adaptive_avg_pool1d": Layer(lambda nn: nn.AdaptiveAvgPool1d(3), [(2, 3, 7)]),
    "max_pool2d_ceil": Layer(lambda nn: nn.MaxPool2d(3, 2, ceil_mode=True), [(1, 2, 6, 7)]),
    "max_pool2d_ceil_padded_dilated": Layer(lambda nn: nn.MaxPool2d(2, 3, 1, dilation=2,
                                                                    ceil_mode=True),
                                            [(2, 1, 7, 8)]),
    "max_pool2d_indices": Layer(lambda nn: nn.MaxPool2d(2, return_indices=True), [(1, 2, 4, 5)]),
    "avg_pool2d_ceil": Layer(lambda nn: nn.AvgPool2d(3, 2, ceil_mode=True), [(1, 2, 6, 7)]),
    "avg_pool2d_ceil_pad_exclude": Layer(lambda nn: nn.AvgPool2d(3, 2, 1, ceil_mode=True,
                                                                 count_include_pad=False),
                                         [(1, 2, 6, 5)]),
    "avg_pool2d_ceil_pad_include": Layer(lambda nn: nn.AvgPool2d(2, 2, 1, ceil_mode=True),
                                         [(1, 1, 5, 6)]),
    "adaptive_max_pool2d": Layer(lambda nn: nn.AdaptiveMaxPool2d((3, 2), return_indices=True),
                                 [(2, 3, 7, 5)]),
    "adaptive_max_pool2d_1": Layer(lambda nn: nn.AdaptiveMaxPool2d(1), [(2, 3, 4, 4)]),
    "avg_pool2d": Layer(lambda nn: nn.AvgPool2d(2), [(2, 3, 4, 5)]),
    "avg_pool1d": Layer(lambda nn: nn.AvgPool1d(2, stride=1), [(2, 3, 5)]),
    "max_pool1d": Layer(lambda nn: nn.MaxPool1d(2), [(2, 3, 6)]),
    "zero_pad2d": Layer(lambda nn: nn.ZeroPad2d((1, 2, 0, 1)), [(1, 2, 3, 3)]),
    "pixel_shuffle": Layer(lambda nn: nn.PixelShuffle(2), [(1, 8, 2, 3)]),
    "cosine_similarity": Layer(lambda nn: nn.CosineSimilarity(dim=1), [(3, 4), (3, 4)]),
    "instance_norm2d_affine": Layer(lambda nn: nn.InstanceNorm2d(3, affine=True), [(2, 3, 3, 4)]),
    "instance_norm1d_running": Layer(lambda nn: nn.InstanceNorm1d(2, track_running_stats=True),
                                     [(3, 2, 5)], ("train", "train", "eval")),
    "instance_norm2d_unbatched": Layer(lambda nn: nn.InstanceNorm2d(2), [(2, 3, 3)]),
    "reflection_pad2d": Layer(lambda nn: nn.ReflectionPad2d((1, 2, 2, 0)), [(1, 2, 3, 4)]),
    "replication_pad1d": Layer(lambda nn: nn.ReplicationPad1d(2), [(2, 3, 4)]),
    "upsample_nearest": Layer(lambda nn: nn.Upsample(scale_factor=2), [(1, 2, 3, 2)]),
    "upsample_nearest_size": Layer(lambda nn: nn.Upsample(size=(5, 7)), [(1, 2, 3, 2)]),
    "upsample_bilinear": Layer(lambda nn: nn.Upsample(scale_factor=1.5, mode="bilinear"),
                               [(2, 1, 4, 3)]),
    "upsample_bilinear_corners": Layer(lambda nn: nn.Upsample(size=(6, 5), mode="bilinear",
                                                              align_corners=True),
                                       [(1, 2, 3, 4)]),
    "upsample_linear": Layer(lambda nn: nn.Upsample(size=7, mode="linear"), [(2, 3, 4)]),
    "multihead_attention": Layer(lambda nn: nn.MultiheadAttention(8, 2), [(4, 3, 8), (5, 3, 8),
                                                                          (5, 3, 8)]),
    "multihead_attention_masks_bf": Layer(
        lambda nn: nn.MultiheadAttention(6, 3, batch_first=True), [(2, 4, 6), (2, 5, 6), (2, 5, 6)],
        call=lambda m, q, k, v: m(q, k, v, attn_mask=(k.new_tensor(np.triu(np.ones((4, 5)), 2))
                                                      > 0),
                                  key_padding_mask=(k.new_tensor([[0, 0, 0, 0, 1],
                                                                  [0, 0, 0, 1, 1]]) > 0),
                                  average_attn_weights=False)),
    "multihead_attention_kdim_vdim": Layer(lambda nn: nn.MultiheadAttention(4, 2, kdim=3, vdim=5),
                                           [(2, 1, 4), (3, 1, 3), (3, 1, 5)]),
    "multihead_attention_unbatched_float_mask": Layer(
        lambda nn: nn.MultiheadAttention(4, 1, bias=False), [(3, 4), (3, 4), (3, 4), (3, 3)],
        call=lambda m, q, k, v, mask: m(q, k, v, attn_mask=mask)),
    "transformer_encoder": Layer(lambda nn: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0), 2,
        enable_nested_tensor=False), [(5, 2, 8)],
        call=lambda m, x: m(x, mask=nn_mask(x, 5))),
    "transformer_encoder_layer_gelu_norm_first_bf": Layer(
        lambda nn: nn.TransformerEncoderLayer(6, 2, 12, dropout=0.0, activation="gelu",
                                              batch_first=True, norm_first=True), [(2, 4, 6)],
        ("train", "eval")),
    "transformer_decoder_layer": Layer(
        lambda nn: nn.TransformerDecoderLayer(6, 3, 10, dropout=0.0), [(4, 2, 6), (5, 2, 6)],
        call=lambda m, t, mem: m(t, mem, tgt_mask=nn_mask(t, 4))),
    "transformer": Layer(
        lambda nn: nn.Transformer(6, 2, 1, 1, 8, dropout=0.0), [(5, 2, 6), (3, 2, 6)],
        call=lambda m, s, t: m(s, t, tgt_mask=nn_mask(t, 3))),
    "dropout_eval": Layer(lambda nn: nn.Dropout(0.3), [(3, 4)], ("eval",)),
    "dropout2d_eval": Layer(lambda nn: nn.Dropout2d(0.3), [(2, 3, 2, 2)], ("eval",)),
    "sequential_cnn": Layer(lambda nn: nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
        nn.Dropout2d(0.0), nn.Flatten(), nn.Linear(16, 3), nn.GELU()),
        [(3, 2, 4, 4)], ("train", "eval")),
    "dcgan_generator": Layer(lambda nn: nn.Sequential(
        nn.ConvTranspose2d(4, 8, 4, 1, 0, bias=False), nn.BatchNorm2d(8), nn.ReLU(True),
        nn.ConvTranspose2d(8, 3, 4, 2, 1, bias=False), nn.Tanh()), [(2, 4, 1, 1)],
        ("train", "eval")),
    "dcgan_discriminator": Layer(lambda nn: nn.Sequential(
        nn.Conv2d(3, 4, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(4, 8, 4, 2, 1, bias=False), nn.BatchNorm2d(8), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(8, 1, 2, 1, 0, bias=False), nn.Sigmoid()), [(3, 3, 8, 8)], ("train", "eval")),
    "transformerish_block": Layer(lambda nn: nn.Sequential(
        nn.LayerNorm(6), nn.Linear(6, 8), nn.SiLU(), nn.Dropout(0.0), nn.Linear(8, 6)),
        [(2, 3, 6)]),
}


def nn_mask(x, n):
    """The causal mask of ``x``'s library (torch's or ours), through its own helper."""
    lib = tg if isinstance(x, tg.Tensor) else torch
    return lib.nn.Transformer.generate_square_subsequent_mask(n, dtype=x.dtype)


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _inputs(name, spec):
    rng = _rng(name)
    return [np.asarray(s, float) if isinstance(s, np.ndarray) else rng.standard_normal(s)
            for s in spec]


def _to_numpy(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _run_phase(lib, module, floats, ints, call, phase, weights):
    module.train(phase == "train")
    xs = [lib.tensor(a, requires_grad=True) for a in floats]
    xs += [lib.tensor(a) for a in ints]
    module.zero_grad()
    out = _flat(call(module, *xs) if call else module(*xs))
    total = sum((o * lib.tensor(w)).sum() for o, w in zip(out, weights))
    total.backward()
    grads = {n: _to_numpy(p.grad) for n, p in module.named_parameters() if p.grad is not None}
    input_grads = [_to_numpy(x.grad) for x in xs[:len(floats)]]
    state = {k: _to_numpy(v) for k, v in module.state_dict().items()}
    return [_to_numpy(o) for o in out], input_grads, grads, state


@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_matches_torch(name):
    row = LAYERS[name]
    torch.manual_seed(0)
    ours, theirs = row.make(tg.nn).double(), _torch_module(row).double()
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    missing = ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    assert missing == ([], [])
    floats = _inputs(name, row.inputs)
    rng = _rng(name + "weights")
    weights = [rng.standard_normal(s) for s in _shapes(theirs, floats, row)]
    for phase in row.phases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected = _run_phase(torch, theirs, floats, row.ints, row.call, phase, weights)
            got = _run_phase(tg, ours, floats, row.ints, row.call, phase, weights)
        _compare(name, phase, got, expected, row.tol)


def _torch_module(row):
    with warnings.catch_warnings():     # torch's advice on its nested-tensor fast path
        warnings.simplefilter("ignore")
        return row.make(torch.nn)


def _shapes(module, floats, row):
    """The output shapes, from a forward that changes no state (a copy, no grad)."""
    import copy
    m = copy.deepcopy(module)
    with torch.no_grad():
        xs = [torch.tensor(a) for a in floats] + [torch.tensor(a) for a in row.ints]
        return [o.shape for o in _flat(row.call(m, *xs) if row.call else m(*xs))]


def _compare(name, phase, got, expected, tol):
    (out, gin, gp, state), (e_out, e_gin, e_gp, e_state) = got, expected
    where = f"{name} ({phase})"
    assert len(out) == len(e_out), where
    for k, (a, e) in enumerate(zip(out, e_out)):
        assert a.shape == e.shape, f"{where}: output {k} shape"
        np.testing.assert_allclose(a, e, rtol=tol, atol=ATOL, err_msg=f"{where}: output {k}")
    for k, (a, e) in enumerate(zip(gin, e_gin)):
        np.testing.assert_allclose(a, e, rtol=tol, atol=ATOL, err_msg=f"{where}: input grad {k}")
    assert sorted(gp) == sorted(e_gp), where
    for key in e_gp:
        np.testing.assert_allclose(gp[key], e_gp[key], rtol=tol, atol=ATOL,
                                   err_msg=f"{where}: grad of {key}")
    assert list(state) == list(e_state), where
    for key in e_state:
        assert state[key].dtype == e_state[key].dtype, f"{where}: dtype of {key}"
        np.testing.assert_allclose(state[key], e_state[key], rtol=tol, atol=ATOL,
                                   err_msg=f"{where}: state {key}")


# -- losses ----------------------------------------------------------------------------------
def _probs(rng, shape):
    return rng.uniform(0.05, 0.95, shape)


def _logp(rng, shape):
    z = rng.standard_normal(shape)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


@dataclass
class Loss:
    functional: str
    module: str
    make: object                  # rng -> (input, target); input differentiated
    kwargs: dict = field(default_factory=dict)       # functional and module options
    fkwargs: dict = field(default_factory=dict)      # functional-only (tensors: arrays)
    target_grad: bool = False
    n_inputs: int = 1             # leading arrays differentiated; the rest are targets


def _reg(rng):
    return rng.standard_normal((4, 3)), rng.standard_normal((4, 3))


def _cls(rng):
    return rng.standard_normal((5, 4)), np.array([0, 3, 1, 3, 2])


def _cls_ignored(rng):
    return rng.standard_normal((5, 4)), np.array([0, -100, 1, 3, 2])


W4 = np.array([0.5, 2.0, 1.0, 0.25])

LOSSES = {
    "mse": Loss("mse_loss", "MSELoss", _reg, target_grad=True),
    "mse_sum": Loss("mse_loss", "MSELoss", _reg, {"reduction": "sum"}),
    "l1_none": Loss("l1_loss", "L1Loss", _reg, {"reduction": "none"}, target_grad=True),
    "smooth_l1": Loss("smooth_l1_loss", "SmoothL1Loss", _reg, target_grad=True),
    "smooth_l1_beta": Loss("smooth_l1_loss", "SmoothL1Loss", _reg, {"beta": 0.3}),
    "smooth_l1_beta0_sum": Loss("smooth_l1_loss", "SmoothL1Loss", _reg,
                                {"beta": 0.0, "reduction": "sum"}),
    "huber": Loss("huber_loss", "HuberLoss", _reg, target_grad=True),
    "huber_delta_none": Loss("huber_loss", "HuberLoss", _reg, {"delta": 0.4, "reduction": "none"}),
    "bce": Loss("binary_cross_entropy", "BCELoss", lambda r: (_probs(r, (4, 3)),
                                                              _probs(r, (4, 3))), target_grad=True),
    "bce_weight_sum": Loss("binary_cross_entropy", "BCELoss",
                           lambda r: (_probs(r, (4, 3)), (r.uniform(size=(4, 3)) > 0.5) * 1.0),
                           {"reduction": "sum"}, {"weight": np.array([0.2, 1.0, 3.0])}),
    "bce_logits": Loss("binary_cross_entropy_with_logits", "BCEWithLogitsLoss",
                       lambda r: (3 * r.standard_normal((4, 3)), _probs(r, (4, 3))),
                       target_grad=True),
    "bce_logits_pos_weight": Loss("binary_cross_entropy_with_logits", "BCEWithLogitsLoss",
                                  lambda r: (r.standard_normal((4, 3)), _probs(r, (4, 3))),
                                  {}, {"pos_weight": np.array([0.5, 2.0, 4.0]),
                                       "weight": np.array([1.0, 0.5, 2.0])}),
    "nll": Loss("nll_loss", "NLLLoss", lambda r: (_logp(r, (5, 4)), _cls(r)[1])),
    "nll_weight_ignore": Loss("nll_loss", "NLLLoss", lambda r: (_logp(r, (5, 4)),
                                                                _cls_ignored(r)[1]),
                              {"ignore_index": -100}, {"weight": W4}),
    "nll_ignore_index_2_sum": Loss("nll_loss", "NLLLoss", lambda r: (_logp(r, (5, 4)), _cls(r)[1]),
                                   {"ignore_index": 2, "reduction": "sum"}),
    "cross_entropy": Loss("cross_entropy", "CrossEntropyLoss", _cls),
    "cross_entropy_weight_ignore": Loss("cross_entropy", "CrossEntropyLoss", _cls_ignored,
                                        {}, {"weight": W4}),
    "cross_entropy_smoothing": Loss("cross_entropy", "CrossEntropyLoss", _cls,
                                    {"label_smoothing": 0.2}),
    "cross_entropy_smoothing_weight": Loss("cross_entropy", "CrossEntropyLoss", _cls_ignored,
                                           {"label_smoothing": 0.1}, {"weight": W4}),
    "cross_entropy_probs": Loss("cross_entropy", "CrossEntropyLoss",
                                lambda r: (r.standard_normal((5, 4)),
                                           np.exp(_logp(r, (5, 4)))), target_grad=True),
    "cross_entropy_probs_smoothing_none": Loss(
        "cross_entropy", "CrossEntropyLoss",
        lambda r: (r.standard_normal((5, 4)), np.exp(_logp(r, (5, 4)))),
        {"label_smoothing": 0.3, "reduction": "none"}),
    "cross_entropy_spatial": Loss("cross_entropy", "CrossEntropyLoss",
                                  lambda r: (r.standard_normal((2, 3, 2, 2)),
                                             r.integers(0, 3, (2, 2, 2)))),
    "kl_div_batchmean": Loss("kl_div", "KLDivLoss",
                             lambda r: (_logp(r, (3, 4)), np.exp(_logp(r, (3, 4)))),
                             {"reduction": "batchmean"}, target_grad=True),
    "kl_div_log_target_sum": Loss("kl_div", "KLDivLoss",
                                  lambda r: (_logp(r, (3, 4)), _logp(r, (3, 4))),
                                  {"reduction": "sum", "log_target": True}, target_grad=True),
    "kl_div_zero_target_none": Loss("kl_div", "KLDivLoss",
                                    lambda r: (_logp(r, (2, 3)), np.array([[0.5, 0.5, 0.0],
                                                                           [0.0, 1.0, 0.0]])),
                                    {"reduction": "none"}),
    "soft_margin": Loss("soft_margin_loss", "SoftMarginLoss",
                        lambda r: (r.standard_normal((4, 3)),
                                   np.sign(r.standard_normal((4, 3))))),
    "poisson_nll": Loss("poisson_nll_loss", "PoissonNLLLoss",
                        lambda r: (r.standard_normal((4, 3)), r.integers(0, 4, (4, 3)) * 1.0)),
    "poisson_nll_full": Loss("poisson_nll_loss", "PoissonNLLLoss",
                             lambda r: (r.uniform(0.5, 2.0, (4, 3)),
                                        r.integers(0, 4, (4, 3)) * 1.0),
                             {"log_input": False, "full": True}),
    "gaussian_nll": Loss("gaussian_nll_loss", "GaussianNLLLoss",
                         lambda r: (r.standard_normal((4, 3)), r.standard_normal((4, 3)),
                                    np.concatenate([r.uniform(0.5, 2, (4, 2)),
                                                    np.full((4, 1), 1e-8)], 1)),
                         {"full": True}, n_inputs=1, target_grad=True),
    "gaussian_nll_homoscedastic_sum": Loss("gaussian_nll_loss", "GaussianNLLLoss",
                                           lambda r: (r.standard_normal((4, 3)),
                                                      r.standard_normal((4, 3)),
                                                      r.uniform(0.5, 2, 4)),
                                           {"reduction": "sum"}, target_grad=True),
    "margin_ranking": Loss("margin_ranking_loss", "MarginRankingLoss",
                           lambda r: (r.standard_normal(6), r.standard_normal(6),
                                      np.sign(r.standard_normal(6))), {"margin": 0.2},
                           n_inputs=2),
    "hinge_embedding": Loss("hinge_embedding_loss", "HingeEmbeddingLoss",
                            lambda r: (r.standard_normal((3, 4)),
                                       np.sign(r.standard_normal((3, 4)))), {"margin": 0.5}),
    "cosine_embedding": Loss("cosine_embedding_loss", "CosineEmbeddingLoss",
                             lambda r: (r.standard_normal((4, 5)), r.standard_normal((4, 5)),
                                        np.array([1, -1, -1, 1])), {"margin": -0.2},
                             n_inputs=2),
    "triplet_margin": Loss("triplet_margin_loss", "TripletMarginLoss",
                           lambda r: tuple(r.standard_normal((4, 3)) for _ in range(3)),
                           {"margin": 1.5}, n_inputs=3),
    "triplet_margin_swap_p1": Loss("triplet_margin_loss", "TripletMarginLoss",
                                   lambda r: tuple(r.standard_normal((4, 3)) for _ in range(3)),
                                   {"margin": 2.0, "p": 1, "swap": True, "reduction": "none"},
                                   n_inputs=3),
    "multilabel_soft_margin": Loss("multilabel_soft_margin_loss", "MultiLabelSoftMarginLoss",
                                   lambda r: (r.standard_normal((3, 4)),
                                              (r.uniform(size=(3, 4)) > 0.5) * 1.0),
                                   {}, {"weight": np.array([1.0, 0.5, 2.0, 0.1])}),
}


def _loss_run(lib, row, form, arrays):
    n = row.n_inputs
    xs = [lib.tensor(a, requires_grad=True) for a in arrays[:n]]
    ys = [lib.tensor(y, requires_grad=row.target_grad and y.dtype.kind == "f")
          for y in arrays[n:]]
    extra = {k: lib.tensor(v) for k, v in row.fkwargs.items()}
    if form == "functional":
        out = getattr(lib.nn.functional, row.functional)(*xs, *ys, **row.kwargs, **extra)
    else:
        out = getattr(lib.nn, row.module)(**row.kwargs, **extra)(*xs, *ys)
    w = np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape))
    (out * lib.tensor(w)).sum().backward()
    grads = [_to_numpy(t.grad) for t in xs + ys if t.requires_grad]
    return _to_numpy(out), grads


@pytest.mark.parametrize("form", ["functional", "module"])
@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_matches_torch(name, form):
    row = LOSSES[name]
    arrays = row.make(_rng(name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e_out, e_grads = _loss_run(torch, row, form, arrays)
        out, grads = _loss_run(tg, row, form, arrays)
    assert out.shape == e_out.shape
    np.testing.assert_allclose(out, e_out, rtol=RTOL, atol=ATOL)
    assert len(grads) == len(e_grads)
    for a, e in zip(grads, e_grads):
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)


# -- the legacy size_average / reduce arguments --------------------------------------------------
LEGACY = [(sa, r) for sa in (None, True, False) for r in (None, True, False) if (sa, r) != (None, None)]
LEGACY_LOSSES = ["mse", "l1_none", "smooth_l1", "bce", "bce_logits", "nll", "cross_entropy",
                 "kl_div_batchmean", "soft_margin", "poisson_nll", "margin_ranking",
                 "triplet_margin", "multilabel_soft_margin"]


def _legacy_run(lib, row, form, arrays, sa, r):
    n = row.n_inputs
    xs = [lib.tensor(a, requires_grad=True) for a in arrays[:n]]
    ys = [lib.tensor(y) for y in arrays[n:]]
    kwargs = {k: v for k, v in row.kwargs.items() if k != "reduction"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if form == "functional":
            out = getattr(lib.nn.functional, row.functional)(*xs, *ys, size_average=sa,
                                                             reduce=r, **kwargs)
        else:
            out = getattr(lib.nn, row.module)(size_average=sa, reduce=r, **kwargs)(*xs, *ys)
    out.sum().backward()
    messages = sorted(str(w.message) for w in caught if "size_average" in str(w.message))
    return _to_numpy(out), [_to_numpy(x.grad) for x in xs], messages


@pytest.mark.parametrize("form", ["functional", "module"])
@pytest.mark.parametrize("sa,r", LEGACY, ids=[f"size_average={a}-reduce={b}" for a, b in LEGACY])
@pytest.mark.parametrize("name", LEGACY_LOSSES)
def test_legacy_reduction_arguments(name, sa, r, form):
    row = LOSSES[name]
    arrays = row.make(_rng(name))
    e_out, e_grads, e_msgs = _legacy_run(torch, row, form, arrays, sa, r)
    out, grads, msgs = _legacy_run(tg, row, form, arrays, sa, r)
    assert out.shape == e_out.shape
    np.testing.assert_allclose(out, e_out, rtol=RTOL, atol=ATOL)
    for a, e in zip(grads, e_grads):
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)
    assert msgs == e_msgs and len(msgs) == 1


def test_size_average_false_sums_as_in_the_tutorial():
    """The issue's silent wrong number: ``MSELoss(size_average=False)`` is a sum."""
    x, y = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    with pytest.warns(UserWarning, match="reduction='sum'"):
        loss = tg.nn.MSELoss(size_average=False)
    assert loss.reduction == "sum"
    assert float(loss(tg.tensor(x), tg.tensor(y))) == pytest.approx(np.sum((x - y) ** 2))
    with pytest.warns(UserWarning, match="reduction='sum'"):
        v = tg.nn.functional.mse_loss(tg.tensor(x), tg.tensor(y), size_average=False)
    assert float(v) == pytest.approx(np.sum((x - y) ** 2))


# -- single precision: the same rows in float32 (dtypes kept, numbers to float32 accuracy) -----
F32_ROWS = [n for n in LAYERS if not n.startswith(("dropout", "embedding", "multihead",
                                                     "transformer"))]


@pytest.mark.parametrize("name", bounded(F32_ROWS, 16))
def test_layer_matches_torch_in_float32(name):
    row = LAYERS[name]
    torch.manual_seed(0)
    ours, theirs = row.make(tg.nn).float(), _torch_module(row).float()
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    floats = [a.astype(np.float32) for a in _inputs(name, row.inputs)]
    weights = [rng.astype(np.float32) for rng in
               (np.ones(s) for s in _shapes(theirs, floats, row))]
    for phase in row.phases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e_out, e_gin, e_gp, _ = _run_phase(torch, theirs, floats, row.ints, row.call, phase,
                                               weights)
            out, gin, gp, _ = _run_phase(tg, ours, floats, row.ints, row.call, phase, weights)
        for a, e in zip(out + gin + [gp[k] for k in sorted(e_gp)],
                        e_out + e_gin + [e_gp[k] for k in sorted(e_gp)]):
            assert a.dtype == e.dtype, name
            assert e.dtype == np.float32 or e.dtype.kind == "i", name
            np.testing.assert_allclose(a, e, rtol=2e-4, atol=2e-5, err_msg=f"{name} ({phase})")


# -- functional forms not reached through a module row above ------------------------------------
FUNCTIONAL_ROWS = {
    "normalize": (lambda F, x: F.normalize(x, p=1.0, dim=0), [(3, 4)]),
    "pairwise_distance": (lambda F, x, y: F.pairwise_distance(x, y, p=3.0, keepdim=True),
                          [(4, 5), (4, 5)]),
    "pad_constant_3d": (lambda F, x: F.pad(x, (1, 0, 2, 1, 0, 1), value=-2.0), [(2, 2, 3)]),
    "dropout1d_eval": (lambda F, x: F.dropout1d(x, 0.4, training=False), [(2, 3, 4)]),
    "interpolate_nearest_scale": (lambda F, x: F.interpolate(x, scale_factor=(2, 3)),
                                  [(1, 2, 2, 2)]),
    "embedding_functional": (lambda F, w: F.embedding(
        (torch.tensor if F is torch.nn.functional else tg.tensor)(np.array([[0, 2], [1, 1]])),
        w, padding_idx=1), [(3, 4)]),
}

# tg.nn.functional names that this file and tests/test_eager_nn_modules.py compare with
# torch (through a module row, a loss row or a functional row); tests/test_eager_parity.py
# reads this set instead of generating random programs for them
FUNCTIONAL_COVERED = frozenset({
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool2d", "avg_pool1d",
    "batch_norm", "bilinear", "binary_cross_entropy", "celu", "conv1d",
    "cosine_embedding_loss", "cosine_similarity", "dropout1d", "dropout2d", "elu", "embedding",
    "gaussian_nll_loss", "gelu", "glu", "group_norm", "hardshrink", "hardsigmoid", "hardswish",
    "hardtanh", "hinge_embedding_loss", "huber_loss", "instance_norm", "interpolate", "kl_div",
    "layer_norm", "logsigmoid", "margin_ranking_loss", "max_pool1d", "mish",
    "multilabel_soft_margin_loss", "normalize", "pad", "pairwise_distance", "pixel_shuffle",
    "pixel_unshuffle", "poisson_nll_loss", "prelu", "relu6", "rrelu",
    "scaled_dot_product_attention", "selu", "silu", "smooth_l1_loss", "soft_margin_loss",
    "softmin", "softplus", "softshrink", "softsign", "tanhshrink", "threshold",
    "triplet_margin_loss"})


def test_functional_covered_names_exist():
    assert FUNCTIONAL_COVERED <= set(tg.nn.functional.__all__)
    assert FUNCTIONAL_COVERED <= set(dir(torch.nn.functional))


@pytest.mark.parametrize("name", list(FUNCTIONAL_ROWS))
def test_functional_form_matches_torch(name):
    fn, spec = FUNCTIONAL_ROWS[name]
    arrays = _inputs(name, spec)
    results = []
    for lib in (tg, torch):
        xs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib.nn.functional, *xs)
        (out * lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)))).sum() \
            .backward()
        results.append([_to_numpy(out)] + [_to_numpy(x.grad) for x in xs])
    for a, e in zip(*results):
        assert a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=RTOL, atol=ATOL)
