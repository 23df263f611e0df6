"""Partial graph breaks (``eager/compile/region.py``): a ``tg.compile``d call that breaks
runs eagerly with the modules it calls compiled on their own. After several training
steps, everything is eager's bit for bit (outputs, parameters, gradients, optimizer
state, random streams), the modules were captured (``explain()``), and modules too
small to pay run eagerly again."""
from __future__ import annotations

import contextlib
import io
import random
import threading

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.eager.compile.region import SMALL


def _numbers(model, opt):
    params = [p.detach().numpy().copy() for p in model.parameters()]
    grads = [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()]
    state = [{k: (v.numpy().copy() if isinstance(v, tg.Tensor) else v)
              for k, v in s.items()} for s in opt.state_dict()["state"].values()]
    return params, grads, state


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        if isinstance(x, dict):
            assert x.keys() == y.keys()
            _same(list(x.values()), list(y.values()))
        elif isinstance(x, (list, tuple)):
            _same(x, y)
        elif x is None or y is None:
            assert x is None and y is None
        else:
            assert np.array_equal(np.asarray(x), np.asarray(y)), (x, y)


# -- a depth drawn from Python's random module (PyTorch's dynamic_net) ------------------------
class DynamicNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(12, 8)
        self.middle = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        h = self.inp(x).clamp(min=0)
        for _ in range(random.randint(0, 3)):
            h = self.middle(h).clamp(min=0)
        return self.out(h)


def dynamic_training(compiled, steps=10):
    tg.manual_seed(0)
    random.seed(4)
    model = DynamicNet()
    x, y = tg.randn(16, 12), tg.randn(16, 3)
    opt = tg.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)

    def step():
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    fn = tg.compile(step) if compiled else step
    losses = [fn().item() for _ in range(steps)]
    return losses, _numbers(model, opt), random.getstate(), fn


def test_python_random_depth_compiles_the_modules_and_keeps_eagers_numbers():
    eager, compiled = dynamic_training(False), dynamic_training(True)
    assert eager[0] == compiled[0]
    _same(eager[1], compiled[1])
    assert eager[2] == compiled[2]          # Python's random stream: eager's draws
    explain = compiled[3].explain()
    assert "random" in explain.break_reasons[0]
    (model,) = explain.children             # step broke: its model ran compiled ...
    assert model.name == "DynamicNet" and "random" in model.break_reasons[0]
    names = sorted(c.name for c in model.children)      # ... and broke: its modules
    assert names == ["Linear", "Linear", "Sequential"]
    sequential = next(c for c in model.children if c.name == "Sequential")
    assert sequential.graph_count >= 1 and max(len(g) for g in sequential.graphs) >= SMALL
    assert explain.graph_count >= sequential.graph_count
    assert "Compiled on their own under the graph break" in str(explain)


def test_small_modules_run_eagerly_after_their_first_capture():
    _, _, _, fn = dynamic_training(True, steps=8)
    model_fn = fn._children[next(iter(fn._children))][1]
    routed = {type(m).__name__: c for m, c in model_fn._children.values()}
    assert routed["Linear"] is None           # 6-node graphs: eager from then on
    assert routed["Sequential"] is not None


