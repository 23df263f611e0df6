"""torch.quantile / nanquantile and the top-level names of eager/torch_misc.py (constants,
settings, in-place functions, isin, asarray, ...), against torch 2.13."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
QUANTILES = [
    (RNG.standard_normal((4, 7)), 0.3, None, False, "linear"),
    (RNG.standard_normal((4, 7)), [0.0, 0.25, 0.5, 1.0], 1, True, "linear"),
    (RNG.standard_normal((4, 7)), [0.1, 0.9], 0, False, "midpoint"),
    (RNG.standard_normal((5,)), 0.5, 0, False, "nearest"),
    (RNG.standard_normal((3, 4, 5)), [0.3], -1, False, "lower"),
    (RNG.standard_normal((3, 4, 5)), 0.71, 1, True, "higher"),
    (np.array([[1.0, np.nan, 3.0, 2.0], [4.0, 5.0, 6.0, 7.0]]), 0.4, 1, False, "linear"),
    (np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), 0.3333, None, True, "linear"),
    (np.array(2.5), 0.2, None, False, "linear"),
    (np.array([[np.nan, np.nan], [1.0, 2.0]]), [0.5], 1, False, "linear"),
    (np.array([3.0, 1.0, 3.0, 2.0, 1.0]), [0.2, 0.5, 0.8], 0, False, "linear"),   # ties
]


@pytest.mark.parametrize("case", range(len(QUANTILES)))
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile_matches_torch_bit_for_bit(case, name):
    data, q, dim, keepdim, interpolation = QUANTILES[case]
    out = []
    for L in (tg, torch):
        x = L.tensor(data, requires_grad=True)
        qq = L.tensor(q, dtype=x.dtype) if isinstance(q, list) else q
        y = getattr(L, name)(x, qq, dim=dim, keepdim=keepdim, interpolation=interpolation)
        w = L.tensor(np.linspace(0.5, 2.0, y.numel()).reshape(tuple(y.shape)), dtype=y.dtype)
        (y * w).nan_to_num().sum().backward()
        out.append((y.detach().numpy(), x.grad.numpy()))
    (a, ga), (b, gb) = out
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(ga, gb, rtol=1e-12, atol=1e-12)


def test_quantile_method_and_errors():
    x = tg.tensor(RNG.standard_normal((3, 4)))
    np.testing.assert_array_equal(x.quantile(0.5, 1).numpy(), tg.quantile(x, 0.5, 1).numpy())
    for call in (lambda L: L.quantile(L.tensor([1, 2]), 0.5),
                 lambda L: L.quantile(L.ones(3), 1.5),
                 lambda L: L.quantile(L.ones(0), 0.5),
                 lambda L: L.quantile(L.ones(3), 0.5, interpolation="cubic"),
                 lambda L: L.quantile(L.ones(3), L.tensor([0.5], dtype=L.float64))):
        kinds = []
        for L in (tg, torch):
            with pytest.raises(Exception) as info:
                call(L)
            kinds.append(type(info.value))
        assert kinds[0] is kinds[1]


def test_constants_and_dtype():
    for name in ("pi", "e", "inf", "nan", "newaxis"):
        a, b = getattr(tg, name), getattr(torch, name)
        assert (a is b) or a == b or (a != a and b != b)
    assert isinstance(tg.float32, tg.dtype) and isinstance(tg.int64, tg.dtype)


def test_settings_give_back_what_they_were_given():
    before = (tg.get_num_threads(), tg.are_deterministic_algorithms_enabled(),
              tg.get_float32_matmul_precision())
    try:
        tg.set_num_threads(3)
        tg.use_deterministic_algorithms(True, warn_only=True)
        tg.set_float32_matmul_precision("medium")
        assert tg.get_num_threads() == 3
        assert tg.are_deterministic_algorithms_enabled()
        assert tg.is_deterministic_algorithms_warn_only_enabled()
        assert tg.get_deterministic_debug_mode() == 1
        assert tg.get_float32_matmul_precision() == "medium"
        with pytest.raises(RuntimeError):
            tg.set_float32_matmul_precision("fastest")
    finally:
        tg.set_num_threads(before[0])
        tg.use_deterministic_algorithms(before[1])
        tg.set_float32_matmul_precision(before[2])
    assert tg.set_flush_denormal(True) is False


@pytest.mark.parametrize("name", ["exp_", "relu_", "sigmoid_", "sqrt_", "neg_", "zero_",
                                  "round_", "tanh_", "clip_"])
def test_inplace_functions_are_the_methods(name):
    args = (0.1, 0.5) if name == "clip_" else ()
    data = np.abs(RNG.standard_normal(5)) + 0.1
    out = []
    for L in (tg, torch):
        x = L.tensor(data.copy())
        r = getattr(L, name)(x, *args)
        assert r is x
        out.append(x.numpy().copy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-6)


def test_isin_asarray_typename_and_predicates():
    for L in (tg, torch):
        assert L.isin(L.tensor([1, 2, 3]), L.tensor([2, 5])).tolist() == [False, True, False]
        assert L.isin(L.tensor([1, 2]), L.tensor([2]), invert=True).tolist() == [True, False]
        assert bool(L.isin(3, L.tensor([3])))
        a = np.arange(3.0)
        t = L.asarray(a)
        a[0] = 9.0
        assert t.tolist() == [9.0, 1.0, 2.0]         # the array's memory
        c = L.asarray(a, copy=True)
        a[1] = 7.0
        assert c.tolist() == [9.0, 1.0, 2.0]
        x = L.ones(2, requires_grad=True)
        assert L.asarray(x) is x
        assert L.typename(L.ones(2)) == "torch.FloatTensor"
        assert L.typename(L.ones(2, dtype=L.int64)) == "torch.LongTensor"
        assert L.get_device(L.ones(1)) == -1
        assert L.is_same_size(L.ones(2), L.ones(2)) and not L.is_same_size(L.ones(2), L.ones(3))
        assert L.is_nonzero(L.tensor([2.0])) and not L.is_nonzero(L.tensor([0.0]))
        with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
            L.is_nonzero(L.tensor([1, 2]))
        assert not L.is_conj(L.ones(2)) and not L.is_neg(L.ones(2))


def test_memory_formats_are_accepted_checked_and_reported_truthfully():
    """tracegrad makes C-order tensors whatever the memory format asked for: the values are
    torch's, and is_contiguous(memory_format=channels_last) tells the real layout."""
    x0 = RNG.standard_normal((2, 3, 4, 5))
    xt, xg = torch.tensor(x0), tg.tensor(x0)
    for fmt in ("contiguous_format", "channels_last", "preserve_format"):
        a = xg.contiguous(memory_format=getattr(tg, fmt))
        b = xt.contiguous(memory_format=getattr(torch, fmt))
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert repr(getattr(tg, fmt)) == repr(getattr(torch, fmt))
    y = xg.contiguous(memory_format=tg.channels_last)
    assert y.is_contiguous() and not y.is_contiguous(memory_format=tg.channels_last)
    assert tg.ones(1, 1, 1, 1).is_contiguous(memory_format=tg.channels_last)
    assert not tg.ones(2, 3).is_contiguous(memory_format=tg.channels_last)
    np.testing.assert_array_equal(tg.zeros_like(xg, memory_format=tg.preserve_format).numpy(),
                                  np.zeros_like(x0))
    conv = tg.nn.Conv2d(3, 4, 3).to(memory_format=tg.channels_last)
    assert tuple(conv(xg.float()).shape) == (2, 4, 2, 3)
    for L in (tg, torch):
        with pytest.raises(TypeError, match="must be torch.memory_format, not str"):
            L.ones(2).contiguous(memory_format="channels_last")


