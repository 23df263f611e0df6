"""Generated check: every view operation x every in-place operation x how gradients are
involved, run in tracegrad's eager API and in PyTorch on the same data.

Each case makes a base tensor, another view of it (``base.view(-1)``), the view under test,
and applies the in-place operation to the view. It compares, with PyTorch's: the base's,
the view's and the other view's values, the view's strides and contiguity, the version
counters, the error (its type and wording) where PyTorch raises, and after a backward
through the base, the view and the other view, the gradients of the leaves. A new view
or in-place operation is one line of ``VIEWS`` or ``INPLACE``.

Modes (``MODES``): ``plain`` (nothing requires grad), ``autograd`` (the base computed
from a leaf that requires grad, the operand of a binary operation a leaf too), ``no_grad``
(the same, the in-place change under no_grad), ``data`` (the view of ``leaf.data``),
``leaf`` (the view of the leaf itself: PyTorch's error), ``nograd_view`` (the view made
under no_grad, changed with grad mode on: PyTorch's error).
"""
import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg

torch = pytest.importorskip("torch")

F32, C64 = np.float32, np.complex64

# name -> (base shape, base dtype, view of base t in library L)
VIEWS = {
    "diagonal": ((3, 3), F32, lambda L, t: t.diagonal()),
    "diagonal_offset": ((3, 4), F32, lambda L, t: t.diagonal(1)),
    "diagonal_dims": ((2, 3, 3), F32, lambda L, t: t.diagonal(0, 1, 2)),
    "narrow": ((3, 4), F32, lambda L, t: t.narrow(1, 1, 2)),
    "select": ((3, 4), F32, lambda L, t: t.select(1, 2)),
    "select_neg": ((3, 4), F32, lambda L, t: t.select(0, -1)),
    "unfold": ((3, 4), F32, lambda L, t: t.unfold(1, 2, 2)),
    "expand": ((1, 4), F32, lambda L, t: t.expand(3, 4)),
    "expand_then_index": ((2, 3), F32, lambda L, t: t[None].expand(2, 2, 3)[0]),
    "as_strided": ((3, 4), F32, lambda L, t: t.as_strided((2, 2), (4, 1), 1)),
    "unbind": ((3, 4), F32, lambda L, t: t.unbind(1)[1]),
    "split": ((4, 3), F32, lambda L, t: t.split(2)[1]),
    "split_sizes": ((5, 3), F32, lambda L, t: t.split([2, 3])[1]),
    "chunk": ((4, 3), F32, lambda L, t: t.chunk(2, 1)[0]),
    "T": ((3, 4), F32, lambda L, t: t.T),
    "mT": ((2, 3, 4), F32, lambda L, t: t.mT),
    "H": ((3, 4), F32, lambda L, t: t.H),
    "mH": ((2, 3, 4), F32, lambda L, t: t.mH),
    "t": ((3, 4), F32, lambda L, t: t.t()),
    "view": ((3, 4), F32, lambda L, t: t.view(2, 6)),
    "view_as": ((3, 4), F32, lambda L, t: t.view_as(L.zeros(4, 3))),
    "reshape_view": ((3, 4), F32, lambda L, t: t.reshape(12)),
    "transpose": ((2, 3, 4), F32, lambda L, t: t.transpose(0, 2)),
    "permute": ((2, 3, 4), F32, lambda L, t: t.permute(2, 0, 1)),
    "squeeze": ((3, 1, 4), F32, lambda L, t: t.squeeze(1)),
    "unsqueeze": ((3, 4), F32, lambda L, t: t.unsqueeze(1)),
    "flatten": ((2, 3, 4), F32, lambda L, t: t.flatten(1)),
    "slice": ((4, 5), F32, lambda L, t: t[1:3, ::2]),
    "int_index": ((3, 4), F32, lambda L, t: t[1]),
    "none_ellipsis": ((3, 4), F32, lambda L, t: t[..., None, 1:]),
    "movedim": ((2, 3, 4), F32, lambda L, t: t.movedim(0, 2)),
    "swapaxes": ((2, 3, 4), F32, lambda L, t: t.swapaxes(0, 1)),
    "view_of_view": ((4, 4), F32, lambda L, t: t[1:].t().diagonal()),
    "view_as_real": ((3, 2), C64, lambda L, t: L.view_as_real(t)),
    "view_as_complex": ((3, 2), F32, lambda L, t: L.view_as_complex(t)),
    "real": ((3, 2), C64, lambda L, t: t.real),
    "imag": ((3, 2), C64, lambda L, t: t.imag),
    "detach": ((3, 4), F32, lambda L, t: t.detach()),
    "data": ((3, 4), F32, lambda L, t: t.data),
}


