"""torch.utils.checkpoint, torch.autograd.graph (Node, save_on_cpu, ...), torch.testing and
torch.amp / torch.autocast / torch.GradScaler / torch.cuda.amp against torch 2.13 (CPU)."""
import warnings

import numpy as np
import pytest
import tracegrad.utils.checkpoint as tgc

import tracegrad as tg

torch = pytest.importorskip("torch")
import torch.utils.checkpoint as tc  # noqa: E402


def _warned(f):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = f()
    return r, [(x.category, str(x.message)) for x in w]


def _error(f):
    try:
        f()
    except Exception as e:       # noqa: BLE001
        return type(e).__name__, str(e)
    return None


# -- checkpoint ------------------------------------------------------------------------------
def _model(T, drop=0.3):
    T.manual_seed(0)
    nn = T.nn
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(drop), nn.Linear(8, 3))


def _run(T, ck, mode, segments=None):
    m = _model(T)
    x = T.randn(5, 4, requires_grad=True)
    if ck is None:
        y = m(x)
    elif segments:
        y = ck.checkpoint_sequential(m, segments, x, use_reentrant=mode)
    else:
        y = ck.checkpoint(m, x, use_reentrant=mode)
    (y ** 2).sum().backward()
    after = T.rand(3).numpy()           # the generator's state after the backward
    return [y.detach().numpy(), x.grad.numpy()] + [p.grad.numpy() for p in m.parameters()] \
        + [after]


