"""``tg.special`` (``torch.special``): the special functions of torch 2.13 on eager tensors
(this file is ``torch_special.py``: ``scipy/special.py`` is ``tg.scipy.special``).

Three kinds:

* aliases of the eager operations torch's names stand for (``gammaln`` is ``lgamma``,
  ``expit`` is ``sigmoid``, ``psi`` is ``digamma``, ``multigammaln`` is ``mvlgamma``,
  ``gammainc``/``gammaincc`` are ``igamma``/``igammac``, ``erf``, ``logit``, ``softmax``,
  ...), with torch.special's argument names;
* the ``scipy.special`` primitives (``ir/prims/scipy_special.py``) under torch's
  ``grad_fn`` names, differentiable to any order where torch is: ``erfcx``, ``i0e``, ``i1``,
  ``i1e``, ``ndtri``, ``log_ndtr``, ``entr``, ``xlog1py``, ``zeta`` (in ``other`` only: its
  derivative in ``input`` raises torch's ``NotImplementedError`` on backward); ``ndtr`` is
  torch's composition ``(1 + erf(x/√2))·0.5`` (its values and ``MulBackward1``);
* functions torch does not differentiate, whose results never require grad: the Bessel
  functions (``bessel_j0``/``j1``/``y0``/``y1``, ``modified_bessel_i0``/``i1``/``k0``/``k1``,
  ``scaled_modified_bessel_k0``/``k1``: SciPy's Cephes functions), ``airy_ai``,
  ``spherical_bessel_j0`` and the orthogonal polynomials (the primitives of
  ``ir/prims/special_more.py``, on torch's algorithms).

Integer and bool inputs give the default float dtype; the binary functions promote their
operands as torch does (a Python number on one side is a weak scalar). Where torch's own
kernels are not SciPy's, the values differ from torch's by what its kernels differ from
SciPy's: ``bessel_j0``/``j1``/``y0``/``y1`` by up to about 1e-7 relative near their zeros
and past x = 5 (torch's rational approximations), ``airy_ai`` by about 1e-8 at some
negative arguments.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from ..ir import apply
from ..tracer import Tracer
from .arithmetic import _no_kernel
from .dispatch import call
from .functions import FUNCTIONS as _F
from .math_ops import _binary_dtype, _floating, _prim, _refused, _stop
from .tensor_base import TensorBase

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma",
    "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0", "i0e", "i1",
    "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr",
    "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma",
    "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
    "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]


def _input(name, x, arg="input", pos=1):
    if not isinstance(x, TensorBase):
        raise TypeError(f"special_{name}(): argument '{arg}' (position {pos}) must be Tensor, "
                        f"not {type(x).__name__}")
    return x


# -- aliases ---------------------------------------------------------------------------------------
def _alias(name, target):
    fn = _F[target]

    def special_fn(input):
        return fn(_input(name, input))
    special_fn.__name__ = special_fn.__qualname__ = name
    special_fn.__doc__ = f"``torch.special.{name}``: ``tg.{target}``."
    return special_fn


digamma = _alias("digamma", "digamma")
psi = _alias("psi", "digamma")
erf = _alias("erf", "erf")
erfc = _alias("erfc", "erfc")
erfinv = _alias("erfinv", "erfinv")
exp2 = _alias("exp2", "exp2")
expm1 = _alias("expm1", "expm1")
log1p = _alias("log1p", "log1p")
gammaln = _alias("gammaln", "lgamma")
i0 = _alias("i0", "i0")
sinc = _alias("sinc", "sinc")
expit = _alias("expit", "sigmoid")


def logit(input, eps=None):
    """``torch.special.logit``: ``tg.logit``."""
    return _F["logit"](_input("logit", input), eps)


def polygamma(n, input):
    """``torch.special.polygamma(n, input)``: ``tg.polygamma``."""
    return _F["polygamma"](n, _input("polygamma", input, pos=2))


def multigammaln(input, p):
    """``torch.special.multigammaln``: ``tg.mvlgamma``."""
    return _F["mvlgamma"](_input("multigammaln", input), p)


def xlogy(input, other):
    """``torch.special.xlogy``: ``tg.xlogy``."""
    return _F["xlogy"](input, other)


def gammainc(input, other):
    """``torch.special.gammainc``: ``tg.igamma`` (no derivative in ``input``)."""
    _input("gammainc", input)
    _input("gammainc", other, "other", 2)
    return _F["igamma"](input, other)


def gammaincc(input, other):
    """``torch.special.gammaincc``: ``tg.igammac`` (no derivative in ``input``)."""
    _input("gammaincc", input)
    _input("gammaincc", other, "other", 2)
    return _F["igammac"](input, other)


def softmax(input, dim, *, dtype=None):
    """``torch.special.softmax``: ``tg.softmax``."""
    return _F["softmax"](_input("softmax", input), dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """``torch.special.log_softmax``: ``tg.log_softmax``."""
    return _F["log_softmax"](_input("log_softmax", input), dim, dtype=dtype)


def logsumexp(input, dim, keepdim=False):
    """``torch.special.logsumexp``: ``tg.logsumexp``."""
    return _F["logsumexp"](_input("logsumexp", input), dim, keepdim)


def round(input, *, decimals=0):  # noqa: A001  (torch's name)
    """``torch.special.round``: round half to even at ``decimals`` decimal places (torch's
    ``round.decimals``: no kernel for integers; a zero gradient, ``RoundBackward1``)."""
    _input("round", input)
    decimals = int(decimals)
    _no_kernel("round_vml_cpu" if decimals == 0 else "round_cpu", input.dtype, "biuc")

    def fn(x):
        if decimals == 0:
            return np.round(x)
        scale = np.asarray(10.0 ** builtins.abs(decimals), x.dtype)
        if decimals > 0:
            return np.round(x * scale) / scale
        return np.round(x / scale) * scale
    return call(fn, input, name="RoundBackward1")



# -- scipy.special primitives under torch's names --------------------------------------------------
def _unary(name, prim, grad_fn, kernel=None):
    fn = _prim(prim)

    def special_fn(input):
        _input(name, input)
        _no_kernel(kernel or f"{name}_cpu", input.dtype, "c")
        return call(fn, _floating(input), name=grad_fn)
    special_fn.__name__ = special_fn.__qualname__ = name
    special_fn.__doc__ = f"``torch.special.{name}``: scipy.special.{prim} (``{grad_fn}``)."
    return special_fn


erfcx = _unary("erfcx", "erfcx", "SpecialErfcxBackward0")
i0e = _unary("i0e", "i0e", "SpecialI0EBackward0", "i0e_cpu")
i1 = _unary("i1", "i1", "SpecialI1Backward0", "i1_cpu")
i1e = _unary("i1e", "i1e", "SpecialI1EBackward0", "i1e_cpu")
ndtri = _unary("ndtri", "ndtri", "SpecialNdtriBackward0")
log_ndtr = _unary("log_ndtr", "log_ndtr", "SpecialLogNdtrBackward0")
entr = _unary("entr", "entr", "SpecialEntrBackward0")

_SQRT1_2 = 1.0 / math.sqrt(2.0)


def _ndtr(x):
    half = np.asarray(0.5, x.dtype)
    return (np.ones((), x.dtype) + _prim("erf")(x * np.asarray(_SQRT1_2, x.dtype))) * half


def ndtr(input):
    """``torch.special.ndtr``: torch's ``(1 + erf(x/√2))·0.5`` (0 far in the lower tail,
    as torch's; ``MulBackward1``)."""
    _input("ndtr", input)
    _no_kernel("erf_vml_cpu", input.dtype, "c")
    return call(_ndtr, _floating(input), name="MulBackward1")


