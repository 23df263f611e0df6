"""Special functions the eager ``tg.nn`` layers need: ``erf`` (exact GELU).

NumPy has no ``erf``; the implementation is SciPy's ufunc when SciPy is installed and
``math.erf`` element by element otherwise (both exact to the last bit or so).
"""
import math

import numpy as np

from ..registry import register
from .elementwise import _broadcast_rule, _partials_rules, elementwise_facts
from .util import jnp_fn

TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

try:    # pragma: no cover - which branch runs depends on the environment
    from scipy.special import erf as _scipy_erf
except ImportError:     # pragma: no cover
    _scipy_erf = None

_math_erf = np.vectorize(math.erf, otypes=[np.float64])


def _erf_impl(x):
    x = np.asarray(x)
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    if _scipy_erf is not None:
        return np.asarray(_scipy_erf(x)).astype(dtype, copy=False)
    return _math_erf(x).astype(dtype, copy=False)


_erf_vjp, _erf_jvp = _partials_rules(
    lambda out, x: (np.exp(-(x * x)) * TWO_OVER_SQRT_PI,))

register(
    "erf", _erf_impl, abstract=_broadcast_rule(_erf_impl), vjp=_erf_vjp, jvp=_erf_jvp,
    jax=jnp_fn("lax.erf"), family="elementwise", doc="the error function erf(x)",
    **elementwise_facts("erf", complex=False, aliasing="fresh"),
)
