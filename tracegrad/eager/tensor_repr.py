"""How a tensor prints: PyTorch's layout, character for character.

``repr(t)`` and ``str(t)`` are ``tensor(<values>, <suffixes>)``. The values follow
PyTorch's rules, not NumPy's ``array2string``:

- one format for every element, chosen from the finite nonzero values: integers (all
  whole) print as ``1.``; otherwise fixed point with ``precision`` digits, or scientific
  notation when the largest magnitude is over 1e8, the smallest under 1e-4, or their
  ratio over 1000; every element right-aligned to the widest finite nonzero one;
- a row holds ``(linewidth - indent) // (width + 2)`` elements, continuation lines
  indented past the opening brackets; rows of a matrix are separated by one newline,
  matrices by two;
- over ``threshold`` elements, only ``edgeitems`` at each end of every dimension, with
  ``...`` between (the format then chosen from the shown values only);
- suffixes: ``dtype=`` unless the dtype is the default floating one, its complex
  counterpart, int64 or bool; ``size=`` for empty tensors that are not 1-D;
  ``grad_fn=<...>`` or ``requires_grad=True``; moved to a line of their own when the
  last line would pass ``linewidth``.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np


@dataclasses.dataclass
class PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


OPTIONS = PrintOptions()
_PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
             "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
             "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """``torch.set_printoptions``: the options above; ``profile`` is one of "default",
    "short", "full" (every element), the others then override it; ``sci_mode`` True or
    False forces scientific notation on or off, None chooses."""
    if profile is not None:
        for key, value in _PROFILES[profile].items():
            setattr(OPTIONS, key, value)
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(OPTIONS, key, value)
    OPTIONS.sci_mode = sci_mode


def get_printoptions():
    return dataclasses.asdict(OPTIONS)


class _Format:
    """One format for all the elements of an array of real numbers (or of booleans or
    integers): how wide, whether whole numbers, whether scientific notation."""

    def __init__(self, values):
        self.floating = values.dtype.kind == "f"
        self.whole, self.sci, self.width = True, False, 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.width = max(self.width, len(str(v)))
            return
        shown = flat[np.isfinite(flat) & (flat != 0)]
        if shown.size == 0:
            return
        magnitude = np.abs(shown).astype(np.float64)
        small, large = magnitude.min(), magnitude.max()
        self.whole = bool(np.all(shown == np.ceil(shown)))
        if OPTIONS.sci_mode is None:
            self.sci = bool(large / small > 1000.0 or large > 1.0e8 or small < 1.0e-4)
        else:
            self.sci = bool(OPTIONS.sci_mode)
        p = OPTIONS.precision
        for v in shown.tolist():
            if self.sci:
                text = f"{v:.{p}e}"
            elif self.whole:
                text = f"{v:.0f}."
            else:
                text = f"{v:.{p}f}"
            self.width = max(self.width, len(text))

    def __call__(self, v):
        if not self.floating:
            text = str(v)
        elif self.sci:
            text = f"{v:{self.width}.{OPTIONS.precision}e}"
        elif self.whole:
            text = f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
        else:
            text = f"{v:.{OPTIONS.precision}f}"
        return " " * (self.width - len(text)) + text


class _ComplexFormat:
    """Real and imaginary parts each with a format of its own, ``a+bj``."""

    def __init__(self, values):
        self.real, self.imag = _Format(values.real), _Format(values.imag)
        self.width = self.real.width + self.imag.width + 1

    def __call__(self, v):
        imag = (self.imag(v.imag) + "j").lstrip()
        return self.real(v.real) + (imag if imag[0] in "+-" else "+" + imag)


def _edges(data):
    """The elements shown when summarizing: ``edgeitems`` at each end of every dimension."""
    e = OPTIONS.edgeitems
    if data.ndim >= 2 and not e:
        return data[(slice(0, 0),) * data.ndim]
    keep = [np.r_[0:e, n - e:n] if n > 2 * e else np.arange(n) for n in data.shape]
    return data[np.ix_(*keep)] if keep else data


def _rows(data, indent, summarize, fmt):
    if data.ndim == 0:
        return fmt(data.item())
    e = OPTIONS.edgeitems
    if data.ndim == 1:
        per_line = max(1, math.floor((OPTIONS.linewidth - indent) / (fmt.width + 2)))
        values = data.tolist()
        if summarize and not e:
            items = ["..."]
        elif summarize and len(values) > 2 * e:
            items = [fmt(v) for v in values[:e]] + [" ..."] + [fmt(v) for v in values[-e:]]
        else:
            items = [fmt(v) for v in values]
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    n = data.shape[0]
    if summarize and n > 2 * e:
        parts = [_rows(data[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."] + \
            [_rows(data[i], indent + 1, summarize, fmt) for i in range(n - e, n)]
    else:
        parts = [_rows(data[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (data.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def values_str(data, indent):
    """The bracketed values of the NumPy array ``data``, PyTorch's way, for a text that
    starts ``indent`` characters to the left of the first bracket."""
    if data.size == 0:
        return "[]"
    summarize = data.size > OPTIONS.threshold
    shown = _edges(data) if summarize else data
    if data.dtype.kind == "c":
        fmt = _ComplexFormat(shown)
    else:
        fmt = _Format(shown.astype(np.float64) if data.dtype == np.float16 else shown)
    return _rows(data, indent, summarize, fmt)


def _with_suffixes(text, suffixes, indent):
    last = len(text) - text.rfind("\n") + 1
    out = [text]
    for suffix in suffixes:
        if last + len(suffix) + 2 > OPTIONS.linewidth:
            out.append(",\n" + " " * indent + suffix)
            last = indent + len(suffix)
        else:
            out.append(", " + suffix)
            last += len(suffix) + 2
    return "".join(out) + ")"


def tensor_repr(data, default_dtype, grad_fn_name=None, requires_grad=False, shape=()):
    """``tensor(...)`` for the values ``data`` (a NumPy array, or None for a traced
    tensor, shown by its ``shape``) of a tensor whose ``grad_fn`` has the name
    ``grad_fn_name`` (or None)."""
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if data is None:
        text = f"<traced {list(shape)}>"
    else:
        data = np.asarray(data)
        default = np.dtype(default_dtype)
        plain = {default, np.result_type(default, np.complex64), np.dtype(np.int64),
                 np.dtype(np.bool_)}
        if data.size == 0:
            if data.ndim != 1:
                suffixes.append(f"size={tuple(data.shape)}")
            if data.dtype != default:
                suffixes.append(f"dtype=torch.{data.dtype.name}")
            text = "[]"
        else:
            if not OPTIONS.edgeitems:
                suffixes.append(f"size={tuple(data.shape)}")
            if data.dtype not in plain:
                suffixes.append(f"dtype=torch.{data.dtype.name}")
            text = values_str(data, indent)
    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + text, suffixes, indent)
