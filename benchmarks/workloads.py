"""The benchmark workloads: data, the function in each system's dialect, and the
hand-written NumPy derivative every other system is checked against.

The hand-written derivatives are what a careful NumPy programmer writes: the
analytic formula as NumPy expressions, shared subexpressions computed once, no
``out=`` buffer juggling (that is what tracegrad's code generator is meant to
add on its own).

Each function is written once per array module (``xp``): ``numpy`` for
tracegrad, ``jax.numpy`` for JAX, ``autograd.numpy`` for HIPS autograd and,
where the spelling allows, ``torch`` for PyTorch. With ``xp=numpy`` the body is
exactly the plain NumPy a user would hand to ``tg.grad``.
"""
from __future__ import annotations

import numpy as np


class Workload:
    key = ""           # "W1"
    name = ""          # "tiny"
    desc = ""          # one line for the table
    kind = "grad"      # "grad" or "hessian" (w.r.t. argument 0)
    argnums: tuple = (0,)
    dtype = np.float64

    def data(self, rng) -> tuple:
        raise NotImplementedError

    def fn(self, xp):
        """The scalar function, written with array module ``xp``."""
        raise NotImplementedError

    def torch_fn(self):
        import torch
        return self.fn(torch)

    def hand(self, *args):
        """Hand-written NumPy derivative: an array, or a tuple with one per argnum."""
        raise NotImplementedError

    @property
    def label(self):
        return f"{self.key} {self.name}"


# -- W1 ------------------------------------------------------------------------------------
class Tiny(Workload):
    key, name = "W1", "tiny"
    desc = "sum(sin(x)*exp(x) + x**2), x: 10 f64 (call overhead)"

    def data(self, rng):
        return (rng.standard_normal(10),)

    def fn(self, xp):
        def tiny(x):
            return xp.sum(xp.sin(x) * xp.exp(x) + x ** 2)
        return tiny

    def hand(self, x):
        e = np.exp(x)
        return e * (np.sin(x) + np.cos(x)) + 2.0 * x


# -- W2 ------------------------------------------------------------------------------------
class Rosenbrock(Workload):
    key, name = "W2", "rosenbrock"
    desc = "sum(100*(x[1:]-x[:-1]**2)**2 + (1-x[:-1])**2), n = 1,000,000 f64"

    def __init__(self, n=1_000_000):
        self.n = n

    def data(self, rng):
        return (rng.uniform(-1.5, 1.5, self.n),)

    def fn(self, xp):
        def rosenbrock(x):
            return xp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        return rosenbrock

    def hand(self, x):
        a, b = x[:-1], x[1:]
        t = b - a ** 2
        g = np.zeros_like(x)
        g[:-1] = -400 * a * t - 2 * (1 - a)
        g[1:] += 200 * t
        return g


# -- W3 ------------------------------------------------------------------------------------
class MLP(Workload):
    key, name = "W3", "mlp"
    desc = "784-256-256-10 tanh MLP, softmax x-entropy, batch 128, f32, d/d(all W, b)"
    argnums = (0, 1, 2, 3, 4, 5)
    dtype = np.float32
    sizes = (784, 256, 256, 10)
    batch = 128

    def data(self, rng):
        f32 = np.float32
        params = []
        for n_in, n_out in zip(self.sizes[:-1], self.sizes[1:]):
            params.append((rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(f32))
            params.append((0.1 * rng.standard_normal(n_out)).astype(f32))
        X = rng.standard_normal((self.batch, self.sizes[0])).astype(f32)
        Y = np.eye(self.sizes[-1], dtype=f32)[rng.integers(0, self.sizes[-1], self.batch)]
        return (*params, X, Y)

    def fn(self, xp):
        def mlp(W1, b1, W2, b2, W3, b3, X, Y):
            h1 = xp.tanh(X @ W1 + b1)
            h2 = xp.tanh(h1 @ W2 + b2)
            z = h2 @ W3 + b3
            m = xp.max(z, axis=1, keepdims=True)
            lse = m + xp.log(xp.sum(xp.exp(z - m), axis=1, keepdims=True))
            return xp.mean(xp.sum(Y * (lse - z), axis=1))
        return mlp

    def torch_fn(self):
        import torch

        def mlp(W1, b1, W2, b2, W3, b3, X, Y):
            h1 = torch.tanh(X @ W1 + b1)
            h2 = torch.tanh(h1 @ W2 + b2)
            z = h2 @ W3 + b3
            m = torch.amax(z, dim=1, keepdim=True)
            lse = m + torch.log(torch.sum(torch.exp(z - m), dim=1, keepdim=True))
            return torch.mean(torch.sum(Y * (lse - z), dim=1))
        return mlp

    def hand(self, W1, b1, W2, b2, W3, b3, X, Y):
        h1 = np.tanh(X @ W1 + b1)
        h2 = np.tanh(h1 @ W2 + b2)
        z = h2 @ W3 + b3
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        # d/dz of sum(Y * (lse - z)) / B is (p * rowsum(Y) - Y) / B; Y rows are one-hot
        dz = (p - Y) / np.float32(X.shape[0])
        dW3, db3 = h2.T @ dz, dz.sum(axis=0)
        d2 = (dz @ W3.T) * (1 - h2 ** 2)
        dW2, db2 = h1.T @ d2, d2.sum(axis=0)
        d1 = (d2 @ W2.T) * (1 - h1 ** 2)
        dW1, db1 = X.T @ d1, d1.sum(axis=0)
        return dW1, db1, dW2, db2, dW3, db3


# -- W4 ------------------------------------------------------------------------------------
class Hessian(Workload):
    key, name = "W4", "hessian"
    desc = "full Hessian of logsumexp(A @ x) + 0.5*||x||^2, A: 200x100 f64"
    kind = "hessian"

    def data(self, rng):
        return rng.standard_normal(100), rng.standard_normal((200, 100)) / 10

    def fn(self, xp):
        def lse_quad(x, A):
            z = A @ x
            m = xp.max(z)
            return m + xp.log(xp.sum(xp.exp(z - m))) + 0.5 * xp.sum(x ** 2)
        return lse_quad

    def hand(self, x, A):
        z = A @ x
        p = np.exp(z - z.max())
        p /= p.sum()
        Ap = A.T @ p
        return (A.T * p) @ A - np.outer(Ap, Ap) + np.eye(x.size)


# -- W5 ------------------------------------------------------------------------------------
class Chain(Workload):
    key, name = "W5", "chain"
    desc = "x = sin(x)*1.0001 + 0.001 repeated, 100 f64"

    def __init__(self, reps=1000):
        self.reps = reps
        self.name = f"chain {reps:,}"

    def data(self, rng):
        return (rng.uniform(-1.0, 1.0, 100),)

    def fn(self, xp):
        reps = self.reps

        def chain(x):
            for _ in range(reps):
                x = xp.sin(x) * 1.0001 + 0.001
            return xp.sum(x)
        return chain

    def hand(self, x):
        cosines = []
        for _ in range(self.reps):
            cosines.append(np.cos(x))
            x = np.sin(x) * 1.0001 + 0.001
        g = np.ones_like(x)
        for c in reversed(cosines):
            g = g * c * 1.0001
        return g


def conv_primitive():
    """The name of tracegrad's conv primitive, or None while there is none (W6)."""
    from tracegrad.ir import REGISTRY
    return next((name for name in REGISTRY if name.startswith("conv") and name != "convert"), None)


MAIN = (Tiny(), Rosenbrock(), MLP(), Hessian())
