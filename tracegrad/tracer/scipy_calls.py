"""SciPy's own functions called on traced values: which SciPy function the running code is
inside, by its public SciPy name, and the error that refuses it.

SciPy's ufuncs (``scipy.special.expit``) reach the tracer's ``__array_ufunc__`` and are
routed to primitives (``numpy_api``). SciPy's other functions convert their arguments
with ``np.asarray`` (or read ``float()``, ``.flags``, ``.device`` of them) and then compute
in compiled code, which no NumPy protocol lets a tracer follow; patching SciPy's modules
would be seen by every thread. So a tracer asked for such a conversion from inside SciPy
refuses it at once, naming the SciPy function the user called (the outermost SciPy frame
below the user's, e.g. ``scipy.linalg.solve`` or ``scipy.stats.norm.logpdf``) and the
user's line, and pointing to tracegrad's equivalent where there is one (``ALTERNATIVES``),
instead of letting SciPy fail later on an object array. The functions listed in
``RUNS_AS_NUMPY`` are plain NumPy code on their arguments (``scipy.special.logsumexp``,
``scipy.spatial.distance.euclidean``): their conversions are allowed, and they are traced
as NumPy code. ``tests/test_scipy_as_scipy.py`` checks both lists against SciPy's values
and finite differences, and ``docs/scipy.md`` is written from them.
"""
from __future__ import annotations

import os
import sys

from ..errors import TraceError
from ..ir.source import SCIPY_FOLDER, _is_internal, where

# SciPy functions whose code is NumPy calls on their arguments: run on traced values as
# they are (each one checked against SciPy's values and finite differences)
RUNS_AS_NUMPY: frozenset[str] = frozenset({
    *(f"scipy.spatial.distance.{n}" for n in (
        "braycurtis", "canberra", "chebyshev", "cityblock", "euclidean", "hamming", "jaccard",
        "minkowski", "sqeuclidean")),
    "scipy.linalg.norm", "scipy.linalg.khatri_rao",
    *(f"scipy.special.{n}" for n in ("logsumexp", "softmax", "log_softmax", "softplus")),
})

# where a refused SciPy function has an equivalent tracegrad can differentiate
_TG = "tracegrad.scipy"
ALTERNATIVES: dict[str, str] = {
    **{f"scipy.linalg.{n}": f"{_TG}.linalg.{n}" for n in (
        "cho_factor", "cho_solve", "cholesky", "expm", "expm_frechet", "solve_banded",
        "solve_sylvester", "solve_triangular", "sqrtm")},
    "scipy.linalg.solve": "np.linalg.solve",
    "scipy.linalg.inv": "np.linalg.inv",
    "scipy.linalg.det": "np.linalg.det",
    "scipy.linalg.eigh": "np.linalg.eigh",
    "scipy.linalg.eigvalsh": "np.linalg.eigvalsh",
    "scipy.linalg.eig": "np.linalg.eig",
    "scipy.linalg.eigvals": "np.linalg.eigvals",
    "scipy.linalg.svd": "np.linalg.svd",
    "scipy.linalg.svdvals": "np.linalg.svd(a, compute_uv=False)",
    "scipy.linalg.qr": "np.linalg.qr",
    "scipy.linalg.norm": "np.linalg.norm",
    "scipy.linalg.pinv": "np.linalg.pinv",
    "scipy.linalg.lstsq": "np.linalg.lstsq",
    "scipy.linalg.lu_factor": "np.linalg.solve (a solve through the factorisation)",
    "scipy.linalg.lu_solve": "np.linalg.solve",
    **{f"scipy.spatial.distance.{n}": f"{_TG}.spatial.distance.{n}" for n in (
        "pdist", "cdist", "squareform", "cosine", "correlation", "seuclidean", "mahalanobis")},
    **{f"scipy.ndimage.{n}": f"{_TG}.ndimage.{n}" for n in (
        "convolve1d", "correlate1d", "gaussian_filter", "gaussian_filter1d", "uniform_filter",
        "uniform_filter1d")},
    **{f"scipy.interpolate.{n}{m}": f"{_TG}.interpolate.{n}" for n in (
        "CubicSpline", "interp1d") for m in ("", ".__call__")},
    **{f"scipy.signal.{n}": f"{_TG}.signal.{n}" for n in (
        "convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve")},
    **{f"scipy.stats.{d}.{m}": f"{_TG}.stats.{d}.{m}"
       for d, methods in (("norm", "ppf"), ("t", ""), ("gamma", ""), ("beta", ""),
                          ("chi2", ""), ("poisson", "logpmf pmf"))
       for m in ("cdf", "logcdf", "sf", "logsf", *methods.split(),
                 *(("logpdf", "pdf") if d != "poisson" else ()))},
    **{f"scipy.stats.{d}.{m}": f"{_TG}.stats.{d}.{m}"
       for d in ("multivariate_normal", "dirichlet") for m in ("logpdf", "pdf")},
    "scipy.stats.multivariate_normal.entropy": f"{_TG}.stats.multivariate_normal.entropy",
    "scipy.special.polygamma": f"{_TG}.special.polygamma",
    "scipy.special.multigammaln": f"{_TG}.special.multigammaln",
    "scipy.integrate.odeint": f"{_TG}.integrate.odeint",
    # compiled code: refused as it fails (compiled_calls.py)
    "scipy.sparse.linalg.SuperLU.solve": f"{_TG}.sparse.linalg.splu(A).solve(b)",
    "scipy.sparse.linalg.factorized": f"{_TG}.sparse.linalg.factorized(A)(b)",
}


