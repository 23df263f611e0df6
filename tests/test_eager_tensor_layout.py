"""``tg.Tensor`` is defined in one place per concern: every method is a ``def`` (or an
alias of one) in the body of ``Tensor``, ``TensorBase`` or a concern module's mixin, and
no module assigns attributes onto the class after its definition."""
import ast
import inspect
import pathlib

import tracegrad as tg
from tracegrad.eager import dispatch
from tracegrad.eager.tensor_base import TensorBase

EAGER = pathlib.Path(tg.__file__).resolve().parent / "eager"
# the one exception: the dense tensor's ways into the sparse layout. ``SparseTensor`` is a
# subclass of ``Tensor`` (sparse_coo.py), so it exists only after Tensor's class body has
# run, and tensor.py cannot import it without an import cycle
SPARSE_ENTRY = {"to_sparse", "to_sparse_coo", "is_sparse", "layout"}


def _patches(path):
    """``Tensor.<name> = ...``, ``Tensor.a, Tensor.b = ...``, ``setattr(Tensor, ...)`` and
    ``del Tensor.<name>`` in one source file, as (line, text)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []

    def on_tensor(node):
        return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id in ("Tensor", "TensorBase")

    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        for t in targets:
            for sub in ast.walk(t):
                if on_tensor(sub) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                    found.append((node.lineno, ast.unparse(node)[:80]))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("setattr", "delattr") and node.args and \
                isinstance(node.args[0], ast.Name) and node.args[0].id in ("Tensor", "TensorBase"):
            found.append((node.lineno, ast.unparse(node)[:80]))
    return found


def test_the_scan_finds_patches(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("Tensor.sum = f\nTensor.a, Tensor.b = g, h\nsetattr(Tensor, 'x', 1)\n"
                 "for n in ns:\n    setattr(TensorBase, n, 2)\nx.sum = 3\nTensor.y += 1\n")
    assert sorted({line for line, _ in _patches(f)}) == [1, 2, 3, 5, 7]


def test_no_module_assigns_methods_onto_tensor():
    bad = [f"{p.relative_to(EAGER.parent)}:{line}: {text}"
           for p in sorted(EAGER.rglob("*.py")) for line, text in _patches(p)
           if not (p.name == "sparse_coo.py" and text.split(".")[1].split(" ")[0] in SPARSE_ENTRY)]
    assert not bad, "methods assigned onto Tensor from outside its class body:\n" + \
        "\n".join(bad)


def _defined_in(value, cls):
    """Whether ``value`` (a class attribute) was written in ``cls``'s body: a function,
    property or static method whose qualified name starts with the class's (an alias
    ``clip = clamp`` keeps its def's name)."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, property):
        value = value.fget
    if not inspect.isfunction(value):
        return True         # a constant (__slots__, __array_priority__, __hash__, ...)
    return value.__qualname__.split(".")[0] == cls.__name__


def test_every_method_is_a_def_in_a_class_body():
    classes = [c for c in tg.Tensor.__mro__ if c is not object]
    assert classes[0] is tg.Tensor and TensorBase in classes
    for cls in classes:
        assert cls.__module__.startswith("tracegrad.eager."), cls
        assert cls.__dict__.get("__slots__") is not None, f"{cls.__name__} has no __slots__"
        stray = [name for name, value in vars(cls).items() if not _defined_in(value, cls)
                 and not (cls is tg.Tensor and name in SPARSE_ENTRY)]
        assert not stray, f"{cls.__name__}: not defined in its class body: {stray}"
    # a reader finds a method by searching for its def, in the concern module's mixin
    for name, module in [("softmax", "reductions"), ("sum", "reductions"),
                         ("__add__", "arithmetic"), ("exp", "arithmetic"),
                         ("view", "shapes"), ("__getitem__", "shapes"),
                         ("add_", "inplace"), ("__setitem__", "inplace"),
                         ("to", "conversion"), ("unfold", "views"),
                         ("topk", "tensor_methods"), ("backward", "tensor")]:
        owner = next(c for c in classes if name in vars(c))
        assert owner.__module__ == f"tracegrad.eager.{module}", (name, owner)
        source = inspect.getsource(inspect.getmodule(owner))
        assert f"def {name}(" in source, name


def test_tensor_has_no_instance_dict_and_stays_hashable():
    t = tg.tensor([1.0, 2.0])
    assert not hasattr(t, "__dict__")
    assert len({t, t}) == 1                 # __eq__ in a mixin keeps __hash__
    p = tg.nn.Parameter(tg.ones(2))
    assert type(p * 2) is tg.Tensor and type(p.detach()) is tg.Tensor
    assert type(p) is tg.nn.Parameter and p.requires_grad


def test_dispatch_has_no_late_bound_tensor_class():
    # the class of a result comes from the operands' constructors, not a module global
    # tensor.py fills in once it is defined
    assert not hasattr(dispatch, "Tensor") and not hasattr(dispatch, "_tensor_class")
