"""``scipy.special`` functions as primitives: gammaln, digamma, erf, ndtr, expit, gammainc,
betainc, the Bessel functions, ...

Most of them are ufuncs, so a traced call (``scipy.special.gammaln(x)`` on a tracer)
reaches the tracer's ``__array_ufunc__``; the entry's ``extra["scipy"]`` names the
``scipy.special`` attribute it implements, and the tracer routes that ufunc here.
``polygamma`` is a Python function in SciPy (``tracegrad.scipy.special.polygamma`` applies
it). SciPy is an optional dependency (the ``scipy`` extra): the ir layer imports it only
inside the implementations, which raise a ``TraceError`` saying how to install it when it
is missing. The derivative rules apply these primitives again (``digamma`` is
``gammaln``'s derivative, ``polygamma(n + 1, x)`` that of ``polygamma(n, x)``), so they
differentiate to any order. The JAX lowering is ``jax.scipy.special``'s function of the
same name (``erfcinv``, which JAX lacks, through ``ndtri``); the functions JAX lacks
altogether (most Bessel functions, the inverse incomplete gamma functions) call SciPy's
on the host (``jax.pure_callback``).

Some partial derivatives do not exist here: a Bessel function's in its real order,
``betainc``'s in ``a`` and ``b``, the second of ``gammainc`` in ``a``. Their rules give a
``NoDerivative`` in that slot, an error when that operand is differentiated and nothing
otherwise. ``gammainc``'s first derivative in ``a`` is the primitive ``gammainc_da``, a
series on NumPy (``incomplete_gamma.py``) lowered to JAX's ``igamma_grad_a``.

Every entry is real only (``complex=False``): differentiating through complex operands
raises ``TraceError``.
"""
import math

import numpy as np

from ...errors import TraceError
from ..registry import apply, register
from .elementwise import _broadcast_rule, elementwise_facts
from .incomplete_gamma import gammainc_da
from .spectral import host_lowering

SQRT_PI = math.sqrt(math.pi)
SQRT_2PI = math.sqrt(2.0 * math.pi)
LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
SQRT2 = math.sqrt(2.0)


def special():
    """``scipy.special``, or a ``TraceError`` saying how to install SciPy."""
    try:
        import scipy.special
    except ImportError:   # pragma: no cover - scipy is installed in the test environment
        raise TraceError("this function needs SciPy, an optional dependency of tracegrad: "
                         "pip install 'tracegrad[scipy]'") from None
    return scipy.special


_math_erf = np.vectorize(math.erf, otypes=[np.float64])


def _erf_without_scipy(x):
    """``erf`` where SciPy is missing (the eager GELU needs it): ``math.erf`` per element."""
    x = np.asarray(x)
    return _math_erf(x).astype(x.dtype if x.dtype.kind == "f" else np.float64, copy=False)


def _impl(name, nin):
    if name == "erf":
        def impl(x):
            try:
                fn = special().erf
            except TraceError:     # pragma: no cover - scipy is installed in the tests
                return _erf_without_scipy(x)
            return fn(x)
    elif name == "polygamma":
        # in the result dtype: SciPy's own takes digamma of a float32 x in float32 even
        # where the result is float64 (an integer order)
        def impl(x, y):
            x, y = np.asarray(x), np.asarray(y)
            return special().polygamma(x, y.astype(_result_dtype((x, y)), copy=False))
    elif nin == 1:     # (the signature names the operands: ir/schema.py reads it)
        def impl(x):
            return getattr(special(), name)(x)
    elif nin == 2:
        def impl(x, y):
            return getattr(special(), name)(x, y)
    else:
        def impl(a, b, x):
            return getattr(special(), name)(a, b, x)
    impl.__name__ = impl.__qualname__ = f"scipy_special_{name}"
    return impl


def _result_dtype(args):
    """The dtype SciPy's loops give: the operands' common dtype, float64 for integers."""
    dtype = np.result_type(*(np.dtype(a.dtype) for a in args))
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _jax(name):
    def lower(*args):
        import jax.scipy.special as jsp
        dtype = _result_dtype(args)
        # SciPy's float32 loops compute in float64 and round: where float32 arithmetic
        # moves a pole (poch's z + m, zeta's sums), so does tracegrad
        wide = np.dtype(np.float64) if name in _IN_FLOAT64 else dtype
        args = tuple(a.astype(wide) for a in args)
        out = getattr(jsp, name)(*args)
        edges = _JAX_EDGES.get(name)
        out = out if edges is None else edges(out, *args)
        return out.astype(dtype)
    lower.__name__ = f"jax.scipy.special.{name}"
    return lower


_IN_FLOAT64 = frozenset({"poch", "zeta"})


