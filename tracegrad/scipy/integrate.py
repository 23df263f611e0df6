"""``odeint``: ``scipy.integrate.odeint`` on traced values, differentiable to any order in
both modes.

The solve is SciPy's own (LSODA) run on concrete values: one ``pure_callback`` node whose
callback object carries its own derivative rules (``ir/prims/callback.py``), each of which
is again a solve, so every derivative is a graph of solves that differentiates again.

Inside, the state and the extra arguments are flat: ``y0`` (any pytree of arrays) is one
vector of ``n`` numbers, and the extra arguments are pytree leaves (the float ones are
differentiated; the integer ones are passed along). A *system* is ``F(y, t, *leaves)``,
traceable NumPy code giving ``dy/dt`` as such a vector; the user's ``func`` makes the first
one, and each rule makes a new system from an old one (``_System.adjoint``,
``_System.tangent``) that tracegrad evaluates through its own ``tg.vjp`` / ``tg.jvp`` of
``F``, compiled once per system (``tg.jit``).

**Reverse mode** (the ``vjp`` rule) stores only the solution at the requested times. It
integrates the adjoint system backwards, from each requested time to the one before,

    dy/dt = F(y, t),   da/dt = -aᵀ ∂F/∂y,   da_t/dt = -aᵀ ∂F/∂t,   da_p/dt = -aᵀ ∂F/∂p,

recomputing ``y`` on the way, and adds the cotangent of each requested time's solution to
``a`` as it passes that time (the adjoint method of autograd's and JAX's ``odeint``, with
autograd's layout of the augmented state: its numbers are ours at any tolerance). Time
``tᵢ`` (i > 0) gets ``gᵢ·F(yᵢ, tᵢ)``; the first time gets what ``a_t`` holds at the end.

**Forward mode** (the ``jvp`` rule) integrates the sensitivity system with the solution,

    dy/dt = F(y, t),   dẏ/dt = ∂F/∂y·ẏ + ∂F/∂p·ṗ,

from ``ẏ(t₀) = ẏ₀ - F(y₀, t₀)·ṫ₀``, and adds ``F(yᵢ, tᵢ)·ṫᵢ`` at each requested time.
"""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.lru import LRU
from ..ir.prims.scipy_special import special
from ..tracer import Tracer, flatten, unflatten, user_src
from ..transforms.forward import jvp as tg_jvp
from ..transforms.jit import jit
from ..transforms.reverse import vjp as tg_vjp

__all__ = ["odeint"]

# the options of scipy.integrate.odeint that only tune the solver (they apply to every
# solve, the derivatives' too)
_SOLVER_OPTIONS = ("rtol", "atol", "tcrit", "h0", "hmax", "hmin", "ixpr", "mxstep", "mxhnil",
                   "mxordn", "mxords", "printmessg")


def _scipy_odeint():
    special()   # a clear error when SciPy is missing
    from scipy.integrate import odeint as scipy_odeint
    return scipy_odeint


