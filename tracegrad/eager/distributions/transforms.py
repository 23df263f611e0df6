"""Invertible maps between spaces, for building ``TransformedDistribution``s.

A transform ``t`` maps ``x`` in ``t.domain`` to ``y = t(x)`` in ``t.codomain``; ``t.inv``
maps back, and ``t.log_abs_det_jacobian(x, y)`` is ``log |dy/dx|`` (elementwise here:
``log_abs_det_jacobian`` has one entry per event of the transform's ``event_dim``:
per element for the elementwise maps, per vector for ``StickBreakingTransform``).
``SoftmaxTransform``, ``AbsTransform`` and ``LowerCholeskyTransform`` are not bijective
and have no log-determinant.
"""
from __future__ import annotations

import math

import tracegrad.eager as tg

from ..nn import functional as F
from . import constraints
from .distribution import sum_rightmost

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
           "ExpTransform", "IndependentTransform", "LowerCholeskyTransform", "PowerTransform",
           "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform",
           "StackTransform", "StickBreakingTransform", "TanhTransform", "Transform",
           "identity_transform"]


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

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)

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

    def forward_shape(self, shape):
        for p in self.parts:
            shape = p.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for p in reversed(self.parts):
            shape = p.inverse_shape(shape)
        return shape

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


def _clipped_sigmoid(x):
    """``sigmoid(x)`` kept inside ``[tiny, 1 - eps]`` so that it inverts to finite
    values."""
    fi = tg.finfo(x.dtype)
    return tg.sigmoid(x).clamp(min=fi.tiny, max=1.0 - fi.eps)


class SigmoidTransform(Transform):
    """``y = 1 / (1 + exp(-x))``; ``log |dy/dx| = -softplus(-x) - softplus(x)``."""

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def _call(self, x):
        return _clipped_sigmoid(x)

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


def _shape_str(shape):
    return tuple(int(s) for s in shape)


class AbsTransform(Transform):
    """``y = |x|`` (not injective: the "inverse" returns ``y`` itself)."""

    domain = constraints.real
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y

    def __eq__(self, other):
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__


class PowerTransform(Transform):
    """``y = x ** exponent`` on the positive reals; ``log |dy/dx| = log |exponent y / x|``."""

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size)
        (self.exponent,) = _as_tensors(exponent)

    @property
    def sign(self):
        return self.exponent.sign()

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()

    def forward_shape(self, shape):
        return tg.Size(tg.broadcast_shapes(tuple(shape), tuple(self.exponent.shape)))

    inverse_shape = forward_shape

    def __eq__(self, other):
        return isinstance(other, PowerTransform) and \
            bool((self.exponent == other.exponent).all())

    __hash__ = object.__hash__


def _as_tensors(*values):
    return [v if isinstance(v, tg.Tensor) else tg.tensor(float(v)) for v in values]


class TanhTransform(Transform):
    """``y = tanh(x)``; ``log |dy/dx| = 2 (log 2 - x - softplus(-2x))``."""

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def _call(self, x):
        return tg.tanh(x)

    def _inverse(self, y):
        return tg.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))

    def __eq__(self, other):
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``; inverse ``y + log(-expm1(-y))``; ``log |dy/dx| =
    -softplus(-x)``."""

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        return y + tg.log(-tg.expm1(-y))

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)

    def __eq__(self, other):
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__


class SoftmaxTransform(Transform):
    """Unconstrained vectors to the simplex by ``exp`` and normalisation (not injective;
    the inverse returns ``log y``)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        e = tg.exp(x - x.amax(-1, keepdim=True))
        return e / e.sum(-1, keepdim=True)

    def _inverse(self, y):
        return tg.log(y)

    def __eq__(self, other):
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__


class StickBreakingTransform(Transform):
    """Vectors of length ``n`` to the ``n + 1`` simplex by breaking a stick: piece ``i``
    takes the fraction ``sigmoid(x_i - log(n - i))`` (counting ``i`` from 0) of what is
    left, so that ``x = 0`` maps to the uniform vector. Bijective."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _offset_log(self, n, like):
        return tg.log(tg.arange(n, 0, -1, dtype=like.dtype))

    def _call(self, x):
        n = x.shape[-1]
        z = _clipped_sigmoid(x - self._offset_log(n, x))
        left = tg.cumprod(1 - z, -1)
        one = tg.ones(tuple(x.shape[:-1]) + (1,), dtype=x.dtype)
        return tg.cat([z, one], -1) * tg.cat([one, left], -1)

    def _inverse(self, y):
        head = y[..., :-1]
        n = head.shape[-1]
        rest = (1 - tg.cumsum(head, -1)).clamp(min=tg.finfo(y.dtype).tiny)  # after piece i
        return tg.log(head) - tg.log(rest) + self._offset_log(n, y)

    def log_abs_det_jacobian(self, x, y):
        # dy_i/dx_i = (1 - z_i) y_i and the Jacobian is triangular
        shifted = x - self._offset_log(x.shape[-1], x)
        return (tg.log(y[..., :-1]) - F.softplus(shifted)).sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tg.Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tg.Size(tuple(shape[:-1]) + (shape[-1] - 1,))

    def __eq__(self, other):
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__


class LowerCholeskyTransform(Transform):
    """Square matrices to lower-triangular matrices with a positive diagonal: the strict
    lower triangle is kept and the diagonal exponentiated."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + tg.diag_embed(tg.exp(x.diagonal(dim1=-2, dim2=-1)))

    def _inverse(self, y):
        return y.tril(-1) + tg.diag_embed(tg.log(y.diagonal(dim1=-2, dim2=-1)))

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__


