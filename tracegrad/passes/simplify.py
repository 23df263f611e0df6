"""Algebraic simplification and constant folding, in one forward sweep: ``ir.evaluate``
with a rule that rebuilds each node in a new graph, rewritten where an identity applies.

Rewrites keep every node's shape and dtype, and every value bit for bit on
every input, as IEEE arithmetic computes it: signed zeros, NaN, inf and
integer wrap-around included. So ``x + 0.0`` is *not* ``x`` for a float ``x``
(``-0.0 + 0.0`` is ``+0.0``) unless ``x`` provably holds no ``-0.0``;
``x - 0.0`` and ``x + (-0.0)`` are ``x``; ``x * 1``, ``x / 1`` and ``x ** 1``
are ``x`` except for complex values (NumPy multiplies by ``1 + 0j``, and
``inf * 0`` is NaN); ``x * 0`` is *not* zero for a zero the program computed
(``x`` may be inf or NaN). The exception is a structural zero (the ``zeros``
a pass made for a missing cotangent), which stands for "no contribution at
all": ``x + zeros`` is ``x`` and ``zeros * x`` is ``zeros`` whatever ``x``
holds.
"""
import numpy as np

from ..ir import REGISTRY, Graph
from ..ir.evaluate import evaluate
from .subgraphs import map_subgraphs

FOLD_LIMIT = 4096  # largest constant (in elements) folding may create


