"""Custom ``autograd.Function``s in the eager API, against PyTorch (the oracle).

Each program is written once against the torch API and run with ``lib`` = tracegrad and
``lib`` = torch; values, gradients and error messages must agree. ``backward`` runs on
concrete tensors, as in PyTorch: boolean-mask assignment, ``.item()``, ``.numpy()`` and
data-dependent Python work there. Every tensor gets an explicit dtype.
"""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

F64 = "float64"


def _np(t):
    if t is None:
        return None
    if isinstance(t, tg.Tensor):
        return t.detach().numpy()
    return t.detach().numpy()


def _same(a, b, what="", rtol=1e-12):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b), what
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{what}[{i}]", rtol)
        return
    if isinstance(a, float):
        np.testing.assert_allclose(a, b, rtol=rtol, err_msg=what)
        return
    if isinstance(a, (bool, int, str)) or a is None:
        assert a == b, f"{what}: {a!r} vs torch {b!r}"
        return
    a, b = _np(a), _np(b)
    assert a.shape == b.shape and a.dtype == b.dtype, \
        f"{what}: {a.dtype}{a.shape} vs torch {b.dtype}{b.shape}"
    np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-14, err_msg=what)


def _both(program, *args):
    ours = program(tg, *args)
    theirs = program(torch, *args)
    _same(ours, theirs, program.__name__)
    return ours


def _data(seed, *shapes):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _relu_class(lib):
    class MyReLU(lib.autograd.Function):
        """PyTorch's "custom ReLU" tutorial: boolean-mask assignment in backward."""

        @staticmethod
        def forward(ctx, inp):
            ctx.save_for_backward(inp)
            return inp.clamp(min=0)

        @staticmethod
        def backward(ctx, grad_output):
            (inp,) = ctx.saved_tensors
            grad_input = grad_output.clone()
            grad_input[inp < 0] = 0
            return grad_input
    return MyReLU


# ------------------------------------------------------------------ concrete backward


def test_custom_relu_two_layer_net_trains_as_torch():
    def program(lib):
        MyReLU = _relu_class(lib)
        x, y, w1, w2 = (lib.tensor(a, dtype=lib.float64) for a in _data(0, (16, 20), (16, 3),
                                                                         (20, 8), (8, 3)))
        w1.requires_grad_()
        w2.requires_grad_()
        losses = []
        for _ in range(3):
            y_pred = MyReLU.apply(x.mm(w1)).mm(w2)
            loss = (y_pred - y).pow(2).sum()
            losses.append(loss.item())
            loss.backward()
            with lib.no_grad():
                w1 -= 1e-3 * w1.grad
                w2 -= 1e-3 * w2.grad
                w1.grad = None
                w2.grad = None
        return losses, w1, w2
    _both(program)


def test_backward_with_data_dependent_python_item_and_numpy():
    def program(lib):
        class Branchy(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, scale):
                ctx.save_for_backward(x)
                ctx.scale = scale
                return x * scale

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                if x.sum() > 0:                      # a Python branch on a value
                    g = g * 2
                total = g.sum().item()               # .item() and .numpy() on plain tensors
                arr = g.numpy()
                factor = float(np.abs(arr).max()) / max(abs(total), 1.0)
                return g * ctx.scale * factor, None

        out = []
        for v in ([1.0, 2.0, -0.5], [-1.0, -2.0, 0.5]):
            x = lib.tensor(v, dtype=lib.float64, requires_grad=True)
            (Branchy.apply(x, 3.0) * lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)).sum() \
                .backward()
            out.append(x.grad)
        return out
    _both(program)


def test_needs_input_grad_none_grads_and_non_tensor_arguments():
    def program(lib):
        seen = []

        class Mix(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b, k, c):
                seen.append(ctx.needs_input_grad)
                ctx.save_for_backward(a, b)
                return a * b * k + c

            @staticmethod
            def backward(ctx, g):
                a, b = ctx.saved_tensors
                seen.append(ctx.needs_input_grad)
                return (g * b * 2 if ctx.needs_input_grad[0] else None, None, None,
                        g if ctx.needs_input_grad[3] else None)

        a = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([3.0, 4.0], dtype=lib.float64, requires_grad=True)
        c = lib.tensor([5.0, 6.0], dtype=lib.float64)
        Mix.apply(a, b, 2.0, c).sum().backward()
        return seen, a.grad, b.grad is None
    _both(program)


