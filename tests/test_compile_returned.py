"""The tensors a compiled function returns carry eager's autograd state: a training step
that calls backward inside returns a loss (and outputs) that require grad, with a
grad_fn whose graph that backward freed, so a second backward raises PyTorch's "Trying
to backward through the graph a second time" and ``.numpy()`` asks for ``detach()``, as
eager tracegrad and ``torch.compile`` do; the numbers stay eager's bit for bit."""
import numpy as np
import pytest
from conftest import EXHAUSTIVE
from tracegrad.nn import functional as F

import tracegrad as tg
from tracegrad import nn

SECOND = "Trying to backward through the graph a second time"
NUMPY = ("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
         "instead.")
INPLACE = "one of the variables needed for gradient computation has been modified by an " \
    "inplace operation"


def _error(fn):
    try:
        fn()
    except RuntimeError as e:
        return str(e)
    return None


def _state(t):
    """What a user can observe of a returned tensor's autograd state."""
    return dict(requires_grad=t.requires_grad, is_leaf=t.is_leaf,
                has_grad_fn=t.grad_fn is not None, numpy=_error(t.numpy),
                item=t.item() if t.numel() == 1 else None,
                detached=t.detach().numpy().copy())


def _train(lib, compile_fn, kind="loss", steps=4):
    """A step calling backward inside, run ``steps`` times; per call the returned
    tensors' states and the second-backward errors, then the parameters and grads."""
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.Tanh(), lib.nn.Linear(8, 2))
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    mse = lib.nn.functional.mse_loss

    def step(x, y):
        opt.zero_grad()
        out = model(x)
        loss = mse(out, y)
        loss.backward()
        opt.step()
        return (loss, out) if kind == "both" else loss
    f = compile_fn(step) if compile_fn is not None else step
    rng = np.random.RandomState(0)
    calls = []
    for _ in range(steps):
        x = lib.tensor(rng.randn(5, 4).astype(np.float32))
        y = lib.tensor(rng.randn(5, 2).astype(np.float32))
        res = f(x, y)
        res = res if isinstance(res, tuple) else (res,)
        before = [p.grad.detach().numpy().copy() for p in model.parameters()]
        record = []
        for t in res:
            st = _state(t)
            st["second"] = _error(lambda t=t: t.sum().backward())
            record.append(st)
        after = [p.grad.detach().numpy().copy() for p in model.parameters()]
        for a, b in zip(before, after):         # the failed backward changed no .grad
            np.testing.assert_array_equal(a, b)
        calls.append((record, res))
    params = [p.detach().numpy().copy() for p in model.parameters()]
    grads = [p.grad.detach().numpy().copy() for p in model.parameters()]
    return calls, params, grads, f


def _same_states(a, b, exact=True):
    for (ra, _), (rb, _) in zip(a, b):
        assert len(ra) == len(rb)
        for sa, sb in zip(ra, rb):
            for k in ("requires_grad", "is_leaf", "has_grad_fn", "numpy"):
                assert sa[k] == sb[k], (k, sa[k], sb[k])
            assert (sa["second"] is None) == (sb["second"] is None)
            if sa["second"] is not None:
                assert sa["second"].startswith(SECOND) and sb["second"].startswith(SECOND)
            if exact:
                assert sa["item"] == sb["item"]
                np.testing.assert_array_equal(sa["detached"], sb["detached"])
            else:
                np.testing.assert_allclose(sa["detached"], sb["detached"], rtol=1e-5,
                                           atol=1e-6)


@pytest.mark.parametrize("kind", ["loss", "both"])
@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_returned_tensors_of_a_step_are_eagers(kind, backend):
    if backend == "jax":
        pytest.importorskip("jax")
    eager, pe, ge, _ = _train(tg, None, kind)
    compiled, pc, gc, f = _train(tg, lambda s: tg.compile(s, backend=backend), kind)
    _same_states(eager, compiled, exact=backend == "numpy")
    for st, _ in eager:
        for s in st:
            assert s["requires_grad"] and not s["is_leaf"] and s["has_grad_fn"]
            assert s["numpy"] == NUMPY and s["second"].startswith(SECOND)
    check = np.testing.assert_array_equal if backend == "numpy" else (
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6))
    for a, b in zip(pe + ge, pc + gc):
        check(a, b)
    ex = f.explain()
    assert ex.graph_count == 1 and not ex.break_reasons, str(ex)
    # the compiled calls' results: torch.compile's node name, a node of their own per call
    nodes = [t.grad_fn for _, res in compiled[1:] for t in res]
    assert all(n.name() == "CompiledFunctionBackward" for n in nodes)
    assert len({id(n) for n in nodes}) == len(nodes)


def test_the_returned_loss_feeds_eager_code_as_eagers_does():
    """Operations on the returned loss are recorded (it requires grad); a backward through
    them reaches the freed graph and raises, as eagerly."""
    def run(compiled):
        tg.manual_seed(0)
        model = nn.Linear(3, 1)
        opt = tg.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss
        f = tg.compile(step) if compiled else step
        x, y = tg.ones(4, 3), tg.zeros(4, 1)
        out = []
        for _ in range(4):
            loss = f(x, y)
            scaled = loss * 2
            out.append((scaled.requires_grad, scaled.grad_fn is not None,
                        _error(scaled.backward), float(scaled.detach())))
        return out
    eager, compiled = run(False), run(True)
    assert eager == compiled
    assert all(r[0] and r[1] and r[2].startswith(SECOND) for r in compiled)


