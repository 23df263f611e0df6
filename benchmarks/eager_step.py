"""One training step of an MLP, eager tracegrad against its peers, side by side; then
three more workloads, eager tracegrad against PyTorch eager.

    python benchmarks/eager_step.py            # prints the tables, writes docs/benchmarks-eager.md
    python benchmarks/eager_step.py --quick    # a shorter run, prints only

The step: a 784-256-256-10 ReLU MLP on a batch of 128 float32 images, softmax
cross-entropy, forward + backward + one SGD update (lr 0.01) of all six
parameters. Systems, each starting from the same parameters:

- numpy:     hand-written NumPy forward, backward and update (the reference);
- tg-eager:  tg.nn.Sequential + F.cross_entropy + loss.backward() + tg.optim.SGD;
- tg-jit:    the same loss written in NumPy, tg.jit(tg.value_and_grad(...)), NumPy update;
- torch:     PyTorch CPU eager with torch.nn and torch.optim.SGD (when installed).

Before timing, one step of every system is checked against the reference (loss and
updated parameters). Times are medians over interleaved rounds (see timing.py); every
thread pool is pinned to one thread, as in run.py.

The further workloads (``WORKLOADS``), each written once against the torch API and run
with ``lib`` = tracegrad and ``lib`` = torch from the same data and parameters:

- custom Function, ReLU net: PyTorch's "custom ReLU" tutorial net (64 x 1000 -> 100 ->
  10, float32), a custom ``autograd.Function`` whose backward assigns through a boolean
  mask, squared-error loss, a hand-written SGD update under ``no_grad``;
- custom Function, Legendre fit: the tutorial's ``a + b * P3(c + d * x)`` on 2000
  points, ``P3`` a custom Function, four scalar parameters updated by hand: 13 small
  operations a step, so it measures per-operation overhead;
- conv net: conv 1->8 3x3, ReLU, conv 8->16 3x3, ReLU, 2x2 max pool, linear to 10, on
  a batch of 32 1x28x28 float32 images, cross-entropy, ``optim.SGD``.

One step of each is checked against torch's (loss and updated parameters) before timing.
``--cpu-time`` times with the process's CPU clock instead of the wall clock (on a
machine other processes load: every system runs on one thread).
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time
from pathlib import Path

os.environ.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

import numpy as np  # noqa: E402
import timing  # noqa: E402

import tracegrad as tg  # noqa: E402

SIZES = (784, 256, 256, 10)
BATCH = 128
LR = 0.01


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    params = []
    for n_in, n_out in zip(SIZES[:-1], SIZES[1:]):
        bound = 1 / np.sqrt(n_in)
        params.append(rng.uniform(-bound, bound, (n_out, n_in)).astype(np.float32))  # torch layout
        params.append(rng.uniform(-bound, bound, n_out).astype(np.float32))
    X = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = rng.integers(0, SIZES[-1], BATCH)
    return params, X, y


# -- the systems: each returns (step, state) where state() gives (loss, params) ----------
def numpy_system(params, X, y):
    W = [p.copy() for p in params]
    last = [0.0]

    def step():
        W1, b1, W2, b2, W3, b3 = W
        a1 = X @ W1.T + b1
        h1 = np.maximum(a1, 0)
        a2 = h1 @ W2.T + b2
        h2 = np.maximum(a2, 0)
        z = h2 @ W3.T + b3
        z = z - z.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        last[0] = float(np.mean(np.log(s[:, 0]) - z[np.arange(BATCH), y]))
        dz = e / s
        dz[np.arange(BATCH), y] -= 1
        dz /= np.float32(BATCH)
        d2 = (dz @ W3) * (a2 > 0)
        d1 = (d2 @ W2) * (a1 > 0)
        grads = (d1.T @ X, d1.sum(0), d2.T @ h1, d2.sum(0), dz.T @ h2, dz.sum(0))
        for w, g in zip(W, grads):
            w -= np.float32(LR) * g
    return step, lambda: (last[0], W)


def _module_system(lib, as_tensor, params, X, y):
    """The step written once against the torch API, for ``lib`` = tracegrad or torch."""
    nn, F = lib.nn, lib.nn.functional
    before = lib.get_default_dtype()
    lib.set_default_dtype(lib.float32)      # parameters follow the default dtype
    try:
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                              nn.Linear(256, 10))
    finally:
        lib.set_default_dtype(before)
    with lib.no_grad():
        for p, v in zip(model.parameters(), params):
            p.copy_(as_tensor(v))
    opt = lib.optim.SGD(model.parameters(), lr=LR)
    xt, yt = as_tensor(X), as_tensor(y)
    last = [0.0]

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()
        last[0] = loss
    return step, lambda: (last[0].item(), [p.detach().numpy() for p in model.parameters()])


def eager_system(params, X, y):
    return _module_system(tg, tg.tensor, params, X, y)


def jit_system(params, X, y):
    def loss_fn(W1, b1, W2, b2, W3, b3, X, y):
        h1 = np.maximum(X @ W1.T + b1, 0)
        h2 = np.maximum(h1 @ W2.T + b2, 0)
        z = h2 @ W3.T + b3
        m = np.max(z, axis=1, keepdims=True)
        lse = m[:, 0] + np.log(np.sum(np.exp(z - m), axis=1))
        return np.mean(lse - z[np.arange(z.shape[0]), y])

    vg = tg.jit(tg.value_and_grad(loss_fn, argnums=(0, 1, 2, 3, 4, 5)))
    W = [p.copy() for p in params]
    last = [0.0]

    def step():
        loss, grads = vg(*W, X, y)
        for w, g in zip(W, grads):
            w -= np.float32(LR) * g
        last[0] = float(loss)
    return step, lambda: (last[0], W)


def torch_system(params, X, y):
    import torch
    torch.set_num_threads(1)
    return _module_system(torch, torch.from_numpy, params, X, y)


# -- the further workloads: (lib, data) -> (step, state) ---------------------------------
def _relu_function(lib):
    class MyReLU(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            ctx.save_for_backward(inp)
            return inp.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (inp,) = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[inp < 0] = 0
            return grad_input
    return MyReLU


def relu_net_data(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32)
            for s in ((64, 1000), (64, 10), (1000, 100), (100, 10))]


def relu_net(lib, as_tensor, data):
    relu = _relu_function(lib).apply
    x, y, w1, w2 = (as_tensor(a.copy()) for a in data)
    w1.requires_grad_()
    w2.requires_grad_()
    last = [0.0]

    def step():
        loss = (relu(x.mm(w1)).mm(w2) - y).pow(2).sum()
        loss.backward()
        with lib.no_grad():
            w1.sub_(1e-6 * w1.grad)
            w2.sub_(1e-6 * w2.grad)
            w1.grad = None
            w2.grad = None
        last[0] = loss
    return step, lambda: (last[0].item(), [w1.detach().numpy(), w2.detach().numpy()])


def _legendre_function(lib):
    class LegendrePolynomial3(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return 0.5 * (5 * x ** 3 - 3 * x)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * 1.5 * (5 * x ** 2 - 1)
    return LegendrePolynomial3


def legendre_data(seed=0):
    x = np.linspace(-np.pi, np.pi, 2000).astype(np.float32)
    return [x, np.sin(x), np.array([0.0, -1.0, 0.0, 0.3], np.float32)]


def legendre(lib, as_tensor, data):
    p3 = _legendre_function(lib).apply
    x, y = as_tensor(data[0]), as_tensor(data[1])
    params = [as_tensor(np.array(v)).requires_grad_() for v in data[2]]
    last = [0.0]

    def step():
        a, b, c, d = params
        loss = (a + b * p3(c + d * x) - y).pow(2).sum()
        loss.backward()
        with lib.no_grad():
            for p in params:
                p.sub_(5e-6 * p.grad)
                p.grad = None
        last[0] = loss
    return step, lambda: (last[0].item(), [p.detach().numpy() for p in params])


def conv_net_data(seed=0):
    rng = np.random.default_rng(seed)
    shapes = ((8, 1, 3, 3), (8,), (16, 8, 3, 3), (16,), (10, 16 * 12 * 12), (10,))
    params = []
    for s in shapes:
        fan_in = int(np.prod(s[1:])) if len(s) > 1 else 1
        bound = 1 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, s).astype(np.float32))
    X = rng.standard_normal((32, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, 32)
    return params + [X, y]


def conv_net(lib, as_tensor, data):
    nn, F = lib.nn, lib.nn.functional
    before = lib.get_default_dtype()
    lib.set_default_dtype(lib.float32)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 8, 3)
            self.conv2 = nn.Conv2d(8, 16, 3)
            self.fc = nn.Linear(16 * 12 * 12, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            return self.fc(x.flatten(1))
    try:
        model = Net()
    finally:
        lib.set_default_dtype(before)
    with lib.no_grad():
        for p, v in zip(model.parameters(), data[:6]):
            p.copy_(as_tensor(v))
    opt = lib.optim.SGD(model.parameters(), lr=LR)
    xt, yt = as_tensor(data[6]), as_tensor(data[7])
    last = [0.0]

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(xt), yt)
        loss.backward()
        opt.step()
        last[0] = loss
    return step, lambda: (last[0].item(), [p.detach().numpy() for p in model.parameters()])


# name -> (title, data, build, the target ratio to torch that issue 14 set)
WORKLOADS = {
    "relu-function": ("custom Function: the custom-ReLU tutorial net, 64x1000-100-10",
                      relu_net_data, relu_net, 2.0),
    "legendre-function": ("custom Function: the Legendre P3 polynomial fit, 2000 points",
                          legendre_data, legendre, 2.0),
    "conv-net": ("conv net: 2 conv + max pool + linear, batch 32 of 1x28x28",
                 conv_net_data, conv_net, 1.5),
}


def workload_table(budget, names=None):
    """Time each workload, eager tracegrad against torch (same data, same start)."""
    import torch
    torch.set_num_threads(1)
    lines = ["| workload | tracegrad ms/step | PyTorch ms/step | ratio | target |",
             "|---|---:|---:|---:|---:|"]
    for name in names or WORKLOADS:
        title, make_data, build, target = WORKLOADS[name]
        data = make_data()
        steps, states = {}, {}
        for lib, as_tensor in ((tg, tg.tensor), (torch, torch.from_numpy)):
            steps[lib.__name__], states[lib.__name__] = build(lib, as_tensor, data)
        for step in steps.values():
            step()
        (loss, ps), (ref_loss, ref_ps) = states["tracegrad"](), states["torch"]()
        assert abs(loss - ref_loss) <= 1e-4 * max(1.0, abs(ref_loss)), (name, loss, ref_loss)
        for p, r in zip(ps, ref_ps):
            np.testing.assert_allclose(p, r, rtol=1e-4, atol=1e-5, err_msg=name)
        res = timing.interleaved(steps, budget_s=budget, min_rounds=5, max_rounds=400)
        ours, theirs = res["tracegrad"].median, res["torch"].median
        lines.append(f"| {title} | {ours * 1e3:.3f} | {theirs * 1e3:.3f} | "
                     f"{ours / theirs:.2f}x | {target:.1f}x |")
    return "\n".join(lines) + "\n"


def recurrent_data(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((16, 20, 10)).astype(np.float32),
            rng.standard_normal((16, 1)).astype(np.float32), seed]


def _recurrent(lib, as_tensor, data, bidirectional):
    """A regression through an LSTMCell unrolled over 20 steps (``bidirectional=False``),
    or through a bidirectional ``nn.LSTM``: 16 sequences of 20 steps of 10 features,
    hidden 32, a linear head on the last output, MSE, SGD. Parameters drawn from one
    NumPy stream in ``parameters()`` order, the same for both libraries."""
    nn, F = lib.nn, lib.nn.functional
    before = lib.get_default_dtype()
    lib.set_default_dtype(lib.float32)
    try:
        if bidirectional:
            rnn = nn.LSTM(10, 32, batch_first=True, bidirectional=True)
            head = nn.Linear(64, 1)
        else:
            rnn, head = nn.LSTMCell(10, 32), nn.Linear(32, 1)
    finally:
        lib.set_default_dtype(before)
    params = list(rnn.parameters()) + list(head.parameters())
    rng = np.random.default_rng(data[2] + 1)
    with lib.no_grad():
        for p in params:
            p.copy_(as_tensor(rng.uniform(-0.2, 0.2, tuple(p.shape)).astype(np.float32)))
    opt = lib.optim.SGD(params, lr=LR)
    x, y = as_tensor(data[0]), as_tensor(data[1])
    last = [0.0]

    def step():
        opt.zero_grad()
        if bidirectional:
            out, _ = rnn(x)
            h = out[:, -1]
        else:
            h = c = lib.zeros(16, 32)
            for t in range(x.shape[1]):
                h, c = rnn(x[:, t], (h, c))
        loss = F.mse_loss(head(h), y)
        loss.backward()
        opt.step()
        last[0] = loss
    return step, lambda: (last[0].item(), [p.detach().numpy() for p in params])


def lstm_cell_loop(lib, as_tensor, data):
    return _recurrent(lib, as_tensor, data, False)


def bilstm(lib, as_tensor, data):
    return _recurrent(lib, as_tensor, data, True)


def dynamic_net_data(seed=0):
    x = np.linspace(-np.pi, np.pi, 2000).astype(np.float32)
    rng = np.random.default_rng(seed)
    return [x, np.sin(x), rng.standard_normal(5).astype(np.float32)]


def dynamic_net(lib, as_tensor, data):
    """PyTorch's dynamic_net tutorial step: a cubic in five scalar parameters plus 0-2
    more terms sharing ``e``, their count drawn with Python's ``random.randint(4, 6)`` in
    ``forward``; summed squared error, SGD with momentum."""
    class DynamicNet(lib.nn.Module):
        def __init__(self):
            super().__init__()
            for name, v in zip("abcde", data[2]):
                setattr(self, name, lib.nn.Parameter(as_tensor(np.array(v))))

        def forward(self, x):
            y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
            for exp in range(4, random.randint(4, 6)):
                y = y + self.e * x ** exp
            return y

    model = DynamicNet()
    criterion = lib.nn.MSELoss(reduction="sum")
    opt = lib.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
    x, y = as_tensor(data[0]), as_tensor(data[1])
    last = [0.0]

    def step():
        loss = criterion(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        last[0] = loss
    return step, lambda: (last[0].item(), [p.detach().numpy() for p in model.parameters()])


def _own_random(step, seed=0):
    """``step`` run with a ``random`` module state of its own (every system starts from
    ``seed``'s), so that systems timed in turn draw the same depths. Each system pays the
    same two state swaps a call (about 10 us)."""
    state = random.Random(seed).getstate()

    def run():
        nonlocal state
        outer = random.getstate()
        random.setstate(state)
        try:
            return step()
        finally:
            state = random.getstate()
            random.setstate(outer)
    return run


def _mlp_workload(lib, as_tensor, data):
    return _module_system(lib, as_tensor, *data)


COMPILED = {
    "mlp": ("MLP 784-256-256-10, batch 128, SGD", lambda seed=0: make_data(seed),
            _mlp_workload),
    "conv-net": WORKLOADS["conv-net"][:3],
    "legendre-function": WORKLOADS["legendre-function"][:3],
    "relu-function": WORKLOADS["relu-function"][:3],
    "lstm-cell": ("LSTMCell unrolled 20 steps, batch 16, hidden 32, SGD", recurrent_data,
                  lstm_cell_loop),
    "bilstm": ("bidirectional LSTM, 20 steps, batch 16, hidden 32, SGD", recurrent_data,
               bilstm),
    "dynamic-net": ("dynamic_net: random depth (random.randint), 2000 points, SGD momentum",
                    dynamic_net_data, dynamic_net),
}
HOST_RANDOM = {"dynamic-net"}       # workloads drawing from Python's random module


def _torch_compiled(step, wrap=lambda f: f):
    """torch.compile(step) (wrapped by ``wrap``) and the seconds its first two calls
    took, or (None, reason)."""
    import torch
    try:
        compiled = wrap(torch.compile(step))
        started = time.perf_counter()
        compiled()
        compiled()
        return compiled, time.perf_counter() - started
    except Exception as e:      # noqa: BLE001  (no C++ compiler, an unsupported op, ...)
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"


def compiled_table(budget, names=None, jax=False):
    """Each workload's whole training step: tracegrad eager, ``tg.compile``d (NumPy
    backend; with ``jax``, the JAX one too), PyTorch eager, ``torch.compile``d; same
    data and start. Checks that the compiled steps leave tracegrad's eager numbers
    (bit for bit on NumPy) before timing; reports the capture time of ``tg.compile``
    (its second call: the first runs eagerly) and ``torch.compile``'s first two calls."""
    import torch
    torch.set_num_threads(1)
    lines = ["| workload | tg eager ms | tg.compile ms | " + ("tg.compile jax ms | " if jax else "")
             + "torch eager ms | torch.compile ms | tg.compile / torch eager | "
             "tg.compile capture ms | torch.compile first calls s |",
             "|---|" + "---:|" * (8 if jax else 7)]
    notes = []
    for name in names or COMPILED:
        title, make_data_, build_ = COMPILED[name]
        data = make_data_()
        steps, states = {}, {}
        steps["tg"], states["tg"] = build_(tg, tg.tensor, data)
        step, states["tgc"] = build_(tg, tg.tensor, data)
        steps["tgc"] = compiled = tg.compile(step)
        if jax:
            step, states["tgj"] = build_(tg, tg.tensor, data)
            steps["tgj"] = tg.compile(step, backend="jax")
        steps["torch"], states["torch"] = build_(torch, torch.from_numpy, data)
        step, _ = build_(torch, torch.from_numpy, data)
        own = _own_random if name in HOST_RANDOM else (lambda f: f)
        steps = {k: own(f) for k, f in steps.items()}
        tc, tc_first = _torch_compiled(step, own)
        # (a workload drawing its structure captures a graph per outcome: all before timing)
        for _ in range(30 if name in HOST_RANDOM else 3):
            for key in ("tg", "tgc", "tgj", "torch"):
                if key in steps:
                    steps[key]()
        if tc is not None:
            tc()
            steps["torch.compile"] = tc
        else:
            notes.append(f"{name}: torch.compile did not run here ({tc_first})")
        (loss, ps), (closs, cps) = states["tg"](), states["tgc"]()
        assert loss == closs and all(np.array_equal(a, b) for a, b in zip(ps, cps)), name
        explained = compiled.explain()
        assert explained.graph_count == 1 or name in HOST_RANDOM, str(explained)
        assert all("captured again" in r for r in explained.break_reasons), str(explained)
        res = timing.interleaved(steps, budget_s=budget, min_rounds=5, max_rounds=400)
        ms = {k: v.median * 1e3 for k, v in res.items()}
        tcm = f"{ms['torch.compile']:.3f}" if "torch.compile" in ms else "n/a"
        tcf = f"{tc_first:.2f}" if tc is not None else "n/a"
        lines.append(f"| {title} | {ms['tg']:.3f} | {ms['tgc']:.3f} | "
                     + (f"{ms['tgj']:.3f} | " if jax else "")
                     + f"{ms['torch']:.3f} | {tcm} | {ms['tgc'] / ms['torch']:.2f}x | "
                     f"{explained.capture_seconds[0] * 1e3:.0f} | {tcf} |")
    return "\n".join(lines) + "\n" + "".join(f"\n{n}\n" for n in notes)


