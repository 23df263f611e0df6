"""Views of eager tensors and in-place changes made through them, as PyTorch records them.

A view shares its base's NumPy memory (``Tensor._data`` is a NumPy view of the base's),
its version counter and, through ``Tensor._base``, knows its base. For autograd, where a
view sits in its base is an index map: for each element of the view, the position of the
element it shares in the base's (C-order) flattening, read off the two arrays' memory.
With it, any view, whatever operation made it (``diagonal``, ``unfold``, ``as_strided``,
``expand``, a chain of them), is rebuilt from its base's current history as one
selection of the flattened base (PyTorch's ``AsStridedBackward0``), and an in-place
change of a view becomes its base's new history: the old base with the view's positions
replaced by the new values (PyTorch's ``CopySlices``).
"""
from __future__ import annotations

import numpy as np

from ..ir import apply
from ..tracer import coerce
from ..tracer.indexing import normalize
from .tape import TAPE, Version

OVERLAP = ("unsupported operation: more than one element of the written-to tensor refers to "
           "a single memory location. Please clone() the tensor before performing the "
           "operation.")
NO_GRAD_VIEW = ("A view was created in no_grad mode and is being modified inplace with grad "
                "mode enabled. Given that this use case is ambiguous and error-prone, it is "
                "forbidden. You can clarify your code by moving both the view and the inplace "
                "either both inside the no_grad block (if you don't want the inplace to be "
                "tracked) or both outside (if you want the inplace to be tracked).")


def overlapping(data):
    """PyTorch's test before writing to a tensor: some dimension of more than one element
    has stride 0 (an expanded dimension). Other overlaps (``unfold`` with a step below its
    size) are let through, as PyTorch lets them. An empty tensor has no element to share."""
    if data.size == 0:
        return False
    for n, s in zip(data.shape, data.strides):
        if s == 0 and n > 1:
            return True
    return False


def writable(view, base):
    """``view`` (a NumPy view of ``base``'s memory) made writable when ``base`` is: NumPy
    hands ``diagonal`` and ``broadcast_to`` out read-only, PyTorch's views are written."""
    if not view.flags.writeable and base.flags.writeable:
        try:
            view.flags.writeable = True
        except ValueError:
            pass
    return view


def _offsets(a, start):
    """The byte offset of each element of ``a`` from address ``start``."""
    off = np.full(a.shape, a.__array_interface__["data"][0] - start, np.int64)
    for k, (n, s) in enumerate(zip(a.shape, a.strides)):
        shape = [1] * a.ndim
        shape[k] = n
        off = off + (np.arange(n, dtype=np.int64) * s).reshape(shape)
    return off


def index_map(view, base):
    """For each element of ``view``, the position in ``base.reshape(-1)`` of the element it
    shares (both NumPy arrays over the same memory and of one dtype)."""
    start = base.__array_interface__["data"][0]
    off = _offsets(view, start)
    if base.flags.c_contiguous:
        return off // base.itemsize
    ob = _offsets(base, start).reshape(-1)
    order = np.argsort(ob, kind="stable")
    pos = np.searchsorted(ob[order], off)
    return order[np.minimum(pos, ob.size - 1)]


def _operand(idx):
    # an index array as an operand of the node rather than a constant in its params (the
    # backward plan's key then does not hold it), as ops._operand_key does
    return TAPE.input(idx, Version()) if idx.size > 1 else idx


def gathered(base, idx):
    """The view at positions ``idx`` of ``base`` (a tape tracer), as a node of its own."""
    flat = apply("reshape", base, shape=(int(np.prod(base.shape, dtype=np.int64)),))
    index, operands = normalize((_operand(idx),))
    return apply("getitem", flat, *operands, index=index)


def copy_slices(base, idx, values):
    """``base`` (a tape tracer) with the elements at positions ``idx`` replaced by
    ``values`` (a tape tracer of ``idx``'s shape): the base's history after an in-place
    change of one of its views."""
    shape = tuple(base.shape)
    flat = apply("reshape", base, shape=(int(np.prod(shape, dtype=np.int64)),))
    index, operands = normalize((_operand(idx),))
    new = apply("index_update", flat, coerce(values), *operands, index=index, mode="set")
    return apply("reshape", new, shape=shape)


# -- how a view was made (PyTorch's CreationMeta) ----------------------------------------------
# ``Tensor._creation`` is None for a view made the ordinary way, else (kind, output, name,
# derived): ``kind`` "no_grad" (made under no_grad), "multi" (one of several views one
# function returned: split, chunk, unbind) or "multi_plain" (the same, of a base that did
# not require grad); ``output`` its position among them; ``name`` the forward name of the
# operation that made it; ``derived`` whether it is a view of such a view. PyTorch forbids
# recording an in-place change of these views.
_MULTI = ("This view is the output of a function that returns multiple views. Such functions "
          "do not allow the output views to be modified inplace. You should replace the "
          "inplace operation by an out-of-place one.")
_AMBIGUOUS = ("Given that this use case is ambiguous and error-prone, it is forbidden. You can "
              "clarify your code by moving both the view and the inplace either both inside "
              "the no_grad block (if you don't want the inplace to be tracked) or both outside "
              "(if you want the inplace to be tracked).")


def view_name(backward_name):
    """``SelectBackward0`` -> ``Select``, as PyTorch's view messages name the operation."""
    name = backward_name or "View"
    return name[:name.index("Backward")] if "Backward" in name else name


def derived(creation, name):
    """The creation record of a view made from a view made as ``creation``."""
    return (creation[0], 0, view_name(name), True)


def inplace_error(creation):
    """PyTorch's message for an in-place change, recorded, of a view made as ``creation``."""
    kind, k, name, via = creation
    if kind == "no_grad":
        if via:
            return (f"Output {k} of {name} is a view of a view which was created in no_grad "
                    "mode and is being modified inplace with grad mode enabled. " + _AMBIGUOUS)
        return NO_GRAD_VIEW
    if kind == "multi_plain" and not via:
        return ("A view was created in no_grad mode and is being modified inplace with grad "
                "mode enabled. " + _MULTI)
    return f"Output {k} of {name} is a view and is being modified inplace. " + _MULTI


def rebase_error(creation):
    """PyTorch's message when a view made as ``creation`` is used after its base (or
    another view of it) changed in place."""
    kind, k, name, via = creation
    return (f"Output {k} of {name} is a view and its base or another view of its base has been "
            "modified inplace. " + _MULTI)
