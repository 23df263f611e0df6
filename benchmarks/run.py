"""tracegrad benchmarks: medians and ratios of gradient run times, side by side.

    python benchmarks/run.py            # full run (5-10 minutes), writes docs/benchmarks.md
    python benchmarks/run.py --quick    # a smoke run (under 2 minutes), prints only

Systems: hand-written NumPy gradients (the reference), tg.jit(tg.grad) on the
NumPy and the JAX backend, HIPS autograd, jax.jit(jax.grad) and PyTorch eager
(each skipped when not installed). Run times are timed in this process with the
systems' repetitions interleaved; W5's trace + compile times come from one fresh
subprocess per compiling system and chain length.
Every result is checked against the hand-written derivative before it is
timed, and the hand-written derivatives against jax.grad / jax.hessian.
See benchmarks/README.md.
"""
from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Pin every thread pool to one thread before NumPy, JAX or PyTorch are imported.
THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
}
os.environ.update(THREAD_ENV)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# benchmark the tracegrad of this working tree, whatever is installed
sys.path[:0] = [str(HERE), str(ROOT)]

import numpy as np  # noqa: E402
import systems as S  # noqa: E402
import timing  # noqa: E402
import workloads as W  # noqa: E402


@dataclass
class Config:
    quick: bool
    main_budget_s: float      # timing budget per workload (all systems together)
    min_rounds: int
    max_rounds: int
    chain_sizes: tuple        # W5 lengths
    child_budget_s: float     # steady-state timing budget of one W5 subprocess
    child_timeout_s: float    # one W5 subprocess
    xla_timeout_s: float      # one W5 subprocess compiling the longer chain with XLA

    @classmethod
    def make(cls, quick, timeout=None, xla_timeout=None):
        if quick:
            return cls(True, 1.2, 5, 400, (100, 1000), 0.6, timeout or 60.0, xla_timeout or 30.0)
        return cls(False, 10.0, 40, 2000, (1000, 10000), 1.5, timeout or 150.0,
                   xla_timeout or 60.0)

    def first_repeats(self, system, small):
        """How many fresh functions' first calls a W5 subprocess measures (median)."""
        if self.quick or system not in S.COMPILED:
            return 1
        if system == "tg-numpy":
            return 5 if small else 3
        return 3 if small else 1

    def timeout(self, system, small):
        return self.xla_timeout_s if system in ("jax", "tg-jax") and not small else self.child_timeout_s


@dataclass
class Row:
    system: str
    status: str = "ok"            # "ok", or why there is no time
    median: float | None = None   # seconds per call
    iqr_pct: float | None = None
    rounds: int = 0
    batch: int = 0
    first: float | None = None    # seconds, first call (includes trace + compile)
    compile: float | None = None  # first call minus steady-state call
    timeout_s: float | None = None  # the subprocess ran past this many seconds

    @property
    def ok(self):
        return self.status == "ok" and self.median is not None


@dataclass
class Result:
    key: str
    label: str
    desc: str
    kind: str = "grad"
    rows: dict = field(default_factory=dict)


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def error_status(e):
    first_line = (str(e).splitlines() or [""])[0]
    return f"error: {type(e).__name__}: {first_line[:120]}"


