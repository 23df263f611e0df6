"""A custom ``Function``'s backward called from inside the backward graph (``engine._fused``)
gives what the staged engine gives (``engine._staged``: one backward graph per stretch
between Functions), and what PyTorch gives.

``engine.FUSED.set(False)`` sends every backward through the staged engine. Each program
runs both ways from the same data and records everything a user could see: gradients
(bit for bit), which gradients are None, the order in which backwards and hooks run, and
the errors raised.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import tracegrad as tg
from tracegrad.eager import engine


def _p3(lib, log):
    class P3(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return 0.5 * (5 * x ** 3 - 3 * x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            log.append(("P3", tuple(g.shape)))
            return g * 1.5 * (5 * x ** 2 - 1)
    return P3


def _masked_relu(lib, log):
    class Relu(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clamp(min=0)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            out = g.clone()
            out[x < 0] = 0              # data-dependent work on concrete tensors
            log.append(("Relu", float(x.sum())))
            return out
    return Relu


def _drops(lib, log):
    """A backward that returns None for its first input."""
    class Drop(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            log.append("Drop")
            return None, g * 2
    return Drop


def _scaled(lib, log):
    """A non-tensor argument, and a gradient returned in another dtype and broadcast."""
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k, w):
            ctx.k = k
            ctx.save_for_backward(w)
            return x * k * w

        @staticmethod
        def backward(ctx, g):
            (w,) = ctx.saved_tensors
            log.append("Scale")
            return (g * ctx.k * w).double(), None, (g * ctx.k).sum(0, keepdim=True)
    return Scale


def program_legendre(lib, log):
    p3 = _p3(lib, log).apply
    x = lib.linspace(-2, 2, 50, dtype=lib.float64)
    y = lib.sin(x)
    params = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in (0.0, -1.0, 0.0, 0.3)]
    for _ in range(4):
        a, b, c, d = params
        loss = (a + b * p3(c + d * x) - y).pow(2).sum()
        loss.backward()
        with lib.no_grad():
            for p in params:
                log.append(p.grad.clone())
                p.sub_(1e-3 * p.grad)
                p.grad = None
    return params


def program_chain_and_hooks(lib, log):
    relu, p3 = _masked_relu(lib, log).apply, _p3(lib, log).apply
    w = lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=lib.float64, requires_grad=True)
    x = lib.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=lib.float64)
    h = x @ w
    h.register_hook(lambda g: log.append(("h", g.clone())))
    r = relu(h)
    r.register_hook(lambda g: log.append(("r", g.clone())) or g * 3)
    out = p3(r * 0.1) + r * h      # r's input h has a path around both Functions
    out.sum().backward()
    return [w]


def program_none_gradient(lib, log):
    drop = _drops(lib, log).apply
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    b = lib.tensor([3.0, -1.0], requires_grad=True)
    c = lib.tensor([0.5, 0.5], requires_grad=True)
    (drop(a, b) + c * 2).sum().backward()      # a: its only path returns None
    d = lib.tensor([1.0, 1.0], requires_grad=True)
    (drop(d, b) + d).sum().backward()          # d: None there, a gradient elsewhere
    return [a, b, c, d]


def program_scaled_and_saved_operand(lib, log):
    scale = _scaled(lib, log).apply
    x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([[0.5, -0.5, 2.0]], dtype=lib.float32, requires_grad=True)
    const = lib.tensor([[1.0, 0.0, -1.0]], dtype=lib.float64)   # needs no gradient
    out = scale(x, 3.0, w) * const
    out.sum().backward()
    return [x, w]


def program_retain_and_twice(lib, log):
    p3 = _p3(lib, log).apply
    x = lib.tensor([0.3, -0.2], dtype=lib.float64, requires_grad=True)
    loss = p3(x * 2).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as e:
        log.append(str(e))
    return [x]


def program_grad_of_one_input(lib, log):
    p3 = _p3(lib, log).apply
    x = lib.tensor([0.3, -0.2], dtype=lib.float64, requires_grad=True)
    z = lib.tensor([1.5, 2.0], dtype=lib.float64, requires_grad=True)
    loss = (p3(x) * z).sum() + (z * z).sum()
    (gz,) = lib.autograd.grad(loss, [z], retain_graph=True)
    log.append(gz)
    (gx, gz2) = lib.autograd.grad(loss, [x, z])
    log.extend([gx, gz2])
    return [x, z]


PROGRAMS = {name[len("program_"):]: fn for name, fn in globals().items()
            if name.startswith("program_")}


def _record(program, lib, fused=True):
    token = engine.FUSED.set(fused)
    log = []
    try:
        tensors = program(lib, log)
    except RuntimeError as e:
        return [("raised", str(e))]
    finally:
        engine.FUSED.reset(token)
    seen = [_plain(v) for v in log]
    for t in tensors:
        seen.append(None if t.grad is None else _plain(t.grad))
    return seen


def _plain(v):
    if isinstance(v, (tg.Tensor, torch.Tensor)):
        return ("tensor", str(v.dtype).replace("torch.", ""), v.detach().numpy().tolist())
    if isinstance(v, tuple):
        return tuple(_plain(x) for x in v)
    return v


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fused_backward_is_the_staged_one_bit_for_bit(name):
    assert _record(PROGRAMS[name], tg, fused=True) == _record(PROGRAMS[name], tg, fused=False)


def _close(a, b):
    if isinstance(a, tuple) and len(a) == 3 and a[0] == "tensor":
        assert a[1] == b[1]
        np.testing.assert_allclose(a[2], b[2], rtol=1e-6, atol=1e-12)
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
    elif isinstance(a, float):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    elif isinstance(a, str) and a.startswith("Trying"):
        assert b.startswith("Trying")      # PyTorch's message, ours to its first sentence
    else:
        assert a == b


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fused_backward_matches_torch(name):
    ours, theirs = _record(PROGRAMS[name], tg), _record(PROGRAMS[name], torch)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        _close(a, b)


def test_the_fused_path_is_taken(monkeypatch):
    def staged(*args):
        raise AssertionError("the staged engine ran")
    monkeypatch.setattr(engine, "_staged", staged)
    log = []
    program_legendre(tg, log)
    assert sum(1 for v in log if isinstance(v, tuple) and v[0] == "P3") == 4


def test_fused_backwards_in_two_threads_call_their_own_functions():
    """Each thread's backward calls the Functions of its own graph, though the threads'
    backward graphs are one cached plan and their backwards interleave (the sleeps)."""
    import threading
    import time

    class Slow(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            time.sleep(0.002)
            return g * ctx.k, None

    def work(k, out):
        x = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
        for _ in range(5):
            x.grad = None
            Slow.apply(Slow.apply(x, k) * 1.0, k).sum().backward()
            out.append(x.grad.tolist())

    results = {2.0: [], 3.0: []}
    threads = [threading.Thread(target=work, args=(k, results[k])) for k in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[2.0] == [[4.0, 4.0]] * 5 and results[3.0] == [[9.0, 9.0]] * 5
