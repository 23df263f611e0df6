"""Sparse COO tensors, as PyTorch's ``torch.sparse_coo``: ``tg.sparse_coo_tensor``,
``Tensor.to_sparse``, ``.to_dense``, ``.coalesce``, ``.indices``/``.values``,
``tg.sparse.mm`` / ``tg.mm`` / ``@`` with a sparse operand and ``tg.sparse.sum``.

A sparse tensor is a ``Tensor`` whose value (``_data``, and on the tape its node) is the
vector of stored values, with the index matrix and the size beside it. Gradients therefore
flow through the stored values: a sparse leaf that requires grad receives a sparse
gradient at its own (coalesced) indices from ``torch.sparse.mm``, ``to_dense`` and
``sparse.sum``, and values made from a dense tensor receive their gradient as any other
operation's operand. ``torch.mm`` and ``@`` give a sparse *leaf* a dense gradient in
PyTorch; there the product is recorded on a dense copy of the leaf, whose gradient
``.grad`` reports (added to the sparse one, as PyTorch accumulates). Every product,
scatter and sum over the entries is the registry's ``sparse_matmul`` primitive (a CSR
matrix applied to a dense operand, ``ir/prims/sparse_ops.py``), so it is recorded and
differentiated like everything else, to any order.
"""
from __future__ import annotations

import sys
import types

import numpy as np

from ..ir import apply
from .dispatch import call
from .tensor import Tensor, as_array

__all__ = ["SparseTensor", "sparse_coo_tensor", "sparse", "sparse_coo", "strided", "spmm"]


class _Layout:
    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "torch." + self._name


sparse_coo, strided = _Layout("sparse_coo"), _Layout("strided")


def _segment(rows, n_rows, v):
    """``M @ v`` for the 0/1 matrix ``M`` (``n_rows`` x nnz) with a one at ``(rows[k], k)``:
    the stored values ``v`` (nnz, ...) added up by target row (a scatter, a coalesce or a
    sum, as one ``sparse_matmul``)."""
    nnz = len(rows)
    tail = tuple(v.shape[1:])
    order = np.argsort(rows, kind="stable")
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_rows))]).astype(np.int64)
    flat = np.reshape(v, (nnz, int(np.prod(tail, dtype=np.int64)))) if tail else v
    out = apply("sparse_matmul", np.ones(nnz, v.dtype), flat, indptr=indptr,
                indices=order.astype(np.int64), shape=(int(n_rows), nnz), transpose=False)
    return np.reshape(out, (int(n_rows),) + tail) if tail else out


def _linear(indices, dims):
    if indices.shape[0] == 0:
        return np.zeros(indices.shape[1], np.int64)
    return np.ravel_multi_index(tuple(indices), dims).astype(np.int64)


