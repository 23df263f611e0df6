"""Un-jitted ``tg.grad`` against HIPS autograd's ``grad``, per call, side by side.

    PYTHONPATH=. python benchmarks/vs_autograd.py                 # about 2 minutes
    PYTHONPATH=. python benchmarks/vs_autograd.py --quick         # about 30 s
    PYTHONPATH=. python benchmarks/vs_autograd.py --only rosen,fluidsim
    PYTHONPATH=. python benchmarks/vs_autograd.py --clock cpu     # process CPU time (a busy machine)

Every workload is written once, as a function of an array module ``np_`` and a gradient
transform ``grad_`` (only the nested ones use it): tracegrad runs it on plain NumPy and
``tg.grad``, autograd on ``autograd.numpy`` and ``autograd.grad``. They are our own small
versions of the shapes of HIPS autograd's example programs (``examples/``: a tanh and its
second derivative, the sinusoid's Taylor series with a data-dependent ``break``, a fixed
point found by a Python ``while`` loop, a classifier net, an RNN, a fluid simulation made
of ``np.roll``, a Gaussian process' marginal likelihood, black-box SVI, a Gaussian
mixture) and of library code (SciPy's Rosenbrock, scikit-learn's L2-regularised logistic
loss), plus README's two-parameter loss, a 300-step Python loop and an MLP.

Per workload, the gradient with respect to the first argument (a pytree of arrays or a
Python float) is timed three ways, after checking that all three agree with autograd
(``allclose``, rtol 1e-9):

- ``autograd``: ``autograd.grad(f)(*args)``;
- ``tg.grad``: ``tg.grad(f)(*args)``, un-jitted: the function is traced on every call;
- ``jit``: ``tg.jit(tg.grad(f))``, made once, then called.

Each call of the first two builds the transform afresh, as code that differentiates
inside a training step often does, so nothing kept on a transformed function helps
either system. The timing is interleaved (``timing.interleaved``), on one thread, all
systems in one process. The ratios are tracegrad's time over autograd's; the last line
gives their median and maximum.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

for _k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_k] = "1"

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]   # this working tree's tracegrad

import time  # noqa: E402

import numpy as np  # noqa: E402
import timing  # noqa: E402

import tracegrad as tg  # noqa: E402


# -- the workloads: name -> function of (np_, grad_) returning the function to differentiate
def _loss(np_, grad_):
    x, y = np_.array([1.0, 2.0]), np_.array([5.0, 7.0])

    def loss(wb):
        w, b = wb
        return np_.sum((w * x + b - y) ** 2)
    return loss


def _loop(np_, grad_):
    def loop(x):
        for _ in range(300):
            x = np_.sin(x) * 0.99 + 0.01
        return np_.sum(x)
    return loop


def _mlp(np_, grad_):
    def mlp(params, X, Y):
        h = X
        for W, b in params[:-1]:
            h = np_.tanh(h @ W + b)
        W, b = params[-1]
        return np_.mean((h @ W + b - Y) ** 2)
    return mlp


def _rosen(np_, grad_):
    def rosen(x):                       # scipy.optimize.rosen's formula
        return np_.sum(100.0 * (x[1:] - x[:-1] ** 2.0) ** 2.0 + (1 - x[:-1]) ** 2.0)
    return rosen


def _logistic(np_, grad_):
    def logistic(w, X, y, alpha):       # scikit-learn's L2-regularised logistic loss
        z = X @ w[:-1] + w[-1]
        return np_.sum(np_.logaddexp(0.0, -y * z)) + 0.5 * alpha * np_.dot(w[:-1], w[:-1])
    return logistic


def _tanh(np_, grad_):
    def tanh(x):
        return np_.sum((1.0 - np_.exp(-2 * x)) / (1.0 + np_.exp(-(2 * x))))
    return tanh


def _tanh2(np_, grad_):
    def tanh(x):
        return np_.sum((1.0 - np_.exp(-2 * x)) / (1.0 + np_.exp(-(2 * x))))

    def first(x):                       # sum of the elementwise first derivative
        return np_.sum(grad_(tanh)(x))
    return first


def _taylor_fn(np_):
    def taylor(x):                      # sin(x) by its Taylor series, stopped by a test
        term = x
        total = term
        for i in range(1000):
            term = -term * x ** 2 / ((2 * i + 3) * (2 * i + 2))
            total = total + term
            if np_.abs(term) < 0.2:
                break
        return total
    return taylor


def _taylor(np_, grad_):
    return _taylor_fn(np_)


def _taylor2(np_, grad_):
    return grad_(_taylor_fn(np_))


def _fixed_point(np_, grad_):
    def root(a):                        # sqrt(a) by a damped iteration, until it settles
        x, prev = 10.0, np_.inf
        while np_.abs(x - prev) > 1e-4:
            x, prev = x - 0.05 * (x ** 2 - a), x
        return x
    return root


def _classifier(np_, grad_):
    def net(params, X, T):              # relu net, log-softmax, L2 penalty
        h = X
        for W, b in params[:-1]:
            h = np_.maximum(h @ W + b, 0.0)
        W, b = params[-1]
        out = h @ W + b
        m = np_.max(out, axis=1, keepdims=True)
        logp = out - m - np_.log(np_.sum(np_.exp(out - m), axis=1, keepdims=True))
        penalty = sum(np_.sum(W ** 2) for W, _ in params)
        return -np_.sum(logp * T) / X.shape[0] + 1e-3 * penalty
    return net


def _rnn(np_, grad_):
    def concat_dot(weights, *parts):
        stacked = np_.concatenate(parts + (np_.ones((parts[0].shape[0], 1)),), axis=1)
        return stacked @ weights

    def log_softmax(o):
        m = np_.max(o, axis=1, keepdims=True)
        return o - m - np_.log(np_.sum(np_.exp(o - m), axis=1, keepdims=True))

    def rnn(params, inputs, targets):
        h = np_.repeat(params["h0"], inputs.shape[1], axis=0)
        total = 0.0
        for x_t, y_t in zip(inputs, targets):
            h = np_.tanh(concat_dot(params["change"], x_t, h))
            total = total + np_.sum(log_softmax(concat_dot(params["predict"], h)) * y_t)
        return -total / (inputs.shape[0] * inputs.shape[1])
    return rnn


def _fluidsim(np_, grad_):
    def smooth(f, open_):
        num = (np_.roll(f, 1, axis=0) * np_.roll(open_, 1, axis=0)
               + np_.roll(f, -1, axis=0) * np_.roll(open_, -1, axis=0)
               + np_.roll(f, 1, axis=1) * np_.roll(open_, 1, axis=1)
               + np_.roll(f, -1, axis=1) * np_.roll(open_, -1, axis=1))
        den = (np_.roll(open_, 1, axis=0) + np_.roll(open_, -1, axis=0)
               + np_.roll(open_, 1, axis=1) + np_.roll(open_, -1, axis=1))
        return f * open_ + (1 - open_) * num / (den + 1e-3)

    def project(vx, vy, open_):
        div = -0.5 * (np_.roll(vx, -1, axis=1) - np_.roll(vx, 1, axis=1)
                      + np_.roll(vy, -1, axis=0) - np_.roll(vy, 1, axis=0))
        div = smooth(div, open_)
        p = np_.zeros(vx.shape)
        for _ in range(8):
            p = (div + np_.roll(p, 1, axis=1) + np_.roll(p, -1, axis=1)
                 + np_.roll(p, 1, axis=0) + np_.roll(p, -1, axis=0)) / 4.0
            p = smooth(p, open_)
        vx = vx - 0.5 * (np_.roll(p, -1, axis=1) - np_.roll(p, 1, axis=1))
        vy = vy - 0.5 * (np_.roll(p, -1, axis=0) - np_.roll(p, 1, axis=0))
        return vx * open_, vy * open_

    def advect(f, vx, vy):
        rows, cols = f.shape
        cx, cy = np_.meshgrid(np_.arange(cols), np_.arange(rows))
        sx, sy = (cx - vx).ravel(), (cy - vy).ravel()
        i0, j0 = np_.floor(sy).astype(int), np_.floor(sx).astype(int)
        wi, wj = sy - i0, sx - j0
        i0, j0 = np_.mod(i0, rows), np_.mod(j0, cols)
        i1, j1 = np_.mod(i0 + 1, rows), np_.mod(j0 + 1, cols)
        out = ((1 - wi) * ((1 - wj) * f[i0, j0] + wj * f[i0, j1])
               + wi * ((1 - wj) * f[i1, j0] + wj * f[i1, j1]))
        return np_.reshape(out, (rows, cols))

    def wing(shape, vx0, vy0):          # -lift / drag of a shape put in a flow
        open_ = 1 - 0.5 * (np_.tanh(shape) + 1.0)
        vx, vy = project(vx0, vy0, open_)
        for _ in range(3):
            vx, vy = project(advect(vx, vx, vy), advect(vy, vx, vy), open_)
        return -np_.mean(vy - vy0) / np_.mean(vx0 - vx)
    return wing


def _gaussian_process(np_, grad_):
    def nll(params, x, y):              # an RBF GP's negative log marginal likelihood
        amp, length, noise = np_.exp(params[0]), np_.exp(params[1]), np_.exp(params[2])
        d = (x[:, None] - x[None, :]) / length
        K = amp * np_.exp(-0.5 * d ** 2) + (noise + 1e-6) * np_.eye(x.shape[0])
        alpha = np_.linalg.solve(K, y)
        return 0.5 * np_.dot(y, alpha) + 0.5 * np_.linalg.slogdet(K)[1]
    return nll


def _black_box_svi(np_, grad_):
    def log_density(z):                 # a banana-shaped target
        a, b = z[:, 0], z[:, 1]
        return -0.5 * (a ** 2 / 4.0 + (b - 0.5 * a ** 2) ** 2) - 0.1 * np_.sum(z[:, 2:] ** 2,
                                                                                axis=1)

    def elbo(params, eps):              # reparameterised, with fixed noise
        mean, log_std = params[: eps.shape[1]], params[eps.shape[1]:]
        z = eps * np_.exp(log_std) + mean
        entropy = 0.5 * eps.shape[1] * (1.0 + np_.log(2 * np_.pi)) + np_.sum(log_std)
        return -(entropy + np_.mean(log_density(z)))
    return elbo


def _gmm(np_, grad_):
    def nll(params, X):                 # a diagonal Gaussian mixture's negative log likelihood
        logits, means, log_std = params
        logw = logits - np_.log(np_.sum(np_.exp(logits)))
        diff = (X[:, None, :] - means[None, :, :]) / np_.exp(log_std)[None, :, :]
        comp = -0.5 * np_.sum(diff ** 2, axis=2) - np_.sum(log_std, axis=1)
        a = comp + logw
        m = np_.max(a, axis=1, keepdims=True)
        return -np_.sum(m[:, 0] + np_.log(np_.sum(np_.exp(a - m), axis=1)))
    return nll


WORKLOADS = {
    "loss": _loss, "loop": _loop, "mlp": _mlp, "rosen": _rosen, "logistic": _logistic,
    "tanh": _tanh, "tanh_2nd": _tanh2, "taylor": _taylor, "taylor_2nd": _taylor2,
    "fixed_point": _fixed_point, "classifier": _classifier, "rnn": _rnn,
    "fluidsim": _fluidsim, "gp": _gaussian_process, "svi": _black_box_svi, "gmm": _gmm,
}


def data():
    """name -> the arguments (the first is differentiated)."""
    rng = np.random.default_rng(0)
    sizes = [20, 32, 32, 5]
    mlp = [(rng.standard_normal((a, b)) * 0.3, np.zeros(b)) for a, b in zip(sizes[:-1], sizes[1:])]
    csizes = [30, 40, 40, 6]
    cls = [(rng.standard_normal((a, b)) * 0.3, rng.standard_normal(b) * 0.1)
           for a, b in zip(csizes[:-1], csizes[1:])]
    X = rng.standard_normal((50, 8))
    rnn = {"h0": rng.standard_normal((1, 12)) * 0.1,
           "change": rng.standard_normal((5 + 12 + 1, 12)) * 0.3,
           "predict": rng.standard_normal((12 + 1, 5)) * 0.3}
    seq = np.eye(5)[rng.integers(0, 5, (20, 8))]
    rows, cols = 16, 24
    shape = -np.ones((rows, cols))
    shape[6:10, 8:14] = 1.0
    xs = np.sort(rng.uniform(-3, 3, 30))
    centers = rng.standard_normal((3, 2)) * 2
    gx = (centers[rng.integers(0, 3, 100)] + rng.standard_normal((100, 2)) * 0.5)
    return {
        "loss": ((1.0, 0.0),),
        "loop": (rng.standard_normal(10),),
        "mlp": (mlp, rng.standard_normal((64, 20)), rng.standard_normal((64, 5))),
        "rosen": (rng.uniform(0.5, 1.5, 200),),
        "logistic": (rng.standard_normal(9) * 0.1, X, np.sign(rng.standard_normal(50)), 0.1),
        "tanh": (np.linspace(-7, 7, 700),),
        "tanh_2nd": (np.linspace(-7, 7, 700),),
        "taylor": (2.5,),
        "taylor_2nd": (2.5,),
        "fixed_point": (2.0,),
        "classifier": (cls, rng.standard_normal((64, 30)), np.eye(6)[rng.integers(0, 6, 64)]),
        "rnn": (rnn, seq, np.roll(seq, -1, axis=0)),
        "fluidsim": (shape, np.ones((rows, cols)), np.zeros((rows, cols))),
        "gp": (np.array([0.1, -0.2, -2.0]), xs, np.sin(xs) + 0.1 * rng.standard_normal(30)),
        "svi": (np.concatenate([rng.standard_normal(4) * 0.1, -np.ones(4)]),
                rng.standard_normal((64, 4))),
        "gmm": ((np.zeros(3), rng.standard_normal((3, 2)), np.zeros((3, 2))), gx),
    }


def calls(autograd, names):
    """name -> {system: zero-argument call returning the gradient}."""
    import autograd.numpy as anp

    args = data()
    out = {}
    for name in names:
        f_tg, f_ag, a = WORKLOADS[name](np, tg.grad), WORKLOADS[name](anp, autograd.grad), args[name]
        jitted = tg.jit(tg.grad(f_tg))
        out[name] = {
            "autograd": lambda f=f_ag, a=a: autograd.grad(f)(*a),
            "tg.grad": lambda f=f_tg, a=a: tg.grad(f)(*a),
            "jit": lambda g=jitted, a=a: g(*a),
        }
    return out


def check(name, system, ours, ref):
    la, lb = tg.tracer.flatten(ours)[0], tg.tracer.flatten(ref)[0]
    if len(la) != len(lb) or not all(
            np.shape(u) == np.shape(v) and np.allclose(u, v, rtol=1e-9, atol=1e-12)
            for u, v in zip(la, lb)):
        raise SystemExit(f"{name}: {system} and autograd disagree")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a short run (noisier)")
    p.add_argument("--only", metavar="NAMES", help="comma-separated: " + ",".join(WORKLOADS))
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="wall: time.perf_counter (default); cpu: time.process_time")
    p.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    opts = p.parse_args(argv)
    if opts.clock == "cpu":
        timing._clock = time.process_time
    try:
        import autograd
    except ImportError:
        raise SystemExit("HIPS autograd is not installed (pip install autograd)") from None
    names = opts.only.split(",") if opts.only else list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise SystemExit(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    work = calls(autograd, names)
    budget, rounds = (0.6, (3, 9)) if opts.quick else (4.0, (9, 41))
    print(f"{'workload':12} {'autograd':>11} {'tg.grad':>11} {'jit':>11} {'grad/ag':>8} "
          f"{'jit/ag':>7}   (median per call; IQR % tg.grad, autograd; {opts.clock} clock)")
    rows = {}
    for name in names:
        systems = work[name]
        ref = systems["autograd"]()
        for system in ("tg.grad", "jit"):
            check(name, system, systems[system](), ref)
        res = timing.interleaved(systems, budget_s=budget, min_rounds=rounds[0],
                                 max_rounds=rounds[1], batch_s=0.01)
        a, t, j = res["autograd"], res["tg.grad"], res["jit"]
        rows[name] = {"autograd_s": a.median, "tg_grad_s": t.median, "jit_s": j.median,
                      "ratio": t.median / a.median, "jit_ratio": j.median / a.median,
                      "iqr_pct": [t.iqr_pct, a.iqr_pct]}
        print(f"{name:12} {_ms(a.median)} {_ms(t.median)} {_ms(j.median)} "
              f"{t.median / a.median:7.2f}x {j.median / a.median:6.2f}x   "
              f"({t.iqr_pct:.0f}%, {a.iqr_pct:.0f}%)", flush=True)
    ratios = [r["ratio"] for r in rows.values()]
    jits = [r["jit_ratio"] for r in rows.values()]
    print(f"{'median':12} {'':>11} {'':>11} {'':>11} {statistics.median(ratios):7.2f}x "
          f"{statistics.median(jits):6.2f}x")
    worst = max(rows, key=lambda k: rows[k]["ratio"])
    print(f"slowest tg.grad/autograd: {worst} {rows[worst]['ratio']:.2f}x")
    if opts.json:
        Path(opts.json).write_text(json.dumps({"clock": opts.clock, "rows": rows}, indent=1))
    return rows


def _ms(s):
    return f"{s * 1e3:8.3f} ms"


if __name__ == "__main__":
    main()
