"""Partial graph breaks: a ``tg.compile`` call that breaks runs eagerly, but the
submodules it calls (``Module.__call__`` of modules other than the one compiled) and
``optimizer.step()`` run through compiled captures of their own, one ``CompiledFunction``
per module or optimizer, cached on the broken call's ``CompiledFunction`` (its
``Region``). Recursively: a child that breaks runs eagerly with its own children compiled.

The region is this thread's (task's) ``BROKEN`` context variable, set only while the
broken call runs eagerly; ``Module.__call__`` and ``Optimizer.step`` look at it. Nothing is
patched. A child's backward goes through its compiled forward's tape node, as for
``tg.compile(model)`` with ``loss.backward()`` outside it."""
from __future__ import annotations

import threading
import time

from ..tensor_base import BROKEN, CAPTURE

_LOCK = threading.Lock()


class _Plain:
    """A child's function: the module's call or the optimizer's step, uncompiled (``reach``
    finds the object through this one's ``__dict__``)."""

    def __init__(self, obj, is_module):
        self.obj = obj
        self.is_module = is_module

    def __call__(self, *args, **kwargs):
        if self.is_module:
            return self.obj(*args, **kwargs)
        return self.obj.step()

    @classmethod
    def of(cls, obj):
        """The plain call of a module or an optimizer."""
        from ..nn.modules import Module
        return cls(obj, isinstance(obj, Module))


class Region:
    """The children compiled under one ``CompiledFunction``'s graph breaks."""

    def __init__(self, owner):
        self.owner = owner
        fn = owner._fn
        # the object compiled itself (a child's, or a bound method's): its own call runs plainly
        self.obj = fn.obj if isinstance(fn, _Plain) else getattr(fn, "__self__", None)
        self.children: dict = {}        # id(obj) -> (obj, CompiledFunction)
        self.lock = threading.Lock()

    def child(self, obj):
        hit = self.children.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        with self.lock:
            hit = self.children.get(id(obj))
            if hit is not None and hit[0] is obj:
                return hit[1]
            plain = _Plain.of(obj)
            owner = self.owner
            cf = type(owner)(plain, backend=owner.backend, options=owner.options)
            cf._explain.name = type(obj).__name__ + ("" if plain.is_module else ".step")
            self.children[id(obj)] = (obj, cf)
            owner._explain.children.append(cf._explain)
            return cf

    def call(self, obj, args, kwargs):
        token = BROKEN.set(None)        # its capture, or its first (eager) call: plain
        try:
            if CAPTURE.get() is not None:   # inside another compiled function's capture
                return _Plain.of(obj)(*args, **kwargs)
            cf = self.child(obj)
            return _timed(cf, args, kwargs)
        finally:
            BROKEN.reset(token)


# A child compiled alone can be slower than run eagerly: an optimizer's step (NumPy
# updates in place, one pass per parameter; measured 1.3-2x for SGD/Adam on 2-32
# parameters), a single nn.Linear (the compiled call's guards cost what one op saves), see
# docs/compile.md. So each child is compiled, timed against its eager call, and kept only
# where it is not slower: calls 1 (eager) and 2 (capture) as any compiled function,
# 3..2+_SAMPLES compiled and the next _SAMPLES eager, timed (the forward call for a
# module: its backward is one generated function against one per operation); then the
# faster way for good. ``tg.compile(..., options={"break_children": "compiled"})``
# compiles every child, ``"eager"`` none (the one run's setting: no global switch).
_SAMPLES = 3


def _timed(cf, args, kwargs):
    # (the timings and the choice are kept on the CompiledFunction, not on the _Plain
    # function it captures: that one's attributes are Python state its guards compare)
    fn = cf._fn
    mode = cf.__dict__.get("_child_mode") or cf.options.get("break_children", "timed")
    if mode == "eager":
        return fn(*args, **kwargs)
    if mode == "compiled" or cf._calls < 2:
        return cf(*args, **kwargs)
    times = cf.__dict__.setdefault("_child_times", ([], []))
    compiled = len(times[0]) < _SAMPLES
    started = time.perf_counter()
    out = cf(*args, **kwargs) if compiled else fn(*args, **kwargs)
    times[0 if compiled else 1].append(time.perf_counter() - started)
    if len(times[1]) >= _SAMPLES:
        cf._child_mode = "compiled" if min(times[0]) <= min(times[1]) else "eager"
        if cf._child_mode == "eager":
            cf._explain.break_reasons.append(
                "its compiled call took longer than its eager call "
                f"({min(times[0]) * 1e6:.0f} us against {min(times[1]) * 1e6:.0f} us): it "
                "runs eagerly from now on")
    return out


def run_broken(compiled, args, kwargs):
    """Run ``compiled``'s function eagerly (its call broke), the submodules and optimizer
    steps it reaches compiled."""
    region = compiled._region
    if region is None:
        with _LOCK:
            if compiled._region is None:
                compiled._region = Region(compiled)
            region = compiled._region
    token = BROKEN.set(region)
    try:
        return compiled._fn(*args, **kwargs)
    finally:
        BROKEN.reset(token)
