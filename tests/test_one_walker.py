"""One walker: every per-primitive rule (implementation, JVP, VJP, batching, JAX lowering)
is applied by ``ir.evaluate``. No other module loops over a graph's nodes calling one."""
import ast
from pathlib import Path

import tracegrad

ROOT = Path(tracegrad.__file__).parent
RULES = {"impl", "vjp", "jvp", "jax", "batch"}
GRAPHS = {"graph", "src_graph", "g", "body", "sub", "self.graph", "self.src_graph"}


def _graph_loop(node):
    """Whether ``node`` (a For) iterates a graph: ``for n in graph``, ``graph.items()``,
    ``reversed(list(graph))``."""
    it = node.iter
    while isinstance(it, ast.Call):
        if isinstance(it.func, ast.Attribute) and it.func.attr == "items":
            it = it.func.value
        elif it.args:
            it = it.args[0]
        else:
            return False
    return ast.unparse(it) in GRAPHS


def _rule_calls(loop):
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in RULES:
            yield node


def walkers():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.For) and _graph_loop(node):
                for call in _rule_calls(node):
                    found.append(f"{path.relative_to(ROOT)}:{call.lineno}")
    return found


def test_only_evaluate_walks_a_graph_applying_rules():
    found = walkers()
    assert {w.split(":")[0] for w in found} == {"ir/evaluate.py"}, found


def test_the_check_finds_a_walker():
    # (the check itself: a loop of the kind it forbids is found)
    tree = ast.parse("for n in graph:\n    REGISTRY[op].impl(*args)\n")
    loop = tree.body[0]
    assert _graph_loop(loop) and len(list(_rule_calls(loop))) == 1