class SparseTensor(Tensor):
    """A COO sparse tensor: ``indices`` (sparse_dim, nnz), stored values (nnz, *dense
    sizes) as this tensor's own value, and ``size``."""

    __slots__ = ("_idx", "_size", "_coalesced", "_shadow")

    # -- what it is ------------------------------------------------------------------
    is_sparse = True
    layout = sparse_coo

    @property
    def shape(self):
        from .tensor import Size
        return Size(self._size)

    def size(self, dim=None):
        return self.shape if dim is None else self._size[dim]

    def dim(self):
        return len(self._size)

    @property
    def ndim(self):
        return len(self._size)

    def numel(self):
        return int(np.prod(self._size, dtype=np.int64))

    def __len__(self):
        return self._size[0]

    def sparse_dim(self):
        return self._idx.shape[0]

    def dense_dim(self):
        return len(self._size) - self._idx.shape[0]

    def _nnz(self):
        return self._idx.shape[1]

    def is_coalesced(self):
        return self._coalesced

    @property
    def grad(self):
        sparse_part = self._sparse_grad()
        sh = self._shadow
        if sh is None or sh._grad is None:
            return sparse_part
        # ``torch.mm`` / ``@`` hand a sparse leaf a dense gradient; with a sparse one too,
        # PyTorch's accumulation is dense
        dense = sh._grad
        if sparse_part is not None:
            dense = Tensor._plain(dense._data + sparse_part.to_dense()._data)
        return dense

    def _dense_leaf(self):
        """The dense stand-in that ``torch.mm`` / ``@`` record for a sparse leaf that
        requires grad (PyTorch's gradient there is dense): made once, its gradient read
        by ``grad``."""
        if self._shadow is None:
            dense = np.zeros(self._size, self._data.dtype)
            np.add.at(dense, tuple(self._idx), self._data)
            self._shadow = Tensor._plain(dense, requires_grad=True)
        return self._shadow

    def _sparse_grad(self):
        g = self._grad
        if g is None or isinstance(g, SparseTensor):
            return g
        if self._coalesced:
            return _make(g.detach(), self._idx, self._size, True)
        # PyTorch's: the dense gradient at the coalesced pattern (each entry's gradient is
        # the gradient at its position, so a duplicate's is the same number)
        sdims = self._size[:self.sparse_dim()]
        uniq, first = np.unique(_linear(self._idx, sdims), return_index=True)
        idx = np.array(np.unravel_index(uniq, sdims), dtype=np.int64).reshape(len(sdims), -1)
        return _make(Tensor._plain(g._data[first]), idx, self._size, True)

    @grad.setter
    def grad(self, value):
        if self._shadow is not None:
            self._shadow._grad = None
        if isinstance(value, SparseTensor):
            if not np.array_equal(value._idx, self._idx):
                raise RuntimeError("tracegrad: a sparse gradient must have the indices of "
                                   "its sparse tensor")
            value = value._values()
        Tensor.grad.fset(self, value if value is None else _values_like(self, value))

    # -- parts -----------------------------------------------------------------------
    def _indices(self):
        return Tensor._plain(self._idx.copy())

    def _values(self):
        return call(_copy, self, name="ValuesBackward0")

    def indices(self):
        self._need_coalesced("indices")
        return self._indices()

    def values(self):
        self._need_coalesced("values")
        return self._values()

    def _need_coalesced(self, what):
        if not self._coalesced:
            raise RuntimeError(f"Cannot get {what} on an uncoalesced tensor, please call "
                               ".coalesce() first")

    def coalesce(self):
        """Duplicates added up, entries in row-major order (``self`` when already so)."""
        if self._coalesced:
            return self
        sdims = self._size[:self.sparse_dim()]
        lin = _linear(self._idx, sdims)
        uniq, inverse = np.unique(lin, return_inverse=True)
        values = call(lambda v: _segment(inverse.ravel(), len(uniq), v), self,
                      name="CoalesceBackward0")
        idx = np.array(np.unravel_index(uniq, sdims), dtype=np.int64).reshape(len(sdims), -1)
        return _make(values, idx, self._size, True)

    def to_dense(self, dtype=None, *, masked_grad=None):
        sdims = self._size[:self.sparse_dim()]
        lin = _linear(self._idx, sdims)
        n = int(np.prod(sdims, dtype=np.int64))
        size = self._size
        out = call(lambda v: np.reshape(_segment(lin, n, v), size), self,
                   name="ToDenseBackward0")
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, *args, **kwargs):
        return self

    def to(self, *args, **kwargs):
        """A cast of the stored values (``dtype`` positionally or by keyword); a device
        (the CPU) leaves the tensor as it is."""
        dtype = kwargs.get("dtype")
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, (np.dtype, type)):
                dtype = a
        if dtype is None or np.dtype(dtype) == self.dtype:
            return self
        dt = np.dtype(dtype)
        return self._scaled(lambda v: v.astype(dt), "ToCopyBackward0")

    def float(self):
        return self.to(np.float32)

    def double(self):
        return self.to(np.float64)

    def cpu(self):
        return self

    def clone(self):
        return self._scaled(_copy, "CloneBackward0")

    def detach(self):
        return _make(Tensor._plain(self._data), self._idx, self._size, self._coalesced)

    def t(self):
        if self.sparse_dim() != 2 or self.dense_dim():
            raise RuntimeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, "
                               f"but got {self.sparse_dim()} sparse and {self.dense_dim()} "
                               "dense dimensions")
        values = call(_copy, self, name="TBackward0")
        return _make(values, self._idx[::-1].copy(), self._size[::-1], False)

    def transpose(self, dim0, dim1):
        if self.dim() == 2 and {dim0 % 2, dim1 % 2} == {0, 1}:
            return self.t()
        raise NotImplementedError("tracegrad: transpose of a sparse tensor is supported for "
                                  "the two dimensions of a sparse matrix only")

    # -- arithmetic that keeps the pattern ---------------------------------------------
    def _scaled(self, fn, name):
        return _make(call(fn, self, name=name), self._idx, self._size, self._coalesced)

    def __mul__(self, other):
        if isinstance(other, Tensor):
            raise NotImplementedError("tracegrad: a sparse tensor times a tensor is not "
                                      "supported; multiply by a number, or call .to_dense()")
        return self._scaled(lambda v: v * other, "MulBackward0")

    __rmul__ = mul = __mul__

    def __truediv__(self, other):
        if isinstance(other, Tensor):
            raise NotImplementedError("tracegrad: a sparse tensor divided by a tensor is not "
                                      "supported; divide by a number, or call .to_dense()")
        return self._scaled(lambda v: v / other, "DivBackward0")

    div = __truediv__

    def __neg__(self):
        return self._scaled(np.negative, "NegBackward0")

    neg = __neg__

    def sum(self, dim=None, keepdim=False, dtype=None):
        if dim is None:
            return call(np.sum, self, name="SumBackward0")
        return _sparse_sum(self, dim)

    def __add__(self, other):
        if isinstance(other, SparseTensor):
            return _add_sparse(self, other)
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")

    def __radd__(self, other):
        if isinstance(other, Tensor):
            return other + self.to_dense()
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) "
                           "instead.")

    add = __add__

    # -- products ----------------------------------------------------------------------
    def mm(self, other):
        return _product(self, other, "MmBackward0", "mm")

    def matmul(self, other):
        return _product(self, other, "MmBackward0", "matmul")

    __matmul__ = matmul

    def __rmatmul__(self, other):
        return _left_product(other, self)

    def __repr__(self):
        from .tensor import default_dtype
        from .tensor_repr import tensor_repr
        idx = tensor_repr(self._idx, default_dtype()).replace("\n", "\n" + " " * 15)
        vals = tensor_repr(self._data, self._data.dtype).replace("\n", "\n" + " " * 14)
        extra = ""
        if self.grad_fn is not None:
            extra = f", grad_fn=<{self.grad_fn.name()}>"
        elif self.requires_grad:
            extra = ", requires_grad=True"
        dt = "" if self._data.dtype == default_dtype() else \
            f", dtype=torch.{np.dtype(self._data.dtype).name}"
        return (f"tensor(indices={idx},\n       values={vals},\n       size={self._size}, "
                f"nnz={self._nnz()}{dt}, layout=torch.sparse_coo{extra})")

    __str__ = __repr__


