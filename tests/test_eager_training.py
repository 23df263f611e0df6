"""End-to-end training with tg.nn and tg.optim: a small MLP and a small CNN must reach a
stated test accuracy in a fixed number of steps.

The data are synthetic and built with NumPy from a fixed seed (float64 arrays, given to
the float32 models as float32 tensors, as a torch program must), so the tests need nothing
beyond the package's dependencies and give the same numbers everywhere; scikit-learn's
digits are used in one extra test when scikit-learn happens to be installed.
"""
import time

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn, optim

F = nn.functional


def blobs(n, seed, n_classes=10, dim=64):
    """Class-dependent Gaussian blobs: one fixed random centre per class (the same for
    every split), unit noise; centres are ~5 apart, so a linear layer alone is not enough
    margin-wise but an MLP separates them well."""
    centres = np.random.default_rng(1234).normal(0.0, 0.45, (n_classes, dim))
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    x = centres[y] + rng.normal(0.0, 1.0, (n, dim))
    return x, y


def bars(n, seed):
    """8x8 images of one bar at a random place: horizontal, vertical, diagonal or
    anti-diagonal (class 0..3), 2 pixels thick, plus noise. The class is the bar's
    orientation wherever it sits, which a convolution with pooling picks up."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    x = rng.normal(0.0, 0.3, (n, 1, 8, 8))
    idx = np.arange(8)
    for i in range(n):
        k = rng.integers(0, 7)
        img = x[i, 0]
        if y[i] == 0:
            img[k:k + 2, :] += 1.0
        elif y[i] == 1:
            img[:, k:k + 2] += 1.0
        else:
            off = rng.integers(-3, 4)
            cols = (idx + off) if y[i] == 2 else (7 - idx + off)
            ok = (cols >= 0) & (cols < 8)
            img[idx[ok], cols[ok]] += 1.0
            ok2 = (cols + 1 >= 0) & (cols + 1 < 8)
            img[idx[ok2], cols[ok2] + 1] += 1.0
    return x, y


def accuracy(model, x, y):
    model.eval()
    with tg.no_grad():
        pred = model(tg.tensor(x, dtype=tg.float32)).argmax(1).numpy()
    model.train()
    return float(np.mean(pred == y))


def train(model, opt, x, y, steps, batch, seed=0):
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(steps):
        idx = rng.integers(0, len(y), batch)
        loss = F.cross_entropy(model(tg.tensor(x[idx], dtype=tg.float32)), tg.tensor(y[idx]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def mlp(n_in, n_hidden, n_out):
    return nn.Sequential(nn.Linear(n_in, n_hidden), nn.ReLU(), nn.Dropout(0.1),
                         nn.Linear(n_hidden, n_out))


def test_mlp_on_gaussian_blobs():
    tg.manual_seed(0)
    x, y = blobs(2000, seed=1)
    xt, yt = blobs(1000, seed=2)
    model = mlp(64, 32, 10)
    opt = optim.Adam(model.parameters(), lr=1e-2)
    before = accuracy(model, xt, yt)
    start = time.perf_counter()
    losses = train(model, opt, x, y, steps=150, batch=64)
    elapsed = time.perf_counter() - start
    acc = accuracy(model, xt, yt)
    assert before < 0.3
    assert np.mean(losses[-20:]) < 0.5 * np.mean(losses[:5])
    assert acc > 0.90, f"test accuracy {acc:.3f} after 150 Adam steps"
    assert elapsed < 10, f"150 training steps took {elapsed:.1f}s"


def cnn():
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 2 * 2, 4))


def test_cnn_on_bar_images():
    tg.manual_seed(0)
    x, y = bars(1200, seed=3)
    xt, yt = bars(600, seed=4)
    model = cnn()
    opt = optim.Adam(model.parameters(), lr=1e-2)
    losses = train(model, opt, x, y, steps=150, batch=32)
    acc = accuracy(model, xt, yt)
    assert np.mean(losses[-20:]) < 0.3 * np.mean(losses[:5])
    assert acc > 0.90, f"test accuracy {acc:.3f} after 150 Adam steps"


def test_sgd_momentum_mlp_with_mse_regression():
    """A regression target instead of classes, SGD with Nesterov momentum instead of Adam."""
    tg.manual_seed(1)
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (256, 2))
    y = np.sin(2 * x[:, :1]) * np.cos(x[:, 1:])
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 1))
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    first = None
    for _ in range(300):
        loss = F.mse_loss(model(tg.tensor(x, dtype=tg.float32)), tg.tensor(y, dtype=tg.float32))
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.01 * first and loss.item() < 2e-3


def test_mlp_on_sklearn_digits():
    datasets = pytest.importorskip("sklearn.datasets")
    digits = datasets.load_digits()
    x, y = digits.data / 16.0, digits.target
    perm = np.random.default_rng(0).permutation(len(y))
    x, y = x[perm], y[perm]
    tg.manual_seed(0)
    model = mlp(64, 64, 10)
    opt = optim.Adam(model.parameters(), lr=1e-2)
    train(model, opt, x[:1400], y[:1400], steps=200, batch=64)
    acc = accuracy(model, x[1400:], y[1400:])
    assert acc > 0.92, f"digits test accuracy {acc:.3f}"