def _pole(x):
    import jax.numpy as jnp
    return (x <= 0) & (x == jnp.floor(x))


def _digamma_edges(out, x):
    # SciPy: ψ(±0) = ∓inf (jax.scipy: NaN)
    import jax.numpy as jnp
    return jnp.where(x == 0, -jnp.copysign(jnp.inf, x), out)


# SciPy's beta and betaln (Cephes' beta.c, written out with jnp.where): jax.scipy.special's
# betaln is good to about 1e-7 absolute only, and NaN at the non-positive and infinite
# arguments where SciPy has a value. The branches, each computed everywhere and selected:
# a non-positive integer argument (reflected to positive ones, or ±inf), the asymptotic
# series for a >> b, log-gammas past Γ's overflow, and Γ(a)Γ(b)/Γ(a+b) otherwise.
_MAXGAM = 171.624376956302725
_ASYMP = 1e6
_INT_MIN, _INT_MAX = -2.0 ** 31, 2.0 ** 31 - 1.0


def _lgam_sgn(x):
    """Cephes' lgam_sgn: log|Γ(x)| (-inf at -inf, inf at the poles) and the sign (1 there)."""
    import jax.numpy as jnp
    import jax.scipy.special as jsp
    lg = jnp.where(jnp.isinf(x), x, jsp.gammaln(x))
    sign = jnp.where(_pole(x) | jnp.isinf(x), 1.0, jsp.gammasgn(x))
    return lg, sign


def _beta_regular(a, b, log):
    """beta (log: lbeta) of arguments that are not non-positive integers. Each branch
    sees its own operands where it is taken and safe ones (2, 1) elsewhere, so that the
    branches not taken put no NaN into JAX's derivatives of this lowering."""
    import jax.numpy as jnp
    import jax.scipy.special as jsp
    swap = jnp.abs(a) < jnp.abs(b)
    a, b = jnp.where(swap, b, a), jnp.where(swap, a, b)
    use_asymp = (jnp.abs(a) > _ASYMP * jnp.abs(b)) & (a > _ASYMP)
    # (in float32, Γ overflows past 35.04: SciPy's float32 loop computes in float64)
    maxgam = _MAXGAM if a.dtype == jnp.float64 else 35.0
    use_big = ((jnp.abs(a + b) > maxgam) | (jnp.abs(a) > maxgam) | (jnp.abs(b) > maxgam)) \
        & ~use_asymp
    use_direct = ~use_asymp & ~use_big

    def only(use, a, b):
        return jnp.where(use, a, 2.0), jnp.where(use, b, 1.0)

    # a >> b: log Γ(b) - b log a + the first terms of the series in 1/a
    # (written through p = b(1 - b)/a, so that float32 does not overflow in b²(1 - b)²)
    aa, ba = only(use_asymp, a, b)
    lgb, sgb = _lgam_sgn(ba)
    p = ba * (1 - ba) / aa
    asymp = lgb - ba * jnp.log(aa) + p / 2 + p * (1 - 2 * ba) / (12 * aa) - p * p / (12 * aa)
    # past Γ's overflow: log-gammas
    ab, bb = only(use_big, a, b)
    (lgy, sgy), (lga, sga), (lgb2, sgb2) = _lgam_sgn(ab + bb), _lgam_sgn(ab), _lgam_sgn(bb)
    big_log = lga + (lgb2 - lgy)
    big_sign = sgy * sgb2 * sga
    # Γ(a)Γ(b)/Γ(a+b), the division first by the Γ nearest Γ(a+b); Γ is inf at its poles
    # (exactly 1 at 1 and 2, where jax.scipy's exp(gammaln) is one ulp off: log B(1, 1) = 0)
    ad, bd = only(use_direct, a, b)

    def gamma(v):
        pole = _pole(v)
        g = jsp.gamma(jnp.where(pole, 0.5, v))
        return jnp.where(pole, jnp.inf, jnp.where((v == 1) | (v == 2), 1.0, g))

    gy, ga, gb = gamma(ad + bd), gamma(ad), gamma(bd)
    ratio = jnp.where(jnp.abs(jnp.abs(ga) - jnp.abs(gy)) > jnp.abs(jnp.abs(gb) - jnp.abs(gy)),
                      (gb / gy) * ga, (ga / gy) * gb)
    if log:
        direct = jnp.where(gy == 0, jnp.inf, jnp.log(jnp.abs(ratio)))
        return jnp.where(use_asymp, asymp, jnp.where(use_big, big_log, direct))
    direct = jnp.where(gy == 0, jnp.inf, ratio)
    return jnp.where(use_asymp, sgb * jnp.exp(asymp),
                     jnp.where(use_big, big_sign * jnp.exp(big_log), direct))


