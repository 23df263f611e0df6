"""``tracegrad.scipy.stats`` at its edges, against SciPy: every distribution of
``tracegrad.scipy.stats.__all__`` and every public function it has (found by looking at the
namespace, so a new one is checked, or fails the coverage test, without anyone writing a
case), on an edge grid (0, ±inf, NaN, the support's boundaries, both tails, invalid
parameters), with integer, float32 and broadcast operands, eagerly and under ``tg.jit`` on
both backends: the same NaN and inf positions, relative precision elsewhere. Derivatives at
interior points against central differences of SciPy's own function and
``jax.scipy.stats`` (x64) where JAX has the function.

The default run checks a bounded slice of the groups; TRACEGRAD_EXHAUSTIVE=1 every one.
The cases still different are ``KNOWN`` below (each checked to differ: a strict expected
failure) and listed in docs/guarantees.md."""
import itertools

import jax
import jax.scipy.stats as jst
import numpy as np
import pytest
import scipy.stats as sst

import tracegrad as tg
import tracegrad.scipy.stats as ts
from tests.conftest import bounded

jax.config.update("jax_enable_x64", True)      # as conftest does: JAX in float64

INF, NAN = np.inf, np.nan

# -- the table: every distribution with a shared signature ------------------------------------
# the first operand's grid for each function (a density's argument or a probability)
X = [0.0, -0.0, 0.7, -0.7, 1.0, -1.0, 1e-12, -1e-12, 3.0, -3.0, 40.0, -40.0, 1e10, -1e10,
     INF, -INF, NAN]
XPOS = [0.0, -0.0, 1e-300, 1e-12, 0.3, 1.0, 2.5, 40.0, 300.0, 1e10, -1.0, INF, -INF, NAN]
XUNIT = [0.0, 1.0, 1e-12, 1e-3, 0.3, 0.5, 0.999, 1.0 - 1e-12, -0.5, 1.5, INF, -INF, NAN]
K = [0.0, 1.0, 2.0, 2.5, 7.0, 40.0, 1000.0, -1.0, -0.5, INF, -INF, NAN]
Q = [0.0, 1.0, 0.5, 1e-300, 1e-10, 0.3, 1.0 - 1e-10, -0.1, 1.1, INF, NAN]
SHAPE = [1e-3, 0.5, 1.0, 2.5, 40.0, 1e4, 1e10, 0.0, -1.0, INF, NAN]
LOC = [0.0, -1.5, 2.0, INF, -INF, NAN]
SCALE = [1.0, 0.25, 3.0, 0.0, -1.0, INF, NAN]
MU = [0.0, 0.5, 3.0, 40.0, -1.0, INF, NAN]

# distribution: (the grid of each operand after the first, their interior base point);
# the first operand's grid is FIRST[dist]
SIGNATURES = {
    "norm": ([LOC, SCALE], (0.3, 1.7)),
    "t": ([SHAPE, LOC, SCALE], (3.5, 0.2, 1.3)),
    "gamma": ([SHAPE, LOC, SCALE], (2.5, 0.1, 1.5)),
    "chi2": ([SHAPE, LOC, SCALE], (3.0, 0.1, 1.2)),
    "beta": ([SHAPE, SHAPE, LOC, SCALE], (2.5, 1.5, -0.1, 1.2)),
    "poisson": ([MU, [0.0, 1.0, -2.0, NAN]], (3.0, 0.0)),
}
FIRST = {"norm": X, "t": X, "gamma": XPOS, "chi2": XPOS, "beta": XUNIT, "poisson": K}
# the generic functions, and which grid their first operand takes ("x": FIRST[dist])
METHODS = {"logpdf": "x", "pdf": "x", "logpmf": "x", "pmf": "x", "cdf": "x", "logcdf": "x",
           "sf": "x", "logsf": "x", "ppf": "q"}
