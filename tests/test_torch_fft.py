"""``tg.fft`` (torch.fft), ``tg.stft`` / ``tg.istft`` against torch, from one table.

Every entry of ``TABLE`` (a function and its argument variants: n/s, dim, norm) is checked
the same way on real and complex inputs of each dtype: values (float64 to ~1e-12, float32
to float32 rounding), result dtype and shape, and, in float64, the ``.grad`` of a real
loss of the result (a complex input is built from two real leaves, as tracegrad's leaves
are real). Integer and boolean inputs are promoted as torch does; bad arguments raise
torch's exception types (and messages, for the ones listed).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(7)

C2C_1D = [{}, {"n": 5}, {"n": 12}, {"dim": 0}, {"dim": -2, "n": 2}, {"norm": "ortho"},
          {"norm": "forward"}, {"norm": "backward", "n": 9}]
C2C_ND = [{}, {"s": (3, 6)}, {"dim": (0, 2)}, {"s": (-1, 4), "dim": (2, 0)}, {"norm": "ortho"},
          {"norm": "forward", "s": (2, 2, 7)}]
C2C_2D = [{}, {"s": (3, 6)}, {"dim": (0, 2)}, {"norm": "ortho"}, {"norm": "forward"}]
R2C_1D = [{}, {"n": 5}, {"n": 10}, {"dim": 0}, {"norm": "ortho"}, {"norm": "forward"}]
C2R_1D = [{}, {"n": 7}, {"n": 8}, {"n": 3}, {"dim": 0}, {"norm": "ortho"},
          {"norm": "forward", "n": 11}]
R2C_ND = [{}, {"s": (3, 6)}, {"dim": (0, 2)}, {"dim": (2, 0)}, {"norm": "ortho"},
          {"norm": "forward"}]
C2R_ND = [{}, {"s": (4, 7)}, {"dim": (2, 0)}, {"s": (-1, -1)}, {"s": (3, 5), "dim": (0, 1)},
          {"norm": "ortho"}, {"norm": "forward"}]

# function -> (argument variants, input kinds it takes)
TABLE = {
    "fft": (C2C_1D, ("real", "complex")),
    "ifft": (C2C_1D, ("real", "complex")),
    "fft2": (C2C_2D, ("real", "complex")),
    "ifft2": (C2C_2D, ("real", "complex")),
    "fftn": (C2C_ND + [{"dim": ()}], ("real", "complex")),
    "ifftn": (C2C_ND, ("real", "complex")),
    "rfft": (R2C_1D, ("real",)),
    "ihfft": (R2C_1D, ("real",)),
    "rfft2": (R2C_ND[:2] + R2C_ND[4:], ("real",)),
    "rfftn": (R2C_ND, ("real",)),
    "ihfft2": (R2C_ND[:2] + R2C_ND[4:], ("real",)),
    "ihfftn": (R2C_ND, ("real",)),
    "irfft": (C2R_1D, ("complex", "real")),
    "hfft": (C2R_1D, ("complex", "real")),
    "irfft2": (C2R_ND[:2] + C2R_ND[5:], ("complex",)),
    "irfftn": (C2R_ND, ("complex", "real")),
    "hfft2": (C2R_ND[:2] + C2R_ND[5:], ("complex",)),
    "hfftn": (C2R_ND, ("complex",)),
}
SHAPE = (4, 5, 6)


def _cases():
    for name, (variants, kinds) in TABLE.items():
        for k, kwargs in enumerate(variants):
            for kind in kinds:
                yield pytest.param(name, kind, kwargs, id=f"{name}-{kind}-{k}")


def _inputs(kind, shape=SHAPE):
    re = RNG.standard_normal(shape)
    im = RNG.standard_normal(shape) if kind == "complex" else None
    return re, im


def _make(lib, re, im, dtype, requires_grad=False):
    """The input tensor (and its real leaves): re, or re + 1j * im."""
    leaves = [lib.tensor(a, dtype=dtype, requires_grad=requires_grad)
              for a in (re, im) if a is not None]
    x = leaves[0] if len(leaves) == 1 else leaves[0] + leaves[1] * 1j
    return x, leaves


def _numpy(t):
    if hasattr(t, "resolve_conj"):
        t = t.resolve_conj()
    return t.detach().numpy()


def _close(a, b, dtype):
    if np.dtype(dtype) == np.float64:
        scale = max(1.0, float(np.abs(b).max(initial=0.0)))
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12 * scale)
    else:
        scale = max(1.0, float(np.abs(b).max(initial=0.0)))
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=4e-6 * scale)


def _loss(lib, y, w):
    """A real loss reading the real and imaginary parts and the modulus."""
    if y.is_complex():
        return (y.real * w).sum() + (y.imag * w * w).sum() + (y.abs() * w).sum()
    return (y * w).sum() + (y * y).sum()


@pytest.mark.parametrize("name,kind,kwargs", list(_cases()))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_against_torch(name, kind, kwargs, dtype):
    re, im = _inputs(kind)
    tdt, gdt = getattr(torch, dtype), getattr(tg, dtype)
    grad = dtype == "float64"
    tx, tleaves = _make(torch, re, im, tdt, grad)
    gx, gleaves = _make(tg, re, im, gdt, grad)
    ty = getattr(torch.fft, name)(tx, **kwargs)
    gy = getattr(tg.fft, name)(gx, **kwargs)
    assert str(gy.dtype) == str(ty.dtype).replace("torch.", "")
    assert tuple(gy.shape) == tuple(ty.shape)
    _close(_numpy(gy), _numpy(ty), dtype)
    if grad:
        w = RNG.standard_normal(tuple(ty.shape))
        _loss(torch, ty, torch.tensor(w)).backward()
        _loss(tg, gy, tg.tensor(w)).backward()
        for t, g in zip(tleaves, gleaves):
            _close(g.grad.numpy(), t.grad.numpy(), dtype)
        assert gy.grad_fn.name() == ty.grad_fn.name()


@pytest.mark.parametrize("name", list(TABLE))
@pytest.mark.parametrize("dtype", ["int64", "bool", "complex64", "complex128"])
def test_promotion(name, dtype):
    """Integers and booleans run in the default float (its complex type for a complex
    result); complex inputs keep their type; torch's error where it refuses one."""
    a = RNG.integers(0, 3, (3, 6))
    if dtype.startswith("complex"):
        a = a + 1j * RNG.integers(0, 3, (3, 6))
    tx = torch.tensor(a).to(getattr(torch, dtype))
    gx = tg.tensor(a).to(getattr(tg, dtype))
    try:
        ty = getattr(torch.fft, name)(tx)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as info:
            getattr(tg.fft, name)(gx)
        assert str(info.value).startswith(str(e).splitlines()[0])
        return
    gy = getattr(tg.fft, name)(gx)
    assert str(gy.dtype) == str(ty.dtype).replace("torch.", "")
    _close(_numpy(gy), _numpy(ty), "float32")


