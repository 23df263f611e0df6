"""PyTorch's other first-order optimizers: Adamax, NAdam, RAdam, Rprop, ASGD, Adafactor.

Written as ``optimizer.py``'s are (NumPy on the parameters' arrays, in place, so that a
``tg.compile`` capture records them on its tracers), following PyTorch's single-tensor
(``foreach=False``, the CPU default) code operation by operation. PyTorch's vectorised CPU
kernels compute ``add(alpha=)``, ``addcmul`` and ``lerp`` as one fused multiply-add;
``_fma`` does the same for float32 (the product and sum in float64, rounded once), so
float32 runs agree with PyTorch's to the bit where no square root enters (PyTorch's
``sqrt`` is not correctly rounded on its vectorised path). Float64's fused multiply-add
is two roundings here (a last-bit difference at most per operation).

Step-dependent numbers (bias corrections, NAdam's momentum cache, ASGD's ``eta``) are
Python arithmetic on the step count, which a capture turns into a weakly typed graph
value: they meet the arrays as PyTorch's Python scalars do (cast to the parameter's
dtype), and the branches PyTorch takes on them in Python (RAdam's ``rho_t > 5``, ASGD's
``mu != 1``) are ``np.where`` here, which picks the same numbers in both runs.
"""
from __future__ import annotations

import numpy as np

from ..creation import get_default_dtype
from ..tensor import Tensor
from .optimizer import Optimizer, _check

__all__ = ["Adamax", "NAdam", "RAdam", "Rprop", "ASGD", "Adafactor"]


def _lr_value(lr):
    """A tensor learning rate as PyTorch's ``_to_scalar`` leaves it: a 0-d value of its
    own dtype (arithmetic with Python numbers stays in that dtype)."""
    if isinstance(lr, Tensor):
        return np.reshape(lr._data, ())
    return lr


def _check_lr(lr):
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    _check("learning rate", lr, lr >= 0.0)


def _check_betas(betas):
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


def _c(x, dt):
    """A scalar as PyTorch hands it to a kernel of dtype ``dt`` (rounded to it)."""
    return np.asarray(x, dtype=dt)


def _split(a):
    """Dekker's split of float64 ``a`` into 26-bit halves (``hi + lo == a``)."""
    t = 134217729.0 * a
    hi = t - (t - a)
    return hi, a - hi


def _fma(a, b, c, dt):
    """``a * b + c`` as PyTorch's vectorised ``fmadd``, with one rounding: for float32 the
    product is exact in float64 and the sum rounded there, then to float32; for float64
    the product's and the sum's rounding errors are recovered (Dekker's product, Knuth's
    sum) and added back, which rounds as the fused operation does but in double-rounding
    ties far rarer than any test meets. Non-finite results are the plain ``a * b + c``."""
    if dt == np.float32:
        wide = np.float64
        return (_c(a, dt).astype(wide) * _c(b, dt).astype(wide)
                + _c(c, dt).astype(wide)).astype(dt)
    if dt != np.float64:
        return _c(a, dt) * _c(b, dt) + _c(c, dt)
    a, b, c = _c(a, dt), _c(b, dt), _c(c, dt)
    p = a * b
    (ah, al), (bh, bl) = _split(a), _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    v = s - p
    t = (p - (s - v)) + (c - v)
    r = s + (t + e)
    return np.where(np.isfinite(r), r, s)


def _lerp_(start, end, weight, dt):
    """``start.lerp_(end, weight)`` with PyTorch's vectorised formula."""
    w = _c(weight, dt)
    if weight < 0.5:
        start[...] = _fma(w, end - start, start, dt)
    else:
        start[...] = _fma(w - _c(1, dt), end - start, end, dt)


def _addcmul_(t, t1, t2, value, dt):
    """``t.addcmul_(t1, t2, value=value)``: ``fmadd(value * t1, t2, t)``."""
    t[...] = _fma(_c(value, dt) * t1, t2, t, dt)


