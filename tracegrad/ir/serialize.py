"""Graphs as JSON: a versioned, documented schema, and a loader that is safe by construction.

The document (``"format": "tracegrad-ir", "version": 1``)::

    {"format": "tracegrad-ir", "version": 1,
     "inputs": [0, 1], "outputs": [5],
     "guards": [{"node": 4, "value": <value>}],
     "nodes": [{"id": 0, "op": "input", "args": [], "shape": [3], "dtype": "float64",
                "params": {"index": 0}, "src": "model.py:12"}, ...]}

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
negative or absurd shapes, and array data that does not match its shape.
"""
from __future__ import annotations

import base64
import json
import math

import numpy as np

from ..errors import TraceError
from .indexspec import Arg, Index, Slice
from .registry import REGISTRY

FORMAT = "tracegrad-ir"
VERSION = 1
MAX_DOCUMENT_BYTES = 256 * 2**20
MAX_ELEMENTS = 2**31            # per node (shape product)
MAX_CONSTANT_BYTES = 2**30      # all arrays of a document together
MAX_NESTING = 8                 # sub-graphs within sub-graphs
_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "complex64", "complex128"}
_NODE_FIELDS = {"id", "op", "args", "shape", "dtype", "params", "src"}
_DOC_FIELDS = {"format", "version", "inputs", "outputs", "guards", "nodes"}


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
                     f"(custom_vjp rules and other Python objects have no JSON form)")


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
    for n, d in graph.nx.nodes(data=True):
        nodes.append({"id": n, "op": d["op"], "args": list(d["args"]), "shape": list(d["shape"]),
                      "dtype": d["dtype"],
                      "params": {k: _encode(v) for k, v in d["params"].items()},
                      "src": d["src"]})
    doc = {"format": FORMAT, "version": VERSION, "inputs": list(graph.inputs),
           "outputs": list(graph.outputs),
           "guards": [{"node": n, "value": _encode(_guard_value(v))} for n, v in graph.guards],
           "nodes": nodes}
    return doc


def _guard_value(v):
    return v if isinstance(v, (bool, int, np.ndarray)) else np.asarray(v)


