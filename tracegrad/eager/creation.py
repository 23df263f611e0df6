"""Making tensors: ``tg.tensor``, ``tg.ones``, ``tg.rand``, ... and the default dtype."""
from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from . import memory_format as _memory_format
from .device import resolve as _device
from .random import Generator, default_generator  # noqa: F401
from .random import generator_of as _generator_of
from .shape_extras import legacy_new
from .tensor import Tensor, _default_float, as_array, default_dtype, is_floating

float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
float16 = np.dtype(np.float16)
int64 = np.dtype(np.int64)
int32 = np.dtype(np.int32)
int16 = np.dtype(np.int16)
int8 = np.dtype(np.int8)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)
uint8 = np.dtype(np.uint8)
bool_ = np.dtype(np.bool_)

def manual_seed(seed: int) -> Generator:
    """Seed the generator behind ``rand``, ``randn``, dropout, shuffling and the ``nn``
    initialisers; it draws PyTorch's numbers (``eager/random.py``). Returns it."""
    return default_generator.manual_seed(seed)

generator = _generator_of     # the name nn and ops use


def set_default_dtype(dtype: DTypeLike) -> None:
    """Make ``dtype`` (a floating-point dtype) the one Python floats and ``rand`` & co. get,
    in the calling thread (torch's switch is process-wide; tracegrad's is per thread, so that
    a library setting it cannot change another thread's results: a new thread starts at
    float32)."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"only floating-point types are supported as the default type, got "
                        f"{dtype.name}")
    _default_float.set(dtype)


def get_default_dtype() -> np.dtype:
    """The floating-point dtype Python floats and ``rand`` & co. get (float32 unless
    changed in this thread)."""
    return default_dtype()


def tensor(data: Any, dtype: DTypeLike = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of ``data``.

    Args:
        data: a list (nested), a number, a NumPy array or a tensor.
        dtype: the dtype; by default PyTorch's rules: Python floats take the default
            float dtype (``get_default_dtype``), integers int64, NumPy arrays keep theirs.
        device: accepted for PyTorch compatibility; tensors live on the CPU.
        requires_grad: record operations on it for ``backward``.

    Returns:
        The new tensor.
    """
    _device(device)
    t = Tensor._plain(as_array(data, dtype))
    if requires_grad:
        t.requires_grad = True
    return t


