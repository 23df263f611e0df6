"""Elementwise primitives: NumPy ufuncs, ``select`` (3-argument ``where``), casts.

Most rows give the ufunc and its partial derivatives as functions of
``(out, *args)``; the VJP (``g * d``) and JVP (``sum t * d``) follow from them.
Broadcasting is undone once, in the adjoint pass, not here.
"""
import numpy as np

from ..registry import apply, register
from ..schema import DTYPE, Spec  # the loader's parameter kinds
from . import batching, jax_numpy
from .util import free, jnp_fn

LN2 = float(np.log(2.0))  # Python floats keep float32 rules float32 (NEP 50)
LN10 = float(np.log(10.0))


def _broadcast_rule(impl):
    result_dtypes = {}  # operand dtypes -> result dtype, found once by a 0-d evaluation

    def abstract(*avals, **params):
        shapes = [a.shape for a in avals]
        first = tuple(shapes[0])
        shape = first if all(tuple(s) == first for s in shapes) else np.broadcast_shapes(*shapes)
        key = tuple(a.dtype for a in avals)
        dtype = result_dtypes.get(key)
        if dtype is None:
            with np.errstate(all="ignore"):
                dtype = impl(*(np.ones((), d) for d in key), **params).dtype
            result_dtypes[key] = dtype
        return shape, dtype
    return abstract


def _partials_rules(partials):
    """VJP and JVP from per-operand partial derivatives ``partials(out, *args)``."""
    def vjp(g, out, *args):
        return tuple(None if d is None else g * d for d in partials(out, *args))

    def jvp(tangents, out, *args):
        total = None
        for t, d in zip(tangents, partials(out, *args)):
            if t is not None and d is not None:
                total = t * d if total is None else total + t * d
        return total
    return vjp, jvp


def elementwise(name, ufunc, partials=None, jax_name=None, **rules):
    """Register a ufunc. ``partials=None``: no gradient (comparisons, floor, ...).
    Each call states ``complex``: True for the holomorphic ones, whose partials are
    complex derivatives f'(z), so ``g * f'(z)`` is the VJP for complex operands too
    (JAX's convention, see the registry). The ufunc family's facts: the broadcasting
    batch rule, a new array, a FLOP per element, NumPy's loop dtype in the JAX lowering;
    a call may add an operator ``spelling`` and a structural-``zeros`` rule."""
    if "complex" not in rules:
        raise TypeError(f"elementwise({name!r}): state complex=True or complex=False")
    vjp = jvp = None
    if partials is not None:
        vjp, jvp = _partials_rules(partials)
    rules.setdefault("vjp", vjp)
    rules.setdefault("jvp", jvp)
    rules.setdefault("jax", jnp_fn(jax_name or ufunc.__name__))
    return register(name, ufunc, abstract=_broadcast_rule(ufunc), family="elementwise",
                    ufunc=ufunc, batch=batching.elementwise(name), **rules)


def elementwise_facts(name, **facts):
    """The facts of an elementwise primitive that is no ufunc, beside those of its family
    (``registry.FAMILIES["elementwise"]``): the broadcasting batch rule, and ``facts``
    where it differs."""
    return dict(batch=batching.elementwise(name), **facts)


# -- unary, differentiable ---------------------------------------------------
elementwise("neg", np.negative, lambda out, x: (-1.0,), complex=True, spelling="-{0}",
            zeros="first", vjp=lambda g, out, x: (-g,), jvp=lambda t, out, x: -t[0])


def _exp_partials(out, x):
    # exp's derivative is its value, capped at the largest finite number for real dtypes:
    # where exp overflowed (an untaken branch, as in SciPy's logsumexp, which computes
    # log(sum(exp(a))) for inputs where it overflows and then discards it) a zero
    # cotangent gives 0, not 0 * inf = NaN; a nonzero one still gives a huge value, and
    # below the overflow nothing changes. The cap is ``cap_finite`` (below), not
    # np.minimum: its derivative is 1, so higher orders record no comparisons and selects
    if np.dtype(out.dtype).kind == "f":
        return (apply("cap_finite", out),)
    return (out,)


elementwise("exp", np.exp, _exp_partials, complex=True)
elementwise("expm1", np.expm1, lambda out, x: (out + 1.0,), complex=True)
elementwise("log", np.log, lambda out, x: (1.0 / x,), complex=True)
elementwise("log1p", np.log1p, lambda out, x: (1.0 / (x + 1.0),), complex=True,
            torch_name="Log1PBackward0")
