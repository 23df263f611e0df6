"""``tg.autograd.profiler.profile``: time spent per operation, forward and backward.

Forward operations are timed where tensors compute them (one event per operation,
nested ones inside it: a composite ``logsumexp`` contains its ``exp`` and ``sum``);
backward time is attributed to the backward node whose rule produced each value.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

_state = threading.local()
_OPEN = [0]             # profiles open now, in any thread (0: nothing to look up)
_COUNTING = threading.Lock()


def current():
    if not _OPEN[0]:
        return None
    return getattr(_state, "prof", None)


@dataclass
class FunctionEventAvg:
    key: str
    count: int = 0
    cpu_time_total: float = 0.0         # microseconds, as PyTorch reports them
    self_cpu_time_total: float = 0.0

    @property
    def cpu_time(self):
        return self.cpu_time_total / max(self.count, 1)


@dataclass
class EventList:
    events: list = field(default_factory=list)

    def __iter__(self):
        return iter(self.events)

    def __len__(self):
        return len(self.events)

    def __getitem__(self, i):
        return self.events[i]

    def table(self, sort_by=None, row_limit=100, **_):
        return _table(self.events, sort_by, row_limit)

    def __str__(self):
        return self.table()


class profile:
    """``with profile() as prof: ...`` then ``print(prof.key_averages().table())``."""

    def __init__(self, enabled=True, use_cuda=False, record_shapes=False, **_):
        self.enabled = enabled
        self._stats: dict[str, FunctionEventAvg] = {}
        self._stack: list = []
        self._start = self._end = None

    def __enter__(self):
        if self.enabled:
            self._prev = current()
            _state.prof = self
            with _COUNTING:
                _OPEN[0] += 1
            self._start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._end = time.perf_counter()
            _state.prof = self._prev
            with _COUNTING:
                _OPEN[0] -= 1
        return False

    # -- recording -----------------------------------------------------------------
    def begin(self):
        self._stack.append(0.0)
        return time.perf_counter()

    def end(self, name, started):
        elapsed = time.perf_counter() - started
        children = self._stack.pop()
        if self._stack:
            self._stack[-1] += elapsed
        self.add(name, elapsed, self_time=elapsed - children)

    def add(self, name, seconds, self_time=None):
        ev = self._stats.get(name)
        if ev is None:
            ev = self._stats[name] = FunctionEventAvg(name)
        ev.count += 1
        ev.cpu_time_total += seconds * 1e6
        ev.self_cpu_time_total += (seconds if self_time is None else self_time) * 1e6

    # -- reading ---------------------------------------------------------------------
    def key_averages(self, group_by_input_shape=False):
        return EventList(list(self._stats.values()))

    def table(self, sort_by=None, row_limit=100, **_):
        return self.key_averages().table(sort_by=sort_by, row_limit=row_limit)

    @property
    def self_cpu_time_total(self):
        return sum(e.self_cpu_time_total for e in self._stats.values())


_SORT = {"cpu_time_total": "cpu_time_total", "self_cpu_time_total": "self_cpu_time_total",
         "cpu_time": "cpu_time_total", "self_cpu_time": "self_cpu_time_total",
         "count": "count", "calls": "count"}


def _fmt(us):
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _table(events, sort_by, row_limit):
    events = list(events)
    if sort_by is not None:
        attr = _SORT.get(sort_by)
        if attr is None:
            raise ValueError(f"unknown sort_by {sort_by!r}; use one of {sorted(_SORT)}")
        events.sort(key=lambda e: getattr(e, attr), reverse=True)
    total_self = sum(e.self_cpu_time_total for e in events) or 1.0
    events = events[:row_limit]
    name_w = max([len("Name")] + [len(e.key) for e in events]) + 2
    cols = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
    widths = [12, 12, 12, 12, 13, 11]
    rule = "-" * name_w + "  " + "  ".join("-" * w for w in widths)
    lines = [rule, "Name".ljust(name_w) + "  " + "  ".join(c.rjust(w) for c, w in zip(cols, widths)),
             rule]
    for e in events:
        cells = [f"{100 * e.self_cpu_time_total / total_self:.2f}%", _fmt(e.self_cpu_time_total),
                 f"{100 * e.cpu_time_total / total_self:.2f}%", _fmt(e.cpu_time_total),
                 _fmt(e.cpu_time), str(e.count)]
        lines.append(e.key.ljust(name_w) + "  " + "  ".join(c.rjust(w) for c, w in zip(cells, widths)))
    lines.append(rule)
    lines.append(f"Self CPU time total: {_fmt(total_self)}")
    return "\n".join(lines) + "\n"


def record_function(name):
    """A ``with`` block timed as one event named ``name``."""
    return _Range(name)


class _Range:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        prof = current()
        self.prof = prof
        if prof is not None:
            self.t0 = prof.begin()
        return self

    def __exit__(self, *exc):
        if self.prof is not None:
            self.prof.end(self.name, self.t0)
        return False
