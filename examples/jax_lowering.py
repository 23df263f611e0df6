"""The same model on two backends: NumPy code generation and XLA through JAX.

The gradient of a small MLP's loss (plain NumPy, parameters in a dict) is compiled
twice, with `tg.jit(tg.grad(loss))` (generated NumPy source, the default) and with
`tg.jit(tg.grad(loss), backend="jax")` (the graph lowered to JAX, run by XLA in
float64). The two give the same numbers; the lowered StableHLO module is printed
from `.lower(*args).as_text()`. Without jax installed the script says so and exits 0.

    pip install "tracegrad[jax]" && python examples/jax_lowering.py
"""
import numpy as np

import tracegrad as tg


def init(rng, sizes=(64, 32, 10)):
    return {"W1": rng.normal(0, sizes[0] ** -0.5, sizes[:2]), "b1": np.zeros(sizes[1]),
            "W2": rng.normal(0, sizes[1] ** -0.5, sizes[1:]), "b2": np.zeros(sizes[2])}


def loss(p, x, onehot):
    h = np.tanh(x @ p["W1"] + p["b1"])
    logits = h @ p["W2"] + p["b2"]
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    log_p = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return -np.mean(np.sum(onehot * log_p, axis=1)) + 1e-4 * np.sum(p["W1"] ** 2)


def main(small=False, lines=25):
    try:
        import jax  # noqa: F401
    except ImportError:
        print("jax is not installed: pip install 'tracegrad[jax]' to run this example")
        return None

    rng = np.random.default_rng(0)
    batch = 16 if small else 128
    params = init(rng)
    x = rng.normal(size=(batch, 64))
    onehot = np.eye(10)[rng.integers(0, 10, batch)]

    on_numpy = tg.jit(tg.grad(loss))
    on_xla = tg.jit(tg.grad(loss), backend="jax")
    g_np, g_jax = on_numpy(params, x, onehot), on_xla(params, x, onehot)

    max_diff = max(float(np.max(np.abs(np.asarray(g_np[k]) - np.asarray(g_jax[k])))) for k in params)
    dtypes = sorted({str(np.asarray(g_jax[k]).dtype) for k in params})
    shapes = ", ".join(f"{k}{params[k].shape}" for k in params)
    print(f"grad of the MLP loss, batch {batch}: parameters {shapes}")
    print(f"  NumPy backend  |dW1| = {np.linalg.norm(g_np['W1']):.12f}")
    print(f"  JAX backend    |dW1| = {np.linalg.norm(np.asarray(g_jax['W1'])):.12f}   "
          f"dtype {', '.join(dtypes)}")
    print(f"  max |difference| over all parameters: {max_diff:.1e}")

    text = on_xla.lower(params, x, onehot).as_text()
    print(f"\nthe StableHLO module ({len(text.splitlines())} lines), first {lines}:")
    print("\n".join(text.splitlines()[:lines]))

    assert max_diff < 1e-10 and dtypes == ["float64"]
    assert "stablehlo" in text and "func.func" in text
    # a training step on XLA moves the loss the same way as on NumPy
    step = {k: params[k] - 0.5 * np.asarray(g_jax[k]) for k in params}
    before, after = float(loss(params, x, onehot)), float(loss(step, x, onehot))
    print(f"\none gradient step (lr 0.5) with the XLA gradient: loss {before:.4f} -> {after:.4f}")
    assert after < before
    return {"max_diff": max_diff, "dtypes": dtypes, "hlo_lines": len(text.splitlines()),
            "loss_before": before, "loss_after": after}


if __name__ == "__main__":
    main()
