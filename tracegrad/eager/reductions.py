"""Tensor reductions (``ReductionMethods``): ``sum``, ``mean``, ``prod``, ``max``/``min``
with indices, ``std``/``var``, ``logsumexp``, ``softmax``, norms and ``cumsum``, with
PyTorch's ``dim`` forms and dtype rules.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..ir import REGISTRY, apply
from ..ir.prims.softmax import logsumexp as _logsumexp
from ..tracer import user_src as _user_src
from .arithmetic import FAST, MinMax, _err
from .dispatch import call
from .grad_mode import is_grad_enabled as _grad_enabled
from .indexing import operand_key as _operand_key
from .profiler import current as _profiling
from .tape import TAPE, EagerTracer
from .tensor_base import TensorBase, _scalar_name, default_dtype


# -- reductions -------------------------------------------------------------------------
def _axis(dim):
    if isinstance(dim, list):
        dim = tuple(dim)
    return dim


def wrap_dim(t, dim):
    """One ``dim`` counted from 0, with PyTorch's IndexError out of range (a 0-d tensor
    takes dim 0 or -1)."""
    n = builtins.max(t.dim(), 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _scalar_dim(t, dim):
    """``dim`` for NumPy, as PyTorch reads a reduction's dims: None, or an empty tuple or
    list, is every dim (None is returned); each given dim must be in range (PyTorch takes
    dim 0 or -1 of a 0-d tensor as its one element) and given once. A tuple comes back as
    a tuple of the dims counted from 0, an int as itself."""
    dim = _axis(dim)
    _check_dim(t, dim)
    if dim is None or t.dim() == 0 or dim == ():
        return None
    return dim


def _int_dim(name, dim, required=False):
    """The ``dim`` of a reduction PyTorch takes along one dim only (``prod``, ``argmax``,
    ``cumsum``): an int, with PyTorch's TypeError for a tuple or a list (and for None where
    ``required``)."""
    if isinstance(dim, (tuple, list)) or required and dim is None:
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    return dim


def _check_nonempty(t, name, dim):
    """PyTorch's errors for a reduction without an identity (``amax``, ``argmax``) over no
    elements: every dim of an empty tensor, or a given dim of size 0."""
    if t.numel() != 0:
        return
    if dim is None or dim == () or dim == []:
        raise _err(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                   "Specify the reduction dim with the 'dim' argument.")
    d = _first_empty_dim(t, dim)
    if d is not None:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _first_empty_dim(t, dim):
    """The first given dim (as given) of size 0, the dims before it checked for range
    (PyTorch looks at them in order, and stops there)."""
    for d in (dim if isinstance(dim, (tuple, list)) else (dim,)):
        _check_dim(t, d)
        if t.dim() and t.shape[d] == 0:
            return d
    return None


_OMITTED = object()     # prod's and max's dim not given (an explicit None is an error there)


def _reduce(self, fn, name0, name1, dim, keepdim, dtype, axis):
    """``sum`` / ``mean`` / ``prod``: ``name0`` names the reduction of every element,
    ``name1`` one along given dims."""
    if dim is _OMITTED:
        dim = None
    elif dim is None and fn is np.prod:
        raise TypeError("prod() received an invalid combination of arguments - got "
                        "(NoneType), but expected (int dim, bool keepdim = False)")
    given = axis if dim is None else dim
    if fn is np.prod:
        _int_dim("prod", given)
    x = self if dtype is None else self.to(dtype)
    if fn is np.mean and x.dtype.kind not in "fc":
        raise _err("mean(): could not infer output dtype. Input dtype must be either a "
                   f"floating point or complex dtype. Got: {_scalar_name(x.dtype)}")
    if fn is not np.mean and x.dtype.kind in "biu" and x.dtype != np.int64:
        x = x.to(np.int64)              # PyTorch sums and multiplies integers in int64
    dim = _scalar_dim(self, given)
    return call(lambda v: fn(v, axis=dim, keepdims=keepdim), x,
                name=name0 if given is None else name1)


_SUM = REGISTRY["sum"]


def _fast_sum(x):
    """``x.sum()`` of a floating tensor the tape records: the one primitive ``np.sum``
    comes to (``call``'s steps, without its walks over the operands), or None."""
    tr = x._tracer
    if type(x._data) is not np.ndarray or x._data.dtype.kind != "f" \
            or not (tr is None and x._requires_grad or type(tr) is EagerTracer) \
            or not _grad_enabled() or _profiling() is not None:
        return None
    t = x._traced()     # a tape tracer (checked above)
    if t._view is not None:
        return None
    src = TAPE.src
    out = TAPE.add1(_SUM, t, {"axis": tuple(range(t._value.ndim)), "keepdims": False},
                    src if src is not None else _user_src(3))
    return x._recorded(out)     # (SumBackward0: its one edge is its parent)


def _check_dim(t, dim):
    if dim is None:
        return
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    wrapped = [wrap_dim(t, d) for d in dims]      # every range error before a repeat
    seen = set()
    for d in wrapped:
        if d in seen:
            raise _err(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)




def _logical_reduction(self, fn, dim, keepdim):
    """``any`` / ``all``: bool, or uint8 for a uint8 tensor (PyTorch); an empty ``dim``
    list reduces nothing there (each element is tested alone)."""
    empty = isinstance(dim, (tuple, list)) and len(dim) == 0
    dim = _scalar_dim(self, dim)
    out_dtype = np.uint8 if self.dtype == np.uint8 else np.bool_

    def run(v):
        out = v != 0 if empty else fn(v, axis=dim, keepdims=keepdim)
        return out.astype(out_dtype) if out_dtype != np.bool_ else out
    return call(run, self)


def _spread(self, fn, name, dim, unbiased, keepdim, correction, what="std and var"):
    """``std`` / ``var`` (``fn``) with PyTorch's ``unbiased`` / ``correction``."""
    if isinstance(dim, bool):           # std(False): the old positional `unbiased`
        dim, unbiased = None, dim
    ddof = correction if correction is not None else (0 if unbiased is False else 1)
    if self.dtype.kind not in "fc":
        raise _err(f"{what} only support floating point and complex dtypes")
    dim = _scalar_dim(self, dim)
    return call(lambda v: fn(v, axis=dim, ddof=ddof, keepdims=keepdim), self, name=name)


def _with_mean(self, spread, what, dim, unbiased, keepdim, correction):
    """``std_mean`` / ``var_mean``: the spread and the mean over the same dims."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    node = "StdMeanBackward0" if spread is not np.var else "VarMeanBackward0"
    first = _spread(self, spread, node, dim, unbiased, keepdim, correction, what)
    mean = self.mean(dim, keepdim)
    if mean.grad_fn is not None:
        mean.grad_fn._name = node           # PyTorch: one node for both results
    return first, mean


def _safe_root(s, p=2):
    """``s ** (1 / p)`` whose derivative is 0 where ``s`` is 0 (PyTorch's norm and std
    backward mask that point, where the plain rule would give 0 / 0)."""
    zero = s == 0
    safe = np.where(zero, np.ones((), s.dtype), s)
    root = np.sqrt(safe) if p == 2 else safe ** (1 / p)
    return np.where(zero, np.zeros((), s.dtype), root)


_safe_sqrt = _safe_root


def _std(v, axis=None, ddof=0, keepdims=False):
    return _safe_sqrt(np.var(v, axis=axis, ddof=ddof, keepdims=keepdims))




def _extremum(self, dim, keepdim, fn, argfn, name_all, name_dim):
    """``max`` / ``min``: of every element, ``(values, indices)`` along ``dim``, or the
    elementwise extreme of two tensors."""
    if dim is _OMITTED:
        dim = None
    elif dim is None:
        raise TypeError(f"{fn.__name__}() received an invalid combination of arguments - "
                        "got (NoneType), but expected (int dim, bool keepdim = False)")
    if isinstance(dim, TensorBase):               # torch.max(a, b): elementwise
        return self.maximum(dim) if fn is np.max else self.minimum(dim)
    _int_dim(fn.__name__, dim)
    if dim is None:
        if self.numel() == 0:
            raise _err(f"{fn.__name__}(): Expected reduction dim to be specified for "
                       "input.numel() == 0. Specify the reduction dim with the 'dim' "
                       "argument.")
        return call(fn, self, name=name_all)
    _check_dim(self, dim)
    if self.dim() == 0:
        return MinMax(call(lambda v: np.reshape(v, ()), self, name=name_dim),
                      self._plain(np.zeros((), np.int64)))
    data = self._concrete("max(dim)")
    if data.shape[dim] == 0:
        raise IndexError(f"{fn.__name__}(): Expected reduction dim {dim % data.ndim} to have "
                         "non-zero size.")
    # the values are read at the returned indices, so that the whole gradient goes to
    # those (the first of tied elements), as PyTorch's MaxBackward0 sends it
    idx = np.expand_dims(argfn(data, axis=dim), dim)
    grids = np.indices(idx.shape, sparse=True)
    axis = dim % data.ndim
    key = tuple(idx if d == axis else grids[d] for d in range(data.ndim))

    def pick(v):
        out = v[_operand_key(v, key)]
        return out if keepdim else np.squeeze(out, axis=axis)
    values = call(pick, self, name=name_dim)
    if not keepdim:
        idx = np.squeeze(idx, axis=axis)
    return MinMax(values, self._plain(np.asarray(idx, dtype=np.int64)))


def _amax_like(self, fn, name, node, dim, keepdim):
    _check_nonempty(self, name, dim)
    axis = _scalar_dim(self, dim)
    return call(lambda v: fn(v, axis=axis, keepdims=keepdim), self, name=node)


def _arg(self, fn, dim, keepdim):
    """``argmax`` / ``argmin``: int64 indices, computed on the concrete values."""
    _int_dim(fn.__name__, dim)
    data = self._concrete("argmax")
    if data.dtype == np.bool_:
        raise _err(f"{fn.__name__}(): does not support bool input")
    dim = _scalar_dim(self, dim)
    try:
        _check_nonempty(self, fn.__name__, dim)
    except RuntimeError as e:           # PyTorch's arg-reductions say it as an IndexError
        raise IndexError(str(e).split(" Specify")[0]) from None
    idx = fn(data, axis=dim, keepdims=keepdim) if dim is not None else fn(data)
    if dim is None and keepdim:
        idx = np.reshape(idx, (1,) * data.ndim)
    return self._plain(np.asarray(idx, dtype=np.int64))


def _along(fn, dim):
    """``fn(x, dim)``, with a 0-d ``x`` taken as one element along dim 0 or -1 (PyTorch)."""
    def run(x):
        if np.ndim(x) == 0:
            if dim not in (0, -1):
                raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], "
                                 f"but got {dim})")
            return np.reshape(fn(np.reshape(x, (1,)), 0), ())
        return fn(x, dim)
    return run


def _float_kernel(t, kernel):
    if t.dtype.kind not in "fc":
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_scalar_name(t.dtype)}\'')


def _normalized(self, prim, kernel, name, dim, dtype):
    # (named: a 0-d tensor is reshaped around the primitive, see _along)
    """``softmax`` / ``log_softmax``: one node, as PyTorch records one
    (``ir/prims/softmax.py``)."""
    _float_kernel(self if dtype is None else self._plain(np.empty(0, dtype)), kernel)
    if type(dim) is not int and not isinstance(dim, np.integer):
        raise TypeError(f"{prim}(): argument 'dim' (position 1) must be int, not "
                        f"{type(dim).__name__}")
    _check_dim(self, dim)

    def fn(x, dim):
        return apply(prim, x, axis=int(dim) % x.ndim)
    return call(_along(fn, dim), self if dtype is None else self.to(dtype), name=name)


def _norm(self, p, dim, keepdim):
    if p in ("fro", 2, 2.0) or p is None:
        return call(lambda x: _safe_sqrt(np.sum(x * x, axis=_axis(dim), keepdims=keepdim)), self,
                    name="NormBackward1" if dim is not None else "NormBackward0")
    if p in (1, 1.0):
        return call(lambda x: np.sum(np.abs(x), axis=_axis(dim), keepdims=keepdim), self,
                    name="NormBackward1")
    if p in (np.inf, float("inf")):
        return call(lambda x: np.max(np.abs(x), axis=_axis(dim), keepdims=keepdim), self,
                    name="NormBackward1")
    return call(lambda x: _safe_root(np.sum(np.abs(x) ** p, axis=_axis(dim), keepdims=keepdim),
                                     p), self, name="NormBackward1")


def _cumulative(f):
    """``f`` (np.cumsum, np.cumprod) in the input's dtype, accumulated as torch's CPU
    kernels do: narrow floats in float64, rounded back."""
    def run(v, d):
        if v.dtype.kind == "f" and v.dtype.itemsize < 8:
            return f(v, axis=d, dtype=np.float64).astype(v.dtype)
        return f(v, axis=d, dtype=v.dtype)
    return run


class ReductionMethods:
    """``Tensor``'s reductions."""

    __slots__ = ()

    # -- quantiles ----------------------------------------------------------------------------
    def quantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        """The ``q``-th quantiles along ``dim`` (all elements when None), as PyTorch computes
        them: the sorted values at rank ``q * (n - 1)`` (in the input's dtype), between two
        of them by ``interpolation``; NaN where the slice holds one."""
        return _quantile(self, q, dim, keepdim, interpolation, "quantile", False)

    def nanquantile(self, q, dim=None, keepdim=False, *, interpolation="linear"):
        """``quantile`` of the values that are not NaN (NaN for a slice of NaNs only)."""
        return _quantile(self, q, dim, keepdim, interpolation, "nanquantile", True)

    def sum(self, dim=_OMITTED, keepdim=False, *, dtype=None, axis=None):
        if (dim is _OMITTED or dim is None) and axis is None and dtype is None and FAST.get():
            out = _fast_sum(self)
            if out is not None:
                return out
        return _reduce(self, np.sum, None, "SumBackward1", dim, keepdim, dtype, axis)

    def mean(self, dim=_OMITTED, keepdim=False, *, dtype=None, axis=None):
        return _reduce(self, np.mean, "MeanBackward0", "MeanBackward1", dim, keepdim, dtype,
                       axis)

    def prod(self, dim=_OMITTED, keepdim=False, *, dtype=None, axis=None):
        return _reduce(self, np.prod, None, "ProdBackward1", dim, keepdim, dtype, axis)

    def all(self, dim=None, keepdim=False):
        return _logical_reduction(self, np.all, dim, keepdim)

    def any(self, dim=None, keepdim=False):
        return _logical_reduction(self, np.any, dim, keepdim)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return _spread(self, _std, "StdBackward0", dim, unbiased, keepdim, correction)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return _spread(self, np.var, "VarBackward0", dim, unbiased, keepdim, correction)

    def std_mean(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return _with_mean(self, _std, "std_mean", dim, unbiased, keepdim, correction)

    def var_mean(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return _with_mean(self, np.var, "var_mean", dim, unbiased, keepdim, correction)

    def nansum(self, dim=None, keepdim=False, *, dtype=None):
        """The sum with NaN counted as 0."""
        x = self if dtype is None else self.to(dtype)
        if x.dtype.kind in "biu":
            return x.sum(dim, keepdim)
        dim = _scalar_dim(x, dim)
        return call(lambda v: np.sum(np.where(np.isnan(v), np.zeros((), v.dtype), v), axis=dim,
                                     keepdims=keepdim), x, name="NansumBackward0")

    def nanmean(self, dim=None, keepdim=False, *, dtype=None):
        """The mean of the elements that are not NaN."""
        x = self if dtype is None else self.to(dtype)
        if x.dtype.kind not in "fc":
            raise _err("nanmean(): expected input to have floating point or complex dtype but "
                       f"got {_scalar_name(x.dtype)}")
        count = (~x.isnan()).sum(dim, keepdim)
        return x.nansum(dim, keepdim) / count

    def max(self, dim=_OMITTED, keepdim=False):
        return _extremum(self, dim, keepdim, np.max, np.argmax, None, "MaxBackward0")

    def min(self, dim=_OMITTED, keepdim=False):
        return _extremum(self, dim, keepdim, np.min, np.argmin, None, "MinBackward0")

    def amax(self, dim=None, keepdim=False):
        return _amax_like(self, np.max, "amax", "AmaxBackward0", dim, keepdim)

    def amin(self, dim=None, keepdim=False):
        return _amax_like(self, np.min, "amin", "AminBackward0", dim, keepdim)

    def argmax(self, dim=None, keepdim=False):
        return _arg(self, np.argmax, dim, keepdim)

    def argmin(self, dim=None, keepdim=False):
        return _arg(self, np.argmin, dim, keepdim)

    def logsumexp(self, dim, keepdim=False):
        if self.dtype.kind not in "fc":
            self = self.to(default_dtype())     # PyTorch computes in the default float dtype
        if dim is None:
            raise TypeError("logsumexp(): argument 'dim' must be tuple of ints, not NoneType")
        empty = isinstance(dim, (tuple, list)) and len(dim) == 0
        axes = _scalar_dim(self, dim)
        if self.dim() == 0:
            return call(lambda x: x + np.zeros((), x.dtype), self, name="LogsumexpBackward0")
        if empty and not keepdim and self.numel():
            # PyTorch 2's own error there (keepdim=True reduces all)
            raise _err(f"output with shape [] doesn't match the broadcast shape {[1] * self.dim()}")
        axes = tuple(range(self.dim())) if axes is None else axes

        axes = tuple(a % self.dim() for a in (axes if isinstance(axes, tuple) else (axes,)))
        return call(lambda x: _logsumexp(x, axes, keepdim), self, name="LogsumexpBackward0")

    def softmax(self, dim, dtype=None):
        return _normalized(self, "softmax", "softmax_lastdim_kernel_impl", "SoftmaxBackward0",
                           dim, dtype)

    def log_softmax(self, dim, dtype=None):
        return _normalized(self, "log_softmax", "log_softmax_lastdim_kernel_impl",
                           "LogSoftmaxBackward0", dim, dtype)

    def norm(self, p="fro", dim=None, keepdim=False):
        if self.dtype.kind not in "fc":
            raise _err("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                       f"Got {_scalar_name(self.dtype)}")
        if p in (np.inf, -np.inf) and self.numel() == 0:
            if dim is None or not isinstance(dim, int) and len(dim) == 0:
                raise _err("linalg.vector_norm cannot compute the inf norm on an empty tensor "
                           "because the operation does not have an identity")
            d = _first_empty_dim(self, dim)
            if d is not None:
                raise _err(f"linalg.vector_norm cannot compute the inf norm on the dimension "
                           f"{d}because this dimension is empty and the operation does not "
                           "have an identity")
        axes = _scalar_dim(self, dim)
        t = _norm(self, p, axes, keepdim)
        if t.grad_fn is not None:
            t.grad_fn._name = "LinalgVectorNormBackward0"     # every p and dim in PyTorch 2
        return t

    def cumsum(self, dim, *, dtype=None):
        _int_dim("cumsum", dim, required=True)
        _check_dim(self, dim)
        x = self if dtype is None else self.to(dtype)
        if x.dtype.kind in "biu" and x.dtype != np.int64 and dtype is None:
            x = x.to(np.int64)                  # PyTorch accumulates integers in int64
        return call(_along(_cumulative(np.cumsum), dim), x,
                    name="CumsumBackward0")     # (a 0-d tensor: reshapes around it)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(x, q, dim, keepdim, interpolation, what, ignore_nan):
    """PyTorch's ``quantile_compute``: sort along the (last) dimension; ranks ``q * (n - 1)``
    (the count of non-NaN values less one, at least 0, when ``ignore_nan``; the last index
    where a slice holds a NaN otherwise), floored, ceiled or rounded (half to even) by
    ``interpolation``; the values at those ranks, and for "linear" and "midpoint" the value
    above them mixed in as ``lerp`` does (``a + w (b - a)`` below w = 0.5, ``b - (b - a)
    (1 - w)`` from it). Gradients reach the picked values through ``sort`` and ``gather``."""
    if x.numel() == 0:
        raise _err(f"{what}() input tensor must be non-empty")
    if x.dtype not in (np.float32, np.float64):
        raise _err(f"{what}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise _err(f"{what}() interpolation must be one of linear, lower, higher, midpoint or "
                   f"nearest. Got {interpolation}")
    if isinstance(q, TensorBase):
        if q.dim() > 1:
            raise _err(f"{what}() q must be a scalar or 1D tensor")
        if q.dtype != x.dtype:
            raise _err(f"{what}() q tensor must be same dtype as the input tensor")
        qs = np.asarray(q._concrete(what), x.dtype)
        vector = q.dim() == 1
    else:
        qs = np.asarray(q, x.dtype)
        vector = False
    if qs.size and (np.any(qs < 0) or np.any(qs > 1) or np.any(np.isnan(qs))):
        raise _err(f"{what}() q values must be in the range [0, 1]")
    if dim is None:
        src = x.reshape(-1)
        axis = 0
    else:
        axis = wrap_dim(x, dim)
        src = x.movedim(axis, -1) if x.dim() else x.reshape(1)
    if dim is None:
        src = src.reshape(1, -1)            # one slice
    sorted_ = src.sort(-1)[0]
    data = sorted_._concrete(what)
    n = data.shape[-1]
    nan = np.isnan(data)
    qv = qs.reshape(-1)
    if ignore_nan:
        counts = (~nan).sum(-1, keepdims=True).astype(x.dtype)
        ranks = qv.reshape((-1,) + (1,) * data.ndim) * (counts - np.asarray(1, x.dtype))
        ranks = np.where(ranks < 0, np.asarray(0, x.dtype), ranks)
    else:
        last = np.asarray(n - 1, x.dtype)
        ranks = np.broadcast_to(qv.reshape((-1,) + (1,) * data.ndim) * last,
                                (qv.size,) + data.shape[:-1] + (1,)).copy()
        ranks[:, nan.any(-1, keepdims=True)] = last
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)
    below = ranks.astype(np.int64)
    outs = []
    for k in range(qv.size):
        idx = x._plain(np.ascontiguousarray(np.broadcast_to(below[k], data.shape[:-1] + (1,))))
        v = sorted_.gather(-1, idx)
        if interpolation in ("linear", "midpoint"):
            w = np.full(ranks[k].shape, 0.5, x.dtype) if interpolation == "midpoint" else \
                (ranks[k] - below[k]).astype(x.dtype)
            above = x._plain(np.ascontiguousarray(np.broadcast_to(
                np.ceil(ranks[k]).astype(np.int64), data.shape[:-1] + (1,))))
            v_hi = sorted_.gather(-1, above)
            wt = x._plain(w)
            low = w < 0.5
            v = (v + wt * (v_hi - v)).where(x._plain(low),
                                            v_hi - (v_hi - v) * (1 - wt))
        outs.append(v)
    result = call(lambda *vs: np.stack(vs), *outs, name="StackBackward0")   # (q, ..., 1)
    if dim is None:
        result = result.reshape(qv.size)
        if keepdim:
            result = result.reshape((qv.size,) + (1,) * x.dim())
    else:
        result = result.squeeze(-1)                      # (q, rest...)
        if keepdim:
            result = result.unsqueeze(axis + 1) if x.dim() else result
    result = result if vector else result.reshape(tuple(result.shape[1:]))
    # (PyTorch's result is its in-place squeeze of the kept dimensions: SqueezeBackward4)
    return call(lambda r: r, result, name="SqueezeBackward4")
