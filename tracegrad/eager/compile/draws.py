"""Draws from Python's ``random`` module inside a compiled function, replayed as guards.

PyTorch's ``dynamic_net`` tutorial picks its depth with ``random.randint(4, 6)`` in
``forward``. A graph that froze the number drawn while capturing would be wrong on the
next call, and the module's state must advance as the eager function advances it. So
while a capture runs, a profile hook of the capturing thread (``sys.setprofile``: no
module is patched, other threads are untouched) records each call into the module-level
generator's integer draws (``randint``, ``randrange``), with its arguments and result.
The capture is kept only if those calls, made again from the state it started at, leave
the module's state exactly where the function left it (no draw was missed:
``random.random()``, a C method, is not seen by the hook, and breaks the graph as
before).

A compiled call makes the recorded calls first, in their order, and runs its graph only if
each returns what the capture saw; the module's state is then where the eager function
would have left it. Otherwise the state is put back and the next graph, or a new capture,
is tried: one graph per outcome (dynamic_net has three).
"""
from __future__ import annotations

import random
import sys

REPLAYED = frozenset({"randint", "randrange"})
_INSTANCE = random.randint.__self__     # the generator behind the module's functions
_FILE = random.Random.randint.__code__.co_filename


class Recorder:
    """The profile hook recording the capturing thread's draws: ``draws`` holds
    ``(method name, arguments, result)`` in call order; ``refused`` names a call into the
    module's generator the replay cannot make (``shuffle``, ``gauss``, ...)."""

    def __init__(self):
        self.draws: list = []
        self.refused: str | None = None
        self._open = None       # (frame, name, args) of the outermost call into random.py
        self.active = False     # whether it recorded (no other profiler was there)

    def __enter__(self):
        # another profiler (cProfile, a debugger) keeps its hook: nothing is recorded,
        # and a capture that draws breaks the graph as it did before
        if sys.getprofile() is None:
            sys.setprofile(self)
            self.active = True
        return self

    def __exit__(self, *exc):
        if self.active:
            sys.setprofile(None)

    def __call__(self, frame, event, arg):
        if event == "call":
            if self._open is None and frame.f_code.co_filename == _FILE:
                code = frame.f_code
                local = frame.f_locals
                if local.get("self") is not _INSTANCE:
                    self._open = (frame, None, None)    # another generator: not ours
                    return
                names = code.co_varnames[1:code.co_argcount]
                self._open = (frame, code.co_name, tuple(local[n] for n in names))
        elif event == "return" and self._open is not None and frame is self._open[0]:
            _, name, args = self._open
            self._open = None
            if name is None:
                return
            if name in REPLAYED and all(type(a) in (int, bool, type(None)) for a in args):
                self.draws.append((name, args, arg))
            elif self.refused is None:
                self.refused = f"random.{name}"


def replays(draws, before, after) -> bool:
    """Whether ``draws``, made again from the module state ``before``, give the same
    numbers and leave the state at ``after``. The state is ``before`` afterwards."""
    random.setstate(before)
    try:
        return all(getattr(_INSTANCE, name)(*args) == result for name, args, result in draws) \
            and random.getstate() == after
    finally:
        random.setstate(before)


def outcome_of(draws):
    """Recorded ``draws`` as ``(calls, results)``: the calls to make again, ``(name, args)``
    each, and the numbers they gave."""
    return (tuple((name, args) for name, args, _ in draws),
            tuple(result for _, _, result in draws))


class Outcome:
    """One compiled call's draws, made once and compared with each graph's: graphs whose
    captures made the same calls share the numbers drawn. ``undo()`` puts the module's
    state back where the call found it (no graph matched)."""
    __slots__ = ("before", "calls", "results")

    def __init__(self):
        self.before = None
        self.calls = None

    def matches(self, calls, results) -> bool:
        if calls != self.calls:
            if self.before is None:
                self.before = random.getstate()
            else:
                random.setstate(self.before)
            self.calls = calls
            self.results = tuple(getattr(_INSTANCE, name)(*args) for name, args in calls)
        return results == self.results

    def undo(self):
        if self.before is not None:
            random.setstate(self.before)
            self.before = self.calls = None

