"""Every function of ``tracegrad.scipy.special`` at its edges (0, -0, ±1, poles, half-integers,
large arguments, ±inf, NaN, both tails, invalid arguments) on both backends, against SciPy:
the same NaN and inf positions and signs, relative precision elsewhere; integer and float32
operands (SciPy's result dtype); a broadcasting case; derivatives at interior points against
central differences of SciPy's own function and against ``jax.scipy.special`` (x64, see
conftest.py). The grids are generated from ``SPECS``, which must name every public function
of the module (``test_every_function_has_a_grid``). The default run checks a bounded slice,
TRACEGRAD_EXHAUSTIVE=1 every case. Each grid is evaluated by one compiled call per
(function, backend, dtype); the cases then read its elements."""
import functools
import itertools
import warnings

import jax
import jax.scipy.special as jsp
import numpy as np
import pytest
import scipy.special as ss

import tracegrad as tg
import tracegrad.scipy.special as ts
import tracegrad.scipy.stats as tst
from tests.conftest import bounded

INF, NAN = np.inf, np.nan
# 0, -0, ±1, poles, half-integers, both tails, large, ±inf, NaN
EDGE = [0.0, -0.0, 1.0, -1.0, -2.0, 0.5, -2.5, 3.0, 8.0, -8.0, 40.0, -40.0, 1e10, -1e10,
        INF, -INF, NAN]
# and the interiors of the functions defined on [0, 1], [-1, 1] or [0, 2]: ndtri, logit,
# erfinv, erfcinv (their ends and the points past them are in EDGE)
UNARY = EDGE + [0.25, 0.75, -0.75, 1.5, 2.0, 1e-10, 1e-300, 12.0]
UNIT = [0.0, -0.0, 1.0, 0.5, 0.25, 1e-10, 1.0 - 1e-10, 1e-300, -0.5, 1.5, INF, -INF, NAN]
SHAPE = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 40.0, 1e10, INF, -INF, NAN]
SMALL = [0.0, 1.0, -1.0, 0.5, 3.0, 40.0, INF, NAN]
ORDER = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 2.0, 40.0, INF, NAN]
INT_ORDER = [0, 1, 2, 3, 5, -1]


class Spec:
    """A function's operands: a grid each (``ints``: the operands SciPy takes as integers),
    an interior point and the operands differentiated there (``diff``), and the name of
    its ``jax.scipy.special`` twin (None: JAX has none)."""

    def __init__(self, grids, diff, diffnums=(0,), ints=(), twin="same", grid_fn=None):
        self.grids, self.diff, self.diffnums, self.ints = grids, diff, diffnums, ints
        self.twin, self.grid_fn = twin, grid_fn


def _u(x, twin="same", grid=UNARY):
    return Spec([grid], (x,), twin=twin)


