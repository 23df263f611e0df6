"""nn.utils parametrizations, legacy weight/spectral norm, fusion, lazy modules, nn.Buffer:
compared with torch 2.13 under the same seed (values to rounding, names and errors exactly),
and tg.compile'd parametrized modules against eager tracegrad bit for bit."""
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import tracegrad as tg  # noqa: E402

P_T, P_G = torch.nn.utils.parametrize, tg.nn.utils.parametrize


def _np(t):
    return t.detach().numpy()


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


def both(build):
    """``build(lib)`` under manual_seed(0) for torch and tracegrad."""
    out = []
    for lib in (torch, tg):
        lib.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(build(lib))
    return out


def names(m):
    return [n for n, _ in m.named_parameters()], list(m.state_dict().keys())


def grads(m):
    return {n: p.grad for n, p in m.named_parameters()}


def _symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()
    return Symmetric


def _split(lib):
    class Split(lib.nn.Module):     # two originals: right_inverse returns a pair
        def forward(self, a, b):
            return a + 2 * b

        def right_inverse(self, w):
            return w * 0.25, w * 0.375
    return Split


def _train_step(lib, m, x, steps=2):
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    outs = []
    for _ in range(steps):
        opt.zero_grad()
        y = m(x)
        (y * y).sum().backward()
        opt.step()
        outs.append(y)
    return outs


# -- parametrize ------------------------------------------------------------------------------
def test_register_parametrization_names_values_grads_and_steps():
    def build(lib):
        m = lib.nn.Linear(4, 4)
        P = lib.nn.utils.parametrize
        P.register_parametrization(m, "weight", _symmetric(lib)())
        return m
    mt, mg = both(build)
    assert type(mg).__name__ == "ParametrizedLinear" and isinstance(mg, tg.nn.Linear)
    assert P_G.type_before_parametrizations(mg) is tg.nn.Linear
    assert names(mg) == names(mt) == (["bias", "parametrizations.weight.original"],
                                      ["bias", "parametrizations.weight.original"])
    assert P_G.is_parametrized(mg) and P_G.is_parametrized(mg, "weight")
    assert not P_G.is_parametrized(mg, "bias")
    assert isinstance(mg.parametrizations.weight, P_G.ParametrizationList)
    close(mg.weight, mt.weight, 0)
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    yt = _train_step(torch, mt, torch.tensor(x))
    yg = _train_step(tg, mg, tg.tensor(x))
    for a, b in zip(yg, yt):
        close(a, b)
    for k, g in grads(mt).items():
        close(grads(mg)[k], g)
    close(mg.parametrizations.weight.original, mt.parametrizations.weight.original)


def test_setter_right_inverse_chain_and_multiple_originals():
    def build(lib):
        m = lib.nn.Linear(3, 3)
        P = lib.nn.utils.parametrize
        P.register_parametrization(m, "weight", _split(lib)())
        P.register_parametrization(m, "weight", _symmetric(lib)())
        return m
    mt, mg = both(build)
    assert names(mg) == names(mt)
    assert names(mg)[0] == ["bias", "parametrizations.weight.original0",
                            "parametrizations.weight.original1"]
    close(mg.weight, mt.weight)
    orig0 = mg.parametrizations.weight.original0
    w = np.arange(9, dtype=np.float32).reshape(3, 3)
    mt.weight = torch.tensor(w)
    mg.weight = tg.tensor(w)            # runs the right_inverses, keeps the objects
    assert mg.parametrizations.weight.original0 is orig0
    close(mg.weight, mt.weight)
    close(orig0, mt.parametrizations.weight.original0)
    mt(torch.ones(2, 3)).sum().backward()
    mg(tg.ones(2, 3)).sum().backward()
    for k, g in grads(mt).items():
        close(grads(mg)[k], g)
    with pytest.raises(ValueError, match="sequence of tensors"):
        P_G.remove_parametrizations(mg, "weight", leave_parametrized=False)
    P_G.remove_parametrizations(mg, "weight")
    P_T.remove_parametrizations(mt, "weight")
    assert type(mg) is tg.nn.Linear and names(mg) == names(mt) == (["bias", "weight"],) * 2
    close(mg.weight, mt.weight)


