"""A fuzzer for ``tg.Graph.from_json``: mutated documents never run code and never fail
with anything but ``TraceError``.

Valid documents (elementwise code, reductions, indexing with index operands, checkpoint,
loops and branches, linear algebra, FFTs, convolutions, the examples' models and their
derivative graphs) are mutated by a seeded mutator: ops, shapes, dtypes, parameter
values and types, parameter names, operand lists, ids, field sets, nesting, huge numbers,
sub-graphs spliced from other documents, and in every string field payloads that would
run code if they ever reached ``exec`` (they would create the canary file). Each mutant
is loaded, then run by the interpreter (``graph(*xs)``), by ``tg.jit`` (NumPy code
generation), by the code generator directly and by the JAX backend. Each must end in a
result or a ``TraceError``; a document whose loop runs for too long (a ``while_loop``
whose condition never turns false, a ``fori_loop`` of 2**62 steps: programs that do not
halt, not loader bugs) is stopped by a timer. The canary must never exist.

Default runs take an evenly spread slice of the cases (``conftest.bounded``);
``TRACEGRAD_EXHAUSTIVE=1`` runs all of them.
"""
from __future__ import annotations

import base64
import copy
import functools
import json
import os
import pathlib
import runpy
import signal
import tempfile
import warnings

import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg
from tracegrad.ir import REGISTRY
from tracegrad.runtime.codegen import GUARD_FAILED, generate

from primitive_cases import CASES

CANARY = pathlib.Path(tempfile.gettempdir()) / f"tracegrad-loader-canary-{os.getpid()}"
_C = str(CANARY)
PAYLOADS = [
    f"a.py:1\nopen({_C!r}, 'w').close()",
    f"a.py:1\r__import__('os').system('touch {_C}')",
    f"__import__('os').system('touch {_C}')",
    f"x'); open({_C!r}, 'w'); ('",
    f'x"); open({_C!r}, "w"); ("',
    f"a.py:1\u2028open({_C!r}, 'w')",
    f"a.py:1\x00\nopen({_C!r}, 'w')",
    f"ab,bc->ac'), open({_C!r}, 'w'), ('",
    f"x=open({_C!r}, 'w'), y",
    f"\\\nopen({_C!r}, 'w')",
]
HUGE_INTS = [2**62, 2**62 + 1, 2**63, -(2**63), 10**30, 2**31, -1, 0, 1, 7]


# -- valid documents --------------------------------------------------------------------
def _example(name):
    folder = pathlib.Path(__file__).resolve().parent.parent / "examples"
    return runpy.run_path(str(folder / f"{name}.py"), run_name=f"fuzz_{name}")


def _elementwise(x, y):
    return np.sin(x) * 2.0 + np.exp(-x) / (1.0 + y ** 2) - np.maximum(x, y) * np.abs(y)


def _reductions(a):
    return (np.sum(a, axis=0), np.max(a, axis=1, keepdims=True), np.prod(a[:, :2]),
            np.argmax(a, axis=1), np.cumsum(a, axis=1), np.mean(a))


def _indexing(a, i):
    order = np.argsort(a, axis=1)
    z = np.zeros_like(a)
    z[1] = a[0] * 2.0
    z[:, 0] += 1.0
    return (a[1:, ::-1], a[None, ..., 0], np.take_along_axis(a, order, axis=1), z,
            a[i], a[np.array([0, 2, 1])], np.concatenate([a, a], axis=0), np.pad(a, 1))


def _linalg(m, b):
    s = m @ m.T + 3.0 * np.eye(3)
    return (np.linalg.det(s), np.linalg.solve(s, b), np.linalg.inv(s),
            np.einsum("ij,jk->ik", m, s), np.linalg.cholesky(s), np.fft.fft(b),
            np.fft.rfft(b), np.transpose(m.reshape(3, 3, 1), (2, 0, 1)))


def _checkpointed(x):
    block = tg.checkpoint(lambda v: np.tanh(v) * v)
    return np.sum(block(block(x)))