SPECS = {
    "gammaln": _u(2.7), "digamma": _u(-1.3), "psi": _u(0.7, twin="digamma"), "gamma": _u(-2.4),
    "rgamma": _u(-1.6, twin=None), "gammasgn": Spec([UNARY], (-1.6,), diffnums=(), twin=None),
    "erf": _u(0.4), "erfc": _u(1.7), "erfinv": _u(-0.6), "erfcinv": _u(0.3, twin=None),
    "ndtr": _u(-2.2), "ndtri": _u(0.9), "log_ndtr": _u(-9.5), "expit": _u(-3.1),
    "logit": _u(0.35), "i0": _u(1.9), "i1": _u(-2.3), "i0e": _u(4.5), "i1e": _u(-0.7),
    "j0": _u(2.1, twin=None), "j1": _u(3.3, twin=None), "y0": _u(1.4, twin=None),
    "y1": _u(0.8, twin=None), "k0": _u(0.6, twin=None), "k1": _u(2.4, twin=None),
    "k0e": _u(1.2, twin=None), "k1e": _u(5.0, twin=None),
    "beta": Spec([EDGE, EDGE], (1.5, 2.5), (0, 1)),
    "betaln": Spec([EDGE, EDGE], (0.7, 3.5), (0, 1)),
    "xlogy": Spec([EDGE, EDGE], (-1.5, 2.5), (0, 1)),
    "xlog1py": Spec([EDGE, EDGE], (2.5, -0.5), (0, 1)),
    "gammainc": Spec([SHAPE, SHAPE], (2.5, 1.5), (0, 1)),
    "gammaincc": Spec([SHAPE, SHAPE], (0.8, 2.5), (0, 1)),
    "gammaincinv": Spec([SHAPE, UNIT], (2.5, 0.3), (0, 1), twin=None),
    "gammainccinv": Spec([SHAPE, UNIT], (0.8, 0.6), (0, 1), twin=None),
    "betainc": Spec([SMALL, SMALL, UNIT], (1.5, 2.5, 0.3), (2,)),
    "polygamma": Spec([INT_ORDER, UNARY], (2, 1.3), (1,), ints=(0,)),
    "multigammaln": Spec([UNARY, [1, 2, 3]], (3.3, 3), (0,), ints=(1,)),
    "jv": Spec([ORDER, EDGE], (1.3, 2.2), (1,), twin=None),
    "jn": Spec([ORDER, EDGE], (2.0, 4.5), (1,), twin=None),
    "yv": Spec([ORDER, EDGE], (0.7, 1.2), (1,), twin=None),
    "yn": Spec([INT_ORDER, EDGE], (3, 2.6), (1,), ints=(0,), twin=None),
    "iv": Spec([ORDER, EDGE], (2.5, 1.1), (1,), twin=None),
    "ive": Spec([ORDER, EDGE], (1.0, -3.2), (1,), twin=None),
    "kv": Spec([ORDER, EDGE], (0.4, 0.9), (1,), twin=None),
    "kve": Spec([ORDER, EDGE], (1.5, 3.7), (1,), twin=None),
}
# SciPy's own ufuncs that tracegrad routes to a primitive on traced values (registry
# entries with extra["scipy"]) and that tracegrad.scipy.special does not name: called as
# scipy.special's functions
ROUTED = {
    "entr": _u(0.7), "erfcx": _u(0.8, twin=None), "exp1": _u(1.3), "expi": _u(0.9),
    "rel_entr": Spec([EDGE, EDGE], (0.6, 1.8), (0, 1)),
    "kl_div": Spec([EDGE, EDGE], (1.5, 0.7), (0, 1)),
    "poch": Spec([EDGE, EDGE], (2.5, 1.3), (0, 1)),
    "zeta": Spec([EDGE, EDGE], (3.0, 1.5), (1,)),
}
SPECS.update(ROUTED)
# logsumexp, softmax, log_softmax take arrays and keywords: their own cases below
REDUCTIONS = ("logsumexp", "softmax", "log_softmax")


def _public():
    names = set(getattr(ts, "__all__", ()))
    names |= {n for n, v in vars(ts).items() if not n.startswith("_") and callable(v)
              and getattr(v, "__module__", None) == ts.__name__}
    return names


def _routed():
    from tracegrad.ir.registry import REGISTRY
    names = {p.extra["scipy"] for p in REGISTRY.values() if "scipy" in p.extra}
    return {"zeta" if n == "_zeta" else n for n in names}


def _fn(name):
    """The function a grid calls: tracegrad.scipy.special's, else SciPy's own (routed)."""
    return getattr(ts, name) if name not in ROUTED else getattr(ss, name)


def test_every_function_has_a_grid():
    missing = (_public() | _routed()) - set(SPECS) - set(REDUCTIONS)
    assert not missing, f"scipy.special functions without an edge grid: {missing}"
    assert not (set(SPECS) | set(REDUCTIONS)) - _public() - _routed(), "a grid for a gone name"
    assert not set(ROUTED) & _public(), "a routed name now in tracegrad.scipy.special"


# -- SciPy's reference and the compiled grids ---------------------------------------------------
def _scipy(name, *args):
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "multigammaln":
            # SciPy raises for a <= (d - 1)/2 (see KNOWN): elementwise, the rest its values
            a, d = args
            a = np.asarray(a, np.float64)
            d = int(np.asarray(d).flat[0])
            out = np.full(a.shape, np.nan)
            for i in np.ndindex(a.shape):
                try:
                    out[i] = ss.multigammaln(a[i], int(d))
                except ValueError:
                    pass
            return out
        return getattr(ss, name)(*args)


def _operands(name, points, dtype):
    spec = SPECS[name]
    cols = list(zip(*points))
    return [np.array(col, np.int64 if k in spec.ints or dtype == "int" else dtype)
            for k, col in enumerate(cols)]


