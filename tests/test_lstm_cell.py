"""The fused LSTM step (``lstm_cell``, ``lstm_cell_grad``) against the step composed of
NumPy's elementary operations, and the eager LSTMs built on it against PyTorch.

Values: the fused step is the composite to the bit (float32 and float64), so eager
recurrent layers kept their numbers. Derivatives (first and second order, forward and
reverse, batched) agree with the composite's to rounding. And the engine runs a node
below two inputs of a compiled step once, with its whole gradient, so a program whose
graph breaks between steps still gets eager's gradients bit for bit.
"""
import numpy as np
import pytest

import tracegrad as tg
from tracegrad import nn
from tracegrad.ir import apply

from primitive_cases import lstm_composite


def _operands(lead, hidden, dtype, seed=0):
    rng = np.random.default_rng(seed)
    gates = (rng.standard_normal(lead + (4 * hidden,)) * 3).astype(dtype)
    c = rng.standard_normal(lead + (hidden,)).astype(dtype)
    return gates, c


def fused(gates, c):
    return apply("lstm_cell", gates, c)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("lead", [(), (5,), (2, 3)])
def test_fused_step_is_the_composite_to_the_bit(lead, dtype):
    gates, c = _operands(lead, 3, dtype)
    gates[..., 0] = -100.0          # exp(-x) overflows: sigmoid 0, no warning
    with np.errstate(over="ignore"):
        want = lstm_composite(gates, c)
    got = fused(gates, c)
    for w, g in zip(want, got):
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(g, w)


def _weighted(step):
    """A scalar of all three outputs of two chained steps (h feeds the next gates)."""
    rng = np.random.default_rng(7)
    weights = [rng.standard_normal(s) for s in ((4, 3), (4, 3), (4, 12))]
    mix = rng.standard_normal((3, 12))

    def f(gates, c):
        h, c1, act = step(gates, c)
        h2, c2, act2 = step(gates + h @ mix, c1)
        return (np.sum(h2 * weights[0]) + np.sum(c2 * weights[1]) + np.sum(act * weights[2])
                + np.sum(np.tanh(act2) * weights[2]))
    return f


def test_gradient_and_hessian_are_the_composites():
    gates, c = _operands((4,), 3, np.float64, seed=1)
    for transform, tol in ((tg.grad, 1e-13), (tg.hessian, 1e-11)):
        got = transform(_weighted(fused), argnums=(0, 1))(gates, c)
        want = transform(_weighted(lstm_composite), argnums=(0, 1))(gates, c)
        for g, w in zip(_leaves(got), _leaves(want), strict=True):
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def _leaves(tree):
    if isinstance(tree, (tuple, list)):
        return [leaf for t in tree for leaf in _leaves(t)]
    return [tree]


def test_forward_mode_and_batching_are_the_composites():
    gates, c = _operands((4,), 3, np.float64, seed=2)
    tangents = _operands((4,), 3, np.float64, seed=3)
    for f, g in ((fused, lstm_composite),):
        out_f, tan_f = tg.jvp(lambda a, b: f(a, b), (gates, c), tangents)
        out_g, tan_g = tg.jvp(lambda a, b: g(a, b), (gates, c), tangents)
        for u, v in zip(tan_f, tan_g):
            np.testing.assert_allclose(u, v, rtol=1e-13, atol=1e-13)
    # vmap over a batch of gate blocks against one unbatched cell state, and its gradient
    stack = _operands((6, 4), 3, np.float64, seed=4)[0]
    batched = tg.vmap(fused, in_axes=(0, None))(stack, c)
    for k in range(6):
        for b, w in zip(batched, lstm_composite(stack[k], c)):
            np.testing.assert_array_equal(b[k], w)
    g_fused = tg.grad(lambda s, c: np.sum(tg.vmap(fused, in_axes=(0, None))(s, c)[1] ** 2),
                      argnums=(0, 1))(stack, c)
    g_comp = tg.grad(lambda s, c: np.sum(lstm_composite(s, c)[1] ** 2), argnums=(0, 1))(stack, c)
    for u, v in zip(g_fused, g_comp):
        np.testing.assert_allclose(u, v, rtol=1e-13, atol=1e-13)


def test_eager_lstm_cell_double_backward_is_torchs():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x, h, c = (rng.standard_normal(s) for s in ((2, 3), (2, 4), (2, 4)))
    results = []
    torch.manual_seed(0)
    state = {k: v.numpy() for k, v in torch.nn.LSTMCell(3, 4).double().state_dict().items()}
    for lib in (torch, tg):
        cell = lib.nn.LSTMCell(3, 4).double()
        cell.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        xs = [lib.tensor(a, requires_grad=True) for a in (x, h, c)]
        h1, c1 = cell(xs[0], (xs[1], xs[2]))
        h2, c2 = cell(xs[0], (h1, c1))
        loss = (h2 ** 2).sum() + (c2 * h1).sum()
        grads = lib.autograd.grad(loss, xs, create_graph=True)
        second = lib.autograd.grad(sum((g ** 2).sum() for g in grads),
                                   xs + [cell.weight_hh])
        results.append([t.detach().numpy() for t in list(grads) + list(second)])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


def _cell_loop(compiled, breaks):
    tg.manual_seed(0)
    cell = nn.LSTMCell(3, 4)

    def f(x):
        h = c = tg.zeros(x.shape[0], 4)
        for t in range(x.shape[1]):
            h, c = cell(x[:, t], (h, c))
            if breaks and float(h.sum()) > 1e9:     # a graph break between the steps
                h = h * 0
        return h
    run = tg.compile(f) if compiled else f
    rng = np.random.RandomState(2)
    grads = []
    for _ in range(4):
        x = tg.tensor(rng.randn(2, 2, 3).astype(np.float32))
        cell.zero_grad()
        run(x).sum().backward()
        grads.append([p.grad.numpy().copy() for p in cell.parameters()])
    return grads, run


