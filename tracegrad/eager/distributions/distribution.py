"""The ``Distribution`` base class and the small helpers the concrete distributions share.

A distribution has a ``batch_shape`` (independent, differently parameterised copies) and
an ``event_shape`` (the shape of one draw of one copy: ``()`` for scalars, ``(k,)`` for
vectors). A sample of ``sample_shape`` has shape ``sample_shape + batch_shape +
event_shape``; ``log_prob`` of it has shape ``sample_shape + batch_shape``.

Argument checking follows PyTorch's switch: on by default, off per instance with
``validate_args=False`` or for all with ``Distribution.set_default_validate_args``.
Failures raise ``ValueError`` with messages that start as PyTorch's do.
"""
from __future__ import annotations

import numbers
import operator

import numpy as np

import tracegrad.eager as tg

from . import constraints


class lazy_property:
    """A property computed on first use and then stored on the instance (so a value
    derived from another parameterisation, e.g. ``probs`` from ``logits``, is computed
    once and only when asked for). It is computed with gradients enabled: a first use
    inside ``no_grad`` (``sample`` asking for ``probs``) must not cache a value cut off
    from the parameters it came from."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.name = fn.__name__

    def __set_name__(self, owner, name):
        self.name = name                # ``logits = lazy_property(binary_logits)``

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        with tg.enable_grad():
            value = self.fn(obj)
        obj.__dict__[self.name] = value
        return value


def as_param(value, like=None):
    """``value`` as a floating tensor (Python numbers take the dtype of ``like``, or the
    default dtype)."""
    if isinstance(value, tg.Tensor):
        return value
    dtype = like.dtype if isinstance(like, tg.Tensor) and like.dtype.kind == "f" else None
    return tg.tensor(float(value), dtype=dtype)


def broadcast_all(*values):
    """The arguments as tensors of one broadcast shape: numbers become tensors of the
    dtype of the first tensor argument (or the default dtype)."""
    like = next((v for v in values if isinstance(v, tg.Tensor)), None)
    for v in values:
        if not isinstance(v, (tg.Tensor, numbers.Number)):
            raise ValueError("Input arguments must all be instances of numbers.Number or "
                             f"Tensor, got {type(v).__name__}")
    return tg.broadcast_tensors(*(as_param(v, like) for v in values))


def clamp_probs(probs):
    """Probabilities kept inside ``[eps, 1 - eps]`` so that their logarithms are finite."""
    eps = tg.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Log-odds (``is_binary``) or log-probabilities of (clamped) probabilities."""
    p = clamp_probs(probs)
    return tg.log(p) - tg.log1p(-p) if is_binary else tg.log(p)


def logits_to_probs(logits, is_binary=False):
    """Probabilities from log-odds (``is_binary``: sigmoid) or unnormalised
    log-probabilities over the last dimension (softmax)."""
    return tg.sigmoid(logits) if is_binary else tg.softmax(logits, -1)


def probs_or_logits(dist, probs, logits, *others):
    """Store on ``dist`` whichever of ``probs`` and ``logits`` is given (exactly one must
    be), broadcast with ``others``; the other one is then derived on first use (see
    ``binary_logits``). Returns ``others`` cast to the parameter's dtype, then the
    parameter."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    name, value = ("probs", probs) if probs is not None else ("logits", logits)
    *others, param = broadcast_all(*others, value)
    setattr(dist, name, param)
    return (*(o.to(param.dtype) for o in others), param)


def binary_logits(dist):
    """The log-odds of ``dist.probs``: ``logits = lazy_property(binary_logits)``."""
    return probs_to_logits(dist.probs, is_binary=True)


def binary_probs(dist):
    """The probabilities of ``dist.logits`` (log-odds): ``probs =
    lazy_property(binary_probs)``."""
    return logits_to_probs(dist.logits, is_binary=True)


def alias(path):
    """A read-only property for the attribute at the dotted ``path`` (``alias("loc")``,
    ``alias("_categorical.probs")``)."""
    return property(operator.attrgetter(path), doc=f"``self.{path}``.")


batch_param_shape = property(lambda dist: dist._batch_shape,
                             doc="The shape of the parameter: the batch shape.")


class LocationScale:
    """Mixin, listed before ``Distribution`` (or ``ExponentialFamily``) among the bases,
    for the families on the real line with a real ``loc`` and a positive ``scale``,
    broadcast together, and reparameterised draws; ``loc`` is the mode and (where the
    family has one) the mean."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True
    _params = {"loc": 0, "scale": 0}

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, (), validate_args)

    mean = mode = alias("loc")


def sum_rightmost(x, n):
    """``x`` summed over its last ``n`` dimensions."""
    return x.reshape(tuple(x.shape[:x.dim() - n]) + (-1,)).sum(-1) if n > 0 else x


def _size(shape):
    return tg.Size(tuple(int(s) for s in shape))


