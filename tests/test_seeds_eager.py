"""S1-S34 of SEED_EXAMPLES.md: the seed articles' PyTorch examples run through the eager API.

``import tracegrad as tg`` stands where the articles have ``import torch as t``, and every
case checks the numbers, attribute values, node names and error wording that PyTorch gives
(API.md section 4). The tests at the end cover more of section 4 that PyTorch users rely on:
``tg.autograd.backward``, ``backward(inputs=...)``, ``allow_unused``, ``retain_grad``, hooks that
replace a gradient, the grad-mode switches, ``create_graph`` and the default dtypes.

Every test here also passes with PyTorch itself standing in for ``tg`` (NumPy's ``tg.jacobian`` /
``tg.hessian`` kept for S26), except S28's demand that the anomaly error name the forward call's
source line: PyTorch prints that as a warning, API.md puts it in the message.
"""
import inspect
import re
import warnings

import numpy as np
import pytest

import tracegrad as tg

SIGMOID_1 = 1 / (1 + np.exp(-1.0))    # 0.7311, what sigmoid_() makes of a one
NOT_SCALAR = re.escape("grad can be implicitly created only for scalar outputs")


def values(t):
    """A tensor's values as a NumPy array (detached, as a PyTorch user would write it)."""
    return t.detach().numpy()


def non_leaf_grad(t):
    """``t.grad`` of a non-leaf; PyTorch warns that it is not populated, which is fine here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return t.grad


def caller_line():
    """The line number of the line that calls this helper."""
    return inspect.currentframe().f_back.f_lineno


def s13_graph():
    """S13's graph: y = (w + x) * (w + 1) with w = 1, x = 2, so y = 6 and dy/dw = 5."""
    w = tg.tensor([1.0], requires_grad=True)
    x = tg.tensor([2.0], requires_grad=True)
    a = w + x
    b = w + 1
    y = a * b
    return w, x, a, b, y


# --------------------------------------------------------------- leaves, grad_fn, backward


def test_S1_leaves_and_grad_fn():
    a = tg.ones(3, requires_grad=True)
    b = tg.rand(3, requires_grad=True)
    c = a * b
    assert a.is_leaf and b.is_leaf
    assert not c.is_leaf
    assert a.grad_fn is None
    assert c.grad_fn.name() == "MulBackward0"


def test_S2_requires_grad_propagates():
    a = tg.ones(3)
    b = tg.ones(3, requires_grad=True)
    c = a + b
    assert a.requires_grad is False
    assert c.requires_grad is True


def test_S3_backward_of_non_scalar_needs_gradient():
    a = tg.ones(3, requires_grad=True)
    b = tg.rand(3, requires_grad=True)
    c = a * b
    with pytest.raises(RuntimeError, match=NOT_SCALAR):
        c.backward()


def test_S4_gradients_accumulate_across_backward_calls():
    a = tg.ones(3, requires_grad=True)
    b = tg.rand(3, requires_grad=True)
    c = a * b
    d = c.sum()
    d.backward(retain_graph=True)
    np.testing.assert_allclose(a.grad.numpy(), values(b))
    np.testing.assert_allclose(b.grad.numpy(), [1.0, 1.0, 1.0])

    e = c.sum()
    e.backward(retain_graph=True)
    np.testing.assert_allclose(b.grad.numpy(), [2.0, 2.0, 2.0])

    f = c.sum()     # a forward pass alone changes no gradient
    assert f.requires_grad
    np.testing.assert_allclose(b.grad.numpy(), [2.0, 2.0, 2.0])


def test_S5_data_is_outside_the_graph():
    a = tg.ones(3, 4, requires_grad=True)
    b = tg.rand(3, 4, requires_grad=True)
    assert a.data.requires_grad is False
    c = a.data * b.data
    with pytest.raises(RuntimeError, match=re.escape("does not require grad and does not have a grad_fn")):
        c.sum().backward()


def test_S6_inplace_change_through_data_goes_unnoticed():
    a = tg.ones(3, 4, requires_grad=True)
    b = tg.rand(3, 4, requires_grad=True)
    d = (a * b).sum()
    a.data.sigmoid_()
    np.testing.assert_allclose(values(a), np.full((3, 4), SIGMOID_1))
    d.backward()    # the documented pitfall: no error, and a wrong gradient
    np.testing.assert_allclose(b.grad.numpy(), np.full((3, 4), SIGMOID_1))