def _copy(v):
    return np.array(v, copy=True) if isinstance(v, np.ndarray) else v * 1


def _values_like(s, value):
    if tuple(value.shape) != tuple(s._data.shape):
        raise RuntimeError(f"assigned grad has data of a different size: {list(value.shape)} "
                           f"vs {list(s._data.shape)}")
    return value


def _make(values, idx, size, coalesced):
    """The sparse tensor whose stored values are the tensor ``values`` (its node, if it
    was recorded, becomes the sparse tensor's)."""
    s = object.__new__(SparseTensor)
    for slot in ("_data", "_tracer", "_requires_grad", "_grad", "_vc", "_input", "_hooks",
                 "_base", "_retains", "_creation"):
        setattr(s, slot, getattr(values, slot))
    s._grad, s._input, s._hooks, s._retains = None, None, None, False
    s._idx, s._size, s._coalesced = idx, tuple(int(n) for n in size), bool(coalesced)
    s._shadow = None
    return s


def load_into(target, src):
    """``target.copy_(src)`` for a module's state (``load_state_dict``): a sparse target
    takes the source's indices, values (cast to its dtype) and size, as PyTorch's."""
    if target.is_sparse is not True or src.is_sparse is not True:
        raise RuntimeError("tracegrad: a sparse tensor loads from a sparse tensor only (and a "
                           "dense one from a dense one)")
    target._idx = src._idx.copy()
    target._data = np.array(src._data, dtype=target._data.dtype, copy=True)
    target._size, target._coalesced = src._size, src._coalesced
    target._input, target._shadow = None, None
    target._vc.v += 1


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory=False,
                      requires_grad=False, check_invariants=None, is_coalesced=None):
    """A COO sparse tensor from ``indices`` (sparse_dim, nnz) and ``values`` (nnz, ...);
    ``size`` defaults to one more than the largest index in each sparse dimension."""
    if device is not None:
        from .device import resolve
        resolve(device)
    idx = np.asarray(indices._data if isinstance(indices, Tensor) else indices)
    if idx.dtype.kind not in "iub" and idx.size:
        idx = idx.astype(np.int64)
    idx = idx.astype(np.int64)
    if idx.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(idx.shape)}")
    if not isinstance(values, Tensor):
        values = Tensor._plain(as_array(values, dtype))
    elif dtype is not None and values.dtype != np.dtype(dtype):
        values = values.to(dtype)
    nnz = idx.shape[1]
    if values.dim() == 0 or values.shape[0] != nnz:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: "
                           f"{nnz}, nnz from values: {values.shape[0] if values.dim() else 1}")
    sparse_dim = idx.shape[0]
    if size is None:
        sizes = tuple(int(idx[d].max()) + 1 if nnz else 0 for d in range(sparse_dim))
        size = sizes + tuple(values.shape[1:])
    size = tuple(int(n) for n in size)
    dense_dim = values.dim() - 1
    if len(size) != sparse_dim + dense_dim:
        raise RuntimeError(f"'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) "
                           f"= {len(size)}, sparse_dim = {sparse_dim}, dense_dim = {dense_dim}")
    for d in range(sparse_dim):
        if nnz and (idx[d].max() >= size[d] or idx[d].min() < 0):
            bad = int(idx[d].max()) if idx[d].max() >= size[d] else int(idx[d].min())
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is "
                               f"{size[d]} but found index {bad}")
    if tuple(values.shape[1:]) != size[sparse_dim:]:
        raise RuntimeError(f"values has incorrect size, expected {[nnz, *size[sparse_dim:]]}, "
                           f"got {list(values.shape)}")
    if values.requires_grad:
        v = call(lambda a: a + 0 if not isinstance(a, np.ndarray) else np.array(a, copy=True),
                 values, name="SparseCooTensorWithDimsAndTensorsBackward0")
    else:
        v = Tensor._plain(np.array(values._data, copy=True))
    coalesced = bool(is_coalesced) if is_coalesced is not None else nnz <= 1
    s = _make(v, idx.copy(), size, coalesced)
    if requires_grad:
        s.requires_grad_(True)
    return s


