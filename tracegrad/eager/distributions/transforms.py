"""Invertible maps between spaces, for building ``TransformedDistribution``s.

A transform ``t`` maps ``x`` in ``t.domain`` to ``y = t(x)`` in ``t.codomain``; ``t.inv``
maps back, and ``t.log_abs_det_jacobian(x, y)`` is ``log |dy/dx|`` (elementwise here:
every transform in this module acts on each entry separately, or, for
``AffineTransform(event_dim=k)``, sums that over the last ``k`` dimensions).
"""
from __future__ import annotations

import tracegrad.eager as tg

from ..nn import functional as F
from . import constraints
from .distribution import sum_rightmost

__all__ = ["AffineTransform", "ComposeTransform", "ExpTransform", "SigmoidTransform",
           "Transform", "identity_transform"]


class Transform:
    """Base class. Subclasses implement ``_call`` (forward), ``_inverse`` and
    ``log_abs_det_jacobian`` and set ``domain``/``codomain``; ``bijective`` and ``sign``
    (+1 increasing, -1 decreasing) describe the map."""

    domain = constraints.real
    codomain = constraints.real
    bijective = False

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._cached = None        # (x, y) of the last forward call, when caching

    @property
    def event_dim(self):
        if self.domain.event_dim != self.codomain.event_dim:
            raise ValueError("domain and codomain of this transform have different "
                             "event dimensions")
        return self.domain.event_dim

    @property
    def sign(self):
        raise NotImplementedError

    @property
    def inv(self):
        return _InverseTransform(self)

    def __call__(self, x):
        if self._cache_size and self._cached is not None and self._cached[0] is x:
            return self._cached[1]
        y = self._call(x)
        if self._cache_size:
            self._cached = (x, y)
        return y

    def _inv_call(self, y):
        if self._cache_size and self._cached is not None and self._cached[1] is y:
            return self._cached[0]
        x = self._inverse(y)
        if self._cache_size:
            self._cached = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __repr__(self):
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    """``t.inv``: ``t`` run backwards."""

    def __init__(self, transform):
        super().__init__()
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def __call__(self, x):
        return self._inv._inv_call(x)

    def _inverse(self, y):
        return self._inv(y)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"_InverseTransform({self._inv!r})"


class ComposeTransform(Transform):
    """``parts[0]`` first, then ``parts[1]``, ...; the empty composition is the
    identity."""

    def __init__(self, parts, cache_size=0):
        super().__init__(cache_size)
        self.parts = list(parts)

    @property
    def domain(self):
        if not self.parts:
            return constraints.real
        dom = self.parts[0].domain
        need = max([dom.event_dim] + [p.domain.event_dim for p in self.parts])
        return constraints.independent(dom, need - dom.event_dim) if need > dom.event_dim \
            else dom

    @property
    def codomain(self):
        if not self.parts:
            return constraints.real
        cod = self.parts[-1].codomain
        need = max([cod.event_dim] + [p.codomain.event_dim for p in self.parts])
        return constraints.independent(cod, need - cod.event_dim) if need > cod.event_dim \
            else cod

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        s = 1
        for p in self.parts:
            s = s * p.sign
        return s

    @property
    def inv(self):
        return ComposeTransform([p.inv for p in reversed(self.parts)])

    def _call(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def _inverse(self, y):
        for p in reversed(self.parts):
            y = p.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return tg.zeros_like(x)
        total = 0
        event_dim = self.domain.event_dim
        for p in self.parts:
            out = p(x)
            total = total + sum_rightmost(p.log_abs_det_jacobian(x, out),
                                          event_dim - p.domain.event_dim)
            event_dim += p.codomain.event_dim - p.domain.event_dim
            x = out
        return total

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"ComposeTransform(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class ExpTransform(Transform):
    """``y = exp(x)``; ``log |dy/dx| = x``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return tg.exp(x)

    def _inverse(self, y):
        return tg.log(y)

    def log_abs_det_jacobian(self, x, y):
        return x

    def __eq__(self, other):
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__


class SigmoidTransform(Transform):
    """``y = 1 / (1 + exp(-x))``; ``log |dy/dx| = -softplus(-x) - softplus(x)``."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def _call(self, x):
        return tg.sigmoid(x)

    def _inverse(self, y):
        eps = tg.finfo(y.dtype).eps
        y = y.clamp(min=eps, max=1 - eps)
        return tg.log(y) - tg.log1p(-y)

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)

    def __eq__(self, other):
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__


class AffineTransform(Transform):
    """``y = loc + scale * x`` (numbers or broadcastable tensors), with the last
    ``event_dim`` dimensions treated as one event."""

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size)
        self.loc, self.scale = loc, scale
        self._event_dim = int(event_dim)

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        return constraints.independent(constraints.real, self._event_dim) \
            if self._event_dim else constraints.real

    codomain = domain

    @property
    def sign(self):
        if isinstance(self.scale, tg.Tensor):
            return self.scale.sign()
        return 1 if self.scale > 0 else -1 if self.scale < 0 else 0

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale = self.scale
        if isinstance(scale, tg.Tensor):
            ladj = tg.log(scale.abs()).expand(x.shape) if scale.dim() <= x.dim() \
                else tg.log(scale.abs())
        else:
            ladj = tg.full_like(x, float(tg.log(tg.tensor(abs(float(scale))))))
        return sum_rightmost(ladj, self._event_dim)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False

        def same(a, b):
            if isinstance(a, tg.Tensor) or isinstance(b, tg.Tensor):
                return a is b or bool((tg.as_tensor(a) == tg.as_tensor(b)).all())
            return a == b
        return same(self.loc, other.loc) and same(self.scale, other.scale) \
            and self._event_dim == other._event_dim

    __hash__ = object.__hash__

    def __repr__(self):
        return f"AffineTransform(loc={self.loc}, scale={self.scale})"