def _mask(v):
    return np.arange(int(np.prod(v.shape))).reshape(tuple(v.shape)) % 2 == 0


# name -> in-place operation on view v in library L, with ``aux`` a tensor of v's shape
INPLACE = {
    "add_": lambda L, v, aux: v.add_(aux),
    "add_scalar": lambda L, v, aux: v.add_(1.5),
    "sub_alpha": lambda L, v, aux: v.sub_(aux, alpha=2),
    "mul_": lambda L, v, aux: v.mul_(aux),
    "div_": lambda L, v, aux: v.div_(2.0),
    "pow_": lambda L, v, aux: v.pow_(2),
    "neg_": lambda L, v, aux: v.neg_(),
    "exp_": lambda L, v, aux: v.exp_(),
    "clamp_": lambda L, v, aux: v.clamp_(-0.25, 0.25),
    "fill_": lambda L, v, aux: v.fill_(2.0),
    "zero_": lambda L, v, aux: v.zero_(),
    "copy_": lambda L, v, aux: v.copy_(aux),
    "masked_fill_": lambda L, v, aux: v.masked_fill_(L.tensor(_mask(v)), 0.75),
    "index_fill_": lambda L, v, aux: v.index_fill_(0, L.tensor([0]), -1.0),
    "setitem": lambda L, v, aux: v.__setitem__(0 if v.dim() else Ellipsis, 1.25),
    "setitem_tensor": lambda L, v, aux: v.__setitem__(Ellipsis, aux),
    "iadd": lambda L, v, aux: v.__iadd__(aux),
}

# The cases still different from PyTorch, with the reason; each is checked to still differ.
_FILLS = ("fill_", "zero_", "masked_fill_", "index_fill_", "setitem")
KNOWN = {
    **{("expand", op, "autograd"): "a fill of an expanded view of a tensor that requires "
       "grad: PyTorch records it and its backward raises the overlap error (CopySlices "
       "writes the gradient through the overlapping view); tracegrad differentiates it"
       for op in _FILLS},
    ("view_as_complex", "clamp_", "plain"): "clamp of a complex tensor: PyTorch raises "
    "NotImplementedError, tracegrad clamps the real and imaginary parts (eager errors, "
    "ops.py's clamp, issue 23 item 3)",
}

MODES = ["plain", "autograd", "no_grad", "data", "leaf", "nograd_view"]
_COMPLEX = {name for name, (_, dt, _) in VIEWS.items() if dt == C64} | {"view_as_complex"}
CASES = [(v, op, m) for v in VIEWS for op in INPLACE for m in MODES
         if not (m != "plain" and v in _COMPLEX)]   # complex tensors cannot require grad


def _values(shape, dtype, seed):
    r = np.random.RandomState(seed)
    x = r.uniform(-1, 1, shape).astype(np.float32)
    if dtype == C64:
        x = (x + 1j * r.uniform(-1, 1, shape)).astype(C64)
    return x


def _np(t):
    return np.array(t.detach().resolve_conj().numpy() if hasattr(t, "resolve_conj")
                    else t.detach().numpy())


