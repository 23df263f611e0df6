"""Python ``random`` draws inside a ``tg.compile``d function (``eager/compile/draws.py``):
``randint``/``randrange`` are replayed on every compiled call, one graph per outcome, and
everything else the module draws still breaks the graph. Every case runs the same program
eagerly and compiled from the same seeds and compares losses, parameters and the random
module's state bit for bit."""
import math
import random
import sys

import numpy as np
import pytest

import tracegrad as tg


class Dynamic(tg.nn.Module):
    """PyTorch's dynamic_net: a cubic plus 0-2 more terms sharing ``e``, the count drawn
    with ``random.randint`` in ``forward``."""

    def __init__(self, draw):
        super().__init__()
        for name in "abcde":
            setattr(self, name, tg.nn.Parameter(tg.randn(())))
        self.draw = draw

    def forward(self, x):
        y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
        for exp in range(4, self.draw()):
            y = y + self.e * x ** exp
        return y


def _train(draw, how, steps=30):
    """Losses, parameters and ``random``'s state after ``steps`` of SGD with momentum;
    ``how``: "eager", "model" (the module compiled) or "step" (the whole step compiled)."""
    tg.manual_seed(0)
    random.seed(1)
    np.random.seed(2)
    x = tg.linspace(-math.pi, math.pi, 200)
    y = tg.sin(x)
    model = Dynamic(draw)
    net = tg.compile(model) if how == "model" else model
    opt = tg.optim.SGD(model.parameters(), lr=1e-6, momentum=0.9)

    def step():
        loss = tg.nn.functional.mse_loss(net(x), y, reduction="sum")
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    run = tg.compile(step) if how == "step" else step
    losses = [run().item() for _ in range(steps)]
    compiled = net if how == "model" else run
    return losses, [p.detach().numpy().copy() for p in model.parameters()], \
        random.getstate(), compiled


def _same(a, b):
    assert a[0] == b[0]
    assert all(np.array_equal(p, q) for p, q in zip(a[1], b[1]))
    assert a[2] == b[2]


DRAWS = {
    "randint": lambda: random.randint(4, 6),
    "randrange": lambda: random.randrange(4, 7),
    "randrange one argument": lambda: 4 + random.randrange(3),
}


@pytest.mark.parametrize("how", ["model", "step"])
@pytest.mark.parametrize("draw", list(DRAWS))
def test_integer_draws_are_replayed_one_graph_per_outcome(draw, how):
    eager = _train(DRAWS[draw], "eager")
    compiled = _train(DRAWS[draw], how)
    _same(eager, compiled)
    ex = compiled[3].explain()
    # e's momentum buffer is made in the first step that reaches e: that call runs
    # eagerly and a later one is captured
    assert all("captured again on a later call" in r for r in ex.break_reasons), str(ex)
    assert 3 <= ex.graph_count <= 6     # three outcomes (and which .grads exist)
    assert any("Python's random module" in r for r in ex.recompile_reasons)
    assert sys.getprofile() is None


@pytest.mark.parametrize("draw,reason", [
    (lambda: 4 + int(random.random() * 3), "Python's random module"),
    (lambda: 4 + random.choice([0, 1, 2]), "random.choice"),
    (lambda: 4 + random.sample(range(3), 1)[0], "random.sample"),
    (lambda: 4 + int(np.random.randint(0, 3)), "np.random"),
])
def test_other_draws_break_the_graph_and_keep_eagers_numbers(draw, reason):
    eager = _train(draw, "eager")
    compiled = _train(draw, "step")
    _same(eager, compiled)
    ex = compiled[3].explain()
    assert ex.graph_break_count and any(reason in r for r in ex.break_reasons), str(ex)


def test_draws_with_many_outcomes_break_after_a_few_graphs():
    def draw():
        return 4 + random.randint(0, 1000) % 3 + 0 * random.randint(0, 10 ** 6)

    eager = _train(draw, "eager", steps=20)
    compiled = _train(draw, "step", steps=20)
    _same(eager, compiled)
    ex = compiled[3].explain()
    assert any("different outcomes" in r for r in ex.break_reasons), str(ex)
    assert len(compiled[3].graphs) <= 4     # (its children compiled under the break aside)


def test_another_profiler_keeps_its_hook_and_the_graph_breaks():
    seen = []

    def profiler(frame, event, arg):
        seen.append(event)

    eager = _train(DRAWS["randint"], "eager", steps=6)
    sys.setprofile(profiler)
    try:
        compiled = _train(DRAWS["randint"], "step", steps=6)
        assert sys.getprofile() is profiler
    finally:
        sys.setprofile(None)
    _same(eager, compiled)
    assert seen
    assert any("another profiler" in r for r in compiled[3].explain().break_reasons)


def test_a_guard_failing_after_the_draws_puts_the_state_back():
    """A graph whose draws match but whose value guard fails leaves the module's state
    where the call found it before the function runs eagerly (it draws again itself)."""
    w = tg.nn.Parameter(tg.tensor([1.0, -1.0]))

    @tg.compile
    def f(x):
        k = random.randint(1, 2)
        y = (w * x * k).sum()
        if y.item() > 0:                 # a value the graph branches on
            return y * 2
        return y

    xs = [tg.tensor([2.0, 1.0]), tg.tensor([1.0, 2.0])] * 4
    random.seed(3)
    want = []
    for x in xs:
        k = random.randint(1, 2)
        y = float((w.detach().numpy() * x.numpy() * k).sum())
        want.append(y * 2 if y > 0 else y)
    state = random.getstate()
    random.seed(3)
    got = [f(x).item() for x in xs]
    assert got == want
    assert random.getstate() == state


GLOBAL_GEN = [None]     # the generator a "global" case's step reads
HELD = {
    "random.Random": lambda: random.Random(5),
    "Generator": lambda: np.random.default_rng(5),
    "RandomState": lambda: np.random.RandomState(5),
}


def _draw_from(gen):
    if isinstance(gen, random.Random):
        return gen.random()
    if isinstance(gen, np.random.Generator):
        return float(gen.standard_normal())
    return float(gen.randn())


@pytest.mark.parametrize("kind", list(HELD))
@pytest.mark.parametrize("where", ["global", "closure", "argument"])
def test_a_generator_the_function_holds_breaks_the_graph(kind, where):
    """A draw from a generator object the function reaches (not the module's own) would
    be a constant of the graph: the capture sees its state change and breaks instead."""
    def program(compiled):
        gen = HELD[kind]()
        w = tg.nn.Parameter(tg.tensor([1.0, 2.0]))
        opt = tg.optim.SGD([w], lr=0.1)
        GLOBAL_GEN[0] = gen

        def body(x, g):
            opt.zero_grad()
            noise = _draw_from(g)
            loss = ((w * x + noise) ** 2).sum()
            loss.backward()
            opt.step()
            return loss

        if where == "global":
            def step(x):
                return body(x, GLOBAL_GEN[0])
        elif where == "closure":
            def step(x):
                return body(x, gen)
        else:
            step = body
        run = tg.compile(step) if compiled else step
        x = tg.tensor([0.5, -1.0])
        args = (x, gen) if where == "argument" else (x,)
        losses = [run(*args).item() for _ in range(5)]
        return losses, w.detach().numpy().copy(), _draw_from(gen), run

    eager = program(False)
    compiled = program(True)
    assert eager[0] == compiled[0]
    assert np.array_equal(eager[1], compiled[1])
    assert eager[2] == compiled[2]          # the generator advanced as eagerly
    reasons = compiled[3].explain().break_reasons
    assert any("it holds" in r and type(HELD[kind]()).__name__ in r for r in reasons), reasons
