"""Every primitive is fully described by its registry entry, and the description is true.

- every registered primitive belongs to a family of ``registry.FACTS``' ``FAMILIES``, which
  decides every fact but ``batch``; the entry states ``batch`` (a rule, or the explicit
  "not applicable": ``batch=None`` is "evaluated row by row") and the facts where it
  differs from its family, and nothing its family already says;
- the facts agree with the primitive's behaviour where that can be checked on its sample
  operands (``primitive_cases``): a declared view shares its operand's memory, a fresh
  result never does, a ufunc is the ufunc, a spelling computes ``impl``'s value, a reducer
  reduces as ``impl`` does, a structural-zero rule gives zeros, a batching rule gives the
  rows ``impl`` gives;
- no consumer keeps a table of its own about primitives: their sources name a primitive
  in a string literal only where the allowlist below says why.
"""
from __future__ import annotations

import ast
import re
import string
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ir import PROJ, REGISTRY, Index, apply
from tracegrad.ir.registry import ALIASING, FACTS, JAX_CASTS, ZEROS, Primitive, register
from tracegrad.passes.batch import batch
from tracegrad.runtime import codegen, run

from primitive_cases import CASES

NAMES = sorted(REGISTRY)
ROOT = Path(tg.__file__).parent


def _direct_cases(name, limit=None):
    """The cases of ``name`` whose operands the primitive takes as they are (not the ones
    run through a composed function), where ``impl`` runs on them."""
    out = []
    for case in CASES.get(name, ()):
        try:
            with np.errstate(all="ignore"):
                value = REGISTRY[name].impl(*case.args, **case.params)
        except Exception:   # noqa: BLE001 - a case built for a composed function
            continue
        out.append((case, value))
        if limit is not None and len(out) == limit:
            break
    return out


def _with(fact):
    """The primitives that state a value (not None) for ``fact``."""
    return [n for n in NAMES if getattr(REGISTRY[n], fact) is not None]


# -- every fact is stated ----------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_every_fact_is_declared(name):
    prim = REGISTRY[name]
    assert set(FACTS) <= prim.declared, f"{name} does not state {sorted(set(FACTS) - prim.declared)}"
    assert isinstance(prim.complex, bool) and isinstance(prim.foldable, bool)
    assert prim.aliasing in ALIASING and prim.zeros in ZEROS and prim.jax_casts in JAX_CASTS
    assert prim.batch is None or callable(prim.batch)
    assert callable(prim.cost)
    assert prim.ufunc is None or isinstance(prim.ufunc, np.ufunc)
    assert prim.reducer is None or isinstance(prim.reducer, np.ufunc)
    assert re.fullmatch(r"[A-Z][A-Za-z0-9]*", prim.torch_name), prim.torch_name
    if prim.spelling is not None:
        fields = {f for _, f, _, _ in string.Formatter().parse(prim.spelling) if f}
        assert fields, prim.spelling
    if prim.ufunc is not None:     # a ufunc is elementwise and its result a new array
        assert prim.aliasing == "fresh" and prim.family == "elementwise"


@pytest.mark.parametrize("name", NAMES)
def test_every_entry_has_a_family_that_decides_its_facts(name):
    from tracegrad.ir.registry import FAMILIES
    prim = REGISTRY[name]
    assert prim.family in FAMILIES, f"{name}: family {prim.family!r} is not in FAMILIES"
    assert set(FAMILIES[prim.family]) == set(FACTS) - {"batch"}


def test_a_family_default_stated_again_is_not_in_the_sources():
    # "every built-in entry restates 11 facts' defaults": an entry states what differs
    from tracegrad.ir.registry import FAMILIES
    restated = []
    for path in sorted((ROOT / "ir" / "prims").glob("*.py")) + sorted((ROOT / "higher").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "register" and node.args
                    and isinstance(node.args[0], ast.Constant)):
                continue
            prim = REGISTRY.get(node.args[0].value)
            if prim is None or prim.family not in FAMILIES:
                continue
            for kw in node.keywords:
                default = FAMILIES[prim.family].get(kw.arg, FAMILIES)
                try:
                    value = ast.literal_eval(kw.value)
                except ValueError:
                    continue
                if type(value) is type(default) and value == default:
                    restated.append(f"{path.name}: {prim.name} {kw.arg}={value!r}")
    assert not restated, restated


