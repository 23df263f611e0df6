"""``tracegrad.distributions``: probability distributions in the style of
``torch.distributions``, written on tracegrad's eager tensor operations so that
gradients flow through ``rsample``, ``log_prob``, ``entropy`` and ``kl_divergence`` and
``tg.compile`` can record them.

Sampling uses tracegrad's generator the way PyTorch's CPU samplers use theirs, so for
the same ``manual_seed`` the draws (and the generator's state afterwards) are PyTorch's:
``randn`` for the normals, ``rand`` for ``Uniform``, ``uniform_`` for ``Laplace``,
``exponential_`` for ``Exponential``, ``bernoulli`` and ``multinomial`` for the discrete
distributions, and Marsaglia-Tsang gamma variates (``_sampling``) for ``Gamma``, ``Beta``
and ``Dirichlet``; ``poisson``/``binomial`` for ``Poisson``, ``Binomial`` and
``NegativeBinomial`` (after its gamma draw), ``cauchy_`` for ``Cauchy``/``HalfCauchy``,
``randn`` then a chi-squared draw for ``StudentT``, ``rand`` for ``Geometric``, ``Gumbel``
and the relaxed distributions, categorical draws counted for ``Multinomial``, and the
mixing draw before the component draws for ``MixtureSameFamily``. ``Gamma.rsample``
(so ``Chi2`` and ``StudentT``) carries the exact implicit reparameterisation gradient;
``Beta`` and ``Dirichlet`` have no ``rsample``.
"""
from . import constraints, transforms
from ._multinomial import Multinomial
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .categorical import Categorical
from .cauchy import Cauchy
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .gamma import Gamma
from .geometric import Geometric
from .gumbel import Gumbel
from .half_cauchy import HalfCauchy
from .half_normal import HalfNormal
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import RelaxedBernoulli
from .relaxed_categorical import RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import (
    AbsTransform,
    AffineTransform,
    CatTransform,
    ComposeTransform,
    ExpTransform,
    IndependentTransform,
    LowerCholeskyTransform,
    PowerTransform,
    ReshapeTransform,
    SigmoidTransform,
    SoftmaxTransform,
    SoftplusTransform,
    StackTransform,
    StickBreakingTransform,
    TanhTransform,
    Transform,
    identity_transform,
)
from .uniform import Uniform
from .weibull import Weibull


def _register_multinomial_module():
    """``tracegrad.distributions.multinomial`` as in torch: the file is ``_multinomial.py``
    because ``eager/multinomial.py`` (``torch.multinomial``) already has the name
    (tests/test_layering.py keeps module file names unique)."""
    import sys

    from . import _multinomial
    sys.modules.setdefault(__name__ + ".multinomial", _multinomial)
    return _multinomial


multinomial = _register_multinomial_module()

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "CatTransform",
    "Categorical", "Cauchy", "Chi2", "ComposeTransform", "Dirichlet", "Distribution",
    "ExpTransform", "Exponential", "ExponentialFamily", "Gamma", "Geometric", "Gumbel",
    "HalfCauchy", "HalfNormal", "Independent", "IndependentTransform", "Laplace",
    "LogNormal", "LowRankMultivariateNormal", "LowerCholeskyTransform", "MixtureSameFamily",
    "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "PowerTransform",
    "RelaxedBernoulli", "RelaxedOneHotCategorical", "ReshapeTransform", "SigmoidTransform",
    "SoftmaxTransform", "SoftplusTransform", "StackTransform", "StickBreakingTransform",
    "StudentT", "TanhTransform", "Transform", "TransformedDistribution", "Uniform",
    "Weibull", "biject_to", "constraints", "identity_transform", "kl_divergence",
    "register_kl", "transform_to", "transforms",
]
