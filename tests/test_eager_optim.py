"""``tg.optim`` against PyTorch (CPU, float64): the same steps from the same parameters and
gradients give the same parameters to ~1e-12, for every optimizer and a table of option
combinations; optimizer ``state_dict`` has PyTorch's structure and round-trips."""
import itertools

import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg

torch = pytest.importorskip("torch")

SHAPES = [(3, 2), (4,)]


def _start():
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s) for s in SHAPES]


def _grad(i, x, k):
    """A fixed nonlinear 'gradient' of parameter ``i`` at value ``x`` in step ``k`` (NumPy:
    both libraries see the very same numbers)."""
    return np.sin(3 * x + i) + 0.5 * x + 0.1 * k


def _run(lib, name, options, steps=6, groups=False):
    params = [lib.tensor(x.copy(), dtype=lib.float64, requires_grad=True) for x in _start()]
    if groups:   # the second parameter with its own learning rate
        args = [{"params": [params[0]]}, {"params": [params[1]], "lr": options.get("lr", 1.0) * 3}]
    else:
        args = params
    opt = getattr(lib.optim, name)(args, **options)
    for k in range(steps):
        for i, p in enumerate(params):
            p.grad = lib.tensor(_grad(i, p.detach().numpy(), k), dtype=lib.float64)
        opt.step()
    return [p.detach().numpy() for p in params], opt


_COMMON = [dict(), dict(weight_decay=0.1), dict(maximize=True)]
TABLE = {
    "SGD": [dict(lr=0.1, **o) for o in (
        dict(), dict(momentum=0.9), dict(momentum=0.9, dampening=0.3),
        dict(momentum=0.9, nesterov=True), dict(momentum=0.5, weight_decay=0.1),
        dict(momentum=0.9, nesterov=True, weight_decay=0.01, maximize=True),
        dict(weight_decay=0.1), dict(maximize=True))],
    "Adam": [dict(lr=0.05, **o, **c) for o, c in itertools.product(
        (dict(), dict(amsgrad=True), dict(betas=(0.8, 0.9), eps=1e-6)), _COMMON)],
    "AdamW": [dict(lr=0.05, **o, **c) for o, c in itertools.product(
        (dict(), dict(amsgrad=True)), _COMMON)],
    "RMSprop": [dict(lr=0.01, **o, **c) for o, c in itertools.product(
        (dict(), dict(alpha=0.9), dict(momentum=0.8), dict(centered=True),
         dict(centered=True, momentum=0.5)), _COMMON)],
    "Adagrad": [dict(lr=0.1, **o, **c) for o, c in itertools.product(
        (dict(), dict(lr_decay=0.1), dict(initial_accumulator_value=0.5, eps=1e-6)),
        _COMMON)],
    "Adadelta": [dict(**o, **c) for o, c in itertools.product(
        (dict(), dict(lr=0.5, rho=0.8), dict(eps=1e-4)), _COMMON)],
}
CASES = [(name, opts) for name, rows in TABLE.items() for opts in rows]


def _id(case):
    name, opts = case
    return name + "-" + ",".join(f"{k}={v}" for k, v in sorted(opts.items()))


@pytest.mark.parametrize("case", bounded(CASES, 40), ids=_id)
def test_optimizer_steps_match_torch(case):
    name, opts = case
    ours, _ = _run(tg, name, opts)
    theirs, _ = _run(torch, name, opts)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(TABLE))
def test_param_groups_with_own_options_match_torch(name):
    opts = dict(TABLE[name][0])
    opts.setdefault("lr", 0.1)
    ours, _ = _run(tg, name, opts, groups=True)
    theirs, _ = _run(torch, name, opts, groups=True)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def _structure(sd):
    """A state dict with tensors replaced by (dtype kind, shape)."""
    def walk(v):
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(walk(x) for x in v)
        if hasattr(v, "shape") and hasattr(v, "dtype"):
            return ("tensor", tuple(v.shape))
        return v
    return walk(sd)


@pytest.mark.parametrize("name", list(TABLE))
def test_state_dict_has_torchs_structure(name):
    opts = dict(TABLE[name][1 if len(TABLE[name]) > 1 else 0])
    _, ours = _run(tg, name, opts, steps=2, groups=True)
    _, theirs = _run(torch, name, opts, steps=2, groups=True)
    assert _structure(ours.state_dict()) == _structure(theirs.state_dict())
    # and the state values themselves
    for i, s in theirs.state_dict()["state"].items():
        for k, v in s.items():
            np.testing.assert_allclose(np.asarray(ours.state_dict()["state"][i][k]),
                                       v.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["SGD", "Adam", "RMSprop", "Adagrad", "Adadelta"])
