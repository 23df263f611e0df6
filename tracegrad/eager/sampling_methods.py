"""PyTorch's sampling functions beyond ``rand``/``randn``/``randint`` (``SamplingMethods``
and the module-level functions): ``normal`` (its four overloads), ``bernoulli``,
``poisson``, ``binomial``, ``randint_like``; ``exponential_``, ``geometric_``,
``cauchy_``, ``log_normal_``; and the default generator's state
(``get_rng_state``/``set_rng_state``/``seed``/``initial_seed``: torch_random.py, also
``tg.random.*``).

Each draws from tracegrad's copy of PyTorch's CPU generator (random.py) with the
transform PyTorch's CPU kernel applies, so that for the same ``manual_seed`` the numbers
are PyTorch's bit for bit (checked against torch 2.13 in
tests/test_torch_names_shapes.py):

- ``normal(mean, std)`` with tensors: ``normal_(0, 1)`` then ``* std + mean``; with a
  tensor ``mean`` and a float ``std``: ``normal_(0, std) + mean``; with a float ``mean``
  and a tensor ``std``: ``normal_(0, 1) * std + mean`` (PyTorch's ``normal_out_impl``);
  the result requires grad as PyTorch's (``NormalBackward1/2/3``) with PyTorch's zero
  gradient for ``mean`` and ``std``. Normals of 16 elements or more can differ from
  PyTorch's in the last bit (see random.py);
- ``bernoulli(p)``: a uniform in ``p``'s dtype (24 bits for float32, 53 for float64)
  below ``p``; ``bernoulli(x, p=0.3)``: a 53-bit one; the gradient is zero;
- ``poisson``, ``binomial``: PyTorch's serial samplers, one 53-bit uniform at a time;
- ``exponential_``: ``-log1p(-u) / lambd``; ``geometric_``: ``ceil(log u / log1p(-p))``;
  ``cauchy_``: ``median + sigma tan(pi (u - 1/2))``, of 53-bit uniforms;
  ``log_normal_``: ``exp`` of one serial double normal per element.
"""
from __future__ import annotations

import numpy as np

from .arithmetic import _err
from .arithmetic import _tensor_operand as _as_tensor
from .device import resolve as _device
from .dispatch import call
from .inplace import _fill_plain
from .random import draw_dtype, generator_of
from .tensor_base import TensorBase, _scalar_name


def _drawn(values, name, operands):
    """``values`` (drawn) as the result of ``operands``, whose gradient for each of them is
    an exact zero, as PyTorch's derivatives of its samplers (``NormalBackward*``,
    ``BernoulliBackward0``, ``PoissonBackward0``): no reparameterisation."""
    values = np.asarray(values)
    if not any(o.requires_grad for o in operands):
        return operands[0]._plain(values)
    ones = np.ones(values.shape, bool)

    def fn(*xs):
        out = values
        for x in xs:
            out = out + np.where(ones, np.zeros((), values.dtype), x)
        return out
    return call(fn, *operands, name=name)


def _zero_grad_result(x, values, name):
    return _drawn(values.astype(x.dtype), name, (x,))


def _float_kind(dtype, what):
    if np.dtype(dtype).kind != "f":
        raise NotImplementedError(f"\"{what}\" not implemented for '{_scalar_name(dtype)}'")


# -- normal (the tensor overloads; creation.py's ``normal`` also takes floats and a size) -------
def normal_of_tensors(mean, std, generator=None):
    """``normal(mean, std)`` with tensors (or one tensor and a float) of the broadcast
    shape: PyTorch's numbers for the same seed (see the module's notes)."""
    g = generator_of(generator)
    tm, ts = isinstance(mean, TensorBase), isinstance(std, TensorBase)
    if tm and ts:
        m, s = mean, std
        if s._data is not None and s._data.size and (s._data < 0).any():
            raise _err("normal expects all elements of std >= 0.0")
        shape = tuple(np.broadcast_shapes(tuple(m.shape), tuple(s.shape)))
        dt = np.result_type(m.dtype, s.dtype)
        _float_kind(dt, "normal_kernel_cpu")
        eps = g.normal(shape, draw_dtype(dt)).astype(dt)
        with np.errstate(all="ignore"):
            values = eps * s._concrete("normal") + m._concrete("normal")
        return _drawn(values, name="NormalBackward3", operands=(m, s))
    if tm:
        m = mean
        if std < 0:
            raise _err(f"normal expects std >= 0.0, but found std {std:g}")
        dt = m.dtype
        _float_kind(dt, "normal_kernel_cpu")
        eps = g.normal(tuple(m.shape), draw_dtype(dt), 0.0, float(std)).astype(dt)
        return _drawn(eps + m._concrete("normal"), name="NormalBackward1", operands=(m,))
    s = std
    if s._data is not None and s._data.size and (s._data < 0).any():
        raise _err("normal expects all elements of std >= 0.0")
    dt = s.dtype
    _float_kind(dt, "normal_kernel_cpu")
    eps = g.normal(tuple(s.shape), draw_dtype(dt)).astype(dt)
    with np.errstate(all="ignore"):
        values = eps * s._concrete("normal") + np.asarray(mean, dt)
    return _drawn(values, name="NormalBackward2", operands=(s,))


