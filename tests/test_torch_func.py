"""Generated check: ``tracegrad.func`` (``torch.func`` for ``import tracegrad as torch``)
and ``torch.jit.script``/``trace`` against torch 2.13.

Every function of ``FUNCTIONS`` (one line each, written once for both libraries) is
crossed with the transforms and their flags (``argnums`` int/tuple/negative, ``has_aux``,
``chunk_size``, ``in_dims``/``out_dims``), and nested transforms (``grad(grad)``,
``jacrev(jacfwd)``, ``vmap(grad)``, ``vmap(vmap)``, ``grad(vmap)``). Each case compares
the result's nesting (tuples, dicts), shapes, dtypes and values with torch's. Misuse
cases compare the exception's type and message. The tutorials' patterns (per-sample
gradients, model ensembling, Jacobians and Hessians) run on the same weights in both.

The default run takes an even slice (``bounded``); TRACEGRAD_EXHAUSTIVE=1 runs every case.
"""
import copy
import itertools

import numpy as np
import pytest
import tracegrad.func as tgf
from conftest import bounded

import tracegrad as tg

torch = pytest.importorskip("torch")
tf = pytest.importorskip("torch.func")
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")


# -- comparing results ----------------------------------------------------------------------------
def _np(x):
    return x.detach().numpy() if isinstance(x, (tg.Tensor, torch.Tensor)) else np.asarray(x)


