"""Tensor shape operations (``ShapeMethods``): ``view``/``reshape``, ``permute``,
``squeeze``, ``expand``, indexing, ``split``, ``gather``, ``flip``, ``roll``, ...
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..tracer import Tracer
from . import dispatch as _dispatch
from . import memory_format as _memory_format
from .arithmetic import _err
from .dispatch import call
from .grad_mode import is_grad_enabled as _grad_enabled
from .indexing import getitem_name, is_basic
from .indexing import operand_key as _operand_key
from .products import is_contiguous, layout
from .reductions import _check_dim
from .tape import EagerTracer
from .tensor_base import TensorBase, _index_key, _private_copy


# -- shapes ------------------------------------------------------------------------------
def _sizes(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    return tuple(int(a) for a in args)


def _view(self, shape):
    return call(lambda x: np.reshape(x, shape), self, name="ViewBackward0", view_of=self)


def _resolve_shape(shape, size):
    """``shape`` with a ``-1`` worked out; PyTorch's error if it cannot hold ``size``."""
    known = math.prod(s for s in shape if s != -1)
    holes = shape.count(-1)
    if holes > 1 or any(s < -1 for s in shape) or (
            holes and (known == 0 or size % known)) or (not holes and known != size):
        raise _err(f"shape '{list(shape)}' is invalid for input of size {size}")
    return tuple(size // known if s == -1 else s for s in shape)


def _c_order(x):
    # a copy in C order (``clone`` keeps the strides, as PyTorch's preserve_format)
    if isinstance(x, EagerTracer):
        snap = _private_copy(x)
        snap._value = snap._handle._value = np.ascontiguousarray(snap._value)
        return snap
    if isinstance(x, Tracer):
        # tg.compile: the graph has no layouts, but NumPy's reshape of a strided array
        # into one dimension copies it in C order (its reshape back is a view of that)
        return np.reshape(np.reshape(x, (-1,)), x.shape)
    return np.array(x, order="C", copy=True)
def _clone(x):
    # a node of its own holding a private copy: the tape must not share the operand's
    # node (its grad_fn, hooks and in-place history are the clone's own, as in PyTorch)
    value = x._value if isinstance(x, EagerTracer) else x
    if isinstance(value, np.ndarray) and any(s == 0 and n > 1 for n, s in
                                             zip(value.shape, value.strides)):
        # an expanded tensor is no dense layout to preserve: PyTorch's copy is contiguous
        return _c_order(x)
    if isinstance(x, EagerTracer):
        return _private_copy(x)
    return np.copy(x)


def _renamed(pieces, name):
    for k, p in enumerate(pieces):
        if p.grad_fn is not None:
            p.grad_fn._name = name
        if p._base is not None and p._creation is None and _grad_enabled():
            # one of several views one function returned (PyTorch's MULTI_OUTPUT_NODE)
            p._creation = ("multi" if p._base.requires_grad else "multi_plain", k,
                           name[:name.index("Backward")], False)
    return pieces


def _check_gather_bounds(idx, dim, size):
    """PyTorch's gather reads no index from the end: each must be in ``[0, size)``."""
    bad = (idx < 0) | (idx >= size)
    if bad.any():
        raise _err(f"index {idx[bad][0]} is out of bounds for dimension {dim} with size {size}")


def _traced_index(key):
    """Whether ``key`` holds an index tensor traced by a transform (``torch.func.vmap``
    over the indices): its values are the transform's, not those it was traced with."""
    for k in key if isinstance(key, tuple) else (key,):
        if isinstance(k, TensorBase) and k._tracer is not None and \
                not isinstance(k._tracer, EagerTracer):
            return True
    return False


def _traced_getitem(self, key):
    """``self[key]`` with the key's tensors as operands, so the transform traces the
    selection by their tracers (a gather)."""
    from ..tracer import Tracer
    from ..tracer.core import current_trace
    items = key if isinstance(key, tuple) else (key,)
    tensors = [k for k in items if isinstance(k, TensorBase)]

    def select(x, *ks):
        it = iter(ks)
        new = tuple(next(it) if isinstance(k, TensorBase) else k for k in items)
        if not isinstance(x, Tracer):
            x = current_trace().const(np.asarray(x))
        return x[new if isinstance(key, tuple) else new[0]]
    return call(select, self, *tensors, name="IndexBackward0")


class ShapeMethods:
    """``Tensor``'s shape operations and indexing."""

    __slots__ = ()

    def __getitem__(self, key):
        capture = _dispatch.CAPTURE.get()
        if capture is not None and capture.reads_item(key):
            return capture.getitem(self, key)       # tg.compile: compile/scalars.py
        if _traced_index(key):
            return _traced_getitem(self, key)
        key = _index_key(key)
        if isinstance(key, list):
            key = np.asarray(key)
        elif isinstance(key, tuple) and any(isinstance(k, list) for k in key):
            key = tuple(np.asarray(k) if isinstance(k, list) else k for k in key)
        basic = is_basic(key)
        if basic:
            items = key if isinstance(key, tuple) else (key,)
            if not any(k is Ellipsis for k in items):
                # x[0] of NumPy is a copy when it is 0-d; x[0, ...] is the view PyTorch makes
                key = tuple(items) + (Ellipsis,)
        return call(lambda x: x[_operand_key(x, key)], self, name=getitem_name(key),
                    view_of=self if basic else None)

    def view(self, *shape):
        shape = _resolve_shape(_sizes(shape), self.numel())
        if self._data is not None and not is_contiguous(self):
            try:
                np.reshape(layout(self), shape, copy=False)
            except ValueError:
                raise _err("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None
        return _view(self, shape)

    def reshape(self, *shape):
        """A view when the strides allow one (``ViewBackward0``, or ``ReshapeAliasBackward0`` for
        a non-contiguous tensor), else a copy viewed (``UnsafeViewBackward0`` of a clone), as
        PyTorch records it."""
        shape = _resolve_shape(_sizes(shape), self.numel())
        data = self._data
        if data is None or is_contiguous(self):
            return _view(self, shape)
        try:
            np.reshape(layout(self), shape, copy=False)
        except ValueError:
            t = _dispatch.unviewed(_view(self.clone(), shape))
            name = "UnsafeViewBackward0"
        else:
            t = _view(self, shape)
            name = "ReshapeAliasBackward0"
        if t.grad_fn is not None and t.grad_fn._name == "ViewBackward0":
            t.grad_fn._name = name
        return t

    def view_as(self, other):
        return self.view(tuple(other.shape))

    def reshape_as(self, other):
        return self.reshape(tuple(other.shape))

    def flatten(self, start_dim=0, end_dim=-1):
        shape = tuple(self.shape)
        if not shape:
            return self.reshape(1)
        s, e = start_dim % len(shape), end_dim % len(shape)
        if s == e:
            return self                         # PyTorch hands the tensor itself back
        new = shape[:s] + (int(np.prod(shape[s:e + 1], dtype=np.int64)),) + shape[e + 1:]
        return self.reshape(new)

    def ravel(self):
        # PyTorch's: contiguous() then view(-1) (a view of the copy for a strided tensor)
        return self.contiguous().view(-1)

    def unflatten(self, dim, sizes):
        shape = tuple(self.shape)
        dim = dim % len(shape)
        return _view(self, shape[:dim] + tuple(sizes) + shape[dim + 1:])

    def squeeze(self, dim=None):
        shape = tuple(self.shape)
        if dim is None:
            new = tuple(s for s in shape if s != 1)
        else:
            dims = {d % builtins.max(len(shape), 1)
                    for d in (dim if isinstance(dim, (tuple, list)) else (dim,))}
            new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
        t = _view(self, new)
        if t.grad_fn is not None and t.grad_fn._name == "ViewBackward0":
            t.grad_fn._name = "SqueezeBackward0" if dim is None else \
                "SqueezeBackward2" if isinstance(dim, (tuple, list)) else "SqueezeBackward1"
        return t

    def unsqueeze(self, dim):
        shape = tuple(self.shape)
        n = len(shape) + 1
        if not -n <= dim < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                             f"but got {dim})")
        dim = dim % n
        t = _view(self, shape[:dim] + (1,) + shape[dim:])
        if t.grad_fn is not None and t.grad_fn._name == "ViewBackward0":
            t.grad_fn._name = "UnsqueezeBackward0"
        return t

    def permute(self, *dims):
        if not dims:
            raise TypeError('permute() missing 1 required positional arguments: "dims"')
        dims = _sizes(dims)
        if sorted(d % builtins.max(self.dim(), 1) for d in dims) != list(range(self.dim())):
            raise _err(f"permute(sparse_coo): number of dimensions in the tensor input does "
                               f"not match the length of the desired ordering of dimensions i.e. "
                               f"input.dim() = {self.dim()} is not equal to len(dims) = {len(dims)}")
        return call(lambda x: np.transpose(x, dims), self, name="PermuteBackward0", view_of=self)

    def transpose(self, dim0, dim1):
        n = self.dim()
        if n == 0:
            return self
        perm = list(range(n))
        perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
        return call(lambda x: np.transpose(x, perm), self, name="TransposeBackward0", view_of=self)

    def t(self):
        if self.dim() > 2:
            raise _err(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
        return call(np.transpose, self, name="TBackward0", view_of=self)

    swapaxes = swapdims = transpose

    @property
    def T(self):
        return call(np.transpose, self, name="PermuteBackward0", view_of=self)

    @property
    def mT(self):
        return self.transpose(-2, -1)

    def expand(self, *sizes):
        sizes = _sizes(sizes)
        shape = tuple(self.shape)
        lead = len(sizes) - len(shape)
        if lead < 0:
            raise _err(f"expand: the number of sizes provided ({len(sizes)}) must be greater "
                               f"or equal to the number of dimensions in the tensor ({len(shape)})")
        target = tuple(shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
        for i, s in enumerate(shape):
            if s != 1 and s != target[lead + i]:
                raise _err(f"The expanded size of the tensor ({target[lead + i]}) must match "
                                   f"the existing size ({s}) at non-singleton dimension {lead + i}.  "
                                   f"Target sizes: {list(sizes)}.  Tensor sizes: {list(shape)}")
        # expanding to the same shape makes no stride 0, so the view stays writable (PyTorch)
        grow = np.broadcast_to if target != shape else np.reshape
        return call(lambda x: grow(x, target), self, name="ExpandBackward0", view_of=self)

    broadcast_to = expand

    def expand_as(self, other):
        return self.expand(tuple(other.shape))

    def repeat(self, *sizes):
        sizes = _sizes(sizes)
        return call(lambda x: np.tile(x, sizes), self, name="RepeatBackward0")

    def contiguous(self, memory_format=None):
        """This tensor in C order (itself when it is already; any ``memory_format`` gives C
        order: memory_format.py)."""
        _memory_format.check(memory_format, "contiguous")
        if self._data is None or is_contiguous(self):
            return self
        return call(_c_order, self, name="CloneBackward0")    # PyTorch copies a strided tensor

    def clone(self, *, memory_format=None):
        _memory_format.check(memory_format, "clone")
        return call(_clone, self, name="CloneBackward0")

    def flip(self, *dims):
        return call(lambda x: np.flip(x, _sizes(dims)), self, name="FlipBackward0")

    def roll(self, shifts, dims=None):
        return call(lambda x: np.roll(x, shifts, dims), self, name="RollBackward0")

    def narrow(self, dim, start, length):
        key = (slice(None),) * (dim % self.dim()) + (slice(start, start + length),)
        return self[key]

    def split(self, split_size, dim=0):
        n = self.shape[dim]
        if isinstance(split_size, int):
            bounds = list(range(0, n, split_size)) + [n]
        else:
            bounds = list(np.cumsum([0] + list(split_size)))
        pre = (slice(None),) * (dim % self.dim())
        return _renamed(tuple(self[pre + (slice(a, b),)] for a, b in zip(bounds[:-1], bounds[1:])),
                        "SplitBackward0" if isinstance(split_size, int) else "SplitWithSizesBackward0")

    def chunk(self, chunks, dim=0):
        n = self.shape[dim]
        return self.split(-(-n // chunks), dim)

    def unbind(self, dim=0):
        pre = (slice(None),) * (dim % self.dim())
        return _renamed(tuple(self[pre + (i,)] for i in range(self.shape[dim])), "UnbindBackward0")

    def gather(self, dim, index):
        if _traced_index(index) and self.dim() and index.dim() == self.dim() and \
                index.dtype in (np.int32, np.int64):
            # indices traced by a transform (torch.func.vmap): gathered by their tracer
            _check_dim(self, dim)
            dim = dim % self.dim()
            grids = np.indices(tuple(index.shape), sparse=True)
            return _traced_getitem(self, tuple(index if d == dim else grids[d]
                                               for d in range(self.dim())))
        idx = index._concrete("gather") if isinstance(index, TensorBase) else np.asarray(index)
        _check_dim(self, dim)
        if idx.dtype not in (np.int32, np.int64):
            raise _err("gather(): Expected dtype int32/int64 for index")
        if self.dim() == 0 or idx.ndim == 0:        # one element: gather(0) of it, or nothing
            if idx.ndim > 1 or self.dim() > 1:
                raise _err("Index tensor must have the same number of dimensions as input tensor")
            _check_gather_bounds(idx, 0, 1)
            return call(lambda x: np.reshape(x, (1,))[np.zeros(idx.shape, np.int64)], self,
                        name="GatherBackward0")
        if idx.ndim != self.dim():
            raise _err("Index tensor must have the same number of dimensions as input tensor")
        dim = dim % self.dim()
        for d in range(self.dim()):
            if d != dim and idx.shape[d] > self.shape[d]:
                raise _err(f"Size does not match at dimension {d} expected index {list(idx.shape)} "
                           f"to be no larger than self {list(self.shape)} apart from dimension "
                           f"{dim}")
        _check_gather_bounds(idx, dim, self.shape[dim])
        grids = np.indices(idx.shape, sparse=True)
        key = tuple(idx if d == dim else grids[d] for d in range(self.dim()))
        return call(lambda x: x[_operand_key(x, key)], self, name="GatherBackward0")
