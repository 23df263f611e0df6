"""The eager ``softmax`` and ``log_softmax``: one tape node each (as PyTorch records one
``SoftmaxBackward0``/``LogSoftmaxBackward0``), with torch's values, gradients, second
derivatives and errors, on rows holding -inf, +inf and NaN, in float64, float32 and
float16, along every dimension, for 0-d and empty tensors."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.eager.tape import walk

torch = pytest.importorskip("torch")
F = tg.nn.functional

INF, NAN = np.inf, np.nan
ROWS = np.array([[1.0, 2.0, 3.0, 0.5], [-INF, 1.0, 2.0, -INF], [INF, 1.0, 2.0, 0.0],
                 [NAN, 1.0, 2.0, 3.0], [-INF] * 4, [INF] * 4, [-1000.0, -1001.0, -1002.0, -999.0],
                 [2.0, 2.0, -1.0, 2.0]])
TOL = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-3}
NAMES = ("softmax", "log_softmax")


def _run(lib, name, x, dim, g):
    t = lib.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y = getattr(t, name)(dim)
        y.backward(lib.tensor(g))
    return y, t.grad


@pytest.mark.parametrize("dtype", sorted(TOL))
@pytest.mark.parametrize("name", NAMES)
def test_values_and_gradients_match_torch(name, dtype):
    g = np.random.default_rng(3).standard_normal(ROWS.shape).astype(dtype)
    x = ROWS.astype(dtype)
    for dim in (1, -1, 0):
        y, gx = _run(tg, name, x, dim, g)
        ty, tgx = _run(torch, name, x, dim, g)
        assert str(y.dtype) == str(ty.dtype).removeprefix("torch.") == str(gx.dtype)
        for a, b in ((y, ty), (gx, tgx)):
            a, b = a.detach().numpy().astype(float), b.detach().numpy().astype(float)
            np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f"{name} {dim}")
            np.testing.assert_allclose(a, b, rtol=TOL[dtype], atol=TOL[dtype], equal_nan=True,
                                       err_msg=f"{name} dim={dim}")
        assert y.grad_fn.name() == ty.grad_fn.name()


@pytest.mark.parametrize("name", NAMES)
def test_one_node_on_the_tape(name):
    x = tg.tensor(np.random.default_rng(0).standard_normal((3, 5)), requires_grad=True)
    first = getattr(x, name)(0)
    y = getattr(x, name)(-1)
    assert len(walk([y.grad_fn]).nodes) == 2           # its node and the leaf's
    node = y.grad_fn._ir
    assert node["op"] == name and node["params"] == {"axis": 1}
    assert y.grad_fn.next_functions == first.grad_fn.next_functions
    assert y.grad_fn.next_functions[0][0].name() == "torch::autograd::AccumulateGrad"


def test_cross_entropy_records_one_log_softmax_node():
    x = tg.tensor(np.random.default_rng(1).standard_normal((4, 5)), requires_grad=True)
    loss = F.cross_entropy(x, tg.tensor([1, 0, 4, 2]))
    logp = loss.grad_fn.next_functions[0][0]
    assert logp.name() == "LogSoftmaxBackward0"
    assert logp._ir.op == "log_softmax"
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    tloss = torch.nn.functional.cross_entropy(tx, torch.tensor([1, 0, 4, 2]))
    loss.backward()
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", NAMES)
def test_second_derivative_matches_torch(name):
    x = np.random.default_rng(2).standard_normal((2, 4))
    w = np.random.default_rng(4).standard_normal((2, 4))
    out = []
    for lib in (tg, torch):
        t = lib.tensor(x, requires_grad=True)
        y = getattr(t, name)(1)
        (gx,) = lib.autograd.grad((y * lib.tensor(w)).sum(), t, create_graph=True)
        (hx,) = lib.autograd.grad((gx * gx).sum(), t)
        out.append((gx.detach().numpy(), hx.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_zero_dim_empty_and_dtype_argument(name):
    for lib_x in ((tg, tg.tensor(1.5, requires_grad=True)),
                  (torch, torch.tensor(1.5, requires_grad=True))):
        lib, x = lib_x
        y = getattr(x, name)(-1)
        y.backward()
        assert (y.item(), x.grad.item(), tuple(y.shape)) == (
            (0.0, 0.0, ()) if name == "log_softmax" else (1.0, 0.0, ()))
    e = tg.zeros(3, 0, requires_grad=True)
    y = getattr(e, name)(1)
    y.sum().backward()
    assert tuple(y.shape) == (3, 0) and tuple(e.grad.shape) == (3, 0)
    ints = [1, 4, 2]
    got = getattr(tg.tensor(ints), name)(0, dtype=tg.float64).numpy()
    want = getattr(torch.tensor(ints), name)(0, dtype=torch.float64).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dim", [2, -3, 1.0, None, (1,)])
def test_bad_dims_raise_torchs_errors(name, dim):
    errors = []
    for lib in (tg, torch):
        with pytest.raises((IndexError, TypeError)) as info:
            getattr(lib.ones(2, 3), name)(dim)
        errors.append((type(info.value), str(info.value)))
    assert errors[0] == errors[1]
