"""Partial graph breaks (issue 25): a tg.compile call that breaks runs eagerly, but the
submodules it calls and optimizer.step() run through compiled captures of their own.
Every check compares bit for bit with the same program run eagerly."""
import random
import threading

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn


class DynamicNet(nn.Module):
    """PyTorch's dynamic_net example: a random number of middle layers, drawn with
    ``random.random()`` (a C method, which tg.compile does not replay: a graph break;
    ``random.randint``'s draws are replayed, see test_compile_draws.py)."""

    def __init__(self, d_in=6, h=8, d_out=3):
        super().__init__()
        self.input_linear = nn.Sequential(nn.Linear(d_in, h), nn.ReLU())
        self.middle = nn.Sequential(nn.Linear(h, h), nn.Tanh())
        self.output_linear = nn.Linear(h, d_out)

    def forward(self, x):
        y = self.input_linear(x)
        for _ in range(int(random.random() * 4)):
            y = self.middle(y)
        return self.output_linear(y)


class CRFTagger(nn.Module):
    """BiLSTM-CRF-like: an nn.LSTM child, then a Viterbi-style argmax walk in Python
    indexing with .item()."""

    def __init__(self, d=5, h=4, tags=3):
        super().__init__()
        self.lstm = nn.LSTM(d, h, bidirectional=True)
        self.proj = nn.Linear(2 * h, tags)
        self.trans = nn.Parameter(tg.randn(tags, tags))

    def forward(self, x):
        feats = self.proj(self.lstm(x)[0][:, 0])       # (seq, tags)
        score = feats[0]
        total = feats[0].sum() * 0
        for t in range(1, feats.shape[0]):
            prev = int(score.argmax().item())
            score = feats[t] + self.trans[prev]
            total = total + score[int(score.argmax().item())]
        return total


class Printer(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 6))
        self.b = nn.Linear(6, 2)

    def forward(self, x):
        h = self.a(x)
        print("h", h.sum())
        return self.b(h)


def _step(model, opt, compiled, policy="compiled", **kw):
    """A training step of ``model`` on the mean square of its output, compiled (its
    children under breaks by ``policy``) or not."""
    def step(x):
        opt.zero_grad()
        loss = (model(x) ** 2).mean()
        loss.backward()
        opt.step()
        return loss

    return tg.compile(step, options={"break_children": policy}, **kw) if compiled else step


def _run(make, data, steps, compiled, opt_cls=tg.optim.Adam, seed=0, **kw):
    tg.manual_seed(seed)
    random.seed(seed)
    model = make()
    opt = opt_cls(model.parameters(), lr=0.05)
    fn = _step(model, opt, compiled, **kw)
    losses = [fn(data(i)).detach().numpy().copy() for i in range(steps)]
    params = [p.detach().numpy().copy() for p in model.parameters()]
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    state = opt.state_dict()["state"]
    state = [{k: np.asarray(v.numpy() if hasattr(v, "numpy") else v).copy() for k, v in s.items()}
             for _, s in sorted(state.items())]
    streams = (random.random(), tg.rand(1).numpy().copy())
    return fn, dict(losses=losses, params=params, grads=grads, state=state, streams=streams)


def _same(a, b):
    assert len(a["losses"]) == len(b["losses"])
    for k in ("losses", "params", "grads"):
        for x, y in zip(a[k], b[k]):
            np.testing.assert_array_equal(x, y, err_msg=k)
    assert len(a["state"]) == len(b["state"])
    for s, t in zip(a["state"], b["state"]):
        assert s.keys() == t.keys()
        for k in s:
            np.testing.assert_array_equal(s[k], t[k], err_msg=k)
    assert a["streams"][0] == b["streams"][0]
    np.testing.assert_array_equal(a["streams"][1], b["streams"][1])


def _data(shape, seed=1):
    rng = np.random.default_rng(seed)
    xs = [tg.tensor(rng.standard_normal(shape).astype(np.float32)) for _ in range(8)]
    return lambda i: xs[i % len(xs)]