def as_tensor(data: Any, dtype: DTypeLike = None, device: Any = None) -> Tensor:
    """``data`` as a tensor, sharing memory with a tensor or NumPy array of that dtype."""
    _device(device)
    if isinstance(data, Tensor) and (dtype is None or data.dtype == np.dtype(dtype)):
        return data
    if isinstance(data, np.ndarray) and (dtype is None or data.dtype == np.dtype(dtype)):
        return Tensor._plain(data)
    return tensor(data, dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor sharing ``array``'s memory."""
    return Tensor._plain(np.asarray(array))


def _shape(size, size_kw=None):
    """The shape from ``zeros(2, 3)``, ``zeros((2, 3))`` or ``zeros(size=(2, 3))``."""
    if size_kw:
        if "size" not in size_kw or len(size_kw) > 1 or size:
            bad = next((k for k in size_kw if k != "size"), "size")
            raise TypeError(f"got an unexpected keyword argument '{bad}'" if bad != "size" else
                            "got multiple values for argument 'size'")
        size = (size_kw["size"],)
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def _finish(arr, requires_grad):
    t = Tensor._plain(arr)
    if requires_grad:
        t.requires_grad = True
    return t


def _dtype(dtype):
    return default_dtype() if dtype is None else np.dtype(dtype)


def zeros(*size: int | Sequence[int], dtype: DTypeLike = None, requires_grad: bool = False,
          device: Any = None, **size_kw: Any) -> Tensor:
    """A tensor of zeros of shape ``size`` (``zeros(2, 3)`` or ``zeros((2, 3))``)."""
    _device(device)
    return _finish(np.zeros(_shape(size, size_kw), _dtype(dtype)), requires_grad)


def ones(*size: int | Sequence[int], dtype: DTypeLike = None, requires_grad: bool = False,
         device: Any = None, **size_kw: Any) -> Tensor:
    """A tensor of ones of shape ``size`` (``ones(2, 3)`` or ``ones((2, 3))``)."""
    _device(device)
    return _finish(np.ones(_shape(size, size_kw), _dtype(dtype)), requires_grad)


def empty(*size: int | Sequence[int], dtype: DTypeLike = None, requires_grad: bool = False,
          device: Any = None, memory_format: Any = None, **size_kw: Any) -> Tensor:
    """A tensor of shape ``size`` (zero-filled here; C order whatever ``memory_format``)."""
    _device(device)
    _memory_format.check(memory_format, "empty")
    return _finish(np.zeros(_shape(size, size_kw), _dtype(dtype)), requires_grad)


def full(size: int | Sequence[int], fill_value: float | bool, dtype: DTypeLike = None,
         requires_grad: bool = False, device: Any = None) -> Tensor:
    """A tensor of shape ``size`` filled with ``fill_value`` (its dtype by PyTorch's rules)."""
    _device(device)
    if dtype is None:
        dtype = default_dtype() if isinstance(fill_value, float) else np.result_type(fill_value)
        if np.dtype(dtype).kind in "iu":
            dtype = np.int64
    return _finish(np.full(_shape((size,)), fill_value, dtype), requires_grad)


def eye(n: int, m: int | None = None, dtype: DTypeLike = None, requires_grad: bool = False,
        device: Any = None) -> Tensor:
    """An ``n`` by ``m`` (default ``n``) identity matrix."""
    _device(device)
    return _finish(np.eye(n, m, dtype=_dtype(dtype)), requires_grad)


def rand(*size: int | Sequence[int], dtype: DTypeLike = None, requires_grad: bool = False,
         device: Any = None, generator: Any = None, **size_kw: Any) -> Tensor:
    """Uniform samples in [0, 1) of shape ``size``: PyTorch's numbers for the same seed."""
    _device(device)
    arr = _generator_of(generator).uniform(_shape(size, size_kw), _float_dtype(dtype, "rand"))
    return _finish(arr, requires_grad)


def randn(*size: int | Sequence[int], dtype: DTypeLike = None, requires_grad: bool = False,
          device: Any = None, generator: Any = None, **size_kw: Any) -> Tensor:
    """Standard normal samples of shape ``size``: PyTorch's numbers for the same seed."""
    _device(device)
    arr = _generator_of(generator).normal(_shape(size, size_kw), _float_dtype(dtype, "randn"))
    return _finish(arr, requires_grad)


def randint(low: int, high: Any = None, size: Any = None, dtype: DTypeLike = None,
            requires_grad: bool = False, device: Any = None, generator: Any = None) -> Tensor:
    """Integers in [``low``, ``high``) of shape ``size``, as PyTorch's: ``randint(high,
    size)`` counts from 0 (``tg.randint(5, (2,))``), ``randint(low, high, size)``."""
    _device(device)
    if size is None and isinstance(high, (tuple, list)):   # Size is a tuple
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint() missing 1 required positional arguments: \"size\"")
    shape = _shape((size,)) if not isinstance(size, int) else (int(size),)
    arr = _generator_of(generator).integers(low, high, shape)
    return _finish(arr.astype(np.int64 if dtype is None else dtype), requires_grad)


def randperm(n: int, dtype: DTypeLike = None, device: Any = None, generator: Any = None,
             requires_grad: bool = False) -> Tensor:
    """A random permutation of ``0 .. n - 1`` (int64), PyTorch's for the same seed."""
    _device(device)
    perm = _generator_of(generator).permutation(int(n))
    return _finish(perm.astype(np.int64 if dtype is None else dtype), requires_grad)


def _float_dtype(dtype, what):
    dt = _dtype(dtype)
    if dt.kind not in "fc":
        raise RuntimeError(f"\"{what}\" not implemented for '{_torch_name(dt)}'")
    return dt


def _torch_name(dt):
    """PyTorch's scalar type name of ``dt`` in its error messages (``Long``, ``UInt16``)."""
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
            "bool": "Bool"}.get(np.dtype(dt).name, np.dtype(dt).name)


