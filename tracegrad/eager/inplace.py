"""In-place tensor operations (``InplaceMethods``): ``add_`` & co., indexed assignment,
``zero_``, ``fill_``, ``copy_``, the random fills (``uniform_``, ``normal_``, ...),
``masked_fill``; and the machinery every in-place operation goes through
(``_inplace``: PyTorch's checks, the version counter, the rebased history).
"""
from __future__ import annotations

import numpy as np

from . import aliasing, dispatch, grad_mode
from .aliasing import overlapping as _overlapping
from .arithmetic import (
    _NUMBERS,
    FAST,
    _check_broadcast,
    _check_pow,
    _err,
    _is_bool,
    _power,
    _shape,
    _subtract,
    _with_alpha,
)
from .dispatch import call
from .grad_mode import is_grad_enabled as _grad_enabled
from .indexing import getitem_name, index_update, is_basic
from .promotion import result_type
from .random import draw_dtype, generator_of
from .tape import EagerTracer
from .tensor_base import (
    _VIEW_DTYPE,
    TensorBase,
    _index_key,
    _kind_rank,
    _private_copy,
    _relabelled,
    _scalar_name,
    default_dtype,
)

_LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
_VIEW_INPLACE = ("a view of a leaf Variable that requires grad is being used in an in-place "
                 "operation.")


# -- in-place arithmetic ----------------------------------------------------------------
def _binary_(self, other, alpha, fn, name):
    """``self op= other`` (``add_`` & co.): PyTorch's checks, then ``_inplace``; under
    no_grad on floating operands, ``_fast_inplace`` first (an optimizer's update)."""
    fast = alpha == 1 and FAST.get() and not _grad_enabled()
    if fast and type(self._data) is np.ndarray and self._data.dtype.kind in "fc" and (
            type(other) is float or type(other) is int or isinstance(other, TensorBase) and
            type(other._data) is np.ndarray and other._data.dtype.kind in "fc"):
        # floating operands: no bool error to raise first
        done = _fast_inplace(self, other, fn)
        if done is not None:
            return done
        fast = False        # it declined (another shape, a read-only array)
    _check_broadcast(self, other)
    if fn is np.subtract and (_is_bool(self) or _is_bool(other)):
        _subtract(self, other)          # PyTorch's error
    if fast:
        done = _fast_inplace(self, other, fn)
        if done is not None:
            return done
    f, other = _with_alpha(fn, other, alpha)
    data, to = self._data, type(other)
    if type(data) is np.ndarray and (to in _NUMBERS or isinstance(other, TensorBase) and type(
            other._data) is np.ndarray and other._data.shape == data.shape):
        pass        # a number, or a tensor of the same shape: the shape stays
    elif tuple(np.broadcast_shapes(_shape(self), _shape(other))) != tuple(self.shape):
        raise _err(f"output with shape {list(self.shape)} doesn't match the "
                   f"broadcast shape {list(np.broadcast_shapes(_shape(self), _shape(other)))}")
    return self._inplace(f, other, name=name,
                         reads_self=fn in (np.multiply, np.true_divide, _power))


def _fast_inplace(self, other, fn):
    """``InplaceMethods._inplace``'s steps for ``self op= other`` under no_grad, on a
    concrete tensor and a tensor of the same shape or a Python number; None when they do
    not apply. (No history is recorded there, and no in-place check can fail.)"""
    data, to = self._data, type(other)
    st = self._tracer
    if type(data) is not np.ndarray or (st is not None and type(st) is not EagerTracer):
        return None
    tensor = to is not float and to is not int
    if tensor:
        if not isinstance(other, TensorBase):
            return None
        value = other._data
        ot = other._tracer
        if type(value) is not np.ndarray or value.shape != data.shape or (
                ot is not None and type(ot) is not EagerTracer):
            return None
    else:
        value = other
    if not data.flags.writeable or _overlapping(data):
        return None                     # _inplace's error
    if data.dtype.kind == "f" and (to is float or tensor and value.dtype == data.dtype) and (
            fn is np.add or fn is np.subtract or fn is np.multiply):
        fn(data, value, out=data)       # the result is the tensor's dtype: written in place
        self._vc.v += 1
        return self
    new = fn(data, value)
    if type(new) is not np.ndarray:
        new = np.asarray(new)
    if new.dtype != data.dtype and _kind_rank(new.dtype) > _kind_rank(data.dtype):
        raise RuntimeError(f"result type {_scalar_name(new.dtype)} can't be cast to the "
                           f"desired output type {_scalar_name(data.dtype)}")
    np.copyto(data, new, casting="unsafe")
    self._vc.v += 1
    return self


