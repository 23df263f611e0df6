"""``F.affine_grid`` and ``F.grid_sample`` against PyTorch, on generated cases: 4-D and 5-D,
bilinear/nearest, the three padding modes, both ``align_corners``; values, dtypes, shapes,
``grad_fn`` names, gradients to the image, the grid and ``theta`` (the spatial-transformer
pattern), and the errors of misuse."""
import itertools
import warnings

import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg

torch = pytest.importorskip("torch")

CASES = list(itertools.product([4, 5], ["bilinear", "nearest"], ["zeros", "border", "reflection"],
                               [False, True], ["float32", "float64"]))


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-5) if dtype == "float32" else dict(rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("case", bounded(CASES, 16), ids=str)
def test_spatial_transformer_matches_torch(case):
    ndim, mode, pad, ac, dtype = case
    rs = np.random.RandomState(len(str(case)))
    spatial_in = (4, 5) if ndim == 4 else (3, 4, 5)
    spatial_out = (3, 6) if ndim == 4 else (2, 3, 4)
    d = ndim - 2
    theta = (np.concatenate([np.eye(d) + 0.4 * rs.randn(d, d), 0.5 * rs.randn(d, 1)], 1)
             [None].repeat(2, 0) + 0.1 * rs.randn(2, d, d + 1)).astype(dtype)
    theta *= 1.3                    # reach outside the image: the padding modes matter
    x = rs.randn(2, 3, *spatial_in).astype(dtype)
    size = (2, 3) + spatial_out

    def run(lib):
        t = lib.tensor(theta, requires_grad=True)
        xi = lib.tensor(x, requires_grad=True)
        grid = lib.nn.functional.affine_grid(t, size, align_corners=ac)
        grid.retain_grad()
        y = lib.nn.functional.grid_sample(xi, grid, mode=mode, padding_mode=pad,
                                          align_corners=ac)
        w = lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)).astype(dtype))
        (y * w).sum().backward()
        return grid, y, xi.grad, grid.grad, t.grad

    ours, theirs = run(tg), run(torch)
    for a, b in zip(ours, theirs):
        assert tuple(a.shape) == tuple(b.shape)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **_tol(dtype))
    assert ours[0].grad_fn.name() == theirs[0].grad_fn.name()
    assert ours[1].grad_fn.name() == theirs[1].grad_fn.name()


@pytest.mark.parametrize("pad", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("ac", [False, True])
def test_grid_sample_on_a_free_grid_with_far_and_edge_points(pad, ac):
    """A grid as a leaf (gradient straight to it), with points far outside, on the
    border and at pixel centres."""
    rs = np.random.RandomState(1)
    x = rs.randn(1, 2, 4, 3)
    g = rs.uniform(-3.5, 3.5, (1, 5, 4, 2))
    g[0, 0, :2] = [[1.0, -1.0], [0.0, 0.5]]
    g[0, 1, :2] = [[-1.0 / 3, 0.25], [0.97, -0.03]]

    def run(lib):
        xi, gi = lib.tensor(x, requires_grad=True), lib.tensor(g, requires_grad=True)
        y = lib.nn.functional.grid_sample(xi, gi, padding_mode=pad, align_corners=ac)
        (y ** 2).sum().backward()
        return y, xi.grad, gi.grad

    for a, b in zip(run(tg), run(torch)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-11,
                                   atol=1e-11)


def test_defaults_warn_and_errors_as_torch():
    x4, g4 = np.zeros((1, 1, 3, 3), np.float32), np.zeros((1, 2, 2, 2), np.float32)
    for lib in (tg, torch):
        F = lib.nn.functional
        x, g = lib.tensor(x4), lib.tensor(g4)
        with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
            F.grid_sample(x, g)
        with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
            F.affine_grid(lib.zeros(1, 2, 3), (1, 1, 2, 2))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            F.grid_sample(x, g, align_corners=True)
        with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or "
                                             "'bicubic', but got: 'area'"):
            F.grid_sample(x, g, mode="area", align_corners=False)
        with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', "
                                             "or 'reflection', but got: 'wrap'"):
            F.grid_sample(x, g, padding_mode="wrap", align_corners=False)
        with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
            F.grid_sample(x, lib.tensor(g4.astype(np.float64)), align_corners=False)
        with pytest.raises(RuntimeError, match="expected grid to have size 2 in last "
                                               "dimension"):
            F.grid_sample(x, lib.zeros(1, 2, 2, 3), align_corners=False)
        with pytest.raises(RuntimeError, match="expected grid and input to have same batch"):
            F.grid_sample(x, lib.zeros(2, 2, 2, 2), align_corners=False)
        with pytest.raises(RuntimeError, match="expected 4D input and grid with same"):
            F.grid_sample(x, lib.zeros(1, 2, 2, 2, 2), align_corners=False)
        with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape "
                                             "Nx2x3"):
            F.affine_grid(lib.zeros(1, 3, 4), (1, 1, 2, 2), align_corners=False)
        with pytest.raises(ValueError, match="Expected a batch of 3D affine matrices"):
            F.affine_grid(lib.zeros(1, 2, 3), (1, 1, 2, 2, 2), align_corners=False)
        with pytest.raises(NotImplementedError, match="affine_grid only supports 4D and 5D"):
            F.affine_grid(lib.zeros(1, 2, 3), (1, 1, 2), align_corners=False)
        with pytest.raises(ValueError, match="Expected theta to have floating point type"):
            F.affine_grid(lib.zeros(1, 2, 3, dtype=lib.int64), (1, 1, 2, 2),
                          align_corners=False)
        with pytest.raises(ValueError, match="Expected non-zero, positive output size"):
            F.affine_grid(lib.zeros(1, 2, 3), (1, 1, 0, 2), align_corners=False)


def test_unit_size_grid_as_torch():
    theta = np.array([[[0.5, 0.2, 0.1], [-0.3, 1.1, 0.4]]])
    for ac in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = tg.nn.functional.affine_grid(tg.tensor(theta), (1, 1, 1, 3), align_corners=ac)
            theirs = torch.nn.functional.affine_grid(torch.tensor(theta), (1, 1, 1, 3),
                                                     align_corners=ac)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("case", bounded(list(itertools.product(
    ["zeros", "border", "reflection"], [False, True], ["float64", "float32"])), 4), ids=str)
def test_bicubic_matches_torch(case):
    pad, ac, dtype = case
    rs = np.random.RandomState(3)
    x = rs.randn(2, 3, 5, 6).astype(dtype)
    g = rs.uniform(-1.6, 1.6, (2, 4, 3, 2)).astype(dtype)

    def run(lib):
        xi, gi = lib.tensor(x, requires_grad=True), lib.tensor(g, requires_grad=True)
        y = lib.nn.functional.grid_sample(xi, gi, mode="bicubic", padding_mode=pad,
                                          align_corners=ac)
        (y * y).sum().backward()
        return y, xi.grad, gi.grad

    tol = dict(rtol=1e-10, atol=1e-10) if dtype == "float64" else dict(rtol=1e-4, atol=1e-4)
    for a, b in zip(run(tg), run(torch)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), **tol)
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
            lib.nn.functional.grid_sample(lib.zeros(1, 1, 2, 2, 2), lib.zeros(1, 1, 1, 1, 3),
                                          mode="bicubic", align_corners=False)
