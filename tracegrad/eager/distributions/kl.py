"""Kullback-Leibler divergences ``KL(p || q) = E_p[log p(X) - log q(X)]`` in closed form.

``register_kl(P, Q)`` registers a function for a pair of distribution classes;
``kl_divergence(p, q)`` picks the registered pair that matches the two types most
closely (fewest steps up each class hierarchy) and raises ``NotImplementedError`` when
none does. The formulas below are the textbook ones; where ``q`` is a normal, the
divergence is ``-H(p) + log(sigma sqrt(2 pi)) + E_p[(X - mu)^2] / (2 sigma^2)``, which
needs only ``p``'s entropy, mean and variance.
"""
from __future__ import annotations

import math

import tracegrad.eager as tg

from ..nn import functional as F
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .laplace import Laplace
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .transformed_distribution import TransformedDistribution
from .uniform import Uniform

__all__ = ["kl_divergence", "register_kl"]

_REGISTRY: dict = {}
_CHOICE: dict = {}          # (type(p), type(q)) -> function, cleared on registration
_EULER_GAMMA = 0.5772156649015329
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def register_kl(type_p, type_q):
    """Decorator: ``@register_kl(P, Q)`` makes the function ``f(p, q)`` compute
    ``KL(p || q)`` for instances of ``P`` and ``Q`` (and their subclasses, unless a
    closer registration exists)."""
    for t in (type_p, type_q):
        if not isinstance(t, type):
            raise TypeError(f"register_kl expects classes, got {t!r}")

    def decorate(fn):
        _REGISTRY[type_p, type_q] = fn
        _CHOICE.clear()
        return fn
    return decorate


def _choose(tp, tq):
    key = (tp, tq)
    if key not in _CHOICE:
        best, best_rank = None, None
        for (p_cls, q_cls), fn in _REGISTRY.items():
            if issubclass(tp, p_cls) and issubclass(tq, q_cls):
                i, j = tp.__mro__.index(p_cls), tq.__mro__.index(q_cls)
                rank = (i + j, i, j)
                if best_rank is None or rank < best_rank:
                    best, best_rank = fn, rank
        _CHOICE[key] = best
    return _CHOICE[key]


def kl_divergence(p, q):
    """``KL(p || q)``, one value per batch element."""
    fn = _choose(type(p), type(q))
    if fn is None:
        raise NotImplementedError(f"No KL(p || q) is implemented for p of type "
                                  f"{type(p).__name__} and q of type {type(q).__name__}")
    return fn(p, q)


def _infinite(*params):
    """``inf`` in the broadcast shape of ``params`` (divergences from a distribution
    whose support is not contained in the other's)."""
    shape = tg.broadcast_shapes(*(tuple(t.shape) for t in params))
    return tg.full(shape, math.inf, dtype=params[0].dtype)


def _to_normal(neg_entropy, mean, var, q):
    """``KL(p || Normal)`` from ``-H(p)`` and ``p``'s mean and variance."""
    second_moment = var + (mean - q.loc) ** 2
    return neg_entropy + tg.log(q.scale) + _LOG_SQRT_2PI + second_moment / (2 * q.scale ** 2)


