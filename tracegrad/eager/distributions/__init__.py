"""``tracegrad.distributions``: probability distributions in the style of
``torch.distributions``, written on tracegrad's eager tensor operations so that
gradients flow through ``rsample``, ``log_prob``, ``entropy`` and ``kl_divergence`` and
``tg.compile`` can record them.

Sampling uses tracegrad's generator the way PyTorch's CPU samplers use theirs, so for
the same ``manual_seed`` the draws (and the generator's state afterwards) are PyTorch's:
``randn`` for the normals, ``rand`` for ``Uniform``, ``uniform_`` for ``Laplace``,
``exponential_`` for ``Exponential``, ``bernoulli`` and ``multinomial`` for the discrete
distributions, and Marsaglia-Tsang gamma variates (``_sampling``) for ``Gamma``, ``Beta``
and ``Dirichlet``. ``Gamma.rsample`` carries the exact implicit reparameterisation
gradient; ``Beta`` and ``Dirichlet`` have no ``rsample``.
"""
from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exponential import Exponential
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .laplace import Laplace
from .log_normal import LogNormal
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from .transformed_distribution import TransformedDistribution
from .transforms import (
    AffineTransform,
    ComposeTransform,
    ExpTransform,
    SigmoidTransform,
    Transform,
    identity_transform,
)
from .uniform import Uniform

__all__ = [
    "AffineTransform", "Bernoulli", "Beta", "Categorical", "ComposeTransform", "Dirichlet",
    "Distribution", "ExpTransform", "Exponential", "Gamma", "Independent", "Laplace",
    "LogNormal", "MultivariateNormal", "Normal", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "SigmoidTransform", "Transform",
    "TransformedDistribution", "Uniform", "constraints", "identity_transform",
    "kl_divergence", "register_kl", "transforms",
]
