"""``tg.jit``: trace once per input signature, optimise, compile, cache.

A specialisation is keyed by the arguments' pytree structure, shapes and
dtypes (Python scalars by type, ``static_argnums`` by value). Branch
decisions taken while tracing are guards: the compiled code checks them first
and, when one fails, the function is traced again for the new inputs and the
new specialisation is cached beside the old ones.
"""
from __future__ import annotations

import functools
import gc
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Generic, Literal, overload

import numpy as np

from .. import passes
from .._typing import P
from ..errors import RetraceWarning, TraceError
from ..ir import Graph
from ..runtime.codegen import GUARD_FAILED, generate
from ..tracer import Tracer, flatten, randomness, unflatten, user_src
from ..tracer.core import current_trace
from . import debug

MAX_SPECIALIZATIONS = 16


def optimize(graph: Graph) -> Graph:
    """The pipeline every specialisation goes through before a backend sees it."""
    graph = passes.prune(graph)
    graph = passes.cse(graph)
    graph = passes.simplify(graph)
    return passes.prune(graph)


def _leaf_key(x):
    if isinstance(x, (bool, int, float, complex)):
        return type(x)
    if hasattr(x, "shape") and hasattr(x, "dtype"):  # NumPy arrays and scalars, JAX arrays
        return tuple(x.shape), np.dtype(x.dtype)
    return type(x)


class Lowered:
    """What ``jitted.lower(*args)`` gives: the optimised graph and the backend's text.

    Attributes:
        graph: the optimised ``Graph`` the backend compiled.
    """

    def __init__(self, graph: Graph, text: str) -> None:
        self.graph = graph
        self._text = text

    def as_text(self) -> str:
        """The generated Python source (``backend="numpy"``) or the StableHLO module
        text (``backend="jax"``)."""
        return self._text


class _Entry:
    __slots__ = ("run", "out_tree", "graph", "compiled", "finish", "given_back")

    def __init__(self, run, out_tree, graph, compiled, given_back=(), effects=None):
        self.run, self.out_tree, self.graph, self.compiled = run, out_tree, graph, compiled
        # (output, input) pairs where the function returns that input itself, as NumPy does
        # for ``lambda x: x``: the caller gets its own object back (a Python float too)
        self.given_back = given_back
        # rebuilding the result's structure, without the general unflatten when it is flat
        if out_tree.kind == "leaf":
            self.finish = _first
        elif out_tree.kind == "tuple" and all(c.kind == "leaf" for c in out_tree.children):
            self.finish = tuple
        else:
            self.finish = functools.partial(unflatten, out_tree)
        if effects is not None and effects.records:
            # tg.debug.print: the printed values are extra outputs after the function's own
            finish, n_out, records = self.finish, out_tree.num_leaves, effects.records

            def finish_and_print(out):
                debug.emit_all(records, out[n_out:])
                return finish(out[:n_out])
            self.finish = finish_and_print


def _first(out):
    return out[0]


