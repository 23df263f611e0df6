"""The one bounded cache of the package: least recently used out, safe for threads.

Every cache tracegrad keeps (backward plans of both front ends, SciPy's derived ODE
systems, sparse factorisations, ...) is an ``LRU``. A lookup hashes its key once (keys
are often long tuples describing a traced structure, whose hash Python does not keep):
recency is a use stamp stored with the value, and the entry with the oldest stamp goes
when an insertion makes the cache exceed its size.
"""
from __future__ import annotations

import itertools
import threading

_MISSING = object()


class LRU:
    """A mapping of at most ``size`` entries; ``get`` marks an entry as used."""

    __slots__ = ("size", "_entries", "_lock", "_clock")

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"an LRU cache holds at least one entry, not {size}")
        self.size = size
        self._entries: dict = {}        # key -> [value, stamp of its last use]
        self._lock = threading.Lock()
        self._clock = itertools.count()

    def get(self, key, default=None):
        """The value stored under ``key`` (now the most recently used), or ``default``."""
        entry = self._entries.get(key, _MISSING)
        if entry is _MISSING:
            return default
        entry[1] = next(self._clock)    # one item assignment: atomic under the GIL
        return entry[0]

    def put(self, key, value) -> None:
        """Store ``value`` under ``key``, dropping the least recently used entry when the
        cache is full."""
        with self._lock:
            self._entries[key] = [value, next(self._clock)]
            while len(self._entries) > self.size:
                oldest = min(self._entries.items(), key=lambda kv: kv[1][1])[0]
                del self._entries[oldest]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def items(self) -> list:
        """``(key, value)`` of the entries stored now (a snapshot, least recent first)."""
        entries = sorted(list(self._entries.items()), key=lambda kv: kv[1][1])
        return [(k, entry[0]) for k, entry in entries]

    def values(self) -> list:
        """The values stored now (a snapshot, in no particular order)."""
        return [entry[0] for entry in list(self._entries.values())]

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key) -> bool:
        return key in self._entries
