"""NumPy code generation: one Python function per graph, one statement per node.

The generated function calls NumPy directly, with constants and callables
bound as globals, a ``# file.py:LINE`` comment on every statement, every
intermediate released right after its last use, and elementwise results
written into a dead operand's buffer (``out=``) when shapes and dtypes allow.
The source is registered with ``linecache`` so tracebacks show it.

Guards are checked as soon as their value is computed: a graph traced under
one branch returns ``GUARD_FAILED`` for inputs that take another.
"""
from __future__ import annotations

import itertools
import linecache

import numpy as np

from ..ir import REGISTRY, Graph

GUARD_FAILED = object()

# Primitives whose result is a fresh array this function owns (so a later
# elementwise op may overwrite it once it is dead). Views (reshape, transpose,
# basic indexing, broadcast_to) and pass-throughs are not owned.
_FRESH = {"einsum", "matmul", "sum", "prod", "max", "min", "cumsum", "concatenate", "pad",
          "index_update", "inv", "solve", "cholesky", "select"}
# Primitives whose result may share memory with their first operand.
_VIEWS = {"reshape", "transpose", "getitem", "broadcast_to", "stop_gradient", "convert",
          "custom_vjp_call"}
_SAFE_LITERALS = (int, float, bool, str, type(None))
_counter = itertools.count()


class Compiled:
    """A graph compiled to a Python function: ``fn(*inputs) -> list of outputs``."""

    def __init__(self, fn, source, filename):
        self.fn = fn
        self.source = source
        self.filename = filename

    def __call__(self, *args):
        return self.fn(*args)


def _literal(value):
    """Python source for a parameter value, or None if it must be bound as a global."""
    if isinstance(value, _SAFE_LITERALS):
        return repr(value) if not isinstance(value, float) or np.isfinite(value) else None
    if isinstance(value, tuple) and type(value) is tuple:
        parts = [_literal(v) for v in value]
        if all(p is not None for p in parts):
            return f"({parts[0]},)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"
    return None


class _Emitter:
    def __init__(self, graph: Graph):
        self.graph = graph
        self.globals: dict = {"GUARD_FAILED": GUARD_FAILED, "np": np}
        self.lines: list[str] = []

    def bind(self, stem, value):
        name = f"_{stem}"
        self.globals[name] = value
        return name

    def param_source(self, n, key, value):
        lit = _literal(value)
        return lit if lit is not None else self.bind(f"{key}{n}", value)


def generate(graph: Graph, name="tracegrad_fn") -> Compiled:
    e = _Emitter(graph)
    nodes = graph.nx.nodes
    var = {n: f"x{i}" for i, n in enumerate(graph.inputs)}
    last_use = {}
    for n in graph:
        for a in nodes[n]["args"]:
            last_use[a] = n
    keep = set(graph.outputs)
    guards_at: dict = {}
    for k, (n, expected) in enumerate(graph.guards):
        guards_at.setdefault(n, []).append((k, expected))
        keep.add(n)
    owned: set = set()
    # A buffer may be overwritten only once every view of it is dead too.
    root = {}
    for n in graph:
        d = nodes[n]
        root[n] = root.get(d["args"][0], d["args"][0]) if d["op"] in _VIEWS else n
    buffer_end = {}
    for n in graph:
        r = root[n]
        end = float("inf") if n in keep else last_use.get(n, -1)
        buffer_end[r] = max(buffer_end.get(r, -1), end)
    e.buffer_end = buffer_end

    body = []
    for n in graph:
        d = nodes[n]
        op = d["op"]
        if op == "input":
            pass
        elif op == "const":
            value = d["params"]["value"]
            var[n] = e.bind(f"c{n}", value[()] if value.ndim == 0 else value)
        else:
            v = f"v{n}"
            args = [var[a] for a in d["args"]]
            expr = _expression(e, n, d, args, owned)
            comment = f"  # {d['src']}" if d["src"] else ""
            body.append(f"    {v} = {expr}{comment}")
            var[n] = v
            if op in _FRESH or (op in REGISTRY and "ufunc" in REGISTRY[op].extra):
                owned.add(n)
        for k, expected in guards_at.get(n, ()):
            body.append(_guard_line(e, k, var[n], expected))
        dead = sorted({a for a in d["args"] if last_use.get(a) == n and a not in keep
                       and var[a].startswith("v")})
        if dead:
            body.append("    del " + ", ".join(var[a] for a in dead))
    outs = ", ".join(var[o] for o in graph.outputs)
    body.append(f"    return [{outs}]")
    params = ", ".join(var[n] for n in graph.inputs)
    source = f"def {name}({params}):\n" + "\n".join(body) + "\n"
    filename = f"<tracegrad-generated-{next(_counter)}>"
    # linecache keeps the source so tracebacks through generated code are readable
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), e.globals)  # noqa: S102 - our own generated code
    return Compiled(e.globals[name], source, filename)


def _guard_line(e, k, value_var, expected):
    if isinstance(expected, (bool, np.bool_)):
        return f"    if bool({value_var}) is not {bool(expected)}: return GUARD_FAILED"
    if isinstance(expected, (int, np.integer)):
        return f"    if int({value_var}) != {int(expected)}: return GUARD_FAILED"
    ref = e.bind(f"guard{k}", np.asarray(expected))
    return f"    if not np.array_equal({value_var}, {ref}): return GUARD_FAILED"


def _expression(e, n, d, args, owned):
    prim = REGISTRY[d["op"]]
    params = d["params"]
    ufunc = prim.extra.get("ufunc")
    if ufunc is not None:
        fn = e.bind(f"np_{ufunc.__name__}", ufunc)
        out = _reusable_operand(e.graph, n, owned, e.buffer_end)
        call = f"{fn}({', '.join(args)}"
        if out is not None:
            call += f", out={args[out]}"
        return call + ")"
    emit = prim.extra.get("emit")
    if emit is not None:
        return emit(e, n, args, params)
    fn = e.bind(f"impl_{d['op']}", prim.impl)
    kw = "".join(f", {k}={e.param_source(n, k, v)}" for k, v in params.items())
    call_args = ", ".join(args)
    return f"{fn}({call_args}{kw})" if call_args else f"{fn}({kw[2:]})"


def _reusable_operand(graph, n, owned, buffer_end):
    """Position of a dead operand whose buffer can take this elementwise result."""
    nodes = graph.nx.nodes
    d = nodes[n]
    if not d["shape"]:
        return None  # 0-d results are NumPy scalars: there is no buffer to write into
    for pos, a in enumerate(d["args"]):
        src = nodes[a]
        if (a in owned and buffer_end.get(a) == n
                and src["shape"] == d["shape"] and src["dtype"] == d["dtype"]):
            return pos
    return None
