"""Interleaved timing: every round times one batch of calls per system, in a
rotating order, so that load from other processes on the machine falls on all
systems alike. The reported figure is the median over rounds of the per-call
time of a batch.
"""
from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass

_clock = time.perf_counter


@dataclass
class Stats:
    median: float        # seconds per call
    q1: float
    q3: float
    minimum: float
    rounds: int
    batch: int           # calls per timed batch

    @property
    def iqr_pct(self):
        return 100.0 * (self.q3 - self.q1) / self.median if self.median else 0.0


def _batch(call, n):
    gc_was = gc.isenabled()
    gc.disable()
    try:
        t0 = _clock()
        for _ in range(n):
            call()
        return _clock() - t0
    finally:
        if gc_was:
            gc.enable()


def per_call(call, min_time=0.005):
    """A rough per-call time (after one warm-up call)."""
    call()
    n = 1
    while True:
        t = _batch(call, n)
        if t >= min_time or n >= 1 << 20:
            return t / n
        n = max(n * 2, int(n * min_time / max(t, 1e-9)) + 1)


def stats(samples, batch):
    samples = sorted(samples)
    if len(samples) >= 4:
        q1, _, q3 = statistics.quantiles(samples, n=4)
    else:
        q1, q3 = samples[0], samples[-1]
    return Stats(statistics.median(samples), q1, q3, samples[0], len(samples), batch)


def interleaved(calls, *, budget_s, min_rounds, max_rounds, batch_s=0.01):
    """Median per-call times of the ``calls`` (name -> zero-argument callable)."""
    if not calls:
        return {}
    names = list(calls)
    est = {k: per_call(calls[k]) for k in names}
    batch = {k: max(1, round(batch_s / est[k])) for k in names}
    round_s = sum(batch[k] * est[k] for k in names)
    rounds = int(min(max_rounds, max(min_rounds, budget_s / max(round_s, 1e-9))))
    samples = {k: [] for k in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            samples[k].append(_batch(calls[k], batch[k]) / batch[k])
    return {k: stats(samples[k], batch[k]) for k in names}


def first_call(call):
    """Seconds taken by one call (the first call of a jitted function: trace + compile + run)."""
    t0 = _clock()
    out = call()
    return _clock() - t0, out
