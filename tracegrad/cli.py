"""The ``tracegrad`` command line (also ``python -m tracegrad``).

    tracegrad demo [--out DIR] [--epochs N] [--quick] [--data auto|digits|synthetic]
    tracegrad ir MODULE:FUNCTION --arg 'f64[3,4]' --arg 'f64[4]' [--grad | --hessian]
                 [--argnums 0] [--format text|dot|json] [--optimize]

Every error is one line on stderr starting with ``tracegrad: error:``; the exit status is
2 for a usage error (bad option, bad aval spec) and 1 for a runtime error (the module or
function cannot be found or imported, tracing fails). Set ``TRACEGRAD_TRACEBACK=1`` to get
the full traceback instead.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import sys

import numpy as np

from .cli_errors import RUNTIME, USAGE, CLIError

PROG = "tracegrad"

# spelling on the command line -> NumPy dtype (the IR prints f64, f32, i64, i32, bool)
DTYPES = {"f64": np.float64, "f32": np.float32, "i64": np.int64, "i32": np.int32, "bool": np.bool_,
          "float64": np.float64, "float32": np.float32, "int64": np.int64, "int32": np.int32}
SPEC = re.compile(r"^\s*([a-z0-9]+)\s*\[\s*([0-9\s,]*)\]\s*$")


def one_line(text) -> str:
    """Collapse a (possibly multi-line) message into one line, without the "(at <frozen runpy>:88)"
    that tracegrad's source finder gives a call made from this module."""
    return re.sub(r"\s*\(at <[^>]*>:\d+\)", "", " ".join(str(text).split()))


def describe(exc: BaseException) -> str:
    """``TypeName: message`` on one line."""
    msg = one_line(exc)
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is a single ``tracegrad: error:`` line (exit status 2)."""

    def error(self, message):
        hint = f" (see '{self.prog} --help')"
        raise CLIError(one_line(message) + hint, USAGE)


# -- aval specs ---------------------------------------------------------------------------------
def parse_spec(spec: str):
    """``'f64[3,4]'`` -> ``((3, 4), np.float64)``; ``'f64[]'`` is a scalar."""
    m = SPEC.match(spec)
    if not m or m.group(1) not in DTYPES:
        raise CLIError(f"bad --arg {spec!r}: expected DTYPE[SHAPE] such as 'f64[3,4]' or 'f64[]' "
                       f"(dtypes: f64, f32, i64, i32, bool)", USAGE)
    dims = [d.strip() for d in m.group(2).split(",")]
    if dims == [""]:
        dims = []
    if any(not d for d in dims):
        raise CLIError(f"bad --arg {spec!r}: empty dimension in the shape", USAGE)
    return tuple(int(d) for d in dims), DTYPES[m.group(1)]


def example_value(shape, dtype, rng):
    """Deterministic random example input of the given aval."""
    if dtype == np.bool_:
        value = rng.random(shape) < 0.5
    elif np.issubdtype(dtype, np.integer):
        value = rng.integers(0, 10, size=shape)
    else:
        value = rng.standard_normal(shape)
    return np.asarray(value, dtype=dtype)


def parse_argnums(text: str):
    try:
        nums = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise CLIError(f"bad --argnums {text!r}: expected an integer or a comma-separated list",
                       USAGE) from None
    if not nums:
        raise CLIError("bad --argnums '': expected an integer or a comma-separated list", USAGE)
    return nums[0] if len(nums) == 1 and "," not in text else nums


# -- finding the function -------------------------------------------------------------------------
def load_function(target: str):
    """``package.module:function`` (imported) or ``path/to/file.py:function`` (loaded from the file).
    The function may be a dotted attribute path (``module:Class.method``)."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise CLIError(f"bad target {target!r}: expected MODULE:FUNCTION or FILE.py:FUNCTION", USAGE)
    if module_name.endswith(".py") or os.sep in module_name or "/" in module_name:
        path = os.path.abspath(module_name)
        if not os.path.isfile(path):
            raise CLIError(f"no such file: {module_name}")
        name = "_tracegrad_cli_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise CLIError(f"cannot load {module_name} as a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise CLIError(f"importing {module_name} failed: {describe(exc)}") from exc
    else:
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())   # as `python -m` does; the console script does not
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
                raise CLIError(f"no module named {module_name!r} (is it on PYTHONPATH, or "
                               f"did you mean a file, e.g. {module_name}.py:{attr}?)") from exc
            raise CLIError(f"importing {module_name} failed: {describe(exc)}") from exc
        except Exception as exc:
            raise CLIError(f"importing {module_name} failed: {describe(exc)}") from exc
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CLIError(f"{module_name} has no attribute {attr!r}") from None
    if not callable(obj):
        raise CLIError(f"{target} is not a function (it is a {type(obj).__name__})")
    return obj


