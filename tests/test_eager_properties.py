"""Property tests of the eager front end: random small programs of tensor operations.

Each program is an expression tree over one to three float64 inputs of shapes (), (3,) and
(2, 3), built by hypothesis from add, sub, mul, div (by ``1.5 + b**2``), tanh, sin, exp (of
``sin``), log (of ``1 + x**2``), sum and mean (over an axis or all), reshape, transpose,
matmul and indexing (integers, slices, integer lists with repeats). The tree is written once
and evaluated against two interfaces: ``TensorOps`` (``tg.Tensor`` methods, PyTorch style)
and ``NumpyOps`` (plain NumPy, which the functional transforms trace). The loss is
``sum(program(*xs) * w)`` for a fixed random ``w``, so no output entry is favoured.

Checked: the eager gradient (``backward()`` into ``.grad`` and ``tg.autograd.grad``) equals
``tg.grad`` of the NumPy form and central finite differences; Hessian-vector products from
``create_graph=True`` equal ``tg.hessian`` and finite differences of ``tg.grad``; hooks that
scale a gradient, and removed hooks; ``retain_grad`` on intermediates against
``tg.autograd.grad``; accumulation over repeated ``backward(retain_graph=True)``; and the
version-counter check for tensors saved for backward (and its ``.data`` loophole).
"""
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tracegrad as tg

SHAPES = [(), (3,), (2, 3)]
UNARY = ["tanh", "sin", "exp", "log"]
BINARY = ["add", "sub", "mul", "div"]
KINDS = UNARY + BINARY + ["sum", "mean", "reshape", "transpose", "matmul", "index"]
INPLACE = re.escape("modified by an inplace operation")

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ------------------------------------------------------------------ the two interfaces