def _add_wd(grad, p, wd, dt):
    """``grad.add(param, alpha=weight_decay)``."""
    return _fma(p, wd, grad, dt)


def _scalar_dtype():
    """PyTorch's ``_get_scalar_dtype()``: float64 under a float64 default, else float32."""
    return np.dtype(np.float64 if np.dtype(get_default_dtype()) == np.float64 else np.float32)


class Adamax(Optimizer):
    """Adamax: Adam with the infinity norm, ``u = max(beta2 * u, |g| + eps)``, and
    ``p -= lr / (1 - beta1 ** t) * m / u``."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check("epsilon value", eps, eps >= 0.0)
        _check_betas(betas)
        _check("weight_decay value", weight_decay, weight_decay >= 0.0)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def _update(self, p, grad, group, state):
        dt = p._data.dtype
        lr, (beta1, beta2) = _lr_value(group["lr"]), group["betas"]
        eps, wd = group["eps"], group["weight_decay"]
        if group["maximize"]:
            grad = -grad
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(p._data)
            state["exp_inf"] = np.zeros_like(p._data)
        state["step"] += 1
        if wd != 0:
            grad = _add_wd(grad, p._data, wd, dt)
        exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
        _lerp_(exp_avg, grad, 1 - beta1, dt)
        exp_inf *= beta2
        np.maximum(exp_inf, np.abs(grad) + _c(eps, dt), out=exp_inf)
        clr = lr / (1 - beta1 ** state["step"])
        p._data += (_c(-clr, dt) * exp_avg) / exp_inf


class NAdam(Optimizer):
    """NAdam (Dozat): Adam with Nesterov momentum, the momentum cache
    ``mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))`` and its running product
    (``mu_product``, a 0-d state of the default dtype, as PyTorch keeps it)."""

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        _check_lr(lr)
        _check("epsilon value", eps, eps >= 0.0)
        _check_betas(betas)
        _check("weight_decay value", weight_decay, weight_decay >= 0.0)
        _check("momentum_decay value", momentum_decay, momentum_decay >= 0.0)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach,
                                      capturable=capturable, differentiable=differentiable))

    def _update(self, p, grad, group, state):
        dt = p._data.dtype
        lr, (beta1, beta2) = _lr_value(group["lr"]), group["betas"]
        eps, wd, md = group["eps"], group["weight_decay"], group["momentum_decay"]
        if group["maximize"]:
            grad = -grad
        if not state:
            state["step"] = 0
            state["mu_product"] = np.ones((), _scalar_dtype())
            state["exp_avg"] = np.zeros_like(p._data)
            state["exp_avg_sq"] = np.zeros_like(p._data)
        state["step"] += 1
        step = state["step"]
        bias_correction2 = 1 - beta2 ** step
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p._data *= _c(1 - lr * wd, dt)
            else:
                grad = _add_wd(grad, p._data, wd, dt)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * md)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * md)))
        mu_product = state["mu_product"]
        mu_product *= mu
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        _lerp_(exp_avg, grad, 1 - beta1, dt)
        exp_avg_sq *= beta2
        _addcmul_(exp_avg_sq, grad, grad, 1 - beta2, dt)
        denom = np.sqrt(exp_avg_sq / _c(bias_correction2, dt))
        mp = mu_product.astype(np.float64)       # PyTorch's mu_product.item()
        mu_product_next = mp * mu_next
        denom += _c(eps, dt)
        p._data += (_c(-lr * (1.0 - mu) / (1.0 - mp), dt) * grad) / denom
        p._data += (_c((-lr * mu_next) / (1.0 - mu_product_next), dt) * exp_avg) / denom


class RAdam(Optimizer):
    """RAdam (Liu et al.): Adam whose adaptive step is rectified by the variance of its
    approximated moving average's length ``rho_t``; plain momentum SGD while
    ``rho_t <= 5``."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        _check_lr(lr)
        _check("epsilon value", eps, eps >= 0.0)
        _check_betas(betas)
        _check("weight_decay value", weight_decay, weight_decay >= 0.0)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, foreach=foreach,
                                      capturable=capturable,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      differentiable=differentiable))

    def _update(self, p, grad, group, state):
        dt = p._data.dtype
        lr, (beta1, beta2) = _lr_value(group["lr"]), group["betas"]
        eps, wd = group["eps"], group["weight_decay"]
        if group["maximize"]:
            grad = -grad
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(p._data)
            state["exp_avg_sq"] = np.zeros_like(p._data)
        state["step"] += 1
        step = state["step"]
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p._data *= _c(1 - lr * wd, dt)
            else:
                grad = _add_wd(grad, p._data, wd, dt)
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        _lerp_(exp_avg, grad, 1 - beta1, dt)
        exp_avg_sq *= beta2
        _addcmul_(exp_avg_sq, grad, grad, 1 - beta2, dt)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        corrected = exp_avg / _c(bias_correction1, dt)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        # PyTorch's Python branch on rho_t > 5, as a choice between the two updates (the
        # rectification clipped at 0 where it is not taken, so that it stays real)
        # (rho_t < rho_inf: with rho_inf <= 5 the branch is never taken)
        plain = corrected * _c(lr, dt)
        if rho_inf <= 5.0:
            p._data -= plain
            return
        rect = np.maximum((rho_t - 4) * (rho_t - 2) * rho_inf
                          / ((rho_inf - 4) * (rho_inf - 2) * rho_t), 0.0) ** 0.5
        adaptive = _c(bias_correction2 ** 0.5, dt) / (np.sqrt(exp_avg_sq) + _c(eps, dt))
        p._data -= np.where(rho_t > 5.0, plain * adaptive * _c(rect, dt), plain)