def test_S7_inplace_change_through_detach_is_caught():
    a = tg.ones(3, 4, requires_grad=True)
    b = tg.rand(3, 4, requires_grad=True)
    d = (a * b).sum()
    a_ = a.detach()
    a_.sigmoid_()
    np.testing.assert_allclose(values(a), np.full((3, 4), SIGMOID_1))
    with pytest.raises(RuntimeError, match=re.escape("modified by an inplace operation")):
        d.backward()


def test_S8_non_leaf_grad_is_not_kept_but_autograd_grad_gives_it():
    a = tg.ones(3, 4, requires_grad=True)
    b = tg.rand(3, 4, requires_grad=True)
    c = a * b
    d = c.sum()
    d.backward()
    np.testing.assert_allclose(a.grad.numpy(), values(b))
    assert non_leaf_grad(c) is None
    # as in the article, after the backward: SumBackward0 saves no tensor, so nothing was freed
    grads = tg.autograd.grad(d, c)
    assert isinstance(grads, tuple) and len(grads) == 1
    np.testing.assert_allclose(grads[0].numpy(), np.ones((3, 4)))


def test_S9_hook_sees_the_gradient_of_a_non_leaf():
    a = tg.ones(3, 4, requires_grad=True)
    b = tg.rand(3, 4, requires_grad=True)
    c = a * b
    seen = []
    handle = c.register_hook(lambda grad: seen.append(grad.numpy().copy()))
    d = c.sum()
    d.backward(retain_graph=True)
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], np.ones((3, 4)))

    handle.remove()
    d.backward()
    assert len(seen) == 1


def test_S10_grad_fn_names_of_pow_and_add():
    x = tg.rand(3, requires_grad=True)
    y = x ** 2
    z = x + x
    assert y.grad_fn.name() == "PowBackward0"
    assert z.grad_fn.name() == "AddBackward0"
    assert x.grad is None and x.grad_fn is None and x.is_leaf
    assert y.requires_grad and not y.is_leaf and non_leaf_grad(y) is None


def test_S11_scalar_backward():
    x = tg.tensor(1.0, requires_grad=True)
    y = tg.tensor(2.0, requires_grad=True)
    z = x ** 2 + y
    z.backward()
    assert z.item() == 3.0
    assert x.grad.item() == 2.0
    assert y.grad.item() == 1.0


def test_S12_explicit_gradient_equals_backward_of_sum():
    x = tg.ones(2, requires_grad=True)
    z = x + 2
    z.backward(tg.ones_like(z))
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])

    x = tg.ones(2, requires_grad=True)
    z = x + 2
    z.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 1.0])


def test_S13_retain_graph():
    w, x, a, b, y = s13_graph()
    np.testing.assert_allclose(values(y), [6.0])
    y.backward(retain_graph=True)
    np.testing.assert_allclose(w.grad.numpy(), [5.0])
    y.backward(retain_graph=True)
    np.testing.assert_allclose(w.grad.numpy(), [10.0])
    y.backward()                    # frees the graph
    np.testing.assert_allclose(w.grad.numpy(), [15.0])
    with pytest.raises(RuntimeError, match=re.escape("retain_graph=True")):
        y.backward()


def test_S14_backward_with_gradient_weights():
    w, x, a, b, _ = s13_graph()
    y0 = a * b
    y1 = a + b
    loss = tg.cat([y0, y1])
    np.testing.assert_allclose(values(loss), [6.0, 5.0])
    loss.backward(gradient=tg.tensor([1.0, 2.0]))
    np.testing.assert_allclose(w.grad.numpy(), [9.0])       # 1 * 5 + 2 * 2
    np.testing.assert_allclose(x.grad.numpy(), [4.0])       # 1 * 2 + 2 * 1


def test_S15_second_derivative_with_create_graph():
    x = tg.tensor([3.0], requires_grad=True)
    y = x ** 2
    g1 = tg.autograd.grad(y, x, create_graph=True)
    assert isinstance(g1, tuple) and len(g1) == 1
    np.testing.assert_allclose(values(g1[0]), [6.0])
    assert g1[0].requires_grad
    g2 = tg.autograd.grad(g1[0], x)
    assert isinstance(g2, tuple) and len(g2) == 1
    np.testing.assert_allclose(g2[0].numpy(), [2.0])


