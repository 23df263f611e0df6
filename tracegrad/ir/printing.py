"""Readable text for node parameters (used by ``Graph.dump`` and errors)."""
import numpy as np

from .dtypes import aval_str

_MAX_INLINE = 8  # larger constants print as their type, not their values


def printable(text) -> str:
    """``text`` with every character that is not printable (line breaks, other control
    characters, separators such as U+2028) written as its escape: a source location or
    name from a graph can never start a new line of a dump or of generated code."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def format_value(v) -> str:
    if isinstance(v, np.ndarray):
        if v.size <= _MAX_INLINE:
            body = np.array2string(v, separator=",", precision=6, threshold=_MAX_INLINE)
            return body.replace("\n", "").replace(" ", "") if v.ndim else body
        return f"<{aval_str(v.shape, v.dtype)}>"
    if isinstance(v, np.generic):
        return format_value(np.asarray(v))
    if v is Ellipsis:
        return "..."
    if isinstance(v, tuple) and hasattr(v, "format"):  # index specs and friends
        return v.format()
    if isinstance(v, tuple):
        inner = ",".join(format_value(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, np.dtype):
        return v.name
    if hasattr(v, "nx") and hasattr(v, "inputs"):     # a sub-graph: dumped below its node
        return f"{{{len(v)} nodes}}"
    if callable(v):
        return getattr(v, "__qualname__", getattr(v, "__name__", type(v).__name__))
    return printable(repr(v))


def format_params(params: dict, bare=False) -> str:
    if bare:
        return " ".join(format_value(v) for v in params.values())
    return " ".join(f"{printable(k)}={format_value(v)}" for k, v in params.items())
