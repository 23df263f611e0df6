"""``F.conv3d``/``conv_transpose3d``/``max_pool3d``/``avg_pool3d`` (and their modules),
``F.ctc_loss``/``nn.CTCLoss`` and ``F.multi_margin_loss``/``nn.MultiMarginLoss`` against
PyTorch on generated cases: values, dtypes, shapes, ``grad_fn`` names, gradients to every
operand, and the errors of misuse."""
import itertools

import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg

torch = pytest.importorskip("torch")


def _compare(name, arrays, opts, dtype="float64", lib_fn=None):
    """``name`` (an F function) on the same leaves in both libraries, a weighted sum
    backpropagated: outputs and every leaf's gradient."""
    res = []
    for lib in (tg, torch):
        fn = getattr(lib.nn.functional, name) if lib_fn is None else lib_fn(lib)
        leaves = [None if a is None else lib.tensor(a.astype(dtype), requires_grad=True)
                  for a in arrays]
        y = fn(*leaves, **opts)
        w = lib.tensor(np.sin(np.arange(y.numel())).reshape(tuple(y.shape)).astype(dtype))
        (y * w).sum().backward()
        res.append((y, [None if t is None else t.grad for t in leaves]))
    (y, grads), (ty, tgrads) = res
    tol = dict(rtol=1e-11, atol=1e-11) if dtype == "float64" else dict(rtol=2e-4, atol=2e-4)
    assert tuple(y.shape) == tuple(ty.shape)
    assert y.dtype == getattr(tg, dtype) and y.grad_fn.name() == ty.grad_fn.name()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), **tol)
    for g, tgr in zip(grads, tgrads):
        if g is not None:
            np.testing.assert_allclose(g.numpy(), tgr.numpy(), **tol)


CONV3D = list(itertools.product(
    [(1, 1, 1), (2, 1, 2)], [0, (1, 0, 2), "same", "valid"], [1, (2, 1, 1)], [1, 2],
    [True, False]))
CONV3D = [c for c in CONV3D if not (c[1] == "same" and c[0] != (1, 1, 1))]