class _Rewriter:
    def __init__(self, graph: Graph):
        self.src_graph = graph
        self.out = Graph()
        self.out.reserve_ids(graph.next_id)

    # -- looking at the new graph --------------------------------------------------------
    def attrs(self, n):
        return self.out.node(n)

    def const(self, n):
        d = self.attrs(n)
        return d["params"]["value"] if d["op"] == "const" else None

    def scalar(self, n):
        """The value of a one-element constant, or of one broadcast to a shape; else None."""
        d = self.attrs(n)
        if d["op"] == "broadcast_to":
            return self.scalar(d["args"][0])
        value = self.const(n)
        return value.reshape(()) if value is not None and value.size == 1 else None

    def is_number(self, n, number):
        value = self.const(n) if self.attrs(n)["op"] != "broadcast_to" else self.scalar(n)
        return (value is not None and value.dtype.kind in "iuf" and value.size > 0
                and bool(np.all(value == number)))

    def is_zeros(self, n):
        return self.attrs(n)["op"] == "zeros"

    def is_all_zero(self, n):
        """Zero-filled by construction: structural zeros, a zero constant, or one broadcast."""
        d = self.attrs(n)
        if d["op"] == "broadcast_to":
            return self.is_all_zero(d["args"][0])
        return self.is_zeros(n) or self.is_number(n, 0)

    def scatter_into_zeros(self, n):
        """The attributes of ``n`` if it adds an update into an all-zero array, else None."""
        d = self.attrs(n)
        if d["op"] == "index_update" and d["params"]["mode"] == "add" \
                and self.is_all_zero(d["args"][0]):
            return d
        return None

    # -- making nodes ------------------------------------------------------------------------
    def node(self, op, args, params, shape, dtype, src):
        return self.out.add_node(op, args, params, shape=shape, dtype=dtype, src=src)

    def zeros(self, d):
        return self.node("zeros", (), {"shape": d["shape"], "dtype": np.dtype(d["dtype"])},
                         d["shape"], d["dtype"], d["src"])

    def fit(self, n, d):
        """Node ``n`` made to have ``d``'s shape and dtype (or None if it cannot)."""
        a = self.attrs(n)
        if a["dtype"] != d["dtype"]:
            if np.can_cast(a["dtype"], d["dtype"], "same_kind"):
                n = self.node("convert", (n,), {"dtype": np.dtype(d["dtype"])}, a["shape"],
                              d["dtype"], d["src"])
            else:
                return None
        if self.attrs(n)["shape"] != d["shape"]:
            try:
                if np.broadcast_shapes(self.attrs(n)["shape"], d["shape"]) != d["shape"]:
                    return None
            except ValueError:
                return None
            n = self.node("broadcast_to", (n,), {"shape": d["shape"]}, d["shape"], d["dtype"],
                          d["src"])
        return n

    # -- the rules ---------------------------------------------------------------------------
    def gives_zeros(self, prim, args):
        """The node is a structural zero by its primitive's ``zeros`` fact (registry)."""
        rule = prim.zeros
        if rule == "any":
            return any(self.is_zeros(a) for a in args)
        if rule == "first":
            return bool(args) and self.is_zeros(args[0])
        if rule == "all":
            return all(self.is_zeros(a) for i, a in enumerate(args) if i not in prim.nondiff_args)
        return False

    def rewrite(self, d, args):
        """A replacement node id for a node with attributes ``d``, or None. Past the
        structural zeros, the rules are algebraic identities of particular primitives."""
        op, p = d["op"], d["params"]
        if self.gives_zeros(REGISTRY[op], args):
            return self.zeros(d)
        if op == "add":
            x, y = args
            if self.adds_nothing(x, y, d):
                return self.fit(x, d)
            if self.adds_nothing(y, x, d):
                return self.fit(y, d)
            return self.add_scattered(d, x, y) or self.add_scattered(d, y, x)
        if op == "select":
            cond = self.const(args[0])
            if cond is not None and cond.size and (cond.all() or not cond.any()):
                return self.fit(args[1] if cond.all() else args[2], d)
        if op == "sub":
            x, y = args
            # x - (+0.0) is x for every x, -0.0 included; x - (-0.0) is x + 0.0
            if self.is_zeros(y) or (self.is_number(y, 0) and self.no_negative_zero(y)):
                return self.fit(x, d)
            if self.is_zeros(x):
                y = self.fit(y, d)
                return None if y is None else self.node("neg", (y,), {}, d["shape"], d["dtype"],
                                                        d["src"])
        # complex values are multiplied (divided, raised) by 1 + 0j: inf * 0 is NaN and
        # -0.0 + 0.0 is +0.0 in the parts, so these identities hold for real values only
        real = np.dtype(d["dtype"]).kind != "c"
        if op == "mul" and real:
            x, y = args
            if self.is_number(y, 1):
                return self.fit(x, d)
            if self.is_number(x, 1):
                return self.fit(y, d)
        if op == "div" and real and self.is_number(args[1], 1):
            return self.fit(args[0], d)
        if op == "pow" and real:
            x, y = args
            if self.is_number(y, 1):
                return self.fit(x, d)
            # NumPy's power computes x ** 2 as x * x (so bit for bit the same)
            if self.is_number(y, 2) and self.attrs(x)["shape"] == d["shape"] \
                    and self.attrs(x)["dtype"] == d["dtype"]:
                return self.node("mul", (x, x), {}, d["shape"], d["dtype"], d["src"])
        if op == "neg" and self.attrs(args[0])["op"] == "neg":
            return self.attrs(args[0])["args"][0]
        if op in ("reshape", "broadcast_to") and self.attrs(args[0])["shape"] == d["shape"]:
            return args[0]
        if op == "reshape" and self.attrs(args[0])["op"] == "reshape":
            inner = self.attrs(args[0])["args"][0]
            if self.attrs(inner)["shape"] == d["shape"]:
                return inner
            return self.node("reshape", (inner,), p, d["shape"], d["dtype"], d["src"])
        if op == "transpose":
            if p["axes"] == tuple(range(len(p["axes"]))):
                return args[0]
            inner = self.attrs(args[0])
            if inner["op"] == "transpose":
                axes = tuple(inner["params"]["axes"][a] for a in p["axes"])
                if axes == tuple(range(len(axes))):
                    return inner["args"][0]
                return self.node("transpose", inner["args"], {"axes": axes}, d["shape"],
                                 d["dtype"], d["src"])
        if op == "convert" and self.attrs(args[0])["dtype"] == d["dtype"]:
            return args[0]
        if op == "sum":
            return self.sum_of_broadcast(d, args[0])
        return None

    def adds_nothing(self, x, y, d):
        """``x + y`` is ``x`` (cast and broadcast to ``d``) bit for bit: ``y`` is a
        structural zero, or a constant zero and ``x + 0`` cannot turn a ``-0.0`` of ``x``
        into ``+0.0`` (``y`` is ``-0.0``, or ``x`` holds no ``-0.0``)."""
        if self.is_zeros(y):
            return True
        if not self.is_number(y, 0) or np.dtype(d["dtype"]).kind == "c":
            return False
        return self.all_negative_zero(y) or self.no_negative_zero(x)

    def all_negative_zero(self, n):
        value = self.scalar(n) if self.attrs(n)["op"] == "broadcast_to" else self.const(n)
        return value is not None and value.dtype.kind == "f" and bool(
            np.all((value == 0) & np.signbit(value)))

    def no_negative_zero(self, n):
        """``n`` provably holds no ``-0.0``: it is not floating point, a constant or
        structural zero without one, or a chain of basic-index additions into such zeros
        (``+0.0 + g`` is never ``-0.0``, and neither is ``a + g`` for such an ``a``)."""
        while True:
            d = self.attrs(n)
            if np.dtype(d["dtype"]).kind not in "fc" or d["op"] == "zeros":
                return True
            if d["op"] == "broadcast_to":
                n = d["args"][0]
                continue
            value = self.const(n)
            if value is not None:
                return not bool(np.any((value == 0) & np.signbit(value.real if value.dtype.kind
                                                                 == "c" else value)))
            if d["op"] == "index_update" and d["params"]["mode"] == "add" \
                    and d["params"]["index"].is_basic and d["dtype"] == self.attrs(
                        d["args"][0])["dtype"]:
                n = d["args"][0]
                continue
            return False

    def add_scattered(self, d, x, y):
        """x + (zeros with g added at idx) is x with g added at idx: the sum of the
        cotangents of several slices of one array touches each slice only. Bit for bit
        only when the positions outside idx are unchanged by adding ``+0.0``, i.e. ``x``
        holds no ``-0.0`` (then ``x + (0.0 + g)`` is ``x + g`` at idx too); with a basic
        index, which names each position once (several additions would round in
        another order)."""
        scatter = self.scatter_into_zeros(y)
        a = self.attrs(x)
        if scatter is None or a["shape"] != d["shape"] or a["dtype"] != d["dtype"]:
            return None
        if not (scatter["params"]["index"].is_basic and self.no_negative_zero(y)
                and self.no_negative_zero(x)):
            return None
        return self.node("index_update", (x,) + scatter["args"][1:], scatter["params"],
                         d["shape"], d["dtype"], d["src"])

    def sum_of_broadcast(self, d, x):
        """sum(broadcast_to(c, shape)) of a constant c is folded; of a scalar s, it is
        s * count (no big temporary) for integers only: a floating sum rounds n times (and
        an empty one is +0.0 where s * 0 is -0.0 or NaN)."""
        b = self.attrs(x)
        if b["op"] != "broadcast_to":
            return None
        s = b["args"][0]
        value = self.const(s)
        if value is not None and int(np.prod(d["shape"])) <= FOLD_LIMIT:
            # a constant (the seed of a gradient): NumPy's own sum of the broadcast view,
            # once, here, is what every call would compute
            with np.errstate(all="ignore"):
                folded = REGISTRY["sum"].impl(np.broadcast_to(value, b["shape"]), **d["params"])
            return self.out.add_const(np.asarray(folded).astype(d["dtype"], copy=False),
                                      src=d["src"])
        if np.dtype(d["dtype"]).kind not in "iub" or self.attrs(s)["shape"] != ():
            return None
        count = int(np.prod([b["shape"][i] for i in d["params"]["axis"]]))
        c = self.out.add_const(np.asarray(count, dtype=d["dtype"]), src=d["src"])
        scaled = self.node("mul", (s, c), {}, (), d["dtype"], d["src"])
        return self.fit(scaled, d)

    def fold_broadcast_scalars(self, d, args):
        """An elementwise op on broadcast scalars is the op on the scalars, broadcast."""
        prim = REGISTRY[d["op"]]
        if prim.family != "elementwise":
            return None
        scalars = [self.scalar(a) for a in args]
        if any(v is None for v in scalars) or all(self.const(a) is not None for a in args):
            return None
        with np.errstate(all="ignore"):
            value = np.asarray(prim.impl(*scalars, **d["params"])).astype(d["dtype"])
        c = self.out.add_const(value, src=d["src"])
        return self.fit(c, d)

    def unbroadcast_scalars(self, d, args):
        """x * broadcast_to(c, shape) is x * c when x alone has the result's shape: the
        constant stays a scalar (a literal, in generated code)."""
        if REGISTRY[d["op"]].ufunc is None:
            return None
        new_args, changed = list(args), False
        for i, a in enumerate(args):
            if self.attrs(a)["op"] == "broadcast_to" and self.scalar(a) is not None:
                rest = [self.attrs(b)["shape"] for j, b in enumerate(args) if j != i]
                if rest and np.broadcast_shapes(*rest) == d["shape"]:
                    value = np.asarray(self.scalar(a), dtype=self.attrs(a)["dtype"])
                    new_args[i] = self.out.add_const(value, src=d["src"])
                    changed = True
        if not changed:
            return None
        return self.node(d["op"], new_args, d["params"], d["shape"], d["dtype"], d["src"])

    def fold(self, d, args):
        """Evaluate a node whose operands are all constants, if the result is small."""
        if not args or not REGISTRY[d["op"]].foldable:
            return None
        values = [self.const(a) for a in args]
        if any(v is None for v in values):
            return None
        size = int(np.prod(d["shape"]))
        if size > max(FOLD_LIMIT, max(v.size for v in values)):
            return None
        with np.errstate(all="ignore"):
            value = np.asarray(REGISTRY[d["op"]].impl(*values, **d["params"]))
        return self.out.add_const(value.astype(d["dtype"], copy=False), src=d["src"])

    # -- the sweep ----------------------------------------------------------------------------
    def rule(self, n, d, args):
        """``ir.evaluate``'s rule: node ``n`` rebuilt in the new graph from its operands'
        new ids ``args``, replaced where a rewrite applies. Returns its new id."""
        args = tuple(args)
        if d["op"] in ("input", "const"):
            return self.out.put(n, d, args)
        new = self.rewrite(d, args)
        if new is None:
            new = self.fold(d, args)
        if new is None:
            new = self.fold_broadcast_scalars(d, args)
        if new is None:
            new = self.unbroadcast_scalars(d, args)
        return new if new is not None else self.out.put(n, d, args)

    def run(self):
        rename = evaluate(self.src_graph, {}, rule=self.rule, guards=False)
        g = self.out
        g.inputs = list(self.src_graph.inputs)
        g.outputs = [rename[o] for o in self.src_graph.outputs]
        g.guards = [(rename[n], v) for n, v in self.src_graph.guards]
        return g


def simplify(graph: Graph) -> Graph:
    """A simplified copy of ``graph`` (run ``prune`` afterwards to drop what it bypassed)."""
    return map_subgraphs(_Rewriter(graph).run(), simplify)
