"""The rest of ``torch``'s top-level names that programs reach for: the constants (``pi``,
``e``, ``inf``, ``nan``, ``newaxis``), the process settings (threads, deterministic
algorithms, matmul precision, anomaly mode, warn-always, denormals), the in-place unary
functions (``torch.exp_(t)``, ``torch.relu_(t)``, ...), ``isin``, ``asarray``,
``typename``, ``get_device``, ``is_nonzero``, ``is_same_size``, the conjugate and negative
bits (``is_conj``, ``resolve_conj``, ...), ``default_generator`` and ``dtype``.

The settings are PyTorch's process-wide switches. tracegrad runs NumPy on the CPU, whose
results do not depend on them: each is recorded (``get_*`` gives back what ``set_*`` was
given, as PyTorch's do) and changes nothing else. ``set_num_threads`` does not resize
NumPy's BLAS pool (its size is fixed by ``OMP_NUM_THREADS``/``OPENBLAS_NUM_THREADS`` when
NumPy loads); ``set_flush_denormal`` returns False, PyTorch's answer where the CPU cannot
flush denormals, because NumPy does not.
"""
from __future__ import annotations

import math
import os
import threading

import numpy as np

from . import anomaly
from .arithmetic import _err
from .creation import as_tensor
from .memory_format import MEMORY_FORMATS
from .random import default_generator  # noqa: F401  (torch.default_generator)
from .tensor import Tensor
from .tensor_base import TensorBase, _scalar_name

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None
dtype = np.dtype        # torch.dtype: isinstance(tg.float32, tg.dtype) holds


# -- process settings ---------------------------------------------------------------------------
class _Settings:
    """PyTorch's process-wide settings, recorded (see the module's notes)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.threads = max(1, (os.cpu_count() or 2) // 2)
        self.interop_threads = self.threads
        self.deterministic = False
        self.warn_only = False
        self.matmul_precision = "highest"
        self.warn_always = False


_SETTINGS = _Settings()


def set_num_threads(int):  # noqa: A002  (torch's parameter name)
    if int <= 0:
        raise _err("Number of threads must be positive")
    with _SETTINGS.lock:
        _SETTINGS.threads = int


def get_num_threads():
    return _SETTINGS.threads


def set_num_interop_threads(int):  # noqa: A002
    if int <= 0:
        raise _err("Number of threads must be positive")
    with _SETTINGS.lock:
        _SETTINGS.interop_threads = int


def get_num_interop_threads():
    return _SETTINGS.interop_threads


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Recorded: tracegrad's CPU kernels are deterministic whatever the mode."""
    with _SETTINGS.lock:
        _SETTINGS.deterministic, _SETTINGS.warn_only = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _SETTINGS.deterministic


def is_deterministic_algorithms_warn_only_enabled():
    return _SETTINGS.warn_only