# -- run times: interleaved in this process -------------------------------------------------
def bench_interleaved(wl, cfg, systems=S.SYSTEMS, check=True, budget_s=None, min_rounds=None):
    log(f"[{wl.label}] {wl.desc}")
    data = wl.data(np.random.default_rng(0))
    ref = wl.hand(*data)
    if check:
        check_reference(wl, data, ref)
    res = Result(wl.key, wl.label, wl.desc, wl.kind)
    calls = {}
    for s in systems:
        row = res.rows[s] = Row(s)
        try:
            call = S.build(s, wl, data)
            row.first, out = timing.first_call(call)
        except S.Unavailable:
            row.status = "not installed"
            continue
        except Exception as e:  # a failure is a row of the table, not the end of the run
            row.status = error_status(e)
            continue
        bad = S.mismatch(out, ref, wl.dtype)
        if bad:
            row.status = f"WRONG: {bad}"
            continue
        calls[s] = call
    stats = timing.interleaved(calls, budget_s=budget_s or cfg.main_budget_s,
                               min_rounds=min_rounds or cfg.min_rounds,
                               max_rounds=cfg.max_rounds, batch_s=0.002)
    for s, st in stats.items():
        row = res.rows[s]
        row.median, row.iqr_pct, row.rounds, row.batch = st.median, st.iqr_pct, st.rounds, st.batch
        if s in S.COMPILED:
            row.compile = row.first - row.median
        log(f"  {s:9s} {fmt_time(st.median):>9s}  (IQR {st.iqr_pct:.0f}%, "
            f"{st.rounds} rounds x {st.batch})")
    for s, row in res.rows.items():
        if not row.ok:
            log(f"  {s:9s} {row.status}")
    return res, calls


def check_reference(wl, data, ref):
    """The hand-written derivative must agree with jax.grad / jax.hessian (float64)."""
    if not S.available("jax"):
        log("  (jax not installed: hand-written derivative not cross-checked)")
        return
    bad = S.mismatch(ref, S.jax_reference(wl, data), wl.dtype)
    assert bad is None, f"{wl.label}: hand-written derivative disagrees with JAX: {bad}"


def peak_memory(calls, systems=("hand", "tg-numpy", "autograd")):
    """Peak bytes NumPy allocates during one call, beyond what was live before it."""
    import gc
    import tracemalloc
    out = {}
    tracemalloc.start()
    try:
        for s in systems:
            if s not in calls:
                continue
            peaks = []
            for _ in range(2):
                gc.collect()
                tracemalloc.reset_peak()
                base = tracemalloc.get_traced_memory()[0]
                result = calls[s]()
                peaks.append(tracemalloc.get_traced_memory()[1] - base)
                del result
            out[s] = min(peaks)
    finally:
        tracemalloc.stop()
    return out


# -- W5: one subprocess per system and size ----------------------------------------------------
def chain_child(system, reps, budget_s, repeats, min_rounds):
    """Runs in the subprocess: prints one JSON line with the row for (system, reps)."""
    wl = W.Chain(reps)
    data = wl.data(np.random.default_rng(0))
    ref = wl.hand(*data)
    row = Row(system)
    try:
        warm = W.Chain(5)  # load the libraries and start JAX's backend before timing
        S.build(system, warm, warm.data(np.random.default_rng(1)))()
        firsts = []
        for _ in range(repeats):
            if system in ("jax", "tg-jax"):
                import jax
                jax.clear_caches()
            call = S.build(system, wl, data)  # a fresh function each time: traced anew
            t, out = timing.first_call(call)
            firsts.append(t)
    except S.Unavailable:
        row.status = "not installed"
    except Exception as e:
        row.status = error_status(e)
    else:
        bad = S.mismatch(out, ref, wl.dtype)
        if bad:
            row.status = f"WRONG: {bad}"
        else:
            st = timing.interleaved({system: call}, budget_s=budget_s, min_rounds=min_rounds,
                                    max_rounds=1000, batch_s=0.002)[system]
            row.median, row.iqr_pct, row.rounds, row.batch = (st.median, st.iqr_pct, st.rounds,
                                                              st.batch)
            row.first = float(np.median(firsts))
            if system in S.COMPILED:
                row.compile = row.first - row.median
    print(json.dumps(asdict(row)))


def bench_chain(reps, cfg, small):
    """W5 at one length: trace + compile time from one fresh subprocess per compiling system,
    run time interleaved in this process (as W1-W4)."""
    wl = W.Chain(reps)
    log(f"[{wl.label}] first calls, one subprocess per system")
    child = {s: chain_subprocess(s, reps, cfg, small) for s in S.COMPILED}
    in_process = [s for s in S.SYSTEMS if s not in S.COMPILED or child[s].ok]
    res, _ = bench_interleaved(wl, cfg, systems=in_process, check=small,
                               budget_s=cfg.main_budget_s * (1 if small else 1.5),
                               min_rounds=None if small else 5)
    res.desc = f"x = sin(x)*1.0001 + 0.001, {reps:,} times, 100 f64"
    for s in S.COMPILED:
        if s in in_process:
            res.rows[s].first, res.rows[s].compile = child[s].first, child[s].compile
        else:
            res.rows[s] = child[s]
    return res


