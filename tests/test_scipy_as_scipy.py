"""SciPy called as SciPy on traced values (issue 22): the public callables of
``scipy.special``, ``scipy.spatial.distance``, ``scipy.linalg``, ``scipy.ndimage``,
``scipy.signal``, ``scipy.interpolate`` and the ``scipy.stats`` distributions' methods,
each on a small generated input (SciPy's own call on it must run: an input SciPy refuses
says nothing), called on a traced argument inside ``tg.value_and_grad``. Each either gives
SciPy's value and a central finite-difference derivative, or raises ``tg.TraceError`` whose
message names the SciPy function and this file's line. Nothing else: no ``ValueError`` or
``AttributeError`` from SciPy's internals. The default run takes a slice;
TRACEGRAD_EXHAUSTIVE=1 runs every case. ``tracegrad/tracer/scipy_calls.py`` holds the lists
of functions run as NumPy code and of tracegrad's equivalents; ``docs/scipy.md`` is written
from them.
"""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tracegrad as tg
from tests.conftest import bounded

pytest.importorskip("scipy")
import scipy.interpolate  # noqa: E402
import scipy.linalg  # noqa: E402
import scipy.ndimage  # noqa: E402
import scipy.signal  # noqa: E402
import scipy.spatial.distance  # noqa: E402
import scipy.special  # noqa: E402
import scipy.stats  # noqa: E402


def _call(fn, *args, **kwargs):
    return fn(*args, **kwargs)      # every SciPy call of a case is made on this line


CALL_LINE = f"test_scipy_as_scipy.py:{_call.__code__.co_firstlineno + 1}"
_RNG = np.random.default_rng(0)
_SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.5]])
_MAT = np.array([[2.0, 0.3, -0.4], [0.1, 1.5, 0.6], [-0.2, 0.4, 3.0]])
_VEC = np.array([0.3, 0.45, 0.6])


class Case:
    """``call(t)`` applies the SciPy function ``name`` (also known as ``names``) with the
    traced argument ``t``, whose value is ``x``."""

    def __init__(self, name, call, x, names=()):
        self.name, self.call, self.x = name, call, np.asarray(x, dtype=float)
        self.names = {name, *names}

    def __repr__(self):
        return self.name


def _public(module):
    names = getattr(module, "__all__", None) or dir(module)
    for n in sorted(names):
        if n.startswith("_") or n == "test":
            continue
        obj = getattr(module, n, None)
        if obj is None or inspect.ismodule(obj) or (
                inspect.isclass(obj) and issubclass(obj, BaseException)):
            continue
        if callable(obj):
            yield n, obj