# -- binary: scalars on either side, torch's promotion -----------------------------------------
def _operands(name, a, b, names=("input", "other")):
    """``a``, ``b`` as tensors of their promoted float dtype (one may be a number)."""
    ta, tb = isinstance(a, TensorBase), isinstance(b, TensorBase)
    if not ta and not tb:
        raise TypeError(f"special_{name}() received an invalid combination of arguments - got "
                        f"({type(a).__name__}, {type(b).__name__}), but expected one of:\n"
                        f" * (Tensor {names[0]}, Tensor {names[1]}, *, Tensor out = None)\n"
                        f" * (Number {'self' if names[0] == 'input' else names[0]}, Tensor "
                        f"{names[1]}, *, Tensor out = None)\n"
                        f" * (Tensor {names[0]}, Number {names[1]}, *, Tensor out = None)\n")
    dtype = _binary_dtype(a, b, float_result=True)
    like = a if ta else b
    a = a if ta else like._plain(np.asarray(a, dtype))
    b = b if tb else like._plain(np.asarray(b, dtype))
    return a.to(dtype) if a.dtype != dtype else a, b.to(dtype) if b.dtype != dtype else b, dtype


def xlog1py(input, other):
    """``torch.special.xlog1py``: x·log1p(y), 0 where x == 0 (``SpecialXlog1PyBackward0``;
    torch's derivatives: log1p(y) in x, x/(1 + y) in y)."""
    a, b, dtype = _operands("xlog1py", input, other)
    _no_kernel("xlog1py_cpu", dtype, "c")
    return call(_prim("xlog1py"), a, b, name="SpecialXlog1PyBackward0")