def _run(L, view, op, mode):
    """What case (view, op, mode) gives in library L: a dict of observations."""
    shape, dtype, make = VIEWS[view]
    no_grad = L.no_grad
    out = {}
    leaf = L.tensor(_values(shape, dtype, 0))
    grads = mode not in ("plain",)
    if grads:
        leaf.requires_grad_(True)
    if mode in ("autograd", "no_grad", "nograd_view"):
        base = leaf * 1
    elif mode == "data":
        base = leaf.data
    else:
        base = leaf
    other = base.view(-1)
    if mode == "nograd_view":
        with no_grad():
            v = make(L, base)
    else:
        v = make(L, base)
    out["view_shape"] = tuple(v.shape)
    # the stride of a dimension of size 1 is a convention (PyTorch's depends on the steps
    # that made it, x[..., None, 1:]); NumPy's memory layout holds no such record
    out["stride"] = tuple(s for s, n in zip(v.stride(), v.shape) if n != 1)
    out["contiguous"] = v.is_contiguous()
    aux = L.tensor(_values(tuple(v.shape), C64 if v.is_complex() else F32, 1))
    if mode == "autograd" and not aux.is_complex():
        aux.requires_grad_(True)
    try:
        if mode == "no_grad":
            with no_grad():
                INPLACE[op](L, v, aux)
        else:
            INPLACE[op](L, v, aux)
    except Exception as e:     # noqa: BLE001  (compared with PyTorch's)
        out["error"] = ("in place", type(e).__name__, str(e).split("\n")[0])
        return out
    out["base"] = _np(base)
    out["view"] = _np(v)
    out["other"] = _np(other)
    out["leaf"] = _np(leaf)
    out["version"] = (base._version == v._version, v._version - other._version)
    out["leaf_version"] = leaf._version
    if grads and mode != "leaf":
        w = L.tensor(_values(tuple(base.shape), F32, 2))
        loss = (base * base * w).sum()
        try:
            if v.requires_grad:
                loss = loss + (v * 1.5).sum() + (other ** 3).sum()
            if loss.requires_grad:
                loss.backward()
        except Exception as e:     # noqa: BLE001  (compared with PyTorch's)
            out["error"] = ("backward", type(e).__name__, str(e).split("\n")[0])
            return out
        if loss.requires_grad:
            out["leaf_grad"] = None if leaf.grad is None else _np(leaf.grad)
            out["aux_grad"] = None if not aux.requires_grad or aux.grad is None \
                else _np(aux.grad)
    return out


def _key_words(message):
    """The part of an error message both libraries must share: its first sentence, without
    tracegrad's user-line suffix."""
    return message.split(" (at ")[0].split(". ")[0].strip()[:80]


def _case(c):
    if c in KNOWN:
        return pytest.param(*c, marks=pytest.mark.xfail(reason=KNOWN[c], strict=True))
    return c


_PICKED = bounded(CASES, 300, key=lambda c: (c[0], c[2]))


@pytest.mark.parametrize("view,op,mode", [_case(c) for c in _PICKED + sorted(
    set(KNOWN) - set(_PICKED))])
def test_view_inplace_matches_torch(view, op, mode):
    want = _run(torch, view, op, mode)
    got = _run(tg, view, op, mode)
    for k in ("view_shape", "stride", "contiguous"):
        assert got[k] == want[k], (k, got[k], want[k])
    if "error" in want:
        assert "error" in got, f"torch raises {want['error']}, tracegrad does not"
        assert got["error"][:2] == want["error"][:2], (got["error"], want["error"])
        assert _key_words(want["error"][2]) in got["error"][2], (got["error"], want["error"])
        for k in ("base", "view", "other", "leaf"):     # what was written before the error
            if k in want:
                np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)
        return
    assert "error" not in got, got["error"]
    for k in ("base", "view", "other", "leaf"):
        np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)
    assert got["version"] == want["version"]
    assert got["leaf_version"] == want["leaf_version"]
    for k in ("leaf_grad", "aux_grad"):
        if k in want:
            if want[k] is None:
                assert got[k] is None, k
            else:
                assert got[k] is not None, k
                np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-5, err_msg=k)


