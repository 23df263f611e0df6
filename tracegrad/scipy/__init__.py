"""SciPy's API on traced values, with SciPy's signatures (as ``jax.scipy`` and
``autograd.scipy``): ``special`` (the ufuncs, ``logsumexp``, ``softmax``, ``polygamma``),
``stats`` (densities), ``linalg`` (triangular and Cholesky solves, ``expm``, ``sqrtm``),
``spatial.distance`` (``pdist``, ``cdist``, ``squareform``, the vector distances) and
``integrate`` (``odeint`` with adjoint sensitivities). SciPy's own ``scipy.special`` ufuncs
and ``logsumexp`` also work on traced values directly; these modules add what SciPy cannot
run on a tracer (SciPy's own functions that cannot raise a ``TraceError`` pointing here:
``tracegrad/tracer/scipy_calls.py``). SciPy is an optional dependency (``pip install 'tracegrad[scipy]'``):
the functions that need it say so when it is missing."""
from . import (  # noqa: F401
    integrate,
    interpolate,
    linalg,
    ndimage,
    signal,
    sparse,
    spatial,
    special,
    stats,
)

__all__ = ["integrate", "interpolate", "linalg", "ndimage", "signal", "sparse", "spatial",
           "special", "stats"]