@pytest.mark.parametrize("make,shape", [(DynamicNet, (5, 6)), (CRFTagger, (6, 1, 5)),
                                        (Printer, (3, 4))], ids=["dynamic", "crf", "print"])
def test_broken_step_matches_eager_and_compiles_children(make, shape, capsys):
    _, eager = _run(make, _data(shape), 7, False)
    fn, comp = _run(make, _data(shape), 7, True)
    _same(comp, eager)
    ex = fn.explain()
    assert ex.graph_break_count >= 1
    assert not ex.graphs                       # the step itself never compiles
    assert ex.graph_count >= 2                 # but its submodules and optimizer step do
    assert "Adam.step" in ex.compiled_under_breaks
    assert "Adam.step" in str(ex)


def test_fullgraph_still_raises():
    tg.manual_seed(0)
    model = DynamicNet()
    fn = tg.compile(lambda x: model(x), fullgraph=True)
    x = tg.randn(2, 6)
    fn(x)
    with pytest.raises(tg.TraceError):
        fn(x)


class Two(nn.Module):
    """Breaks (.item()) and calls a child it shares with another parent."""

    def __init__(self, shared):
        super().__init__()
        self.shared = shared
        self.own = nn.Linear(4, 4)

    def forward(self, x):
        h = self.shared(x)
        if h.sum().item() > 0:
            h = h * 2
        return self.own(h)


def _step_many(models, xs, compiled):
    params = [p for m in models for p in m.parameters()]
    params = list({id(p): p for p in params}.values())
    opt = tg.optim.SGD(params, lr=0.1, momentum=0.9)

    def step(x):
        opt.zero_grad()
        loss = sum((m(x) ** 2).mean() for m in models)
        loss.backward()
        opt.step()
        return loss

    fn = tg.compile(step, options={"break_children": "compiled"}) if compiled else step
    out = [fn(x).detach().numpy().copy() for x in xs]
    return fn, out, [p.detach().numpy().copy() for p in params]


def _shared_models():
    tg.manual_seed(3)
    shared = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
    return [Two(shared), Two(shared)]


def test_child_shared_by_two_parents_and_new_shapes():
    rng = np.random.default_rng(2)
    xs = [tg.tensor(rng.standard_normal((n, 4)).astype(np.float32))
          for n in (3, 3, 3, 5, 5, 5, 3, 2, 2)]           # shapes change: child recaptures
    _, out_e, p_e = _step_many(_shared_models(), xs, False)
    fn, out_c, p_c = _step_many(_shared_models(), xs, True)
    for a, b in zip(out_c + p_c, out_e + p_e):
        np.testing.assert_array_equal(a, b)
    ex = fn.explain()
    assert ex.compiled_under_breaks.count("Two") == 2
    two = [c for c in ex.children if c.name == "Two"]
    shared = [g for t in two for g in t.children if g.name == "Sequential"]
    assert len(shared) == 2 and all(s.graph_count >= 2 for s in shared)   # per shape
    assert any(s.recompile_reasons for s in shared)


def test_child_parameters_replaced_between_calls():
    def run(compiled):
        tg.manual_seed(4)
        model = Printer()
        f = lambda x: model(x).sum()      # noqa: E731
        fn = tg.compile(f, options={"break_children": "compiled"}) if compiled else f
        x = tg.randn(3, 4)
        outs = [fn(x).detach().numpy().copy() for _ in range(3)]
        model.b.weight = nn.Parameter(tg.randn(2, 6))      # a new parameter object
        outs += [fn(x).detach().numpy().copy() for _ in range(3)]
        with tg.no_grad():
            model.b.weight.mul_(0.5)                       # in place
        outs += [fn(x).detach().numpy().copy() for _ in range(2)]
        return fn, outs

    _, eager = run(False)
    fn, comp = run(True)
    for a, b in zip(comp, eager):
        np.testing.assert_array_equal(a, b)
    assert fn.explain().graph_count >= 2


