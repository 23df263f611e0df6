"""Sparse COO tensors against PyTorch: construction, ``to_dense``/``coalesce``/``indices``/
``values``, ``torch.sparse.mm``, ``torch.mm``/``@`` with a sparse operand, ``sparse.sum``,
``to_sparse``; values, dtypes, shapes, gradients to the dense operand, to the stored
values and to a sparse leaf (sparse, at the stored entries), and the errors of misuse."""
import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks")


def _pattern(rs, shape, nnz, duplicates):
    idx = np.stack([rs.randint(0, n, nnz) for n in shape]).astype(np.int64)
    if duplicates and nnz > 1:
        idx[:, -1] = idx[:, 0]          # one repeated entry
    return idx


CASES = [(shape, nnz, dup, dtype, k)
         for shape, nnz in [((4, 5), 7), ((6, 3), 1), ((5, 5), 12), ((3, 4), 0)]
         for dup in (False, True) for dtype in ("float32", "float64") for k in (1, 3)]


def _both(fn):
    return fn(tg), fn(torch)


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _close(a, b, dtype):
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(_np(a), _np(b), rtol=tol, atol=tol)


@pytest.mark.parametrize("case", bounded(CASES, 8), ids=str)
@pytest.mark.parametrize("how", ["sparse.mm", "mm", "matmul", "rmatmul"])
def test_products_and_gradients_to_values_and_dense(case, how):
    shape, nnz, dup, dtype, k = case
    rs = np.random.RandomState(nnz + k)
    idx = _pattern(rs, shape, nnz, dup)
    vals = rs.randn(nnz).astype(dtype)
    x = rs.randn(shape[1] if how != "rmatmul" else k,
                 k if how != "rmatmul" else shape[0]).astype(dtype)
    w = rs.randn(shape[0] if how != "rmatmul" else k,
                 k if how != "rmatmul" else shape[1]).astype(dtype)

    def run(lib):
        v = lib.tensor(vals, requires_grad=True)
        xt = lib.tensor(x, requires_grad=True)
        a = lib.sparse_coo_tensor(lib.tensor(idx), v, shape)
        out = {"sparse.mm": lambda: lib.sparse.mm(a, xt), "mm": lambda: lib.mm(a, xt),
               "matmul": lambda: a @ xt, "rmatmul": lambda: xt @ a}[how]()
        (out * lib.tensor(w)).sum().backward()
        return out, v.grad, xt.grad, a

    (o, vg, xg, a), (to, tvg, txg, ta) = _both(run)
    assert o.dtype == getattr(tg, dtype) and to.dtype == getattr(torch, dtype)
    assert tuple(o.shape) == tuple(to.shape) and not o.is_sparse and o.layout is tg.strided
    assert a.is_coalesced() == ta.is_coalesced() and a.grad_fn.name() == ta.grad_fn.name()
    assert o.grad_fn.name() == to.grad_fn.name()
    _close(o, to, dtype)
    _close(vg, tvg, dtype)
    _close(xg, txg, dtype)


@pytest.mark.parametrize("case", bounded(CASES, 6), ids=str)
def test_sparse_leaf_gets_a_sparse_gradient_from_sparse_mm(case):
    shape, nnz, dup, dtype, k = case
    rs = np.random.RandomState(3 + nnz)
    idx, vals = _pattern(rs, shape, nnz, dup), rs.randn(nnz).astype(dtype)
    x, w = rs.randn(shape[1], k).astype(dtype), rs.randn(shape[0], k).astype(dtype)

    def run(lib):
        a = lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(vals), shape, requires_grad=True)
        y = lib.sparse.mm(a, lib.tensor(x))
        (y * lib.tensor(w)).sum().backward()
        return a

    a, ta = _both(run)
    assert a.is_leaf and ta.is_leaf and a.grad.is_sparse and ta.grad.is_sparse
    _close(a.grad.to_dense(), ta.grad.to_dense(), dtype)
    assert a.grad.shape == ta.grad.shape


@pytest.mark.parametrize("ops", [("mm",), ("matmul",), ("rmatmul",), ("sparse.mm", "mm"),
                                 ("mm", "sparse.mm"), ("to_dense",), ("sparse.sum",)])
