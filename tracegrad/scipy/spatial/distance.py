"""``scipy.spatial.distance`` with SciPy's signatures, on traced and plain values alike:
``pdist``, ``cdist``, ``squareform`` and the distances between two vectors.

SciPy's ``pdist`` and ``cdist`` compute in compiled code, which a tracer cannot follow;
these are written on NumPy operations, so their derivatives (every order), ``vmap``,
``jit`` and the JAX backend come from the registry's rules. A distance's square root (and
the ``p``-th root of ``minkowski``) is taken only where its argument is positive: at two
equal points the distance is 0 and its derivative 0 (SciPy's value; the one-sided
derivatives differ there), never NaN. ``pdist`` takes the pairs ``i < j`` in SciPy's order
(``np.triu_indices``); ``squareform`` gathers (a vector to a matrix) or picks the upper
triangle (a matrix to a vector), as SciPy's with ``checks=False``. A metric given as a
Python function is applied to each pair of rows, as SciPy does.
"""
from __future__ import annotations

import numpy as np

from ...errors import TraceError
from ...ir.source import where

__all__ = ["braycurtis", "canberra", "cdist", "chebyshev", "cityblock", "correlation",
           "cosine", "euclidean", "mahalanobis", "minkowski", "pdist", "seuclidean",
           "sqeuclidean", "squareform"]


def _array(x):
    return x if hasattr(x, "_trace") else np.asarray(x, dtype=float)


def _root(s, p=2.0):
    """``s ** (1 / p)`` where ``s > 0``; 0 (with derivative 0) where ``s == 0``."""
    positive = s > 0
    safe = np.where(positive, s, 1.0)
    r = np.sqrt(safe) if p == 2.0 else safe ** (1.0 / p)
    return np.where(positive, r, 0.0)


def _ratio(num, den):
    """``num / den``, 0 where ``den == 0`` (SciPy's canberra and braycurtis: 0/0 is 0)."""
    zero = den == 0
    return np.where(zero, 0.0, num / np.where(zero, 1.0, den))


def _weighted(terms, w):
    return terms if w is None else terms * _array(w)


def _metric(u, v, metric, p=2.0, w=None, V=None, VI=None):
    """The distance between ``u`` and ``v`` along their last axis (broadcast)."""
    d = u - v
    if metric == "sqeuclidean":
        return np.sum(_weighted(d * d, w), axis=-1)
    if metric == "euclidean":
        return _root(np.sum(_weighted(d * d, w), axis=-1))
    if metric == "seuclidean":
        if V is None:
            raise TraceError(f"the seuclidean distance needs V, the variances{where()}")
        return _root(np.sum(d * d / _array(V), axis=-1))
    if metric == "mahalanobis":
        if VI is None:
            raise TraceError(f"the mahalanobis distance needs VI, the inverse covariance"
                             f"{where()}")
        return _root(np.sum(d * np.matmul(d, np.swapaxes(_array(VI), -1, -2)), axis=-1))
    if metric == "cityblock":
        return np.sum(_weighted(np.abs(d), w), axis=-1)
    if metric == "chebyshev":
        return np.max(np.abs(d), axis=-1)
    if metric == "minkowski":
        return _root(np.sum(_weighted(np.abs(d) ** p, w), axis=-1), p)
    if metric in ("cosine", "correlation"):
        if metric == "correlation":
            if w is None:
                u = u - np.mean(u, axis=-1, keepdims=True)
                v = v - np.mean(v, axis=-1, keepdims=True)
            else:
                w = _array(w)
                u = u - np.sum(w * u, axis=-1, keepdims=True) / np.sum(w)
                v = v - np.sum(w * v, axis=-1, keepdims=True) / np.sum(w)
        uv = np.sum(_weighted(u * v, w), axis=-1)
        uu = np.sum(_weighted(u * u, w), axis=-1)
        vv = np.sum(_weighted(v * v, w), axis=-1)
        return np.clip(1.0 - uv / np.sqrt(uu * vv), 0.0, 2.0)
    if metric == "braycurtis":
        return _ratio(np.sum(_weighted(np.abs(d), w), axis=-1),
                      np.sum(_weighted(np.abs(u + v), w), axis=-1))
    if metric == "canberra":
        return np.sum(_weighted(_ratio(np.abs(d), np.abs(u) + np.abs(v)), w), axis=-1)
    raise TraceError(f"tracegrad.scipy.spatial.distance: unknown or unsupported metric "
                     f"{metric!r}; supported: {', '.join(_METRICS)}, or a Python function"
                     f"{where()}")


_METRICS = ("braycurtis", "canberra", "chebyshev", "cityblock", "correlation", "cosine",
            "euclidean", "mahalanobis", "minkowski", "seuclidean", "sqeuclidean")
