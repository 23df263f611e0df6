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
        self.expect(len(declared) == count, f"node {n} ({op}) lists {len(declared)} outputs, "
                                            f"its operands and params give {count}")
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
