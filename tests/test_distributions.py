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
    "Poisson": ((_pos(2, 3) * 3,), {}),
    "Binomial": ((), {"total_count": np.full((2, 3), 5.0, np.float32), "probs": _pos(2, 3) / 2}),
    "Binomial-logits": ((5,), {"logits": _real(2, 3)}),
    "Geometric-probs": ((), {"probs": _pos(2, 3) / 2}),
    "Geometric-logits": ((), {"logits": _real(2, 3)}),
    "NegativeBinomial": ((_pos(2, 3) * 3,), {"probs": _pos(2, 3) / 2}),
    "NegativeBinomial-logits": ((_pos(2, 3) * 2,), {"logits": _real(2, 3)}),
    "Multinomial": ((6,), {"probs": _simplex(2, 4)}),
    "Multinomial-logits": ((3,), {"logits": _real(2, 4)}),
    "Cauchy": ((_real(2, 3), _pos(2, 3)), {}),
    "HalfNormal": ((_pos(2, 3),), {}),
    "HalfCauchy": ((_pos(2, 3),), {}),
    "StudentT": ((_pos(2, 3) * 3, _real(2, 3), _pos(2, 3)), {}),
    "Chi2": ((_pos(2, 3) * 3,), {}),
    "Gumbel": ((_real(2, 3), _pos(2, 3)), {}),
    "Weibull": ((_pos(2, 3), _pos(2, 3) * 2), {}),
    "Pareto": ((_pos(2, 3), _pos(2, 3) * 3), {}),
    "RelaxedBernoulli": ((np.float32(0.7),), {"logits": _real(2, 3)}),
    "RelaxedBernoulli-probs": ((np.float32(1.3),), {"probs": _pos(2, 3) / 2}),
    "RelaxedOneHotCategorical": ((np.float32(0.6),), {"probs": _simplex(2, 4)}),
    "RelaxedOneHotCategorical-logits": ((np.float32(1.5),), {"logits": _real(2, 4)}),
    "LowRankMultivariateNormal": ((_real(2, 3), _real(3, 2), _pos(3)), {}),
}
# second parameterisations, for divergences between different members of a family
KL_ONLY = {
    "Poisson-b": ((_pos(2, 3) * 2,), {}),
    "Binomial-4": ((4,), {"probs": _pos(2, 3) / 2}),
    "Cauchy-b": ((_real(2, 3), _pos(2, 3)), {}),
    "HalfNormal-b": ((_pos(2, 3),), {}),
    "Gumbel-b": ((_real(2, 3), _pos(2, 3)), {}),
    "Pareto-b": ((_pos(2, 3), _pos(2, 3) * 3), {}),
    "Uniform-pos": ((_pos(2, 3) + 1.5, _pos(2, 3) + 3.0), {}),
    "LowRankMultivariateNormal-b": ((_real(3), _real(2, 3, 1), _pos(2, 3)), {}),
}
DISCRETE = {"Bernoulli-probs", "Bernoulli-logits", "Categorical-probs", "Categorical-logits",
            "OneHotCategorical", "Poisson", "Binomial", "Binomial-logits", "Geometric-probs",
            "Geometric-logits", "NegativeBinomial", "NegativeBinomial-logits", "Multinomial",
            "Multinomial-logits"}
NO_RSAMPLE = DISCRETE | {"Beta", "Dirichlet"}    # left out: see tracegrad/eager/distributions
EXACT_RSAMPLE_GRAD = {"Gamma", "StudentT", "Chi2"}    # torch approximates this gradient
# draws equal to torch's within an ulp or so (log1p, exp, pow, matrix products round
# differently); all others are bit for bit
CLOSE_DRAWS = {"Laplace", "LogNormal", "MultivariateNormal-cov", "MultivariateNormal-tril",
               "MultivariateNormal-prec", "LowRankMultivariateNormal", "Weibull", "Pareto",
               "Gumbel", "RelaxedBernoulli", "RelaxedBernoulli-probs",
               "RelaxedOneHotCategorical", "RelaxedOneHotCategorical-logits"}


