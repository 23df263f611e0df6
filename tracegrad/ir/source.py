"""Finding the user's line: the first stack frame outside tracegrad, NumPy and SciPy (a
SciPy function called on traced values runs NumPy code on them: its nodes and its errors
name the user's line that called it)."""
import importlib.util
import os
import sys
import threading

import numpy as np

from .printing import printable


def _scipy_folder():
    """SciPy's folder (with a trailing separator), found without importing SciPy; None
    where it is not installed."""
    try:
        spec = importlib.util.find_spec("scipy")
    except (ImportError, ValueError):   # pragma: no cover - scipy is installed in the tests
        return None
    if spec is None or not spec.origin:  # pragma: no cover
        return None
    return os.path.dirname(spec.origin) + os.sep


SCIPY_FOLDER = _scipy_folder()
# tracegrad's own folder (the parent of this one), NumPy's and SciPy's
_SKIP = tuple(os.path.dirname(path) + os.sep
              for path in (os.path.dirname(__file__), np.__file__)) + (
    (SCIPY_FOLDER,) if SCIPY_FOLDER else ())
# tracegrad's own folder, normalised (compare it with ``code_path``)
TRACEGRAD_FOLDER = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_internal: dict = {}  # code object -> bool, so the walk costs a dict lookup per frame
_basenames: dict = {}  # code object -> its file's base name
_sources: dict = {}    # (code object, instruction offset) -> "file.py:LINE"
_MAX_SOURCES = 100_000
_local = threading.local()
_OVERRIDES = [0]       # source_override blocks open now, in any thread (0: none to look up)
_COUNTING = threading.Lock()


def code_path(code):
    """``code``'s file name, normalised where it is a path: tracegrad imported through
    ``.../tests/../tracegrad`` names its files so, and ``TRACEGRAD_FOLDER`` is
    normalised. Callers cache what they make of it per code object."""
    name = code.co_filename
    return os.path.normpath(name) if os.path.isabs(name) else name


def _is_internal(code):
    hit = _internal.get(code)
    if hit is None:
        fname = code.co_filename
        hit = fname.startswith(_SKIP) or fname.startswith("<__array_function__")
        _internal[code] = hit
    return hit


def user_frame():
    frame = sys._getframe(1)
    while frame is not None and _is_internal(frame.f_code):
        frame = frame.f_back
    return frame


def user_src(depth=1):
    """``"file.py:LINE"`` of the user's code running now (or the override in force).
    ``depth``: how many of the caller's callers are known to be tracegrad's own (the walk
    starts above them)."""
    if _OVERRIDES[0]:
        override = getattr(_local, "override", None)
        if override is not None:
            return override
    frame = sys._getframe(depth)
    internal = _internal
    while frame is not None:
        code = frame.f_code
        hit = internal.get(code)
        if hit is None:
            hit = _is_internal(code)
        if not hit:
            break
        frame = frame.f_back
    if frame is None:
        return None
    # the line of an instruction never changes: a (code, instruction) pair seen before
    # costs one lookup (working out f_lineno scans the code's line table)
    key = (frame.f_code, frame.f_lasti)
    src = _sources.get(key)
    if src is None:
        if len(_sources) > _MAX_SOURCES:
            _sources.clear()
        src = _sources[key] = f"{_basename(frame.f_code)}:{frame.f_lineno}"
    return src


def _basename(code):
    name = _basenames.get(code)
    if name is None:
        # a file name may hold any character: escaped, it cannot break a dump or a
        # generated source's comment line
        name = _basenames[code] = printable(os.path.basename(code.co_filename))
    return name


class source_override:
    """Within this block new nodes take ``src`` instead of the caller's line.

    Passes use it so that nodes derived from a forward node (its VJP, a replay
    of it) point at the user's line that made the forward node.
    """
    __slots__ = ("src", "saved")

    def __init__(self, src):
        self.src = src

    def __enter__(self):
        self.saved = getattr(_local, "override", None)
        _local.override = self.src
        with _COUNTING:
            _OVERRIDES[0] += 1

    def __exit__(self, *exc):
        _local.override = self.saved
        with _COUNTING:
            _OVERRIDES[0] -= 1

    def retarget(self, src):
        """Inside this block (entered), new nodes take ``src`` from now on: a pass
        walking many nodes sets each one's line this way, for the cost of an
        assignment rather than a block per node."""
        self.src = src
        _local.override = src


def where(src=None):
    """`` (at file.py:LINE)`` for error messages."""
    src = src or user_src()
    return f" (at {src})" if src else ""
