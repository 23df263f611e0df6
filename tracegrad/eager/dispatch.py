"""Running an operation on tensors: on their NumPy values, recorded on the tape when a
tensor that requires grad takes part (and grad mode is on).

An operation is written once, as NumPy code (``np.multiply``, ``lambda x: np.sum(x,
axis=1)``, ``apply("conv2d", x, w, ...)``): applied to arrays it computes, applied to the
tape's tracers it records primitives of the shared registry. Inside a transform (a
custom ``Function``'s backward while the adjoint pass traces it), the same code applied to
that transform's tracers is recorded there.
"""
from __future__ import annotations

import re

import numpy as np

from ..ir import apply
from ..tracer import Tracer, user_src
from ..tracer.numpy_api import DIRECT
from . import grad_mode, profiler
from .aliasing import derived, view_name, writable
from .tape import TAPE, EagerTracer, Version
from .tensor_base import CAPTURE, TensorBase  # noqa: F401  (CAPTURE: see tensor_base)

_PLAIN, _RECORD, _SYMBOLIC = 0, 1, 2


def mode_of(args, Tensor=TensorBase):
    mode = _PLAIN
    record = grad_mode.is_grad_enabled()
    for a in args:
        if isinstance(a, Tensor):
            if a._tracer is not None and not isinstance(a._tracer, EagerTracer):
                return _SYMBOLIC
            if record and a.requires_grad:
                mode = _RECORD
        elif isinstance(a, (list, tuple)):
            sub = mode_of(a, Tensor)
            if sub == _SYMBOLIC:
                return sub
            mode = max(mode, sub)
        elif isinstance(a, Tracer) and not isinstance(a, EagerTracer):
            return _SYMBOLIC
    return mode


def _map(args, f, Tensor):
    out = []
    for a in args:
        if isinstance(a, Tensor):
            a = f(a)
        elif isinstance(a, (list, tuple)) and any(isinstance(e, Tensor) for e in a):
            a = type(a)(f(e) if isinstance(e, Tensor) else e for e in a)
        out.append(a)
    return out


def _value(t):
    return t._data


def _traced(t):
    return t._traced()


def _symbolic(t):
    return t._tracer if t._tracer is not None and not isinstance(t._tracer, EagerTracer) \
        else t._data


def call(fn, *args, name=None, view_of=None, like=None, **kwargs):
    """``fn(*values, **kwargs)`` as a tensor (or a tuple of tensors).

    ``name`` is PyTorch's name for the result's ``grad_fn`` where it is not the
    ``torch_name`` of the primitive ``fn`` records (a composite operation); ``view_of`` is
    the tensor whose storage the result shares (view operations), so that both count
    in-place changes together. The results are made by the constructors of the first tensor among
    the operands (``Tensor._plain`` & co.: a ``Tensor`` whatever its subclass), or of
    ``like`` (``tg.Tensor``, or a tensor) when no operand is one.
    """
    prof = profiler.current()
    if prof is not None:
        started = prof.begin()
        out = None
        try:
            out = _call(fn, args, name, view_of, like, kwargs)
            return out
        finally:
            prof.end(forward_name(name if name is not None else _node_name(out), fn), started)
    return _call(fn, args, name, view_of, like, kwargs)


def _node_name(out):
    """The ``grad_fn`` name of the (first) result, or None."""
    first = out[0] if isinstance(out, tuple) and out else out
    fn = getattr(first, "grad_fn", None)
    return fn.name() if fn is not None else None


def forward_name(name, fn):
    """``MulBackward0`` -> ``mul``, ``LogSoftmaxBackward0`` -> ``log_softmax``; with no
    name, that of the primitive the ufunc ``fn`` stands for (``np.multiply`` -> ``mul``)."""
    if name is None:
        prim = DIRECT.get(getattr(fn, "__wrapped__", fn))
        if prim is None:
            return getattr(fn, "__name__", "op")
        name = prim.torch_name
    base = re.sub(r"Backward\d*$", "", name)
    return re.sub(r"(?<!^)(?=[A-Z])", "_", base).lower()