def _like(fn: Callable[..., np.ndarray]) -> Callable[..., Tensor]:
    def like(t: Tensor | ArrayLike, dtype: DTypeLike = None, requires_grad: bool = False,
             device: Any = None, layout: Any = None, memory_format: Any = None) -> Tensor:
        _device(device)
        _memory_format.check(memory_format, like.__name__)
        shape = tuple(t.shape) if isinstance(t, Tensor) else np.shape(t)
        dt = np.dtype(dtype) if dtype is not None else (
            t.dtype if isinstance(t, Tensor) else np.asarray(t).dtype)
        return _finish(fn(shape, dt), requires_grad)
    like.__name__ = fn.__name__ + "_like"
    return like


zeros_like = _like(lambda s, d: np.zeros(s, d))
ones_like = _like(lambda s, d: np.ones(s, d))
empty_like = _like(lambda s, d: np.zeros(s, d))
rand_like = _like(lambda s, d: default_generator.uniform(s, _float_dtype(d, "rand_like")))
randn_like = _like(lambda s, d: default_generator.normal(s, _float_dtype(d, "randn_like")))
zeros_like.__name__, ones_like.__name__ = "zeros_like", "ones_like"
rand_like.__name__, randn_like.__name__, empty_like.__name__ = "rand_like", "randn_like", "empty_like"


def full_like(t: Tensor, fill_value: float | bool, dtype: DTypeLike = None, requires_grad: bool = False,
              device: Any = None) -> Tensor:
    """A tensor shaped like ``t``, filled with ``fill_value``."""
    _device(device)
    dt = np.dtype(dtype) if dtype is not None else t.dtype
    return _finish(np.full(tuple(t.shape), fill_value, dt), requires_grad)


def _range_bounds(start, end, step):
    """``(start, end)`` of ``arange``/``range`` (one argument: the end, from 0), with
    PyTorch's checks."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not all(np.isfinite(float(v)) for v in (start, end)):
        raise RuntimeError(f"unsupported range: {float(start):g} -> {float(end):g}")
    if step > 0 and end < start or step < 0 and end > start:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    return start, end


def arange(start: float, end: float | None = None, step: float = 1, dtype: DTypeLike = None,
           requires_grad: bool = False, device: Any = None) -> Tensor:
    """``start, start + step, ...`` up to ``end`` (excluded); ``arange(end)`` counts from 0."""
    _device(device)
    start, end = _range_bounds(start, end, step)
    arr = np.arange(start, end, step)
    if dtype is not None:
        arr = arr.astype(dtype)
    elif arr.dtype == np.float64:
        arr = arr.astype(default_dtype())
    elif arr.dtype.kind in "iu":
        arr = arr.astype(np.int64)
    return _finish(arr, requires_grad)


def linspace(start: float, end: float, steps: int, dtype: DTypeLike = None, requires_grad: bool = False,
             device: Any = None) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` (both included)."""
    _device(device)
    return _finish(np.linspace(start, end, int(steps), dtype=_dtype(dtype)), requires_grad)


def is_tensor(obj: object) -> bool:
    """Whether ``obj`` is a ``tg.Tensor``."""
    return isinstance(obj, Tensor)


def is_floating_point(t: Tensor) -> bool:
    """Whether ``t`` has a floating-point dtype."""
    return is_floating(t.dtype)


