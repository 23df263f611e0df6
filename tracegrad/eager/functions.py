"""The module-level functions (``tg.add``, ``tg.cat``, ``tg.stack``, ``tg.where``, ...):
the ``FUNCTIONS`` table the package exports. Most are a tensor method called on the
first argument (``tg.exp(t)`` is ``t.exp()``).
"""
from __future__ import annotations

import numpy as np

from . import arithmetic, indexed_ops, linalg, multinomial, tensor_methods, views
from .arithmetic import _UNARY, _elementwise
from .dispatch import call
from .stacking import cat, hstack, meshgrid, stack, vstack
from .tensor import Tensor, default_dtype


def _as_tensor(x):
    return arithmetic._as_tensor(x, Tensor)


# -- module-level functions ----------------------------------------------------------------
def _method_function(name):
    def fn(input, *args, **kwargs):
        return getattr(_as_tensor(input), name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"``tg.{name}(t, ...)`` is ``t.{name}(...)``."
    return fn


FUNCTIONS = {}
for _name in ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "pow",
              "matmul", "mm", "bmm", "mv", "dot", "clamp", "clip", "sum", "mean", "prod", "std",
              "var", "max", "min", "amax", "amin", "nansum", "nanmean", "std_mean",
              "var_mean", "argmax", "argmin", "logsumexp", "softmax",
              "log_softmax", "norm", "cumsum", "reshape", "flatten", "unflatten", "squeeze",
              "unsqueeze", "permute", "transpose", "t", "swapaxes", "narrow", "split", "chunk",
              "unbind", "gather", "flip", "roll", "masked_fill", "maximum", "minimum", "all",
              "any", "eq", "ne", "lt", "le", "gt", "ge", "clone", "square", "numel",
              "floor_divide", "remainder", "fmod",
              *_UNARY]:
    FUNCTIONS[_name] = _method_function(_name)


def where(condition, input=None, other=None):
    if input is None:
        return tuple(Tensor._plain(i.astype(np.int64))
                     for i in np.nonzero(_as_tensor(condition)._data))
    return tensor_methods.where(condition, input, other, like=Tensor)


def outer(a, b):
    # PyTorch: a.reshape(-1, 1) * b
    return _elementwise(np.multiply, _as_tensor(a).reshape(-1, 1), b)


