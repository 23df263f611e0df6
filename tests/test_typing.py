"""The public API's type hints: they resolve at run time, every public function has them,
the package ships ``py.typed`` (PEP 561), and a type checker run on a user's code sees
them (mypy, when installed: it is in the ``test`` extra).
"""
from __future__ import annotations

import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
import typing
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import tracegrad as tg
from tracegrad._typing import P, T
from tracegrad.ir import Graph
from tracegrad.transforms.jit import Jitted, Lowered

ROOT = Path(__file__).resolve().parent.parent

FUNCTIONAL = ["grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian", "trace",
              "stop_gradient", "checkpoint", "jit", "cond", "fori_loop", "while_loop", "scan",
              "vmap"]
EAGER = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "eye", "rand",
         "randn", "randint", "randperm", "zeros_like", "ones_like", "full_like", "arange",
         "linspace", "manual_seed", "set_default_dtype", "get_default_dtype", "is_tensor",
         "is_floating_point"]
METHODS = [(tg.custom_vjp, ["__init__", "defvjp", "__call__"]),
           (Jitted, ["__init__", "__call__", "lower"]),
           (Lowered, ["__init__", "as_text"]),
           (tg.Tensor, ["__init__", "backward", "detach", "requires_grad_", "retain_grad",
                        "register_hook", "size", "dim", "numel", "item", "numpy", "tolist"])]


def _assert_fully_annotated(fn, name):
    hints = typing.get_type_hints(fn)     # raises if an annotation does not resolve
    assert "return" in hints, f"{name} has no return annotation"
    for param in inspect.signature(fn).parameters.values():
        if param.name != "self":
            assert param.name in hints, f"{name}: parameter {param.name} has no annotation"
    return hints


@pytest.mark.parametrize("name", FUNCTIONAL + EAGER)
def test_public_function_is_annotated(name):
    _assert_fully_annotated(getattr(tg, name), f"tg.{name}")


@pytest.mark.parametrize("cls, method", [(c, m) for c, ms in METHODS for m in ms],
                         ids=[f"{c.__name__}.{m}" for c, ms in METHODS for m in ms])
def test_public_method_is_annotated(cls, method):
    _assert_fully_annotated(getattr(cls, method), f"{cls.__name__}.{method}")


def test_properties_are_annotated():
    for prop in ("requires_grad", "is_leaf", "grad", "data", "shape", "dtype", "ndim"):
        assert "return" in typing.get_type_hints(getattr(tg.Tensor, prop).fget), prop
    assert typing.get_type_hints(Jitted.cache_size.fget)["return"] is int


def test_hints_say_what_the_transforms_keep():
    """The transforms keep the parameters of the function they are given (ParamSpec)."""
    grad = typing.get_type_hints(tg.grad)
    assert grad["fun"] == Callable[P, typing.Any] and grad["return"] == Callable[P, typing.Any]
    assert typing.get_type_hints(tg.value_and_grad)["return"] == \
        Callable[P, tuple[typing.Any, typing.Any]]
    assert typing.get_type_hints(tg.trace)["return"] is Graph
    assert typing.get_type_hints(tg.stop_gradient) == {"x": T, "return": T}
    assert typing.get_type_hints(tg.jacobian)["mode"] == typing.Literal["rev", "fwd"]
    assert typing.get_type_hints(Jitted.lower)["return"] is Lowered
    assert typing.get_type_hints(tg.tensor)["return"] is tg.Tensor
    if hasattr(typing, "get_overloads"):   # Python 3.11+
        # the decorator forms are overloads for type checkers; at run time there is one
        # function
        assert len(typing.get_overloads(tg.jit)) == len(typing.get_overloads(tg.grad)) == 2


