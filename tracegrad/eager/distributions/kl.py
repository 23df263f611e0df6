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
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .dirichlet import Dirichlet
from .distribution import sum_rightmost
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .laplace import Laplace
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical
from .pareto import Pareto
from .poisson import Poisson
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
@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
@register_kl(MultivariateNormal, LowRankMultivariateNormal)
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
@register_kl(Gamma, Normal)
@register_kl(Beta, Normal)
@register_kl(Uniform, Normal)
@register_kl(Exponential, Normal)
@register_kl(Gumbel, Normal)
def _kl_to_normal(p, q):
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


# -- families added later: same family ------------------------------------------------
@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return tg.xlogy(p.rate, p.rate / q.rate) - p.rate + q.rate


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > "
                                  "p.total_count is not implemented")
    n = p.total_count
    kl = n * _kl_bernoulli_bernoulli(p, q)      # per trial
    return tg.where(p.total_count > q.total_count, tg.full_like(kl, math.inf), kl)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    # E_p log q(X) = log q + E[X] log(1 - q) with E[X] = 1/p - 1
    return -p.entropy() - tg.log(q.probs) - (1 / p.probs - 1) * tg.log1p(-q.probs)


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    # X = mu_p + beta_p G with G standard Gumbel: E G = gamma_E, E exp(-t G) = Gamma(1 + t)
    ratio = p.scale / q.scale
    shift = (p.loc - q.loc) / q.scale
    return (tg.log(q.scale) - tg.log(p.scale) - 1 - _EULER_GAMMA + shift
            + _EULER_GAMMA * ratio + tg.exp(-shift + tg.lgamma(1 + ratio)))


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    # E_p log X = log s_p + 1 / alpha_p; infinite unless p's support lies in q's
    ap, aq, sp, sq = p.alpha, q.alpha, p.scale, q.scale
    kl = tg.log(ap / aq) + aq * (tg.log(sp) - tg.log(sq)) - 1 + aq / ap
    return tg.where(sp < sq, tg.full_like(kl, math.inf), kl)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    num = (p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2
    return tg.log(num) - tg.log(4 * p.scale * q.scale)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p, q):
    # the Bregman divergence of the log-normaliser between the natural parameters
    if type(p) is not type(q):
        raise NotImplementedError("The cross KL-divergence between different exponential "
                                  "families cannot be computed using Bregman divergences")
    eta_p = [e.detach().requires_grad_() for e in p._natural_params]
    eta_q = q._natural_params
    with tg.enable_grad():
        f_p = p._log_normalizer(*eta_p)
        grads = tg.autograd.grad(f_p.sum(), eta_p, create_graph=True)
    result = q._log_normalizer(*eta_q) - f_p
    for ep, eq, g in zip(eta_p, eta_q, grads):
        result = result - sum_rightmost((eq - ep) * g, len(p.event_shape))
    return result


# -- families added later: across families --------------------------------------------
@register_kl(Poisson, Bernoulli)
@register_kl(Poisson, Binomial)
def _kl_poisson_bounded(p, q):
    return _infinite(p.rate)


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p, q):
    # Q(0) = e^-lambda, Q(1) = lambda e^-lambda
    return -p.entropy() - (p.probs * tg.log(q.rate) - q.rate)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    kl = _kl_to_normal(p, q)
    return tg.where(p.alpha <= 2, tg.full_like(kl, math.inf), kl)


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    # E exp(-(X - m) / b) for X ~ N(mu, s^2) is exp(-(mu - m) / b + s^2 / 2b^2)
    shift = (p.loc - q.loc) / q.scale
    return (-p.entropy() + tg.log(q.scale) + shift
            + tg.exp(-shift + 0.5 * (p.scale / q.scale) ** 2))


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    # E exp(-(X - m) / b) over [lo, hi): b (e^-(lo - m)/b - e^-(hi - m)/b) / (hi - lo)
    width = p.high - p.low
    lo, hi = (p.low - q.loc) / q.scale, (p.high - q.loc) / q.scale
    return (-p.entropy() + tg.log(q.scale) + (lo + hi) / 2
            + q.scale * (tg.exp(-lo) - tg.exp(-hi)) / width)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    # E exp(-X / b) for X ~ Exp(lambda) is lambda / (lambda + 1 / b)
    rate_b = p.rate * q.scale
    return (-p.entropy() + tg.log(q.scale) + (1 / p.rate - q.loc) / q.scale
            + tg.exp(q.loc / q.scale) * rate_b / (rate_b + 1))


@register_kl(Gamma, Gumbel)
def _kl_gamma_gumbel(p, q):
    # E exp(-X / b) for X ~ Gamma(a, r) is (1 + 1 / (b r))^-a
    a, r = p.concentration, p.rate
    return (-p.entropy() + tg.log(q.scale) + (a / r - q.loc) / q.scale
            + tg.exp(q.loc / q.scale - a * tg.log1p(1 / (q.scale * r))))


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    # E_p log X over [lo, hi) is (hi log hi - lo log lo) / (hi - lo) - 1
    width = p.high - p.low
    e_log = (tg.xlogy(p.high, p.high) - tg.xlogy(p.low, p.low)) / width - 1
    kl = (-p.entropy() - tg.log(q.alpha) - q.alpha * tg.log(q.scale)
          + (q.alpha + 1) * e_log)
    return tg.where(p.low < q.scale, tg.full_like(kl, math.inf), kl)


@register_kl(Normal, Pareto)
@register_kl(Laplace, Pareto)
@register_kl(Gumbel, Pareto)
@register_kl(Gumbel, Uniform)
@register_kl(Gumbel, Exponential)
@register_kl(Gumbel, Gamma)
@register_kl(Gumbel, Beta)
def _kl_real_line_to_bounded_2(p, q):
    return _infinite(p.loc, *(v for v in q.__dict__.values() if isinstance(v, tg.Tensor)))


@register_kl(Exponential, Pareto)
@register_kl(Gamma, Pareto)
@register_kl(Beta, Pareto)
def _kl_from_zero_to_pareto(p, q):
    # p puts mass near 0, below any Pareto scale
    params = [v for v in p.__dict__.values() if isinstance(v, tg.Tensor)]
    return _infinite(*params, q.scale)


@register_kl(Pareto, Uniform)
@register_kl(Pareto, Beta)
def _kl_pareto_to_bounded(p, q):
    return _infinite(p.scale, *(v for v in q.__dict__.values() if isinstance(v, tg.Tensor)))


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    kl = -p.entropy() - tg.log(q.rate) + q.rate * p.mean
    return tg.where(p.alpha <= 1, tg.full_like(kl, math.inf), kl)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    # E_p log X = log s + 1 / alpha
    a, r = q.concentration, q.rate
    e_log = tg.log(p.scale) + 1 / p.alpha
    kl = (-p.entropy() - a * tg.log(r) + tg.lgamma(a) - (a - 1) * e_log + r * p.mean)
    return tg.where(p.alpha <= 1, tg.full_like(kl, math.inf), kl)