def to_sparse(self, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """The coalesced COO form of a dense tensor: its nonzero entries (rows of the trailing
    ``dim - sparse_dim`` dimensions that are not all zero)."""
    if layout is not None and layout is not sparse_coo:
        raise NotImplementedError(f"tracegrad: to_sparse supports layout=torch.sparse_coo "
                                  f"only, not {layout}")
    if isinstance(self, SparseTensor):
        return self
    sd = self.dim() if sparse_dim is None else int(sparse_dim)
    if not 0 < sd <= self.dim() and not (sd == 0 == self.dim()):
        raise RuntimeError(f"sparse_dim must be in [0, {self.dim()}] but got {sparse_dim}")
    data = self._data
    lead = data.reshape(data.shape[:sd] + (-1,)) if data.size else data.reshape(
        data.shape[:sd] + (0,))
    keep = np.any(lead != 0, axis=-1) if sd < data.ndim else data != 0
    idx = np.array(np.nonzero(keep), dtype=np.int64).reshape(sd, -1)
    where = tuple(idx)
    values = call(lambda x: x[where], self, name="ToSparseBackward1" if sparse_dim is None
                  else "ToSparseBackward0")
    return _make(values, idx, tuple(data.shape), True)


def _csr_parts(s):
    """(indptr, column indices, entry order) of a 2-D sparse matrix's stored entries."""
    rows, cols = s._idx
    order = None if s._coalesced else np.argsort(rows, kind="stable")
    if order is not None:
        rows, cols = rows[order], cols[order]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=s._size[0]))])
    return indptr.astype(np.int64), cols.astype(np.int64), order