# interior points of the first operand, for derivatives and dtype checks
INTERIOR = {"norm": [-2.5, -0.4, 0.3, 1.9, 4.0], "t": [-6.0, -0.4, 0.05, 1.9, 9.0],
            "gamma": [0.15, 0.6, 1.9, 4.0, 9.0], "chi2": [0.15, 0.6, 1.9, 4.0, 9.0],
            "beta": [0.05, 0.3, 0.5, 0.8, 1.0], "poisson": [0.0, 1.0, 3.0, 5.0, 9.0]}
Q_INTERIOR = [1e-4, 0.1, 0.45, 0.8, 0.999]
# operands a distribution function is not differentiated in: betainc's shape parameters
# (tracegrad raises TraceError, as JAX has no rule either); a discrete k has zero gradient
NOT_DIFFERENTIABLE = {("t", m, 1) for m in ("cdf", "sf", "logcdf", "logsf")} | {
    ("beta", m, i) for m in ("cdf", "sf", "logcdf", "logsf") for i in (1, 2)}
DISCRETE = {("poisson", m, i) for m in ("cdf", "sf", "logcdf", "logsf") for i in (0, 2)}
# the mass function's formula in k (and loc): against JAX's (SciPy's differences across
# integers are not derivatives)
JAX_ONLY = {("poisson", m, i) for m in ("logpmf", "pmf") for i in (0, 2)}

# XLA's lgamma and incomplete beta function are about 1e-9 relative off (betaln(40, 1.5)
# through the JAX backend: 5e-10), so the JAX backend is held to 1e-8
RTOL = {"eager": 1e-10, "scalar": 1e-10, "numpy": 1e-10, "jax": 1e-8}
MODES = ("eager", "scalar", "numpy", "jax")


def _key(args):
    return repr(tuple(float(a) for a in args))


# (dist, method, mode) -> {row key: reason}: the rows where tracegrad still differs from
# SciPy. Each is checked to differ (a strict expected failure).
_T_HUGE_DF = ("t at df = 1e10: the tail formula I_{df/(df+z²)}(df/2, 1/2) rounds 1 - w = "
              "z²/(df+z²) (relative error ~df·1e-16, 5e-10 here); avoiding it needs a "
              "complemented incomplete beta function (betaincc) in tracegrad.scipy.special")
_T_HUGE_DF_JAX = ("t at df = 1e10, JAX backend: XLA's incomplete beta function at b = df/2 = "
                  "5e9 is about 1e-7 relative off (tracegrad.scipy.special's JAX lowering)")
_T_TAILS = {"cdf": (-40.0,), "sf": (40.0,), "logcdf": (40.0, -40.0), "logsf": (-40.0,)}
_T_CENTRE = (0.0, -0.0, 0.7, -0.7, 1.0, -1.0, 1e-12, -1e-12, 3.0, -3.0)
KNOWN: dict = {}
for _m, _xs in _T_TAILS.items():
    for _mode in ("eager", "scalar", "numpy"):
        KNOWN[("t", _m, _mode)] = {_key((x, 1e10, 0.2, 1.3)): _T_HUGE_DF for x in _xs}
    KNOWN[("t", _m, "jax")] = {_key((x, 1e10, 0.2, 1.3)): _T_HUGE_DF_JAX
                               for x in _T_CENTRE + (_xs if _m != "logsf" else (40.0, -40.0))}


def _methods(dist):
    return sorted(m for m in vars(getattr(ts, dist)) if not m.startswith("_"))


def test_every_distribution_and_function_is_in_the_table():
    """A new distribution or function that the tables here do not know fails."""
    for dist in ts.__all__:
        assert dist in SIGNATURES or dist in EXPLICIT, f"{dist}: add it to SIGNATURES/EXPLICIT"
        methods = _methods(dist)
        if dist in EXPLICIT:
            assert methods == sorted(EXPLICIT[dist]), (dist, methods, sorted(EXPLICIT[dist]))
            continue
        for m in methods:
            assert m in METHODS, f"{dist}.{m}: say in METHODS which grid its first operand takes"
            assert hasattr(getattr(sst, dist), m), f"{dist}.{m} has no SciPy twin"
    assert set(SIGNATURES) | set(EXPLICIT) == set(ts.__all__)