# -- legacy constructors: tg.FloatTensor([1, 2]), tg.LongTensor(2, 3) --------------------------
class _LegacyType(type):
    """The type of ``tg.FloatTensor`` & co.: called with data, a tensor of that dtype; with
    sizes (ints or a ``Size``), a zero-filled tensor of that shape; ``isinstance(t,
    tg.FloatTensor)`` tests the dtype, as in PyTorch."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls._dtype

    def __call__(cls, *args, device=None):
        _device(device)
        return legacy_new(cls._dtype, args, Tensor._plain)


def _legacy(name, dtype):
    return _LegacyType(name, (), {"_dtype": np.dtype(dtype), "__module__": "tracegrad",
                                  "__doc__": f"``tg.{name}(data)`` or ``tg.{name}(*sizes)``: "
                                             f"a {np.dtype(dtype).name} tensor."})


FloatTensor = _legacy("FloatTensor", np.float32)
DoubleTensor = _legacy("DoubleTensor", np.float64)
HalfTensor = _legacy("HalfTensor", np.float16)
LongTensor = _legacy("LongTensor", np.int64)
IntTensor = _legacy("IntTensor", np.int32)
ShortTensor = _legacy("ShortTensor", np.int16)
CharTensor = _legacy("CharTensor", np.int8)
ByteTensor = _legacy("ByteTensor", np.uint8)
BoolTensor = _legacy("BoolTensor", np.bool_)


def set_default_tensor_type(t: Any) -> None:
    """The legacy form of ``set_default_dtype``: ``set_default_tensor_type(tg.DoubleTensor)``
    or ``set_default_tensor_type("torch.DoubleTensor")``."""
    if isinstance(t, str):
        from .promotion import dtype_of_type_name
        dtype = dtype_of_type_name(t)
    else:
        dtype = getattr(t, "_dtype", None)
        if dtype is None:
            raise TypeError(f"invalid type object: {t!r}")
    set_default_dtype(dtype)


def finfo(dtype: DTypeLike = None) -> np.finfo:
    """Machine limits of a floating dtype (``eps``, ``max``, ``min``, ``tiny``, ...); the
    default float dtype when none is given."""
    return np.finfo(default_dtype() if dtype is None else dtype)


def iinfo(dtype: DTypeLike) -> np.iinfo:
    """Limits of an integer dtype (``min``, ``max``, ``bits``)."""
    return np.iinfo(dtype)


# -- more of torch's factories: logspace, range, scalar_tensor, empty_strided, windows --------
def logspace(start: float, end: float, steps: int, base: float = 10.0, dtype: DTypeLike = None,
             requires_grad: bool = False, device: Any = None, layout: Any = None) -> Tensor:
    """``steps`` values from ``base ** start`` to ``base ** end``, evenly spaced in the
    exponent (computed in double, then rounded to ``dtype``)."""
    _device(device)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    arr = np.logspace(float(start), float(end), int(steps), base=float(base))
    return _finish(arr.astype(_dtype(dtype)), requires_grad)


def range_(start: float = 0, end: float | None = None, step: float = 1,
          dtype: DTypeLike = None, requires_grad: bool = False, device: Any = None,
          layout: Any = None) -> Tensor:
    """torch's deprecated ``range``: ``start, start + step, ...`` up to ``end``
    *included*, in the default float dtype unless ``dtype`` is given (a UserWarning, as
    PyTorch's)."""
    import warnings
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    _device(device)
    start, end = _range_bounds(start, end, step)
    n = int(np.floor((float(end) - float(start)) / float(step))) + 1
    dt = _dtype(dtype)
    if dt.kind in "iu":
        arr = (int(start) + np.arange(n, dtype=np.int64) * int(step)).astype(dt)
    else:
        arr = (float(start) + np.arange(n, dtype=np.float64) * float(step)).astype(dt)
    return _finish(arr, requires_grad)


def scalar_tensor(s: Any, dtype: DTypeLike = None, requires_grad: bool = False,
                  device: Any = None, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """A 0-d tensor holding ``s``, in the default float dtype unless ``dtype`` is given."""
    _device(device)
    if isinstance(s, Tensor):
        s = s.item()
    if not isinstance(s, (int, float, complex, bool, np.number, np.bool_)):
        raise TypeError(f"scalar_tensor(): argument 's' (position 1) must be Number, not "
                        f"{type(s).__name__}")
    return _finish(np.asarray(s, _dtype(dtype)).copy(), requires_grad)


def empty_strided(size: Sequence[int], stride: Sequence[int], dtype: DTypeLike = None,
                  requires_grad: bool = False, device: Any = None, layout: Any = None,
                  pin_memory: bool = False) -> Tensor:
    """A tensor of shape ``size`` laid out with ``stride`` (in elements) over storage of
    its own (zero-filled here)."""
    from numpy.lib.stride_tricks import as_strided
    _device(device)
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(size)}: "
                           f"{list(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    dt = _dtype(dtype)
    need = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    store = np.zeros(need, dt)
    arr = as_strided(store, size, tuple(s * dt.itemsize for s in stride)) if need else \
        np.zeros(size, dt)
    return _finish(arr, requires_grad)


def _window_length(name, window_length, dtype):
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    dt = _dtype(dtype)
    if dt.kind != "f":
        raise RuntimeError(f"{name} expects floating point dtypes, got: {_torch_name(dt)}")
    return dt


def _window(name, window_length, periodic, dtype, requires_grad, device, make):
    _device(device)
    dt = _window_length(name, window_length, dtype)
    if window_length <= 1:
        return _finish(np.ones(window_length, dt), requires_grad)
    n = window_length + 1 if periodic else window_length
    w = make(np.arange(n, dtype=np.float64), n)[:window_length]
    return _finish(w.astype(dt), requires_grad)


def hann_window(window_length: int, periodic: bool = True, *, dtype: DTypeLike = None,
                layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (N - 1))`` (``N = window_length + 1``
    when ``periodic``, the last point dropped). Computed in double: a float32 window can
    differ from PyTorch's (computed in float32) in the last bit."""
    return _window("hann_window", window_length, periodic, dtype, requires_grad, device,
                   lambda i, n: 0.5 - 0.5 * np.cos(i * (2 * np.pi / (n - 1))))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: DTypeLike = None, layout: Any = None,
                   device: Any = None, requires_grad: bool = False) -> Tensor:
    """The Hamming window ``alpha - beta cos(2 pi n / (N - 1))`` (see ``hann_window``)."""
    return _window("hamming_window", window_length, periodic, dtype, requires_grad, device,
                   lambda i, n: alpha - beta * np.cos(i * (2 * np.pi / (n - 1))))