def _overwrite(x, v):
    """``v`` everywhere, as a node of ``x``: its derivative for ``x`` is an exact zero (not
    ``0 * g``, NaN where ``g`` is infinite) and an infinite ``x`` gives no NaN (``x * 0``)."""
    return np.where(np.ones(tuple(x.shape), bool), v, x)


def _fill_plain(self, value, name=None):
    """``self`` filled with ``value``; a sampler's fill (``name``: its node) of a tensor
    with history is recorded, its derivative an exact zero (torch's ``NormalBackward0``
    & co.): written into the data, the history kept ``self``'s old values' derivative."""
    if name is not None and self.requires_grad:
        v = np.asarray(value._data if isinstance(value, TensorBase) else value)
        return self._inplace(lambda x: _overwrite(x, v.astype(x.dtype)), name=name,
                             reads_self=False, cast=True, fills=True)
    self._check_inplace(fills=True)
    self._data[...] = value._data if isinstance(value, TensorBase) else value
    self._vc.v += 1
    return self


def _random_fill(self, sample, generator, *args, name=None, **kwargs):
    return _fill_plain(self, sample(generator_of(generator), tuple(self.shape),
                                    np.dtype(self.dtype), *args, **kwargs), name)


def _uniform(g, shape, dtype, a=0.0, b=1.0):
    return g.uniform(shape, draw_dtype(dtype), a, b)


def _normal(g, shape, dtype, mean=0.0, std=1.0):
    return g.normal(shape, draw_dtype(dtype), mean, std)


def _bernoulli_fill(g, shape, dtype, p=0.5):
    return g.bernoulli(shape, p)


def _random_ints(g, shape, dtype, low=None, high=None):
    if low is None:      # random_(): [0, 2**mantissa] for floats, [0, 2**63) for int64
        return g.random_int64(shape) if np.dtype(dtype).kind != "f" else \
            g.integers(0, 2 ** 24 + 1 if np.dtype(dtype) == np.float32 else 2 ** 53 + 1, shape)
    if high is None:
        low, high = 0, low
    return g.integers(low, high, shape)


def _fill_where(x, m, v):
    out = np.where(m, v, x)
    return out if out.dtype == x.dtype else out.astype(x.dtype)    # the tensor's dtype stays


