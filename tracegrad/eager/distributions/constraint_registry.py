"""``biject_to`` and ``transform_to``: from a constraint to a transform whose codomain is
that constraint, for optimising a constrained parameter through an unconstrained one.

``biject_to(c)`` gives a bijection (so its log-determinant can be used in densities);
``transform_to(c)`` may give a cheaper map that is not one-to-one (``SoftmaxTransform``
for the simplex, ``LowerCholeskyTransform`` for Cholesky factors). Both look a
constraint up by its class; ``register(constraint, factory)`` adds or replaces an
entry (``constraint`` a constraint object or a constraint class).
"""
from __future__ import annotations

import numbers

from . import constraints, transforms

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]


class ConstraintRegistry:
    """Constraint class -> function ``factory(constraint) -> Transform``."""

    def __init__(self):
        self._registry = {}

    def register(self, constraint, factory=None):
        if factory is None:                      # used as a decorator
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not (isinstance(constraint, type) and issubclass(constraint, constraints.Constraint)):
            raise TypeError("Expected constraint to be either a Constraint subclass or "
                            f"instance, but got {constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(
                f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _both(constraint):
    def decorate(factory):
        biject_to.register(constraint, factory)
        transform_to.register(constraint, factory)
        return factory
    return decorate


@_both(constraints.real)
def _to_real(constraint):
    return transforms.identity_transform


@_both(constraints.greater_than)
@_both(constraints.greater_than_eq)
def _to_greater_than(constraint):
    return transforms.ComposeTransform(
        [transforms.ExpTransform(), transforms.AffineTransform(constraint.lower_bound, 1)])


@_both(constraints.less_than)
def _to_less_than(constraint):
    return transforms.ComposeTransform(
        [transforms.ExpTransform(), transforms.AffineTransform(constraint.upper_bound, -1)])


@_both(constraints.interval)
@_both(constraints.half_open_interval)
def _to_interval(constraint):
    lo, hi = constraint.lower_bound, constraint.upper_bound
    if isinstance(lo, numbers.Number) and isinstance(hi, numbers.Number) and lo == 0 \
            and hi == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform(
        [transforms.SigmoidTransform(), transforms.AffineTransform(lo, hi - lo)])


biject_to.register(constraints.simplex, lambda c: transforms.StickBreakingTransform())
transform_to.register(constraints.simplex, lambda c: transforms.SoftmaxTransform())
transform_to.register(constraints.lower_cholesky, lambda c: transforms.LowerCholeskyTransform())


def _to_cat(registry):
    def factory(constraint):
        return transforms.CatTransform([registry(c) for c in constraint.cseq],
                                       constraint.dim, constraint.lengths)
    return factory


def _to_stack(registry):
    def factory(constraint):
        return transforms.StackTransform([registry(c) for c in constraint.cseq],
                                         constraint.dim)
    return factory


def _to_independent(registry):
    def factory(constraint):
        return transforms.IndependentTransform(registry(constraint.base_constraint),
                                               constraint.reinterpreted_batch_ndims)
    return factory


for _registry in (biject_to, transform_to):
    _registry.register(constraints.independent, _to_independent(_registry))
    _registry.register(constraints.cat, _to_cat(_registry))
    _registry.register(constraints.stack, _to_stack(_registry))