def _train(model, data, steps, compiled, policy="compiled"):
    opt = tg.optim.Adam(model.parameters(), lr=0.05)
    fn = _step(model, opt, compiled, policy)
    vals = [fn(data(i)).detach().numpy().copy() for i in range(steps)]
    vals += [p.detach().numpy().copy() for p in model.parameters()]
    vals += [p.grad.numpy().copy() for p in model.parameters()]
    vals += [v.numpy().copy() for s in opt.state_dict()["state"].values() for v in s.values()]
    return fn, vals


def test_two_threads_two_broken_models(capsys):
    # (models made in this thread: tg.manual_seed's generator is the process's)
    makes = [(CRFTagger, (6, 1, 5)), (Printer, (3, 4))]
    models = []
    for make, _ in makes:
        tg.manual_seed(5)
        models.append((make(), make()))      # (eager, compiled): the same initial values
        models[-1][1].load_state_dict(models[-1][0].state_dict())
    want = [_train(m[0], _data(s), 8, False)[1] for m, (_, s) in zip(models, makes)]
    got, errors = [None, None], []

    def work(k):
        try:
            got[k] = _train(models[k][1], _data(makes[k][1]), 8, True)
        except BaseException as e:      # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    for k in range(2):
        fn, vals = got[k]
        assert len(vals) == len(want[k])
        for a, b in zip(vals, want[k]):
            np.testing.assert_array_equal(a, b)
        assert "Adam.step" in fn.explain().compiled_under_breaks


@pytest.mark.parametrize("policy", ["timed", "eager"])
def test_timed_and_eager_children_policies(policy, capsys):
    def make():
        tg.manual_seed(6)
        return CRFTagger()
    want = _train(make(), _data((6, 1, 5)), 12, False)[1]
    fn, got = _train(make(), _data((6, 1, 5)), 12, True, policy)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    crf = [c for c in fn.explain().children if c.name == "CRFTagger"]
    if policy == "eager":       # nothing under the break is compiled
        assert fn.explain().graph_count == 0
    else:                       # each child: compiled, or eager with the timing as reason
        for c in fn.explain().children + crf[0].children:
            assert c.graph_count >= 1
            mode = [r for r in c.break_reasons if "took longer" in r]
            assert len(mode) <= 1


def test_compiled_function_called_under_a_break_keeps_its_own_graph(capsys):
    def run(compiled):
        tg.manual_seed(7)
        model = Printer()
        inner = (lambda x: model.a(x) * 2)
        inner = tg.compile(inner) if compiled else inner

        def outer(x):
            h = inner(x)
            print(h.sum())                  # a graph break
            return model.b(h).sum()
        outer_c = tg.compile(outer, options={"break_children": "compiled"}) if compiled else outer
        x = tg.randn(3, 4)
        return outer_c, inner, [outer_c(x).detach().numpy().copy() for _ in range(4)]
    _, _, want = run(False)
    outer, inner, got = run(True)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert inner.explain().graph_count == 1 and not inner.explain().break_reasons
    assert outer.explain().compiled_under_breaks == ["Linear"]      # model.b; model.a is
    assert [c.name for c in outer.explain().children] == ["Linear"]  # inside inner's graph


def test_a_broken_compiled_function_called_under_another_break_owns_its_modules(capsys):
    """``inner`` breaks too (a print): its eager runs, its first call included, compile
    its own modules, not ``outer``'s, whose region is set while ``inner`` is called."""
    def run(compiled):
        tg.manual_seed(8)
        body = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 4))

        def inner(x):
            h = body(x)
            print(h.sum())                  # inner's own break
            return h * 2

        calls = []

        def outer(x):
            calls.append(1)
            # inner's first (eager) call comes while outer's broken call runs eagerly
            h = inner(x) if len(calls) > 2 else x
            return h.sum() if h.sum().item() > 0 else -h.sum()     # outer's break
        if compiled:
            inner = tg.compile(inner, options={"break_children": "compiled"})
            outer_c = tg.compile(outer, options={"break_children": "compiled"})
        else:
            outer_c = outer
        x = tg.randn(3, 4)
        return outer_c, inner, [outer_c(x).detach().numpy().copy() for _ in range(5)]
    _, _, want = run(False)
    outer, inner, got = run(True)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert not outer.explain().children
    assert inner.explain().compiled_under_breaks == ["Sequential"]