def test_facts_are_the_dataclass_fields():
    fields = set(Primitive.__dataclass_fields__)
    assert set(FACTS) <= fields
    assert len(FACTS) == len(set(FACTS)) == 11


def test_an_unstated_fact_takes_the_cautious_default():
    prim = Primitive("my_op_for_facts", np.negative)
    assert prim.declared == frozenset()
    assert (prim.batch, prim.aliasing, prim.ufunc, prim.spelling, prim.reducer, prim.zeros) == (
        None, "unknown", None, None, None, None)
    assert prim.foldable is True and prim.complex is False
    assert prim.torch_name == "MyOpForFactsBackward0"
    assert prim.cost((3, 4), [(3, 4)], {}) == 12


def test_register_records_what_it_was_told(monkeypatch):
    monkeypatch.setattr("tracegrad.ir.registry.REGISTRY", dict(REGISTRY))
    prim = register("facts_probe", np.negative, family="elementwise", complex=True,
                    torch_name="ProbeBackward0")
    assert prim.declared == set(FACTS) - {"batch"}      # stated, or decided by its family
    assert prim.jax_casts == "ufunc" and prim.aliasing == "fresh"   # the family's
    assert prim.complex is True and prim.torch_name == "ProbeBackward0"     # its own
    loose = register("facts_loose", np.negative, aliasing="fresh")      # no family
    assert loose.declared == {"aliasing"} and loose.complex is False and loose.jax_casts is None
    with pytest.raises(ValueError, match="aliasing"):
        Primitive("facts_bad", np.negative, aliasing="sometimes")


# -- facts against behaviour ------------------------------------------------------------
def _shares(value, operand):
    return isinstance(value, np.ndarray) and isinstance(operand, np.ndarray) and (
        value is operand or np.shares_memory(value, operand))


@pytest.mark.parametrize("name", [n for n in NAMES if REGISTRY[n].aliasing == "view"])
def test_a_declared_view_is_a_view_of_operand_0(name):
    cases = _direct_cases(name)
    assert cases
    shared = 0
    for case, value in cases:
        basic = not isinstance(case.params.get("index"), Index) or case.params["index"].is_basic
        if isinstance(value, np.ndarray) and value.size and basic:   # not a NumPy scalar
            assert _shares(value, case.args[0]), case.id
            shared += 1
    assert shared > 0


IDENTITY_SAMPLES = {
    "stop_gradient": lambda x: ((x,), {}),
    "convert": lambda x: ((x,), {"dtype": x.dtype}),
    "custom_vjp_call": lambda x: ((x, x * 2.0), {"rule": None, "index": 0}),
}


def test_identity_samples_cover_every_identity_primitive():
    assert set(IDENTITY_SAMPLES) == {n for n in NAMES if REGISTRY[n].aliasing == "identity"}


@pytest.mark.parametrize("name", sorted(IDENTITY_SAMPLES))
def test_a_declared_identity_may_return_operand_0(name):
    x = np.arange(6.0).reshape(2, 3)
    args, params = IDENTITY_SAMPLES[name](x)
    assert REGISTRY[name].impl(*args, **params) is x


@pytest.mark.parametrize("name", [n for n in NAMES if REGISTRY[n].aliasing == "fresh"])
def test_a_declared_fresh_result_shares_no_operand(name):
    checked = 0
    for case, value in _direct_cases(name):
        for a in case.args:
            assert not _shares(value, a), case.id
        checked += 1
    if name != "zeros":
        assert checked > 0
    else:
        assert not _shares(REGISTRY[name].impl((2, 3), np.float64), np.zeros((2, 3)))