def chain_subprocess(system, reps, cfg, small):
    repeats = cfg.first_repeats(system, small)
    timeout = cfg.timeout(system, small)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--chain-child", system, str(reps),
           "--child-budget", str(cfg.child_budget_s), "--repeats", str(repeats),
           "--min-rounds", "3"]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        lines = p.stdout.strip().splitlines()
        if p.returncode != 0 or not lines:
            err = (p.stderr.strip().splitlines() or ["no output"])[-1]
            row = Row(system, status=f"error: subprocess failed: {err[:120]}")
        else:
            row = Row(**json.loads(lines[-1]))
    except subprocess.TimeoutExpired:
        row = Row(system, status=f"timeout: no result within {timeout:.0f} s", timeout_s=timeout)
    if row.ok:
        log(f"  {system:9s} first call {row.first:.2f} s (median of {repeats}), steady "
            f"{fmt_time(row.median)}; subprocess {time.perf_counter() - t0:.0f} s")
    else:
        log(f"  {system:9s} {row.status}")
    return row


# -- reporting ---------------------------------------------------------------------------
def fmt_time(t):
    if t is None:
        return "-"
    unit, scale = next(((u, f) for u, f in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)) if t >= f),
                       ("ns", 1e-9))
    v = t / scale
    return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"


def ratio(a, b):
    if a is None or b is None or not b:
        return None
    return a / b


def fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}×"


def target(key, row, hand, jax):
    """(text, met) for the issue's target on this row, or None where there is none."""
    if not row.ok:
        return None
    if row.system == "tg-numpy":
        if key == "W1":
            limit, ref, name = 1.0, jax, "JAX"
        else:
            limit, ref, name = (2.0 if key == "W4" else 1.0), hand, "hand"
    elif row.system == "tg-jax":
        limit, ref, name = 1.1, jax, "JAX"
    else:
        return None
    r = ratio(row.median, ref.median if ref is not None and ref.ok else None)
    if r is None:
        return None
    met = r <= limit
    over = r / limit
    text = f"≤ {limit:.1f}× {name}: " + ("met" if met else f"**missed** ({over:.2f}× over"
                                                   + (", borderline)" if over < 1.05 else ")"))
    return text, met


def main_table(results):
    lines = ["| workload | system | median | IQR | vs hand | vs JAX | first call | target |",
             "|---|---|--:|--:|--:|--:|--:|---|"]
    misses = []
    for res in results:
        hand, jax = res.rows.get("hand"), res.rows.get("jax")
        for s in S.SYSTEMS:
            row = res.rows.get(s)
            if row is None:
                continue
            name = S.title(s, res.kind)
            if not row.ok:
                lines.append(f"| {res.label} | {name} | {row.status} | | | | | |")
                continue
            r_hand = ratio(row.median, hand.median if hand and hand.ok else None)
            r_jax = ratio(row.median, jax.median if jax and jax.ok else None)
            first = f"{row.first:.3g} s" if row.first is not None and s in S.COMPILED else ""
            t = target(res.key, row, hand, jax)
            if t and not t[1]:
                misses.append(f"{res.label}, {name}: {t[0]}")
            lines.append(f"| {res.label} | {name} | {fmt_time(row.median)} | {row.iqr_pct:.0f}% | "
                         f"{fmt_ratio(r_hand)} | {fmt_ratio(r_jax)} | {first} | "
                         f"{t[0] if t else ''} |")
    return lines, misses


