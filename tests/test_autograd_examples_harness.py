"""benchmarks/autograd_examples.py's own pieces: its ``autograd.misc.fixed_points`` shim
gives autograd's derivatives (not only the root), and its comparison of the two runs'
numbers tells a wrong derivative from the roundoff of a gradient at a stationary point."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from conftest import assert_close

import tracegrad as tg

autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")
ag_fixed_points = pytest.importorskip("autograd.misc.fixed_points")

_spec = importlib.util.spec_from_file_location(
    "autograd_examples", Path(__file__).resolve().parent.parent / "benchmarks" /
    "autograd_examples.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _descent(a):
    # the iteration of autograd's examples/fixed_points.py: x -> x - 0.05 (x^2 - a)
    return lambda x: x - 0.05 * (x ** 2 - a)


def test_fixed_point_scalar_derivatives_are_autograds():
    def ag_sqrt(a):
        return ag_fixed_points.fixed_point(_descent, a, 10.0, lambda x, y: anp.abs(x - y),
                                           1e-4)

    def tg_sqrt(a):
        return bench._fixed_point(_descent, a, 10.0, lambda x, y: np.abs(x - y), 1e-4)

    assert_close(tg_sqrt(2.0), ag_sqrt(2.0), rtol=1e-15)
    d1, d2 = tg.grad(tg_sqrt)(2.0), tg.grad(tg.grad(tg_sqrt))(2.0)
    # autograd iterates the adjoint to tol: 0.353381 (the implicit derivative at the root
    # found, 1/(2 x*), is 0.353408, a different number by about tol)
    assert_close(d1, autograd.grad(ag_sqrt)(2.0), rtol=1e-13)
    assert_close(d2, autograd.grad(autograd.grad(ag_sqrt))(2.0), rtol=1e-13)
    # both approximate sqrt's own derivatives to about tol
    assert abs(d1 - 0.5 / np.sqrt(2.0)) < 1e-3
    assert abs(d2 + 0.25 * 2.0 ** -1.5) < 1e-3


def test_fixed_point_vector_derivatives_are_autograds():
    c = np.array([1.0, 1.5, 2.0])

    def it(a):
        return lambda x: x - 0.05 * (x ** 2 - a * c)

    def f(fixed_point, npm):
        dist = lambda x, y: npm.sqrt(npm.sum((x - y) ** 2))  # noqa: E731
        return lambda v: npm.sum(npm.sin(fixed_point(it, v, np.full(3, 3.0), dist, 1e-8)))

    ag_f, tg_f = f(ag_fixed_points.fixed_point, anp), f(bench._fixed_point, np)
    v = np.array([2.0, 3.0, 0.5])
    assert_close(tg.grad(tg_f)(v), autograd.grad(ag_f)(v), rtol=1e-13)
    # second order: the nested adjoint iterations may stop a step apart (about tol)
    assert_close(tg.hessian(tg_f)(v), autograd.hessian(ag_f)(v), rtol=1e-6)


# negative_binomial_maxlike's derivative calls on the two libraries: Newton steps, then
# the gradient at the stationary point found (roundoff, about 1e-12; mpmath's exact
# value there is a third number of that size)
_NB_AUTOGRAD = [[[300.5939672830616, 300.5939672830616]],
                [[1262.0913823568187, 1262.0913823568187]],
                [[0.020537838427117094, 0.020537838427117094]],
                [[9.094947017729282e-13, 9.094947017729282e-13],
                 [-3.637978807091713e-12, 3.637978807091713e-12]]]
_NB_TRACEGRAD = [[[300.5939672830616, 300.5939672830616]],
                 [[1262.0913823568185, 1262.0913823568185]],
                 [[0.020537838428481336, 0.020537838428481336]],
                 [[4.547473508864641e-13, 4.547473508864641e-13],
                  [-5.4569682106375694e-12, 5.4569682106375694e-12]]]


def test_agree_takes_roundoff_at_a_stationary_point():
    assert bench._agree(_NB_AUTOGRAD, _NB_TRACEGRAD)[0] is None


@pytest.mark.parametrize("call, entry, factor", [
    (1, 0, 1 + 1e-5),      # a relative error of 1e-5 in a large value
    (2, 0, 1.001),         # 1e-3 in a small value: 2e-5 absolute, over 1e-10 of 1262
    (3, 1, 1e5),           # the stationary point's gradient 5e-7 instead of 5e-12
])
def test_agree_still_reports_a_wrong_number(call, entry, factor):
    wrong = [[list(leaf) for leaf in c] for c in _NB_TRACEGRAD]
    wrong[call][entry] = [v * factor for v in wrong[call][entry]]
    assert bench._agree(_NB_AUTOGRAD, wrong)[0].startswith(f"call {call}:")


def test_agree_reports_nan():
    wrong = [[list(leaf) for leaf in c] for c in _NB_TRACEGRAD]
    wrong[0][0] = [float("nan"), float("nan")]
    assert bench._agree(_NB_AUTOGRAD, wrong)[0].startswith("call 0:")
