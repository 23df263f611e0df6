"""Derivatives of np.std / np.nanstd where the standard deviation is 0.

Over a reduced axis of one element (ddof=0) std is identically 0, so every derivative is
0 (central differences of NumPy's own np.std give exactly 0). Where a longer slice has
equal values std is not differentiable (a norm of the deviations); tracegrad's convention
is 0 there, as for np.abs at 0 (the smallest subgradient). Elsewhere the derivative is
the ordinary one, checked against central differences."""
import numpy as np
import pytest
from conftest import central_diff

import tracegrad as tg

RNG = np.random.default_rng(11)


CASES = [  # (shape, axis, keepdims)
    ((4, 1), 1, False),
    ((4, 1), 1, True),
    ((1, 3), 0, False),
    ((2, 1, 3), 1, True),
    ((2, 1, 3), (1,), False),
    ((1,), None, False),
    ((1, 1), None, True),
]


@pytest.mark.parametrize("fn", ["std", "nanstd"])
@pytest.mark.parametrize("shape,axis,keepdims", CASES)
def test_length_one_axis_has_zero_derivative(fn, shape, axis, keepdims):
    op = getattr(np, fn)
    x = RNG.standard_normal(shape)
    w = RNG.uniform(0.5, 1.5, np.shape(op(x, axis=axis, keepdims=keepdims)))

    def f(x):
        return np.sum(op(x, axis=axis, keepdims=keepdims) * w)

    fd = central_diff(f, x)
    assert np.all(fd == 0.0)                               # NumPy's own function is flat
    g = tg.grad(f)(x)
    assert g.shape == x.shape and np.all(g == 0.0)
    out, tangent = tg.jvp(lambda x: op(x, axis=axis, keepdims=keepdims), (x,),
                          (RNG.standard_normal(shape),))
    np.testing.assert_array_equal(out, op(x, axis=axis, keepdims=keepdims))
    assert np.all(tangent == 0.0)
    h = tg.hessian(f)(x)
    assert h.shape == x.shape * 2 and np.all(h == 0.0)
    for backend in ("numpy", "jax"):
        assert np.all(tg.jit(tg.grad(f), backend=backend)(x) == 0.0)


@pytest.mark.parametrize("ddof", [0, 1])
def test_mixed_axes_match_finite_differences(ddof):
    # std over axis 1 of a (3, 4) array whose columns have length 3 and rows length 4,
    # plus a reduction over a length-1 axis in the same function
    x = RNG.standard_normal((3, 4))
    y = RNG.standard_normal((3, 1))

    def f(x):
        return (np.sum(np.std(x, axis=1, ddof=ddof) * np.arange(1.0, 4.0))
                + np.sum(np.std(x, axis=0, ddof=ddof) ** 3)
                + np.sum(np.std(x[:, :1] * y, axis=1)))

    np.testing.assert_allclose(tg.grad(f)(x), central_diff(f, x), rtol=1e-6, atol=1e-8)
    hess = tg.hessian(f)(x).reshape(12, 12)
    fd_hess = np.stack([central_diff(lambda z: tg.grad(f)(z)[i], x).ravel()
                        for i in np.ndindex(3, 4)])
    np.testing.assert_allclose(hess, fd_hess, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hess, hess.T, rtol=1e-12, atol=1e-12)


def test_equal_values_on_a_longer_axis_give_zero_like_abs():
    x = np.array([[2.0, 2.0, 2.0], [1.0, -1.0, 3.0]])

    def f(x):
        return np.sum(np.std(x, axis=1))

    g = tg.grad(f)(x)
    assert np.all(g[0] == 0.0)                             # the convention: 0, not NaN
    row = x[1]
    np.testing.assert_allclose(g[1], (row - row.mean()) / (row.size * row.std()),
                               rtol=1e-13)
    assert tg.grad(lambda v: np.abs(v))(0.0) == 0.0        # the same convention as abs


def test_values_are_numpys_including_nan_and_too_large_ddof():
    x = np.array([[1.0, np.nan, 2.0], [3.0, 4.0, 4.5], [7.0, 7.0, 7.0]])
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = [np.std(x, axis=1), np.std(x, axis=1, ddof=3), np.std(x[:, :1], axis=1, ddof=1)]
    with np.errstate(all="ignore"):
        got = tg.jit(lambda x: [np.std(x, axis=1), np.std(x, axis=1, ddof=3),
                                np.std(x[:, :1], axis=1, ddof=1)])(x)
        g = tg.grad(lambda x: np.sum(np.std(x, axis=1)))(x)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert np.all(np.isnan(g[0])) and np.all(np.isfinite(g[1:]))  # NaN data stays NaN


def test_list_and_method_spellings_and_vmap():
    x = RNG.standard_normal((5, 1))
    assert np.all(tg.grad(lambda x: np.sum(x.std(axis=1)))(x) == 0.0)
    assert tg.grad(lambda a: np.std([a]))(1.5) == 0.0
    per_row = tg.vmap(tg.grad(lambda r: np.std(r)))(x)
    assert per_row.shape == (5, 1) and np.all(per_row == 0.0)
