"""``tg.optim``: SGD, Adam and AdamW with PyTorch's update rules.

A step is plain NumPy on the parameters' arrays, in place, with in-place NumPy operations
wherever PyTorch's formula allows (no temporaries beyond one or two per parameter): an
update is not an operation to differentiate, and the optimizer runs once per training
step on every parameter, so its speed counts. Each parameter's version counter goes up,
as for any in-place change, so a graph recorded before the step refuses to backward
through the old values.
"""
from __future__ import annotations

import math

import numpy as np

from .grad_mode import enable_grad
from .tensor import Tensor

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Holds ``param_groups`` (dicts of parameters and their hyper-parameters) and the
    per-parameter ``state``; subclasses define ``step``."""

    def __init__(self, params, defaults):
        self.defaults = defaults
        self.state = {}
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + type(params).__name__)
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group):
        group = dict(param_group)
        params = group["params"]
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

    def zero_grad(self, set_to_none=True):
        from .nn.modules import _zero_grad
        for group in self.param_groups:
            for p in group["params"]:
                _zero_grad(p, set_to_none)

    def _params_with_grad(self, group):
        for p in group["params"]:
            g = p._grad
            if g is not None:
                yield p, g._data

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p, grad in self._params_with_grad(group):
                self._update(p, grad, group, self.state.setdefault(p, {}))
                p._vc.v += 1
        return loss

    def _update(self, p, grad, group, state):
        raise NotImplementedError

    # -- state ----------------------------------------------------------------------------
    def state_dict(self):
        """``{"state": {index: {...}}, "param_groups": [{..., "params": [index, ...]}]}``,
        with parameters replaced by their position, as in PyTorch. State arrays are copied."""
        index, groups = {}, []
        for g in self.param_groups:
            for p in g["params"]:
                index.setdefault(id(p), len(index))
            groups.append({**{k: v for k, v in g.items() if k != "params"},
                           "params": [index[id(p)] for p in g["params"]]})
        state = {index[id(p)]: {k: Tensor._plain(np.array(v, copy=True))
                                if isinstance(v, np.ndarray) else v for k, v in s.items()}
                 for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
                len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)):
            raise ValueError("loaded state dict has a different number of parameter groups "
                             "or parameters")
        by_index = {}
        for saved, own in zip(groups, self.param_groups):
            by_index.update(zip(saved["params"], own["params"]))
            own.update({k: v for k, v in saved.items() if k != "params"})
        self.state = {}
        for i, s in state_dict["state"].items():
            p = by_index[i]
            self.state[p] = {k: np.array(v._data if isinstance(v, Tensor) else v, copy=True)
                             .astype(p.dtype) if isinstance(v, (Tensor, np.ndarray)) else v
                             for k, v in s.items()}

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(g.items()) if k != "params"]
        return "\n".join(lines) + "\n)"


def _check(name, value, ok):
    if not ok:
        raise ValueError(f"Invalid {name}: {value}")


class SGD(Optimizer):
    """Stochastic gradient descent, optionally with (Nesterov) momentum and L2 weight
    decay::

        g = grad + weight_decay * p
        buf = g (first step), else momentum * buf + (1 - dampening) * g
        g = g + momentum * buf if nesterov else buf
        p -= lr * g
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False):
        _check("learning rate", lr, lr >= 0.0)
        _check("momentum value", momentum, momentum >= 0.0)
        _check("weight_decay value", weight_decay, weight_decay >= 0.0)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _update(self, p, grad, group, state):
        lr, momentum, wd = group["lr"], group["momentum"], group["weight_decay"]
        if group["maximize"]:
            grad = -grad
        if wd != 0:
            grad = grad + wd * p._data
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = np.array(grad, copy=True)
            else:
                buf *= momentum
                damp = 1 - group["dampening"]
                buf += grad if damp == 1 else damp * grad
            grad = grad + momentum * buf if group["nesterov"] else buf
        p._data -= lr * grad


class Adam(Optimizer):
    """Adam (Kingma & Ba) in PyTorch's form: L2 ``weight_decay`` is added to the gradient,
    the bias corrections fold into the step size, and ``eps`` is added after dividing
    the root of the second moment by its bias correction."""

    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        _check("learning rate", lr, lr >= 0.0)
        _check("epsilon value", eps, eps >= 0.0)
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        _check("weight_decay value", weight_decay, weight_decay >= 0.0)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def _update(self, p, grad, group, state):
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], \
            group["weight_decay"]
        if group["maximize"]:
            grad = -grad
        if wd != 0:
            if self._decoupled:
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
        denom /= math.sqrt(1 - beta2 ** step)
        denom += eps
        update = m / denom
        update *= step_size
        p._data -= update


class AdamW(Adam):
    """Adam with decoupled weight decay: ``p *= 1 - lr * weight_decay`` before the Adam
    step, instead of adding ``weight_decay * p`` to the gradient."""

    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, **kwargs):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, **kwargs)