SYSTEMS = {"numpy": numpy_system, "tg-eager": eager_system, "tg-jit": jit_system,
           "torch": torch_system}
TITLES = {"numpy": "hand-written NumPy", "tg-eager": "tracegrad eager (nn + optim)",
          "tg-jit": "tracegrad tg.jit(value_and_grad)", "torch": "PyTorch eager (CPU)"}


def build(params, X, y):
    steps, states = {}, {}
    for name, make in SYSTEMS.items():
        try:
            steps[name], states[name] = make(params, X, y)
        except ImportError:
            print(f"# {name}: not installed, skipped")
    return steps, states


def check(steps, states):
    """One step of each system from the same start must agree with the reference."""
    for step in steps.values():
        step()
    ref_loss, ref_params = states["numpy"]()
    for name, state in states.items():
        loss, ps = state()
        assert abs(loss - ref_loss) <= 1e-4 * max(1.0, abs(ref_loss)), (name, loss, ref_loss)
        for p, r in zip(ps, ref_params):
            np.testing.assert_allclose(p, r, rtol=1e-4, atol=1e-5, err_msg=name)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time with the process's CPU clock (a loaded machine)")
    ap.add_argument("--only", choices=sorted(WORKLOADS), action="append",
                    help="time only these further workloads (and not the MLP)")
    ap.add_argument("--compiled", action="store_true",
                    help="only the tg.compile table (eager, compiled, torch, torch.compile)")
    ap.add_argument("--jax", action="store_true", help="with --compiled: the JAX backend too")
    ap.add_argument("--workload", choices=sorted(COMPILED), action="append",
                    help="with --compiled: only these workloads")
    args = ap.parse_args(argv)
    if args.cpu_time:
        timing._clock = time.process_time
    budget = 4.0 if args.quick else 30.0
    if args.compiled:
        print(compiled_table(budget / 4, args.workload, jax=args.jax))
        return
    if args.only:
        print(workload_table(budget / 3, args.only))
        return
    params, X, y = make_data()
    steps, states = build(params, X, y)
    check(steps, states)
    res = timing.interleaved(steps, budget_s=budget, min_rounds=5, max_rounds=400)
    ref = res["numpy"].median
    clock = "CPU-time" if args.cpu_time else "wall-clock"
    lines = [f"Eager training step: MLP {'-'.join(map(str, SIZES))}, ReLU, batch {BATCH}, float32, "
             f"cross-entropy, forward + backward + SGD step; one thread per library, {clock} "
             "medians; "
             f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
             f"NumPy {np.__version__}.", "",
             "| system | median ms/step | IQR % | vs hand-written NumPy | vs PyTorch eager |",
             "|---|---:|---:|---:|---:|"]
    torch_med = res["torch"].median if "torch" in res else None
    for name, st in res.items():
        vs_torch = f"{st.median / torch_med:.2f}x" if torch_med else "n/a"
        lines.append(f"| {TITLES[name]} | {st.median * 1e3:.3f} | {st.iqr_pct:.0f} | "
                     f"{st.median / ref:.2f}x | {vs_torch} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if "torch" in res:
        more = ("Further workloads, eager tracegrad against PyTorch eager (CPU), one thread "
                f"each, same data and starting parameters, {clock} medians "
                "(`benchmarks/eager_step.py`'s docstring describes them):\n\n"
                + workload_table(budget / 3))
        print(more)
        text += "\n" + more
    if not args.quick:
        out = ROOT / "docs" / "benchmarks-eager.md"
        out.write_text("# Eager training step\n\nReproduce with `python benchmarks/eager_step.py"
                       + (" --cpu-time" if args.cpu_time else "") + "`."
                       "\n\n" + text)
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