# ------------------------------------------------------------------ custom Functions


def test_S16_custom_exp_function():
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

    x = tg.tensor([1.0], requires_grad=True)
    ret = Exp.apply(x)
    np.testing.assert_allclose(values(ret), [np.e])
    assert ret.grad_fn.name() == "ExpBackward"
    ret.backward()
    np.testing.assert_allclose(x.grad.numpy(), [np.e])


def test_S17_custom_function_scales_the_gradient():
    class GradCoeff(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x, coeff):
            ctx.coeff = coeff
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad_output):
            return ctx.coeff * grad_output, None

    x = tg.tensor([2.0], requires_grad=True)
    ret = GradCoeff.apply(x, -0.1) ** 2
    np.testing.assert_allclose(values(ret), [4.0])
    assert ret.grad_fn.name() == "PowBackward0"
    ret.backward()
    np.testing.assert_allclose(x.grad.numpy(), [-0.4])


def test_S18_legendre_polynomial_on_python_numbers_and_tensors():
    class LegendrePolynomial3(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return 0.5 * (5 * x ** 3 - 3 * x)

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            return grad_output * 1.5 * (5 * x ** 2 - 1)

    a, b, c, d, x = 1, 2, 1, 2, 1
    P3 = LegendrePolynomial3.apply
    y_pred = a + b * P3(c + d * x)
    assert y_pred == 127.0

    x = tg.tensor(1.0, requires_grad=True)
    y_pred = a + b * P3(c + d * x)
    assert y_pred.item() == 127.0
    y_pred.backward()
    assert x.grad.item() == 264.0        # b * 1.5 * (5 * 3**2 - 1) * d


def test_S19_custom_conv2d_function():
    class MyConv2D(tg.autograd.Function):
        @staticmethod
        def forward(ctx, X, weight):
            ctx.save_for_backward(X, weight)
            return tg.nn.functional.conv2d(X, weight)

        @staticmethod
        def backward(ctx, grad_out):
            X, weight = ctx.saved_tensors
            F = tg.nn.functional
            grad_X = F.conv_transpose2d(grad_out, weight)
            grad_weight = F.conv2d(X.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
            return grad_X, grad_weight

    tg.manual_seed(0)
    X = tg.rand(10, 3, 7, 7, dtype=tg.float64, requires_grad=True)
    W = tg.rand(5, 3, 3, 3, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(MyConv2D.apply, (X, W)) is True

    y = MyConv2D.apply(X, W)
    assert y.shape == (10, 5, 5, 5)
    label = tg.randn_like(y)
    assert W.grad is None
    tg.nn.functional.mse_loss(y, label).backward()
    assert W.grad.shape == (5, 3, 3, 3)

    builtin = tg.nn.functional.mse_loss(tg.nn.functional.conv2d(X, W), label)
    grad_X, grad_W = tg.autograd.grad(builtin, (X, W))
    np.testing.assert_allclose(W.grad.numpy(), grad_W.numpy(), rtol=1e-10)
    np.testing.assert_allclose(X.grad.numpy(), grad_X.numpy(), rtol=1e-10)


# -------------------------------------------------- accumulation, in-place, detach, no_grad


def test_S20_gradients_accumulate_until_zeroed():
    w, x, *_ = s13_graph()
    for expected in (5.0, 10.0, 15.0, 20.0):
        a = w + x
        b = w + 1
        y = a * b
        y.backward()
        np.testing.assert_allclose(w.grad.numpy(), [expected])
    w.grad.zero_()
    np.testing.assert_allclose(w.grad.numpy(), [0.0])


def test_S21_results_require_grad_and_are_not_leaves():
    w, x, a, b, y = s13_graph()
    assert a.requires_grad and b.requires_grad and y.requires_grad
    assert not a.is_leaf and not b.is_leaf and not y.is_leaf
    assert w.is_leaf and x.is_leaf


def test_S22_inplace_on_a_leaf_that_requires_grad():
    w = tg.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "a leaf Variable that requires grad is being used in an in-place operation")):
        w.add_(1)
    np.testing.assert_allclose(values(w), [1.0])


def test_S23_plus_equals_is_in_place_without_grad():
    a = tg.ones(1)
    a = a + 1
    np.testing.assert_allclose(a.numpy(), [2.0])
    before = id(a)
    a += 1
    np.testing.assert_allclose(a.numpy(), [3.0])
    assert id(a) == before


def test_S24_detach_shares_storage():
    w = tg.tensor([1.0], requires_grad=True)
    w_detach = w.detach()
    assert w_detach.requires_grad is False
    w_detach.data[0] = 999
    np.testing.assert_allclose(values(w), [999.0])


def test_S25_no_grad_records_nothing():
    w = tg.tensor([1.0], requires_grad=True)
    with tg.no_grad():
        y = w * 2
    assert y.requires_grad is False
    assert y.grad_fn is None
    np.testing.assert_allclose(y.numpy(), [2.0])
    assert (w * 2).requires_grad       # back on after the block


# --------------------------------------------------------- autograd.functional, gradcheck


def test_S26_functional_jacobian_and_hessian():
    AF = tg.autograd.functional
    f = lambda x: x[:2] * x[1:] ** 2                     # R^3 -> R^2; NumPy arrays and tensors alike
    g = lambda x: (x ** 3).sum() + x[0] * x[1] * x[2]    # R^3 -> R
    x_np = np.array([1.0, 2.0, 3.0])
    x = tg.tensor(x_np)

    jac = AF.jacobian(f, x)
    assert jac.shape == (2, 3)
    np.testing.assert_allclose(jac.numpy(), tg.jacobian(f)(x_np))
    np.testing.assert_allclose(jac.numpy(), [[4.0, 4.0, 0.0], [0.0, 9.0, 12.0]])
    hess = AF.hessian(g, x)
    assert hess.shape == (3, 3)
    np.testing.assert_allclose(hess.numpy(), tg.hessian(g)(x_np))
    np.testing.assert_allclose(hess.numpy(), [[6.0, 3.0, 2.0], [3.0, 12.0, 1.0], [2.0, 1.0, 18.0]])

    # two inputs: a tuple of Jacobians, and a 2x2 nested tuple of Hessian blocks
    f2 = lambda x, y: x[:2] * y[1:] ** 2
    g2 = lambda x, y: (x ** 2 * y).sum()
    y_np = np.array([4.0, 5.0, 6.0])
    y = tg.tensor(y_np)
    jacs = AF.jacobian(f2, (x, y))
    assert isinstance(jacs, tuple) and len(jacs) == 2
    for got, want in zip(jacs, tg.jacobian(f2, argnums=(0, 1))(x_np, y_np)):
        assert got.shape == (2, 3)
        np.testing.assert_allclose(got.numpy(), want)
    hessians = AF.hessian(g2, (x, y))
    want = tg.hessian(g2, argnums=(0, 1))(x_np, y_np)
    assert isinstance(hessians, tuple) and len(hessians) == 2
    for i in range(2):
        assert isinstance(hessians[i], tuple) and len(hessians[i]) == 2
        for j in range(2):
            assert hessians[i][j].shape == (3, 3)
            np.testing.assert_allclose(hessians[i][j].numpy(), want[i][j])


def test_S27_gradcheck_of_a_hand_written_sigmoid():
    class Sigmoid(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = 1 / (1 + tg.exp(-x))
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            (y,) = ctx.saved_tensors
            return grad_output * y * (1 - y)

    tg.manual_seed(0)
    x64 = tg.randn(4, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(Sigmoid.apply, (x64,), eps=1e-6) is True
    assert tg.autograd.gradcheck(tg.sigmoid, (x64,), eps=1e-6) is True

    # float32: rounding swamps a step of 1e-6 — gradcheck warns and reports a failure, it does not crash
    x32 = tg.tensor(values(x64), dtype=tg.float32, requires_grad=True)
    for fn in (Sigmoid.apply, tg.sigmoid):
        with pytest.warns(UserWarning, match="double precision"):
            ok = tg.autograd.gradcheck(fn, (x32,), eps=1e-6, raise_exception=False)
        assert ok is False


@pytest.mark.filterwarnings("ignore")
def test_S28_detect_anomaly_names_node_and_forward_line():
    class MyFn(tg.autograd.Function):
        """Backward returns NaN: what anomaly detection is for."""

        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * float("nan")

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with tg.autograd.detect_anomaly():
        y, line = MyFn.apply(x), caller_line()
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
    message = str(info.value)
    assert "MyFnBackward" in message
    assert "test_seeds_eager.py" in message
    assert re.search(rf"\b{line}\b", message), f"forward line {line} not named in: {message}"

    MyFn.apply(x).sum().backward()      # without anomaly mode the NaN goes through silently
    assert np.isnan(x.grad.numpy()).all()


def test_S29_profiler_table():
    x = tg.rand(5, requires_grad=True)
    with tg.autograd.profiler.profile() as prof:
        y = (x * x).sum() + (x * 3).sum() + x.sum()
        y.backward()
    table = prof.key_averages().table()
    assert isinstance(table, str)
    lowered = table.lower()
    assert "calls" in lowered and "total" in lowered and "self" in lowered

    rows = {}
    for row in table.splitlines():
        tokens = row.split()
        if tokens:
            rows.setdefault(tokens[0].split("::")[-1], row)
    assert "mul" in rows and "sum" in rows
    integers = lambda row: [int(t) for t in row.split()[1:] if t.isdigit()]
    assert integers(rows["mul"]), rows["mul"]
    assert 3 in integers(rows["sum"]), rows["sum"]      # three calls of sum in the forward pass


def test_S30_eval_mode_is_not_no_grad():
    class TinyModel(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = tg.nn.Linear(4, 2)

        def forward(self, x):
            return self.fc(x).relu()

    tg.manual_seed(0)
    model = TinyModel()
    model.eval()
    assert model.training is False
    inp = tg.rand(3, 4)

    out = model(inp)
    assert out.requires_grad is True
    assert out.grad_fn is not None

    with tg.no_grad():
        out_no_grad = model(inp)
    assert out_no_grad.requires_grad is False
    assert out_no_grad.grad_fn is None
    np.testing.assert_allclose(out_no_grad.numpy(), values(out))


# ---------------------------------------------------------------- small whole examples


def test_S31_linear_regression_with_builtin_sum():
    x = tg.tensor([1.0, 2.0])
    y = tg.tensor([5.0, 7.0])
    w = tg.tensor(1.0, requires_grad=True)
    b = tg.tensor(0.0, requires_grad=True)
    prediction = w * x + b
    squares = (prediction - y) ** 2
    loss = sum(squares)             # Python's built-in sum iterates over the tensor
    assert loss.item() == 41.0
    loss.backward()
    assert w.grad.item() == -28.0
    assert b.grad.item() == -18.0
    assert x.grad is None and y.grad is None
    assert non_leaf_grad(prediction) is None and non_leaf_grad(squares) is None


def test_S32_integer_tensors_cannot_require_grad():
    with pytest.raises(RuntimeError, match=r"(?i)floating point.*require gradients"):
        tg.tensor([1, 2], requires_grad=True)


def test_S33_mean_backward_and_numel():
    a = tg.ones(2, 3, requires_grad=True)
    out = ((a + 3) * 3).mean()
    assert out.item() == 12.0
    out.backward()
    np.testing.assert_allclose(a.grad.numpy(), np.full((2, 3), 0.5))
    assert a.numel() == 6


def test_S34_indexed_assignment_records_the_graph():
    a = tg.ones(2, 1, requires_grad=True)
    b = tg.zeros(2, 1)
    b[0, 0] = a[0, 0] ** 2 + a[1, 0] * 5
    b[1, 0] = a[0, 0] ** 3 + a[1, 0] * 4
    assert b.requires_grad
    np.testing.assert_allclose(values(b), [[6.0], [5.0]])
    with pytest.raises(RuntimeError, match=NOT_SCALAR):
        b.backward()
    b.backward(tg.ones(2, 1))
    np.testing.assert_allclose(a.grad.numpy(), [[5.0], [9.0]])


# ------------------------------------------------------------ more of API.md section 4


def test_autograd_backward_with_grad_tensors():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y1 = x * 2
    y2 = x ** 2
    tg.autograd.backward([y1, y2], grad_tensors=[tg.tensor([1.0, 1.0]), tg.tensor([10.0, 100.0])])
    np.testing.assert_allclose(x.grad.numpy(), [2 + 10 * 2, 2 + 100 * 4])


def test_backward_inputs_accumulates_only_into_listed_tensors():
    x = tg.tensor(2.0, requires_grad=True)
    y = tg.tensor(3.0, requires_grad=True)
    (x * y).backward(inputs=[x])
    assert x.grad.item() == 3.0
    assert y.grad is None


def test_allow_unused_returns_none():
    x = tg.tensor(2.0, requires_grad=True)
    unused = tg.tensor(3.0, requires_grad=True)
    gx, gu = tg.autograd.grad(x * x, (x, unused), allow_unused=True)
    assert gx.item() == 4.0
    assert gu is None


def test_retain_grad_keeps_a_non_leaf_gradient():
    a = tg.ones(3, requires_grad=True)
    c = a * 2
    c.retain_grad()
    (c * c).sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), [4.0, 4.0, 4.0])
    np.testing.assert_allclose(a.grad.numpy(), [8.0, 8.0, 8.0])


def test_hook_returning_a_gradient_replaces_it():
    x = tg.ones(2, requires_grad=True)
    x.register_hook(lambda grad: grad * 10)
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [30.0, 30.0])


def test_requires_grad_in_place_switch():
    x = tg.ones(2)
    assert x.requires_grad is False
    assert x.requires_grad_() is x
    assert x.requires_grad and x.is_leaf
    (x * 4).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0])