def _loops(x):
    y = tg.fori_loop(0, 3, lambda i, v: v * 0.5 + 1.0, x)
    c, ys = tg.scan(lambda c, v: (c + v, c * v), np.zeros(()), x)
    w = tg.while_loop(lambda v: np.sum(v) < 10.0, lambda v: v + 1.0, x)
    z = tg.cond(x[0] > 0, lambda v: v * 2.0, lambda v: -v, x)
    return np.sum(y) + c + np.sum(ys) + np.sum(w) + np.sum(z)


def _loops_no_while(x):
    y = tg.fori_loop(0, 3, lambda i, v: v * 0.5 + 1.0, x)
    c, ys = tg.scan(lambda c, v: (c + v, c * v), np.zeros(()), x)
    return np.sum(y) + c + np.sum(ys) + np.sum(tg.cond(x[0] > 0, np.sin, np.cos, x))


def _seed_specs():
    """name -> (function, args): traced into the seed documents."""
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 1.5, (3, 4))
    x = rng.uniform(0.5, 1.5, 3)
    m = rng.uniform(-1, 1, (3, 3))
    specs = {
        "elementwise": (_elementwise, (x, x[::-1].copy())),
        "elementwise_grad": (tg.grad(lambda x, y: np.sum(_elementwise(x, y))), (x, x + 1.0)),
        "elementwise_f32": (_elementwise, (x.astype(np.float32), np.float32(2.0))),
        "reductions": (_reductions, (a,)),
        "reductions_hessian": (tg.hessian(lambda v: np.sum(np.max(v.reshape(3, 4), axis=0)
                                                           * np.prod(v[:3]))), (a.ravel(),)),
        "indexing": (_indexing, (a, np.array([2, 0]))),
        "indexing_grad": (tg.grad(lambda a: np.sum(_indexing(a, np.array([2, 0]))[2] ** 2)), (a,)),
        "linalg": (_linalg, (m, x)),
        "linalg_grad": (tg.grad(lambda m, b: np.sum(_linalg(m, b)[1]) + _linalg(m, b)[0]),
                        (m, x)),
        "checkpoint": (_checkpointed, (x,)),
        "checkpoint_grad": (tg.grad(_checkpointed), (x,)),
        "loops": (_loops, (x,)),
        "loops_grad": (tg.grad(_loops_no_while), (x,)),
        "loops_jvp": (lambda v: tg.jvp(_loops, (v,), (np.ones(3),)), (x,)),
    }
    lin = _example("linear_regression")
    specs["example_linear_regression"] = (tg.grad(lin["loss"], argnums=(0, 1)), (1.0, 0.0))
    vdp = _example("implicit_van_der_pol")
    s = np.array([2.0, 0.0])
    specs["example_van_der_pol"] = (tg.jacobian(vdp["residual"]), (s, s, 0.05))
    digits = _example("digits_mlp_cnn")
    onehot = np.eye(10)[[1, 2]]
    cnn_p = digits["init_cnn"](np.random.default_rng(1))
    images = rng.standard_normal((2, 1, 8, 8))
    specs["example_cnn_grad"] = (
        tg.grad(lambda p, xs: digits["cross_entropy"](digits["cnn"](p, xs), onehot)),
        (cnn_p, images))
    mlp_p = digits["init_mlp"](np.random.default_rng(1))
    specs["example_mlp"] = (lambda p, xs: digits["cross_entropy"](digits["mlp"](p, xs), onehot),
                            (mlp_p, rng.standard_normal((2, 64))))
    # one application of every primitive, as the primitive tests make it
    for name, cases in sorted(CASES.items()):
        if name not in ("custom_vjp_call", "pure_callback"):   # Python code: never saved
            specs[f"prim_{name}"] = (cases[0].fn, cases[0].args)
    return specs


SEEDS = sorted(_seed_specs())


@functools.cache
def _seed_docs():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name: json.loads(tg.trace(fn, *args).to_json())
                for name, (fn, args) in _seed_specs().items()}


# -- the mutator ------------------------------------------------------------------------------
def _graph_docs(doc):
    """``doc`` and every sub-graph document inside it."""
    out = [doc]
    for node in doc.get("nodes", ()):
        for v in dict(node.get("params", {})).values():
            if isinstance(v, dict) and "graph" in v and isinstance(v["graph"], dict):
                out += _graph_docs(v["graph"])
    return out


