"""``tg.optim.LBFGS``: limited-memory BFGS on the flattened parameters, PyTorch's
algorithm (a fixed step, or a strong-Wolfe line search with cubic interpolation).

The parameters are handled as one flat float vector (NumPy); the closure re-evaluates
the loss and its gradient. Every quantity is a Python float or a NumPy array, and each
formula is written in the order PyTorch evaluates it, so that float64 runs agree with
PyTorch's to rounding.
"""
from __future__ import annotations

import numpy as np

from ..grad_mode import enable_grad
from .optimizer import Optimizer

__all__ = ["LBFGS"]


def _cubic_min(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through ``(x1, f1, g1)`` and ``(x2, f2, g2)``, clipped to
    ``bounds`` (default: the interval between them); its midpoint when the cubic has no
    minimum."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = d2_square ** 0.5
    if x1 <= x2:
        x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(x, lo), hi)


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """Search along ``d`` from step ``t`` for a point meeting the strong Wolfe conditions:
    bracket a minimiser, then zoom into the bracket by safeguarded cubic interpolation.
    ``evaluate(t)`` → ``(loss, flat gradient)``. Returns ``(f, g, t, evaluations)``."""
    d_norm = float(np.max(np.abs(d)))
    f_new, g_new = evaluate(t)
    evals = 1
    gtd_new = float(g_new @ d)
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g.copy(), gtd
    done = False
    it = 0
    bracket = None
    while it < max_ls:
        if f_new > f + c1 * t * gtd or (it > 1 and f_new >= f_prev):
            bracket = [[t_prev, f_prev, g_prev, gtd_prev], [t, f_new, g_new.copy(), gtd_new]]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket = [[t, f_new, g_new, gtd_new]]
            done = True
            break
        if gtd_new >= 0:
            bracket = [[t_prev, f_prev, g_prev, gtd_prev], [t, f_new, g_new.copy(), gtd_new]]
            break
        lo, hi = t + 0.01 * (t - t_prev), t * 10
        t_prev, t = t, _cubic_min(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(lo, hi))
        f_prev, g_prev, gtd_prev = f_new, g_new.copy(), gtd_new
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = float(g_new @ d)
        it += 1
    if it == max_ls:
        bracket = [[0.0, f, g, gtd], [t, f_new, g_new, gtd_new]]

    # zoom: shrink the bracket until a point meets the conditions
    insufficient = False
    low, high = (0, 1) if bracket[0][1] <= bracket[-1][1] else (1, 0)
    while not done and it < max_ls:
        (a, fa, _, ga), (b, fb, _, gb) = bracket
        if abs(b - a) * d_norm < tolerance_change:
            break
        t = _cubic_min(a, fa, ga, b, fb, gb)
        top, bottom = max(a, b), min(a, b)
        eps = 0.1 * (top - bottom)
        if min(top - t, t - bottom) < eps:
            if insufficient or t >= top or t <= bottom:
                t = top - eps if abs(t - top) < abs(t - bottom) else bottom + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = evaluate(t)
        evals += 1
        gtd_new = float(g_new @ d)
        it += 1
        if f_new > f + c1 * t * gtd or f_new >= bracket[low][1]:
            bracket[high] = [t, f_new, g_new.copy(), gtd_new]
            low, high = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high][0] - bracket[low][0]) >= 0:
                bracket[high] = list(bracket[low])
            bracket[low] = [t, f_new, g_new.copy(), gtd_new]
    t, f_new, g_new = bracket[low][0], bracket[low][1], bracket[low][2]
    return f_new, g_new, t, evals


class LBFGS(Optimizer):
    """L-BFGS (PyTorch's ``torch.optim.LBFGS``): ``step(closure)`` runs up to ``max_iter``
    iterations, each a two-loop recursion over the last ``history_size`` curvature pairs
    and either a fixed step ``lr`` or a strong-Wolfe line search
    (``line_search_fn="strong_wolfe"``). One parameter group only."""

    _step_is_tensor = False

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        if not lr >= 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size,
                                      line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    # -- the flat view of the parameters ----------------------------------------------------
    def _flat_grad(self):
        parts = [np.zeros(p._data.size, p._data.dtype) if p._grad is None
                 else np.ravel(p._grad._data) for p in self._params]
        return np.concatenate(parts)

    def _add(self, t, d):
        offset = 0
        for p in self._params:
            n = p._data.size
            p._data += t * d[offset:offset + n].reshape(p._data.shape)
            p._vc.v += 1
            offset += n

    def _evaluate(self, closure):
        with enable_grad():
            return float(closure())

    def step(self, closure):
        """One optimisation step (several iterations): ``closure`` clears the gradients,
        computes the loss, calls ``backward()`` and returns the loss."""
        if closure is None:
            raise RuntimeError("LBFGS requires a closure: optimizer.step(closure)")
        self._captured()
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history_size, line_search = group["history_size"], group["line_search_fn"]
        if line_search not in (None, "strong_wolfe"):
            raise RuntimeError("only 'strong_wolfe' is supported")
        state = self.state.setdefault(self._params[0], {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if np.max(np.abs(flat_grad)) <= tol_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag, prev_flat_grad = state.get("H_diag"), state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro, h_diag = [], [], [], 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = float(y @ s)
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / float(y @ y)
                # two-loop recursion: d = -H grad
                al = [0.0] * len(old_dirs)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = float(old_stps[i] @ q) * ro[i]
                    q = q - al[i] * old_dirs[i]
                d = r = q * h_diag
                for i in range(len(old_dirs)):
                    be_i = float(old_dirs[i] @ r) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss

            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(np.sum(np.abs(flat_grad)))) * lr
            else:
                t = lr
            gtd = float(flat_grad @ d)
            if gtd > -tol_change:
                break

            n_evals = 0
            if line_search is not None:
                x0 = [p._data.copy() for p in self._params]

                def evaluate(step, x0=x0, d=d):
                    self._add(step, d)
                    value = self._evaluate(closure)
                    g = self._flat_grad()
                    for p, x in zip(self._params, x0):
                        p._data[...] = x
                        p._vc.v += 1
                    return value, g

                loss, flat_grad, t, n_evals = _strong_wolfe(evaluate, t, d, loss, flat_grad,
                                                             gtd)
                self._add(t, d)
                opt_cond = np.max(np.abs(flat_grad)) <= tol_grad
            else:
                self._add(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    loss = self._evaluate(closure)
                    flat_grad = self._flat_grad()
                    opt_cond = np.max(np.abs(flat_grad)) <= tol_grad
                    n_evals = 1
            evals += n_evals
            state["func_evals"] += n_evals

            if n_iter == max_iter or evals >= max_eval or opt_cond:
                break
            if np.max(np.abs(d * t)) <= tol_change or abs(loss - prev_loss) < tol_change:
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=h_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss
