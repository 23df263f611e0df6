"""A complex-valued workload: the gradient of a weighted power-spectrum loss.

    python benchmarks/spectral_loss.py            # n = 4096 and n = 64
    python benchmarks/spectral_loss.py --quick    # a short run

``loss(x) = sum(w * |fft(x * window)|**2) + |sum(exp(1j * k * x))|**2 / n`` for real
``x``: an rfft-free spectrum (complex intermediates, real input and output) plus a
Fourier sum. Systems, side by side in one process and timed interleaved (medians):

- hand-written NumPy: the gradient derived by hand (``2 Re(fft(w conj(y))) * window``
  plus the Fourier sum's term), the baseline;
- tracegrad: ``tg.jit(tg.grad(loss))`` on the NumPy backend, and ``tg.grad`` without jit
  (tracing on every call, as HIPS autograd does);
- HIPS autograd: ``autograd.grad(loss)`` (traces per call), when installed;
- JAX: ``jax.jit(jax.grad(loss))`` in float64, when JAX is installed.

Every system's gradient is checked against the hand-written one before it is timed.
Threads are pinned to 1, as in run.py.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                   "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false "
                                "intra_op_parallelism_threads=1"})
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from timing import interleaved  # noqa: E402

import tracegrad as tg  # noqa: E402


def make(n, xp=np):
    rng = np.random.default_rng(0)
    w = rng.uniform(0.5, 1.5, n)
    window = np.hanning(n)
    k = np.arange(1.0, n + 1) / n

    def loss(x):
        y = xp.fft.fft(x * window)
        s = xp.sum(xp.exp(1j * k * x))
        return xp.sum(w * xp.abs(y) ** 2) + xp.abs(s) ** 2 / n

    def by_hand(x):
        y = np.fft.fft(x * window)
        s = np.sum(np.exp(1j * k * x))
        spectrum = 2.0 * np.real(np.fft.fft(w * np.conj(y))) * window
        fourier = 2.0 * np.real(np.conj(s) * 1j * k * np.exp(1j * k * x)) / n
        return spectrum + fourier

    return loss, by_hand, rng.standard_normal(n)


def systems(n):
    loss, by_hand, x = make(n)
    calls = {"hand-written NumPy": lambda: by_hand(x),
             "tg.jit(tg.grad)": (lambda g: lambda: g(x))(tg.jit(tg.grad(loss))),
             "tg.grad (traced per call)": (lambda g: lambda: g(x))(tg.grad(loss))}
    try:
        import autograd
        import autograd.numpy as anp
        ag = autograd.grad(make(n, anp)[0])
        calls["HIPS autograd.grad"] = lambda: ag(x)
    except ImportError:
        pass
    try:
        import jax
        jax.config.update("jax_enable_x64", True)
        jloss = make(n, jax.numpy)[0]
        jg = jax.jit(jax.grad(jloss))
        calls["jax.jit(jax.grad)"] = lambda: jg(x).block_until_ready()
    except ImportError:
        pass
    want = by_hand(x)
    for name, call in calls.items():
        got = np.asarray(call())
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max(),
                                   err_msg=name)
    return calls


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    budget = 0.5 if args.quick else 4.0
    print("| n | system | median per call | vs hand-written NumPy |")
    print("|---|---|---|---|")
    for n in (4096, 64):
        stats = interleaved(systems(n), budget_s=budget, min_rounds=5, max_rounds=400)
        base = stats["hand-written NumPy"].median
        for name, s in stats.items():
            print(f"| {n} | {name} | {s.median * 1e6:.1f} µs | {s.median / base:.2f}x |")


if __name__ == "__main__":
    main()