class Rprop(Optimizer):
    """Rprop: per-element step sizes grown by ``etas[1]`` while the gradient keeps its
    sign, shrunk by ``etas[0]`` (and the step skipped) when it flips, kept within
    ``step_sizes``; the parameter moves by the step size against the gradient's sign."""

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def _update(self, p, grad, group, state):
        dt = p._data.dtype
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        if group["maximize"]:
            grad = -grad
        if not state:
            state["step"] = 0
            state["prev"] = np.zeros_like(p._data)
            state["step_size"] = np.full_like(grad, _c(_lr_value(group["lr"]), dt))
        state["step"] += 1
        prev, step_size = state["prev"], state["step_size"]
        sign = np.sign(grad * prev)
        sign = np.where(sign > 0, _c(etaplus, dt), sign)
        sign = np.where(sign < 0, _c(etaminus, dt), sign)
        sign = np.where(sign == 0, _c(1, dt), sign)
        step_size *= sign
        np.clip(step_size, _c(step_size_min, dt), _c(step_size_max, dt), out=step_size)
        grad = np.where(sign == _c(etaminus, dt), _c(0, dt), grad)
        p._data -= np.sign(grad) * step_size
        prev[...] = grad


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky): SGD with the decaying step
    ``eta = lr / (1 + lambd * lr * t) ** alpha`` and the running average ``ax`` of the
    iterates from step ``t0`` on. ``eta`` and ``mu`` are 0-d states of the default
    dtype, as PyTorch keeps them."""

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check("weight_decay value", weight_decay, weight_decay >= 0.0)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _update(self, p, grad, group, state):
        dt = p._data.dtype
        lr, lambd, alpha, t0 = _lr_value(group["lr"]), group["lambd"], group["alpha"], \
            group["t0"]
        wd = group["weight_decay"]
        if group["maximize"]:
            grad = -grad
        if not state:
            sdt = _scalar_dtype()
            state["step"] = 0
            state["eta"] = np.array(lr, dtype=sdt)
            state["mu"] = np.ones((), sdt)
            state["ax"] = np.zeros_like(p._data)
        state["step"] += 1
        step = state["step"]
        if wd != 0:
            grad = _add_wd(grad, p._data, wd, dt)
        eta = state["eta"].astype(np.float64)       # PyTorch's eta.item()
        p._data *= _c(1 - lambd * eta, dt)
        p._data[...] = _fma(grad, -eta, p._data, dt)
        ax, mu = state["ax"], state["mu"]
        ax[...] = np.where(mu != 1, ax + (p._data - ax) * _c(mu, dt), p._data)
        # PyTorch's torch.as_tensor(value) (the default dtype, or a tensor lr's), copied
        # into the state (of the parameter's dtype after a load_state_dict)
        made = lr.dtype if isinstance(lr, np.ndarray) else _scalar_dtype()
        state["eta"] = _c(_c(lr / ((1 + lambd * lr * step) ** alpha), made),
                          state["eta"].dtype)
        state["mu"] = _c(_c(1 / np.maximum(1, step - t0), _scalar_dtype()), state["mu"].dtype)


def _lerp_any_(start, end, weight, dt):
    """``_lerp_`` for a weight that may be a graph value (Adafactor's ``t ** decay``): the
    choice between PyTorch's two formulas made by ``np.where``."""
    w = _c(weight, dt)
    low = w < 0.5
    start[...] = _fma(np.where(low, w, w - _c(1, dt)), end - start,
                      np.where(low, start, end), dt)


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern) as ``torch.optim.Adafactor``: factored second moments
    (row and column means of the squared gradient) for matrices, relative step sizes
    ``max(eps2, rms(p)) * min(lr, t ** -0.5)``, the update clipped to an RMS of ``d``."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))

    def step(self, closure=None):
        self._eps1 = {}     # PyTorch resolves eps1=None once per group, from its first param
        return super().step(closure)

    def _update(self, p, grad, group, state):
        dt = p._data.dtype
        lr = _lr_value(group["lr"])
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = self._eps1.setdefault(id(group), float(np.finfo(dt).eps))
        wd, d = group["weight_decay"], group["d"]
        if group["maximize"]:
            grad = -grad
        if not state:
            state["step"] = 0
            if grad.ndim > 1:
                state["row_var"] = np.zeros(grad.shape[:-1] + (1,), dt)
                state["col_var"] = np.zeros(grad.shape[:-2] + (1,) + grad.shape[-1:], dt)
            else:
                state["variance"] = np.zeros_like(grad)
        state["step"] += 1
        step = state["step"]
        one_minus_beta2_t = step ** group["beta2_decay"]
        rho_t = np.minimum(np.asarray(lr, np.float64), 1 / (step ** 0.5))
        norm = np.sqrt(np.sum(p._data * p._data)).astype(np.float64)
        alpha = np.maximum(eps2, norm / (p._data.size ** 0.5)) * rho_t
        if wd != 0:
            p._data *= _c(1 - lr * wd, dt)
        if grad.ndim > 1:
            g2 = grad * grad
            row_mean = np.square(np.sqrt(np.sum(g2, axis=-1, keepdims=True)))
            row_mean /= _c(grad.shape[-1], dt)
            _lerp_any_(state["row_var"], row_mean, one_minus_beta2_t, dt)
            col_mean = np.square(np.sqrt(np.sum(g2, axis=-2, keepdims=True)))
            col_mean /= _c(grad.shape[-2], dt)
            _lerp_any_(state["col_var"], col_mean, one_minus_beta2_t, dt)
            var_estimate = np.matmul(state["row_var"], state["col_var"])
            var_estimate /= np.maximum(np.mean(state["row_var"], axis=-2, keepdims=True),
                                       _c(eps1, dt))
        else:
            _lerp_any_(state["variance"], grad * grad, one_minus_beta2_t, dt)
            var_estimate = np.array(state["variance"], copy=True)
        update = _c(1, dt) / np.sqrt(np.maximum(var_estimate, _c(eps1 * eps1, dt)))
        update *= grad
        rms = np.sqrt(np.sum(update * update)).astype(np.float64)
        denom = np.maximum(1.0, rms / ((update.size ** 0.5) * d))
        p._data[...] = _fma(update, -alpha / denom, p._data, dt)
