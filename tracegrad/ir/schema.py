"""What a node of a loaded document may hold: per primitive, its operand count and its
parameters (names, types, ranges), and the structure its sub-graph parameters must have.

A loaded node reaches ``impl(*operands, **params)``, the code generator and the JAX
lowering as it is, so everything those take for granted is checked here first. The
registry's shape rules (``Primitive.shape_dtype``) then re-derive the node's shape and
dtype, and the loader compares them with the declared ones: a rule is written for the
operands and params the tracer records, so it runs only after these checks.

Most primitives need no entry: a ufunc takes ``nin`` operands and no parameters, and
another implementation's required positional parameters are its operands, beside the
commonly named parameters of ``NAMED`` (``axis``, ``keepdims``, ``UPLO``, ...).
Every other primitive declares its parameters in its registry entry (``schema=Spec(...)``,
built of the kinds below); one that does neither cannot be loaded
(``tests/test_json_loader.py`` checks that every registered primitive is covered).
"""
from __future__ import annotations

import inspect
import math
import re
from typing import NamedTuple

import numpy as np

from .indexspec import Arg, Index, Slice

MAX_INT = 2**62           # any integer parameter, shape or slice bound
MAX_ELEMENTS = 2**31      # per node (shape product)
MAX_DIMS = 32             # NumPy's own limit is 64; no traced program needs more
DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                    "uint64", "float16", "float32", "float64", "complex64", "complex128"})


class Invalid(Exception):
    """A node's operands or params break its primitive's declaration."""


def _need(condition, message):
    if not condition:
        raise Invalid(message)


def _is_graph(v):
    return hasattr(v, "nx") and hasattr(v, "inputs")


def _ndim(avals):
    _need(avals, "it needs an operand")
    return len(avals[0].shape)


# -- parameter kinds: each checks one value against the node's operand avals --------------------
def BOOL(v, avals):
    _need(type(v) is bool, f"must be true or false, got {v!r:.40}")


def INT(lo=0, hi=MAX_INT):
    def check(v, avals):
        _need(type(v) is int and lo <= v <= hi, f"must be an integer in [{lo}, {hi}], "
                                                 f"got {v!r:.40}")
    return check


def AXIS(v, avals):
    nd = _ndim(avals)
    _need(type(v) is int and 0 <= v < nd, f"must be an axis in [0, {nd}), got {v!r:.40}")


def AXIS_OR_NONE(v, avals):
    if v is not None:
        AXIS(v, avals)


def AXES(v, avals):
    """Distinct axes of the first operand (the tracer normalises them: no negatives)."""
    nd = _ndim(avals)
    _need(type(v) is tuple and all(type(a) is int and 0 <= a < nd for a in v)
          and len(set(v)) == len(v), f"must be distinct axes in [0, {nd}), got {v!r:.60}")


def PERMUTATION(v, avals):
    nd = _ndim(avals)
    _need(type(v) is tuple and all(type(a) is int for a in v)
          and sorted(v) == list(range(nd)), f"must be a permutation of range({nd}), "
                                            f"got {v!r:.60}")


def SHAPE(v, avals):
    _need(type(v) is tuple and len(v) <= MAX_DIMS
          and all(type(d) is int and 0 <= d <= MAX_ELEMENTS for d in v)
          and math.prod(v) <= MAX_ELEMENTS, f"must be a shape (at most {MAX_DIMS} sizes, "
                                            f"{MAX_ELEMENTS} elements), got {v!r:.60}")


def PAIR(lo):
    def check(v, avals):
        _need(type(v) is tuple and len(v) == 2
              and all(type(a) is int and lo <= a <= 2**31 for a in v),
              f"must be a pair of integers >= {lo}, got {v!r:.60}")
    return check


def WIDTHS(v, avals):
    nd = _ndim(avals)
    _need(type(v) is tuple and len(v) == nd and all(
        type(w) is tuple and len(w) == 2 and all(type(a) is int and 0 <= a <= MAX_ELEMENTS
                                                 for a in w) for w in v),
        f"must be {nd} pairs of widths >= 0, got {v!r:.60}")


def SCALAR(v, avals):
    _need(type(v) in (bool, int, float), f"must be a number, got {v!r:.40}")


def DTYPE(v, avals):
    _need(isinstance(v, np.dtype) and v.name in DTYPES, f"must be a dtype, got {v!r:.40}")


def CHOICE(*values):
    def check(v, avals):
        _need(isinstance(v, str) and v in values, f"must be one of {values}, got {v!r:.40}")
    return check


_TERM = re.compile(r"[A-Za-z]*\Z")