elementwise("log2", np.log2, lambda out, x: (1.0 / (x * LN2),), complex=True)
elementwise("log10", np.log10, lambda out, x: (1.0 / (x * LN10),), complex=True)
elementwise("sqrt", np.sqrt, lambda out, x: (0.5 / out,), complex=True)
elementwise("cbrt", np.cbrt, lambda out, x: (1.0 / (3.0 * out * out),), complex=False)
elementwise("sin", np.sin, lambda out, x: (np.cos(x),), complex=True)
elementwise("cos", np.cos, lambda out, x: (-np.sin(x),), complex=True)
elementwise("tan", np.tan, lambda out, x: (1.0 + out * out,), complex=True)
# (PyTorch names the inverse functions asin, acos, ...: AsinBackward0)
elementwise("arcsin", np.arcsin, lambda out, x: (1.0 / np.sqrt(1.0 - x * x),), complex=True,
            torch_name="AsinBackward0")
elementwise("arccos", np.arccos, lambda out, x: (-1.0 / np.sqrt(1.0 - x * x),), complex=True,
            torch_name="AcosBackward0")
elementwise("arctan", np.arctan, lambda out, x: (1.0 / (1.0 + x * x),), complex=True,
            torch_name="AtanBackward0")
elementwise("sinh", np.sinh, lambda out, x: (np.cosh(x),), complex=True)
elementwise("cosh", np.cosh, lambda out, x: (np.sinh(x),), complex=True)
elementwise("tanh", np.tanh, lambda out, x: (1.0 - out * out,), complex=True)
elementwise("arcsinh", np.arcsinh, lambda out, x: (1.0 / np.sqrt(x * x + 1.0),), complex=True,
            torch_name="AsinhBackward0")
# sqrt(x-1)*sqrt(x+1) rather than sqrt(x*x-1): no cancellation near x = 1
elementwise("arccosh", np.arccosh, lambda out, x: (1.0 / (np.sqrt(x - 1.0) * np.sqrt(x + 1.0)),),
            complex=True, torch_name="AcoshBackward0")
elementwise("arctanh", np.arctanh, lambda out, x: (1.0 / (1.0 - x * x),), complex=True,
            torch_name="AtanhBackward0")


def _abs_partials(out, x):
    # complex z: d|z| = Re(conj(z) dz) / |z|, so conj(z) / |z| (0 at z = 0, as JAX);
    # the JVP's complex product becomes real when cast to the output's dtype
    if np.dtype(x.dtype).kind == "c":
        return (np.conjugate(x) / np.where(out == 0, np.ones((), out.dtype), out),)
    return (np.sign(x),)


elementwise("abs", np.absolute, _abs_partials, jax=jax_numpy.absolute, complex=True)

# -- unary, zero gradient (piecewise constant) and boolean ------------------
elementwise("sign", np.sign, jax=jax_numpy.sign, complex=False)
for _name, _uf in [("floor", np.floor), ("ceil", np.ceil), ("rint", np.rint),
                   ("trunc", np.trunc)]:
    elementwise(_name, _uf, complex=False)
for _name, _uf in [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
                   ("logical_not", np.logical_not), ("invert", np.invert)]:
    elementwise(_name, _uf, complex=False)

# -- binary, differentiable ---------------------------------------------------
elementwise("add", np.add, lambda out, x, y: (1.0, 1.0), complex=True, spelling="{0} + {1}",
            vjp=lambda g, out, x, y: (g, g),
            jvp=lambda t, out, x, y: t[0] if t[1] is None else (t[1] if t[0] is None else t[0] + t[1]))
# ``vjp_needed`` (registry): the VJP of the operands that need a cotangent only; the same
# nodes as ``vjp`` records for them, none for a constant operand (2 * x, 1.0 / y)
elementwise("sub", np.subtract, lambda out, x, y: (1.0, -1.0), complex=True,
            spelling="{0} - {1}",
            vjp=lambda g, out, x, y: (g, -g),
            extra={"vjp_needed": lambda needed, g, out, x, y: (
                g if needed[0] else None, -g if needed[1] else None)},
            jvp=lambda t, out, x, y: -t[1] if t[0] is None else (t[0] if t[1] is None else t[0] - t[1]))
elementwise("mul", np.multiply, lambda out, x, y: (y, x), complex=True, spelling="{0} * {1}",
            zeros="any", extra={"vjp_needed": lambda needed, g, out, x, y: (
                g * y if needed[0] else None, g * x if needed[1] else None)})