def same(ours, theirs, rtol=None, path="result"):
    """The same nesting, shapes, dtypes and values (to rounding)."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tg.Tensor), f"{path}: {type(ours)} is not a tensor"
        a, b = _np(ours), _np(theirs)
        assert a.shape == b.shape, f"{path}: shape {a.shape} != {b.shape}"
        assert a.dtype == b.dtype, f"{path}: dtype {a.dtype} != {b.dtype}"
        tol = rtol if rtol is not None else (1e-5 if b.dtype == np.float32 else 1e-10)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=path)
        return
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and set(ours) == set(theirs), f"{path}: {ours!r}"
        for k in theirs:
            same(ours[k], theirs[k], rtol, f"{path}[{k!r}]")
        return
    if isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), \
            f"{path}: {type(ours).__name__} of {len(ours)} vs {type(theirs).__name__}"
        for k, (o, t) in enumerate(zip(ours, theirs)):
            same(o, t, rtol, f"{path}[{k}]")
        return
    assert ours == theirs, f"{path}: {ours!r} != {theirs!r}"


def _inputs(lib, shapes, dtype, seed=0):
    rng = np.random.RandomState(seed)
    return tuple(lib.tensor(rng.uniform(0.5, 1.5, s).astype(dtype)) for s in shapes)


def _raises_as_torch(ours, theirs):
    """Both raise, with the same exception type and message."""
    with pytest.raises(Exception) as expected:
        theirs()
    with pytest.raises(type(expected.value)) as got:
        ours()
    assert str(got.value) == str(expected.value)


# -- the functions --------------------------------------------------------------------------------
W = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])

# name: (function of (library, *inputs), input shapes, dtype)
SCALAR = {
    "cube_sum": (lambda L, x: (x ** 3).sum(), [(3,)], "float64"),
    "sin_times": (lambda L, x: (x.sin() * x).sum(), [(2, 3)], "float32"),
    "logsumexp": (lambda L, x: x.logsumexp(0), [(4,)], "float64"),
    "two_args": (lambda L, x, y: (x.exp() * y.sum()).sum() + (y ** 2).mean(), [(3,), (2,)],
                 "float64"),
    "matmul": (lambda L, x, y: (x @ y).tanh().sum(), [(2, 3), (3,)], "float64"),
    "unused_arg": (lambda L, x, y: (x ** 2).sum(), [(3,), (2,)], "float32"),
    "softmax_ce": (lambda L, x, y: -(L.log_softmax(x, 0) * y.softmax(0)).sum(),
                   [(5,), (5,)], "float64"),
}
VECTOR = {
    "sin": (lambda L, x: x.sin(), [(3,)], "float64"),
    "tanh_matmul": (lambda L, x: (L.tensor(W) @ x).tanh(), [(3,)], "float64"),
    "outer": (lambda L, x, y: x[:, None] * y.exp(), [(2,), (3,)], "float64"),
    "tuple_out": (lambda L, x, y: (x * y.sum(), (y ** 2).cumsum(0)), [(2,), (3,)], "float32"),
    "reshape": (lambda L, x: (x.reshape(6) * 2).softmax(0), [(2, 3)], "float64"),
}
ALL = {**SCALAR, **VECTOR}


def _argnums_options(n):
    opts = [0, -1]
    if n > 1:
        opts += [1, (0, 1), (1, 0)]
    return opts


def _grad_cases():
    for name, (_, shapes, _) in SCALAR.items():
        for argnums, has_aux, with_value in itertools.product(
                _argnums_options(len(shapes)), (False, True), (False, True)):
            yield name, argnums, has_aux, with_value


@pytest.mark.parametrize("name,argnums,has_aux,with_value", bounded(list(_grad_cases()), 14))
def test_grad(name, argnums, has_aux, with_value):
    fn, shapes, dtype = SCALAR[name]

    def make(L):
        if has_aux:
            return lambda *a: (fn(L, *a), {"x2": a[0] * 2})
        return lambda *a: fn(L, *a)
    t_api = tf.grad_and_value if with_value else tf.grad
    g_api = tgf.grad_and_value if with_value else tgf.grad
    expected = t_api(make(torch), argnums=argnums, has_aux=has_aux)(*_inputs(torch, shapes, dtype))
    got = g_api(make(tg), argnums=argnums, has_aux=has_aux)(*_inputs(tg, shapes, dtype))
    same(got, expected)


def _jac_cases():
    for name, (_, shapes, _) in ALL.items():
        for api, argnums, has_aux in itertools.product(
                ("jacrev", "jacfwd"), _argnums_options(len(shapes)), (False, True)):
            yield name, api, argnums, has_aux


@pytest.mark.parametrize("name,api,argnums,has_aux", bounded(list(_jac_cases()), 12))
def test_jacobians(name, api, argnums, has_aux):
    fn, shapes, dtype = ALL[name]

    def make(L):
        if has_aux:
            return lambda *a: (fn(L, *a), a[-1].sum())
        return lambda *a: fn(L, *a)
    # (torch 2.13's jacfwd gives zeros for a negative argnums: compared at the positive one)
    t_argnums = argnums % len(shapes) if api == "jacfwd" and isinstance(argnums, int) \
        else argnums
    expected = getattr(tf, api)(make(torch), t_argnums, has_aux=has_aux)(
        *_inputs(torch, shapes, dtype))
    got = getattr(tgf, api)(make(tg), argnums, has_aux=has_aux)(*_inputs(tg, shapes, dtype))
    same(got, expected)


@pytest.mark.parametrize("chunk_size", [1, 2, 5])
def test_jacrev_chunk_size(chunk_size):
    fn, shapes, dtype = VECTOR["outer"]
    expected = tf.jacrev(lambda *a: fn(torch, *a), (0, 1), chunk_size=chunk_size)(
        *_inputs(torch, shapes, dtype))
    got = tgf.jacrev(lambda *a: fn(tg, *a), (0, 1), chunk_size=chunk_size)(
        *_inputs(tg, shapes, dtype))
    same(got, expected)


@pytest.mark.parametrize("name", bounded(list(ALL), 6))
def test_hessian(name):
    fn, shapes, dtype = ALL[name]
    if name == "tuple_out":
        return
    expected = tf.hessian(lambda *a: fn(torch, *a))(*_inputs(torch, shapes, dtype))
    got = tgf.hessian(lambda *a: fn(tg, *a))(*_inputs(tg, shapes, dtype))
    same(got, expected)


@pytest.mark.parametrize("name,has_aux", bounded(list(itertools.product(ALL, (False, True))), 8))
def test_vjp_jvp_linearize(name, has_aux):
    fn, shapes, dtype = ALL[name]

    def make(L):
        if has_aux:
            return lambda *a: (fn(L, *a), a[0] + 1)
        return lambda *a: fn(L, *a)
    tp, gp = _inputs(torch, shapes, dtype), _inputs(tg, shapes, dtype)
    t_res = tf.vjp(make(torch), *tp, has_aux=has_aux)
    g_res = tgf.vjp(make(tg), *gp, has_aux=has_aux)
    same(g_res[0], t_res[0])
    if has_aux:
        same(g_res[2], t_res[2])
    rng = np.random.RandomState(3)
    ct = [np.asarray(rng.randn(*np.shape(_np(o)))).astype(_np(o).dtype) for o in
          (t_res[0] if isinstance(t_res[0], tuple) else (t_res[0],))]
    wrap = tuple if isinstance(t_res[0], tuple) else (lambda c: c[0])
    same(g_res[1](wrap([tg.tensor(c) for c in ct])), t_res[1](wrap([torch.tensor(c) for c in ct])))
    tans = [np.asarray(rng.randn(*s)).astype(dtype) for s in shapes]
    same(tgf.jvp(make(tg), gp, tuple(tg.tensor(t) for t in tans), has_aux=has_aux),
         tf.jvp(make(torch), tp, tuple(torch.tensor(t) for t in tans), has_aux=has_aux))
    if not has_aux:
        t_out, t_fn = tf.linearize(make(torch), *tp)
        g_out, g_fn = tgf.linearize(make(tg), *gp)
        same(g_out, t_out)
        same(g_fn(*[tg.tensor(t) for t in tans]), t_fn(*[torch.tensor(t) for t in tans]))


def test_pytree_arguments():
    def f(L, p, xs):
        return (p["w"] * xs[0]).sum() + (p["b"] ** 2).sum() * xs[1].mean()

    def args(L):
        rng = np.random.RandomState(0)
        return ({"w": L.tensor(rng.randn(3)), "b": L.tensor(rng.randn(2))},
                (L.tensor(rng.randn(3)), L.tensor(rng.randn(4))))
    same(tgf.grad(lambda *a: f(tg, *a), argnums=(0, 1))(*args(tg)),
         tf.grad(lambda *a: f(torch, *a), argnums=(0, 1))(*args(torch)))
    same(tgf.jacrev(lambda *a: f(tg, *a))(*args(tg)),
         tf.jacrev(lambda *a: f(torch, *a))(*args(torch)))


# -- nesting ----------------------------------------------------------------------------------
NESTED = {
    "grad_grad": lambda F, L: F.grad(lambda x: F.grad(lambda y: (y.sin() * y ** 2).sum())(x).sum()),
    "jacrev_jacfwd": lambda F, L: F.jacrev(F.jacfwd(lambda x: x.sin() * x.sum())),
    "jacfwd_jacrev": lambda F, L: F.jacfwd(F.jacrev(lambda x: (x.exp() * x).sum())),
    "vmap_grad": lambda F, L: F.vmap(F.grad(lambda x: (x ** 3).sum())),
    "vmap_vmap": lambda F, L: F.vmap(F.vmap(lambda x: x.sin() * 2)),
    "grad_vmap": lambda F, L: F.grad(lambda x: F.vmap(lambda r: (r ** 2).sum())(x).sum()),
    "vmap_jacrev": lambda F, L: F.vmap(F.jacrev(lambda x: x.tanh() * x.sum())),
    "vmap_hessian": lambda F, L: F.vmap(F.hessian(lambda x: (x ** 4).sum())),
}


@pytest.mark.parametrize("name", list(NESTED))
def test_nested(name):
    x = np.random.RandomState(1).uniform(0.5, 1.5, (2, 3))
    same(NESTED[name](tgf, tg)(tg.tensor(x)), NESTED[name](tf, torch)(torch.tensor(x)))


# -- vmap ----------------------------------------------------------------------------------------
VMAPS = [
    # (function of (L, *args), arg shapes, in_dims, out_dims)
    (lambda L, x: x * 2 + x.sum(), [(4, 3)], 0, 0),
    (lambda L, x: x.sin(), [(3, 4)], 1, 0),
    (lambda L, x: x.cumsum(0), [(3, 4)], -1, 1),
    (lambda L, x, y: x @ y, [(4, 2, 3), (3,)], (0, None), 0),
    (lambda L, x, y: x * y, [(4, 3), (3, 4)], (0, 1), -1),
    (lambda L, x, y: (x + y, x.sum()), [(4, 3), (4, 3)], 0, (0, 0)),
    (lambda L, x, y: (x + y, y * 2), [(4, 3), (3,)], (0, None), (1, None)),
    (lambda L, x: L.ones(2) * 3, [(4, 3)], 0, 0),
    (lambda L, x: x.softmax(-1), [(5, 2, 3)], 0, 2),
]


@pytest.mark.parametrize("case,chunk_size", bounded(
    list(itertools.product(range(len(VMAPS)), (None, 1, 3))), 14))
def test_vmap(case, chunk_size):
    fn, shapes, in_dims, out_dims = VMAPS[case]
    # (torch 2.13 fails to join the chunks of an out_dims=None output: compared unchunked)
    t_chunk = None if isinstance(out_dims, tuple) and None in out_dims else chunk_size
    expected = tf.vmap(lambda *a: fn(torch, *a), in_dims, out_dims, chunk_size=t_chunk)(
        *_inputs(torch, shapes, "float32"))
    got = tgf.vmap(lambda *a: fn(tg, *a), in_dims, out_dims, chunk_size=chunk_size)(
        *_inputs(tg, shapes, "float32"))
    same(got, expected)


def test_vmap_nested_in_dims_and_kwargs():
    def f(L, d, s):
        return d["a"] * d["b"] + s

    def run(F, L):
        rng = np.random.RandomState(0)
        d = {"a": L.tensor(rng.randn(4, 3)), "b": L.tensor(rng.randn(3))}
        return F.vmap(lambda d, s=0: f(L, d, s), in_dims=({"a": 0, "b": None},))(
            d, s=L.tensor(rng.randn(3)))
    same(run(tgf, tg), run(tf, torch))
    # an empty batch keeps its empty dimension
    same(tgf.vmap(lambda x: x * 2)(tg.ones(0, 3)), tf.vmap(lambda x: x * 2)(torch.ones(0, 3)))


@pytest.mark.parametrize("randomness,draw", list(itertools.product(
    ["same", "different"], ["rand", "rand_like", "dropout"])))
def test_vmap_randomness(randomness, draw):
    """PyTorch's generator, draw for draw: a function drawing once gives torch's numbers
    with 'same' and with 'different' (several draws with 'different' come in another
    order: each example draws in turn)."""
    def run(F, L):
        L.manual_seed(0)
        x = L.tensor(np.arange(12.0, dtype=np.float32).reshape(3, 4))
        fn = {"rand": lambda r: r + L.rand(4), "rand_like": lambda r: r + L.rand_like(r),
              "dropout": lambda r: L.nn.functional.dropout(r + 1, 0.5) - r * 2}[draw]
        return F.vmap(fn, randomness=randomness)(x), L.rand(2)  # and the generator after
    got, expected = run(tgf, tg), run(tf, torch)
    same(got, expected)
    rows = _np(got[0]) - (np.arange(12.0).reshape(3, 4) if draw != "dropout" else 0)
    if draw != "dropout":
        assert (np.ptp(rows, axis=0) > 1e-6).any() == (randomness == "different")


def test_jacfwd_randomness_same():
    def run(F, L):
        L.manual_seed(0)
        return F.jacfwd(lambda x: x * L.rand(3), randomness="same")(L.ones(3)), L.rand(1)
    same(run(tgf, tg), run(tf, torch))


# -- misuse: torch's errors ----------------------------------------------------------------------
def _errors(F, L):
    x = L.ones(3)
    lin = L.nn.Linear(2, 2)
    return {
        "grad nonscalar": lambda: F.grad(lambda x: x * 2)(x),
        "grad size-1": lambda: F.grad(lambda x: x.sum().reshape(1))(x),
        "grad not a tensor": lambda: F.grad(lambda x: 3.0)(x),
        "grad tuple out": lambda: F.grad(lambda x: (x.sum(), x.sum()))(x),
        "grad aux not a pair": lambda: F.grad(lambda x: x.sum(), has_aux=True)(x),
        "grad aux not tensors": lambda: F.grad(lambda x: (x.sum(), 1), has_aux=True)(x),
        "grad int input": lambda: F.grad(lambda x: x.sum())(L.arange(3)),
        "argnums list": lambda: F.grad(lambda x: x.sum(), argnums=[0])(x),
        "argnums out of range": lambda: F.grad(lambda x: x.sum(), argnums=2)(x),
        "argnums empty": lambda: F.grad(lambda x: x.sum(), argnums=())(x),
        "argnums repeated": lambda: F.grad(lambda x, y: x.sum(), argnums=(0, 0))(x, x),
        "grad float arg": lambda: F.grad(lambda x: L.ones(()) * x)(2.0),
        "vjp not a tensor out": lambda: F.vjp(lambda x: 2.0, x),
        "vjp cotangent shape": lambda: F.vjp(lambda x: x * 2, x)[1](L.ones(4)),
        "vjp aux": lambda: F.vjp(lambda x: x, x, has_aux=True),
        "jvp primals not tuple": lambda: F.jvp(lambda x: x, x, x),
        "jvp tangent shape": lambda: F.jvp(lambda x: x, (x,), (L.ones(4),)),
        "jvp float primal": lambda: F.jvp(lambda x: x, (2.0,), (1.0,)),
        "jvp no primals": lambda: F.jvp(lambda: x, (), ()),
        "jvp out not tensor": lambda: F.jvp(lambda x: 2.0, (x,), (x,)),
        "jacrev int": lambda: F.jacrev(lambda x: x * 1.0)(L.arange(3)),
        "jacfwd int": lambda: F.jacfwd(lambda x: x * 1.0)(L.arange(3)),
        "jacfwd random": lambda: F.jacfwd(lambda x: x * L.rand(3))(x),
        "jacrev chunk 0": lambda: F.jacrev(lambda x: x, chunk_size=0)(x),
        "vmap float in": lambda: F.vmap(lambda x: x)(2.0),
        "vmap in_dims list": lambda: F.vmap(lambda x: x, in_dims=[0])(x),
        "vmap in_dims range": lambda: F.vmap(lambda x: x, in_dims=1)(x),
        "vmap in_dims float": lambda: F.vmap(lambda x: x, in_dims=0.0)(x),
        "vmap in_dims None": lambda: F.vmap(lambda x: x, in_dims=None)(x),
        "vmap sizes": lambda: F.vmap(lambda x, y: x + y)(x, L.ones(4)),
        "vmap no inputs": lambda: F.vmap(lambda: x)(),
        "vmap returns float": lambda: F.vmap(lambda x: 2.0)(x),
        "vmap out_dims None batched": lambda: F.vmap(lambda x: x, out_dims=None)(x),
        "vmap out_dims range": lambda: F.vmap(lambda x: x, out_dims=2)(x),
        "vmap random": lambda: F.vmap(lambda x: x * L.rand(()))(x),
        "vmap rand_like": lambda: F.vmap(lambda x: L.rand_like(x))(x),
        "vmap randomness": lambda: F.vmap(lambda x: x, randomness="foo")(x),
        "vmap chunk 0": lambda: F.vmap(lambda x: x, chunk_size=0)(x),
        "vmap 0-d": lambda: F.vmap(lambda x: x)(L.tensor(1.0)),
        "functional_call strict": lambda: F.functional_call(
            lin, {"foo": L.ones(2)}, (L.ones(2),), strict=True),
        "functional_call missing": lambda: F.functional_call(
            lin, {"bias": L.ones(2)}, (L.ones(2),), strict=True),
        "functional_call twice": lambda: F.functional_call(
            lin, ({"bias": L.ones(2)}, {"bias": L.ones(2)}), (L.ones(2),)),
        "stack none": lambda: F.stack_module_state([]),
        "stack modes": lambda: F.stack_module_state([L.nn.Linear(2, 2), L.nn.Linear(2, 2).eval()]),
        "stack classes": lambda: F.stack_module_state([L.nn.Linear(2, 2), L.nn.Tanh()]),
        "linearize tangent": lambda: F.linearize(lambda x: x.sin(), x)[1](L.ones(4)),
    }


@pytest.mark.parametrize("case", list(_errors(tf, torch)))
def test_errors_as_torch(case):
    _raises_as_torch(_errors(tgf, tg)[case], _errors(tf, torch)[case])


def test_random_error_leaves_the_generator():
    tg.manual_seed(0)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        tgf.vmap(lambda x: x * tg.rand(()))(tg.ones(3))
    tg.manual_seed(0)
    a = tg.rand(2)
    tg.manual_seed(0)
    with pytest.raises(RuntimeError):
        tgf.vmap(lambda x: x * tg.rand(()))(tg.ones(3))
    same(tg.rand(2), torch.tensor(_np(a)))


# -- modules ------------------------------------------------------------------------------------
def _copy_weights(src, dst):
    dst.load_state_dict({k: torch.tensor(_np(v)) for k, v in src.state_dict().items()})


def _model(L, kind):
    nn = L.nn
    if kind == "linear":
        return nn.Linear(4, 3)
    if kind == "mlp":
        return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    if kind == "conv":
        return nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.Flatten(),
                             nn.Linear(3 * 4 * 4, 2))
    return nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5), nn.ReLU())


def _model_input(kind, n=6):
    shape = (n, 2, 4, 4) if kind == "conv" else (n, 4)
    return np.random.RandomState(2).randn(*shape).astype(np.float32)


@pytest.mark.parametrize("kind", ["linear", "mlp", "conv", "batchnorm"])
def test_functional_call(kind):
    tg.manual_seed(0)
    ours = _model(tg, kind)
    theirs = _model(torch, kind)
    _copy_weights(ours, theirs)
    x = _model_input(kind)
    rng = np.random.RandomState(5)

    def replaced(L, m):
        params = {k: L.tensor(rng.randn(*v.shape).astype(np.float32))
                  for k, v in list(m.named_parameters())[:2]}
        buffers = {k: v.clone() for k, v in m.named_buffers()}
        return params, buffers
    rng = np.random.RandomState(5)
    gp, gb = replaced(tg, ours)
    rng = np.random.RandomState(5)
    tp, tb = replaced(torch, theirs)
    same(tgf.functional_call(ours, (gp, gb), tg.tensor(x)),
         tf.functional_call(theirs, (tp, tb), torch.tensor(x)))
    same(gb, tb)                                        # running statistics updated
    same(dict(ours.state_dict()), {k: v for k, v in theirs.state_dict().items()})
    # gradients reach the tensors passed in
    w = tg.tensor(_np(gp[next(iter(gp))]), requires_grad=True)
    tw = torch.tensor(_np(w), requires_grad=True)
    name = next(iter(gp))
    tgf.functional_call(ours, {name: w}, (tg.tensor(x),)).square().sum().backward()
    tf.functional_call(theirs, {name: tw}, (torch.tensor(x),)).square().sum().backward()
    same(w.grad, tw.grad, rtol=1e-4)


def test_functional_call_tied_weights():
    def build(L):
        m = L.nn.Sequential(L.nn.Linear(3, 3, bias=False), L.nn.Linear(3, 3, bias=False))
        m[1].weight = m[0].weight
        return m
    ours, theirs = build(tg), build(torch)
    _copy_weights(ours, theirs)
    w = np.random.RandomState(0).randn(3, 3).astype(np.float32)
    x = np.ones((2, 3), np.float32)
    for tie in (True, False):
        same(tgf.functional_call(ours, {"0.weight": tg.tensor(w)}, tg.tensor(x), tie_weights=tie),
             tf.functional_call(theirs, {"0.weight": torch.tensor(w)}, torch.tensor(x),
                                tie_weights=tie))


def test_per_sample_gradients():
    """PyTorch's per-sample-gradients tutorial pattern: vmap(grad(loss)) over the samples
    with functional_call, class targets mapped too."""
    def run(F, L, model):
        params = {k: v.detach() for k, v in model.named_parameters()}
        buffers = {k: v.detach() for k, v in model.named_buffers()}

        def loss(p, b, sample, target):
            pred = F.functional_call(model, (p, b), (sample.unsqueeze(0),))
            return L.nn.functional.cross_entropy(pred, target.unsqueeze(0))
        data = L.tensor(_model_input("conv", 5))
        targets = L.tensor(np.array([0, 1, 1, 0, 1]))
        return F.vmap(F.grad(loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)
    tg.manual_seed(0)
    ours, theirs = _model(tg, "conv"), _model(torch, "conv")
    _copy_weights(ours, theirs)
    same(run(tgf, tg, ours), run(tf, torch, theirs), rtol=1e-4)


def test_model_ensembling():
    """PyTorch's ensembling tutorial pattern: stack_module_state, then vmap over the
    stacked parameters with functional_call on one base model."""
    tg.manual_seed(0)
    ours = [_model(tg, "mlp") for _ in range(3)]
    theirs = [_model(torch, "mlp") for _ in range(3)]
    for a, b in zip(ours, theirs):
        _copy_weights(a, b)

    def run(F, L, models, same_batch):
        params, buffers = F.stack_module_state(models)
        base = copy.deepcopy(models[0])

        def fmodel(p, b, x):
            return F.functional_call(base, (p, b), (x,))
        x = _model_input("mlp", 4)
        if same_batch:
            return params, F.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, L.tensor(x))
        return params, F.vmap(fmodel)(params, buffers, L.tensor(np.stack([x] * 3) + 1))
    for same_batch in (True, False):
        got, expected = run(tgf, tg, ours, same_batch), run(tf, torch, theirs, same_batch)
        same(got, expected)
        for k in expected[0]:
            assert got[0][k].requires_grad and got[0][k].is_leaf
    buffers = tgf.stack_module_state([tg.nn.BatchNorm1d(2) for _ in range(3)])[1]
    same(buffers, tf.stack_module_state([torch.nn.BatchNorm1d(2) for _ in range(3)])[1])


def test_jacobians_hessians_tutorial():
    """PyTorch's Jacobians-and-Hessians tutorial pattern: a linear layer's prediction
    differentiated with respect to its input, batched and second order."""
    rng = np.random.RandomState(0)
    weight, bias = rng.randn(16, 16).astype(np.float32), rng.randn(16).astype(np.float32)
    xs = rng.randn(4, 16).astype(np.float32)

    def run(F, L):
        w, b, x = L.tensor(weight), L.tensor(bias), L.tensor(xs)

        def predict(w, b, x):
            return L.nn.functional.linear(x, w, b).tanh()
        return (F.jacrev(predict, argnums=2)(w, b, x[0]),
                F.jacfwd(predict, argnums=2)(w, b, x[0]),
                F.jacrev(predict, argnums=(0, 1))(w, b, x[0]),
                F.vmap(F.jacrev(predict, argnums=2), in_dims=(None, None, 0))(w, b, x),
                F.hessian(predict, argnums=2)(w, b, x[0]),
                F.jacfwd(F.jacrev(predict, argnums=2), argnums=2)(w, b, x[0]),
                F.vmap(F.hessian(predict, argnums=2), in_dims=(None, None, 0))(w, b, x))
    same(run(tgf, tg), run(tf, torch), rtol=1e-4)


def test_import_paths():
    import sys
    assert sys.modules["tracegrad.func"] is tgf and tg.func is tgf
    from tracegrad.func import grad, vmap  # noqa: F401
    assert callable(tg.jit) and tg.jit.script is sys.modules["tracegrad.jit"].script
    from tracegrad.jit import script, trace  # noqa: F401


# -- torch.jit -----------------------------------------------------------------------------------
def test_jit_script_and_trace_functions():
    def f(L, x, y):
        return (x.sin() * y).cumsum(0) if x.sum() > 0 else x - y
    x, y = np.random.RandomState(0).randn(2, 5).astype(np.float32)
    t_fn, g_fn = (lambda a, b: f(torch, a, b)), (lambda a, b: f(tg, a, b))
    for make_t, make_g in ((torch.jit.script, tg.jit.script),
                           (lambda fn: torch.jit.trace(fn, (torch.tensor(x), torch.tensor(y))),
                            lambda fn: tg.jit.trace(fn, (tg.tensor(x), tg.tensor(y))))):
        if make_t is torch.jit.script:
            def t_fn(a, b):
                return (a.sin() * b).cumsum(0)
        same(make_g(g_fn)(tg.tensor(x), tg.tensor(y)),
             make_t(t_fn)(torch.tensor(x), torch.tensor(y)))
    traced = tg.jit.trace(lambda a: (a.exp() * 2).sum(), tg.tensor(x))
    graph = traced.graph
    assert isinstance(graph, tg.Graph)
    assert [d["op"] for _, d in graph.items()
            if d["op"] not in ("input", "const")] == ["exp", "mul", "sum"]
    assert "def " in traced.code and "exp" in traced.code
    with pytest.raises(RuntimeError, match="has no graph"):
        _ = tg.jit.script(lambda a: a).graph


def test_jit_modules():
    tg.manual_seed(0)
    ours, theirs = _model(tg, "batchnorm"), _model(torch, "batchnorm")
    _copy_weights(ours, theirs)
    x = _model_input("batchnorm")
    for kind in ("script", "trace"):
        s_ours = (tg.jit.script(ours) if kind == "script" else
                  tg.jit.trace(ours, tg.tensor(x)))
        s_theirs = (torch.jit.script(theirs) if kind == "script" else
                    torch.jit.trace(theirs, torch.tensor(x)))
        assert isinstance(s_ours, tg.nn.Module) and s_ours[0].weight is ours[0].weight
        assert list(s_ours.state_dict()) == list(s_theirs.state_dict())
        same(s_ours(tg.tensor(x)), s_theirs(torch.tensor(x)))
        same(dict(ours.state_dict()), dict(theirs.state_dict()))
    traced = tg.jit.trace(ours, tg.tensor(x))
    before = _np(ours[1].running_mean).copy()
    assert isinstance(traced.graph, tg.Graph)       # recording changes no buffer
    np.testing.assert_array_equal(_np(ours[1].running_mean), before)


def test_jit_helpers():
    seen = []

    def f(x):
        seen.append(tg.jit.is_tracing())
        return x * 2
    traced = tg.jit.trace(f, tg.ones(2), check_trace=False)
    assert seen == [True]
    assert isinstance(traced.graph, tg.Graph)
    assert seen == [True, True] and not tg.jit.is_tracing() and not tg.jit.is_scripting()
    same(traced(tg.ones(3)), torch.ones(3) * 2)
    assert seen == [True, True, False]
    g = tg.jit.ignore(f)
    assert g is f and tg.jit.ignore(drop=True)(f) is f and tg.jit.export(f) is f
    assert tg.jit.annotate(int, 3) == 3
    same(tg.jit.wait(tg.jit.fork(lambda x: x + 1, tg.ones(2))), torch.ones(2) + 1)
    assert tuple(tg.jit.Attribute(3, int)) == tuple(torch.jit.Attribute(3, int))
    m = tg.nn.Linear(2, 2)
    for call in (lambda: tg.jit.freeze(m), lambda: tg.jit.freeze(tg.jit.script(m))):
        with pytest.raises(RuntimeError, match="Freezing"):
            call()
    m.eval()
    assert tg.jit.freeze(tg.jit.script(m)) is not None
    for call in (lambda: tg.jit.save(tg.jit.script(m), "x.pt"), lambda: tg.jit.load("x.pt"),
                 lambda: tg.jit.script(type("C", (), {}))):
        with pytest.raises(RuntimeError, match="tracegrad"):
            call()
    # tg.jit itself is unchanged
    np.testing.assert_array_equal(tg.jit(lambda a: a * 2)(np.ones(2)), [2.0, 2.0])


# -- traced integer tensors and values read under vmap -------------------------------------------
INDEXED = {
    "getitem": lambda L, i, t: t[i],
    "getitem_slice": lambda L, i, t: t[i, 1:],
    "getitem_column": lambda L, i, t: t[:, i] * 2,
    "getitem_two": lambda L, i, t: t[i].sum() + t[i, i],
    "embedding": lambda L, i, t: L.nn.functional.embedding(i, t),
    "gather": lambda L, i, t: t.gather(0, i.reshape(-1)[:, None].expand(-1, 3)),
    "gather_dim1": lambda L, i, t: t[:2].gather(1, i.reshape(1, -1).expand(2, -1)),
}


@pytest.mark.parametrize("name,idx_shape", list(itertools.product(INDEXED, [(3,), (2, 2)])))
def test_vmap_over_indices(name, idx_shape):
    """Index tensors mapped by vmap select by each example's indices (gradients too)."""
    fn = INDEXED[name]
    idx = np.random.RandomState(0).randint(0, 3, (4,) + idx_shape)
    table = np.arange(12.0).reshape(4, 3)

    def run(F, L):
        values = F.vmap(lambda i, t: fn(L, i, t), in_dims=(0, None))(L.tensor(idx),
                                                                     L.tensor(table))
        grads = F.vmap(F.grad(lambda t, i: (fn(L, i, t) ** 2).sum()), in_dims=(None, 0))(
            L.tensor(table), L.tensor(idx))
        return values, grads
    same(run(tgf, tg), run(tf, torch))