def _rows(dist, method):
    """The edge grid: every first operand at the base parameters, and every first operand
    against every value of each parameter (the others at their base)."""
    grids, base = SIGNATURES[dist]
    first = Q if METHODS[method] == "q" else FIRST[dist]
    rows = [(x,) + base for x in first]
    for i, grid in enumerate(grids):
        for v, x in itertools.product(grid, first):
            row = list(base)
            row[i] = v
            rows.append((x,) + tuple(row))
    out, seen = [], set()
    for r in rows:
        if _key(r) not in seen:
            seen.add(_key(r))
            out.append(r)
    return out


GROUPS = [(dist, method, mode) for dist in SIGNATURES for method in _methods(dist)
          for mode in MODES]


def _compare(got, want, rtol):
    """The rows where ``got`` differs from ``want``: NaN and inf positions (and signs) must
    be equal, the rest equal to ``rtol``, relative."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    bad = np.isnan(got) != np.isnan(want)
    inf = np.isinf(got) | np.isinf(want)
    bad |= inf & (got != want)
    finite = ~np.isnan(want) & ~np.isnan(got) & ~inf
    with np.errstate(all="ignore"):
        err = np.abs(got - want) > rtol * np.abs(want) + 1e-300
    return bad | (finite & err)


def _scipy(dist, method, *args):
    """SciPy's value; for ``logcdf`` (``logsf``) ``log1p(-sf)`` (``log1p(-cdf)``) of SciPy's
    where its cdf (sf) is above 1/2: SciPy's own discrete ``logcdf`` is ``log(cdf)``, which
    rounds to 0 there (``poisson.logcdf(40, 3)``), and tracegrad keeps those digits."""
    ref = getattr(sst, dist)
    with np.errstate(all="ignore"):
        want = getattr(ref, method)(*args)
        if method in ("logcdf", "logsf"):
            this, other = (ref.cdf, ref.sf) if method == "logcdf" else (ref.sf, ref.cdf)
            p = this(*args)
            want = np.where(p > 0.5, np.log1p(-other(*args)), want)
    return want


def _evaluate(fn, rows, mode):
    cols = [np.array(c, dtype=np.float64) for c in zip(*rows)]
    with np.errstate(all="ignore"):
        if mode == "eager":
            return np.asarray(fn(*cols))
        if mode == "scalar":
            return np.array([float(fn(*(float(a) for a in r))) for r in rows])
        return np.asarray(tg.jit(fn, backend=mode)(*cols))


@pytest.mark.parametrize("dist,method,mode", bounded(GROUPS, 16, key=lambda g: g[1]))
def test_edge_grid_matches_scipy(dist, method, mode):
    rows = _rows(dist, method)
    cols = [np.array(c, dtype=np.float64) for c in zip(*rows)]
    want = _scipy(dist, method, *cols)
    got = _evaluate(getattr(getattr(ts, dist), method), rows, mode)
    assert got.shape == want.shape
    differ = _compare(got, want, RTOL[mode])
    known = KNOWN.get((dist, method, mode), {})
    unexpected = [(rows[i], got[i], want[i]) for i in np.flatnonzero(differ)
                  if _key(rows[i]) not in known]
    assert not unexpected, f"{len(unexpected)} rows differ: {unexpected[:12]}"
    keys = {_key(r): i for i, r in enumerate(rows)}
    fixed = [k for k in known if not differ[keys[k]]]
    assert not fixed, f"KNOWN rows now agree with SciPy (remove them): {fixed}"


# -- operand kinds: integers, float32, broadcasting ---------------------------------------------
KIND_GROUPS = [(dist, method, kind, mode) for dist in SIGNATURES for method in _methods(dist)
               for kind in ("int", "float32", "broadcast") for mode in ("eager", "numpy", "jax")]


def _kind_operands(dist, method, kind):
    _, base = SIGNATURES[dist]
    first = Q_INTERIOR if METHODS[method] == "q" else INTERIOR[dist]
    if kind == "int":
        # whole numbers where the function takes them (not a probability)
        xs = [0, 1, 2] if METHODS[method] == "x" else [0, 1]
        params = {"norm": (1, 2), "t": (3, 1, 2), "gamma": (2, 0, 3), "chi2": (3, 0, 2),
                  "beta": (2, 3, 0, 1), "poisson": (3, 1)}[dist]
        if dist == "beta":
            xs = [0, 1]
        return (np.array(xs),) + params
    if kind == "float32":
        return (np.array(first, np.float32),) + tuple(np.float32(p) for p in base)
    # x as a column against the first parameter as a row; the rest scalars
    p0 = base[0] * np.array([0.5, 1.0, 2.0])
    return (np.array(first)[:, None], p0) + base[1:]


@pytest.mark.parametrize("dist,method,kind,mode",
                         bounded(KIND_GROUPS, 12, key=lambda g: (g[2], g[3])))
def test_integer_float32_and_broadcast_operands(dist, method, kind, mode):
    ops = _kind_operands(dist, method, kind)
    ref = getattr(getattr(sst, dist), method)
    with np.errstate(all="ignore"):
        dtype = np.asarray(ref(*ops)).dtype
        # SciPy rounds some float32 steps ((x - loc) / scale) to float32; tracegrad
        # computes in float64 from the same numbers: SciPy's value at them in float64
        want = np.asarray(ref(*(np.asarray(o, np.float64) for o in ops)))
        fn = getattr(getattr(ts, dist), method)
        got = fn(*ops) if mode == "eager" else tg.jit(fn, backend=mode)(*ops)
    got = np.asarray(got)
    assert got.shape == want.shape
    assert got.dtype == dtype, (got.dtype, dtype)
    # float32 and integer operands: SciPy computes (and answers) in float64 from the same
    # numbers, and so does tracegrad
    assert not _compare(got, want, 1e-10).any(), (got, want)


# -- derivatives at interior points ---------------------------------------------------------------
DERIV_GROUPS = [(dist, method, i, mode) for dist in SIGNATURES for method in _methods(dist)
                for i in range(1 + len(SIGNATURES[dist][1])) for mode in ("eager", "numpy", "jax")]


@pytest.mark.parametrize("dist,method,i,mode",
                         bounded(DERIV_GROUPS, 10, key=lambda g: g[1]))
def test_derivatives_match_scipy_differences_and_jax(dist, method, i, mode):
    _, base = SIGNATURES[dist]
    first = np.array(Q_INTERIOR if METHODS[method] == "q" else INTERIOR[dist])
    ops = [first] + [np.full(first.shape, p) for p in base]
    w = np.linspace(0.5, 1.5, first.size)
    fn = getattr(getattr(ts, dist), method)

    def loss(v):
        full = list(ops)
        full[i] = v
        return np.sum(w * fn(*full))

    grad = tg.grad(loss) if mode == "eager" else tg.jit(tg.grad(loss), backend=mode)
    if (dist, method, i) in NOT_DIFFERENTIABLE:
        with pytest.raises(tg.TraceError, match="betainc"):
            grad(ops[i])
        return
    got = np.asarray(grad(ops[i]))
    if (dist, method, i) in DISCRETE:
        assert np.all(got == 0.0)
        return
    twin = getattr(getattr(jst, dist, None), method, None)
    if (dist, method, i) in JAX_ONLY:
        want = jax.grad(lambda v: jax.numpy.sum(w * twin(*[v if j == i else o
                                                            for j, o in enumerate(ops)])))(
            ops[i])
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-9, atol=1e-12)
        return
    ref = getattr(getattr(sst, dist), method)
    h = 1e-6 * np.maximum(1e-2, np.abs(ops[i]))
    if dist == "beta" and i == 0:
        h = np.minimum(h, 1e-7)     # x = 1 is the support's edge: one-sided below
    up, down = list(ops), list(ops)
    up[i], down[i] = ops[i] + h, ops[i] - h
    if dist == "beta" and i == 0:
        up[i] = np.minimum(up[i], 1.0)
    fd = w * (ref(*up) - ref(*down)) / (up[i] - down[i])
    np.testing.assert_allclose(got, fd, rtol=2e-5, atol=1e-7)
    if twin is not None and not (dist == "beta" and i == 0):
        want = jax.grad(lambda v: jax.numpy.sum(w * twin(*[v if j == i else o
                                                            for j, o in enumerate(ops)])))(
            ops[i])
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-9, atol=1e-12)


# -- the examples of the issue --------------------------------------------------------------------
@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_t_cdf_derivative_at_and_near_zero_is_the_density(backend):
    xs = np.array([0.0, -0.0, 1e-300, 1e-12, -1e-9, 1e-6, 1e-3, -0.5])
    for df in (3.0, 0.3, 1e8):
        g = tg.jit(tg.grad(lambda x: np.sum(ts.t.cdf(x, df))), backend=backend)(xs)
        np.testing.assert_allclose(g, sst.t.pdf(xs, df), rtol=1e-12)
    assert float(tg.grad(lambda x: ts.t.cdf(x, 3.0))(0.0)) == pytest.approx(0.36755259694786,
                                                                           rel=1e-12)


@pytest.mark.parametrize("mode", ["eager", "numpy", "jax"])
def test_t_logpdf_at_large_df_keeps_its_digits(mode):
    """Against mpmath's log-gamma (SciPy's own t.logpdf(0, 1e4) is 2e-12 off)."""
    import mpmath
    x = np.array([0.0, 0.5, -3.0, 40.0])
    for df in (0.3, 3.0, 30.0, 49.9, 50.0, 1e4, 1e10, 1e300, INF):
        fn = (lambda v, df=df: ts.t.logpdf(v, df))
        got = fn(x) if mode == "eager" else tg.jit(fn, backend=mode)(x)
        with mpmath.workdps(40 + (int(np.log10(df)) if np.isfinite(df) and df > 1 else 0)):
            if np.isinf(df):
                want = [float(-mpmath.log(2 * mpmath.pi) / 2 - mpmath.mpf(v) ** 2 / 2) for v in x]
            else:
                n = mpmath.mpf(df)
                c = mpmath.loggamma((n + 1) / 2) - mpmath.loggamma(n / 2) - mpmath.log(n * mpmath.pi) / 2
                want = [float(c - (n + 1) / 2 * mpmath.log1p(mpmath.mpf(v) ** 2 / n)) for v in x]
        rtol = 1e-14 if mode != "jax" or df > 50 else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol)
    assert ts.t.logpdf(0.0, 1e10) == pytest.approx(sst.t.logpdf(0.0, 1e10), rel=1e-15)


@pytest.mark.parametrize("mode", ["eager", "numpy", "jax"])
def test_log_cdf_and_sf_relative_in_both_tails(mode):
    cases = [("gamma", "logcdf", (40.0, 0.5)), ("gamma", "logsf", (1e-20, 0.5)),
             ("chi2", "logcdf", (200.0, 3.0)), ("chi2", "logsf", (1e-8, 3.0)),
             ("t", "logcdf", (60.0, 3.0)), ("t", "logsf", (-60.0, 3.0)),
             ("t", "logcdf", (-60.0, 3.0)), ("beta", "logcdf", (0.999, 2.0, 3.0)),
             ("beta", "logsf", (1e-6, 2.0, 3.0)), ("norm", "logcdf", (9.0,)),
             ("norm", "logsf", (-9.0,)), ("poisson", "logcdf", (40.0, 3.0)),
             ("poisson", "logsf", (0.0, 1e-9))]
    if mode == "jax":
        cases = bounded(cases, 4)      # XLA compiles each in about 0.2 s
    for dist, method, args in cases:
        want = float(_scipy(dist, method, *args))
        fn = getattr(getattr(ts, dist), method)
        got = fn(*args) if mode == "eager" else tg.jit(fn, backend=mode)(*args)
        assert want != 0.0
        assert float(got) == pytest.approx(want, rel=1e-10, abs=0), (dist, method, args)


def test_nan_and_invalid_parameters_in_plain_python_numbers():
    assert np.isnan(ts.beta.cdf(NAN, 2, 3)) and np.isnan(ts.poisson.cdf(NAN, 2))
    assert np.isnan(ts.gamma.logpdf(1, -1)) and np.isnan(ts.norm.logpdf(1, 0, 0))
    assert np.isnan(ts.norm.cdf(1, 0, 0)) and np.isnan(ts.t.sf(1, 3, 0, 0))
    assert np.isnan(ts.beta.logpdf(0.5, 2, 3, 0, 0)) and np.isnan(ts.chi2.sf(1, 0))
    assert type(ts.norm.cdf(1)) is np.float64


# -- dirichlet and multivariate_normal: explicit cases ------------------------------------------
SIMPLEX = np.array([[0.2, 0.5], [0.3, 0.1], [0.5, 0.4]])
ALPHA = np.array([1.5, 2.0, 3.5])
_A = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]])
MEAN = np.array([0.2, -0.1, 0.4])
PTS = np.array([[0.1, 0.2, 0.3], [1.0, -2.0, 0.5]])
_DIRICHLET = [  # (x, alpha), and whether SciPy's error (if any) comes from the values
    ((SIMPLEX[:, 0], ALPHA), False), ((SIMPLEX, ALPHA), False), ((SIMPLEX[:2], ALPHA), False),
    ((SIMPLEX[:2, 1], ALPHA), False), ((np.array([0.0, 0.4, 0.6]), ALPHA), False),
    ((np.array([0.0, 0.4, 0.6]), np.array([0.5, 2.0, 3.0])), True),
    ((np.array([0.2, 0.3, 0.6]), ALPHA), True), ((np.array([-0.2, 0.7, 0.5]), ALPHA), True),
    ((np.array([1.2, -0.1, -0.1]), ALPHA), True), ((np.array([NAN, 0.5, 0.5]), ALPHA), False),
    ((SIMPLEX[:, 0], np.array([1.5, NAN, 2.0])), False),
    ((SIMPLEX[:, 0], np.array([1.5, -1.0, 2.0])), True),
    ((SIMPLEX[:, 0], np.array([1.5, 0.0, 2.0])), True),
    ((SIMPLEX * np.array([1.0, 1.1]), ALPHA), True),
    ((SIMPLEX[:, 0], ALPHA[:2]), False), ((SIMPLEX[:, 0], ALPHA[None]), False),
    ((np.ones(5) / 5, ALPHA), False), ((np.array([0.5, 0.5, 1e-300]), ALPHA), False),
]
_MVN = [  # (args, whether SciPy's error comes from the values)
    ((PTS, MEAN, _A), False), ((PTS[0], MEAN, _A), False), ((PTS[0], MEAN, 2.0), False),
    ((np.array([NAN, 0.0, 0.0]), MEAN, _A), False), ((np.array([INF, 0.0, 0.0]), MEAN, _A), False),
    ((PTS, np.array([0.0, NAN, 0.0]), _A), False), ((PTS, MEAN, np.array([1.0, 2.0, 0.5])), False),
    ((np.array([0.3, -1.0]), None, 1.0), False), ((0.5, None, 2.0), False),
    # SciPy refuses the covariance; traced, a matrix's Cholesky factor fails ("raises"),
    # a negative or zero variance gives NaN
    ((PTS, MEAN, np.diag([1.0, 2.0, 0.0])), "raises"), ((PTS, MEAN, -np.eye(3)), "raises"),
    ((PTS, MEAN, np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])), "raises"),
    ((PTS, MEAN, np.array([1.0, -1.0, 2.0])), True), ((PTS, MEAN, 0.0), True),
    ((PTS, MEAN, np.diag([1.0, NAN, 2.0])), True),
]
_MVN_ENTROPY = [((MEAN, _A), False), ((MEAN, np.array([1.0, 2.0, 0.5])), False),
                ((None, 2.0), False), ((MEAN, np.diag([1.0, 2.0, 0.0])), False),
                ((MEAN, -np.eye(3)), "raises"), ((MEAN, np.array([1.0, -1.0, 2.0])), True),
                ((MEAN, np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])), True)]
EXPLICIT = {
    "dirichlet": {"logpdf": _DIRICHLET, "pdf": _DIRICHLET},
    "multivariate_normal": {"logpdf": _MVN, "pdf": _MVN, "entropy": _MVN_ENTROPY},
}
EXPLICIT_CASES = [(dist, method, n, mode) for dist, table in EXPLICIT.items()
                  for method, cases in table.items() for n in range(len(cases))
                  for mode in ("eager", "numpy", "jax")]


@pytest.mark.parametrize("dist,method,n,mode",
                         bounded(EXPLICIT_CASES, 16, key=lambda c: (c[0], c[3])))
def test_explicit_cases_match_scipy(dist, method, n, mode):
    """Plain values: SciPy's values and exceptions. Traced ones (``tg.jit``): SciPy's
    values, its exceptions where they come from the shapes, and NaN where they come from
    the values, which a compiled function cannot branch on (docs/guarantees.md)."""
    args, from_values = EXPLICIT[dist][method][n]
    try:
        with np.errstate(all="ignore"):
            want = np.asarray(getattr(getattr(sst, dist), method)(*args))
        error = None
    except Exception as e:     # noqa: BLE001 - SciPy's exception is the reference
        error = type(e)
    fn = getattr(getattr(ts, dist), method)
    traced = [k for k, a in enumerate(args) if a is not None]

    def call():
        if mode == "eager":
            return fn(*args)
        return tg.jit(lambda *xs: fn(*[xs[traced.index(k)] if k in traced else None
                                      for k in range(len(args))]),
                      backend=mode)(*[args[k] for k in traced])

    if error is not None and (mode == "eager" or not from_values):
        with pytest.raises(error):
            call()
        return
    if error is not None and from_values == "raises":
        with pytest.raises((error, tg.TraceError)):
            call()
        return
    with np.errstate(all="ignore"):
        got = np.asarray(call())
    if error is not None and dist == "multivariate_normal":
        assert np.all(np.isnan(got)), got      # the covariance: every point
        return
    if error is not None:
        # NaN at each point SciPy refuses (the points are the columns of a 2-d x)
        x, rest = args[0], args[1:]
        points = [x] if np.ndim(x) == 1 else list(np.transpose(x))
        for k, p in enumerate(points):
            try:
                with np.errstate(all="ignore"):
                    value = getattr(getattr(sst, dist), method)(p, *rest)
            except ValueError:
                value = NAN
            assert not _compare(np.ravel(got)[k], value, 1e-10), (k, got, value)
        return
    assert got.shape == want.shape
    assert not _compare(got, want, 1e-10).any(), (got, want)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_dirichlet_off_the_simplex_raises_on_plain_values_and_is_nan_on_traced_ones(backend):
    """docs/guarantees.md: SciPy raises ValueError; a compiled function gives NaN at each
    point it would refuse."""
    x = np.array([[0.2, 0.2, 0.0], [0.3, 0.3, 0.4], [0.5, 0.6, 0.6]])
    alpha = np.array([0.5, 2.0, 3.0])
    with pytest.raises(ValueError) as scipy_error:
        sst.dirichlet.logpdf(x, alpha)
    with pytest.raises(ValueError) as ours:
        ts.dirichlet.logpdf(x, alpha)
    assert str(ours.value) == str(scipy_error.value)
    got = tg.jit(ts.dirichlet.logpdf, backend=backend)(x, alpha)
    assert got[0] == pytest.approx(sst.dirichlet.logpdf(x[:, 0], alpha), rel=1e-10)
    assert np.isnan(got[1]) and np.isnan(got[2])      # sum 1.1; x = 0 with alpha < 1
    # eager tracing too (the values are known there, but SciPy's check is not recorded)
    with np.errstate(all="ignore"):
        value, _ = tg.value_and_grad(lambda a: np.sum(ts.dirichlet.logpdf(x, a)))(alpha)
    assert np.isnan(value)
    with pytest.raises(ValueError, match="one entry fewer"):
        tg.jit(ts.dirichlet.logpdf, backend=backend)(x[:1], alpha)
