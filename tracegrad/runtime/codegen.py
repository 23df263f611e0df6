"""NumPy code generation: one Python function per graph, one statement per node, written
by ``ir.evaluate`` with a rule that emits each node's statement (``Emitted`` values).

The generated function calls NumPy directly: arithmetic as Python operators,
other ufuncs and reductions through the ufunc objects (``np.add.reduce`` costs
a third of ``np.sum``), basic indexing as subscripts, constants and callables
bound as globals (a scalar operand of an elementwise operation as a 0-d array of
its dtype, which NumPy takes faster than a Python float). Every statement carries
a ``# file.py:LINE`` comment, every intermediate is released right after its last
use, and a large elementwise result is written into a dead operand's buffer
(``out=``); an output the caller copies into an input's array is computed into
it (``inplace``), and the gradients of disjoint slices are added into one buffer
of zeros. The source is registered with ``linecache`` so tracebacks show it.

Guards are checked as soon as their value is computed: a graph traced under
one branch returns ``GUARD_FAILED`` for inputs that take another.
"""
from __future__ import annotations

import itertools
import keyword
import linecache
import re

import numpy as np

from ..errors import TraceError
from ..ir import REGISTRY, Arg, Graph, Index, Slice
from ..ir.aliasing import own, plan
from ..ir.evaluate import evaluate
from ..ir.lru import LRU
from ..ir.printing import printable

GUARD_FAILED = object()

# Below this many elements a fresh allocation is cheaper than out='s keyword handling.
REUSE_MIN_SIZE = 2048
# What the generator reads off each primitive's registry entry: ``aliasing`` (a "fresh"
# result is a buffer the function owns and may write into; a "view" or "identity" one
# keeps its operand's buffer alive), ``ufunc`` (called with ``out=``), ``spelling`` (the
# source of an operator, method or subscript) and ``reducer`` (``np.add.reduce``).
_SHARES_OPERAND = frozenset({"view", "identity"})
_counter = itertools.count()


class Compiled:
    """A graph compiled to a Python function: ``fn(*inputs) -> list of outputs``.
    ``source`` is the function's source; ``text()`` adds the constants and helpers it
    reads, so that it reads on its own."""

    def __init__(self, fn, source, filename, namespace=None):
        self.fn = fn
        self.source = source
        self.filename = filename
        self.namespace = {} if namespace is None else namespace
        self.inplace: dict = {}     # output position -> input position it is written into

    def __call__(self, *args):
        return self.fn(*args)

    def text(self) -> str:
        """``source`` followed by a definition of each global name it reads (``_c2 =
        np.array([1.0, 2.0])``); large constants and internal helpers are described in a
        comment instead."""
        lines = []
        for name in dict.fromkeys(re.findall(r"\b_[A-Za-z]\w*", self.source)):
            if name in self.namespace:
                lines.append(_definition(name, self.namespace[name]))
        if not lines:
            return self.source
        return (self.source.rstrip("\n") + "\n\n\n# what it reads\nimport numpy as np\n\n"
                + "\n".join(lines) + "\n")


_SHOWN = 16     # constants with more elements are described, not written out


def _definition(name, value) -> str:
    """Python source defining global ``name`` of generated code, or a comment saying what
    it is where its value has no short source."""
    if isinstance(value, np.generic):
        return f"{name} = np.{value.dtype.name}({value.item()!r})"
    if isinstance(value, np.ndarray):
        if value.size <= _SHOWN and value.dtype.kind in "biufc":
            return (f"{name} = np.array({value.tolist()!r}, dtype=np.{value.dtype.name})"
                    if value.ndim else f"{name} = np.{value.dtype.name}({value.item()!r})")
        return f"# {name}: a {value.dtype.name} constant of shape {value.shape}"
    if isinstance(value, np.ufunc):
        return f"{name} = np.{value.__name__}"
    owner = getattr(value, "__self__", None)
    if isinstance(owner, np.ufunc):
        return f"{name} = np.{owner.__name__}.{value.__name__}"
    if callable(value) and getattr(np, getattr(value, "__name__", ""), None) is value:
        return f"{name} = np.{value.__name__}"      # a NumPy function (np.zeros)
    if name.startswith("_impl_") and name[6:] in REGISTRY and REGISTRY[name[6:]].impl is value:
        return f"from tracegrad.ir import REGISTRY\n{name} = REGISTRY[{name[6:]!r}].impl"
    if callable(value):
        where = getattr(value, "__module__", None) or "tracegrad"
        what = getattr(value, "__qualname__", type(value).__name__)
        if what.isidentifier() and where.startswith("tracegrad") and \
                all(part.isidentifier() for part in where.split(".")):
            return f"from {where} import {what} as {name}"
        return f"# {name}: {printable(what)} from {printable(where)}"
    text = printable(repr(value))
    return f"{name} = {text}" if len(text) <= 200 and _is_source(text) else \
        f"# {name}: {printable(type(value).__name__)}"


