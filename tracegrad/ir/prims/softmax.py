"""``log_softmax`` and ``softmax`` along one axis, each one node.

Composed from ``max``, ``sub``, ``exp``, ``sum`` and ``log`` they are seven nodes, and an
eager step pays Python overhead per node; PyTorch records one (``LogSoftmaxBackward0``,
``SoftmaxBackward0``). The values are the composite's to the bit: the maximum along the
axis is subtracted first (it changes no derivative), then ``exp``, ``sum`` and ``log`` in
that order. A row holding ``+inf``, or only ``-inf``, gives NaN (``inf - inf``), as in
PyTorch; ``-inf`` entries of a row that has a finite maximum give ``-inf`` (``softmax``: 0).

``axis`` is one int in ``range(x.ndim)`` (a 0-d operand has no axis; the eager API takes
it as one element). The derivative rules are PyTorch's backward formulas, NumPy code on
the traced output, so they differentiate again:

- ``log_softmax``: VJP ``g - exp(out) * sum(g)``, JVP ``t - sum(exp(out) * t)``;
- ``softmax``: VJP ``out * (g - sum(g * out))``, JVP ``out * (t - sum(out * t))``;

the sums along ``axis``, kept as a size-1 axis.
"""
import math

import numpy as np

from ..registry import apply, register


def _check_axis(axis, ndim):
    if not 0 <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)


def _result_dtype(dtype):
    """The dtype the composite ``x - max``, ``exp``, ``log`` gives (float64 for int64)."""
    return np.exp(np.ones((), dtype)).dtype


def _shifted(x, axis):
    """``x`` minus its maximum along ``axis`` (a new array); None for an empty axis."""
    _check_axis(axis, x.ndim)
    if x.shape[axis] == 0:
        return None
    return x - np.max(x, axis=axis, keepdims=True)


def _log_softmax_impl(x, axis):
    z = _shifted(x, axis)
    if z is None:
        return np.empty(x.shape, _result_dtype(x.dtype))
    lse = np.sum(np.exp(z), axis=axis, keepdims=True)
    np.log(lse, out=lse)
    if z.dtype == lse.dtype:
        return np.subtract(z, lse, out=z)
    return z - lse


def _softmax_impl(x, axis):
    z = _shifted(x, axis)
    if z is None:
        return np.empty(x.shape, _result_dtype(x.dtype))
    e = np.exp(z, out=z) if z.dtype == _result_dtype(z.dtype) else np.exp(z)
    return np.divide(e, np.sum(e, axis=axis, keepdims=True), out=e)


def _abstract(x, axis):
    _check_axis(axis, x.ndim)
    return tuple(x.shape), _result_dtype(x.dtype)


def _total(v, axis):
    return np.sum(v, axis=axis, keepdims=True)


def _log_softmax_vjp(g, out, x, axis):
    return (g - np.exp(out) * _total(g, axis),)


def _log_softmax_jvp(tangents, out, x, axis):
    (t,) = tangents
    return t - _total(np.exp(out) * t, axis)


def _softmax_vjp(g, out, x, axis):
    return (out * (g - _total(g * out, axis)),)


def _softmax_jvp(tangents, out, x, axis):
    (t,) = tangents
    return out * (t - _total(out * t, axis))


def _jax(name):
    def lower(x, axis):
        import jax

        # integers to NumPy's float dtype first (JAX's max would cast -inf to an integer)
        return getattr(jax.nn, name)(x.astype(_result_dtype(x.dtype)), axis=axis)
    lower.__name__ = f"jax.nn.{name}"
    return lower


def _batch(name):
    def rule(size, args, batched, out_shape, axis):
        (x,) = args
        return apply(name, x, axis=axis + 1)
    return rule


def _cost(out_shape, arg_shapes, params):
    """max, subtract, exp, sum, then log and subtract (softmax: divide): ~5 per element."""
    return 5 * math.prod(arg_shapes[0])


for _name, _impl, _vjp, _jvp, _torch, _doc in [
        ("log_softmax", _log_softmax_impl, _log_softmax_vjp, _log_softmax_jvp,
         "LogSoftmaxBackward0", "x - max(x) - log(sum(exp(x - max(x)))) along axis"),
        ("softmax", _softmax_impl, _softmax_vjp, _softmax_jvp,
         "SoftmaxBackward0", "exp(x - max(x)) / sum(exp(x - max(x))) along axis")]:
    register(
        _name, _impl, abstract=_abstract, vjp=_vjp, jvp=_jvp, jax=_jax(_name),
        family="nn", doc=_doc, batch=_batch(_name),
        # real rules only: the maximum of complex numbers is no shift that keeps exp finite
        complex=False, aliasing="fresh",
        cost=_cost, torch_name=_torch,
        # integer operands compute in the float dtype NumPy's exp gives them
        jax_casts="float",
    )


def logsumexp(x, axes, keepdims=False, weights=None, shift_from=None, base2=False):
    """``log(sum(weights * exp(x)))`` along ``axes`` (a tuple of non-negative ints): the one
    stable log-sum-exp behind ``np.logaddexp.reduce``, the eager ``logsumexp`` and
    ``scipy.special.logsumexp``. NumPy code, on arrays and traced values alike.

    The maximum along ``axes`` (of ``shift_from``, by default ``x``; 0 where it is not
    finite or an axis is empty) is taken out first and held constant for the derivative,
    which then is the softmax weights; it changes no value but the rounding. ``base2``:
    ``log2(sum(exp2(x)))`` (``np.logaddexp2.reduce``)."""
    exp, log = (np.exp2, np.log2) if base2 else (np.exp, np.log)
    dtype = np.dtype(x.dtype)
    zero = np.zeros((), dtype)
    if any(np.shape(x)[a] == 0 for a in axes):
        m = zero
    else:
        m = np.max(x if shift_from is None else shift_from, axis=axes, keepdims=True)
        m = apply("stop_gradient", np.where(np.isfinite(m), m, zero))
    e = exp(x - m)
    if weights is not None:
        e = weights * e
    out = log(np.sum(e, axis=axes, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axes)