def _make(lib, name, requires_grad=False):
    args, kwargs = CASES[name] if name in CASES else KL_ONLY[name]
    mod = TD if lib is torch else GD
    cls = getattr(mod, name.split("-")[0])

    def conv(x):
        if isinstance(x, int):
            return x                      # a count given as a Python int
        t = lib.tensor(np.array(x))
        if requires_grad:
            t.requires_grad_(True)
        return t
    targs = [conv(a) for a in args]
    tkw = {k: conv(v) for k, v in kwargs.items()}
    params = [t for t in targs + list(tkw.values()) if not isinstance(t, int)]
    if name.startswith(("Binomial", "NegativeBinomial")):
        params = params[1:]               # no gradient in the count
    return cls(*targs, **tkw), params


def _value(obj, prop):
    """``obj.prop`` (called when a method), or the exception class it raised."""
    try:
        v = getattr(obj, prop)
        return v() if callable(v) else v
    except NotImplementedError:
        return NotImplementedError


def _close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(b.detach().numpy(), np.float64),
                               np.asarray(a.detach().numpy(), np.float64), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_shapes(name):
    td, _ = _make(torch, name)
    gd, _ = _make(tg, name)
    assert tuple(gd.batch_shape) == tuple(td.batch_shape)
    assert tuple(gd.event_shape) == tuple(td.event_shape)
    assert gd.has_rsample == td.has_rsample or name in ("Beta", "Dirichlet")  # left out
    assert gd.has_enumerate_support == td.has_enumerate_support
    assert repr(gd.support) == repr(td.support)
    assert gd.support.is_discrete == td.support.is_discrete
    assert gd.support.event_dim == td.support.event_dim
    assert {k: repr(v) for k, v in gd.arg_constraints.items()} == \
        {k: repr(v) for k, v in td.arg_constraints.items()}
    torch.manual_seed(3)
    x = td.sample((2,))
    _close(td.log_prob(x), gd.log_prob(tg.tensor(x.numpy())), rtol=1e-4, atol=1e-5)
    for prop in ("entropy", "mean", "variance", "stddev", "mode"):
        tv, gv = _value(td, prop), _value(gd, prop)
        if tv is NotImplementedError or gv is NotImplementedError:
            assert tv is gv, prop
        else:
            assert tuple(gv.shape) == tuple(tv.shape), prop
            _close(tv, gv, rtol=1e-4, atol=1e-5)
    if not name.startswith(("Multivariate", "OneHot")):
        new = (4,) + tuple(td.batch_shape)
        te, ge = td.expand(new), gd.expand(new)
        assert tuple(ge.batch_shape) == tuple(te.batch_shape)
        assert tuple(ge.event_shape) == tuple(te.event_shape)
        _close(te.log_prob(x[:1]), ge.log_prob(tg.tensor(x[:1].numpy())), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["Normal", "Uniform", "Exponential", "Laplace", "Cauchy",
                                  "HalfNormal", "HalfCauchy", "Gumbel", "Pareto"])
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
    if name in CLOSE_DRAWS:
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
    th, gh = _value(td, "entropy"), _value(gd, "entropy")
    has_h = th is not NotImplementedError
    (td.log_prob(x).sum() + (th.sum() if has_h else 0)).backward()
    (gd.log_prob(tg.tensor(x.numpy())).sum() + (gh.sum() if has_h else 0)).backward()
    for a, b in zip(tp, gp):
        if a.grad is None:
            assert b.grad is None
        else:
            _close(a.grad, b.grad, rtol=1e-4, atol=1e-4)


