"""Un-jitted ``tg.grad`` against HIPS autograd's ``grad``, per call, side by side.

    python benchmarks/vs_autograd.py            # about 30 s
    python benchmarks/vs_autograd.py --quick    # a few seconds
    python benchmarks/vs_autograd.py --only loss,mlp
    python benchmarks/vs_autograd.py --clock cpu   # process CPU time (a busy machine)

Three small workloads where the per-call cost of tracing and differentiating is
everything (see benchmarks/README.md, "Un-jitted tg.grad against autograd"):

- ``loss``: README's two-parameter loss ``sum((w * x + b - y) ** 2)``, w and b Python floats;
- ``loop``: a 300-step Python loop of three operations per step on 10 elements;
- ``mlp``: a 20-32-32-5 tanh MLP, mean squared error, batch 64, gradient with respect to
  every weight and bias.

Each call builds the transform afresh (``tg.grad(f)(...)``, ``autograd.grad(f)(...)``), as
code that differentiates inside a training step often does, so no per-function state
helps either system. Results are compared (``allclose``, rtol 1e-10) before anything is
timed; the timing is interleaved (``timing.interleaved``), on one thread.
"""
from __future__ import annotations

import argparse
import json
import os
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


def make(np):  # noqa: ANN001 - an array module: NumPy for tracegrad, autograd.numpy
    """The three functions, written once per array module."""
    x, y = np.array([1.0, 2.0]), np.array([5.0, 7.0])

    def loss(w, b):
        return np.sum((w * x + b - y) ** 2)

    def loop(x):
        for _ in range(300):
            x = np.sin(x) * 0.99 + 0.01
        return np.sum(x)

    def mlp(params, X, Y):
        h = X
        for W, b in params[:-1]:
            h = np.tanh(h @ W + b)
        W, b = params[-1]
        out = h @ W + b
        return np.mean((out - Y) ** 2)

    return {"loss": loss, "loop": loop, "mlp": mlp}


def data():
    rng = np.random.default_rng(0)
    sizes = [20, 32, 32, 5]
    params = [(rng.standard_normal((a, b)) * 0.3, np.zeros(b))
              for a, b in zip(sizes[:-1], sizes[1:])]
    X, Y = rng.standard_normal((64, 20)), rng.standard_normal((64, 5))
    return {"loss": (1.0, 0.0), "loop": (rng.standard_normal(10),), "mlp": (params, X, Y)}


def calls(autograd):
    """name -> (tracegrad call, autograd call), each returning the gradient."""
    import autograd.numpy as anp

    f_tg, f_ag, args = make(np), make(anp), data()
    w, b = args["loss"]
    xs, = args["loop"]
    params, X, Y = args["mlp"]
    return {
        "loss": (lambda: tg.grad(f_tg["loss"], argnums=(0, 1))(w, b),
                 lambda: autograd.grad(lambda wb: f_ag["loss"](*wb))((w, b))),
        "loop": (lambda: tg.grad(f_tg["loop"])(xs),
                 lambda: autograd.grad(f_ag["loop"])(xs)),
        "mlp": (lambda: tg.grad(f_tg["mlp"])(params, X, Y),
                lambda: autograd.grad(f_ag["mlp"])(params, X, Y)),
    }


def check(name, a, b):
    la, lb = tg.tracer.flatten(a)[0], tg.tracer.flatten(b)[0]
    if len(la) != len(lb) or not all(
            np.shape(u) == np.shape(v) and np.allclose(u, v, rtol=1e-10, atol=1e-12)
            for u, v in zip(la, lb)):
        raise SystemExit(f"{name}: tracegrad and autograd disagree")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a short run (noisier)")
    p.add_argument("--only", metavar="NAMES", help="comma-separated: loss,loop,mlp")
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
    work = calls(autograd)
    names = opts.only.split(",") if opts.only else list(work)
    budget, rounds = (1.0, (5, 15)) if opts.quick else (8.0, (15, 61))
    print(f"{'workload':10} {'tg.grad':>12} {'autograd':>12} {'ratio':>7}   (median per call, "
          f"IQR %; {opts.clock} clock)")
    ratios, rows = {}, {}
    for name in names:
        ours, theirs = work[name]
        check(name, ours(), theirs())
        res = timing.interleaved({"tg": ours, "autograd": theirs}, budget_s=budget,
                                 min_rounds=rounds[0], max_rounds=rounds[1], batch_s=0.01)
        t, a = res["tg"], res["autograd"]
        ratios[name] = t.median / a.median
        rows[name] = {"tracegrad_s": t.median, "autograd_s": a.median, "ratio": ratios[name],
                      "iqr_pct": [t.iqr_pct, a.iqr_pct]}
        print(f"{name:10} {t.median * 1e3:9.3f} ms {a.median * 1e3:9.3f} ms {ratios[name]:6.2f}x"
              f"   ({t.iqr_pct:.0f}%, {a.iqr_pct:.0f}%)")
    if opts.json:
        Path(opts.json).write_text(json.dumps({"clock": opts.clock, "rows": rows}, indent=1))
    return ratios


if __name__ == "__main__":
    main()
