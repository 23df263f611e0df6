"""Real library code, unchanged, differentiated by tracegrad.

Each case calls a library's own function (SciPy, scikit-learn, statsmodels) on traced
values, exactly as the library ships it, and compares tracegrad's derivative with the
derivative the library's authors wrote by hand (``rosen_der``, ``jvp``, ``score``,
``hessian``, ``eval_gradient=True``, a loss's ``gradient``, a distribution's ``pdf`` as
the derivative of its ``cdf``, ...) and with central finite differences.

Every case is run three ways: traced (``tg.grad``/``tg.jacobian``/``tg.hessian``), and
under ``tg.jit`` with the NumPy and the JAX backends. A case's status is

- ``agree``: it runs, and tracegrad, the authors and finite differences agree (1e-6);
- ``tg differs``: tracegrad disagrees with the authors; the note says which side finite
  differences take (``FD sides with tg`` means the authors' derivative is wrong);
- ``does not run``: the exception (type and first line of the message);
- ``partial``: the traced call agrees but a ``tg.jit`` backend fails or disagrees.

    python benchmarks/real_code_survey.py               # table and summary
    python benchmarks/real_code_survey.py --only sklearn --verbose
    python benchmarks/real_code_survey.py --json out.json

The script imports the ``tracegrad`` of this working tree (the repository root goes first
on ``sys.path``). Libraries that are not installed give no cases (a line says so).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tracegrad as tg  # noqa: E402

TOL = 1e-6          # tracegrad vs the authors, relative to the largest entry
FD_TOL = 1e-5       # either side vs central differences (floor 1: their error is absolute)
CALL_LIMIT_S = 60   # one mode of one case


@dataclass
class Case:
    """One derivative of one library function.

    ``f`` is the library's function of the differentiated array ``x`` (the rest of its
    arguments closed over); ``kind`` is ``grad`` (scalar ``f``), ``jacobian`` or
    ``hessian``; ``ref`` is the authors' derivative as a function of ``x``. For a Hessian,
    finite differences differentiate ``fd_grad`` (the authors' gradient, where they ship
    one) or, without it, ``f`` twice."""
    group: str
    name: str
    f: Callable
    x: Any
    ref: Callable
    kind: str = "grad"
    fd_grad: Callable | None = None
    ref_name: str = ""
    notes: list = field(default_factory=list)


# --------------------------------------------------------------------------- helpers


def rel_err(a, b, floor=0.0):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        return np.inf
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        same = np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(
            a[~np.isnan(a)], b[~np.isnan(b)])
        if not same:
            return np.inf
        a, b = np.nan_to_num(a), np.nan_to_num(b)
    scale = max(float(np.max(np.abs(b), initial=0.0)), floor) or 1.0
    return float(np.max(np.abs(a - b), initial=0.0)) / scale


def _step(x, h):
    return h * max(1.0, float(np.max(np.abs(x), initial=0.0)))


def fd_jacobian(f, x, h=1e-6):
    """Central differences of ``f`` (any output shape) at ``x``: out.shape + x.shape."""
    x = np.asarray(x, dtype=float)
    h = _step(x, h)
    cols = []
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        cols.append((np.asarray(f(x + e), dtype=float) - np.asarray(f(x - e), dtype=float)) / (2 * h))
    out = np.stack(cols, axis=-1)
    return out.reshape(out.shape[:-1] + x.shape)


def fd_derivative(case):
    if case.kind in ("grad", "jacobian"):
        return fd_jacobian(case.f, case.x)
    if case.fd_grad is not None:
        return fd_jacobian(case.fd_grad, case.x)
    return fd_jacobian(lambda y: fd_jacobian(case.f, y, h=1e-4), case.x, h=1e-4)


def transform(kind):
    return {"grad": tg.grad, "jacobian": tg.jacobian, "hessian": tg.hessian}[kind]


MODES = {
    "traced": lambda c: transform(c.kind)(c.f),
    "jit-numpy": lambda c: tg.jit(transform(c.kind)(c.f)),
    "jit-jax": lambda c: tg.jit(transform(c.kind)(c.f), backend="jax"),
}


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds):
    if not hasattr(signal, "SIGALRM"):
        yield
        return

    def on_alarm(signum, frame):
        raise _Timeout(f"more than {seconds} s")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def first_line(e):
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:160] if text else ''}"


def run_case(case, modes):
    """Runs ``case`` in every mode; returns a dict with the status, the note and the
    errors measured."""
    res = {"group": case.group, "name": case.name, "kind": case.kind, "modes": {}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ref = np.asarray(case.ref(np.array(case.x, copy=True)), dtype=float)
            fd = fd_derivative(case)
        except Exception as e:  # noqa: BLE001 - the survey records every failure
            res.update(status="setup fails", note=first_line(e))
            return res
        res["ref_vs_fd"] = rel_err(ref, fd, floor=1.0)
        for mode in modes:
            try:
                with time_limit(CALL_LIMIT_S):
                    d = np.asarray(MODES[mode](case)(np.array(case.x, copy=True)))
            except Exception as e:  # noqa: BLE001
                res["modes"][mode] = {"error": first_line(e)}
                continue
            res["modes"][mode] = {"vs_ref": rel_err(d, ref), "vs_fd": rel_err(d, fd, floor=1.0),
                                  "shape": list(d.shape)}
    res["status"], res["note"] = classify(res)
    return res


def _mode_ok(m):
    return "error" not in m and m["vs_ref"] <= TOL and m["vs_fd"] <= FD_TOL


def classify(res):
    modes = res["modes"]
    traced = modes.get("traced", next(iter(modes.values())))
    if "error" in traced:
        return "does not run", traced["error"]
    if not (traced["vs_ref"] <= TOL):
        tg_fd, ref_fd = traced["vs_fd"], res["ref_vs_fd"]
        if tg_fd <= FD_TOL < ref_fd:
            side = "FD sides with tg"
        elif ref_fd <= FD_TOL < tg_fd:
            side = "FD sides with the authors"
        else:
            side = "FD inconclusive"
        return "tg differs", (f"{side}: tg vs authors {traced['vs_ref']:.1e}, tg vs FD {tg_fd:.1e}, "
                              f"authors vs FD {ref_fd:.1e}")
    if traced["vs_fd"] > FD_TOL:
        return "tg differs", f"agrees with the authors but not with FD ({traced['vs_fd']:.1e})"
    bad = [(k, m) for k, m in modes.items() if not _mode_ok(m)]
    if not bad:
        return "agree", f"worst vs authors {max(m['vs_ref'] for m in modes.values()):.1e}"
    k, m = bad[0]
    if "error" in m:
        return "partial", f"{k}: {m['error']}"
    return "partial", f"{k}: vs authors {m['vs_ref']:.1e}"


# --------------------------------------------------------------------------- cases


def scipy_optimize_cases():
    import scipy.optimize as so
    from scipy.optimize import _tstutils as ts

    x = np.array([0.3, 1.2, -0.5, 0.8, 1.1])
    p = np.array([0.5, -1.0, 2.0, 0.25, -0.75])
    yield Case("scipy.optimize", "rosen (grad)", so.rosen, x, so.rosen_der, ref_name="rosen_der")
    yield Case("scipy.optimize", "rosen (hessian)", so.rosen, x, so.rosen_hess, "hessian",
               fd_grad=so.rosen_der, ref_name="rosen_hess")
    yield Case("scipy.optimize", "rosen_der (jacobian)", so.rosen_der, x, so.rosen_hess, "jacobian",
               ref_name="rosen_hess")
    yield Case("scipy.optimize", "p . rosen_der (grad)", lambda y: np.dot(p, so.rosen_der(y)), x,
               lambda y: so.rosen_hess_prod(y, p), ref_name="rosen_hess_prod")
    # the root-finding test problems SciPy ships with their first and second derivatives
    seen = set()
    for f, fp, fpp, args, _bracket, _smooth, x0, _root, _id in ts._APS_TESTS:
        if f.__name__ in seen or fp is None:
            continue
        seen.add(f.__name__)
        x0 = np.float64(x0)
        yield Case("scipy.optimize._tstutils", f"{f.__name__}{args} (d/dx)",
                   lambda y, f=f, a=args: f(y, *a), x0, lambda y, fp=fp, a=args: fp(y, *a),
                   ref_name=fp.__name__)
        if fpp is not None:
            yield Case("scipy.optimize._tstutils", f"{f.__name__}{args} (d2/dx2)",
                       lambda y, f=f, a=args: f(y, *a), x0,
                       lambda y, fpp=fpp, a=args: np.float64(fpp(y, *a)), "hessian",
                       fd_grad=lambda y, fp=fp, a=args: fp(y, *a), ref_name=fpp.__name__)


def _elementwise(group, name, f, x, ref, ref_name):
    """d/dx of an elementwise function: the gradient of its sum."""
    return Case(group, name, lambda y: np.sum(f(y)), x, ref, ref_name=ref_name)


def scipy_special_cases():
    import mpmath
    import scipy.special as sp

    g = "scipy.special"
    pos = np.array([0.7, 1.3, 2.2, 3.9])
    unit = np.array([0.1, 0.35, 0.6, 0.85])
    real = np.array([-1.7, -0.4, 0.3, 1.9])
    v = 1.5
    yield _elementwise(g, "jv", lambda y: sp.jv(v, y), pos, lambda y: sp.jvp(v, y), "jvp")
    yield _elementwise(g, "yv", lambda y: sp.yv(v, y), pos, lambda y: sp.yvp(v, y), "yvp")
    yield _elementwise(g, "kv", lambda y: sp.kv(v, y), pos, lambda y: sp.kvp(v, y), "kvp")
    yield _elementwise(g, "iv", lambda y: sp.iv(v, y), pos, lambda y: sp.ivp(v, y), "ivp")
    yield _elementwise(g, "jv (2nd derivative via jvp)", lambda y: sp.jvp(v, y), pos,
                       lambda y: sp.jvp(v, y, 2), "jvp(n=2)")
    yield _elementwise(g, "kve", lambda y: sp.kve(v, y), pos,
                       lambda y: sp.kve(v, y) + sp.kvp(v, y) * np.exp(y), "kve + kvp*exp")
    for fn in ("spherical_jn", "spherical_yn", "spherical_in", "spherical_kn"):
        f = getattr(sp, fn)
        yield _elementwise(g, fn, lambda y, f=f: f(2, y), pos, lambda y, f=f: f(2, y, derivative=True),
                           f"{fn}(derivative=True)")
    yield _elementwise(g, "gammaln", sp.gammaln, pos, sp.digamma, "digamma")
    yield _elementwise(g, "digamma", sp.digamma, pos, lambda y: sp.polygamma(1, y), "polygamma(1)")
    yield _elementwise(g, "polygamma(1)", lambda y: sp.polygamma(1, y), pos,
                       lambda y: sp.polygamma(2, y), "polygamma(2)")
    yield _elementwise(g, "gamma", sp.gamma, pos, lambda y: sp.gamma(y) * sp.digamma(y),
                       "gamma*digamma")
    yield _elementwise(g, "loggamma", sp.loggamma, pos, sp.digamma, "digamma")
    yield _elementwise(g, "erf", sp.erf, real, lambda y: 2 / np.sqrt(np.pi) * np.exp(-y**2), "closed form")
    yield _elementwise(g, "erfc", sp.erfc, real, lambda y: -2 / np.sqrt(np.pi) * np.exp(-y**2),
                       "closed form")
    yield _elementwise(g, "ndtr", sp.ndtr, real, lambda y: np.exp(-y**2 / 2) / np.sqrt(2 * np.pi),
                       "normal pdf")
    yield _elementwise(g, "log_ndtr", sp.log_ndtr, real,
                       lambda y: np.exp(-y**2 / 2 - sp.log_ndtr(y)) / np.sqrt(2 * np.pi), "pdf/cdf")
    yield _elementwise(g, "ndtri", sp.ndtri, unit,
                       lambda y: np.sqrt(2 * np.pi) * np.exp(sp.ndtri(y)**2 / 2), "1/pdf(ndtri)")
    yield _elementwise(g, "expit", sp.expit, real, lambda y: sp.expit(y) * sp.expit(-y),
                       "expit*(1-expit)")
    yield _elementwise(g, "log_expit", sp.log_expit, real, lambda y: sp.expit(-y), "expit(-x)")
    yield _elementwise(g, "logit", sp.logit, unit, lambda y: 1 / (y * (1 - y)), "closed form")
    yield _elementwise(g, "entr", sp.entr, pos, lambda y: -np.log(y) - 1, "closed form")
    yield _elementwise(g, "xlogy", lambda y: sp.xlogy(y, 2.5), pos, lambda y: np.log(2.5) + 0 * y,
                       "log(y)")
    yield _elementwise(g, "gammainc (in x)", lambda y: sp.gammainc(2.5, y), pos,
                       lambda y: y**1.5 * np.exp(-y) / sp.gamma(2.5), "integrand")
    yield _elementwise(g, "betainc (in x)", lambda y: sp.betainc(2.0, 3.0, y), unit,
                       lambda y: y * (1 - y)**2 / sp.beta(2.0, 3.0), "integrand")
    yield _elementwise(g, "dawsn", sp.dawsn, real, lambda y: 1 - 2 * y * sp.dawsn(y), "1-2x dawsn")
    yield _elementwise(g, "airy Ai", lambda y: sp.airy(y)[0], real, lambda y: sp.airy(y)[1], "airy()[1]")
    yield _elementwise(g, "airy Bi", lambda y: sp.airy(y)[2], real, lambda y: sp.airy(y)[3], "airy()[3]")
    yield _elementwise(g, "pbdv", lambda y: sp.pbdv(1.5, y)[0], real, lambda y: sp.pbdv(1.5, y)[1],
                       "pbdv()[1]")
    yield _elementwise(g, "sici (Si)", lambda y: sp.sici(y)[0], pos, lambda y: np.sin(y) / y, "sin(x)/x")
    yield _elementwise(g, "fresnel (S)", lambda y: sp.fresnel(y)[0], real,
                       lambda y: np.sin(np.pi * y**2 / 2), "integrand")
    yield _elementwise(g, "zeta (in x)", lambda y: sp.zeta(y + 1.5), pos,
                       lambda y: np.array([float(mpmath.zeta(s + 1.5, 1, 1)) for s in y]),
                       "mpmath zeta'")
    yield Case(g, "logsumexp", sp.logsumexp, real, sp.softmax, ref_name="softmax")
    yield Case(g, "logsumexp (large inputs)", sp.logsumexp, real * 400.0, sp.softmax, ref_name="softmax")
    yield Case(g, "softmax (jacobian)", sp.softmax, real,
               lambda y: np.diag(sp.softmax(y)) - np.outer(sp.softmax(y), sp.softmax(y)), "jacobian",
               ref_name="diag(s) - s s^T")
    yield Case(g, "log_softmax (jacobian)", sp.log_softmax, real,
               lambda y: np.eye(len(y)) - sp.softmax(y)[None, :], "jacobian", ref_name="I - 1 s^T")


def scipy_stats_cases():
    """A distribution's ``pdf`` is its authors' derivative of its ``cdf``."""
    from scipy import stats

    g = "scipy.stats"
    dists = [("norm", stats.norm(), np.array([-1.2, 0.1, 0.9])),
             ("t(df=4)", stats.t(4.0), np.array([-1.2, 0.1, 0.9])),
             ("logistic", stats.logistic(), np.array([-1.2, 0.1, 0.9])),
             ("cauchy", stats.cauchy(), np.array([-1.2, 0.1, 0.9])),
             ("expon", stats.expon(), np.array([0.2, 0.9, 1.7])),
             ("gamma(a=2.5)", stats.gamma(2.5), np.array([0.2, 0.9, 1.7])),
             ("beta(2,3)", stats.beta(2.0, 3.0), np.array([0.2, 0.5, 0.7]))]
    for name, d, x in dists:
        yield _elementwise(g, f"{name}.cdf", d.cdf, x, d.pdf, "pdf")
    yield _elementwise(g, "norm.logpdf", stats.norm.logpdf, np.array([-1.2, 0.1, 0.9]), lambda y: -y,
                       "closed form")


def sklearn_loss_cases():
    from sklearn._loss import loss as L

    g = "sklearn._loss"
    rng = np.random.default_rng(0)
    n = 6
    raw = rng.normal(size=n) * 0.5
    cases = [("HalfSquaredError", L.HalfSquaredError(), rng.normal(size=n)),
             ("AbsoluteError", L.AbsoluteError(), rng.normal(size=n) + 3),
             ("PinballLoss(0.3)", L.PinballLoss(quantile=0.3), rng.normal(size=n) + 3),
             ("HuberLoss", L.HuberLoss(quantile=0.5), rng.normal(size=n)),
             ("HalfPoissonLoss", L.HalfPoissonLoss(), rng.poisson(2.0, size=n).astype(float)),
             ("HalfGammaLoss", L.HalfGammaLoss(), rng.gamma(2.0, size=n)),
             ("HalfTweedieLoss(1.5)", L.HalfTweedieLoss(power=1.5), rng.gamma(2.0, size=n)),
             ("HalfTweedieLossIdentity(1.5)", L.HalfTweedieLossIdentity(power=1.5), rng.gamma(2.0, size=n)),
             ("HalfBinomialLoss", L.HalfBinomialLoss(), (rng.random(n) < 0.5).astype(float)),
             ("ExponentialLoss", L.ExponentialLoss(), (rng.random(n) < 0.5).astype(float))]
    for name, loss, y in cases:
        r = np.abs(raw) + 0.5 if "Identity" in name else raw
        yield Case(g, f"{name}.loss", lambda z, lo=loss, y=y: np.sum(lo.loss(y, z)), r,
                   lambda z, lo=loss, y=y: lo.gradient(y, z), ref_name="gradient")
        if name in ("HalfSquaredError", "HalfPoissonLoss", "HalfBinomialLoss"):
            yield Case(g, f"{name}.loss (hessian)", lambda z, lo=loss, y=y: np.sum(lo.loss(y, z)), r,
                       lambda z, lo=loss, y=y: np.diag(lo.gradient_hessian(y, z)[1]), "hessian",
                       fd_grad=lambda z, lo=loss, y=y: lo.gradient(y, z),
                       ref_name="gradient_hessian")
    # the array-API versions are written in Python on the namespace ``xp`` (NumPy's here)
    from sklearn.utils._array_api import get_namespace
    xp, _ = get_namespace(raw)
    for name in ("HalfBinomialLossArrayAPI", "HalfPoissonLossArrayAPI"):
        if hasattr(L, name):
            loss = getattr(L, name)(xp=xp, device="cpu")
            y = (rng.random(n) < 0.5).astype(float) if "Binomial" in name else rng.poisson(2.0, n) * 1.0
            yield Case(g, f"{name}.loss", lambda z, lo=loss, y=y: np.sum(lo.loss(y, z)), raw,
                       lambda z, lo=loss, y=y: lo.gradient(y, z), ref_name="gradient")
    k = 3
    ym = rng.integers(0, k, size=n).astype(float)
    rawm = rng.normal(size=(n, k))
    for name, mloss in [("HalfMultinomialLoss", L.HalfMultinomialLoss(n_classes=k)),
                        ("HalfMultinomialLossArrayAPI",
                         getattr(L, "HalfMultinomialLossArrayAPI", None))]:
        if mloss is None:
            continue
        if not isinstance(mloss, L.BaseLoss):
            mloss = mloss(n_classes=k, xp=xp, device="cpu")
        yield Case(g, f"{name}.loss", lambda z, lo=mloss: np.sum(lo.loss(ym, z)), rawm,
                   lambda z, lo=mloss: lo.gradient(ym, z), ref_name="gradient")


def sklearn_model_cases():
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    rng = np.random.default_rng(1)
    X = rng.normal(size=(8, 3))
    for est_cls, activation, y in [
        (MLPRegressor, "identity", rng.normal(size=8)),
        (MLPRegressor, "relu", rng.normal(size=8)),
        (MLPRegressor, "tanh", rng.normal(size=8)),
        (MLPRegressor, "logistic", rng.normal(size=8)),
        (MLPClassifier, "tanh", rng.integers(0, 2, size=8)),
        (MLPClassifier, "tanh", rng.integers(0, 3, size=8)),
    ]:
        case = _mlp_case(est_cls, activation, X, y)
        if case is not None:
            yield case

    from sklearn.linear_model._huber import _huber_loss_and_gradient
    yh = X @ np.array([1.0, -2.0, 0.5]) + rng.standard_t(2, size=8)
    wh = np.array([0.8, -1.5, 0.3, 0.1, 1.2])   # coef, intercept, sigma
    sw = np.ones(8)
    yield Case("sklearn.linear_model", "_huber_loss_and_gradient",
               lambda w: _huber_loss_and_gradient(w, X, yh, 1.35, 1e-3, sw)[0], wh,
               lambda w: _huber_loss_and_gradient(w, X, yh, 1.35, 1e-3, sw)[1], ref_name="its gradient")

    from sklearn._loss import loss as L
    from sklearn.linear_model._linear_loss import LinearModelLoss
    from sklearn.utils._array_api import get_namespace
    xp, _ = get_namespace(X)
    ybin = (rng.random(8) < 0.5).astype(float)
    for name, base in [("HalfBinomialLoss", L.HalfBinomialLoss()),
                       ("HalfBinomialLossArrayAPI", L.HalfBinomialLossArrayAPI(xp=xp, device="cpu"))]:
        lml = LinearModelLoss(base_loss=base, fit_intercept=True)
        yield Case("sklearn.linear_model", f"LinearModelLoss({name}).loss",
                   lambda c, m=lml: m.loss(c, X, ybin, l2_reg_strength=0.1), wh[:4],
                   lambda c, m=lml: m.gradient(c, X, ybin, l2_reg_strength=0.1), ref_name="gradient")

    from sklearn.manifold._t_sne import _kl_divergence
    ns, nc = 5, 2
    P = rng.random(ns * (ns - 1) // 2)
    P /= P.sum() * 2
    emb = rng.normal(size=ns * nc)
    yield Case("sklearn.manifold", "_kl_divergence (t-SNE)",
               lambda e: _kl_divergence(e, P, 1, ns, nc)[0], emb,
               lambda e: _kl_divergence(e, P, 1, ns, nc)[1], ref_name="its gradient")

    from sklearn.neighbors import NeighborhoodComponentsAnalysis
    nca = NeighborhoodComponentsAnalysis(n_components=2)
    nca.n_iter_ = 1
    labels = np.array([0, 1, 0, 1, 2, 2, 0, 1])
    mask = labels[:, None] == labels[None, :]
    T = rng.normal(size=2 * 3) * 0.5
    yield Case("sklearn.neighbors", "NCA._loss_grad_lbfgs",
               lambda t: nca._loss_grad_lbfgs(t, X, mask)[0], T,
               lambda t: nca._loss_grad_lbfgs(t, X, mask)[1], ref_name="its gradient")


def _mlp_case(est_cls, activation, X, y):
    from itertools import pairwise

    from sklearn.neural_network._multilayer_perceptron import _pack

    est = est_cls(hidden_layer_sizes=(4,), activation=activation, solver="lbfgs", max_iter=1,
                  alpha=1e-2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    Xv = X.astype(float)
    yy = y
    if est_cls.__name__ == "MLPClassifier":
        yy = est._label_binarizer.transform(y).astype(float)
    yy = np.asarray(yy, dtype=float)
    if yy.ndim == 1:
        yy = yy.reshape(-1, 1)
    units = [X.shape[1], 4, yy.shape[1]]

    def call(packed):
        activations = [Xv] + [None] * (len(units) - 1)
        deltas = [None] * (len(activations) - 1)
        coef_grads = [np.empty((a, b)) for a, b in pairwise(units)]
        intercept_grads = [np.empty(b) for b in units[1:]]
        return est._loss_grad_lbfgs(packed, Xv, yy, None, activations, deltas, coef_grads,
                                    intercept_grads)

    packed = _pack(est.coefs_, est.intercepts_)
    label = f"{est_cls.__name__}({activation}, {yy.shape[1]} out)._loss_grad_lbfgs"
    return Case("sklearn.neural_network", label, lambda p: call(p)[0], packed, lambda p: call(p)[1],
                ref_name="_backprop")


def sklearn_gp_cases():
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process import kernels as K

    g = "sklearn.gaussian_process"
    rng = np.random.default_rng(2)
    X = rng.normal(size=(5, 2))
    W = rng.normal(size=(5, 5))
    kernels = [("RBF", K.RBF(1.3)),
               ("RBF (anisotropic)", K.RBF([0.8, 1.7])),
               ("Matern(0.5)", K.Matern(1.1, nu=0.5)),
               ("Matern(1.5)", K.Matern(1.1, nu=1.5)),
               ("Matern(2.5)", K.Matern(1.1, nu=2.5)),
               ("RationalQuadratic", K.RationalQuadratic(1.2, 0.7)),
               ("ExpSineSquared", K.ExpSineSquared(1.2, 2.5)),
               ("DotProduct", K.DotProduct(0.6)),
               ("WhiteKernel", K.WhiteKernel(0.3)),
               ("ConstantKernel*RBF", K.ConstantKernel(2.0) * K.RBF(1.3)),
               ("RBF+WhiteKernel", K.RBF(1.3) + K.WhiteKernel(0.2)),
               ("RBF**2", K.Exponentiation(K.RBF(1.3), 2.0))]
    for name, kern in kernels:
        theta = kern.theta.copy()
        yield Case(g, f"{name}(X) via clone_with_theta",
                   lambda th, k=kern: np.sum(W * k.clone_with_theta(th)(X)), theta,
                   lambda th, k=kern: np.einsum("ij,ijk->k", W,
                                                k.clone_with_theta(th)(X, eval_gradient=True)[1]),
                   ref_name="eval_gradient=True")
    y = np.sin(X[:, 0]) + 0.1 * X[:, 1]
    gpr = GaussianProcessRegressor(K.ConstantKernel(1.0) * K.RBF(1.0) + K.WhiteKernel(0.1),
                                   optimizer=None).fit(X, y)
    theta = gpr.kernel_.theta.copy()
    yield Case(g, "GaussianProcessRegressor.log_marginal_likelihood",
               lambda th: gpr.log_marginal_likelihood(th), theta,
               lambda th: gpr.log_marginal_likelihood(th, eval_gradient=True)[1],
               ref_name="eval_gradient=True")


def statsmodels_cases():
    import statsmodels.api as sm
    from statsmodels.discrete.discrete_model import MNLogit

    g = "statsmodels"
    rng = np.random.default_rng(3)
    n = 30
    X = sm.add_constant(rng.normal(size=(n, 2)))
    beta = np.array([0.3, -0.6, 0.4])
    eta = X @ beta
    ybin = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    ycount = rng.poisson(np.exp(eta)).astype(float)
    ypos = rng.gamma(2.0, np.exp(eta) / 2.0)
    ynorm = eta + rng.normal(size=n)
    b0 = beta + 0.05
    models = [("Logit", sm.Logit(ybin, X), b0),
              ("Probit", sm.Probit(ybin, X), b0),
              ("Poisson", sm.Poisson(ycount, X), b0),
              ("NegativeBinomial(nb2)", sm.NegativeBinomial(ycount, X), np.r_[b0, 0.5]),
              ("NegativeBinomial(nb1)", sm.NegativeBinomial(ycount, X, loglike_method="nb1"), np.r_[b0, 0.5]),
              ("NegativeBinomial(geometric)", sm.NegativeBinomial(ycount, X, loglike_method="geometric"), b0),
              ("GeneralizedPoisson", sm.GeneralizedPoisson(ycount, X), np.r_[b0, 0.1]),
              ("MNLogit", MNLogit(np.minimum(ycount, 2), X), np.array([0.1, 0.2, -0.3, 0.4, -0.1, 0.2])),
              ("OLS", sm.OLS(ynorm, X), b0)]
    for name, model, p in models:
        yield Case(g, f"{name}.loglike (grad)", model.loglike, p, model.score, ref_name="score")
        yield Case(g, f"{name}.loglike (hessian)", model.loglike, p, model.hessian, "hessian",
                   fd_grad=model.score, ref_name="hessian")
    fams = [("Gaussian", sm.families.Gaussian(), ynorm),
            ("Binomial", sm.families.Binomial(), ybin),
            ("Poisson", sm.families.Poisson(), ycount),
            ("Gamma(log)", sm.families.Gamma(sm.families.links.Log()), ypos)]
    for name, fam, y in fams:
        model = sm.GLM(y, X, family=fam)
        yield Case(g, f"GLM({name}).loglike (grad)", lambda b, m=model: m.loglike(b, scale=1.0), b0,
                   lambda b, m=model: m.score(b, scale=1.0), ref_name="score")
        yield Case(g, f"GLM({name}).loglike (hessian)", lambda b, m=model: m.loglike(b, scale=1.0), b0,
                   lambda b, m=model: m.hessian(b, scale=1.0), "hessian",
                   fd_grad=lambda b, m=model: m.score(b, scale=1.0), ref_name="hessian")


def statsmodels_function_cases():
    """Robust norms (``psi`` is the authors' derivative of ``rho``, ``psi_deriv`` of ``psi``),
    GLM links (``deriv``, ``deriv2``, ``inverse_deriv``) and variance functions (``deriv``)."""
    import statsmodels.genmod.families.links as links
    import statsmodels.genmod.families.varfuncs as varfuncs
    import statsmodels.robust.norms as norms

    z = np.array([-2.7, -0.8, 0.3, 1.1, 3.4])    # away from every norm's kinks
    for name in ("LeastSquares", "HuberT", "RamsayE", "AndrewWave", "TrimmedMean", "Hampel",
                 "TukeyBiweight", "StudentT", "TukeyQuartic"):
        if not hasattr(norms, name):
            continue
        norm = getattr(norms, name)()
        yield _elementwise("statsmodels.robust.norms", f"{name}.rho", norm.rho, z, norm.psi, "psi")
        yield _elementwise("statsmodels.robust.norms", f"{name}.psi", norm.psi, z, norm.psi_deriv,
                           "psi_deriv")
    p = np.array([0.15, 0.4, 0.55, 0.8])
    for name, link in [("Logit", links.Logit()), ("Probit", links.Probit()), ("CLogLog", links.CLogLog()),
                       ("LogLog", links.LogLog()), ("Cauchy", links.Cauchy()), ("Log", links.Log()),
                       ("Power(1.5)", links.Power(1.5)), ("InversePower", links.InversePower()),
                       ("Sqrt", links.Sqrt()), ("NegativeBinomial", links.NegativeBinomial())]:
        g = "statsmodels.links"
        yield _elementwise(g, f"{name}.link", link, p, link.deriv, "deriv")
        yield _elementwise(g, f"{name}.deriv", link.deriv, p, link.deriv2, "deriv2")
        eta = link(p)
        yield _elementwise(g, f"{name}.inverse", link.inverse, eta, link.inverse_deriv, "inverse_deriv")
    mu = np.array([0.15, 0.4, 0.55, 0.8])
    for name, vf in [("Power(1.5)", varfuncs.Power(1.5)), ("Binomial", varfuncs.Binomial()),
                     ("NegativeBinomial", varfuncs.NegativeBinomial(0.7))]:
        yield _elementwise("statsmodels.varfuncs", f"{name}", vf, mu, vf.deriv, "deriv")


def numpy_polynomial_cases():
    """numpy.polynomial: ``*val`` against ``*der`` (in x) and ``*vander`` (in the coefficients)."""
    from numpy.polynomial import chebyshev, hermite, hermite_e, laguerre, legendre
    from numpy.polynomial import polynomial as poly

    g = "numpy.polynomial"
    x = np.array([-0.7, -0.1, 0.35, 0.9])
    c = np.array([0.5, -1.2, 0.8, 0.3, -0.4])
    for name, val, der, vander in [
            ("polyval", poly.polyval, poly.polyder, poly.polyvander),
            ("chebval", chebyshev.chebval, chebyshev.chebder, chebyshev.chebvander),
            ("legval", legendre.legval, legendre.legder, legendre.legvander),
            ("hermval", hermite.hermval, hermite.hermder, hermite.hermvander),
            ("hermeval", hermite_e.hermeval, hermite_e.hermeder, hermite_e.hermevander),
            ("lagval", laguerre.lagval, laguerre.lagder, laguerre.lagvander)]:
        yield _elementwise(g, f"{name} (in x)", lambda y, v=val: v(y, c), x,
                           lambda y, v=val, d=der: v(y, d(c)), der.__name__)
        yield Case(g, f"{name} (in c, jacobian)", lambda k, v=val: v(x, k), c,
                   lambda k, vd=vander: vd(x, len(c) - 1), "jacobian", ref_name=vander.__name__)
    yield _elementwise(g, "Chebyshev(c)(x)", lambda y: chebyshev.Chebyshev(c)(y), x,
                       lambda y: chebyshev.Chebyshev(c).deriv()(y), "Chebyshev.deriv")
    yield _elementwise("numpy", "np.polyval (in x)", lambda y: np.polyval(c, y), x,
                       lambda y: np.polyval(np.polyder(c), y), "np.polyder")


def scipy_interpolate_cases():
    """Splines evaluated at traced points, against the authors' derivative splines."""
    from scipy import interpolate as si

    g = "scipy.interpolate"
    knots_x = np.linspace(0.0, 3.0, 7)
    knots_y = np.sin(knots_x) + 0.3 * knots_x
    t = np.array([0.2, 0.9, 1.7, 2.6])
    cs = si.CubicSpline(knots_x, knots_y)
    yield _elementwise(g, "CubicSpline(x)", cs, t, lambda y: cs(y, 1), "cs(x, nu=1)")
    bs = si.make_interp_spline(knots_x, knots_y, k=3)
    yield _elementwise(g, "BSpline(x)", bs, t, bs.derivative(), "BSpline.derivative()")
    tck = si.splrep(knots_x, knots_y)
    yield _elementwise(g, "splev(x, tck)", lambda y: si.splev(y, tck), t, lambda y: si.splev(y, tck, der=1),
                       "splev(der=1)")
    pch = si.PchipInterpolator(knots_x, knots_y)
    yield _elementwise(g, "PchipInterpolator(x)", pch, t, pch.derivative(), "derivative()")
    ak = si.Akima1DInterpolator(knots_x, knots_y)
    yield _elementwise(g, "Akima1DInterpolator(x)", ak, t, ak.derivative(), "derivative()")
    us = si.UnivariateSpline(knots_x, knots_y, s=0.01)
    yield _elementwise(g, "UnivariateSpline(x)", us, t, us.derivative(), "derivative()")
    slopes = np.diff(knots_y) / np.diff(knots_x)
    yield _elementwise(g, "interp1d linear (x)", si.interp1d(knots_x, knots_y), t,
                       lambda y: slopes[np.searchsorted(knots_x, y) - 1], "segment slopes")
    yield _elementwise("numpy", "np.interp (x)", lambda y: np.interp(y, knots_x, knots_y), t,
                       lambda y: slopes[np.searchsorted(knots_x, y) - 1], "segment slopes")


GROUPS = {
    "numpy.polynomial": numpy_polynomial_cases,
    "scipy.interpolate": scipy_interpolate_cases,
    "scipy.optimize": scipy_optimize_cases,
    "scipy.special": scipy_special_cases,
    "scipy.stats": scipy_stats_cases,
    "sklearn.losses": sklearn_loss_cases,
    "sklearn.models": sklearn_model_cases,
    "sklearn.gp": sklearn_gp_cases,
    "statsmodels.models": statsmodels_cases,
    "statsmodels.functions": statsmodels_function_cases,
}


def all_cases(only=None):
    for key, make in GROUPS.items():
        if only and not any(o in key for o in only):
            continue
        try:
            yield from make()
        except ImportError as e:
            print(f"# {key}: not installed ({e})", file=sys.stderr)


# --------------------------------------------------------------------------- report


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="groups whose name contains one of these words")
    ap.add_argument("--modes", nargs="*", default=list(MODES), choices=list(MODES))
    ap.add_argument("--json", help="write every result to this file")
    ap.add_argument("--verbose", action="store_true", help="print each mode's errors")
    args = ap.parse_args(argv)

    results = []
    for case in all_cases(args.only):
        r = run_case(case, args.modes)
        r["ref_name"] = case.ref_name
        results.append(r)
        print(f"{r['status']:<13} {r['group'] + ': ' + r['name']:<72} {r['note']}", flush=True)
        if args.verbose:
            for mode, m in r.get("modes", {}).items():
                print(f"    {mode:<10} {m}")

    print()
    counts: dict = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print(f"tried {len(results)}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    by_group: dict = {}
    for r in results:
        by_group.setdefault(r["group"], {}).setdefault(r["status"], 0)
        by_group[r["group"]][r["status"]] += 1
    for grp, c in by_group.items():
        print(f"  {grp:<28} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    reasons: dict = {}
    for r in results:
        if r["status"] in ("does not run", "partial"):
            reasons.setdefault(r["note"], []).append(r["name"])
    if reasons:
        print("\nreasons (does not run / partial):")
        for note, names in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
            print(f"  {len(names):>3}  {note}\n       {', '.join(names)}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return results


if __name__ == "__main__":
    main()