def _nodes(doc):
    return [n for d in _graph_docs(doc) for n in d["nodes"]]


def _ops(doc):
    return [n for n in _nodes(doc) if n.get("op") not in ("input", "const")]


def _random_value(rng, docs):
    choices = [
        lambda: int(rng.choice(HUGE_INTS)),
        lambda: bool(rng.integers(2)),
        lambda: None,
        lambda: str(rng.choice(PAYLOADS)),
        lambda: {"float": float(rng.normal()).hex()},
        lambda: {"float": "inf"},
        lambda: {"tuple": [int(rng.integers(-3, 4)) for _ in range(int(rng.integers(0, 4)))]},
        lambda: {"tuple": [{"tuple": [0, 1]}, {"tuple": [1, 0]}]},
        lambda: {"tuple": [True, 0]},
        lambda: {"index": [{"slice": [None, None, -1]}, {"arg": int(rng.integers(0, 3))}]},
        lambda: {"index": [{"ellipsis": True}, {"ellipsis": True}]},
        lambda: {"index": [99]},
        lambda: {"dtype": str(rng.choice(["float32", "int64", "bool", "complex128"]))},
        lambda: {"array": {"dtype": "int64", "shape": [2], "data": "AQAAAAAAAAAFAAAAAAAAAA=="}},
        lambda: {"graph": copy.deepcopy(docs[str(rng.choice(SEEDS))])},
        lambda: {"pickle": "gASV"},
        lambda: [1, 2],
        lambda: 1.5,
    ]
    return choices[int(rng.integers(len(choices)))]()


def _pick(rng, items):
    return items[int(rng.integers(len(items)))] if items else None


def m_op(doc, rng, docs):
    node = _pick(rng, _ops(doc))
    if node:
        node["op"] = str(rng.choice(sorted(REGISTRY) + ["input", "const"]))


def m_op_same_family(doc, rng, docs):
    node = _pick(rng, _ops(doc))
    if node and node["op"] in REGISTRY:
        fam = REGISTRY[node["op"]].family
        node["op"] = str(rng.choice(sorted(n for n, p in REGISTRY.items() if p.family == fam)))


def m_shape(doc, rng, docs):
    node = _pick(rng, _nodes(doc))
    if node:
        shape = list(node["shape"])
        k = int(rng.integers(5))
        if k == 0 and shape:
            shape[int(rng.integers(len(shape)))] += 1
        elif k == 1:
            shape = shape[1:]
        elif k == 2:
            shape = [1] + shape
        elif k == 3:
            shape = [int(rng.choice(HUGE_INTS))] + shape
        else:
            shape = [2.0] * len(shape) if shape else [[]]
        node["shape"] = shape


def m_dtype(doc, rng, docs):
    node = _pick(rng, _nodes(doc))
    if node:
        node["dtype"] = str(rng.choice(["float32", "float64", "int64", "bool", "complex128",
                                        "uint8", "object", "float128", "S1"]))


def m_param_value(doc, rng, docs):
    node = _pick(rng, [n for n in _ops(doc) if n["params"]])
    if node:
        key = _pick(rng, sorted(node["params"]))
        node["params"][key] = _random_value(rng, docs)


def m_param_names(doc, rng, docs):
    node = _pick(rng, _ops(doc))
    if node:
        k = int(rng.integers(3))
        if k == 0 and node["params"]:
            del node["params"][_pick(rng, sorted(node["params"]))]
        elif k == 1:
            node["params"][str(rng.choice(["out", "where", "dtype", "axis", "casting", "x",
                                           "lambda", "1x"] + PAYLOADS))] = \
                _random_value(rng, docs)
        else:
            node["params"] = {"out": node["params"].get("out", 0)}


def m_arity(doc, rng, docs):
    node = _pick(rng, _ops(doc))
    if node:
        args = list(node["args"])
        k = int(rng.integers(3))
        if k == 0 and args:
            args.append(args[int(rng.integers(len(args)))])
        elif k == 1 and args:
            args.pop(int(rng.integers(len(args))))
        else:
            args = args[::-1]
        node["args"] = args