def _beta_cephes(a, b, log):
    import jax.numpy as jnp

    def in_int_range(v):
        return (v >= _INT_MIN) & (v <= _INT_MAX)

    def negint(n, v, taken):
        # n a non-positive integer: B(n, v) = ±B(1 - n - v, v) for an integer v with
        # 1 - n - v > 0 (inf when v <= 0 too), otherwise inf (safe operands elsewhere)
        c = 1.0 - n - v
        ok = taken & (v == jnp.floor(v)) & in_int_range(v) & (c > 0) & (v > 0)
        inner = _beta_regular(jnp.where(ok, c, 2.0), jnp.where(ok, v, 1.0), log)
        if log:
            value = jnp.where(v > 0, inner, jnp.inf)
        else:
            sign = jnp.where(jnp.remainder(v, 2.0) == 0, 1.0, -1.0)
            value = sign * jnp.where(v > 0, inner, jnp.inf)
        ok_any = (v == jnp.floor(v)) & in_int_range(v) & (c > 0)
        return jnp.where(ok_any, value, jnp.inf)

    a_neg, b_neg = _pole(a), _pole(b)
    plain = ~a_neg & ~b_neg
    out = _beta_regular(jnp.where(plain, a, 2.0), jnp.where(plain, b, 1.0), log)
    b_taken = b_neg & ~a_neg & in_int_range(b)
    a_taken = a_neg & in_int_range(a)
    out = jnp.where(b_neg, jnp.where(in_int_range(b), negint(b, a, b_taken), jnp.inf), out)
    return jnp.where(a_neg, jnp.where(in_int_range(a), negint(a, b, a_taken), jnp.inf), out)


def _beta_jax(a, b):
    dtype = _result_dtype((a, b))
    return _beta_cephes(a.astype(dtype), b.astype(dtype), False)


def _betaln_jax(a, b):
    dtype = _result_dtype((a, b))
    return _beta_cephes(a.astype(dtype), b.astype(dtype), True)


def _gammainc_edges(upper):
    # SciPy: P(0, x > 0) = 1, P(inf, finite x >= 0) = 0; Q the complement
    def edges(out, a, x):
        import jax.numpy as jnp
        zero_a = (a == 0) & (x > 0)
        inf_a = (a == jnp.inf) & (x >= 0) & jnp.isfinite(x)
        both_inf = (a == jnp.inf) & (x == jnp.inf)
        return jnp.where(zero_a, 0.0 if upper else 1.0,
                         jnp.where(inf_a, 1.0 if upper else 0.0,
                                   jnp.where(both_inf, jnp.nan, out)))
    return edges


def _log_ndtr_edges(out, x):
    # jax.scipy's log_ndtr is log(ndtr(x)) for x > 6 (ε-relative off; in float32 from
    # x = 3): log1p(-ndtr(-x)) for x > 0, where ndtr(-x) < 1/2 (erfc, relatively exact)
    import jax.numpy as jnp
    import jax.scipy.special as jsp
    return jnp.where(x > 0, jnp.log1p(-jsp.ndtr(-jnp.where(x > 0, x, 0.0))), out)


def _gammaln_edges(out, x):
    # SciPy: log Γ(-inf) = -inf, and exactly 0 at 1 and 2 (jax.scipy: +inf, ~1e-15)
    import jax.numpy as jnp
    return jnp.where(x == -jnp.inf, -jnp.inf, jnp.where((x == 1) | (x == 2), 0.0, out))


# the SciPy values at the edges where jax.scipy.special gives NaN (or another value)
_JAX_EDGES = {
    "gammaln": _gammaln_edges, "digamma": _digamma_edges, "gammainc": _gammainc_edges(False),
    "gammaincc": _gammainc_edges(True), "log_ndtr": _log_ndtr_edges,
}


def _jax_host(name):
    """The lowering of a function ``jax.scipy.special`` lacks (Bessel functions, ...):
    SciPy's own, called on the host by ``jax.pure_callback`` (no XLA kernel; JAX cannot
    differentiate it, which tracegrad's JAX backend never asks: the derivative rules
    are applied before lowering)."""
    def lower(*args):
        import jax
        fn = getattr(special(), name)
        with np.errstate(all="ignore"):
            dtype = fn(*(np.ones((), a.dtype) for a in args)).dtype
        shape = np.broadcast_shapes(*(a.shape for a in args))
        return jax.pure_callback(lambda *xs: np.asarray(fn(*xs), dtype),
                                 jax.ShapeDtypeStruct(shape, dtype), *args,
                                 vmap_method="broadcast_all")
    lower.__name__ = f"scipy.special.{name} (host callback)"
    return lower


