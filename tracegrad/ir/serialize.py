"""Graphs as JSON: a versioned, documented schema, and a loader that is safe by construction.

The document (``"format": "tracegrad-ir", "version": 2``)::

    {"format": "tracegrad-ir", "version": 2,
     "inputs": [0, 1], "outputs": [5],
     "guards": [{"node": 4, "value": <value>}],
     "nodes": [{"id": 0, "op": "input", "args": [], "shape": [3], "dtype": "float64",
                "params": {"index": 0}, "src": "model.py:12"}, ...]}

A multi-output node (``svd``; see ``ir/registry.py``) is one entry with ``outputs``
in place of ``shape`` and ``dtype``: ``{"id": 3, "op": "svd", "args": [0], "params": {},
"src": ..., "outputs": [{"id": 4, "shape": [3, 3], "dtype": "float64"}, null, ...]}``,
one item per output of the primitive (``null`` for an output the graph dropped); the
loader makes the ``proj`` nodes, which a document never lists. Loops, ``cond`` and
``remat_call`` are multi-output nodes too, their number of outputs given by their
sub-graph params (the loader reads it only once those params have passed their checks).

Version 1 (no multi-output nodes) is read too. It wrote a loop, branch or checkpoint
as one node per output, each with a param ``index``; the loader makes one head node
(an id no node of the document has) for the siblings sharing op, operands and other
params, and each sibling becomes its ``proj`` node under its own id, so the document's
references to it hold (``_Loader.v1_output``).

Nodes are listed in evaluation order and may only refer to nodes listed before
them, so a document cannot describe a cycle. Parameter values are JSON numbers,
strings, booleans and null, or one-key objects tagging everything else:
``{"tuple": [...]}``, ``{"float": "<float.hex()>"}`` (exact, and NaN/inf
safe), ``{"array": {"dtype", "shape", "data": <base64>}}``, ``{"dtype": name}``,
``{"index": [...]}`` with ``{"slice": [start, stop, step]}``, ``{"arg": k}`` and
``{"ellipsis": true}`` items, and ``{"graph": <document>}`` for a sub-graph parameter
(``tg.checkpoint``), a nested document of the same schema.

Loading parses JSON and decodes base64 into NumPy buffers, nothing else: it
never evaluates, imports or unpickles. It rejects, with a ``TraceError`` saying
what is wrong, documents over a size limit, unknown fields, ops and tags,
references to nodes not yet defined, dtypes outside plain numbers and booleans,
negative or absurd shapes, array data that does not match its shape, oversized
integers and strings, deep nesting, and a ``src`` that is not a short printable
``file:line``. Every other node is checked against its primitive's declaration
(``schema.py``: operand count, parameter names, types and ranges, sub-graph
structure), and the registry's shape rule re-derives its shape and dtype, which must
be the declared ones: a loaded node gives its implementation, the code generator and
the JAX lowering nothing the tracer would not have given them.

``from_nx`` (``Graph.from_nx``, at the bottom) reads a networkx graph in ``graph.nx``'s
form into this document, checking every value's exact type first, and validates it with
the same loader.
"""
from __future__ import annotations

import base64
import json
import keyword
import math
import re
import warnings

import numpy as np

from ..errors import TraceError
from .indexspec import Arg, Index, Slice
from .printing import printable
from .registry import PROJ, REGISTRY, Aval
from .schema import DTYPES as _DTYPES
from .schema import MAX_DIMS, MAX_ELEMENTS, MAX_INT, Invalid, check_node

FORMAT = "tracegrad-ir"
VERSION = 2
READS = (1, 2)      # the versions the loader reads
MAX_DOCUMENT_BYTES = 256 * 2**20
MAX_CONSTANT_BYTES = 2**30      # all arrays of a document together
MAX_NESTING = 8                 # sub-graphs within sub-graphs
MAX_VALUE_DEPTH = 4             # tuples within tuples within a parameter value
MAX_STRING = 4096
MAX_SRC = 512
_SRC = re.compile(r".{1,480}:[0-9]{1,9}\Z", re.DOTALL)
_NODE_FIELDS = {"id", "op", "args", "shape", "dtype", "params", "src"}
_MULTI_FIELDS = {"id", "op", "args", "params", "src", "outputs"}
_DOC_FIELDS = {"format", "version", "inputs", "outputs", "guards", "nodes"}
# Version 1 wrote these as one node per output, naming it with a param ``index``
# (``_Loader.v1_output`` reads them)
V1_INDEXED = frozenset({"scan", "while_loop", "cond", "remat_call"})
V1_MAX_INDEX = 2**20


# -- writing ----------------------------------------------------------------------------
def _encode(value):
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, np.bool_):
        return int(value)
    if isinstance(value, float):
        return {"float": value.hex()}
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)  # tobytes() writes C order whatever the strides
        if arr.dtype.name not in _DTYPES:
            raise TraceError(f"cannot serialise an array of dtype {arr.dtype}")
        return {"array": {"dtype": arr.dtype.name, "shape": list(arr.shape),
                          "data": base64.b64encode(arr.astype(arr.dtype.newbyteorder("<"))
                                                   .tobytes()).decode("ascii")}}
    if isinstance(value, np.dtype):
        return {"dtype": value.name}
    if isinstance(value, Index):
        return {"index": [_encode_index_item(i) for i in value]}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return {"tuple": [_encode(v) for v in value]}
    if hasattr(value, "nx") and hasattr(value, "inputs"):     # a sub-graph (tg.checkpoint)
        return {"graph": _document(value)}
    raise TraceError(f"cannot serialise a parameter of type {type(value).__name__} "
                     f"(tg.custom_vjp rules, tg.pure_callback functions and other Python "
                     f"objects have no JSON form)")