class Jitted(Generic[P]):
    """A compiled function, as ``tg.jit`` returns it: call it like the function.

    The first call for each input signature (pytree structure, shapes and dtypes; the
    values of ``static_argnums``) traces the function, optimises the graph and compiles
    it; later calls with that signature run the compiled code. Branches taken on traced
    values are guards: inputs taking other branches are traced again, and the new
    specialisation is kept beside the old ones (a ``RetraceWarning`` says when more
    than 16 keep being made). Called on values traced by an enclosing transform, it
    traces straight through.
    """

    def __init__(self, fun: Callable[P, Any], backend: Literal["numpy", "jax"] = "numpy",
                 static_argnums: int | Sequence[int] = (),
                 static_argnames: str | Sequence[str] = (), **jax_options: Any) -> None:
        if backend not in ("numpy", "jax"):
            raise TraceError(f'tg.jit backend must be "numpy" or "jax", got {backend!r}')
        if backend == "numpy" and jax_options:
            raise TraceError(f"{sorted(jax_options)} only apply to backend='jax'")
        functools.update_wrapper(self, fun)
        if not hasattr(self, "__name__"):     # functools.partial, callable objects
            inner = getattr(fun, "func", fun)
            self.__name__ = getattr(inner, "__name__", type(fun).__name__)
        self.fun = fun
        self.backend = backend
        self.static_argnums = ((static_argnums,) if isinstance(static_argnums, int)
                               else tuple(static_argnums))
        self.static_argnames = ((static_argnames,) if isinstance(static_argnames, str)
                                else tuple(static_argnames))
        # as in JAX, a static argument may be named by position or by name: each is
        # completed from the function's signature where it has one
        self._params = _positional_params(fun)
        for i in self.static_argnums:
            if self._params is not None and -len(self._params) <= i < len(self._params):
                name = self._params[i]
                if name not in self.static_argnames:
                    self.static_argnames += (name,)
        if self._params is not None:
            for name in self.static_argnames:
                if name in self._params and self._params.index(name) not in self.static_argnums:
                    self.static_argnums += (self._params.index(name),)
        self.jax_options = jax_options
        self._cache: dict = {}
        # Calls whose arguments are all plain ndarrays (the common case) are looked
        # up by (shape, dtype) alone, skipping the pytree walk.
        self._fast: dict = {}
        self._fast_types = {np.ndarray}  # the jax backend adds JAX's array type
        self._traces = 0
        # the keys of the signatures whose function drew random numbers with NumPy while
        # traced: it runs uncompiled for them (see _drew)
        self._drawing: set = set()

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """``@tg.jit`` on a method: ``obj.f(x)`` calls the compiled ``f(obj, x)``. ``obj``
        is a traced argument when its type is a registered pytree, otherwise static (part
        of the cache key: by its hash, or by identity when it has none)."""
        if obj is None:
            return self
        return functools.partial(self._call_method, obj)

    def _call_method(self, obj, *args, **kwargs):
        if _is_pytree_node(obj):
            return self(obj, *args, **kwargs)
        return self._call_slow((_Static(obj),) + args, kwargs, bound=True)

    # -- calling -----------------------------------------------------------------------
    def _statics(self, args, kwargs, bound=False):
        """The positions and keyword names of the static arguments of this call."""
        n = len(args)
        pos = set()
        for i in self.static_argnums:
            if not -n <= i < n:
                if self._params is not None and -len(self._params) <= i < len(self._params):
                    continue                # given by keyword, or left to its default
                raise TraceError(f"static_argnums={i} is out of range for a call with {n} "
                                 f"positional arguments{_where()}")
            pos.add(i % n)
        if bound:
            pos.add(0)
        names = tuple(k for k in kwargs if k in self.static_argnames)
        return tuple(sorted(pos)), names

    def _split(self, args, kwargs, bound=False):
        pos, names = self._statics(args, kwargs, bound)
        static = (tuple(args[i] for i in pos), tuple((k, kwargs[k]) for k in names))
        dynamic = tuple(a for i, a in enumerate(args) if i not in pos)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in names}
        leaves, tree = flatten((dynamic, dyn_kwargs))
        try:
            key = (tree, pos, static, tuple(_leaf_key(x) for x in leaves))
            hash(key)
        except TypeError:
            raise TraceError("static arguments of tg.jit must be hashable (they key the "
                             f"cache){_where()}") from None
        return key, leaves

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> Any:
        """Run the compiled code for these arguments (compiling it first if needed)."""
        if not kwargs and not self.static_argnums:
            key = []
            for a in args:
                if type(a) not in self._fast_types:
                    break
                key.append((a.shape, a.dtype))
            else:
                for entry in self._fast.get(tuple(key), ()):
                    out = entry.run(*args)
                    if out is not GUARD_FAILED:
                        return entry.finish(out)
        return self._call_slow(args, kwargs)

    def _call_slow(self, args, kwargs, bound=False):
        key, leaves = self._split(args, kwargs, bound)
        if key in self._drawing:
            return self.fun(*_unwrap(args), **kwargs)
        if any(isinstance(x, Tracer) for x in leaves):
            # inside another transform: trace straight through (the outer
            # transform sees the operations themselves)
            return self.fun(*_unwrap(args), **kwargs)
        arrays = [self._as_input(x) for x in leaves]
        self._remember_fast(key, args, kwargs)
        for entry in self._cache.get(key, ()):
            out = entry.run(*arrays)
            if out is not GUARD_FAILED:
                return entry.finish(_given_back(entry, out, arrays, leaves))
        entry = self._specialize(key, args, kwargs, bound)
        if entry is None:  # it closes over values an enclosing transform is tracing
            return self.fun(*_unwrap(args), **kwargs)
        self._remember_fast(key, args, kwargs)
        out = entry.run(*arrays)
        if out is GUARD_FAILED:
            raise TraceError(f"{self.__name__} takes a different branch each time it is traced "
                             f"on these inputs{_where()}")
        return entry.finish(_given_back(entry, out, arrays, leaves))

    def _remember_fast(self, key, args, kwargs):
        """Let later calls with these argument types skip the pytree walk."""
        if kwargs or self.static_argnums or key not in self._cache \
                or any(type(a) is _Static for a in args):
            return
        if self.backend == "jax":
            self._fast_types.update(type(a) for a in args if _is_jax_array(a))
        if all(type(a) in self._fast_types for a in args):
            self._fast[tuple((a.shape, a.dtype) for a in args)] = self._cache[key]

    def _as_input(self, x):
        if isinstance(x, np.ndarray):
            return x
        if self.backend == "jax" and hasattr(x, "shape") and hasattr(x, "dtype") \
                and not isinstance(x, np.generic):
            return x  # a JAX array stays on its device
        return np.asarray(x)

    def _specialize(self, key, args, kwargs, bound=False):
        # Building graphs makes many small long-lived objects: the cyclic garbage
        # collector would rescan them over and over (compile time quadratic in the
        # graph size), and there is no cyclic garbage to find here.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            drawing = randomness.watch(self.fun, _unwrap(args), kwargs)
            traced = self._trace(args, kwargs, bound)
            drawn = drawing.drawn()
            if traced is None:
                if drawn:       # the caller runs the function itself: draw once, not twice
                    drawing.restore()
                return None
            if drawn:
                return self._drew(key, traced, drawn)
            graph, out_tree, bases, effects = traced
            graph = optimize(graph)
            if self.backend == "numpy":
                # (a broadcast an arithmetic ufunc makes itself is left to it: the same bits)
                compiled = generate(passes.elide_broadcasts(graph), name=_safe_name(self.__name__),
                                    bases=bases)
            else:
                from ..runtime.jax_backend import JaxCompiled
                compiled = JaxCompiled(graph, **self.jax_options)
        finally:
            if gc_was_enabled:
                gc.enable()
        # the generated function itself is called on the hot path (no wrapper call)
        run = compiled.fn if self.backend == "numpy" else compiled
        given_back = tuple((k, b[1]) for k, b in enumerate(bases)
                           if b[0] == "input" and graph.outputs[k] == graph.inputs[b[1]])
        entry = _Entry(run, out_tree, graph, compiled, given_back, effects)
        entries = self._cache.setdefault(key, [])
        entries.insert(0, entry)
        self._traces += 1
        if len(entries) > MAX_SPECIALIZATIONS:
            entries.pop()
            warnings.warn(f"tg.jit: {self.__name__} has been traced {self._traces} times; "
                          f"its branches depend on input values, so only the latest "
                          f"{MAX_SPECIALIZATIONS} specialisations are kept. Consider moving "
                          f"the value-dependent control flow out of the jitted function, or "
                          f"static_argnums", RetraceWarning, stacklevel=3)
        return entry

    def _check_traceable(self, args, kwargs, pos, names):
        """A TraceError naming ``static_argnums`` / ``static_argnames`` for an argument that
        is not an array or a number (a string, a callable, an object): it cannot be traced,
        but it can key the cache."""
        given = [(i, a) for i, a in enumerate(args) if i not in pos] + \
            [(k, v) for k, v in kwargs.items() if k not in names]
        for where_, a in given:
            for leaf in flatten(a)[0]:
                if isinstance(leaf, Tracer) or _is_jax_array(leaf):
                    continue
                try:
                    kind = np.asarray(leaf).dtype.kind
                except Exception:       # noqa: BLE001  (whatever NumPy makes of it)
                    kind = "O"
                if kind in "biufc":
                    continue
                if isinstance(where_, int):
                    param = (self._params[where_] if self._params is not None
                             and where_ < len(self._params) else None)
                    how = f"tg.jit(f, static_argnums={where_})" + (
                        f" or tg.jit(f, static_argnames='{param}')" if param else "")
                    what = f"argument {where_}" + (f" ({param})" if param else "")
                else:
                    how, what = f"tg.jit(f, static_argnames='{where_}')", f"argument {where_}="
                raise TraceError(
                    f"{what} of {self.__name__} is a {type(leaf).__name__}: tg.jit traces "
                    f"arrays and numbers (and tuples, lists and dicts of them) only. Declare it "
                    f"static, {how}, and its value keys the compiled cache (it must be "
                    f"hashable), or close over it{_where()}")

    def _drew(self, key, traced, drawn):
        """The function drew random numbers with NumPy while it was traced: compiled, it
        would return those same numbers on every call. It runs uncompiled instead, for
        this signature, from now on (every call draws from the same streams, and leaves
        them in the same state, as the plain NumPy function: bit for bit). This call's
        numbers were drawn by the trace: the recorded graph, uncompiled, gives its result
        (the function is not run twice)."""
        from ..runtime.interpreter import run
        graph, out_tree, _, effects = traced
        if not self._drawing:
            warnings.warn(
                f"tg.jit: {self.__name__} draws random numbers ({drawn[0]}), so it "
                f"is not compiled: it runs as plain NumPy on every call, drawing fresh numbers "
                f"as the plain function does (compiled, it would return the same numbers every "
                f"time). To compile it, draw the numbers outside and pass them in as an "
                f"argument{_where()}", RetraceWarning, stacklevel=_user_stacklevel())
        self._drawing.add(key)
        return _Entry(lambda *arrays: run(graph, list(arrays)), out_tree, graph, None,
                      effects=effects)

    def _trace(self, args, kwargs, bound=False):
        from .tracing import _Traced

        pos, names = self._statics(args, kwargs, bound)
        self._check_traceable(args, kwargs, pos, names)
        statics = {i: _unwrap_one(args[i]) for i in pos}
        static_kw = {k: kwargs[k] for k in names}
        kwargs = {k: v for k, v in kwargs.items() if k not in names}
        n = len(args)
        traced_inputs = []

        sinks = []

        def flat_fun(dynamic_and_kwargs):
            traced_inputs.extend(flatten(dynamic_and_kwargs)[0])
            dynamic, kw = dynamic_and_kwargs
            it = iter(dynamic)
            full = [statics[i] if i in statics else next(it) for i in range(n)]
            sinks.append(debug._Sink(current_trace()))
            token = debug.EFFECTS.set(sinks[-1])
            try:
                return self.fun(*full, **kw, **static_kw)
            finally:
                debug.EFFECTS.reset(token)

        dynamic = tuple(a for i, a in enumerate(args) if i not in statics)
        t = _Traced(flat_fun, ((dynamic, kwargs),), {}, (0,), user_src(),
                    differentiable=False, differentiates=False)
        if len(t.eval_args) != t.n_in:
            # Values captured from an enclosing trace would be extra inputs no caller
            # passes: such a function is traced through, not compiled on its own.
            return None
        graph = t.graph
        effects = sinks[-1]
        printed = [t._as_node_value(t.trace, x) for x in effects.tracers]
        graph.outputs = graph.outputs[:t.n_out] + [x._node for x in printed]
        return graph, t.out_tree, _numpy_bases(traced_inputs, t.out_values + printed), effects

    # -- looking inside ------------------------------------------------------------------
    def lower(self, *args: P.args, **kwargs: P.kwargs) -> Lowered:
        """The optimised graph and generated code for these arguments.

        Args:
            *args: arguments as for a call (they pick the specialisation; it is
                compiled if there is none yet).
            **kwargs: keyword arguments as for a call.

        Returns:
            A ``Lowered``: ``.as_text()`` is the NumPy source or the StableHLO text,
            ``.graph`` the optimised graph.

        Raises:
            TraceError: the function closes over values traced by an enclosing
                transform, so it has no compiled form of its own.
        """
        key, leaves = self._split(args, kwargs)
        if key in self._drawing:
            raise TraceError(f"{self.__name__} draws random numbers (NumPy's or Python's "
                             f"random), so it is not "
                             f"compiled (it runs as plain NumPy on every call){_where()}")
        arrays = [self._as_input(x) for x in leaves]
        entry = next((e for e in self._cache.get(key, ())
                      if e.run(*arrays) is not GUARD_FAILED), None)
        if entry is None:
            entry = self._specialize(key, args, kwargs)
        if entry is None:
            raise TraceError(f"{self.__name__} closes over values traced by an enclosing "
                             f"transform, so it has no compiled form of its own{_where()}")
        if entry.compiled is None:
            raise TraceError(f"{self.__name__} draws random numbers (NumPy's or Python's "
                             f"random), so it is not "
                             f"compiled (it runs as plain NumPy on every call){_where()}")
        if self.backend == "numpy":
            text = entry.compiled.text()      # the source, then the constants it reads
        else:
            text = entry.compiled.as_text(*arrays)
        return Lowered(entry.graph, text)

    @property
    def cache_size(self) -> int:
        """How many specialisations are cached."""
        return sum(len(v) for v in self._cache.values())


