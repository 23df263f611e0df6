"""Coverage against ``jax.numpy``: every function or ufunc that ``jax.numpy`` (and its
``linalg`` and ``fft``) implements and NumPy also has is handled by tracegrad (a
dispatch-table entry, or one of the wrapped constructors) or listed, with its reason,
in ``docs/numpy-coverage.md`` (the "Refused" table, or the names that take no traced
array). A new JAX name, a handler removed, or a stale line on the page fails here.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.tracer.elements import _CONSTRUCTORS
from tracegrad.tracer.np_base import FUNCTIONS, UFUNCS

jnp = pytest.importorskip("jax.numpy")

PAGE = Path(__file__).resolve().parents[1] / "docs" / "numpy-coverage.md"



def shared_names():
    """``{"np.name": numpy object}`` for the callables (functions and ufuncs, not
    classes) that ``jax.numpy``, ``jax.numpy.linalg`` and ``jax.numpy.fft`` share with
    NumPy."""
    out = {}
    for np_mod, j_mod, prefix in ((np, jnp, "np."), (np.linalg, jnp.linalg, "np.linalg."),
                                  (np.fft, jnp.fft, "np.fft.")):
        for name in dir(j_mod):
            if name.startswith("_") or not hasattr(np_mod, name):
                continue
            obj = getattr(np_mod, name)
            if callable(obj) and not isinstance(obj, type):
                out[prefix + name] = obj
    return out


def handled(obj):
    return obj in FUNCTIONS or obj in UFUNCS or any(obj is c for c in _CONSTRUCTORS.values())


def listed_on_page():
    """``{"np.name": reason}`` from the tables of the page's "Refused" and "Taking no
    traced array" sections: the rows whose first cell is only names in backquotes
    (a name refused as a whole; rows refusing an option of a handled name say more),
    and their reasons."""
    text = PAGE.read_text()
    out = {}
    for section in ("## Refused", "## Taking no traced array"):
        body = text.split(f"\n{section}\n", 1)[1].split("\n## ", 1)[0]
        for line in body.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 2 or not line.startswith("|") or not re.fullmatch(
                    r"`np\.[\w.]+`(, `np\.[\w.]+`)*", cells[0]):
                continue
            for name in re.findall(r"`(np\.[\w.]+)", cells[0]):
                out[name] = cells[1]
    return out


SHARED = shared_names()
LISTED = listed_on_page()


def test_every_jax_numpy_name_is_handled_or_listed_with_a_reason():
    missing = sorted(n for n, obj in SHARED.items()
                     if not handled(obj) and n not in LISTED)
    assert not missing, (f"{len(missing)} jax.numpy names neither handled nor listed in "
                         f"docs/numpy-coverage.md: {missing}")


def test_listed_reasons_are_given():
    for name, reason in LISTED.items():
        assert len(reason) > 20, f"{name}: no reason on the page"


def test_no_stale_entries():
    """A name the page lists as refused (or taking no traced array) is not handled."""
    stale = sorted(n for n in LISTED if n in SHARED and handled(SHARED[n])
                   and n not in ("np.array", "np.asarray", "np.full"))
    assert not stale, f"handled, yet listed as refused on the page: {stale}"


def test_coverage_numbers():
    """The numbers the page states are the tables' (checked, so they cannot drift)."""
    total = len(SHARED)
    done = sum(handled(obj) for obj in SHARED.values())
    text = PAGE.read_text()
    m = re.search(r"Of the (\d+) functions and ufuncs .*? (\d+) are handled", text, re.S)
    assert m, "the page states the jax.numpy coverage numbers"
    assert (int(m.group(1)), int(m.group(2))) == (total, done)


@pytest.mark.parametrize("call", [
    pytest.param(lambda x: len(np.array_str(x)) * x, id="array_str"),
    pytest.param(lambda x: len(np.array_repr(x)) * x, id="array_repr"),
])
def test_refused_names_raise_trace_error(call):
    with pytest.raises(tg.TraceError, match=r"np\.(array_str|array_repr|full)"):
        tg.jit(lambda x: np.sum(call(x)))(np.linspace(0.1, 1.0, 4))


def test_names_taking_no_traced_array_mix_with_traced_values():
    x = np.linspace(0.1, 1.0, 5)

    def f(x):
        return (np.hamming(5) * x + np.arange(5) * np.sum(np.eye(5) @ x)
                + np.fromfunction(lambda i: i * x[0], (5,)) + np.fft.fftfreq(5) * x)
    np.testing.assert_allclose(tg.jit(f)(x), f(x), rtol=1e-12)
    g = tg.grad(lambda x: np.sum(f(x)))(x)
    want = np.hamming(5) + 10.0 + np.fft.fftfreq(5)
    want[0] += 10.0
    np.testing.assert_allclose(g, want, rtol=1e-12)