def _groups(name, points):
    """The points in groups of one call each: multigammaln's by d (a Python integer)."""
    if name != "multigammaln":
        return [list(points)]
    return [[p for p in points if p[1] == d] for d in sorted({p[1] for p in points})]


@functools.cache
def _grids(backend, dtype, table):
    """{name: {point: (got, want, got dtype, want dtype)}} for ``table`` (pairs of a name
    and its points), every function's grid computed by one compiled program."""
    calls = [(name, group) for name, points in table for group in _groups(name, points)]
    operands = [_operands(name, group, dtype) for name, group in calls]

    def every(*flat):
        outs, k = [], 0
        for (name, group), ops in zip(calls, operands):
            if name == "multigammaln":       # d is a Python integer, not traced
                outs.append(ts.multigammaln(flat[k], int(group[0][1])))
                k += 1
            else:
                outs.append(_fn(name)(*flat[k:k + len(ops)]))
                k += len(ops)
        return tuple(outs)

    flat = [op for ops, (name, _) in zip(operands, calls)
            for op in (ops[:1] if name == "multigammaln" else ops)]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got_all = tg.jit(every, backend=backend)(*flat)
    results: dict = {}
    for (name, group), ops, got in zip(calls, operands, got_all):
        got, want = np.asarray(got), np.asarray(_scipy(name, *ops))
        for i, p in enumerate(group):
            results.setdefault(name, {})[p] = (got[i], want[i], got.dtype, want.dtype)
    return results


def _check(got, want, rtol, atol=1e-300):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert np.isnan(got) == np.isnan(want), (got, want)
    if np.isinf(want) or np.isinf(got):
        assert got == want, (got, want)
    elif not np.isnan(want):
        assert got == pytest.approx(want, rel=rtol, abs=atol), (got, want)


RTOL = {"numpy": 1e-12, "jax": 1e-10}

# -- the cases -----------------------------------------------------------------------------------
POINTS = {name: [tuple(p) for p in itertools.product(*spec.grids)] for name, spec in SPECS.items()}
CASES = [(name, p, backend) for name in SPECS for p in POINTS[name] for backend in ("numpy", "jax")]


# Where a backend still differs from SciPy, a strict xfail (each listed in docs/guarantees.md):
# {(name, backend): {point: reason}}
_IGAMMA_LARGE = ("XLA's igamma (jax.scipy.special.gammainc/gammaincc) for a = x = 1e10: it has "
                 "no uniform asymptotic expansion for large a near x, as SciPy's; 7e-6 relative "
                 "off (gammaincc: 0.93 for 0.5); good to 1e-9 relative up to a = 1e6")
KNOWN: dict = {
    ("gammainc", "jax"): {(1e10, 1e10): _IGAMMA_LARGE},
    ("gammaincc", "jax"): {(1e10, 1e10): _IGAMMA_LARGE},
    # SciPy's recurrence for (z)_m stops at the first non-finite or zero partial product and
    # then takes logarithms of Γ at infinity: NaN (or ±inf for |m| = 1 at z = -inf) where the
    # limit is 0 or inf, which tracegrad's JAX backend gives
    ("poch", "jax"): {p: "SciPy's NaN where its recurrence overflows; JAX gives the limit"
                      for p in [(z, -1e10) for z in (0.0, -1.0, -2.0, -8.0, -40.0, -1e10)]
                      + [(-1e10, m) for m in (40.0, -40.0, 1e10)]
                      + [(INF, m) for m in (-2.5, 3.0, 8.0, -8.0, 40.0, -40.0, 1e10, -1e10)]
                      + [(-INF, 1.0), (-INF, -1.0)]},
    # SciPy's Euler-Maclaurin sum for ζ(x, q) meets inf·0 at x = inf for 1 < q < 1e10
    ("zeta", "jax"): {(INF, q): "SciPy's NaN at x = inf (inf·0 in its sum); JAX gives the "
                      "limit 0" for q in (3.0, 8.0, 40.0)},
}


def _reason(case):
    name, point, backend = case
    return KNOWN.get((name, backend), {}).get(point)


def _mark(case):
    reason = _reason(case)
    if reason is not None:
        return pytest.param(*case, marks=pytest.mark.xfail(strict=True, reason=reason))
    return pytest.param(*case)


def _id(case):
    name, point, backend = case
    return f"{name}-{','.join(repr(p) for p in point)}-{backend}"


