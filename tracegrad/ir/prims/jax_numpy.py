"""JAX lowerings that compute NumPy's numbers where ``jax.numpy`` gives others.

XLA and NumPy part ways at the edges: integer division by zero (NumPy: 0), an integer
to a negative power (NumPy: ValueError), the sign of a zero (``sign(-0.0)``,
``remainder(-0.0, 1)``, ``maximum(0.0, -0.0)``, a sum over one -0.0), the order of NaNs
and signed zeros in a sort, NumPy's fast paths for a scalar exponent (``x ** 0.5`` is
``sqrt``). XLA's algebraic simplifier also rewrites ``x / broadcast(y)`` into
``x * (1 / y)`` (off by an ulp, or 0 for ``3e38 / 3e38`` in float32), ``convert(b) * y``
into a select (``False * inf`` is 0), and takes ``abs`` of an integer to be >= 0.
Each function here mirrors NumPy's own C loop (numpy/_core/src/npymath, umath loops)
step by step, so the JAX backend gives the same bits. Operands arrive already cast to
the node's dtype (``jax_backend.lower_node``). What cannot be mirrored cheaply is
listed in docs/backends.md.
"""
import numpy as np


def _jax():
    import jax.numpy as jnp
    from jax import lax
    return jnp, lax


def _common(x, y):
    """``x`` and ``y`` broadcast to their common shape, ``y`` behind an optimisation
    barrier: XLA turns a division by a broadcast value into a multiplication by its
    reciprocal, which rounds differently from NumPy's division."""
    jnp, lax = _jax()
    shape = np.broadcast_shapes(x.shape, y.shape)
    if x.shape == y.shape:
        return x, y
    x, y = jnp.broadcast_to(x, shape), jnp.broadcast_to(y, shape)
    return x, lax.optimization_barrier(y)


def astype(x, dtype):
    """``x.astype(dtype)``; a boolean goes through uint8 first: XLA rewrites
    ``convert(b) * y`` into ``select(b, y, 0)``, giving 0 for ``False * inf`` (NumPy:
    nan) and 0.0 for ``False * -2.5`` (NumPy: -0.0)."""
    dtype = np.dtype(dtype)
    if x.dtype == np.bool_ and dtype != np.bool_:
        x = x.astype(np.uint8)
    if dtype == np.float16 and x.dtype == np.float64:
        return _float64_to_float16(x)
    return x.astype(dtype)


def _float64_to_float16(x):
    """XLA converts float64 to float16 through float32, rounding twice (3 values in 10^5
    of N(0, 100) come out an ulp off); NumPy rounds once. Rounding to float32 *to odd*
    first (truncate, then set the last bit where anything was cut off) makes the second
    rounding the correct one: float32 keeps 13 more bits than float16."""
    jnp, lax = _jax()
    y = x.astype(np.float32)
    back = y.astype(np.float64)
    cut = (back != x) & jnp.isfinite(x)
    bits = lax.bitcast_convert_type(y, np.uint32)
    one = jnp.ones((), np.uint32)
    bits = jnp.where(cut & (jnp.abs(back) > jnp.abs(x)), bits - one, bits)  # toward zero
    bits = jnp.where(cut, bits | one, bits)
    return lax.bitcast_convert_type(bits, np.float32).astype(np.float16)


def true_divide(x, y):
    x, y = _common(x, y)
    return x / y


def _half_as_single(fn):
    """NumPy computes float16 floor_divide/remainder in float32 and rounds the result."""
    def lower(x, y):
        if x.dtype == np.float16:
            return fn(x.astype(np.float32), y.astype(np.float32)).astype(np.float16)
        return fn(x, y)
    return lower


def _float_divmod(x, y):
    """npy_divmod: floor quotient and remainder of floats, as NumPy rounds them."""
    jnp, lax = _jax()
    x, y = _common(x, y)
    zero = jnp.zeros((), x.dtype)
    mod = lax.rem(x, y)                                   # C fmod
    div = (x - mod) / y
    adjust = (mod != 0) & ((y < 0) != (mod < 0))
    mod = jnp.where(mod == 0, jnp.copysign(zero, y), jnp.where(adjust, mod + y, mod))
    div = jnp.where(adjust, div - 1, div)
    floor = jnp.floor(div)
    floor = jnp.where(div - floor > 0.5, floor + 1, floor)
    floor = jnp.where(div == 0, jnp.copysign(zero, x / y), floor)
    # a zero divisor: x / y and fmod's NaN, as npy_floor_divide and npy_remainder give
    return jnp.where(y == 0, x / y, floor), jnp.where(y == 0, lax.rem(x, y), mod)