@pytest.mark.parametrize("name", _with("ufunc"))
def test_a_declared_ufunc_is_the_impl(name):
    prim = REGISTRY[name]
    cases = _direct_cases(name)
    assert cases
    for case, value in cases:
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(prim.ufunc(*case.args), value, err_msg=case.id)
            assert np.asarray(prim.ufunc(*case.args)).dtype == np.asarray(value).dtype


def _spelled_value(prim, case):
    names = [f"a{k}" for k in range(len(case.args))]
    source = codegen.spell(prim.spelling, names, case.params)
    if source is None:
        return None
    scope = dict(zip(names, case.args))
    with np.errstate(all="ignore"):
        return eval(source, {"np": np}, scope)   # noqa: S307 - our own spelling


@pytest.mark.parametrize("name", _with("spelling"))
def test_a_declared_spelling_computes_the_impl(name):
    prim = REGISTRY[name]
    checked = 0
    cases = _direct_cases(name)
    if name == PROJ:    # its operand is a head's tuple, which no case passes as it is
        head = (np.arange(3.0), np.ones((2, 2), np.float32), np.int8(4))
        cases = [(SimpleNamespace(args=(head,), params={"index": k}, id=f"proj-{k}"), head[k])
                 for k in range(3)]
    for case, value in cases:
        got = _spelled_value(prim, case)
        if got is None:
            continue
        np.testing.assert_array_equal(got, value, err_msg=case.id)
        assert np.asarray(got).dtype == np.asarray(value).dtype, case.id
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("name", _with("reducer"))
def test_a_declared_reducer_reduces_as_the_impl(name):
    prim = REGISTRY[name]
    cases = _direct_cases(name)
    assert cases
    for case, value in cases:
        axis, keepdims = case.params["axis"], case.params["keepdims"]
        got = prim.reducer.reduce(case.args[0], axis, None, None, keepdims)
        np.testing.assert_array_equal(got, value, err_msg=case.id)


@pytest.mark.parametrize("name", _with("zeros"))
def test_a_declared_zero_rule_gives_zeros(name):
    prim = REGISTRY[name]
    checked = 0
    for case, _ in _direct_cases(name):
        operands = [k for k in range(len(case.args)) if k not in prim.nondiff_args]
        if prim.zeros == "first":
            zeroed = [{0}]
        elif prim.zeros == "any":
            zeroed = [{k} for k in operands]
        else:
            zeroed = [set(operands)]
        for which in zeroed:
            args = [np.zeros_like(a) if k in which else a for k, a in enumerate(case.args)]
            out = np.asarray(prim.impl(*args, **case.params))
            assert not np.any(out), (case.id, which)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("name", NAMES)
def test_cost_is_a_count_from_shapes(name):
    prim = REGISTRY[name]
    for case, value in _direct_cases(name, limit=3):
        # a multi-output node's own shape is () (its value a tuple; ir/registry.py)
        out_shape = () if prim.multi else tuple(np.shape(value))
        cost = prim.cost(out_shape, [a.shape for a in case.args], case.params)
        assert isinstance(cost, int) and cost >= 0, (case.id, cost)
        if prim.aliasing == "view":
            assert cost == 0


def _rows(a, size):
    """``size`` rows near ``a``: floating rows differ and stay in the operand's domain;
    integer and boolean ones (indices, masks) repeat."""
    if a.dtype.kind in "fc":
        return np.stack([a * (1.0 + 0.01 * i) for i in range(size)])
    return np.stack([a] * size)


