"""Linear regression, the seed articles' numbers: one gradient three ways, then a fit.

With x = [1, 2], y = [5, 7], w = 1, b = 0 and loss = sum((w*x + b - y)**2), the
gradient is (dL/dw, dL/db) = (-28, -18). This script computes it with the functional
API (`tg.grad` on a plain NumPy function), with the compiled `tg.jit` version of it and
with the PyTorch-style eager API (`loss.backward()`), then fits w and b by gradient
descent to the exact line y = 2x + 3, once with each API.

    python examples/linear_regression.py
"""
import numpy as np

import tracegrad as tg

x = np.array([1.0, 2.0])
y = np.array([5.0, 7.0])


def loss(w, b):
    return np.sum((w * x + b - y) ** 2)


def eager_gradient(w0, b0):
    w = tg.tensor(w0, requires_grad=True)
    b = tg.tensor(b0, requires_grad=True)
    out = ((w * tg.tensor(x) + b - tg.tensor(y)) ** 2).sum()
    out.backward()
    return out.item(), w.grad.item(), b.grad.item()


def fit_functional(steps, lr=0.05):
    step = tg.jit(tg.value_and_grad(loss, argnums=(0, 1)))
    w, b = 1.0, 0.0
    for _ in range(steps):
        value, (gw, gb) = step(w, b)
        w, b = w - lr * float(gw), b - lr * float(gb)
    return w, b, float(loss(w, b))


def fit_eager(steps, lr=0.05):
    w = tg.tensor(1.0, requires_grad=True)
    b = tg.tensor(0.0, requires_grad=True)
    opt = tg.optim.SGD([w, b], lr=lr)
    xt, yt = tg.tensor(x), tg.tensor(y)
    for _ in range(steps):
        opt.zero_grad()
        out = ((w * xt + b - yt) ** 2).sum()
        out.backward()
        opt.step()
    return w.item(), b.item(), ((w * xt + b - yt) ** 2).sum().item()


def main(small=False):
    steps = 1000 if small else 2000
    gw, gb = tg.grad(loss, argnums=(0, 1))(1.0, 0.0)
    jw, jb = tg.jit(tg.grad(loss, argnums=(0, 1)))(1.0, 0.0)
    value, ew, eb = eager_gradient(1.0, 0.0)
    print(f"loss(w=1, b=0) = {float(loss(1.0, 0.0)):g}   (eager: {value:g})")
    print(f"tg.grad          dL/dw = {float(gw):g}, dL/db = {float(gb):g}")
    print(f"tg.jit(tg.grad)  dL/dw = {float(jw):g}, dL/db = {float(jb):g}")
    print(f"loss.backward()  w.grad = {ew:g}, b.grad = {eb:g}")
    for pair in [(gw, gb), (jw, jb), (ew, eb)]:
        assert np.allclose([float(pair[0]), float(pair[1])], [-28.0, -18.0]), pair

    fw, fb, floss = fit_functional(steps)
    ow, ob, oloss = fit_eager(steps)
    print(f"\ngradient descent, {steps} steps of lr 0.05 from w=1, b=0:")
    print(f"  functional (tg.jit(tg.value_and_grad))  w = {fw:.6f}, b = {fb:.6f}, loss = {floss:.2e}")
    print(f"  eager (tg.optim.SGD)                    w = {ow:.6f}, b = {ob:.6f}, loss = {oloss:.2e}")
    for w, b in [(fw, fb), (ow, ob)]:
        assert abs(w - 2.0) < 1e-3 and abs(b - 3.0) < 1e-3, (w, b)
    return {"grad": (float(gw), float(gb)), "jit_grad": (float(jw), float(jb)),
            "eager_grad": (ew, eb), "functional_fit": (fw, fb), "eager_fit": (ow, ob)}


if __name__ == "__main__":
    main()
