"""``ChainedScheduler`` and ``CyclicLR`` against PyTorch: the rates (and cycled momenta,
SGD's ``momentum`` or Adam's ``beta1``) step by step, and the state dicts."""
import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

CYCLIC = [
    dict(base_lr=0.01, max_lr=0.1, step_size_up=4),
    dict(base_lr=[0.01, 0.02], max_lr=[0.1, 0.5], step_size_up=3, step_size_down=5,
         mode="triangular2"),
    dict(base_lr=0.001, max_lr=0.2, step_size_up=2, mode="exp_range", gamma=0.9),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3, cycle_momentum=False),
    dict(base_lr=0.01, max_lr=0.1, step_size_up=3, base_momentum=[0.7, 0.6],
         max_momentum=0.95, scale_fn=lambda x: 0.5 ** x, scale_mode="iterations"),
]


def _run(lib, make, optimizer="SGD", steps=25):
    a = lib.tensor(np.ones(2), dtype=lib.float64, requires_grad=True)
    b = lib.tensor(np.ones(3), dtype=lib.float64, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.3}]
    opt = (lib.optim.SGD(groups, lr=0.1, momentum=0.9) if optimizer == "SGD"
           else lib.optim.Adam(groups, lr=0.1))
    sched = make(lib.optim.lr_scheduler, opt)
    lrs, moms = [list(sched.get_last_lr())], []
    for _ in range(steps):
        (a.sum() + b.sum()).backward()
        opt.step()
        sched.step()
        lrs.append(list(sched.get_last_lr()))
        assert lrs[-1] == [g["lr"] for g in opt.param_groups]
        moms.append([g["momentum"] if "momentum" in g else g["betas"][0]
                     for g in opt.param_groups])
    return np.array(lrs), np.array(moms, dtype=float), sched, opt, (a, b)


def _state(sched):
    return {k: v for k, v in sched.state_dict().items() if not k.startswith("_get_lr")
            and k not in ("_is_initial", "verbose")}


@pytest.mark.parametrize("optimizer", ["SGD", "Adam"])
@pytest.mark.parametrize("i", range(len(CYCLIC)))
def test_cyclic_lr_matches_torch(i, optimizer):
    make = lambda s, opt: s.CyclicLR(opt, **CYCLIC[i])
    ours, our_m, sched, opt, ab = _run(tg, make, optimizer)
    theirs, their_m, tsched, topt, tab = _run(torch, make, optimizer)
    np.testing.assert_allclose(ours, theirs, rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(our_m, their_m, rtol=1e-14, atol=1e-16)
    for p, q in zip(ab, tab):       # the cycled momentum reached the updates
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-12)
    mine, theirs_sd = _state(sched), _state(tsched)
    assert set(mine) == set(theirs_sd)
    for k in ("last_epoch", "base_lrs", "max_lrs", "total_size", "step_ratio", "mode",
              "gamma", "scale_mode", "_scale_fn_custom", "_last_lr", "_step_count"):
        assert mine[k] == pytest.approx(theirs_sd[k], rel=1e-14) if k in ("_last_lr",) \
            else mine[k] == theirs_sd[k], k
    for key in ("max_momentum", "base_momentum"):
        assert [g.get(key) for g in opt.param_groups] == [g.get(key) for g in topt.param_groups]


def test_cyclic_lr_resumes_from_its_state_dict():
    _, _, sched, _, _ = _run(tg, lambda s, opt: s.CyclicLR(opt, 0.01, 0.1, 3, mode="triangular2"),
                             steps=7)
    p = tg.tensor(np.ones(2), requires_grad=True)
    opt = tg.optim.SGD([{"params": [p]}, {"params": [tg.ones(1, requires_grad=True)]}],
                       lr=0.1, momentum=0.9)
    again = tg.optim.lr_scheduler.CyclicLR(opt, 0.01, 0.1, 3, mode="triangular2")
    again.load_state_dict(sched.state_dict())
    for _ in range(5):
        sched.step()
        again.step()
        assert again.get_last_lr() == sched.get_last_lr()


def test_cyclic_lr_errors_as_torch():
    for lib in (tg, torch):
        p = lib.ones(2, requires_grad=True)
        with pytest.raises(ValueError, match="must support momentum or beta1"):
            lib.optim.lr_scheduler.CyclicLR(lib.optim.Adagrad([p], lr=0.1), 0.01, 0.1)
        with pytest.raises(ValueError, match="mode is invalid"):
            lib.optim.lr_scheduler.CyclicLR(lib.optim.SGD([p], lr=0.1, momentum=0.9), 0.01,
                                            0.1, mode="saw")
        with pytest.raises(ValueError, match="base_lr must have the same length"):
            lib.optim.lr_scheduler.CyclicLR(lib.optim.SGD([p], lr=0.1, momentum=0.9),
                                            [0.01, 0.02], 0.1)
        with pytest.raises(TypeError, match="is not an Optimizer"):
            lib.optim.lr_scheduler.CyclicLR(object(), 0.01, 0.1)


CHAINS = [
    lambda s, opt: [s.ConstantLR(opt, factor=0.1, total_iters=5), s.ExponentialLR(opt, 0.9)],
    lambda s, opt: [s.LinearLR(opt, start_factor=0.2, total_iters=4),
                    s.StepLR(opt, step_size=3, gamma=0.5), s.MultiStepLR(opt, [7, 10], 0.3)],
    lambda s, opt: [s.CosineAnnealingLR(opt, T_max=6)],
]


@pytest.mark.parametrize("i", range(len(CHAINS)))
def test_chained_scheduler_matches_torch(i):
    make = lambda s, opt: s.ChainedScheduler(CHAINS[i](s, opt))
    ours, _, sched, _, _ = _run(tg, make, steps=15)
    theirs, _, tsched, _, _ = _run(torch, make, steps=15)
    np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-16)
    mine, their_sd = sched.state_dict(), tsched.state_dict()
    assert mine["_last_lr"] == pytest.approx(their_sd["_last_lr"], rel=1e-13)
    assert len(mine["_schedulers"]) == len(their_sd["_schedulers"])
    for a, b in zip(mine["_schedulers"], their_sd["_schedulers"]):
        assert a["last_epoch"] == b["last_epoch"]
        assert a["_last_lr"] == pytest.approx(b["_last_lr"], rel=1e-13)
    again = tg.optim.lr_scheduler.ChainedScheduler(
        CHAINS[i](tg.optim.lr_scheduler,
                  tg.optim.SGD([tg.ones(1, requires_grad=True)], lr=0.1)))
    saved = sched.state_dict()
    again.load_state_dict(saved)
    assert "_schedulers" in saved       # load_state_dict leaves the dict as it found it
    assert [s.last_epoch for s in again._schedulers] == [s.last_epoch for s in sched._schedulers]


def test_chained_scheduler_errors_as_torch():
    for lib in (tg, torch):
        s = lib.optim.lr_scheduler
        p, q = lib.ones(2, requires_grad=True), lib.ones(2, requires_grad=True)
        o1, o2 = lib.optim.SGD([p], lr=0.1), lib.optim.SGD([q], lr=0.1)
        with pytest.raises(ValueError, match="expects at least one scheduler"):
            s.ChainedScheduler([])
        with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
            s.ChainedScheduler([s.ReduceLROnPlateau(o1)])
        with pytest.raises(ValueError, match="to belong to the same optimizer"):
            s.ChainedScheduler([s.StepLR(o1, 2), s.StepLR(o2, 2)])