KL_PAIRS = [("Normal", "Normal"), ("Normal", "Laplace"), ("Laplace", "Normal"),
            ("Bernoulli-probs", "Bernoulli-logits"), ("Categorical-probs", "Categorical-logits"),
            ("Exponential", "Exponential"), ("Exponential", "Gamma"), ("Gamma", "Gamma"),
            ("Gamma", "Exponential"), ("Gamma", "Normal"), ("Beta", "Beta"), ("Beta", "Normal"),
            ("Uniform", "Normal"), ("Uniform", "Uniform"), ("Dirichlet", "Dirichlet"),
            ("MultivariateNormal-cov", "MultivariateNormal-tril"), ("Normal", "Uniform"),
            ("OneHotCategorical", "OneHotCategorical"), ("LogNormal", "LogNormal"),
            ("Exponential", "Normal"),
            ("Poisson", "Poisson-b"), ("Binomial", "Binomial-logits"), ("Binomial", "Binomial-4"),
            ("Geometric-probs", "Geometric-logits"), ("Cauchy", "Cauchy-b"),
            ("HalfNormal", "HalfNormal-b"), ("Gumbel", "Gumbel-b"), ("Pareto", "Pareto-b"),
            ("Pareto-b", "Pareto"), ("LowRankMultivariateNormal", "LowRankMultivariateNormal-b"),
            ("LowRankMultivariateNormal", "MultivariateNormal-cov"),
            ("MultivariateNormal-tril", "LowRankMultivariateNormal-b"),
            ("Poisson", "Bernoulli-probs"), ("Poisson", "Binomial"), ("Bernoulli-probs", "Poisson"),
            ("Gumbel", "Normal"), ("Normal", "Gumbel"), ("Uniform", "Gumbel"),
            ("Exponential", "Gumbel"), ("Gamma", "Gumbel"), ("Pareto", "Normal"),
            ("Uniform-pos", "Pareto"), ("Uniform", "Pareto"), ("Pareto", "Exponential"),
            ("Pareto", "Gamma"), ("Exponential", "Pareto"), ("Gamma", "Pareto"),
            ("Beta", "Pareto"), ("Normal", "Pareto"), ("Laplace", "Pareto"),
            ("Gumbel", "Uniform"), ("Gumbel", "Exponential"), ("Gumbel", "Gamma"),
            ("Gumbel", "Beta"), ("Gumbel", "Pareto"), ("Pareto", "Uniform"), ("Pareto", "Beta")]


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


_EXPONENT = _pos(3) * 2
_TRANSFORMS = {   # name -> (factory(module, lib), input array)
    "Abs": (lambda m, L: m.AbsTransform(), _real(2, 3)),
    "Power": (lambda m, L: m.PowerTransform(L.tensor(_EXPONENT)), _pos(2, 3)),
    "Tanh": (lambda m, L: m.TanhTransform(), _real(2, 3)),
    "Softplus": (lambda m, L: m.SoftplusTransform(), _real(2, 3)),
    "Softmax": (lambda m, L: m.SoftmaxTransform(), _real(2, 4)),
    "StickBreaking": (lambda m, L: m.StickBreakingTransform(), _real(2, 3)),
    "LowerCholesky": (lambda m, L: m.LowerCholeskyTransform(), _real(2, 3, 3)),
    "Independent": (lambda m, L: m.IndependentTransform(m.SigmoidTransform(), 1), _real(2, 3)),
    "Reshape": (lambda m, L: m.ReshapeTransform((2, 3), (3, 2)), _real(4, 2, 3)),
    "Cat": (lambda m, L: m.CatTransform([m.ExpTransform(), m.TanhTransform()], -1, [1, 2]),
            _real(2, 3)),
    "Stack": (lambda m, L: m.StackTransform([m.ExpTransform(), m.SigmoidTransform()], 1),
              _real(3, 2)),
    "Compose": (lambda m, L: m.ComposeTransform([m.StickBreakingTransform(),
                                                m.AffineTransform(0.0, 2.0)]), _real(2, 3)),
}
_NOT_BIJECTIVE = {"Abs", "Softmax", "LowerCholesky"}


@pytest.mark.parametrize("name", sorted(_TRANSFORMS))
def test_transforms(name):
    make, x = _TRANSFORMS[name]
    tt, gt = make(TD.transforms, torch), make(GD.transforms, tg)
    tx = torch.tensor(x, requires_grad=True)
    gx = tg.tensor(x, requires_grad=True)
    ty, gy = tt(tx), gt(gx)
    _close(ty, gy, rtol=1e-5, atol=1e-6)
    _close(tt.inv(ty), gt.inv(gy), rtol=1e-4, atol=1e-5)
    assert tuple(gt.forward_shape(x.shape)) == tuple(tt.forward_shape(x.shape))
    assert tuple(gt.inverse_shape(ty.shape)) == tuple(tt.inverse_shape(ty.shape))
    assert gt.bijective == tt.bijective
    assert gt.domain.event_dim == tt.domain.event_dim
    assert gt.codomain.event_dim == tt.codomain.event_dim
    if name not in ("Cat", "Stack"):
        assert repr(gt.codomain) == repr(tt.codomain)
    if name not in _NOT_BIJECTIVE:
        tl, gl = tt.log_abs_det_jacobian(tx, ty), gt.log_abs_det_jacobian(gx, gy)
        _close(tl, gl, rtol=1e-4, atol=1e-5)
        (ty.sum() + tl.sum()).backward()
        (gy.sum() + gl.sum()).backward()
        _close(tx.grad, gx.grad, rtol=1e-4, atol=1e-5)