class NoDerivative:
    """A partial derivative tracegrad does not have (a Bessel function's order, betainc's
    a and b). A rule's ``partials`` gives one in that operand's slot: the JVP raises when
    that operand has a tangent; the VJP returns it as that operand's cotangent, which
    the adjoint pass reads (its ``.shape``, to fit it) only for an operand a gradient
    flows into. So differentiating with respect to the other operands works, and with
    respect to this one raises ``TraceError`` (naming the user's line), never a silent
    zero."""

    def __init__(self, message):
        self.message = message

    def refuse(self):
        raise TraceError(self.message)

    @property
    def shape(self):
        self.refuse()

    @property
    def dtype(self):
        self.refuse()

    def __array__(self, *args, **kwargs):
        self.refuse()


def _rules(partials):
    """VJP and JVP from per-operand partial derivatives ``partials(out, *args)``
    (None: no derivative flows; a ``NoDerivative``: refused)."""
    def vjp(g, out, *args):
        return tuple(d if d is None or isinstance(d, NoDerivative) else g * d
                     for d in partials(out, *args))

    def jvp(tangents, out, *args):
        total = None
        for t, d in zip(tangents, partials(out, *args)):
            if t is None or d is None:
                continue
            if isinstance(d, NoDerivative):
                d.refuse()
            total = t * d if total is None else total + t * d
        return total
    return vjp, jvp


def _register(name, nin, partials, doc, jax=None, nondiff_args=(), scipy=True, impl=None,
              rules=None, **facts):
    impl = impl or _impl(name, nin)
    vjp, jvp = rules if rules is not None else \
        _rules(partials) if partials is not None else (None, None)
    prim = register(
        name, impl, abstract=_broadcast_rule(impl), vjp=vjp, jvp=jvp,
        jax=jax or _jax(name), nondiff_args=nondiff_args, family="elementwise",
        doc=f"scipy.special.{name}: {doc}" if scipy else doc,
        # not the ufunc fact: that one is NumPy's and imported with the ir; the tracer
        # routes SciPy's ufunc by extra["scipy"] instead
        **{**elementwise_facts(name), **facts},
    )
    if scipy:
        prim.extra["scipy"] = name
    return prim


def _host(name, nin, partials, doc, **kw):
    """A function JAX lacks: lowered to a host callback of SciPy's."""
    return _register(name, nin, partials, doc, jax=_jax_host(name), jax_casts=None, **kw)


def _x_over(x, num, at_zero):
    """``num / x`` with the limit ``at_zero`` at x == 0 (both sides finite there)."""
    zero = x == 0
    return np.where(zero, at_zero, num / np.where(zero, 1.0, x))


# -- gamma family ------------------------------------------------------------------------------
_register("gammaln", 1, lambda out, x: (apply("digamma", x),), "log|Γ(x)|")
_register("digamma", 1, lambda out, x: (apply("polygamma", np.int64(1), x),), "ψ(x) = Γ'(x)/Γ(x)")
def _polygamma_jax(n, x):
    import jax.numpy as jnp
    import jax.scipy.special as jsp
    x = x.astype(_result_dtype((n, x)))
    out = jsp.polygamma(n.astype("int64"), x)
    # SciPy: (-1)^(n+1) n! ζ(n + 1, x) for n >= 1, so ±inf at the poles and at -inf, 0 at
    # inf (jax.scipy: NaN at these for some n)
    higher = n >= 1
    pole = _pole(x) | (x == -jnp.inf)
    out = jnp.where(higher & pole, jnp.where(jnp.remainder(n, 2) == 1, jnp.inf, -jnp.inf), out)
    out = jnp.where(higher & (x == jnp.inf), 0.0, out)
    return jnp.where(n == 0, _digamma_edges(out, x), out)


# JAX wants an integer order: the lowering casts the operands itself (jax_casts=None)
_register("polygamma", 2, lambda out, n, x: (None, apply("polygamma", n + 1, x)),
          "the n-th derivative of digamma; n a non-negative integer (not differentiated)",
          jax=_polygamma_jax, nondiff_args=(0,), jax_casts=None)
_register("gamma", 1, lambda out, x: (out * apply("digamma", x),), "Γ(x)")


def _beta_partials(out, a, b):
    both = apply("digamma", a + b)
    return (out * (apply("digamma", a) - both), out * (apply("digamma", b) - both))


def _betaln_partials(out, a, b):
    both = apply("digamma", a + b)
    return (apply("digamma", a) - both, apply("digamma", b) - both)


