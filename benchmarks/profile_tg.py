"""Where tracegrad's NumPy backend spends its time on a benchmark workload.

    python benchmarks/profile_tg.py W2             # per-statement profile of the generated code
    python benchmarks/profile_tg.py W4 --source    # ... and print the generated source
    python benchmarks/profile_tg.py W5 --compile   # cProfile of the first call (trace + compile)
    python benchmarks/profile_tg.py W5 --reps 10000 --compile
    python benchmarks/profile_tg.py W5 --phases 1000 10000   # trace / optimise / codegen times

The per-statement profile re-executes the generated function with a clock read
after every statement (so each statement's time includes ~50 ns of clock
overhead) and sums the time by statement and by the callable it starts with.
"""
from __future__ import annotations

import argparse
import ast
import collections
import cProfile
import io
import os
import pstats
import re
import sys
import time
from pathlib import Path

os.environ.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import numpy as np  # noqa: E402
import workloads as W  # noqa: E402

import tracegrad as tg  # noqa: E402


def workload(key, reps):
    table = {wl.key: wl for wl in W.MAIN}
    return W.Chain(reps) if key == "W5" else table[key]


def jitted_for(wl):
    f = wl.fn(np)
    nums = wl.argnums[0] if len(wl.argnums) == 1 else wl.argnums
    d = tg.hessian(f, argnums=nums) if wl.kind == "hessian" else tg.grad(f, argnums=nums)
    return tg.jit(d)


def generated_function(jitted, data):
    """The generated Python function behind ``jitted`` (tracegrad internals: may move)."""
    jitted(*data)
    for entries in jitted._cache.values():
        for entry in entries:
            fn = getattr(entry.compiled, "fn", None)
            if fn is not None:
                return fn
    raise RuntimeError("no generated function found in the jit cache")


def statement_profile(fn, source, data, runs):
    """Seconds per call spent in each statement of the generated function."""
    tree = ast.parse(source)
    fdef = tree.body[0]
    body = []
    for stmt in fdef.body:
        body.append(stmt)
        if not isinstance(stmt, (ast.Return, ast.Delete)):
            body.append(ast.parse(f"_T_.append(({stmt.lineno}, _pc_()))").body[0])
    fdef.body = [ast.parse("_T_.append((0, _pc_()))").body[0]] + body
    fdef.name = "_instrumented"
    ast.fix_missing_locations(tree)
    g = dict(fn.__globals__)
    marks: list = []
    g["_T_"], g["_pc_"] = marks, time.perf_counter
    exec(compile(tree, "<instrumented>", "exec"), g)  # noqa: S102 - tracegrad's own source
    inst = g["_instrumented"]
    per_line: collections.Counter = collections.Counter()
    for _ in range(runs):
        marks.clear()
        inst(*data)
        for (_, t0), (line, t1) in zip(marks, marks[1:]):
            per_line[line] += (t1 - t0) / runs
    return per_line


def callable_of(line):
    code = line.split("#")[0].strip()
    rhs = code.split("=", 1)[1].strip() if "=" in code else code
    m = re.match(r"[vx]\d+\.(\w+)\(", rhs)
    if m:
        return f".{m.group(1)}()"
    m = re.match(r"([A-Za-z_][\w.]*)\(", rhs)
    if m:
        return m.group(1) + "()"
    m = re.search(r"\s(@|\*\*|\*|/|\+|-|==|>|<)\s", rhs)
    if m:
        return f"operator {m.group(1)}"
    if rhs.startswith("-"):
        return "operator unary -"
    if "[" in rhs:
        return "subscript"
    return rhs[:30]


