"""``scipy.interpolate.CubicSpline`` and ``interp1d`` (linear) with SciPy's signatures,
differentiable in the points they are evaluated at and in the data values ``y``.

SciPy's splines are built and evaluated in compiled code, which a tracer cannot follow.
For fixed knots ``x`` a cubic spline's coefficients are an affine function of ``y`` (for
every boundary condition but ``"periodic"``): ``CubicSpline`` asks SciPy for the splines
of the unit vectors (and of zeros, for boundary conditions with given derivative values)
once, on plain arrays, and combines them with the traced ``y`` (``np.tensordot``).
Evaluating finds each point's interval (``np.searchsorted``, no derivative) and evaluates
its cubic with traced operations, so derivatives (every order), ``vmap``, ``jit`` and the
JAX backend come from the registry's rules. The knots ``x`` are constants. SciPy is needed
(to build the basis).
"""
from __future__ import annotations

import numpy as np

from ..errors import TraceError
from ..ir.source import where

__all__ = ["CubicSpline", "interp1d"]


def _traced(x):
    return hasattr(x, "_trace")


def _knots(x, name):
    if _traced(x):
        raise TraceError(f"{name}: the knots x must be constants (differentiation with "
                         f"respect to them is not supported); y and the evaluation points "
                         f"may be traced{where()}")
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size < 2 or np.any(np.diff(x) <= 0):
        raise TraceError(f"{name}: x must be a strictly increasing 1-D sequence of at least "
                         f"two points{where()}")
    return x


def _homogeneous(bc_type, n):
    """``bc_type`` with each given derivative value 0 (for the ``n`` unit vectors)."""
    if isinstance(bc_type, str):
        return bc_type
    return tuple(bc if isinstance(bc, str) else (bc[0], np.zeros(n)) for bc in bc_type)


class CubicSpline:
    """``scipy.interpolate.CubicSpline(x, y, axis=0, bc_type="not-a-knot",
    extrapolate=None)``: ``y`` (traced or not) along ``axis``; called on points (traced or
    not), with ``nu`` the derivative order (0 to 3)."""

    def __init__(self, x, y, axis=0, bc_type="not-a-knot", extrapolate=None):
        import scipy.interpolate as si
        self.x = _knots(x, "CubicSpline")
        if bc_type == "periodic":
            raise TraceError(f"CubicSpline: bc_type='periodic' is not supported by tracegrad"
                             f"{where()}")
        y = y if _traced(y) else np.asarray(y, dtype=np.float64)
        n = self.x.size
        y = np.moveaxis(y, axis, 0)
        if y.shape[0] != n:
            raise TraceError(f"CubicSpline: x and y have different lengths along axis "
                             f"({n} and {y.shape[0]}){where()}")
        self.extrapolate = True if extrapolate is None else extrapolate
        # the spline of y is c0 + Σ_k y[k]·(spline of e_k with the derivative values of
        # the boundary conditions set to 0), c0 the spline of zeros with the given ones:
        # affine in y
        rest = tuple(y.shape[1:])
        c0 = si.CubicSpline(self.x, np.zeros((n,) + rest), axis=0, bc_type=bc_type).c
        basis = si.CubicSpline(self.x, np.eye(n), axis=0,
                               bc_type=_homogeneous(bc_type, n)).c     # (4, n-1, n)
        self.c = np.tensordot(basis, y, axes=([2], [0])) + c0
        self.axis = axis

    def __call__(self, x, nu=0, extrapolate=None):
        nu = int(nu)
        if not 0 <= nu <= 3:
            raise TraceError(f"CubicSpline: derivative order nu={nu} must be 0 to 3{where()}")
        t = x if _traced(x) else np.asarray(x, dtype=np.float64)
        n = self.x.size
        idx = np.clip(np.searchsorted(self.x, t, side="right") - 1, 0, n - 2)
        dx = t - np.take(self.x, idx)
        coef = np.take(self.c, idx, axis=1)            # (4, *t.shape, *y's other axes)
        extra = len(self.c.shape) - 2
        dx = np.reshape(dx, np.shape(dx) + (1,) * extra)
        # the polynomial c0 dx³ + c1 dx² + c2 dx + c3, differentiated nu times
        powers = [3, 2, 1, 0]
        out = 0.0
        for k, p in enumerate(powers):
            if p < nu:
                continue
            factor = float(np.prod(np.arange(p - nu + 1, p + 1))) if nu else 1.0
            out = out + factor * coef[k] * dx ** (p - nu)
        extrapolate = self.extrapolate if extrapolate is None else extrapolate
        if not extrapolate:
            outside = (t < self.x[0]) | (t > self.x[-1])
            out = np.where(np.reshape(outside, np.shape(outside) + (1,) * extra), np.nan, out)
        if self.axis != 0 and extra:
            out = np.moveaxis(out, tuple(range(np.ndim(t))), tuple(
                range(self.axis, self.axis + np.ndim(t))))
        return out


class interp1d:  # noqa: N801  (SciPy's name)
    """``scipy.interpolate.interp1d(x, y, kind="linear")`` for a 1-D ``y`` (traced or not):
    piecewise linear (``np.interp``), or ``kind="cubic"`` through ``CubicSpline``'s
    not-a-knot spline (SciPy's cubic interp1d is that spline)."""

    def __init__(self, x, y, kind="linear", axis=-1, copy=True, bounds_error=None,
                 fill_value=np.nan, assume_sorted=False):
        self.x = _knots(x, "interp1d")
        self.y = y if _traced(y) else np.asarray(y, dtype=np.float64)
        if len(self.y.shape) != 1:
            raise TraceError(f"interp1d: tracegrad supports a 1-D y{where()}")
        if kind not in ("linear", "cubic"):
            raise TraceError(f"interp1d: kind={kind!r} is not supported by tracegrad "
                             f"('linear' or 'cubic'){where()}")
        self.kind, self.fill_value = kind, fill_value
        self.bounds_error = bounds_error if bounds_error is not None else \
            not (isinstance(fill_value, str) and fill_value == "extrapolate")
        self._spline = CubicSpline(self.x, self.y) if kind == "cubic" else None

    def __call__(self, x):
        t = x if _traced(x) else np.asarray(x, dtype=np.float64)
        outside = (t < self.x[0]) | (t > self.x[-1])
        extrapolate = isinstance(self.fill_value, str) and self.fill_value == "extrapolate"
        if self.bounds_error and not extrapolate and np.any(outside):
            raise TraceError(f"interp1d: a value is outside the interpolation range{where()}")
        if self._spline is not None:
            out = self._spline(t)
        elif extrapolate:
            n = self.x.size
            idx = np.clip(np.searchsorted(self.x, t, side="right") - 1, 0, n - 2)
            x0, x1 = np.take(self.x, idx), np.take(self.x, idx + 1)
            y0, y1 = np.take(self.y, idx), np.take(self.y, idx + 1)
            out = y0 + (t - x0) * (y1 - y0) / (x1 - x0)
        else:
            out = np.interp(t, self.x, self.y)
        if not extrapolate:
            out = np.where(outside, self.fill_value, out)
        return out