_register("beta", 2, _beta_partials, "B(a, b) = Γ(a)Γ(b)/Γ(a+b)", jax=_beta_jax)
_register("betaln", 2, _betaln_partials, "log|B(a, b)|", jax=_betaln_jax)

# -- error function and the normal distribution ---------------------------------------------
_register("erf", 1, lambda out, x: ((2.0 / SQRT_PI) * np.exp(-x * x),), "the error function")
_register("erfc", 1, lambda out, x: ((-2.0 / SQRT_PI) * np.exp(-x * x),), "1 - erf(x)")
_register("erfinv", 1, lambda out, x: ((0.5 * SQRT_PI) * np.exp(out * out),), "erf⁻¹(x)")


def _erfcinv_jax(x):
    import jax.scipy.special as jsp
    x = x.astype(_result_dtype((x,)))
    return jsp.ndtri(x * 0.5) * (-1.0 / SQRT2)


_register("erfcinv", 1, lambda out, x: ((-0.5 * SQRT_PI) * np.exp(out * out),), "erfc⁻¹(x)",
          jax=_erfcinv_jax)
_register("ndtr", 1, lambda out, x: ((1.0 / SQRT_2PI) * np.exp(-0.5 * x * x),),
          "the standard normal CDF")
_register("ndtri", 1, lambda out, x: (SQRT_2PI * np.exp(0.5 * out * out),),
          "the standard normal quantile (ndtr⁻¹)")
# φ(x)/Φ(x) as exp(log φ(x) - log Φ(x)): finite far in the lower tail
_register("log_ndtr", 1, lambda out, x: (np.exp(-0.5 * x * x - LOG_SQRT_2PI - out),),
          "log of the standard normal CDF, accurate in both tails")

# -- logistic ---------------------------------------------------------------------------------
_register("expit", 1, lambda out, x: (out * (1.0 - out),), "the logistic sigmoid")
_register("logit", 1, lambda out, x: (1.0 / (x * (1.0 - x)),), "log(p / (1 - p))")

# -- x log y ----------------------------------------------------------------------------------
def _x_log_rules(name, shift):
    """``name``(x, y) = x·log(y + shift) is linear in x: its derivative for x is
    ``name``(t, y), not t·log(y + shift), so that a zero tangent or cotangent gives zero
    where log(y + shift) is NaN or infinite (torch's xlogy derivative:
    ``at::xlogy(grad, other)``; a Jacobian's other rows stay finite)."""
    def vjp(g, out, x, y):
        return apply(name, g, y), g * (x / (y + shift) if shift else x / y)

    def jvp(tangents, out, x, y):
        tx, ty = tangents
        total = None if tx is None else apply(name, tx, y)
        if ty is not None:
            term = ty * (x / (y + shift) if shift else x / y)
            total = term if total is None else total + term
        return total
    return vjp, jvp


_register("xlogy", 2, None, "x·log(y), 0 where x == 0", rules=_x_log_rules("xlogy", 0))
_register("xlog1py", 2, None, "x·log1p(y), 0 where x == 0",
          rules=_x_log_rules("xlog1py", 1.0))

# -- modified Bessel functions of orders 0 and 1 ------------------------------------------------
# i0' = i1, i1' = i0 - i1/x (1/2 at 0); the exponentially scaled ones add -sign(x) times
# themselves
_register("i0", 1, lambda out, x: (apply("i1", x),), "modified Bessel function of order 0")
_register("i1", 1, lambda out, x: (apply("i0", x) - _x_over(x, out, 0.5),),
          "modified Bessel function of order 1")
_register("i0e", 1, lambda out, x: (apply("i1e", x) - np.sign(x) * out,), "exp(-|x|)·i0(x)")
_register("i1e", 1, lambda out, x: (apply("i0e", x) - _x_over(x, out, 0.5) - np.sign(x) * out,),
          "exp(-|x|)·i1(x)")


# -- incomplete gamma and beta functions -------------------------------------------------------
def _gamma_density(a, x):
    """∂P(a, x)/∂x = x^(a-1) e^-x / Γ(a) (xlogy: 1 at x = 0 for a = 1)."""
    return np.exp(apply("xlogy", a - 1.0, x) - x - apply("gammaln", a))


def _gammainc_da_impl(a, x):
    a, x = np.asarray(a), np.asarray(x)
    with np.errstate(all="ignore"):
        out = gammainc_da(a, x, special().gammaln, special().digamma)
    return out.astype(_result_dtype((a, x)), copy=False)


def _gammainc_da_jax(a, x):
    from jax import lax
    dtype = _result_dtype((a, x))
    return lax.igamma_grad_a(a.astype(dtype), x.astype(dtype))