def m_ids(doc, rng, docs):
    d = _pick(rng, _graph_docs(doc))
    node = _pick(rng, d["nodes"])
    if node is None:
        return
    k = int(rng.integers(5))
    if k == 0:
        node["id"] = int(rng.choice(HUGE_INTS))
    elif k == 1:
        node["args"] = [node["id"]] + node["args"][1:]
    elif k == 2:
        d["nodes"].append(copy.deepcopy(node))
    elif k == 3:
        d["outputs"] = d["outputs"] + [10**6]
    else:
        d["inputs"] = d["inputs"][::-1] + [d["inputs"][0]] if d["inputs"] else [0]


def m_fields(doc, rng, docs):
    d = _pick(rng, _graph_docs(doc))
    target = d if rng.integers(2) else _pick(rng, d["nodes"])
    if target is None:
        return
    key = _pick(rng, sorted(target))
    if rng.integers(2):
        del target[key]
    else:
        target[str(rng.choice(["code", "__class__", key + "_"]))] = target[key]


def m_strings(doc, rng, docs):
    """A payload in a string field: src, op, dtype, a string param, format."""
    node = _pick(rng, _nodes(doc))
    if node is None:
        return
    payload = str(rng.choice(PAYLOADS))
    field = str(rng.choice(["src", "src", "op", "dtype", "param"]))
    if field == "param":
        strings = [k for k, v in node["params"].items() if isinstance(v, str)]
        key = _pick(rng, strings) or _pick(rng, sorted(node["params"]))
        if key is None:
            node["src"] = payload
        else:
            node["params"][key] = payload
    else:
        node[field] = payload


def m_nesting(doc, rng, docs):
    node = _pick(rng, _ops(doc))
    if node is None:
        return
    # written as text by mutant(): json.dumps itself would recurse too deeply
    node["params"][_pick(rng, sorted(node["params"])) or "index"] = \
        f"NEST{int(rng.choice([5, 50, 400, 900]))}-{int(rng.integers(3))}"


def _nested(depth, style):
    tags = ['{"index": [', '{"tuple": [', "["]
    opens = "".join(tags[(style + i) % 3] if style < 2 else tags[i % 2] for i in range(depth))
    closes = "".join("]}" if o.startswith("{") else "]" for o in reversed(
        [tags[(style + i) % 3] if style < 2 else tags[i % 2] for i in range(depth)]))
    return opens + "0" + closes


def m_huge_numbers(doc, rng, docs):
    """Integers far beyond any size, written as JSON text (``json`` cannot make them)."""
    node = _pick(rng, _nodes(doc))
    if node is None:
        return
    node["shape"] = ["HUGE"] + list(node["shape"])


def m_splice(doc, rng, docs):
    """A sub-graph parameter replaced by another document (or one of its sub-graphs), or a
    graph parameter moved to a node that has none."""
    holders = [(n, k) for n in _nodes(doc) for k, v in n["params"].items()
               if isinstance(v, dict) and "graph" in v]
    other = docs[str(rng.choice(SEEDS))]
    donor = copy.deepcopy(_pick(rng, _graph_docs(other)))
    if holders and rng.integers(3):
        node, key = _pick(rng, holders)
        if rng.integers(2):
            node["params"][key] = {"graph": donor}
        else:       # the body's outputs shuffled
            body = node["params"][key]["graph"]
            body["outputs"] = body["outputs"][::-1]
    else:
        node = _pick(rng, _ops(doc))
        if node is not None:
            node["op"] = str(rng.choice(["remat_call", "scan", "cond", "while_loop"]))
            node["params"] = {"graph": {"graph": donor}, "index": 0} if rng.integers(2) else {
                "graph": {"graph": donor}, "index": int(rng.choice(HUGE_INTS))}