def _encode_index_item(item):
    if isinstance(item, Slice):
        return {"slice": [_encode(v) for v in item]}
    if isinstance(item, Arg):
        return {"arg": item.k}
    if item is Ellipsis:
        return {"ellipsis": True}
    return _encode(item)


def to_json(graph) -> str:
    # insertion order, not sorted keys: parameters keep their order through a round trip
    return json.dumps(_document(graph), separators=(",", ":"), allow_nan=False)


def _document(graph) -> dict:
    nodes = []
    groups = graph.output_groups()
    for n, d in graph.items():
        if d["op"] == PROJ:
            continue        # written with its multi-output node
        entry = {"id": n, "op": d["op"], "args": list(d["args"])}
        if n in groups:
            entry["outputs"] = [None if p is None else
                                {"id": p, "shape": list(graph.node(p)["shape"]),
                                 "dtype": graph.node(p)["dtype"]} for p in groups[n]]
        else:
            entry.update(shape=list(d["shape"]), dtype=d["dtype"])
        entry.update(params={k: _encode(v) for k, v in d["params"].items()}, src=d["src"])
        nodes.append(entry)
    doc = {"format": FORMAT, "version": VERSION, "inputs": list(graph.inputs),
           "outputs": list(graph.outputs),
           "guards": [{"node": n, "value": _encode(_guard_value(v))} for n, v in graph.guards],
           "nodes": nodes}
    return doc


def _guard_value(v):
    return v if isinstance(v, (bool, int, np.ndarray)) else np.asarray(v)


# -- reading --------------------------------------------------------------------------------
def _short(v) -> str:
    """A bounded description of a value from a document (``repr`` of a deeply nested list
    could itself recurse too deeply)."""
    if isinstance(v, (list, dict)):
        return f"a JSON {'array' if isinstance(v, list) else 'object'} of {len(v)} items"
    if isinstance(v, str):
        return printable(repr(v[:40]))
    return printable(repr(v)[:60])


