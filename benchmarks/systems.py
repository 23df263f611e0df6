"""The systems under comparison: each turns a workload and its data into a
zero-argument callable computing the derivative (synchronised: JAX results are
waited for), plus the numerical check every system passes before it is timed.
"""
from __future__ import annotations

import importlib

import numpy as np

SYSTEMS = ("hand", "tg-numpy", "tg-jax", "autograd", "jax", "torch")
TITLES = {
    "hand": "hand-written NumPy",
    "tg-numpy": "tg.jit(tg.grad) numpy",
    "tg-jax": 'tg.jit(tg.grad, backend="jax")',
    "autograd": "HIPS autograd",
    "jax": "jax.jit(jax.grad)",
    "torch": "PyTorch eager",
}
HESSIAN_TITLES = {
    "hand": "hand-written NumPy",
    "tg-numpy": "tg.jit(tg.hessian) numpy",
    "tg-jax": 'tg.jit(tg.hessian, backend="jax")',
    "autograd": "HIPS autograd.hessian",
    "jax": "jax.jit(jax.hessian)",
    "torch": "torch.func.hessian",
}


def title(system, kind="grad"):
    return (HESSIAN_TITLES if kind == "hessian" else TITLES)[system]


COMPILED = ("tg-numpy", "tg-jax", "jax")


class Unavailable(Exception):
    """The system is not installed here: its rows say so instead of a time."""


def available(system):
    module = {"tg-jax": "jax", "jax": "jax", "autograd": "autograd", "torch": "torch"}.get(system)
    if module is None:
        return True
    try:
        importlib.import_module(module)
    except Exception:
        return False
    return True


def _block(out):
    import jax
    if hasattr(out, "block_until_ready"):
        return out.block_until_ready()
    return jax.block_until_ready(out)


def build(system, wl, data):
    """A callable ``() -> derivative`` for ``system`` on workload ``wl`` at ``data``."""
    if not available(system):
        raise Unavailable(system)
    hessian = wl.kind == "hessian"
    nums = wl.argnums
    argnums = nums[0] if len(nums) == 1 else nums

    if system == "hand":
        return lambda: wl.hand(*data)

    if system in ("tg-numpy", "tg-jax"):
        import tracegrad as tg
        f = wl.fn(np)
        d = tg.hessian(f, argnums=argnums) if hessian else tg.grad(f, argnums=argnums)
        if system == "tg-numpy":
            fn = tg.jit(d)
            return lambda: fn(*data)
        fn = tg.jit(d, backend="jax")
        # like jax.jit below: inputs already on the device (made in float64)
        import jax
        import jax.numpy as jnp
        with jax.enable_x64(True):
            jdata = tuple(jnp.asarray(a) for a in data)
        return lambda: _block(fn(*jdata))

    if system == "jax":
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
        f = wl.fn(jnp)
        d = jax.hessian(f, argnums=argnums) if hessian else jax.grad(f, argnums=argnums)
        fn = jax.jit(d)
        jdata = tuple(jnp.asarray(a) for a in data)
        return lambda: _block(fn(*jdata))

    if system == "autograd":
        import autograd
        import autograd.numpy as anp
        f = wl.fn(anp)
        if hessian:
            fn = autograd.hessian(f, argnums)
            return lambda: fn(*data)
        if len(nums) == 1:
            fn = autograd.grad(f, argnums)
            return lambda: fn(*data)
        # autograd differentiates one argument: pack the differentiated ones in a tuple
        rest = tuple(a for i, a in enumerate(data) if i not in nums)

        def packed(params, *others):
            it_p, it_o = iter(params), iter(others)
            return f(*[next(it_p) if i in nums else next(it_o) for i in range(len(data))])
        fn = autograd.grad(packed, 0)
        params = tuple(data[i] for i in nums)
        return lambda: fn(params, *rest)

    if system == "torch":
        import torch
        torch.set_num_threads(1)
        f = wl.torch_fn()
        if hessian:
            from torch.func import hessian as t_hessian
            tdata = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in data)
            fn = t_hessian(f, argnums=argnums)
            return lambda: fn(*tdata)
        leaves = [torch.tensor(a, requires_grad=i in nums) for i, a in enumerate(data)]
        wrt = [leaves[i] for i in nums]

        def torch_grad():
            grads = torch.autograd.grad(f(*leaves), wrt)
            return grads[0] if len(grads) == 1 else grads
        return torch_grad

    raise ValueError(system)


def as_arrays(out):
    """A list of float64 NumPy arrays from any system's result."""
    if isinstance(out, (tuple, list)):
        items = list(out)
    else:
        items = [out]
    arrays = []
    for a in items:
        if hasattr(a, "detach"):
            a = a.detach().numpy()
        arrays.append(np.asarray(a))
    return arrays


def tolerance(dtype):
    """(rtol, atol relative to the largest reference entry) for a result of ``dtype``."""
    return (2e-4, 2e-5) if np.dtype(dtype) == np.float32 else (1e-9, 1e-12)


def mismatch(out, ref, dtype):
    """None when ``out`` matches ``ref`` (allclose), else a description of the difference."""
    got, want = as_arrays(out), as_arrays(ref)
    if len(got) != len(want):
        return f"{len(got)} results, expected {len(want)}"
    rtol, atol = tolerance(dtype)
    for k, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            return f"result {k} has shape {g.shape}, expected {w.shape}"
        if g.dtype != w.dtype:
            return f"result {k} has dtype {g.dtype}, expected {w.dtype}"
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        if not np.allclose(g64, w64, rtol=rtol, atol=atol * scale):
            err = np.max(np.abs(g64 - w64)) / max(scale, 1e-300)
            return f"result {k}: max |difference| / max |reference| = {err:.2e}"
    return None


def jax_reference(wl, data):
    """The derivative by (unjitted) ``jax.grad`` / ``jax.hessian``, float64 throughout."""
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    f = wl.fn(jnp)
    nums = wl.argnums
    argnums = nums[0] if len(nums) == 1 else nums
    d = jax.hessian(f, argnums=argnums) if wl.kind == "hessian" else jax.grad(f, argnums=argnums)
    out = d(*[jnp.asarray(a, dtype=jnp.float64) if np.issubdtype(a.dtype, np.floating) else a
              for a in data])
    return [a.astype(wl.dtype) for a in as_arrays(out)]