def compile_table(chains, sizes):
    """W5: trace + compile time (first call minus a steady-state call) and its growth."""
    lines = ["| system | " + " | ".join(f"trace+compile, {n:,} | vs JAX's first call, {n:,}"
                                        for n in sizes)
             + f" | growth ({sizes[1] // sizes[0]}× the ops) |",
             "|---|--:|--:|--:|--:|--:|"]
    misses = []
    compile_s = {}
    for s in S.COMPILED:
        cells = []
        for res in chains:
            row, jax = res.rows.get(s), res.rows.get("jax")
            c = row.compile if row is not None and row.ok else None
            compile_s[s, res.label] = c
            if c is None:
                cells += [row.status if row is not None else "-", ""]
                continue
            if jax is not None and jax.ok:
                r = c / jax.first
                vs = f"{r:.2f}×"
            elif jax is not None and jax.timeout_s:
                r = c / jax.timeout_s
                vs = f"< {r:.2f}× (JAX: no result in {jax.timeout_s:.0f} s)"
            else:
                r, vs = None, "-"
            if s == "tg-numpy" and r is not None:
                met = r <= 0.25
                vs += f", target ≤ 0.25: {'met' if met else '**missed**'}"
                if not met:
                    misses.append(f"{res.label} trace+compile, numpy backend: {r:.2f}× JAX's "
                                  f"first call (target ≤ 0.25×)")
            cells += [fmt_time(c), vs]
        grow = ratio(compile_s[s, chains[1].label], compile_s[s, chains[0].label])
        cell = "-" if grow is None else f"{grow:.1f}×"
        if s == "tg-numpy" and grow is not None:
            met = grow <= 12
            cell += f" (target ≤ 12: {'met' if met else '**missed**'})"
            if not met:
                misses.append(f"W5 trace+compile growth, numpy backend: {grow:.1f}× for "
                              f"{sizes[1] // sizes[0]}× the ops (target ≤ 12×)")
        lines.append(f"| {S.TITLES[s]} | {' | '.join(cells)} | {cell} |")
    return lines, misses


def memory_table(mem):
    lines = ["| system | peak NumPy memory during one gradient call | vs hand |", "|---|--:|--:|"]
    hand = mem.get("hand")
    for s, b in mem.items():
        lines.append(f"| {S.TITLES[s]} | {b / 2**20:.1f} MiB | {fmt_ratio(ratio(b, hand))} |")
    return lines


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    versions = [f"Python {platform.python_version()}", f"NumPy {np.__version__}"]
    for mod in ("jax", "autograd", "torch"):
        try:
            versions.append(f"{mod} {importlib.metadata.version(mod)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{mod} not installed")
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "tracegrad"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        commit = f"tracegrad at {commit}" + (" (with uncommitted changes)" if dirty else "")
    except OSError:
        commit = "tracegrad (no git)"
    return (f"{cpu}, {os.cpu_count()} cores{mem}; {platform.system()} {platform.release()}",
            "; ".join(versions), commit)


def report(results, chains, compile_lines, mem, conv, meta):
    table, misses = main_table(results + list(chains))
    out = ["| | |", "|---|---|",
           f"| date | {meta['date']} |",
           f"| machine | {meta['machine'][0]} |",
           f"| software | {meta['machine'][1]}; {meta['machine'][2]} |",
           f"| command | `{meta['command']}` |",
           f"| threads | {', '.join(f'{k}={v}' for k, v in THREAD_ENV.items())} (set by the script "
           f"before any import); torch.set_num_threads(1) |",
           f"| load average | {meta['load_before']} before, {meta['load_after']} after "
           f"(1/5/15 min) |",
           f"| wall time | {meta['wall']:.0f} s |",
           "",
           "### Run time per derivative call (median)", ""]
    out += table
    out += ["", f"W6 conv: {conv}", ""]
    if compile_lines:
        lines, m = compile_lines
        misses += m
        out += ["### W5: trace + compile time (first call minus a steady-state call)", ""] + lines
        out += [""]
    if mem:
        out += ["### W2: peak memory (tracemalloc)", ""] + memory_table(mem) + [""]
    out += ["### Targets missed", ""]
    out += [f"- {m}" for m in misses] or ["- none"]
    return "\n".join(out) + "\n", misses


