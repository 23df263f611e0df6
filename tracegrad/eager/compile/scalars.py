"""An integer read by ``Tensor.item()`` while ``tg.compile`` captures: a value of the graph.

The BiLSTM-CRF tutorial's ``log_sum_exp`` picks ``vec[0, argmax(vec)]`` where ``argmax``
returns ``torch.max(vec, 1)[1].item()``: a Python int that differs from call to call. A
capture that froze it would give a wrong number on the next call; one that broke the graph
there runs the whole loss eagerly. ``TracedInt`` keeps it in the graph instead, as
``torch.compile`` does with ``capture_scalar_outputs``: the capture's ``item()`` of a
one-element integer tensor returns one, standing for the tensor's element (a 0-d integer
tracer) with the value it has while capturing.

A ``TracedInt`` is accepted where its value stays in the graph: as an index of a tensor
(``x[0, k]``, ``x[k] = v``), a view of it as an int would be. Anything that needs its
Python value (``list[k]``, ``range(k)``, ``if k:``, ``k == j``, ``k + 1``, ``hash``,
``str``, ``np.asarray``) is a graph break: the call runs eagerly, where ``item()`` is
a plain int. It is not an ``int``, so no code can take it for one by accident. Kept past
its capture (stored where the function's caller finds it), every use raises.
"""
from __future__ import annotations


class TracedInt:
    __slots__ = ("capture", "tracer", "value")

    def __init__(self, capture, tracer, value):
        self.capture = capture      # the Capture it belongs to
        self.tracer = tracer        # a 0-d integer Tracer of that capture's trace
        self.value = value          # its value while capturing (a Python int)

    def live(self):
        """Whether this value's capture is the one running (on this thread)."""
        from ..tensor_base import CAPTURE
        return CAPTURE.get() is self.capture

    def _python(self, what):
        if self.live():
            self.capture.graph_break(f"{what} of a number read by Tensor.item()")
        from ...errors import TraceError
        raise TraceError(f"{what} of a number read by Tensor.item() inside a tg.compile "
                         "capture, kept after it: the number is known only when the "
                         "compiled graph runs (return it as a tensor instead)")

    def __index__(self):
        self._python("using as a Python index")

    def __int__(self):
        self._python("int()")

    def __float__(self):
        self._python("float()")

    def __complex__(self):
        self._python("complex()")

    def __bool__(self):
        self._python("bool() (Python control flow on its value)")

    def __hash__(self):
        self._python("hashing")

    def __repr__(self):
        self._python("printing")

    __str__ = __repr__

    def __format__(self, spec):
        self._python("formatting")

    def __array__(self, dtype=None, copy=None):
        self._python("converting to a NumPy array")

    def __reduce__(self):
        self._python("pickling or copying")


def _refuse(name):
    def method(self, *args):
        self._python(f"'{name}'")
    method.__name__ = name
    return method


for _name in ("eq", "ne", "lt", "le", "gt", "ge", "add", "radd", "sub", "rsub", "mul",
              "rmul", "truediv", "rtruediv", "floordiv", "rfloordiv", "mod", "rmod", "pow",
              "rpow", "neg", "pos", "abs", "invert", "and", "rand", "or", "ror", "xor",
              "rxor", "lshift", "rlshift", "rshift", "rrshift", "divmod", "rdivmod",
              "round", "trunc", "floor", "ceil"):
    setattr(TracedInt, f"__{_name}__", _refuse(f"__{_name}__"))
del _name


def holds_traced_int(key):
    """Whether the index ``key`` holds a ``TracedInt``."""
    if type(key) is TracedInt:
        return True
    return type(key) is tuple and any(type(k) is TracedInt for k in key)