def test_hints_leave_runtime_behaviour_alone():
    """Signatures keep their names and defaults; ``Jitted`` being generic changes nothing."""
    sig = inspect.signature(tg.grad)
    assert list(sig.parameters) == ["fun", "argnums", "has_aux", "holomorphic"]
    assert [p.default for p in sig.parameters.values()][1:] == [0, False, False]
    f = tg.jit(lambda x: np.sin(x) * 2.0)
    assert type(f) is Jitted
    np.testing.assert_allclose(f(np.ones(3)), np.sin(np.ones(3)) * 2.0)
    assert f.lower(np.ones(3)).as_text().startswith("def ")
    assert tg.grad(argnums=1)(lambda a, b: a * b)(2.0, 3.0) == 2.0


def test_py_typed_is_package_data():
    assert (ROOT / "tracegrad" / "py.typed").is_file()
    tomllib = pytest.importorskip("tomllib")    # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["tracegrad"]


def test_wheel_ships_py_typed(tmp_path):
    """Build the wheel (setuptools, no network) from a copy of the project: it holds
    ``tracegrad/py.typed``, so an installed tracegrad is seen as typed."""
    pytest.importorskip("setuptools")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "tracegrad", src / "tracegrad",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path / "dist"
    result = subprocess.run(
        [sys.executable, "-c", f"from setuptools import build_meta; "
                               f"print(build_meta.build_wheel({str(out)!r}))"],
        cwd=src, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    wheel = out / result.stdout.strip().splitlines()[-1]
    names = zipfile.ZipFile(wheel).namelist()
    assert "tracegrad/py.typed" in names and "tracegrad/_typing.py" in names


CLIENT = '''\
from typing import Any

import numpy as np

import tracegrad as tg


def loss(w: np.ndarray, b: float) -> Any:
    return np.sum((w * 2.0 + b) ** 2)


g = tg.grad(loss, argnums=(0, 1))
reveal_type(g)
g(np.ones(3), 0.5, 7)
reveal_type(tg.grad(argnums=1)(loss))
reveal_type(tg.value_and_grad(loss)(np.ones(3), 1.0))
jitted = tg.jit(loss)
reveal_type(jitted.lower(np.ones(3), 1.0).as_text())
tg.jit(loss, backend="tpu")
tg.jacobian(loss, mode="sideways")
reveal_type(tg.trace(loss, np.ones(3), 1.0))
x = tg.tensor([1.0, 2.0], requires_grad=True)
y = (x * x + 1.0).sum()
y.backward()
reveal_type(x.grad)
reveal_type(tg.cat([x, x]))
'''


def test_type_checker_sees_the_hints(tmp_path):
    """mypy on a user's script, with tracegrad found on PYTHONPATH: mypy treats such a
    package as installed, so it reads the hints only because of ``py.typed`` (without
    it: 'missing library stubs or py.typed marker')."""
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (it is in the test extra)")
    (tmp_path / "client.py").write_text(CLIENT)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
         "--hide-error-context", "--no-error-summary", "--no-pretty", "client.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    lines = [re.sub(r"^client\.py:", "", line) for line in result.stdout.splitlines()
             if line.startswith("client.py:")]
    revealed = {int(line.split(":")[0]): line.split('Revealed type is "', 1)[1][:-1]
                for line in lines if "Revealed type" in line}
    errors = {int(line.split(":")[0]): line for line in lines if ": error:" in line}
    assert "py.typed" not in result.stdout, result.stdout
    loss_sig = "def (w: numpy.ndarray[tuple[Any, ...], numpy.dtype[Any]], b: float) -> Any"
    assert revealed[13] == loss_sig                       # grad keeps loss's parameters
    assert revealed[15] == loss_sig                       # so does the decorator form
    assert revealed[16] == "tuple[Any, Any]"
    assert revealed[18] in ("str", "builtins.str")
    assert revealed[21] == "tracegrad.ir.graph.Graph"
    assert revealed[25] == "tracegrad.eager.tensor.Tensor | None"
    assert revealed[26] == "Any"                          # table-made eager functions
    assert sorted(errors) == [14, 19, 20], result.stdout  # exactly the three mistakes
    assert "Too many arguments" in errors[14]
    assert 'No overload variant of "jit"' in errors[19]
    assert 'No overload variant of "jacobian"' in errors[20]
