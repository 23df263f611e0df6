"""The optimizer base class and the first-order optimizers with PyTorch's update rules:
SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta.

A step is plain NumPy on the parameters' arrays, in place, with in-place NumPy operations
wherever PyTorch's formula allows (no temporaries beyond one or two per parameter): an
update is not an operation to differentiate, and the optimizer runs once per training
step on every parameter, so its speed counts. Each parameter's version counter goes up,
as for any in-place change, so a graph recorded before the step refuses to backward
through the old values. The formulas follow PyTorch's single-tensor (CPU) code path
operation by operation, so that float64 runs agree with PyTorch's to rounding.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..creation import get_default_dtype
from ..grad_mode import enable_grad
from ..tensor import Tensor
from ..tensor_base import BROKEN, CAPTURE

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"]


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()
_SET_MESSAGE = ("optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead.")


def _to_saved(value):
    """A state value as ``state_dict`` gives it: arrays become (copied) tensors, lists and
    tuples are walked, the rest (numbers) stays."""
    if isinstance(value, np.ndarray):
        return Tensor._plain(np.array(value, copy=True))
    if isinstance(value, (list, tuple)):
        return type(value)(_to_saved(v) for v in value)
    return value


def _from_saved(value, dtype):
    if isinstance(value, Tensor):
        value = value._data
    if isinstance(value, np.ndarray):
        return np.array(value, dtype=dtype if value.dtype.kind == "f" else value.dtype, copy=True)
    if isinstance(value, (list, tuple)):
        return type(value)(_from_saved(v, dtype) for v in value)
    return value


class Optimizer:
    """Holds ``param_groups`` (dicts of parameters and their hyper-parameters) and the
    per-parameter ``state``; subclasses define ``_update`` (one parameter) or ``step``."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = defaultdict(dict)   # as PyTorch's: optimizer.state[p] is a dict
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + type(params).__name__)
        if isinstance(params, set):
            raise TypeError(_SET_MESSAGE)
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group):
        """Add a group of parameters with its own options (the others from ``defaults``)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, set):
            raise TypeError(_SET_MESSAGE)
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + type(p).__name__)
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        for key, default in self.defaults.items():
            if default is required and key not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {key}")
            group.setdefault(key, default)
        self.param_groups.append(group)
        self._init_group_state(group)

    def _init_group_state(self, group):
        """State a subclass creates when a group is added (Adagrad's accumulators)."""

    def zero_grad(self, set_to_none=True):
        from ..nn.modules import _zero_grad
        for group in self.param_groups:
            for p in group["params"]:
                _zero_grad(p, set_to_none)

    def _params_with_grad(self, group):
        for p in group["params"]:
            g = p._grad
            if g is not None:
                yield p, g._data

    def step(self, closure=None):
        region = BROKEN.get()
        if region is not None and closure is None and region.obj is not self:
            return region.call(self, (), {})     # under a tg.compile graph break
        self._captured()
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p, grad in self._params_with_grad(group):
                if np.iscomplexobj(grad):
                    raise RuntimeError(f"{type(self).__name__} does not support complex "
                                       "parameters here")
                self._update(p, grad, group, self.state.setdefault(p, {}))
                p._vc.v += 1
        return loss

    def _captured(self):
        """Under a ``tg.compile`` capture, a step of an optimizer its walk did not reach
        is a graph break, before the step changes any state (``Capture.optimizer_step``)."""
        capture = CAPTURE.get()
        if capture is not None:
            capture.optimizer_step(self)

    def _update(self, p, grad, group, state):
        raise NotImplementedError

    # -- state ----------------------------------------------------------------------------
    def state_dict(self):
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]}``,
        with parameters replaced by their position, as in PyTorch. State arrays are copied
        into tensors; the step count is a 0-d floating tensor, as PyTorch keeps it."""
        index, groups = {}, []
        for g in self.param_groups:
            for p in g["params"]:
                index.setdefault(id(p), len(index))
            groups.append({**{k: v for k, v in g.items() if k != "params"},
                           "params": [index[id(p)] for p in g["params"]]})
        state = {}
        for p, s in self.state.items():
            if id(p) not in index:
                continue
            saved = {}
            for k, v in s.items():
                if k == "step" and self._step_is_tensor:
                    v = Tensor._plain(np.array(float(v), dtype=get_default_dtype()))
                saved[k] = _to_saved(v)
            state[index[id(p)]] = saved
        return {"state": state, "param_groups": groups}

    _step_is_tensor = True

    def load_state_dict(self, state_dict):
        """Restore hyper-parameters and state saved by ``state_dict`` (this optimizer's or
        PyTorch's structure): the parameters are matched by position."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        by_index = {}
        for saved, own in zip(groups, self.param_groups):
            by_index.update(zip(saved["params"], own["params"]))
            own.update({k: (tuple(v) if k == "betas" else v)
                        for k, v in saved.items() if k != "params"})
        self.state = defaultdict(dict)
        for i, s in state_dict["state"].items():
            p = by_index[int(i)]
            restored = {}
            for k, v in s.items():
                if k == "step" and self._step_is_tensor:
                    v = float(v._data if isinstance(v, Tensor) else v)
                    restored[k] = int(v) if v.is_integer() else v
                else:
                    restored[k] = _from_saved(v, p.dtype)
            self.state[p] = restored

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join(lines) + "\n)"


def _check(name, value, ok):
    if not ok:
        raise ValueError(f"Invalid {name}: {value}")


def _weight_decay(grad, p, group):
    """``maximize`` and L2 ``weight_decay`` as PyTorch applies them to the gradient."""
    if group["maximize"]:
        grad = -grad
    wd = group["weight_decay"]
    if wd != 0:
        grad = grad + wd * p._data
    return grad


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with (Nesterov) momentum and L2 weight
    decay::

        g = grad + weight_decay * p
        buf = g (first step), else momentum * buf + (1 - dampening) * g
        g = g + momentum * buf if nesterov else buf
        p -= lr * g
    """

    _step_is_tensor = False

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        _check("learning rate", lr, lr >= 0.0)
        _check("momentum value", momentum, momentum >= 0.0)
        _check("weight_decay value", weight_decay, weight_decay >= 0.0)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    def _update(self, p, grad, group, state):
        grad = _weight_decay(grad, p, group)
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = np.array(grad, copy=True)
            else:
                buf *= momentum
                damp = 1 - group["dampening"]
                buf += grad if damp == 1 else damp * grad
            grad = grad + momentum * buf if group["nesterov"] else buf
        p._data -= group["lr"] * grad


class Adam(Optimizer):
    """Adam (Kingma & Ba) in PyTorch's form: L2 ``weight_decay`` is added to the gradient
    (or, with ``decoupled_weight_decay``, ``p *= 1 - lr * weight_decay`` first, as AdamW),
    the bias corrections fold into the step size, and ``eps`` is added after dividing
    the root of the second moment by its bias correction."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        _check("learning rate", lr, lr >= 0.0)
        _check("epsilon value", eps, eps >= 0.0)
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        _check("weight_decay value", weight_decay, weight_decay >= 0.0)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=foreach,
                                      capturable=capturable, differentiable=differentiable,
                                      fused=fused,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def _update(self, p, grad, group, state):
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], \
            group["weight_decay"]
        if group["maximize"]:
            grad = -grad
        if wd != 0:
            if group["decoupled_weight_decay"]:
                p._data *= 1 - lr * wd
            else:
                grad = grad + wd * p._data
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(p._data)
            state["exp_avg_sq"] = np.zeros_like(p._data)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = np.zeros_like(p._data)
        state["step"] += 1
        step = state["step"]
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m += (1 - beta1) * (grad - m)           # PyTorch's lerp_(grad, 1 - beta1)
        v *= beta2
        v += (1 - beta2) * (grad * grad)
        if group["amsgrad"]:
            np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
            v = state["max_exp_avg_sq"]
        step_size = lr / (1 - beta1 ** step)
        denom = np.sqrt(v)
        denom /= (1 - beta2 ** step) ** 0.5
        denom += eps
        update = m / denom
        update *= step_size
        p._data -= update