_ALIASES = {"cityblock": ("cblock", "cb", "c", "manhattan"), "euclidean": ("euclid", "eu", "e"),
            "sqeuclidean": ("sqe", "sqeuclid"), "chebyshev": ("chebychev", "cheby", "cheb",
                                                              "ch"),
            "minkowski": ("mi", "m", "pnorm"), "cosine": ("cos",), "correlation": ("co",),
            "braycurtis": (), "canberra": (), "seuclidean": ("se", "s"),
            "mahalanobis": ("mahal", "mah")}
_NAMES = {alias: name for name, aliases in _ALIASES.items() for alias in (name, *aliases)}


def _pairs(U, V, metric, kwargs):
    if callable(metric):
        return np.stack([metric(U[k], V[k], **kwargs) for k in range(U.shape[0])]) \
            if U.shape[0] else np.zeros(0)
    name = _NAMES.get(str(metric).lower(), metric)
    return _metric(U, V, name, **kwargs)


def _two_d(X, what):
    X = _array(X)
    if X.ndim != 2:
        raise TraceError(f"{what}: a 2-dimensional array must be passed (shape was "
                         f"{tuple(X.shape)}){where()}")
    return X


def pdist(X, metric="euclidean", *, out=None, **kwargs):
    """``scipy.spatial.distance.pdist``: the distances between the rows of ``X``, pairs
    ``i < j`` in SciPy's order."""
    if out is not None:
        raise TraceError(f"pdist(..., out=...) is not supported: use the result{where()}")
    X = _two_d(X, "pdist")
    i, j = np.triu_indices(X.shape[0], 1)
    if callable(metric):
        return _pairs(X[i], X[j], metric, kwargs)
    return _pairs(X[i], X[j], metric, kwargs)


def cdist(XA, XB, metric="euclidean", *, out=None, **kwargs):
    """``scipy.spatial.distance.cdist``: ``D[i, j]`` the distance between ``XA[i]`` and
    ``XB[j]``."""
    if out is not None:
        raise TraceError(f"cdist(..., out=...) is not supported: use the result{where()}")
    XA, XB = _two_d(XA, "cdist"), _two_d(XB, "cdist")
    if XA.shape[1] != XB.shape[1]:
        raise TraceError(f"cdist: XA and XB must have the same number of columns{where()}")
    if callable(metric):
        i, j = np.meshgrid(np.arange(XA.shape[0]), np.arange(XB.shape[0]), indexing="ij")
        flat = _pairs(XA[i.ravel()], XB[j.ravel()], metric, kwargs)
        return np.reshape(flat, (XA.shape[0], XB.shape[0]))
    return _pairs(XA[:, None, :], XB[None, :, :], metric, kwargs)


def squareform(X, force="no", checks=True):
    """``scipy.spatial.distance.squareform``: a condensed distance vector as the symmetric
    matrix with a zero diagonal, or such a matrix as its condensed vector."""
    X = _array(X)
    if X.ndim == 1 and force != "tomatrix" or force == "tomatrix":
        m = X.shape[0]
        n = int(round((1 + np.sqrt(1 + 8 * m)) / 2))
        if n * (n - 1) // 2 != m:
            raise TraceError(f"squareform: incompatible vector size {m}: it must be a "
                             f"binomial coefficient n choose 2{where()}")
        index = np.zeros((n, n), dtype=np.intp)
        i, j = np.triu_indices(n, 1)
        index[i, j] = index[j, i] = np.arange(1, m + 1)
        full = np.concatenate([np.zeros(1, dtype=X.dtype), X])
        return full[index]
    if X.ndim == 2:
        if X.shape[0] != X.shape[1]:
            raise TraceError(f"squareform: the matrix must be square{where()}")
        i, j = np.triu_indices(X.shape[0], 1)
        return X[i, j]
    raise TraceError(f"squareform: the first argument must be one or two dimensional"
                     f"{where()}")


def _pointwise(name):
    def fn(u, v, *args, w=None, **kwargs):
        u, v = _array(u), _array(v)
        if u.ndim != 1 or v.ndim != 1:
            raise TraceError(f"{name}: u and v must be vectors{where()}")
        if name == "minkowski" and args:
            kwargs["p"] = args[0]
        elif name == "seuclidean" and args:
            kwargs["V"] = args[0]
        elif name == "mahalanobis" and args:
            kwargs["VI"] = args[0]
        return _metric(u, v, name, w=w, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``scipy.spatial.distance.{name}(u, v, ...)``, differentiable."
    return fn


braycurtis, canberra, chebyshev = (_pointwise(n) for n in ("braycurtis", "canberra",
                                                            "chebyshev"))
cityblock, correlation, cosine = (_pointwise(n) for n in ("cityblock", "correlation", "cosine"))
euclidean, sqeuclidean, minkowski = (_pointwise(n) for n in ("euclidean", "sqeuclidean",
                                                             "minkowski"))
seuclidean, mahalanobis = _pointwise("seuclidean"), _pointwise("mahalanobis")
