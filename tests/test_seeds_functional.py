"""F1-F6 of SEED_EXAMPLES.md: the seed articles' ideas through the functional transforms."""
import inspect
import re

import networkx as nx
import numpy as np

import tracegrad as tg

from oracles import GRAD_RTOL, assert_close

# S31's linear-regression data
X_DATA = np.array([1.0, 2.0])
Y_DATA = np.array([5.0, 7.0])


def test_F1_linear_regression_gradient():
    loss = lambda w, b: np.sum((w * X_DATA + b - Y_DATA) ** 2)
    gw, gb = tg.grad(loss, argnums=(0, 1))(1.0, 0.0)
    assert (gw, gb) == (-28.0, -18.0)
    assert np.shape(gw) == () and np.shape(gb) == ()


def test_F2_second_derivative_of_square():
    assert tg.grad(tg.grad(lambda x: x ** 2))(3.0) == 2.0


def test_F3_jacobian_of_built_array_and_of_indexed_assignment():
    expected = np.array([[2.0, 5.0], [3.0, 4.0]])

    def built(a):
        return np.array([a[0] ** 2 + a[1] * 5, a[0] ** 3 + a[1] * 4])

    def assigned(a):
        z = np.zeros_like(a)
        z[0] = a[0] ** 2 + a[1] * 5
        z[1] = a[0] ** 3 + a[1] * 4
        return z

    for f in (built, assigned):
        jac = tg.jacobian(f)(np.ones(2))
        assert jac.shape == (2, 2)
        np.testing.assert_array_equal(jac, expected)
        np.testing.assert_array_equal(f(np.ones(2)), [6.0, 5.0])  # still plain NumPy


def test_F4_vjp_of_concatenated_outputs():
    x = np.array([2.0])

    def f(w):
        a = w + x
        b = w + 1
        return np.concatenate([a * b, a + b])     # S14's [y0, y1]

    out, pullback = tg.vjp(f, np.array([1.0]))
    np.testing.assert_array_equal(out, [6.0, 5.0])
    (gw,) = pullback(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(gw, [9.0])


def test_F5_custom_vjp_grad_coeff():
    @tg.custom_vjp
    def grad_coeff(x, coeff):
        return x

    def fwd(x, coeff):
        return x, coeff

    def bwd(coeff, g):
        return coeff * g, None

    grad_coeff.defvjp(fwd, bwd)
    f = lambda x: grad_coeff(x, -0.1) ** 2
    assert f(2.0) == 4.0                                 # outside a trace: the plain function
    assert_close(tg.grad(f)(2.0), -0.4, GRAD_RTOL)
    value, g = tg.value_and_grad(f)(2.0)
    assert value == 4.0
    assert_close(g, -0.4, GRAD_RTOL)


NODE_LINE = re.compile(
    r"^  %(\d+):(f64|f32|i64|bool)\[[\d,]*\] = ([a-z_]+)((?: %\d+)*)(?: .*?)?\s+"
    r"# (test_seeds_functional\.py):(\d+)$")


def _s31_loss(w, x, y):
    return np.sum((w * x - y) ** 2)


def test_F6_printed_gradient_ir_is_readable_and_pruned(capsys):
    g = tg.trace(tg.grad(_s31_loss), 1.0, X_DATA, Y_DATA)
    print(g)
    text = capsys.readouterr().out.strip()
    lines = text.splitlines()

    assert lines[0] == "graph(%0:f64[], %1:f64[2], %2:f64[2]):"
    assert lines[-1] == f"  return %{g.outputs[0]}"
    body = lines[1:-1]
    assert len(body) == len(g) - len(g.inputs)       # one line per non-input node
    loss_line = inspect.getsourcelines(_s31_loss)[1] + 1
    ops = []
    for line in body:
        m = NODE_LINE.match(line)
        assert m, f"unreadable IR line: {line!r}"
        node, op, src_line = int(m.group(1)), m.group(3), int(m.group(6))
        assert g.node(node)["op"] == op
        assert src_line == loss_line, line    # every node points at the user's loss line
        ops.append(op)
    assert {"mul", "sub", "sum"} <= set(ops)
    # the graph computes the gradient: d/dw sum((w x - y)^2) = 2 sum((w x - y) x)
    assert g(1.0, X_DATA, Y_DATA) == -28.0

    # prune leaves no dead node: each is an input or an ancestor of an output
    pruned = tg.passes.prune(g)
    live = set(pruned.outputs)
    for o in pruned.outputs:
        live |= nx.ancestors(pruned.nx, o)
    for n in pruned:
        assert n in live or n in pruned.inputs, f"dead node %{n} after prune:\n{pruned}"
    # tg.grad already handed over a pruned graph: prune has nothing left to drop
    assert len(pruned) == len(g)
    assert str(pruned) == str(g)