class AdamW(Adam):
    """Adam with decoupled weight decay: ``p *= 1 - lr * weight_decay`` before the Adam
    step, instead of adding ``weight_decay * p`` to the gradient."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, **kwargs):
        kwargs["decoupled_weight_decay"] = True
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, **kwargs)


def _lerp_(start, end, weight):
    """``start.lerp_(end, weight)`` with PyTorch's two formulas (exact at both ends)."""
    if weight < 0.5:
        start += weight * (end - start)
    else:
        start[...] = end - (end - start) * (1 - weight)


class RMSprop(Optimizer):
    """RMSprop: the gradient divided by the root of a running mean of its square
    (``centered``: of its variance), with optional momentum."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        _check("learning rate", lr, lr >= 0.0)
        _check("epsilon value", eps, eps >= 0.0)
        _check("momentum value", momentum, momentum >= 0.0)
        _check("weight_decay value", weight_decay, weight_decay >= 0.0)
        _check("alpha value", alpha, alpha >= 0.0)
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps,
                                      centered=centered, weight_decay=weight_decay,
                                      capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))

    def _update(self, p, grad, group, state):
        alpha, eps, momentum = group["alpha"], group["eps"], group["momentum"]
        if not state:
            state["step"] = 0
            state["square_avg"] = np.zeros_like(p._data)
            if momentum > 0:
                state["momentum_buffer"] = np.zeros_like(p._data)
            if group["centered"]:
                state["grad_avg"] = np.zeros_like(p._data)
        state["step"] += 1
        grad = _weight_decay(grad, p, group)
        square_avg = state["square_avg"]
        square_avg *= alpha
        square_avg += (1 - alpha) * grad * grad
        if group["centered"]:
            grad_avg = state["grad_avg"]
            _lerp_(grad_avg, grad, 1 - alpha)
            avg = np.sqrt(square_avg - grad_avg * grad_avg)
        else:
            avg = np.sqrt(square_avg)
        avg += eps
        if momentum > 0:
            buf = state["momentum_buffer"]
            buf *= momentum
            buf += grad / avg
            p._data -= group["lr"] * buf
        else:
            p._data -= group["lr"] * (grad / avg)


class Adagrad(Optimizer):
    """Adagrad: the gradient divided by the root of the sum of its past squares, with a
    learning rate decaying as ``lr / (1 + (step - 1) * lr_decay)``."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        _check("learning rate", lr, lr >= 0.0)
        _check("lr_decay value", lr_decay, lr_decay >= 0.0)
        _check("weight_decay value", weight_decay, weight_decay >= 0.0)
        _check("initial_accumulator_value value", initial_accumulator_value,
               initial_accumulator_value >= 0.0)
        _check("epsilon value", eps, eps >= 0.0)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, fused=fused))

    def _init_group_state(self, group):
        for p in group["params"]:       # PyTorch creates the sums with the optimizer
            self.state[p] = {"step": 0, "sum": np.full_like(
                p._data, group["initial_accumulator_value"])}

    def _update(self, p, grad, group, state):
        state["step"] += 1
        grad = _weight_decay(grad, p, group)
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        state["sum"] += grad * grad
        std = np.sqrt(state["sum"])
        std += group["eps"]
        p._data -= clr * (grad / std)


class Adadelta(Optimizer):
    """Adadelta (Zeiler): steps scaled by the ratio of running roots of past squared
    updates and squared gradients."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        _check("learning rate", lr, lr >= 0.0)
        _check("rho value", rho, 0.0 <= rho <= 1.0)
        _check("epsilon value", eps, eps >= 0.0)
        _check("weight_decay value", weight_decay, weight_decay >= 0.0)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, capturable=capturable,
                                      foreach=foreach, differentiable=differentiable))

    def _update(self, p, grad, group, state):
        rho, eps = group["rho"], group["eps"]
        if not state:
            state["step"] = 0
            state["square_avg"] = np.zeros_like(p._data)
            state["acc_delta"] = np.zeros_like(p._data)
        state["step"] += 1
        grad = _weight_decay(grad, p, group)
        square_avg, acc_delta = state["square_avg"], state["acc_delta"]
        square_avg *= rho
        square_avg += (1 - rho) * grad * grad
        std = np.sqrt(square_avg + eps)
        delta = np.sqrt(acc_delta + eps)
        delta /= std
        delta *= grad
        acc_delta *= rho
        acc_delta += (1 - rho) * delta * delta
        p._data -= group["lr"] * delta