@pytest.mark.parametrize("mode", [True, False])
@pytest.mark.parametrize("segments", [None, 2])
def test_checkpoint_bits_and_torch(mode, segments):
    plain = _run(tg, None, mode)
    ck = _run(tg, tgc, mode, segments)
    for a, b in zip(plain, ck):         # dropout masks, values and gradients: the same bits
        assert a.tobytes() == b.tobytes()
    ref = _run(torch, tc, mode, segments)
    for a, b in zip(ck, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_use_reentrant_warning():
    for T, ck in ((tg, tgc), (torch, tc)):
        x = T.ones(2, requires_grad=True)
        _, w = _warned(lambda: ck.checkpoint(lambda t: t * 2, x))
        _, ws = _warned(lambda: ck.checkpoint_sequential([lambda t: t * 2] * 2, 2, x))
        if T is tg:
            mine = (w, ws)
        else:
            assert (w, ws) == mine
            assert len(w) == 1 and w[0][0] is UserWarning


def _scenarios(T, ck):
    T.manual_seed(0)
    out = {}
    w = T.randn(3, 3, requires_grad=True)

    def f(a):
        return (a @ w).tanh()
    x0 = T.randn(2, 3)
    y, warned = _warned(lambda: ck.checkpoint(f, x0, use_reentrant=True))
    out["no input requires grad"] = (warned, y.requires_grad)
    x = T.randn(2, 3, requires_grad=True)
    out["grad reentrant"] = _error(
        lambda: T.autograd.grad(ck.checkpoint(f, x, use_reentrant=True).sum(), [x]))
    out["inputs reentrant"] = _error(
        lambda: ck.checkpoint(f, x, use_reentrant=True).sum().backward(inputs=[x]))
    g = T.autograd.grad(ck.checkpoint(f, x, use_reentrant=False).sum(), [x, w])
    out["grad"] = [round(t.sum().item(), 5) for t in g]
    calls = []
    w.register_hook(lambda g: calls.append(round(g.sum().item(), 5)))
    for mode in (True, False):
        y = ck.checkpoint(f, x, use_reentrant=mode)
        y.register_hook(lambda g: calls.append("y"))
        s = y.sum()
        s.backward(retain_graph=True)
        s.backward()
        out[f"hooks {mode}"] = list(calls)
        calls.clear()
        out[f"third backward {mode}"] = _error(lambda: s.backward())
    out["kwargs reentrant"] = _error(lambda: ck.checkpoint(f, x, use_reentrant=True, foo=1))
    out["context_fn reentrant"] = _error(
        lambda: ck.checkpoint(f, x, use_reentrant=True, context_fn=lambda: None))
    out["determinism_check"] = _error(
        lambda: ck.checkpoint(f, x, use_reentrant=False, determinism_check="x"))
    out["kwargs"] = round(ck.checkpoint(lambda t, k=1: t * k, x, use_reentrant=False,
                                        k=2.0).sum().item(), 5)

    def g2(a, b):
        return a * b, (a + b).exp(), 3
    a = T.randn(4, requires_grad=True)
    b = T.randn(4, requires_grad=True)
    for mode in (True, False):
        o = ck.checkpoint(g2, a, b, use_reentrant=mode)
        out[f"outputs {mode}"] = (type(o).__name__, o[2], o[0].requires_grad)
        (o[0].sum() + o[1].sum()).backward()
        out[f"multi {mode}"] = (round(a.grad.sum().item(), 4), round(b.grad.sum().item(), 4))
        a.grad = b.grad = None
    y = ck.checkpoint(lambda t: (t ** 3).sum(), a, use_reentrant=False)
    g, = T.autograd.grad(y, a, create_graph=True)
    out["double backward"] = round(T.autograd.grad(g.sum(), a)[0].sum().item(), 4)
    with T.no_grad():
        out["no_grad"] = [ck.checkpoint(f, x, use_reentrant=m).requires_grad
                          for m in (True, False)]
    y = ck.checkpoint(lambda t: {"v": [t * 2, t.sum()]}, x, use_reentrant=False)
    y["v"][1].backward()
    out["nested outputs"] = (sorted(y), round(x.grad.sum().item(), 4))
    return out


def test_checkpoint_behaviour_as_torch():
    mine, ref = _scenarios(tg, tgc), _scenarios(torch, tc)
    assert mine.keys() == ref.keys()
    for k in mine:
        assert mine[k] == ref[k], k


@pytest.mark.parametrize("mode", [True, False])
def test_checkpoint_in_compile(mode):
    def run(compiled):
        m = _model(tg)
        opt = tg.optim.SGD(m.parameters(), lr=0.1)

        def step(x):
            opt.zero_grad()
            loss = (tgc.checkpoint(m, x, use_reentrant=mode) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        if compiled:
            step = tg.compile(step)
        losses = [step(tg.randn(5, 4, requires_grad=True)).item() for _ in range(3)]
        return losses, [p.detach().numpy().copy() for p in m.parameters()]
    (la, pa), (lb, pb) = run(False), run(True)
    assert la == lb
    assert all(p.tobytes() == q.tobytes() for p, q in zip(pa, pb))


# -- torch.autograd.graph ----------------------------------------------------------------------
def test_autograd_graph():
    from tracegrad.autograd.graph import Node, disable_saved_tensors_hooks, increment_version, save_on_cpu
    x = tg.ones(2, requires_grad=True)
    assert isinstance((x * 2).grad_fn, Node) and not isinstance(x, Node)
    with save_on_cpu():
        y = (x * x).exp()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(np.ones(2)), rtol=1e-6)
    for T in (tg, torch):
        with T.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
            e = _error(lambda: T.autograd.graph.save_on_cpu().__enter__())
        assert e == ("RuntimeError", "no hooks here")
    v = tg.ones(2)
    before = v._version
    increment_version(v)
    assert v._version == before + 1
    del disable_saved_tensors_hooks


# -- torch.testing ------------------------------------------------------------------------------
def _close_cases(T):
    nan, inf = float("nan"), float("inf")
    t = T.tensor
    return [
        (t([1., 2., 3.]), t([1., 2.1, 3.]), {}),
        (t([1, 2, 3]), t([1, 3, 3]), {}),
        (t([[1., nan], [2, 3]]), t([[1., nan], [2, 3]]), {}),
        (t([[1., nan], [2, 3]]), t([[1., nan], [2, 3]]), {"equal_nan": True}),
        (1.0, 1.1, {}), (1, 2, {}), (1, 1.0, {}), (None, None, {}),
        (T.ones(2), T.ones(3), {}),
        (T.ones(2), T.ones(2, dtype=T.float64), {}),
        (T.ones(2), T.ones(2, dtype=T.float64), {"check_dtype": False}),
        (T.ones(2), [1., 1.], {}),
        ([T.ones(2), T.ones(2)], [T.ones(2), T.zeros(2)], {}),
        ({"a": T.ones(2)}, {"a": T.zeros(2)}, {}),
        (T.ones(2), T.zeros(2), {"msg": "boom"}),
        (T.ones(2), T.zeros(2), {"msg": lambda m: "X" + m[:10]}),
        (t(True), t(False), {}),
        (t([1., 2.]), t([1., 2.0001]), {"rtol": 1e-3}),
        (t([1., 2.]), t([1., 2.0001]), {"rtol": 1e-3, "atol": 0.0}),
        (t([0., 1.]), t([1e-9, 1.]), {}),
        (t([1 + 1j]), t([1 + 2j]), {}),
        (t([inf]), t([inf]), {}), (t([inf]), t([-inf]), {}),
        (t(1.), t(2.)), (t([1.0] * 1000), t([1.0] * 999 + [2.]), {}),
        (T.ones(2, 3), T.ones(2, 3) + t([[0, 0, 0], [0, 0, 0.5]]), {}),
        (T.ones(2, 3, dtype=T.float64), T.ones(2, 3, dtype=T.float64) * (1 + 1e-6), {}),
        (t([1, 2], dtype=T.int32), t([1, 2], dtype=T.int64), {"check_dtype": False}),
        ([1, [2, 3]], [1, [2, 4]], {}),
    ]


def test_assert_close_as_torch():
    mine = _close_cases(tg)
    ref = _close_cases(torch)
    for case, theirs in zip(mine, ref):
        a, e, kw = case if len(case) == 3 else (*case, {})
        ra, re_, rkw = theirs if len(theirs) == 3 else (*theirs, {})
        got = _error(lambda: tg.testing.assert_close(a, e, **kw))
        want = _error(lambda: torch.testing.assert_close(ra, re_, **rkw))
        assert got == want, (got, want)


def test_make_tensor_draws_as_torch():
    for T in (tg, torch):
        T.manual_seed(0)
        mt = T.testing.make_tensor
        got = [mt(3, dtype=T.float32, device="cpu"), mt((2, 2), dtype=T.int64, device="cpu"),
               mt(2, dtype=T.complex64, device="cpu"), mt(4, dtype=T.bool, device="cpu"),
               mt(5, dtype=T.float64, device="cpu", low=-1, high=1, exclude_zero=True),
               mt(2, 3, dtype=T.float32, device="cpu", noncontiguous=True,
                  requires_grad=True)]
        vals = [g.detach().numpy() for g in got] + [got[-1].requires_grad]
        errs = [_error(lambda: mt(2, dtype=T.int64, device="cpu", requires_grad=True)),
                _error(lambda: mt(2, dtype=T.float32, device="cpu", low=3, high=1))]
        if T is tg:
            mine = (vals, errs)
    for a, b in zip(mine[0], vals):
        assert np.array_equal(a, b)
    assert mine[1] == errs


# -- torch.amp -----------------------------------------------------------------------------------
def _amp_surface(T):
    out = {}
    a, out["cuda autocast"] = _warned(lambda: T.autocast("cuda"))
    with a:
        out["enabled inside"] = (T.is_autocast_enabled(), T.is_autocast_enabled("cuda"),
                                 T.is_autocast_enabled("cpu"))
    _, out["cuda.amp.autocast"] = _warned(lambda: T.cuda.amp.autocast())
    _, out["cpu float32"] = _warned(lambda: T.autocast("cpu", dtype=T.float32))
    _, out["cpu disabled"] = _warned(lambda: T.autocast("cpu", enabled=False))
    out["bad type"] = _error(lambda: T.autocast(None))
    out["available"] = (T.amp.is_autocast_available("cpu"), T.amp.is_autocast_available("cuda"))
    for name, make in (("cuda.amp", lambda: T.cuda.amp.GradScaler()),
                       ("amp cuda", lambda: T.amp.GradScaler("cuda")),
                       ("top", lambda: T.GradScaler())):
        s, warned = _warned(make)
        x = T.ones(2, requires_grad=True)
        out[name] = (warned, s.is_enabled(), s.get_scale(), s.state_dict(), s.scale(x) is x)
    s = T.amp.GradScaler("cpu", growth_factor=2.0)
    out["cpu"] = (s.is_enabled(), s.get_scale(), s.state_dict())
    out["bad factor"] = _error(lambda: T.amp.GradScaler("cpu", growth_factor=1.0))
    out["update first"] = _error(lambda: T.amp.GradScaler("cpu").update())
    return out


def test_amp_surface_as_torch():
    mine, ref = _amp_surface(tg), _amp_surface(torch)
    for k in ref:
        assert mine[k] == ref[k], k


def test_cpu_autocast_lower_precision_refused():
    with pytest.raises(NotImplementedError, match="bfloat16"):
        tg.autocast("cpu")
    with pytest.raises(NotImplementedError, match="float16"):
        tg.autocast("cpu", dtype=tg.float16)


def _scaler_run(T, disabled=False):
    T.manual_seed(0)
    m = T.nn.Linear(3, 2)
    opt = T.optim.SGD(m.parameters(), lr=0.1)
    s = T.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=2, enabled=not disabled)
    log = []
    for i in range(6):
        opt.zero_grad()
        x = T.randn(4, 3)
        if i == 2:
            x[0, 0] = float("inf")
        loss = m(x).pow(2).mean()
        s.scale(loss).backward()
        if i == 3:
            s.unscale_(opt)
            log.append(_error(lambda: s.unscale_(opt)))
            log.append(m.weight.grad.numpy().copy())
        s.step(opt)
        log.append(_error(lambda: s.step(opt)))
        s.update()
        log.append((s.get_scale(), s._get_growth_tracker(), s.state_dict()))
        log.append(m.weight.detach().numpy().copy())
    s.update(16.0)
    log.append(s.get_scale())
    s2 = T.amp.GradScaler("cpu")
    s2.load_state_dict(s.state_dict())
    log.append(s2.state_dict())
    return log


def test_grad_scaler_cpu_as_torch():
    mine, ref = _scaler_run(tg), _scaler_run(torch)
    assert len(mine) == len(ref)
    for a, b in zip(mine, ref):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
        else:
            assert a == b
