"""``torch.amp`` as a CPU-only torch build has it: ``autocast`` and ``GradScaler``.

* ``autocast("cuda")`` warns that CUDA is not available and disables itself, as torch;
  ``autocast("cpu", dtype=torch.float32)`` (or any dtype other than float16/bfloat16)
  warns and disables itself, as torch. An *enabled* CPU autocast (its default dtype
  bfloat16, or float16) would cast the inputs of torch's CPU autocast op lists (matmul,
  linear, conv, ... to the lower precision; others to float32): tracegrad has no bfloat16
  and does not implement those casts, so it raises ``NotImplementedError`` rather than
  run in float32 silently. ``enabled=False`` is always accepted.
* ``GradScaler("cpu")`` is torch's scaler (scale, unscale_, step skipping on inf/nan,
  update's growth and backoff, state_dict); ``GradScaler("cuda")`` (the default) warns and
  disables itself, as torch on a CPU-only machine: ``scale`` returns its input, ``step``
  calls ``optimizer.step``, ``update`` does nothing, ``get_scale`` is 1.0.
"""
from __future__ import annotations

import functools
import types
import warnings
from collections import abc, defaultdict
from enum import Enum

import numpy as np

from . import grad_mode
from .device import cuda as _cuda
from .device import device as _device
from .tensor import Tensor

__all__ = ["autocast", "GradScaler", "is_autocast_available", "is_autocast_enabled",
           "OptState"]