@pytest.mark.parametrize("read", ["branch", "item", "float"])
def test_vmap_refuses_one_examples_value(read):
    """A value read off a mapped tensor (a branch, .item(), float()) would be the first
    example's: refused, as torch's vmap refuses it (grad reads it as is)."""
    fn = {"branch": lambda x: x if x.sum() > 0 else -x,
          "item": lambda x: x * x.sum().item(),
          "float": lambda x: x * float(x.sum())}[read]
    x = np.array([[1.0, 2.0], [-1.0, -3.0]])
    with pytest.raises(RuntimeError, match="vmap: It looks like"):
        tf.vmap(fn)(torch.tensor(x))
    with pytest.raises(tg.TraceError, match="batched input"):
        tgf.vmap(fn)(tg.tensor(x))
    same(tgf.grad(lambda r: fn(r).sum())(tg.tensor(x[1])),
         tf.grad(lambda r: fn(r).sum())(torch.tensor(x[1])))


def test_vmap_index_select_refused_not_wrong():
    """index_select by mapped indices is not traced yet: refused rather than computed
    with the first example's indices (torch computes it)."""
    with pytest.raises(tg.TraceError, match="batched input"):
        tgf.vmap(lambda i, t: t.index_select(0, i), in_dims=(0, None))(
            tg.tensor([[0, 1], [1, 0]]), tg.tensor([5.0, 6.0]))