# -- reading --------------------------------------------------------------------------------
class _Loader:
    def __init__(self):
        self.constant_bytes = 0
        self.depth = 0

    def fail(self, message):
        raise TraceError(f"invalid tracegrad-ir document: {message}")

    def expect(self, condition, message):
        if not condition:
            self.fail(message)

    def int_(self, v, what, lo=None):
        self.expect(type(v) is int and (lo is None or v >= lo), f"{what} must be an integer"
                    + (f" >= {lo}" if lo is not None else "") + f", got {v!r}")
        return v

    def dtype(self, name):
        self.expect(isinstance(name, str) and name in _DTYPES,
                    f"dtype must be one of {sorted(_DTYPES)}, got {name!r}")
        return np.dtype(name)

    def shape(self, value, what):
        self.expect(isinstance(value, list), f"{what} must be a list of sizes")
        dims = tuple(self.int_(d, f"a dimension of {what}", lo=0) for d in value)
        self.expect(len(dims) <= 32, f"{what} has {len(dims)} dimensions (at most 32)")
        self.expect(math.prod(dims) <= MAX_ELEMENTS,
                    f"{what} {dims} has more than {MAX_ELEMENTS} elements")
        return dims

    def value(self, v):
        if v is None or isinstance(v, (bool, str)):
            return v
        if type(v) is int:
            return v
        self.expect(isinstance(v, dict) and len(v) == 1,
                    f"a parameter value must be a JSON scalar or a one-key tagged object, "
                    f"got {v!r:.80}")
        (tag, body), = v.items()
        if tag == "float":
            self.expect(isinstance(body, str), "a float is written as float.hex()")
            try:
                return float.fromhex(body)
            except ValueError:
                self.fail(f"bad float {body!r:.40}")
        if tag == "tuple":
            self.expect(isinstance(body, list), "a tuple holds a list")
            return tuple(self.value(x) for x in body)
        if tag == "dtype":
            return self.dtype(body)
        if tag == "array":
            return self.array(body)
        if tag == "index":
            self.expect(isinstance(body, list), "an index holds a list")
            return Index(self.index_item(x) for x in body)
        if tag == "graph":
            depth = self.depth
            try:
                return self.document(body, depth + 1)
            finally:
                self.depth = depth
        self.fail(f"unknown parameter tag {tag!r:.40}")

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
                return Ellipsis
        value = self.value(item)
        self.expect(value is None or type(value) is int or (
            isinstance(value, np.ndarray) and value.dtype.kind in "iu"),
            "an index item must be an int, None, a slice, ..., an operand or an int array")
        return value

    def load(self, text):
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        self.expect(isinstance(text, str), "the document must be JSON text")
        self.expect(len(text) <= MAX_DOCUMENT_BYTES,
                    f"the document is over {MAX_DOCUMENT_BYTES} bytes")
        try:
            doc = json.loads(text, parse_constant=lambda c: self.fail(f"{c} is not JSON"))
        except json.JSONDecodeError as e:
            self.fail(f"not JSON ({e})")
        except RecursionError:
            self.fail("nested too deeply")
        return self.document(doc)

    def document(self, doc, depth=0):
        from .graph import Graph

        self.expect(depth <= MAX_NESTING, f"sub-graphs nested more than {MAX_NESTING} deep")
        self.depth = depth
        self.expect(isinstance(doc, dict), "the document must be a JSON object")
        self.expect(doc.get("format") == FORMAT, f"format must be {FORMAT!r}")
        self.expect(doc.get("version") == VERSION,
                    f"unsupported version {doc.get('version')!r} (this tracegrad reads "
                    f"version {VERSION})")
        self.expect(set(doc) == _DOC_FIELDS,
                    f"unexpected or missing fields: {sorted(set(doc) ^ _DOC_FIELDS)}")
        self.expect(isinstance(doc["nodes"], list), "nodes must be a list")
        graph = Graph()
        for entry in doc["nodes"]:
            self.node(graph, entry)
        for key in ("inputs", "outputs"):
            self.expect(isinstance(doc[key], list), f"{key} must be a list of node ids")
        inputs = [self.ref(graph, n, "an input") for n in doc["inputs"]]
        declared = [n for n in graph if graph.op(n) == "input"]
        self.expect(inputs == declared, "inputs must list every input node, in order")
        graph.inputs = inputs
        graph.outputs = [self.ref(graph, n, "an output") for n in doc["outputs"]]
        self.expect(isinstance(doc["guards"], list), "guards must be a list")
        for g in doc["guards"]:
            self.expect(isinstance(g, dict) and set(g) == {"node", "value"},
                        "a guard has exactly node and value")
            value = self.value(g["value"])
            graph.guards.append((self.ref(graph, g["node"], "a guard"), value))
        return graph

    def ref(self, graph, n, what):
        self.expect(type(n) is int and n in graph, f"{what} refers to node {n!r}, which is "
                                                   "not defined before it")
        return n

    def node(self, graph, entry):
        self.expect(isinstance(entry, dict) and set(entry) == _NODE_FIELDS,
                    f"a node has exactly the fields {sorted(_NODE_FIELDS)}")
        n = self.int_(entry["id"], "a node id", lo=0)
        self.expect(n not in graph, f"node id {n} appears twice")
        op = entry["op"]
        self.expect(isinstance(op, str) and (op in ("input", "const") or op in REGISTRY),
                    f"unknown op {op!r:.40}")
        self.expect(op != "custom_vjp_call", "custom_vjp nodes cannot be loaded (their rule "
                                             "is Python code)")
        self.expect(isinstance(entry["args"], list), "args must be a list")
        args = [self.ref(graph, a, f"node {n}'s operand") for a in entry["args"]]
        self.expect(op not in ("input", "const") or not args, f"an {op} node has no operands")
        shape = self.shape(entry["shape"], f"node {n}'s shape")
        dtype = self.dtype(entry["dtype"])
        self.expect(isinstance(entry["params"], dict), "params must be an object")
        params = {}
        for k, v in entry["params"].items():
            params[k] = self.value(v)
        if op == "const":
            value = params.get("value")
            self.expect(set(params) == {"value"} and isinstance(value, np.ndarray) and
                        value.shape == shape and value.dtype == dtype,
                        f"const node {n} must hold an array of its shape and dtype")
        if op == "input":
            self.expect(set(params) == {"index"}, f"input node {n} has only an index")
        self.expect(entry["src"] is None or isinstance(entry["src"], str),
                    "src must be a string or null")
        graph.put(n, {"op": op, "args": tuple(args), "shape": shape, "dtype": dtype.name,
                      "params": params, "src": entry["src"]})


def from_json(text):
    return _Loader().load(text)