def _div_vjp_needed(needed, g, out, x, y):
    # g / y, and -(g / y) * out for y: three operations for both (g * (1 / y) and
    # g * (-out / y) from the partials take five), which every higher order differentiates
    q = g / y
    return q if needed[0] else None, -(q * out) if needed[1] else None


def _div_jvp(t, out, x, y):
    # (tx - ty * out) / y
    tx, ty = t
    if ty is None:
        return tx / y
    return (-(ty * out) if tx is None else tx - ty * out) / y


elementwise("div", np.true_divide, lambda out, x, y: (1.0 / y, -out / y), complex=True,
            spelling="{0} / {1}", zeros="first", jax=jax_numpy.true_divide,
            vjp=lambda g, out, x, y: _div_vjp_needed((True, True), g, out, x, y),
            jvp=_div_jvp, extra={"vjp_needed": _div_vjp_needed})


def _pow_partials(out, x, y):
    # d/dx is 0 where y == 0 (x**0 is constant), not 0 * x**-1 = NaN at x = 0; the
    # exponent is swapped for 1 there so the unused branch stays finite (its own
    # derivative would otherwise bring 0 * inf back in the second derivative).
    # d/dy uses log(x) with x == 0 replaced by 1: the limit 0**y * log(0) is 0
    # for y > 0, and it keeps a NaN out of gradients w.r.t. a base of zero.
    zero_exp = y == 0
    y1 = np.where(zero_exp, 1.0, y)
    return (np.where(zero_exp, 0.0, y1 * x ** (y1 - 1.0)), np.log(np.where(x == 0, 1.0, x)) * out)


def _known_exponent(y):
    """The value of a constant exponent with no zero in it (a plain number or array, or a
    traced constant whose type says so through ``__tg_constant__``), in the floating
    dtype the guarded rule computes its partial in (``np.where(y == 0, 1.0, y)``'s); else
    None (a traced exponent, or one holding a zero, takes the guarded rule)."""
    if isinstance(y, (np.ndarray, np.generic, int, float, complex)):
        value = np.asarray(y)
    else:
        hook = getattr(type(y), "__tg_constant__", None)
        value = None if hook is None else hook(y)
        if value is None:
            return None
        value = np.asarray(value)
    if value.dtype.kind not in "iufc" or value.size == 0 or bool(np.any(value == 0)):
        return None
    return value.astype(np.result_type(value.dtype, 1.0))


def _pow_dx(x, c):
    """d(x**c)/dx for a known nonzero exponent ``c``: ``c * x ** (c - 1)``, the guarded
    rule's value wherever ``c != 0`` (its guards only test ``c == 0``) in its dtype,
    written plainly: 1 (None) for c = 1, ``c * x`` for c = 2."""
    if c.size == 1 and c.reshape(-1)[0] == 1:
        return None
    if c.size == 1 and c.reshape(-1)[0] == 2:
        return c * x
    return c * x ** (c - 1.0)


def _pow_vjp(g, out, x, y):
    c = _known_exponent(y)
    if c is None:
        return tuple(g * d for d in _pow_partials(out, x, y))
    d = _pow_dx(x, c)
    # (a constant exponent gets no cotangent: the pass would drop it unused)
    return (g if d is None else g * d, None)


def _pow_jvp(tangents, out, x, y):
    c = _known_exponent(y)
    tx, ty = tangents
    if c is None or ty is not None:
        dx, dy = _pow_partials(out, x, y)
        total = None if tx is None else tx * dx
        if ty is not None:
            total = ty * dy if total is None else total + ty * dy
        return total
    if tx is None:
        return None
    d = _pow_dx(x, c)
    return tx if d is None else tx * d


# an integer to a negative integer power raises in NumPy: the JAX lowering checks it.
# A constant exponent (x ** 2) gets the plain rule (2 * x), a traced one the guarded rule.
elementwise("pow", np.power, _pow_partials, jax=jax_numpy.power, complex=True,
            spelling="{0} ** {1}", vjp=_pow_vjp, jvp=_pow_jvp).extra["jax_checks"] = (
    lambda node: np.dtype(node["dtype"]).kind in "iu")


