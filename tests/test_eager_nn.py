"""tg.nn.functional against independent NumPy references, central finite differences,
the functional ``tg.grad`` of those references and (when installed) PyTorch itself; the
Module bookkeeping; default initialisation; SGD and Adam against hand-computed steps."""
import math

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn, optim

F = nn.functional
RNG = np.random.default_rng(0)
TARGET = np.array([0, 3, 1, 4])
TARGET_IGNORED = np.array([0, 3, -100, 4])
CLASS_WEIGHT = np.array([0.5, 1.0, 2.0, 1.5, 0.25])


# -- NumPy references (written independently of the implementation) --------------------
def log_softmax_ref(x, axis=1):
    z = x - np.max(x, axis=axis, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))


def conv2d_ref(x, w, b, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
    """Sum over kernel offsets of a strided slice times the weight's slice: no im2col."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    kh, kw = w.shape[2:]
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    ho = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    wo = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = 0
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dh:i * dh + sh * (ho - 1) + 1:sh, j * dw:j * dw + sw * (wo - 1) + 1:sw]
            out = out + np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out + np.reshape(b, (1, -1, 1, 1))


def conv_transpose2d_ref(x, w, b, stride, padding, output_padding):
    """Scatter every input pixel times the kernel into the output, then crop the padding."""
    (sh, sw), (ph, pw), (oh, ow) = stride, padding, output_padding
    n, _, h, wd = x.shape
    kh, kw = w.shape[2:]
    full = np.zeros((n, w.shape[1], (h - 1) * sh + kh + oh, (wd - 1) * sw + kw + ow))
    for i in range(kh):
        for j in range(kw):
            full[:, :, i:i + sh * (h - 1) + 1:sh, j:j + sw * (wd - 1) + 1:sw] += np.einsum(
                "nchw,co->nohw", x, w[:, :, i, j])
    return full[:, :, ph:full.shape[2] - ph, pw:full.shape[3] - pw] + np.reshape(b, (1, -1, 1, 1))


def pool_ref(x, k, s, p, reduce, pad_value):
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)), constant_values=pad_value)
    ho, wo = (xp.shape[2] - k) // s + 1, (xp.shape[3] - k) // s + 1
    patches = [xp[:, :, i:i + s * (ho - 1) + 1:s, j:j + s * (wo - 1) + 1:s]
               for i in range(k) for j in range(k)]
    out = patches[0]
    for q in patches[1:]:
        out = reduce(out, q)
    return out


def nll_ref(logp, t, w=None, ignore=-100):
    keep = t != ignore
    rows, cols = np.arange(len(t))[keep], t[keep]
    wt = np.ones(len(cols)) if w is None else w[cols]
    return -np.sum(logp[rows, cols] * wt) / np.sum(wt)


def shapes(*s):
    return [RNG.standard_normal(shape) for shape in s]


# name: (eager call given a functional module F and a tensor constructor T,
#        NumPy reference, float inputs (all differentiated), reference traceable by tg.grad)
CASES = {
    "relu": (lambda F, T, x: F.relu(x), lambda x: np.maximum(x, 0), shapes((3, 4)), True),
    "sigmoid": (lambda F, T, x: F.sigmoid(x), lambda x: 1 / (1 + np.exp(-x)), shapes((3, 4)),
                True),
    "tanh": (lambda F, T, x: F.tanh(x), np.tanh, shapes((3, 4)), True),
    "softmax": (lambda F, T, x: F.softmax(x, dim=1), lambda x: np.exp(log_softmax_ref(x)),
                shapes((3, 5)), True),
    "log_softmax": (lambda F, T, x: F.log_softmax(x, dim=0), lambda x: log_softmax_ref(x, 0),
                    shapes((4, 3)), True),
    "linear": (lambda F, T, x, w, b: F.linear(x, w, b), lambda x, w, b: x @ w.T + b,
               shapes((4, 5), (3, 5), (3,)), True),
    "linear_nobias_3d": (lambda F, T, x, w: F.linear(x, w), lambda x, w: x @ w.T,
                         shapes((2, 4, 5), (3, 5)), True),
    "mse_loss": (lambda F, T, x, y: F.mse_loss(x, y), lambda x, y: np.mean((x - y) ** 2),
                 shapes((4, 3), (4, 3)), True),
    "mse_loss_sum": (lambda F, T, x, y: F.mse_loss(x, y, reduction="sum"),
                     lambda x, y: np.sum((x - y) ** 2), shapes((4, 3), (4, 3)), True),
    "mse_loss_none": (lambda F, T, x, y: F.mse_loss(x, y, reduction="none"),
                      lambda x, y: (x - y) ** 2, shapes((4, 3), (4, 3)), True),
    "cross_entropy": (lambda F, T, x: F.cross_entropy(x, T(TARGET)),
                      lambda x: nll_ref(log_softmax_ref(x), TARGET), shapes((4, 5)), True),
    "cross_entropy_weight_ignore": (
        lambda F, T, x: F.cross_entropy(x, T(TARGET_IGNORED), weight=T(CLASS_WEIGHT)),
        lambda x: nll_ref(log_softmax_ref(x), TARGET_IGNORED, CLASS_WEIGHT), shapes((4, 5)),
        True),
    "cross_entropy_sum": (
        lambda F, T, x: F.cross_entropy(x, T(TARGET), reduction="sum"),
        lambda x: -np.sum(log_softmax_ref(x)[np.arange(4), TARGET]), shapes((4, 5)), True),
    "cross_entropy_label_smoothing": (
        lambda F, T, x: F.cross_entropy(x, T(TARGET), label_smoothing=0.2),
        lambda x: 0.8 * nll_ref(log_softmax_ref(x), TARGET)
        - 0.2 / 5 * np.mean(np.sum(log_softmax_ref(x), axis=1)), shapes((4, 5)), True),
    "nll_loss": (lambda F, T, x: F.nll_loss(x, T(TARGET)), lambda x: nll_ref(x, TARGET),
                 shapes((4, 5)), True),
    "conv2d": (lambda F, T, x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2)),
               lambda x, w, b: conv2d_ref(x, w, b, (2, 1), (1, 1), (1, 2)),
               shapes((2, 3, 7, 6), (4, 3, 3, 2), (4,)), True),
    "conv2d_nobias": (lambda F, T, x, w: F.conv2d(x, w),
                      lambda x, w: conv2d_ref(x, w, np.zeros(w.shape[0])),
                      shapes((1, 2, 5, 5), (3, 2, 3, 3)), True),
    "conv_transpose2d": (
        lambda F, T, x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
        lambda x, w, b: conv_transpose2d_ref(x, w, b, (2, 2), (1, 1), (1, 1)),
        shapes((2, 3, 4, 5), (3, 2, 3, 3), (2,)), False),
    "max_pool2d": (lambda F, T, x: F.max_pool2d(x, 3, stride=2, padding=1),
                   lambda x: pool_ref(x, 3, 2, 1, np.maximum, -np.inf), shapes((2, 3, 7, 6)),
                   True),
    "avg_pool2d": (lambda F, T, x: F.avg_pool2d(x, 2),
                   lambda x: pool_ref(x, 2, 2, 0, np.add, 0.0) / 4, shapes((2, 3, 6, 5)), True),
    # torch has flatten as torch.flatten only, not in torch.nn.functional
    "flatten": (lambda F, T, x: F.flatten(x, 1) if F is tg.nn.functional else x.flatten(1),
                lambda x: np.reshape(x, (2, -1)), shapes((2, 3, 2)), True),
}


def run_eager(name, arrays):
    fn = CASES[name][0]
    xs = [tg.tensor(a, requires_grad=True) for a in arrays]
    return fn(F, tg.tensor, *xs), xs


def cotangent(shape):
    return np.random.default_rng(1).standard_normal(shape)


def eager_grads(name):
    arrays = CASES[name][2]
    out, xs = run_eager(name, arrays)
    g = cotangent(tuple(out.shape))
    (out * tg.tensor(g)).sum().backward()
    return out, g, [x.grad.numpy() for x in xs]


@pytest.mark.parametrize("name", CASES)
def test_forward_matches_numpy_reference(name):
    _, ref, arrays, _ = CASES[name]
    out, _ = run_eager(name, arrays)
    np.testing.assert_allclose(out.detach().numpy(), ref(*arrays), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", CASES)
def test_gradient_matches_central_differences(name):
    fn, _, arrays, _ = CASES[name]
    out, g, grads = eager_grads(name)

    def f(*values):
        with tg.no_grad():
            return float(np.sum(fn(F, tg.tensor, *[tg.tensor(v) for v in values]).numpy() * g))

    h = 1e-6
    for k, a in enumerate(arrays):
        numeric = np.zeros_like(a)
        for i in np.ndindex(a.shape):
            plus = [v.copy() for v in arrays]
            minus = [v.copy() for v in arrays]
            plus[k][i] += h
            minus[k][i] -= h
            numeric[i] = (f(*plus) - f(*minus)) / (2 * h)
        np.testing.assert_allclose(grads[k], numeric, rtol=1e-6, atol=1e-6,
                                   err_msg=f"{name}: input {k}")


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if c[3]])
def test_gradient_matches_functional_grad_of_reference(name):
    _, ref, arrays, _ = CASES[name]
    _, g, grads = eager_grads(name)
    argnums = tuple(range(len(arrays)))
    expected = tg.grad(lambda *xs: np.sum(ref(*xs) * g), argnums=argnums)(*arrays)
    for k, (a, e) in enumerate(zip(grads, expected)):
        np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-12, err_msg=f"{name}: input {k}")


@pytest.mark.parametrize("name", CASES)
def test_matches_pytorch(name):
    torch = pytest.importorskip("torch")
    fn, _, arrays, _ = CASES[name]
    out, g, grads = eager_grads(name)
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    expected = fn(torch.nn.functional, torch.tensor, *xs)
    (expected * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    for a, x in zip(grads, xs):
        np.testing.assert_allclose(a, x.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert out.grad_fn.name() == expected.grad_fn.name()


def test_conv_transpose2d_is_the_adjoint_of_conv2d():
    x, w, y = shapes((2, 3, 7, 7), (4, 3, 3, 3), (2, 4, 4, 4))
    conv = F.conv2d(tg.tensor(x), tg.tensor(w), stride=2, padding=1).numpy()
    back = F.conv_transpose2d(tg.tensor(y), tg.tensor(w), stride=2, padding=1).numpy()
    assert back.shape == x.shape
    np.testing.assert_allclose(np.sum(conv * y), np.sum(x * back), rtol=1e-12)


def test_unbatched_conv_and_pool_drop_the_batch_dimension():
    x, w, b = shapes((3, 6, 6), (2, 3, 3, 3), (2,))
    out = F.conv2d(tg.tensor(x), tg.tensor(w), tg.tensor(b), padding=1)
    assert out.shape == (2, 6, 6)
    np.testing.assert_allclose(out.numpy(), conv2d_ref(x[None], w, b, padding=(1, 1))[0],
                               rtol=1e-12)
    assert F.max_pool2d(out, 2).shape == (2, 3, 3)


# -- errors -----------------------------------------------------------------------------
def test_shape_errors_name_both_shapes():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(4x3 and 2x5\)"):
        F.linear(tg.ones(4, 3), tg.ones(5, 2))
    with pytest.raises(RuntimeError, match=r"weight of size \[8, 3, 3, 3\], expected "
                                           r"input\[1, 4, 5, 5\] to have 3 channels, but got 4"):
        F.conv2d(tg.ones(1, 4, 5, 5), tg.ones(8, 3, 3, 3))
    with pytest.raises(RuntimeError, match=r"Kernel size can't be greater"):
        F.conv2d(tg.ones(1, 3, 2, 2), tg.ones(8, 3, 3, 3))
    with pytest.raises(RuntimeError, match="Expected 3D \\(unbatched\\) or 4D"):
        F.conv2d(tg.ones(3, 5), tg.ones(8, 3, 3, 3))
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 8 elements"):
        F.conv2d(tg.ones(1, 3, 5, 5), tg.ones(8, 3, 3, 3), tg.ones(5))
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(tg.ones(1, 1, 6, 6), 2, padding=2)
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target "
                                         r"batch_size \(2\)"):
        F.cross_entropy(tg.ones(3, 4), tg.tensor([0, 1]))


def test_unsupported_options_are_rejected_clearly():
    # (grouped convolutions are supported now: tests/test_eager_nn_torch.py compares them)
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    # (ceil_mode is supported now: tests/test_eager_nn_torch.py compares it with torch)


def test_target_and_reduction_errors():
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(tg.ones(2, 4), tg.tensor([1, 7]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got "
                                           "Double"):
        F.nll_loss(tg.ones(2, 4), tg.tensor([1.0, 2.0], dtype=tg.float64))
    with pytest.raises(ValueError, match="bogus is not a valid value for reduction"):
        F.mse_loss(tg.ones(2), tg.ones(2), reduction="bogus")
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.dropout(tg.ones(2), p=1.5)


# -- dropout ----------------------------------------------------------------------------
def test_dropout_is_inverted_seeded_and_off_in_eval():
    x = tg.ones(200, 50, requires_grad=True)
    tg.manual_seed(3)
    y = F.dropout(x, p=0.2)
    kept = y.detach().numpy() != 0
    assert abs(kept.mean() - 0.8) < 0.02
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / 0.8)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.8)   # the same mask scales the gradient
    tg.manual_seed(3)
    np.testing.assert_array_equal(F.dropout(x, p=0.2).detach().numpy(), y.detach().numpy())
    assert F.dropout(x, p=0.2, training=False) is x
    layer = nn.Dropout(0.5).eval()
    assert layer(x) is x and "p=0.5" in repr(layer)


# -- modules ----------------------------------------------------------------------------
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.body = nn.Sequential(nn.Linear(4 * 4 * 4, 8), nn.ReLU(), nn.Dropout(0.5))
        self.head = nn.Linear(8, 3, bias=False)
        self.scale = 2.0

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2).flatten(1)
        return self.head(self.body(x)) * self.scale


def test_parameters_children_and_modules():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["conv.weight", "conv.bias", "body.0.weight", "body.0.bias", "head.weight"]
    assert sum(p.numel() for p in net.parameters()) == 4 * 9 + 4 + 64 * 8 + 8 + 8 * 3
    assert [n for n, _ in net.named_children()] == ["conv", "body", "head"]
    assert len(list(net.modules())) == 7
    assert all(isinstance(p, nn.Parameter) and isinstance(p, tg.Tensor) and p.requires_grad
               and p.is_leaf for p in net.parameters())
    assert net.scale == 2.0 and "scale" not in dict(net.named_parameters())
    shared = nn.Sequential(net.head, net.head)
    assert len(list(shared.parameters())) == 1          # a shared parameter counts once


def test_setattr_registers_and_rejects():
    m = nn.Module()
    m.w = nn.Parameter(tg.ones(2))
    m.sub = nn.Linear(2, 2)
    assert list(m._parameters) == ["w"] and list(m._modules) == ["sub"]
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'w'"):
        m.w = tg.ones(2)
    m.w = None
    assert list(m.parameters()) == list(m.sub.parameters())
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nope'"):
        m.nope  # noqa: B018

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(tg.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_parameter_is_a_tensor_sharing_memory():
    data = tg.zeros(3)
    p = nn.Parameter(data)
    assert p.requires_grad and p.is_leaf and type(p) is nn.Parameter
    data._data[0] = 5.0
    assert p[0].item() == 5.0
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert not nn.Parameter(tg.zeros(2), requires_grad=False).requires_grad
    y = (p * 2).sum()
    assert type(y) is tg.Tensor
    y.backward()
    np.testing.assert_array_equal(p.grad.numpy(), [2.0, 2.0, 2.0])


def test_forward_backward_train_eval_and_zero_grad():
    tg.manual_seed(0)
    net = Net()
    x = tg.randn(2, 1, 8, 8)
    assert net.training and all(m.training for m in net.modules())
    net.eval()
    assert not any(m.training for m in net.modules())
    np.testing.assert_array_equal(net(x).detach().numpy(), net(x).detach().numpy())
    net.train()
    assert net.body[2].training
    net(x).sum().backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(np.all(p.grad.numpy() == 0) for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_state_dict_round_trip():
    tg.manual_seed(1)
    a, b = Net().eval(), Net().eval()
    x = tg.randn(3, 1, 8, 8)
    sd = a.state_dict()
    assert list(sd) == [n for n, _ in a.named_parameters()]
    assert not any(v.requires_grad for v in sd.values())
    assert not np.allclose(a(x).detach().numpy(), b(x).detach().numpy())
    result = b.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    b.head.weight.grad = None
    assert b.head.weight._data is not a.head.weight._data    # loaded by copying


def test_load_state_dict_errors():
    net = Net()
    sd = net.state_dict()
    del sd["head.weight"]
    sd["extra"] = tg.ones(1)
    with pytest.raises(RuntimeError, match=r'Missing key\(s\) in state_dict: "head.weight"'):
        net.load_state_dict(sd)
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["head.weight"] and result.unexpected_keys == ["extra"]
    with pytest.raises(RuntimeError, match=r"size mismatch for head.weight: copying a param "
                                           r"with shape torch.Size\(\[2, 8\]\)"):
        net.load_state_dict({**net.state_dict(), "head.weight": tg.ones(2, 8)})


def test_buffers_are_in_state_dict():
    m = nn.Linear(2, 2)
    m.register_buffer("count", tg.zeros(1))
    m.register_buffer("scratch", tg.zeros(1), persistent=False)
    assert list(m.state_dict()) == ["weight", "bias", "count"]
    assert len(list(m.buffers())) == 2 and len(list(m.parameters())) == 2


def test_sequential_container_and_repr():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[1], nn.ReLU) and seq[-1] is seq[2]
    assert [type(m).__name__ for m in seq] == ["Linear", "ReLU", "Linear"]
    assert len(seq[:2]) == 2 and seq[:2][0] is seq[0]
    with pytest.raises(IndexError):
        seq[3]  # noqa: B018
    assert repr(seq) == ("Sequential(\n"
                         "  (0): Linear(in_features=2, out_features=3, bias=True)\n"
                         "  (1): ReLU()\n"
                         "  (2): Linear(in_features=3, out_features=1, bias=True)\n"
                         ")")
    assert repr(nn.Conv2d(1, 2, 3, padding=1, bias=False)) == \
        "Conv2d(1, 2, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)"
    nested = repr(nn.Sequential(nn.Sequential(nn.Tanh())))
    assert nested == "Sequential(\n  (0): Sequential(\n    (0): Tanh()\n  )\n)"


def test_loss_modules():
    x, y = tg.randn(4, 5), tg.tensor(TARGET)
    np.testing.assert_allclose(nn.CrossEntropyLoss()(x, y).item(),
                               nll_ref(log_softmax_ref(x.numpy()), TARGET))
    np.testing.assert_allclose(nn.MSELoss(reduction="sum")(x, x * 2).item(),
                               np.sum(x.numpy() ** 2))


# -- initialisation ---------------------------------------------------------------------
def test_default_init_ranges_follow_fan_in():
    tg.manual_seed(0)
    lin = nn.Linear(100, 50)
    conv = nn.Conv2d(3, 8, 5)
    for layer, fan_in in ((lin, 100), (conv, 75)):
        bound = 1 / math.sqrt(fan_in)
        for p in (layer.weight, layer.bias):
            v = p.detach().numpy()
            assert np.abs(v).max() <= bound
            if v.size > 100:    # uniform over the whole range, not a narrower one
                assert np.abs(v).max() > 0.95 * bound and abs(v.mean()) < 0.1 * bound
    assert lin.weight.shape == (50, 100) and conv.weight.shape == (8, 3, 5, 5)
    tg.manual_seed(0)
    np.testing.assert_array_equal(nn.Linear(100, 50).weight.detach().numpy(),
                                  lin.weight.detach().numpy())


def test_init_functions():
    w = nn.Parameter(tg.empty(200, 300))
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.uniform_()            # outside no_grad, as in PyTorch
    nn.init.kaiming_uniform_(w, nonlinearity="relu")
    bound = math.sqrt(2) * math.sqrt(3 / 300)
    assert 0.99 * bound < np.abs(w.detach().numpy()).max() <= bound
    nn.init.xavier_uniform_(w, gain=2.0)
    bound = 2.0 * math.sqrt(6 / 500)
    assert 0.99 * bound < np.abs(w.detach().numpy()).max() <= bound
    nn.init.normal_(w, mean=1.0, std=0.5)
    assert abs(w.detach().numpy().mean() - 1.0) < 0.01 and abs(w.detach().numpy().std() - 0.5) < 0.01
    nn.init.constant_(w, 0.3)
    assert np.all(w.detach().numpy() == 0.3) and w.requires_grad
    assert np.all(nn.init.zeros_(w).detach().numpy() == 0)
    assert np.all(nn.init.ones_(w).detach().numpy() == 1)
    assert nn.init.calculate_gain("tanh") == 5 / 3
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(tg.empty(3))


def test_default_dtype_float32_parameters():
    old = tg.get_default_dtype()
    try:
        tg.set_default_dtype(tg.float32)
        model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), nn.Linear(2 * 2 * 2, 2))
        assert all(p.dtype == np.float32 for p in model.parameters())
        out = model(tg.randn(3, 1, 4, 4))
        assert out.dtype == np.float32
        F.cross_entropy(out, tg.tensor([0, 1, 1])).backward()
        opt = optim.Adam(model.parameters(), lr=0.1)
        opt.step()
        assert all(p.dtype == np.float32 and p.grad.dtype == np.float32
                   for p in model.parameters())
    finally:
        tg.set_default_dtype(old)
    assert nn.Linear(2, 2).weight.dtype == np.float32      # torch's default
    tg.set_default_dtype(tg.float64)
    try:
        assert nn.Linear(2, 2).weight.dtype == np.float64  # parameters follow the default
    finally:
        tg.set_default_dtype(old)


# -- optimizers -------------------------------------------------------------------------
W0 = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
GRADS = [np.array([[0.1, -0.2, 0.3], [0.0, 0.5, -0.4]]),
         np.array([[-0.3, 0.1, 0.2], [0.6, -0.1, 0.05]]),
         np.array([[0.2, 0.2, -0.1], [-0.2, 0.3, 0.1]])]


def three_steps(make_opt, lib=tg):
    p = lib.nn.Parameter(lib.tensor(W0.copy()))
    opt = make_opt(lib, [p])
    for g in GRADS:
        p.grad = lib.tensor(g)
        opt.step()
    return p.detach().numpy()


def sgd_by_hand(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    w, buf = W0.copy(), None
    for g in GRADS:
        d = g + weight_decay * w
        if momentum:
            buf = d.copy() if buf is None else momentum * buf + (1 - dampening) * d
            d = d + momentum * buf if nesterov else buf
        w = w - lr * d
    return w


def adam_by_hand(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False):
    w, m, v, vmax = W0.copy(), 0.0, 0.0, 0.0
    for t, g in enumerate(GRADS, start=1):
        g = g + weight_decay * w
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        vmax = np.maximum(vmax, v)
        m_hat = m / (1 - betas[0] ** t)
        v_hat = (vmax if amsgrad else v) / (1 - betas[1] ** t)
        w = w - lr * m_hat / (np.sqrt(v_hat) + eps)
    return w


OPTIMIZERS = {
    "sgd": (lambda L, ps: L.optim.SGD(ps, lr=0.1), sgd_by_hand(0.1)),
    "sgd_momentum_dampening": (
        lambda L, ps: L.optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.25),
        sgd_by_hand(0.1, momentum=0.9, dampening=0.25)),
    "sgd_nesterov_weight_decay": (
        lambda L, ps: L.optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1),
        sgd_by_hand(0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    "adam": (lambda L, ps: L.optim.Adam(ps, lr=0.01), adam_by_hand(0.01)),
    "adam_weight_decay_amsgrad": (
        lambda L, ps: L.optim.Adam(ps, lr=0.1, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.2,
                                   amsgrad=True),
        adam_by_hand(0.1, (0.8, 0.9), 1e-6, 0.2, amsgrad=True)),
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_matches_hand_computed_updates(name):
    make, expected = OPTIMIZERS[name]
    np.testing.assert_allclose(three_steps(make), expected, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_matches_pytorch(name):
    torch = pytest.importorskip("torch")
    make, _ = OPTIMIZERS[name]
    np.testing.assert_allclose(three_steps(make), three_steps(make, torch), rtol=1e-13,
                               atol=1e-15)


def test_adamw_decouples_weight_decay():
    got = three_steps(lambda L, ps: L.optim.AdamW(ps, lr=0.1, weight_decay=0.5))
    w, m, v = W0.copy(), 0.0, 0.0
    for t, g in enumerate(GRADS, start=1):
        w = w * (1 - 0.1 * 0.5)
        m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
        w = w - 0.1 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    np.testing.assert_allclose(got, w, rtol=1e-13)


def test_optimizer_bookkeeping():
    a, b = nn.Parameter(tg.ones(2)), nn.Parameter(tg.ones(2))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[1]["momentum"] == 0.9
    (a.sum() + b.sum()).backward()
    version = a._vc.v
    opt.step()
    np.testing.assert_allclose(a.detach().numpy(), [0.9, 0.9])
    np.testing.assert_allclose(b.detach().numpy(), [0.5, 0.5])
    assert a._vc.v == version + 1
    state = opt.state_dict()
    assert state["param_groups"][1]["params"] == [1]
    np.testing.assert_array_equal(state["state"][0]["momentum_buffer"].numpy(), [1.0, 1.0])
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    fresh = optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.3, momentum=0.9)
    fresh.load_state_dict(state)
    assert fresh.param_groups[1]["lr"] == 0.5
    np.testing.assert_array_equal(fresh.state[b]["momentum_buffer"], [1.0, 1.0])


def test_optimizer_argument_errors():
    p = [nn.Parameter(tg.ones(1))]
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        optim.SGD(p, lr=-1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum"):
        optim.SGD(p, lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1: 1.0"):
        optim.Adam(p, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])


def test_step_counts_as_an_inplace_change():
    """A graph that saved a parameter's old value cannot backward after the step."""
    p = nn.Parameter(tg.tensor([1.0, 2.0]))
    opt = optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    y = (p * p).sum()
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(6, 4), (3, 4, 2), (4,)])
def test_nll_without_weights_or_ignored_targets_is_the_weighted_path_bit_for_bit(reduction, shape):
    """All-valid targets and no weight take a shorter graph (no selection, no product by
    ones): its values and gradients are those of the general path (weights of one)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(np.float32)
    if len(shape) > 1:
        x[(0, 1) + (0,) * (len(shape) - 2)] = -np.inf        # class 1: no sample picks it
    n_classes = shape[1] if len(shape) > 1 else shape[0]
    t = rng.integers(0, n_classes, (shape[0],) + shape[2:] if len(shape) > 1 else ())
    if len(shape) > 1:
        t[...] = np.where(t == 1, 0, t)

    def run(weight):
        z = tg.tensor(x, requires_grad=True)
        out = tg.nn.functional.cross_entropy(z, tg.tensor(t), weight=weight, reduction=reduction)
        out.sum().backward()
        return out.detach().numpy().tobytes(), z.grad.numpy().tobytes()

    assert run(None) == run(tg.ones(n_classes))
