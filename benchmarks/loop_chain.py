"""W5 written with tg.fori_loop: trace + compile time stays flat in the trip count,
gradient time grows linearly.

    python benchmarks/loop_chain.py            # 10^3, 10^4, 10^5 steps; writes docs/benchmarks-loops.md
    python benchmarks/loop_chain.py --quick    # 10^2, 10^3, 10^4, prints only

The chain: ``x = sin(x) * 1.0001 + 0.001`` repeated ``n`` times on 100 float64 values,
loss ``sum(x)``. For each n: the compile time of ``tg.jit(tg.grad(loss))`` (trace, adjoint,
optimise, generate code: ``.lower``) and the median of later calls, for the fori_loop
version and (up to 10^4 steps, where it stays practical) the unrolled Python loop; the
gradient is checked against the hand-written one (W5's).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

import numpy as np  # noqa: E402
from workloads import Chain  # noqa: E402  (W5: the unrolled chain and its hand-written gradient)

import tracegrad as tg  # noqa: E402


def looped(n):
    def loss(x):
        return np.sum(tg.fori_loop(0, n, lambda i, v: np.sin(v) * 1.0001 + 0.001, x))
    return loss


def timed(make, x, repeats=3):
    """(trace + compile seconds, median run seconds, result) of ``tg.jit(make())``."""
    f = make()
    t0 = time.perf_counter()
    f.lower(x)                       # trace, adjoint, optimise, generate code; no run
    first = time.perf_counter() - t0
    out = f(x)
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        f(x)
        runs.append(time.perf_counter() - t0)
    return first, float(np.median(runs)), out, f


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    sizes = (100, 1000, 10_000) if args.quick else (1000, 10_000, 100_000)
    x = np.random.default_rng(0).uniform(-1.0, 1.0, 100)
    lines = ["W5 chain (`x = sin(x) * 1.0001 + 0.001`, 100 float64) under `tg.jit(tg.grad(loss))`; "
             "compile = trace + adjoint + optimise + code generation (`.lower`), gradient = the "
             "median later call.", "",
             "| steps | fori_loop: compile s | fori_loop: gradient s | graph nodes | "
             "unrolled: compile s | unrolled: gradient s | hand-written s |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for n in sizes:
        ref_t0 = time.perf_counter()
        ref = Chain(n).hand(x)
        hand_s = time.perf_counter() - ref_t0
        first, run, out, fl = timed(lambda: tg.jit(tg.grad(looped(n))), x)
        np.testing.assert_allclose(out, ref, rtol=1e-10)
        nodes = len(fl.lower(x).graph)
        if n <= 10_000:
            ufirst, urun, uout, _ = timed(lambda: tg.jit(tg.grad(Chain(n).fn(np))), x, repeats=1)
            np.testing.assert_allclose(uout, ref, rtol=1e-10)
            unrolled_cells = f"{ufirst:.3f} | {urun:.3f}"
        else:
            unrolled_cells = "(not run) | (not run)"
        lines.append(f"| {n:,} | {first:.3f} | {run:.3f} | {nodes} | {unrolled_cells} | "
                     f"{hand_s:.3f} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        out = ROOT / "docs" / "benchmarks-loops.md"
        out.write_text("# Loops: compile time against trip count\n\nReproduce with "
                       "`python benchmarks/loop_chain.py`.\n\n" + text)
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