# its derivative in x is that of ∂P/∂x in a; in a (P's second derivative) it has none,
# as in JAX
_register("gammainc_da", 2,
          lambda out, a, x: (NoDerivative("the second derivative of gammainc (gammaincc) "
                                          "with respect to a is not implemented"),
                             _gamma_density(a, x) * (np.log(x) - apply("digamma", a))),
          "∂/∂a of scipy.special.gammainc(a, x) (a series on NumPy: ir/prims/incomplete_gamma.py)",
          jax=_gammainc_da_jax, scipy=False, impl=_gammainc_da_impl)
_register("gammainc", 2,
          lambda out, a, x: (apply("gammainc_da", a, x), _gamma_density(a, x)),
          "the regularized lower incomplete gamma function P(a, x)")
_register("gammaincc", 2,
          lambda out, a, x: (-apply("gammainc_da", a, x), -_gamma_density(a, x)),
          "the regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)")


# the inverses in x: dx/dy = 1/(∂P/∂x), dx/da = -(∂P/∂a)/(∂P/∂x) (Q's: the same in a)
def _gammaincinv_partials(sign):
    def partials(out, a, y):
        density = _gamma_density(a, out)
        return (-apply("gammainc_da", a, out) / density, sign / density)
    return partials


_host("gammaincinv", 2, _gammaincinv_partials(1.0), "x such that gammainc(a, x) = y")
_host("gammainccinv", 2, _gammaincinv_partials(-1.0), "x such that gammaincc(a, x) = y")


def _betainc_partials(out, a, b, x):
    no = NoDerivative("scipy.special.betainc(a, b, x) is differentiable in x only: its "
                      "derivatives with respect to a and b are not implemented (nor in JAX)")
    density = np.exp(apply("xlogy", a - 1.0, x) + apply("xlog1py", b - 1.0, -x)
                     - apply("betaln", a, b))
    return (no, no, density)


_register("betainc", 3, _betainc_partials, "the regularized incomplete beta function I_x(a, b)")


# -- Bessel functions -----------------------------------------------------------------------------
# jsp has none of these (its bessel_jn is good to ~1e-10): lowered to SciPy on the host.
# The derivatives in x are the recurrences (DLMF 10.6.1, 10.29.1); in a real order, none.
def _order(name):
    return NoDerivative(f"scipy.special.{name}(v, x) is differentiable in x only: its "
                        f"derivative with respect to the order v is not implemented")


_host("j0", 1, lambda out, x: (-apply("j1", x),), "Bessel function of the first kind, order 0")
_host("j1", 1, lambda out, x: (apply("j0", x) - _x_over(x, out, 0.5),),
      "Bessel function of the first kind, order 1")
_host("y0", 1, lambda out, x: (-apply("y1", x),), "Bessel function of the second kind, order 0")
_host("y1", 1, lambda out, x: (apply("y0", x) - out / x,),
      "Bessel function of the second kind, order 1")
_host("jv", 2, lambda out, v, x: (_order("jv"),
                                  0.5 * (apply("jv", v - 1.0, x) - apply("jv", v + 1.0, x))),
      "Bessel function of the first kind, real order v (scipy.special.jn is the same ufunc)")
_host("yv", 2, lambda out, v, x: (_order("yv"),
                                  0.5 * (apply("yv", v - 1.0, x) - apply("yv", v + 1.0, x))),
      "Bessel function of the second kind, real order v")
_host("yn", 2, lambda out, n, x: (None, 0.5 * (apply("yn", n - 1, x) - apply("yn", n + 1, x))),
      "Bessel function of the second kind, integer order n (not differentiated)",
      nondiff_args=(0,))
_host("iv", 2, lambda out, v, x: (_order("iv"),
                                  0.5 * (apply("iv", v - 1.0, x) + apply("iv", v + 1.0, x))),
      "modified Bessel function of the first kind, real order v")
_host("ive", 2, lambda out, v, x: (
    _order("ive"),
    0.5 * (apply("ive", v - 1.0, x) + apply("ive", v + 1.0, x)) - np.sign(x) * out),
    "exp(-|x|)·iv(v, x)")
_host("kv", 2, lambda out, v, x: (_order("kv"),
                                  -0.5 * (apply("kv", v - 1.0, x) + apply("kv", v + 1.0, x))),
      "modified Bessel function of the second kind, real order v")
_host("kve", 2, lambda out, v, x: (
    _order("kve"), out - 0.5 * (apply("kve", v - 1.0, x) + apply("kve", v + 1.0, x))),
    "exp(x)·kv(v, x)")
_host("k0", 1, lambda out, x: (-apply("k1", x),),
      "modified Bessel function of the second kind, order 0")
