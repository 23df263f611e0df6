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

from ..tensor_base import BROKEN

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


class Region:
    """The children compiled under one ``CompiledFunction``'s graph breaks."""

    def __init__(self, owner):
        self.owner = owner
        fn = owner._fn
        fn = fn.obj if isinstance(fn, _Plain) else getattr(fn, "__self__", None)
        self.obj = fn          # the object compiled itself (its own call runs plainly)
        self.children: dict = {}        # id(obj) -> (obj, CompiledFunction)
        self.lock = threading.Lock()

    def child(self, obj):
        hit = self.children.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        from ..nn.modules import Module
        with self.lock:
            hit = self.children.get(id(obj))
            if hit is not None and hit[0] is obj:
                return hit[1]
            is_module = isinstance(obj, Module)
            owner = self.owner
            cf = type(owner)(_Plain(obj, is_module), backend=owner.backend)
            cf._explain.name = type(obj).__name__ + ("" if is_module else ".step")
            self.children[id(obj)] = (obj, cf)
            owner._explain.children.append(cf._explain)
            return cf

    def call(self, obj, args, kwargs):
        cf = self.child(obj)
        token = BROKEN.set(None)        # its capture, or its first (eager) call: plain
        try:
            return cf(*args, **kwargs)
        finally:
            BROKEN.reset(token)


def run_broken(compiled, args, kwargs):
    """Run ``compiled``'s function eagerly (its call broke), the submodules and optimizer
    steps it reaches compiled."""
    region = compiled.__dict__.get("_region")
    if region is None:
        with _LOCK:
            region = compiled.__dict__.get("_region")
            if region is None:
                region = compiled.__dict__["_region"] = Region(compiled)
    token = BROKEN.set(region)
    try:
        return compiled._fn(*args, **kwargs)
    finally:
        BROKEN.reset(token)
