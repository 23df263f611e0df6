"""The eager tape from several threads at once: four threads each record and differentiate
a different small model or function 200 times, at the same time, and every gradient (and
the user line recorded for the nodes) is the one the same code gives alone in one thread.
The tape keeps no state shared between threads: its nodes are the tensors' ``grad_fn``
objects and its current line is per thread (``eager/tape.py``)."""
import inspect
import threading

import numpy as np

import tracegrad as tg

F = tg.nn.functional

ROUNDS = 200
# used by every thread at once (its history reaches all their graphs; never its .grad)
SHARED = tg.tensor(np.linspace(-0.5, 0.7, 6).reshape(2, 3), requires_grad=True)


class Cube(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * g


def _line(offset):
    return inspect.currentframe().f_back.f_lineno + offset


def mlp(k):
    """nn modules, softmax (a composite operation: its line comes from the tape's per-thread
    state), backward into the parameters' .grad."""
    rng = np.random.default_rng(k)
    tg.manual_seed(k)
    model = tg.nn.Sequential(tg.nn.Linear(3, 5, dtype=tg.float64), tg.nn.Tanh(),
                             tg.nn.Linear(5, 2, dtype=tg.float64))
    x = tg.tensor(rng.standard_normal((4, 3)))
    line = _line(1)
    p = F.softmax(model(x) + SHARED[:, :2].sum(), dim=1)
    loss = (p * tg.tensor(rng.standard_normal((4, 2)))).sum()
    loss.backward(inputs=list(model.parameters()))
    return [q.grad.numpy() for q in model.parameters()] + [p.grad_fn.src.endswith(f":{line}")]


def custom_function_and_hooks(k):
    """A custom Function, tensor hooks (on a leaf and on a computed tensor), retain_grad."""
    x = tg.tensor(np.linspace(-1.0, 1.0, 5) + 0.1 * k, requires_grad=True)
    seen = []
    x.register_hook(lambda g: g * 2)
    y = Cube.apply(x * SHARED.sum())
    y.retain_grad()
    y.register_hook(lambda g: seen.append(g.numpy().copy()))
    z = (y.sin() * x).sum()
    z.backward(inputs=[x, y])
    return [x.grad.numpy(), y.grad.numpy(), seen[0]]


def double_backward(k):
    """autograd.grad with create_graph, inputs the shared leaf, allow_unused."""
    x = tg.tensor(np.array([0.3, -1.2, 0.7]) * (k + 1), requires_grad=True)
    unused = tg.ones(2, requires_grad=True)
    y = (x ** 3 * SHARED[0].exp()).sum()
    g, gs, none = tg.autograd.grad(y, (x, SHARED, unused), create_graph=True,
                                   allow_unused=True)
    (gg,) = tg.autograd.grad((g * g).sum(), x)
    return [g.detach().numpy(), gs.detach().numpy(), none is None, gg.numpy()]


def views_inplace_and_errors(k):
    """In-place changes on a view, backward(inputs=...), the retain_graph error and the
    saved-version check."""
    w = tg.tensor(np.arange(6.0).reshape(2, 3) / (k + 2), requires_grad=True)
    b = tg.tensor([0.5, -0.25, 1.0], requires_grad=True)
    h = w * 1.0
    h[:, 1].mul_(3.0)
    loss = ((h + b) ** 2).sum() + (SHARED * w).sum()
    loss.backward(inputs=[w], retain_graph=True)
    loss.backward(inputs=[b])
    errors = []
    try:
        loss.backward()
    except RuntimeError as e:
        errors.append("backward through the graph a second time" in str(e))
    e2 = w.exp()
    out = e2.sum()
    with tg.no_grad():
        e2.add_(1.0)
    try:
        out.backward()
    except RuntimeError as e:
        errors.append("modified by an inplace operation" in str(e))
    return [w.grad.numpy(), b.grad.numpy(), errors]


WORKLOADS = [mlp, custom_function_and_hooks, double_backward, views_inplace_and_errors]


def _same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        if isinstance(v, np.ndarray):
            np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-14)
        else:
            assert u == v


def test_four_threads_record_and_differentiate_at_once():
    reference = {f: [f(k) for k in range(3)] for f in WORKLOADS}
    for f, outs in reference.items():          # the checks above hold alone
        for out in outs:
            flags = [v for v in out if not isinstance(v, np.ndarray)]
            assert all(v is True or v == [True, True] for v in flags), (f.__name__, flags)
    start = threading.Barrier(len(WORKLOADS))
    failures = []

    def run(f):
        try:
            start.wait()
            for i in range(ROUNDS):
                k = i % 3
                _same(f(k), reference[f][k])
        except BaseException as e:      # reported in the main thread
            failures.append((f.__name__, repr(e)))

    threads = [threading.Thread(target=run, args=(f,)) for f in WORKLOADS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert SHARED.grad is None