def test_default_dtype_float64():
    old = tg.get_default_dtype()
    tg.set_default_dtype(tg.float64)
    try:
        assert tg.fft.fft(tg.arange(4)).dtype == tg.complex128
        assert tg.fft.irfft(tg.arange(4)).dtype == tg.float64
        assert tg.fft.fftfreq(4).dtype == tg.float64
    finally:
        tg.set_default_dtype(old)


def _same_error(call):
    x = RNG.standard_normal((4, 6))
    try:
        call(torch, torch.tensor(x, dtype=torch.float32))
    except Exception as e:  # noqa: BLE001  (torch's exception is the oracle)
        expected = e
    else:
        raise AssertionError("torch accepted the call")
    with pytest.raises(type(expected)) as info:
        call(tg, tg.tensor(x, dtype=tg.float32))
    return str(expected).splitlines()[0], str(info.value)


ERRORS = {
    "n0": lambda m, x: m.fft.fft(x, n=0),
    "n-negative": lambda m, x: m.fft.rfft(x, n=-2),
    "dim-range": lambda m, x: m.fft.fft(x, dim=2),
    "dim-range-neg": lambda m, x: m.fft.fftn(x, dim=-3),
    "norm": lambda m, x: m.fft.fft(x, norm="foo"),
    "norm-case": lambda m, x: m.fft.ifft2(x, norm="Ortho"),
    "scalar": lambda m, x: m.fft.fft(x.sum()),
    "half": lambda m, x: m.fft.fft(x.half()),
    "rfft-complex": lambda m, x: m.fft.rfft(x.to(m.complex64)),
    "ihfft-complex": lambda m, x: m.fft.ihfft(x.to(m.complex64)),
    "irfft-one": lambda m, x: m.fft.irfft(x[:, :1]),
    "dims-unique": lambda m, x: m.fft.fftn(x, dim=(0, 0)),
    "s-dim-lengths": lambda m, x: m.fft.fftn(x, s=(3, 4), dim=(0,)),
    "s-too-long": lambda m, x: m.fft.fftn(x, s=(3, 4, 5)),
    "s-zero": lambda m, x: m.fft.fftn(x, s=(0, 3)),
    "fft2-1d": lambda m, x: m.fft.fft2(x[0]),
    "rfftn-no-axis": lambda m, x: m.fft.rfftn(x, dim=()),
    "irfftn-no-axis": lambda m, x: m.fft.irfftn(x, dim=()),
    "ihfftn-no-axis": lambda m, x: m.fft.ihfftn(x, dim=()),
    "n-float": lambda m, x: m.fft.fft(x, n=3.0),
    "dim-tuple": lambda m, x: m.fft.fft(x, dim=(0,)),
    "shift-range": lambda m, x: m.fft.fftshift(x, dim=5),
    "shift-scalar": lambda m, x: m.fft.fftshift(x.sum()),
    "freq-negative": lambda m, x: m.fft.fftfreq(-1),
    "freq-int-dtype": lambda m, x: m.fft.fftfreq(4, dtype=m.int64),
    "freq-complex-dtype": lambda m, x: m.fft.fftfreq(4, dtype=m.complex64),
    "freq-float-n": lambda m, x: m.fft.rfftfreq(4.0),
    "out-real": lambda m, x: m.fft.fft(x, out=m.empty(4, 6)),
}
SAME_MESSAGE = {"n0", "n-negative", "dim-range", "dim-range-neg", "norm", "norm-case", "scalar",
                "half", "rfft-complex", "ihfft-complex", "irfft-one", "dims-unique",
                "s-dim-lengths", "s-too-long", "s-zero", "fft2-1d", "rfftn-no-axis",
                "irfftn-no-axis", "ihfftn-no-axis", "n-float", "shift-range", "shift-scalar",
                "freq-negative", "freq-int-dtype", "freq-complex-dtype", "out-real"}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors(case):
    expected, got = _same_error(ERRORS[case])
    if case in SAME_MESSAGE:
        assert got.startswith(expected), (got, expected)