_host("k1", 1, lambda out, x: (-apply("k0", x) - out / x,),
      "modified Bessel function of the second kind, order 1")
_host("k0e", 1, lambda out, x: (out - apply("k1e", x),), "exp(x)·k0(x)")
_host("k1e", 1, lambda out, x: (out - apply("k0e", x) - out / x,), "exp(x)·k1(x)")


# -- 1/Γ and the sign of Γ -----------------------------------------------------------------------
def _rgamma_partials(out, x):
    # -ψ(x)/Γ(x), except at the poles of Γ (x = -n) where 1/Γ is 0 and its slope
    # (-1)^n n!; each branch sees safe operands, so neither makes a NaN for the other
    pole = (x <= 0) & (x == np.floor(x))
    away = np.where(pole, 0.5, x)
    at_pole = apply("gamma", 1.0 - np.where(pole, x, 0.0)) * np.cos(np.pi * np.where(pole, x, 0.0))
    return (np.where(pole, at_pole, -apply("digamma", away) * apply("rgamma", away)),)


def _rgamma_jax(x):
    import jax.numpy as jnp
    import jax.scipy.special as jsp
    x = x.astype(_result_dtype((x,)))
    pole = (x <= 0) & (x == jnp.floor(x))
    safe = jnp.where(pole, 0.5, x)
    return jnp.where(pole, 0.0, jsp.gammasgn(safe) * jnp.exp(-jsp.gammaln(safe)))


_register("rgamma", 1, _rgamma_partials, "1/Γ(x), 0 at the poles of Γ", jax=_rgamma_jax)
# piecewise constant: no derivative flows (as np.sign)
_register("gammasgn", 1, None, "the sign of Γ(x)")


# -- entropies, exponential integrals, Pochhammer, Hurwitz zeta ------------------
_register("entr", 1, lambda out, x: (-np.log(x) - 1.0,), "-x·log(x), the entropy's summand")
_register("rel_entr", 2, lambda out, x, y: (np.log(x / y) + 1.0, -x / y),
          "x·log(x/y), the relative entropy's summand")
_register("kl_div", 2, lambda out, x, y: (np.log(x / y), 1.0 - x / y),
          "x·log(x/y) - x + y, the Kullback-Leibler divergence's summand")


# Ei and E1 lower to SciPy's own on the host (jax.pure_callback): jax.scipy.special's
# expi is a jnp.piecewise (a vmap of lax.switch) over branches with while loops, which
# jax.experimental.checkify refuses ("checkify-of-vmap-of-while") in any graph that carries
# a check (a cond, a guard), and which needed its own edge cases besides; on the host the
# values are SciPy's, as the NumPy backends give them.


def _entropy_edges(kl):
    # SciPy's cases: NaN if an operand is; x log(x/y) (- x + y) for x, y > 0; 0 (y) for
    # x = 0 and y >= 0; inf otherwise (jax.scipy: NaN or inf elsewhere at the infinities)
    def edges(out, x, y):
        import jax.numpy as jnp
        both = (x > 0) & (y > 0)
        zero = (x == 0) & (y >= 0)
        value = jnp.where(both, out, jnp.where(zero, y if kl else 0.0, jnp.inf))
        # x, y > 0 with one infinite: x log(x/y) is inf (x = inf) or -inf (y = inf); the
        # kl_div terms add -x + y: inf - inf, NaN, either way
        inf_x, inf_y = both & (x == jnp.inf), both & (y == jnp.inf)
        if kl:
            value = jnp.where(inf_x | inf_y, jnp.nan, value)
        else:
            value = jnp.where(inf_x & ~inf_y, jnp.inf,
                              jnp.where(inf_y & ~inf_x, -jnp.inf, value))
        return jnp.where(jnp.isnan(x) | jnp.isnan(y), jnp.nan, value)
    return edges


def _zeta_edges(out, x, q):
    # SciPy's ζ(x, q) at the poles of q (and -inf): inf for x > 1 (or NaN x), NaN for
    # x < 1; 0 at q = inf for x > 1; at x = inf: 1 for q = 1, inf below, 0 above
    # (jax.scipy: NaN or inf the other way round)
    import jax.numpy as jnp
    qpole = _pole(q) | (q == -jnp.inf)
    out = jnp.where(qpole, jnp.where((x > 1) | jnp.isnan(x), jnp.inf,
                                     jnp.where(x < 1, jnp.nan, out)), out)
    out = jnp.where((q == jnp.inf) & (x > 1), 0.0, out)
    at_inf = jnp.where(q == 1, 1.0, jnp.where(q < 1, jnp.inf, jnp.where(q > 1, 0.0, jnp.nan)))
    return jnp.where(x == jnp.inf, at_inf, out)


