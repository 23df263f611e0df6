"""``str(t)`` / ``repr(t)`` against PyTorch's, character for character.

Generated tensors of 0 to 3 dimensions (sizes that wrap a line, empty ones, more than
1000 elements, which PyTorch summarizes), with values that pick each of PyTorch's
formats (whole numbers, fixed point, scientific notation from large or small magnitudes
or a wide ratio), negative zeros, NaN and infinities, in float32, float64, float16,
complex, integer and boolean dtypes; with ``requires_grad`` and ``grad_fn`` suffixes, and
under other print options.
"""
import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg

torch = pytest.importorskip("torch")

SHAPES = [(), (1,), (5,), (1, 10), (3, 4), (2, 3, 4), (12,), (30,), (7, 13), (2, 2, 17),
          (1100,), (40, 30), (3, 20, 20), (1, 1, 1), (4, 1, 9)]
KINDS = ["normal", "whole", "large", "small", "wide", "special", "zeros", "negzero", "tiny"]
DTYPES = ["float32", "float64", "float16", "int64", "int32", "uint8", "bool", "complex64",
          "complex128"]


def _values(kind, shape, dtype, rng):
    with np.errstate(over="ignore", invalid="ignore"):      # large values overflow float16
        return _draw(kind, shape, dtype, rng)


def _draw(kind, shape, dtype, rng):
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        scale = {"large": 10**6, "small": 3, "zeros": 0}.get(kind, 200)
        v = rng.integers(-scale, scale + 1, shape) if dtype != "uint8" else \
            rng.integers(0, 256, shape)
        return v.astype(dtype)
    x = rng.standard_normal(shape)
    if kind == "whole":
        x = np.round(x * 40)
    elif kind == "large":
        x = x * 3e9
    elif kind == "small":
        x = x * 2e-6
    elif kind == "wide":
        x = x * np.exp(rng.uniform(-4, 4, shape))
    elif kind == "special" and n:
        flat = x.reshape(-1)
        flat[rng.integers(0, n, 3)] = [np.nan, np.inf, -np.inf][: min(3, n)] if n >= 3 else np.nan
    elif kind == "zeros":
        x = np.zeros(shape)
    elif kind == "negzero":
        x = np.where(rng.random(shape) < 0.5, -0.0, np.round(x * 3))
    elif kind == "tiny":
        x = np.round(x * 1e3) / 1e3
    if np.dtype(dtype).kind == "c":
        x = x + 1j * np.roll(x, 1) * (-1.5)
    return x.astype(dtype)


def _cases():
    cases = []
    for shape in SHAPES:
        for kind in KINDS:
            for dtype in DTYPES:
                if np.dtype(dtype).kind in "biu" and kind not in ("normal", "large", "small",
                                                                   "zeros"):
                    continue
                cases.append((shape, kind, dtype))
    return cases


CASES = _cases()


def _pair(array):
    """The same values as a tracegrad and a torch tensor."""
    return tg.from_numpy(np.array(array, copy=True)), torch.from_numpy(np.array(array, copy=True))


@pytest.mark.parametrize("shape, kind, dtype", bounded(CASES, 120),
                         ids=lambda v: str(v).replace(" ", ""))
def test_str_matches_torch(shape, kind, dtype):
    rng = np.random.default_rng(len(shape) * 100 + KINDS.index(kind) * 10 + DTYPES.index(dtype))
    ours, theirs = _pair(_values(kind, shape, dtype, rng))
    assert str(ours) == str(theirs)
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0, 4)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_empty_tensors_match_torch(shape, dtype):
    ours, theirs = _pair(np.zeros(shape, dtype))
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("default", ["float32", "float64"])
def test_dtype_suffix_follows_the_default_dtype(default):
    before_tg, before_torch = tg.get_default_dtype(), torch.get_default_dtype()
    try:
        tg.set_default_dtype(getattr(tg, default))
        torch.set_default_dtype(getattr(torch, default))
        for dtype in ("float32", "float64", "complex64", "complex128", "int64", "int16"):
            ours, theirs = _pair(np.array([1.5, -2.0, 3.25]).astype(dtype))
            assert repr(ours) == repr(theirs), dtype
        assert repr(tg.tensor([0.1, 2.0])) == repr(torch.tensor([0.1, 2.0]))
    finally:
        tg.set_default_dtype(before_tg)
        torch.set_default_dtype(before_torch)


@pytest.mark.parametrize("shape", [(), (3,), (2, 9), (3, 4, 5), (1100,)])
def test_grad_suffixes_match_torch(shape):
    """``requires_grad=True`` on leaves, ``grad_fn=<...>`` on results; suffixes that do
    not fit on the last line go on a line of their own (the names of these operations
    are the same in both libraries)."""
    rng = np.random.default_rng(len(shape))
    x = rng.standard_normal(shape).astype(np.float32)
    results = []
    for lib in (tg, torch):
        leaf = lib.tensor(x, requires_grad=True)
        results.append([repr(leaf), repr(leaf * 2), repr(leaf + 1), repr(leaf.sum()),
                        repr(leaf.detach()), str(lib.nn.Parameter(lib.tensor(x)))])
    assert results[0] == results[1]


@pytest.mark.parametrize("options", [dict(precision=2), dict(profile="short"),
                                     dict(sci_mode=True), dict(sci_mode=False),
                                     dict(linewidth=40), dict(threshold=10, edgeitems=2),
                                     dict(edgeitems=0, threshold=5)],
                         ids=lambda o: str(o).replace(" ", ""))
def test_print_options_match_torch(options):
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal((4, 13)).astype(np.float32),
              (rng.standard_normal(30) * 1e5).astype(np.float64),
              rng.integers(-50, 50, (3, 3, 8)), np.round(rng.standard_normal(12) * 9)]
    try:
        tg.set_printoptions(**options)
        torch.set_printoptions(**options)
        for a in arrays:
            ours, theirs = _pair(a)
            assert repr(ours) == repr(theirs)
    finally:
        tg.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")


def test_the_tutorial_row_wraps_after_eight_values():
    """The neural-networks tutorial's (1, 10) output: 8 values on the first row, as in
    PyTorch (NumPy's formatter put 7)."""
    x = np.array([[0.0694, -0.0820, 0.0334, -0.0420, 0.1027, -0.0357, 0.0262, 0.0843,
                   -0.0541, 0.1084]], np.float32)
    ours, theirs = _pair(x)
    assert str(ours) == str(theirs)
    assert str(ours).split("\n")[0].count(",") == 8