def test_enable_grad_inside_no_grad():
    x = tg.ones(2, requires_grad=True)
    with tg.no_grad():
        with tg.enable_grad():
            y = x * 2
        z = x * 2
    assert y.requires_grad and y.grad_fn.name() == "MulBackward0"
    assert not z.requires_grad


def test_set_grad_enabled():
    x = tg.ones(2, requires_grad=True)
    tg.set_grad_enabled(False)
    try:
        y = x * 2
    finally:
        tg.set_grad_enabled(True)
    assert y.requires_grad is False and y.grad_fn is None
    assert (x * 2).requires_grad
    with tg.set_grad_enabled(False):
        assert (x * 2).requires_grad is False


def test_create_graph_then_backward_on_the_gradient():
    x = tg.tensor(3.0, requires_grad=True)
    (dy,) = tg.autograd.grad(x ** 3, x, create_graph=True)
    assert dy.item() == 27.0           # 3x^2
    assert dy.requires_grad
    dy.backward()
    assert x.grad.item() == 18.0       # 6x


def test_grad_fn_next_functions():
    a = tg.ones(3, requires_grad=True)
    d = (a * 2).sum()
    assert d.grad_fn.name() == "SumBackward0"
    (mul, _), = d.grad_fn.next_functions
    assert mul.name() == "MulBackward0"


