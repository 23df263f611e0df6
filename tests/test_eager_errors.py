"""Every eager error path: PyTorch's wording (checked against torch 2.x by hand), and for
shape errors both shapes."""
import numpy as np
import pytest

import tracegrad as tg


def _leaf():
    return tg.tensor([1.0, 2.0, 3.0], requires_grad=True)


@pytest.mark.parametrize("action, message", [
    (lambda: setattr(_leaf() * 2, "requires_grad", False),
     "you can only change requires_grad flags of leaf variables"),
    (lambda: _leaf().numpy(), "Can't call numpy() on Tensor that requires grad"),
    (lambda: tg.ones(3).item(), "a Tensor with 3 elements cannot be converted to Scalar"),
    (lambda: bool(tg.ones(3)), "Boolean value of Tensor with more than one value is ambiguous"),
    (lambda: tg.ones(3).backward(), "element 0 of tensors does not require grad"),
    (lambda: (_leaf() * 2).backward(tg.ones(2)),
     "Mismatch in shape: grad_output[0] has a shape of torch.Size([2]) and output[0] has a "
     "shape of torch.Size([3])"),
    (lambda: tg.autograd.grad((_leaf() * 2).sum(), [tg.ones(3, requires_grad=True)]),
     "appears to not have been used in the graph. Set allow_unused=True"),
    (lambda: tg.autograd.grad((_leaf() * 2).sum(), [tg.ones(3)]),
     "One of the differentiated Tensors does not require grad"),
    (lambda: (_leaf() * 2).sum().backward(inputs=[]), "'inputs' argument to backward() cannot be empty"),
    (lambda: tg.ones(3).retain_grad(), "can't retain_grad on Tensor that has requires_grad=False"),
    (lambda: tg.ones(3).register_hook(print),
     "cannot register a hook on a tensor that doesn't require gradient"),
    (lambda: _leaf()[1:].mul_(2), "a view of a leaf Variable that requires grad is being used in an "
     "in-place operation"),
    (lambda: tg.ones(2, 3).expand(4, 3), "The expanded size of the tensor (4) must match the "
     "existing size (2) at non-singleton dimension 0"),
    (lambda: tg.cat([tg.ones(2, 3), tg.ones(2, 4)]), "Sizes of tensors must match except in "
     "dimension 0. Expected size 3 but got size 4 for tensor number 1 in the list"),
    (lambda: tg.stack([tg.ones(2), tg.ones(3)]), "stack expects each tensor to be equal size, but "
     "got [2] at entry 0 and [3] at entry 1"),
    (lambda: tg.ones(2, 3, 4).t(), "t() expects a tensor with <= 2 dimensions, but self is 3D"),
    (lambda: tg.ones(2, 3).dot(tg.ones(3)), "1D tensors expected, but got 2D and 1D tensors"),
    (lambda: tg.ones(2).clamp(), "At least one of 'min' or 'max' must not be None"),
    (lambda: tg.ones(3).add_(tg.ones(2, 3)), "output with shape [3] doesn't match the broadcast "
     "shape [2, 3]"),
    (lambda: tg.ones(2, 3) @ tg.ones(2), "size mismatch in matmul: got shapes [2, 3] and [2]"),
])
def test_runtime_errors_are_worded_like_pytorch(action, message):
    with pytest.raises(RuntimeError) as info:
        action()
    assert message in str(info.value)


def test_dimension_out_of_range_is_an_index_error():
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of "
                                         r"\[-2, 1\], but got 2\)"):
        tg.ones(2, 3).sum(dim=2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        tg.ones(2).unsqueeze(3)


def test_set_default_dtype_refuses_integers():
    with pytest.raises(TypeError, match="only floating-point types are supported as the default type"):
        tg.set_default_dtype(tg.int64)


def test_function_returning_too_few_gradients():
    class Two(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g

    a, b = _leaf(), _leaf()
    with pytest.raises(RuntimeError, match=r"function TwoBackward returned an incorrect number of "
                                           r"gradients \(expected 2, got 1\)"):
        Two.apply(a, b).sum().backward()


def test_hook_returning_a_wrong_shape_or_type():
    x = _leaf()
    y = x * 2
    y.register_hook(lambda g: tg.ones(2))
    with pytest.raises(RuntimeError, match=r"hook returned a gradient of shape \[2\] for a tensor "
                                           r"of shape \[3\]"):
        y.sum().backward()
    z = _leaf() * 2
    z.register_hook(lambda g: np.ones(3))
    with pytest.raises(TypeError, match="a hook must return a Tensor or None, got ndarray"):
        z.sum().backward()


def test_grad_setter_checks_type_and_shape():
    x = _leaf()
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        x.grad = np.ones(3)
    with pytest.raises(RuntimeError, match=r"assigned grad has data of a different size: \[2\] vs \[3\]"):
        x.grad = tg.ones(2)


def test_gradcheck_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        tg.autograd.gradcheck(lambda x: x * 2, (tg.ones(2),))


def test_hessian_needs_a_scalar_function():
    with pytest.raises(RuntimeError, match="should contain a single element"):
        tg.autograd.functional.hessian(lambda x: x * 2, tg.ones(2))


def test_profiler_sort_key_is_checked():
    with tg.autograd.profiler.profile() as prof:
        (_leaf() * 2).sum()
    with pytest.raises(ValueError, match="unknown sort_by 'nope'"):
        prof.key_averages().table(sort_by="nope")


def test_complex_gradients_are_refused_rather_than_given_in_jaxs_convention():
    """PyTorch's .grad of a complex leaf is the conjugate of JAX's; until the eager engine
    converts, complex leaves and hooks on complex tensors are refused."""
    with pytest.raises(RuntimeError, match="complex tensors cannot require grad"):
        tg.tensor(np.array([1 + 2j]), requires_grad=True)
    x = tg.tensor(np.array([1.0, 2.0]), requires_grad=True)
    z = x * tg.tensor(np.array([1j, 2 + 1j]))
    # a real leaf through complex intermediates: one answer in both conventions
    z.abs().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, np.sqrt(5.0)])
    z = x * tg.tensor(np.array([1j, 2 + 1j]))
    z.register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match="hooks on complex tensors are not supported"):
        z.abs().sum().backward()