def _chooser(out, x, y):
    # JAX's convention: at a tie each side gets half of the gradient. The weights take
    # the output's dtype: Python floats here would make float64 masks in float32 graphs.
    # Complex operands: NumPy (and JAX) order them lexicographically (real part, then
    # imaginary part) and return one of the operands, so the rule is the same selection:
    # the cotangent goes, unconjugated, to the operand chosen (JAX's convention).
    one, half, zero = (np.asarray(v, dtype=out.dtype) for v in (1.0, 0.5, 0.0))
    return (np.where(x == out, np.where(y == out, half, one), zero),
            np.where(y == out, np.where(x == out, half, one), zero))


for _name, _uf in [("maximum", np.maximum), ("minimum", np.minimum), ("fmax", np.fmax),
                   ("fmin", np.fmin)]:
    elementwise(_name, _uf, _chooser, jax=jax_numpy.chooser(_name), complex=True)
elementwise("arctan2", np.arctan2, complex=False, torch_name="Atan2Backward0", partials=
            lambda out, x, y: (y / (x * x + y * y), -x / (x * x + y * y)))
elementwise("hypot", np.hypot, complex=False, partials=lambda out, x, y: (x / out, y / out))
elementwise("logaddexp", np.logaddexp, complex=False,
            partials=lambda out, x, y: (np.exp(x - out), np.exp(y - out)))
elementwise("remainder", np.remainder, complex=False,
            partials=lambda out, x, y: (1.0, -np.floor_divide(x, y)), jax=jax_numpy.remainder)
elementwise("floor_divide", np.floor_divide, jax=jax_numpy.floor_divide, complex=False)

# -- comparisons and logic: boolean results, no gradient ----------------------
for _name, _uf, _spelling in [
        ("equal", np.equal, "{0} == {1}"), ("not_equal", np.not_equal, "{0} != {1}"),
        ("less", np.less, "{0} < {1}"), ("less_equal", np.less_equal, "{0} <= {1}"),
        ("greater", np.greater, "{0} > {1}"), ("greater_equal", np.greater_equal, "{0} >= {1}"),
        ("logical_and", np.logical_and, None), ("logical_or", np.logical_or, None),
        ("logical_xor", np.logical_xor, None), ("bitwise_and", np.bitwise_and, None),
        ("bitwise_or", np.bitwise_or, None), ("bitwise_xor", np.bitwise_xor, None)]:
    elementwise(_name, _uf, complex=False, spelling=_spelling)


# -- relu: a primitive because networks apply it everywhere ----------------------
# np.where(x > 0, x, 0) gives the same values and derivative but costs a comparison
# and a select forward and another select backward; x * (x > 0) is cheap but turns -inf
# into nan. The derivative at 0 is 0, as in PyTorch.
def _relu_impl(x):
    return np.maximum(x, 0)


_relu_vjp, _relu_jvp = _partials_rules(lambda out, x: (x > 0,))
register(
    "relu", _relu_impl, abstract=_broadcast_rule(_relu_impl), vjp=_relu_vjp, jvp=_relu_jvp,
    jax=jax_numpy.relu, family="elementwise", doc="max(x, 0)",
    **elementwise_facts("relu"),
)


# -- cap_finite: exp's derivative, capped ---------------------------------------------
# min(x, largest finite number of x's dtype) for real floats (any other dtype: x, copied).
# Its derivative is taken as 1 everywhere, +inf included (np.minimum's would be 0 there):
# it caps exp's derivative (``_exp_partials``), whose own derivatives are exp's again and
# are capped the same way, so every order keeps the untaken-overflow protection without a
# comparison and a select per order. Below the overflow its values are x's, bit for bit.
def _cap_finite_impl(x):
    x = np.asarray(x)
    if x.dtype.kind == "f":
        return np.minimum(x, np.array(np.finfo(x.dtype).max, x.dtype))
    return x.copy()


def _cap_finite_jax(x):
    import jax.numpy as jnp

    if jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.minimum(x, jnp.finfo(x.dtype).max)
    return x


register(
    "cap_finite", _cap_finite_impl,
    abstract=lambda x: (x.shape, x.dtype),
    vjp=lambda g, out, x: (g,), jvp=lambda t, out, x: t[0],
    jax=_cap_finite_jax, family="elementwise",
    doc="np.minimum(x, np.finfo(x.dtype).max), derivative 1",
    **elementwise_facts("cap_finite", complex=True, zeros="first"),
)


