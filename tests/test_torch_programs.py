"""Constructs of the real PyTorch programs benchmarks/torch_programs.py runs, compiled.

``dynamic_net`` (pytorch/tutorials) draws its depth from Python's ``random`` module inside
``forward``: under ``torch.compile`` a capture must not freeze the number it drew into the
graph (every compiled call would then take the capture's depth, and Python's random
stream would stop advancing). tg.compile treats such a draw, and one from NumPy's global
``np.random``, as a graph break: the call runs eagerly, with eager's numbers and eager's
random streams."""
import random

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn


class Dynamic(nn.Module):
    """dynamic_net's shape: a polynomial whose degree is drawn per call."""

    def __init__(self, draw):
        super().__init__()
        self.w = nn.Parameter(tg.tensor([0.1, -0.2, 0.05, 0.01, 0.002]))
        self.draw = draw

    def forward(self, x):
        y = self.w[0] + self.w[1] * x + self.w[2] * x ** 2 + self.w[3] * x ** 3
        for k in range(4, self.draw()):
            y = y + self.w[4] * x ** k
        return y


DRAWS = {"python random": lambda: random.randint(4, 6),
         "python random.random": lambda: 4 + int(random.random() * 3),
         "np.random": lambda: int(np.random.randint(4, 7))}


def train(draw, compiled, steps=8):
    random.seed(3)
    np.random.seed(3)
    model = Dynamic(draw)
    run = tg.compile(model) if compiled else model
    opt = tg.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = tg.linspace(-1.0, 1.0, 50)
    y = tg.sin(x)
    losses = []
    for _ in range(steps):
        loss = ((run(x) - y) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    streams = (random.random(), float(np.random.random_sample()))
    return losses, model.w.detach().numpy().copy(), streams, run


def test_python_randint_depth_is_replayed_with_eager_numbers():
    """dynamic_net's ``random.randint`` depth: one graph per depth, the draw made again
    by each compiled call (``eager/compile/draws.py``)."""
    eager_losses, eager_w, eager_streams, _ = train(DRAWS["python random"], compiled=False)
    losses, w, streams, run = train(DRAWS["python random"], compiled=True)
    assert losses == eager_losses
    assert np.array_equal(w, eager_w)
    assert streams == eager_streams
    report = run.explain()
    assert report.graph_break_count == 0 and 2 <= report.graph_count <= 6, str(report)


@pytest.mark.parametrize("source", ["python random.random", "np.random"])
def test_host_random_draw_is_a_graph_break_with_eager_numbers(source):
    eager_losses, eager_w, eager_streams, _ = train(DRAWS[source], compiled=False)
    losses, w, streams, run = train(DRAWS[source], compiled=True)
    assert losses == eager_losses                   # bit for bit, step by step
    assert np.array_equal(w, eager_w)
    assert streams == eager_streams                 # the host streams advanced as eager's
    report = run.explain()
    assert report.graph_count == 0
    assert report.graph_break_count == 1
    assert "random" in report.break_reasons[0]
    # the depths drawn differ from call to call (what a frozen capture would lose)
    random.seed(3)
    assert len({DRAWS["python random"]() for _ in range(8)}) > 1


def test_fixed_depth_still_compiles_bit_for_bit():
    eager_losses, eager_w, eager_streams, _ = train(lambda: 5, compiled=False)
    losses, w, streams, run = train(lambda: 5, compiled=True)
    assert losses == eager_losses and np.array_equal(w, eager_w)
    assert streams == eager_streams
    assert run.explain().graph_count == 1 and run.explain().graph_break_count == 0


def test_fullgraph_names_the_host_random_draw():
    random.seed(0)
    model = Dynamic(DRAWS["python random.random"])
    run = tg.compile(model, fullgraph=True)
    x = tg.linspace(-1.0, 1.0, 5)
    run(x)                                          # the first call runs eagerly
    state = random.getstate()
    with pytest.raises(tg.TraceError, match="random"):
        run(x)
    assert random.getstate() == state               # the capture's draw was undone


def test_small_randn_in_a_compiled_call_is_drawn_per_call():
    """The BiLSTM-CRF tutorial's ``init_hidden``: ``torch.randn(2, 1, 2)`` in the compiled
    loss, a draw PyTorch computes one Box-Muller pair at a time: each compiled call draws
    it as eager does, and the graph does not break."""
    def loss_of(x):
        h = tg.randn(2, 1, 2)
        return (x * h).sum()

    compiled = tg.compile(loss_of)
    x = tg.ones(2, 1, 2)
    tg.manual_seed(5)
    got = [compiled(x).item() for _ in range(4)]
    tg.manual_seed(5)
    want = [loss_of(x).item() for _ in range(4)]
    assert got == want and len(set(got)) == 4
    assert compiled.explain().graph_count == 1 and not compiled.explain().break_reasons


class WordLM(nn.Module):
    """word_language_model's RNNModel (pytorch/examples): embedding, dropout, a 2-layer
    LSTM with inter-layer dropout, a linear decoder, log_softmax."""

    def __init__(self, ntoken=60, ninp=32, nhid=32):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(0.2)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, 2, dropout=0.2)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, tokens, hidden):
        emb = self.drop(self.encoder(tokens))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return tg.nn.functional.log_softmax(decoded, dim=1), hidden


