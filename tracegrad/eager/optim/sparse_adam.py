"""``SparseAdam``: Adam on the entries a sparse COO gradient holds (``nn.Embedding(...,
sparse=True)``'s), as PyTorch's ``torch.optim.SparseAdam``; a dense gradient is PyTorch's
error. The moments and the parameter change only at the gradient's (coalesced) indices.
NumPy on the arrays, as the other optimizers (PyTorch's operation order; its ``sqrt`` is
not correctly rounded, so float results agree to the last bit or so)."""
from __future__ import annotations

import math

import numpy as np

from ..grad_mode import enable_grad
from ..tensor import Tensor
from .more_optimizers import _lr_value
from .optimizer import Optimizer


class SparseAdam(Optimizer):
    _step_is_tensor = False     # PyTorch keeps SparseAdam's step a Python int

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i in (0, 1):
            if not 0.0 <= betas[i] < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse, complex_ = [], []
        for index, group in enumerate(self.param_groups):
            for d_index, p in enumerate(group["params"]):
                if p.is_sparse is True:
                    sparse.append([index, d_index])
                if np.iscomplexobj(p._data):
                    complex_.append([index, d_index])
        if sparse:
            raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense "
                             "parameter tensors")
        if complex_:
            raise ValueError(f"Complex params at indices {complex_}: SparseAdam does not "
                             "support complex parameters")

    def step(self, closure=None):
        self._captured()
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            eps, lr = group["eps"], _lr_value(group["lr"])
            todo = []
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                if grad.is_sparse is not True:
                    raise RuntimeError("SparseAdam does not support dense gradients, please "
                                       "consider Adam instead")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = np.zeros_like(p._data)
                    state["exp_avg_sq"] = np.zeros_like(p._data)
                state["step"] += 1
                todo.append((p, grad, state))
            for p, grad, state in todo:
                grad = grad.coalesce()
                values = grad._values()._data
                if group["maximize"]:
                    values = -values
                if values.size == 0:
                    continue
                dt = p._data.dtype
                at = tuple(grad._idx)
                exp_avg, exp_avg_sq, step = state["exp_avg"], state["exp_avg_sq"], \
                    state["step"]
                old_avg = exp_avg[at]
                avg_update = (values - old_avg) * np.asarray(1 - beta1, dt)
                exp_avg[at] += avg_update
                old_sq = exp_avg_sq[at]
                sq_update = (values ** 2 - old_sq) * np.asarray(1 - beta2, dt)
                exp_avg_sq[at] += sq_update
                numer = avg_update + old_avg
                denom = np.sqrt(sq_update + old_sq) + np.asarray(eps, dt)
                step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
                p._data[at] += np.asarray(-step_size, dt) * (numer / denom)
                p._vc.v += 1
        return loss