def m_plausible(doc, rng, docs):
    """A change the loader may well accept: another op of the same arity and family, an
    axis or flag changed, an operand swapped for another node of the same graph."""
    d = _pick(rng, _graph_docs(doc))
    node = _pick(rng, [n for n in d["nodes"] if n["op"] not in ("input", "const")])
    if node is None:
        return
    k = int(rng.integers(3))
    if k == 0 and node["op"] in REGISTRY:
        prim = REGISTRY[node["op"]]
        same = sorted(n for n, p in REGISTRY.items() if p.family == prim.family
                      and isinstance(p.impl, np.ufunc) == isinstance(prim.impl, np.ufunc)
                      and getattr(p.impl, "nin", None) == getattr(prim.impl, "nin", None))
        node["op"] = str(rng.choice(same))
    elif k == 1 and node["params"]:
        key = _pick(rng, sorted(node["params"]))
        v = node["params"][key]
        if isinstance(v, bool):
            node["params"][key] = not v
        elif isinstance(v, int):
            node["params"][key] = v + int(rng.choice([-1, 1]))
        elif isinstance(v, dict) and "tuple" in v and v["tuple"]:
            node["params"][key] = {"tuple": v["tuple"][::-1]}
    elif node["args"]:
        ids = [n["id"] for n in d["nodes"] if n["id"] < node["id"]]
        if ids:
            node["args"][int(rng.integers(len(node["args"])))] = _pick(rng, ids)


def m_const_data(doc, rng, docs):
    """A constant's values changed (same dtype and shape): index operands out of bounds,
    singular matrices, NaN, zero divisors."""
    node = _pick(rng, [n for n in _nodes(doc) if n.get("op") == "const"])
    if node is None:
        return
    arr = node["params"]["value"]["array"]
    dtype = np.dtype(arr["dtype"]).newbyteorder("<")
    value = np.frombuffer(base64.b64decode(arr["data"]), dtype).copy()
    fills = [0, 1, -1, 2**31 - 1, 100] if dtype.kind in "iu" else [0, np.nan, np.inf, -1.0, 1e300]
    fill = fills[int(rng.integers(len(fills)))]
    if dtype.kind == "b":
        fill = bool(rng.integers(2))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value[...] = np.array(fill).astype(dtype)
    arr["data"] = base64.b64encode(value.tobytes()).decode("ascii")


def m_guards(doc, rng, docs):
    d = _pick(rng, _graph_docs(doc))
    node = _pick(rng, d["nodes"])
    if node:
        d["guards"] = d["guards"] + [{"node": node["id"], "value": _random_value(rng, docs)}]


MUTATIONS = {f.__name__[2:]: f for f in (
    m_op, m_op_same_family, m_shape, m_dtype, m_param_value, m_param_names, m_arity, m_ids,
    m_fields, m_strings, m_nesting, m_huge_numbers, m_splice, m_guards, m_plausible,
    m_const_data)}


def mutant(seed_name, kind, k):
    """Document text: the seed with mutation ``kind`` (and up to two random others)."""
    docs = _seed_docs()
    rng = np.random.default_rng([SEEDS.index(seed_name), sorted(MUTATIONS).index(kind), k])
    doc = copy.deepcopy(docs[seed_name])
    extra = [0, 0, 1, 2][int(rng.integers(4))]
    kinds = [kind] + [str(rng.choice(sorted(MUTATIONS))) for _ in range(extra)]
    for name in sorted(kinds, key=lambda n: n == "fields"):   # removing fields comes last
        try:
            MUTATIONS[name](doc, rng, docs)
        except (KeyError, TypeError, AttributeError):
            pass    # an earlier mutation left nothing this one applies to
    text = json.dumps(doc).replace('"HUGE"', "9" * 5000)
    for depth in (5, 50, 400, 900):
        for style in range(3):
            text = text.replace(f'"NEST{depth}-{style}"', _nested(depth, style))
    return text


# -- running a mutant -------------------------------------------------------------------
class _TimedOut(Exception):
    pass


def _on_alarm(signum, frame):
    raise _TimedOut


def _limited(fn, seconds):
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _inputs(graph):
    rng = np.random.default_rng(1)
    xs = []
    for n in graph.inputs:
        d = graph.node(n)
        shape, dtype = tuple(d["shape"]), np.dtype(d["dtype"])
        if int(np.prod(shape)) > 10**5:
            return None
        if dtype.kind == "f":
            xs.append(rng.uniform(0.5, 1.5, shape).astype(dtype))
        elif dtype.kind == "c":
            xs.append((rng.uniform(0.5, 1.5, shape) + 0.25j).astype(dtype))
        else:
            xs.append(np.zeros(shape, dtype))
    return xs