@pytest.mark.parametrize("breaks", [False, True])
def test_compiled_cell_loop_is_eager_bit_for_bit(breaks):
    """With a break between the two steps, the compiled second step's backward node hands
    the eager first step h's and c's cotangents: the step below both runs once with both
    (run once per cotangent, the fused gradient's sum has other last bits)."""
    (eager, _), (compiled, run) = _cell_loop(False, breaks), _cell_loop(True, breaks)
    for a, b in zip(eager, compiled):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)
    assert run.explain().graph_break_count == int(breaks)


def test_compiled_backward_reads_the_saved_activations(monkeypatch):
    """The forward graph returns lstm_cell's activations for the backward, which then
    computes no step of its own (2 layers x 4 steps with a state: 8 lstm_cell runs a
    training step, not 16)."""
    from tracegrad.ir import REGISTRY
    prim = REGISTRY["lstm_cell"]
    calls = []

    def counted(*args):
        calls.append(1)
        return impl(*args)
    impl = prim.impl
    monkeypatch.setattr(prim, "impl", counted)
    tg.manual_seed(0)
    lstm = nn.LSTM(3, 4, num_layers=2)
    run = tg.compile(lstm)
    x = tg.randn(5, 2, 3)
    for _ in range(4):
        calls.clear()
        out, _ = run(x)
        out.sum().backward()
    assert len(calls) == 8
    assert run.explain().graph_count == 1


def test_jit_outputs_of_a_fresh_multi_output_node_are_arrays_of_their_own():
    """The outputs of lstm_cell (and np.modf, np.frexp) are fresh arrays: returned from a
    compiled function without copies, yet none shares memory with another or an input."""
    gates, c = _operands((3,), 2, np.float64)
    outs = tg.jit(fused)(gates, c)
    for w, g in zip(fused(gates, c), outs):
        np.testing.assert_array_equal(g, w)
    x = np.linspace(-2.5, 2.5, 7)
    for fn in (np.modf, np.frexp):
        outs = outs + tuple(tg.jit(fn)(x))
    arrays = list(outs) + [gates, c, x]
    for i, a in enumerate(arrays):
        for b in arrays[i + 1:]:
            assert not np.shares_memory(a, b)


def test_torch_func_transforms_through_an_lstm_cell_are_torchs():
    """torch.func's grad, jacrev, jacfwd and hessian of a function running an LSTMCell
    through functional_call, against torch.func itself; vmap of grad against a loop
    (torch has no batching rule for its lstm_cell)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x, h0, c0 = (rng.standard_normal(s) for s in ((4, 2, 3), (2, 4), (2, 4)))
    torch.manual_seed(0)
    state = {k: v.numpy() for k, v in torch.nn.LSTMCell(3, 4).double().state_dict().items()}

    def run(lib):
        cell = lib.nn.LSTMCell(3, 4).double()
        cell.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        params = {k: v.detach() for k, v in cell.named_parameters()}
        h_0, c_0 = lib.tensor(h0), lib.tensor(c0)

        def f(p, x):
            h, c = h_0, c_0
            for t in range(x.shape[0]):
                h, c = lib.func.functional_call(cell, p, (x[t], (h, c)))
            return (h ** 2).sum() + (c * h).sum()
        xs = lib.tensor(x)
        g = lib.func.grad(f)(params, xs)
        out = [g[k].numpy() for k in sorted(g)]
        for transform in (lib.func.jacrev, lib.func.jacfwd, lib.func.hessian):
            out.append(transform(f, argnums=1)(params, xs).detach().numpy())
        return out, f, params
    (want, _, _), (got, f, params) = run(torch), run(tg)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-13)
    batch = tg.tensor(rng.standard_normal((3, 4, 2, 3)))
    batched = tg.func.vmap(tg.func.grad(f), in_dims=(None, 0))(params, batch)
    for i in range(3):
        one = tg.func.grad(f)(params, batch[i])
        for k in one:
            np.testing.assert_array_equal(batched[k][i].numpy(), one[k].numpy())


def test_lstm_cell_c_is_an_ancestor_of_h_as_in_torch():
    """PyTorch's LSTMCell computes h = o * tanh(c) from the c it returns: the gradient by c
    (autograd.grad, retain_grad) includes the path through h. nn.LSTM's h_n and c_n are
    sibling outputs in both libraries (PyTorch's layer is one node)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x, h0, c0 = (rng.standard_normal(s) for s in ((2, 3), (2, 4), (2, 4)))
    torch.manual_seed(0)
    state = {k: v.numpy() for k, v in torch.nn.LSTMCell(3, 4).double().state_dict().items()}
    out = []
    for lib in (torch, tg):
        cell = lib.nn.LSTMCell(3, 4).double()
        cell.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
        def loss_of():
            h, c = cell(lib.tensor(x), (lib.tensor(h0), lib.tensor(c0)))
            return (h ** 2).sum() + (c * 0.5).sum(), c
        loss, c = loss_of()
        (by_c,) = lib.autograd.grad(loss, c)
        loss, c = loss_of()
        c.retain_grad()
        loss.backward()
        out.append((by_c.numpy(), c.grad.numpy()))
    for w, g in zip(*out):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
