"""The eager engine beyond the seed cases: custom Functions inside the transforms,
compiled (cached) backward plans, freeing, versions, hooks with create_graph, anomaly
mode and the profiler, and the recorded graph itself."""
import gc
import inspect
import weakref

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.autodiff import PLANS
from tracegrad.eager import engine


class Exp(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        (result,) = ctx.saved_tensors
        return grad_output * result


class Cube(tg.autograd.Function):
    """Saves its input: second derivatives flow through the saved tensor."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2


def test_function_inside_functional_transforms_first_and_second_order():
    x = np.array([0.5, 1.5])
    np.testing.assert_allclose(tg.grad(lambda v: np.sum(Exp.apply(v)))(x), np.exp(x))
    np.testing.assert_allclose(tg.hessian(lambda v: np.sum(Exp.apply(v)))(x), np.diag(np.exp(x)))
    np.testing.assert_allclose(tg.hessian(lambda v: np.sum(Cube.apply(v)))(x), np.diag(6 * x))
    np.testing.assert_allclose(tg.jit(tg.grad(lambda v: np.sum(Cube.apply(v))))(x), 3 * x ** 2)


def test_function_second_order_eager():
    x = tg.tensor([0.5, 1.5], requires_grad=True)
    (g,) = tg.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (h,) = tg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), 6 * x.detach().numpy())
    # double precision, as torch's gradcheck asks
    assert tg.autograd.gradgradcheck(Exp.apply, (tg.rand(3, dtype=tg.float64, requires_grad=True),))
    assert tg.autograd.gradgradcheck(Cube.apply, (tg.rand(3, dtype=tg.float64, requires_grad=True),))


def test_gradgradcheck_builtin_ops():
    x = tg.rand(2, 3, dtype=tg.float64, requires_grad=True)
    w = tg.rand(3, 2, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda a, b: (a @ b).tanh().softmax(1), (x, w))


def test_gradcheck_reports_the_worst_element():
    class Wrong(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g                     # should be 2 x g

    x = tg.tensor([1.0, 3.0], dtype=tg.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="(?s)Jacobian mismatch.*worst mismatch"):
        tg.autograd.gradcheck(Wrong.apply, (x,))
    assert tg.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False) is False


def test_backward_plans_are_cached_and_compiled_with_the_same_numbers():
    rng = np.random.default_rng(0)
    w = tg.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    b = tg.tensor(rng.standard_normal(3), requires_grad=True)
    grads = []
    for _ in range(4):
        x = tg.tensor(rng.standard_normal((5, 4)))
        loss = ((x @ w + b).tanh() ** 2).mean()
        w.grad = None
        loss.backward()
        xs = x.numpy()
        (ref,) = [tg.grad(lambda W: np.mean(np.tanh(xs @ W + b.detach().numpy()) ** 2))(
            w.detach().numpy())]
        np.testing.assert_allclose(w.grad.numpy(), ref, rtol=1e-12)
        grads.append(w.grad)
    plans = [p.run for p in PLANS.values() if isinstance(p, engine._Plan) and p.run.uses >= 3]
    assert plans and any(p.compiled is not None for p in plans)


def test_backward_does_not_write_into_saved_values():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    x = tg.tensor([3.0, 4.0])
    for _ in range(3):               # the third run is compiled code with buffer reuse
        y = (a * x).sum()
        y.backward()
    np.testing.assert_allclose(x.numpy(), [3.0, 4.0])
    np.testing.assert_allclose(a.grad.numpy(), [9.0, 12.0])


def test_saved_non_grad_tensor_modified_in_place_is_caught():
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    x = tg.tensor([3.0, 4.0])
    y = (w * x).sum()
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_inplace_on_nonleaf_records_and_keeps_its_own_input():
    x = tg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x * 2
    y.exp_()                                     # its backward reads the result
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2 * np.array([1.0, -2.0, 3.0])))
    assert y.grad_fn.name() == "ExpBackward0"


def test_freed_graph_still_differentiable_from_a_live_tensor():
    a = tg.ones(3, requires_grad=True)
    c = a * 2
    c.sum().backward()
    (g,) = tg.autograd.grad((c * c).sum(), c)    # c is used afresh: no saved value of a freed node
    np.testing.assert_allclose(g.numpy(), [4.0, 4.0, 4.0])
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        (c * c).sum().backward()                 # goes on through c's freed MulBackward0


def test_hook_replacing_gradient_with_create_graph():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x ** 2
    y.register_hook(lambda g: g * 3)
    (g,) = tg.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.numpy() if not g.requires_grad else g.detach().numpy(),
                               [6.0, 12.0])
    (h,) = tg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), [6.0, 6.0])


def test_backward_inputs_with_a_non_leaf():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    (y ** 2).sum().backward(inputs=[y])
    np.testing.assert_allclose(y.grad.numpy(), [6.0, 12.0])
    assert x.grad is None


def test_anomaly_mode_with_create_graph_and_set_detect_anomaly():
    class Bad(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g / 0.0 * 0.0

    x = tg.rand(2, requires_grad=True)
    line = inspect.currentframe().f_lineno + 1
    y = Bad.apply(x).sum()
    tg.autograd.set_detect_anomaly(True)
    try:
        with pytest.raises(RuntimeError, match=rf"BadBackward.*test_eager_autograd.py:{line}"), \
                np.errstate(divide="ignore", invalid="ignore"):
            tg.autograd.grad(y, x, create_graph=True)
    finally:
        tg.autograd.set_detect_anomaly(False)
    with np.errstate(divide="ignore", invalid="ignore"):
        (g,) = tg.autograd.grad(Bad.apply(x).sum(), x)   # checks off: NaN passes silently
    assert np.isnan(g.numpy()).all()


def test_profiler_counts_forward_and_backward_nodes():
    x = tg.rand(4, requires_grad=True)
    with tg.autograd.profiler.profile() as prof:
        for _ in range(2):
            y = (x * x).exp().sum()
            y.backward()
    table = prof.key_averages().table(sort_by="cpu_time_total")
    rows = {line.split()[0]: line.split()[-1] for line in table.splitlines()[3:-2]}
    assert rows["mul"] == "2" and rows["exp"] == "2" and rows["sum"] == "2"
    assert rows["MulBackward0"] == "2" and rows["ExpBackward0"] == "2"
    with pytest.raises(ValueError, match="sort_by"):
        prof.key_averages().table(sort_by="bogus")


def test_recorded_graph_is_a_tg_graph_with_user_lines():
    w = tg.tensor([1.0], requires_grad=True)
    line = inspect.currentframe().f_lineno + 1
    y = (w + 2) * w
    g = tg.recorded_graph(y)
    assert isinstance(g, tg.Graph)
    assert sorted(g.ops()) == sorted(["input", "const", "add", "mul"])
    assert f"test_eager_autograd.py:{line}" in str(g)
    np.testing.assert_allclose(g(np.array([1.0])), [3.0])


def test_nodes_leave_the_tape_when_tensors_go():
    x = tg.ones(3, requires_grad=True)
    y = ((x * 2).exp() + 1).sum()
    nodes = tg.eager.tape.walk([y.grad_fn]).nodes.values()
    refs = [weakref.ref(h) for h in nodes if h._ir.op != "const"]   # (constants are shared)
    assert len(refs) == 5       # the leaf, mul, exp, add, sum
    del nodes
    gc.disable()
    try:
        del y, x
        assert all(r() is None for r in refs)       # freed as they go: no collection needed
    finally:
        gc.enable()


def test_shape_errors_name_both_shapes_and_the_line():
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(RuntimeError, match=rf"tensor a \(3\).*tensor b \(4\).*:{line}"):
        tg.ones(3, requires_grad=True) + tg.ones(4)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        tg.ones(2, 3) @ tg.ones(4, 5)
    with pytest.raises(RuntimeError, match="invalid for input of size 6"):
        tg.ones(2, 3).view(4, 2)


def test_eager_example_runs():
    import pathlib
    import runpy

    example = pathlib.Path(__file__).resolve().parent.parent / "examples" / "eager_mlp.py"
    runpy.run_path(str(example), run_name="__main__")     # it asserts its own results


def test_grad_mode_and_profiling_are_per_thread_as_in_torch():
    import threading

    import torch

    seen = {}

    def worker(lib, key):
        x = lib.ones(2, requires_grad=True)
        seen[key] = (lib.is_grad_enabled(), (x * 2).requires_grad)

    for lib, key in ((tg, "tg"), (torch, "torch")):
        with lib.no_grad():
            t = threading.Thread(target=worker, args=(lib, key))
            t.start()
            t.join()
            seen[key + " here"] = (lib.is_grad_enabled(), (lib.ones(2, requires_grad=True) * 2)
                                   .requires_grad)
    assert seen["tg"] == seen["torch"] == (True, True)
    assert seen["tg here"] == seen["torch here"] == (False, False)
    with tg.autograd.profiler.profile() as prof:
        t = threading.Thread(target=worker, args=(tg, "in a profile"))
        t.start()
        t.join()
        (tg.ones(3, requires_grad=True) * 3).sum()
    names = {e.key for e in prof.key_averages()}
    assert "mul" in names and seen["in a profile"] == (True, True)


# -- saved values and in-place changes: each reader checks the version it saw ----------
def _version_program(case, lib):
    w = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
    x = lib.tensor([0.5, 1.5, -1.0])
    if case == "changed_then_used":         # y changed before y * y saved it: fine
        y = w * 2
        with lib.no_grad():
            y.mul_(2)
        out = (y * y).sum()
    elif case == "leaf_changed_after_save":
        out = (w * x).sum()
        with lib.no_grad():
            w.add_(1)
    elif case == "leaf_changed_then_new_graph":     # the old graph is stale, the new is not
        old = (w * w).sum()
        with lib.no_grad():
            w.sub_(0.5)
        out = (w * w * x).sum()
        try:
            old.backward()
        except RuntimeError as e:
            return ["old raised", "modified by an inplace" in str(e), _grads(out, w)]
    elif case == "const_changed_after_save":
        out = (w * x).sum()
        x.add_(1)
    elif case == "const_changed_between_graphs":
        first = (w * x).sum()
        x.add_(1)
        out = (w * x).sum() + first * 0
    elif case == "output_changed":          # exp's rule reads its own output
        e = w.exp()
        with lib.no_grad():
            e.mul_(2)
        out = e.sum()
    else:
        raise ValueError(case)
    return _grads(out, w)


def _grads(out, w):
    try:
        out.backward()
    except RuntimeError as e:
        return ["raised", "modified by an inplace" in str(e)]
    return [w.grad.tolist()]


@pytest.mark.parametrize("case", ["changed_then_used", "leaf_changed_after_save",
                                  "leaf_changed_then_new_graph", "const_changed_after_save",
                                  "const_changed_between_graphs", "output_changed"])
def test_in_place_changes_of_saved_values_as_torch(case):
    import torch

    assert _version_program(case, tg) == _version_program(case, torch)