@pytest.mark.parametrize("n", [1, 4, 5, 0])
@pytest.mark.parametrize("d", [1.0, 0.1, 2.5])
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_freqs(n, d, dtype):
    for name in ("fftfreq", "rfftfreq"):
        kw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
        t = getattr(torch.fft, name)(n, d, **kw)
        kw = {} if dtype is None else {"dtype": getattr(tg, dtype)}
        g = getattr(tg.fft, name)(n, d, **kw)
        assert str(g.dtype) == str(t.dtype).replace("torch.", "")
        np.testing.assert_array_equal(g.numpy(), t.numpy())
    g = tg.fft.fftfreq(4, requires_grad=True)
    assert g.requires_grad and g.is_leaf
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(tg.fft.fftfreq(4, d=0).numpy(),
                                      torch.fft.fftfreq(4, d=0).numpy())


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), (1, 1), -1])
@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts(name, dim):
    a = RNG.standard_normal((4, 5))
    kw = {} if dim is None else {"dim": dim}
    t = torch.tensor(a, requires_grad=True)
    g = tg.tensor(a, requires_grad=True)
    ty, gy = getattr(torch.fft, name)(t, **kw), getattr(tg.fft, name)(g, **kw)
    np.testing.assert_array_equal(gy.detach().numpy(), ty.detach().numpy())
    w = RNG.standard_normal((4, 5))
    (ty * torch.tensor(w)).sum().backward()
    (gy * tg.tensor(w)).sum().backward()
    np.testing.assert_array_equal(g.grad.numpy(), t.grad.numpy())
    assert gy.grad_fn.name() == ty.grad_fn.name()


