"""``tg.optim.lr_scheduler`` against PyTorch: the sequence of learning rates (and cycled
momenta) each scheduler sets, for a table of options, agrees with PyTorch's."""
import numpy as np
import pytest
from tracegrad.optim.lr_scheduler import StepLR

import tracegrad as tg

torch = pytest.importorskip("torch")


def _warmup(epoch):
    return min(1.0, (epoch + 1) / 4) * 0.95 ** epoch


CASES = [
    ("StepLR", dict(step_size=3)), ("StepLR", dict(step_size=2, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 9], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=5)), ("CosineAnnealingLR", dict(T_max=4, eta_min=0.01)),
    ("LambdaLR", dict(lr_lambda=_warmup)),
    ("OneCycleLR", dict(max_lr=1.0, total_steps=14)),
    ("OneCycleLR", dict(max_lr=[0.5, 2.0], epochs=3, steps_per_epoch=5, pct_start=0.25,
                        anneal_strategy="linear")),
    ("OneCycleLR", dict(max_lr=0.8, total_steps=14, three_phase=True)),
    ("MultiplicativeLR", dict(lr_lambda=_warmup)),
    ("ConstantLR", dict()), ("ConstantLR", dict(factor=0.5, total_iters=3)),
    ("LinearLR", dict()), ("LinearLR", dict(start_factor=0.1, end_factor=0.8, total_iters=7)),
    ("PolynomialLR", dict()), ("PolynomialLR", dict(total_iters=9, power=2.5)),
    ("CosineAnnealingWarmRestarts", dict(T_0=3)),
    ("CosineAnnealingWarmRestarts", dict(T_0=2, T_mult=2, eta_min=0.01)),
]


def _id(case):
    name, opts = case
    return name + "-" + ",".join(f"{k}={v.__name__ if callable(v) else v}"
                                 for k, v in sorted(opts.items()))


def _sequence(lib, name, opts, optimizer="SGD", steps=13):
    a = lib.tensor(np.ones(2), dtype=lib.float64, requires_grad=True)
    b = lib.tensor(np.ones(3), dtype=lib.float64, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.3}]
    opt = (lib.optim.SGD(groups, lr=0.1, momentum=0.9) if optimizer == "SGD"
           else lib.optim.Adam(groups, lr=0.1))
    sched = getattr(lib.optim.lr_scheduler, name)(opt, **opts)
    seen = [list(sched.get_last_lr())]
    momenta = []
    for _ in range(steps):
        opt.step()
        sched.step()
        seen.append(list(sched.get_last_lr()))
        assert seen[-1] == [g["lr"] for g in opt.param_groups]
        momenta.append([g.get("momentum", g.get("betas", (None,))[0]) for g in opt.param_groups])
    return np.array(seen), np.array(momenta, dtype=float), sched


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_lr_sequence_matches_torch(case):
    name, opts = case
    ours, our_m, _ = _sequence(tg, name, opts)
    theirs, their_m, _ = _sequence(torch, name, opts)
    np.testing.assert_allclose(ours, theirs, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(our_m, their_m, rtol=1e-13, atol=1e-15)


def test_one_cycle_cycles_adams_beta1_and_refuses_extra_steps():
    ours, our_m, sched = _sequence(tg, "OneCycleLR", dict(max_lr=1.0, total_steps=14), "Adam")
    theirs, their_m, _ = _sequence(torch, "OneCycleLR", dict(max_lr=1.0, total_steps=14),
                                   "Adam")
    np.testing.assert_allclose(ours, theirs, rtol=1e-13)
    np.testing.assert_allclose(our_m, their_m, rtol=1e-13)
    sched.step()
    with pytest.raises(ValueError, match="Tried to step 15 times"):
        sched.step()


@pytest.mark.parametrize("opts", [
    dict(), dict(patience=1, factor=0.5), dict(mode="max", patience=0, threshold=0.1),
    dict(patience=1, cooldown=2, min_lr=[0.02, 0.05], threshold_mode="abs", threshold=0.05)],
    ids=["default", "patience1", "max", "cooldown-minlr-abs"])
def test_reduce_lr_on_plateau_matches_torch(opts):
    metrics = [1.0, 0.9, 0.95, 0.94, 0.93, 0.96, 0.97, 0.8, 0.81, 0.82, 0.83, 0.84, 0.85,
               0.86, 0.87, 0.88]

    def run(lib):
        a = lib.tensor(np.ones(2), dtype=lib.float64, requires_grad=True)
        b = lib.tensor(np.ones(2), dtype=lib.float64, requires_grad=True)
        opt = lib.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.3}], lr=0.1)
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **opts)
        out = []
        for m in metrics * 2:
            sched.step(m)
            out.append(list(sched.get_last_lr()))
        return np.array(out)

    np.testing.assert_allclose(run(tg), run(torch), rtol=1e-13)


