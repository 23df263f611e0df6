"""The example scripts run at small sizes, and the numbers they return are checked."""
import math
import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def example():
    def load(name):
        return runpy.run_path(str(EXAMPLES / f"{name}.py"))["main"]
    return load


def test_linear_regression(example):
    out = example("linear_regression")(small=True)
    for key in ("grad", "jit_grad", "eager_grad"):
        assert out[key] == pytest.approx((-28.0, -18.0), abs=1e-12)
    for key in ("functional_fit", "eager_fit"):
        assert out[key] == pytest.approx((2.0, 3.0), abs=1e-3)


def test_logistic_newton(example):
    out = example("logistic_newton")(small=True)
    assert out["newton_iterations"] < 10 and out["newton_grad_norm"] < 1e-10
    assert out["gd_grad_norm"] > 1e3 * out["newton_grad_norm"] and out["gd_loss_gap"] >= 0
    assert out["accuracy"] > 0.75


@pytest.mark.parametrize("synthetic", [None, True], ids=["default-data", "synthetic-data"])
def test_digits_mlp_cnn(example, synthetic):
    out = example("digits_mlp_cnn")(small=True, synthetic=synthetic)
    assert set(out) == {"mlp_functional", "mlp_eager", "cnn_functional", "cnn_eager"}
    assert all(acc > 0.8 for acc in out.values()), out


def test_implicit_van_der_pol(example):
    out = example("implicit_van_der_pol")(small=True)
    assert out["jacobian_error"] < 1e-12
    assert out["implicit_error"] < 1e-2 and out["newton_iterations_max"] <= 25
    assert not out["explicit_error"] < 1.0 and not out["fixed_point_residual"] < 1e-6
    assert not math.isfinite(out["explicit_error"])     # explicit Euler with the same step blows up


def test_jax_lowering(example):
    pytest.importorskip("jax")
    out = example("jax_lowering")(small=True)
    assert out["max_diff"] < 1e-10 and out["dtypes"] == ["float64"]
    assert out["hlo_lines"] > 10 and out["loss_after"] < out["loss_before"]


def test_jax_lowering_without_jax(example, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "jax", None)       # `import jax` raises ImportError
    assert example("jax_lowering")(small=True) is None
    assert "jax is not installed" in capsys.readouterr().out