def test_the_cases_cover_every_name():
    assert len(CASES) > 1000 and set(KNOWN) <= set(CASES)
    assert {c[0] for c in CASES} == set(VIEWS) and {c[1] for c in CASES} == set(INPLACE)


@pytest.mark.parametrize("name", ["conj", "H", "mH", "adjoint", "real", "imag", "index_fill",
                                  "view_as_real", "select", "unfold", "as_strided"])
def test_the_new_view_operations_forward_values_match_torch(name):
    z = _values((2, 3), C64, 3)
    x = _values((3, 4), F32, 4)
    fns = {
        "conj": lambda L: L.tensor(z).conj(), "H": lambda L: L.tensor(z).H,
        "mH": lambda L: L.tensor(z[None]).mH, "adjoint": lambda L: L.tensor(x).adjoint(),
        "real": lambda L: L.tensor(z).real, "imag": lambda L: L.tensor(z).imag,
        "index_fill": lambda L: L.tensor(x).index_fill(1, L.tensor([0, 2]), 7.0),
        "view_as_real": lambda L: L.view_as_real(L.tensor(z)),
        "select": lambda L: L.select(L.tensor(x), 1, -2),
        "unfold": lambda L: L.tensor(x).unfold(0, 2, 1),
        "as_strided": lambda L: L.as_strided(L.tensor(x), (3, 2), (1, 3), 2),
    }
    got, want = fns[name](tg), fns[name](torch)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(_np(got), _np(want))


def test_the_examples_of_issue_23_match_torch():
    res = {}
    for L in (tg, torch):
        z = L.zeros(3, 3)
        z.diagonal().fill_(1)
        w = L.zeros(2, 2, requires_grad=True)
        w.data.diagonal().add_(0.5)
        x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        y = x * 1
        y.diagonal().mul_(-2)
        (y ** 3).sum().backward()
        e = L.zeros(2, 3)
        e[None].expand(2, 2, 3)[0].add_(1)
        c = L.arange(6).view(2, 3).t().contiguous()
        res[L] = [_np(z), _np(w), _np(y), _np(x.grad), _np(e), c.is_contiguous(),
                  c.view(-1).tolist(), c.stride()]
    for a, b in zip(res[tg], res[torch]):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["empty", "zeros", "ones", "rand", "randn"])
def test_factories_take_size_as_a_keyword(name):
    assert tuple(getattr(tg, name)(size=(2, 3)).shape) == (2, 3)
    assert tuple(getattr(tg, name)(size=[4]).shape) == (4,)
    assert tuple(tg.full(size=(2,), fill_value=3.0).shape) == (2,)
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        getattr(tg, name)(2, size=(3,))
    with pytest.raises(TypeError):      # zeros: the same words; rand: "invalid combination"
        getattr(torch, name)(2, size=(3,))


@pytest.mark.parametrize("inplace", ["functional", "module"])
def test_max_pool_then_inplace_relu_backward_matches_torch(inplace):
    data = _values((2, 3, 6, 6), F32, 5)
    res = {}
    for L in (tg, torch):
        x = L.tensor(data, requires_grad=True)
        y = L.nn.functional.max_pool2d(x * 2, 2)
        z = L.nn.functional.relu(y, inplace=True) if inplace == "functional" else \
            L.nn.ReLU(inplace=True)(y)
        (z * z).sum().backward()
        res[L] = (_np(z), _np(x.grad))
    np.testing.assert_allclose(res[tg][0], res[torch][0], rtol=1e-6)
    np.testing.assert_allclose(res[tg][1], res[torch][1], rtol=1e-6)
