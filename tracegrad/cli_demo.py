"""``tracegrad demo``: trace, look at the IR, differentiate, check, train, write pictures.

The classifier is trained with the *functional* API: a NumPy MLP whose
``tg.value_and_grad`` is compiled once by ``tg.jit`` (NumPy code generation) and
stepped with plain SGD. tqdm (progress bar) and matplotlib (loss.png) are used when
installed (``pip install "tracegrad[demo]"``); without them the demo prints per-epoch
lines and writes loss.csv. The SVG of the gradient graph needs Graphviz
(``pip install "tracegrad[viz]"`` and the ``dot`` program).
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

import tracegrad as tg

# -- the models, as the source of a small file -----------------------------------------------------
# tracegrad labels IR nodes with the first source line outside its own package, so the
# models are compiled from this text under the name demo_model.py (and the file is written
# to the output folder): the IR's "# demo_model.py:N" comments then point at real lines.
MODEL_FILE = "demo_model.py"
MODEL_SOURCE = '''"""The models of `tracegrad demo` (written by it; the IR's line numbers point here)."""
import numpy as np

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


def logits(params, x):
    """A 64-64-10 tanh MLP."""
    h = np.tanh(x @ params["W0"] + params["b0"])
    return h @ params["W1"] + params["b1"]


def cross_entropy(params, x, onehot):
    z = logits(params, x)
    z = z - np.max(z, axis=1, keepdims=True)
    return np.mean(np.log(np.sum(np.exp(z), axis=1)) - np.sum(z * onehot, axis=1))
'''


def load_models():
    namespace = {"__name__": "demo_model"}
    exec(compile(MODEL_SOURCE, MODEL_FILE, "exec"), namespace)
    return namespace


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
    oracle = np.asarray(oracle)
    err = float(np.max(np.abs(np.asarray(ours) - oracle)) / max(1.0, float(np.max(np.abs(oracle)))))
    status = "ok" if err < tol else "MISMATCH"
    print(f"  {name:<36} max rel. error {err:.1e}   {status}")
    return err < tol


# -- data ---------------------------------------------------------------------------------------------
def load_data(kind):
    """``(X, y, name)``: scikit-learn's bundled digits when wanted and importable, else the
    synthetic stand-in of ``tracegrad.datasets``; X is (n, 64) in [0, 16] as scikit-learn's."""
    from .datasets import digits

    try:
        images, labels, name = digits(synthetic=True if kind == "synthetic" else
                                      False if kind == "digits" else None)
    except ImportError:
        from .cli_errors import CLIError
        raise CLIError("--data digits needs scikit-learn (pip install scikit-learn)") from None
    return images.reshape(len(images), 64) * 16.0, labels.astype(int), name


# -- training: the functional API, tg.jit(tg.value_and_grad(cross_entropy)) and plain SGD ------------
def init_params(rng, sizes=(64, 64, 10)):
    params = {}
    for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
        params[f"W{i}"] = rng.normal(size=(m, n)) / np.sqrt(m)
        params[f"b{i}"] = np.zeros(n)
    return params


def _progress(total):
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="training", unit="batch", leave=False, file=sys.stderr)


def train(model, X, y, epochs, batch=64, lr=0.5, seed=0):
    logits, cross_entropy = model["logits"], model["cross_entropy"]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(X))
    X, y = X[order] / 16.0, y[order]
    n_test = len(X) // 5
    Xte, yte, Xtr, ytr = X[:n_test], y[:n_test], X[n_test:], y[n_test:]
    onehot = np.eye(10)[ytr]
    params = init_params(rng)
    step = tg.jit(tg.value_and_grad(cross_entropy))     # traced and compiled once: one batch shape
    n_batches = len(Xtr) // batch                         # full batches only, so no retracing
    bar = _progress(epochs * n_batches)
    say = bar.write if bar is not None else print
    history = []
    for epoch in range(1, epochs + 1):
        perm = rng.permutation(len(Xtr))
        losses = []
        for j in range(n_batches):
            idx = perm[j * batch:(j + 1) * batch]
            value, grads = step(params, Xtr[idx], onehot[idx])
            params = {k: params[k] - lr * grads[k] for k in params}
            losses.append(float(value))
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{value:.3f}", refresh=False)
        history.extend(losses)
        acc = float(np.mean(np.argmax(logits(params, Xte), axis=1) == yte))
        say(f"  epoch {epoch:>2}/{epochs}   mean loss {np.mean(losses):.4f}   test accuracy {acc:.3f}")
    if bar is not None:
        bar.close()
    return history, acc, len(Xtr), len(Xte), step


# -- outputs --------------------------------------------------------------------------------------------
def write_loss(history, epochs, out):
    steps_per_epoch = len(history) // max(epochs, 1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        path = os.path.join(out, "loss.csv")
        with open(path, "w") as f:
            f.write("step,loss\n")
            f.writelines(f"{i},{v:.6g}\n" for i, v in enumerate(history))
        print("  (matplotlib is not installed: wrote loss.csv instead of loss.png; "
              "pip install 'tracegrad[demo]' for the plot)")
        return path
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    ax.plot(np.arange(len(history)), history, lw=0.8, alpha=0.6, label="batch loss")
    if steps_per_epoch:
        means = np.asarray(history[:steps_per_epoch * epochs]).reshape(epochs, -1).mean(axis=1)
        ax.plot((np.arange(epochs) + 1) * steps_per_epoch - 1, means, "o-", label="epoch mean")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy")
    ax.set_yscale("log")
    ax.set_title("tracegrad demo: MLP on 8x8 digits")
    ax.legend()
    fig.tight_layout()
    path = os.path.join(out, "loss.png")
    fig.savefig(path)
    plt.close(fig)
    return path


def write_graph(graph, out):
    """gradient.dot always; gradient.svg when Graphviz can render it, else gradient.png
    drawn with matplotlib when that is installed."""
    from .ir.render import GraphvizUnavailable

    written = []
    dot_path = os.path.join(out, "gradient.dot")
    with open(dot_path, "w") as f:
        f.write(graph.to_dot())
    written.append(dot_path)
    try:
        written.append(str(graph.render(os.path.join(out, "gradient.svg"))))
    except GraphvizUnavailable:
        try:
            written.append(str(graph.render(os.path.join(out, "gradient.png"), engine="matplotlib")))
            print("  (gradient.png drawn with matplotlib; install Graphviz for an SVG: "
                  "pip install 'tracegrad[viz]' and Graphviz's dot program)")
        except GraphvizUnavailable:
            print("  (no picture of the graph: install graphviz to get an SVG: pip install "
                  "'tracegrad[viz]' and Graphviz's dot program)")
    return written


# -- the demo --------------------------------------------------------------------------------------------
def run_demo(out="tracegrad-demo", epochs=None, quick=False, data="auto") -> int:
    t0 = time.perf_counter()
    epochs = epochs if epochs is not None else (4 if quick else 12)
    if epochs < 1:
        from .cli_errors import CLIError
        raise CLIError("--epochs must be at least 1", 2)
    out = os.path.abspath(out)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        from .cli_errors import CLIError
        raise CLIError(f"cannot create the output folder {out}: {exc.strerror or exc}") from exc

    model = load_models()
    loss, predict = model["loss"], model["predict"]
    with open(os.path.join(out, MODEL_FILE), "w") as f:
        f.write(MODEL_SOURCE)
    w, b = np.random.default_rng(1).normal(size=3), 0.1
    print("== 1. the traced IR of loss(w, b): logistic regression on 8 points ==")
    print(tg.trace(loss, w, b))

    print("\n== 2. the gradient IR of loss w.r.t. (w, b), optimised ==")
    traced = tg.trace(tg.grad(loss, argnums=(0, 1)), w, b)
    grad_graph = tg.passes.optimize(traced)    # prune, cse and simplify to a fixed point
    print(grad_graph)
    print(f"  ({len(traced)} nodes as traced, {len(grad_graph)} after tg.passes.optimize; "
          f"inputs {', '.join(grad_graph.node(n).get('name', '?') for n in grad_graph.inputs)}, "
          f"outputs {', '.join(grad_graph.node(n).get('name', '?') for n in grad_graph.outputs)})")

    print("\n== 3. derivatives against central finite differences ==")
    gw, gb = tg.grad(loss, argnums=(0, 1))(w, b)
    ok = check("grad loss / w", gw, central_difference(lambda v: loss(v, b), w), 1e-7)
    ok &= check("grad loss / b", gb, central_difference(lambda v: loss(w, v), b), 1e-7)
    ok &= check("jacobian tanh(X @ w), shape (8, 3)", tg.jacobian(predict)(w),
                central_difference(predict, w), 1e-7)
    ok &= check("hessian loss / w, shape (3, 3)", tg.hessian(loss)(w, b),
                central_difference(lambda v: tg.grad(loss)(v, b), w), 1e-6)
    print("  all derivatives agree" if ok else "  SOME DERIVATIVES DISAGREE")

    X, y, name = load_data(data)
    print(f"\n== 4. training a 64-64-10 tanh MLP on {name} ==")
    print(f"  functional API: tg.jit(tg.value_and_grad(cross_entropy)), SGD lr 0.5, batch 64, "
          f"{epochs} epoch{'s' if epochs != 1 else ''}")
    history, acc, n_train, n_test, step = train(model, X, y, epochs)
    print(f"  final test accuracy: {acc:.3f} ({n_test} held-out images, {n_train} for training)")

    print("\n== 5. files ==")
    written = [os.path.join(out, MODEL_FILE), write_loss(history, epochs, out)]
    written += write_graph(grad_graph, out)
    for path in written:
        print(f"  wrote {path}")
    print(f"\noutput folder: {out}")
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return 0 if ok else 1