def test_jit_script_module_subclass():
    def build(L):
        class Scaled(L.jit.ScriptModule):
            def __init__(self):
                super().__init__()
                self.lin = L.nn.Linear(3, 2)

            @L.jit.script_method
            def forward(self, x):
                return self.lin(x).tanh() * 2
        return Scaled()
    tg.manual_seed(0)
    ours, theirs = build(tg), build(torch)
    _copy_weights(ours, theirs)
    x = np.random.RandomState(0).randn(4, 3).astype(np.float32)
    same(ours(tg.tensor(x)), theirs(torch.tensor(x)))
    same(tg.jit.script(ours)(tg.tensor(x)), torch.jit.script(theirs)(torch.tensor(x)))


def test_no_grad_inside_and_outside():
    """torch.func's grad mode: no_grad inside the function cuts the reverse-mode
    derivative (not forward mode's), an outer no_grad is ignored (and vmap's values are
    unchanged by either)."""
    def f(L):
        def g(x):
            with L.no_grad():
                c = x * 3
                c.mul_(x)
            return (c * x).sum() + (x.detach() * x.exp()).sum()
        return g
    x = np.array([0.5, -1.0, 2.0])
    same(tgf.grad(f(tg))(tg.tensor(x)), tf.grad(f(torch))(torch.tensor(x)))
    same(tgf.jacrev(f(tg))(tg.tensor(x)), tf.jacrev(f(torch))(torch.tensor(x)))
    same(tgf.jacfwd(f(tg))(tg.tensor(x)), tf.jacfwd(f(torch))(torch.tensor(x)))
    same(tgf.vjp(f(tg), tg.tensor(x))[1](tg.tensor(1.0, dtype=tg.float64)),
         tf.vjp(f(torch), torch.tensor(x))[1](torch.tensor(1.0, dtype=torch.float64)))
    same(tgf.jvp(f(tg), (tg.tensor(x),), (tg.ones(3, dtype=tg.float64),)),
         tf.jvp(f(torch), (torch.tensor(x),), (torch.ones(3, dtype=torch.float64),)))
    with tg.no_grad():
        got = tgf.grad(lambda x: (x ** 3).sum())(tg.tensor(x))
    with torch.no_grad():
        expected = tf.grad(lambda x: (x ** 3).sum())(torch.tensor(x))
    same(got, expected)
    same(tgf.vmap(f(tg))(tg.tensor(np.stack([x, x + 1]))),
         tf.vmap(f(torch))(torch.tensor(np.stack([x, x + 1]))))


