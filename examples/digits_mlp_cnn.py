"""An MLP and a small CNN on the 8x8 digits, each trained with both of tracegrad's APIs.

* functional: the model and its loss are plain NumPy functions of a dict of parameter
  arrays; one training step's loss and gradient come from
  `tg.jit(tg.value_and_grad(loss))`, and Adam is a few lines of NumPy. The CNN calls
  the registry's `conv2d` primitive (`tracegrad.ir.apply("conv2d", ...)`, NCHW) inside
  the NumPy function.
* eager: the same architectures as `tg.nn` modules trained with `tg.optim.Adam` and
  `loss.backward()`, PyTorch style.

The data are scikit-learn's `load_digits` when it is installed, otherwise a
deterministic synthetic 8x8 ten-class set (`tracegrad.datasets`).

    python examples/digits_mlp_cnn.py            # full run
    python -c "import runpy; runpy.run_path('examples/digits_mlp_cnn.py')['main'](small=True)"
"""
import numpy as np

import tracegrad as tg
from tracegrad.datasets import digits
from tracegrad.ir import apply

nn, F = tg.nn, tg.nn.functional

HIDDEN, CHANNELS, KERNEL = 64, 8, 3


# -- the functional API: NumPy models of a dict of parameters ---------------------------------------

def init_mlp(rng):
    return {"W1": rng.normal(0, 1 / 8, (64, HIDDEN)), "b1": np.zeros(HIDDEN),
            "W2": rng.normal(0, HIDDEN ** -0.5, (HIDDEN, 10)), "b2": np.zeros(10)}


def mlp(p, x):
    h = np.maximum(x.reshape(x.shape[0], 64) @ p["W1"] + p["b1"], 0.0)
    return h @ p["W2"] + p["b2"]


def init_cnn(rng):
    flat = CHANNELS * (8 - KERNEL + 1) ** 2
    return {"K": rng.normal(0, 1 / KERNEL, (CHANNELS, 1, KERNEL, KERNEL)), "c": np.zeros(CHANNELS),
            "W": rng.normal(0, flat ** -0.5, (flat, 10)), "b": np.zeros(10)}


def cnn(p, x):
    images = x.reshape(x.shape[0], 1, 8, 8)                          # NCHW
    z = apply("conv2d", images, p["K"], stride=(1, 1), padding=(0, 0), dilation=(1, 1))
    h = np.maximum(z + p["c"].reshape(1, CHANNELS, 1, 1), 0.0)
    return h.reshape(x.shape[0], -1) @ p["W"] + p["b"]


def cross_entropy(logits, onehot):
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_p = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(onehot * log_p, axis=1))


def train_functional(model, params, data, epochs, batch=64, lr=1e-2, seed=0):
    x_train, y_train = data
    onehot = np.eye(10)[y_train]
    step = tg.jit(tg.value_and_grad(lambda p, x, t: cross_entropy(model(p, x), t)))
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(v) for k, v in params.items()}
    rng, t = np.random.default_rng(seed), 0
    for _ in range(epochs):
        order = rng.permutation(len(y_train))
        for i in range(0, len(order) - batch + 1, batch):      # fixed batch shape: one trace
            idx = order[i:i + batch]
            loss, grads = step(params, x_train[idx], onehot[idx])
            t += 1
            for k in params:                                     # Adam, as tg.optim.Adam does it
                m[k] = 0.9 * m[k] + 0.1 * grads[k]
                v[k] = 0.999 * v[k] + 0.001 * grads[k] ** 2
                m_hat, v_hat = m[k] / (1 - 0.9 ** t), v[k] / (1 - 0.999 ** t)
                params[k] = params[k] - lr * m_hat / (np.sqrt(v_hat) + 1e-8)
    return params, float(loss)


def accuracy_functional(model, params, x, y):
    return float(np.mean(np.argmax(model(params, x), axis=1) == y))


# -- the eager API: tg.nn modules and tg.optim -------------------------------------------------------

def eager_mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(64, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 10))


def eager_cnn():
    return nn.Sequential(nn.Conv2d(1, CHANNELS, KERNEL), nn.ReLU(), nn.Flatten(),
                         nn.Linear(CHANNELS * (8 - KERNEL + 1) ** 2, 10))


def train_eager(model, data, epochs, batch=64, lr=1e-2, seed=0):
    x_train, y_train = data
    x_all, y_all = tg.tensor(x_train.reshape(-1, 1, 8, 8), dtype=tg.float32), tg.tensor(y_train)
    opt = tg.optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        order = rng.permutation(len(y_train))
        for i in range(0, len(order) - batch + 1, batch):
            idx = tg.tensor(order[i:i + batch])
            opt.zero_grad()
            loss = F.cross_entropy(model(x_all[idx]), y_all[idx])
            loss.backward()
            opt.step()
    return model, loss.item()


def accuracy_eager(model, x, y):
    with tg.no_grad():
        predicted = model(tg.tensor(x.reshape(-1, 1, 8, 8), dtype=tg.float32)).argmax(dim=1).numpy()
    return float(np.mean(predicted == y))


def split(images, labels, n_train, n_test, seed=0):
    """A deterministic shuffled train/test split."""
    order = np.random.default_rng(seed).permutation(len(labels))
    train, test = order[:n_train], order[n_train:n_train + n_test]
    return images[train], labels[train], images[test], labels[test]


def main(small=False, synthetic=None):
    """Train the four models; return their test accuracies. `synthetic=True` forces the
    generated data even when scikit-learn is installed."""
    images, labels, source = digits(synthetic=True if synthetic else None)
    n_train, n_test, epochs = (640, 300, 10) if small else (1400, 397, 25)
    x_train, y_train, x_test, y_test = split(images, labels, n_train, n_test)
    print(f"data: {source}; {len(y_train)} training and {len(y_test)} test images, {epochs} epochs")

    tg.manual_seed(0)
    results = {}
    for name, model, init, build in [("mlp", mlp, init_mlp, eager_mlp), ("cnn", cnn, init_cnn, eager_cnn)]:
        params, loss = train_functional(model, init(np.random.default_rng(0)), (x_train, y_train), epochs)
        results[f"{name}_functional"] = accuracy_functional(model, params, x_test, y_test)
        print(f"  {name.upper()} functional (tg.jit(tg.value_and_grad)): final batch loss {loss:.3f}, "
              f"test accuracy {results[f'{name}_functional']:.3f}")
        net, loss = train_eager(build(), (x_train, y_train), epochs)
        results[f"{name}_eager"] = accuracy_eager(net, x_test, y_test)
        print(f"  {name.upper()} eager (tg.nn + tg.optim.Adam):          final batch loss {loss:.3f}, "
              f"test accuracy {results[f'{name}_eager']:.3f}")

    threshold = 0.8 if small else 0.9
    print(f"all test accuracies above {threshold}")
    assert all(acc > threshold for acc in results.values()), results
    return results


if __name__ == "__main__":
    main()