def test_multiple_outputs_non_differentiable_and_materialized_grads():
    def program(lib, materialize):
        got = []

        class Split(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                idx = x.argmax()
                lo, hi = x * 2, x * 3
                ctx.mark_non_differentiable(idx)
                return lo, hi, idx

            @staticmethod
            def backward(ctx, g_lo, g_hi, g_idx):
                got.append(tuple(None if g is None else g.detach().clone()
                                 for g in (g_lo, g_hi)))
                total = 0
                if g_lo is not None:
                    total = total + 2 * g_lo
                if g_hi is not None:
                    total = total + 3 * g_hi
                return total

        x = lib.tensor([1.0, 4.0, 2.0], dtype=lib.float64, requires_grad=True)
        lo, hi, idx = Split.apply(x)
        (lo * lo).sum().backward()
        return idx.requires_grad, idx.item(), lo.requires_grad, got, x.grad
    _both(program, True)
    _both(program, False)


def test_chained_and_repeated_functions_with_a_direct_path():
    def program(lib):
        MyReLU = _relu_class(lib)

        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        x = lib.tensor([-1.5, 0.5, 2.0, -0.25], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([0.3, -0.7, 1.1, 0.2], dtype=lib.float64, requires_grad=True)
        h = MyReLU.apply(x * w - 0.1)
        y = Square.apply(h + x) + MyReLU.apply(Square.apply(w) - 0.5) * x
        loss = (y * lib.exp(w)).sum() + (x * x).sum()
        loss.backward()
        return loss, x.grad, w.grad
    _both(program)


def test_hooks_and_retain_grad_on_a_function_output():
    def program(lib):
        MyReLU = _relu_class(lib)
        x = lib.tensor([-1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        y = MyReLU.apply(x * 2)
        y.retain_grad()
        calls = []
        y.register_hook(lambda g: calls.append(g.detach().clone()) or g * 10)
        (y * lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)).sum().backward()
        return calls, y.grad, x.grad
    _both(program)


def test_backward_grad_cast_to_input_dtype_and_summed_to_its_shape():
    def program(lib):
        class Wide(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return (g * 2).to(lib.float32).expand(4, 3)     # broadcast-compatible

        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        Wide.apply(x).sum().backward()
        return x.grad
    _both(program)


def test_setup_context_style_function():
    def program(lib):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(x, k):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                x, k = inputs
                ctx.k = k
                ctx.save_for_backward(output)

            @staticmethod
            def backward(ctx, g):
                (out,) = ctx.saved_tensors
                return g * ctx.k + out * 0, None

        x = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
        y = Scale.apply(x, 3.0)
        y.sum().backward()
        return y, y.grad_fn.name(), x.grad
    _both(program)


# ------------------------------------------------------------------ higher order


def test_double_backward_records_the_backward():
    def program(lib):
        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                gx = 3 * g * x ** 2
                if x.detach().sum().item() > 100:        # concrete values here too
                    gx = gx * 0
                return gx

        x = lib.tensor([0.5, -1.5, 2.0], dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad((g * g).sum(), x)
        return g.requires_grad, g, h
    _both(program)


def test_gradcheck_and_gradgradcheck_of_the_relu_function():
    MyReLU = _relu_class(tg)
    x = tg.tensor([-1.2, -0.3, 0.4, 1.7], dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradcheck(MyReLU.apply, (x,), eps=1e-6) is True
    assert tg.autograd.gradgradcheck(lambda v: MyReLU.apply(v) * v, (x,)) is True


def test_once_differentiable():
    from torch.autograd.function import once_differentiable as torch_once

    def program(lib, once):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @once
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(Sq.apply(x).sum(), x, create_graph=True)
        out = [g, g.requires_grad]
        go = lib.ones(2, dtype=lib.float64, requires_grad=True)
        (g2,) = lib.autograd.grad(Sq.apply(x), x, grad_outputs=go, create_graph=True)
        out.append(g2.requires_grad)
        for call in (lambda: lib.autograd.grad(g2.sum(), go), lambda: g2.sum().backward()):
            try:
                call()
            except RuntimeError as e:
                out.append(str(e))
        return out
    _same(program(tg, tg.autograd.once_differentiable), program(torch, torch_once))


# ------------------------------------------------------------------ errors


def _error(program, lib):
    try:
        program(lib)
    except (RuntimeError, TypeError) as e:
        return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("case", ["too_few", "non_tensor_grad", "bad_shape", "not_a_tensor",
                                  "saved_modified", "twice", "save_int"])
def test_errors_match_torch(case):
    def program(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)

        class Fn(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, k):
                ctx.save_for_backward(a, *([3] if case == "save_int" else []))
                return a * k

            @staticmethod
            def backward(ctx, g):
                (a,) = ctx.saved_tensors
                return {"too_few": (g,), "non_tensor_grad": (g, g),
                        "bad_shape": (g[:1].expand(3), None), "not_a_tensor": (1.0, None)}.get(
                    case, (g * a, None))

        y = x * 1
        out = Fn.apply(y, 2.0)
        if case == "saved_modified":
            with lib.no_grad():
                y.mul_(2)
        out.sum().backward(retain_graph=False)
        if case == "twice":
            out.sum().backward()
    ours, theirs = _error(program, tg), _error(program, torch)
    assert theirs is not None and ours is not None, (ours, theirs)
    assert ours[0] == theirs[0]
    if case == "saved_modified":        # PyTorch names the node "MulBackward0" or "Mul"
        assert "modified by an inplace operation" in ours[1] and "is at version 1" in ours[1]
    else:
        assert ours[1] == theirs[1]


def test_function_inside_no_grad_records_nothing():
    MyReLU = _relu_class(tg)
    x = tg.tensor([-1.0, 1.0], dtype=tg.float64, requires_grad=True)
    with tg.no_grad():
        y = MyReLU.apply(x)
    assert not y.requires_grad and y.grad_fn is None
    np.testing.assert_array_equal(y.numpy(), [0.0, 1.0])


def test_function_output_as_root_intermediate_inputs_and_second_order():
    def program(lib):
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        out = []
        x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
        y = Sq.apply(x)                                   # the root is a Function's output
        y.backward(lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64), retain_graph=True)
        out.append(x.grad.clone())
        y.backward(lib.ones(3, dtype=lib.float64))
        out.append(x.grad.clone())
        h = x * 3
        z = Sq.apply(h)
        w = Sq.apply(z) + z
        out += lib.autograd.grad(w.sum(), h, retain_graph=True)     # an intermediate input
        out += lib.autograd.grad(w.sum(), [z, x])                   # a Function's output
        x2 = lib.tensor([0.5, 1.5], dtype=lib.float64, requires_grad=True)
        a = Sq.apply(x2)
        b = Sq.apply(a) * Sq.apply(a + 1)
        (g,) = lib.autograd.grad(b.sum(), x2, create_graph=True)
        out += [g.detach()] + list(lib.autograd.grad(g.sum(), x2))
        return out
    _both(program)


def test_a_function_input_with_other_uses_gets_its_whole_gradient_once():
    def program(lib):
        MyReLU = _relu_class(lib)
        x = lib.tensor([-1.0, 2.0, 0.5], dtype=lib.float64, requires_grad=True)
        h = x * 2
        h.retain_grad()
        calls = []
        h.register_hook(lambda g: calls.append(g.detach().clone()) or g * g)   # not linear
        y = MyReLU.apply(h) * lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64) + h * 3
        MyReLU.apply(y).sum().backward()
        return calls, h.grad, x.grad
    _both(program)