class NumpyOps:
    """The operations on NumPy arrays (and the tracers that ``tg.grad`` passes in)."""

    @staticmethod
    def tanh(x):
        return np.tanh(x)

    @staticmethod
    def sin(x):
        return np.sin(x)

    @staticmethod
    def exp(x):
        return np.exp(np.sin(x))

    @staticmethod
    def log(x):
        return np.log(1.0 + x ** 2)

    @staticmethod
    def div(a, b):
        return a / (1.5 + b ** 2)

    @staticmethod
    def sum(x, axis, keepdims):
        return np.sum(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def mean(x, axis, keepdims):
        return np.mean(x, axis=axis, keepdims=keepdims)

    @staticmethod
    def reshape(x, shape):
        return np.reshape(x, shape)

    @staticmethod
    def transpose(x):
        return x.T

    @staticmethod
    def weight(w):
        return w


class TensorOps:
    """The same operations written the way a PyTorch user writes them on ``tg.Tensor``."""

    @staticmethod
    def tanh(x):
        return x.tanh()

    @staticmethod
    def sin(x):
        return x.sin()

    @staticmethod
    def exp(x):
        return x.sin().exp()

    @staticmethod
    def log(x):
        return (1.0 + x ** 2).log()

    @staticmethod
    def div(a, b):
        return a / (1.5 + b ** 2)

    @staticmethod
    def sum(x, axis, keepdims):
        return x.sum() if axis is None else x.sum(dim=axis, keepdim=keepdims)

    @staticmethod
    def mean(x, axis, keepdims):
        return x.mean() if axis is None else x.mean(dim=axis, keepdim=keepdims)

    @staticmethod
    def reshape(x, shape):
        return x.reshape(shape)

    @staticmethod
    def transpose(x):
        return x.t()

    @staticmethod
    def weight(w):
        return tg.tensor(w)


def evaluate(node, ops, xs, record=None):
    """The value of expression ``node`` on inputs ``xs``; every node's value is appended to
    ``record`` when one is given."""
    kind = node[0]
    if kind == "x":
        out = xs[node[1]]
    elif kind in UNARY:
        out = getattr(ops, kind)(evaluate(node[1], ops, xs, record))
    elif kind in BINARY or kind == "matmul":
        a = evaluate(node[1], ops, xs, record)
        b = evaluate(node[2], ops, xs, record)
        if kind == "add":
            out = a + b
        elif kind == "sub":
            out = a - b
        elif kind == "mul":
            out = a * b
        elif kind == "div":
            out = ops.div(a, b)
        else:
            out = a @ b
    elif kind in ("sum", "mean"):
        _, axis, keepdims, child = node
        out = getattr(ops, kind)(evaluate(child, ops, xs, record), axis, keepdims)
    elif kind == "reshape":
        out = ops.reshape(evaluate(node[2], ops, xs, record), node[1])
    elif kind == "transpose":
        out = ops.transpose(evaluate(node[1], ops, xs, record))
    elif kind == "index":
        out = evaluate(node[2], ops, xs, record)[node[1]]
    else:
        raise AssertionError(kind)
    if record is not None:
        record.append(out)
    return out


def inputs_used(node):
    """The indices of the inputs that appear in ``node``."""
    if node[0] == "x":
        return {node[1]}
    return set().union(*(inputs_used(c) for c in node[1:] if isinstance(c, tuple) and c
                         and isinstance(c[0], str)))


# ------------------------------------------------------------------ random programs


def shape_of(node, shapes):
    return np.shape(evaluate(node, NumpyOps, [np.ones(s) for s in shapes]))


def reshapes(size):
    """Shapes of at most two dimensions holding ``size`` elements."""
    out = [(size,)] + [(d, size // d) for d in range(1, size + 1) if size % d == 0]
    return out + [()] if size == 1 else out


def draw_index(data, shape):
    """A key for ``x[key]`` that NumPy and PyTorch read the same way (no negative steps)."""
    def one_axis(n, allow_list):
        choices = ["int", "slice"] + (["list"] if allow_list else [])
        how = data.draw(st.sampled_from(choices))
        if how == "int":
            return data.draw(st.integers(-n, n - 1))
        if how == "slice":
            start = data.draw(st.integers(0, n - 1))
            stop = data.draw(st.integers(start + 1, n))
            step = data.draw(st.integers(1, 2))
            return slice(start, stop, step)
        return data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4))

    if len(shape) == 1:
        return one_axis(shape[0], True)
    form = data.draw(st.sampled_from(["row", "col", "both"]))
    if form == "row":
        return one_axis(shape[0], True)
    if form == "col":
        return (slice(None), one_axis(shape[1], False))
    return (one_axis(shape[0], False), one_axis(shape[1], False))


def draw_expr(data, shapes, depth, root=False):
    """A random expression tree over inputs of ``shapes``, at most ``depth`` levels deep
    (a bare input is rarer at the root than below it)."""
    if depth == 0 or data.draw(st.integers(0, 9 if root else 4)) == 0:
        return ("x", data.draw(st.integers(0, len(shapes) - 1)))
    kind = data.draw(st.sampled_from(KINDS))
    a = draw_expr(data, shapes, depth - 1)
    sa = shape_of(a, shapes)
    if kind in UNARY:
        return (kind, a)
    if kind in BINARY:
        b = draw_expr(data, shapes, depth - 1)
        try:
            np.broadcast_shapes(sa, shape_of(b, shapes))
        except ValueError:
            b = ("sum", None, False, b)      # a scalar broadcasts against anything
        return (kind, a, b)
    if kind in ("sum", "mean"):
        axes = [None] + list(range(len(sa))) + ([-1] if sa else [])
        axis = data.draw(st.sampled_from(axes))
        keepdims = axis is not None and data.draw(st.booleans())
        return (kind, axis, keepdims, a)
    if kind == "reshape":
        return ("reshape", data.draw(st.sampled_from(reshapes(int(np.prod(sa))))), a)
    if kind == "transpose":
        return ("transpose", a) if len(sa) == 2 else ("tanh", a)
    if kind == "index":
        return ("index", draw_index(data, sa), a) if sa else ("sin", a)
    # matmul: bend the right operand into (k,) or (k, m) when it can be done
    b = draw_expr(data, shapes, depth - 1)
    sb = shape_of(b, shapes)
    if len(sa) not in (1, 2):
        return ("mul", a, ("sum", None, False, b))
    k, size = sa[-1], int(np.prod(sb))
    if len(sb) == 2 and sb[0] == k:
        return ("matmul", a, b)
    if len(sb) == 2 and sb[1] == k and data.draw(st.booleans()):
        return ("matmul", a, ("transpose", b))
    if size % k == 0:
        target = (k,) if size == k and data.draw(st.booleans()) else (k, size // k)
        return ("matmul", a, ("reshape", target, b))
    return ("mul", a, ("sum", None, False, b))


@st.composite
def programs(draw, max_depth=4):
    """``(expr, xs, w, seed)``: a program, its float64 inputs, the loss weights and a seed
    for further random vectors."""
    data = draw(st.data())
    n = draw(st.integers(1, 3))
    shapes = [draw(st.sampled_from(SHAPES)) for _ in range(n)]
    expr = draw_expr(data, shapes, max_depth, root=True)
    xs = [draw(hnp.arrays(np.float64, s, elements=st.floats(-2, 2, allow_subnormal=False)))
          for s in shapes]
    seed = draw(st.integers(0, 2 ** 32 - 1))
    w = np.random.default_rng(seed).uniform(-1.5, 1.5, size=shape_of(expr, shapes))
    return expr, xs, w, seed


# ------------------------------------------------------------------ helpers


def np_loss(expr, w):
    """The loss as a plain NumPy function of the inputs (what ``tg.grad`` differentiates)."""
    return lambda *xs: np.sum(evaluate(expr, NumpyOps, xs) * w)


def leaves(xs):
    return [tg.tensor(np.array(x, dtype=np.float64), requires_grad=True) for x in xs]


def tensor_loss(expr, w, ts, record=None):
    return (evaluate(expr, TensorOps, ts, record) * TensorOps.weight(w)).sum()


def values(t):
    return t.detach().numpy()


def close(actual, expected, rtol=1e-6, what=""):
    """``actual`` equals ``expected`` to ``rtol``, with an absolute tolerance of ``rtol`` times
    the larger of 1 and the largest entry: entries small by cancellation, and finite
    differences (whose error is absolute), are held to the scale of the array."""
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    scale = max(float(np.max(np.abs(expected), initial=0.0)), 1.0)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol * scale, err_msg=what)


def fd_grad(f, xs, h=1e-6):
    """Central differences of the scalar ``f(*xs)`` with respect to every input."""
    grads = []
    for i, x in enumerate(xs):
        g = np.zeros(np.shape(x))
        for j in np.ndindex(g.shape):
            plus, minus = [np.array(v, copy=True) for v in xs], [np.array(v, copy=True) for v in xs]
            plus[i][j] += h
            minus[i][j] -= h
            g[j] = (f(*plus) - f(*minus)) / (2 * h)
        grads.append(g)
    return grads


def functional_grads(expr, w, xs):
    grads = tg.grad(np_loss(expr, w), argnums=tuple(range(len(xs))))(*xs)
    return [np.asarray(g, dtype=np.float64) for g in grads]


def or_zeros(g, x):
    return np.zeros(np.shape(x)) if g is None else values(g)


def flat(arrays):
    return np.concatenate([np.ravel(a) for a in arrays])


# ------------------------------------------------------------------ first derivatives


@SETTINGS
@given(programs())
def test_eager_gradient_equals_functional_grad_and_finite_differences(prog):
    expr, xs, w, _ = prog
    used = inputs_used(expr)
    expected = functional_grads(expr, w, xs)
    fd = fd_grad(np_loss(expr, w), xs)
    for i in range(len(xs)):
        close(expected[i], fd[i], rtol=1e-5, what=f"tg.grad vs finite differences, input {i}")

    ts = leaves(xs)
    loss = tensor_loss(expr, w, ts)
    close(values(loss), np_loss(expr, w)(*xs), what="forward value")
    loss.backward()
    for i, t in enumerate(ts):
        if i not in used:
            assert t.grad is None, f"unused input {i} got a .grad"
            continue
        assert t.grad is not None, f"input {i} is used but got no .grad"
        assert t.grad.shape == t.shape
        close(values(t.grad), expected[i], what=f".grad vs tg.grad, input {i}")
        close(values(t.grad), fd[i], rtol=1e-5, what=f".grad vs finite differences, input {i}")

    ts = leaves(xs)
    got = tg.autograd.grad(tensor_loss(expr, w, ts), ts, allow_unused=True)
    assert isinstance(got, tuple) and len(got) == len(ts)
    for i, g in enumerate(got):
        assert (g is None) == (i not in used), f"input {i}: used={i in used}, grad {g!r}"
        close(or_zeros(g, xs[i]), expected[i], what=f"tg.autograd.grad vs tg.grad, input {i}")


# ------------------------------------------------------------------ second derivatives


@settings(SETTINGS, max_examples=100)
@given(programs(max_depth=3))
def test_double_backward_equals_hessian_and_finite_differences(prog):
    expr, xs, w, seed = prog
    rng = np.random.default_rng(seed + 1)
    vs = [rng.uniform(-1, 1, size=np.shape(x)) for x in xs]
    ts = leaves(xs)
    gs = tg.autograd.grad(tensor_loss(expr, w, ts), ts, create_graph=True, allow_unused=True)
    terms = [(g * tg.tensor(v)).sum() for g, v in zip(gs, vs) if g is not None]
    s = terms[0]
    for term in terms[1:]:
        s = s + term
    if s.requires_grad:
        hv = tg.autograd.grad(s, ts, allow_unused=True)
        hv = flat([or_zeros(h, x) for h, x in zip(hv, xs)])
    else:    # the gradient does not depend on the inputs: the program is linear
        hv = np.zeros(sum(np.size(x) for x in xs))

    sizes = [int(np.size(x)) for x in xs]
    offsets = np.cumsum([0] + sizes)
    shapes = [np.shape(x) for x in xs]
    loss = np_loss(expr, w)

    def f_flat(z):
        return loss(*[z[offsets[i]:offsets[i + 1]].reshape(shapes[i]) for i in range(len(xs))])

    z, v = flat(xs), flat(vs)
    hessian = np.asarray(tg.hessian(f_flat)(z))
    close(hv, hessian @ v, what="Hessian-vector product: create_graph vs tg.hessian")

    # the same through backward(create_graph=True): the leaves' .grad carry a graph
    ts = leaves(xs)
    tensor_loss(expr, w, ts).backward(create_graph=True)
    used = [i for i, t in enumerate(ts) if t.grad is not None]
    s = (ts[used[0]].grad * tg.tensor(vs[used[0]])).sum()
    for i in used[1:]:
        s = s + (ts[i].grad * tg.tensor(vs[i])).sum()
    if s.requires_grad:
        hv2 = flat([or_zeros(h, x) for h, x in zip(tg.autograd.grad(s, ts, allow_unused=True), xs)])
    else:
        hv2 = np.zeros_like(hv)
    close(hv2, hessian @ v, what="Hessian-vector product: backward(create_graph=True) vs tg.hessian")
    close(hessian, hessian.T, what="tg.hessian is symmetric")

    g = tg.grad(f_flat)
    h = 1e-5
    fd = (np.asarray(g(z + h * v)) - np.asarray(g(z - h * v))) / (2 * h)
    close(hv, fd, rtol=1e-5, what="Hessian-vector product: create_graph vs differences of tg.grad")


# ------------------------------------------------------------------ hooks, retain_grad, accumulation


@SETTINGS
@given(programs(), st.floats(-3, 3).filter(lambda c: abs(c) > 0.1), st.data())
def test_hook_scales_the_leaf_gradient_and_a_removed_hook_does_not(prog, c, data):
    expr, xs, w, _ = prog
    i = data.draw(st.sampled_from(sorted(inputs_used(expr))), label="hooked input")
    expected = functional_grads(expr, w, xs)

    ts = leaves(xs)
    handle = ts[i].register_hook(lambda grad: grad * c)
    tensor_loss(expr, w, ts).backward()
    close(values(ts[i].grad), c * expected[i], what="hooked leaf")
    for j in inputs_used(expr) - {i}:
        close(values(ts[j].grad), expected[j], what=f"un-hooked leaf {j}")

    handle.remove()
    for t in ts:
        t.grad = None
    tensor_loss(expr, w, ts).backward()
    close(values(ts[i].grad), expected[i], what="leaf after its hook was removed")


@SETTINGS
@given(programs(), st.floats(-3, 3).filter(lambda c: abs(c) > 0.1))
def test_hook_on_the_program_output_scales_every_leaf_gradient(prog, c):
    expr, xs, w, _ = prog
    expected = functional_grads(expr, w, xs)
    ts = leaves(xs)
    out = evaluate(expr, TensorOps, ts)     # a bare input when the program is one (a leaf hook)
    out.register_hook(lambda grad: grad * c)
    (out * TensorOps.weight(w)).sum().backward()
    for j in inputs_used(expr):
        close(values(ts[j].grad), c * expected[j], what=f"leaf {j} behind a hooked output")


@SETTINGS
@given(programs())
def test_retain_grad_on_intermediates_equals_autograd_grad(prog):
    expr, xs, w, _ = prog
    ts = leaves(xs)
    record = []
    loss = tensor_loss(expr, w, ts, record)
    seen, inter = set(), []
    for t in record:
        if not t.is_leaf and id(t) not in seen:
            seen.add(id(t))
            inter.append(t)
    if not inter:
        return
    for t in inter:
        t.retain_grad()
    expected = tg.autograd.grad(loss, inter, retain_graph=True)
    for k, (t, e) in enumerate(zip(inter, expected)):
        # as in PyTorch, autograd.grad runs the retain_grad hooks of the nodes it reaches
        assert t.grad is not None, f"intermediate {k} ({t.grad_fn}): autograd.grad kept no grad"
        close(values(t.grad), values(e), what=f"autograd.grad's retained grad {k}")
        t.grad = None
    loss.backward()
    for k, (t, e) in enumerate(zip(inter, expected)):
        assert t.grad is not None, f"intermediate {k} ({t.grad_fn}) kept no grad"
        assert t.grad.shape == t.shape
        close(values(t.grad), values(e), what=f"retained grad of intermediate {k} ({t.grad_fn})")


@SETTINGS
@given(programs(), st.integers(2, 4))
def test_gradients_accumulate_over_repeated_backward(prog, k):
    expr, xs, w, _ = prog
    once = leaves(xs)
    tensor_loss(expr, w, once).backward()
    ts = leaves(xs)
    loss = tensor_loss(expr, w, ts)
    for _ in range(k):
        loss.backward(retain_graph=True)
    for j in inputs_used(expr):
        close(values(ts[j].grad), k * values(once[j].grad), what=f"leaf {j} after {k} backward calls")


# ------------------------------------------------------------------ version counters

# How the tensor ``b`` is saved for backward: the operation keeps ``b`` itself (mul, sin)
# or its own output (exp, tanh), which is what then gets modified.
SAVERS = {
    "mul": (lambda b, z: b * z, "input"),
    "sin": (lambda b, z: b.sin() * z, "input"),
    "exp": (lambda b, z: b.exp(), "output"),
    "tanh": (lambda b, z: b.tanh(), "output"),
}


@SETTINGS
@given(programs(max_depth=3), st.sampled_from(sorted(SAVERS)), st.sampled_from(["add_", "mul_"]))
def test_inplace_change_to_a_saved_tensor_makes_backward_raise(prog, saver, method):
    expr, xs, w, _ = prog
    ts = leaves(xs)
    b = evaluate(expr, TensorOps, ts).tanh()     # a fresh non-leaf, not a view of a leaf
    z = tg.tensor(np.full(tuple(b.shape), 0.5))
    op, which = SAVERS[saver]
    y = op(b, z)
    target = b if which == "input" else y
    getattr(target, method)(1.25)
    with pytest.raises(RuntimeError, match=INPLACE):
        y.sum().backward()


@SETTINGS
@given(programs(max_depth=3), st.sampled_from(["add_", "mul_"]))
def test_inplace_change_to_a_saved_leaf_under_no_grad_makes_backward_raise(prog, method):
    expr, xs, w, _ = prog
    ts = leaves(xs)
    out = evaluate(expr, TensorOps, ts)
    leaf = tg.tensor(np.full(tuple(out.shape), 0.75), requires_grad=True)
    y = (out * leaf).sum()        # mul saves the leaf
    with tg.no_grad():
        getattr(leaf, method)(2.0)
    with pytest.raises(RuntimeError, match=INPLACE):
        y.backward()


@SETTINGS
@given(programs(max_depth=3), st.sampled_from(["add_", "mul_"]))
def test_inplace_change_through_data_goes_unnoticed(prog, method):
    expr, xs, w, _ = prog
    ts = leaves(xs)
    b = evaluate(expr, TensorOps, ts).tanh()
    z = tg.tensor(np.full(tuple(b.shape), 0.5), requires_grad=True)
    y = (b * z).sum()
    getattr(b.data, method)(1.25)
    y.backward()              # no error: .data is outside the version counter
    # mul saved b by reference, so dz sees the modified values (the documented pitfall)
    close(values(z.grad), values(b), what="dz after b.data was modified")


@SETTINGS
@given(programs(max_depth=3))
def test_inplace_change_to_a_tensor_no_backward_needs_does_not_raise(prog):
    expr, xs, w, _ = prog
    ts = leaves(xs)
    b = evaluate(expr, TensorOps, ts) * 1.0
    y = (b + TensorOps.weight(w)).sum()      # add saves nothing
    b.add_(1.25)
    y.backward()
    expected = functional_grads(expr, np.ones_like(w), xs)
    for j in inputs_used(expr):
        close(values(ts[j].grad), expected[j], what=f"leaf {j}")
