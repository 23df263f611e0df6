"""A differential hunt on ``tg.compile(..., backend="jax")``: training steps (LSTM, GRU and
embedding, conv + BatchNorm + clipping, dropout and generator draws, several optimizers,
float32 and float64) compiled by XLA leave eager's parameters, gradients, optimizer
state, buffers, outputs and generator state to rounding, in eager's dtypes; and what a
compiled call hands out (returned tensors, new ``.grad``s) are arrays of their own, which
in-place operations write into as eagerly."""
import warnings

import numpy as np
import pytest
from conftest import bounded
from test_compile import OPTIMIZERS, Recurrent, leaves_of
from tracegrad.nn import functional as F

import tracegrad as tg
from tracegrad import nn

pytest.importorskip("jax")

RTOL = {np.float32: 1e-5, np.float64: 1e-12}


def _close(a, b, what, rtol):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a.dtype, b.dtype)
    if a.dtype.kind in "iub":
        np.testing.assert_array_equal(a, b, err_msg=what)
    else:
        scale = float(np.abs(a).max()) if a.size else 0.0
        np.testing.assert_allclose(b, a, rtol=rtol, atol=rtol * (1.0 + scale), err_msg=what)


def _batches(shapes, dtype, labels=None, n=4):
    rng = np.random.RandomState(1)
    out = []
    for _ in range(n):
        b = [tg.tensor(rng.randn(*s).astype(dtype)) for s in shapes]
        if labels:
            b.append(tg.tensor(rng.randint(0, labels[1], labels[0])))
        out.append(b)
    return out


def _lstm(dtype, opt):
    m = Recurrent()
    o = OPTIMIZERS[opt](m.parameters())

    def step(x, h0, c0, y):
        o.zero_grad()
        out, h_n, c_n = m(x, (h0, c0))
        loss = F.mse_loss(out, y)
        loss.backward()
        o.step()
        return loss, h_n, c_n
    return m, o, step, _batches([(2, 5, 3), (4, 2, 4), (4, 2, 4), (2, 2)], dtype)


def _dropout_bn(dtype, opt):
    # (no bias before the BatchNorm: its gradient is rounding noise, which an adaptive
    # optimizer would blow up to lr-sized steps either way)
    m = nn.Sequential(nn.Linear(6, 16, bias=False), nn.BatchNorm1d(16), nn.ReLU(),
                      nn.Dropout(0.3), nn.Linear(16, 3)).to(dtype)
    o = OPTIMIZERS[opt](m.parameters())
    gen = tg.Generator().manual_seed(5)

    def step(x, labels):
        o.zero_grad()
        out = m(x) + tg.rand(3, generator=gen).to(x.dtype) * 0.1
        loss = F.cross_entropy(out, labels)
        loss.backward()
        o.step()
        return loss, out
    return m, o, step, _batches([(8, 6)], dtype, labels=(8, 3))


def _conv(dtype, opt):
    m = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, stride=2), nn.Flatten(),
                      nn.Linear(4, 3)).to(dtype)
    o = OPTIMIZERS[opt](m.parameters())

    def step(x, labels):
        o.zero_grad()
        out = m(x)
        loss = F.cross_entropy(out, labels) + 0.01 * out.pow(2).mean()
        loss.backward()
        nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        o.step()
        return loss, out
    return m, o, step, _batches([(3, 2, 8, 8)], dtype, labels=(3, 3))


def _ops(dtype, opt):
    m = nn.Sequential(nn.Linear(5, 7), nn.GELU(), nn.LayerNorm(7), nn.Linear(7, 4)).to(dtype)
    o = OPTIMIZERS[opt](m.parameters())

    def step(x, labels):
        o.zero_grad()
        out = m(x)
        idx = out.argmax(1)
        loss = (F.nll_loss(F.log_softmax(out, 1), labels) + out.softmax(1).cumsum(1).mean()
                + F.smooth_l1_loss(out, out.detach() * 0.5) + out.logsumexp(1).std()
                + out.max(1)[0].mean())
        loss.backward()
        o.step()
        return loss, (idx == labels).sum(), idx, out.var(1), (out > 0).sum(1)
    return m, o, step, _batches([(6, 5)], dtype, labels=(6, 4))