DOC_HEAD = """# Benchmarks

Generated by `benchmarks/run.py` (see `benchmarks/README.md` for what is measured and how).
Run times are medians over interleaved rounds (all systems in one process, one batch per
system per round in rotating order); W5's trace + compile times come from one fresh
subprocess per compiling system and chain length (first call minus a steady call).
"vs hand" and "vs JAX" divide by the hand-written NumPy gradient's and `jax.jit(jax.grad)`'s
(`jax.jit(jax.hessian)` for W4) medians; "first call" is the first call of a freshly
jitted function (trace + optimise + compile + one run). Every system's result was checked
against the hand-written derivative (allclose) before it was timed, and the hand-written
derivatives against `jax.grad` / `jax.hessian` in float64.

"""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="few repetitions, W5 at 100 and 1,000")
    p.add_argument("--write-docs", action=argparse.BooleanOptionalAction, default=None,
                   help="write docs/benchmarks.md (default: on for a full run, off for --quick)")
    p.add_argument("--json", metavar="PATH", help="also write the raw results as JSON")
    p.add_argument("--only", metavar="KEYS", help="comma-separated workloads, e.g. W1,W5")
    p.add_argument("--child-timeout", type=float,
                   help="seconds one W5 subprocess may take (default 150)")
    p.add_argument("--xla-timeout", type=float,
                   help="seconds a W5 subprocess compiling the longer chain with XLA may take "
                        "(default 60; JAX's compile time grows faster than linearly)")
    p.add_argument("--chain-child", nargs=2, metavar=("SYSTEM", "REPS"), help=argparse.SUPPRESS)
    p.add_argument("--child-budget", type=float, default=2.0, help=argparse.SUPPRESS)
    p.add_argument("--repeats", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--min-rounds", type=int, default=5, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.chain_child:
        return chain_child(a.chain_child[0], int(a.chain_child[1]), a.child_budget, a.repeats,
                           a.min_rounds)

    cfg = Config.make(a.quick, a.child_timeout, a.xla_timeout)
    only = {k.strip().upper() for k in a.only.split(",")} if a.only else None
    write_docs = (not a.quick and only is None) if a.write_docs is None else a.write_docs
    t_start = time.perf_counter()
    load_before = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    if S.available("jax"):
        import jax
        jax.config.update("jax_enable_x64", True)

    results, mem = [], {}
    for wl in W.MAIN:
        if only and wl.key not in only:
            continue
        res, calls = bench_interleaved(wl, cfg)
        results.append(res)
        if wl.key == "W2":
            mem = peak_memory(calls)
        del calls

    chains, compile_lines = (), None
    if not only or "W5" in only:
        chains = tuple(bench_chain(n, cfg, small=i == 0) for i, n in enumerate(cfg.chain_sizes))
        compile_lines = compile_table(chains, cfg.chain_sizes)

    conv = W.conv_primitive()
    conv = (f"tracegrad has a `{conv}` primitive, but this script does not time it yet" if conv
            else "skipped: needs conv2d (eager issue)")
    meta = {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "machine": machine(),
        "command": shlex.join(["python", *sys.argv]),
        "load_before": load_before,
        "load_after": " / ".join(f"{v:.1f}" for v in os.getloadavg()),
        "wall": time.perf_counter() - t_start,
    }
    text, misses = report(results, chains, compile_lines, mem, conv, meta)
    print()
    print(text)
    if write_docs:
        path = ROOT / "docs" / "benchmarks.md"
        path.parent.mkdir(exist_ok=True)
        path.write_text(DOC_HEAD + text)
        log(f"wrote {path.relative_to(ROOT)}")
    if a.json:
        raw = {"meta": meta, "results": [asdict(r) for r in results + list(chains)],
               "memory_bytes": mem}
        Path(a.json).write_text(json.dumps(raw, indent=1, default=str))
    wrong = [f"{r.label} {s}" for r in results + list(chains) for s, row in r.rows.items()
             if row.status.startswith(("WRONG", "error"))]
    if wrong:
        log("FAILED (wrong or erroring systems): " + ", ".join(wrong))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