def odeint(func, y0, t, *args, rtol=None, atol=None, mxstep=0, hmax=0.0, **kwargs):
    """Integrate ``dy/dt = func(y, t, *args)`` from ``y(t[0]) = y0``; ``y`` at every ``t``.

    SciPy's signature (``args=(...)``, or one tuple in ``args``' place: ``odeint(func, y0,
    t, (a, b))`` calls ``func(y, t, a, b)``, as SciPy does) and JAX's
    (``jax.experimental.ode.odeint(func, y0, t, a, b)``) both work. A single pytree
    argument that is a tuple must therefore be passed as ``args=((a, b),)``.

    Args:
        func: ``func(y, t, *args)``, plain NumPy code giving ``dy/dt`` with ``y``'s
            structure (for an array ``y``, anything ``np.asarray`` makes one of its size).
            Its derivatives are tracegrad's: pass what it depends on, and what you
            differentiate, through ``args``, not by closing over traced values. They
            are compiled once per ``func`` and structure of the arguments (as
            ``tg.jit`` does): ``func`` must be pure.
        y0: the initial state: an array of any shape, or a pytree of arrays (tuples,
            lists, dicts, registered classes), as JAX's ``odeint`` takes (SciPy takes
            vectors only). A number is SciPy's state of one number (a result of shape
            ``(len(t), 1)``). Complex states raise SciPy's ``TypeError``.
        t: the times, increasing or decreasing (a gradient flows to them too).
        *args: extra arguments of ``func``: arrays, numbers or pytrees of them (a list of
            ``(W, b)`` layers); derivatives flow to their float leaves. One tuple here is
            SciPy's ``args`` (its items are the extra arguments).
        rtol, atol, mxstep, hmax: passed to ``scipy.integrate.odeint``, as are its
            other solver options (``h0``, ``hmin``, ``tcrit``, ``mxordn``, ...) and
            ``tfirst=True`` (``func(t, y, *args)``). Every solve a derivative makes uses
            them too.

    Returns:
        ``y0``'s structure with a leading axis of ``len(t)`` on every leaf (an array of
        shape ``(len(t),) + y0.shape`` for an array ``y0``): SciPy's solution.

    Raises:
        TypeError: SciPy's ``Dfun``, ``full_output``, ``ml``/``mu`` (banded Jacobians), or
            an unknown keyword.
        TraceError: ``t`` is not 1-d, or ``func``'s result has another structure or size
            than ``y0``.
    """
    if len(args) == 1 and isinstance(args[0], tuple):
        args = args[0]      # SciPy's positional ``args``: one tuple of extra arguments
    if "args" in kwargs:
        if args:
            raise TypeError("odeint() got both positional extra arguments and args=")
        extra = kwargs.pop("args")
        args = tuple(extra) if isinstance(extra, (tuple, list)) else (extra,)
    if kwargs.pop("tfirst", False):
        user = func

        def func(y, t, *a):
            return user(t, y, *a)
    opts = dict(rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
    for key in list(kwargs):
        if key in _SOLVER_OPTIONS:
            opts[key] = kwargs.pop(key)
    for key in ("Dfun", "col_deriv", "full_output", "ml", "mu"):
        if key in kwargs and kwargs[key] not in (None, 0, False):
            raise TypeError(f"odeint(): {key}= is not supported by tracegrad (the derivative "
                            f"of a solve is taken through func itself)")
        kwargs.pop(key, None)
    if kwargs:
        raise TypeError(f"odeint() got unexpected keyword arguments {sorted(kwargs)}")
    if np.ndim(t) != 1:
        raise TraceError(f"odeint: t must be a 1-d array of times, got shape {np.shape(t)}"
                         f"{_at()}")
    t = t * 1.0 if isinstance(t, Tracer) else np.asarray(t, dtype=np.float64)

    if isinstance(y0, (list, tuple)) and all(isinstance(v, (int, float)) for v in y0):
        y0 = np.asarray(y0, dtype=np.float64)   # SciPy's y0=[1.0, 0.0]: an array
    if isinstance(y0, (Tracer, np.ndarray, np.generic, int, float)) and np.ndim(y0) == 0:
        y0 = np.reshape(y0, (1,))   # SciPy's: a number is a state of one number, (len(t), 1)
    y_leaves, y_tree = flatten(y0)
    if not y_leaves:
        raise TraceError(f"odeint: y0 has no arrays{_at()}")
    y_leaves = [_as_float(leaf) for leaf in y_leaves]
    y_shapes = tuple(tuple(np.shape(leaf)) for leaf in y_leaves)
    arg_leaves, arg_tree = flatten(tuple(args))
    static = tuple(_STATIC if _is_operand(leaf) else leaf for leaf in arg_leaves)
    operands = [_as_operand(leaf) for leaf in arg_leaves if _is_operand(leaf)]
    arg_avals = tuple((tuple(np.shape(a)), np.dtype(a.dtype)) for a in operands)

    system = _base_system(func, y_tree, y_shapes, arg_tree, static, arg_avals)
    flat0 = (np.concatenate([np.ravel(leaf) for leaf in y_leaves]) if len(y_leaves) > 1
             else np.reshape(y_leaves[0], (-1,)))
    ys = _solve(system, flat0, t, operands, _Options(opts))
    n_t = np.shape(t)[0]
    pieces, k = [], 0
    for shape in y_shapes:
        size = int(np.prod(shape, dtype=np.int64))
        pieces.append(np.reshape(ys[:, k:k + size], (n_t,) + shape))
        k += size
    return unflatten(y_tree, pieces)


# -- leaves ---------------------------------------------------------------------------------
_STATIC = None   # the marker of an extra-argument leaf that travels as an operand


def _at():
    src = user_src()
    return f" (at {src})" if src else ""


def _is_operand(leaf):
    return isinstance(leaf, (Tracer, np.ndarray, np.generic, float, int, bool))


def _as_operand(leaf):
    return leaf if isinstance(leaf, Tracer) else np.asarray(leaf)


def _as_float(leaf):
    if np.dtype(getattr(leaf, "dtype", None) or np.result_type(leaf)).kind == "c":
        # SciPy's error: LSODA integrates real states only
        raise TypeError(f"Cannot cast array data from dtype({np.dtype(leaf.dtype).name!r}) "
                        f"to dtype('float64') according to the rule 'safe'")
    if isinstance(leaf, Tracer):
        return leaf.astype(np.float64) if np.dtype(leaf.dtype) != np.float64 else leaf
    return np.asarray(leaf, dtype=np.float64)


def _is_float(aval):
    return np.dtype(aval[1]).kind == "f"


# -- systems --------------------------------------------------------------------------------
class _Options:
    """The solver options (printed with the node)."""

    def __init__(self, opts):
        self.opts = dict(opts)

    def __repr__(self):
        return ", ".join(f"{k}={v!r}" for k, v in self.opts.items() if v is not None)


class _System:
    """``F(y, t, *leaves) -> dy/dt`` on a flat state of ``n`` numbers, with the abstract
    values of its extra-argument leaves; ``concrete(leaves)`` is ``F`` as SciPy's
    ``func(y, t)`` on NumPy arrays."""

    def __init__(self, name, fn, n, arg_avals, concrete=None):
        self.name, self.fn, self.n, self.arg_avals = name, fn, n, arg_avals
        self.float_args = tuple(k for k, aval in enumerate(arg_avals) if _is_float(aval))
        self.p = sum(int(np.prod(arg_avals[k][0], dtype=np.int64)) for k in self.float_args)
        self._concrete = concrete
        self._compiled = None
        self._adjoint = None
        self._tangents = {}

    def concrete(self, leaves):
        if self._concrete is not None:
            return lambda y, s: self._concrete(y, s, leaves)
        if self._compiled is None:
            self._compiled = jit(self.fn)
        compiled = self._compiled
        return lambda y, s: np.asarray(compiled(y, np.float64(s), *leaves), dtype=np.float64)

    def _with(self, leaves, replaced):
        full = list(leaves)
        for k, value in zip(self.float_args, replaced):
            full[k] = value
        return full

    def adjoint(self):
        """The system of ``(y, a, a_t, a_p)`` (``2n + 1 + p`` numbers; module docstring)
        with the same extra arguments."""
        if self._adjoint is None:
            n, fn, float_args = self.n, self.fn, self.float_args

            def adjoint_fn(state, t, *leaves):
                y, a = state[:n], state[n:2 * n]

                def f(y, t, *p):
                    return fn(y, t, *self._with(leaves, p))
                dy, pull = tg_vjp(f, y, t, *[leaves[k] for k in float_args])
                cts = pull(-a)
                return np.concatenate([dy, np.ravel(cts[0]), np.reshape(cts[1], (1,))] +
                                      [np.ravel(c) for c in cts[2:]]) * 1.0

            self._adjoint = _System(f"adjoint of {self.name}", adjoint_fn,
                                    2 * n + 1 + self.p, self.arg_avals)
        return self._adjoint

    def tangent(self, present):
        """The system of ``(y, ẏ)`` (``2n`` numbers) whose extra arguments are this one's
        and then the tangents of its float leaves ``present`` (positions)."""
        if present not in self._tangents:
            n, fn, m = self.n, self.fn, len(self.arg_avals)

            def tangent_fn(state, t, *leaves):
                y, y_dot = state[:n], state[n:]
                primals, dots = leaves[:m], leaves[m:]

                def f(y, *p):
                    full = list(primals)
                    for k, value in zip(present, p):
                        full[k] = value
                    return fn(y, t, *full)
                out, out_dot = tg_jvp(f, (y, *[primals[k] for k in present]), (y_dot, *dots))
                return np.concatenate([out, out_dot]) * 1.0

            avals = self.arg_avals + tuple((self.arg_avals[k][0], np.dtype(np.float64))
                                           for k in present)
            self._tangents[present] = _System(f"tangent of {self.name}", tangent_fn, 2 * n,
                                              avals)
        return self._tangents[present]


# the systems of recent calls, so that a function differentiated again and again (an
# optimiser's loop) compiles its derived systems once
_CACHE = LRU(32)


def _base_system(func, y_tree, y_shapes, arg_tree, static, arg_avals):
    try:
        key = (func, y_tree, y_shapes, arg_tree, static, arg_avals)
        hash(key)
    except TypeError:
        key = None
    system = _CACHE.get(key) if key is not None else None
    if system is not None:
        return system
    sizes = [int(np.prod(s, dtype=np.int64)) for s in y_shapes]
    n = sum(sizes)
    name = getattr(func, "__name__", type(func).__name__)

    def unravel(y):
        if y_tree.kind == "leaf":
            return np.reshape(y, y_shapes[0])
        parts, k = [], 0
        for shape, size in zip(y_shapes, sizes):
            parts.append(np.reshape(y[k:k + size], shape))
            k += size
        return unflatten(y_tree, parts)

    def user_args(leaves):
        it = iter(leaves)
        return unflatten(arg_tree, [next(it) if s is _STATIC else s for s in static])

    def ravel(out):
        if y_tree.kind == "leaf":
            if isinstance(out, (list, tuple)):
                out = _stack(out)
            if int(np.size(out)) != n:
                raise TraceError(f"odeint: func returned {int(np.size(out))} numbers for a "
                                 f"state of {n}{_at()}")
            return np.reshape(out, (n,)) * 1.0
        leaves, tree = flatten(out)
        if tree != y_tree:
            raise TraceError(f"odeint: func returned a result of structure {tree!r}, but y0 "
                             f"has structure {y_tree!r}{_at()}")
        return np.concatenate([np.ravel(leaf + np.zeros(shape))
                               for leaf, shape in zip(leaves, y_shapes)]) * 1.0

    def fn(y, t, *leaves):
        return ravel(func(unravel(y), t, *user_args(leaves)))

    def concrete(y, s, leaves):
        return np.asarray(ravel(func(unravel(y), s, *user_args(leaves))), dtype=np.float64)

    system = _System(name, fn, n, arg_avals, concrete)
    if key is not None:
        _CACHE.put(key, system)
    return system


def _stack(items):
    items = [x if isinstance(x, Tracer) else np.asarray(x, dtype=np.float64) for x in items]
    if not any(isinstance(x, Tracer) for x in items):
        return np.stack(items)
    return np.concatenate([np.reshape(x * 1.0, (-1,)) for x in items])


# -- the solve and its rules ----------------------------------------------------------------
def _solve(system, y0, t, leaves, options):
    """``y`` at the times ``t`` (shape ``(len(t), n)``) of ``system`` from ``y0``."""
    call = _OdeCall(system, options, int(np.shape(t)[0]))
    (ys,) = apply("pure_callback", y0, t, *leaves, callback=call)
    return ys


class _OdeCall:
    """The ``callback`` of a solve's ``pure_callback`` node: SciPy's solve and its
    derivative rules (module docstring). Operands: ``y0`` (n,), ``t`` (T,), the leaves."""

    vectorized = False

    def __init__(self, system, options, n_times):
        self.system, self.options, self.n_times = system, options, n_times
        self.out_avals = [((n_times, system.n), np.dtype(np.float64))]
        self.name = f"odeint({system.name})"
        self.src = user_src()

    def __repr__(self):
        return self.name

    def run(self, operands):
        y0, t, *leaves = [np.asarray(o) for o in operands]
        ys = _scipy_odeint()(self.system.concrete(leaves), np.asarray(y0, dtype=np.float64),
                             np.asarray(t, dtype=np.float64), **self.options.opts)
        return (np.asarray(ys, dtype=np.float64).reshape(self.out_avals[0][0]),)

    def vjp(self, gs, outs, y0, t, *leaves):
        (g,), (ys,) = gs, outs
        none = (None,) * (2 + len(leaves))
        if g is None:
            return none
        system, n = self.system, self.system.n
        adjoint = system.adjoint()
        a = g[-1]
        a_t = np.zeros(())
        a_p = np.zeros(system.p)
        t_cts = []
        for i in range(self.n_times - 1, 0, -1):
            # moving the measurement time tᵢ moves yᵢ along F
            moved = np.dot(system.fn(ys[i], t[i], *leaves), g[i])
            t_cts.append(moved)
            a_t = a_t - moved
            state = np.concatenate([ys[i], a, np.reshape(a_t, (1,)), a_p])
            back = _solve(adjoint, state, np.stack([t[i], t[i - 1]]), list(leaves),
                          self.options)[1]
            a = back[n:2 * n] + g[i - 1]
            a_t, a_p = back[2 * n], back[2 * n + 1:]
        t_cts.append(a_t)
        g_t = np.stack(t_cts[::-1])
        cts, k = [None] * len(leaves), 0
        for j in system.float_args:
            shape = system.arg_avals[j][0]
            size = int(np.prod(shape, dtype=np.int64))
            cts[j] = np.reshape(a_p[k:k + size], shape).astype(system.arg_avals[j][1])
            k += size
        return (a, g_t, *cts)

    def jvp(self, tangents, outs, y0, t, *leaves):
        y0_dot, t_dot, *leaf_dots = tangents
        (ys,) = outs
        system, n = self.system, self.system.n
        present = tuple(k for k in system.float_args if leaf_dots[k] is not None)
        if y0_dot is None and t_dot is None and not present:
            return (None,)
        start = np.zeros(n) if y0_dot is None else y0_dot * 1.0
        if t_dot is not None:
            start = start - system.fn(y0, t[0], *leaves) * t_dot[0]
        sol = _solve(system.tangent(present), np.concatenate([y0 * 1.0, start]), t,
                     list(leaves) + [leaf_dots[k].astype(np.float64) for k in present],
                     self.options)
        out_dot = sol[:, n:]
        if t_dot is not None:
            moved = np.stack([system.fn(ys[i], t[i], *leaves) for i in range(self.n_times)])
            out_dot = out_dot + moved * t_dot[:, None]
        return (out_dot,)