class _Static:
    """A method's receiver as a static argument: keyed by its hash, or by identity when
    it has none (a mutable object)."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        try:
            return hash((type(self.obj), self.obj))
        except TypeError:
            return id(self.obj)

    def __eq__(self, other):
        if type(other) is not _Static:
            return NotImplemented
        if self.obj is other.obj:
            return True
        try:
            hash(self.obj)
        except TypeError:
            return False
        return type(self.obj) is type(other.obj) and bool(self.obj == other.obj)


def _unwrap_one(a):
    return a.obj if type(a) is _Static else a


def _unwrap(args):
    return tuple(_unwrap_one(a) for a in args)


def _is_pytree_node(obj):
    from ..tracer.pytree import _NODES
    return type(obj) in _NODES


def _positional_params(fun):
    """The names of ``fun``'s positional parameters in order, or None if unknown."""
    import inspect
    try:
        sig = inspect.signature(fun)
    except (TypeError, ValueError):
        return None
    return [p.name for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _numpy_bases(inputs, outputs):
    """The bases (``ir.aliasing``) of a traced function's outputs, from the Python
    objects the function returned: an input itself or a NumPy view of one (the tracer
    records views) has that input as its base; any other output has the array its view
    chain starts from, so outputs share a base exactly when NumPy's results share memory.
    ``np.copy(x)``, ``x * 1.0`` and the like are new objects, whatever node they name."""
    bases = []
    for v in outputs:
        root = v
        while isinstance(root, Tracer) and root._view is not None:
            root = root._view.base
        i = next((i for i, x in enumerate(inputs) if x is root), None)
        bases.append(("input", i) if i is not None else ("object", id(root)))
    return bases


def _given_back(entry, out, arrays, leaves):
    """An input the function returns as is goes back as the caller's own object (a Python
    number the call turned into an array included)."""
    for k, i in entry.given_back:
        if out[k] is arrays[i] and leaves[i] is not arrays[i]:
            out[k] = leaves[i]
    return out


def _is_jax_array(x):
    return type(x).__module__.startswith("jax") and hasattr(x, "shape") and hasattr(x, "dtype")


def _safe_name(name):
    name = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return name if name and not name[0].isdigit() else f"fn_{name}"


def _user_stacklevel():
    """The ``stacklevel`` that makes a warning raised by the caller point at the first
    frame outside tracegrad."""
    import os
    import sys
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _where():
    src = user_src()
    return f" (at {src})" if src else ""


@overload
def jit(fun: Callable[P, Any], *, backend: Literal["numpy", "jax"] = "numpy",
        static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
        **jax_options: Any) -> Jitted[P]: ...
@overload
def jit(fun: None = None, *, backend: Literal["numpy", "jax"] = "numpy",
        static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
        **jax_options: Any) -> Callable[[Callable[P, Any]], Jitted[P]]: ...
def jit(fun: Callable[P, Any] | None = None, *, backend: Literal["numpy", "jax"] = "numpy",
        static_argnums: int | Sequence[int] = (), static_argnames: str | Sequence[str] = (),
        **jax_options: Any) -> Jitted[P] | Callable[[Callable[P, Any]], Jitted[P]]:
    """Compile ``fun``: ``@tg.jit``, ``@tg.jit(backend="jax")``, ``tg.jit(f, ...)``.

    Args:
        fun: the function to compile, written with NumPy (it may be a transformed
            function such as ``tg.grad(f)``). Leave it out to get a decorator.
        backend: ``"numpy"`` generates Python/NumPy source (no extra install);
            ``"jax"`` lowers to JAX and compiles with XLA (float64 stays float64).
        static_argnums: positions of arguments that are not traced: their values
            (hashable) are part of the cache key.
        static_argnames: names of keyword arguments that are static likewise (a
            parameter named in either is static however it is passed).
        **jax_options: passed to ``jax.jit`` (``in_shardings``, ``out_shardings``,
            ``donate_argnums``); only with ``backend="jax"``.

    Returns:
        A ``Jitted`` function (or, without ``fun``, a decorator making one).

    Raises:
        TraceError: an unknown backend, or JAX options with the NumPy backend.
    """
    if fun is None:
        return lambda f: Jitted(f, backend, static_argnums, static_argnames, **jax_options)
    return Jitted(fun, backend, static_argnums, static_argnames, **jax_options)