SELECTED = bounded(CASES, 600, key=lambda c: (c[0], c[2]))
# what each backend evaluates (in one program): the selected points of every function
_SELECTED_POINTS: dict = {}
for _name, _p, _backend in SELECTED:
    _SELECTED_POINTS.setdefault(_backend, {}).setdefault(_name, []).append(_p)
_SELECTED_TABLE = {backend: tuple((name, tuple(points)) for name, points in table.items())
                   for backend, table in _SELECTED_POINTS.items()}


@pytest.mark.parametrize("name,point,backend", [_mark(c) for c in SELECTED],
                         ids=[_id(c) for c in SELECTED])
def test_special_edges_match_scipy(name, point, backend):
    got, want, _, _ = _grids(backend, "float64", _SELECTED_TABLE[backend])[name][point]
    _check(got, want, RTOL[backend])


def test_known_differences_are_grid_points():
    for (name, _), points in KNOWN.items():
        assert set(points) <= set(POINTS[name]), name


# -- integer and float32 operands: SciPy's result dtype, and its values ---------------------------
def _int_points(name):
    spec = SPECS[name]
    grids = [g if k in spec.ints else [v for v in g if np.isfinite(v) and v == int(v)
                                         and abs(v) < 1e9]
             for k, g in enumerate(spec.grids)]
    return tuple(tuple(p) for p in itertools.product(*grids))


# float32 results are held to float32's precision: SciPy's float32 loops compute in float64
# and round, XLA's in float32
RTOL32 = {"numpy": 1e-6, "jax": 2e-5}
# where float32 still differs from SciPy (beyond RTOL32): {(name, dtype, backend): {point: reason}}
KNOWN32: dict = {
    ("gammainc", "float32", "jax"): {(1e10, 1e10): _IGAMMA_LARGE + " (float32: 0 for 0.5)"},
    ("gammaincc", "float32", "jax"): {(1e10, 1e10): _IGAMMA_LARGE + " (float32: 0 for 0.5)"},
}
# (every function, every point: one program per backend and dtype)
DTYPE_CASES = [(name, dtype, backend) for name in SPECS for dtype in ("int", "float32")
               for backend in ("numpy", "jax")]
_DTYPE_TABLE = {"int": tuple((name, _int_points(name)) for name in SPECS),
                "float32": tuple((name, tuple(POINTS[name])) for name in SPECS)}


@pytest.mark.parametrize("name,dtype,backend", DTYPE_CASES)
def test_special_integer_and_float32_operands(name, dtype, backend):
    results = _grids(backend, dtype, _DTYPE_TABLE[dtype])[name]
    rtol = RTOL[backend] if dtype == "int" else RTOL32[backend]
    # (float32's subnormal numbers: XLA flushes them to 0, see docs/guarantees.md)
    atol = 1e-300 if dtype == "int" else float(np.finfo(np.float32).tiny)
    differ = {}
    for p, (got, want, got_dtype, want_dtype) in results.items():
        assert got_dtype == want_dtype, (p, got_dtype, want_dtype)
        try:
            _check(got, want, rtol, atol)
        except AssertionError:
            differ[p] = (float(got), float(want))
    # (the float64 grid's known differences, where the point is in this grid, too)
    known = set(KNOWN32.get((name, dtype, backend), set())) | {
        p for p in KNOWN.get((name, backend), {}) if p in results}
    assert set(differ) == known, differ


# -- broadcasting ------------------------------------------------------------------------------
def _interior(name):
    """Operands of the broadcasting case: around the derivative point, in the shapes
    (4,), (3, 1), (2, 1, 1) from the last operand to the first."""
    spec = SPECS[name]
    out = []
    n = len(spec.diff)
    for k, v in enumerate(spec.diff):
        shape = {1: (4,), 2: (3, 1), 3: (2, 1, 1)}[n - k]
        if k in spec.ints:
            out.append(np.full(shape, v, np.int64) + np.arange(np.prod(shape)).reshape(shape) % 2)
        else:
            out.append(v + 0.05 * np.arange(np.prod(shape)).reshape(shape))
    return out


@pytest.mark.parametrize("backend", ["numpy", "jax"])
@pytest.mark.parametrize("name", bounded(list(SPECS), 12))
def test_special_broadcasting(name, backend):
    ops = _interior(name)
    if name == "multigammaln":
        d = SPECS[name].diff[1]
        want = ss.multigammaln(ops[0], d)
        got = tg.jit(lambda a: ts.multigammaln(a, d), backend=backend)(ops[0])
    else:
        want = getattr(ss, name)(*ops)
        got = tg.jit(lambda *xs: _fn(name)(*xs), backend=backend)(*ops)
    assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=RTOL[backend])