@pytest.mark.skipif(not EXHAUSTIVE, reason="torch.compile compiles for 15 s: with "
                    "TRACEGRAD_EXHAUSTIVE=1")
def test_torch_compile_gives_the_same_returned_tensors():
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "compile"):
        pytest.skip("no torch.compile")
    import torch._dynamo
    torch._dynamo.reset()
    ref, pr, gr, _ = _train(torch, torch.compile, "both", steps=3)
    torch._dynamo.reset()
    compiled, pc, gc, _ = _train(tg, tg.compile, "both", steps=3)
    _same_states(ref, compiled, exact=False)
    for st, res in ref:
        for s in st:
            assert s["requires_grad"] and not s["is_leaf"] and s["has_grad_fn"]
            assert s["numpy"] == NUMPY and s["second"].startswith(SECOND)
        assert res[0].grad_fn.name() == "CompiledFunctionBackward"
    for a, b in zip(pr + gr, pc + gc):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _live_results(kind, compiled):
    """A step whose returned tensor's graph the backward inside did not free: eager's
    backward from it after the call runs (or finds the parameters updated in place)."""
    tg.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    opt = tg.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        if kind == "no-saved-values":
            loss = model[2].weight.sum()    # its backward reads no saved value
            loss.backward()
            opt.step()
            return loss
        loss = F.mse_loss(model(x), y)
        if kind == "retain":
            loss.backward(retain_graph=True)
            return loss
        loss.backward()
        opt.step()
        return model(x)     # after the update: a live graph
    f = tg.compile(step, options={"break_children": "eager"}) if compiled else step
    x, y = tg.ones(2, 3), tg.zeros(2, 1)
    out = []
    for _ in range(4):
        r = f(x, y)
        out.append((r.requires_grad, r.grad_fn is not None, _error(r.sum().backward),
                    [None if p.grad is None else p.grad.numpy().copy()
                     for p in model.parameters()]))
    return out, f


@pytest.mark.parametrize("kind", ["retain", "after-the-update", "no-saved-values"])
def test_a_live_returned_graph_runs_eagerly(kind):
    """Where the returned tensor's graph is still live after the backward inside (eager's
    backward from it gives gradients), a compiled call could not give it that history:
    the call is a graph break, and the gradients of a later backward are eager's."""
    eager, _ = _live_results(kind, False)
    compiled, f = _live_results(kind, True)
    for a, b in zip(eager, compiled):
        assert a[:3] == b[:3]
        for u, v in zip(a[3], b[3]):
            assert (u is None) == (v is None)
            if u is not None:
                np.testing.assert_array_equal(u, v)
    assert eager[-1][2] is None      # eager's later backward runs
    assert f.explain().graph_break_count == 1 and "did not free" in \
        f.explain().break_reasons[0]


def test_detached_results_stay_compiled():
    def step(x):
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        return loss.detach(), model.weight
    tg.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = tg.optim.Adam(model.parameters())
    f = tg.compile(step)
    for _ in range(3):
        loss, w = f(tg.ones(2, 3))
    assert not loss.requires_grad and loss.grad_fn is None
    assert w is model.weight
    assert f.explain().graph_count == 1 and not f.explain().break_reasons


def test_in_place_change_before_backward_of_a_compiled_forward():
    """A parameter the compiled forward's backward reads (a linear layer's weight, for the
    input's gradient) changed in place between the forward and the backward: eager's
    backward raises (PyTorch's saved-variable version check), so does the compiled
    forward's, where it used to give gradients of the old weight silently."""
    def run(compiled):
        tg.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
        fwd = tg.compile(model) if compiled else model
        out = []
        for k in range(4):
            model.zero_grad()
            loss = F.mse_loss(fwd(tg.ones(5, 4)), tg.zeros(5, 2))
            if k % 2:
                with tg.no_grad():
                    model[2].weight.add_(0.1)
            err = _error(loss.backward)
            out.append((err is not None and err.startswith(INPLACE),
                        None if err else model[0].weight.grad.numpy().copy()))
        return out
    eager, compiled = run(False), run(True)
    for (ea, ga), (ca, gc) in zip(eager, compiled):
        assert ea == ca
        if ga is not None:
            np.testing.assert_array_equal(ga, gc)
    assert [e for e, _ in compiled] == [False, True, False, True]


def test_a_stored_and_returned_result_is_one_tensor():
    """``state["last"] = loss; return loss``: eager stores and returns one tensor; the
    compiled call stored a second tensor of the same value (no autograd state, another
    identity)."""
    def run(compiled):
        tg.manual_seed(0)
        m = nn.Linear(3, 1)
        opt = tg.optim.SGD(m.parameters(), lr=0.1)
        state = {}

        def step(x, y):
            opt.zero_grad()
            loss = F.mse_loss(m(x), y)
            loss.backward()
            opt.step()
            state["last"] = loss
            return loss
        f = tg.compile(step) if compiled else step
        x, y = tg.randn(4, 3), tg.randn(4, 1)
        seen = []
        for _ in range(4):
            r = f(x, y)
            last = state["last"]
            seen.append((r is last, last.requires_grad, _error(last.numpy), r.item()))
        return seen, f
    (eager, _), (compiled, f) = run(False), run(True)
    assert compiled == eager
    assert f.explain().graph_count == 1 and f.explain().graph_break_count == 0