def test_load_state_dict_resumes_exactly(name):
    opts = dict(TABLE[name][1])
    full, _ = _run(torch, name, opts, steps=6)
    # three steps, save, build a fresh optimizer on the current parameters, resume
    params = [tg.tensor(x.copy(), dtype=tg.float64, requires_grad=True) for x in _start()]
    opt = getattr(tg.optim, name)(params, **opts)
    for k in range(6):
        if k == 3:
            saved = opt.state_dict()
            opt = getattr(tg.optim, name)(params, lr=123.0)
            opt.load_state_dict(saved)
            assert opt.param_groups[0]["lr"] == opts.get("lr", opt.defaults["lr"]) or \
                name == "Adadelta"
        for i, p in enumerate(params):
            p.grad = tg.tensor(_grad(i, p.detach().numpy(), k), dtype=tg.float64)
        opt.step()
    for p, b in zip(params, full):
        np.testing.assert_allclose(p.detach().numpy(), b, rtol=1e-12, atol=1e-12)


def test_optimizer_state_dict_loads_torchs():
    """A state dict written by PyTorch's Adam (converted to tg tensors) resumes in ours."""
    opts = dict(lr=0.05, amsgrad=True)
    full, _ = _run(torch, "Adam", opts, steps=5)
    tparams = [torch.tensor(x.copy(), requires_grad=True) for x in _start()]
    topt = torch.optim.Adam(tparams, **opts)
    for k in range(2):
        for i, p in enumerate(tparams):
            p.grad = torch.tensor(_grad(i, p.detach().numpy(), k))
        topt.step()
    sd = topt.state_dict()
    sd = {"state": {i: {k: tg.tensor(v.numpy()) for k, v in s.items()}
                    for i, s in sd["state"].items()},
          "param_groups": sd["param_groups"]}
    params = [tg.tensor(p.detach().numpy().copy(), requires_grad=True) for p in tparams]
    opt = tg.optim.Adam(params, lr=1.0)
    opt.load_state_dict(sd)
    for k in range(2, 5):
        for i, p in enumerate(params):
            p.grad = tg.tensor(_grad(i, p.detach().numpy(), k), dtype=tg.float64)
        opt.step()
    for p, b in zip(params, full):
        np.testing.assert_allclose(p.detach().numpy(), b, rtol=1e-12, atol=1e-12)


def test_zero_grad_and_add_param_group():
    a = tg.tensor(np.ones(2), requires_grad=True)
    b = tg.tensor(np.ones(3), requires_grad=True)
    opt = tg.optim.SGD([a], lr=0.1, momentum=0.9)
    opt.add_param_group({"params": b, "lr": 0.5})
    assert opt.param_groups[1]["momentum"] == 0.9 and opt.param_groups[1]["lr"] == 0.5
    (a.sum() + (b * b).sum()).backward()
    opt.step()
    np.testing.assert_allclose(b.detach().numpy(), np.ones(3) - 0.5 * 2)
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(a.grad.numpy(), 0.0)
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})
    with pytest.raises(TypeError, match="ordered collections"):
        tg.optim.SGD({a}, lr=0.1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        tg.optim.RMSprop([a], lr=-1)


# -- LBFGS ----------------------------------------------------------------------------------
W, T = np.array([1.0, 3.0, 0.5, 2.0]), np.array([0.5, -1.0, 2.0, 0.0])


def _lbfgs_run(lib, steps, **opts):
    x = lib.tensor(np.array([-1.2, 1.0, 0.5, -0.3]), dtype=lib.float64, requires_grad=True)
    opt = lib.optim.LBFGS([x], **opts)
    losses = []
    w, t = lib.tensor(W, dtype=lib.float64), lib.tensor(T, dtype=lib.float64)

    def closure():
        opt.zero_grad()
        loss = (w * (x - t) ** 2).sum() + (0.3 * x[:-1] * x[1:]).sum() + (0.1 * x ** 4).sum()
        loss.backward()
        return loss

    for _ in range(steps):
        losses.append(opt.step(closure).item())
    return x.detach().numpy(), np.array(losses), opt


@pytest.mark.parametrize("opts", [
    dict(), dict(lr=0.5, max_iter=7, history_size=3),
    dict(line_search_fn="strong_wolfe"),
    dict(line_search_fn="strong_wolfe", history_size=4, max_iter=5),
    dict(line_search_fn="strong_wolfe", lr=5.0),       # overshoots: the zoom phase
    dict(line_search_fn="strong_wolfe", lr=0.01)],     # too short: the bracketing phase
    ids=["default", "small-history", "strong-wolfe", "strong-wolfe-short", "wolfe-zoom",
         "wolfe-extrapolate"])
def test_lbfgs_matches_torch(opts):
    ours, our_losses, opt = _lbfgs_run(tg, 3, **opts)
    theirs, their_losses, topt = _lbfgs_run(torch, 3, **opts)
    np.testing.assert_allclose(our_losses, their_losses, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)
    ours_state = opt.state_dict()["state"][0]
    theirs_state = topt.state_dict()["state"][0]
    assert ours_state["func_evals"] == theirs_state["func_evals"]
    assert ours_state["n_iter"] == theirs_state["n_iter"]


def test_lbfgs_needs_a_closure_and_one_group():
    x = tg.tensor(np.ones(2), requires_grad=True)
    with pytest.raises(RuntimeError, match="closure"):
        tg.optim.LBFGS([x]).step(None)
    with pytest.raises(ValueError, match="parameter groups"):
        tg.optim.LBFGS([{"params": [x]}, {"params": [tg.tensor(np.ones(1), requires_grad=True)]}])


def test_training_with_backward_matches_torch():
    """A small regression trained end to end (forward, backward, Adam) in both."""
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((16, 3)), rng.standard_normal((16, 1))
    W0, b0 = rng.standard_normal((3, 1)), rng.standard_normal(1)

    def train(lib):
        w = lib.tensor(W0.copy(), dtype=lib.float64, requires_grad=True)
        b = lib.tensor(b0.copy(), dtype=lib.float64, requires_grad=True)
        x, y = lib.tensor(X, dtype=lib.float64), lib.tensor(Y, dtype=lib.float64)
        opt = lib.optim.RMSprop([w, b], lr=0.01, momentum=0.5, centered=True)
        for _ in range(5):
            opt.zero_grad()
            loss = ((lib.tanh(x @ w + b) - y) ** 2).mean()
            loss.backward()
            opt.step()
        return w.detach().numpy(), b.detach().numpy()

    for a, e in zip(train(tg), train(torch)):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-13)


