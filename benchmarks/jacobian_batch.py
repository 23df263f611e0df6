"""Batched Jacobians and Hessians: tracegrad's batched run vs its row-by-row run vs JAX.

    python benchmarks/jacobian_batch.py            # full run, writes docs/benchmarks-jacobian.md
    python benchmarks/jacobian_batch.py --quick    # smoke run, prints only

Workloads: W4 (the full 100x100 Hessian of logsumexp(A @ x) + 0.5*||x||^2, A 200x100,
from benchmarks/workloads.py) and a 100 -> 100 Jacobian of tanh(W @ x) * x. Systems:
tg.hessian / tg.jacobian as they run now (all rows in one batched run of the adjoint
graph, or of the tangent graph with mode="fwd"), the row-by-row run they replaced (the
adjoint graph evaluated once per one-hot cotangent, the seed-independent part shared:
kept here as a private helper), both again under tg.jit (where row by row is
chunk_size=1), and jax.jit(jax.hessian / jax.jacrev / jax.jacfwd) in float64. Every
result is checked against JAX before it is timed. Threads are pinned to 1, as in run.py.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
from pathlib import Path

THREAD_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
}
os.environ.update(THREAD_ENV)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from timing import interleaved  # noqa: E402
from workloads import Hessian  # noqa: E402

import tracegrad as tg  # noqa: E402
from tracegrad.runtime.interpreter import run_each  # noqa: E402


# -- the previous approach: one adjoint run per row ------------------------------------------
def _row_by_row_jacobian(fun, *args):
    """d fun / d args[0], one adjoint-graph run per output element (run_each shares the
    part that does not depend on the cotangent), as tg.jacobian did before batching."""
    graph = tg.trace(fun, *args)
    (shape,) = [tuple(graph.node(o)["shape"]) for o in graph.outputs]
    adj = tg.passes.adjoint(graph)
    adj = tg.passes.prune(adj, adj.outputs[1:2])
    seeds = [row.reshape(shape) for row in np.eye(int(np.prod(shape)))]
    last = len(adj.inputs) - 1
    rows = run_each(adj, [list(args) + [seed] for seed in seeds], [last])
    return np.stack([r[0] for r in rows]).reshape(shape + np.shape(args[0]))


def _row_by_row_hessian(fun, *args):
    return _row_by_row_jacobian(tg.grad(fun), *args)


# -- workloads -----------------------------------------------------------------------------------
def hessian_case(rng):
    w = Hessian()
    x, A = w.data(rng)
    return {
        "title": "W4: Hessian of logsumexp(A @ x) + 0.5*||x||^2, A 200x100 (100x100 f64)",
        "args": (x, A), "np": w.fn(np), "jax_fn": w.fn, "kind": "hessian",
    }


def jacobian_case(rng):
    W = rng.standard_normal((100, 100)) / 10

    def make(xp):
        def f(x, W):
            return xp.tanh(W @ x) * x
        return f
    x = rng.standard_normal(100)
    return {"title": "J100: Jacobian of tanh(W @ x) * x, 100 -> 100 (f64)",
            "args": (x, W), "np": make(np), "jax_fn": make, "kind": "jacobian"}


def systems(case):
    import jax
    f, args = case["np"], case["args"]
    jf = case["jax_fn"](jax.numpy)
    jargs = [jax.device_put(a) for a in args]
    out = {}
    if case["kind"] == "hessian":
        out["tg.hessian (batched)"] = lambda: tg.hessian(f)(*args)
        out["tg.hessian, row by row (before)"] = lambda: _row_by_row_hessian(f, *args)
        jit_b, jit_r = tg.jit(tg.hessian(f)), tg.jit(tg.hessian(f, chunk_size=1))
        out["tg.jit(tg.hessian) (batched)"] = lambda: jit_b(*args)
        out["tg.jit(tg.hessian), chunk_size=1"] = lambda: jit_r(*args)
        jh = jax.jit(jax.hessian(jf))
        out["jax.jit(jax.hessian)"] = lambda: jh(*jargs).block_until_ready()
        reference = np.asarray(jax.hessian(jf)(*args))
    else:
        out["tg.jacobian (batched, rev)"] = lambda: tg.jacobian(f)(*args)
        out["tg.jacobian (batched, fwd)"] = lambda: tg.jacobian(f, mode="fwd")(*args)
        out["tg.jacobian, row by row (before)"] = lambda: _row_by_row_jacobian(f, *args)
        jit_b, jit_r = tg.jit(tg.jacobian(f)), tg.jit(tg.jacobian(f, chunk_size=1))
        out["tg.jit(tg.jacobian) (batched)"] = lambda: jit_b(*args)
        out["tg.jit(tg.jacobian), chunk_size=1"] = lambda: jit_r(*args)
        jr, jfw = jax.jit(jax.jacrev(jf)), jax.jit(jax.jacfwd(jf))
        out["jax.jit(jax.jacrev)"] = lambda: jr(*jargs).block_until_ready()
        out["jax.jit(jax.jacfwd)"] = lambda: jfw(*jargs).block_until_ready()
        reference = np.asarray(jax.jacrev(jf)(*args))
    for name, call in out.items():
        got = np.asarray(call())
        scale = np.abs(reference).max()
        if got.shape != reference.shape or not np.allclose(got, reference, rtol=1e-9,
                                                          atol=1e-12 * scale):
            raise SystemExit(f"{name} disagrees with JAX on {case['title']}")
    return out


def table(case, results, baseline):
    lines = [f"### {case['title']}", "",
             "| system | median | IQR | vs row by row | vs JAX |", "|---|---:|---:|---:|---:|"]
    jax_name = next(k for k in results if k.startswith("jax."))
    for name, s in results.items():
        lines.append(f"| {name} | {s.median * 1e3:.3f} ms | {s.iqr_pct:.0f}% | "
                     f"{s.median / results[baseline].median:.3f}x | "
                     f"{s.median / results[jax_name].median:.2f}x |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short run, print only")
    parser.add_argument("--no-write-docs", action="store_true")
    opts = parser.parse_args()
    import jax
    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)
    budget = 1.0 if opts.quick else 8.0
    sections = []
    for case in (hessian_case(rng), jacobian_case(rng)):
        calls = systems(case)
        results = interleaved(calls, budget_s=budget, min_rounds=5 if opts.quick else 20,
                              max_rounds=200, batch_s=0.01)
        baseline = next(k for k in results if "row by row" in k)
        text = table(case, results, baseline)
        print(text + "\n", flush=True)
        sections.append(text)
    if not opts.quick and not opts.no_write_docs:
        import importlib.metadata as md
        versions = ", ".join(f"{p} {md.version(p)}" for p in ("numpy", "jax"))
        doc = "\n".join([
            "# Batched Jacobians: benchmark", "",
            "Generated by `python benchmarks/jacobian_batch.py` on "
            f"{datetime.date.today().isoformat()} ({platform.machine()}, Python "
            f"{platform.python_version()}, {versions}); every thread pool pinned to one "
            "thread. Medians over interleaved rounds (see benchmarks/README.md, Method); "
            "every result checked against JAX first.", "",
            "- *row by row (before)*: the previous `tg.jacobian`: the adjoint graph run once per "
            "one-hot cotangent, the cotangent-independent part shared.",
            "- *batched*: `tg.passes.batch` adds a leading axis to the seed, so one run of the "
            "batched adjoint (or, with `mode=\"fwd\"`, tangent) graph gives every row.",
            "- *tg.jit(...), chunk_size=1*: one batched graph per row, unrolled into the "
            "compiled graph: what `tg.jit` of the previous `tg.jacobian` compiled.",
            "- eager `tg.hessian` / `tg.jacobian` include tracing and the passes on every call; "
            "`tg.jit` caches them.", "",
            *[s + "\n" for s in sections]])
        path = ROOT / "docs" / "benchmarks-jacobian.md"
        path.write_text(doc)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