def SUBSCRIPTS(v, avals):
    """Explicit einsum subscripts, as the tracer writes them: ``ab,bc->ac``."""
    _need(isinstance(v, str) and len(v) <= 1024 and v.count("->") == 1,
          f"must be explicit einsum subscripts, got {v!r:.60}")
    ins, out = v.split("->")
    terms = ins.split(",")
    _need(all(_TERM.match(t) and len(set(t)) == len(t) for t in terms + [out])
          and set(out) <= set("".join(terms)),
          f"must be explicit einsum subscripts (letters, none repeated within a term, "
          f"every output letter an input's), got {v!r:.60}")
    _need(len(terms) == len(avals), f"names {len(terms)} operands, the node has {len(avals)}")


def INDEX(v, avals):
    _need(isinstance(v, Index), f"must be an index, got {v!r:.40}")
    for item in v:
        if isinstance(item, Slice):
            _need(all(b is None or (type(b) is int and abs(b) <= MAX_INT) for b in item)
                  and item.step != 0, f"has a bad slice {tuple(item)!r:.60}")
        elif isinstance(item, Arg):
            _need(type(item.k) is int, "has a bad operand reference")
        elif isinstance(item, np.ndarray):
            _need(item.dtype.kind in "iu", "index arrays must hold integers")
        else:
            _need(item is None or item is Ellipsis or (type(item) is int and abs(item) <= MAX_INT),
                  f"has an item {item!r:.40} that is not an int, None, ..., a slice, an "
                  f"operand or an integer array")
    _need(sum(item is Ellipsis for item in v) <= 1, "has more than one ...")


def GRAPH(v, avals):
    _need(_is_graph(v), f"must be a graph, got {v!r:.40}")
    _need(not v.guards, "a sub-graph cannot hold guards (nothing would check them)")


# -- structure beyond single params --------------------------------------------------------------
def _aval(graph, n):
    d = graph.node(n)
    return tuple(d["shape"]), np.dtype(d["dtype"])


def _same(avals, graph, nodes, what):
    got = [(tuple(a.shape), np.dtype(a.dtype)) for a in avals]
    want = [_aval(graph, n) for n in nodes]
    _need(got == want, f"{what}: the operands are {_show(got)}, the sub-graph takes "
                       f"{_show(want)}")


def _show(avals):
    return "[" + ", ".join(f"{d.name}{list(s)}" for s, d in avals) + "]"


def _reshape(avals, params):
    _need(math.prod(params["shape"]) == math.prod(avals[0].shape),
          f"cannot reshape {tuple(avals[0].shape)} to {params['shape']}")


def _index_operands(avals, index, first):
    """Index operands (after the ``first`` array operands) are exactly the ``Arg`` items,
    integer arrays."""
    n_idx = len(avals) - first
    _need(n_idx >= 0, "too few operands")
    ks = sorted(item.k for item in index if isinstance(item, Arg))
    _need(ks == list(range(n_idx)), f"the index refers to operands {ks}, the node has "
                                    f"{n_idx} index operands")
    _need(all(np.dtype(a.dtype).kind in "iu" for a in avals[first:]),
          "index operands must be integer arrays")
    # getitem's shape rule indexes a stand-in, which allocates the result: integer arrays
    # that broadcast to more than a node may hold are refused before it runs
    shapes = [tuple(a.shape) for a in avals[first:]] + [
        item.shape for item in index if isinstance(item, np.ndarray)]
    try:
        size = math.prod(np.broadcast_shapes(*shapes)) if shapes else 1
    except ValueError:
        raise Invalid(f"index arrays of shapes {shapes} do not broadcast together") from None
    _need(size <= MAX_ELEMENTS, f"index arrays broadcast to more than {MAX_ELEMENTS} elements")


def _getitem(avals, params):
    _index_operands(avals, params["index"], 1)


def _index_update(avals, params):
    from .registry import REGISTRY

    _index_operands(avals, params["index"], 2)
    x, v = avals[0], avals[1]
    target, _ = REGISTRY["getitem"].shape_dtype([x, *avals[2:]], {"index": params["index"]})
    v_shape = tuple(v.shape)
    while len(v_shape) > len(target) and v_shape[0] == 1:   # NumPy drops leading 1s
        v_shape = v_shape[1:]
    try:
        fits = np.broadcast_shapes(v_shape, target) == tuple(target)
    except ValueError:
        fits = False
    _need(fits, f"a value of shape {tuple(v.shape)} cannot be written into {tuple(target)}")
    xk, vk = np.dtype(x.dtype), np.dtype(v.dtype)
    if params["mode"] == "add":
        _need(np.can_cast(np.result_type(xk, vk), xk, "same_kind"),
              f"cannot add {vk.name} into {xk.name}")
    _need(vk.kind != "c" or xk.kind == "c", f"cannot write {vk.name} into {xk.name}")