def test_item_tolist_and_shape():
    t = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert t.shape == (2, 2)
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert t.sum().item() == 10.0


def test_default_dtypes():
    assert tg.tensor([1, 2]).dtype == tg.int64
    assert (tg.tensor([1, 2]) + 1).dtype == tg.int64
    assert tg.tensor(1.0).dtype == tg.float32       # torch's default float dtype
    assert tg.tensor([1.0, 2.0]).dtype == tg.float32
    assert tg.ones(2).dtype == tg.float32
    assert tg.rand(2).dtype == tg.float32
    assert tg.tensor(np.ones(2)).dtype == tg.float64   # a NumPy array keeps its dtype


def test_set_default_dtype_float32():
    tg.set_default_dtype(tg.float64)
    assert tg.ones(2).dtype == tg.float64 and tg.nn.Linear(2, 2).weight.dtype == tg.float64
    tg.set_default_dtype(tg.float32)
    try:
        assert tg.tensor([1.5]).dtype == tg.float32
        assert tg.ones(2).dtype == tg.float32
        assert tg.zeros(2, requires_grad=True).dtype == tg.float32
        assert tg.nn.Linear(2, 2).weight.dtype == tg.float32
        assert tg.tensor([1, 2]).dtype == tg.int64
        x = tg.ones(2, requires_grad=True)
        (x * x).sum().backward()
        assert x.grad.dtype == tg.float32
    finally:
        tg.set_default_dtype(tg.float32)      # torch's default, restored for the next tests
    assert tg.ones(2).dtype == tg.float32