def _gru(dtype, opt):
    m = nn.Module()
    m.e, m.gru, m.l = nn.Embedding(10, 4), nn.GRU(4, 3, batch_first=True), nn.Linear(4, 2)
    m = m.to(dtype)
    o = OPTIMIZERS[opt](m.parameters())
    rng = np.random.RandomState(0)
    batches = [(tg.tensor(rng.randint(0, 10, (3, 5))), tg.tensor(rng.randn(3, 2).astype(dtype)))
               for _ in range(4)]

    def step(ids, y):
        o.zero_grad()
        h = m.e(ids)
        out, hn = m.gru(h)
        loss = (F.mse_loss(m.l(h.mean(1)), y) + out.pow(2).mean()
                + F.kl_div(F.log_softmax(out[:, -1], 1), F.softmax(hn[0], 1),
                           reduction="batchmean"))
        loss.backward()
        o.step()
        return loss, out
    return m, o, step, batches


def _run(make, dtype, opt, compiled):
    tg.manual_seed(0)
    model, o, step, batches = make(dtype, opt)
    f = tg.compile(step, backend="jax") if compiled else step
    outs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b in batches:
            outs.append([t.detach().numpy().copy() for t in f(*b)])
    after = tg.rand(4).numpy()      # the default generator's stream after the steps
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    grads = {n: None if p.grad is None else p.grad.numpy().copy()
             for n, p in model.named_parameters()}
    return outs, after, state, grads, leaves_of(o.state_dict())[0], f


CASES = [(_lstm, np.float32, "sgd-momentum"), (_lstm, np.float32, "adam"),
         (_dropout_bn, np.float32, "adam"), (_dropout_bn, np.float64, "rmsprop"),
         (_conv, np.float32, "adamw"), (_conv, np.float64, "sgd-nesterov"),
         (_ops, np.float32, "adadelta"), (_ops, np.float64, "adam"),
         (_gru, np.float32, "adagrad"), (_gru, np.float64, "adam-amsgrad")]


# one case per model by default (the optimizer and dtype rotating), all with
# TRACEGRAD_EXHAUSTIVE=1: XLA compiles each step for seconds
_RUN = bounded(CASES, 5, key=lambda c: c[0])


@pytest.mark.parametrize("make,dtype,opt", _RUN,
                         ids=[f"{m.__name__[1:]}-{np.dtype(d).name}-{o}" for m, d, o in _RUN])
def test_jax_steps_are_eagers_to_rounding(make, dtype, opt):
    rtol = RTOL[dtype]
    (oa, ra, sa, ga, osa, _), (ob, rb, sb, gb, osb, f) = (_run(make, dtype, opt, False),
                                                         _run(make, dtype, opt, True))
    for i, (u, v) in enumerate(zip(oa, ob)):
        for j, (x, y) in enumerate(zip(u, v)):
            # (a float32 mean of a float64 program's comparisons: float32 rounding)
            _close(x, y, f"output {j} of step {i}", max(rtol, np.finfo(x.dtype).eps * 4)
                   if x.dtype.kind == "f" else rtol)
    np.testing.assert_array_equal(ra, rb)       # the generator's stream is eager's
    assert sa.keys() == sb.keys()
    for k in sa:
        _close(sa[k], sb[k], k, rtol)
    for k in ga:
        assert (ga[k] is None) == (gb[k] is None), k
        if ga[k] is not None:
            _close(ga[k], gb[k], f"{k}.grad", rtol)
    assert [n for n, _ in osa] == [n for n, _ in osb]
    for (n, u), (_, v) in zip(osa, osb):
        _close(u, v, f"optimizer {n}", rtol)
    ex = f.explain()
    assert ex.graph_count == 1 and not ex.break_reasons, str(ex)