class _Loader:
    """Validates a parsed document (``document``) into a ``Graph``. ``what`` names the
    source in its errors; ``from_nx`` (``ir/nxview.py``) converts a networkx graph to a
    document and validates it here, with ``short_outputs``: the view has no ``proj`` node
    for an output no node uses, so a multi-output node's list of outputs may end early."""

    def __init__(self, what="tracegrad-ir document", short_outputs=False):
        self.constant_bytes = 0
        self.depth = 0
        self.what = what
        self.short_outputs = short_outputs

    def fail(self, message):
        raise TraceError(f"invalid {self.what}: {message}")

    def expect(self, condition, message):
        if not condition:
            self.fail(message)

    def int_(self, v, what, lo=None):
        self.expect(type(v) is int and (lo is None or v >= lo) and abs(v) <= MAX_INT,
                    f"{what} must be an integer" + (f" >= {lo}" if lo is not None else "")
                    + f", got {_short(v)}")
        return v

    def parse_int(self, digits):
        # Python refuses to parse ints of over 4300 digits (ValueError); a document has no
        # use for more than 19
        self.expect(len(digits) <= 20, f"an integer of {len(digits)} digits")
        return int(digits)

    def dtype(self, name):
        self.expect(isinstance(name, str) and name in _DTYPES,
                    f"dtype must be one of {sorted(_DTYPES)}, got {_short(name)}")
        return np.dtype(name)

    def shape(self, value, what):
        self.expect(isinstance(value, list), f"{what} must be a list of sizes")
        self.expect(len(value) <= MAX_DIMS, f"{what} has {len(value)} dimensions (at most "
                                            f"{MAX_DIMS})")
        dims = tuple(self.int_(d, f"a dimension of {what}", lo=0) for d in value)
        self.expect(math.prod(dims) <= MAX_ELEMENTS,
                    f"{what} {dims} has more than {MAX_ELEMENTS} elements")
        return dims

    def src(self, v):
        """A source location is printed (dumps, error messages, generated code comments):
        a short printable ``file:line``, nothing else."""
        self.expect(v is None or (isinstance(v, str) and len(v) <= MAX_SRC and v.isprintable()
                                  and _SRC.match(v)),
                    f"src must be null or a short printable 'file:line', got {_short(v)}")
        return v

    def value(self, v, depth=0):
        self.expect(depth <= MAX_VALUE_DEPTH, f"a parameter value nested more than "
                                              f"{MAX_VALUE_DEPTH} deep")
        if v is None or isinstance(v, bool):
            return v
        if isinstance(v, str):
            self.expect(len(v) <= MAX_STRING, f"a string of {len(v)} characters")
            return v
        if type(v) is int:
            return self.int_(v, "an integer parameter")
        self.expect(isinstance(v, dict) and len(v) == 1,
                    f"a parameter value must be a JSON scalar or a one-key tagged object, "
                    f"got {_short(v)}")
        (tag, body), = v.items()
        if tag == "float":
            self.expect(isinstance(body, str) and len(body) <= 40,
                        "a float is written as float.hex()")
            try:
                return float.fromhex(body)
            except (ValueError, OverflowError):
                self.fail(f"bad float {_short(body)}")
        if tag == "tuple":
            self.expect(isinstance(body, list), "a tuple holds a list")
            return tuple(self.value(x, depth + 1) for x in body)
        if tag == "dtype":
            return self.dtype(body)
        if tag == "array":
            return self.array(body)
        if tag == "index":
            self.expect(isinstance(body, list) and len(body) <= MAX_DIMS + 1,
                        f"an index holds a list of at most {MAX_DIMS + 1} items")
            return Index(self.index_item(x) for x in body)
        if tag == "graph":
            depth = self.depth
            try:
                return self.document(body, depth + 1)
            finally:
                self.depth = depth
        self.fail(f"unknown parameter tag {_short(tag)}")

    def array(self, body):
        self.expect(isinstance(body, dict) and set(body) == {"dtype", "shape", "data"},
                    "an array has exactly dtype, shape and data")
        dtype = self.dtype(body["dtype"])
        shape = self.shape(body["shape"], "an array's shape")
        self.expect(isinstance(body["data"], str), "array data is a base64 string")
        nbytes = math.prod(shape) * dtype.itemsize
        self.constant_bytes += nbytes
        self.expect(self.constant_bytes <= MAX_CONSTANT_BYTES,
                    f"the document's arrays exceed {MAX_CONSTANT_BYTES} bytes")
        try:
            raw = base64.b64decode(body["data"].encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            self.fail("array data is not valid base64")
        self.expect(len(raw) == nbytes, f"array data has {len(raw)} bytes, its dtype and "
                                        f"shape need {nbytes}")
        return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)

    def index_item(self, item):
        if isinstance(item, dict) and len(item) == 1:
            (tag, body), = item.items()
            if tag == "slice":
                self.expect(isinstance(body, list) and len(body) == 3,
                            "a slice holds [start, stop, step]")
                parts = [None if b is None else self.int_(b, "a slice bound") for b in body]
                self.expect(parts[2] != 0, "a slice step cannot be zero")
                return Slice(*parts)
            if tag == "arg":
                return Arg(self.int_(body, "an index operand", lo=0))
            if tag == "ellipsis":
                self.expect(body is True, "an ellipsis is written {\"ellipsis\": true}")
                return Ellipsis
            if tag == "array":
                value = self.array(body)
                self.expect(value.dtype.kind in "iu", "an index array must hold integers")
                return value
        self.expect(item is None or type(item) is int,
                    "an index item must be an int, None, a slice, ..., an operand or an "
                    "int array")
        return item if item is None else self.int_(item, "an index")

    def load(self, text):
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                self.fail("the document is not UTF-8 text")
        self.expect(isinstance(text, str), "the document must be JSON text")
        self.expect(len(text) <= MAX_DOCUMENT_BYTES,
                    f"the document is over {MAX_DOCUMENT_BYTES} bytes")
        try:
            doc = json.loads(text, parse_int=self.parse_int,
                             parse_constant=lambda c: self.fail(f"{c} is not JSON"))
        except json.JSONDecodeError as e:
            self.fail(f"not JSON ({e})")
        except RecursionError:
            self.fail("nested too deeply")
        return self.document(doc)

    def document(self, doc, depth=0):
        self.expect(depth <= MAX_NESTING, f"sub-graphs nested more than {MAX_NESTING} deep")
        self.depth = depth
        self.expect(isinstance(doc, dict), "the document must be a JSON object")
        self.expect(doc.get("format") == FORMAT, f"format must be {FORMAT!r}")
        version = doc.get("version")
        self.expect(type(version) is int and version in READS,
                    f"unsupported version {_short(version)} (this tracegrad reads "
                    f"versions {', '.join(map(str, READS))})")
        # per document: its version and, for version 1, its loop nodes grouped (``v1_output``)
        outer = (getattr(self, "version", None), getattr(self, "groups", None),
                 getattr(self, "next_head", None), getattr(self, "const_keys", None))
        self.version, self.groups, self.next_head, self.const_keys = version, {}, None, {}
        try:
            return self._document_body(doc)
        finally:
            self.version, self.groups, self.next_head, self.const_keys = outer

    def _document_body(self, doc):
        from .graph import Graph

        self.expect(set(doc) == _DOC_FIELDS,
                    f"unexpected or missing fields: {_short(sorted(set(doc) ^ _DOC_FIELDS))}")
        self.expect(isinstance(doc["nodes"], list), "nodes must be a list")
        # version 1: a loop's head node takes an id no node of the document has
        self.next_head = 1 + max((e["id"] for e in doc["nodes"] if isinstance(e, dict)
                                  and type(e.get("id")) is int), default=-1)
        graph = Graph()
        for entry in doc["nodes"]:
            self.node(graph, entry)
        for key in ("inputs", "outputs"):
            self.expect(isinstance(doc[key], list), f"{key} must be a list of node ids")
        inputs = [self.ref(graph, n, "an input") for n in doc["inputs"]]
        declared = [n for n in graph if graph.op(n) == "input"]
        self.expect(inputs == declared, "inputs must list every input node, in order")
        self.expect([graph.node(n)["params"]["index"] for n in inputs] ==
                    list(range(len(inputs))), "input nodes must be numbered 0, 1, ... in order")
        graph.inputs = inputs
        graph.outputs = [self.ref(graph, n, "an output") for n in doc["outputs"]]
        self.expect(isinstance(doc["guards"], list), "guards must be a list")
        for g in doc["guards"]:
            self.expect(isinstance(g, dict) and set(g) == {"node", "value"},
                        "a guard has exactly node and value")
            node = self.ref(graph, g["node"], "a guard")
            graph.guards.append((node, self.guard(graph.node(node), self.value(g["value"]))))
        return graph

    def guard(self, d, value):
        """What the generated code checks a guard with must apply to the node's value: a
        boolean of a one-element value, an integer of an integer scalar, an array of the
        node's shape."""
        shape, kind = tuple(d["shape"]), np.dtype(d["dtype"]).kind
        if type(value) is bool:
            self.expect(math.prod(shape) == 1, "a boolean guard needs a one-element value")
        elif type(value) is int:
            self.expect(shape == () and kind in "biu", "an integer guard needs an integer "
                                                       "scalar value")
        else:
            self.expect(isinstance(value, np.ndarray) and value.shape == shape
                        and value.dtype.kind in "biufc" and kind in "biufc",
                        "a guard value is a boolean, an integer or an array of the node's "
                        "shape")
        return value

    def ref(self, graph, n, what):
        self.expect(type(n) is int and n in graph, f"{what} refers to node {_short(n)}, which "
                                                   "is not defined before it")
        op = graph.op(n)
        # a multi-output node's value is a tuple: only its outputs are values to use
        self.expect(op in ("input", "const") or not REGISTRY[op].multi,
                    f"{what} refers to node {n}, a {op} node with several outputs; use one "
                    "of its outputs")
        return n

    def node(self, graph, entry):
        if (self.version == 1 and isinstance(entry, dict) and isinstance(entry.get("op"), str)
                and entry["op"] in V1_INDEXED):
            return self.v1_output(graph, entry)
        multi = (self.version >= 2 and isinstance(entry, dict) and isinstance(entry.get("op"), str)
                 and entry["op"] in REGISTRY and REGISTRY[entry["op"]].multi)
        fields = _MULTI_FIELDS if multi else _NODE_FIELDS
        self.expect(isinstance(entry, dict) and set(entry) == fields,
                    f"a node has exactly the fields {sorted(fields)}")
        n = self.int_(entry["id"], "a node id", lo=0)
        self.expect(n not in graph, f"node id {n} appears twice")
        op = entry["op"]
        self.expect(isinstance(op, str) and (op in ("input", "const") or op in REGISTRY),
                    f"unknown op {_short(op)}")
        self.expect(op != PROJ, "a proj node is written as an output of its multi-output "
                                  "node")
        self.expect(multi or op in ("input", "const") or not REGISTRY[op].multi,
                    f"a {op} node has several outputs (version 2 documents only)")
        if multi:
            return self.multi_node(graph, entry, n, op)
        self.expect(op != "custom_vjp_call", "custom_vjp nodes cannot be loaded (their rule "
                                             "is Python code)")
        args = self.operands(graph, entry, n)
        self.expect(op not in ("input", "const") or not args, f"an {op} node has no operands")
        shape = self.shape(entry["shape"], f"node {n}'s shape")
        dtype = self.dtype(entry["dtype"])
        params = self.params(entry)
        src = self.src(entry["src"])
        if op == "const":
            value = params.get("value")
            self.expect(set(params) == {"value"} and isinstance(value, np.ndarray) and
                        value.shape == shape and value.dtype == dtype,
                        f"const node {n} must hold an array of its shape and dtype")
            if self.version == 1:   # siblings' operands: equal constants count as one
                self.const_keys[n] = (dtype.name, shape, json.dumps(entry["params"]))
        elif op == "input":
            self.expect(set(params) == {"index"} and type(params["index"]) is int,
                        f"input node {n} has only an index")
        else:
            self.derive(n, REGISTRY[op], [graph.node(a) for a in args], params, shape, dtype)
        graph.put(n, {"op": op, "args": tuple(args), "shape": shape, "dtype": dtype.name,
                      "params": params, "src": src})

    def operands(self, graph, entry, n):
        """Node ``n``'s operand ids, each naming a node already read."""
        self.expect(isinstance(entry["args"], list), "args must be a list")
        return [self.ref(graph, a, f"node {n}'s operand") for a in entry["args"]]

    def params(self, entry):
        """A node's params: identifier names, values read by ``value``."""
        self.expect(isinstance(entry["params"], dict), "params must be an object")
        params = {}
        for k, v in entry["params"].items():
            self.expect(k.isidentifier() and not keyword.iskeyword(k) and len(k) <= 64,
                        f"a parameter name must be an identifier, got {_short(k)}")
            params[k] = self.value(v)
        return params

    def multi_node(self, graph, entry, n, op):
        """A multi-output node: the head, then one ``proj`` node per listed output."""
        prim = REGISTRY[op]
        args = self.operands(graph, entry, n)
        params = self.params(entry)
        src = self.src(entry["src"])
        outs = entry["outputs"]
        self.expect(isinstance(outs, list), f"node {n} ({op}): outputs must be a list")
        declared = []
        for out in outs:
            if out is None:
                declared.append(None)
                continue
            self.expect(isinstance(out, dict) and set(out) == {"id", "shape", "dtype"},
                        "an output has exactly id, shape and dtype (or is null)")
            m = self.int_(out["id"], "a node id", lo=0)
            self.expect(m != n and m not in graph and m not in [d[0] for d in declared if d],
                        f"node id {m} appears twice")
            declared.append((m, self.shape(out["shape"], f"node {m}'s shape"),
                             self.dtype(out["dtype"])))
        got = self.rule(n, prim, self.avals(graph, args), params)
        # the number of outputs is read off the params only once they have passed their
        # primitive's declaration (a loop's: its body's outputs)
        count = self.count(n, prim, params, got)
        if self.short_outputs and len(declared) < count:
            declared += [None] * (count - len(declared))
        self.expect(len(declared) == count, f"node {n} ({op}) lists {count} outputs")
        for out, (shape, dtype) in zip(declared, got):
            if out is not None:
                self.expect(tuple(shape) == out[1] and np.dtype(dtype) == out[2],
                            f"node {out[0]} ({op}) declares {out[2].name}{list(out[1])}, but "
                            f"its operands and params give {np.dtype(dtype).name}"
                            f"{list(shape)}")
        graph.put(n, {"op": op, "args": tuple(args), "shape": (),
                      "dtype": np.dtype(got[0][1]).name, "params": params, "src": src})
        for i, out in enumerate(declared):
            if out is not None:
                graph.put(out[0], {"op": PROJ, "args": (n,), "shape": out[1],
                                   "dtype": out[2].name, "params": {"index": i}, "src": src})

    def avals(self, graph, args):
        return [Aval(tuple(graph.node(a)["shape"]), np.dtype(graph.node(a)["dtype"]))
                for a in args]

    def count(self, n, prim, params, got):
        """How many outputs node ``n`` has: its primitive's count for ``params``, which its
        shape rule's result ``got`` must agree with."""
        try:
            count = prim.n_outputs(params)
        except Exception:  # noqa: BLE001 - a count read from params the document got wrong
            count = None
        self.expect(type(count) is int and count >= 1 and isinstance(got, list)
                    and len(got) == count,
                    f"node {n} ({prim.name}) has params that give no number of outputs")
        return count

    def v1_output(self, graph, entry):
        """A version-1 loop, branch or checkpoint node: one node per output, param
        ``index`` naming it. It becomes a ``proj`` node (keeping its id, so the
        document's references to it hold) of a head node made for the first of its
        siblings: the nodes of the same op, operands and params but ``index``. A second
        node for an output already taken makes a head of its own. (Version 1 gave each
        sibling constant operands of its own: constants of equal value count as the
        same operand.)"""
        self.expect(set(entry) == _NODE_FIELDS, f"a node has exactly the fields "
                                                f"{sorted(_NODE_FIELDS)}")
        n = self.int_(entry["id"], "a node id", lo=0)
        self.expect(n not in graph, f"node id {n} appears twice")
        op = entry["op"]
        prim = REGISTRY[op]
        args = self.operands(graph, entry, n)
        shape = self.shape(entry["shape"], f"node {n}'s shape")
        dtype = self.dtype(entry["dtype"])
        src = self.src(entry["src"])
        raw = entry["params"]
        self.expect(isinstance(raw, dict) and "index" in raw,
                    f"node {n} ({op}): a version 1 {op} node names its output in an index "
                    "param")
        index = raw["index"]
        self.expect(type(index) is int and 0 <= index <= V1_MAX_INDEX,
                    f"node {n} ({op}) param index must be an integer in [0, {V1_MAX_INDEX}], "
                    f"got {_short(index)}")
        rest = {k: v for k, v in raw.items() if k != "index"}
        try:
            key = (op, tuple(self.const_keys.get(a, a) for a in args),
                   json.dumps(rest, sort_keys=True))
        except (RecursionError, ValueError, TypeError):
            self.fail(f"node {n} ({op}): params that cannot be compared")
        group = self.groups.get(key)
        if group is None or index in group[2]:
            params = self.params({"params": rest})
            got = self.rule(n, prim, self.avals(graph, args), params)
            self.count(n, prim, params, got)
            head, self.next_head = self.next_head, self.next_head + 1
            graph.put(head, {"op": op, "args": tuple(args), "shape": (),
                             "dtype": np.dtype(got[0][1]).name, "params": params, "src": src})
            group = self.groups[key] = (head, got, set())
        head, got, taken = group
        self.expect(index < len(got), f"node {n} ({op}): index {index} but the node has "
                                      f"{len(got)} outputs")
        want_shape, want_dtype = tuple(got[index][0]), np.dtype(got[index][1])
        self.expect(want_shape == shape and want_dtype == dtype,
                    f"node {n} ({op}) declares {dtype.name}{list(shape)}, but its operands "
                    f"and params give {want_dtype.name}{list(want_shape)}")
        taken.add(index)
        graph.put(n, {"op": PROJ, "args": (head,), "shape": shape, "dtype": dtype.name,
                      "params": {"index": index}, "src": src})

    def rule(self, n, prim, avals, params):
        """``prim``'s declaration checked and its shape rule run on ``avals``."""
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check_node(prim, avals, params)
                return prim.shape_dtype(avals, params)
        except Invalid as e:
            self.fail(f"node {n}: {e}")
        except TraceError as e:
            self.fail(f"node {n} ({prim.name}): {e}")
        except Exception as e:  # noqa: BLE001 - a rule's own error on a bad document
            self.fail(f"node {n} ({prim.name}) does not apply to operands "
                      f"{[(a.shape, a.dtype.name) for a in avals]}: "
                      f"{type(e).__name__}: {printable(str(e))[:200]}")

    def derive(self, n, prim, operands, params, shape, dtype):
        """Check the node against its primitive's declaration, then re-derive its shape and
        dtype with the registry's rule: a document cannot say what the op does not give."""
        avals = [Aval(tuple(d["shape"]), np.dtype(d["dtype"])) for d in operands]
        got_shape, got_dtype = self.rule(n, prim, avals, params)
        self.expect(tuple(got_shape) == shape and np.dtype(got_dtype) == dtype,
                    f"node {n} ({prim.name}) declares {dtype.name}{list(shape)}, but its "
                    f"operands and params give {np.dtype(got_dtype).name}{list(got_shape)}")