def _fft_axes(avals, params):
    axes = params["axes"] if "axes" in params else (params["axis"],)
    _need(all(avals[0].shape[a] > 0 for a in axes), "cannot transform an empty axis")


def _conv(avals, params):
    """The front ends give both operands one floating dtype (torch's rule), or a complex
    image or weight with a real one (NumPy's promotion; the JAX lowering promotes the real
    one)."""
    x, w = (np.dtype(a.dtype) for a in avals)
    _need(x.kind in "fc" and w.kind in "fc" and (x == w or "c" in (x.kind + w.kind)),
          f"input and weight must share a floating dtype (or one be complex), got "
          f"{x.name} and {w.name}")


def _remat(avals, params):
    g = params["graph"]
    _need(len(g.inputs) == len(avals), f"the sub-graph takes {len(g.inputs)} operands, the "
                                       f"node has {len(avals)}")
    _same(avals, g, g.inputs, "remat_call")
    _need(len(g.outputs) >= 1, "the checkpointed sub-graph has 0 outputs")


def _scan(avals, params):
    body, nc, nx = params["body"], params["n_carry"], params["n_x"]
    length = params["length"]
    _need(nc + nx <= len(avals) and len(body.inputs) == len(avals),
          f"{len(avals)} operands for n_carry={nc}, n_x={nx} and a body of "
          f"{len(body.inputs)} inputs")
    _same(avals[:nc], body, body.inputs[:nc], "scan carry")
    xs = [a._replace(shape=tuple(a.shape)[1:]) for a in avals[nc:nc + nx]]
    _need(all(tuple(a.shape)[:1] == (length,) for a in avals[nc:nc + nx]),
          f"every xs operand must have a leading axis of length {length}")
    _same(xs, body, body.inputs[nc:nc + nx], "scan xs")
    _same(avals[nc + nx:], body, body.inputs[nc + nx:], "scan constants")
    _need(len(body.outputs) >= nc, "the body returns fewer values than the carry")
    _same(avals[:nc], body, body.outputs[:nc], "scan carry out")
    _need(len(body.outputs) >= 1, "the body has 0 outputs")
    _need(all(math.prod((length,) + _aval(body, n)[0]) <= MAX_ELEMENTS
              for n in body.outputs[nc:]), "stacked outputs too large")


def _while(avals, params):
    cond, body, nc, ncond = params["cond"], params["body"], params["n_carry"], params["n_cond"]
    _need(nc + ncond <= len(avals), f"{len(avals)} operands for n_carry={nc}, "
                                    f"n_cond={ncond}")
    carry, cconsts, bconsts = avals[:nc], avals[nc:nc + ncond], avals[nc + ncond:]
    _need(len(cond.inputs) == nc + ncond and len(body.inputs) == len(carry) + len(bconsts),
          "the cond and body graphs take other operands than the node has")
    _same(carry + cconsts, cond, cond.inputs, "while_loop cond")
    _need(len(cond.outputs) >= 1 and _aval(cond, cond.outputs[0]) == ((), np.dtype(bool)),
          "cond must return a boolean scalar first")
    _same(carry + bconsts, body, body.inputs, "while_loop body")
    _need(len(body.outputs) == nc, "the body must return the carry")
    _same(carry, body, body.outputs, "while_loop carry out")
    _need(nc >= 1, "a while_loop needs a carry")


def _cond(avals, params):
    true, false = params["true"], params["false"]
    _need(len(avals) >= 1 and tuple(avals[0].shape) == (), "the predicate must be a "
                                                          "scalar")
    ops = avals[1:]
    for name, g in (("true", true), ("false", false)):
        _need(len(g.inputs) == len(ops), f"the {name} graph takes {len(g.inputs)} "
                                         f"operands, the node has {len(ops)}")
        _same(ops, g, g.inputs, f"cond {name}")
    _need([_aval(true, n) for n in true.outputs] == [_aval(false, n) for n in false.outputs],
          "the branches return different shapes or dtypes")
    _need(len(true.outputs) >= 1, "the branches have 0 outputs")


def INT_ARRAY(v, avals):
    _need(isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind in "iu",
          f"must be a 1-d integer array, got {v!r:.40}")


def TOLERANCE(v, avals):
    _need(type(v) is float and 0.0 < v < 1.0, f"must be a float in (0, 1), got {v!r:.40}")