def _check_mm(s, d, what):
    if not isinstance(d, Tensor):
        raise TypeError(f"{what}(): argument 'mat2' (position 2) must be Tensor, not "
                        f"{type(d).__name__}")
    if isinstance(d, SparseTensor):
        raise NotImplementedError("tracegrad: a product of two sparse tensors is not "
                                  "supported; call .to_dense() on one of them")
    if s.sparse_dim() != 2 or s.dense_dim():
        raise RuntimeError(f"tracegrad: {what} supports a 2-D sparse matrix without dense "
                           f"dimensions, got sparse_dim={s.sparse_dim()}, "
                           f"dense_dim={s.dense_dim()}")
    if d.dim() not in (1, 2) or (what != "matmul" and d.dim() != 2):
        raise RuntimeError(f"mat2 must be a matrix, got {d.dim()}-D tensor")
    if d.shape[0] != s._size[1]:
        if what == "matmul" and d.dim() == 1:
            raise RuntimeError(f"size mismatch, got input ({s._size[0]}), mat "
                               f"({s._size[0]}x{s._size[1]}), vec ({d.shape[0]})")
        raise RuntimeError(f"addmm: Argument #3 (dense): Expected dim 0 size {s._size[1]}, "
                           f"got {d.shape[0]}")
    if s.dtype != d.dtype:
        raise RuntimeError(f"expected scalar type {_scalar(s.dtype)} but found "
                           f"{_scalar(d.dtype)}")


def _scalar(dtype):
    from .tensor import _scalar_name
    return _scalar_name(np.dtype(dtype))


def _product(s, d, name, what):
    """``s @ d`` for a 2-D sparse ``s``, one ``sparse_matmul`` node (gradients to ``d``
    and to the stored values)."""
    _check_mm(s, d, what)
    if name == "MmBackward0" and _dense_grad_wanted(s):
        return call(np.matmul, s._dense_leaf(), d, name=name)
    indptr, cols, order = _csr_parts(s)
    shape = s._size

    def fn(v, x):
        data = v if order is None else v[order]
        return apply("sparse_matmul", data, x, indptr=indptr, indices=cols, shape=shape,
                     transpose=False)
    return call(fn, s, d, name=name)


def _dense_grad_wanted(s):
    """Whether ``s`` is a sparse leaf that will take a gradient (``torch.mm`` and ``@``
    give it a dense one)."""
    from . import grad_mode
    return s._tracer is None and s._requires_grad and grad_mode.is_grad_enabled()


