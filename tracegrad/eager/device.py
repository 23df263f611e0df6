"""Devices for the eager API: ``tg.device``, ``tg.cuda``, ``tg.backends``, ``tg.accelerator``.

Eager tensors are NumPy arrays, so the CPU is the one device. The names answer as a
CPU-only PyTorch build answers (``cuda.is_available()`` is False, ``device("cuda")`` can be
made but not used), and asking for an accelerator raises PyTorch's error, followed by where
tracegrad runs on one: the functional API compiled with ``backend="jax"``.
"""
from __future__ import annotations

import types
from typing import Any

_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
          "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")

ACCELERATORS = ("tracegrad's eager tensors are NumPy arrays on the CPU; to run on a GPU or "
                "TPU, write the step as a function and compile it with the JAX backend: "
                "tg.jit(step, backend=\"jax\"); docs/pytorch.md")


class device:  # noqa: N801  (PyTorch's name)
    """``tg.device("cpu")``, ``tg.device("cuda:0")``, ``tg.device("cuda", 1)``: where a tensor
    lives. Any of PyTorch's device types can be named; only ``"cpu"`` can hold tensors."""

    __slots__ = ("type", "index")

    def __init__(self, type: str | device, index: int | None = None) -> None:  # noqa: A002
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index  # noqa: A001
        if isinstance(type, int) and not isinstance(type, bool):
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got "
                            f"({_typename(type)})")
        name, _, rest = type.partition(":")
        if name not in _TYPES:
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of "
                               f"device string: {type}")
        if rest:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was "
                                   f"passed explicitly: {type}")
            if not rest.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(rest)
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        object.__setattr__(self, "type", name)
        object.__setattr__(self, "index", index)

    def __setattr__(self, name, value):
        raise AttributeError(f"attribute '{name}' of 'torch.device' objects is not writable")

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if not isinstance(other, device):
            return NotImplemented
        return (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash(("device", self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))


def _typename(x):
    return type(x).__name__


CPU = device("cpu")
_default = [CPU]


def unavailable(dev: device) -> Exception:
    """PyTorch's error for using ``dev`` in a CPU-only build, with where to go instead."""
    if dev.type == "cuda":
        return AssertionError("Torch not compiled with CUDA enabled. " + ACCELERATORS)
    if dev.type == "mps":
        return RuntimeError("PyTorch is not linked with support for mps devices. " + ACCELERATORS)
    if dev.type == "meta":
        return RuntimeError("tracegrad has no meta tensors (tensors without data); "
                            + ACCELERATORS)
    return RuntimeError(f"PyTorch is not linked with support for {dev.type} devices. "
                        + ACCELERATORS)


def is_device(x: Any) -> bool:
    """Whether ``x`` names a device (a ``tg.device``, or a string such as ``"cpu"``)."""
    if isinstance(x, device):
        return True
    if isinstance(x, str):
        return x.partition(":")[0] in _TYPES
    return False


def resolve(dev: Any) -> device:
    """The device a ``device=`` argument names (None: the default device), checked: any
    but the CPU raises PyTorch's error."""
    if dev is None:
        return _default[0]
    d = dev if isinstance(dev, device) else device(dev)
    if d.type != "cpu":
        raise unavailable(d)
    return CPU


def set_default_device(dev: Any) -> None:
    """``tg.set_default_device("cpu")`` (or None); an accelerator raises PyTorch's error."""
    _default[0] = resolve(dev)


def get_default_device() -> device:
    """The device new tensors are made on: always the CPU."""
    return _default[0]


# -- torch.cuda, torch.backends, torch.accelerator ---------------------------------------------
def _no_cuda(*args, **kwargs):
    raise unavailable(device("cuda"))


cuda = types.ModuleType("tracegrad.cuda", "CUDA as a CPU-only PyTorch build answers: no devices.")
cuda.is_available = lambda: False
cuda.device_count = lambda: 0
cuda.is_initialized = lambda: False
cuda.manual_seed = cuda.manual_seed_all = lambda seed: None     # as in torch: silently ignored
cuda.synchronize = cuda.current_device = cuda.get_device_name = cuda.set_device = _no_cuda
cuda.get_device_properties = cuda.get_device_capability = cuda.init = _no_cuda
cuda.empty_cache = lambda: None


def _flags(name, doc, **values):
    m = types.ModuleType(name, doc)
    for k, v in values.items():
        setattr(m, k, v)
    return m


backends = types.ModuleType("tracegrad.backends", "Backend switches: accepted, no effect here.")
backends.cudnn = _flags("tracegrad.backends.cudnn", "cuDNN flags (settable; no cuDNN here).",
                        enabled=True, benchmark=False, deterministic=False, allow_tf32=True,
                        is_available=lambda: False, version=lambda: None)
backends.mps = _flags("tracegrad.backends.mps", "Apple's Metal: not available.",
                      is_available=lambda: False, is_built=lambda: False)
backends.cuda = _flags("tracegrad.backends.cuda", "CUDA switches (no CUDA here).",
                       is_built=lambda: False,
                       matmul=_flags("tracegrad.backends.cuda.matmul", "", allow_tf32=False))
backends.openmp = _flags("tracegrad.backends.openmp", "", is_available=lambda: False)
backends.mkldnn = _flags("tracegrad.backends.mkldnn", "", is_available=lambda: False,
                         enabled=True)


def _no_accelerator(*args, **kwargs):
    raise RuntimeError("Cannot access accelerator device when none is available. " + ACCELERATORS)


accelerator = types.ModuleType("tracegrad.accelerator", "No accelerator: eager tensors are on the CPU.")
accelerator.is_available = lambda: False
accelerator.current_accelerator = lambda check_available=False: None
accelerator.device_count = lambda: 0
accelerator.current_device_index = accelerator.set_device_index = _no_accelerator
accelerator.synchronize = _no_accelerator


def _register():
    """``import tracegrad.backends.cudnn`` and ``from tracegrad.cuda import ...`` work as
    with torch."""
    import sys
    for m in (cuda, backends, backends.cudnn, backends.mps, backends.cuda, backends.openmp,
              backends.mkldnn, accelerator):
        sys.modules.setdefault(m.__name__, m)


_register()