def _required(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [p.name for p in sig.parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _positional(fn, name, prefix, values):
    """Cases tracing the first required argument of ``fn`` (the others plain, from
    ``values``, a function of the parameter's name and position)."""
    req = _required(fn)
    if not req:
        return []
    rest = [values(p, i) for i, p in enumerate(req)]
    if any(r is _SKIP for r in rest):
        return []
    x0, others = rest[0], rest[1:]
    return [Case(f"{prefix}.{name}", lambda t, f=fn, o=others: _call(f, t, *o), x0,
                 names=(f"{prefix}.{fn.__name__}",))]


_SKIP = object()


# -- scipy.special -------------------------------------------------------------------------
def _ufunc_cases(name, uf):
    loop = next((t for t in uf.types if set(t.split("->")[0]) <= {"d", "l", "i"}
                 and set(t.split("->")[1]) == {"d"}), None)
    if loop is None:
        return []
    ins = loop.split("->")[0]
    names = (f"scipy.special.{uf.__name__}",)
    cases = []
    for k, code in enumerate(ins):
        if code != "d":
            continue
        def call(t, k=k, ins=ins):
            args = [t if i == k else (_VEC + 0.1 * i if c == "d" else np.array([1, 2, 1]))
                    for i, c in enumerate(ins)]
            return _call(uf, *args)
        cases.append(Case(f"scipy.special.{name}", call, _VEC + 0.1 * k, names))
    return cases


def _special_cases():
    cases = []
    for name, fn in _public(scipy.special):
        if isinstance(fn, np.ufunc):
            cases += _ufunc_cases(name, fn)
        elif inspect.isfunction(fn):
            cases += _positional(fn, name, "scipy.special",
                                 lambda p, i: _VEC + 0.1 * i)
    return cases


# -- scipy.spatial.distance ------------------------------------------------------------------
_POINTS = {"X": _RNG.normal(size=(4, 2)), "XA": _RNG.normal(size=(4, 2)),
           "XB": _RNG.normal(size=(3, 2)), "u": _VEC, "v": np.array([0.9, -0.2, 0.4])}
_METRICS = ["euclidean", "sqeuclidean", "cityblock", "chebyshev", "minkowski", "cosine",
            "correlation", "braycurtis", "canberra"]


def _distance_cases():
    cases = []
    for name, fn in _public(scipy.spatial.distance):
        if name in ("pdist", "cdist"):
            continue
        if name == "squareform":
            cases.append(Case("scipy.spatial.distance.squareform",
                              lambda t: _call(scipy.spatial.distance.squareform, t),
                              np.arange(1.0, 7.0)))
            continue
        cases += _positional(fn, name, "scipy.spatial.distance",
                             lambda p, i: _POINTS.get(p, _SKIP))
    for metric in _METRICS:
        cases.append(Case("scipy.spatial.distance.pdist", lambda t, m=metric: _call(
            scipy.spatial.distance.pdist, t, m), _POINTS["X"]))
        cases.append(Case("scipy.spatial.distance.cdist", lambda t, m=metric: _call(
            scipy.spatial.distance.cdist, t, _POINTS["XB"], m), _POINTS["XA"]))
    return cases


# -- scipy.linalg ------------------------------------------------------------------------------
def _linalg_cases():
    la = scipy.linalg
    cases = []
    for name, fn in _public(la):
        if inspect.isfunction(fn):
            cases += _positional(fn, name, "scipy.linalg",
                                 lambda p, i: _SPD if i == 0 else _MAT)
    special = {
        "cho_solve": lambda t: _call(la.cho_solve, la.cho_factor(_SPD), t),
        "lu_solve": lambda t: _call(la.lu_solve, la.lu_factor(_MAT), t),
        "solve_triangular": lambda t: _call(la.solve_triangular, np.triu(_MAT), t),
        "solve_banded": lambda t: _call(la.solve_banded, (1, 1), np.array(
            [[0.0, 0.3, 0.6], [2.0, 1.5, 3.0], [0.1, 0.4, 0.0]]), t),
    }
    cases += [Case(f"scipy.linalg.{n}", c, _VEC) for n, c in special.items()]
    return cases


# -- scipy.ndimage ----------------------------------------------------------------------------
_IMAGE = _RNG.normal(size=(5, 5))
_NDIMAGE_ARGS = {"sigma": 1.0, "size": 3, "weights": np.array([[0.1, 0.2, 0.1], [0.2, 0.5, 0.2],
                 [0.1, 0.2, 0.1]]), "footprint": np.ones((3, 3), bool), "zoom": 1.5,
                 "shift": 0.5, "angle": 30.0, "order": 1, "percentile": 50, "rank": 1,
                 "coordinates": np.array([[1.2, 2.5, 3.1], [0.5, 3.1, 1.7]]),
                 "matrix": np.eye(2) * 0.9, "axis": 0}


def _ndimage_cases():
    return [c for name, fn in _public(scipy.ndimage) if inspect.isfunction(fn)
            for c in _positional(fn, name, "scipy.ndimage",
                                 lambda p, i: _IMAGE if i == 0 else _NDIMAGE_ARGS.get(p, _SKIP))]


# -- scipy.signal ------------------------------------------------------------------------------
_SIGNAL = np.sin(np.arange(8.0)) + 0.1 * np.arange(8.0)
_SIGNAL_ARGS = {"b": np.array([0.5, 0.3]), "a": np.array([1.0, -0.2]),
                "in2": np.array([1.0, 0.5, 0.25]), "x": _SIGNAL, "window": "hann",
                "fs": 1.0, "nperseg": 4, "up": 2, "down": 1, "num": 6, "h": np.array([
                    0.5, 0.3, 0.2]), "kernel_size": 3, "domain": np.ones(3, bool),
                "sos": np.array([[0.5, 0.3, 0.0, 1.0, -0.2, 0.0]]), "zi": np.zeros(1)}


def _signal_cases():
    return [c for name, fn in _public(scipy.signal) if inspect.isfunction(fn)
            for c in _positional(fn, name, "scipy.signal",
                                 lambda p, i: _SIGNAL if i == 0 else _SIGNAL_ARGS.get(p, _SKIP))]


# -- scipy.interpolate -------------------------------------------------------------------------
_KNOTS_X = np.linspace(0.0, 1.0, 7)
_KNOTS_Y = np.sin(3.0 * _KNOTS_X)
_AT = np.array([0.12, 0.43, 0.71])
_INTERP_ARGS = {"x": _KNOTS_X, "y": _KNOTS_Y, "xi": _KNOTS_X, "yi": _KNOTS_Y,
                "dydx": np.cos(3.0 * _KNOTS_X), "points": (_KNOTS_X,), "values": _KNOTS_Y}


def _interpolate_cases():
    cases = []
    for name, cls in _public(scipy.interpolate):
        if not inspect.isclass(cls):
            continue
        req = _required(cls.__init__)
        if not req or req[0] != "self":
            continue
        args = [_INTERP_ARGS.get(p, _SKIP) for p in req[1:]]
        if not args or any(a is _SKIP for a in args):
            continue
        full = f"scipy.interpolate.{name}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                made = type(cls(*args)).__name__       # UnivariateSpline may change class
        except Exception:
            continue
        names = (full, f"{full}.__call__", f"scipy.interpolate.{made}.__call__")
        cases.append(Case(f"{full}.__call__", lambda t, c=cls, a=args: _call(_call(c, *a), t),
                          _AT, names))
        ypos = next((i for i, p in enumerate(req[1:]) if p in ("y", "yi", "values")), None)
        if ypos is not None:
            def build(t, c=cls, a=args, k=ypos):
                return _call(c, *a[:k], t, *a[k + 1:])(_AT)
            cases.append(Case(full, build, args[ypos], names))
    for n in ("interp1d", "make_interp_spline", "CubicSpline", "PchipInterpolator"):
        fn = getattr(scipy.interpolate, n)
        cases.append(Case(f"scipy.interpolate.{n}", lambda t, f=fn: _call(f, _KNOTS_X, t)(_AT),
                          _KNOTS_Y, names=(f"scipy.interpolate.{fn.__name__}",)))
    cases.append(Case("scipy.interpolate.splev", lambda t: _call(
        scipy.interpolate.splev, t, scipy.interpolate.splrep(_KNOTS_X, _KNOTS_Y)), _AT))
    return cases


# -- scipy.stats ----------------------------------------------------------------------------
_METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")


def _stats_cases():
    from scipy.stats._distr_params import distcont
    cases = []
    for dname, params in distcont:
        dist = getattr(scipy.stats, dname, None)
        if dist is None:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = dist.ppf(np.array([0.3, 0.5, 0.7]), *params)
        if not np.all(np.isfinite(x)):
            continue
        for m in _METHODS:
            cases.append(Case(f"scipy.stats.{dname}.{m}", lambda t, d=dist, m=m, p=params:
                              _call(getattr(d, m), t, *p), x))
    return cases


# -- the check ----------------------------------------------------------------------------
def _leaves(r):
    if isinstance(r, (tuple, list)):
        return [x for e in r for x in _leaves(e)]
    return [r]


def _flat(r):
    parts = [np.ravel(p) for p in _leaves(r)
             if hasattr(p, "dtype") or isinstance(p, (float, int))]
    parts = [p for p in parts if np.asarray(p).dtype.kind in "f" or getattr(
        p, "dtype", np.dtype(float)).kind == "f"]
    return np.concatenate(parts) if len(parts) > 1 else parts[0] if parts else None


def _plain(case, x):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return case.call(x)


def check(case):
    try:
        expected = _flat(_plain(case, case.x))
    except Exception:                       # SciPy refuses this input: nothing to compare
        pytest.skip("SciPy itself does not run on the generated input")
    if expected is None or expected.dtype.kind != "f" or not np.all(np.isfinite(expected)):
        pytest.skip("no finite floating result on the generated input")
    w = np.linspace(0.5, 1.5, expected.size)

    def f(t):
        out = _flat(case.call(t))
        return np.sum(w * out), out

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            (_, value), grad = tg.value_and_grad(f, has_aux=True)(case.x)
    except tg.TraceError as e:
        msg = str(e)
        assert any(n in msg for n in case.names), (case.names, msg)
        assert CALL_LINE in msg, msg
        return "refused"
    np.testing.assert_allclose(np.asarray(value), expected, rtol=1e-7, atol=1e-10)

    def scalar(x):
        return float(np.sum(w * _flat(_plain(case, x))))

    fd = np.zeros_like(case.x)
    eps = 1e-6
    for i in np.ndindex(case.x.shape):
        e = np.zeros_like(case.x)
        e[i] = eps * max(1.0, abs(case.x[i]))
        fd[i] = (scalar(case.x + e) - scalar(case.x - e)) / (2 * e[i])
    np.testing.assert_allclose(np.asarray(grad), fd, rtol=1e-4,
                               atol=1e-5 * (1.0 + np.max(np.abs(fd))))
    return "supported"


FAMILIES = {
    "special": _special_cases, "distance": _distance_cases, "linalg": _linalg_cases,
    "ndimage": _ndimage_cases, "signal": _signal_cases, "interpolate": _interpolate_cases,
    "stats": _stats_cases,
}
SLICE = {"special": 40, "distance": 20, "linalg": 16, "ndimage": 8, "signal": 10,
         "interpolate": 8, "stats": 24}
CASES = [pytest.param(c, id=f"{fam}-{c.name}-{i}")
         for fam, make in FAMILIES.items()
         for i, c in enumerate(bounded(make(), SLICE[fam]))]


@pytest.mark.parametrize("case", CASES)
def test_scipy_called_on_traced_values(case):
    check(case)


def test_scipy_frames_name_the_user_line():
    """An error raised inside a SciPy function names the line of the user's that called
    it, and the function by its public name."""
    with pytest.raises(tg.TraceError, match=r"scipy\.linalg\.solve .*np\.linalg\.solve"
                       r".*test_scipy_as_scipy\.py:\d+"):
        tg.grad(lambda t: scipy.linalg.solve(_SPD, t).sum())(_VEC)
    # zeta without q applies the ufunc _riemann_zeta, which has no rule: refused by its name
    with pytest.raises(tg.TraceError, match=r"scipy\.special\.zeta .*_riemann_zeta.*"
                       r"test_scipy_as_scipy\.py:\d+"):
        tg.grad(lambda t: scipy.special.zeta(t + 2.0).sum())(_VEC)
    # with q, SciPy's zeta applies _zeta, routed to the primitive: in q differentiable, in x
    # a TraceError naming it and the line
    with pytest.raises(tg.TraceError, match=r"scipy\.special\.zeta\(x, q\) is differentiable "
                       r"in q only.*test_scipy_as_scipy\.py:\d+"):
        tg.grad(lambda t: scipy.special.zeta(t + 2.0, 1.0).sum())(_VEC)
    g = tg.grad(lambda q: scipy.special.zeta(3.0, q).sum())(_VEC + 1.0)
    np.testing.assert_allclose(g, -3.0 * scipy.special.zeta(4.0, _VEC + 1.0), rtol=1e-12)
    with pytest.raises(tg.TraceError, match=r"scipy\.stats\.norm\.logpdf .*"
                       r"tracegrad\.scipy\.stats\.norm\.logpdf"):
        tg.grad(lambda t: scipy.stats.norm.logpdf(t, 1.0, 2.0).sum())(_VEC)
    # a scipy.special ufunc is named as SciPy's in every refusal (not np.expit)
    # (into an array the function made, out= is written and differentiated; into the
    # caller's plain array it is refused)
    g = tg.grad(lambda t: scipy.special.expit(t, out=np.zeros(3)).sum())(_VEC)
    np.testing.assert_allclose(g, scipy.special.expit(_VEC) * (1 - scipy.special.expit(_VEC)),
                               rtol=1e-12)
    plain = np.zeros(3)
    with pytest.raises(tg.TraceError, match=r"^scipy\.special\.expit\(\.\.\., out=z\)"):
        tg.grad(lambda t: scipy.special.expit(t, out=plain).sum())(_VEC)
    assert not plain.any()
    with pytest.raises(tg.TraceError, match=r"^scipy\.special\.airy is not supported .*"
                       r"pure_callback.*test_scipy_as_scipy\.py:\d+"):
        tg.grad(lambda t: scipy.special.airy(t)[0].sum())(_VEC)
    with pytest.raises(tg.TraceError, match=r"scipy\.spatial\.distance\.pdist .*"
                       r"tracegrad\.scipy\.spatial\.distance\.pdist"):
        tg.grad(lambda t: scipy.spatial.distance.pdist(t[:, None]).sum())(_VEC)



@pytest.mark.parametrize("x", [[1000.0, 1001.0], [800.0, 1.0], [-1000.0, 1000.0], [1e5, 1.0],
                               [0.3, -2.0]])
def test_scipy_logsumexp_of_large_inputs(x):
    """SciPy's logsumexp computes log(sum(exp(a))) also where it overflows, and discards
    it: the discarded branch's zero cotangent must not meet exp's inf as 0 * inf = NaN."""
    sp = scipy.special
    x = np.array(x)
    soft = sp.softmax(x)
    np.testing.assert_allclose(tg.grad(sp.logsumexp)(x), soft, rtol=1e-12)
    np.testing.assert_allclose(tg.jit(tg.grad(sp.logsumexp))(x), soft, rtol=1e-12)
    np.testing.assert_allclose(tg.grad(lambda t: sp.log_softmax(t)[0])(x),
                               np.eye(2)[0] - soft, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(tg.hessian(sp.logsumexp)(x), np.diag(soft) - np.outer(soft, soft),
                               rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(tg.grad(lambda t: sp.logsumexp(t, b=np.array([1.0, 2.0])))(x),
                               sp.softmax(x + np.log([1.0, 2.0])), rtol=1e-12)

# -- SciPy's compiled objects: refused as they fail, by their SciPy name ------------------------
def _sparse_system():
    import scipy.sparse
    a = scipy.sparse.diags([[-1.0] * 4, [4.0, 5.0, 6.0, 7.0, 8.0], [-1.5] * 4], [-1, 0, 1],
                           format="csc")
    return a, np.array([0.4, -1.2, 0.9, 2.0, -0.3])


def _compiled_refusal(f, x, *words, transform=tg.grad):
    """``f`` on a traced ``x`` raises a TraceError naming each of ``words`` and the line of
    the call in ``f`` (the line ``f`` was written on)."""
    line = f.__code__.co_firstlineno
    with pytest.raises(tg.TraceError) as e:
        transform(f)(x)
    msg = str(e.value)
    assert f"(at test_scipy_as_scipy.py:{line})" in msg, msg
    for w in words:
        assert w in msg, msg
    assert "Tracer" in msg, msg        # what compiled code said


def test_superlu_solve_of_a_traced_rhs_is_refused_by_its_scipy_name():
    """SciPy's ``splu(A).solve`` and ``factorized(A)`` are C functions that reject a
    traced right-hand side before any code of tracegrad's runs: the TypeError they raise is
    replaced, as it leaves the trace, by a TraceError naming ``SuperLU.solve`` (or the
    function ``factorized`` returns), the line, and tracegrad's equivalent, which gives
    SciPy's solution and its derivative (one more solve, with Aᵀ)."""
    import scipy.sparse.linalg as spl

    import tracegrad.scipy.sparse.linalg as tsl
    a, b = _sparse_system()
    lu = spl.splu(a)
    solve = spl.factorized(a)
    for transform in (tg.grad, lambda f: tg.jit(tg.grad(f)), lambda f: tg.jit(f, backend="jax")):
        _compiled_refusal(lambda t: np.sum(lu.solve(t) ** 2), b,
                          "scipy.sparse.linalg.SuperLU.solve (called as lu.solve)",
                          "tracegrad.scipy.sparse.linalg.splu(A).solve(b)", transform=transform)
    _compiled_refusal(lambda t: np.sum(solve(2.0 * t)), b,
                      "scipy.sparse.linalg.SuperLU.solve (called as solve)")
    _compiled_refusal(lambda t: np.sum(spl.factorized(a)(t)), b,
                      "the function scipy.sparse.linalg.factorized returns",
                      "tracegrad.scipy.sparse.linalg.factorized(A)(b)")
    _compiled_refusal(lambda t: np.sum(lu.solve(t, trans="T")), b, "SuperLU.solve")
    # an array the traced function makes is traced too: said so
    _compiled_refusal(lambda t: np.sum(t) * np.sum(lu.solve(np.ones(5))), b,
                      "SuperLU.solve", "an array the traced function makes")
    # what the refusal points to: SciPy's solutions, and derivatives by the adjoint solve
    dense = a.toarray()
    for ours, theirs, m in [(lambda t: tsl.splu(a).solve(t), lu.solve, dense),
                            (lambda t: tsl.splu(a).solve(t, trans="T"),
                             lambda t: lu.solve(t, trans="T"), dense.T),
                            (lambda t: tsl.factorized(a)(t), solve, dense)]:
        np.testing.assert_allclose(tg.jit(ours)(b), theirs(b), rtol=1e-13)
        g = tg.grad(lambda t, f=ours: np.sum(np.sin(f(t))))(b)
        np.testing.assert_allclose(g, np.linalg.solve(m.T, np.cos(theirs(b))), rtol=1e-12)
        fd = [(np.sum(np.sin(theirs(b + e))) - np.sum(np.sin(theirs(b - e)))) / 2e-6
              for e in np.eye(5) * 1e-6]
        np.testing.assert_allclose(g, fd, rtol=1e-7)


def test_compiled_scipy_code_on_plain_values_keeps_its_own_errors():
    """Errors compiled code raises on plain values (or for a reason of the user's own)
    inside a traced function stay SciPy's and Python's."""
    import math

    import scipy.sparse.linalg as spl
    a, b = _sparse_system()
    lu = spl.splu(a)
    short = np.ones(4)
    with pytest.raises(ValueError) as e:
        tg.grad(lambda t: np.sum(t) + np.sum(lu.solve(short)))(b)
    assert not isinstance(e.value, tg.TraceError)
    with pytest.raises(TypeError, match="must be numpy.ndarray, not list"):
        tg.grad(lambda t: np.sum(t) + np.sum(lu.solve([1.0] * 5)))(b)
    with pytest.raises(TypeError, match="must be real number, not str"):
        tg.grad(lambda t: np.sum(t) + math.sqrt("2"))(b)
    with pytest.raises(TypeError, match="isinstance"):
        tg.grad(lambda t: np.sum(t) + isinstance(t, 5))(b)
    # and the solve of plain values inside the traced function is SciPy's
    g = tg.grad(lambda t: np.sum(t * lu.solve(b)))(b)
    np.testing.assert_allclose(g, lu.solve(b), rtol=1e-15)


def test_scipy_functions_building_sparse_matrices_are_refused_by_their_own_name():
    """scipy.optimize.linprog turns its traced cost into a scipy.sparse matrix: refused as
    linprog (not as a function of scipy.sparse's), naming the line."""
    import scipy.optimize
    f = lambda t: scipy.optimize.linprog(t, bounds=(0, 1)).fun  # noqa: E731
    with pytest.raises(tg.TraceError, match=r"^scipy\.optimize\.linprog is not supported .*"
                       rf"\(at test_scipy_as_scipy\.py:{f.__code__.co_firstlineno}\)$"):
        tg.grad(f)(_VEC)


def test_cython_scipy_classes_are_refused_by_their_scipy_name():
    import scipy.spatial
    pts = np.array([[0.1, 0.2], [0.7, -0.3], [1.4, 0.9]])
    _compiled_refusal(lambda t: np.sum(scipy.spatial.cKDTree(t).query(pts)[0]), pts,
                      "scipy.spatial.cKDTree is compiled code", "Cannot convert Tracer")
    # a compiled method converting its traced argument with np.asarray(t, float) (which
    # asks the tracer itself): refused by its name, not as a conversion the user wrote
    tree = scipy.spatial.cKDTree(pts)
    f = lambda t: np.sum(tree.query(t)[0])  # noqa: E731
    with pytest.raises(tg.TraceError, match=r"^scipy\.spatial\.cKDTree\.query \(called as "
                       r"tree\.query\) is compiled code, which converts its traced argument "
                       r"\(converting to a NumPy array of dtype float64\), losing its "
                       rf"gradient.*\(at test_scipy_as_scipy\.py:{f.__code__.co_firstlineno}"):
        tg.grad(f)(pts)
    # KDTree: SciPy's Python class over cKDTree
    _compiled_refusal(lambda t: np.sum(scipy.spatial.KDTree(t).query(pts)[0]), pts,
                      "scipy.spatial.KDTree hands a traced value to compiled code")


# -- tracegrad.scipy.spatial.distance: what the refusals of pdist/cdist point to ----------------
@pytest.mark.parametrize("metric", _METRICS + ["seuclidean", "mahalanobis", "minkowski-p3"])
def test_tracegrad_distances_match_scipy(metric):
    from tracegrad.scipy.spatial import distance as tgd
    sd = scipy.spatial.distance
    kwargs = {"seuclidean": {"V": np.array([0.5, 2.0])},
              "mahalanobis": {"VI": np.array([[2.0, 0.3], [0.3, 1.0]])},
              "minkowski-p3": {"p": 3.0}}.get(metric, {})
    metric = metric.split("-")[0]
    XA, XB = _POINTS["XA"], _POINTS["XB"]
    for ours, theirs, args in [
            (lambda a: tgd.cdist(a, XB, metric, **kwargs), lambda a: sd.cdist(a, XB, metric,
                                                                              **kwargs), XA),
            (lambda a: tgd.pdist(a, metric, **kwargs), lambda a: sd.pdist(a, metric, **kwargs),
             XA),
            (lambda a: tgd.squareform(tgd.pdist(a, metric, **kwargs)),
             lambda a: sd.squareform(sd.pdist(a, metric, **kwargs)), XA)]:
        np.testing.assert_allclose(ours(args), theirs(args), rtol=1e-12, atol=1e-14)
        w = np.linspace(0.5, 1.5, np.size(theirs(args))).reshape(np.shape(theirs(args)))
        g = tg.grad(lambda a: np.sum(w * ours(a)))(args)
        fd = np.zeros_like(args)
        for i in np.ndindex(args.shape):
            e = np.zeros_like(args)
            e[i] = 1e-6
            fd[i] = (np.sum(w * theirs(args + e)) - np.sum(w * theirs(args - e))) / 2e-6
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)
    u, v = _POINTS["u"][:2], _POINTS["v"][:2]
    np.testing.assert_allclose(getattr(tgd, metric)(u, v, **kwargs),
                               getattr(sd, metric)(u, v, **kwargs), rtol=1e-12)


def test_tracegrad_euclidean_at_equal_points_has_a_zero_gradient():
    from tracegrad.scipy.spatial import distance as tgd
    X = _POINTS["XA"]
    g = tg.grad(lambda a: np.sum(tgd.cdist(a, a)))(X)   # the diagonal's distances are 0
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(tgd.squareform(tgd.squareform(tgd.cdist(X, X))),
                               tgd.cdist(X, X), atol=1e-15)


def test_every_alternative_exists():
    """Each refusal's pointer names a function tracegrad has."""
    import tracegrad.scipy  # noqa: F401
    from tracegrad.tracer.scipy_calls import ALTERNATIVES
    for scipy_name, alternative in ALTERNATIVES.items():
        parts = alternative.split(" ")[0].split("(")[0].split(".")
        obj = {"np": np, "tracegrad": tg}[parts[0]]
        for part in parts[1:]:
            obj = getattr(obj, part, None)
            assert obj is not None, (scipy_name, alternative)
        assert callable(obj), alternative


# -- tracegrad.scipy.ndimage: what the refusals of the linear filters point to ------------------
@pytest.mark.parametrize("mode", ["reflect", "mirror", "nearest", "wrap", "constant"])
def test_tracegrad_filters_match_scipy(mode):
    from tracegrad.scipy import ndimage as tnd
    nd = scipy.ndimage
    X = _IMAGE[:, :4]
    w = [0.2, 0.5, 0.1, 0.7]
    for ours, theirs, kw in [
            (tnd.gaussian_filter, nd.gaussian_filter, {"sigma": (1.2, 0.7)}),
            (tnd.gaussian_filter1d, nd.gaussian_filter1d, {"sigma": 0.9, "axis": 0}),
            (tnd.uniform_filter, nd.uniform_filter, {"size": 3}),
            (tnd.uniform_filter1d, nd.uniform_filter1d, {"size": 4, "axis": 1}),
            (tnd.convolve1d, nd.convolve1d, {"weights": w, "axis": 0}),
            (tnd.correlate1d, nd.correlate1d, {"weights": w, "origin": 1})]:
        kw = {**kw, "mode": mode, "cval": 0.3}
        np.testing.assert_allclose(ours(X, **kw), theirs(X, **kw), rtol=1e-12, atol=1e-14)
        c = np.linspace(0.5, 1.5, X.size).reshape(X.shape)
        g = tg.grad(lambda a, f=ours, kw=kw: np.sum(c * f(a, **kw)))(X)
        # a linear filter: its gradient is SciPy's filter's transpose applied to c
        fd = np.zeros_like(X)
        for i in np.ndindex(X.shape):
            e = np.zeros_like(X)
            e[i] = 1.0
            fd[i] = np.sum(c * (theirs(X + e, **kw) - theirs(X, **kw)))
        np.testing.assert_allclose(g, fd, rtol=1e-10, atol=1e-12)


# -- tracegrad.scipy.interpolate: what the refusals of CubicSpline and interp1d point to -------
@pytest.mark.parametrize("bc", ["not-a-knot", "natural", "clamped", ((1, 0.5), (2, -0.3))])
def test_tracegrad_cubic_spline_matches_scipy(bc):
    from tracegrad.scipy import interpolate as ti
    si = scipy.interpolate
    at = np.array([0.12, 0.43, 0.71, 1.1, -0.1])          # two points outside: extrapolated
    for nu in range(4):
        np.testing.assert_allclose(ti.CubicSpline(_KNOTS_X, _KNOTS_Y, bc_type=bc)(at, nu),
                                   si.CubicSpline(_KNOTS_X, _KNOTS_Y, bc_type=bc)(at, nu),
                                   rtol=1e-10, atol=1e-11)
    # in the evaluation points: SciPy's own derivative spline
    g = tg.grad(lambda t: np.sum(ti.CubicSpline(_KNOTS_X, _KNOTS_Y, bc_type=bc)(t)))(at)
    np.testing.assert_allclose(g, si.CubicSpline(_KNOTS_X, _KNOTS_Y, bc_type=bc)(at, 1),
                               rtol=1e-12, atol=1e-12)
    # in y: the spline is affine in y, so differences of SciPy's are exact up to rounding
    g = tg.grad(lambda y: np.sum(ti.CubicSpline(_KNOTS_X, y, bc_type=bc)(at)))(_KNOTS_Y)
    fd = [np.sum(si.CubicSpline(_KNOTS_X, _KNOTS_Y + e, bc_type=bc)(at))
          - np.sum(si.CubicSpline(_KNOTS_X, _KNOTS_Y, bc_type=bc)(at)) for e in np.eye(7)]
    np.testing.assert_allclose(g, fd, rtol=1e-9, atol=1e-10)


def test_tracegrad_interp1d_matches_scipy():
    from tracegrad.scipy import interpolate as ti
    si = scipy.interpolate
    Y = np.stack([_KNOTS_Y, _KNOTS_Y ** 2], 1)
    np.testing.assert_allclose(ti.CubicSpline(_KNOTS_X, Y.T, axis=1)(_AT),
                               si.CubicSpline(_KNOTS_X, Y.T, axis=1)(_AT), rtol=1e-12)
    for kind in ("linear", "cubic"):
        np.testing.assert_allclose(ti.interp1d(_KNOTS_X, _KNOTS_Y, kind)(_AT),
                                   si.interp1d(_KNOTS_X, _KNOTS_Y, kind)(_AT), rtol=1e-12)
    out = np.array([-0.2, 0.5, 1.3])
    np.testing.assert_allclose(
        ti.interp1d(_KNOTS_X, _KNOTS_Y, fill_value="extrapolate")(out),
        si.interp1d(_KNOTS_X, _KNOTS_Y, fill_value="extrapolate")(out), rtol=1e-12)
    g = tg.grad(lambda t: np.sum(ti.interp1d(_KNOTS_X, _KNOTS_Y)(t)))(_AT)
    i = np.searchsorted(_KNOTS_X, _AT) - 1
    slopes = (_KNOTS_Y[i + 1] - _KNOTS_Y[i]) / (_KNOTS_X[i + 1] - _KNOTS_X[i])
    np.testing.assert_allclose(g, slopes, rtol=1e-12)
    with pytest.raises(tg.TraceError, match="knots x must be constants"):
        tg.grad(lambda x: np.sum(ti.CubicSpline(x, _KNOTS_Y)(_AT)))(_KNOTS_X)

# -- docs/scipy.md's tables are these lists ----------------------------------------------------
_DOC = __import__("pathlib").Path(__file__).resolve().parent.parent / "docs" / "scipy.md"
_START, _END = "<!-- scipy-as-scipy tables: start -->", "<!-- scipy-as-scipy tables: end -->"


def _is_special_ufunc(name):
    """Whether ``name`` is a ufunc of ``scipy.special`` (public, or private in _ufuncs)."""
    from scipy.special import _ufuncs
    return bool(name) and isinstance(getattr(scipy.special, name, None)
                                     or getattr(_ufuncs, name, None), np.ufunc)


def render_tables():
    """The tables of docs/scipy.md's section on SciPy called directly, from the lists of
    ``tracegrad/tracer/scipy_calls.py`` and the primitives' ``extra["scipy"]``."""
    from tracegrad.ir import REGISTRY
    from tracegrad.tracer.scipy_calls import ALTERNATIVES, RUNS_AS_NUMPY
    # (scipy.special.zeta(x, q) applies the ufunc _zeta); a name that is a Python function
    # in SciPy (polygamma) is not traced there: it is in the refused table
    routed = sorted({p.extra["scipy"].lstrip("_") for p in REGISTRY.values()
                     if _is_special_ufunc(p.extra.get("scipy"))})
    lines = [_START, "", "| `scipy.special` ufuncs with derivative rules |", "|---|",
             "| " + ", ".join(f"`{n}`" for n in routed) + " |", "",
             "| SciPy functions traced as the NumPy code they are |", "|---|",
             "| " + ", ".join(f"`{n}`" for n in sorted(RUNS_AS_NUMPY)) + " |", "",
             "| refused SciPy function | differentiable equivalent |", "|---|---|"]
    lines += [f"| `{n}` | `{alt}` |" for n, alt in sorted(ALTERNATIVES.items())]
    return "\n".join(lines + ["", _END])


def test_docs_list_what_is_supported_and_refused():
    text = _DOC.read_text()
    block = text[text.index(_START):text.index(_END) + len(_END)]
    assert block == render_tables(), "regenerate: python tests/test_scipy_as_scipy.py"


if __name__ == "__main__":      # rewrite docs/scipy.md's tables
    text = _DOC.read_text()
    _DOC.write_text(text[:text.index(_START)] + render_tables()
                    + text[text.index(_END) + len(_END):])


_DOT_DOT = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import scipy.spatial.distance as d
import tracegrad as tg
assert "/../" in tg.__file__.replace("\\\\", "/"), tg.__file__
u, v = np.array([0.5, -1.0, 2.0]), np.array([1.0, 1.0, 0.0])
print(tg.grad(lambda u: np.sum(np.reshape(d.sqeuclidean(u, v), -1)))(u).tolist())
"""


def test_tracegrad_imported_through_a_path_with_dot_dot(tmp_path):
    # tracegrad tells its own frames from the user's by their files, named as the
    # sys.path entry it was imported through names them ("<repo>/tests/.."): taking
    # its view bookkeeping's np.zeros for the user's once made that a traced array
    # (NumPy's as_strided then failed on it, an AttributeError)
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", _DOT_DOT, os.path.join(repo, "tests", "..")],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["[-1.0,", "-4.0,", "4.0]"]