def _int_divmod(x, y):
    """Integer floor quotient and remainder; NumPy gives 0 and 0 for a zero divisor
    (with a RuntimeWarning), XLA gives -1 and x."""
    jnp, lax = _jax()
    zero = y == 0
    safe = jnp.where(zero, jnp.ones((), y.dtype), y)
    return (jnp.where(zero, jnp.zeros((), x.dtype), jnp.floor_divide(x, safe)),
            jnp.where(zero, jnp.zeros((), x.dtype), jnp.remainder(x, safe)))


def _divmod(x, y):
    if np.dtype(x.dtype).kind in "iub":
        return _int_divmod(x, y)
    return _float_divmod(x, y)


floor_divide = _half_as_single(lambda x, y: _divmod(x, y)[0])
remainder = _half_as_single(lambda x, y: _divmod(x, y)[1])


def _exponent_is_broadcast(x_shape, y_shape):
    """Whether NumPy takes its fast paths for a scalar exponent, ``x ** 0.5`` by ``sqrt``
    among them (nan and -0.0 where ``pow`` gives inf and 0.0 for -inf and -0.0): the
    ``**`` operator does for a scalar exponent, the power loop of float32/float64 for an
    exponent it sees with stride 0 (broadcast along the last axis longer than 1)."""
    if len(y_shape) == 0:
        return True
    shape = np.broadcast_shapes(x_shape, y_shape)
    long_axes = [k for k, n in enumerate(shape) if n > 1]
    if not long_axes:
        return False
    k = long_axes[-1] - (len(shape) - len(y_shape))
    return k < 0 or y_shape[k] == 1


def _float_power(x, y):
    jnp, _ = _jax()
    out = jnp.power(x, y)
    if not _exponent_is_broadcast(x.shape, y.shape) or (x.dtype == np.float16 and y.ndim):
        return out  # float16's loop has no fast paths of its own, only ``**``'s
    one = jnp.ones((), x.dtype)
    fast = [(-1.0, one / x), (0.0, jnp.broadcast_to(one, x.shape)), (0.5, jnp.sqrt(x)),
            (1.0, x), (2.0, x * x)]
    for value, result in fast:
        out = jnp.where(y == value, result, out)
    return out


def power(x, y):
    jnp, lax = _jax()
    if np.dtype(x.dtype).kind == "f":
        return _float_power(x, y)
    if np.dtype(x.dtype).kind not in "iu":
        return jnp.power(x, y)
    from ..jax_checks import runtime_check
    if np.dtype(y.dtype).kind == "i":
        runtime_check(~jnp.any(y < 0), "ValueError",
                      "Integers to negative integer powers are not allowed.")
    # square and multiply over every bit of the exponent, wrapping as NumPy's loop does
    x, y = jnp.broadcast_arrays(x, y)
    acc, base = jnp.ones_like(x), x
    one = jnp.ones((), y.dtype)
    for _ in range(8 * np.dtype(y.dtype).itemsize):
        acc = jnp.where((y & one) != 0, acc * base, acc)
        base = base * base
        y = lax.shift_right_logical(y, jnp.broadcast_to(one, y.shape))
    return acc


def _chooser(pick_first):
    """maximum/minimum/fmax/fmin: ``pick_first(x, y, nan)`` is where NumPy returns ``x``.
    On a tie (0.0 against -0.0) NumPy's float32/float64 loops return ``y``, its
    float16 loop ``x``: the tie is decided the way each loop does."""
    def lower(x, y):
        jnp, _ = _jax()
        if np.dtype(x.dtype).kind != "f":
            return None
        if x.dtype == np.float16:   # first on a tie: pick y only where it strictly wins
            return jnp.where(pick_first(y, x, jnp.isnan), y, x)
        return jnp.where(pick_first(x, y, jnp.isnan), x, y)
    return lower


_CHOOSERS = {
    "maximum": _chooser(lambda a, b, isnan: isnan(a) | (a > b)),
    "minimum": _chooser(lambda a, b, isnan: isnan(a) | (a < b)),
    "fmax": _chooser(lambda a, b, isnan: isnan(b) | (a > b)),
    "fmin": _chooser(lambda a, b, isnan: isnan(b) | (a < b)),
}