def _scan(args, record):
    """``mode_of``'s walk, also giving the first tensor among ``args`` (or None)."""
    mode, first = _PLAIN, None
    for a in args:
        if isinstance(a, TensorBase):
            if first is None:
                first = a
            if a._tracer is not None and not isinstance(a._tracer, EagerTracer):
                return _SYMBOLIC, first
            if record and a.requires_grad:
                mode = _RECORD
        elif isinstance(a, (list, tuple)):
            sub, inner = _scan(a, record)
            if first is None:
                first = inner
            if sub == _SYMBOLIC:
                return sub, first
            mode = max(mode, sub)
        elif isinstance(a, Tracer) and not isinstance(a, EagerTracer):
            return _SYMBOLIC, first
    return mode, first


def _first_tensor(args):
    for a in args:
        if isinstance(a, TensorBase):
            return a
        if isinstance(a, (list, tuple)):
            inner = _first_tensor(a)
            if inner is not None:
                return inner
    return None


def _call(fn, args, name, view_of, like, kwargs):
    capture = CAPTURE.get()
    if capture is not None:
        return capture.call(fn, args, kwargs)
    mode, first = _scan(args, grad_mode.is_grad_enabled())
    if first is None:
        first = _first_tensor(args) if mode == _SYMBOLIC else None
        first = first if first is not None else view_of if view_of is not None else like
        if first is None:
            raise TypeError("dispatch.call: no tensor among the operands; pass like=Tensor")
    if mode == _PLAIN:
        values = _map(args, _value, TensorBase)
        out = fn(*values, **kwargs)
        if view_of is None:
            out = _owned(out, values)
        return _wrap(out, first, name if view_of is not None else None, None, view_of)
    if mode == _RECORD:
        outer = TAPE.src
        if outer is None:
            TAPE.src = user_src()
        try:
            ins = _map(args, _traced, TensorBase)
            out = fn(*ins, **kwargs)
        finally:
            TAPE.src = outer
        if view_of is None:
            out = _owned(out, [i._value for i in _flat(ins) if isinstance(i, EagerTracer)])
        elif isinstance(out, EagerTracer) and type(out._value) is np.ndarray and \
                out._value.size and not np.may_share_memory(out._value, view_of._data):
            # the primitives recorded copy (``diagonal`` is a selection): the tensor's value
            # is the operation applied to the value, a view sharing the base's memory
            plain = fn(*_map(args, _value, TensorBase), **kwargs)
            if isinstance(plain, np.ndarray) and _aliases(plain, view_of._data):
                out._value = out._handle._value = plain
        return _wrap(out, first, name, ins, view_of)
    if grad_mode._state.dropped is not None:
        grad_mode.note_constants([t for t in _flat(args) if isinstance(t, TensorBase) and not (
            t._tracer is not None and not isinstance(t._tracer, EagerTracer))])
    out = fn(*_map(args, _symbolic, TensorBase), **kwargs)
    if grad_mode.cuts_derivatives():
        out = _stopped(out)
    return _wrap(out, first, None, None, None)


def _stopped(out):
    """``out`` with no derivative (no_grad inside a torch.func transform's function)."""
    if isinstance(out, tuple):
        return tuple(_stopped(o) for o in out)
    if isinstance(out, Tracer) and out.dtype.kind in "fc":
        return apply("stop_gradient", out)
    return out


def _owned(out, sources):
    """``out`` with memory of its own when the operation is no view in PyTorch but NumPy
    handed back a view of an operand (``np.flip``): an in-place change of the result must
    not reach the operand."""
    if isinstance(out, tuple):
        return tuple(_owned(o, sources) for o in out)
    value = out._value if isinstance(out, EagerTracer) else out
    if type(value) is np.ndarray and value.base is None and not _holds(sources, value):
        return out      # an array that owns its memory shares it only with itself
    if not isinstance(value, np.ndarray) or not any(
            isinstance(s, np.ndarray) and np.may_share_memory(value, s)
            for s in _flat(sources)):
        return out
    copy = np.array(value, copy=True)
    if isinstance(out, EagerTracer):
        out._value = out._handle._value = copy
        return out
    return copy