def _left_product(d, s):
    """``d @ s`` for a dense ``d`` and a 2-D sparse ``s``: ``(sᵀ dᵀ)ᵀ``."""
    if not isinstance(d, Tensor):
        d = Tensor._plain(as_array(d))
    if s.sparse_dim() != 2 or s.dense_dim() or d.dim() not in (1, 2):
        raise RuntimeError("tracegrad: dense @ sparse supports a 1-D or 2-D dense operand and "
                           "a 2-D sparse matrix")
    if d.shape[-1] != s._size[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied "
                           f"({d.shape[0] if d.dim() == 2 else 1}x{d.shape[-1]} and "
                           f"{s._size[0]}x{s._size[1]})")
    if s.dtype != d.dtype:
        raise RuntimeError(f"expected scalar type {_scalar(d.dtype)} but found "
                           f"{_scalar(s.dtype)}")
    if _dense_grad_wanted(s):
        return call(np.matmul, d, s._dense_leaf(), name="MmBackward0")
    indptr, cols, order = _csr_parts(s)
    shape = s._size

    def fn(x, v):
        data = v if order is None else v[order]
        xt = np.transpose(x) if x.ndim == 2 else x
        out = apply("sparse_matmul", data, xt, indptr=indptr, indices=cols, shape=shape,
                    transpose=True)
        return np.transpose(out) if x.ndim == 2 else out
    return call(fn, d, s, name="MmBackward0")


def _sparse_sum(s, dim):
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    nd = s.dim()
    dims = sorted({d % nd for d in dims})
    sd = s.sparse_dim()
    if any(d >= sd for d in dims):
        raise NotImplementedError("tracegrad: sparse.sum over dense dimensions of a hybrid "
                                  "sparse tensor is not supported")
    keep = [d for d in range(sd) if d not in dims]
    if not keep:        # every sparse dimension summed: a dense result
        return call(lambda v: np.sum(v, axis=0), s, name="SparseSumBackward0")
    kept_size = tuple(s._size[d] for d in keep)
    lin = _linear(s._idx[keep], kept_size)
    uniq, inverse = np.unique(lin, return_inverse=True)
    values = call(lambda v: _segment(inverse.ravel(), len(uniq), v), s,
                  name="SparseSumBackward0")
    idx = np.array(np.unravel_index(uniq, kept_size), dtype=np.int64).reshape(len(keep), -1)
    return _make(values, idx, kept_size + s._size[sd:], True)


def _add_sparse(a, b):
    if a._size != b._size:
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has "
                           f"size {list(a._size)} while other has size {list(b._size)} "
                           "(FYI: dense-sparse addition does not currently support broadcasting)")
    if a.sparse_dim() != b.sparse_dim():
        raise RuntimeError("add: expected 'self' and 'other' to have the same number of "
                           "sparse dimensions")
    values = call(lambda u, v: np.concatenate([u, v]), a, b, name="AddBackward0")
    out = _make(values, np.concatenate([a._idx, b._idx], axis=1), a._size, False)
    return out.coalesce() if a._coalesced and b._coalesced else out


# -- the torch.sparse namespace ---------------------------------------------------------
def _mm(mat1, mat2):
    """``torch.sparse.mm``: a sparse matrix times a dense one (or sparse times sparse,
    not supported); its gradient to a sparse leaf is sparse, at the stored entries."""
    if not isinstance(mat1, SparseTensor):
        if isinstance(mat2, SparseTensor):
            return _left_product(mat1, mat2)
        return mat1.mm(mat2)
    return _product(mat1, mat2, "SparseAddmmBackward0", "mm")


def _sum(input, dim=None, dtype=None):
    """``torch.sparse.sum``: all entries (a dense scalar), or over sparse dimensions ``dim``
    (a sparse tensor; dense when every sparse dimension is summed)."""
    if not isinstance(input, SparseTensor):
        raise NotImplementedError("torch.sparse.sum expects a sparse tensor")
    out = call(np.sum, input, name="SumBackward0") if dim is None \
        else _sparse_sum(input, dim)
    return out if dtype is None else out.to(dtype)