def test_custom_optimizer_written_the_torch_way():
    """A user's ``Optimizer`` subclass with its own ``step`` (``self.state[p]`` created on
    first use, in-place tensor updates under ``no_grad``) runs as in PyTorch."""
    def make(lib):
        class SignMomentum(lib.optim.Optimizer):
            def __init__(self, params, lr=0.1, beta=0.5):
                super().__init__(params, dict(lr=lr, beta=beta))

            def step(self, closure=None):
                with lib.no_grad():
                    for group in self.param_groups:
                        for p in group["params"]:
                            if p.grad is None:
                                continue
                            state = self.state[p]
                            if "buf" not in state:
                                state["buf"] = lib.zeros_like(p)
                            state["buf"].mul_(group["beta"]).add_(p.grad)
                            p.add_(lib.sign(state["buf"]) * -group["lr"])
        return SignMomentum

    def run(lib):
        params = [lib.tensor(x.copy(), dtype=lib.float64, requires_grad=True) for x in _start()]
        opt = make(lib)(params, lr=0.05)
        for k in range(4):
            for i, p in enumerate(params):
                p.grad = lib.tensor(_grad(i, p.detach().numpy(), k), dtype=lib.float64)
            opt.step()
        return [p.detach().numpy() for p in params], opt.state_dict()

    (ours, our_sd), (theirs, their_sd) = run(tg), run(torch)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-14)
    assert _structure(our_sd) == _structure(their_sd)


def test_pipeline_dataloader_adadelta_steplr_checkpoint_matches_torch(tmp_path):
    """An MNIST-example-shaped loop: TensorDataset, DataLoader, Adadelta, StepLR per epoch,
    a checkpoint saved and loaded mid-way; the same numbers as PyTorch."""
    rng = np.random.default_rng(3)
    X, Y = rng.standard_normal((40, 5)), rng.standard_normal((40, 2))
    init = [rng.standard_normal(s) * 0.5 for s in ((5, 8), (8,), (8, 2), (2,))]

    def run(lib, save, load):
        params = [lib.tensor(a.copy(), dtype=lib.float64, requires_grad=True) for a in init]
        data = lib.utils.data.TensorDataset(lib.tensor(X, dtype=lib.float64),
                                            lib.tensor(Y, dtype=lib.float64))
        loader = lib.utils.data.DataLoader(data, batch_size=16, shuffle=False)
        opt = lib.optim.Adadelta(params, lr=1.0)
        sched = lib.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
        losses = []
        for epoch in range(3):
            for x, y in loader:
                opt.zero_grad()
                h = lib.tanh(x @ params[0] + params[1])
                loss = ((h @ params[2] + params[3] - y) ** 2).mean()
                loss.backward()
                opt.step()
                losses.append(loss.item())
            sched.step()
            if epoch == 1:
                path = tmp_path / f"{lib.__name__}.ckpt"
                save({"opt": opt.state_dict(), "sched": sched.state_dict()}, path)
                ckpt = load(path)
                opt = lib.optim.Adadelta(params)
                opt.load_state_dict(ckpt["opt"])
                sched = lib.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
                sched.load_state_dict(ckpt["sched"])
        return np.array(losses), [p.detach().numpy() for p in params], sched.get_last_lr()

    ours = run(tg, tg.save, tg.load)
    theirs = run(torch, torch.save, torch.load)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    for a, b in zip(ours[1], theirs[1]):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)
    assert ours[2] == pytest.approx(theirs[2], rel=1e-15)