def _loops_in(graph):
    ops = set()
    for n in graph:
        d = graph.node(n)
        ops.add(d["op"])
        for v in d["params"].values():
            if isinstance(v, tg.Graph):
                ops |= _loops_in(v)
    return ops & {"scan", "while_loop"}


def _jax_gap(graph):
    """A lowering JAX lacks for a program NumPy runs (a backend-parity bug of its own,
    reachable without any document: tg.jit(np.argmax, backend="jax") of a complex array
    raises JAX's TypeError). Left to the JAX backend's parity checks."""
    for n in graph:
        d = graph.node(n)
        if d["op"] in ("argmax", "argmin") and \
                np.dtype(graph.node(d["args"][0])["dtype"]).kind == "c":
            return True
        if any(isinstance(v, tg.Graph) and _jax_gap(v) for v in d["params"].values()):
            return True
    return False


def _direct(graph, xs):
    out = generate(graph).fn(*xs)
    if out is GUARD_FAILED:
        raise tg.TraceError("guard failed")
    return out


RUNNERS = {
    "interpreter": lambda g, xs: g(*xs),
    "jit": lambda g, xs: tg.jit(lambda *v: g(*v))(*xs),
    "codegen": _direct,
    "jax": lambda g, xs: tg.jit(lambda *v: g(*v), backend="jax")(*xs),
}


# The interpreter runs first and compiles nothing: a document that loops without end is
# found there quickly. The others compile (XLA can take seconds on a loaded machine), so
# their limit only catches a real hang.
LIMITS = {"interpreter": 3.0, "jit": 60.0, "codegen": 60.0, "jax": 60.0}


def check_mutant(text):
    """Load and run ``text`` everywhere. Returns where it ended: "load" (rejected),
    "skipped" (inputs too large to make), or the runners' outcomes."""
    try:
        graph = tg.Graph.from_json(text)
    except tg.TraceError:
        return "load"
    xs = _inputs(graph)
    if xs is None:
        return "skipped"
    outcomes = []
    for name, run in RUNNERS.items():
        if name == "jax" and _jax_gap(graph):
            outcomes.append("jax:known-gap")
            continue
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                _limited(lambda: run(graph, xs), LIMITS[name])
            outcomes.append(f"{name}:ok")
        except tg.TraceError:
            outcomes.append(f"{name}:TraceError")
        except np.linalg.LinAlgError:
            # NumPy's own error for these values (a singular matrix once a mutation made
            # an input an integer, hence zero): the runners that run NumPy untraced pass it
            # on as NumPy does; tracing turns it into a TraceError
            assert name in ("interpreter", "codegen"), name
            outcomes.append(f"{name}:LinAlgError")
        except _TimedOut:
            # only a loop may run without end; the other runners would loop as well
            # (and XLA cannot be interrupted)
            assert _loops_in(graph), f"{name} hung on a document without loops"
            outcomes.append(f"{name}:timeout")
            break
    return " ".join(outcomes)


FUZZ_CASES = [(s, kind, k) for s in SEEDS for kind in sorted(MUTATIONS) for k in range(8)]


@pytest.fixture(autouse=True)
def _no_canary():
    CANARY.unlink(missing_ok=True)
    yield
    assert not CANARY.exists(), "a loaded document ran code"


@pytest.mark.parametrize("seed_name,kind,k", bounded(FUZZ_CASES, 1200),
                         ids=lambda v: str(v))
def test_mutants_load_and_run_or_raise_trace_error(seed_name, kind, k):
    check_mutant(mutant(seed_name, kind, k))


def test_the_fuzzer_reaches_every_runner():
    """Not every mutant is refused at load: a fair share are valid documents that every
    runner executes (otherwise the runs above would check nothing)."""
    sample = FUZZ_CASES[::len(FUZZ_CASES) // 200]     # the same 200 in exhaustive runs
    outcomes = [check_mutant(mutant(*case)) for case in sample]
    ran = [o for o in outcomes if o.startswith("interpreter:")]
    everywhere = [o for o in ran if o.count(":ok") == len(RUNNERS)]
    assert len(everywhere) >= len(outcomes) // 20, (len(everywhere), len(outcomes))
    assert outcomes.count("load") >= len(outcomes) // 2