_ZETA_MESSAGE = "the derivative for 'zeta' is not implemented."


def _zeta_edges(out, x, q):
    # torch's kernel at q = inf: NaN for x > 1 (SciPy: 0)
    return np.where((q == np.inf) & (x > 1), np.asarray(np.nan, out.dtype), out)


def _zeta(x, q):
    if not isinstance(x, Tracer):
        return _zeta_edges(_prim("zeta")(x, q), x, q)
    out = _prim("zeta")(_stop(x), q)
    refused = _refused(np.zeros(np.shape(x), x.dtype), _ZETA_MESSAGE, NotImplementedError, x)
    out = out + np.sum(refused) * 0 if out.shape != refused.shape else out + refused * 0
    return _zeta_edges(out, _stop(x), q)


def zeta(input, other):
    """``torch.special.zeta(x, q)``: the Hurwitz zeta function (``SpecialZetaBackward0``),
    differentiable in q; torch's ``NotImplementedError`` on a backward through x."""
    a, b, dtype = _operands("zeta", input, other)
    _no_kernel("zeta_cpu", dtype, "c")
    return call(_zeta, a, b, name="SpecialZetaBackward0")


# -- not differentiated (torch's results never require grad) ---------------------------------
def _plain(name, prim, kernel=None):
    def special_fn(input):
        _input(name, input, "self" if "bessel" in name or name == "airy_ai" else "input")
        _no_kernel(kernel or f"{name}_cpu", input.dtype, "c")
        return call(_prim(prim), _floating(input.detach()))
    special_fn.__name__ = special_fn.__qualname__ = name
    special_fn.__doc__ = (f"``torch.special.{name}`` (not differentiated, as in torch: the "
                          f"result does not require grad).")
    return special_fn


airy_ai = _plain("airy_ai", "airy_ai")
bessel_j0 = _plain("bessel_j0", "j0")
bessel_j1 = _plain("bessel_j1", "j1")
bessel_y0 = _plain("bessel_y0", "y0")
bessel_y1 = _plain("bessel_y1", "y1")
modified_bessel_i0 = _plain("modified_bessel_i0", "i0")
modified_bessel_i1 = _plain("modified_bessel_i1", "i1")
modified_bessel_k0 = _plain("modified_bessel_k0", "k0")
modified_bessel_k1 = _plain("modified_bessel_k1", "k1")
scaled_modified_bessel_k0 = _plain("scaled_modified_bessel_k0", "k0e")
scaled_modified_bessel_k1 = _plain("scaled_modified_bessel_k1", "k1e")
spherical_bessel_j0 = _plain("spherical_bessel_j0", "spherical_bessel_j0")


def _polynomial(name):
    def special_fn(x, n):
        a, b, dtype = _operands(name, x, n, ("x", "n"))
        _no_kernel(f"{name}_cpu", dtype, "c")
        return call(lambda x, n: apply(name, x, n), a.detach(), b.detach())
    special_fn.__name__ = special_fn.__qualname__ = name
    special_fn.__doc__ = (f"``torch.special.{name}(x, n)``: the polynomial of degree n "
                          f"(truncated to an integer) at x, by ATen's algorithm; not "
                          f"differentiated, as in torch.")
    return special_fn


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t")
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u")
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v")
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w")
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t")
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u")
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v")
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w")
hermite_polynomial_h = _polynomial("hermite_polynomial_h")
hermite_polynomial_he = _polynomial("hermite_polynomial_he")
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l")
legendre_polynomial_p = _polynomial("legendre_polynomial_p")