def _poch_edges(out, z, m):
    # SciPy's (z)_m = Γ(z + m)/Γ(z) at the poles (jax.scipy: NaN there): 1 for m = 0; 0
    # where only z is a pole, inf where only z + m is; where both are, the limit
    # (-1)^m Γ(1 - z)/Γ(1 - z - m). SciPy counts a pole only below 1e13 in magnitude
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import gammaln

    def pole(v):
        return _pole(v) & (jnp.abs(v) < 1e13)
    s = z + m
    zp, sp = pole(z), pole(s)
    both = zp & sp
    a, b = jnp.where(both, 1.0 - z, 1.0), jnp.where(both, 1.0 - s, 1.0)
    sign = jnp.where(jnp.fmod(jnp.where(both, m, 0.0), 2.0) == 0, 1.0, -1.0)
    limit = sign * jnp.exp(gammaln(a) - gammaln(b))
    out = jnp.where(both, limit, jnp.where(zp, 0.0, jnp.where(sp, jnp.inf, out)))
    # large z, small m (as SciPy): z^m (1 + m(m-1)/2z + m(m-1)(m-2)(3m-1)/24z²), the error
    # of order (m²/z)³; z = inf: inf for m > 0, 0 for m < 0
    large = (z > 1e4) & (m * m < 1e-4 * z) & jnp.isfinite(z)
    zl = jnp.where(large, z, 1.0)
    series = zl ** m * (1.0 + m * (m - 1.0) / (2.0 * zl)
                        + m * (m - 1.0) * (m - 2.0) * (3.0 * m - 1.0) / (24.0 * zl * zl))
    out = jnp.where(large, series, out)
    # other large positive z: Γ(z + m)/Γ(z) by logarithms (jax.scipy's ratio overflows)
    big = (z > 1e4) & ~large & (s > 0)
    logs = gammaln(jnp.where(big, s, 1.0)) - gammaln(jnp.where(big, z, 1.0))
    out = jnp.where(big, jnp.exp(logs), out)
    # a small integer m: SciPy's recurrence, the product z (z + 1) ... (z + m - 1), or the
    # reciprocal of (z - 1) ... (z + m) for m < 0 (but inf where only z + m is a pole)
    steps = jnp.where(jnp.isfinite(m), jnp.abs(m), 0.0)
    short = (m == jnp.round(m)) & (steps <= 40) & ~(sp & ~zp) & jnp.isfinite(z + m)
    def times(k, prod):     # (a loop, not 40 unrolled steps: XLA compiles it at once)
        factor = jnp.where(m > 0, z + k, z - (k + 1))
        return prod * jnp.where(k < steps, factor, 1.0)
    prod = jax.lax.fori_loop(0, 40, times, jnp.ones_like(out))
    out = jnp.where(short, jnp.where(m > 0, prod, 1.0 / prod), out)
    out = jnp.where((z == jnp.inf) & jnp.isfinite(m), jnp.where(m > 0, jnp.inf, 0.0), out)
    return jnp.where(m == 0, 1.0, out)


_JAX_EDGES.update({"poch": _poch_edges, "rel_entr": _entropy_edges(False),
                   "kl_div": _entropy_edges(True), "zeta": _zeta_edges})


_register("exp1", 1, lambda out, x: (-np.exp(-x) / x,), "the exponential integral E₁(x)",
          jax=host_lowering("exp1"))
_register("expi", 1, lambda out, x: (np.exp(x) / x,), "the exponential integral Ei(x)",
          jax=host_lowering("expi"))
_register("erfcx", 1, lambda out, x: (2.0 * x * out - 2.0 / SQRT_PI,),
          "the scaled complementary error function exp(x²)·erfc(x)")


def _poch_partials(out, z, m):
    upper = apply("digamma", z + m)
    return (out * (upper - apply("digamma", z)), out * upper)


_register("poch", 2, _poch_partials, "the rising factorial Γ(z + m)/Γ(z)")
# scipy.special.zeta(x, q) is a Python function applying the ufunc _zeta (q given): the
# primitive routes _zeta. d/dq ζ(x, q) = -x·ζ(x + 1, q); in x, none
_ZETA = _register(
    "zeta", 2, lambda out, x, q: (
        NoDerivative("scipy.special.zeta(x, q) is differentiable in q only: its derivative "
                     "with respect to x is not implemented"),
        -x * apply("zeta", x + 1.0, q)),
    "the Hurwitz zeta function ζ(x, q) (scipy.special.zeta with q given)", scipy=False,
    impl=lambda x, q: special().zeta(x, q))
_ZETA.extra["scipy"] = "_zeta"
