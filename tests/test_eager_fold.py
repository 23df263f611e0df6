"""``F.unfold``/``F.fold`` and ``nn.Unfold``/``nn.Fold`` against torch 2.13: values,
gradients (bit for bit: unfold's derivative sums the kernel positions in col2im's
order), dtypes, errors, the modules' repr, and a compiled step."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")
TF = torch.nn.functional
F = tg.nn.functional

# (input shape, kernel_size, dilation, padding, stride)
OPTIONS = [((2, 3, 5, 6), (2, 3), (1, 2), 1, (2, 1)),
           ((3, 5, 6), 2, 1, 0, 1),
           ((1, 2, 7, 7), 3, 2, 2, 3),
           ((0, 2, 4, 4), 2, 1, 0, 1),
           ((1, 1, 9, 8), (2, 3), 1, (1, 0), (3, 2)),
           ((2, 2, 6, 5), 3, 1, 1, 1),
           ((1, 3, 4, 4), 1, 1, 0, 1),
           ((1, 1, 5, 5), (5, 1), 1, (0, 2), 1)]
CASES = list(itertools.product(OPTIONS, ["float32", "float64"]))


def _pair(torch_fn, tg_fn, x, *args):
    tx = torch.tensor(x, requires_grad=True)
    gx = tg.tensor(x, requires_grad=True)
    return tx, gx, torch_fn(tx, *args), tg_fn(gx, *args)


def _same(t, g):
    assert tuple(g.shape) == tuple(t.shape)
    assert str(g.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    tv, gv = t.detach().numpy(), g.detach().numpy()
    assert np.array_equal(tv, gv), np.abs(tv - gv).max()


@pytest.mark.parametrize("options,dtype", CASES)
def test_unfold_values_and_gradient_bits(options, dtype):
    shape, k, d, p, s = options
    rng = np.random.default_rng(sum(map(ord, f"{options}{dtype}")))
    x = rng.standard_normal(shape).astype(dtype)
    tx, gx, tu, gu = _pair(TF.unfold, F.unfold, x, k, d, p, s)
    _same(tu, gu)
    assert gu.grad_fn.name() == "Im2ColBackward0"
    w = rng.standard_normal(tuple(tu.shape)).astype(dtype)
    (tu * torch.tensor(w)).sum().backward()
    (gu * tg.tensor(w)).sum().backward()
    _same(tx.grad, gx.grad)


@pytest.mark.parametrize("options,dtype", CASES)
def test_fold_values_and_gradient_bits(options, dtype):
    shape, k, d, p, s = options
    rng = np.random.default_rng(sum(map(ord, f"fold{options}{dtype}")))
    cols_shape = tuple(TF.unfold(torch.zeros(shape, dtype=getattr(torch, dtype)),
                                 k, d, p, s).shape)
    cols = rng.standard_normal(cols_shape).astype(dtype)
    tc, gc, tf_, gf = _pair(lambda c, *a: TF.fold(c, shape[-2:], *a),
                            lambda c, *a: F.fold(c, shape[-2:], *a), cols, k, d, p, s)
    _same(tf_, gf)
    assert gf.grad_fn.name() == "Col2ImBackward0"
    w = rng.standard_normal(tuple(tf_.shape)).astype(dtype)
    (tf_ * torch.tensor(w)).sum().backward()
    (gf * tg.tensor(w)).sum().backward()
    _same(tc.grad, gc.grad)


def test_fold_of_unfold_counts_the_blocks_over_each_pixel():
    x = np.ones((1, 1, 4, 5))
    out = F.fold(F.unfold(tg.tensor(x), 2, padding=1), (4, 5), 2, padding=1)
    expected = TF.fold(TF.unfold(torch.tensor(x), 2, padding=1), (4, 5), 2, padding=1)
    assert np.array_equal(out.numpy(), expected.numpy())
    assert out.numpy()[0, 0, 1, 1] == 4.0


@pytest.mark.parametrize("dtype", ["bool", "complex64"])
def test_other_dtypes(dtype):
    x = (np.arange(2 * 2 * 4 * 4).reshape(2, 2, 4, 4) % 3).astype(dtype)
    _same(TF.unfold(torch.tensor(x), 2), F.unfold(tg.tensor(x), 2))
    cols = (np.arange(2 * 8 * 9).reshape(2, 8, 9) % 3).astype(dtype)
    _same(TF.fold(torch.tensor(cols), (4, 4), 2), F.fold(tg.tensor(cols), (4, 4), 2))


BAD = [
    ("unfold", (5, 6), (2,), {}),
    ("unfold", (1, 1, 2, 2), (3,), {}),
    ("unfold", (1, 1, 4, 4), (2,), {"stride": 0}),
    ("unfold", (1, 1, 4, 4), (2,), {"dilation": 0}),
    ("unfold", (1, 1, 4, 4), (2,), {"padding": -1}),
    ("unfold", (1, 1, 4, 4), (0,), {}),
    ("unfold", (1, 0, 4, 4), (2,), {}),
    ("unfold", (1, 1, 4, 4), ((2, 2, 2),), {}),
    ("fold", (1, 7, 9), ((4, 4), 2), {}),
    ("fold", (1, 8, 8), ((4, 4), 2), {}),
    ("fold", (2, 1, 8, 9), ((4, 4), 2), {}),
    ("fold", (4, 9), ((4, 4), 2), {"padding": 1}),
    ("fold", (1, 4, 9), ((1, 1), 2), {}),
    ("fold", (1, 4, 0), ((1, 1), 2), {}),
    ("fold", (1, 4, 9), ((4, 4), 2), {"stride": 0}),
]


@pytest.mark.parametrize("name,shape,args,kwargs", BAD)
def test_errors_are_torchs(name, shape, args, kwargs):
    x = np.zeros(shape, dtype=np.float32)
    with pytest.raises(Exception) as want:
        getattr(TF, name)(torch.tensor(x), *args, **kwargs)
    with pytest.raises(type(want.value)) as got:
        getattr(F, name)(tg.tensor(x), *args, **kwargs)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("name,dtype", [("unfold", "int64"), ("unfold", "int32"),
                                        ("fold", "uint8"), ("fold", "int64")])
def test_integer_inputs_are_refused_as_torch_does(name, dtype):
    shape, args = ((1, 1, 3, 3), (2,)) if name == "unfold" else ((1, 4, 4), ((3, 3), 2))
    x = np.zeros(shape, dtype=dtype)
    with pytest.raises(NotImplementedError) as want:
        getattr(TF, name)(torch.tensor(x), *args)
    with pytest.raises(NotImplementedError) as got:
        getattr(F, name)(tg.tensor(x), *args)
    assert str(got.value) == str(want.value)


def test_modules_and_repr():
    for args in [(2,), ((2, 3), 1, 1, 2)]:
        assert repr(tg.nn.Unfold(*args)) == repr(torch.nn.Unfold(*args))
    assert repr(tg.nn.Fold((4, 4), 2)) == repr(torch.nn.Fold((4, 4), 2))
    x = np.random.default_rng(1).standard_normal((2, 3, 6, 6)).astype(np.float32)
    _same(torch.nn.Fold((6, 6), 3, padding=1)(torch.nn.Unfold(3, padding=1)(torch.tensor(x))),
          tg.nn.Fold((6, 6), 3, padding=1)(tg.nn.Unfold(3, padding=1)(tg.tensor(x))))


def test_compiled_step_matches_eager_bits():
    """An im2col convolution trained two steps, eager and under tg.compile."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 2, 6, 6)).astype(np.float32)
    w0 = rng.standard_normal((3, 2 * 9)).astype(np.float32)

    def run(compiled):
        w = tg.tensor(w0.copy(), requires_grad=True)
        opt = tg.optim.SGD([w], lr=0.1)

        def step(x):
            opt.zero_grad()
            cols = F.unfold(x, 3, padding=1, stride=2)
            out = F.fold(w @ cols, (3, 3), 1)
            loss = (out ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        fn = tg.compile(step) if compiled else step
        losses = [fn(tg.tensor(x)).item() for _ in range(3)]
        return losses, w.detach().numpy().copy(), fn
    eager, compiled = run(False), run(True)
    assert eager[0] == compiled[0]
    assert np.array_equal(eager[1], compiled[1])
    assert compiled[2].explain().graph_count == 1