def test_sparse_leaf_gradient_layout_as_torch(ops):
    """``torch.mm`` and ``@`` give a sparse leaf a dense gradient, ``torch.sparse.mm``,
    ``to_dense`` and ``sparse.sum`` a sparse one; both accumulate to a dense one."""
    rs = np.random.RandomState(4)
    idx, vals = _pattern(rs, (4, 3), 6, True), rs.randn(6)
    x, xl = rs.randn(3, 2), rs.randn(2, 4)

    def run(lib):
        a = lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(vals), (4, 3), requires_grad=True)
        for op in ops:
            out = {"mm": lambda: lib.mm(a, lib.tensor(x)), "matmul": lambda: a @ lib.tensor(x),
                   "rmatmul": lambda: lib.tensor(xl) @ a,
                   "sparse.mm": lambda: lib.sparse.mm(a, lib.tensor(x)),
                   "to_dense": lambda: a.to_dense() * 3.0,
                   "sparse.sum": lambda: lib.sparse.sum(a) * 1.5}[op]()
            (out * out.detach()).sum().backward()
        return a

    a, ta = _both(run)
    assert a.grad.layout is (tg.sparse_coo if ta.grad.is_sparse else tg.strided)
    assert a.grad.is_sparse == ta.grad.is_sparse
    dense = lambda g: (g.to_dense() if g.is_sparse else g).numpy()
    _close(dense(a.grad), dense(ta.grad), "float64")
    a.grad = None
    assert a.grad is None


@pytest.mark.parametrize("case", bounded(CASES, 8), ids=str)
def test_to_dense_coalesce_indices_values_sum(case):
    shape, nnz, dup, dtype, _ = case
    rs = np.random.RandomState(7 + nnz)
    idx, vals = _pattern(rs, shape, nnz, dup), rs.randn(nnz).astype(dtype)
    wd, w0, w1 = (rs.randn(*s).astype(dtype) for s in (shape, shape[1:], shape[:1]))

    def run(lib):
        v = lib.tensor(vals, requires_grad=True)
        a = lib.sparse_coo_tensor(lib.tensor(idx), v, shape)
        c = a.coalesce()
        d = a.to_dense()
        s_all = lib.sparse.sum(a)
        s0, s1 = lib.sparse.sum(a, dim=0), lib.sparse.sum(a, 1)
        loss = (d * lib.tensor(wd)).sum() + 2 * s_all + (c.values() ** 2).sum() \
            + (s0.to_dense() * lib.tensor(w0)).sum() + (s1.to_dense() * lib.tensor(w1)).sum()
        loss.backward()
        return dict(c_idx=c.indices(), c_val=c.values(), dense=d, s_all=s_all,
                    s0=s0.to_dense(), s1=s1.to_dense(), grad=v.grad, loss=loss,
                    coalesced=(a.is_coalesced(), c.is_coalesced()), nnz=c._nnz(),
                    names=(c.grad_fn.name() if nnz > 1 and c is not a else None,
                           d.grad_fn.name(), s_all.grad_fn.name()))

    ours, theirs = _both(run)
    for key in ("c_idx", "c_val", "dense", "s_all", "s0", "s1", "grad", "loss"):
        _close(ours[key], theirs[key], dtype)
        assert tuple(ours[key].shape) == tuple(theirs[key].shape), key
    assert ours["c_idx"].dtype == tg.int64
    assert ours["coalesced"] == theirs["coalesced"] and ours["nnz"] == theirs["nnz"]
    assert ours["names"][1:] == theirs["names"][1:]


