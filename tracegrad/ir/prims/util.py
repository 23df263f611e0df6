"""Helpers shared by the rule tables. They are NumPy code, so they trace."""
import math

import numpy as np


def jnp_fn(name):
    """A JAX lowering that calls ``jax.numpy.<name>`` (or ``jax.<path>``), imported lazily."""
    def lower(*args, **params):
        import jax
        import jax.numpy as jnp

        if name.startswith("lax."):
            return getattr(jax.lax, name[4:])(*args, **params)
        return getattr(jnp, name)(*args, **params)
    lower.__name__ = f"jnp.{name}"
    return lower


def unbroadcast(x, shape):
    """Sum ``x`` down to ``shape``: the adjoint of broadcasting to ``x.shape``."""
    shape = tuple(shape)
    if tuple(x.shape) == shape:
        return x
    lead = x.ndim - len(shape)
    if lead > 0:
        x = np.sum(x, axis=tuple(range(lead)))
    axes = tuple(i for i, (n, m) in enumerate(zip(shape, x.shape)) if n == 1 and m != 1)
    if axes:
        x = np.sum(x, axis=axes, keepdims=True)
    if tuple(x.shape) != shape:
        x = np.reshape(x, shape)
    return x


def square(a):
    """``a`` (an array or an aval) when it is a square matrix or a batch of them; else
    NumPy-style ValueError naming its shape."""
    if len(a.shape) < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"expected a square matrix (or a batch of them), got shape "
                         f"{tuple(a.shape)}")
    return a


def complex_dtype(dtype):
    """The complex dtype NumPy's FFTs (and ``eig``) return for an operand of ``dtype``:
    float32 -> complex64, float64 -> complex128, integers -> complex128."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return dtype
    if dtype.kind == "f":
        return np.result_type(dtype, np.complex64)
    return np.dtype(np.complex128)


def real_dtype(dtype):
    """The real counterpart of ``complex_dtype(dtype)`` (``irfft``'s result)."""
    return np.finfo(complex_dtype(dtype)).dtype


def mT(x):
    """Swap the last two axes (matrix transpose of a batch of matrices)."""
    return np.swapaxes(x, -1, -2)


def transposed_matrix(x):
    """Whether the matrix ``x`` is laid out transposed: a NumPy array in column-major
    order, or a traced value made by transposing a matrix (its memory is its operand's,
    read with the axes swapped). Read off the record, not the value, so that a rule
    choosing by it makes the same graph for every value of one structure."""
    if isinstance(x, np.ndarray):
        return x.ndim == 2 and x.flags.f_contiguous and not x.flags.c_contiguous
    made_by = getattr(x, "_made_by", None)
    if made_by is None or len(getattr(x, "shape", ())) != 2:
        return False
    op, params = made_by()
    return op == "transpose" and tuple(params["axes"]) == (1, 0)


def norm_axes(axis, ndim):
    """``axis`` as a sorted tuple of non-negative ints (``None``: every axis)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (axis,)
    out = []
    for a in axis:
        a = int(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    return tuple(sorted(out))


# -- cost rules (FLOPs from shapes, see ``registry``): ``cost(out_shape, arg_shapes, params)``
def free(out_shape, arg_shapes, params):
    """Views, copies and casts: no arithmetic."""
    return 0


def per_input_element(out_shape, arg_shapes, params):
    """Reductions: one FLOP per element of operand 0."""
    return math.prod(arg_shapes[0])


def cubic(factor):
    """Dense linear algebra on an ``n x n`` matrix (a stack of them): ``factor · 2n³``."""
    def cost(out_shape, arg_shapes, params):
        a = arg_shapes[0] if arg_shapes else ()
        n = a[-1] if a else 1
        stack = math.prod(a[:-2]) if len(a) > 2 else 1
        return int(stack * factor * 2 * n ** 3)
    return cost
