"""Dtypes and devices of the eager API against torch CPU: the default float dtype, what
each creation function gives, casts, ``.type()``, ``__format__``, the legacy constructors,
``tg.device`` / ``.to`` / ``tg.cuda`` / ``tg.backends``, and torch's errors for an
accelerator on a CPU-only build.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")


def _name(dtype):
    return str(dtype).replace("torch.", "")


@pytest.fixture
def default_float64():
    old, old_t = tg.get_default_dtype(), torch.get_default_dtype()
    tg.set_default_dtype(tg.float64)
    torch.set_default_dtype(torch.float64)
    yield
    tg.set_default_dtype(old)
    torch.set_default_dtype(old_t)


# what each creation call gives, in both libraries
CREATIONS = {
    "float": lambda L: L.tensor(1.5), "floats": lambda L: L.tensor([1.0, 2.0]),
    "nested floats": lambda L: L.tensor([[1.0], [2]]), "ints": lambda L: L.tensor([1, 2]),
    "bools": lambda L: L.tensor([True]), "complex": lambda L: L.tensor([1 + 2j]),
    "numpy float64": lambda L: L.tensor(np.ones(3)),
    "numpy float32": lambda L: L.tensor(np.ones(3, np.float32)),
    "numpy int32": lambda L: L.tensor(np.ones(3, np.int32)),
    "from_numpy": lambda L: L.from_numpy(np.ones(2)),
    "as_tensor numpy": lambda L: L.as_tensor(np.ones(2, np.float16)),
    "as_tensor list": lambda L: L.as_tensor([1.0, 2.0]),
    "numpy scalar": lambda L: L.tensor(np.float64(2.0)),
    "rand": lambda L: L.rand(2), "randn": lambda L: L.randn(2, 1),
    "zeros": lambda L: L.zeros(2), "ones": lambda L: L.ones((2, 3)),
    "empty": lambda L: L.empty(1).zero_(), "eye": lambda L: L.eye(2),
    "arange int": lambda L: L.arange(3), "arange float": lambda L: L.arange(0, 1, 0.25),
    "arange float end": lambda L: L.arange(2.0), "linspace": lambda L: L.linspace(0, 1, 5),
    "full float": lambda L: L.full((2,), 1.5), "full int": lambda L: L.full((2,), 3),
    "full bool": lambda L: L.full((2,), True), "randint": lambda L: L.randint(0, 3, (2,)) * 0,
    "zeros_like int": lambda L: L.zeros_like(L.tensor([1, 2])),
    "rand_like": lambda L: L.rand_like(L.ones(2)) * 0, "randperm": lambda L: L.randperm(3).sort()[0],
    "mean of ints as float": lambda L: L.tensor([1, 2]).float().mean(),
    "int / int": lambda L: L.tensor([1, 2]) / 2, "int * float": lambda L: L.tensor([1]) * 1.5,
    "int exp": lambda L: L.tensor([1, 2]).exp(),
    "sum of bool": lambda L: L.tensor([True, True]).sum(),
}


@pytest.mark.parametrize("case", list(CREATIONS))
def test_creation_dtypes_match_torch(case):
    got, want = CREATIONS[case](tg), CREATIONS[case](torch)
    assert got.dtype == np.dtype(_name(want.dtype)), case
    assert tuple(got.shape) == tuple(want.shape)
    if case not in ("rand", "randn"):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("case", ["float", "floats", "rand", "ones", "arange float",
                                  "linspace", "full float", "int / int", "int exp", "complex"])
def test_set_default_dtype_float64_matches_torch(case, default_float64):
    got, want = CREATIONS[case](tg), CREATIONS[case](torch)
    assert got.dtype == np.dtype(_name(want.dtype))


def test_default_dtype_is_float32_and_settable():
    assert tg.get_default_dtype() == tg.float32 == np.dtype(_name(torch.get_default_dtype()))
    assert tg.nn.Linear(2, 2).weight.dtype == tg.float32
    assert tg.nn.Conv2d(1, 1, 3).bias.dtype == tg.float32
    try:
        tg.set_default_dtype(tg.float64)
        assert tg.nn.Linear(2, 2).weight.dtype == tg.float64
        assert tg.tensor([0.5]).dtype == tg.float64
    finally:
        tg.set_default_dtype(tg.float32)
    with pytest.raises(TypeError):
        tg.set_default_dtype(tg.int64)


def test_from_numpy_and_as_tensor_share_memory():
    a = np.zeros(3)
    t = tg.from_numpy(a)
    a[0] = 5
    assert t[0].item() == 5 and t.dtype == tg.float64
    assert tg.as_tensor(a)._data is a


def test_float32_model_with_float64_data_raises_as_torch():
    for L in (tg, torch):
        layer = L.nn.Linear(3, 2)
        with pytest.raises(RuntimeError, match="same dtype|dtype"):
            layer(L.tensor(np.ones((1, 3))))
        assert layer(L.tensor(np.ones((1, 3)), dtype=L.float32)).dtype == L.float32


def test_gradcheck_warns_on_float32_as_torch():
    x = tg.tensor([0.5, 1.5], requires_grad=True)
    with pytest.warns(UserWarning, match="double precision"):
        tg.autograd.gradcheck(lambda t: t.sigmoid(), (x,), eps=1e-6, raise_exception=False)
    x64 = tg.tensor([0.5, 1.5], dtype=tg.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tg.autograd.gradcheck(lambda t: t.sigmoid(), (x64,))


# -- casts, .type(), __format__, legacy constructors ------------------------------------------
CASTS = ["float", "double", "half", "long", "int", "short", "char", "byte", "bool", "cfloat",
         "cdouble"]


@pytest.mark.parametrize("cast", CASTS)
def test_casts_match_torch(cast):
    data = [[0.0, 1.5, -2.0], [3.0, 0.25, 7.0]]
    got, want = getattr(tg.tensor(data), cast)(), getattr(torch.tensor(data), cast)()
    assert got.dtype == np.dtype(_name(want.dtype))
    assert got.type() == want.type()
    if cast not in ("byte",):                    # -2.0 to uint8 is undefined in C
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_type_and_type_as():
    t = tg.ones(2)
    assert t.type() == "torch.FloatTensor" == torch.ones(2).type()
    assert t.type(tg.float64).dtype == tg.float64
    assert t.type("torch.LongTensor").dtype == tg.int64
    assert t.type(tg.IntTensor).dtype == tg.int32
    assert t.type_as(tg.tensor([1])).dtype == tg.int64
    with pytest.raises(ValueError):
        t.type("torch.NoSuchTensor")
    x = tg.ones(2, requires_grad=True)
    y = x.double()
    assert y.grad_fn.name() == "ToCopyBackward0"
    y.sum().backward()
    assert x.grad.dtype == tg.float32


@pytest.mark.parametrize("spec", ["+.2f", ".3e", "", "10.4f", "g"])
def test_format_of_a_0d_tensor_matches_torch(spec):
    assert format(tg.tensor(3.14159), spec) == format(torch.tensor(3.14159), spec)
    assert format(tg.tensor(7), "d" if spec else "") == format(torch.tensor(7),
                                                               "d" if spec else "")


def test_format_of_a_vector():
    assert format(tg.tensor([1.0, 2.0])) == str(tg.tensor([1.0, 2.0]))
    assert f"{tg.tensor([1.0, 2.0])}" == "tensor([1., 2.])" == f"{torch.tensor([1.0, 2.0])}"
    for L in (tg, torch):
        with pytest.raises(TypeError, match="unsupported format string"):
            format(L.tensor([1.0, 2.0]), ".2f")


LEGACY = {
    "FloatTensor data": lambda L: L.FloatTensor([1, 2]),
    "FloatTensor sizes": lambda L: L.FloatTensor(2, 3).zero_(),
    "FloatTensor tuple is data": lambda L: L.FloatTensor((2, 3)),
    "FloatTensor Size": lambda L: L.FloatTensor(L.Size([2, 3])).zero_(),
    "FloatTensor empty": lambda L: L.FloatTensor(),
    "DoubleTensor": lambda L: L.DoubleTensor([[0.5]]),
    "LongTensor truncates": lambda L: L.LongTensor([1.5, -2.5]),
    "LongTensor size": lambda L: L.LongTensor(4).zero_(),
    "IntTensor": lambda L: L.IntTensor([3]), "BoolTensor": lambda L: L.BoolTensor([1, 0]),
    "ByteTensor": lambda L: L.ByteTensor([1, 200]), "HalfTensor": lambda L: L.HalfTensor([1.5]),
    "ShortTensor": lambda L: L.ShortTensor(2).zero_(), "CharTensor": lambda L: L.CharTensor([-3]),
    "FloatTensor of a float tensor": lambda L: L.FloatTensor(L.ones(2)),
    "FloatTensor of a long tensor": lambda L: L.FloatTensor(L.ones(2, dtype=L.int64)),
    "FloatTensor requires_grad": lambda L: L.FloatTensor([1.0], requires_grad=True),
    "Tensor data": lambda L: L.Tensor([1, 2]), "Tensor sizes": lambda L: L.Tensor(2, 3).zero_(),
    "Tensor empty": lambda L: L.Tensor(), "Tensor Size": lambda L: L.Tensor(L.Size([2])).zero_(),
    "Tensor nested": lambda L: L.Tensor([[1.5], [2]]),
}


@pytest.mark.parametrize("case", list(LEGACY))
def test_legacy_constructors_match_torch(case):
    try:
        want, want_err = LEGACY[case](torch), None
    except Exception as e:  # noqa: BLE001
        want, want_err = None, e
    if want_err is not None:
        with pytest.raises(type(want_err)):
            LEGACY[case](tg)
        return
    got = LEGACY[case](tg)
    assert got.dtype == np.dtype(_name(want.dtype)) and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_legacy_types_answer_isinstance_by_dtype():
    assert isinstance(tg.ones(2), tg.FloatTensor) and not isinstance(tg.ones(2), tg.LongTensor)
    assert isinstance(tg.tensor([1]), tg.LongTensor)
    assert not isinstance(np.ones(2), tg.FloatTensor)


def test_dtype_names_as_torch():
    for name in ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                 "complex64", "complex128", "half", "short", "cfloat", "cdouble", "float",
                 "double", "long", "int", "bool"):
        assert getattr(tg, name) == np.dtype(_name(getattr(torch, name))), name


# -- devices --------------------------------------------------------------------------------------
def test_device_objects_match_torch():
    for args in [("cpu",), ("cuda",), ("cuda:1",), ("cuda", 0), ("mps",), ("cpu", 0)]:
        got, want = tg.device(*args), torch.device(*args)
        assert (repr(got), str(got), got.type, got.index) == \
            (repr(want), str(want), want.type, want.index)
    assert tg.device("cpu") == tg.device("cpu") != tg.device("cuda")
    assert (tg.device("cpu") == "cpu") == (torch.device("cpu") == "cpu")
    assert len({tg.device("cpu"), tg.device("cpu")}) == 1
    for L in (tg, torch):
        with pytest.raises(RuntimeError, match="Expected one of cpu"):
            L.device("gpu")
        with pytest.raises(RuntimeError, match="accelerator"):
            L.device(0)


def test_tensors_live_on_the_cpu():
    t = tg.ones(2)
    assert t.device == tg.device("cpu") and repr(t.device) == repr(torch.ones(2).device)
    assert not t.is_cuda and t.is_cpu and t.get_device() == torch.ones(2).get_device()
    assert tg.get_default_device() == tg.device("cpu")
    tg.set_default_device("cpu")
    tg.set_default_device(tg.device("cpu"))
    for make in (lambda d: tg.tensor([1.0], device=d), lambda d: tg.zeros(2, device=d),
                 lambda d: tg.ones(2, device=d), lambda d: tg.rand(2, device=d),
                 lambda d: tg.randn(2, device=d), lambda d: tg.arange(3, device=d),
                 lambda d: tg.full((2,), 1.0, device=d), lambda d: tg.eye(2, device=d),
                 lambda d: tg.linspace(0, 1, 3, device=d), lambda d: tg.empty(2, device=d),
                 lambda d: tg.zeros_like(t, device=d), lambda d: tg.randint(0, 2, (2,), device=d),
                 lambda d: tg.as_tensor([1.0], device=d), lambda d: tg.FloatTensor([1.0], device=d)):
        assert make("cpu").device == tg.device("cpu")
        assert make(tg.device("cpu")).device == tg.device("cpu")
        with pytest.raises(AssertionError, match="not compiled with CUDA.*backend=\"jax\""):
            make("cuda")
        with pytest.raises(RuntimeError, match="mps"):
            make("mps")


def test_to_matches_torch():
    for L in (tg, torch):
        t = L.ones(2)
        assert t.to("cpu") is t and t.cpu() is t and t.to(L.float32) is t
        assert t.to(L.device("cpu")) is t
        assert t.to(t, copy=True) is not t
        assert t.to(L.float64).dtype == L.float64
        assert t.to("cpu", L.float64).dtype == L.float64
        assert t.to(device="cpu", dtype=L.int64).dtype == L.int64
        assert t.to(L.ones(1, dtype=L.int32)).dtype == L.int32
        assert t.to("cpu", non_blocking=True) is t
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            t.cuda()
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            t.to("cuda")
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            t.to("cuda:0", L.float64)
        with pytest.raises(RuntimeError, match="mps"):
            t.to("mps")


def test_module_to_device():
    for L in (tg, torch):
        m = L.nn.Sequential(L.nn.Linear(2, 2))
        assert m.to("cpu") is m and m.to(L.device("cpu")) is m
        assert m.to("cpu", dtype=L.float64)[0].weight.dtype == L.float64
        assert m.to(L.float32)[0].weight.dtype == L.float32
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            m.to("cuda")


def test_cuda_backends_accelerator_answer_as_a_cpu_torch():
    assert tg.cuda.is_available() is torch.cuda.is_available() is False
    assert tg.cuda.device_count() == torch.cuda.device_count() == 0
    assert tg.backends.mps.is_available() is torch.backends.mps.is_available() is False
    assert tg.backends.mps.is_built() is torch.backends.mps.is_built()
    assert tg.accelerator.is_available() is torch.accelerator.is_available() is False
    assert tg.accelerator.current_accelerator() is torch.accelerator.current_accelerator() is None
    assert tg.backends.cudnn.enabled is torch.backends.cudnn.enabled
    assert tg.backends.cudnn.benchmark is torch.backends.cudnn.benchmark
    old = tg.backends.cudnn.benchmark, tg.backends.cudnn.deterministic
    try:
        tg.backends.cudnn.benchmark = True
        tg.backends.cudnn.deterministic = True
        import tracegrad.backends.cudnn as cudnn
        assert cudnn.benchmark and cudnn.deterministic
    finally:
        tg.backends.cudnn.benchmark, tg.backends.cudnn.deterministic = old
    tg.cuda.manual_seed(0)
    tg.cuda.manual_seed_all(0)
    for L in (tg, torch):
        with pytest.raises(AssertionError, match="not compiled with CUDA"):
            L.cuda.current_device()
    with pytest.raises(AssertionError, match="not compiled with CUDA.*jax"):
        tg.set_default_device("cuda")
    device = tg.device("cuda" if tg.cuda.is_available() else "cpu")   # the usual idiom
    assert tg.ones(2, device=device).to(device).device == tg.device("cpu")


def test_finfo_iinfo_and_set_default_tensor_type_match_torch():
    for name in ("float16", "float32", "float64"):
        got, want = tg.finfo(getattr(tg, name)), torch.finfo(getattr(torch, name))
        assert (float(got.eps), float(got.max), float(got.min), float(got.tiny)) == \
            (want.eps, want.max, want.min, want.tiny)
    assert float(tg.finfo().eps) == torch.finfo().eps
    for name in ("uint8", "int8", "int16", "int32", "int64"):
        got, want = tg.iinfo(getattr(tg, name)), torch.iinfo(getattr(torch, name))
        assert (got.min, got.max, got.bits) == (want.min, want.max, want.bits)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # torch deprecates it
            for L in (tg, torch):
                L.set_default_tensor_type(L.DoubleTensor)
                assert L.tensor([0.5]).dtype == L.float64
                L.set_default_tensor_type("torch.FloatTensor")
                assert L.tensor([0.5]).dtype == L.float32
    finally:
        tg.set_default_dtype(tg.float32)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("maker", ["tensor", "as_tensor", "Tensor.new_tensor"])
def test_python_floats_with_an_explicit_dtype_are_not_rounded_through_the_default(maker):
    """``tensor([0.1], dtype=float64)`` holds float64's 0.1, not float32's (a silent wrong
    number before: the list went through the float32 default first)."""
    data = [0.1, -0.7, 1e-300, 3.3]
    for lib in (tg, torch):
        base = lib.zeros(1, dtype=lib.float64)
        make = {"tensor": lib.tensor, "as_tensor": lib.as_tensor,
                "Tensor.new_tensor": base.new_tensor}[maker]
        t = make(data, dtype=lib.float64)
        assert np.asarray(t.tolist()).tolist() == data


@pytest.mark.parametrize("exponent", [2, 3, -1, -2, 0.5, 4])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_powers_are_torchs_to_the_last_bit(exponent, dtype):
    """PyTorch multiplies for ``x ** 3`` and ``x ** -2`` (not ``pow``): the same bits."""
    x = np.linspace(0.1, 3.1, 257).astype(dtype)
    ours = (tg.from_numpy(x.copy()) ** exponent).numpy()
    theirs = (torch.from_numpy(x.copy()) ** exponent).numpy()
    if exponent in (2, 3, -1, -2):
        np.testing.assert_array_equal(ours, theirs)
    else:       # other exponents: pow (NumPy's and PyTorch's SIMD one may differ in the last bit)
        np.testing.assert_allclose(ours, theirs, rtol=4e-7 if dtype == "float32" else 1e-15)
