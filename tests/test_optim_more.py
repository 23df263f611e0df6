"""The optimizers added to ``tg.optim`` (Adamax, NAdam, RAdam, Rprop, ASGD, Adafactor,
SparseAdam) and ``tg.optim.swa_utils`` against PyTorch 2.13 (CPU, single-tensor path):
the same parameters step by step in float32 and float64 (bit for bit where no square
root enters: PyTorch's vectorised sqrt is not correctly rounded; else to a few ulps),
state_dict structure and values, load_state_dict round trips, validation errors, param
groups with their own options, a scheduler, and a whole training step under tg.compile
with eager's bits."""
import numpy as np
import pytest
from tracegrad.nn import functional as F

import tracegrad as tg
from tracegrad import nn

torch = pytest.importorskip("torch")

# name -> (exact: no sqrt in the update, [kwargs variants])
TABLE = {
    "Adamax": (True, [dict(), dict(lr=0.1, weight_decay=0.1), dict(maximize=True, betas=(0.3, 0.9)),
                      dict(lr=0.05, eps=1e-3)]),
    "NAdam": (False, [dict(), dict(weight_decay=0.1, decoupled_weight_decay=True),
                      dict(weight_decay=0.1, momentum_decay=0.01), dict(maximize=True, lr=0.05)]),
    "RAdam": (False, [dict(), dict(lr=0.1, betas=(0.9, 0.5)), dict(lr=0.05, betas=(0.8, 0.7)),
                      dict(weight_decay=0.1, decoupled_weight_decay=True, betas=(0.9, 0.6)),
                      dict(weight_decay=0.1, maximize=True)]),
    "Rprop": (True, [dict(), dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2)),
                     dict(maximize=True)]),
    "ASGD": (True, [dict(), dict(lr=0.1, t0=2, lambd=0.1, weight_decay=0.1),
                    dict(t0=0, alpha=0.5, maximize=True)]),
    "Adafactor": (False, [dict(), dict(lr=0.05, weight_decay=0.1, d=1.5, beta2_decay=-0.5),
                          dict(eps=(1e-10, 1e-2), maximize=True)]),
}
CASES = [(n, o) for n, (_, rows) in TABLE.items() for o in rows]
SHAPES = [(3, 5), (7,)]
DTYPES = {"float32": np.float32, "float64": np.float64}


def _id(case):
    name, opts = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in sorted(opts.items()))


def _grad(i, x, k, dt):
    g = np.sin(3 * x.astype(np.float64) + i) + 0.5 * x + 0.1 * k
    if k == 2:
        g[..., 0] = 0       # Rprop's zero-sign branch
    return g.astype(dt)


def _params(lib, dt):
    rng = np.random.default_rng(0)
    ldt = getattr(lib, np.dtype(dt).name)
    return [lib.tensor(rng.standard_normal(s).astype(dt), dtype=ldt, requires_grad=True)
            for s in SHAPES]


def _steps(lib, opt, params, dt, ks):
    out = []
    for k in ks:
        for i, p in enumerate(params):
            p.grad = lib.tensor(_grad(i, p.detach().numpy(), k, dt))
        opt.step()
        out.append([p.detach().numpy().copy() for p in params])
    return out


def _run(lib, name, opts, dt, steps=6, groups=False):
    params = _params(lib, dt)
    args = params if not groups else [
        {"params": [params[0]]}, {"params": [params[1]], "lr": opts.get("lr", 0.01) * 3}]
    opt = getattr(lib.optim, name)(args, **opts)
    return _steps(lib, opt, params, dt, range(steps)), opt


def _same(ours, theirs, exact, dt):
    for a, b in zip(ours, theirs):
        if exact:
            np.testing.assert_array_equal(a, b)
        else:       # a few ulps: PyTorch's sqrt
            np.testing.assert_allclose(a, b, rtol=8 * np.finfo(dt).eps, atol=1e-30)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_steps_match_torch(case, dtype):
    name, opts = case
    dt = DTYPES[dtype]
    ours, _ = _run(tg, name, opts, dt)
    theirs, _ = _run(torch, name, opts, dt)
    for a, b in zip(ours, theirs):
        _same(a, b, TABLE[name][0], dt)


def _flat(sd):
    def walk(v):
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(walk(x) for x in v)
        if hasattr(v, "shape") and hasattr(v, "dtype"):
            return ("tensor", tuple(v.shape), str(v.dtype).split(".")[-1])
        return v
    return walk(sd)