def _is_source(text) -> bool:
    try:
        compile(text, "<value>", "eval")
    except SyntaxError:
        return False
    return "<" not in text


def _literal(value):
    """Python source for a parameter value, or None if it must be bound as a global."""
    if isinstance(value, (bool, int, str, type(None))):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if np.isfinite(value) else None
    if type(value) is tuple:
        parts = [_literal(v) for v in value]
        if all(p is not None for p in parts):
            return f"({parts[0]},)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"
    return None


def index_source(index, operands):
    """An ``Index`` as subscript source; its ``Arg`` entries name ``operands``."""
    parts = []
    for item in index:
        if isinstance(item, Slice):
            bounds = list(item) if item.step is not None else list(item[:2])
            parts.append(":".join("" if v is None else repr(int(v)) for v in bounds))
        elif isinstance(item, Arg):
            parts.append(operands[item.k])
        elif item is Ellipsis:
            parts.append("...")
        else:
            parts.append(repr(item))
    return ", ".join(parts) if parts else "()"


def spell(spelling, args, params):
    """A primitive's ``spelling`` (see ``registry``) filled with the operands' source
    ``args`` and the parameters' literals; None when a parameter has no literal (the
    generator then calls ``impl``)."""
    sources = {}
    for key, value in params.items():
        if isinstance(value, Index):
            # a subscript: its Arg entries name the operands after the first
            if not all(_literal(i) is not None or isinstance(i, (Slice, Arg))
                       or i is Ellipsis for i in value):
                return None
            sources[key] = index_source(value, args[1:])
        else:
            sources[key] = _literal(value)
            if sources[key] is None:
                return None
    return spelling.format(*args, **sources)


class Emitted:
    """A value of the graph being compiled, as ``ir.evaluate`` holds it: the name of the
    variable (or global) that holds it in the generated function. A guard on it is a line
    of that function (``__tg_guard__``, as a tracer records one in its trace)."""
    __slots__ = ("name", "generator")

    def __init__(self, name, generator):
        self.name, self.generator = name, generator

    def __repr__(self):
        return f"Emitted({self.name})"

    @staticmethod
    def __tg_guard__(value, expected):
        value.generator.guard(value, expected)