def from_json(text):
    return _Loader().load(text)


def from_document(doc, what, short_outputs=False):
    """Validate ``doc``, a parsed document of plain values (dicts, lists, str, int, bool,
    None), into a ``Graph``: the checks ``from_json`` makes after parsing."""
    return _Loader(what, short_outputs).document(doc)


# -- from networkx -------------------------------------------------------------------------
# ``from_nx`` reads a networkx graph in the view's form (below) into the plain document
# ``to_json`` writes, and validates that with the loader above (``from_document``):
# one set of checks for both. Reading never calls anything a value of the networkx graph
# defines: every value's type is compared with ``type(v) is ...`` against a fixed list
# (plain ints, floats, strings, tuples, NumPy arrays and scalars of the loader's dtypes,
# ``Index``, ``Graph``, networkx's own graph classes) before the value is used; dicts are
# read with their own items(), and keys are checked to be plain ``str``/``int`` before
# being hashed.
#
# The form (what ``graph.nx`` gives):
# - a node per IR node, keyed by its id (an int >= 0), its attributes ``op``, ``shape``
#   (tuple or list of ints), ``dtype`` (a name), ``params`` (a dict) and ``src``
#   (``"file:line"`` or None; may be left out); ``args`` may be there, it is not read:
#   operands are the edges;
# - an edge per operand, from the operand to its user, with the attribute ``pos`` (the
#   operand position; its key is not read): positions 0..k-1, each once;
# - ``graph["outputs"]``: the output ids in order; ``graph["guards"]``: ``(node, value)``
#   pairs (may be left out: none);
# - inputs are the nodes of op ``input``, ``params={"index": i}``, numbered 0, 1, ... in
#   node order; constants the nodes of op ``const``, ``params={"value": ndarray}``;
# - a multi-output node (``svd``, ``scan``, ...) is its head node and one ``proj`` node per
#   used output (``params={"index": i}``, one edge from the head), as in the Graph; the
#   head's shape and dtype and the proj nodes' src are not read (the loader derives them);
# - a sub-graph param (scan and cond bodies, ``tg.checkpoint``) is a ``Graph``, or a
#   networkx graph of this same form.
# The graph objects themselves (the networkx graph, a ``Graph`` param) must be of those
# exact classes, and are read from their own dicts, never through their methods: a
# networkx graph's ``_node`` and ``_succ`` (``nxview.contents``; a view, whose filters are
# code, is refused), a ``Graph``'s dict of ``Node``s.

