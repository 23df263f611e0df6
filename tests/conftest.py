"""Shared test set-up: JAX in float64, and the numerical oracles the tests compare against."""
import os
import sys
from importlib.metadata import version
from pathlib import Path


def _xla_flags():
    """XLA's cheap CPU pipeline: the JAX references compile hundreds of small programs,
    and these flags cut compile time by half or more without touching the arithmetic
    we compare against. The fusion-emitter switch only exists in some XLA versions (an
    unknown flag aborts the process), so it is passed only to the jaxlib it was tried on."""
    flags = ["--xla_backend_optimization_level=0", "--xla_llvm_disable_expensive_passes=true"]
    try:
        jaxlib = tuple(int(p) for p in version("jaxlib").split(".")[:2])
    except Exception:  # noqa: BLE001 - no jaxlib, or an unusual version string
        jaxlib = ()
    if jaxlib == (0, 10):
        flags.append("--xla_cpu_use_fusion_emitters=false")
    return " ".join(flags)


if "XLA_FLAGS" not in os.environ:
    os.environ["XLA_FLAGS"] = _xla_flags()

import pytest  # noqa: E402


def pytest_configure(config):
    """Byte-compile the package once, in the main process, where the environment says
    not to write bytecode (``PYTHONDONTWRITEBYTECODE``, set on these machines): each
    xdist worker and each command-line subprocess the tests start would otherwise
    compile tracegrad's sources again on import (about 0.4 s a process). Python still
    reads what is written, and checks it against the sources' timestamps."""
    if hasattr(config, "workerinput") or not sys.dont_write_bytecode:
        return
    import compileall
    package = Path(__file__).resolve().parent.parent / "tracegrad"
    try:
        compileall.compile_dir(str(package), quiet=2)
    except OSError:         # a read-only checkout: every process compiles, as before
        pass


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """Run on every core by default when pytest-xdist is installed (``-n auto``), as the
    project's addopts cannot say without breaking ``python -m pytest -p no:xdist`` or a
    machine without xdist. An explicit ``-n N`` (``-n 0`` for one process) wins; an xdist
    worker (which runs this hook again) stays one process."""
    if (not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput")
            or config.getoption("numprocesses", None) is not None
            or config.getoption("usepdb", False)):
        return                      # no xdist, an xdist worker, an explicit -n, or --pdb
    n = config.hook.pytest_xdist_auto_num_workers(config=config)
    config.option.numprocesses = n  # as xdist's own hook turns "-n auto" into workers
    if n and config.option.dist == "no":
        config.option.dist = "load"
    config.option.tx = ["popen"] * n if n else []


import jax  # noqa: E402
import numpy as np  # noqa: E402

# JAX is the reference implementation; without x64 it would silently compute in float32.
jax.config.update("jax_enable_x64", True)

# Generated checks enumerate far more cases than the default run can afford. By default
# each runs a fixed slice spread evenly over its cases; TRACEGRAD_EXHAUSTIVE=1 runs them all.
EXHAUSTIVE = os.environ.get("TRACEGRAD_EXHAUSTIVE", "") not in ("", "0")


def bounded(cases, n, key=None):
    """``cases`` (a list), or with TRACEGRAD_EXHAUSTIVE unset at most ``n`` of them, evenly
    spaced so that every family of a generated list is sampled. Deterministic: a failure
    seen once is seen again.

    With ``key`` (a function of a case: its primitive, say), the slice holds at least one
    case of every key (more than ``n`` if there are more keys), rotating which: the k-th
    key, in order of first appearance, gives its (k mod count)-th case, so that the keys
    are not all checked at the first of their shapes or dtypes. Evenly spaced cases of
    the rest fill it up to ``n``. The order of ``cases`` is kept."""
    cases = list(cases)
    if EXHAUSTIVE or len(cases) <= n:
        return cases
    if key is None:
        step = len(cases) / n
        return [cases[int(i * step)] for i in range(n)]
    groups: dict = {}
    for i, case in enumerate(cases):
        groups.setdefault(key(case), []).append(i)
    picked = {idx[k % len(idx)] for k, idx in enumerate(groups.values())}
    rest = [i for i in range(len(cases)) if i not in picked]
    extra = n - len(picked)
    if extra > 0:
        step = len(rest) / extra
        picked.update(rest[int(j * step)] for j in range(extra))
    return [cases[i] for i in sorted(picked)]


