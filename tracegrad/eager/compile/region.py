"""Partial graph breaks: what a ``tg.compile``d call compiles of itself when it breaks.

A call that cannot be captured (a ``.item()`` feeding Python control flow, a draw from
Python's ``random``, a print) runs eagerly. torch dynamo then compiles the frames that
call makes (each callee frame is traced on its own) and resumes a new graph after the
break inside the broken frame. tracegrad does not rewrite bytecode, so it compiles at
the granularity it can tell apart without it: while the broken call runs, each module it
calls (``Module.__call__`` of a module other than the one compiled) runs through a
compiled capture of its own, one ``CompiledFunction`` per module, kept on the broken
function. A module's capture follows the usual rules: its first call runs eagerly, the
second captures, later ones run the graph; a module that breaks in turn runs eagerly
with its own modules compiled. The compiled module's backward is its
``CompiledFunctionBackward`` tape node, as for ``model = tg.compile(model)``, so the
eager ``loss.backward()`` of the broken call goes through it.

The region is a context variable (``tensor_base.BROKEN``): per thread, set only while
the broken call runs, cleared while a module's compiled call runs (that call's own
break, if any, sets its own region).
"""
from __future__ import annotations

import types

from ..tensor_base import BROKEN

# a module whose captured graphs all have fewer nodes runs eagerly from then on: its
# compiled call (guards, the tape node) costs about what its few operations do eagerly
SMALL = 8


class Region:
    """The broken calls of one compiled function: its modules' compiled captures."""

    __slots__ = ("owner", "skip")

    def __init__(self, owner, skip):
        self.owner = owner      # the CompiledFunction whose call broke
        self.skip = skip        # the module that function is the call of, or None

    def module_call(self, module, args, kwargs):
        """``module(*args, **kwargs)`` through its compiled capture, as a 1-tuple; None
        for the module the broken function is itself (it runs its body eagerly)."""
        if module is self.skip:
            return None
        compiled = self.owner._child(module)
        if compiled is None:        # too small to pay: eagerly
            return None
        token = BROKEN.set(None)
        try:
            out = compiled(*args, **kwargs)
        finally:
            BROKEN.reset(token)
        graphs = compiled._explain.graphs
        if graphs and len(graphs) == len(compiled._entries) and \
                max(len(g) for g in graphs) < SMALL:
            self.owner._eager_child(module)
        return (out,)


def run_broken(owner, fn, args, kwargs):
    """``fn(*args, **kwargs)`` run eagerly, the modules it calls compiled (see above)."""
    token = BROKEN.set(Region(owner, getattr(fn, "__self__", None)))
    try:
        return fn(*args, **kwargs)
    finally:
        BROKEN.reset(token)


def module_function(module):
    """What a module's compiled capture calls: its call without the region's routing
    (a bound method, so that the capture reaches the module's state through it)."""
    return types.MethodType(type(module)._call_impl, module)
