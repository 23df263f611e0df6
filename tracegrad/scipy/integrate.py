"""``odeint``: ``scipy.integrate.odeint`` on traced values, with adjoint sensitivities.

The forward solve is SciPy's own (LSODA) run on concrete values through
``tg.pure_callback``, so the values are SciPy's. Its derivative is a ``tg.custom_vjp`` rule
that stores only the solution at the requested times: the backward pass integrates the
adjoint system backwards in time, from the last time to the first,

    dy/dt = f(y, t, *args),   da/dt = -aᵀ ∂f/∂y,   d(a_args)/dt = -aᵀ ∂f/∂args,

re-computing ``y`` on the way rather than keeping every step, and adds the cotangent of
each requested time's solution to ``a`` as it passes that time (as the adjoint methods of
autograd's and JAX's ``odeint``). ``aᵀ ∂f/∂(y, args)`` is ``func``'s VJP, derived by
tracegrad once and compiled (``tg.jit``). Reverse mode, first order; ``tg.jvp`` and second
derivatives through the solve are refused with a ``TraceError``.
"""
from __future__ import annotations

import numpy as np

from ..api import custom_vjp, vjp
from ..callback import ShapeDtypeStruct, pure_callback
from ..compiled import jit
from ..errors import TraceError
from ..ir.prims.scipy_special import special

__all__ = ["odeint"]


def _scipy_odeint():
    special()   # a clear error when SciPy is missing
    from scipy.integrate import odeint as scipy_odeint
    return scipy_odeint


def odeint(func, y0, t, *args, rtol=None, atol=None, mxstep=0, hmax=0.0, **kwargs):
    """Integrate ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0``; ``y`` at every ``t``.

    SciPy's signature (``args=(...)`` as a keyword) and JAX's (``*args``) both work.

    Args:
        func: ``func(y, t, *args)``, plain NumPy code giving ``dy/dt`` (shape of ``y0``).
            It runs on concrete arrays: pass what it depends on, and what you
            differentiate, through ``args``, not by closing over traced values.
        y0: the initial state (an array of any shape).
        t: the times, increasing or decreasing (not differentiated).
        *args: extra arguments of ``func`` (arrays or numbers); gradients flow to them.
        rtol, atol, mxstep, hmax: passed to ``scipy.integrate.odeint``.

    Returns:
        An array of shape ``(len(t),) + y0.shape``: SciPy's solution.
    """
    if "args" in kwargs:
        if args:
            raise TypeError("odeint() got both positional extra arguments and args=")
        args = tuple(kwargs.pop("args"))
    if kwargs:
        raise TypeError(f"odeint() got unexpected keyword arguments {sorted(kwargs)}")
    if hasattr(t, "_trace"):
        raise TraceError("odeint: the times t are not differentiated; pass them as a plain "
                         "array (wrap them in tg.stop_gradient and read their values first)")
    t = np.asarray(t, dtype=np.float64)
    y0 = y0 if hasattr(y0, "shape") and np.dtype(y0.dtype).kind == "f" else np.asarray(
        y0, dtype=np.float64) * 1.0
    shape = tuple(np.shape(y0))
    opts = dict(rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
    solver = _Solver(func, shape, t, opts)
    return solver.solve(y0, *args)


class _Solver:
    def __init__(self, func, shape, t, opts):
        self.func, self.shape, self.t, self.opts = func, shape, t, opts
        self.size = int(np.prod(shape, dtype=np.int64))
        self._vjp = None

        @custom_vjp
        def solve(y0, *args):
            return pure_callback(self.forward, ShapeDtypeStruct((len(t),) + shape, np.float64),
                                 y0, *args)

        def fwd(y0, *args):
            ys = solve(y0, *args)
            return ys, (ys, args)

        def bwd(res, g):
            ys, args = res
            arg_specs = [ShapeDtypeStruct(np.shape(a), np.float64) for a in args]
            out = pure_callback(self.backward, (ShapeDtypeStruct(shape, np.float64),
                                                tuple(arg_specs)), ys, g, *args)
            g_y0, g_args = out
            return (g_y0, *[ga if _is_float(a) else None for ga, a in zip(g_args, args)])

        solve.defvjp(fwd, bwd)
        self.solve = solve

    # -- on concrete values (inside the callbacks) ------------------------------------------
    def rhs(self, y, t, args):
        return np.ravel(np.asarray(self.func(y.reshape(self.shape), t, *args), dtype=float))

    def forward(self, y0, *args):
        ys = _scipy_odeint()(lambda y, t: self.rhs(y, t, args), np.ravel(y0), self.t,
                             **self.opts)
        return ys.reshape((len(self.t),) + self.shape)

    def vjp_of_func(self, y, t, a, args):
        """``aᵀ ∂f/∂y`` and ``aᵀ ∂f/∂args`` at ``(y, t)``: tracegrad's VJP of ``func``,
        compiled once."""
        if self._vjp is None:
            func = self.func

            def pullback(y, t, a, *args):
                def f(y, *args):
                    return func(y, t, *args) * 1.0
                _, back = vjp(f, y, *args)
                return back(a)

            self._vjp = jit(pullback)
        return self._vjp(y.reshape(self.shape), np.float64(t), a.reshape(self.shape), *args)

    def backward(self, ys, g, *args):
        n = self.size
        args = [np.asarray(a, dtype=np.float64) for a in args]
        sizes = [a.size for a in args]
        p = sum(sizes)

        def augmented(state, t):
            y, a = state[:n], state[n:2 * n]
            cts = self.vjp_of_func(y, t, a, args)
            d_args = [np.ravel(c) for c in cts[1:]]
            return np.concatenate([self.rhs(y, t, args), -np.ravel(cts[0])] +
                                  [-d for d in d_args])

        ts = self.t
        g = g.reshape(len(ts), n)
        ys = ys.reshape(len(ts), n)
        a = g[-1].copy()
        a_args = np.zeros(p)
        solve = _scipy_odeint()
        for i in range(len(ts) - 1, 0, -1):
            state = np.concatenate([ys[i], a, a_args])
            state = solve(augmented, state, np.array([ts[i], ts[i - 1]]), **self.opts)[-1]
            a, a_args = state[n:2 * n] + g[i - 1], state[2 * n:]
        g_args, k = [], 0
        for arg, size in zip(args, sizes):
            g_args.append(a_args[k:k + size].reshape(arg.shape))
            k += size
        return a.reshape(self.shape), tuple(g_args)


def _is_float(a):
    return np.dtype(getattr(a, "dtype", np.result_type(a))).kind in "fc"