def blackman_window(window_length: int, periodic: bool = True, *, dtype: DTypeLike = None,
                    layout: Any = None, device: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``
    (see ``hann_window``)."""
    def make(i, n):
        a = i * (np.pi / (n - 1))
        return 0.08 * np.cos(4 * a) - 0.5 * np.cos(2 * a) + 0.42
    return _window("blackman_window", window_length, periodic, dtype, requires_grad, device,
                   make)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: DTypeLike = None,
                    layout: Any = None, device: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """The triangular Bartlett window ``1 - |2 n / (N - 1) - 1|`` (see ``hann_window``)."""
    def make(i, n):
        w = i * (2.0 / (n - 1))
        half = ((n - 1) >> 1) + 1
        w[half:] = 2 - w[half:]
        return w
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad, device,
                   make)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: DTypeLike = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False) -> Tensor:
    """The Kaiser window ``I0(beta sqrt(1 - (2 n / (N - 1) - 1) ** 2)) / I0(beta)`` (see
    ``hann_window``)."""
    def make(i, n):
        alpha = (n - 1) / 2.0
        r = np.clip(1 - ((i - alpha) / alpha) ** 2, 0, None)
        return np.i0(beta * np.sqrt(r)) / np.i0(beta)
    return _window("kaiser_window", window_length, periodic, dtype, requires_grad, device,
                   make)


range_.__name__ = range_.__qualname__ = "range"   # (a def named range would hide the builtin here)
def normal(mean=0.0, std=1.0, size=None, *, generator=None, out=None, dtype=None,
           layout=None, device=None, pin_memory=False, requires_grad=False):
    """Normal samples: ``normal(mean, std)`` with tensors (or one tensor and a float) of
    the broadcast shape (sampling_methods.py's ``normal_of_tensors``); ``normal(mean, std, size)``
    with floats. PyTorch's numbers for the same seed."""
    from .sampling_methods import normal_of_tensors
    from .tensor_base import TensorBase
    if isinstance(mean, TensorBase) or isinstance(std, TensorBase):
        if size is not None:
            raise TypeError("normal() received an invalid combination of arguments: a size "
                            "goes with a float mean and std")
        return normal_of_tensors(mean, std, generator)
    if size is None:
        raise TypeError("normal() received an invalid combination of arguments - got "
                        "(float, float), but expected (float mean, float std, tuple of "
                        "ints size, *, torch.Generator generator, ...)")
    _device(device)
    if std < 0:
        from .arithmetic import _err
        raise _err(f"normal expects std >= 0.0, but found std {std:g}")
    from .random import draw_dtype
    dt = _float_dtype(dtype, "normal")
    shape = _shape((size,)) if not isinstance(size, numbers.Integral) else (int(size),)
    g = _generator_of(generator)
    t = Tensor._plain(g.normal(shape, draw_dtype(dt), float(mean), float(std)).astype(dt))
    if requires_grad:
        t.requires_grad = True
    return t


FACTORIES = {f.__name__: f for f in (normal, logspace, range_, scalar_tensor, empty_strided,
                                     hann_window, hamming_window, blackman_window,
                                     bartlett_window, kaiser_window)}