@pytest.mark.parametrize("leave", [True, False])
def test_remove_parametrizations(leave):
    def build(lib):
        m = lib.nn.Linear(3, 3)
        lib.nn.utils.parametrize.register_parametrization(m, "weight", _symmetric(lib)())
        return m
    mt, mg = both(build)
    w_obj = mg.parametrizations.weight.original
    P_T.remove_parametrizations(mt, "weight", leave_parametrized=leave)
    P_G.remove_parametrizations(mg, "weight", leave_parametrized=leave)
    assert type(mg) is tg.nn.Linear and not hasattr(mg, "parametrizations")
    assert mg.weight is w_obj and isinstance(mg.weight, tg.nn.Parameter)
    assert names(mg) == names(mt)
    close(mg.weight, mt.weight, 0)
    with pytest.raises(ValueError, match="does not have a parametrization"):
        P_G.remove_parametrizations(mg, "weight")


def test_parametrize_errors_unsafe_and_buffers():
    class Grow(tg.nn.Module):
        def forward(self, x):
            return tg.cat([x, x])
    m = tg.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="may not change the shape"):
        P_G.register_parametrization(m, "weight", Grow())
    assert type(m) is tg.nn.Linear
    P_G.register_parametrization(m, "weight", Grow(), unsafe=True)
    assert tuple(m.weight.shape) == (4, 2)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        P_G.register_parametrization(m, "nope", Grow())
    # a buffer is parametrized as a buffer
    bn = tg.nn.BatchNorm1d(3)
    P_G.register_parametrization(bn, "running_var", tg.nn.Identity())
    assert "parametrizations.running_var.original" in bn.state_dict()
    assert "parametrizations.running_var.original" not in dict(bn.named_parameters())


def test_cached():
    calls = []

    class Count(tg.nn.Module):
        def forward(self, x):
            calls.append(1)
            return x * 2
    m = tg.nn.Linear(2, 2)
    P_G.register_parametrization(m, "weight", Count())
    calls.clear()
    with P_G.cached():
        a, b = m.weight, m.weight
        assert a is b
    assert len(calls) == 1
    _ = m.weight
    assert len(calls) == 2


