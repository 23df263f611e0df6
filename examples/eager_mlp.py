"""The PyTorch-style API: a small MLP trained with tg.nn and tg.optim, its autograd
history shown as PyTorch shows it and as tracegrad's IR.

    python examples/eager_mlp.py
"""
import numpy as np

import tracegrad as tg

nn, F = tg.nn, tg.nn.functional

tg.manual_seed(0)
rng = np.random.default_rng(0)

# two Gaussian blobs per class in 2-D, three classes
centres = np.array([[0.0, 2.0], [2.0, -1.0], [-2.0, -1.0]])
labels = rng.integers(0, 3, 300)
points = centres[labels] + 0.6 * rng.standard_normal((300, 2))
x, y = tg.tensor(points, dtype=tg.float32), tg.tensor(labels)   # float32, as the parameters

model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))
opt = tg.optim.Adam(model.parameters(), lr=0.05)

for step in range(60):
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step:2d}  loss {loss.item():.4f}")

with tg.no_grad():
    accuracy = (model(x).argmax(dim=1) == y).float().mean().item()
print(f"training accuracy {accuracy:.3f}")

# the history of a small expression, as PyTorch names it and as the recorded IR
w = tg.tensor([1.0], requires_grad=True)
b = tg.tensor([2.0], requires_grad=True)
out = ((w * 3 + b) ** 2).sum()
print("grad_fn:", out.grad_fn.name(), "<-", [f[0].name() for f in out.grad_fn.next_functions])
print(tg.recorded_graph(out))
out.backward()
print("w.grad =", w.grad.item(), " b.grad =", b.grad.item())    # 30, 10
assert accuracy > 0.9 and w.grad.item() == 30.0 and b.grad.item() == 10.0