def test_warns_when_autograd_history_is_dropped():
    """Tensors that require grad read by the function (closed over), or given to vjp/jvp,
    get no gradient from a backward through the results: a warning; detached ones, or
    no_grad, none."""
    import warnings
    m = tg.nn.Linear(3, 2)
    x = tg.randn(4, 3)
    with pytest.warns(UserWarning, match="torch.func.vmap: 2 tensor"):
        tgf.vmap(m)(x)
    with pytest.warns(UserWarning, match="torch.func.vjp: 1 tensor"):
        tgf.vjp(lambda x: (x ** 2).sum(), tg.ones(2, requires_grad=True))
    with pytest.warns(UserWarning, match="torch.func.jacrev"):
        tgf.jacrev(m)(x[0])
    params = {k: v.detach() for k, v in m.named_parameters()}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tgf.vmap(lambda x: tgf.functional_call(m, params, (x,)))(x)
        tgf.vmap(tgf.grad(lambda p, x: tgf.functional_call(m, p, (x,)).sum()),
                 in_dims=(None, 0))(params, x)
        with tg.no_grad():
            tgf.vmap(m)(x)


BRIDGED = {
    "grad": lambda F, L: F.grad(lambda y: (y.sin() * y ** 2).sum()),
    "grad_and_value": lambda F, L: F.grad_and_value(lambda y: (y.exp() * y).sum()),
    "grad_argnums": lambda F, L: (lambda y: F.grad(lambda a, b: (a * b.cos()).sum(),
                                                   argnums=(0, 1))(y, y * 2)),
    "jacrev": lambda F, L: F.jacrev(lambda y: y.exp() * y.sum()),
    "jacfwd": lambda F, L: F.jacfwd(lambda y: y.tanh() * y[0]),
    "hessian": lambda F, L: F.hessian(lambda y: (y ** 3).sum() * y[1]),
    "vmap": lambda F, L: (lambda y: F.vmap(lambda r: r.sin() * r.sum())(y.reshape(3, 1) * y)),
}