_NO_LOW_PRECISION = (
    "tracegrad does not implement CPU autocast: torch's CPU autocast casts the inputs of "
    "matmul, linear, conv and its other lower-precision ops to {dtype} (and others to "
    "float32){extra}; tracegrad would run them in float32 and give other numbers. Use "
    "enabled=False, or cast the model and inputs explicitly.")


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast is defined for ``device_type`` (torch: cpu and cuda are, here too;
    whether it can be *enabled* is another matter)."""
    return device_type in ("cpu", "cuda")


def is_autocast_enabled(device_type=None) -> bool:
    """Autocast is never enabled in tracegrad (see the module's docstring)."""
    if device_type is not None:
        _device(device_type)        # torch's error for an unknown device type
    return False


class autocast:  # noqa: N801  (torch's name)
    """``torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)``."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        _device(device_type)
        self.device = device_type
        self._cache_enabled = True if cache_enabled is None else cache_enabled
        if device_type == "cuda":
            self.fast_dtype = np.dtype(np.float16) if dtype is None else dtype
        elif device_type == "cpu":
            self.fast_dtype = dtype        # None: bfloat16, which tracegrad lacks
        else:
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        if dtype is not None:
            self.fast_dtype = dtype
        self._enabled = enabled
        if device_type == "cuda":
            if enabled and not _cuda.is_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                              "autocast.", stacklevel=2)
                self._enabled = False
        elif device_type == "cpu" and enabled:
            if dtype is not None and np.dtype(dtype) != np.dtype(np.float16):
                warnings.warn("In CPU autocast, but the target dtype is not supported. "
                              "Disabling autocast.\nCPU Autocast only supports dtypes of "
                              "torch.bfloat16, torch.float16 currently.", stacklevel=2)
                self._enabled = False
            elif dtype is None:
                raise NotImplementedError(_NO_LOW_PRECISION.format(
                    dtype="bfloat16", extra=" (its default dtype; tracegrad has no bfloat16 "
                    "dtype)"))
            else:
                raise NotImplementedError(_NO_LOW_PRECISION.format(dtype="float16", extra=""))

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast


class _CudaAutocast(autocast):
    """``torch.cuda.amp.autocast``: deprecated, then ``autocast("cuda")``."""

    def __init__(self, enabled=True, dtype=np.float16, cache_enabled=True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


# -- GradScaler ------------------------------------------------------------------------------
class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _full(value, dtype):
    return Tensor._plain(np.full((), value, dtype=dtype))


class GradScaler:
    """``torch.amp.GradScaler(device="cuda", init_scale=2.**16, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True)``."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._device == "cuda":
            if enabled and not _cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not "
                              "available.  Disabling.", stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) "
               "earlier in the iteration.")
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self):
        self._scale = _full(self._init_scale, np.float32)
        self._growth_tracker = _full(self._init_growth_tracker, np.int32)

    def scale(self, outputs):
        """``outputs`` (a tensor, or nested lists/tuples/iterables of them) times the
        scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker()
            return outputs * self._scale

        def apply_scale(val):
            if isinstance(val, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker()
                return val * self._scale
            if isinstance(val, abc.Iterable):
                iterable = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(iterable)
                return iterable
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        inv = np.float32(inv_scale._data)
        found = False
        any_grad = False
        with grad_mode.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(f"expected param to be torch.Tensor, got "
                                             f"{type(param).__name__}")
                    g = param.grad
                    if g is None:
                        continue
                    any_grad = True
                    if not allow_fp16 and g.dtype == np.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    data = g._data
                    if not np.isfinite(data).all():
                        found = True
                    if inv != 1.0:
                        data *= data.dtype.type(inv)
                        g._vc.v += 1
        if not any_grad:
            return {}
        if found:
            found_inf._data[...] = 1.0
        return {_device("cpu"): found_inf}

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale, in place."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the "
                               "last update().")
        elif optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = _full(np.float32(1.0 / np.float64(self._scale._data)), np.float32)
        found_inf = _full(0.0, np.float32)
        optimizer_state["found_inf_per_device"] = self._unscale_grads_(
            optimizer, inv_scale, found_inf, False)
        optimizer_state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        retval = None
        if not sum(v.item() for v in optimizer_state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        return retval

    def step(self, optimizer, *args, **kwargs):
        """Unscale (if not done) and call ``optimizer.step`` unless a gradient was not
        finite."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(optimizer_state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, optimizer_state, *args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Back off the scale after a skipped step, grow it after ``growth_interval``
        steps in a row that were not (or set it to ``new_scale``)."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale._data[...] = new_scale
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or "
                          "torch.FloatTensor with requires_grad=False.")
                if not isinstance(new_scale, Tensor) or new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1:
                    raise AssertionError(reason)
                if new_scale.requires_grad is True:
                    raise AssertionError(reason)
                self._scale._data[...] = np.asarray(new_scale._data).reshape(())
        else:
            found_infs = [found_inf for state in self._per_optimizer_states.values()
                          for found_inf in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found = np.float32(sum(float(f._data) for f in found_infs))
            scale = _scale._data
            tracker = _growth_tracker._data
            if found:
                scale[...] = np.float32(np.float64(scale) * self._backoff_factor)
                tracker[...] = 0
            else:
                successful = int(tracker) + 1
                if successful == self._growth_interval:
                    grown = np.float32(np.float64(scale) * self._growth_factor)
                    if np.isfinite(grown):
                        scale[...] = grown
                    tracker[...] = 0
                else:
                    tracker[...] = successful
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale._data)
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return (self._init_growth_tracker if self._growth_tracker is None
                    else int(self._growth_tracker._data))
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor,
                    "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale._data[...] = state_dict["scale"]
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker._data[...] = state_dict["_growth_tracker"]

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the "
                                     "beginning of an iteration, or at the end after "
                                     "scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)


class _CudaGradScaler(GradScaler):
    """``torch.cuda.amp.GradScaler``: deprecated, then ``GradScaler("cuda")``."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        # the "CUDA is not available" warning names the user's line, as torch's does
        self._device = "cuda"
        self._enabled = False
        if enabled:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)


_CudaGradScaler.__name__ = _CudaGradScaler.__qualname__ = "GradScaler"
_CudaAutocast.__name__ = _CudaAutocast.__qualname__ = "autocast"

# torch.cuda.amp (a CPU-only build's: CUDA is not available)
cuda_amp = types.ModuleType("tracegrad.cuda.amp", "torch.cuda.amp: deprecated names of "
                            "torch.amp's, for CUDA (not available here).")
cuda_amp.autocast = _CudaAutocast
cuda_amp.GradScaler = _CudaGradScaler
cuda_amp.amp_definitely_not_available = lambda: True
_cuda.amp = cuda_amp