def _csr(avals, params):
    """A sparse matrix's CSR structure (``ir/prims/sparse.py``): ``indptr`` of one more
    entry than rows, from 0 and never decreasing to the number of stored entries, column
    indices inside the matrix, and one stored value (operand 0) per entry."""
    m, n = params["shape"]
    indptr, indices = params["indptr"], params["indices"]
    _need(len(indptr) == m + 1, f"indptr has {len(indptr)} entries for {m} rows")
    _need(int(indptr[0]) == 0 and bool(np.all(np.diff(indptr) >= 0))
          and int(indptr[-1]) == len(indices),
          "indptr must rise from 0 to the number of stored entries")
    _need(len(indices) == 0 or (int(indices.min()) >= 0 and int(indices.max()) < n),
          f"column indices must lie in [0, {n})")
    data = avals[0]
    _need(tuple(data.shape) == (len(indices),) and np.dtype(data.dtype).kind in "iuf",
          f"the stored values must be {len(indices)} real numbers, got {_show([data])}")


class Spec(NamedTuple):
    params: dict             # name -> kind
    arity: int | None = None  # None: variadic (``minimum`` and ``check`` apply)
    check: object = None     # (avals, params) -> None, after every param passed its kind
    optional: tuple = ()     # params that may be left out
    minimum: int = 0
    nullable: tuple = ()     # params that may be null (their default is None)


REDUCE = Spec({"axis": AXES, "keepdims": BOOL}, 1)
ARG = Spec({"axis": AXIS_OR_NONE, "keepdims": BOOL}, 1)
FFT_NORM = CHOICE("backward", "ortho", "forward")
OUTPUTS = INT(0, 2**20)



def AXIS_ANY(v, avals):
    if type(v) is tuple:
        AXES(v, avals)
    else:
        AXIS_OR_NONE(v, avals)


# Parameter names whose meaning is the same wherever they appear: a primitive without an
# ``schema`` in its registry entry may take these (as NumPy spells them) beside its operands.
NAMED = {"axis": AXIS_ANY, "keepdims": BOOL, "dtype": DTYPE, "upper": BOOL, "lower": BOOL,
         "UPLO": CHOICE("L", "U"), "uplo": CHOICE("L", "U"), "full_matrices": BOOL,
         "compute_uv": BOOL, "mode": CHOICE("reduced", "complete", "r", "raw")}


def spec(prim) -> Spec | None:
    """``prim``'s declaration, derived from its implementation when it has no entry; None
    when it has neither (it cannot be loaded)."""
    declared = getattr(prim, "schema", None)
    if isinstance(prim.impl, np.ufunc) and declared is None:
        return Spec({}, prim.impl.nin)
    try:
        sig = inspect.signature(prim.impl)
    except (TypeError, ValueError):
        return declared
    empty = inspect.Parameter.empty
    if declared is not None:
        # a commonly named parameter the implementation gained later is taken as well
        s = declared
        extra = [p for p in sig.parameters.values() if p.name in NAMED and p.name not in s.params
                 and p.kind != inspect.Parameter.POSITIONAL_ONLY]
        if not extra:
            return s
        return s._replace(params={**s.params, **{p.name: NAMED[p.name] for p in extra}},
                          optional=s.optional + tuple(p.name for p in extra
                                                      if p.default is not empty),
                          nullable=tuple(p.name for p in extra if p.default is None))
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    operands = [p for p in sig.parameters.values()
                if p.name not in NAMED and p.default is empty]
    if not all(p.kind in positional for p in operands):
        return None     # keyword or variadic parameters: they need a declaration
    named = [p for p in sig.parameters.values() if p.name in NAMED]
    return Spec({p.name: NAMED[p.name] for p in named}, len(operands),
                optional=tuple(p.name for p in named if p.default is not empty),
                nullable=tuple(p.name for p in named if p.default is None))


def check_node(prim, avals, params):
    """Raise ``Invalid`` unless ``params`` and the operand ``avals`` fit ``prim``."""
    s = spec(prim)
    _need(s is not None, f"{prim.name} has no parameter declaration (schema=), so it "
                         "cannot be loaded")
    if s.arity is not None:
        _need(len(avals) == s.arity, f"{prim.name} takes {s.arity} operands, got {len(avals)}")
    _need(len(avals) >= s.minimum, f"{prim.name} takes at least {s.minimum} operands")
    unknown = sorted(set(params) - set(s.params))
    missing = sorted(set(s.params) - set(params) - set(s.optional))
    _need(not unknown and not missing, f"{prim.name}: unknown params {unknown!r:.80}, "
                                       f"missing params {missing}")
    for name, value in params.items():
        if value is None and name in s.nullable:
            continue        # left at its default (``dtype=None``)
        try:
            s.params[name](value, avals)
        except Invalid as e:
            raise Invalid(f"{prim.name} param {name} {e}") from None
    if s.check is not None:
        try:
            s.check(avals, params)
        except Invalid as e:
            raise Invalid(f"{prim.name}: {e}") from None