def test_out():
    a = RNG.standard_normal((3, 8))
    for dtype in ("complex64", "complex128"):
        t_out = torch.empty(3, 8, dtype=getattr(torch, dtype))
        g_out = tg.empty(3, 8, dtype=getattr(tg, dtype))
        t_res = torch.fft.fft(torch.tensor(a, dtype=torch.float32), out=t_out)
        g_res = tg.fft.fft(tg.tensor(a, dtype=tg.float32), out=g_out)
        assert g_res is g_out and t_res is t_out
        assert g_out.dtype == getattr(tg, dtype)
        _close(g_out.numpy(), t_out.numpy(), "float32")
    g_out = tg.empty(3, 8)
    tg.fft.irfft(tg.fft.rfft(tg.tensor(a, dtype=tg.float32)), n=8, out=g_out)
    _close(g_out.numpy(), a, "float32")


# -- pipelines: gradients of real losses through complex spectra --------------------------
PIPELINES = {
    "filter": lambda m, x, h: m.fft.irfft(m.fft.rfft(x) * h, n=x.shape[-1]).sum(),
    "filter-sq": lambda m, x, h: (m.fft.irfft(m.fft.rfft(x) * h, n=x.shape[-1]) ** 2).sum(),
    "abs-spectrum": lambda m, x, h: m.fft.fft(x).abs().sum(),
    "power-2d": lambda m, x, h: (m.fft.rfft2(x).abs() ** 2 * h.real.mean()).sum(),
    "shifted": lambda m, x, h: (m.fft.fftshift(m.fft.fft2(x), dim=(-2, -1)).real ** 2).sum(),
    "crop-pad": lambda m, x, h: m.fft.irfft(m.fft.fft(x)[..., :4] * h[..., :4], n=10).pow(2).sum(),
    "hermitian": lambda m, x, h: m.fft.hfft(m.fft.ihfft(x) * h[..., :5], n=8).sin().sum(),
    "phase": lambda m, x, h: m.atan2(m.fft.rfft(x, norm="ortho").imag,
                                     m.fft.rfft(x, norm="ortho").real).cos().sum(),
}


@pytest.mark.parametrize("case", list(PIPELINES))
def test_pipeline_gradients(case):
    a = RNG.standard_normal((3, 8))
    h = RNG.standard_normal((3, 5)) + 1j * RNG.standard_normal((3, 5))
    t = torch.tensor(a, requires_grad=True)
    g = tg.tensor(a, requires_grad=True)
    tl = PIPELINES[case](torch, t, torch.tensor(h))
    gl = PIPELINES[case](tg, g, tg.tensor(h))
    _close(gl.item(), tl.item(), "float64")
    tl.backward()
    gl.backward()
    _close(g.grad.numpy(), t.grad.numpy(), "float64")


# -- stft / istft ------------------------------------------------------------------------------
def _hann(n, dtype):
    """torch.hann_window(n) (periodic), from NumPy's numbers on both sides."""
    w = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)
    return torch.tensor(w, dtype=getattr(torch, dtype)), tg.tensor(w, dtype=getattr(tg, dtype))