def chooser(name):
    def lower(x, y):
        jnp, _ = _jax()
        out = _CHOOSERS[name](x, y)
        return getattr(jnp, name)(x, y) if out is None else out
    lower.__name__ = name
    return lower


def absolute(x):
    """abs of a signed integer as NumPy's loop computes it: ``abs(INT_MIN)`` wraps to
    INT_MIN. ``jnp.abs`` gives the same number, but XLA then takes it to be >= 0 and
    folds later comparisons (``remainder`` of it goes wrong); a select hides it."""
    jnp, _ = _jax()
    if np.dtype(x.dtype).kind == "i":
        return jnp.where(x < 0, -x, x)
    return jnp.abs(x)


def relu(x):
    jnp, _ = _jax()
    return chooser("maximum")(x, jnp.zeros((), x.dtype))


def sign(x):
    jnp, _ = _jax()
    if np.dtype(x.dtype).kind == "f":       # NumPy: sign(-0.0) is +0.0, sign(nan) nan
        zero = jnp.zeros((), x.dtype)
        return jnp.where(x == 0, zero, jnp.sign(x))
    return jnp.sign(x)


def sort_key(x):
    """``x`` with every NaN made the same positive NaN and -0.0 made 0.0: XLA sorts by
    the total order (-NaN first, -0.0 before 0.0), NumPy puts every NaN last and keeps
    zeros of either sign in their order."""
    jnp, lax = _jax()
    kind = np.dtype(x.dtype).kind
    if kind == "c":
        return lax.complex(sort_key(jnp.real(x)), sort_key(jnp.imag(x)))
    if kind != "f":
        return x
    return jnp.where(jnp.isnan(x), jnp.array(np.nan, x.dtype), _positive_zero(x))


def cumsum(x, axis):
    """NumPy's running sum starts from ``x[0]``, XLA's from +0.0: a run of -0.0 stays
    -0.0 in NumPy and becomes 0.0 in XLA. Those entries get their sign back."""
    jnp, lax = _jax()
    if axis is None:
        x, axis = x.ravel(), 0
    out = jnp.cumsum(x, axis=axis)
    if np.dtype(x.dtype).kind != "f" or x.ndim == 0:
        return out
    negative_zero = ((x == 0) & jnp.signbit(x)).astype(np.int8)
    run = lax.cummin(negative_zero, axis=axis % x.ndim) == 1
    return jnp.where(run, -jnp.zeros((), x.dtype), out)


def _positive_zero(x):
    jnp, lax = _jax()
    kind = np.dtype(x.dtype).kind
    if kind == "c":
        return lax.complex(_positive_zero(jnp.real(x)), _positive_zero(jnp.imag(x)))
    if kind != "f":
        return x
    return jnp.where(x == 0, jnp.zeros((), x.dtype), x)


def sum_(x, axis, keepdims):
    """NumPy's sum starts from +0.0, so a zero sum is +0.0 (-0.0 + -0.0 too); XLA drops
    a reduction over an axis of length 1 and keeps the -0.0."""
    jnp, _ = _jax()
    return _positive_zero(jnp.sum(x, axis=axis, keepdims=keepdims))


def arg_extreme(name):
    """argmax/argmin. For complex values NumPy orders lexicographically and returns the
    first NaN (in either part) if there is one; ``jnp.argmax`` refuses complex input."""
    def lower(x, axis, keepdims):
        jnp, _ = _jax()
        if np.dtype(x.dtype).kind != "c":
            return getattr(jnp, name)(x, axis=axis, keepdims=keepdims)
        pick, worst = (jnp.max, -np.inf) if name == "argmax" else (jnp.min, np.inf)
        re, im = jnp.real(x), jnp.imag(x)
        nan = jnp.isnan(re) | jnp.isnan(im)
        best_re = pick(jnp.where(nan, worst, re), axis=axis, keepdims=True)
        ties = re == best_re
        best_im = pick(jnp.where(ties, im, worst), axis=axis, keepdims=True)
        best = jnp.where(jnp.any(nan, axis=axis, keepdims=True), nan, ties & (im == best_im))
        return jnp.argmax(best, axis=axis, keepdims=keepdims)
    return lower