@pytest.mark.parametrize("name", list(TABLE))
def test_state_dict_groups_and_round_trip(name):
    exact, rows = TABLE[name]
    opts = dict(rows[1])
    dt = np.float64
    ours, opt = _run(tg, name, opts, dt, steps=3, groups=True)
    theirs, topt = _run(torch, name, opts, dt, steps=3, groups=True)
    _same(ours[-1], theirs[-1], exact, dt)
    assert _flat(opt.state_dict()) == _flat(topt.state_dict())
    assert opt.param_groups[1]["lr"] == topt.param_groups[1]["lr"]
    for i, s in topt.state_dict()["state"].items():
        for k, v in s.items():
            np.testing.assert_allclose(np.asarray(opt.state_dict()["state"][i][k]._data),
                                       v.numpy(), rtol=1e-14)
    # save after 3 steps, a fresh optimizer loads it and goes on as PyTorch's does (its
    # load casts every state but ``step`` to the parameter's dtype: NAdam's mu_product,
    # ASGD's eta and mu become float64 here)
    def resume(lib):
        params = _params(lib, dt)
        opt = getattr(lib.optim, name)(params, **opts)
        _steps(lib, opt, params, dt, range(3))
        saved = opt.state_dict()
        opt = getattr(lib.optim, name)(params, lr=0.123)
        opt.load_state_dict(saved)
        assert opt.param_groups[0]["lr"] == saved["param_groups"][0]["lr"]
        return _steps(lib, opt, params, dt, range(3, 6)), opt
    (ours, opt), (theirs, topt) = resume(tg), resume(torch)
    _same(ours[-1], theirs[-1], exact, dt)
    assert _flat(opt.state_dict()) == _flat(topt.state_dict())


ERRORS = [
    ("Adamax", dict(lr=-1), "Invalid learning rate: -1"),
    ("Adamax", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("NAdam", dict(eps=-1), "Invalid epsilon value: -1"),
    ("RAdam", dict(betas=(0.9, 1.5)), "Invalid beta parameter at index 1: 1.5"),
    ("RAdam", dict(weight_decay=-0.1), "Invalid weight_decay value: -0.1"),
    ("Rprop", dict(etas=(1.1, 1.2)), "Invalid eta values: 1.1, 1.2"),
    ("ASGD", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("Adafactor", dict(lr=-1), "Learning rate should be >= 0 but is: -1"),
    ("Adafactor", dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    ("Adafactor", dict(eps=(None, -1)), "epsilon2 should be >= 0 but is: -1"),
    ("Adafactor", dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    ("SparseAdam", dict(lr=0.0), "Invalid learning rate: 0.0"),
    ("SparseAdam", dict(eps=0.0), "Invalid epsilon value: 0.0"),
]


@pytest.mark.parametrize("name,opts,message", ERRORS, ids=[f"{e[0]}-{e[2][:20]}" for e in ERRORS])
def test_validation_errors_as_torch(name, opts, message):
    for lib in (tg, torch):
        with pytest.raises(ValueError) as info:
            getattr(lib.optim, name)(_params(lib, np.float64), **opts)
        assert str(info.value) == message


@pytest.mark.parametrize("name", list(TABLE))
def test_tensor_lr_and_scheduler(name):
    """lr given as a (float64) tensor, then an ExponentialLR schedule, as in PyTorch."""
    exact, rows = TABLE[name]
    dt = np.float64

    def run(lib):
        params = _params(lib, dt)
        opt = getattr(lib.optim, name)(params, lr=lib.tensor(0.05, dtype=lib.float64))
        sched = lib.optim.lr_scheduler.ExponentialLR(opt, 0.5)
        out = []
        for k in range(4):
            out += _steps(lib, opt, params, dt, [k])
            sched.step()
        return out
    for a, b in zip(run(tg), run(torch)):
        _same(a, b, exact, dt)


def test_defaults_and_param_groups_keys_as_torch():
    for name in list(TABLE) + ["SparseAdam"]:
        ours = getattr(tg.optim, name)(_params(tg, np.float64))
        theirs = getattr(torch.optim, name)(_params(torch, np.float64))
        assert ours.defaults == theirs.defaults, name
        assert list(ours.param_groups[0]) == list(theirs.param_groups[0]), name


# -- SparseAdam ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("maximize", [False, True])
def test_sparse_adam_matches_torch(dtype, maximize):
    dt = DTYPES[dtype]

    def run(lib):
        rng = np.random.default_rng(0)
        w = lib.tensor(rng.standard_normal((6, 3)).astype(dt), requires_grad=True)
        opt = lib.optim.SparseAdam([w], lr=0.1, maximize=maximize)
        for k in range(4):
            idx = np.array([[k % 6, (k + 2) % 6, k % 6]])     # a duplicate: coalesced
            vals = rng.standard_normal((3, 3)).astype(dt)
            w.grad = lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(vals), (6, 3))
            opt.step()
        return w.detach().numpy(), opt.state_dict()
    (a, sa), (b, sb) = run(tg), run(torch)
    _same([a], [b], False, dt)
    assert _flat(sa) == _flat(sb)


def test_sparse_adam_dense_gradient_error():
    for lib in (tg, torch):
        w = lib.zeros(3, requires_grad=True)
        opt = lib.optim.SparseAdam([w])
        w.grad = lib.ones(3)
        with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, "
                                               "please consider Adam instead"):
            opt.step()


# -- swa_utils --------------------------------------------------------------------------------
def _avg_fns(lib, mode):
    su = lib.optim.swa_utils
    return {"ema": dict(multi_avg_fn=su.get_ema_multi_avg_fn(0.9)), "swa": {},
            "swa-multi": dict(multi_avg_fn=su.get_swa_multi_avg_fn()),
            "ema-fn-buffers": dict(avg_fn=su.get_ema_avg_fn(0.8), use_buffers=True),
            "swa-fn": dict(avg_fn=su.get_swa_avg_fn())}[mode]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("mode", ["ema", "swa", "swa-multi", "ema-fn-buffers", "swa-fn"])
def test_averaged_model_matches_torch(mode, dtype):
    dt = DTYPES[dtype]

    def run(lib):
        rng = np.random.default_rng(0)
        m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)) if lib is tg else \
            torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
        m.to(getattr(lib, np.dtype(dt).name))
        avg = lib.optim.swa_utils.AveragedModel(m, **_avg_fns(lib, mode))
        for _ in range(5):
            with lib.no_grad():
                for n, p in list(m.named_parameters()) + list(m.named_buffers()):
                    if "num_batches" not in n:
                        p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(dt)))
            avg.update_parameters(m)
        return {k: v.detach().numpy() for k, v in avg.state_dict().items()}
    ours, theirs = run(tg), run(torch)
    assert list(ours) == list(theirs)
    for k in ours:
        np.testing.assert_array_equal(ours[k], theirs[k], err_msg=k)