# -- parametrizations.weight_norm / spectral_norm -----------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization(dim):
    def build(lib):
        m = lib.nn.Conv2d(2, 3, 3)
        lib.nn.utils.parametrizations.weight_norm(m, dim=dim)
        return m
    mt, mg = both(build)
    assert names(mg) == names(mt)
    close(mg.parametrizations.weight.original0, mt.parametrizations.weight.original0)
    x = np.linspace(-1, 1, 2 * 2 * 5 * 5, dtype=np.float32).reshape(2, 2, 5, 5)
    for a, b in zip(_train_step(tg, mg, tg.tensor(x)), _train_step(torch, mt, torch.tensor(x))):
        close(a, b, 1e-4)
    for k, g in grads(mt).items():
        close(grads(mg)[k], g, 1e-4)
    # the legacy keys load into the parametrization
    legacy = tg.nn.Conv2d(2, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tg.nn.utils.weight_norm(legacy, dim=dim)
    fresh = tg.nn.utils.parametrizations.weight_norm(tg.nn.Conv2d(2, 3, 3), dim=dim)
    fresh.load_state_dict(legacy.state_dict())
    close(fresh.weight, legacy.weight, 1e-6)


def test_spectral_norm_parametrization_power_iteration():
    def build(lib):
        m = lib.nn.Linear(6, 5)
        lib.nn.utils.parametrizations.spectral_norm(m)
        return m
    mt, mg = both(build)
    assert names(mg) == names(mt)
    sd = mg.state_dict()
    assert list(sd) == ["bias", "parametrizations.weight.original",
                        "parametrizations.weight.0._u", "parametrizations.weight.0._v"]
    # u, v drawn with normal_ as torch draws them (bit-exact for fewer than 16 elements),
    # then 15 power-iteration steps
    close(sd["parametrizations.weight.0._u"], mt.state_dict()["parametrizations.weight.0._u"])
    x = np.linspace(-1, 1, 18, dtype=np.float32).reshape(3, 6)
    for a, b in zip(_train_step(tg, mg, tg.tensor(x), 3), _train_step(torch, mt, torch.tensor(x), 3)):
        close(a, b)
    close(mg.parametrizations.weight[0]._u, mt.parametrizations.weight[0]._u)
    mg.eval()
    mt.eval()
    u = _np(mg.parametrizations.weight[0]._u).copy()
    close(mg(tg.tensor(x)), mt(torch.tensor(x)))
    np.testing.assert_array_equal(_np(mg.parametrizations.weight[0]._u), u)   # eval: no step
    with pytest.raises(ValueError, match="n_power_iterations"):
        tg.nn.utils.parametrizations.spectral_norm(tg.nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tg.nn.utils.parametrizations.spectral_norm(tg.nn.Linear(2, 2), dim=3)


# -- legacy hooks -------------------------------------------------------------------------------
def test_legacy_weight_norm():
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        tg.nn.utils.weight_norm(tg.nn.Linear(2, 2))

    def build(lib):
        return lib.nn.utils.weight_norm(lib.nn.Linear(4, 3))
    mt, mg = both(build)
    assert names(mg) == names(mt) == (["bias", "weight_g", "weight_v"],) * 2
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    for a, b in zip(_train_step(tg, mg, tg.tensor(x)), _train_step(torch, mt, torch.tensor(x))):
        close(a, b)
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm"):
        tg.nn.utils.weight_norm(mg)
    tg.nn.utils.remove_weight_norm(mg)
    torch.nn.utils.remove_weight_norm(mt)
    assert names(mg) == names(mt)
    close(mg.weight, mt.weight)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        tg.nn.utils.remove_weight_norm(mg)


def test_legacy_spectral_norm():
    def build(lib):
        return lib.nn.utils.spectral_norm(lib.nn.Linear(4, 3))
    mt, mg = both(build)
    assert names(mg) == names(mt) == (["bias", "weight_orig"],
                                      ["bias", "weight_orig", "weight_u", "weight_v"])
    close(mg.weight_u, mt.weight_u, 1e-6)
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    for a, b in zip(_train_step(tg, mg, tg.tensor(x)), _train_step(torch, mt, torch.tensor(x))):
        close(a, b)
    close(mg.weight_u, mt.weight_u)
    tg.nn.utils.remove_spectral_norm(mg)
    torch.nn.utils.remove_spectral_norm(mt)
    assert names(mg) == names(mt)
    close(mg.weight, mt.weight)


# -- fusion, skip_init, clip, stateless ------------------------------------------------------
def test_fuse_conv_and_linear_bn():
    def build(lib):
        conv, bn = lib.nn.Conv2d(2, 3, 3), lib.nn.BatchNorm2d(3)
        lin, bn1 = lib.nn.Linear(4, 3), lib.nn.BatchNorm1d(3)
        with lib.no_grad():
            bn.running_mean.copy_(lib.tensor([0.1, -0.2, 0.3]))
            bn.running_var.copy_(lib.tensor([1.5, 0.5, 2.0]))
            bn1.running_mean.copy_(lib.tensor([0.3, 0.2, -0.1]))
        for m in (conv, bn, lin, bn1):
            m.eval()
        return (lib.nn.utils.fuse_conv_bn_eval(conv, bn), lib.nn.utils.fuse_linear_bn_eval(lin, bn1),
                conv, bn)
    (ct, lt, conv_t, _), (cg, lg, conv_g, bn_g) = both(build)
    close(cg.weight, ct.weight, 1e-6)
    close(cg.bias, ct.bias, 1e-6)
    close(lg.weight, lt.weight, 1e-6)
    close(lg.bias, lt.bias, 1e-6)
    x = tg.tensor(np.linspace(-1, 1, 50, dtype=np.float32).reshape(1, 2, 5, 5))
    close(cg(x), bn_g(conv_g(x)), 1e-5)
    assert isinstance(cg.weight, tg.nn.Parameter) and cg is not conv_g
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        tg.nn.utils.fuse_conv_bn_eval(tg.nn.Conv2d(1, 1, 1), tg.nn.BatchNorm2d(1))


def test_skip_init_clip_and_stateless():
    tg.manual_seed(0)
    torch.manual_seed(0)
    m = tg.nn.utils.skip_init(tg.nn.Linear, 5, 3)
    torch.nn.utils.skip_init(torch.nn.Linear, 5, 3)
    assert tuple(m.weight.shape) == (3, 5)
    np.testing.assert_array_equal(tg.rand(4).numpy(), torch.rand(4).numpy())   # no draws used
    with pytest.raises(RuntimeError, match="Expected a Module"):
        tg.nn.utils.skip_init(int)

    def build(lib):
        m = lib.nn.Linear(4, 3)
        m(lib.ones(2, 4) * 3).sum().backward()
        return m
    mt, mg = both(build)
    nt = torch.nn.utils.get_total_norm([p.grad for p in mt.parameters()])
    ng = tg.nn.utils.get_total_norm([p.grad for p in mg.parameters()])
    torch.nn.utils.clip_grads_with_norm_(mt.parameters(), 0.5, nt)
    tg.nn.utils.clip_grads_with_norm_(mg.parameters(), 0.5, ng)
    for p, q in zip(mg.parameters(), mt.parameters()):
        close(p.grad, q.grad, 1e-6)
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        tg.nn.utils.clip_grad_norm(mg.parameters(), 1.0)
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        out = tg.nn.utils.stateless.functional_call(mg, {"bias": tg.zeros(3)}, (tg.ones(1, 4),))
    close(out, mg.weight.sum(1, keepdim=True).T)
    v = tg.nn.utils.convert_parameters.parameters_to_vector(mg.parameters())
    assert tuple(v.shape) == (15,)


# -- lazy modules and nn.Buffer ----------------------------------------------------------------
LAZY = [("LazyLinear", (3,), (2, 5)), ("LazyConv1d", (3, 2), (2, 4, 6)),
        ("LazyConv2d", (3, 2), (2, 4, 5, 5)), ("LazyConv3d", (2, 2), (1, 3, 4, 4, 4)),
        ("LazyConvTranspose2d", (3, 2), (2, 4, 5, 5)),
        ("LazyConvTranspose3d", (2, 2), (1, 3, 3, 3, 3)),
        ("LazyBatchNorm1d", (), (4, 3)), ("LazyBatchNorm2d", (), (2, 3, 2, 2)),
        ("LazyInstanceNorm1d", (), (2, 3, 4))]


@pytest.mark.parametrize("name,args,shape", LAZY)
def test_lazy_modules_match_torch(name, args, shape):
    def build(lib):
        m = getattr(lib.nn, name)(*args)
        uninit = [n for n, p in m.named_parameters()]
        opt = lib.optim.SGD(m.parameters(), lr=0.1) if uninit else None   # allowed before init
        x = lib.tensor(np.linspace(-1, 1, int(np.prod(shape)), dtype=np.float32).reshape(shape))
        y = m(x)
        if opt is not None:
            (y * y).sum().backward()
            opt.step()
        return m, y, uninit
    (mt, yt, ut), (mg, yg, ug) = both(build)
    assert type(mg).__name__ == type(mt).__name__ == name[4:]
    assert ug == ut
    assert names(mg) == names(mt)
    close(yg, yt)
    for a, b in zip(mg.state_dict().values(), mt.state_dict().values()):
        close(a, b, 1e-6)


def test_uninitialized_parameter_errors_and_load_state_dict():
    m = tg.nn.LazyLinear(3)
    assert isinstance(m.weight, tg.nn.UninitializedParameter)
    assert isinstance(m.weight, tg.nn.Parameter)
    with pytest.raises(ValueError, match="uninitialized parameter"):
        m.weight.numel()
    with pytest.raises(RuntimeError, match="Can't access the shape"):
        _ = m.weight.shape
    assert repr(m.weight) == "<UninitializedParameter>"
    sd = m.state_dict()
    assert sd["weight"] is m.weight
    src = tg.nn.Linear(4, 3)
    m.load_state_dict(src.state_dict())
    assert type(m.weight) is tg.nn.Parameter and tuple(m.weight.shape) == (3, 4)
    np.testing.assert_array_equal(_np(m.weight), _np(src.weight))
    m(tg.ones(1, 4))
    assert type(m) is tg.nn.Linear
    with pytest.raises(ValueError, match="uninitialized parameters"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tg.nn.utils.weight_norm(tg.nn.LazyLinear(2))


def test_buffer():
    class M(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = tg.nn.Buffer(tg.ones(2))
            self.b = tg.nn.Buffer(tg.zeros(1), persistent=False)
    m = M()
    assert [n for n, _ in m.named_buffers()] == ["a", "b"]
    assert list(m.state_dict()) == ["a"]
    assert type(m.a) is tg.Tensor


# -- tg.compile ------------------------------------------------------------------------------------
def _compiled_vs_eager(build, x, steps=3):
    """Train ``build()`` eagerly and a copy compiled; outputs, gradients and state equal."""
    tg.manual_seed(0)
    me = build()
    tg.manual_seed(0)
    mc = build()
    cm = tg.compile(mc)
    oe = tg.optim.SGD(me.parameters(), lr=0.1)
    oc = tg.optim.SGD(mc.parameters(), lr=0.1)
    for _ in range(steps):
        for m, call, opt in ((me, me, oe), (mc, cm, oc)):
            opt.zero_grad()
            y = call(x)
            (y * y).sum().backward()
            opt.step()
            m._last = y
        np.testing.assert_array_equal(_np(mc._last), _np(me._last))
        for (k, a), (_, b) in zip(me.named_parameters(), mc.named_parameters()):
            np.testing.assert_array_equal(_np(b.grad), _np(a.grad), err_msg=k)
        for (k, a), (_, b) in zip(me.state_dict().items(), mc.state_dict().items()):
            np.testing.assert_array_equal(_np(b), _np(a), err_msg=k)


X = tg.tensor(np.linspace(-1, 1, 15, dtype=np.float32).reshape(3, 5))


def test_compiled_weight_norm_bit_exact():
    _compiled_vs_eager(lambda: tg.nn.utils.parametrizations.weight_norm(tg.nn.Linear(5, 4)), X)


def test_compiled_spectral_norm_updates_u_bit_exact():
    _compiled_vs_eager(lambda: tg.nn.utils.parametrizations.spectral_norm(tg.nn.Linear(5, 4)), X)


def test_compiled_parametrized_linear_bit_exact():
    def build():
        m = tg.nn.Linear(5, 5)
        P_G.register_parametrization(m, "weight", _symmetric(tg)())
        return m
    _compiled_vs_eager(build, X)


def test_compiled_legacy_hooks_bit_exact():
    def build():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return tg.nn.utils.spectral_norm(tg.nn.utils.weight_norm(tg.nn.Linear(5, 4),
                                                                     "bias", dim=None))
    _compiled_vs_eager(build, X)