class Distribution:
    """Base class: subclasses set ``arg_constraints`` (parameter name -> constraint),
    ``support``, and implement what they can of ``rsample``/``sample``, ``log_prob``,
    ``entropy``, ``cdf``/``icdf`` and the moments."""

    has_rsample = False
    has_enumerate_support = False
    arg_constraints: dict = {}
    support = None
    _validate_args = True           # class-wide default; see set_default_validate_args

    @staticmethod
    def set_default_validate_args(value):
        """Turn argument checking on or off for distributions made from now on (each
        can still pass ``validate_args`` to override)."""
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args expects True or False, got {value!r}")
        Distribution._validate_args = bool(value)

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = _size(batch_shape)
        self._event_shape = _size(event_shape)
        if validate_args is not None:
            self._validate_args = bool(validate_args)
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self):
        for name, constraint in self.arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue
            if name not in self.__dict__ and isinstance(getattr(type(self), name, None),
                                                         lazy_property):
                continue                # not given: derived from the other parameters
            value = getattr(self, name)
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {name} ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                    f"constraint {constraint!r}, but found invalid values:\n{value}")

    # -- shapes -----------------------------------------------------------------------
    @property
    def batch_shape(self):
        return self._batch_shape

    @property
    def event_shape(self):
        return self._event_shape

    def _extended_shape(self, sample_shape=()):
        return _size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def expand(self, batch_shape, _instance=None):
        """The same distribution repeated to ``batch_shape`` (parameters are expanded
        views, not copies). Subclasses list their tensor parameters in ``_params``
        (name -> number of event dimensions the parameter has beyond the batch)."""
        batch_shape = _size(batch_shape)
        new = _instance if _instance is not None else type(self).__new__(type(self))
        for name, extra in self._params.items():
            if name in self.__dict__:
                value = self.__dict__[name]
                tail = tuple(value.shape[value.dim() - extra:]) if extra else ()
                new.__dict__[name] = value.expand(tuple(batch_shape) + tail)
        for name, value in self.__dict__.items():     # plain settings (not tensors)
            if name not in self._params and not isinstance(value, tg.Tensor) \
                    and name not in ("_batch_shape", "_event_shape"):
                new.__dict__.setdefault(name, value)
        return self._expanded(batch_shape, new)

    def _expanded(self, batch_shape, new=None, **parts):
        """``new`` (by default a bare instance of this class) given the attributes
        ``parts``, this distribution's event shape and validation setting, and
        ``batch_shape``, without checking its parameters again."""
        if new is None:
            new = type(self).__new__(type(self))
        for name, value in parts.items():
            setattr(new, name, value)
        Distribution.__init__(new, batch_shape, self._event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    _params: dict = {}

    # -- sampling ---------------------------------------------------------------------
    def sample(self, sample_shape=()):
        """A draw of shape ``sample_shape + batch_shape + event_shape``, without
        gradient."""
        with tg.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """A reparameterised draw: a differentiable function of the parameters and of
        parameter-free noise."""
        raise NotImplementedError(f"{type(self).__name__} has no rsample")

    def sample_n(self, n):
        return self.sample((n,))

    # -- densities and moments ----------------------------------------------------------
    def log_prob(self, value):
        raise NotImplementedError

    def cdf(self, value):
        raise NotImplementedError

    def icdf(self, value):
        raise NotImplementedError

    def entropy(self):
        raise NotImplementedError

    def perplexity(self):
        return tg.exp(self.entropy())

    @property
    def mean(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement mean")

    @property
    def mode(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement mode")

    @property
    def variance(self):
        raise NotImplementedError(f"{type(self).__name__} does not implement variance")

    @property
    def stddev(self):
        return self.variance.sqrt()

    # -- checking values ----------------------------------------------------------------
    def _validate_sample(self, value):
        """Raise ``ValueError`` unless ``value`` is a tensor whose shape fits the event and
        batch shapes and whose entries lie in the support."""
        if not isinstance(value, tg.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        n_event = len(self._event_shape)
        shape = tuple(value.shape)
        if tuple(shape[len(shape) - n_event:]) != tuple(self._event_shape) or \
                len(shape) < n_event:
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.shape} vs {self._event_shape}.")
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        try:
            np.broadcast_shapes(shape, expected)
        except ValueError:
            raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                             f"{value.shape} vs {_size(expected)}.") from None
        support = self.support
        if support is None or constraints.is_dependent(support):
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {shape}) to be "
                f"within the support ({support!r}) of the distribution {self!r}, but found "
                f"invalid values:\n{value}")

    def _checked(self, value):
        """``value`` as a tensor, validated when this distribution validates."""
        if self._validate_args:
            self._validate_sample(value)
        return value

    def __repr__(self):
        parts = []
        for name in self.arg_constraints:
            if name in self.__dict__:
                v = self.__dict__[name]
                shown = v if v.numel() == 1 else v.shape
                parts.append(f"{name}: {shown}")
        return f"{type(self).__name__}({', '.join(parts)})"
