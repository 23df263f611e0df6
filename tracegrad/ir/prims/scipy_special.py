"""``scipy.special`` functions as primitives: gammaln, digamma, erf, ndtr, expit, ...

Most of them are ufuncs, so a traced call (``scipy.special.gammaln(x)`` on a tracer)
reaches the tracer's ``__array_ufunc__``; the entry's ``extra["scipy"]`` names the
``scipy.special`` attribute it implements, and the tracer routes that ufunc here.
``polygamma`` is a Python function in SciPy (``tracegrad.scipy.special.polygamma`` applies
it). SciPy is an optional dependency (the ``scipy`` extra): the ir layer imports it only
inside the implementations, which raise a ``TraceError`` saying how to install it when it
is missing. The derivative rules apply these primitives again (``digamma`` is
``gammaln``'s derivative, ``polygamma(n + 1, x)`` that of ``polygamma(n, x)``), so they
differentiate to any order. The JAX lowering is ``jax.scipy.special``'s function of the
same name (``erfcinv``, which JAX lacks, through ``ndtri``).

Every entry is real only (``complex=False``): differentiating through complex operands
raises ``TraceError``.
"""
import math

import numpy as np

from ...errors import TraceError
from ..registry import apply, register
from .elementwise import _broadcast_rule, _partials_rules, elementwise_facts

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
    elif nin == 1:
        def impl(x):
            return getattr(special(), name)(x)
    elif name == "polygamma":
        # in the result dtype: SciPy's own takes digamma of a float32 x in float32 even
        # where the result is float64 (an integer order)
        def impl(x, y):
            x, y = np.asarray(x), np.asarray(y)
            return special().polygamma(x, y.astype(_result_dtype((x, y)), copy=False))
    else:
        def impl(x, y):
            return getattr(special(), name)(x, y)
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
        return getattr(jsp, name)(*(a.astype(dtype) for a in args))
    lower.__name__ = f"jax.scipy.special.{name}"
    return lower


def _register(name, nin, partials, doc, jax=None, nondiff_args=(), **facts):
    impl = _impl(name, nin)
    vjp, jvp = _partials_rules(partials)
    prim = register(
        name, impl, abstract=_broadcast_rule(impl), vjp=vjp, jvp=jvp,
        jax=jax or _jax(name), nondiff_args=nondiff_args, family="elementwise",
        doc=f"scipy.special.{name}: {doc}",
        # not the ufunc fact: that one is NumPy's and imported with the ir; the tracer
        # routes SciPy's ufunc by extra["scipy"] instead
        **{**elementwise_facts(name, complex=False, aliasing="fresh"), **facts},
    )
    prim.extra["scipy"] = name
    return prim


def _x_over(x, num, at_zero):
    """``num / x`` with the limit ``at_zero`` at x == 0 (both sides finite there)."""
    zero = x == 0
    return np.where(zero, at_zero, num / np.where(zero, 1.0, x))


# -- gamma family ------------------------------------------------------------------------------
_register("gammaln", 1, lambda out, x: (apply("digamma", x),), "log|Γ(x)|")
_register("digamma", 1, lambda out, x: (apply("polygamma", np.int64(1), x),), "ψ(x) = Γ'(x)/Γ(x)")
def _polygamma_jax(n, x):
    import jax.scipy.special as jsp
    return jsp.polygamma(n.astype("int64"), x.astype(_result_dtype((n, x))))


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


_register("beta", 2, _beta_partials, "B(a, b) = Γ(a)Γ(b)/Γ(a+b)")
_register("betaln", 2, _betaln_partials, "log|B(a, b)|")

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
_register("xlogy", 2, lambda out, x, y: (np.log(y), x / y), "x·log(y), 0 where x == 0")
_register("xlog1py", 2, lambda out, x, y: (np.log1p(y), x / (1.0 + y)),
          "x·log1p(y), 0 where x == 0")

# -- modified Bessel functions of orders 0 and 1 ------------------------------------------------
# i0' = i1, i1' = i0 - i1/x (1/2 at 0); the exponentially scaled ones add -sign(x) times
# themselves
_register("i0", 1, lambda out, x: (apply("i1", x),), "modified Bessel function of order 0")
_register("i1", 1, lambda out, x: (apply("i0", x) - _x_over(x, out, 0.5),),
          "modified Bessel function of order 1")
_register("i0e", 1, lambda out, x: (apply("i1e", x) - np.sign(x) * out,), "exp(-|x|)·i0(x)")
_register("i1e", 1, lambda out, x: (apply("i0e", x) - _x_over(x, out, 0.5) - np.sign(x) * out,),
          "exp(-|x|)·i1(x)")