def train_word_lm(compiled, steps=4, bptt=8, batch=6):
    """main.py's loop: the model (compiled or not) run on detached hidden states, the loss,
    ``backward`` (through the compiled forward's tape node), ``clip_grad_norm_`` and the
    manual SGD update outside. The parameters and their gradients after each step."""
    tg.manual_seed(0)
    model = WordLM()
    run = tg.compile(model) if compiled else model
    rng = np.random.default_rng(0)
    hidden = (tg.zeros(2, batch, 32), tg.zeros(2, batch, 32))
    seen = []
    for _ in range(steps):
        data = tg.tensor(rng.integers(0, model.ntoken, (bptt, batch)))
        targets = tg.tensor(rng.integers(0, model.ntoken, (bptt * batch,)))
        model.zero_grad()
        hidden = tuple(h.detach() for h in hidden)
        output, hidden = run(data, hidden)
        loss = tg.nn.functional.nll_loss(output, targets)
        loss.backward()
        seen.append([p.grad.numpy().copy() for p in model.parameters()])
        tg.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-20)
        seen.append([p.detach().numpy().copy() for p in model.parameters()])
    return seen, run


def test_word_language_model_compiled_forward_is_eager_bit_for_bit():
    """The compiled forward saves ``weight.t()`` (``F.linear``'s operand) for its backward
    as a graph output; the copy that keeps it from sharing the parameter's memory must
    keep the transposed layout eager's saved view has: NumPy's matrix products add in an
    order that depends on the operands' layout, so a C-ordered copy gave the recurrent
    gradients other last bits than eager's from the captured call on."""
    eager, _ = train_word_lm(compiled=False)
    got, run = train_word_lm(compiled=True)
    assert run.explain().graph_count == 1 and run.explain().graph_break_count == 0
    for step, (want, have) in enumerate(zip(eager, got)):
        for k, (a, b) in enumerate(zip(want, have)):
            assert np.array_equal(a, b), f"entry {step}, parameter {k}"


def train_clipped_conv(compiled, steps=6):
    """A whole step compiled (``loss.backward()``, ``clip_grad_norm_``, ``SGD.step()``
    inside) on a convolution, whose weight gradient is a transposed array."""
    tg.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Flatten(), nn.Linear(8 * 14 * 14, 4))
    opt = tg.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)

    def step(x, y):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).sum()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss, norm

    run = tg.compile(step) if compiled else step
    rng = np.random.default_rng(1)
    seen = []
    for _ in range(steps):
        x = tg.tensor(rng.standard_normal((4, 3, 16, 16)).astype(np.float32))
        y = tg.tensor(rng.standard_normal((4, 4)).astype(np.float32))
        loss, norm = run(x, y)
        seen.append([loss.detach().numpy().copy(), norm.detach().numpy().copy()]
                    + [p.grad.numpy().copy() for p in model.parameters()]
                    + [p.detach().numpy().copy() for p in model.parameters()]
                    + [np.array(s["momentum_buffer"]) for s in opt.state_dict()["state"].values()])
    return seen, run


def test_clip_grad_norm_in_a_compiled_step_is_eager_bit_for_bit():
    """clip_grad_norm_ sums each gradient in C order whatever its layout, eagerly and in
    the captured graph alike (flattened first): the conv weight's gradient is a
    transposed array, and the graph summed it in its memory order where eager summed a
    C-ordered copy, so the norm's last bits, the clip factor and every update after it
    differed from the second compiled call on."""
    eager, _ = train_clipped_conv(compiled=False)
    got, run = train_clipped_conv(compiled=True)
    assert run.explain().graph_count == 1 and run.explain().graph_break_count == 0
    assert all(float(s[1]) > 1.0 for s in eager)        # the clipping acts on every step
    for step, (want, have) in enumerate(zip(eager, got)):
        for k, (a, b) in enumerate(zip(want, have)):
            assert np.array_equal(a, b), f"step {step}, entry {k}"


LAYOUT_CASES = {
    # a transformer's head split: permuted, then contiguous(), then reduced
    "contiguous": lambda x, w: (x.t().contiguous().sum(0) ** 2).sum(),
    # a permuted batch times a matrix: eager folds the batch into rows only when the
    # batch is contiguous, else multiplies it as a batch
    "batched matmul": lambda x, w: ((x.reshape(8, 8, 64).permute(1, 0, 2) @ w) ** 2).sum(),
    # a flip is no view in PyTorch: contiguous as it is
    "flip": lambda x, w: (x.flip(0).contiguous().view(-1)[:512] @ w.reshape(-1)[:512]) ** 2,
}


@pytest.mark.parametrize("case", sorted(LAYOUT_CASES))
def test_layout_choices_are_eagers_under_compile(case):
    """Eager decides on a tensor's strides (``contiguous()`` copies a strided tensor into
    C order, ``matmul`` folds a contiguous batch into rows), and NumPy's sums then add in
    that layout's order. Under tg.compile the captured values' strides decide the same:
    ``is_contiguous`` was always True there, so the graph summed a transposed array in its
    memory order where eager summed a C-ordered copy, in the forward and the backward."""
    f = LAYOUT_CASES[case]
    compiled = tg.compile(f)
    rng = np.random.default_rng(2)
    w0 = rng.standard_normal((64, 48)).astype(np.float32)
    for _ in range(4):
        x0 = rng.standard_normal((64, 64)).astype(np.float32)
        got = []
        for fn in (f, compiled):
            x = tg.tensor(x0, requires_grad=True)
            w = tg.tensor(w0, requires_grad=True)
            out = fn(x, w)
            out.backward()
            got.append([out.detach().numpy(), x.grad.numpy(),
                        None if w.grad is None else w.grad.numpy()])
        for a, b in zip(*got):
            assert (a is None and b is None) or np.array_equal(a, b)
    assert compiled.explain().graph_count == 1 and compiled.explain().graph_break_count == 0
