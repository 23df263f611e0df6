"""The command line (`python -m tracegrad ...`), run in a subprocess: exit codes and outputs."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tracegrad as tg

REPO = Path(__file__).resolve().parents[1]

MODULE = textwrap.dedent("""
    import numpy as np

    def f(x, w):
        return np.sum(np.tanh(x @ w) ** 2) + 0.5 * np.sum(w * w)

    def vec(x):
        return np.sin(x) * 2.0

    NOT_A_FUNCTION = 3
""")


def run(args, cwd, extra_path=()):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, extra_path), str(REPO)])
    env.pop("TRACEGRAD_TRACEBACK", None)
    return subprocess.run([sys.executable, "-m", "tracegrad", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "cli_target.py").write_text(MODULE)
    return tmp_path


def load_target(workdir):
    namespace = {}
    exec(MODULE, namespace)
    return namespace


def example_inputs():
    """What `--arg 'f64[3,4]' --arg 'f64[4]'` builds: seed 0, standard normals, in order."""
    rng = np.random.default_rng(0)
    return rng.standard_normal((3, 4)), rng.standard_normal(4)


ARGS = ["--arg", "f64[3,4]", "--arg", "f64[4]"]


# -- tracegrad ir ---------------------------------------------------------------------------------
def test_ir_text(workdir):
    r = run(["ir", "cli_target:f", *ARGS], workdir)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("graph(%0:f64[3,4], %1:f64[4]):")
    assert "tanh" in r.stdout and "  return %" in r.stdout
    assert "cli_target.py:5" in r.stdout     # nodes name the user's line
    assert r.stderr == ""


def test_ir_file_path_target(workdir):
    r = run(["ir", "cli_target.py:vec", "--arg", "f32[5]"], workdir)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("graph(%0:f32[5]):") and "sin" in r.stdout and "return" in r.stdout


def test_ir_dot(workdir):
    r = run(["ir", "cli_target:f", *ARGS, "--format", "dot"], workdir)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("digraph")
    assert r.stdout.rstrip().endswith("}")


@pytest.mark.parametrize("extra", [[], ["--grad"], ["--grad", "--argnums", "0,1", "--optimize"],
                                   ["--hessian", "--argnums", "1"]])
def test_ir_json_round_trip_runs_to_the_same_numbers(workdir, extra):
    r = run(["ir", "cli_target:f", *ARGS, "--format", "json", *extra], workdir)
    assert r.returncode == 0, r.stderr
    json.loads(r.stdout)
    graph = tg.Graph.from_json(r.stdout)
    x, w = example_inputs()
    f = load_target(workdir)["f"]
    got = graph(x, w)
    if not extra:
        want = f(x, w)
    elif extra[0] == "--hessian":
        want = tg.hessian(f, argnums=1)(x, w)
    elif "--argnums" in extra:
        want = tg.grad(f, argnums=(0, 1))(x, w)
    else:
        want = tg.grad(f)(x, w)
    if isinstance(want, tuple):
        assert len(got) == len(want)
        for g, v in zip(got, want):
            np.testing.assert_allclose(g, v, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    # and the gradient is right, not only self-consistent: central differences on w
    if extra == ["--grad"]:
        eps, x0 = 1e-6, x.copy()
        fd = np.array([(f(x0 + eps * e, w) - f(x0 - eps * e, w)) / (2 * eps)
                       for e in np.eye(12).reshape(12, 3, 4)]).reshape(3, 4)
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


def test_ir_grad_and_hessian_text(workdir):
    g = run(["ir", "cli_target:f", *ARGS, "--grad"], workdir)
    h = run(["ir", "cli_target:f", *ARGS, "--hessian", "--argnums", "1"], workdir)
    assert g.returncode == 0 and h.returncode == 0, g.stderr + h.stderr
    assert "return %" in g.stdout and "return %" in h.stdout
    assert g.stdout.splitlines()[-1].count("%") == 1         # one gradient output
    assert "f64[4,4]" in h.stdout                             # the Hessian w.r.t. w


def test_ir_optimize_shrinks_the_gradient(workdir):
    plain = run(["ir", "cli_target:f", *ARGS, "--grad"], workdir)
    opt = run(["ir", "cli_target:f", *ARGS, "--grad", "--optimize"], workdir)
    assert plain.returncode == 0 and opt.returncode == 0, plain.stderr + opt.stderr
    count = lambda text: sum(" = " in line for line in text.splitlines())
    assert 0 < count(opt.stdout) < count(plain.stdout)
    assert "return %" in opt.stdout


def test_ir_scalars_ints_and_bools(workdir):
    (workdir / "mixed.py").write_text(
        "import numpy as np\n"
        "def g(s, n, m):\n"
        "    return np.where(m, s * n, 0.0)\n")
    r = run(["ir", "mixed:g", "--arg", "f64[]", "--arg", "i64[3]", "--arg", "bool[3]"], workdir)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("graph(%0:f64[], %1:i64[3], %2:bool[3]):")


# -- errors: one line, no traceback, exit status 2 (usage) or 1 (runtime) ---------------------------
@pytest.mark.parametrize("args, status, words", [
    (["ir", "cli_target:f", "--arg", "f99[3]"], 2, "bad --arg 'f99[3]'"),
    (["ir", "cli_target:f", "--arg", "f64[3,,4]"], 2, "bad --arg"),
    (["ir", "cli_target:f", "--arg", "f64(3)"], 2, "bad --arg"),
    (["ir", "cli_target", "--arg", "f64[3]"], 2, "expected MODULE:FUNCTION"),
    (["ir", "cli_target:f", *ARGS, "--grad", "--hessian"], 2, "not allowed with"),
    (["ir", "cli_target:f", *ARGS, "--format", "xml"], 2, "invalid choice"),
    (["ir", "cli_target:f", *ARGS, "--grad", "--argnums", "5"], 2, "out of range"),
    (["frobnicate"], 2, "invalid choice"),
    (["ir", "no_such_module_xyz:f", "--arg", "f64[3]"], 1, "no module named 'no_such_module_xyz'"),
    (["ir", "missing_file.py:f", "--arg", "f64[3]"], 1, "no such file"),
    (["ir", "cli_target:nope", "--arg", "f64[3]"], 1, "has no attribute 'nope'"),
    (["ir", "cli_target:NOT_A_FUNCTION"], 1, "is not a function"),
    (["ir", "cli_target:vec", "--arg", "f64[3]", "--grad"], 1, "to return a scalar"),
    (["ir", "cli_target:f", "--arg", "f64[3]", "--arg", "f64[4]"], 1, "tracing cli_target:f failed"),
])
def test_errors_are_one_line(workdir, args, status, words):
    r = run(args, workdir)
    assert r.returncode == status, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("tracegrad: error: ")
    assert words in lines[0]
    assert "Traceback" not in r.stderr and "<frozen" not in r.stderr
    assert r.stdout == ""


def test_import_error_inside_the_module_is_one_line(workdir):
    (workdir / "broken.py").write_text("import numpy as np\nraise RuntimeError('boom\\nsecond line')\n")
    r = run(["ir", "broken:f", "--arg", "f64[3]"], workdir)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == ["tracegrad: error: importing broken failed: "
                                             "RuntimeError: boom second line"]


# -- tracegrad demo ---------------------------------------------------------------------------------
def check_demo(r, out, threshold):
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    text = r.stdout
    assert "graph(%0:f64[3], %1:f64[]):" in text and "# demo_model.py:" in text   # the IR
    assert text.count("   ok") == 4 and "all derivatives agree" in text
    acc = float(text.split("final test accuracy:")[1].split()[0])
    assert acc > threshold, acc
    assert f"output folder: {out}" in text
    assert (out / "gradient.dot").read_text().startswith("digraph")
    assert (out / "demo_model.py").exists()
    return text


def test_demo_quick(tmp_path):
    out = tmp_path / "demo-out"
    r = run(["demo", "--quick", "--out", str(out)], tmp_path)
    text = check_demo(r, out, 0.8)     # 4 epochs: ~0.95 on scikit-learn's digits, ~0.82 synthetic
    try:
        import matplotlib  # noqa: F401
        assert (out / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    except ImportError:
        assert (out / "loss.csv").read_text().startswith("step,loss\n")
    assert ("gradient.svg" in text) == (out / "gradient.svg").exists()


def test_demo_without_optional_packages(tmp_path):
    """No tqdm, matplotlib, scikit-learn or graphviz (as in CI): modules that fail to import
    shadow them, and the demo falls back to plain lines, loss.csv and the synthetic set."""
    blocked = tmp_path / "blocked"
    for name in ("tqdm", "matplotlib", "sklearn", "graphviz"):
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text(f"raise ImportError('{name} blocked by the test')\n")
    out = tmp_path / "out"
    r = run(["demo", "--quick", "--out", str(out)], tmp_path, extra_path=[blocked])
    text = check_demo(r, out, 0.7)
    assert "synthetic" in text and "epoch  4/4" in text
    assert (out / "loss.csv").read_text().startswith("step,loss\n")
    assert not (out / "loss.png").exists() and not (out / "gradient.svg").exists()
    assert "install graphviz to get an SVG" in text
    assert "matplotlib is not installed" in text


def test_demo_bad_epochs(tmp_path):
    r = run(["demo", "--epochs", "0", "--out", str(tmp_path / "o")], tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["tracegrad: error: --epochs must be at least 1"]
