"""``gradcheck`` / ``gradgradcheck``: backward against central differences."""
from __future__ import annotations

import warnings

import numpy as np

from ..engine import grad as autograd_grad
from ..tensor import Tensor


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when the analytical and numerical Jacobians differ."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(func, inputs):
    return tuple(o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor))


def _numerical(func, inputs, i, eps, outputs):
    """d output / d inputs[i], one column per element of the input, by central differences."""
    x = inputs[i]
    flat = x._data.reshape(-1)          # a view: the perturbation is seen by func
    cols = [np.zeros((o.numel(), flat.size), np.float64) for o in outputs]
    # grad mode stays as it is: gradgradcheck's function differentiates inside
    for j in range(flat.size):
        orig = flat[j].copy()
        flat[j] = orig + eps
        plus = [np.array(o._data, np.float64).reshape(-1) for o in _outputs(func, inputs)]
        flat[j] = orig - eps
        minus = [np.array(o._data, np.float64).reshape(-1) for o in _outputs(func, inputs)]
        flat[j] = orig
        for c, p, m in zip(cols, plus, minus):
            c[:, j] = (p - m) / (2 * eps)
    return cols


def _analytical(outputs, inputs, wrt):
    """d output / d inputs[k] for k in ``wrt``, row by row through backward."""
    rows = {(a, k): np.zeros((o.numel(), inputs[k].numel()), np.float64)
            for a, o in enumerate(outputs) for k in wrt}
    for a, o in enumerate(outputs):
        if not o.requires_grad:
            continue
        for r in range(o.numel()):
            seed = np.zeros(o.numel(), o.dtype)
            seed[r] = 1
            grads = autograd_grad(o, [inputs[k] for k in wrt],
                                  grad_outputs=Tensor._plain(seed.reshape(tuple(o.shape))),
                                  retain_graph=True, allow_unused=True)
            for k, g in zip(wrt, grads):
                if g is not None:
                    rows[a, k][r] = np.asarray(g._data, np.float64).reshape(-1)
    return rows


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, fast_mode=False, **_):
    """True if ``func``'s backward agrees with central differences at ``inputs``; else
    raise (or return False with ``raise_exception=False``) naming the worst element."""
    inputs = _as_tuple(inputs)
    wrt = [k for k, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of the them have requires_grad=True.")
    for k in wrt:
        if inputs[k].dtype != np.float64:
            warnings.warn(f"Input #{k} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex.", UserWarning,
                          stacklevel=2)
    outputs = _outputs(func, inputs)
    analytical = _analytical(outputs, inputs, wrt)
    for k in wrt:
        numerical = _numerical(func, inputs, k, eps, outputs)
        for a in range(len(outputs)):
            ana, num = analytical[a, k], numerical[a]
            bad = np.abs(ana - num) > atol + rtol * np.abs(num)
            if bad.any():
                r, c = np.unravel_index(np.argmax(np.where(bad, np.abs(ana - num), -1)), bad.shape)
                msg = (f"Jacobian mismatch for output {a} with respect to input {k},\n"
                       f"numerical:{num}\nanalytical:{ana}\n"
                       f"worst mismatch at (output element {r}, input element {c}): numerical "
                       f"{float(num[r, c])!r} vs analytical {float(ana[r, c])!r} "
                       f"(atol={atol}, rtol={rtol}, "
                       f"eps={eps})")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, **kwargs):
    """``gradcheck`` of the map (inputs, grad_outputs) -> gradients: checks second
    derivatives through ``create_graph=True``."""
    inputs = _as_tuple(inputs)
    wrt = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    outputs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(Tensor._plain(rng.standard_normal(tuple(o.shape)).astype(o.dtype))
                             .requires_grad_() for o in outputs if o.requires_grad)
    grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_derivatives(*args):
        xs, gos = args[:n_in], args[n_in:]
        outs = [o for o in _outputs(func, xs) if o.requires_grad]
        grads = autograd_grad(outs, [x for x in xs if isinstance(x, Tensor) and x.requires_grad],
                              grad_outputs=list(gos), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    del wrt
    return gradcheck(first_derivatives, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