def einsum(spec, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return call(lambda *xs: np.einsum(spec, *xs), *operands, name="EinsumBackward0")


def _number_first(name, reflected):
    """``tg.add(2.5, t)``: PyTorch takes a number as the first operand as it takes a second
    one (a wrapped number, with its promotion), through the reflected operator."""
    method = FUNCTIONS[name]

    def fn(input, other, *args, **kwargs):
        if not isinstance(input, Tensor) and isinstance(other, Tensor) and not args and \
                not kwargs:
            return reflected(other, input)
        return method(input, other, *args, **kwargs)
    fn.__name__, fn.__doc__ = name, method.__doc__
    return fn


def _tensor_first(name):
    method = FUNCTIONS[name]

    def fn(input, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return method(input, *args, **kwargs)
    fn.__name__, fn.__doc__ = name, method.__doc__
    return fn


for _name, _rop in [("add", Tensor.__radd__), ("sub", Tensor.__rsub__),
                    ("subtract", Tensor.__rsub__), ("mul", Tensor.__rmul__),
                    ("multiply", Tensor.__rmul__), ("div", Tensor.__rtruediv__),
                    ("divide", Tensor.__rtruediv__), ("true_divide", Tensor.__rtruediv__),
                    ("floor_divide", Tensor.__rfloordiv__), ("remainder", Tensor.__rmod__),
                    ("pow", Tensor.__rpow__)]:
    FUNCTIONS[_name] = _number_first(_name, _rop)
for _name in ("maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "fmod"):
    FUNCTIONS[_name] = _tensor_first(_name)
FUNCTIONS.update(cat=cat, concat=cat, concatenate=cat, stack=stack, where=where, outer=outer,
                 ger=outer, einsum=einsum)
del _name, _rop


# -- the methods of tensor_methods.py and views.py, as functions ----------------------------
for _name in ["sort", "argsort", "msort", "topk", "median", "isnan", "isinf", "isfinite",
              "isposinf", "isneginf", "logical_and", "logical_or", "logical_xor", "scatter",
              "scatter_add", "index_select", "masked_select", "nonzero", "count_nonzero",
              "tril", "triu", "diagonal", "diag", "cumprod", "nan_to_num", "movedim",
              "moveaxis", "tile", "atan2", "arctan2", "lerp", "addmm", "logaddexp", "unique",
              "bincount", "logical_not", "clamp_", "detach", "broadcast_to", "is_complex",
              "is_signed", "expand_as"]:       # (not trace: tg.trace is the IR's)
    FUNCTIONS[_name] = _method_function(_name)
del _name
FUNCTIONS.update(quantile=_method_function("quantile"),
                 nanquantile=_method_function("nanquantile"))
FUNCTIONS.update(equal=lambda input, other: _as_tensor(input).equal(other),
                 allclose=lambda input, other, rtol=1e-05, atol=1e-08, equal_nan=False:
                 _as_tensor(input).allclose(other, rtol, atol, equal_nan),
                 isclose=lambda input, other, rtol=1e-05, atol=1e-08, equal_nan=False:
                 _as_tensor(input).isclose(other, rtol, atol, equal_nan))


def broadcast_tensors(*tensors):
    shape = np.broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return tuple(t.expand(*shape) for t in tensors)


FUNCTIONS.update(hstack=hstack, vstack=vstack, meshgrid=meshgrid,
                 broadcast_tensors=broadcast_tensors)


def _select(input, dim, index):
    """``input.select(dim, index)``: the slice at ``index`` along ``dim``, a view."""
    return _as_tensor(input).select(dim, index)


def _as_strided(input, size, stride, storage_offset=None):
    """``input.as_strided(size, stride, storage_offset)``: a view of its memory."""
    return _as_tensor(input).as_strided(size, stride, storage_offset)


def _adjoint(input):
    """``input.adjoint()``: the conjugate transpose of the last two dimensions, a view."""
    return _as_tensor(input).adjoint()


def _real(input):
    """``input.real``: the real part, a view of a complex tensor."""
    return _as_tensor(input).real


def _imag(input):
    """``input.imag``: the imaginary part of a complex tensor, a view."""
    return _as_tensor(input).imag


def _conj(input):
    """``input.conj()``: the complex conjugate."""
    return _as_tensor(input).conj()


def _view_as_real(input):
    return views.view_as_real(_as_tensor(input))


def _view_as_complex(input):
    return views.view_as_complex(_as_tensor(input))


for _fn, _of in ((_view_as_real, views.view_as_real), (_view_as_complex, views.view_as_complex)):
    _fn.__name__, _fn.__doc__ = _of.__name__, _of.__doc__
del _fn, _of
FUNCTIONS.update(select=_select, as_strided=_as_strided, adjoint=_adjoint, real=_real,
                 imag=_imag, conj=_conj, view_as_real=_view_as_real,
                 view_as_complex=_view_as_complex, complex=views.complex)
FUNCTIONS.update(index_fill=lambda input, dim, index, value: _as_tensor(input).index_fill(
    dim, index, value))

# torch.det & co. (linalg.py), index_add, scatter_reduce, ... (indexed_ops.py), multinomial
FUNCTIONS.update(linalg.OLD_FUNCTIONS)
FUNCTIONS.update(index_add=indexed_ops.index_add, scatter_reduce=indexed_ops.scatter_reduce,
                 kthvalue=indexed_ops.kthvalue, diff=indexed_ops.diff,
                 searchsorted=indexed_ops.searchsorted, bucketize=indexed_ops.bucketize,
                 cdist=indexed_ops.cdist, multinomial=multinomial.multinomial)


def _default():
    return default_dtype()


# erf, lgamma, xlogy, hypot, cummax, ... (math_ops.py): torch's math names
from . import math_ops  # noqa: E402

FUNCTIONS.update(math_ops.FUNCTIONS)

# repeat_interleave, tensor_split, take, index_put, rot90, kron, ... (shape_extras.py), normal,
# bernoulli, poisson, ... (sampling_methods.py), logspace, windows, ... (creation.py): torch's names
from . import creation as _creation  # noqa: E402
from . import sampling_methods as _sampling  # noqa: E402
from . import shape_extras as _shape_extras  # noqa: E402

FUNCTIONS.update(_shape_extras.FUNCTIONS)


from . import stacking as _stacking  # noqa: E402

FUNCTIONS.update(_stacking.FUNCTIONS)       # column_stack, cartesian_prod, block_diag, ...
FUNCTIONS.update(_sampling.FUNCTIONS)
from . import torch_random as _torch_random  # noqa: E402

FUNCTIONS.update(_torch_random.FUNCTIONS)     # get_rng_state, set_rng_state, seed, initial_seed
FUNCTIONS.update(_creation.FACTORIES)

# torch.stft / torch.istft (fft.py), also as Tensor methods
from . import fft as _fft  # noqa: E402

# (no Tensor.stft / istft methods: fft.py sits above tensor.py, whose class body holds every
# method; torch.stft(x, ...) is the spelling)
FUNCTIONS.update(stft=_fft.stft, istft=_fft.istft)