def _addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``torch.sparse.addmm``: ``beta * mat + alpha * (mat1 @ mat2)`` for a sparse ``mat1``."""
    prod = _mm(mat1, mat2)
    if alpha != 1:
        prod = prod * alpha
    return prod + (mat if beta == 1 else mat * beta)


def spmm(input, mat2):
    """``torch.spmm``: ``torch.mm`` with a sparse (or dense) first operand."""
    if isinstance(input, SparseTensor):
        return input.mm(mat2)
    if isinstance(mat2, SparseTensor):
        return _left_product(input, mat2)
    return input.mm(mat2)


def _legacy_constructor(dtype, name):
    def make(indices, values, size=None):
        # (as PyTorch's: a tensor of values keeps its dtype, whatever the class's name)
        import warnings
        warnings.warn("torch.sparse.SparseTensor(indices, values, shape, *, device=) is "
                      "deprecated.  Please use torch.sparse_coo_tensor(indices, values, shape, "
                      "dtype=, device=).", UserWarning, stacklevel=2)
        if not isinstance(values, Tensor):
            values = Tensor._plain(as_array(values, dtype))
        return sparse_coo_tensor(indices, values, size)
    make.__name__ = name
    make.__doc__ = f"``torch.sparse.{name}(indices, values, size)``: the legacy constructor."
    return make


sparse = types.ModuleType("tracegrad.sparse",
                          "Sparse COO tensors: ``mm``, ``sum``, ``addmm`` and the legacy "
                          "``FloatTensor`` / ``DoubleTensor`` constructors.")
sparse.mm = _mm
sparse.sum = _sum
sparse.addmm = _addmm
sparse.FloatTensor = _legacy_constructor(np.dtype(np.float32), "FloatTensor")
sparse.DoubleTensor = _legacy_constructor(np.dtype(np.float64), "DoubleTensor")
sparse.__all__ = ["mm", "sum", "addmm", "FloatTensor", "DoubleTensor"]
sys.modules.setdefault(sparse.__name__, sparse)     # ``import torch.sparse``

# -- what a sparse tensor refuses: Tensor methods that would act on the stored values as
# if they were the whole tensor (PyTorch has no sparse kernel for most of them either)
_REFUSED = ("exp", "log", "sqrt", "abs", "relu", "sin", "cos", "tanh", "sigmoid", "pow",
            "__pow__", "__rpow__", "__sub__", "__rsub__", "sub", "__getitem__",
            "__setitem__", "__iter__", "view", "reshape", "unsqueeze", "squeeze", "permute",
            "flatten", "index_select", "numpy", "tolist", "item", "__float__", "__int__",
            "__bool__", "__index__", "__array__", "contiguous", "mean", "max", "min",
            "argmax", "argmin", "softmax", "log_softmax", "prod", "cumsum", "gather",
            "masked_fill", "clamp", "__lt__", "__le__", "__gt__", "__ge__", "__eq__",
            "__ne__", "__and__", "__or__", "__xor__", "__invert__", "__abs__",
            "__floordiv__", "__mod__", "__rtruediv__", "expand", "repeat", "bmm", "mv",
            "dot", "norm", "var", "std", "exp_", "add_", "mul_", "sub_", "div_", "copy_",
            "fill_", "zero_", "clamp_", "relu_", "unbind", "split", "chunk", "narrow",
            "select", "flip", "roll", "__array_function__")


def _refused(name):
    def method(self, *args, **kwargs):
        raise NotImplementedError(f"tracegrad: {name}() is not supported on a sparse tensor; "
                                  "call .to_dense() first (or use torch.sparse.mm / "
                                  "torch.sparse.sum)")
    method.__name__ = name
    return method


for _name in _REFUSED:
    if _name not in SparseTensor.__dict__:
        setattr(SparseTensor, _name, _refused(_name))
SparseTensor.__hash__ = Tensor.__hash__
SparseTensor.T = property(lambda self: self.t())


# the new Tensor methods of this module (attached here; the lead moves them at merge)
Tensor.to_sparse = to_sparse
Tensor.to_sparse_coo = lambda self: to_sparse(self)
Tensor.is_sparse = False
Tensor.layout = strided