def test_swalr_and_update_bn_match_torch():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((3, 8, 3))
    init = [rng.standard_normal(s) for s in ((4, 3), (4,), (4,), (4,))]

    def run(lib):
        m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)) if lib is tg else \
            torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
        m.double()
        with lib.no_grad():
            for p, v in zip(m.parameters(), init):
                p.copy_(lib.tensor(v))
        opt = lib.optim.SGD(m.parameters(), lr=0.5)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=[0.05], anneal_epochs=3,
                                          anneal_strategy="linear")
        lrs = []
        for _ in range(5):
            opt.step()
            sched.step()
            lrs.append(opt.param_groups[0]["lr"])
        sd = sched.state_dict()
        sched2 = lib.optim.swa_utils.SWALR(opt, swa_lr=0.01)
        sched2.load_state_dict(sd)
        sched2.step()
        lrs.append(opt.param_groups[0]["lr"])
        lib.optim.swa_utils.update_bn([(lib.tensor(x), 0) for x in X], m)
        return lrs, [b.detach().numpy() for b in m.buffers()], m.training
    (la, ba, ta), (lb, bb, tb) = run(tg), run(torch)
    assert la == pytest.approx(lb, rel=1e-15) and ta == tb
    for a, b in zip(ba, bb):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    for lib in (tg, torch):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
        with pytest.raises(ValueError, match="anneal_strategy must be one of"):
            lib.optim.swa_utils.SWALR(opt, 0.1, anneal_strategy="exp")
        with pytest.raises(ValueError, match="Invalid decay value 1.5"):
            lib.optim.swa_utils.get_ema_avg_fn(1.5)


# -- tg.compile of a whole training step -----------------------------------------------------
COMPILED = [(n, TABLE[n][1][1]) for n in TABLE]


@pytest.mark.parametrize("case", COMPILED, ids=_id)
def test_compiled_training_step_has_eager_bits(case):
    name, opts = case

    def train(compiled):
        tg.manual_seed(0)
        m = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
        opt = getattr(tg.optim, name)(m.parameters(), **opts)
        rng = np.random.RandomState(0)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            return loss

        f = tg.compile(step) if compiled else step
        for _ in range(3):
            f(tg.tensor(rng.randn(5, 6).astype(np.float32)), tg.tensor(rng.randint(0, 3, 5)))
        return m, opt

    (me, oe), (mc, oc) = train(False), train(True)
    for a, b in zip(me.parameters(), mc.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    se, sc = oe.state_dict(), oc.state_dict()
    assert _flat(se) == _flat(sc)
    for i in se["state"]:
        for k, v in se["state"][i].items():
            np.testing.assert_array_equal(np.asarray(v._data if isinstance(v, tg.Tensor) else v),
                                          np.asarray(sc["state"][i][k]._data if isinstance(
                                              sc["state"][i][k], tg.Tensor) else sc["state"][i][k]),
                                          err_msg=k)
