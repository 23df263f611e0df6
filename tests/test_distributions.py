"""tracegrad.distributions against torch.distributions (torch 2.13, CPU): values, shapes,
samples (bit for bit under the same seed, and the generator's state after), gradients,
KL divergences, argument validation and a REINFORCE step."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.distributions as TD  # noqa: E402
import tracegrad.distributions as GD  # noqa: E402

import tracegrad as tg  # noqa: E402

_rng = np.random.default_rng(0)


def _pos(*s):
    return (_rng.random(s) + 0.5).astype(np.float32)


def _real(*s):
    return _rng.standard_normal(s).astype(np.float32)


def _simplex(*s):
    p = _pos(*s)
    return p / p.sum(-1, keepdims=True)


_A = _rng.standard_normal((3, 3))
_COV = (_A @ _A.T + np.eye(3)).astype(np.float32)
_LOC = _real(2, 3)

# name -> (positional params, keyword params); sample shape: (2,) keeps normals under 16
# elements (tracegrad's randn of 16 or more elements can differ from torch's in the last bit)
CASES = {
    "Normal": ((_real(2, 3), _pos(2, 3)), {}),
    "Bernoulli-probs": ((), {"probs": _pos(2, 3) / 2}),
    "Bernoulli-logits": ((), {"logits": _real(2, 3)}),
    "Categorical-probs": ((), {"probs": _simplex(2, 4)}),
    "Categorical-logits": ((), {"logits": _real(2, 4)}),
    "OneHotCategorical": ((), {"probs": _simplex(2, 4)}),
    "Uniform": ((_LOC, _LOC + _pos(2, 3)), {}),
    "Exponential": ((_pos(2, 3),), {}),
    "Laplace": ((_real(2, 3), _pos(2, 3)), {}),
    "MultivariateNormal-cov": ((_real(2, 3),), {"covariance_matrix": _COV}),
    "MultivariateNormal-tril": ((_real(3),), {"scale_tril": np.linalg.cholesky(_COV)}),
    "MultivariateNormal-prec": ((_real(3),), {"precision_matrix": _COV}),
    "LogNormal": ((_real(2, 3), _pos(2, 3)), {}),
    "Gamma": ((_pos(2, 3) * 2 - 0.8, _pos(2, 3)), {}),
    "Beta": ((_pos(2, 3), _pos(2, 3) * 2), {}),
    "Dirichlet": ((_pos(2, 3) * 2,), {}),
}
DISCRETE = {"Bernoulli-probs", "Bernoulli-logits", "Categorical-probs", "Categorical-logits",
            "OneHotCategorical"}
NO_RSAMPLE = DISCRETE | {"Beta", "Dirichlet"}    # left out: see tracegrad/eager/distributions
EXACT_RSAMPLE_GRAD = {"Gamma"}    # torch approximates this gradient


def _make(lib, name, requires_grad=False):
    args, kwargs = CASES[name]
    mod = TD if lib is torch else GD
    cls = getattr(mod, name.split("-")[0])

    def conv(x):
        t = lib.tensor(np.array(x))
        if requires_grad:
            t.requires_grad_(True)
        return t
    targs = [conv(a) for a in args]
    tkw = {k: conv(v) for k, v in kwargs.items()}
    return cls(*targs, **tkw), targs + list(tkw.values())


def _close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(b.detach().numpy(), np.float64),
                               np.asarray(a.detach().numpy(), np.float64), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_shapes(name):
    td, _ = _make(torch, name)
    gd, _ = _make(tg, name)
    assert tuple(gd.batch_shape) == tuple(td.batch_shape)
    assert tuple(gd.event_shape) == tuple(td.event_shape)
    torch.manual_seed(3)
    x = td.sample((2,))
    _close(td.log_prob(x), gd.log_prob(tg.tensor(x.numpy())), rtol=1e-4, atol=1e-5)
    _close(td.entropy(), gd.entropy(), rtol=1e-4, atol=1e-5)
    for prop in ("mean", "variance", "stddev", "mode"):
        _close(getattr(td, prop), getattr(gd, prop), rtol=1e-4, atol=1e-5)
    if not name.startswith(("Multivariate", "OneHot")):
        new = (4,) + tuple(td.batch_shape)
        te, ge = td.expand(new), gd.expand(new)
        assert tuple(ge.batch_shape) == tuple(te.batch_shape)
        _close(te.log_prob(x[:1]), ge.log_prob(tg.tensor(x[:1].numpy())), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["Normal", "Uniform", "Exponential", "Laplace"])
def test_cdf_icdf(name):
    td, _ = _make(torch, name)
    gd, _ = _make(tg, name)
    torch.manual_seed(4)
    x = td.sample()
    _close(td.cdf(x), gd.cdf(tg.tensor(x.numpy())), atol=1e-6)
    q = torch.tensor([[0.1, 0.5, 0.9], [0.3, 0.7, 0.2]])
    _close(td.icdf(q), gd.icdf(tg.tensor(q.numpy())), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sorted(CASES))
def test_sample_bits_and_generator_state(name):
    td, _ = _make(torch, name)
    gd, _ = _make(tg, name)
    torch.manual_seed(7)
    ts, tn = td.sample((2,)), torch.rand(5)
    tg.manual_seed(7)
    gs, gn = gd.sample((2,)), tg.rand(5)
    assert gs.dtype == ts.numpy().dtype
    assert tuple(gs.shape) == tuple(ts.shape)
    if name in ("Laplace", "LogNormal") or name.startswith("Multivariate"):
        # torch's draws; log1p, exp, the matrix product round within an ulp
        _close(ts, gs, rtol=2e-5, atol=1e-7)
    else:
        np.testing.assert_array_equal(gs.numpy(), ts.numpy())
    np.testing.assert_array_equal(gn.numpy(), tn.numpy())
    if name not in NO_RSAMPLE:
        torch.manual_seed(8)
        tr = td.rsample((3,))
        tg.manual_seed(8)
        gr = gd.rsample((3,))
        _close(tr, gr, rtol=1e-5, atol=1e-6)   # 16 normals or more: within an ulp


@pytest.mark.parametrize("name", sorted(set(CASES) - NO_RSAMPLE))
def test_rsample_gradients(name):
    td, tp = _make(torch, name, requires_grad=True)
    gd, gp = _make(tg, name, requires_grad=True)
    w = np.linspace(0.5, 1.5, int(np.prod(td.sample((2,)).shape))).astype(np.float32)
    torch.manual_seed(9)
    (td.rsample((2,)).reshape(-1) * torch.tensor(w)).sum().backward()
    tg.manual_seed(9)
    (gd.rsample((2,)).reshape(-1) * tg.tensor(w)).sum().backward()
    tol = dict(rtol=5e-3, atol=1e-3) if name in EXACT_RSAMPLE_GRAD else dict(rtol=1e-4, atol=1e-5)
    for a, b in zip(tp, gp):
        _close(a.grad, b.grad, **tol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_log_prob_gradients(name):
    td, tp = _make(torch, name, requires_grad=True)
    gd, gp = _make(tg, name, requires_grad=True)
    torch.manual_seed(10)
    x = td.sample((2,))
    (td.log_prob(x).sum() + td.entropy().sum()).backward()
    (gd.log_prob(tg.tensor(x.numpy())).sum() + gd.entropy().sum()).backward()
    for a, b in zip(tp, gp):
        _close(a.grad, b.grad, rtol=1e-4, atol=1e-4)


KL_PAIRS = [("Normal", "Normal"), ("Normal", "Laplace"), ("Laplace", "Normal"),
            ("Bernoulli-probs", "Bernoulli-logits"), ("Categorical-probs", "Categorical-logits"),
            ("Exponential", "Exponential"), ("Exponential", "Gamma"), ("Gamma", "Gamma"),
            ("Gamma", "Exponential"), ("Gamma", "Normal"), ("Beta", "Beta"), ("Beta", "Normal"),
            ("Uniform", "Normal"), ("Uniform", "Uniform"), ("Dirichlet", "Dirichlet"),
            ("MultivariateNormal-cov", "MultivariateNormal-tril"), ("Normal", "Uniform"),
            ("OneHotCategorical", "OneHotCategorical"), ("LogNormal", "LogNormal"),
            ("Exponential", "Normal")]


@pytest.mark.parametrize("p,q", KL_PAIRS)
def test_kl_divergence(p, q):
    tdp, tpp = _make(torch, p, requires_grad=True)
    tdq, tpq = _make(torch, q, requires_grad=True)
    gdp, gpp = _make(tg, p, requires_grad=True)
    gdq, gpq = _make(tg, q, requires_grad=True)
    tk, gk = TD.kl_divergence(tdp, tdq), GD.kl_divergence(gdp, gdq)
    _close(tk, gk, rtol=1e-4, atol=1e-5)
    finite = torch.isfinite(tk)
    if bool(finite.all()):
        tk.sum().backward()
        gk.sum().backward()
        for a, b in zip(tpp + tpq, gpp + gpq):
            if a.grad is not None:
                _close(a.grad, b.grad, rtol=1e-3, atol=1e-4)


def test_kl_independent_and_register():
    tp = TD.Independent(TD.Normal(torch.zeros(2, 3), torch.ones(2, 3)), 1)
    tq = TD.Independent(TD.Normal(torch.ones(2, 3), 2 * torch.ones(2, 3)), 1)
    gp = GD.Independent(GD.Normal(tg.zeros(2, 3), tg.ones(2, 3)), 1)
    gq = GD.Independent(GD.Normal(tg.ones(2, 3), 2 * tg.ones(2, 3)), 1)
    assert tuple(gp.batch_shape) == (2,) and tuple(gp.event_shape) == (3,)
    _close(TD.kl_divergence(tp, tq), GD.kl_divergence(gp, gq))
    _close(tp.log_prob(torch.ones(2, 3)), gp.log_prob(tg.ones(2, 3)))

    class MyNormal(GD.Normal):
        pass

    @GD.register_kl(MyNormal, MyNormal)
    def _kl(p, q):
        return tg.zeros(p.batch_shape)
    assert float(GD.kl_divergence(MyNormal(0.0, 1.0), MyNormal(1.0, 1.0))) == 0.0
    with pytest.raises(NotImplementedError):
        GD.kl_divergence(gp, GD.Normal(0.0, 1.0))


@pytest.mark.parametrize("make", [
    lambda m: m.Normal(m.tensor([0.0]), m.tensor([-1.0])),
    lambda m: m.Bernoulli(probs=m.tensor([1.5])),
    lambda m: m.Categorical(probs=m.tensor([[-0.1, 1.1]])),
    lambda m: m.Exponential(m.tensor([0.0])),
    lambda m: m.Uniform(m.tensor([1.0]), m.tensor([0.0])),
    lambda m: m.Normal(m.tensor([0.0, 1.0]), m.tensor([1.0, 1.0])).log_prob(
        m.tensor([1.0, 2.0, 3.0])),
    lambda m: m.Exponential(m.tensor([1.0])).log_prob(m.tensor([-1.0])),
    lambda m: m.Categorical(logits=m.tensor([0.0, 1.0])).log_prob(m.tensor(3)),
    lambda m: m.Beta(m.tensor([1.0]), m.tensor([1.0])).log_prob(m.tensor([1.5])),
])
def test_validate_args_errors(make):
    class M:
        pass
    for lib, mod in ((torch, TD), (tg, GD)):
        m = M()
        for k in ("Normal", "Bernoulli", "Categorical", "Exponential", "Uniform", "Beta"):
            setattr(m, k, getattr(mod, k))
        m.tensor = lib.tensor
        with pytest.raises(ValueError) as info:
            make(m)
        if lib is torch:
            expected = str(info.value)
        else:
            assert str(info.value).split(" ")[:4] == expected.split(" ")[:4]


def test_set_default_validate_args():
    GD.Distribution.set_default_validate_args(False)
    try:
        GD.Normal(tg.tensor([0.0]), tg.tensor([-1.0]))      # not checked
    finally:
        GD.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        GD.Distribution.set_default_validate_args(3)
    GD.Normal(tg.tensor([0.0]), tg.tensor([-1.0]), validate_args=False)


def test_constraints():
    c = GD.constraints
    v = tg.tensor([-1.0, 0.0, 0.5, 1.0, 2.0])
    for con in ("real", "positive", "nonnegative", "unit_interval", "boolean"):
        t = getattr(TD.constraints, con).check(torch.tensor(v.numpy()))
        np.testing.assert_array_equal(getattr(c, con).check(v).numpy(), t.numpy())
    np.testing.assert_array_equal(c.greater_than(0.5).check(v).numpy(), [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(c.integer_interval(0, 1).check(v).numpy(), [0, 1, 0, 1, 0])
    np.testing.assert_array_equal(c.simplex.check(tg.tensor([[0.2, 0.8], [0.5, 0.6]])).numpy(),
                                  [1, 0])
    np.testing.assert_array_equal(c.positive_definite.check(tg.tensor(_COV)).numpy(), True)
    np.testing.assert_array_equal(c.lower_cholesky.check(tg.eye(3)).numpy(), True)
    assert GD.Normal.arg_constraints["scale"] is c.positive


def test_imports_and_transformed():
    import tracegrad.distributions.normal as normal_mod
    from tracegrad.distributions import Categorical  # noqa: F401
    assert normal_mod.Normal is GD.Normal
    t = TD.TransformedDistribution(TD.Normal(torch.zeros(3), torch.ones(3)),
                                   [TD.transforms.AffineTransform(1.0, 2.0),
                                    TD.transforms.ExpTransform()])
    g = GD.TransformedDistribution(GD.Normal(tg.zeros(3), tg.ones(3)),
                                   [GD.transforms.AffineTransform(1.0, 2.0),
                                    GD.transforms.ExpTransform()])
    x = torch.tensor([0.5, 1.0, 3.0])
    _close(t.log_prob(x), g.log_prob(tg.tensor(x.numpy())))
    torch.manual_seed(0)
    tg.manual_seed(0)
    _close(t.sample((2,)), g.sample((2,)), rtol=1e-6, atol=1e-7)   # exp within an ulp


def test_reinforce_step():
    def run(lib, mod, nn, optim):
        lib.manual_seed(0)
        policy = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
        opt = optim.Adam(policy.parameters(), lr=1e-2)
        states = lib.randn(5, 4)
        for _ in range(3):
            dist = mod.Categorical(logits=policy(states))
            actions = dist.sample()
            returns = (actions.float() - 1.0) * 2.0
            loss = -(dist.log_prob(actions) * returns).mean() - 0.01 * dist.entropy().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        return [p.detach().numpy() for p in policy.parameters()], actions.numpy()
    tw, ta = run(torch, TD, torch.nn, torch.optim)
    gw, ga = run(tg, GD, tg.nn, tg.optim)
    np.testing.assert_array_equal(ga, ta)
    for a, b in zip(tw, gw):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_compile_captures_rsample_and_log_prob():
    loc = tg.tensor([0.5, -1.0], requires_grad=True)
    scale = tg.tensor([1.0, 2.0], requires_grad=True)

    def f(loc, scale):
        d = GD.Normal(loc, scale)
        x = d.rsample()
        return (d.log_prob(x) + x).sum()
    tg.manual_seed(1)
    eager = f(loc, scale)
    compiled = tg.compile(f)
    tg.manual_seed(1)
    out = compiled(loc, scale)
    np.testing.assert_allclose(out.detach().numpy(), eager.detach().numpy(), rtol=1e-6)
    out.backward()
    assert loc.grad is not None and scale.grad is not None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gamma_family_bits_more_shapes(dtype):
    # Marsaglia-Tsang draws over a wide range of shapes (boosted ones below 1 included)
    a = (np.random.default_rng(5).random((6, 3)) * 4 + 0.05).astype(dtype)
    b = (np.random.default_rng(6).random((6, 3)) * 2 + 0.1).astype(dtype)
    for make in (lambda L, M: M.Gamma(L.tensor(a), L.tensor(b)),
                 lambda L, M: M.Beta(L.tensor(a), L.tensor(b)),
                 lambda L, M: M.Dirichlet(L.tensor(a))):
        torch.manual_seed(12)
        ts, tn = make(torch, TD).sample((2,)), torch.rand(3)
        tg.manual_seed(12)
        gs, gn = make(tg, GD).sample((2,)), tg.rand(3)
        np.testing.assert_array_equal(gs.numpy(), ts.numpy())
        np.testing.assert_array_equal(gn.numpy(), tn.numpy())


def test_validation_before_factorising_and_one_hot_values():
    for lib, mod in ((torch, TD), (tg, GD)):
        with pytest.raises(ValueError, match="Expected parameter covariance_matrix"):
            mod.MultivariateNormal(lib.zeros(2), lib.tensor([[1.0, 2.0], [2.0, 1.0]]))
        with pytest.raises(ValueError, match="Expected value argument"):
            mod.OneHotCategorical(lib.tensor([0.5, 0.5])).log_prob(lib.tensor([1.0, 1.0]))