# -- same family --------------------------------------------------------------------
@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    ratio = (p.scale / q.scale) ** 2
    shift = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (ratio + shift - 1 - tg.log(ratio))


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    # log p = -softplus(-l), log(1 - p) = -softplus(l) for log-odds l
    lp, lq = p.logits, q.logits
    ones = p.probs * (F.softplus(-lq) - F.softplus(-lp))
    zeros = (1 - p.probs) * (F.softplus(lq) - F.softplus(lp))
    return ones + zeros


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    terms = p.probs * (p.logits - q.logits)
    terms = tg.where(q.probs == 0, tg.full_like(terms, math.inf), terms)
    terms = tg.where(p.probs == 0, tg.zeros_like(terms), terms)
    return terms.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    ratio = q.rate / p.rate
    return ratio - 1 - tg.log(ratio)


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    ap, bp, aq, bq = p.concentration, p.rate, q.concentration, q.rate
    return ((ap - aq) * tg.digamma(ap) - tg.lgamma(ap) + tg.lgamma(aq)
            + aq * (tg.log(bp) - tg.log(bq)) + ap * (bq - bp) / bp)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    ap, bp, aq, bq = p.concentration1, p.concentration0, q.concentration1, q.concentration0

    def log_beta(a, b):
        return tg.lgamma(a) + tg.lgamma(b) - tg.lgamma(a + b)
    return (log_beta(aq, bq) - log_beta(ap, bp) + (ap - aq) * tg.digamma(ap)
            + (bp - bq) * tg.digamma(bp) + (aq - ap + bq - bp) * tg.digamma(ap + bp))


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    ap, aq = p.concentration, q.concentration
    sp = ap.sum(-1)
    return (tg.lgamma(sp) - tg.lgamma(ap).sum(-1) - tg.lgamma(aq.sum(-1))
            + tg.lgamma(aq).sum(-1)
            + ((ap - aq) * (tg.digamma(ap) - tg.digamma(sp).unsqueeze(-1))).sum(-1))


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    inside = (q.low <= p.low) & (p.high <= q.high)
    value = tg.log((q.high - q.low) / (p.high - p.low))
    return tg.where(inside, value, tg.full_like(value, math.inf))


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    k = p.event_shape[0]
    batch = tuple(tg.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape)))
    lp = p._scale_tril.expand(batch + (k, k))
    lq = q._scale_tril.expand(batch + (k, k))
    # tr(Sq^-1 Sp) = ||Lq^-1 Lp||_F^2 and the Mahalanobis term through Lq^-1 as well
    m = tg.linalg.solve_triangular(lq, lp, upper=False)
    diff = (q.loc - p.loc).expand(batch + (k,)).unsqueeze(-1)
    y = tg.linalg.solve_triangular(lq, diff, upper=False).squeeze(-1)
    trace = (m ** 2).sum((-2, -1))
    log_det = (tg.log(lq.diagonal(dim1=-2, dim2=-1)).sum(-1)
               - tg.log(lp.diagonal(dim1=-2, dim2=-1)).sum(-1))
    return log_det + 0.5 * (trace + (y ** 2).sum(-1) - k)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    n = p.reinterpreted_batch_ndims
    if n != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independent distributions that reinterpret "
                                  "different numbers of dimensions")
    kl = kl_divergence(p.base_dist, q.base_dist)
    return kl.reshape(tuple(kl.shape[:kl.dim() - n]) + (-1,)).sum(-1) if n else kl


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    # the same bijection applied to both leaves the divergence unchanged
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError("KL between transformed distributions needs the same "
                                  "transforms on both")
    kl = kl_divergence(p.base_dist, q.base_dist)
    extra = len(p.event_shape) - len(p.base_dist.event_shape)
    return kl.reshape(tuple(kl.shape[:kl.dim() - extra]) + (-1,)).sum(-1) if extra else kl


# -- across families ----------------------------------------------------------------
@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    # E|X - m| for X ~ N(mu, s^2): s sqrt(2/pi) exp(-d^2 / 2s^2) + d erf(d / (s sqrt 2))
    d = p.loc - q.loc
    abs_moment = (p.scale * math.sqrt(2 / math.pi) * tg.exp(-0.5 * (d / p.scale) ** 2)
                  + d * tg.erf(d / (p.scale * math.sqrt(2))))
    return -p.entropy() + tg.log(2 * q.scale) + abs_moment / q.scale


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    return _to_normal(-p.entropy(), p.loc, 2 * p.scale ** 2, q)


@register_kl(Gamma, Normal)
def _kl_gamma_normal(p, q):
    return _to_normal(-p.entropy(), p.mean, p.variance, q)


@register_kl(Beta, Normal)
def _kl_beta_normal(p, q):
    return _to_normal(-p.entropy(), p.mean, p.variance, q)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    return _to_normal(-p.entropy(), p.mean, p.variance, q)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    return _to_normal(-p.entropy(), p.mean, p.variance, q)


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    # E log X = -gamma_E - log(rate) and E X = 1 / rate for X ~ Exp(rate)
    a, b, lam = q.concentration, q.rate, p.rate
    expected_log_q = (a * tg.log(b) + (a - 1) * (-_EULER_GAMMA - tg.log(lam)) - b / lam
                      - tg.lgamma(a))
    return -p.entropy() - expected_log_q


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - tg.log(q.rate) + q.rate * p.mean


@register_kl(Normal, Uniform)
@register_kl(Normal, Exponential)
@register_kl(Normal, Gamma)
@register_kl(Normal, Beta)
@register_kl(Laplace, Uniform)
@register_kl(Laplace, Exponential)
@register_kl(Laplace, Gamma)
@register_kl(Laplace, Beta)
def _kl_real_line_to_bounded(p, q):
    # p puts mass on the whole real line; q does not
    return _infinite(p.loc, *(v for v in q.__dict__.values() if isinstance(v, tg.Tensor)))