class InplaceMethods:
    """``Tensor``'s in-place operations, and the machinery they share."""

    __slots__ = ()

    # -- in-place arithmetic ------------------------------------------------------------
    # (named: the result may be cast back to this tensor's dtype, a node of its own)
    def add_(self, other, alpha=1):
        return _binary_(self, other, alpha, np.add, "AddBackward0")

    def sub_(self, other, alpha=1):
        return _binary_(self, other, alpha, np.subtract, "SubBackward0")

    def mul_(self, other):
        return _binary_(self, other, 1, np.multiply, "MulBackward0")

    def div_(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            dtype = result_type(self, other, default_float=default_dtype())
            if dtype.kind in "biu":     # true division of integers: the default float dtype
                raise RuntimeError(f"result type {_scalar_name(default_dtype())} can't be cast "
                                   f"to the desired output type {_scalar_name(self.dtype)}")
            return _binary_(self, other, 1, np.true_divide, "DivBackward0")
        return self.copy_(self.div(other, rounding_mode=rounding_mode))

    divide_ = div_

    def pow_(self, other):
        _check_pow(self, other)
        return _binary_(self, other, 1, _power,
                        "PowBackward1" if isinstance(other, TensorBase) else "PowBackward0")

    def __iadd__(self, other):
        return _binary_(self, other, 1, np.add, "AddBackward0")

    def __isub__(self, other):
        return _binary_(self, other, 1, np.subtract, "SubBackward0")

    def __imul__(self, other):
        return _binary_(self, other, 1, np.multiply, "MulBackward0")

    def __itruediv__(self, other):
        return _binary_(self, other, 1, np.true_divide, "DivBackward0")

    def __ipow__(self, other):
        return self.pow_(other)

    # -- fills ---------------------------------------------------------------------------
    def zero_(self):
        return self._inplace(lambda x: _overwrite(x, np.zeros((), x.dtype)),
                             name="ZeroBackward0", reads_self=False, cast=True, fills=True) \
            if self.requires_grad else _fill_plain(self, 0)

    def fill_(self, value):
        if self.requires_grad or isinstance(value, TensorBase) and value.requires_grad:
            return self._inplace(_overwrite, value, reads_self=False, cast=True, fills=True,
                                 name="FillBackward3" if isinstance(value, TensorBase)
                                 else "FillBackward2")
        return _fill_plain(self, value)

    def copy_(self, src):
        src = src if isinstance(src, TensorBase) else self._plain(np.asarray(src))
        return self._inplace(_overwrite, src, name="CopyBackwards", reads_self=False,
                             cast=True)

    def uniform_(self, *args, generator=None, **kwargs):
        return _random_fill(self, _uniform, generator, *args, name="UniformBackward0", **kwargs)

    def normal_(self, *args, generator=None, **kwargs):
        return _random_fill(self, _normal, generator, *args, name="NormalBackward0", **kwargs)

    def bernoulli_(self, *args, generator=None, **kwargs):
        p = args[0] if args else kwargs.get("p", 0.5)
        return _random_fill(self, _bernoulli_fill, generator, *args, **kwargs, name=(
            "BernoulliBackward1" if isinstance(p, TensorBase) else "BernoulliBackward2"))

    def random_(self, *args, generator=None, **kwargs):
        n = len(args) + len(kwargs)
        return _random_fill(self, _random_ints, generator, *args, **kwargs,
                            name=f"RandomBackward{2 - min(n, 2)}")

    def masked_fill(self, mask, value):
        return call(_fill_where, self, mask, value, name="MaskedFillBackward0")

    def masked_fill_(self, mask, value):
        return self._inplace(_fill_where, mask, value, name="MaskedFillBackward0",
                             reads_self=False, cast=True, fills=True)

    # -- the in-place machinery ------------------------------------------------------------
    def _check_inplace(self, others=(), fills=False):
        """PyTorch's checks before an in-place change: of a leaf, of a view of one, of a
        view made under no_grad or by split; then, unless the operation only ``fills``
        (fill_, masked_fill_: they may write one place twice), that no two elements share
        memory (an expanded view)."""
        base = self._base
        if base is None:
            if self._tracer is None and self._requires_grad and grad_mode.is_grad_enabled():
                raise RuntimeError(_LEAF_INPLACE)
            # (a tensor that is no view can still be expanded: one loaded by tg.load)
            if not fills and self._data is not None and aliasing.overlapping(self._data):
                raise RuntimeError(aliasing.OVERLAP)
            return
        if grad_mode.is_grad_enabled():
            self._check_creation(self._creation, others)
            if self._tracer is not None and base._tracer is None and base._requires_grad:
                raise RuntimeError(_VIEW_INPLACE)
        if not fills and aliasing.overlapping(self._data):
            raise RuntimeError(aliasing.OVERLAP)

    def _check_creation(self, creation, others):
        """PyTorch's refusal to record an in-place change of a view made under no_grad or
        returned with others by one function (``split``), when gradients are involved."""
        if creation is not None and grad_mode.is_grad_enabled() and (
                self._base.requires_grad or self.requires_grad or any(
                    isinstance(o, TensorBase) and o.requires_grad for o in others)):
            raise RuntimeError(aliasing.inplace_error(creation))

    def _inplace(self, fn, *others, name=None, reads_self=True, cast=False, fills=False):
        """Replace this tensor's value by ``fn(self, *others)`` in place, recording it when
        gradients are involved: the tensor then names the new node (its history is
        rebased, as in PyTorch), and its version goes up. Unless ``cast`` (copy_, fill_,
        indexed assignment), a result of a higher dtype category is an error."""
        capture = dispatch.CAPTURE.get()
        if capture is not None:         # tg.compile recording: see eager/compile/capture.py
            return capture.inplace(self, fn, others, cast)
        self._check_inplace(others, fills)
        if self._data is not None and not self._data.flags.writeable:
            raise RuntimeError(aliasing.OVERLAP)
        mode = None
        if len(others) == 1 and not grad_mode.is_grad_enabled():
            # the common case (an update under no_grad): what mode_of finds, in one go
            o, st = others[0], self._tracer
            to = type(o)
            if (st is None or type(st) is EagerTracer) and (
                    to is int or to is float or isinstance(o, TensorBase) and (
                        o._tracer is None or type(o._tracer) is EagerTracer)):
                mode = dispatch._PLAIN
        if mode is None:
            mode = dispatch.mode_of((self,) + others)
        if mode == dispatch._SYMBOLIC:
            new = call(fn, self, *others)
            if new.dtype != self.dtype:
                # (as recorded below: the tensor keeps its dtype, x.logical_not_() of a
                # float tensor under a transform stays float)
                if not cast and _kind_rank(new.dtype) > _kind_rank(self.dtype):
                    raise RuntimeError(f"result type {_scalar_name(new.dtype)} can't be cast "
                                       f"to the desired output type "
                                       f"{_scalar_name(self.dtype)}")
                dtype = self.dtype
                new = call(lambda v: v.astype(dtype), new)
            self._tracer, self._data = new._tracer, new._data
            return self
        _RECORD = dispatch._RECORD
        if mode == _RECORD and self._data.dtype.kind not in "fc":
            mode = None         # an integer or boolean tensor gets the value, never a history
        if mode != _RECORD:
            new = np.asarray(fn(self._data, *[o._data if isinstance(o, TensorBase) else o
                                              for o in others]))
            if not cast and new.dtype != self._data.dtype and \
                    _kind_rank(new.dtype) > _kind_rank(self._data.dtype):
                raise RuntimeError(f"result type {_scalar_name(new.dtype)} can't be cast to the "
                                   f"desired output type {_scalar_name(self._data.dtype)}")
            if fills and self._base is not None and aliasing.overlapping(self._data):
                # one place seen as several elements: written where the fill changes it
                # (as PyTorch writes only the filled ones)
                np.copyto(self._data, new, casting="unsafe", where=new != self._data)
            else:
                np.copyto(self._data, new, casting="unsafe")
            self._vc.v += 1
            return self
        if self._base is not None:
            return self._inplace_view(fn, others, name, reads_self, cast)
        first = self._traced()
        res, ins = self._inplace_result(fn, first, others, reads_self, cast)
        np.copyto(self._data, res._value, casting="unsafe")
        self._vc.v += 1
        handle = res._handle
        handle._value = self._data
        handle._counter = self._vc
        handle._saved_version = self._vc.v
        if name is None:
            name = handle.name()        # the recorded primitive's torch_name
        handle._name = name
        # the snapshot of the old value is ours, not PyTorch's: the edge is the old node
        handle._inputs = dispatch.edges(name, [first, *ins])
        self._tracer = _relabelled(res, self._data)
        self._requires_grad = False
        return self

    def _inplace_result(self, fn, first, others, reads_self, cast):
        """The recorded new value ``fn(first, *others)`` in this tensor's dtype (PyTorch's
        refusal of a result of a higher dtype category unless ``cast``), and the traced
        operands."""
        old = _private_copy(first) if reads_self else first
        ins = [o._traced() if isinstance(o, TensorBase) else o for o in others]
        res = fn(old, *ins)
        if not cast and _kind_rank(res.dtype) > _kind_rank(self._data.dtype):
            raise RuntimeError(f"result type {_scalar_name(res.dtype)} can't be cast to the "
                               f"desired output type {_scalar_name(self._data.dtype)}")
        if res.dtype != self._data.dtype:
            res = res.astype(self._data.dtype)
        return res, ins

    def _inplace_view(self, fn, others, name, reads_self, cast):
        """``_inplace``'s recorded case for a view: the new values are the operation's
        node, the base's history becomes the old base with the view's elements replaced
        by them (``CopySlices``) and the view's is the view of that (PyTorch's rebase)."""
        base = self._base
        if self._data.dtype != base._data.dtype:
            raise RuntimeError(_VIEW_DTYPE)
        idx = aliasing.index_map(self._data, base._data)
        first = self._traced() if self._tracer is not None else \
            aliasing.gathered(base._traced(), idx)
        res, ins = self._inplace_result(fn, first, others, reads_self, cast)
        if name is None:
            name = res._handle.name()   # the recorded primitive's torch_name
        edges = dispatch.edges(name, [first, *ins])
        res._handle._name = name
        res._handle._inputs = edges
        was = base._traced()
        new = aliasing.copy_slices(was, idx, res)
        np.copyto(self._data, res._value, casting="unsafe")
        self._vc.v += 1
        h = new._handle
        # PyTorch's CopySlices: the old base, then the operation's other operands
        h._name, h._inputs = "CopySlices", (was._handle,) + edges[1:]
        h._value, h._counter, h._saved_version = base._data, base._vc, base._vc.v
        base._tracer = _relabelled(new, base._data)
        base._requires_grad = False
        self._tracer = None
        self._rebased()
        return self

    def __setitem__(self, key, value):
        capture = dispatch.CAPTURE.get()
        if capture is not None:         # tg.compile recording: see eager/compile/capture.py
            return capture.setitem(self, key, value)
        key = _index_key(key)
        if self._creation is not None:
            items = key if isinstance(key, tuple) else (key,)
            whole = all(k is Ellipsis for k in items)
            # PyTorch writes through a view of the view (a select, a slice), named so
            self._check_creation(self._creation if whole or not is_basic(key) else
                                 aliasing.derived(self._creation, getitem_name(key)), (value,))
        number = not isinstance(value, (TensorBase, np.ndarray))
        if not isinstance(value, TensorBase):
            value = np.asarray(value, dtype=self.dtype) if not isinstance(value, np.ndarray) \
                else value
            if not (grad_mode.is_grad_enabled() and (self.requires_grad or self._base is not None
                                                      and self._base.requires_grad)):
                self._check_inplace(fills=number)
                self._data[key] = value
                self._vc.v += 1
                return
            value = self._plain(np.asarray(value))
        self._inplace(lambda x, v: index_update(x, key, v), value,
                      name="CopySlices" if is_basic(key) else "IndexPutBackward0",
                      reads_self=False, cast=True, fills=number)