# -- bernoulli, poisson, binomial --------------------------------------------------------------
def bernoulli(input, p=None, *, generator=None, out=None):  # noqa: A002
    """Zeros and ones, one with probability ``input`` (element-wise), or ``p`` (a float,
    for every element of a tensor shaped as ``input``); ``input``'s dtype."""
    x = _as_tensor(input)
    g = generator_of(generator)
    shape = tuple(x.shape)
    if p is not None and not isinstance(p, TensorBase):
        if not 0 <= p <= 1:
            raise _err(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        values = g.bernoulli(shape, p)
    else:
        probs = x if p is None else _as_tensor(p, x)
        data = probs._concrete("bernoulli")
        if data.dtype.kind != "f":
            raise NotImplementedError(f"\"bernoulli_tensor_cpu_p_\" not implemented for "
                                      f"'{_scalar_name(data.dtype)}'")
        if data.size and ((data < 0) | (data > 1)).any():
            raise _err("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could "
                       "this error message be improved?  If so, please report an "
                       "enhancement request to PyTorch.)")
        u = g._unit(max(data.size, 0), draw_dtype(data.dtype))
        values = (u < np.broadcast_to(data, shape).reshape(-1).astype(np.float64)) \
            .reshape(shape)
    return _zero_grad_result(x, values, "BernoulliBackward0")


def poisson(input, generator=None):  # noqa: A002
    """A Poisson sample for each rate in ``input`` (PyTorch's sampler, its numbers for
    the same seed); the gradient is zero."""
    x = _as_tensor(input)
    rates = x._concrete("poisson")
    _float_kind(rates.dtype, "poisson_cpu")
    if rates.size and (rates < 0).any():
        raise _err("invalid Poisson rate, expected rate to be non-negative")
    return _zero_grad_result(x, generator_of(generator).poisson(rates), "PoissonBackward0")


def binomial(count, prob, generator=None):
    """A binomial sample for each ``count`` and ``prob`` (PyTorch's sampler, its numbers
    for the same seed). No gradient: PyTorch's is not implemented (its result reports a
    ``grad_fn`` whose backward raises; tracegrad's result does not require grad)."""
    c, p = _as_tensor(count), _as_tensor(prob, count)
    if c.dtype != p.dtype:
        raise _err(f"Found dtype {_scalar_name(p.dtype)} but expected {_scalar_name(c.dtype)}")
    _float_kind(c.dtype, "binomial_cpu")
    cd, pd = c._concrete("binomial"), p._concrete("binomial")
    if cd.shape != pd.shape:
        np.broadcast_shapes(cd.shape, pd.shape)
    values = generator_of(generator).binomial(cd, pd, c.dtype)
    return c._plain(values.astype(c.dtype))


def randint_like(input, low=0, high=None, *, dtype=None, layout=None, device=None,  # noqa: A002
                 requires_grad=False, memory_format=None, generator=None):
    """Integers in ``[low, high)`` (``randint_like(t, high)`` counts from 0) shaped as
    ``input``, in its dtype: ``randint``'s numbers for the same seed."""
    _device(device)
    x = _as_tensor(input)
    if high is None:
        low, high = 0, low
    dt = x.dtype if dtype is None else np.dtype(dtype)
    arr = generator_of(generator).integers(low, high, tuple(x.shape)).astype(dt)
    t = x._plain(arr)
    if requires_grad:
        t.requires_grad = True
    return t


# -- in-place samplers -----------------------------------------------------------------------
def _fill(self, values, name):
    return _fill_plain(self, values, name)


class SamplingMethods:
    """``Tensor``'s sampling methods: ``bernoulli`` and the in-place ``exponential_``,
    ``geometric_``, ``cauchy_``, ``log_normal_``."""

    __slots__ = ()

    def bernoulli(self, p=None, *, generator=None):
        return bernoulli(self, p, generator=generator)

    def exponential_(self, lambd=1.0, *, generator=None):
        if self.dtype.kind != "f":
            raise _err("Exponential distribution is a continuous probability distribution. "
                       f"dtype must be a floating point but you specified "
                       f"{_scalar_name(self.dtype)}")
        if not lambd > 0:
            raise _err(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
        return _fill(self, generator_of(generator).exponential(tuple(self.shape), lambd),
                     "ExponentialBackward0")

    def geometric_(self, p, *, generator=None):
        if not 0 < p < 1:
            raise _err(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
        return _fill(self, generator_of(generator).geometric(tuple(self.shape), p),
                     "GeometricBackward0")

    def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
        if self.dtype.kind != "f":
            raise _err("Cauchy distribution is a continuous probability distribution. dtype "
                       f"must be a floating point but you specified {_scalar_name(self.dtype)}")
        if not sigma > 0:
            raise _err(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
        return _fill(self, generator_of(generator).cauchy(tuple(self.shape), median, sigma),
                     "CauchyBackward0")

    def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
        if self.dtype.kind != "f":
            raise _err("log_normal_ is a continuous probability distribution. dtype must be a "
                       f"floating point but you specified {_scalar_name(self.dtype)}")
        if not std > 0:
            raise _err(f"log_normal_ expects std > 0.0, but found std={std:g}")
        return _fill(self, generator_of(generator).log_normal(tuple(self.shape), mean, std),
                     "LogNormalBackward0")


FUNCTIONS = {f.__name__: f for f in (bernoulli, poisson, binomial, randint_like)}