def test_to_sparse_and_a_graph_network_step():
    """``adj = A.to_sparse()``; two GCN layers ``adj @ (h W)``; gradients to the weights."""
    rs = np.random.RandomState(0)
    n, f, h, c = 9, 5, 4, 3
    adj = (rs.rand(n, n) < 0.3).astype(np.float32) + np.eye(n, dtype=np.float32)
    adj /= adj.sum(1, keepdims=True)
    feats = rs.randn(n, f).astype(np.float32)
    w1, w2 = rs.randn(f, h).astype(np.float32), rs.randn(h, c).astype(np.float32)
    labels = rs.randint(0, c, n)

    def run(lib):
        a = lib.tensor(adj).to_sparse()
        p1, p2 = lib.tensor(w1, requires_grad=True), lib.tensor(w2, requires_grad=True)
        hid = lib.relu(lib.sparse.mm(a, lib.tensor(feats) @ p1))
        out = a @ (hid @ p2)
        loss = lib.nn.functional.cross_entropy(out, lib.tensor(labels))
        loss.backward()
        return a, loss, p1.grad, p2.grad

    (a, loss, g1, g2), (ta, tloss, tg1, tg2) = _both(run)
    assert a.is_coalesced() and ta.is_coalesced() and a.layout is tg.sparse_coo
    np.testing.assert_array_equal(a.indices().numpy(), ta.indices().numpy())
    _close(a.values(), ta.values(), "float32")
    _close(loss, tloss, "float32")
    _close(g1, tg1, "float32")
    _close(g2, tg2, "float32")
    # to_sparse of a tensor that requires grad: the gradient reaches it at the nonzeros
    d = np.array([[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]])

    def back(lib):
        t = lib.tensor(d, requires_grad=True)
        s = t.to_sparse()
        (lib.sparse.mm(s, lib.ones(3, 2, dtype=lib.float64)) ** 2).sum().backward()
        return s, t.grad

    (s, g), (ts, tgd) = _both(back)
    assert s.grad_fn.name() == ts.grad_fn.name() == "ToSparseBackward1"
    _close(g, tgd, "float64")
    coo, tcoo = tg.tensor(d).to_sparse_coo(), torch.tensor(d).to_sparse_coo()
    np.testing.assert_array_equal(coo.indices().numpy(), tcoo.indices().numpy())
    np.testing.assert_array_equal(coo.values().numpy(), tcoo.values().numpy())
    assert coo.is_coalesced() and tcoo.is_coalesced()
    hybrid, thybrid = tg.tensor(d).to_sparse(1), torch.tensor(d).to_sparse(1)
    assert (hybrid.sparse_dim(), hybrid.dense_dim()) == (thybrid.sparse_dim(),
                                                         thybrid.dense_dim())
    np.testing.assert_array_equal(hybrid.values().numpy(), thybrid.values().numpy())
    np.testing.assert_array_equal(hybrid.to_dense().numpy(), d)


def test_hybrid_to_dense_and_default_size():
    idx = np.array([[0, 2, 2], [1, 0, 1]])
    vals = np.arange(6.0).reshape(3, 2)
    ours = tg.sparse_coo_tensor(tg.tensor(idx), tg.tensor(vals))
    theirs = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(vals))
    assert ours.shape == theirs.shape == (3, 2, 2)
    assert (ours.sparse_dim(), ours.dense_dim()) == (theirs.sparse_dim(), theirs.dense_dim())
    np.testing.assert_array_equal(ours.to_dense().numpy(), theirs.to_dense().numpy())
    assert "layout=torch.sparse_coo" in repr(ours) and "nnz=3" in repr(ours)


def test_misuse_errors_as_torch():
    idx = np.array([[0, 1, 1], [2, 0, 2]])
    v = np.array([1.0, 2.0, 3.0])
    for lib in (tg, torch):
        a = lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(v), (3, 3))
        with pytest.raises(RuntimeError, match="Cannot get values on an uncoalesced tensor"):
            a.values()
        with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced"):
            a.indices()
        with pytest.raises(RuntimeError, match="indices and values must have same nnz"):
            lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(v[:2]), (3, 3))
        with pytest.raises(RuntimeError, match="'len.size. == sparse_dim . dense_dim' is not"):
            lib.sparse_coo_tensor(lib.tensor(idx[:1]), lib.tensor(v), (3, 3))
        with pytest.raises(RuntimeError, match="Expected dim 0 size 3, got 4"):
            lib.sparse.mm(a, lib.ones(4, 2, dtype=lib.float64))
        with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
            a + lib.ones(3, 3, dtype=lib.float64)
        with pytest.raises(NotImplementedError):
            a.exp()
        dense = lib.ones(3, 3, dtype=lib.float64) + a       # dense + sparse is dense
        assert not dense.is_sparse and float(dense.sum()) == 15.0
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        tg.sparse_coo_tensor(tg.tensor(idx), tg.tensor(v), (3, 2))
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(v), (3, 2),
                                check_invariants=True)


def test_scalar_arithmetic_transpose_and_import():
    import importlib
    assert importlib.import_module("tracegrad.sparse") is tg.sparse
    idx, v = np.array([[0, 1, 2], [2, 0, 1]]), np.array([1.0, 2.0, 3.0])
    x = np.arange(6.0).reshape(3, 2)

    def run(lib):
        vv = lib.tensor(v, requires_grad=True)
        a = lib.sparse_coo_tensor(lib.tensor(idx), vv, (3, 3))
        b = (-(a * 2.0) / 4.0).t()
        out = lib.sparse.mm(b, lib.tensor(x))
        out.sum().backward()
        return out, vv.grad, b.is_coalesced(), b.shape

    (o, g, c, s), (to, tgr, tc, ts) = _both(run)
    _close(o, to, "float64")
    _close(g, tgr, "float64")
    assert c == tc and s == ts