DTYPE_CASES = {
    "f32 + f64 0-d": lambda x, i: x + tg.tensor(2.0, dtype=tg.float64),
    "f32 * i64": lambda x, i: x * i[:, None],
    "int / int": lambda x, i: i / 2,
    "int // int": lambda x, i: (i - 5) // 3,
    "int ** 2": lambda x, i: i ** 2,
    "int32 + int64": lambda x, i: i.int() + i,
    "int8 wraps": lambda x, i: i.to(tg.int8) * 100,
    "uint8 wraps": lambda x, i: i.to(tg.uint8) - 10,
    "bool sum": lambda x, i: (x > 0).sum(),
    "half": lambda x, i: (x.half() * 3 + 1).exp().sum(),
    "f64 sum to f32": lambda x, i: x.double().sum(dtype=tg.float32),
    "arange * 0-d": lambda x, i: tg.arange(4) * x.sum(),
    "remainder int": lambda x, i: tg.remainder(i - 5, 3),
    "x ** -2": lambda x, i: x ** -2,
}


@pytest.mark.parametrize("name", list(DTYPE_CASES))
def test_jax_results_keep_eagers_dtypes(name):
    fn = DTYPE_CASES[name]

    def run(compiled):
        tg.manual_seed(0)
        w = nn.Parameter(tg.randn(3, 3))
        o = tg.optim.SGD([w], lr=0.1)

        def step(x, i):
            o.zero_grad()
            h = x @ w
            (h ** 2).mean().backward()
            o.step()
            return fn(h, i).detach()
        f = tg.compile(step, backend="jax") if compiled else step
        rng = np.random.RandomState(0)
        return [f(tg.tensor(rng.randn(4, 3).astype(np.float32)),
                  tg.tensor(rng.randint(1, 9, 4))) for _ in range(4)], f
    (eager, _), (compiled, f) = run(False), run(True)
    for a, b in zip(eager, compiled):
        assert a.dtype == b.dtype and a.numpy().dtype == b.numpy().dtype
        tol = 2e-3 if a.dtype == tg.float16 else 1e-5
        _close(a.numpy().astype(np.float64) if a.dtype == tg.float16 else a.numpy(),
               b.numpy().astype(np.float64) if a.dtype == tg.float16 else b.numpy(), name, tol)
    assert f.explain().graph_count == 1 and not f.explain().break_reasons


def test_jax_outputs_are_arrays_of_their_own():
    """XLA hands its outputs back as read-only views of its buffers: a returned tensor, a
    new ``.grad`` and the gradients of a compiled forward's backward must be writable
    arrays, as eager's are (``loss.add_``, ``p.grad.mul_``, a second accumulation)."""
    def run(backend):
        tg.manual_seed(0)
        m = nn.Linear(3, 2)
        o = tg.optim.Adam(m.parameters(), lr=0.1)

        def step(x):
            o.zero_grad()
            out = m(x)
            loss = (out ** 2).mean()
            loss.backward()
            o.step()
            return loss.detach(), out.detach()
        f = tg.compile(step, backend=backend) if backend else step
        for _ in range(3):
            loss, out = f(tg.ones(2, 3))
        loss.add_(1)
        out.mul_(2)
        m.weight.grad.mul_(3)
        o.step()
        # a compiled forward, its backward outside twice: the .grad accumulated in place
        fwd = tg.compile(m, backend=backend) if backend else m
        for _ in range(3):
            fwd(tg.ones(2, 3)).sum().backward()
        m.bias.grad.add_(1)
        return [loss.numpy(), out.numpy()] + [p.detach().numpy() for p in m.parameters()] \
            + [p.grad.numpy() for p in m.parameters()]
    eager, compiled = run(None), run("jax")
    for a, b in zip(eager, compiled):
        _close(a, b, "value", 1e-5)