# -- derivatives at interior points --------------------------------------------------------------
def _twin(name):
    twin = SPECS[name].twin
    if twin is None:
        return None
    return getattr(jsp, name if twin == "same" else twin)


DIFF_CASES = [(name, i, backend) for name in SPECS for i in SPECS[name].diffnums
              for backend in ("numpy", "jax")]


@pytest.mark.parametrize("name,i,backend", bounded(DIFF_CASES, 30))
def test_special_derivatives_match_differences_and_jax(name, i, backend):
    spec = SPECS[name]
    args = list(spec.diff)
    if name == "multigammaln":
        d = args.pop()

        def f(a):
            return ts.multigammaln(a, d)

        def ref(a):
            return ss.multigammaln(a, d)

        def jtwin(a):
            return jsp.multigammaln(a, d)
    else:
        def f(*xs):
            return _fn(name)(*xs)

        def ref(*xs):
            return getattr(ss, name)(*xs)

        jtwin = _twin(name)
    got = float(tg.jit(tg.grad(f, argnums=i), backend=backend)(
        *(np.int64(a) if k in spec.ints else np.float64(a) for k, a in enumerate(args))))
    h = 1e-5 * max(1.0, abs(args[i]))
    up, down = list(args), list(args)
    up[i] += h
    down[i] -= h
    # central differences of SciPy's own function (error: h squared times the third derivative)
    assert got == pytest.approx((ref(*up) - ref(*down)) / (2 * h), rel=1e-6, abs=1e-9)
    if jtwin is not None:
        want = jax.grad(jtwin, argnums=i)(*(int(a) if k in spec.ints else np.float64(a)
                                            for k, a in enumerate(args)))
        assert got == pytest.approx(float(want), rel=1e-9, abs=1e-12)


def test_every_function_but_gammasgn_is_differentiated():
    assert {n for n, s in SPECS.items() if not s.diffnums} == {"gammasgn"}


def test_gammasgn_has_no_derivative():
    # piecewise constant: its derivative is 0 (as np.sign's), on both backends
    for backend in ("numpy", "jax"):
        g = tg.jit(tg.grad(lambda x: ts.gammasgn(x) * x), backend=backend)
        assert float(g(np.float64(-1.6))) == ss.gammasgn(-1.6)


def test_multigammaln_outside_its_domain():
    # SciPy raises for a <= (d - 1)/2; so does tracegrad on plain numbers, and traced it is NaN
    with pytest.raises(ValueError, match="not met"):
        ss.multigammaln(0.5, 3)
    with pytest.raises(ValueError, match="not met"):
        ts.multigammaln(0.5, 3)
    with pytest.raises(ValueError, match="positive integer"):
        ts.multigammaln(3.0, 1.5)
    assert np.isnan(tg.jit(lambda a: ts.multigammaln(a, 3))(np.float64(0.5)))


# -- logsumexp, softmax, log_softmax --------------------------------------------------------------
_M = np.array([[0.5, -1.0, 2.0, 3.0], [INF, 1.0, -INF, 0.0], [-INF, -INF, -INF, -INF],
               [NAN, 1.0, 2.0, 0.0], [1e308, 1e308, -1e308, 0.0]])