STFT = [
    {},
    {"hop_length": 3, "win_length": 10},
    {"center": False},
    {"onesided": False},
    {"normalized": True},
    {"pad_mode": "constant"},
    {"pad_mode": "replicate", "hop_length": 8},
    {"window": None},
    {"center": False, "align_to_window": True, "win_length": 11},
]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("k", range(len(STFT)))
def test_stft_istft(k, batched, dtype):
    kw = dict(STFT[k])
    n_fft = 16
    shape = (2, 100) if batched else (100,)
    a = RNG.standard_normal(shape)
    win = kw.pop("win_length", n_fft)
    tw, gw = _hann(win, dtype)
    if "window" in kw:
        tw = gw = kw.pop("window")
    elif not kw.get("center", True):
        tw, gw = tw + 0.1, gw + 0.1     # a Hann window's zero ends cannot be divided out
    kw["win_length"] = win
    grad = dtype == "float64"
    t = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=grad)
    g = tg.tensor(a, dtype=getattr(tg, dtype), requires_grad=grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = torch.stft(t, n_fft, window=tw, return_complex=True, **kw)
        gs = tg.stft(g, n_fft, window=gw, return_complex=True, **kw)
        assert str(gs.dtype) == str(ts.dtype).replace("torch.", "")
        assert tuple(gs.shape) == tuple(ts.shape)
        _close(_numpy(gs), _numpy(ts), dtype)
        kw.pop("pad_mode", None)
        if kw.pop("align_to_window", None):
            return      # istft has no align_to_window
        ti = torch.istft(ts, n_fft, window=tw, length=100, **kw)
        gi = tg.istft(gs, n_fft, window=gw, length=100, **kw)
    assert str(gi.dtype) == str(ti.dtype).replace("torch.", "")
    assert tuple(gi.shape) == tuple(ti.shape)
    _close(_numpy(gi), _numpy(ti), dtype)
    _close(_numpy(gi), a, "float32")        # the round trip
    if grad:
        w = torch.tensor(RNG.standard_normal(tuple(ts.shape)))
        ((ts.abs() * w).sum() + (ti ** 3).sum()).backward()
        ((gs.abs() * tg.tensor(w.numpy())).sum() + (gi ** 3).sum()).backward()
        _close(g.grad.numpy(), t.grad.numpy(), dtype)


def test_stft_window_gradient():
    a = RNG.standard_normal((2, 64))
    tw = torch.tensor(np.hanning(16), requires_grad=True)
    gw = tg.tensor(np.hanning(16), requires_grad=True)
    ts = torch.tensor(a).stft(16, window=tw, hop_length=4, return_complex=True)
    gs = tg.stft(tg.tensor(a), 16, window=gw, hop_length=4, return_complex=True)
    _close(_numpy(gs), _numpy(ts), "float64")
    ti = ts.istft(16, window=tw, hop_length=4)
    gi = tg.istft(gs, 16, window=gw, hop_length=4)
    _close(_numpy(gi), _numpy(ti), "float64")
    (ts.abs().sum() + ti.sum()).backward()
    (gs.abs().sum() + gi.sum()).backward()
    _close(gw.grad.numpy(), tw.grad.numpy(), "float64")


def test_stft_return_complex():
    a = RNG.standard_normal((2, 64)).astype(np.float32)
    tw, gw = _hann(16, "float32")
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter"):
        tg.stft(tg.tensor(a), 16, window=gw)
    # torch 2.13 still takes return_complex=False, with a deprecation warning
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        g = tg.stft(tg.tensor(a), 16, window=gw, return_complex=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.stft(torch.tensor(a), 16, window=tw, return_complex=False)
    assert tuple(g.shape) == tuple(t.shape) and g.dtype == tg.float32
    _close(g.numpy(), t.numpy(), "float32")
    c = a + 1j * a[::-1]
    ts = torch.stft(torch.tensor(c), 16, window=tw)
    gs = tg.stft(tg.tensor(c), 16, window=gw)
    assert tuple(gs.shape) == tuple(ts.shape) and str(gs.dtype) == "complex64"
    assert str(ts.dtype) == "torch.complex64"
    _close(_numpy(gs), _numpy(ts), "float32")
    ti = torch.istft(ts, 16, window=tw, return_complex=True)
    gi = tg.istft(gs, 16, window=gw, return_complex=True)
    _close(_numpy(gi), _numpy(ti), "float32")
    _close(_numpy(gi), c, "float32")


STFT_ERRORS = {
    "win-too-long": lambda m, x, w: m.stft(x, 16, win_length=20, return_complex=True),
    "hop-zero": lambda m, x, w: m.stft(x, 16, hop_length=0, return_complex=True),
    "window-size": lambda m, x, w: m.stft(x, 16, window=w[:15], return_complex=True),
    "pad-too-big": lambda m, x, w: m.stft(x[:, :8], 16, return_complex=True),
    "n-fft-big": lambda m, x, w: m.stft(x[:, :5], 16, center=False, return_complex=True),
    "3d": lambda m, x, w: m.stft(x[None], 16, return_complex=True),
    "onesided-complex": lambda m, x, w: m.stft(x * 1j, 16, onesided=True, return_complex=True),
    "align": lambda m, x, w: m.stft(x, 16, return_complex=True, align_to_window=True),
    "istft-real": lambda m, x, w: m.istft(x, 16),
    "istft-onesided": lambda m, x, w: m.istft(m.stft(x, 16, return_complex=True), 16,
                                              onesided=False),
    "istft-hop": lambda m, x, w: m.istft(m.stft(x, 16, return_complex=True), 16, hop_length=20),
    "istft-window": lambda m, x, w: m.istft(m.stft(x, 16, return_complex=True), 16,
                                            window=w[:5]),
    "istft-zero-window": lambda m, x, w: m.istft(m.stft(x, 16, return_complex=True), 16,
                                                 window=w * 0),
    "istft-return-complex": lambda m, x, w: m.istft(m.stft(x, 16, return_complex=True), 16,
                                                    return_complex=True),
}


@pytest.mark.parametrize("case", list(STFT_ERRORS))
def test_stft_errors(case):
    a = RNG.standard_normal((2, 64)).astype(np.float32)
    tw, gw = _hann(16, "float32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError) as expected:
            STFT_ERRORS[case](torch, torch.tensor(a), tw)
        with pytest.raises(RuntimeError) as got:
            STFT_ERRORS[case](tg, tg.tensor(a), gw)
    assert str(got.value).startswith(str(expected.value).splitlines()[0])


# -- imports and tg.compile -----------------------------------------------------------------
def test_module_imports():
    import tracegrad.fft
    from tracegrad.fft import rfft
    assert tracegrad.fft is tg.fft and rfft is tg.fft.rfft
    assert tg.stft is tg.fft.stft and tg.istft is tg.fft.istft


def test_compile_matches_eager():
    def f(x):
        s = tg.fft.rfft(x, norm="ortho")
        y = tg.fft.irfft(s * s.abs(), n=x.shape[-1]) + tg.fft.fft2(x).real
        return y + tg.fft.fftshift(tg.fft.ifftn(x, dim=(0,)).imag)

    x = tg.tensor(RNG.standard_normal((3, 16)), dtype=tg.float32)
    eager = f(x)
    compiled = tg.compile(f)(x)
    assert compiled.dtype == eager.dtype
    np.testing.assert_array_equal(compiled.numpy(), eager.numpy())
    xg = x.clone().requires_grad_(True)
    tg.compile(f)(xg).sum().backward()
    g_compiled = xg.grad.numpy().copy()
    xg.grad = None
    f(xg).sum().backward()
    np.testing.assert_array_equal(g_compiled, xg.grad.numpy())