def _chain_names(t):
    parts = t.parts if hasattr(t, "parts") else [t]
    out = []
    for p in parts:
        if hasattr(p, "base_transform"):
            out.append((type(p).__name__, _chain_names(p.base_transform)))
        else:
            out.append(type(p).__name__)
    return out


@pytest.mark.parametrize("con", [
    lambda c: c.real, lambda c: c.positive, lambda c: c.nonnegative,
    lambda c: c.greater_than(2.0), lambda c: c.greater_than_eq(1.0), lambda c: c.less_than(3.0),
    lambda c: c.unit_interval, lambda c: c.interval(1.0, 3.0),
    lambda c: c.half_open_interval(0.0, 2.0), lambda c: c.simplex, lambda c: c.lower_cholesky,
    lambda c: c.real_vector, lambda c: c.independent(c.positive, 1),
    lambda c: c.cat([c.positive, c.unit_interval], 0, [2, 1]),
    lambda c: c.stack([c.positive, c.interval(-1.0, 1.0), c.real], 0)])
def test_biject_to_and_transform_to(con):
    x = _real(3, 3)
    for name in ("biject_to", "transform_to"):
        tf, gf = getattr(TD, name), getattr(GD, name)
        try:
            tt = tf(con(TD.constraints))
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                gf(con(GD.constraints))
            continue
        gt = gf(con(GD.constraints))
        assert _chain_names(gt) == _chain_names(tt)
        ty, gy = tt(torch.tensor(x)), gt(tg.tensor(x))
        _close(ty, gy, rtol=1e-5, atol=1e-6)
        assert bool(con(GD.constraints).check(gy).all())


def _mixture(lib, mod, comp="Normal"):
    mix = mod.Categorical(probs=lib.tensor(_MIX_W))
    if comp == "Normal":
        c = mod.Normal(lib.tensor(_MIX_LOC), lib.tensor(_MIX_SCALE))
    else:
        c = mod.Independent(mod.Normal(lib.tensor(_MIX_LOC3), lib.tensor(_MIX_SCALE3)), 1)
    return mod.MixtureSameFamily(mix, c)


_MIX_W = _simplex(2, 3)
_MIX_LOC, _MIX_SCALE = _real(2, 3), _pos(2, 3)
_MIX_LOC3, _MIX_SCALE3 = _real(2, 3, 4), _pos(2, 3, 4)