_INTEGERS = tuple(np.dtype(n).type for n in sorted(_DTYPES) if np.dtype(n).kind in "iu")
# NumPy scalars ``_encode`` writes as 0-d arrays (np.float64 is a float, written as one)
_SCALARS = tuple(np.dtype(n).type for n in sorted(_DTYPES)
                 if np.dtype(n).kind not in "iu" and n != "float64")
_DTYPE_TYPES = tuple(type(np.dtype(n)) for n in sorted(_DTYPES))
_REQUIRED = frozenset({"op", "shape", "dtype", "params"})
_ALLOWED = frozenset({"op", "args", "shape", "dtype", "params", "src"})   # graph.FIELDS
_GRAPH_ATTRS = frozenset({"outputs", "guards"})
# What a drawing reads beside the IR (set by the tracer and the adjoint pass): the user's
# name of an input or output (``w``, ``dw``) and the adjoint mark. Carried over to the
# graph read back, each checked by its exact type; JSON does not hold them.
_ANNOTATIONS = {"name": str, "adjoint": bool}
_MAX_NAME = 200
_type_name = type.__dict__["__name__"].__get__    # a class's own name, no metaclass code


def _among(t, types) -> bool:
    """``t in types`` by identity (a set would hash ``t``: its metaclass's code)."""
    return any(t is x for x in types)