class IndependentTransform(Transform):
    """``base_transform`` with its rightmost ``reinterpreted_batch_ndims`` dimensions
    treated as one event (the log-determinants are summed over them)."""

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size)
        self.base_transform = base_transform
        self.reinterpreted_batch_ndims = int(reinterpreted_batch_ndims)

    @property
    def domain(self):
        return constraints.independent(self.base_transform.domain,
                                       self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        return constraints.independent(self.base_transform.codomain,
                                       self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y):
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)

    def __eq__(self, other):
        return isinstance(other, IndependentTransform) and \
            self.base_transform == other.base_transform and \
            self.reinterpreted_batch_ndims == other.reinterpreted_batch_ndims

    __hash__ = object.__hash__

    def __repr__(self):
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class ReshapeTransform(Transform):
    """Reshapes the rightmost ``in_shape`` dimensions to ``out_shape`` (same number of
    elements); the log-determinant is zero."""

    bijective = True
    sign = +1

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape = tg.Size(_shape_str(in_shape))
        self.out_shape = tg.Size(_shape_str(out_shape))
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size)

    @property
    def domain(self):
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):
        return constraints.independent(constraints.real, len(self.out_shape))

    def _call(self, x):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return x.reshape(batch + tuple(self.out_shape))

    def _inverse(self, y):
        batch = tuple(y.shape[:y.dim() - len(self.out_shape)])
        return y.reshape(batch + tuple(self.in_shape))

    def log_abs_det_jacobian(self, x, y):
        batch = tuple(x.shape[:x.dim() - len(self.in_shape)])
        return tg.zeros(batch, dtype=x.dtype)

    def _swap(self, shape, a, b):
        shape = tuple(shape)
        if len(shape) < len(a):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(a)
        if shape[cut:] != tuple(a):
            raise ValueError(f"Shape mismatch: expected {shape[cut:]} but got {tuple(a)}")
        return tg.Size(shape[:cut] + tuple(b))

    def forward_shape(self, shape):
        return self._swap(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape):
        return self._swap(shape, self.out_shape, self.in_shape)

    def __eq__(self, other):
        return isinstance(other, ReshapeTransform) and self.in_shape == other.in_shape \
            and self.out_shape == other.out_shape

    __hash__ = object.__hash__


class CatTransform(Transform):
    """Applies ``tseq[i]`` to the ``i``-th piece (of ``lengths[i]``, default 1) of the
    input along ``dim`` and concatenates the results."""

    def __init__(self, tseq, dim=0, lengths=None, cache_size=0):
        super().__init__(cache_size)
        self.transforms = list(tseq)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError("CatTransform: one length per transform")
        self.dim = dim

    @property
    def event_dim(self):
        return max(t.event_dim for t in self.transforms)

    @property
    def length(self):
        return sum(self.lengths)

    @property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    def _pieces(self, x):
        if not -x.dim() <= self.dim < x.dim():
            raise ValueError("CatTransform: dim out of range")
        if x.shape[self.dim] != self.length:
            raise ValueError("CatTransform: input size along dim does not match lengths")
        start = 0
        for t, n in zip(self.transforms, self.lengths):
            yield t, x.narrow(self.dim, start, n)
            start += n

    def _call(self, x):
        return tg.cat([t(piece) for t, piece in self._pieces(x)], self.dim)

    def _inverse(self, y):
        return tg.cat([t.inv(piece) for t, piece in self._pieces(y)], self.dim)

    def log_abs_det_jacobian(self, x, y):
        event_dim = self.event_dim
        dim = self.dim if self.dim < 0 else self.dim - x.dim()
        parts = []
        for (t, xs), (_, ys) in zip(self._pieces(x), self._pieces(y)):
            ladj = t.log_abs_det_jacobian(xs, ys)
            if t.event_dim < event_dim:
                ladj = sum_rightmost(ladj, event_dim - t.event_dim)
            parts.append(ladj)
        if dim >= -event_dim:        # the pieces are parts of one event: add them up
            total = 0
            for p in parts:
                total = total + p
            return total
        return tg.cat(parts, dim + event_dim)

    def __eq__(self, other):
        return isinstance(other, CatTransform) and self.transforms == other.transforms \
            and self.lengths == other.lengths and self.dim == other.dim

    __hash__ = object.__hash__


class StackTransform(Transform):
    """Applies ``tseq[i]`` to the ``i``-th slice of the input along ``dim`` and stacks
    the results."""

    def __init__(self, tseq, dim=0, cache_size=0):
        super().__init__(cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    @property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)

    @property
    def bijective(self):
        return all(t.bijective for t in self.transforms)

    def _slices(self, x):
        if not -x.dim() <= self.dim < x.dim():
            raise ValueError("StackTransform: dim out of range")
        if x.shape[self.dim] != len(self.transforms):
            raise ValueError("StackTransform: one transform per slice along dim")
        return [x.select(self.dim, i) for i in range(len(self.transforms))]

    def _call(self, x):
        return tg.stack([t(s) for t, s in zip(self.transforms, self._slices(x))], self.dim)

    def _inverse(self, y):
        return tg.stack([t.inv(s) for t, s in zip(self.transforms, self._slices(y))],
                        self.dim)

    def log_abs_det_jacobian(self, x, y):
        return tg.stack([t.log_abs_det_jacobian(a, b) for t, a, b in
                         zip(self.transforms, self._slices(x), self._slices(y))], self.dim)

    def __eq__(self, other):
        return isinstance(other, StackTransform) and self.transforms == other.transforms \
            and self.dim == other.dim

    __hash__ = object.__hash__