@pytest.mark.parametrize("comp", ["Normal", "Independent"])
def test_mixture_same_family(comp):
    td, gd = _mixture(torch, TD, comp), _mixture(tg, GD, comp)
    assert tuple(gd.batch_shape) == tuple(td.batch_shape)
    assert tuple(gd.event_shape) == tuple(td.event_shape)
    torch.manual_seed(5)
    ts, tn = td.sample((2,)), torch.rand(2)
    tg.manual_seed(5)
    gs, gn = gd.sample((2,)), tg.rand(2)
    if comp == "Normal":
        np.testing.assert_array_equal(gs.numpy(), ts.numpy())
    else:       # 16 normals or more: within an ulp
        _close(ts, gs, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(gn.numpy(), tn.numpy())
    _close(td.log_prob(ts), gd.log_prob(tg.tensor(ts.numpy())), rtol=1e-5, atol=1e-6)
    _close(td.mean, gd.mean)
    _close(td.variance, gd.variance, rtol=1e-5, atol=1e-5)
    if comp == "Normal":
        _close(td.cdf(ts), gd.cdf(tg.tensor(ts.numpy())))
    te, ge = td.expand((4, 2)), gd.expand((4, 2))
    assert tuple(ge.batch_shape) == tuple(te.batch_shape)
    _close(te.log_prob(ts[:1]), ge.log_prob(tg.tensor(ts[:1].numpy())), rtol=1e-5, atol=1e-6)
    with pytest.raises(NotImplementedError):
        gd.entropy()


def test_mixture_log_prob_gradients():
    tw, gw = torch.tensor(_real(2, 3), requires_grad=True), tg.tensor(_real(2, 3) * 0,
                                                                      requires_grad=True)
    gw = tg.tensor(tw.detach().numpy(), requires_grad=True)
    tl, gl = torch.tensor(_MIX_LOC, requires_grad=True), tg.tensor(_MIX_LOC, requires_grad=True)
    td = TD.MixtureSameFamily(TD.Categorical(logits=tw), TD.Normal(tl, torch.ones(2, 3)))
    gd = GD.MixtureSameFamily(GD.Categorical(logits=gw), GD.Normal(gl, tg.ones(2, 3)))
    x = np.array([[0.3, -0.2], [1.0, 2.0]], np.float32)
    td.log_prob(torch.tensor(x)).sum().backward()
    gd.log_prob(tg.tensor(x)).sum().backward()
    _close(tw.grad, gw.grad)
    _close(tl.grad, gl.grad)


def test_binomial_kl_errors_enumerate_and_bregman():
    for mod, lib in ((TD, torch), (GD, tg)):
        p = mod.Binomial(3, lib.tensor([0.2, 0.5]))
        q = mod.Binomial(5, lib.tensor([0.4, 0.5]))
        with pytest.raises(NotImplementedError):
            mod.kl_divergence(p, q)
        with pytest.raises(NotImplementedError):
            mod.Binomial(lib.tensor([3.0, 4.0]), lib.tensor([0.2, 0.5])).enumerate_support()
    te = TD.Binomial(3, torch.tensor([0.2, 0.5])).enumerate_support()
    ge = GD.Binomial(3, tg.tensor([0.2, 0.5])).enumerate_support()
    np.testing.assert_array_equal(ge.numpy(), te.numpy())
    # the Bregman divergence of the exponential family equals the Poisson formula
    from tracegrad.distributions.kl import _kl_expfamily_expfamily
    rp, rq = _pos(4) * 3, _pos(4)
    _close(TD.kl_divergence(TD.Poisson(torch.tensor(rp)), TD.Poisson(torch.tensor(rq))),
           _kl_expfamily_expfamily(GD.Poisson(tg.tensor(rp)), GD.Poisson(tg.tensor(rq))))
    assert isinstance(GD.Normal(0.0, 1.0), GD.ExponentialFamily)
    assert isinstance(GD.Chi2(tg.tensor(2.0)), GD.Gamma)


def test_new_constraints_and_submodules():
    c, t = GD.constraints, TD.constraints
    v = np.array([[1.0, 2.0, 0.0], [3.0, 3.0, 1.0], [-1.0, 1.0, 1.0]], np.float32)
    np.testing.assert_array_equal(c.multinomial(3).check(tg.tensor(v)).numpy(),
                                  t.multinomial(3).check(torch.tensor(v)).numpy())
    for make in (lambda m: m.cat([m.positive, m.unit_interval], 1, [2, 1]),
                 lambda m: m.stack([m.positive, m.real, m.unit_interval], 1)):
        np.testing.assert_array_equal(make(c).check(tg.tensor(v)).numpy(),
                                      make(t).check(torch.tensor(v)).numpy())
    import tracegrad.distributions.lowrank_multivariate_normal as lr
    import tracegrad.distributions.multinomial as mn
    import tracegrad.distributions.poisson as po
    import tracegrad.distributions.relaxed_categorical as rc
    import tracegrad.distributions.studentT as st
    assert po.Poisson is GD.Poisson and st.StudentT is GD.StudentT
    assert mn.Multinomial is GD.Multinomial
    assert rc.RelaxedOneHotCategorical is GD.RelaxedOneHotCategorical
    assert lr.LowRankMultivariateNormal is GD.LowRankMultivariateNormal
    from tracegrad.distributions.constraint_registry import biject_to  # noqa: F401
    from tracegrad.distributions.relaxed_bernoulli import LogitRelaxedBernoulli  # noqa: F401
