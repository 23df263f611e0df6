"""The gradient of a loss through a sparse solve: a 2-D Poisson problem.

    python benchmarks/sparse_solve.py            # a 50x50 grid (2,500 unknowns)
    python benchmarks/sparse_solve.py --quick    # a short run
    python benchmarks/sparse_solve.py --n 100    # a 100x100 grid

``L`` is the 5-point Laplacian (Dirichlet boundary) of an n x n grid, a constant
``scipy.sparse`` matrix; the source is ``sin(q)`` and the loss

    loss(q) = sum((u - target)**2) + 1e-3 * sum(q**2),   L u = sin(q),

written with ``tracegrad.scipy.sparse.linalg.spsolve``. Its gradient takes one more solve,
with ``Lᵀ``. Systems, side by side in one process and timed interleaved (medians):

- SciPy by hand: the adjoint written out, ``spsolve`` then ``spsolve`` with ``Lᵀ`` (two
  factorisations per call), and with ``splu(L)`` computed once outside and its ``solve``
  (``trans="T"`` for the adjoint) called twice per call;
- tracegrad: ``tg.jit(tg.grad(loss))`` on the NumPy backend (one ``sparse_solve`` node
  forward and one backward; the primitive keeps the SuperLU factors of the last few
  matrices it solved with, so with a constant ``L`` every call after the first only solves,
  like the ``splu once`` baseline);
- JAX: ``jax.jit(jax.grad(loss))`` with ``jax.scipy.sparse.linalg.cg`` on a BCOO matrix
  (JAX differentiates ``cg`` by its adjoint, another ``cg``), rtol 1e-10;
- JAX dense: ``jax.jit(jax.grad(loss))`` with ``jnp.linalg.solve`` on the dense matrix
  (grids up to 50x50).

Every gradient is checked against the hand-written one before it is timed. Threads are
pinned to 1, as in run.py.
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
import scipy.sparse as sp  # noqa: E402
import scipy.sparse.linalg as spl  # noqa: E402
from timing import interleaved  # noqa: E402

import tracegrad as tg  # noqa: E402
from tracegrad.scipy.sparse import linalg as tsl  # noqa: E402


def laplacian(n):
    """The 5-point Laplacian of an n x n grid (spacing 1/(n+1)), CSR."""
    h2 = (n + 1.0) ** 2
    t = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    eye = sp.identity(n)
    return ((sp.kron(eye, t) + sp.kron(t, eye)) * h2).tocsr()


def problem(n):
    lap = laplacian(n)
    rng = np.random.default_rng(0)
    target = rng.normal(size=n * n) * 1e-3
    q = rng.normal(size=n * n)

    def loss(q):
        u = tsl.spsolve(lap, np.sin(q))
        return np.sum((u - target) ** 2) + 1e-3 * np.sum(q ** 2)

    def by_hand(q):
        u = spl.spsolve(lap, np.sin(q))
        lam = spl.spsolve(lap.T.tocsr(), 2.0 * (u - target))
        return lam * np.cos(q) + 2e-3 * q

    lu = spl.splu(lap.tocsc())

    def by_hand_factored(q):
        u = lu.solve(np.sin(q))
        lam = lu.solve(2.0 * (u - target), trans="T")
        return lam * np.cos(q) + 2e-3 * q

    return lap, target, q, loss, by_hand, by_hand_factored


def systems(n):
    lap, target, q, loss, by_hand, by_hand_factored = problem(n)
    g = tg.jit(tg.grad(loss))
    calls = {"SciPy by hand (adjoint), spsolve twice": lambda: by_hand(q),
             "SciPy by hand (adjoint), splu once, reused": lambda: by_hand_factored(q),
             "tg.jit(tg.grad), numpy backend": lambda: g(q)}
    try:
        import jax
        import jax.numpy as jnp
        from jax.experimental import sparse as jsparse
        from jax.scipy.sparse.linalg import cg
    except ImportError:
        jax = None
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
        bcoo = jsparse.BCOO.from_scipy_sparse(lap)
        jtarget = jnp.asarray(target)

        def jloss(q):
            u, _ = cg(lambda v: bcoo @ v, jnp.sin(q), tol=1e-10, atol=0.0, maxiter=20 * n * n)
            return jnp.sum((u - jtarget) ** 2) + 1e-3 * jnp.sum(q ** 2)

        jg = jax.jit(jax.grad(jloss))
        calls["jax.jit(jax.grad), cg on BCOO"] = lambda: jg(q).block_until_ready()
        if n <= 50:
            dense = jnp.asarray(lap.toarray())

            def jloss_dense(q):
                u = jnp.linalg.solve(dense, jnp.sin(q))
                return jnp.sum((u - jtarget) ** 2) + 1e-3 * jnp.sum(q ** 2)

            jgd = jax.jit(jax.grad(jloss_dense))
            calls["jax.jit(jax.grad), dense solve"] = lambda: jgd(q).block_until_ready()
    want = by_hand(q)
    for name, call in calls.items():
        got = np.asarray(call())
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8 * np.abs(want).max(),
                                   err_msg=name)
    graph = tg.trace(tg.grad(loss), q)
    solves = [op for _, op in graph.nx.nodes(data="op")].count("sparse_solve")
    return calls, solves


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n", type=int, default=50)
    args = parser.parse_args()
    budget = 1.0 if args.quick else 6.0
    calls, solves = systems(args.n)
    stats = interleaved(calls, budget_s=budget, min_rounds=3, max_rounds=200)
    base = stats["tg.jit(tg.grad), numpy backend"].median
    print(f"{args.n}x{args.n} grid ({args.n ** 2} unknowns); the gradient's graph holds "
          f"{solves} sparse_solve nodes")
    print("| system | median per call | vs tracegrad |")
    print("|---|---|---|")
    for name, s in stats.items():
        print(f"| {name} | {s.median * 1e3:.2f} ms | {s.median / base:.2f}x |")


if __name__ == "__main__":
    main()