class _Generator:
    def __init__(self, graph: Graph, inplace=None):
        self.graph = graph
        self.nodes = graph.by_id
        self.globals: dict = {"GUARD_FAILED": GUARD_FAILED, "np": np}
        self.var: dict = {n: f"x{i}" for i, n in enumerate(graph.inputs)}
        self.scalar: dict = {}  # const node -> its value, for 0-d constants
        self.owned: set = set()
        self.last_use: dict = {}
        for n in graph:
            for a in self.nodes[n]["args"]:
                self.last_use[a] = n
        self.keep = set(graph.outputs) | {n for n, _ in graph.guards}
        self.root: dict = {}
        self.buffer_end = self._buffer_ends()
        self.into = self._into(inplace or {})
        self.scatter_into, self.scatter_sum = self._scatter_sums()
        self.unread = self._unread_zeros()
        self.guards = itertools.count()

    # -- sums of scatters into zeros --------------------------------------------------
    def _zeros(self, n):
        """Whether node ``n`` is +0.0 everywhere: a float constant of zeros (no -0.0),
        reshaped or broadcast."""
        d = self.nodes[n]
        while d["op"] in ("broadcast_to", "reshape"):
            d = self.nodes[d["args"][0]]
        if d["op"] != "const":
            return False
        value = d["params"]["value"]
        return (value.dtype.kind == "f" and value.size <= 64 and not value.any()
                and not np.signbit(value).any())

    def _unread_zeros(self):
        """The broadcasts and reshapes of zeros that only scatters start from (the adjoint
        of indexing: ``index_update(broadcast_to(0, shape), g, index)``): each scatter
        starts from a fresh ``np.zeros`` buffer instead, so no statement computes them
        (NumPy's ``broadcast_to`` costs microseconds of Python per call)."""
        unread: set = set()
        for n in reversed(list(self.graph)):
            d = self.nodes[n]
            if d["op"] not in ("broadcast_to", "reshape") or n in self.keep or \
                    not self._zeros(n):
                continue
            us = self.graph.users(n)
            if us and all(u in unread or (
                    self.nodes[u]["op"] == "index_update" and self.nodes[u]["args"][0] == n
                    and n not in self.nodes[u]["args"][1:] and u not in self.scatter_sum)
                    for u in us):
                unread.add(n)
        return unread

    def _scatter_sums(self):
        """The adjoint of slicing a value into pieces (an LSTM's gates): each piece's
        gradient added into its own zeros, ``index_update(zeros, piece_k, g_k)``, and
        the results summed. Where the pieces are disjoint basic slices of one float
        shape, every element of the sum is ``0 + g_k`` (``+0.0`` plus a value that is
        not ``-0.0`` is that value): the same bits as adding each ``g_k`` into one
        buffer of zeros, which the code then does. Returns ``{scatter: buffer node}``
        (the scatter adds into that buffer in place) and ``{sum node: scatter}`` (the
        sum is that scatter's result)."""
        order = {n: i for i, n in enumerate(self.graph)}
        users: dict = {}
        for n in self.graph:
            for a in self.nodes[n]["args"]:
                users.setdefault(a, []).append(n)
        covered: dict = {}      # node -> mask of where it may be nonzero (zero elsewhere)

        def scatter(n):
            d = self.nodes[n]
            if (d["op"] != "index_update" or len(d["args"]) != 2
                    or d["params"]["mode"] != "add" or not d["params"]["index"].is_basic
                    or not self._zeros(d["args"][0]) or np.dtype(d["dtype"]).kind != "f"
                    or int(np.prod(d["shape"])) > 1 << 20):
                return None
            mask = np.zeros(d["shape"], bool)
            mask[d["params"]["index"].to_numpy()] = True
            return mask

        into, sums = {}, {}
        members: dict = {}      # node -> the nodes whose values live in its buffer
        for n in self.graph:
            d = self.nodes[n]
            if d["op"] in ("input", "const"):
                continue
            mask = scatter(n)
            if mask is not None:
                covered[n] = mask
                members[n] = {n}
                continue
            if d["op"] != "add" or len(d["args"]) != 2:
                continue
            p, q = d["args"]
            if p == q or p not in covered or q not in covered:
                continue
            if order[p] > order[q]:
                p, q = q, p         # q, the later one, adds into p's buffer
            dp, dq = self.nodes[p], self.nodes[q]
            if (any(x in self.keep or users.get(x) != [n] for x in (p, q))
                    or not (dp["shape"] == dq["shape"] == d["shape"])
                    or not (dp["dtype"] == dq["dtype"] == d["dtype"])
                    or (covered[p] & covered[q]).any()):
                continue
            if dq["op"] == "index_update" and q not in into:
                adding, holder = q, p
            elif (dp["op"] == "index_update" and p not in into
                  and min(order[m] for m in members[q]) < order[p]):
                # the earlier one is a lone scatter, the later a sum whose buffer exists by
                # then: the scatter adds into it, through the variable of the sum's latest
                # member before it (alive there: its user is a later member, or ``n``)
                adding = p
                holder = max((m for m in members[q] if order[m] < order[p]),
                             key=order.__getitem__)
            else:
                continue
            other = q if adding == p else p
            if self.root.get(self.nodes[adding]["args"][1]) in members[other]:
                continue        # (nor when it adds a view of that buffer)
            into[adding] = holder
            sums[n] = adding
            covered[n] = covered[p] | covered[q]
            members[n] = members[p] | members[q] | {n}
        return into, sums

    def _into(self, inplace):
        """Node -> input node whose buffer takes the node's value (``out=``): an output
        the caller copies into that input's array anyway (a parameter's update). Only
        an elementwise node of the input's shape and dtype, computed after every guard
        and after the input's buffer is last read, that no view is taken of and that
        is no other output."""
        into = {}
        order = {n: i for i, n in enumerate(self.graph)}
        last_guard = max((order[n] for n, _ in self.graph.guards), default=-1)
        viewed = {r for m, r in self.root.items() if r != m}
        outputs = list(self.graph.outputs)
        taken = set()
        for k, i in inplace.items():
            n, x = outputs[k], self.graph.inputs[i]
            d, src = self.nodes[n], self.nodes[x]
            end = self.buffer_end.get(x, -1)
            if (d["op"] in ("input", "const") or REGISTRY[d["op"]].ufunc is None
                    or outputs.count(n) != 1 or n in viewed or n in into or x in taken
                    or x in self.keep or order[n] <= last_guard
                    or end == float("inf") or (end >= 0 and order[end] > order[n])
                    or d["shape"] != src["shape"] or d["dtype"] != src["dtype"]
                    or not d["shape"]):
                continue
            into[n] = x
            taken.add(x)
        return into

    def _buffer_ends(self):
        """For each buffer, the last node that reads it or any view of it. A buffer may be
        overwritten only there."""
        root, end = {}, {}
        for n in self.graph:
            d = self.nodes[n]
            shares = d["op"] not in ("input", "const") and \
                REGISTRY[d["op"]].aliasing in _SHARES_OPERAND
            root[n] = root.get(d["args"][0], d["args"][0]) if shares else n
            r = root[n]
            last = float("inf") if n in self.keep else self.last_use.get(n, -1)
            end[r] = max(end.get(r, -1), last)
        self.root = root
        return end

    def bind(self, stem, value):
        name = f"_{stem}"
        self.globals[name] = value
        return name

    # -- statements ---------------------------------------------------------------------
    def generate(self, name, bases=None):
        """The function's source: ``ir.evaluate`` run with ``statement`` as its rule, on
        ``Emitted`` values (the names of the variables that will hold them), so the walk,
        its order and where guards are checked are the evaluator's own."""
        self.body, self.dead = [], []
        env = {n: Emitted(self.var[n], self) for n in self.graph.inputs}
        evaluate(self.graph, env, rule=self.statement)
        self.release()
        self.body.extend(self.returns(bases))
        params = ", ".join(self.var[n] for n in self.graph.inputs)
        return f"def {name}({params}):\n" + "\n".join(self.body) + "\n"

    def statement(self, n, d, args):
        """The rule: node ``n`` as a statement (a constant as a global), its operands'
        variables deleted after their last use. Returns its ``Emitted`` value."""
        self.release()
        if n in self.unread:
            self.var[n] = f"_unread{n}"     # never read: see _unread_zeros
        elif d["op"] == "const":
            value = d["params"]["value"]
            if value.ndim == 0:
                self.scalar[n] = value[()]
            self.var[n] = self.bind(f"c{n}", value[()] if value.ndim == 0 else value)
        else:
            comment = f"  # {printable(d['src'])}" if d["src"] else ""
            self.body.append(f"    v{n} = {self.expression(n, d, args)}{comment}")
            self.var[n] = f"v{n}"
            if REGISTRY[d["op"]].aliasing == "fresh":
                self.owned.add(n)
        # (deleted before the next statement: after the guards on this node's value)
        self.dead = sorted({a for a in d["args"] if self.last_use.get(a) == n
                            and a not in self.keep and self.var[a].startswith("v")})
        return Emitted(self.var[n], self)

    def release(self):
        if self.dead:
            self.body.append("    del " + ", ".join(self.var[a] for a in self.dead))
            self.dead = []

    def guard(self, value, expected):
        """A guard on ``value``, where the evaluator checks it: right after its statement."""
        self.body.append(self.guard_line(next(self.guards), value.name, expected))

    def returns(self, bases):
        """The return statement, copying each output that may share memory it must not
        (see ``aliasing``): the caller owns what it gets, except NumPy's own views."""
        lines, names = [], []
        for k, (o, (same, inputs, consts, earlier, from_const)) in enumerate(
                zip(self.graph.outputs, plan(self.graph, bases))):
            if same is not None:
                names.append(names[same])
                continue
            if o in self.into:      # written into its input's buffer on purpose
                names.append(self.var[o])
                continue
            others = ([self.var[self.graph.inputs[i]] for i in inputs]
                      + [self.var[c] for c in consts] + [names[j] for j in earlier])
            if not others:
                names.append(self.var[o])
                continue
            fn = self.bind("own", own)
            lines.append(f"    r{k} = {fn}({self.var[o]}, ({', '.join(others)},), {from_const})")
            names.append(f"r{k}")
        return lines + [f"    return [{', '.join(names)}]"]

    def guard_line(self, k, value_var, expected):
        if isinstance(expected, (bool, np.bool_)):
            return f"    if bool({value_var}) is not {bool(expected)}: return GUARD_FAILED"
        if isinstance(expected, (int, np.integer)):
            return f"    if int({value_var}) != {int(expected)}: return GUARD_FAILED"
        ref = self.bind(f"guard{k}", np.asarray(expected))
        return f"    if not np.array_equal({value_var}, {ref}): return GUARD_FAILED"

    # -- expressions --------------------------------------------------------------------------
    def expression(self, n, d, operands):
        op, params = d["op"], d["params"]
        if n in self.scatter_sum:       # (see _scatter_sums)
            return self.var[self.scatter_sum[n]]
        if n in self.scatter_into:
            fn = self.bind("add_at", _add_at)
            index = self.bind(f"index{n}", params["index"].to_numpy())
            return f"{fn}({self.var[self.scatter_into[n]]}, {index}, {self.var[d['args'][1]]})"
        prim = REGISTRY[op]
        if prim.ufunc is not None:
            return self.elementwise(n, d, prim)
        args = [v.name for v in operands]
        if prim.reducer is not None:
            reducer = prim.reducer
            fn = self.bind(f"np_{reducer.__name__}_reduce", reducer.reduce)
            keep = ", None, None, True" if params["keepdims"] else ""
            return f"{fn}({args[0]}, {_literal(params['axis'])}{keep})"
        if prim.spelling is not None:
            spelled = spell(prim.spelling, args, params)
            if spelled is not None:
                return spelled
        # two code generation strategies of their own: einsum's contraction order found
        # from the shapes at compile time; index_update written into a dead buffer
        if op == "einsum":
            return self.einsum(n, d, args)
        if op == "index_update":
            return self.index_update(n, d, args)
        fn = self.bind(f"impl_{op}", prim.impl)
        for k in params:   # a parameter's name is written into the source as a keyword
            if not (isinstance(k, str) and k.isidentifier()) or keyword.iskeyword(k):
                raise TraceError(f"{op}: parameter name {printable(repr(k))} is not an identifier")
        kw = "".join(f", {k}={self.param_source(n, k, v)}" for k, v in params.items())
        call_args = ", ".join(args)
        return f"{fn}({call_args}{kw})" if call_args else f"{fn}({kw[2:]})"

    def param_source(self, n, key, value):
        lit = _literal(value)
        return lit if lit is not None else self.bind(f"{key}{n}", value)

    def index_update(self, n, d, args):
        """Write into the operand's own buffer when it is dead, else into a copy."""
        index, mode = d["params"]["index"], d["params"]["mode"]
        a = d["args"][0]
        if a in self.owned and self.buffer_end.get(a) == n:
            target = args[0]
        elif self._zeros(a):    # (a gradient scattered into zeros: a fresh buffer of them)
            zeros, dtype = self.bind("np_zeros", np.zeros), np.dtype(self.nodes[a]["dtype"])
            target = f"{zeros}({tuple(self.nodes[a]['shape'])!r}, {dtype.name!r})"
        else:       # (in its own layout, as the primitive's np.array(x, copy=True))
            target = f"{args[0]}.copy(order='K')"
        helper = _set_at if mode == "set" else (_add_at if index.is_basic else _add_at_repeated)
        fn = self.bind(helper.__name__.lstrip("_"), helper)
        if len(args) > 2:       # integer index arrays computed by the graph: operands
            where = f"{self.bind(f'index{n}', index.to_numpy)}(({', '.join(args[2:])},))"
        else:
            where = self.bind(f"index{n}", index.to_numpy())
        return f"{fn}({target}, {where}, {args[1]})"

    def einsum(self, n, d, args):
        # the contraction order is found once here, not on every call
        shapes = [self.nodes[a]["shape"] for a in d["args"]]
        subscripts = d["params"]["subscripts"]
        if len(args) > 2:
            stand_ins = [np.empty(s) for s in shapes]
            path = np.einsum_path(subscripts, *stand_ins, optimize="optimal")[0]
            return (f"{self.bind('np_einsum', np.einsum)}({subscripts!r}, {', '.join(args)}, "
                    f"optimize={self.bind(f'path{n}', path)})")
        return f"{self.bind('np_einsum', np.einsum)}({subscripts!r}, {', '.join(args)})"

    def elementwise(self, n, d, prim):
        operands = [self.operand(a, d) for a in d["args"]]
        if all(a in self.scalar for a in d["args"]):
            operands = [self.var[a] for a in d["args"]]  # keep NumPy scalars: NumPy's result
        if n in self.into:
            target = self.var[self.into[n]]
        else:
            out = self.reusable_operand(n, d)
            if out is None and prim.spelling is not None:
                return prim.spelling.format(*operands)
            target = self.var[d["args"][out]] if out is not None else None
        ufunc = prim.ufunc
        fn = self.bind(f"np_{ufunc.__name__}", ufunc)
        tail = f", out={target}" if target is not None else ""
        return f"{fn}({', '.join(operands)}{tail})"

    def operand(self, a, user):
        """A 0-d constant as a 0-d array of its dtype: NumPy types it as the constant
        (as a NumPy scalar), and a ufunc takes it in a third of the time it takes a Python
        float, whose weak type it must resolve. Not for ``power``, whose operator takes
        a Python exponent 2 or 0.5 as ``square`` or ``sqrt``: there a Python literal when
        NumPy's weak typing of Python scalars gives the same result dtype as the typed
        constant; otherwise its variable."""
        if a not in self.scalar:
            return self.var[a]
        value = self.scalar[a]
        if REGISTRY[user["op"]].ufunc not in (np.power, np.float_power) and \
                isinstance(value, (np.floating, np.integer)):
            name = f"_c{a}_0d"
            if name not in self.globals:
                array = np.array(value)
                array.flags.writeable = False
                self.globals[name] = array
            return name
        if not isinstance(value, (np.floating, np.integer)) or not np.isfinite(value):
            return self.var[a]
        lit = value.item()
        others = [self.nodes[b]["dtype"] for b in user["args"] if b != a]
        const_dtype = self.nodes[a]["dtype"]
        if not others or any(np.result_type(np.dtype(o), lit) != np.result_type(o, const_dtype)
                             for o in others):
            return self.var[a]
        text = repr(lit)
        return f"({text})" if text.startswith("-") else text

    def reusable_operand(self, n, d):
        """Position of a dead operand whose buffer can take this elementwise result."""
        if int(np.prod(d["shape"])) < REUSE_MIN_SIZE:
            return None  # small (and 0-d, whose results are NumPy scalars): allocate
        for pos, a in enumerate(d["args"]):
            src = self.nodes[a]
            if (a in self.owned and self.buffer_end.get(a) == n
                    and src["shape"] == d["shape"] and src["dtype"] == d["dtype"]):
                return pos
        return None