# -- sigmoid: the logistic function, as PyTorch computes it ------------------------------
# 1 / (1 + exp(-x)) in x's dtype: below x = -88 (float32) exp(-x) overflows to inf and the
# value is 0, as in PyTorch; the tanh form 0.5 * tanh(0.5 x) + 0.5 loses everything below
# 1e-8 to cancellation (0 for sigmoid(-20) in float32, where PyTorch gives 2.06e-9).
# Its derivative is out * (1 - out): 0 where the value is 0, not 0 * inf.
def _sigmoid_impl(x):
    x = np.asarray(x)
    one = np.ones((), x.dtype) if x.dtype.kind in "fc" else 1.0
    with np.errstate(over="ignore"):
        return one / (one + np.exp(-x))


def _sigmoid_jax(x):
    import jax

    return jax.nn.sigmoid(x)    # (lax.logistic: XLA's own, equal to rounding)


register(
    "sigmoid", _sigmoid_impl, abstract=_broadcast_rule(_sigmoid_impl),
    vjp=lambda g, out, x: (g * (out * (1.0 - out)),),
    jvp=lambda t, out, x: t[0] * (out * (1.0 - out)),
    jax=_sigmoid_jax, family="elementwise",
    doc="the logistic function 1 / (1 + exp(-x)), torch.sigmoid",
    **elementwise_facts("sigmoid", complex=True, torch_name="SigmoidBackward0"),
)


# -- select: np.where(c, x, y) --------------------------------------------------
_BITS = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _select_impl(c, x, y):
    # np.where branches per element: with a mask like relu's it mispredicts half the
    # time (~15x slower than a ufunc). On big arrays the same bits come from masks:
    # (x & m) | (y & ~m), m all ones where c holds.
    if type(c) is np.ndarray and c.dtype == np.bool_ and c.size >= 4096:
        dtype = np.result_type(x, y)
        bits = _BITS.get(dtype.itemsize) if dtype.kind in "biuf" else None
        if bits is not None:
            m = c.view(np.uint8).astype(bits)
            xb = np.asarray(x, dtype).view(bits)
            yb = np.asarray(y, dtype).view(bits)
            shape = np.broadcast_shapes(c.shape, xb.shape, yb.shape)
            if m.shape == shape and xb.ndim == 0 and not xb:    # where(c, +0, y): y & ~m
                np.subtract(m, 1, out=m)                        # ~m as c - 1: one pass
                return np.bitwise_and(yb, m, out=m).view(dtype)
            np.negative(m, out=m)
            if m.shape == shape and yb.ndim == 0 and not yb:    # where(c, x, +0): x & m
                return np.bitwise_and(xb, m, out=m).view(dtype)
            out = np.bitwise_and(xb, m, out=np.empty(shape, bits))
            np.invert(m, out=m)
            out |= yb & m
            return out.view(dtype)
    return np.where(c, x, y)


register(
    "select", _select_impl,
    abstract=_broadcast_rule(_select_impl),
    vjp=lambda g, out, c, x, y: (None, np.where(c, g, 0.0), np.where(c, 0.0, g)),
    jvp=lambda t, out, c, x, y: np.where(
        c, 0.0 if t[1] is None else t[1], 0.0 if t[2] is None else t[2]),
    jax=jnp_fn("where"), nondiff_args=(0,), family="elementwise", doc="np.where(c, x, y)",
    **elementwise_facts("select", complex=True, zeros="all",
                        torch_name="WhereBackward0"),
)


# -- casts and gradient barriers -------------------------------------------------
def _convert_impl(x, dtype):
    return np.asarray(x).astype(dtype, copy=False)


# The rules hand the (co)tangent on unchanged: the derivative passes cast every one to its
# operand's dtype (``passes.common.fit``), taking the real part from complex to real.
def _convert_vjp(g, out, x, dtype):
    return (g if np.dtype(x.dtype).kind in "fc" else None,)


register(
    "convert", _convert_impl,
    abstract=lambda x, dtype: (x.shape, dtype),
    vjp=_convert_vjp,
    jvp=lambda t, out, x, dtype: t[0],
    jax=jax_numpy.astype, family="elementwise", doc="x.astype(dtype)",
    # a cast to the operand's own dtype is the operand itself (astype(copy=False))
    **elementwise_facts("convert", complex=True, aliasing="identity", zeros="first", cost=free,
                        torch_name="ToCopyBackward0"),
    schema=Spec({"dtype": DTYPE}, 1),
)
register(
    "stop_gradient", lambda x: x,
    abstract=lambda x: (x.shape, x.dtype), jax=jnp_fn("lax.stop_gradient"),
    family="elementwise", doc="identity that blocks gradients",
    **elementwise_facts("stop_gradient", complex=True, aliasing="identity", zeros="first",
                        cost=free),
)
