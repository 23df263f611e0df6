"""The smaller Tensor methods (tracegrad/eager/tensor_misc.py), nn.init's deprecated names
and sparse_, and torch.autograd's re-exports, against torch 2.13."""
import threading
import warnings

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

LIBS = [tg, torch]


def _outcome(fn):
    """(kind, value or message) of running fn, with the warnings it raised."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = fn()
            out = ("ok", _plain(r))
        except Exception as e:  # noqa: BLE001  (compared with torch's)
            msg = str(e).split(" (at ")[0]
            out = (type(e).__name__, msg)
    return out, [(x.category.__name__, str(x.message).split(" (Triggered")[0]) for x in w]


def _plain(r):
    if isinstance(r, (tg.Tensor, torch.Tensor)):
        return (str(r.dtype).replace("torch.", ""), tuple(r.shape), tuple(r.stride()),
                np.asarray(r.detach().numpy()).tolist())
    if isinstance(r, tuple):
        return tuple(_plain(x) for x in r)
    return r


def same(fn):
    a, b = _outcome(lambda: fn(tg)), _outcome(lambda: fn(torch))
    assert a == b
    return a


# -- conjugate / negative bits and queries -----------------------------------------------------------
def test_conj_neg_bits():
    for L in LIBS:
        r = L.tensor([1.0, -2.0])
        assert r.conj_physical() is r and r.resolve_conj() is r and r.resolve_neg() is r
        assert not r.is_conj() and not r.is_neg()
        assert L.conj_physical(r) is r
    same(lambda L: L.tensor([1 + 2j, 3 - 1j]).conj_physical())
    same(lambda L: L.tensor([1 + 2j, 3 - 1j]).conj_physical_())
    same(lambda L: L.tensor([1 + 2j]).resolve_conj().is_conj())
    same(lambda L: L.tensor([1.0, 2.0], requires_grad=True).conj_physical_())
    same(lambda L: L.tensor([1.0, 2.0], requires_grad=True).conj_physical().grad_fn)

    def version(L):
        t = L.tensor([1.0, 2.0])
        t.conj_physical_()
        return t._version
    same(version)


@pytest.mark.parametrize("make", [lambda L: L.tensor([0.0]), lambda L: L.tensor(3),
                                  lambda L: L.tensor([]), lambda L: L.ones(2, 3),
                                  lambda L: L.tensor([[True]])])
def test_is_nonzero(make):
    same(lambda L: make(L).is_nonzero())


def test_is_same_size_ndimension():
    same(lambda L: L.ones(2, 3).is_same_size(L.zeros(2, 3)))
    same(lambda L: L.ones(2, 3).is_same_size(L.zeros(3, 2)))
    same(lambda L: L.ones(2, 3).is_same_size(3))
    same(lambda L: (L.ones(2, 3, 1).ndimension(), L.tensor(1.0).ndimension()))


# -- activations ---------------------------------------------------------------------------------
@pytest.mark.parametrize("w", [[0.25], [0.1, -0.2, 0.3], 0.5])
def test_prelu(w):
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)

    def run(L):
        xt = L.tensor(x, requires_grad=True)
        wt = L.tensor(np.float32(w) if not isinstance(w, list) else np.float32(w),
                      requires_grad=True)
        y = xt.prelu(wt)
        (y * L.arange(24.0).reshape(2, 3, 4)).sum().backward()
        return y, y.grad_fn.name(), xt.grad, wt.grad
    a, b = _outcome(lambda: run(tg)), _outcome(lambda: run(torch))
    assert a[0][0] == b[0][0] == "ok"
    for u, v in zip(a[0][1], b[0][1]):
        if isinstance(u, tuple):
            assert u[:3] == v[:3]
            np.testing.assert_allclose(u[3], v[3], rtol=1e-6)
        else:
            assert u == v


def test_prelu_errors():
    same(lambda L: L.tensor([1, -2]).prelu(L.tensor([1])))
    same(lambda L: L.tensor([1.0, -2]).prelu(L.tensor([1])))
    same(lambda L: L.ones(2, 3).prelu(L.ones(4)))
    same(lambda L: L.ones(2, 3).prelu(L.ones(3, 1)))


def test_hardshrink():
    x = [-2.0, -0.5, -0.2, 0.0, 0.3, 0.5, 0.7]
    same(lambda L: L.tensor(x).hardshrink())
    same(lambda L: L.tensor(x, dtype=L.float64).hardshrink(0.25))
    same(lambda L: L.tensor([1, -2]).hardshrink())

    def grad(L):
        t = L.tensor(x, requires_grad=True)
        y = t.hardshrink(0.4)
        y.sum().backward()
        return y.grad_fn.name(), t.grad
    same(grad)


# -- copies and splits ---------------------------------------------------------------------------
@pytest.mark.parametrize("args", [(1, 1, 2), (1, -2, 2), (0, 1, 1), (1, 3, 2), (2, 0, 1),
                                  (1, 1, -1), (-1, 0, 4)])
def test_narrow_copy(args):
    def run(L):
        a = L.arange(12.0).reshape(3, 4)
        b = a.narrow_copy(*args)
        return b, b._base is None, b.is_contiguous(), b.data_ptr() != a.data_ptr()
    same(run)


def test_narrow_copy_grad():
    def run(L):
        a = L.arange(12.0).reshape(3, 4).requires_grad_()
        b = a.narrow_copy(1, 1, 2)
        (b * 2).sum().backward()
        return b.grad_fn.name(), a.grad
    same(run)


def test_unsafe_split_with_sizes():
    same(lambda L: L.arange(12.0).reshape(3, 4).unsafe_split_with_sizes([1, 2]))
    same(lambda L: L.arange(12.0).reshape(3, 4).unsafe_split_with_sizes([1, 3], 1))
    same(lambda L: L.arange(12.0).reshape(3, 4).unsafe_split_with_sizes([1, 2], 1))

    def run(L):
        a = L.arange(12.0).reshape(3, 4)
        p = a.unsafe_split_with_sizes([1, 3], 1)
        q = L.arange(12.0).reshape(3, 4).requires_grad_().unsafe_split_with_sizes([2, 1])
        return p[1]._base is None, q[0].grad_fn.name(), q[1]._base is None
    same(run)


# -- memory --------------------------------------------------------------------------------------
VIEWS = [lambda x: x, lambda x: x[1:], lambda x: x.t(), lambda x: x[:, 1], lambda x: x[1:, 2:],
         lambda x: x.as_strided((2, 2), (1, 2), 3), lambda x: x[2:][:, 1:].t(),
         lambda x: x.reshape(-1)[5:], lambda x: x.diagonal(), lambda x: x.unfold(1, 2, 1)[1],
         lambda x: x[::2, ::3], lambda x: x.narrow(1, 1, 2)]


@pytest.mark.parametrize("k", range(len(VIEWS)))
def test_storage_offset_and_data_ptr(k):
    def run(L):
        x = L.arange(12.0).reshape(3, 4)
        v = VIEWS[k](x)
        return v.storage_offset(), v.data_ptr() - x.data_ptr(), v.stride()
    same(run)


def test_data_ptr():
    same(lambda L: L.empty(0).data_ptr())
    same(lambda L: L.empty(0, 3).data_ptr())
    same(lambda L: L.arange(4.0)[4:].data_ptr())
    for L in LIBS:
        x = L.arange(6.0)
        assert x.data_ptr() == x[:2].data_ptr() == x.view(2, 3).data_ptr() != 0
        assert x[1:].data_ptr() - x.data_ptr() == 4
        assert isinstance(x.data_ptr(), int)


def test_pinned_and_shared():
    same(lambda L: L.arange(4.0).is_pinned())
    same(lambda L: L.arange(4.0).is_pinned("cpu"))
    same(lambda L: L.arange(4.0).pin_memory())
    same(lambda L: L.arange(4.0).pin_memory("cpu"))
    same(lambda L: L.arange(4.0).is_shared())


@pytest.mark.parametrize("size,stride", [((2, 3), (1, 2)), ((2, 3), (3, 1)), ((2, 2), (0, 0)),
                                         ((0, 3), (3, 1)), ((2, 3), (1,)), ((2, 2), (-1, 1)),
                                         ((-2, 2), (1, 1)), ((), ())])
def test_new_empty_strided(size, stride):
    def run(L):
        e = L.ones(5, dtype=L.float64).new_empty_strided(size, stride)
        return tuple(e.shape), e.stride(), e.dtype == L.float64, e.requires_grad
    same(run)
    same(lambda L: L.ones(5).new_empty_strided((2, 3), (3, 1), dtype=L.int32,
                                               requires_grad=False).dtype == L.int32)
    same(lambda L: L.ones(5).new_empty_strided((2, 3), (3, 1), requires_grad=True).is_leaf)


RESIZES = [
    lambda L: L.arange(6.0).resize_(2, 3),
    lambda L: L.arange(6.0).resize_(2, 2),
    lambda L: L.arange(6.0).resize_([3, 2]),
    lambda L: L.arange(6.0).resize_((6,)),
    lambda L: L.arange(6.0).resize_(0),
    lambda L: L.arange(6).resize_(1, 5),
    lambda L: L.arange(6.0).resize_(-1),
    lambda L: L.arange(6.0).resize_(),
    lambda L: L.arange(6.0).requires_grad_().resize_(2, 3),
    lambda L: L.arange(6.0).requires_grad_().resize_(6),
    lambda L: L.arange(6.0).reshape(2, 3).t().resize_(3, 2),
    lambda L: L.arange(6.0).reshape(2, 3).t().resize_(2, 3),
    lambda L: L.arange(6.0).reshape(2, 3).t().resize_(3, 2, memory_format=L.contiguous_format),
    lambda L: L.arange(6.0).resize_(2, 3, memory_format=L.channels_last),
    lambda L: L.arange(6.0).resize_(2, 3, memory_format=L.preserve_format),
    lambda L: L.arange(24.0).resize_(1, 2, 3, 4, memory_format=L.channels_last),
    lambda L: L.arange(12.0)[2:].resize_(3),
    lambda L: L.arange(12.0)[2:8].resize_(9),
    lambda L: L.arange(12.0).reshape(3, 4)[1].resize_(2, 2),
    lambda L: L.arange(6.0).resize_as_(L.zeros(3, 2)),
    lambda L: L.arange(6.0).resize_as_(L.zeros(3, 2, requires_grad=True)),
    lambda L: L.arange(6.0).requires_grad_().resize_as_(L.zeros(3, 2)),
    lambda L: L.arange(6.0).resize_as_(L.zeros(3, 2).t(), memory_format=L.preserve_format),
    lambda L: L.arange(6.0).resize_as_(L.zeros(2, 3, dtype=L.int64)),
]


@pytest.mark.parametrize("k", range(len(RESIZES)))
def test_resize(k):
    same(RESIZES[k])


def test_resize_keeps_storage_and_counts_versions():
    def run(L):
        z = L.arange(6.0)
        v0 = z._version
        z.resize_(6)
        v1 = z._version
        z.resize_(2)
        v2 = z._version
        z.resize_(6)            # the storage still holds the old elements
        return v0, v1, v2, z._version, z
    same(run)

    def view(L):
        x = L.arange(6.0)
        v = x[:3]
        v.resize_(4)            # inside the storage: x's element
        v[3] = 10.0
        return v, x, v.storage_offset()
    same(view)


def test_resize_grows_with_zeros():
    # torch shows uninitialised memory past the old storage; tracegrad zeros
    for L in LIBS:
        z = L.arange(6.0)
        z.resize_(3, 3)
        assert z.shape == (3, 3) and z.stride() == (3, 1)
        assert z.reshape(-1)[:6].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    z = tg.arange(6.0)
    z.resize_(3, 3)
    assert z.reshape(-1)[6:].tolist() == [0.0, 0.0, 0.0]
    z = tg.arange(4, dtype=tg.int32).resize_(6)
    assert z.tolist() == [0, 1, 2, 3, 0, 0] and z.dtype == tg.int32


def test_resize_growth_shared_storage_is_refused():
    # torch moves every tensor sharing the storage to the grown one: tracegrad cannot
    x = tg.arange(4.0)
    v = x.view(2, 2)
    with pytest.raises(RuntimeError, match="cannot grow a storage other tensors share"):
        x.resize_(8)
    d = tg.arange(4.0)
    e = d.detach()
    with pytest.raises(RuntimeError, match="cannot grow"):
        d.resize_(8)
    with pytest.raises(RuntimeError, match="cannot grow"):
        tg.arange(4.0)[1:].resize_(8)
    assert v.tolist() == [[0.0, 1.0], [2.0, 3.0]] and e.shape == (4,)


def test_as_strided_():
    def run(L):
        y = L.arange(6.0)
        r = y.as_strided_((2, 2), (1, 2), 1)
        return r is y, y, y.storage_offset(), y._version
    same(run)
    same(lambda L: L.arange(6.0).requires_grad_().as_strided_((2, 2), (1, 2)))

    def grad(L):
        a = L.arange(6.0).requires_grad_()
        b = a * 1
        b.as_strided_((2, 2), (1, 2))
        (b * L.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        return b.grad_fn.name(), a.grad
    same(grad)


# -- Python callables per element ----------------------------------------------------------------
APPLY = [
    (lambda L: L.arange(6.0), lambda v: v * 2),
    (lambda L: L.arange(6), lambda v: v / 4),
    (lambda L: L.arange(6), lambda v: -2.7),
    (lambda L: L.arange(6), lambda v: type(v).__name__),
    (lambda L: L.arange(6.0), lambda v: type(v).__name__),
    (lambda L: L.tensor([True, False]), lambda v: type(v).__name__),
    (lambda L: L.tensor([True, False]), lambda v: 2),
    (lambda L: L.tensor([True, False]), lambda v: 0.5),
    (lambda L: L.tensor([True, False]), lambda v: 0j),
    (lambda L: L.arange(6.0), lambda v: None),
    (lambda L: L.arange(6.0), ("L", lambda L, v: L.tensor(3.0))),
    (lambda L: L.arange(3), ("L", lambda L, v: L.tensor(5))),
    (lambda L: L.arange(3), ("L", lambda L, v: L.tensor(5.0))),
    (lambda L: L.arange(3), lambda v: np.float32(2.5)),
    (lambda L: L.arange(3), lambda v: np.int32(2)),
    (lambda L: L.arange(3.0), lambda v: np.int32(2)),
    (lambda L: L.arange(3, dtype=L.uint8), lambda v: 300),
    (lambda L: L.arange(3, dtype=L.uint8), lambda v: -1),
    (lambda L: L.arange(3, dtype=L.uint8), lambda v: -255),
    (lambda L: L.arange(3, dtype=L.uint8), lambda v: -256),
    (lambda L: L.arange(3, dtype=L.uint8), lambda v: -1.0),
    (lambda L: L.arange(3, dtype=L.int8), lambda v: 200),
    (lambda L: L.arange(3, dtype=L.int8), lambda v: -129),
    (lambda L: L.arange(3), lambda v: 2 ** 70),
    (lambda L: L.arange(3), lambda v: float("nan")),
    (lambda L: L.arange(3), lambda v: float("inf")),
    (lambda L: L.arange(3, dtype=L.int32), lambda v: True),
    (lambda L: L.arange(3.0), lambda v: 1 + 2j),
    (lambda L: L.arange(3.0).to(L.complex64), lambda v: v * 1j),
    (lambda L: L.arange(3.0).to(L.complex64), lambda v: "x"),
    (lambda L: L.arange(6.0).half(), lambda v: 1 / 3),
    (lambda L: L.arange(6.0).float(), lambda v: 1e300),
    (lambda L: L.arange(6.0).requires_grad_(), lambda v: v),
    (lambda L: L.arange(6.0).requires_grad_() * 1, lambda v: v),
    (lambda L: L.empty(0), lambda v: 1 / 0),
    (lambda L: L.tensor(2.0), lambda v: v + 1),
    (lambda L: L.arange(3), 3),
]


@pytest.mark.parametrize("k", range(len(APPLY)))
def test_apply_(k):
    make, fn = APPLY[k]

    def run(L):
        t = make(L)
        f = (lambda v: fn[1](L, v)) if isinstance(fn, tuple) else fn
        r = t.apply_(f)
        return r is t, t, t._version
    same(run)


def test_apply_order_and_partial_writes():
    def run(L):
        seen = []
        t = L.arange(6.0).reshape(2, 3).t()

        def f(v):
            seen.append(v)
            if len(seen) == 4:
                raise ValueError("stop")
            return v + 100
        try:
            t.apply_(f)
        except ValueError:
            pass
        return seen, t
    same(run)


MAPS = [
    lambda L: L.arange(6.0).reshape(2, 3).map_(L.ones(3), lambda x, y: x + y),
    lambda L: L.arange(6.0).reshape(2, 3).map_(L.ones(2, 1), lambda x, y: x * 10 + y),
    lambda L: L.arange(6.0).reshape(2, 3).map_(L.ones(3, dtype=L.int64), lambda x, y: x),
    lambda L: L.arange(6.0).reshape(2, 3).map_(L.ones(3, dtype=L.float64), lambda x, y: x),
    lambda L: L.arange(6.0).reshape(2, 3).map_(L.ones(4), lambda x, y: x),
    lambda L: L.ones(3).map_(L.ones(2, 3), lambda x, y: x),
    lambda L: L.arange(6.0).reshape(2, 3).map_(L.ones(3, requires_grad=True), lambda x, y: x),
    lambda L: L.arange(6.0).reshape(2, 3).map_(3, lambda x, y: x),
    lambda L: L.arange(6).map_(L.arange(6), lambda x, y: (x, y) and x * y),
    lambda L: L.arange(6.0).reshape(2, 3).map2_(L.ones(3), L.full((2, 1), 5.0),
                                                lambda x, y, z: x + y * z),
    lambda L: L.arange(6.0).map2_(L.ones(6), L.ones(6, dtype=L.int32), lambda x, y, z: x),
    lambda L: L.arange(6.0).map2_(L.ones(6, dtype=L.int32), L.ones(6), lambda x, y, z: x),
    lambda L: L.arange(6.0).map2_(L.ones(6), L.ones(4), lambda x, y, z: x),
    lambda L: L.arange(6.0).map2_(L.ones(6), L.ones(6, requires_grad=True), lambda x, y, z: x),
]


@pytest.mark.parametrize("k", range(len(MAPS)))
def test_map_(k):
    same(MAPS[k])


# -- legacy attributes ---------------------------------------------------------------------------
def test_name_volatile():
    same(lambda L: L.arange(4.0).name)
    same(lambda L: L.arange(4.0).volatile)

    def set_volatile(L):
        t = L.arange(4.0)
        t.volatile = True
        return t.volatile
    same(set_volatile)

    def set_name(L):
        t = L.arange(4.0)
        t.name = "a"
    same(set_name)


DIM_ORDERS = [
    lambda L: L.empty(2, 3, 4, 5).dim_order(),
    lambda L: L.empty(2, 3, 4, 5).permute(0, 2, 3, 1).dim_order(),
    lambda L: L.empty(2, 3, 4, 5).transpose(1, 2).dim_order(),
    lambda L: L.empty(2, 3, 4, 5).dim_order(ambiguity_check=True),
    lambda L: L.empty(2, 1, 4, 1).dim_order(ambiguity_check=True),
    lambda L: L.empty(1, 2, 3, 4).dim_order(ambiguity_check=[L.contiguous_format,
                                                             L.channels_last]),
    lambda L: L.empty(2, 1, 4, 1).dim_order(ambiguity_check=[L.contiguous_format,
                                                             L.channels_last]),
    lambda L: L.empty(2, 1, 4, 1).dim_order(),
    lambda L: L.empty(2, 3, 4, 5).as_strided((2, 3), (1, 1)).dim_order(),
    lambda L: L.empty(3, 4).t()[::2].dim_order(),
    lambda L: L.empty(3, 1).expand(3, 4).dim_order(),
    lambda L: L.empty(2, 2, 2).permute(2, 0, 1).dim_order(),
    lambda L: L.empty(2, 2, 2).permute(2, 0, 1).dim_order(ambiguity_check=True),
    lambda L: L.tensor(1.0).dim_order(),
    lambda L: L.empty(5).dim_order(),
    lambda L: L.empty(2, 3, 4, 5).dim_order(ambiguity_check=1),
    lambda L: L.empty(2, 3, 4, 5).dim_order(ambiguity_check=["x"]),
    lambda L: L.empty(2, 3, 4, 5, 6).permute(0, 2, 3, 4, 1).dim_order(),
]


@pytest.mark.parametrize("k", range(len(DIM_ORDERS)))
def test_dim_order(k):
    same(DIM_ORDERS[k])


# -- nn.init -------------------------------------------------------------------------------------
INITS = [("uniform", (), {"a": -1, "b": 2}), ("normal", (), {"std": 0.5}),
         ("constant", (0.3,), {}), ("eye", (), {}), ("xavier_uniform", (), {}),
         ("xavier_normal", (), {"gain": 2.0}), ("kaiming_uniform", (), {"a": 0.1}),
         ("kaiming_normal", (), {"mode": "fan_out"}), ("orthogonal", (), {}),
         ("sparse", (0.4,), {})]


@pytest.mark.parametrize("name,args,kwargs", INITS)
def test_init_deprecated_names(name, args, kwargs):
    def run(L):
        L.manual_seed(3)
        w = L.empty(5, 4)
        out = getattr(L.nn.init, name)(w, *args, **kwargs)
        return out is w, w
    a, b = _outcome(lambda: run(tg)), _outcome(lambda: run(torch))
    assert a[1] == b[1] == [("FutureWarning", f"`nn.init.{name}` is now deprecated in favor of "
                             f"`nn.init.{name}_`.")]
    assert a[0][1][0] and b[0][1][0]
    np.testing.assert_allclose(a[0][1][1][3], b[0][1][1][3], rtol=1e-5, atol=1e-6)
    assert tg.nn.init.sparse.__name__ == "sparse"


def test_init_dirac_deprecated():
    same(lambda L: L.nn.init.dirac(L.empty(2, 2, 3)))


@pytest.mark.parametrize("shape,sparsity,std", [((5, 4), 0.4, 0.01), ((3, 7), 0.9, 1.0),
                                                ((6, 2), 0.0, 0.1), ((4, 3), 1.0, 0.1)])
def test_init_sparse_draws(shape, sparsity, std):
    def run(L):
        L.manual_seed(7)
        w = L.empty(*shape)
        L.nn.init.sparse_(w, sparsity, std)
        return w, L.rand(2)                 # the generator left where torch leaves it
    (ka, a), _ = _outcome(lambda: run(tg))
    (kb, b), _ = _outcome(lambda: run(torch))
    assert ka == kb == "ok" and a[0][:3] == b[0][:3] and a[1] == b[1]
    wa, wb = np.array(a[0][3]), np.array(b[0][3])
    assert ((wa == 0) == (wb == 0)).all()       # the same zeros: the same randperm draws
    np.testing.assert_allclose(wa, wb, rtol=1e-6)   # (normal_: float32 rounding, random.py)

    def gen(L):
        L.manual_seed(1)
        g = L.Generator().manual_seed(2)
        w = L.empty(3, 3)
        L.nn.init.sparse_(w, 0.5, std=1.0, generator=g)
        return w
    same(gen)
    same(lambda L: L.nn.init.sparse_(L.empty(3), 0.5))


# -- autograd re-exports ---------------------------------------------------------------------------
def test_autograd_grad_modes():
    for L in LIBS:
        x = L.ones(2, requires_grad=True)
        with L.autograd.no_grad():
            assert not (x * 2).requires_grad
            with L.autograd.enable_grad():
                assert (x * 2).requires_grad
        with L.autograd.set_grad_enabled(False):
            assert not (x * 2).requires_grad
        with L.autograd.inference_mode():
            assert (L.ones(1) * 2).is_inference()
        assert L.autograd.no_grad is L.no_grad and L.autograd.inference_mode is L.inference_mode


def test_autograd_multithreading_flag():
    def run(L, out):
        a = L.autograd
        seen = [a.is_multithreading_enabled()]
        with a.set_multithreading_enabled(False):
            seen.append(a.is_multithreading_enabled())
        seen.append(a.is_multithreading_enabled())
        a.set_multithreading_enabled(False)
        seen.append(a.is_multithreading_enabled())
        a.set_multithreading_enabled(True)

        @a.set_multithreading_enabled(False)
        def f():
            return a.is_multithreading_enabled()
        seen += [a.is_multithreading_enabled(), f(), a.is_multithreading_enabled()]
        out.append(seen)

    results = []
    for L in LIBS:       # per thread, in torch: each run in a thread of its own
        out = []
        th = threading.Thread(target=run, args=(L, out))
        th.start()
        th.join()
        results.append(out[0])
    assert results[0] == results[1]


def test_is_tensor_like():
    for L in LIBS:
        f = L.autograd.is_tensor_like
        assert f(L.ones(1)) and f(L.nn.Parameter(L.ones(1))) and f(L.Tensor)
        assert not f(3) and not f(np.ones(1)) and not f([1.0])
