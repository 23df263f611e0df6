"""Primitives for the rest of NumPy's everyday surface. Only what cannot be composed:
``argsort`` (a stable sort's permutation, an integer result with no gradient). ``np.sort``,
``np.partition``, quantiles and the rest are composed from it by the tracer
(``tracegrad/tracer/np_sorting.py``): a gather at the permutation, whose gradient scatters
back, as JAX's sort does.
"""
import functools

import numpy as np

from ..registry import register as _register
from ..schema import AXIS, Spec  # the loader's parameter kinds

# argsort returns integers: no derivative whatever the dtype.
register = functools.partial(_register, complex=True)


def _argsort_jax(x, axis):
    import jax.numpy as jnp

    from .jax_numpy import sort_key
    return jnp.argsort(sort_key(x), axis=axis, stable=True).astype(jnp.int64)


register(
    "argsort", lambda x, axis: np.argsort(x, axis=axis, kind="stable").astype(np.int64),
    abstract=lambda x, axis: (x.shape, np.int64),
    jax=_argsort_jax, family="shape",
    batch=None, aliasing="fresh", zeros=None,

    doc="np.argsort(x, axis, kind='stable'): ties keep their order, as in JAX's stable sort",
    schema=Spec({"axis": AXIS}, 1),
)