def _set_at(x, index, v):
    x = x if isinstance(x, np.ndarray) else np.array(x)   # a 0-d result may be a scalar
    x[index] = v
    return x


def _add_at(x, index, v):
    x = x if isinstance(x, np.ndarray) else np.array(x)
    x[index] += v
    return x


def _add_at_repeated(x, index, v):
    x = x if isinstance(x, np.ndarray) else np.array(x)
    np.add.at(x, index, v)  # integer arrays may name a position twice: add every one
    return x


def generate(graph: Graph, name="tracegrad_fn", bases=None, inplace=None) -> Compiled:
    """``graph`` as a Python function. ``bases`` (see ``aliasing``) say which outputs NumPy
    gives as inputs or their views; without them they are read off the graph.
    ``inplace`` maps output positions to input positions whose arrays the caller copies
    those outputs into: where it can, the function writes the output straight into the
    input's array (which it then returns) instead; the caller must pass arrays that share
    memory with no other input there. ``Compiled.inplace`` says which pairs it did."""
    gen = _Generator(graph, inplace)
    source = gen.generate(name, bases)
    code = _CODE.get(source)
    if code is None:
        filename = f"<tracegrad-generated-{next(_counter)}>"
        # linecache keeps the source so tracebacks through generated code are readable
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        code = compile(source, filename, "exec")
        if len(source) <= CODE_CACHE_CHARS:
            _CODE.put(source, code)
    exec(code, gen.globals)  # noqa: S102 - our own generated code
    compiled = Compiled(gen.globals[name], source, code.co_filename, gen.globals)
    index = {x: i for i, x in enumerate(graph.inputs)}
    compiled.inplace = {k: index[gen.into[o]] for k, o in enumerate(graph.outputs)
                        if o in gen.into}
    return compiled


# Python's compile() is most of what generating a small graph's function costs, and a
# graph traced again (a loop's body, each time the function holding the loop is traced)
# gives the same source: its code object is kept, keyed by the source (the constants and
# helpers it reads are the globals each generate() binds afresh). Small sources only.
CODE_CACHE_SIZE = 512
CODE_CACHE_CHARS = 20_000
_CODE = LRU(CODE_CACHE_SIZE)