def _wrap(out, like, name, ins, view_of):
    """``out`` as tensors, made by ``like``'s constructors (a tensor, or ``tg.Tensor``)."""
    if isinstance(out, tuple):
        return tuple(_wrap(o, like, name, ins, view_of) for o in out)
    if isinstance(out, EagerTracer):
        return _from_tracer(out, like, name, ins, view_of)
    if isinstance(out, Tracer):
        return like._symbolic(out)
    t = like._plain(np.asarray(out))
    if view_of is not None and out is not None and _aliases(t._data, view_of._data):
        _viewing(t, view_of, name)
    return t


def unviewed(t):
    """``t``, a view of a value nobody else holds, as a tensor of its own (no ``_base``, a
    version counter of its own), as PyTorch's ``_unsafe_view`` of a fresh result."""
    if t._base is not None:
        t._base, t._creation, t._vc = None, None, Version()
        h = t._tracer._handle if isinstance(t._tracer, EagerTracer) else None
        if h is not None:
            h._counter, h._saved_version = t._vc, 0
    return t


def _viewing(t, view_of, name):
    """Make ``t`` a view of ``view_of``: the same version counter and base, writable where
    the base is (NumPy's ``diagonal`` and ``broadcast_to`` are read-only), and marked
    when made under no_grad (PyTorch forbids recording an in-place change of it)."""
    t._vc = view_of._vc
    t._base = view_of if view_of._base is None else view_of._base
    made = view_of._creation
    if made is not None:
        # a view of such a view made with grad mode on is named in PyTorch's message
        t._creation = derived(made, name) if grad_mode.is_grad_enabled() else made
    elif not grad_mode.is_grad_enabled():
        t._creation = ("no_grad", 0, view_name(name), False)
    writable(t._data, view_of._data)


def _from_tracer(tracer, like, name, ins, view_of):
    if tracer._dtype.kind not in "fc":
        # integers and booleans carry no gradient
        return _wrap(tracer._value, like, name, None, view_of)
    if name is not None and _holds(ins, tracer):
        # NumPy handed an operand back (a reshape to its own shape): PyTorch still makes
        # a node, and retain_grad/hooks on the result must not land on the operand's
        tracer = apply("reshape", tracer, shape=tuple(tracer.shape))
    elif name is None and ins is not None and not _holds(ins, tracer):
        # no name given: the recorded primitive's, its registry entry's ``torch_name``
        # (an operation whose PyTorch name differs, a composite one, passes its own)
        name = tracer._handle.name()
    handle = tracer._handle
    if name is not None:
        handle._name = name
        inputs = edges(name, _flat(ins))
        if inputs != handle._parents:
            handle._inputs = inputs
    t = like._recorded(tracer)
    if view_of is not None and _aliases(t._data, view_of._data):
        _viewing(t, view_of, name)
        handle._counter = view_of._vc
        handle._saved_version = view_of._vc.v
    return t


# PyTorch's arithmetic wraps a Python number (or takes an integer tensor) as an operand
# of its own, shown as a None edge; elsewhere a number, mask or index is no edge at all.
_SCALAR_EDGES = frozenset({"AddBackward0", "SubBackward0", "MulBackward0", "DivBackward0",
                           "WhereBackward0", "MaximumBackward0", "MinimumBackward0",
                           "PowBackward1", "RemainderBackward1", "FmodBackward1",
                           "CopyBackwards"})


def edges(name, operands):
    """What ``next_functions`` shows for a node named ``name`` made from ``operands``."""
    keep = name in _SCALAR_EDGES
    out = []
    for i in operands:
        if isinstance(i, EagerTracer) and (keep or i.dtype.kind in "fc"):
            out.append(i._handle)
        elif keep:
            out.append(None)
    return tuple(out)


def _aliases(view, base):
    """Whether a view operation's result is a view of ``base`` (an empty one shares no
    memory, yet PyTorch still counts it a view)."""
    return view.size == 0 or np.shares_memory(view, base)


def _holds(ins, x):
    """Whether ``x`` is one of ``ins`` (looking into lists and tuples, as ``_flat``)."""
    for i in ins or ():
        if i is x:
            return True
        if isinstance(i, (list, tuple)):
            for j in i:
                if j is x:
                    return True
    return False


def _flat(ins):
    for i in ins or ():
        if isinstance(i, (list, tuple)):
            yield from i
        else:
            yield i
