"""``passes.broadcasts.elide_broadcasts`` and the code generator's scatters into zeros:
a broadcast an arithmetic operation would make itself is dropped, and a broadcast of
zeros that only scatters start from is never computed. Both must leave every value bit for
bit what the graph computes without them (the interpreter, the reference)."""
import itertools

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.passes.broadcasts import elide_broadcasts
from tracegrad.runtime.codegen import generate
from tracegrad.runtime.interpreter import run

OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
       "maximum": np.maximum, "minimum": np.minimum}
# (shape broadcast, target shape, the other operand's shape)
SHAPES = [((), (2, 3), (2, 3)), ((1, 3), (2, 3), (2, 3)), ((3,), (2, 3), (2, 3)),
          ((2, 1), (2, 3), (1, 3)), ((1,), (4,), ()), ((1, 1), (2, 3), (3,))]


@pytest.mark.parametrize("op,shapes,first", list(itertools.product(OPS, SHAPES, [True, False])))
def test_elided_broadcasts_give_the_same_bits(op, shapes, first):
    small, target, other = shapes
    rng = np.random.RandomState(0)
    x, y = rng.randn(*small), rng.randn(*other)
    if op == "div":
        y = y + np.sign(y) * 0.5
    fn = OPS[op]

    def f(x, y):
        b = np.broadcast_to(x, target)
        return fn(b, y) if first else fn(y, b)
    g = tg.trace(f, x, y)
    assert "broadcast_to" in g.ops()
    h = elide_broadcasts(g)
    want = run(g, [x, y])
    got = generate(h).fn(x, y)
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)
        assert a.shape == b.shape and a.dtype == b.dtype
    kept = "broadcast_to" in h.ops()
    # dropped exactly where the operation still has the broadcast's shape without it
    assert kept == (np.broadcast_shapes(small, other) != target)
    assert "broadcast_to" in g.ops()        # the pass leaves its argument as it was


def test_a_broadcast_read_elsewhere_stays():
    x0, y0 = np.arange(3.0), np.ones((2, 3))
    g = tg.trace(lambda x, y: (np.broadcast_to(x, (2, 3)) + y, np.broadcast_to(x, (2, 3))),
                 x0, y0)
    h = elide_broadcasts(g)
    assert h.ops().count("broadcast_to") == 1
    for a, c in zip(run(g, [x0, y0]), generate(h).fn(x0, y0)):
        np.testing.assert_array_equal(a, c)


def test_elision_in_a_compiled_training_step_is_eager_bit_for_bit():
    """The BiLSTM-CRF tutorial's log_sum_exp: expand before a subtraction, and the
    adjoint of its sum; with indices read by .item() (scatters with operands)."""
    def lse(vec):
        _, idx = tg.max(vec, 1)
        m = vec[0, idx.item()]
        return m + tg.log(tg.sum(tg.exp(vec - m.view(1, -1).expand(1, vec.size()[1]))))

    def loss_of(w, x):
        rows = [lse(x[i].view(1, -1) + w[i].view(1, -1).expand(1, 5)).view(1)
                for i in range(4)]
        return lse(tg.cat(rows).view(1, -1))

    tg.manual_seed(0)
    w = tg.randn(4, 5, requires_grad=True)
    compiled = tg.compile(loss_of)
    for _ in range(4):
        x = tg.randn(4, 5) * 3
        w.grad = None
        a = loss_of(w, x)
        a.backward()
        ga = w.grad.numpy().copy()
        w.grad = None
        b = compiled(w, x)
        b.backward()
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        np.testing.assert_array_equal(ga, w.grad.numpy())
    assert compiled.explain().graph_count == 1


def test_scatters_start_from_fresh_zeros_not_a_broadcast():
    """The adjoint of indexing, ``index_update(broadcast_to(0, shape), g, index)``, with
    a static index and one computed by the graph (an index read by ``.item()``)."""
    def f(x, i):
        return x[1, i] * 2.0 + x[0, 2] * 3.0 + x[1, i] * x[2, 0]
    x0 = np.arange(12.0).reshape(3, 4)
    g = tg.trace(tg.grad(f), x0, np.array(2))
    assert "broadcast_to" in g.ops() and len(g.args(next(
        n for n in g if g.op(n) == "index_update" and len(g.args(n)) == 3))) == 3
    compiled = generate(g)
    assert "broadcast_to" not in compiled.source
    for k in (0, 3, -1, 1):
        i = np.array(k)
        got, want = compiled.fn(x0, i), run(g, [x0, i])
        for a, b in zip(want, got):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(got[0], tg.grad(f)(x0, i))