def test_state_dict_and_resume():
    _, _, sched = _sequence(tg, "StepLR", dict(step_size=3), steps=4)
    _, _, tsched = _sequence(torch, "StepLR", dict(step_size=3), steps=4)
    ours, theirs = sched.state_dict(), tsched.state_dict()
    assert ours["last_epoch"] == theirs["last_epoch"] == 4
    assert ours["base_lrs"] == theirs["base_lrs"]
    assert ours["_last_lr"] == pytest.approx(theirs["_last_lr"], rel=1e-15)
    # a fresh scheduler on a fresh optimizer resumes where the saved one was
    p = tg.tensor(np.ones(2), dtype=tg.float64, requires_grad=True)
    opt = tg.optim.SGD([{"params": [p]}, {"params": [tg.ones(1, requires_grad=True)],
                                          "lr": 0.3}], lr=0.1)
    resumed = StepLR(opt, step_size=3)
    resumed.load_state_dict(ours)
    assert resumed.last_epoch == 4 and resumed.get_last_lr() == sched.get_last_lr()


def test_lambda_state_dict_leaves_out_functions_and_epoch_argument_warns():
    p = tg.tensor(np.ones(2), requires_grad=True)
    opt = tg.optim.SGD([p], lr=0.1)
    sched = tg.optim.lr_scheduler.LambdaLR(opt, lambda e: 0.5 ** e)
    assert sched.state_dict()["lr_lambdas"] == [None]
    with pytest.warns(UserWarning, match="epoch parameter"):
        tg.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5).step(3)
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        tg.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=2.0)


@pytest.mark.parametrize("milestones", [[3], [2, 6]], ids=["warmup-then-cosine", "three"])
def test_sequential_lr_matches_torch(milestones):
    def run(lib):
        p = lib.tensor(np.ones(2), dtype=lib.float64, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.5, momentum=0.9)
        s = lib.optim.lr_scheduler
        scheds = [s.LinearLR(opt, start_factor=0.2, total_iters=3),
                  s.CosineAnnealingLR(opt, T_max=4), s.ExponentialLR(opt, gamma=0.8)]
        seq = s.SequentialLR(opt, scheds[:len(milestones) + 1], milestones=milestones)
        out = [seq.get_last_lr()]
        for _ in range(12):
            opt.step()
            seq.step()
            out.append(seq.get_last_lr())
        return np.array(out)

    np.testing.assert_allclose(run(tg), run(torch), rtol=1e-13)


def test_closed_forms_match_torch():
    """``step(epoch)`` (deprecated, but still used) jumps by the closed form."""
    def run(lib, name, **opts):
        p = lib.tensor(np.ones(2), dtype=lib.float64, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.5)
        sched = getattr(lib.optim.lr_scheduler, name)(opt, **opts)
        out = []
        for epoch in (3, 1, 7, 2, 10, 0, 5):
            with pytest.warns(UserWarning):
                sched.step(epoch)
            out.append(sched.get_last_lr())
        return np.array(out)

    for name, opts in [("StepLR", dict(step_size=3)), ("MultiStepLR", dict(milestones=[2, 5])),
                       ("ExponentialLR", dict(gamma=0.9)), ("CosineAnnealingLR", dict(T_max=6)),
                       ("ConstantLR", dict(factor=0.5, total_iters=4)),
                       ("LinearLR", dict(start_factor=0.25, total_iters=6)),
                       ("PolynomialLR", dict(total_iters=8, power=2.0))]:
        np.testing.assert_allclose(run(tg, name, **opts), run(torch, name, **opts), rtol=1e-13,
                                   err_msg=name)
