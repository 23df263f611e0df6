"""``torch.testing``: ``assert_close`` (torch's default tolerances per dtype and its
messages) and ``make_tensor`` (torch's recipe: ``uniform_`` / ``randint`` on the default
generator)."""
from __future__ import annotations

import collections.abc
import functools
import math
import warnings

import numpy as np

from . import creation, grad_mode
from .tensor import Tensor

__all__ = ["assert_close", "make_tensor"]

_PRECISIONS = {np.dtype(np.float16): (0.001, 1e-5), np.dtype(np.float32): (1.3e-6, 1e-5),
               np.dtype(np.float64): (1e-7, 1e-7), np.dtype(np.complex64): (1.3e-6, 1e-5),
               np.dtype(np.complex128): (1e-7, 1e-7)}
_NUMBER_DTYPES = {bool: np.dtype(bool), int: np.dtype(np.int64), float: np.dtype(np.float64),
                  complex: np.dtype(np.complex128)}


class _Mismatch(Exception):
    def __init__(self, kind, message):
        super().__init__(message)
        self.kind, self.message = kind, message


def _tolerances(*dtypes):
    pairs = [_PRECISIONS.get(np.dtype(d), (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _diff_msg(kind, diff, idx, tol, equality):
    if idx is None:
        msg = f"{kind.title()} difference: {diff}"
    else:
        msg = f"Greatest {kind} difference: {diff} at index {idx}"
    if not equality:
        msg += f" (up to {tol} allowed)"
    return msg + "\n"


def _mismatch_msg(default, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    equality = rtol == 0 and atol == 0
    msg = f"{default} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += f"{extra.strip()}\n"
    msg += _diff_msg("absolute", abs_diff, abs_idx, atol, equality)
    msg += _diff_msg("relative", rel_diff, rel_idx, rtol, equality)
    return msg.strip()


def _scalar_msg(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None,
                         atol, rel_diff, None, rtol)


def _isclose(a, e, rtol, atol, equal_nan):
    """torch.isclose, in the values' dtype."""
    if a.dtype.kind in "biu":
        return a == e
    with np.errstate(invalid="ignore", over="ignore"):
        close = a == e
        if equal_nan:
            close |= np.isnan(a) & np.isnan(e)
        if rtol or atol:
            finite = np.isfinite(a) & np.isfinite(e)
            tol = np.asarray(atol + rtol * np.abs(e))
            close |= finite & (np.abs(a - e) <= tol)
    return close


def _tensor_msg(a, e, matches, rtol, atol):
    n = matches.size
    bad = n - int(matches.sum())
    extra = f"Mismatched elements: {bad} / {n} ({bad / n:.1%})"
    af, ef, mf = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    if af.dtype.kind in "biu":
        af, ef = af.astype(np.int64), ef.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        abs_diff = np.abs(af - ef)
        abs_diff[mf] = 0
        ai = _argmax(abs_diff)
        if abs_diff.dtype.kind in "iu":
            rel_diff = abs_diff.astype(np.float32) / np.abs(ef).astype(np.float32)
        else:
            rel_diff = abs_diff / np.abs(ef)
        rel_diff[mf] = 0
        ri = _argmax(rel_diff)
    return _mismatch_msg("Tensor-likes", extra, abs_diff[ai].item(),
                         _index(np.unravel_index(ai, matches.shape)), atol,
                         rel_diff[ri].item(), _index(np.unravel_index(ri, matches.shape)), rtol)


def _argmax(x):
    """torch.max(x, 0)'s index: a NaN is the maximum (its first)."""
    nan = np.isnan(x) if x.dtype.kind in "fc" else None
    if nan is not None and nan.any():
        return int(np.argmax(nan))
    return int(np.argmax(x))


def _index(idx):
    return tuple(int(i) for i in idx)


def _dtype_name(dt):
    return f"torch.{np.dtype(dt).name}"


def _compare_tensors(a, e, rtol, atol, equal_nan, check_device, check_dtype, check_stride):
    if tuple(a.shape) != tuple(e.shape):
        raise _Mismatch(AssertionError, "The values for attribute 'shape' do not match: "
                        f"torch.Size({list(a.shape)}) != torch.Size({list(e.shape)}).")
    if check_stride and a.stride() != e.stride():
        raise _Mismatch(AssertionError, "The values for attribute 'stride()' do not match: "
                        f"{a.stride()} != {e.stride()}.")
    if check_device and a.device != e.device:
        raise _Mismatch(AssertionError, "The values for attribute 'device' do not match: "
                        f"{a.device} != {e.device}.")
    ad, ed = np.asarray(a.detach().numpy()), np.asarray(e.detach().numpy())
    if check_dtype and ad.dtype != ed.dtype:
        raise _Mismatch(AssertionError, "The values for attribute 'dtype' do not match: "
                        f"{_dtype_name(ad.dtype)} != {_dtype_name(ed.dtype)}.")
    if rtol is None:
        rtol, atol = _tolerances(ad.dtype, ed.dtype)
    if ad.dtype != ed.dtype:
        common = np.promote_types(ad.dtype, ed.dtype)
        ad, ed = ad.astype(common), ed.astype(common)
    matches = _isclose(ad, ed, rtol, atol, equal_nan)
    if matches.all():
        return
    if ad.shape == ():
        raise _Mismatch(AssertionError, _scalar_msg(ad.item(), ed.item(), rtol, atol))
    raise _Mismatch(AssertionError, _tensor_msg(ad, ed, matches, rtol, atol))


def _compare_numbers(a, e, rtol, atol, equal_nan, check_dtype):
    if check_dtype and type(a) is not type(e):
        raise _Mismatch(AssertionError,
                        f"The (d)types do not match: {type(a)} != {type(e)}.")
    if rtol is None:
        rtol, atol = _tolerances(_NUMBER_DTYPES[type(a)], _NUMBER_DTYPES[type(e)])
    if a == e:
        return
    if equal_nan and _isnan(a) and _isnan(e):
        return
    abs_diff = abs(a - e)
    tol = atol + rtol * abs(e)
    if math.isfinite(abs_diff) and abs_diff <= tol:
        return
    raise _Mismatch(AssertionError, _scalar_msg(a, e, rtol, atol))


def _isnan(x):
    return isinstance(x, (float, complex)) and (x != x)


def _number(x):
    if isinstance(x, np.generic) and not isinstance(x, np.ndarray):
        return x.item()
    return x


def _compare(a, e, opts):
    a, e = _number(a), _number(e)
    if a is None and e is None:
        return
    if a is None or e is None:
        raise _Mismatch(AssertionError, f"None mismatch: {a} is not {e}")
    if isinstance(a, np.ndarray) and isinstance(e, np.ndarray):
        a, e = Tensor._plain(np.array(a)), Tensor._plain(np.array(e))
    if isinstance(a, Tensor) and isinstance(e, Tensor):
        return _compare_tensors(a, e, *opts)
    numbers = (bool, int, float, complex)
    if isinstance(a, numbers) and isinstance(e, numbers):
        rtol, atol, equal_nan, _, check_dtype, _ = opts
        return _compare_numbers(a, e, rtol, atol, equal_nan, check_dtype)
    seq = collections.abc.Sequence
    if isinstance(a, seq) and isinstance(e, seq) and not isinstance(a, str) and \
            not isinstance(e, str):
        if len(a) != len(e):
            raise _Mismatch(AssertionError, f"The length of the sequences mismatch: {len(a)} "
                            f"!= {len(e)}", )
        for i, (x, y) in enumerate(zip(a, e)):
            _item(x, y, i, opts)
        return
    mapping = collections.abc.Mapping
    if isinstance(a, mapping) and isinstance(e, mapping):
        ka, ke = set(a.keys()), set(e.keys())
        if ka != ke:
            missing, extra = ke - ka, ka - ke
            raise _Mismatch(AssertionError, "The keys of the mappings do not match:\n"
                            f"Missing keys in the actual mapping: {sorted(missing)}\n"
                            f"Additional keys in the actual mapping: {sorted(extra)}")
        for k in sorted(ka, key=lambda k: (str(type(k)), k)) if _sortable(ka) else a:
            _item(a[k], e[k], k, opts)
        return
    raise _Mismatch(TypeError, "No comparison pair was able to handle inputs of type "
                    f"{_torch_type(a)} and {_torch_type(e)}.")


def _item(a, e, key, opts):
    try:
        _compare(a, e, opts)
    except _Mismatch as m:
        m.path = f"[{key!r}]" + getattr(m, "path", "")
        raise


def _sortable(keys):
    try:
        sorted(keys)
        return True
    except TypeError:
        return False


def _torch_type(x):
    return "<class 'torch.Tensor'>" if isinstance(x, Tensor) else str(type(x))


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Asserts that ``actual`` and ``expected`` are close (torch.testing.assert_close)."""
    __tracebackhide__ = True
    if (rtol is None) ^ (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'rtol' if rtol is None else 'atol'}.")
    opts = (rtol, atol, equal_nan, check_device, check_dtype, check_stride)
    try:
        _compare(actual, expected, opts)
    except _Mismatch as m:
        path = getattr(m, "path", None)
        text = m.message
        if m.kind is AssertionError and msg is not None:
            text = msg(text) if callable(msg) else msg
        if path:
            text += f"\n\nThe failure occurred for item {path}"
        raise m.kind(text) from None


# -- make_tensor ------------------------------------------------------------------------
_INTEGRAL = ("uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
_FLOATING = ("float16", "float32", "float64")
_COMPLEX = ("complex64", "complex128")


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` filled with values drawn uniformly from [low, high)
    (torch.testing.make_tensor, drawing from the default generator as torch does)."""
    dt = np.dtype(dtype)
    name = dt.name

    def modify_low_high(low, high, *, lowest_inclusive, highest_exclusive, default_low,
                        default_high):
        def clamp(a, lo, hi):
            return min(max(a, lo), hi)
        low = low if low is not None else default_low
        high = high if high is not None else default_high
        if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
            raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and "
                             f"high={high}")
        elif low == high and name in _FLOATING + _COMPLEX:
            warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                          "complex types is deprecated since 2.1 and will be removed in 2.3. "
                          "Use `torch.full(...)` instead.", FutureWarning, stacklevel=3)
        elif low >= high:
            raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
        elif high < lowest_inclusive or low >= highest_exclusive:
            raise ValueError(f"The value interval specified by `low` and `high` is [{low}, "
                             f"{high}), but {_dtype_name(dt)} only supports "
                             f"[{lowest_inclusive}, {highest_exclusive})")
        low = clamp(low, lowest_inclusive, highest_exclusive)
        high = clamp(high, lowest_inclusive, highest_exclusive)
        if name == "bool" or name in _INTEGRAL:
            return math.ceil(low), math.ceil(high)
        return low, high

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    if requires_grad and (name == "bool" or name in _INTEGRAL):
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={_dtype_name(dt)}")
    noncontiguous = noncontiguous and functools.reduce(lambda x, y: x * y, shape, 1) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])
    with grad_mode.no_grad():
        if name == "bool":
            low, high = modify_low_high(low, high, lowest_inclusive=0, highest_exclusive=2,
                                        default_low=0, default_high=2)
            result = creation.randint(low, high, shape, device=device, dtype=dtype)
        elif name in _INTEGRAL:
            info = np.iinfo(dt)
            low, high = modify_low_high(
                low, high, lowest_inclusive=int(info.min),
                highest_exclusive=int(info.max) + (1 if name != "int64" else 0),
                default_low=-9, default_high=10)
            result = creation.randint(low, high, shape, device=device, dtype=dtype)
        elif name in _FLOATING + _COMPLEX:
            info = np.finfo(dt)
            low, high = modify_low_high(low, high, lowest_inclusive=float(info.min),
                                        highest_exclusive=float(info.max),
                                        default_low=-9, default_high=9)
            part = np.dtype(np.float32 if name == "complex64" else np.float64) \
                if name in _COMPLEX else dt
            # complex: torch fills view_as_real(result), the (real, imag) pairs in order
            target = creation.empty(shape + ((2,) if name in _COMPLEX else ()), device=device,
                                    dtype=part)
            if high - low >= float(np.finfo(part).max):
                target.uniform_(low / 2, high / 2).mul_(2)
            else:
                target.uniform_(low, high)
            result = target
            if name in _COMPLEX:
                v = target.numpy()
                result = Tensor._plain((v[..., 0] + 1j * v[..., 1]).astype(dt))
        else:
            raise TypeError(f"The requested dtype '{_dtype_name(dt)}' is not supported by "
                            "torch.testing.make_tensor(). To request support, file an issue "
                            "at: https://github.com/pytorch/pytorch/issues")
        if noncontiguous:
            result = result[..., 1::2]
        elif memory_format is not None:
            result = result.clone(memory_format=memory_format)
        if exclude_zero:
            result[result == 0] = (1 if name == "bool" or name in _INTEGRAL
                                   else float(np.finfo(dt).tiny))
    if name in _FLOATING + _COMPLEX:
        result.requires_grad = requires_grad
    return result
