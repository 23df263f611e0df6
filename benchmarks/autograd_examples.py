"""HIPS autograd's own example programs, run on autograd and on tracegrad.

    git clone https://github.com/HIPS/autograd /tmp/autograd
    python benchmarks/autograd_examples.py /tmp/autograd/examples            # every example
    python benchmarks/autograd_examples.py /tmp/autograd/examples rnn tanh   # some of them

Each example runs twice, each time in a fresh process: once with the real ``autograd``,
once with ``autograd`` pointed at tracegrad through a small shim (below): ``grad``,
``value_and_grad``, ``elementwise_grad``, ``hessian``, ``jacobian`` and
``hessian_vector_product`` become tracegrad's un-jitted transforms, ``autograd.numpy`` is
NumPy itself, and the few ``autograd.scipy`` / ``autograd.misc`` helpers the examples use
are written here in plain NumPy (tracegrad traces them like any user code). Nothing of
the examples is copied into this repository: they are read from the checkout given.

Each run stops after ``--max-calls`` derivative calls (default 300), so both libraries
run the same prefix of a long optimisation.

What is compared:
  - the time spent inside derivative calls (the functions ``grad`` & co. return; a call
    made from inside another one is not counted twice), and its ratio tracegrad/autograd;
  - the numbers: every top-level derivative call's results are summarised (sum, sum of
    absolute values) and the two runs must agree call by call, to rtol 1e-6 of the
    call's largest value but at least to 1e-10 of the largest value any call so far
    returned; a run that disagrees is reported WRONG. The absolute part is for a
    gradient at an optimiser's stationary point, which is only roundoff: there, two
    correct libraries give different numbers (``negative_binomial_maxlike``'s last
    call, about 1e-12, from sums of terms of about 1e3, is neither library's digits: the
    exact value, by mpmath, is a third number of the same size).

``--clock cpu`` times the derivative calls by this process's CPU time
(``time.process_time``) rather than the wall clock, for a machine busy with other work;
``--repeat N`` runs each example N times on each library, alternating, and keeps each
one's fastest run.

Plotting is switched off (Agg backend; ``show``/``pause``/``draw`` do nothing). SciPy
functions come from ``tracegrad.scipy`` (``gammaln``, ``norm.cdf``, ``t.logpdf``,
``odeint``). Examples that need the network (MNIST) or autograd's internals (``defvjp``,
``Box``, ``trace``) are listed as skipped with the reason.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SKIP = {
    "convnet": "downloads MNIST", "data": "a helper module", "data_mnist": "a helper module",
    "generative_adversarial_net": "downloads MNIST", "neural_net": "downloads MNIST",
    "variational_autoencoder": "downloads MNIST",
    "define_gradient": "autograd internals (defvjp, primitive)",
    "rkhs": "autograd internals (Box, VSpace)", "dot_graph": "autograd internals (tracer)",
    "print_trace": "autograd internals (tracer)",
    "__init__": "not a program",
}

TRANSFORMS = ("grad", "value_and_grad", "elementwise_grad", "hessian", "jacobian",
              "hessian_vector_product")


# -- timing and summarising derivative calls (both modes) --------------------------------
class Enough(BaseException):
    """Raised from the derivative call after the last one timed (a BaseException, so that
    an example's own ``except Exception`` does not swallow it)."""


class Recorder:
    def __init__(self, max_calls, clock=time.perf_counter):
        self.max_calls = max_calls
        self.clock = clock
        self.depth = 0
        self.seconds = 0.0
        self.calls = 0
        self.sums = []

    def wrap(self, transform):
        def make(*targs, **tkwargs):
            inner = transform(*targs, **tkwargs)

            def timed(*args, **kwargs):
                if self.depth == 0 and self.calls >= self.max_calls:
                    raise Enough
                self.depth += 1
                t0 = self.clock()
                try:
                    out = inner(*args, **kwargs)
                finally:
                    self.depth -= 1
                if self.depth == 0:
                    self.seconds += self.clock() - t0
                    self.calls += 1
                    if len(self.sums) < 200:
                        self.sums.append(_summary(out))
                return out
            return timed
        return make


def _summary(value):
    import numpy

    leaves = []

    def walk(v):
        if isinstance(v, dict):
            for k in sorted(v):
                walk(v[k])
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
        else:
            leaves.append(numpy.asarray(v, dtype=float))
    walk(value)
    return [[float(numpy.sum(x)), float(numpy.sum(numpy.abs(x)))] for x in leaves]


def _fixed_point(f, a, x0, distance, tol):
    """autograd's ``fixed_point`` with autograd's derivative, on ``tg.custom_vjp``. As in
    autograd, where ``fixed_point`` is a primitive, the forward iteration is a plain
    Python loop on NumPy values (``tg.pure_callback``: nothing of it is traced); the
    reverse rule iterates the adjoint ``u = vjp_x(u) + g`` from zero until ``distance`` of
    two iterates is under ``tol`` (itself a ``fixed_point``, so derivatives of any order
    are autograd's), with ``vjp_x`` formed once per solve as autograd's ``rev_iter``
    does, then pulls ``u`` back to ``a``. Not the implicit derivative at the root
    (``tg.custom_root``): that one differs from autograd's by about ``tol``, not roundoff.
    ``x0`` gets no derivative, as in autograd, and is an argument (not closed over) so
    that a rule run in a later backward pass sees no traced value of a finished trace."""
    import numpy as np

    import tracegrad as tg

    def iterate(a, guess):
        step = f(a)
        x, prev = step(guess), guess
        while distance(x, prev) > tol:
            x, prev = step(x), x
        return np.asarray(x, dtype=np.result_type(x0, float))

    def solve(a, guess):
        shape = tg.ShapeDtypeStruct(np.shape(x0), np.result_type(x0, float))
        return tg.pure_callback(iterate, shape, a, guess)

    fp = tg.custom_vjp(solve)

    def bwd(res, g):
        a, guess = res
        x = fp(a, guess)    # the root again: its derivative is this rule (autograd's
                            # ``ans`` is a boxed output of fixed_point too)

        def adjoint_step(params):
            a_, x_, g_ = params
            pull = tg.vjp(f(a_), x_)[1]
            return lambda u: pull(u)[0] + g_
        u = _fixed_point(adjoint_step, (a, x, g), np.zeros(np.shape(x)), distance, tol)
        return tg.vjp(lambda a_: f(a_)(x), a)[1](u)[0], None

    fp.defvjp(lambda a, guess: (solve(a, guess), (a, guess)), bwd)
    return fp(a, x0)


# -- the shim: autograd's names on tracegrad ---------------------------------------------
def _install_shim():
    import numpy as np

    import tracegrad as tg

    def grad(fun, argnum=0):
        return tg.grad(fun, argnums=argnum)

    def value_and_grad(fun, argnum=0):
        return tg.value_and_grad(fun, argnums=argnum)

    def hessian(fun, argnum=0):
        return tg.hessian(fun, argnums=argnum)

    def jacobian(fun, argnum=0):
        return tg.jacobian(fun, argnums=argnum)

    def elementwise_grad(fun, argnum=0):
        def egrad(*args):
            def at(x):
                return fun(*args[:argnum], x, *args[argnum + 1:])
            out, pull = tg.vjp(at, args[argnum])
            return pull(np.ones_like(out))[0]
        return egrad

    def hessian_vector_product(fun, argnum=0):
        def hvp(*args):
            *args, vector = args

            def directional(*a):
                return np.sum(tg.grad(fun, argnums=argnum)(*a) * vector)
            return tg.grad(directional, argnums=argnum)(*args)
        return hvp

    def logsumexp(a, axis=None, b=None, keepdims=False):
        a = np.asarray(a) if not hasattr(a, "shape") else a
        top = np.max(a, axis=axis, keepdims=True)
        top = np.where(np.isfinite(top), top, 0.0)
        e = np.exp(a - tg.stop_gradient(top))
        if b is not None:
            e = b * e
        out = np.log(np.sum(e, axis=axis, keepdims=True)) + tg.stop_gradient(top)
        return out if keepdims else (np.squeeze(out, axis=axis) if axis is not None
                                     else out.reshape(()))

    def expit(x):
        return 0.5 * (np.tanh(0.5 * x) + 1.0)

    def norm_logpdf(x, loc=0.0, scale=1.0):
        z = (x - loc) / scale
        return -0.5 * z ** 2 - np.log(scale) - 0.5 * np.log(2 * np.pi)

    def norm_pdf(x, loc=0.0, scale=1.0):
        return np.exp(norm_logpdf(x, loc, scale))

    def mvn_pdf(x, mean, cov, allow_singular=False):
        return np.exp(mvn_logpdf(x, mean, cov))

    def mvn_logpdf(x, mean, cov, allow_singular=False):
        d = x - mean
        k = np.shape(cov)[-1]
        sol = np.linalg.solve(cov, np.swapaxes(np.atleast_2d(d), -1, -2) if np.ndim(d) > 1
                              else d)
        if np.ndim(d) > 1:
            quad = np.sum(d * np.swapaxes(sol, -1, -2), axis=-1)
        else:
            quad = np.sum(d * sol, axis=-1)
        _, logdet = np.linalg.slogdet(cov)
        return -0.5 * quad - 0.5 * logdet - 0.5 * k * np.log(2 * np.pi)

    def flatten(value):
        leaves, shapes = [], []

        def walk(v):
            if isinstance(v, (list, tuple)):
                kids = [walk(x) for x in v]
                return ("seq", type(v), kids)
            if isinstance(v, dict):
                keys = sorted(v)
                return ("dict", keys, [walk(v[k]) for k in keys])
            leaves.append(np.ravel(v))
            shapes.append(np.shape(v))
            return ("leaf", len(leaves) - 1)
        spec = walk(value)
        sizes = [int(np.prod(s)) for s in shapes]
        flat = np.concatenate(leaves) if leaves else np.zeros(0)

        def unflatten(vector):
            offsets = np.cumsum([0] + sizes)
            parts = [np.reshape(vector[offsets[i]:offsets[i + 1]], shapes[i])
                     for i in range(len(sizes))]

            def build(s):
                if s[0] == "leaf":
                    return parts[s[1]]
                if s[0] == "seq":
                    return s[1](build(k) for k in s[2])
                return {k: build(c) for k, c in zip(s[1], s[2])}
            return build(spec)
        return flat, unflatten

    def flatten_func(func, example):
        _ex, unflatten = flatten(example)

        def flat_func(x, *args):
            return func(unflatten(x), *args)
        return flat_func, unflatten, _ex

    def _flat_optimizer(step):
        def optimizer(grad, x0, callback=None, *args, **kwargs):
            flat0, unflatten = flatten(x0)

            def flat_grad(x, i):
                return flatten(grad(unflatten(x), i))[0]
            flat_cb = None if callback is None else (
                lambda x, i, g: callback(unflatten(x), i, unflatten(g)))
            return unflatten(step(flat_grad, flat0, flat_cb, *args, **kwargs))
        return optimizer

    def _adam(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999,
              eps=10**-8):
        m, v = np.zeros(len(x)), np.zeros(len(x))
        for i in range(num_iters):
            g = grad(x, i)
            if callback:
                callback(x, i, g)
            m = (1 - b1) * g + b1 * m
            v = (1 - b2) * (g**2) + b2 * v
            mhat = m / (1 - b1 ** (i + 1))
            vhat = v / (1 - b2 ** (i + 1))
            x = x - step_size * mhat / (np.sqrt(vhat) + eps)
        return x

    def _sgd(grad, x, callback=None, num_iters=200, step_size=0.1, mass=0.9):
        velocity = np.zeros(len(x))
        for i in range(num_iters):
            g = grad(x, i)
            if callback:
                callback(x, i, g)
            velocity = mass * velocity - (1.0 - mass) * g
            x = x + step_size * velocity
        return x

    def check_grads(fun, modes=None, order=1):
        def check(*args):
            x = np.asarray(args[0], dtype=float)
            g = tg.grad(fun)(x, *args[1:])
            rng = np.random.default_rng(0)
            for _ in range(3):
                d = rng.standard_normal(x.shape)
                eps = 1e-6
                fd = (fun(x + eps * d, *args[1:]) - fun(x - eps * d, *args[1:])) / (2 * eps)
                if not np.allclose(np.sum(g * d), fd, rtol=1e-4, atol=1e-6):
                    raise AssertionError("gradient check failed")
        return check

    def module(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        sys.modules[name] = m
        return m

    ag = module("autograd", grad=grad, value_and_grad=value_and_grad, hessian=hessian,
                jacobian=jacobian, elementwise_grad=elementwise_grad,
                hessian_vector_product=hessian_vector_product)
    ag.__path__ = []
    sys.modules["autograd.numpy"] = np
    sys.modules["autograd.numpy.random"] = np.random
    sys.modules["autograd.numpy.linalg"] = np.linalg
    ag.numpy = np
    import tracegrad.scipy.integrate as tg_integrate
    import tracegrad.scipy.special as tg_special
    import tracegrad.scipy.stats as tg_stats

    special = module("autograd.scipy.special", **{
        n: getattr(tg_special, n) for n in dir(tg_special) if not n.startswith("_")})
    special.logsumexp, special.expit = logsumexp, expit
    norm = module("autograd.scipy.stats.norm", **vars(tg_stats.norm))
    norm.logpdf, norm.pdf = norm_logpdf, norm_pdf
    mvn = module("autograd.scipy.stats.multivariate_normal", logpdf=mvn_logpdf,
                 pdf=mvn_pdf)
    t_dist = module("autograd.scipy.stats.t", **vars(tg_stats.t))
    stats = module("autograd.scipy.stats", norm=norm, multivariate_normal=mvn, t=t_dist)
    stats.__path__ = []
    # autograd's odeint is SciPy's: extra arguments as one tuple, positionally or args=
    integrate = module("autograd.scipy.integrate", odeint=lambda func, y0, t, args=(), **kw:
                       tg_integrate.odeint(func, y0, t, args=args, **kw))
    scipy = module("autograd.scipy", special=special, stats=stats, integrate=integrate)
    scipy.__path__ = []
    ag.scipy = scipy
    module("autograd.misc.fixed_points", fixed_point=_fixed_point)
    module("autograd.misc.flatten", flatten=flatten, flatten_func=flatten_func)
    opt = module("autograd.misc.optimizers", adam=_flat_optimizer(_adam),
                 sgd=_flat_optimizer(_sgd))
    misc = module("autograd.misc", flatten=flatten, optimizers=opt,
                  fixed_points=sys.modules["autograd.misc.fixed_points"])
    misc.__path__ = []
    ag.misc = misc
    module("autograd.test_util", check_grads=check_grads)
    ag.builtins = module("autograd.builtins", tuple=tuple, list=list, dict=dict,
                         isinstance=isinstance)
    return ag


# -- one run (a child process) -------------------------------------------------------------
def _child(path, mode, max_calls, clock="wall"):
    os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        import matplotlib.pyplot as plt
        for name in ("show", "pause", "draw", "ion"):
            setattr(plt, name, lambda *a, **k: None)
    except ImportError:
        pass
    if mode == "tracegrad":
        sys.path.insert(0, str(ROOT))
        ag = _install_shim()
    else:
        import autograd as ag
    rec = Recorder(max_calls, time.process_time if clock == "cpu" else time.perf_counter)
    for name in TRANSFORMS:
        setattr(ag, name, rec.wrap(getattr(ag, name)))
    import runpy
    folder = str(Path(path).parent)
    sys.path.insert(0, folder)
    os.chdir(folder)
    sys.argv = [path]
    t0 = time.perf_counter()
    error = None
    try:
        runpy.run_path(path, run_name="__main__")
    except Enough:
        pass
    except Exception as e:  # noqa: BLE001 - reported, not raised
        error = f"{type(e).__name__}: {str(e)[:300]}"
    wall = time.perf_counter() - t0
    print("\n@@RESULT@@" + json.dumps({"seconds": rec.seconds, "calls": rec.calls,
                                       "wall": wall, "sums": rec.sums, "error": error}))


def _run(path, mode, timeout, max_calls, clock="wall"):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", MPLBACKEND="Agg")
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", mode, str(path),
                               str(max_calls), clock],
                              capture_output=True, text=True, timeout=timeout, env=env,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    marker = proc.stdout.rfind("@@RESULT@@")
    if marker < 0:
        return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    return json.loads(proc.stdout[marker + len("@@RESULT@@"):])


STRICT_CALLS = 20
FLOOR = 1e-4   # so a call's values agree to 1e-10 of the largest value seen so far


def _agree(a, b):
    """None when the two runs' derivative calls agree, else what differs. The first
    ``STRICT_CALLS`` calls must agree to rtol 1e-6 of the larger of the call's largest
    entry and ``FLOOR`` times the largest entry of any call so far (either run): an
    optimiser driven to a stationary point asks for a gradient that is only the
    roundoff of its terms (``negative_binomial_maxlike``'s last call: about 1e-12, from
    sums of terms of about 1e3), and two libraries round differently. An optimiser fed
    slightly different rounding takes a slightly different path, so later calls drift
    apart on both libraries' own terms; their largest relative drift is reported, not
    judged."""
    import numpy as np
    if len(a) != len(b):
        return f"{len(a)} vs {len(b)} recorded calls", None
    drift = seen = 0.0
    for k, (x, y) in enumerate(zip(a, b)):
        if len(x) != len(y):
            return f"call {k}: {len(x)} vs {len(y)} results", None
        x, y = np.asarray(x), np.asarray(y)
        if not x.size:
            continue
        seen = max(seen, float(np.max(np.abs(x))), float(np.max(np.abs(y))))
        scale = max(float(np.max(np.abs(x))), FLOOR * seen, 1e-300)
        err = float(np.max(np.abs(x - y)) / scale)
        if k < STRICT_CALLS and not err <= 1e-6:
            return f"call {k}: {x.tolist()[:2]} vs {y.tolist()[:2]}", None
        drift = max(drift, err)
    return None, drift


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("examples", help="the examples/ folder of a HIPS/autograd checkout")
    parser.add_argument("names", nargs="*", help="example names (default: all)")
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--max-calls", type=int, default=300,
                        help="stop each example after this many derivative calls (the same "
                             "prefix of the program on both libraries)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="time derivative calls by the wall clock or by CPU time")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per example and library (alternating); the fastest counts")
    args = parser.parse_args()
    folder = Path(args.examples)
    names = args.names or sorted(p.stem for p in folder.glob("*.py"))
    ratios, failed = [], False
    print(f"{'example':34} {'calls':>6} {'autograd s':>11} {'tracegrad s':>12} {'ratio':>7}")
    sys.stdout.flush()
    for name in names:
        if name in SKIP and not args.names:
            print(f"{name:34} skipped: {SKIP[name]}", flush=True)
            continue
        path = folder / f"{name}.py"
        ref = ours = None
        for _ in range(max(1, args.repeat)):
            r = _run(path, "autograd", args.timeout, args.max_calls, args.clock)
            if r.get("error"):
                ref = r
                break
            o = _run(path, "tracegrad", args.timeout, args.max_calls, args.clock)
            ref = r if ref is None or r["seconds"] < ref["seconds"] else ref
            ours = o if ours is None or o.get("error") or (
                not ours.get("error") and o["seconds"] < ours["seconds"]) else ours
        if ref.get("error"):
            print(f"{name:34} autograd itself fails here: {ref['error']}", flush=True)
            continue
        if ours.get("error"):
            failed = True
            print(f"{name:34} FAILS on tracegrad: {ours['error']}", flush=True)
            continue
        wrong, drift = _agree(ref["sums"], ours["sums"])
        if wrong:
            failed = True
            print(f"{name:34} WRONG: {wrong}", flush=True)
            continue
        ratio = ours["seconds"] / ref["seconds"] if ref["seconds"] else float("nan")
        ratios.append(ratio)
        print(f"{name:34} {ref['calls']:>6} {ref['seconds']:>11.3f} {ours['seconds']:>12.3f} "
              f"{ratio:>6.2f}x" + (f"   (later calls drift {drift:.1e})" if drift > 1e-6 else ""))
        sys.stdout.flush()
    if ratios:
        import statistics
        print(f"\nmedian ratio over {len(ratios)} examples: {statistics.median(ratios):.2f}x "
              f"(max {max(ratios):.2f}x)")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[3], sys.argv[2], int(sys.argv[4]), *sys.argv[5:6])
    else:
        sys.exit(main())