@pytest.mark.parametrize("case", bounded(CONV3D, 6), ids=str)
def test_conv3d_matches_torch(case):
    stride, padding, dilation, groups, bias = case
    rs = np.random.RandomState(len(str(case)))
    x = rs.randn(2, 4, 5, 6, 5)
    w = rs.randn(6, 4 // groups, 2, 3, 2)
    b = rs.randn(6) if bias else None
    _compare("conv3d", [x, w, b], dict(stride=stride, padding=padding, dilation=dilation,
                                       groups=groups))


def test_conv3d_float32_unbatched_and_module():
    rs = np.random.RandomState(0)
    _compare("conv3d", [rs.randn(3, 4, 5, 4), rs.randn(2, 3, 3, 1, 2)], dict(padding=1),
             dtype="float32")
    for lib in (tg, torch):
        lib.manual_seed(0)
    m, tm = tg.nn.Conv3d(3, 4, (2, 3, 3), stride=2, padding=1, bias=True), \
        torch.nn.Conv3d(3, 4, (2, 3, 3), stride=2, padding=1, bias=True)
    assert repr(m) == repr(tm)
    assert [tuple(p.shape) for p in m.parameters()] == [tuple(p.shape) for p in tm.parameters()]
    m.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = rs.randn(2, 3, 4, 7, 6).astype(np.float32)
    np.testing.assert_allclose(m(tg.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", [((1, 1, 1), 0, 0, 1, 1), ((2, 1, 3), (1, 1, 0), (1, 0, 2), 1, 2),
                                  ((2, 2, 1), 1, (1, 0, 0), (2, 1, 1), 1)], ids=str)
def test_conv_transpose3d_matches_torch(case):
    stride, padding, output_padding, dilation, groups = case
    rs = np.random.RandomState(1)
    x, w, b = rs.randn(2, 4, 3, 4, 3), rs.randn(4, 6 // groups, 2, 3, 2), rs.randn(6)
    _compare("conv_transpose3d", [x, w, b], dict(stride=stride, padding=padding,
                                                 output_padding=output_padding,
                                                 groups=groups, dilation=dilation))
    m = tg.nn.ConvTranspose3d(4, 6, 2, stride=2, groups=groups)
    tm = torch.nn.ConvTranspose3d(4, 6, 2, stride=2, groups=groups)
    assert repr(m) == repr(tm) and m.weight.shape == tm.weight.shape


@pytest.mark.parametrize("opts", [dict(kernel_size=2), dict(kernel_size=(2, 3, 2), stride=(1, 2, 2),
                                                           padding=(1, 1, 0)),
                                  dict(kernel_size=3, stride=1, padding=1, dilation=(2, 1, 1)),
                                  dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                  dict(kernel_size=(2, 3, 2), stride=(2, 2, 3), ceil_mode=True)],
                         ids=["k2", "strided-padded", "dilated", "ceil-padded", "ceil"])
def test_pool3d_matches_torch(opts):
    rs = np.random.RandomState(2)
    x = rs.randn(2, 3, 6, 7, 5)
    _compare("max_pool3d", [x], opts)
    avg = {k: v for k, v in opts.items() if k != "dilation"}
    _compare("avg_pool3d", [x], avg)
    if avg.get("padding"):
        _compare("avg_pool3d", [x], dict(avg, count_include_pad=False))
    _compare("avg_pool3d", [x], dict(avg, divisor_override=5))
    for m, tm in [(tg.nn.MaxPool3d(2), torch.nn.MaxPool3d(2)),
                  (tg.nn.AvgPool3d(2), torch.nn.AvgPool3d(2))]:
        np.testing.assert_allclose(m(tg.tensor(x)).numpy(), tm(torch.tensor(x)).numpy(),
                                   rtol=1e-12)


def test_conv3d_errors_as_torch():
    for lib in (tg, torch):
        F = lib.nn.functional
        with pytest.raises(RuntimeError, match="to have 2 channels, but got 3 channels"):
            F.conv3d(lib.zeros(1, 3, 4, 4, 4), lib.zeros(5, 2, 2, 2, 2))
        with pytest.raises(RuntimeError, match="Expected 4D .unbatched. or 5D .batched. input "
                                               "to conv3d"):
            F.conv3d(lib.zeros(3, 4, 4), lib.zeros(5, 3, 2, 2, 2))
        with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual "
                                               "input size"):
            F.conv3d(lib.zeros(1, 2, 1, 4, 4), lib.zeros(3, 2, 2, 2, 2))
        with pytest.raises(RuntimeError, match="padding='same' is not supported for strided"):
            F.conv3d(lib.zeros(1, 2, 4, 4, 4), lib.zeros(3, 2, 2, 2, 2), stride=2,
                     padding="same")
        with pytest.raises(RuntimeError, match="non-empty 4D or 5D"):
            F.max_pool3d(lib.zeros(2, 4, 4), 2)


CTC = list(itertools.product(["none", "sum", "mean"], [False, True], ["padded", "concat"],
                             ["log_probs", "logits"], ["float64", "float32"]))


@pytest.mark.parametrize("case", bounded(CTC, 8), ids=str)
def test_ctc_loss_matches_torch(case):
    reduction, zero_inf, layout, via, dtype = case
    rs = np.random.RandomState(len(str(case)))
    t_max, n, c = 8, 4, 5
    logits = rs.randn(t_max, n, c).astype(dtype)
    tl = np.array([3, 2, 4, 0])
    il = np.array([8, 5, 4, 3])         # sample 2 cannot align (4 labels, a repeat, 4 steps)
    padded = np.array([[1, 2, 2, 0], [3, 1, 0, 0], [4, 4, 1, 2], [0, 0, 0, 0]])
    targets = padded if layout == "padded" else \
        np.concatenate([padded[i, :tl[i]] for i in range(n)])
    if not zero_inf:                    # an infinite loss has no gradient to compare
        il[2] = 6
    res = []
    for lib in (tg, torch):
        z = lib.tensor(logits, requires_grad=True)
        lp = z.log_softmax(2) if via == "logits" else z
        loss = lib.nn.functional.ctc_loss(lp, lib.tensor(targets), lib.tensor(il),
                                          lib.tensor(tl), blank=0, reduction=reduction,
                                          zero_infinity=zero_inf)
        w = lib.tensor(np.arange(1.0, loss.numel() + 1).reshape(tuple(loss.shape)).astype(dtype))
        (loss * w).sum().backward()
        res.append((loss, z.grad))
    (loss, g), (tloss, tgr) = res
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == "float64" else dict(rtol=1e-4, atol=1e-4)
    assert loss.dtype == getattr(tg, dtype) and tuple(loss.shape) == tuple(tloss.shape)
    assert loss.grad_fn.name() == tloss.grad_fn.name()
    np.testing.assert_allclose(loss.detach().numpy(), tloss.detach().numpy(), **tol)
    np.testing.assert_allclose(g.numpy(), tgr.numpy(), **tol)


def test_ctc_loss_unbatched_blank_module_and_infinity():
    rs = np.random.RandomState(5)
    lp = np.log(rs.dirichlet(np.ones(4), size=6))        # (T, C), unbatched
    for lib in (tg, torch):
        lib_lp = lib.tensor(lp, requires_grad=True)
        out = lib.nn.CTCLoss(blank=3, reduction="none")(lib_lp, lib.tensor([0, 2, 2]),
                                                        lib.tensor([6]), lib.tensor([3]))
        out.backward()
        if lib is tg:
            ours = (out.detach().numpy(), lib_lp.grad.numpy())
        else:
            np.testing.assert_allclose(ours[0], out.detach().numpy(), rtol=1e-12)
            np.testing.assert_allclose(ours[1], lib_lp.grad.numpy(), rtol=1e-10, atol=1e-12)
            assert ours[0].shape == ()
    lp3 = lp[:, None]
    for lib in (tg, torch):
        inf = lib.nn.functional.ctc_loss(lib.tensor(lp3), lib.tensor([[1, 1, 1]]),
                                         lib.tensor([3]), lib.tensor([3]), reduction="none")
        assert np.isinf(inf.numpy()).all()


def test_ctc_loss_errors_as_torch():
    lp = np.zeros((6, 2, 5))
    t, il, tl = np.array([[1, 2, 2], [3, 1, 0]]), np.array([6, 4]), np.array([3, 2])
    for lib in (tg, torch):
        F = lib.nn.functional
        args = (lib.tensor(lp), lib.tensor(t))
        with pytest.raises(RuntimeError, match="blank must be in label range"):
            F.ctc_loss(*args, lib.tensor(il), lib.tensor(tl), blank=5)
        with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 6, "
                                               "but got value 7"):
            F.ctc_loss(*args, lib.tensor([7, 4]), lib.tensor(tl))
        with pytest.raises(RuntimeError, match="Expected tensor to have size at least 4 at "
                                               "dimension 1, but got size 3"):
            F.ctc_loss(*args, lib.tensor(il), lib.tensor([4, 2]))


