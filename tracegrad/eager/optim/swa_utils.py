"""``torch.optim.swa_utils``: stochastic weight averaging and exponential moving averages
of a model's parameters (``AveragedModel`` with the ``get_*_avg_fn`` averaging rules),
the ``SWALR`` schedule and ``update_bn``. The averages are PyTorch's CPU code paths:
the default rule is ``avg + (p - avg) / (n + 1)`` per tensor, the ``multi_avg_fn`` rules
``lerp`` (PyTorch's fused multiply-add formula, as ``more._lerp_``)."""
from __future__ import annotations

import itertools
import math
from copy import deepcopy

import numpy as np

from ..creation import get_default_dtype
from ..grad_mode import no_grad
from ..nn.modules import Module
from ..tensor import Tensor
from .lr_scheduler import LRScheduler, _format_param
from .more_optimizers import _fma, _lerp_

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _bump(t):
    t._vc.v += 1


def _n(num_averaged):
    return int(num_averaged._data) if isinstance(num_averaged, Tensor) else num_averaged


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """In place over lists: ``ema.lerp_(p, 1 - decay)`` (floating) or
    ``ema * decay + p * (1 - decay)``."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        for e, p in zip(ema_param_list, current_param_list):
            a, b = e._data, p._data
            if a.dtype.kind in "fc":
                _lerp_(a, b, 1 - decay, a.dtype)
            else:
                a[...] = a * decay + b * (1 - decay)
            _bump(e)
    return ema_update


def get_swa_multi_avg_fn():
    """In place over lists: ``avg.lerp_(p, 1 / (n + 1))`` (floating; the weight of the
    default dtype when ``n`` is a tensor, as PyTorch's division makes it), else
    ``avg + (p - avg) / (n + 1)``."""
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        for e, p in zip(averaged_param_list, current_param_list):
            a, b = e._data, p._data
            n = _n(num_averaged)
            if a.dtype.kind in "fc":
                w = 1 / (n + 1)
                if isinstance(num_averaged, Tensor):
                    w = float(np.asarray(w, np.dtype(get_default_dtype())))
                _lerp_(a, b, w, a.dtype)
            elif isinstance(num_averaged, Tensor):
                a[...] = a + (b - a) / (n + 1)
            else:
                a[...] = _fma(b - a, 1.0 / (n + 1), a, a.dtype)
            _bump(e)
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """``decay * ema + (1 - decay) * p`` (a new tensor)."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """``avg + (p - avg) / (n + 1)`` (a new tensor)."""
    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A deep copy of ``model`` whose parameters (and, with ``use_buffers``, buffers)
    ``update_parameters`` keeps as the running average of ``model``'s; ``n_averaged``
    (an int64 buffer) counts the updates."""

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None,
                 use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", Tensor._plain(np.array(0, np.int64)))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        mine_d, theirs_d = [], []
        n = int(self.n_averaged._data)
        for a, p in zip(mine, theirs):
            mine_d.append(a.detach())
            theirs_d.append(p.detach())
            if n == 0:
                np.copyto(a._data, p._data, casting="unsafe")
                _bump(a)
        if n > 0:
            if self.multi_avg_fn is not None or self.avg_fn is None:
                groups = {}     # PyTorch groups the tensors by dtype for the list rule
                for a, p in zip(mine_d, theirs_d):
                    groups.setdefault(a._data.dtype, ([], []))
                    groups[a._data.dtype][0].append(a)
                    groups[a._data.dtype][1].append(p)
                for mine_g, theirs_g in groups.values():
                    if self.multi_avg_fn is not None:
                        self.multi_avg_fn(mine_g, theirs_g, self.n_averaged)
                    else:       # the CPU's per-tensor default
                        avg_fn = get_swa_avg_fn()
                        for a, p in zip(mine_g, theirs_g):
                            a.copy_(avg_fn(a, p, self.n_averaged))
            else:
                for a, p in zip(mine_d, theirs_d):
                    a.copy_(self.avg_fn(a.detach(), p, self.n_averaged))
        if not self.use_buffers:
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.detach().copy_(b_model.detach())
        self.n_averaged._data = self.n_averaged._data + 1
        _bump(self.n_averaged)


def update_bn(loader, model, device=None):
    """Recompute the BatchNorm running statistics of ``model`` with one pass over
    ``loader`` (cumulative averages: ``momentum=None``), as PyTorch's ``update_bn``."""
    from ..nn.normalization import _BatchNorm, _InstanceNorm
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
    for bn_module in momenta:
        bn_module.momentum = momenta[bn_module]
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's learning rate to ``swa_lr`` over ``anneal_epochs`` epochs
    (cosine or linear), then holds it."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else \
            self._linear_anneal

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