_W = np.array([[1.0, 0.0, -2.0, 0.5], [1.0, 0.0, 2.0, 1.0], [1.0, 1.0, 1.0, 1.0],
               [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
_R = np.random.default_rng(23).standard_normal((3, 4))
LSE_CASES = [
    ("edges", _M, {"axis": 1}), ("edges-none", _M[:2], {}), ("edges-axis0", _M, {"axis": 0}),
    ("weights", _M, {"axis": 1, "b": _W}),
    ("weights-sign", _M, {"axis": 1, "b": _W, "return_sign": True}),
    ("weights-row", _R, {"axis": -1, "b": np.array([1.0, -1.0, 0.5, 0.0])}),
    ("weights-neg-nan", _R, {"axis": 0, "b": -np.ones((3, 4))}),
    ("sign", _R, {"b": -np.ones((3, 4)), "return_sign": True}),
    ("keepdims", _R, {"axis": 0, "keepdims": True}), ("axes", _R, {"axis": (0, 1)}),
    ("empty", np.zeros((0,)), {}), ("empty-axis0", np.zeros((0, 3)), {"axis": 0}),
    ("empty-axis1", np.zeros((0, 3)), {"axis": 1}),
    ("float32", _R.astype(np.float32), {"axis": 1}),
    ("float32-w", _R.astype(np.float32), {"b": np.ones(4, np.float32), "axis": 1}),
    ("int", np.arange(6).reshape(2, 3), {"axis": 1}), ("scalar", np.float64(2.0), {}),
    # the tail: log1p of the rest, relative to the largest terms (log(1 + 4e-18) would be 0)
    ("tail", np.array([[0.0, -40.0, -45.0], [3.0, 3.0, -50.0]]), {"axis": 1}),
    ("tail-weights", np.array([[0.0, -40.0, 0.0]]), {"axis": 1, "b": np.array([1.0, 2.0, -1.0])}),
    ("broadcast-weights", np.array([0.5, 1.0, 2.0]), {"axis": 1, "b": np.array([[1.0], [2.0]])}),
]
SOFTMAX_CASES = [
    ("edges", _M, {"axis": 1}), ("edges-axis0", _M, {"axis": 0}), ("none", _R, {}),
    ("axes", _R, {"axis": (0, 1)}), ("neg-axis", _R, {"axis": -1}),
    ("empty-axis1", np.zeros((0, 3)), {"axis": 1}),
    ("float32", _R.astype(np.float32), {"axis": 0}),
    ("int", np.arange(6).reshape(2, 3), {"axis": 1}),
]
REDUCTION_CASES = ([("logsumexp",) + c for c in LSE_CASES]
                   + [(f,) + c for f in ("softmax", "log_softmax") for c in SOFTMAX_CASES])


def _compare(got, want, rtol):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    for g, w in zip(got.ravel(), want.ravel()):
        _check(g, w, rtol if want.dtype == np.float64 else RTOL32["jax"])


@pytest.mark.parametrize("backend", ["numpy", "jax"])
@pytest.mark.parametrize("name,tag,a,kw", REDUCTION_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in REDUCTION_CASES])
def test_logsumexp_softmax_edges_match_scipy(name, tag, a, kw, backend):
    kw = dict(kw)
    b = kw.pop("b", None)
    with np.errstate(all="ignore"):
        want = getattr(ss, name)(a, **kw, **({} if b is None else {"b": b}))
        if b is None:
            got = tg.jit(lambda x: getattr(ts, name)(x, **kw), backend=backend)(a)
        else:
            got = tg.jit(lambda x, w: ts.logsumexp(x, b=w, **kw), backend=backend)(a, b)
    if kw.get("return_sign"):
        _compare(got[0], want[0], RTOL[backend])
        _compare(got[1], want[1], 0)
    else:
        _compare(got, want, RTOL[backend])


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_over_an_empty_axis_raises_as_scipy(name):
    a = np.zeros((0, 3))
    with pytest.raises(ValueError):
        getattr(ss, name)(a, axis=0)
    with pytest.raises(ValueError):
        getattr(ts, name)(a, axis=0)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_logsumexp_weights_and_softmax_derivatives_match_jax(backend):
    b = np.array([[1.0, 0.5, 2.0, 0.25], [0.5, 1.0, 3.0, 1.0], [2.0, 1.0, 0.5, 1.5]])
    w = np.random.default_rng(1).standard_normal((3, 4))

    def f(a, b):
        return np.sum(w[:, 0] * ts.logsumexp(a, axis=1, b=b))

    def jf(a, b):
        return jax.numpy.sum(w[:, 0] * jsp.logsumexp(a, axis=1, b=b))

    got = tg.jit(tg.grad(f, argnums=(0, 1)), backend=backend)(_R, b)
    want = jax.grad(jf, argnums=(0, 1))(_R, b)
    for g, j in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(j), rtol=1e-10)
    # large and infinite terms: the plain sum's overflow stays out of the derivative
    a = np.array([1000.0, 999.0, -INF])
    got = tg.jit(tg.grad(lambda a: ts.logsumexp(a)), backend=backend)(a)
    np.testing.assert_allclose(got, np.asarray(jax.grad(jsp.logsumexp)(a)), rtol=1e-12)
    # tied maxima with other weights: each keeps its own derivative b_k e^a_k / sum
    a, b = np.array([1.0, 1.0, -0.5]), np.array([0.5, 2.0, 1.0])
    got = tg.jit(tg.grad(lambda a, b: ts.logsumexp(a, b=b), argnums=(0, 1)), backend=backend)(a, b)
    want = jax.grad(lambda a, b: jsp.logsumexp(a, b=b), argnums=(0, 1))(a, b)
    for g, j in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(j), rtol=1e-12)
    for name, twin in (("softmax", jax.nn.softmax), ("log_softmax", jax.nn.log_softmax)):
        for axis in (None, 0, -1):
            got = tg.jit(tg.grad(lambda a: np.sum(w * getattr(ts, name)(a, axis=axis))),
                         backend=backend)(_R)
            jaxis = (0, 1) if axis is None else axis
            want = jax.grad(lambda a: jax.numpy.sum(w * twin(a, axis=jaxis)))(_R)
            np.testing.assert_allclose(got, np.asarray(want), rtol=1e-10, atol=1e-14)