MM = list(itertools.product([1, 2], [None, "w"], ["none", "sum", "mean"], [0.5, 1.0],
                            ["float64", "float32"]))


@pytest.mark.parametrize("case", bounded(MM, 10), ids=str)
def test_multi_margin_loss_matches_torch(case):
    p, weight, reduction, margin, dtype = case
    rs = np.random.RandomState(len(str(case)))
    x, y, w = rs.randn(6, 5).astype(dtype), rs.randint(0, 5, 6), (rs.rand(5) + 0.5).astype(dtype)
    res = []
    for lib in (tg, torch):
        xi = lib.tensor(x, requires_grad=True)
        wt = None if weight is None else lib.tensor(w)
        loss = lib.nn.functional.multi_margin_loss(xi, lib.tensor(y), p=p, margin=margin,
                                                   weight=wt, reduction=reduction)
        mod = lib.nn.MultiMarginLoss(p=p, margin=margin, weight=wt, reduction=reduction)(
            xi.detach(), lib.tensor(y))
        (loss * lib.tensor(np.arange(1.0, loss.numel() + 1).reshape(tuple(loss.shape))
                           .astype(dtype))).sum().backward()
        res.append((loss, xi.grad, mod))
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=1e-5, atol=1e-6)
    for a, b in zip(res[0], res[1]):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **tol)
    assert res[0][0].grad_fn.name() == res[1][0].grad_fn.name() == "MultiMarginLossBackward0"


def test_multi_margin_loss_one_sample_and_errors_as_torch():
    x, y = np.array([0.1, -0.4, 0.9]), np.array([1, 2, 0])
    for lib in (tg, torch):
        F = lib.nn.functional
        one = F.multi_margin_loss(lib.tensor(x), lib.tensor(1), reduction="none")
        assert tuple(one.shape) == ()
        xb = lib.tensor(np.stack([x, x, x]))
        with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
            F.multi_margin_loss(xb, lib.tensor(y), p=3)
        with pytest.raises(ValueError, match="weight must be one-dimensional"):
            F.multi_margin_loss(xb, lib.tensor(y), weight=lib.ones(3, 1, dtype=lib.float64))
        with pytest.raises(RuntimeError, match="target out of range"):
            F.multi_margin_loss(xb, lib.tensor([0, 3, 1]))
        with pytest.raises(RuntimeError, match="target tensor should be 1-D with size equal"):
            F.multi_margin_loss(xb, lib.tensor(y[:2]))
        with pytest.raises(RuntimeError, match="inconsistent weight size, expected 3 but got "
                                               r"\[2\]"):
            F.multi_margin_loss(xb, lib.tensor(y), weight=lib.ones(2, dtype=lib.float64))
        with pytest.raises(RuntimeError, match="expected scalar type Long but found Float"):
            F.multi_margin_loss(xb, lib.tensor(y.astype(np.float32)))
    np.testing.assert_allclose(
        tg.nn.functional.multi_margin_loss(tg.tensor(x), tg.tensor(1)).numpy(),
        torch.nn.functional.multi_margin_loss(torch.tensor(x), torch.tensor(1)).numpy())


@pytest.mark.parametrize("padding_mode", ["reflect", "replicate", "circular"])
def test_conv3d_module_padding_modes(padding_mode):
    rs = np.random.RandomState(0)
    x = rs.randn(2, 2, 4, 5, 4)
    for pad in (1, (1, 2, 0), "same"):
        torch.manual_seed(0)
        tm = torch.nn.Conv3d(2, 3, (2, 3, 3), padding=pad, padding_mode=padding_mode).double()
        m = tg.nn.Conv3d(2, 3, (2, 3, 3), padding=pad, padding_mode=padding_mode).double()
        m.load_state_dict({k: tg.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
        xi, txi = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y, ty = m(xi), tm(txi)
        (y ** 2).sum().backward()
        (ty ** 2).sum().backward()
        np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(xi.grad.numpy(), txi.grad.numpy(), rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(m.weight.grad.numpy(), tm.weight.grad.numpy(), rtol=1e-11)