def _kind(v) -> str:
    """What ``v`` is, for an error message, without calling anything ``v`` defines."""
    return f"a value of type {_type_name(type(v))!r}"


def from_nx(g):
    """``Graph.from_nx``: read ``g`` (the comment above) and validate it as the JSON
    loader does a document."""
    reader = _NxReader()
    doc = reader.nx_document(g, 0)
    graph = from_document(doc, "networkx graph", short_outputs=True)
    for n, notes in reader.annotations.items():
        if n in graph:
            graph.node(n).update(notes)
    return graph


class _NxReader:
    def __init__(self):
        from .graph import Graph, Node  # graph imports this module

        self.constant_bytes = 0
        self.Graph, self.Node = Graph, Node
        self.annotations: dict = {}     # node of the outer graph -> its _ANNOTATIONS
        self.depth = 0

    def fail(self, message):
        raise TraceError(f"invalid networkx graph: {message}")

    def int_(self, v, what):
        if type(v) is int:
            return v
        if _among(type(v), _INTEGERS):
            return int(v)
        self.fail(f"{what} must be an integer, got {_kind(v)}")

    def str_(self, v, what):
        if type(v) is not str:
            self.fail(f"{what} must be a str, got {_kind(v)}")
        return v

    # -- the graphs ----------------------------------------------------------------------
    def nx_document(self, g, depth):
        from .nxview import contents, is_graph

        if not is_graph(type(g)):
            self.fail(f"expected a networkx MultiDiGraph (graph.nx) or DiGraph, got {_kind(g)}")
        nodes, operands = [], {}
        node_dict, edges, attrs = contents(g, self.fail)
        for n, node_attrs in node_dict.items():
            n = self.node_id(n)
            nodes.append((n, node_attrs))
            operands[n] = {}
        for u, v, data in edges:
            if type(u) is not int or u not in operands or type(v) is not int \
                    or v not in operands:
                self.fail("an edge joins nodes that are not in the graph")
            if type(data) is not dict or len(data) != 1 or type(next(iter(data))) is not str \
                    or "pos" not in data:
                self.fail(f"the edge {u} -> {v} must have exactly the attribute 'pos' "
                          "(the operand position)")
            pos = self.int_(data["pos"], f"the edge {u} -> {v}'s pos")
            if pos in operands[v]:
                self.fail(f"node {v} has two operands at position {pos} ({operands[v][pos]} "
                          f"and {u})")
            operands[v][pos] = u
        if type(attrs) is not dict:
            self.fail(f"the graph's attribute dict is {_kind(attrs)}")
        return self.document(nodes, operands, attrs, depth, "its edges")

    def graph_document(self, graph, depth):
        """A ``Graph`` held in a param (a loop's body), read as strictly as a networkx graph."""
        Node = self.Node
        state = graph.__dict__
        if type(state) is not dict or any(type(k) is not str for k in state) \
                or type(state.get("_nodes")) is not dict:
            self.fail("a sub-graph param is a Graph without its nodes")
        nodes, operands = [], {}
        for n, node in state["_nodes"].items():
            n = self.node_id(n)
            if type(node) is not Node:
                self.fail(f"sub-graph node {n} is {_kind(node)}, not a Node")
            args = node.args
            if type(args) is not tuple:
                self.fail(f"sub-graph node {n}'s args must be a tuple, got {_kind(args)}")
            nodes.append((n, node))
            operands[n] = dict(enumerate(self.int_(a, f"an operand of node {n}") for a in args))
        attrs = {"outputs": state.get("outputs"), "guards": state.get("guards", [])}
        return self.document(nodes, operands, attrs, depth, "its args")

    def node_id(self, n):
        if type(n) is not int or n < 0:
            self.fail(f"node ids must be integers >= 0 (nx.convert_node_labels_to_integers "
                      f"renumbers a graph), got {_kind(n) if type(n) is not int else n}")
        return n

    def document(self, nodes, operands, attrs, depth, where):
        if depth > MAX_NESTING:
            self.fail(f"sub-graphs nested more than {MAX_NESTING} deep")
        for k in attrs:
            if type(k) is not str or k not in _GRAPH_ATTRS:
                self.fail(f"the graph has an attribute {self.key(k)}; it may only have "
                          f"{sorted(_GRAPH_ATTRS)}")
        if "outputs" not in attrs:
            self.fail("the graph has no 'outputs' attribute (graph.nx sets it; set "
                      "g.graph['outputs'] to the output node ids)")
        outputs = [self.int_(o, "an output") for o in self.sequence(attrs["outputs"],
                                                                    "outputs")]
        guards = []
        for pair in self.sequence(attrs.get("guards", []), "guards"):
            pair = self.sequence(pair, "a guard")
            if len(pair) != 2:
                self.fail("a guard is a (node, value) pair")
            guards.append({"node": self.int_(pair[0], "a guard's node"),
                           "value": self.guard_value(pair[1])})
        self.depth = depth
        fields = {n: self.fields(n, a) for n, a in nodes}
        groups = self.groups(fields, operands, where)
        entries = []
        for n in self.order(fields, operands, where):
            op, shape, dtype, params, src = fields[n]
            if op == PROJ:
                continue        # written with its head
            entry = {"id": n, "op": op, "args": [operands[n][i] for i in range(len(operands[n]))]}
            if n in groups:
                entry["outputs"] = [None if p is None else
                                    {"id": p, "shape": self.shape(p, fields[p][1]),
                                     "dtype": self.dtype(p, fields[p][2])}
                                    for p in groups[n]]
            else:
                entry.update(shape=self.shape(n, shape), dtype=self.dtype(n, dtype))
            if src is not None:
                self.str_(src, f"node {n}'s src")
            entry.update(params=self.params(n, params, depth), src=src)
            entries.append(entry)
        inputs = [e["id"] for e in entries if e["op"] == "input"]
        return {"format": FORMAT, "version": VERSION, "inputs": inputs, "outputs": outputs,
                "guards": guards, "nodes": entries}

    def sequence(self, v, what):
        if type(v) is not list and type(v) is not tuple:
            self.fail(f"{what} must be a list, got {_kind(v)}")
        return v

    def key(self, k):
        return repr(k[:40]) if type(k) is str else _kind(k)

    def annotation(self, n, key, value):
        """A drawing's ``name`` or ``adjoint`` of node ``n``, checked by exact type."""
        if type(value) is not _ANNOTATIONS[key]:
            self.fail(f"node {n}'s {key} must be a {_ANNOTATIONS[key].__name__}, got "
                      f"{_kind(value)}")
        if key == "name" and (len(value) > _MAX_NAME or not value.isprintable()):
            self.fail(f"node {n}'s name must be a short printable str")
        if self.depth == 0:
            self.annotations.setdefault(n, {})[key] = value

    def fields(self, n, attrs):
        """``(op, shape, dtype, params, src)`` of node ``n``, each still to be checked."""
        if type(attrs) is self.Node:
            extra = attrs._extra
            if extra is not None and type(extra) is not dict:
                self.fail(f"node {n}'s extra attributes are {_kind(extra)}")
            for k in extra or ():
                if type(k) is not str or k not in _ANNOTATIONS:
                    self.fail(f"node {n} has an attribute {self.key(k)} the IR does not hold "
                              "(delete it)")
                self.annotation(n, k, extra[k])
            return attrs.op, attrs.shape, attrs.dtype, attrs.params, attrs.src
        if type(attrs) is not dict:
            self.fail(f"node {n}'s attributes are {_kind(attrs)}")
        for k in attrs:
            if type(k) is str and k in _ANNOTATIONS:
                self.annotation(n, k, attrs[k])
            elif type(k) is not str or k not in _ALLOWED:
                self.fail(f"node {n} has an attribute {self.key(k)} the IR does not hold "
                          f"(it has {sorted(_ALLOWED)}, and {sorted(_ANNOTATIONS)})")
        missing = _REQUIRED - attrs.keys()
        if missing:
            self.fail(f"node {n} has no {sorted(missing)}")
        return attrs["op"], attrs["shape"], attrs["dtype"], attrs["params"], attrs.get("src")

    def groups(self, fields, operands, where):
        """head -> its ``proj`` node ids by output index (None where there is none)."""
        groups: dict = {}
        for n, (op, _, _, params, _) in fields.items():
            self.str_(op, f"node {n}'s op")
            if op != PROJ:
                continue
            names = list(params) if type(params) is dict else []
            if len(names) != 1 or type(names[0]) is not str or names[0] != "index":
                self.fail(f"proj node {n} must have exactly the param 'index'")
            index = self.int_(params["index"], f"proj node {n}'s index")
            ops = operands[n]
            head = ops.get(0)
            if len(ops) != 1 or head is None:
                self.fail(f"proj node {n} must have exactly one operand (its head), by {where}")
            head_op = fields[head][0]
            if type(head_op) is not str or head_op not in REGISTRY or not REGISTRY[head_op].multi:
                self.fail(f"proj node {n}'s operand {head} is not a node with several outputs")
            if not 0 <= index <= V1_MAX_INDEX:
                self.fail(f"proj node {n}'s index {index} is out of range")
            outs = groups.setdefault(head, [])
            outs.extend([None] * (index + 1 - len(outs)))
            if outs[index] is not None:
                self.fail(f"nodes {outs[index]} and {n} are both output {index} of node {head}")
            outs[index] = n
        for head, (op, *_rest) in fields.items():
            if op in REGISTRY and REGISTRY[op].multi:
                groups.setdefault(head, [])
        return groups

    def order(self, fields, operands, where):
        """The node ids, operands first: the given order where it already is one."""
        done, active, out = set(), set(), []
        for root in fields:
            if root in done:
                continue
            stack = [(root, False)]
            while stack:
                n, expanded = stack.pop()
                if expanded:
                    active.discard(n)
                    done.add(n)
                    out.append(n)
                    continue
                if n in done:
                    continue
                if n in active:
                    self.fail(f"the graph has a cycle through node {n}")
                ops = operands[n]
                if sorted(ops) != list(range(len(ops))):
                    self.fail(f"node {n}'s operand positions are {sorted(ops)} (by {where}); "
                              f"they must be 0..{len(ops) - 1}, each once")
                active.add(n)
                stack.append((n, True))
                for i in range(len(ops) - 1, -1, -1):
                    a = ops[i]
                    if a not in fields:
                        self.fail(f"operand {i} of node {n} is node {a}, which is not in the "
                                  "graph")
                    if a in active:
                        self.fail(f"the graph has a cycle through node {a}")
                    if a not in done:
                        stack.append((a, False))
        return out

    # -- the values ----------------------------------------------------------------------
    def shape(self, n, shape):
        seq = self.sequence(shape, f"node {n}'s shape")
        if len(seq) > MAX_DIMS:
            self.fail(f"node {n}'s shape has {len(seq)} dimensions (at most {MAX_DIMS})")
        return [self.int_(d, f"a dimension of node {n}'s shape") for d in seq]

    def dtype(self, n, dtype):
        if _among(type(dtype), _DTYPE_TYPES):
            return dtype.name
        return self.str_(dtype, f"node {n}'s dtype")

    def params(self, n, params, depth):
        if type(params) is not dict:
            self.fail(f"node {n}'s params must be a dict, got {_kind(params)}")
        out = {}
        for k, v in params.items():
            self.str_(k, f"a parameter name of node {n}")
            out[k] = self.value(v, f"node {n}'s param {self.key(k)}", depth, 0)
        return out

    def value(self, v, what, depth, nesting):
        """The document's form of a param value (``_encode``'s, once its type is known)."""
        if nesting > MAX_VALUE_DEPTH:
            self.fail(f"{what} is nested more than {MAX_VALUE_DEPTH} deep")
        t = type(v)
        if v is None or t is bool or t is str or t is int or t is float or _among(t, _INTEGERS) \
                or t is np.float64 or _among(t, _DTYPE_TYPES):
            return _encode(v)
        if t is np.ndarray or _among(t, _SCALARS):
            return self.array(v, what)
        if t is tuple:
            return {"tuple": [self.value(x, what, depth, nesting + 1) for x in v]}
        if t is Index:
            return {"index": [self.index_item(x, what) for x in v]}
        from .nxview import is_graph

        if t is self.Graph:
            return {"graph": self.graph_document(v, depth + 1)}
        if is_graph(t):
            return {"graph": self.nx_document(v, depth + 1)}
        self.fail(f"{what} is {_kind(v)}; a param holds None, bool, int, float, str, tuple, "
                  "a NumPy array or scalar, a dtype, an index, or a sub-graph")

    def array(self, v, what):
        if not _among(type(v.dtype), _DTYPE_TYPES) or v.dtype.name not in _DTYPES:
            self.fail(f"{what} is an array of dtype {str(v.dtype)[:40]!r}, not one of "
                      f"{sorted(_DTYPES)}")
        self.constant_bytes += v.nbytes
        if self.constant_bytes > MAX_CONSTANT_BYTES:
            self.fail(f"the graph's arrays exceed {MAX_CONSTANT_BYTES} bytes")
        return _encode(v)

    def index_item(self, item, what):
        t = type(item)
        if t is Slice:
            return {"slice": [None if b is None else self.int_(b, f"a slice bound of {what}")
                              for b in item]}
        if t is Arg:
            return {"arg": self.int_(item.k, f"an index operand of {what}")}
        if item is Ellipsis:
            return {"ellipsis": True}
        if item is None or t is int or _among(t, _INTEGERS):
            return _encode(item)
        if t is np.ndarray:
            return self.array(item, what)
        self.fail(f"an index item of {what} is {_kind(item)}")

    def guard_value(self, v):
        t = type(v)
        if t is bool or t is int:
            return v
        if t is float or t is np.float64 or _among(t, _INTEGERS) or _among(t, _SCALARS) or t is np.ndarray:
            return self.array(np.asarray(v), "a guard value")
        self.fail(f"a guard value is {_kind(v)}")
