"""Per-thread tracing state.

Each thread has its own stack of active traces: a trace started in one thread never
changes what NumPy calls do in another (``elements.py`` installs its wrappers into the
``numpy`` module while any thread traces, and they look here first).
"""
import threading


class _Local(threading.local):
    def __init__(self):
        self.stack = []     # this thread's active traces, innermost last
        self.sampling = None    # a NumPy sampler called with traced parameters (samplers)
        self.samples = False    # whether a samplers.SampleArray was made in this trace


LOCAL = _Local()
