"""The documentation's code runs: every ```python block of every ``docs/*.md`` page.

Blocks of one page run in order in one namespace (a later block may use names an
earlier one defined), with a temporary directory as the working directory. Each
block is compiled with the page's name as its file name and its own line numbers in
the page, so source lines recorded in the IR read ``ir.md:42`` and a failure points
at the page line. A block whose first line is ``# not run`` is skipped (the pages keep
installation and shell snippets in ```bash blocks instead, so no page uses it today).
Blocks check their own printed output with ``assert``.

``mkdocs build --strict`` runs too, when mkdocs, mkdocs-material and mkdocstrings are
installed (the ``docs`` extra; not part of the ``test`` extra); it renders the API
reference (``reference.md``) from the docstrings, which must cover the public API.
"""
from __future__ import annotations

import importlib.util
import linecache
import re
import subprocess
import sys
import traceback
from pathlib import Path

import pytest

import tracegrad as tg
from tracegrad.ir import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(p.name for p in DOCS.glob("*.md"))
FENCE = re.compile(r"^```(\S*)\s*$")


def python_blocks(text):
    """``[(first_line_number, source)]`` for each ```python block (line numbers from 1)."""
    blocks, lang, start, body = [], None, 0, []
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if lang is None:
            if fence:
                lang, start, body = fence.group(1), number + 1, []
        elif line.strip() == "```":
            if lang == "python":
                blocks.append((start, "\n".join(body) + "\n"))
            lang = None
        else:
            body.append(line)
    assert lang is None, "a code fence is not closed"
    return blocks


def test_pages_have_python_blocks():
    counted = {page: len(python_blocks((DOCS / page).read_text())) for page in PAGES}
    # eager.md is design notes and the benchmark pages are generated tables: no code
    assert all(counted[p] > 0 for p in ("index.md", "getting-started.md", "functional.md",
                                        "pytorch.md", "ir.md", "passes.md", "backends.md",
                                        "adding-a-primitive.md", "comparison.md")), counted


@pytest.fixture
def clean_state(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    dtype = tg.get_default_dtype()
    grad_enabled = tg.is_grad_enabled()
    registered = set(REGISTRY)
    yield
    tg.set_default_dtype(dtype)
    tg.set_grad_enabled(grad_enabled)
    for name in set(REGISTRY) - registered:   # a page that registers a primitive and fails
        del REGISTRY[name]


@pytest.mark.parametrize("page", PAGES)
def test_page_code_runs(page, clean_state):
    blocks = python_blocks((DOCS / page).read_text())
    if not blocks:
        pytest.skip(f"{page} has no python blocks")
    namespace = {"__name__": f"docs_{Path(page).stem.replace('-', '_')}"}
    for k, (line, source) in enumerate(blocks, 1):
        if source.startswith("# not run"):
            continue
        text = "\n" * (line - 1) + source
        code = compile(text, page, "exec")
        # the block's lines, where tracebacks and tracegrad read a running line (as IPython
        # registers a cell's)
        linecache.cache[page] = (len(text), None, text.splitlines(True), page)
        try:
            exec(code, namespace)
        except ModuleNotFoundError as e:
            if e.name and e.name.split(".")[0] in ("jax", "jaxlib"):
                pytest.skip(f"{page} block {k} needs JAX")
            raise
        except Exception as e:  # noqa: BLE001 - reported with the page and block
            pytest.fail(f"docs/{page}, python block {k} (line {line}) failed: "
                        f"{type(e).__name__}: {e}\n{traceback.format_exc()}", pytrace=False)


# every public name of the functional API, and the eager API's entry points
REFERENCED = ["grad", "value_and_grad", "vjp", "jvp", "jacobian", "hessian", "stop_gradient",
              "custom_vjp", "checkpoint", "trace", "Graph", "adjoint", "prune", "cse", "simplify",
              "batch", "jit", "Jitted", "Lowered", "cond", "fori_loop", "while_loop", "scan", "vmap",
              "TraceError", "RetraceWarning", "tensor", "zeros", "ones", "rand", "randn", "arange",
              "manual_seed", "set_default_dtype", "Tensor", "no_grad", "enable_grad",
              "set_grad_enabled"]


def test_reference_page_covers_the_public_api():
    text = (DOCS / "reference.md").read_text()
    documented = {line.split()[1].rsplit(".", 1)[-1] for line in text.splitlines()
                  if line.startswith("::: tracegrad.")}
    assert set(REFERENCED) <= documented, sorted(set(REFERENCED) - documented)
    for name in documented & set(tg.__all__) - {"Graph"}:
        assert getattr(tg, name).__doc__, f"tg.{name} has no docstring for the reference"
    assert "reference.md" in (ROOT / "mkdocs.yml").read_text()


def test_mkdocs_build_strict(tmp_path):
    if any(importlib.util.find_spec(m) is None
           for m in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers")):
        pytest.skip("mkdocs / mkdocs-material / mkdocstrings not installed (pip install '.[docs]')")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    assert (tmp_path / "site" / "index.html").exists()
    # the reference is rendered from the code: a heading per name, signatures, docstrings
    page = (tmp_path / "site" / "reference" / "index.html").read_text()
    headings = {h.rsplit(".", 1)[-1] for h in re.findall(r'id="(tracegrad\.[\w.]+)"', page)}
    assert set(REFERENCED) <= headings, sorted(set(REFERENCED) - headings)
    assert "steepest-ascent" in page          # from tg.grad's docstring
    assert "static_argnums" in page and "Raises" in page