def test_module_buffer_save_and_load(tmp_path):
    """A graph network's adjacency as a buffer: moved, cast, saved and loaded sparse."""
    class Net(tg.nn.Module):
        def __init__(self, adj):
            super().__init__()
            self.register_buffer("adj", adj)
            self.lin = tg.nn.Linear(3, 2)

        def forward(self, x):
            return tg.sparse.mm(self.adj, self.lin(x))

    adj = tg.sparse_coo_tensor(tg.tensor([[0, 2, 1, 2], [1, 0, 2, 0]]),
                               tg.tensor([1.0, 2.0, 3.0, 0.5]), (3, 3))
    net = Net(adj).double().to("cpu")
    assert net.adj.is_sparse and net.adj.dtype == tg.float64 and not net.adj.is_coalesced()
    x = tg.tensor(np.arange(9.0).reshape(3, 3))
    y = net(x)
    tg.save(net.state_dict(), tmp_path / "net.pt")
    state = tg.load(tmp_path / "net.pt")
    assert state["adj"].is_sparse and not state["adj"].is_coalesced()
    again = Net(tg.sparse_coo_tensor(tg.zeros(2, 0, dtype=tg.int64), tg.zeros(0), (3, 3)))
    again = again.double()
    before = again.adj
    again.load_state_dict(state)
    assert again.adj is before and again.adj._nnz() == 4     # loaded in place, as torch
    np.testing.assert_array_equal(again(x).detach().numpy(), y.detach().numpy())
    np.testing.assert_array_equal(state["adj"].to_dense().numpy(), adj.to_dense().numpy())


@pytest.mark.filterwarnings("ignore:torch.sparse.SparseTensor")
def test_pygcn_style_spmm_addmm_and_legacy_constructor():
    """pygcn builds its adjacency with ``torch.sparse.FloatTensor`` from a SciPy COO
    matrix and multiplies with ``torch.spmm``; ``torch.sparse.addmm`` adds a dense term."""
    rs = np.random.RandomState(9)
    rows, cols = np.array([0, 1, 2, 2, 3]), np.array([1, 0, 2, 3, 1])
    data = rs.rand(5).astype(np.float32)      # pygcn: sparse_mx.tocoo().astype(np.float32)
    feats, bias = rs.randn(4, 3).astype(np.float32), rs.randn(4, 3).astype(np.float32)

    def run(lib):
        adj = lib.sparse.FloatTensor(lib.from_numpy(np.vstack((rows, cols)).astype(np.int64)),
                                     lib.from_numpy(data), lib.Size([4, 4]))
        x = lib.tensor(feats, requires_grad=True)
        out = lib.spmm(adj, x)
        added = lib.sparse.addmm(lib.tensor(bias), adj, x, beta=0.5, alpha=2.0)
        (out.sum() + (added ** 2).sum()).backward()
        dbl = lib.sparse.DoubleTensor(lib.from_numpy(np.vstack((rows, cols))),
                                      lib.from_numpy(data.astype(np.float64)), lib.Size([4, 4]))
        return adj, out, added, x.grad, dbl

    (adj, out, added, g, dbl), (tadj, tout, tadded, tgr, tdbl) = _both(run)
    with pytest.warns(UserWarning, match="torch.sparse.SparseTensor.* is deprecated"):
        tg.sparse.FloatTensor(tg.tensor([[0], [1]]), tg.tensor([1.0]), (2, 2))
    assert adj.dtype == tg.float32 and tadj.dtype == torch.float32 and adj.is_sparse
    assert dbl.dtype == tg.float64 and tdbl.dtype == torch.float64
    assert out.grad_fn.name() == tout.grad_fn.name()
    for a, b in ((out, tout), (added, tadded), (g, tgr)):
        _close(a, b, "float32")


def test_repr_as_torch():
    i, v = np.array([[0, 1, 1, 2], [2, 0, 2, 1]]), np.array([1.0, 2.0, 3.0, 4.0], np.float32)

    def reprs(lib):
        a = lib.sparse_coo_tensor(lib.tensor(i), lib.tensor(v), (3, 3), requires_grad=True)
        b = lib.sparse_coo_tensor(lib.tensor(i), lib.tensor(v.astype(np.float64)),
                                  (3, 3)).coalesce()
        return repr(a), repr(b), repr(a * 2)

    assert reprs(tg) == reprs(torch)