def phases(reps_list, repeats=2):
    """Seconds in tracing (with the adjoint pass), optimise and codegen (tracegrad internals)."""
    import gc

    from tracegrad.runtime.codegen import generate
    from tracegrad.transforms.jit import optimize

    def once(reps):
        wl = W.Chain(reps)
        data = wl.data(np.random.default_rng(0))
        jitted = jitted_for(wl)
        gc_was = gc.isenabled()
        gc.disable()  # as tg.jit does while specialising
        try:
            t0 = time.perf_counter()
            graph, _ = jitted._trace(data, {})
            t1 = time.perf_counter()
            graph = optimize(graph)
            t2 = time.perf_counter()
            generate(graph, name="chain")
            t3 = time.perf_counter()
        finally:
            if gc_was:
                gc.enable()
        return t1 - t0, t2 - t1, t3 - t2

    once(5)
    print(f"{'reps':>7} {'trace+adjoint':>14} {'optimise':>9} {'codegen':>8} {'total':>7}   "
          f"(best of {repeats}, seconds)")
    for reps in reps_list:
        best = min((once(reps) for _ in range(repeats)), key=sum)
        print(f"{reps:7d} {best[0]:14.2f} {best[1]:9.2f} {best[2]:8.2f} {sum(best):7.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workload", choices=["W1", "W2", "W3", "W4", "W5"])
    p.add_argument("--reps", type=int, default=1000, help="W5 chain length")
    p.add_argument("--runs", type=int, default=50, help="calls averaged by the statement profile")
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--source", action="store_true", help="print the generated source")
    p.add_argument("--compile", action="store_true", help="cProfile the first (compiling) call")
    p.add_argument("--phases", type=int, nargs="+", metavar="REPS",
                   help="W5 only: time trace / optimise / codegen at these chain lengths")
    a = p.parse_args()
    if a.phases:
        return phases(a.phases)

    wl = workload(a.workload, a.reps)
    data = wl.data(np.random.default_rng(0))
    if a.compile:
        jitted_for(W.Chain(5))(*W.Chain(5).data(np.random.default_rng(1)))  # warm imports
        jitted = jitted_for(wl)
        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.runcall(jitted, *data)
        print(f"first call under cProfile: {time.perf_counter() - t0:.2f} s "
              f"(profiling overhead included)\n")
        for key in ("cumulative", "tottime"):
            s = io.StringIO()
            pstats.Stats(prof, stream=s).sort_stats(key).print_stats(a.top)
            print(s.getvalue())
        return

    jitted = jitted_for(wl)
    fn = generated_function(jitted, data)
    source = jitted.lower(*data).as_text()
    lines = source.splitlines()
    if a.source:
        print(source)
    n_stmts = sum(1 for ln in lines[1:] if "=" in ln.split("#")[0])
    t = []
    for _ in range(a.runs):
        t0 = time.perf_counter()
        jitted(*data)
        t.append(time.perf_counter() - t0)
    th = []
    for _ in range(a.runs):
        t0 = time.perf_counter()
        wl.hand(*data)
        th.append(time.perf_counter() - t0)
    print(f"{wl.label}: {n_stmts} statements; median call {np.median(t) * 1e3:.3f} ms, "
          f"hand-written {np.median(th) * 1e3:.3f} ms")
    per_line = statement_profile(fn, source, data, a.runs)
    total = sum(per_line.values())
    print(f"\nper-statement profile (sum {total * 1e6:.1f} µs per call, clock reads included)")
    print(f"{'µs':>8} {'%':>5}  statement")
    for line, sec in per_line.most_common(a.top):
        print(f"{sec * 1e6:8.1f} {100 * sec / total:5.1f}  {lines[line - 1].strip()[:110]}")
    by_callable: collections.Counter = collections.Counter()
    count: collections.Counter = collections.Counter()
    for line, sec in per_line.items():
        k = callable_of(lines[line - 1])
        by_callable[k] += sec
        count[k] += 1
    print(f"\nby callable\n{'µs':>8} {'%':>5} {'stmts':>6}  callable")
    for k, sec in by_callable.most_common(a.top):
        print(f"{sec * 1e6:8.1f} {100 * sec / total:5.1f} {count[k]:6d}  {k}")


if __name__ == "__main__":
    main()
