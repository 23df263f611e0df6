"""torch.func on tracegrad's transforms vs torch.func itself, side by side in one process.

    python benchmarks/torch_func.py              # every workload, medians of CPU time
    python benchmarks/torch_func.py --stats      # also: nodes batched by rule / row by row
                                                 # (counted on a call after the first:
                                                 # {} where the batched graph is cached)

Workloads (float32, batch 64 unless said): per-sample gradients (``vmap(grad(loss),
in_dims=(None, 0, 0))`` with ``functional_call``) of a small conv net and of an MLP;
model ensembling (``stack_module_state`` of 8 MLPs + ``vmap(functional_call)``);
``vmap(jacrev(f))`` of a 16x16 linear layer with tanh; ``hessian`` of a scalar function
of 16 inputs. tracegrad runs through ``tracegrad.func`` (the torch.func front door) on
``tracegrad`` tensors, torch through ``torch.func``. Values are checked to agree before
anything is timed. One thread; CPU time (``time.process_time``), median of the runs.
"""
from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from pathlib import Path

for _k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_k] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.func as TF  # noqa: E402
import tracegrad.func as GF  # noqa: E402

import tracegrad as tg  # noqa: E402

torch.set_num_threads(1)


def cpu_median(fn, repeat, warmup=3):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return statistics.median(times)


def _np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().numpy()
    return np.asarray(x.detach().numpy() if hasattr(x, "detach") else x)


def _leaves(x):
    if isinstance(x, dict):
        return [v for k in sorted(x) for v in _leaves(x[k])]
    if isinstance(x, (tuple, list)):
        return [v for e in x for v in _leaves(e)]
    return [x]


def check(name, ours, theirs, rtol=1e-4, atol=1e-5):
    a, b = _leaves(ours), _leaves(theirs)
    assert len(a) == len(b), (name, len(a), len(b))
    for x, y in zip(a, b):
        np.testing.assert_allclose(_np(x), _np(y), rtol=rtol, atol=atol, err_msg=name)


# -- the workloads: each builds (ours, theirs), two thunks giving comparable results ------
def _modules(lib, kind):
    nn = lib.nn
    if kind == "conv":
        return nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Conv2d(8, 8, 3), nn.ReLU(),
                             nn.Flatten(), nn.Linear(8 * 6 * 6, 10))
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                         nn.Linear(64, 10))


def _copy_params(src, dst):
    for (n, p), (m, q) in zip(src.named_parameters(), dst.named_parameters()):
        assert n == m
        with tg.no_grad():
            q.copy_(tg.tensor(p.detach().numpy()))


def per_sample_grads(kind, batch=64):
    rng = np.random.default_rng(0)
    shape = (batch, 1, 10, 10) if kind == "conv" else (batch, 32)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.integers(0, 10, batch)
    made = []
    for lib, F in ((torch, TF), (tg, GF)):
        torch.manual_seed(0)
        model = _modules(lib, kind)
        made.append((lib, F, model))
    _copy_params(made[0][2], made[1][2])
    thunks = []
    for lib, F, model in made:
        params = {k: v.detach() for k, v in model.named_parameters()}
        xs, ys = lib.tensor(x), lib.tensor(y)

        def loss(p, xi, yi, model=model, F=F, lib=lib):
            out = F.functional_call(model, p, (xi.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, yi.unsqueeze(0))
        fn = F.vmap(F.grad(loss), in_dims=(None, 0, 0))
        thunks.append(lambda fn=fn, params=params, xs=xs, ys=ys: fn(params, xs, ys))
    return thunks[1], thunks[0]


def ensemble(n_models=8, batch=64):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((batch, 32)).astype(np.float32)
    thunks = []
    torch.manual_seed(0)
    tmodels = [_modules(torch, "mlp") for _ in range(n_models)]
    gmodels = [_modules(tg, "mlp") for _ in range(n_models)]
    for a, b in zip(tmodels, gmodels):
        _copy_params(a, b)
    for lib, F, models in ((torch, TF, tmodels), (tg, GF, gmodels)):
        params, buffers = F.stack_module_state(models)
        base = copy.deepcopy(models[0]).to("meta") if lib is torch else models[0]
        xs = lib.tensor(x)

        def one(p, b, xi, base=base, F=F):
            return F.functional_call(base, (p, b), (xi,))
        fn = F.vmap(one, in_dims=(0, 0, None))
        thunks.append(lambda fn=fn, params=params, buffers=buffers, xs=xs:
                      fn(params, buffers, xs))
    return thunks[1], thunks[0]


def vmap_jacrev(n=16, batch=64):
    rng = np.random.default_rng(2)
    w = rng.standard_normal((n, n)).astype(np.float32) / 4
    b = rng.standard_normal(n).astype(np.float32)
    x = rng.standard_normal((batch, n)).astype(np.float32)
    thunks = []
    for lib, F in ((torch, TF), (tg, GF)):
        W, B, X = lib.tensor(w), lib.tensor(b), lib.tensor(x)

        def f(xi, W=W, B=B, lib=lib):
            return lib.tanh(lib.nn.functional.linear(xi, W, B))
        fn = F.vmap(F.jacrev(f))
        thunks.append(lambda fn=fn, X=X: fn(X))
    return thunks[1], thunks[0]


def hessian(n=16):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((32, n)).astype(np.float32) / 4
    x = rng.standard_normal(n).astype(np.float32)
    thunks = []
    for lib, F in ((torch, TF), (tg, GF)):
        A, X = lib.tensor(a), lib.tensor(x)

        def f(xi, A=A, lib=lib):
            return lib.logsumexp(A @ xi, 0) + 0.5 * (xi * xi).sum()
        fn = F.hessian(f)
        thunks.append(lambda fn=fn, X=X: fn(X))
    return thunks[1], thunks[0]


WORKLOADS = {
    "per-sample grads, conv net (B=64)": lambda: per_sample_grads("conv"),
    "per-sample grads, MLP (B=64)": lambda: per_sample_grads("mlp"),
    "ensemble of 8 MLPs (B=64)": ensemble,
    "vmap(jacrev) 16x16 linear (B=64)": vmap_jacrev,
    "hessian, 16 inputs": hessian,
}


def batch_stats(fn):
    """Counts of nodes batched by a rule and row by row while ``fn`` runs (by op)."""
    import importlib
    batch_mod = importlib.import_module("tracegrad.passes.batch")
    counts = {}
    orig = batch_mod.BatchTrace.__init__

    def init(self, size, rules, stats):
        orig(self, size, rules, counts if stats is None else stats)
    batch_mod.BatchTrace.__init__ = init     # a benchmark-only probe, single-threaded
    try:
        fn()
    finally:
        batch_mod.BatchTrace.__init__ = orig
    return counts


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--stats", action="store_true")
    ap.add_argument("--only", default=None, help="run workloads whose name contains this")
    args = ap.parse_args(argv)
    print(f"{'workload':38s} {'tracegrad':>11s} {'torch.func':>11s} {'ratio':>7s}")
    for name, make in WORKLOADS.items():
        if args.only and args.only not in name:
            continue
        ours, theirs = make()
        check(name, ours(), theirs())
        if args.stats:
            print("   ", name, batch_stats(ours))
        t_ours = cpu_median(ours, args.repeat)
        t_theirs = cpu_median(theirs, args.repeat)
        print(f"{name:38s} {t_ours * 1e3:9.3f}ms {t_theirs * 1e3:9.3f}ms "
              f"{t_ours / t_theirs:6.2f}x", flush=True)


if __name__ == "__main__":
    main()
