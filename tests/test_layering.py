"""The package layering (DEVELOPERS.md, "Architecture"), read off the source with ``ast``.

Every ``import`` counts: at module level and inside functions (an import placed in a
function to dodge a cycle is still a dependency), relative ones resolved to the module
they name. A layer may import itself and the layers its entry in ``ALLOWED`` lists,
nothing else:

    errors                      the exception types (and _typing, the type variables)
    ir                          Graph, the primitive registry and first-order primitives,
                                the one evaluator (``ir.evaluate``), printing, DOT, JSON
    runtime                     executing graphs: the interpreter, NumPy code, JAX lowering
    tracer                      tracer values recording NumPy calls into a Graph
    passes                      graph transformations (adjoint, jvp, prune, cse, batching, ...)
    higher                      higher-order primitives (scan, while_loop, cond, remat_call):
                                their rules run, trace and differentiate sub-graphs
    autodiff                    the engine both front ends reach: structural keys, the one
                                plan cache, the interpret-then-compile policy, the
                                functional front end's backward plans (plans.py)
    front end                   transforms/ (grad & co., jit, vmap, control flow, checkpoint,
                                callbacks, tree utilities), scipy/, datasets
    eager                       the PyTorch-style front end (Tensor, tape, nn, optim)
    functorch                   torch.func and torch.jit: eager tensors and modules through
                                the functional transforms
    package                     ``tracegrad/__init__``: imports every layer
    cli                         the ``tracegrad`` command (cli, cli_demo, cli_errors, __main__)

As an order: errors < ir < runtime < tracer < passes < higher < autodiff < front end <
eager < functorch < package < cli, except that the runtime never imports the tracer or the passes (it runs
graphs, whoever made them), and neither the eager front end nor the higher layer
imports the functional front end. No two modules import each other, directly or
through others.
"""
import ast
import pathlib

import networkx as nx
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "tracegrad"

_BELOW_FRONT = {"errors", "ir", "runtime", "tracer", "passes", "higher", "autodiff"}
ALLOWED = {
    "errors": set(),
    "ir": {"errors"},
    "runtime": {"errors", "ir"},
    "tracer": {"errors", "ir"},
    "passes": {"errors", "ir", "tracer"},
    "higher": {"errors", "ir", "runtime", "tracer", "passes"},
    "autodiff": {"errors", "ir", "runtime", "tracer", "passes"},
    "front end": _BELOW_FRONT,
    "eager": _BELOW_FRONT,
    "functorch": _BELOW_FRONT | {"front end", "eager"},
    "package": _BELOW_FRONT | {"front end", "eager", "functorch"},
    "cli": _BELOW_FRONT | {"front end", "eager", "functorch", "package"},
}
# Cycles inside one package that remain, each through imports placed in functions. This
# list may only shrink: a module that joins one of them, or any other cycle, fails.
KNOWN_CYCLES = [
    # Graph.to_json / Graph.from_json call serialize, whose reader builds Graphs
    # (fixed by Graph.from_json handing its class to the reader)
    {"tracegrad.ir.graph", "tracegrad.ir.serialize"},
    # the Tracer class and the NumPy handlers that make tracers call each other
    # (Tracer.__array__ -> elements -> numpy_api -> core; views and indexing likewise)
    {"tracegrad.tracer." + m for m in (
        "core", "elements", "indexing", "np_base", "np_complex", "np_creation",
        "np_elementwise", "np_fft", "np_linalg", "np_products", "np_reductions",
        "np_shapes", "numpy_api", "views",
        # the handler families of issue 22 (and issue 24's split of np_more), registered
        # the way the others are: numpy_api imports them
        "np_arrays", "np_calculus", "np_comparisons", "np_linalg_more", "np_nanfunctions",
        "np_polynomial", "np_setops", "np_sorting", "np_statistics")},
]
_PACKAGES = {"ir", "runtime", "tracer", "passes", "higher", "autodiff", "eager", "functorch"}
_FRONT_END = {"transforms", "scipy", "datasets"}
_CLI = {"cli", "cli_demo", "cli_errors", "__main__"}


def layer(module: str) -> str:
    """The layer of ``module`` (a dotted name under ``tracegrad``)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "package"
    head = parts[1]
    if head in ("errors", "_typing"):
        return "errors"
    if head in _PACKAGES:
        return head
    if head in _FRONT_END:
        return "front end"
    if head in _CLI:
        return "cli"
    raise AssertionError(f"module {module} has no layer: add it to test_layering.py and "
                         "DEVELOPERS.md's Architecture section")


def modules() -> dict:
    """dotted name -> (path, whether it is a package's ``__init__``)."""
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, is_package)
    return found