@pytest.mark.parametrize("name", _with("batch"))
def test_a_declared_batch_rule_gives_the_rows(name):
    prim = REGISTRY[name]
    size = 3
    by_rule = 0
    cases = _direct_cases(name, limit=4)
    assert cases
    for case, _ in cases:
        every = list(range(len(case.args)))
        choices = [[k] for k in every] + ([every] if len(every) > 1 else [])
        for batched in choices:
            graph = tg.trace(lambda *ops, p=case.params: apply(name, *ops, **p), *case.args)
            stats = {}
            bg = batch(graph, batched, size, stats=stats)
            stacked = [_rows(a, size) if k in batched else a for k, a in enumerate(case.args)]
            with np.errstate(all="ignore"):
                outs = run(bg, stacked)
                for i in range(size):
                    row = prim.impl(*[s[i] if k in batched else s for k, s in enumerate(stacked)],
                                    **case.params)
                    # a multi-output primitive gives a tuple: each output is checked
                    rows = row if prim.multi else (row,)
                    assert len(outs) == len(rows)
                    for out, want in zip(outs, rows):
                        assert out.dtype == np.asarray(want).dtype, (case.id, batched)
                        np.testing.assert_allclose(out[i], want, rtol=1e-10, atol=1e-12,
                                                   equal_nan=True, err_msg=f"{case.id} {batched}")
            by_rule += stats.get("rule", 0)
    assert by_rule > 0, "every case fell back to row by row"


# -- no side tables in the consumers ------------------------------------------------------
CONSUMERS = ["runtime/codegen.py", "ir/aliasing.py", "runtime/jax_backend.py",
             "passes/simplify.py", "passes/batch.py", "ir/summary.py", "eager/tape.py",
             "eager/dispatch.py", "tracer/numpy_api.py"]

# Where a consumer may still name a primitive, and why. Applying a primitive
# (``apply("sum", ...)``) is using it, not describing it, and is never reported.
ALLOWED = {
    # three code generation strategies that need the generator's own state: einsum's
    # contraction order found from the operand shapes at compile time, index_update
    # written into its operand's buffer when that buffer is dead, and the sum (add) of
    # scatters of disjoint slices into zeros (a broadcast_to/reshape of a 0) added into
    # one buffer
    "runtime/codegen.py": {"einsum", "index_update", "add", "broadcast_to", "reshape"},
    # where PyTorch's autograd graph has no edge: a detached value and a custom Function's
    # own node (the eager tape's walk stops there, as torch's does)
    "eager/tape.py": {"stop_gradient", "custom_vjp_call"},
    # the algebraic identities of particular primitives (x + 0, x * 1, x ** 2 as x * x,
    # neg(neg(x)), reshape of reshape, transpose of transpose, sum of a broadcast, a
    # scatter into zeros), the nodes they build, and the structural zeros themselves
    "passes/simplify.py": {"add", "sub", "mul", "div", "pow", "neg", "select", "reshape",
                           "transpose", "broadcast_to", "convert", "sum", "index_update",
                           "zeros"},
}


def _named_primitives(path):
    """The string literals in ``path`` that are primitive names: not docstrings, not
    ``__all__`` (names of the module's own functions), not the primitive argument of an
    ``apply`` call."""
    tree = ast.parse(path.read_text())
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            skip.update(id(c) for c in ast.walk(node.value))
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                skip.add(id(body[0].value))
        if isinstance(node, ast.Call) and node.args and (
                getattr(node.func, "id", None) == "apply"
                or getattr(node.func, "attr", None) == "apply"):
            skip.add(id(node.args[0]))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in skip and node.value in REGISTRY:
            found.add(node.value)
    return found


@pytest.mark.parametrize("consumer", CONSUMERS)
def test_consumers_keep_no_table_of_primitives(consumer):
    found = _named_primitives(ROOT / consumer)
    assert found <= ALLOWED.get(consumer, set()), sorted(found - ALLOWED.get(consumer, set()))


def test_the_check_finds_a_side_table(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('"""doc naming sum"""\n_FRESH = {"matmul", "sum"}\nx = apply("exp", y)\n')
    assert _named_primitives(probe) == {"matmul", "sum"}
