"""Peak memory of a gradient through a deep chain, with and without tg.checkpoint.

    python benchmarks/checkpoint_memory.py            # writes docs/benchmarks-checkpoint.md
    python benchmarks/checkpoint_memory.py --quick    # smaller, prints only

The chain: ``depth`` blocks ``x <- tanh(sin(x @ W) * x + 0.1 * (x @ W))`` on n x n float64
activations, loss ``sum(x * x)``, gradient with respect to the input. Peak memory is
NumPy's allocations as tracemalloc sees them during one gradient call (after a warm-up
call), for: the hand-written backward (storing what it needs per block), tg.grad on
the interpreter and under tg.jit (generated NumPy), each without and with every block
wrapped in tg.checkpoint. All results are checked against the hand-written gradient.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

os.environ.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import tracegrad as tg  # noqa: E402


def block(x, W):
    h = x @ W
    return np.tanh(np.sin(h) * x + 0.1 * h)


def chain(x, Ws, blk):
    for W in Ws:
        x = blk(x, W)
    return np.sum(x * x)


def hand_gradient(x, Ws):
    saved = []
    for W in Ws:
        h = x @ W
        out = np.tanh(np.sin(h) * x + 0.1 * h)
        saved.append((x, h, out))
        x = out
    g = 2 * x
    for W, (x_in, h, out) in zip(reversed(Ws), reversed(saved)):
        d = g * (1 - out * out)                    # through tanh
        dh = d * (np.cos(h) * x_in + 0.1)          # through sin(h) * x + 0.1 h, to h
        g = d * np.sin(h) + dh @ W.T               # to x: directly, and through h = x @ W
    return g


def measure(f, repeats=3):
    """(peak MiB above the start, median seconds, result) of ``f()``."""
    f()
    times, peaks = [], []
    for _ in range(repeats):
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
        peaks.append((tracemalloc.get_traced_memory()[1] - base) / 2**20)
        tracemalloc.stop()
    return max(peaks), float(np.median(times)), out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    n, depth = (128, 16) if args.quick else (256, 32)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, n))
    Ws = [rng.standard_normal((n, n)) / np.sqrt(n) for _ in range(depth)]
    ckpt = tg.checkpoint(block)
    systems = {
        "hand-written NumPy backward": lambda: hand_gradient(x, Ws),
        "tg.grad (interpreter)": lambda: tg.grad(lambda v: chain(v, Ws, block))(x),
        "tg.grad + tg.checkpoint (interpreter)": lambda: tg.grad(lambda v: chain(v, Ws, ckpt))(x),
    }
    jit_plain = tg.jit(tg.grad(lambda v: chain(v, Ws, block)))
    jit_ckpt = tg.jit(tg.grad(lambda v: chain(v, Ws, ckpt)))
    systems["tg.jit(tg.grad)"] = lambda: jit_plain(x)
    systems["tg.jit(tg.grad) + tg.checkpoint"] = lambda: jit_ckpt(x)
    ref = hand_gradient(x, Ws)
    act = n * n * 8 / 2**20
    lines = [f"Gradient of a {depth}-block chain on {n}x{n} float64 activations "
             f"({act:.2f} MiB each); peak = NumPy allocations during one call (tracemalloc).",
             "", "| system | peak MiB | in activations | median s |", "|---|---:|---:|---:|"]
    for name, f in systems.items():
        peak, secs, out = measure(f)
        np.testing.assert_allclose(out, ref, rtol=1e-9, atol=1e-12, err_msg=name)
        lines.append(f"| {name} | {peak:.1f} | {peak / act:.0f} | {secs:.3f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.quick:
        out = ROOT / "docs" / "benchmarks-checkpoint.md"
        out.write_text("# Checkpointing: peak memory\n\nReproduce with "
                       "`python benchmarks/checkpoint_memory.py`.\n\n" + text)
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