def set_deterministic_debug_mode(debug_mode):
    modes = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in modes:
            raise _err(f"invalid value of debug_mode, expected one of `default`, `warn`, "
                       f"`error`, but got {debug_mode}")
        debug_mode = modes[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise _err(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _SETTINGS.deterministic:
        return 0
    return 1 if _SETTINGS.warn_only else 2


def set_float32_matmul_precision(precision):
    if precision not in ("highest", "high", "medium"):
        raise _err(f"Invalid precision: {precision}")
    with _SETTINGS.lock:
        _SETTINGS.matmul_precision = precision


def get_float32_matmul_precision():
    return _SETTINGS.matmul_precision


def set_warn_always(b):
    with _SETTINGS.lock:
        _SETTINGS.warn_always = bool(b)


def is_warn_always_enabled():
    return _SETTINGS.warn_always


def set_flush_denormal(mode):
    """False: NumPy keeps denormal numbers (PyTorch's answer on a CPU that cannot flush)."""
    return False


def is_anomaly_enabled():
    return anomaly.is_anomaly_enabled()


def is_anomaly_check_nan_enabled():
    return anomaly.is_anomaly_enabled()


def set_anomaly_enabled(enabled, check_nan=True):
    anomaly.set_detect_anomaly(enabled, check_nan)


# -- tensors --------------------------------------------------------------------------------------
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of ``elements`` is among ``test_elements`` (either may be a number)."""
    if not isinstance(elements, TensorBase) and not isinstance(test_elements, TensorBase):
        raise TypeError("isin() received an invalid combination of arguments: at least one "
                        "of elements and test_elements must be a Tensor")
    a = elements._concrete("isin") if isinstance(elements, TensorBase) else \
        np.asarray(elements)
    b = test_elements._concrete("isin") if isinstance(test_elements, TensorBase) else \
        np.asarray(test_elements)
    return Tensor._plain(np.isin(a, b, assume_unique=assume_unique, invert=invert))


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """A tensor of ``obj``: a tensor itself (or a converted copy), a NumPy array's memory
    shared when ``copy`` is not True and the dtype fits, other data copied in."""
    if isinstance(obj, TensorBase):
        out = obj if dtype is None else obj.to(dtype)
        if copy:
            out = out.clone()
        if requires_grad and not out.requires_grad:
            out = out.detach().requires_grad_(True)
        return out
    if copy is False and not isinstance(obj, np.ndarray):
        raise ValueError("can't alias a Python object without copying")
    if isinstance(obj, np.ndarray) and not copy:
        out = as_tensor(obj, dtype=dtype, device=device)
    else:
        out = as_tensor(np.array(obj, copy=True) if isinstance(obj, np.ndarray) else obj,
                        dtype=dtype, device=device)
    if requires_grad:
        out.requires_grad_(True)
    return out


def typename(obj):
    """``torch.FloatTensor`` for a tensor, else the object's qualified class name."""
    if isinstance(obj, TensorBase):
        return f"torch.{_scalar_name(obj.dtype)}Tensor"
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in (None, "builtins") else f"{module}.{name}"


def get_device(input):  # noqa: A002
    """-1: every tensor is on the CPU."""
    return -1


def _tensor_method(name):
    def fn(input, *args, **kwargs):  # noqa: A002
        if not isinstance(input, TensorBase):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}(t, ...)`` is ``t.{name}(...)``."
    return fn


_INPLACE = ("abs_", "acos_", "arccos_", "arcsin_", "arctan_", "asin_", "atan_", "ceil_",
            "clip_", "cos_", "cosh_", "detach_", "exp_", "expm1_", "fill_", "floor_",
            "log10_", "log1p_", "log2_", "log_", "neg_", "negative_", "reciprocal_", "relu_",
            "round_", "rsqrt_", "sigmoid_", "sin_", "sinh_", "sqrt_", "square_", "tan_",
            "tanh_", "trunc_", "zero_")


FUNCTIONS = {f.__name__: f for f in (
    set_num_threads, get_num_threads, set_num_interop_threads, get_num_interop_threads,
    use_deterministic_algorithms, are_deterministic_algorithms_enabled,
    is_deterministic_algorithms_warn_only_enabled, set_deterministic_debug_mode,
    get_deterministic_debug_mode, set_float32_matmul_precision, get_float32_matmul_precision,
    set_warn_always, is_warn_always_enabled, set_flush_denormal, is_anomaly_enabled,
    is_anomaly_check_nan_enabled, set_anomaly_enabled, isin, asarray, typename, get_device)}
# torch.f(t, ...) is t.f(...) (tensor_misc.py holds is_nonzero, is_same_size, the
# conjugate and negative bits; the rest are the in-place unary methods)
FUNCTIONS.update({name: _tensor_method(name) for name in _INPLACE + (
    "is_nonzero", "is_same_size", "is_conj", "is_neg", "resolve_conj", "resolve_neg",
    "conj_physical")})
FUNCTIONS.update(pi=pi, e=e, inf=inf, nan=nan, newaxis=newaxis, dtype=dtype,
                 default_generator=default_generator)
FUNCTIONS.update(MEMORY_FORMATS)        # torch.channels_last & co. (memory_format.py)