# -- .item() in a CRF's argmax, an LSTM child (the BiLSTM-CRF tutorial's shape) ---------------
class Tagger(nn.Module):
    def __init__(self, vocab=10, tags=4, hidden=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, 5)
        self.lstm = nn.LSTM(5, hidden // 2, bidirectional=True)
        self.to_tags = nn.Linear(hidden, tags)
        self.transitions = nn.Parameter(tg.randn(tags, tags))

    def forward(self, sentence, tags):
        feats = self.to_tags(self.lstm(self.embed(sentence).view(len(sentence), 1, -1))[0]
                             .view(len(sentence), -1))
        score = tg.zeros(())
        prev = 0
        for feat, tag in zip(feats, tags):
            # the tutorial's argmax: a Python int from .item() indexes the scores
            best = int(tg.argmax(feat + self.transitions[prev]).item())
            score = score + feat[best] - feat[tag] + self.transitions[prev, tag]
            prev = int(tag.item())
        return score


def tagger_setup(compiled):
    """A seeded model, optimizer and (compiled) step; nothing random is drawn after."""
    tg.manual_seed(1)
    model = Tagger()
    opt = tg.optim.Adam(model.parameters(), lr=0.05)

    def step(sentence, tags):
        opt.zero_grad()
        loss = model(sentence, tags)
        loss.backward()
        opt.step()
        return loss
    return model, opt, (tg.compile(step) if compiled else step)


def tagger_run(model, opt, fn, steps=6):
    data = [(tg.tensor([1, 4, 2, 7]), tg.tensor([0, 2, 1, 3])),
            (tg.tensor([3, 3, 9]), tg.tensor([1, 1, 2]))]
    losses = [fn(*data[k % 2]).item() for k in range(steps)]
    return losses, _numbers(model, opt), fn


def tagger_training(compiled, steps=6):
    return tagger_run(*tagger_setup(compiled), steps)


def test_item_indexing_compiles_the_lstm_and_keeps_eagers_numbers():
    eager, compiled = tagger_training(False), tagger_training(True)
    assert eager[0] == compiled[0]
    _same(eager[1], compiled[1])
    explain = compiled[2].explain()
    assert "item()" in explain.break_reasons[0]
    tagger = explain.children[0]
    lstm = next(c for c in tagger.children if c.name == "LSTM")
    assert lstm.graph_count == 2            # one per sentence length
    assert max(len(g) for g in lstm.graphs) > 50


# -- a print in the forward --------------------------------------------------------------------
class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))

    def forward(self, x):
        out = self.body(x)
        print(out.sum())
        return out


def test_a_print_in_the_forward_prints_every_call_and_compiles_the_body():
    def run(compiled):
        tg.manual_seed(2)
        model = Noisy()
        m = tg.compile(model) if compiled else model
        x = tg.randn(3, 4)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            outs = [m(x * k).detach().numpy().copy() for k in range(1, 6)]
        return outs, printed.getvalue(), m
    eager, compiled = run(False), run(True)
    _same(eager[0], compiled[0])
    assert eager[1] == compiled[1] and eager[1].count("\n") == 5
    body = compiled[2].explain().children[0]
    assert body.name == "Sequential" and body.graph_count == 1


def test_fullgraph_still_raises():
    model = tg.compile(Noisy(), fullgraph=True)
    x = tg.randn(3, 4)
    with contextlib.redirect_stdout(io.StringIO()):
        model(x)        # the first call runs eagerly
        with pytest.raises(tg.TraceError, match="graph break"):
            model(x)


# -- crossings ---------------------------------------------------------------------------------
class Uses(nn.Module):
    """A model that breaks (.item()) and calls a shared module."""

    def __init__(self, shared):
        super().__init__()
        self.shared = shared

    def forward(self, x):
        h = self.shared(x)
        return h * 2 if h.sum().item() > 0 else h * 3


def test_a_module_shared_by_two_broken_models_shapes_and_new_parameters():
    def run(compiled):
        tg.manual_seed(5)
        shared = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 3))
        a, b = Uses(shared), Uses(shared)
        fa, fb = (tg.compile(a), tg.compile(b)) if compiled else (a, b)
        outs = []
        for k in range(8):
            rows = 2 if k % 3 else 4                    # two shapes: a recapture
            x = tg.randn(rows, 3, requires_grad=True)
            y = fa(x) + fb(x)
            y.sum().backward()
            outs += [y.detach().numpy().copy(), x.grad.numpy().copy()]
            if k == 4:                  # new parameters: the identity guard recaptures
                shared[0].weight = nn.Parameter(tg.randn(5, 3))
        grads = [p.grad.numpy().copy() for p in shared.parameters()]
        return outs, grads, fa
    eager, compiled = run(False), run(True)
    _same(eager[0], compiled[0])
    _same(eager[1], compiled[1])
    shared = compiled[2].explain().children[0]
    assert shared.name == "Sequential" and shared.graph_count >= 3
    assert shared.recompile_reasons


def test_threads_run_two_broken_models_at_once():
    """Two threads train two compiled models that break (each its own model, made before
    the threads start: the generators are global), checking every number."""
    expected = tagger_training(False)[:2]
    setups = [tagger_setup(True) for _ in range(3)]
    results, errors = {}, []

    def work(i):
        try:
            results[i] = tagger_run(*setups[i])[:2]
        except Exception as e:      # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(setups))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(len(setups)):
        losses, numbers = results[i]
        assert losses == expected[0]
        _same(numbers, expected[1])
