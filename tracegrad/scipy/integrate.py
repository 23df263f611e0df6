"""``odeint``: ``scipy.integrate.odeint`` on traced values, with adjoint sensitivities.

The forward solve is SciPy's own (LSODA) run on concrete values through
``tg.pure_callback``, so the values are SciPy's. Its derivative is a ``tg.custom_vjp`` rule
that stores only the solution at the requested times: the backward pass integrates the
adjoint system backwards in time, from the last time to the first,

    dy/dt = f(y, t, *args),   da/dt = -aᵀ ∂f/∂y,   d(a_args)/dt = -aᵀ ∂f/∂args,

re-computing ``y`` on the way rather than keeping every step, and adds the cotangent of
each requested time's solution to ``a`` as it passes that time (as the adjoint methods of
autograd's and JAX's ``odeint``). The times get a gradient too: ``gᵢ·f(yᵢ, tᵢ)``, and for
the first one ``-a(t₀)·f(y₀, t₀)`` more. ``aᵀ ∂f/∂(y, args)`` is ``func``'s VJP, derived by
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
        t: the times, increasing or decreasing (a gradient flows to them too).
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
    if np.ndim(t) != 1:
        raise TraceError(f"odeint: t must be a 1-d array of times, got shape {np.shape(t)}")
    t = t * 1.0 if hasattr(t, "_trace") else np.asarray(t, dtype=np.float64)
    y0 = y0 if hasattr(y0, "shape") and np.dtype(y0.dtype).kind == "f" else np.asarray(
        y0, dtype=np.float64) * 1.0
    shape = tuple(np.shape(y0))
    opts = dict(rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
    solver = _Solver(func, shape, len(t), opts)
    return solver.solve(y0, t, *args)


class _Solver:
    def __init__(self, func, shape, n_times, opts):
        self.func, self.shape, self.opts = func, shape, opts
        self.size = int(np.prod(shape, dtype=np.int64))
        self._vjp = None

        @custom_vjp
        def solve(y0, t, *args):
            return pure_callback(self.forward, ShapeDtypeStruct((n_times,) + shape, np.float64),
                                 y0, t, *args)

        def fwd(y0, t, *args):
            ys = solve(y0, t, *args)
            return ys, (ys, t, args)

        def bwd(res, g):
            ys, t, args = res
            arg_specs = [ShapeDtypeStruct(np.shape(a), np.float64) for a in args]
            out = pure_callback(self.backward, (ShapeDtypeStruct(shape, np.float64),
                                                ShapeDtypeStruct((n_times,), np.float64),
                                                tuple(arg_specs)), ys, t, g, *args)
            g_y0, g_t, g_args = out
            return (g_y0, g_t, *[ga if _is_float(a) else None for ga, a in zip(g_args, args)])

        solve.defvjp(fwd, bwd)
        self.solve = solve

    # -- on concrete values (inside the callbacks) ------------------------------------------
    def rhs(self, y, t, args):
        return np.ravel(np.asarray(self.func(y.reshape(self.shape), t, *args), dtype=float))

    def forward(self, y0, t, *args):
        ys = _scipy_odeint()(lambda y, s: self.rhs(y, s, args), np.ravel(y0), t, **self.opts)
        return ys.reshape((len(t),) + self.shape)

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

    def backward(self, ys, ts, g, *args):
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

        g = g.reshape(len(ts), n)
        ys = ys.reshape(len(ts), n)
        # d y(t_i) / d t_i = f(y_i, t_i); t_0 moves the start: -a(t_0)·f(y_0, t_0) on top
        f_at = [self.rhs(ys[i], ts[i], args) for i in range(len(ts))]
        g_t = np.array([g[i] @ f_at[i] for i in range(len(ts))])
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
        g_t[0] -= a @ f_at[0]
        return a.reshape(self.shape), g_t, tuple(g_args)


def _is_float(a):
    return np.dtype(getattr(a, "dtype", np.result_type(a))).kind in "fc"