# -- the earlier checks ---------------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["numpy", "jax"])
@pytest.mark.parametrize("x", [0.0, -0.0, -3.0, 2.0])
def test_polygamma_order_zero_is_digamma_at_poles(backend, x):
    f = tg.jit(lambda n, y: ts.polygamma(n, y), backend=backend)
    with np.errstate(all="ignore"):
        _check(f(0, np.float64(x)), ss.polygamma(0, x), RTOL[backend])


@pytest.mark.parametrize("backend", ["numpy", "jax"])
@pytest.mark.parametrize("x", [-30.0, -3.0, 0.0, 3.0, 8.0, 12.0])
def test_norm_logcdf_relative_in_both_tails(backend, x):
    import scipy.stats as st
    f = tg.jit(lambda y: tst.norm.logcdf(y), backend=backend)
    _check(f(np.float64(x)), st.norm.logcdf(x), RTOL[backend])


STATS_EDGES = [
    ("gamma", "cdf", (NAN, 2.0)), ("gamma", "sf", (NAN, 2.0)), ("gamma", "logpdf", (NAN, 2.0)),
    ("gamma", "logpdf", (1.0, -1.0)), ("gamma", "cdf", (1.0, -1.0)), ("gamma", "sf", (1.0, 0.0)),
    ("gamma", "cdf", (-1.0, 2.0)), ("gamma", "sf", (-1.0, 2.0)), ("gamma", "logpdf", (-1.0, 2.0)),
    ("gamma", "logpdf", (1.5, 2.0)), ("gamma", "cdf", (1.5, 2.0)), ("gamma", "sf", (INF, 2.0)),
    ("norm", "logpdf", (1.0, 0.0, 0.0)), ("norm", "logpdf", (1.0, 0.0, -1.0)),
    ("norm", "logpdf", (1.0, 0.0, 2.0)), ("norm", "pdf", (1.0, 0.0, 0.0)),
]


@pytest.mark.parametrize("backend", ["numpy", "jax"])
@pytest.mark.parametrize("dist,method,args", STATS_EDGES)
def test_stats_edges_match_scipy(backend, dist, method, args):
    import scipy.stats as st
    with np.errstate(all="ignore"):
        want = getattr(getattr(st, dist), method)(*args)
        f = tg.jit(lambda *xs: getattr(getattr(tst, dist), method)(*xs), backend=backend)
        got = f(*(np.float64(a) for a in args))
    _check(got, want, RTOL[backend])


def test_norm_logpdf_zero_scale_python_numbers_is_nan():
    with np.errstate(all="ignore"):
        assert np.isnan(tst.norm.logpdf(1, 0, 0))


@pytest.mark.parametrize("x,a", [(1.5, 2.0), (0.3, 0.7)])
def test_gamma_logpdf_and_cdf_derivatives_interior(x, a):
    import scipy.stats as st
    h = 1e-6
    g = tg.grad(lambda y: tst.gamma.cdf(y, a))(np.float64(x))
    assert float(g) == pytest.approx(st.gamma.pdf(x, a), rel=1e-9)
    g = tg.grad(lambda y: tst.gamma.logpdf(y, a))(np.float64(x))
    fd = (st.gamma.logpdf(x + h, a) - st.gamma.logpdf(x - h, a)) / (2 * h)
    assert float(g) == pytest.approx(fd, rel=1e-6)