# -- tracegrad ir -----------------------------------------------------------------------------------
def cmd_ir(args) -> int:
    import tracegrad as tg

    avals = [parse_spec(s) for s in args.arg]
    argnums = parse_argnums(args.argnums)
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if (args.grad or args.hessian) and any(n < 0 or n >= len(avals) for n in nums):
        raise CLIError(f"--argnums {args.argnums} is out of range for {len(avals)} --arg(s)", USAGE)
    fn = load_function(args.target)
    rng = np.random.default_rng(args.seed)
    values = [example_value(shape, dtype, rng) for shape, dtype in avals]
    if args.grad:
        fn, what = tg.grad(fn, argnums=argnums), "the gradient of "
    elif args.hessian:
        fn, what = tg.hessian(fn, argnums=argnums), "the Hessian of "
    else:
        what = ""
    try:
        graph = tg.trace(fn, *values)
    except tg.TraceError as exc:
        raise CLIError(f"tracing {what}{args.target} failed: {one_line(exc)}") from exc
    except Exception as exc:
        raise CLIError(f"tracing {what}{args.target} failed: {describe(exc)}") from exc
    if args.optimize:
        graph = tg.passes.prune(tg.passes.cse(tg.passes.simplify(graph)))
    if args.format == "json":
        text = graph.to_json()
    elif args.format == "dot":
        text = graph.to_dot()
    else:
        text = str(graph)
        if args.summary:
            text += "\n" + str(graph.summary())
    sys.stdout.write(text.rstrip("\n") + "\n")
    return 0


def cmd_demo(args) -> int:
    from .cli_demo import run_demo

    return run_demo(out=args.out, epochs=args.epochs, quick=args.quick, data=args.data)


def build_parser() -> Parser:
    from . import __version__

    parser = Parser(prog=PROG, description="tracegrad: a tracing autodiff compiler for plain NumPy.")
    parser.add_argument("--version", action="version", version=f"tracegrad {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    demo = sub.add_parser("demo", help="trace, differentiate, check and train a small model",
                          description="Trace a small NumPy model and print its IR and its pruned "
                          "gradient IR, check grad/jacobian/hessian against finite differences, "
                          "train a digits classifier (functional API under tg.jit) and write the "
                          "loss curve and the gradient graph to an output folder.")
    demo.add_argument("--out", default="tracegrad-demo", metavar="DIR",
                      help="output folder (default: ./tracegrad-demo)")
    demo.add_argument("--epochs", type=int, default=None, metavar="N",
                      help="training epochs (default: 12, or 4 with --quick)")
    demo.add_argument("--quick", action="store_true", help="a shorter run (for tests and CI)")
    demo.add_argument("--data", choices=("auto", "digits", "synthetic"), default="auto",
                      help="scikit-learn's digits, the shipped synthetic set, or digits when "
                      "scikit-learn is installed (default)")
    demo.set_defaults(func=cmd_demo)

    ir = sub.add_parser("ir", help="print the IR of a function at given shapes",
                        description="Trace MODULE:FUNCTION (or FILE.py:FUNCTION) on deterministic "
                        "random inputs of the given avals and print its IR.")
    ir.add_argument("target", metavar="MODULE:FUNCTION")
    ir.add_argument("--arg", action="append", default=[], metavar="SPEC",
                    help="an argument's aval, e.g. 'f64[3,4]', 'f32[5]', 'i64[2]', 'bool[3]', "
                    "'f64[]' for a scalar; repeat once per positional argument")
    which = ir.add_mutually_exclusive_group()
    which.add_argument("--grad", action="store_true", help="the IR of tg.grad(FUNCTION, argnums)")
    which.add_argument("--hessian", action="store_true", help="the IR of tg.hessian(FUNCTION, argnums)")
    ir.add_argument("--argnums", default="0", help="argument(s) to differentiate: 0 or 0,1 (default 0)")
    ir.add_argument("--format", choices=("text", "dot", "json"), default="text")
    ir.add_argument("--optimize", action="store_true", help="run simplify, cse and prune")
    ir.add_argument("--summary", action="store_true", help="with --format text, append graph.summary()")
    ir.add_argument("--seed", type=int, default=0, help="seed of the example inputs (default 0)")
    ir.set_defaults(func=cmd_ir)
    return parser


def main(argv=None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if getattr(args, "func", None) is None:
            parser.print_help()
            return USAGE
        return args.func(args)
    except CLIError as exc:
        if os.environ.get("TRACEGRAD_TRACEBACK"):
            raise
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        print(f"{PROG}: error: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:   # a bug of ours or of the user's code: still one line
        if os.environ.get("TRACEGRAD_TRACEBACK"):
            raise
        print(f"{PROG}: error: {describe(exc)} (set TRACEGRAD_TRACEBACK=1 for the traceback)",
              file=sys.stderr)
        return RUNTIME


if __name__ == "__main__":
    sys.exit(main())
