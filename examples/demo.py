"""The main job in one script: trace plain NumPy, look at the IR, differentiate, check.

    python examples/demo.py
"""
import numpy as np

import tracegrad as tg

rng = np.random.default_rng(0)
X = rng.normal(size=(8, 3))
y = (rng.normal(size=8) > 0).astype(float)


def loss(w, b):
    """Logistic regression: mean binary cross-entropy plus a small L2 penalty."""
    z = X @ w + b
    log_p = -np.logaddexp(0.0, -z)        # log sigmoid(z), stable
    log_q = -np.logaddexp(0.0, z)         # log (1 - sigmoid(z))
    return -np.mean(y * log_p + (1 - y) * log_q) + 0.01 * np.sum(w ** 2)


def predict(w):
    return np.tanh(X @ w)


def central_difference(f, x, eps=1e-6):
    """d f / d x by central differences: an oracle that shares no code with tracegrad."""
    x = np.asarray(x, dtype=float)
    f0 = np.asarray(f(x))
    out = np.zeros(f0.shape + x.shape)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = eps
        out[(...,) + i] = (np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps)
    return out


def check(name, ours, oracle, tol):
    err = float(np.max(np.abs(np.asarray(ours) - oracle)) / max(1.0, np.max(np.abs(oracle))))
    status = "ok" if err < tol else "MISMATCH"
    print(f"  {name:<34} max rel. error {err:.1e}   {status}")
    return err < tol


def main():
    w, b = rng.normal(size=3), 0.1

    print("== the traced IR of loss(w, b) ==")
    print(tg.trace(loss, w, b))

    print("\n== the gradient IR, after pruning dead nodes ==")
    grad_graph = tg.passes.prune(tg.trace(tg.grad(loss, argnums=(0, 1)), w, b))
    print(grad_graph)

    print("\n== derivatives against central finite differences ==")
    gw, gb = tg.grad(loss, argnums=(0, 1))(w, b)
    ok = check("grad loss / w", gw, central_difference(lambda v: loss(v, b), w), 1e-7)
    ok &= check("grad loss / b", gb, central_difference(lambda v: loss(w, v), b), 1e-7)
    ok &= check("jacobian tanh(X @ w), shape (8, 3)", tg.jacobian(predict)(w),
                central_difference(predict, w), 1e-7)
    H = tg.hessian(loss)(w, b)
    ok &= check("hessian loss / w, shape (3, 3)", H,
                central_difference(lambda v: tg.grad(loss)(v, b), w), 1e-6)
    print(f"\nloss = {loss(w, b):.6f}; Newton step: {np.linalg.solve(H, -gw)}")
    print("all derivatives agree" if ok else "SOME DERIVATIVES DISAGREE")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