def pytest_collection_modifyitems(config, items):
    """test_primitives.py's tests, grouped by primitive (value, shape, VJP, JVP, Hessian, ...
    of one primitive next to each other), in place of function by function.

    Its JAX references are one jit program per primitive, compiled by the first test of that
    primitive in each process; pytest-xdist hands out consecutive runs of tests, so in the
    function-by-function order most primitives were compiled by both workers (a minute of
    CPU on 2 cores). The order is the same in every worker (xdist requires it)."""
    slots = [i for i, item in enumerate(items)
             if item.path.name == "test_primitives.py"
             and "name" in getattr(getattr(item, "callspec", None), "params", {})]
    ordered = sorted((items[i] for i in slots), key=lambda item: item.callspec.params["name"])
    for i, item in zip(slots, ordered):
        items[i] = item


def assert_close(actual, expected, rtol, what="", floor=0.0):
    """``actual`` equals ``expected`` to ``rtol``, relative to the largest entry of ``expected``
    (or to ``floor``, when that is larger).

    A norm-wise tolerance: entries that are small because of cancellation (sin
    near 0, a sum of signed terms) are held to the scale of the array, not to
    their own magnitude. An all-zero ``expected`` must be matched to ``rtol``
    absolutely. NaNs must sit in the same places. Shapes and dtypes must match.
    Finite differences pass ``floor=1.0``: their error is absolute (rounding of
    O(1) function values divided by the step), so a derivative that is exactly
    zero comes out as ~1e-13 and cannot set the scale.
    """
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    if actual.dtype.kind not in "fc":
        np.testing.assert_array_equal(actual, expected, err_msg=what)
        return
    finite = np.isfinite(expected)
    scale = max(float(np.max(np.abs(expected[finite]), initial=0.0)), floor) or 1.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale, equal_nan=True,
                               err_msg=what)


def _shifted(xs, i, j, h):
    out = list(xs)
    out[i] = np.array(xs[i], copy=True)
    out[i][j] += h
    return out


def central_diff(f, x, eps=1e-6):
    """The gradient of a scalar ``f`` at the float array ``x``, by central differences
    one element at a time."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def fd_vjp(f, xs, ct, h=1e-6):
    """Central differences of ``<ct, f(*xs)>`` with respect to every element of every ``xs``:
    the vector-Jacobian product, one array per operand (float64 or complex128 only).

    Complex values follow JAX's convention: the pairing is ``Re(sum(ct * f))`` and the
    cotangent of a complex ``z = x + 1j*y`` is ``d/dx - 1j * d/dy`` of it."""
    def directional(i, j, step):
        # difference the outputs before pairing with ct: less cancellation
        diff = np.asarray(f(*_shifted(xs, i, j, step))) - np.asarray(
            f(*_shifted(xs, i, j, -step)))
        return np.real(np.sum(ct * diff)) / (2 * h)

    grads = []
    for i, x in enumerate(xs):
        g = np.zeros(np.shape(x), np.asarray(x).dtype)
        for j in np.ndindex(g.shape):
            g[j] = directional(i, j, h)
            if g.dtype.kind == "c":
                g[j] -= 1j * directional(i, j, 1j * h)
        grads.append(g)
    return grads


def fd_jvp(f, xs, tangents, h=1e-6):
    """Central difference of ``f`` along ``tangents``: the Jacobian-vector product."""
    plus = [x + h * t for x, t in zip(xs, tangents)]
    minus = [x - h * t for x, t in zip(xs, tangents)]
    return (np.asarray(f(*plus)) - np.asarray(f(*minus))) / (2 * h)


def sgd_step(params, loss_fn, **options):
    """A training step of the eager API: zero the gradients, ``loss_fn()``, backward,
    ``tg.optim.SGD(params, **options).step()``; it returns the loss."""
    import tracegrad as tg
    opt = tg.optim.SGD(params, **options)

    def step():
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
        return loss
    return step


def eager_and_compiled(build, calls=4):
    """``build() -> (state, step)`` twice: one step run eagerly, the other under
    ``tg.compile``, ``calls`` times each, their losses equal bit for bit. Returns the
    eager state, the compiled state and the compiled step."""
    import tracegrad as tg
    state1, step1 = build()
    state2, step2 = build()
    step2 = tg.compile(step2)
    for _ in range(calls):
        assert step1().item() == step2().item()
    return state1, state2, step2


def zero_buffers(source):
    """Fresh buffers of zeros generated code makes: ``np.zeros``, or copies of broadcast
    zeros."""
    return source.count(".copy()") + source.count("_np_zeros(")