@pytest.mark.parametrize("name", list(BRIDGED))
def test_backward_through_results(name):
    """Tensors that require grad given to a transform: a backward through its results
    reaches them, as torch's."""
    x = np.array([0.5, -1.0, 2.0])
    grads = []
    for F, L in ((tgf, tg), (tf, torch)):
        a = L.tensor(x, requires_grad=True)
        out = BRIDGED[name](F, L)(a)
        total = sum((o ** 2).sum() for o in (out if isinstance(out, tuple) else (out,))
                    for o in (o if isinstance(o, tuple) else (o,)))
        total.backward()
        grads.append(a.grad)
    same(grads[0], grads[1])


def test_ensemble_training_step():
    """stack_module_state's parameters trained through vmap (their .grad as torch's)."""
    tg.manual_seed(0)
    ours = [_model(tg, "mlp") for _ in range(3)]
    theirs = [_model(torch, "mlp") for _ in range(3)]
    for a, b in zip(ours, theirs):
        _copy_weights(a, b)
    grads = []
    for F, L, models in ((tgf, tg, ours), (tf, torch, theirs)):
        params, buffers = F.stack_module_state(models)
        base = copy.deepcopy(models[0])
        out = F.vmap(lambda p, b, x: F.functional_call(base, (p, b), (x,)),
                     in_dims=(0, 0, None))(params, buffers, L.tensor(_model_input("mlp", 4)))
        out.square().mean().backward()
        grads.append({k: v.grad for k, v in params.items()})
    same(grads[0], grads[1])