def test_compiler_disable_is_a_graph_break_with_eagers_numbers():
    calls = []

    @tg.compiler.disable
    def log_stats(t):
        calls.append(tg.compiler.is_compiling())
        return t * 2

    tg.manual_seed(0)
    model = tg.nn.Linear(3, 2)
    x = tg.tensor(RNG.standard_normal((4, 3)).astype(np.float32))

    def step(x):
        return log_stats(model(x)).sum()
    compiled = tg.compile(step)
    values = [compiled(x).item() for _ in range(3)]
    assert values == [step(x).item()] * 3
    assert calls and not any(calls)           # always run outside a capture
    assert any("torch.compiler.disable" in r for r in compiled.explain().break_reasons)
    strict = tg.compile(step, fullgraph=True)
    strict(x)
    with pytest.raises(tg.TraceError, match="torch.compiler.disable"):
        strict(x)


def test_compiler_cpu_and_version_modules():
    import tracegrad.compiler
    import tracegrad.cpu
    import tracegrad.version
    assert tracegrad.compiler.is_compiling() is False
    assert tracegrad.compiler.compile is tg.compile
    assert tg.cpu.is_available() and tg.cpu.device_count() == 1
    assert tg.version.cuda is None and tg.version.__version__ == tg.__version__
    assert torch.version.cuda is None and torch.cpu.is_available()     # as torch's CPU build