def imports(module: str, path, is_package: bool, known) -> list:
    """``(imported module, line)`` for every import of a tracegrad module in ``module``'s
    source, at any depth (but under ``if TYPE_CHECKING:``). ``from package import name``
    names the submodule when ``name`` is one, else the package itself."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # ``if TYPE_CHECKING:`` imports (for annotations) never run: no dependency
    type_checking = {id(inner) for node in ast.walk(tree)
                     if isinstance(node, ast.If) and ast.unparse(node.test) in
                     ("TYPE_CHECKING", "typing.TYPE_CHECKING")
                     for stmt in node.body for inner in ast.walk(stmt)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module
            targets = [f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in known else prefix
                       for alias in node.names]
        else:
            continue
        if id(node) in type_checking:
            continue
        for target in targets:
            if target == "tracegrad" or target.startswith("tracegrad."):
                # ``import tracegrad.ir.graph`` names that module; a dotted name that is
                # no module is a name inside the longest module prefix of it
                while target not in known:
                    target = target.rsplit(".", 1)[0]
                found.append((target, node.lineno))
    return found


@pytest.fixture(scope="module")
def edges():
    """``(importer, imported, line)`` for every import between tracegrad modules."""
    known = modules()
    return [(m, target, line) for m, (path, is_package) in known.items()
            for target, line in imports(m, path, is_package, known) if target != m]


def _describe(bad):
    return "\n".join(f"  {a} imports {b} (line {line})" for a, b, line in bad)


def test_every_module_has_a_layer():
    for m in modules():
        assert layer(m) in ALLOWED


def test_import_reader_sees_function_level_and_relative_imports(edges):
    # the reader itself: imports inside functions and relative ones are resolved
    pairs = {(a, b) for a, b, _ in edges}
    assert ("tracegrad.cli", "tracegrad") in pairs                 # inside a function
    assert ("tracegrad.tracer.core", "tracegrad.ir") in pairs       # from ..ir import ...
    assert ("tracegrad.ir.graph", "tracegrad.ir.printing") in pairs  # from .printing import
    assert ("tracegrad", "tracegrad.eager.creation") in pairs       # from .eager.creation ...


def test_ir_imports_only_ir_and_errors(edges):
    bad = [(a, b, line) for a, b, line in edges
           if layer(a) == "ir" and layer(b) not in ("ir", "errors")]
    assert not bad, "the IR imports layers above it:\n" + _describe(bad)


def test_runtime_imports_no_tracer(edges):
    bad = [(a, b, line) for a, b, line in edges
           if layer(a) == "runtime" and layer(b) in ("tracer", "passes")]
    assert not bad, "the runtime imports the tracer or the passes:\n" + _describe(bad)


def test_layers_import_only_layers_below(edges):
    bad = [(a, b, line) for a, b, line in edges
           if layer(b) != layer(a) and layer(b) not in ALLOWED[layer(a)]]
    assert not bad, "imports against the layering:\n" + _describe(bad)


def test_no_import_cycles(edges):
    graph = nx.DiGraph()
    graph.add_edges_from((a, b) for a, b, _ in edges)
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    new = [c for c in cycles if not any(set(c) <= known for known in KNOWN_CYCLES)]
    assert not new, "modules that import each other (directly or through others):\n" + \
        "\n".join("  " + ", ".join(c) for c in sorted(new))


def test_no_cycles_between_layers(edges):
    graph = nx.DiGraph()
    graph.add_edges_from((layer(a), layer(b)) for a, b, _ in edges if layer(a) != layer(b))
    assert nx.is_directed_acyclic_graph(graph), list(nx.simple_cycles(graph))


# -- what the layering rests on ------------------------------------------------------------------
def test_registry_is_complete_without_importing_the_front_end():
    """The higher-order primitives register when any part of tracegrad is imported: a
    JSON graph holding a scan loads and runs in a fresh interpreter that imports only the
    IR."""
    import subprocess
    import sys

    code = (
        "import numpy as np\n"
        "from tracegrad.ir import REGISTRY, Graph\n"
        "assert {'scan', 'while_loop', 'cond', 'remat_call'} <= set(REGISTRY)\n"
        "import tracegrad as tg\n"
        "g = tg.trace(lambda x: tg.fori_loop(0, 3, lambda i, c: c * 2.0, x), np.ones(2))\n"
        "h = Graph.from_json(g.to_json())\n"
        "print(h(np.array([1.0, 3.0])).tolist())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT.parent, check=True)
    assert out.stdout.split() == ["[8.0,", "24.0]"]


class _Recorder:
    """An operand type that takes over applying primitives, as the tracer does."""
    calls: list = []

    def __init__(self, value):
        self.value = value

    @staticmethod
    def __tg_bind__(name, args, params, src=None):
        _Recorder.calls.append((name, src))
        return _Recorder(sum(a.value if isinstance(a, _Recorder) else a for a in args))


def test_apply_dispatches_on_the_operand_type():
    import numpy as np

    from tracegrad.ir import apply

    _Recorder.calls.clear()
    assert apply("add", np.array(1.0), np.array(2.0)) == 3.0          # NumPy
    out = apply("add", np.array(1.0), _Recorder(2.0))                  # the operand's type
    assert isinstance(out, _Recorder) and out.value == 3.0
    assert _Recorder.calls == [("add", None)]


def test_one_evaluator_runs_arrays_and_records_tracers():
    import numpy as np

    import tracegrad as tg
    from tracegrad.ir.evaluate import evaluate
    from tracegrad.tracer import new_trace

    graph = tg.trace(lambda x: np.sin(x) * 2.0 + x, np.ones(3))
    x = np.array([0.0, 1.0, 2.0])
    env = evaluate(graph, {graph.inputs[0]: x})
    np.testing.assert_array_equal(env[graph.outputs[0]], np.sin(x) * 2.0 + x)
    # on a tracer, the same walk records the nodes, with the graph's source lines
    _Recorder.calls.clear()
    env = evaluate(graph, {graph.inputs[0]: _Recorder(1.0)})
    assert [name for name, _ in _Recorder.calls] == ["sin", "mul", "add"]
    assert all(src == graph.node(n)["src"] for (_, src), n in
               zip(_Recorder.calls, [n for n in graph if graph.node(n)["op"] in
                                     ("sin", "mul", "add")]))
    with new_trace() as trace:
        t = trace.new_input(x)
        out = evaluate(graph, {graph.inputs[0]: t})[graph.outputs[0]]
        ops = [trace.graph.node(n)["op"] for n in trace.graph]
        assert [op for op in ops if op not in ("input", "const")] == ["sin", "mul", "add"]
    np.testing.assert_array_equal(out._value, np.sin(x) * 2.0 + x)


def test_evaluator_checks_guards_as_soon_as_known():
    import numpy as np

    import tracegrad as tg
    from tracegrad.errors import TraceError

    def f(x):
        return x * 2.0 if np.sum(x) > 0 else x - 1.0

    graph = tg.trace(f, np.ones(2))
    np.testing.assert_array_equal(graph(np.array([1.0, 2.0])), [2.0, 4.0])
    with pytest.raises(TraceError, match="different branch than the traced ones"):
        graph(np.array([-1.0, -2.0]))


# File names two modules may share: the same concept at two layers, or a public module
# name that mirrors the library it stands in for (``tracegrad.scipy.linalg`` is
# ``scipy.linalg``, ``tracegrad.nn.functional`` is ``torch.nn.functional``).
SHARED_NAMES = {
    "aliasing.py": "who owns an output's memory: graphs (ir) and tensors (eager)",
    "views.py": "NumPy views of tracers (tracer) and torch views of tensors (eager)",
    "indexing.py": "NumPy indexing of tracers (tracer) and torch indexing of tensors (eager)",
    "linalg.py": "scipy.linalg and scipy.sparse.linalg, by SciPy's module names",
    "functional.py": "torch.nn.functional and torch.autograd.functional, by torch's names",
    "rnn.py": "torch.nn's RNN modules and torch.nn.utils.rnn, by torch's names",
    "fft.py": "NumPy's FFT primitives (ir) and torch.fft (eager), by the libraries' names",
    "checkpoint.py": "the functional remat (transforms) and torch.utils.checkpoint (eager), "
                     "by the libraries' names",
    "graph.py": "the IR Graph (ir) and torch.autograd.graph (eager), by torch's name",
}


def test_no_two_modules_share_a_file_name_but_the_listed_ones():
    seen: dict = {}
    for path in ROOT.rglob("*.py"):
        if path.name != "__init__.py":
            seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    shared = {name: sorted(paths) for name, paths in seen.items() if len(paths) > 1}
    unlisted = {name: paths for name, paths in shared.items() if name not in SHARED_NAMES}
    assert not unlisted, f"modules sharing a file name (rename one, or list why): {unlisted}"
    assert set(SHARED_NAMES) <= set(shared), "a listed name is no longer shared: remove it"