_TRACEGRAD = os.path.dirname(os.path.dirname(__file__)) + os.sep
# the tracer's and the IR's folders: the dispatch between a NumPy call and its handler
_DISPATCH = (os.path.dirname(__file__) + os.sep, os.path.join(_TRACEGRAD, "ir") + os.sep)


class ScipyAttributeError(TraceError, AttributeError):
    """A SciPy function read an ndarray attribute (``.flags``, ``.device``) of a tracer: a
    ``TraceError``, and an ``AttributeError`` still, so that ``hasattr`` keeps working."""


def _public_module(module):
    """``scipy.linalg._basic`` -> ``scipy.linalg``: the module up to its first private
    part."""
    parts = []
    for part in module.split("."):
        if part.startswith("_"):
            break
        parts.append(part)
    return ".".join(parts)


def _frame_name(frame):
    """The public name of the SciPy function running in ``frame``: ``scipy.linalg.solve``,
    ``scipy.stats.norm.logpdf`` for a distribution's method, ``scipy.interpolate.
    CubicSpline`` for a constructor, ``scipy.interpolate.CubicSpline.__call__``."""
    code = frame.f_code
    module = _public_module(frame.f_globals.get("__name__", "scipy"))
    qualname = getattr(code, "co_qualname", code.co_name)
    if "<locals>" in qualname or module == "scipy":
        wrapped = _wrapped_function(frame)
        if wrapped is not None:
            return wrapped
    if "." not in qualname or "<locals>" in qualname:
        return f"{module}.{code.co_name}"
    method = qualname.rsplit(".", 1)[1]
    self = frame.f_locals.get("self") if code.co_argcount else None
    if self is None:
        return f"{module}.{qualname}"
    dist = getattr(self, "dist", self)          # a frozen distribution's generator
    dist_name = getattr(dist, "name", None)
    if module == "scipy.stats" and isinstance(dist_name, str):
        base = f"scipy.stats.{dist_name}"
    else:
        cls = type(self)
        base = f"{_public_module(cls.__module__)}.{cls.__qualname__}"
    return base if method == "__init__" else f"{base}.{method}"


def _wrapped_function(frame):
    """The SciPy function a decorator's wrapper running in ``frame`` wraps (a function of
    SciPy's among its variables), by its public name; None if there is none."""
    variables = frame.f_locals
    preferred = [variables[k] for k in ("fun", "func", "f", "function", "fn", "wrapped")
                 if k in variables]
    for value in [*preferred, *variables.values()]:
        module = getattr(value, "__module__", None) or ""
        if callable(value) and module.startswith("scipy.") and hasattr(value, "__name__") \
                and not isinstance(value, type):
            inner = getattr(value, "__wrapped__", value)
            return f"{_public_module(inner.__module__ or module)}.{inner.__name__}"
    return None


def _is_wrapper(frame):
    return frame.f_globals.get("__name__", "").startswith("scipy._lib") or "<locals>" in (
        getattr(frame.f_code, "co_qualname", ""))


_USER, _SCIPY, _DISPATCHING, _BOUNDARY = 0, 1, 2, 3
_KINDS: dict = {}       # code object -> one of the above, so the walk is a lookup per frame


def _kind(code):
    kind = _KINDS.get(code)
    if kind is None:
        fname = code.co_filename
        if fname.startswith(SCIPY_FOLDER):
            kind = _SCIPY
        elif not _is_internal(code):
            kind = _USER
        elif fname.startswith(_TRACEGRAD) and not fname.startswith(_DISPATCH):
            # tracegrad's own code above the tracer's dispatch (a callback
            # tracegrad.scipy.integrate.odeint hands SciPy): not inside SciPy
            kind = _BOUNDARY
        else:
            kind = _DISPATCHING                     # the tracer, the IR, NumPy
        _KINDS[code] = kind
    return kind


def scipy_function():
    """The public name of the SciPy function the user's code called, when the code running
    now is inside it (a SciPy frame between here and the user's); else None."""
    if SCIPY_FOLDER is None or "scipy" not in sys.modules:
        return None                 # no SciPy frame can be running
    frame = sys._getframe(1)
    kinds = _KINDS
    scipy_frames = []
    while frame is not None:
        code = frame.f_code
        kind = kinds.get(code)
        if kind is None:
            kind = _kind(code)
        if kind == _SCIPY:
            scipy_frames.append(frame)
        elif kind != _DISPATCHING:
            break                                   # the user's frame, or tracegrad's
        frame = frame.f_back
    if not scipy_frames:
        return None
    # the outermost one the user called; a decorator's wrapper (scipy._lib, a closure)
    # stands for the function it wraps, the next frame in
    for frame in reversed(scipy_frames):
        if not _is_wrapper(frame):
            return _frame_name(frame)
    for frame in reversed(scipy_frames):      # only wrappers: the function they wrap
        wrapped = _wrapped_function(frame)
        if wrapped is not None:
            return wrapped
    return _frame_name(scipy_frames[-1])


def refusal(name, what, cls=TraceError):
    """The error for the SciPy function ``name`` given traced values, where it does
    ``what`` (converts them to a NumPy array, reads float() of one, ...)."""
    alternative = ALTERNATIVES.get(name)
    hint = (f"; use {alternative}, which tracegrad differentiates" if alternative else
            "; compute it with NumPy functions on the traced values, or wrap the call in "
            "tg.pure_callback (no derivative)")
    return cls(f"{name} is not supported on traced values by tracegrad: it {what}{hint}"
               f"{where()}")


def refuse_in_scipy(what, cls=TraceError, always=False):
    """The refusal when called from inside a SciPy function that is not plain NumPy code
    (not in ``RUNS_AS_NUMPY``; ``always``: in any); else None."""
    name = scipy_function()
    if name is None or (name in RUNS_AS_NUMPY and not always):
        return None
    return refusal(name, what, cls)
