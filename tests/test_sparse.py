"""scipy.sparse with traced values: constant sparse matrices of every format times traced
arrays, sparse solves differentiated by their adjoint, and matrices whose stored values
are traced. Values against SciPy, derivatives against JAX on the dense matrix and against
central differences, under tg.jit on both backends."""
import json
import re

import numpy as np
import pytest

import tracegrad as tg
from tests.conftest import bounded, central_diff
from tracegrad.ir import REGISTRY

sp = pytest.importorskip("scipy.sparse")
spl = pytest.importorskip("scipy.sparse.linalg")
jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)     # as conftest does

import tracegrad.scipy.sparse as tss  # noqa: E402
from tracegrad.scipy.sparse import linalg as tsl  # noqa: E402

FORMATS = ("csr", "csc", "coo", "bsr", "dia", "lil", "dok")
OPS = ("matmul", "dot", "T", "rmatmul", "mul")
M, N, K = 5, 4, 3


def _sparse(fmt, kind, shape=(M, N), seed=0):
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=shape) * (rng.random(shape) < 0.5)
    dense[0, 0] = 1.5       # at least one stored entry
    return getattr(sp, f"{fmt}_{kind}")(dense), dense


def _apply(op, a, x):
    if op == "matmul":
        return a @ x
    if op == "dot":
        return a.dot(x)
    if op == "T":
        return a.T @ x
    if op == "rmatmul":
        return x @ a
    return a * x        # spmatrix: the matrix product


def _operand(op, nd, seed=1):
    rng = np.random.default_rng(seed)
    rows = M if op in ("T", "rmatmul") else N
    shape = ((rows,) if nd == 1 else (rows, K)) if op != "rmatmul" else \
        ((M,) if nd == 1 else (K, M))
    return rng.normal(size=shape)


def _loss(y):
    return np.sum(np.sin(y) * np.arange(1.0, y.size + 1).reshape(y.shape))


def _jloss(y):
    return jnp.sum(jnp.sin(y) * jnp.arange(1.0, y.size + 1).reshape(y.shape))


CASES = [(fmt, kind, op, nd) for fmt in FORMATS for kind in ("matrix", "array")
         for op in OPS for nd in (1, 2) if not (op == "mul" and kind == "array")]


@pytest.mark.parametrize("fmt,kind,op,nd", bounded(CASES, 16, key=lambda c: c[0]))
def test_products(fmt, kind, op, nd):
    a, dense = _sparse(fmt, kind)
    x = _operand(op, nd)
    want = _apply(op, a, x)                                   # SciPy on concrete values
    f = lambda x: _loss(_apply(op, a, x))                     # noqa: E731
    d = jnp.asarray(dense)
    jf = {"matmul": lambda x: d @ x, "dot": lambda x: d @ x, "T": lambda x: d.T @ x,
          "rmatmul": lambda x: x @ d, "mul": lambda x: d @ x}[op]
    jgrad = np.asarray(jax.grad(lambda x: _jloss(jf(x)))(jnp.asarray(x)))
    t = np.ones_like(x)
    jtan = np.asarray(jax.jvp(lambda x: _jloss(jf(x)), (jnp.asarray(x),),
                              (jnp.asarray(t),))[1])
    np.testing.assert_allclose(tg.jit(lambda x: _apply(op, a, x))(x), np.asarray(want),
                               rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(tg.grad(f)(x), jgrad, rtol=1e-12, atol=1e-13)
    for backend in ("numpy", "jax"):
        np.testing.assert_allclose(tg.jit(tg.grad(f), backend=backend)(x), jgrad,
                                   rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(tg.jvp(f, (x,), (t,))[1], jtan, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("fmt", ["csr", "coo", "dia"])
def test_products_against_finite_differences(fmt):
    a, _ = _sparse(fmt, "array")
    x = _operand("matmul", 2)
    f = lambda x: _loss(a @ x) + _loss(x.T @ a.T)            # noqa: E731
    np.testing.assert_allclose(tg.grad(f)(x), central_diff(f, x), rtol=1e-7, atol=1e-8)


def test_jacobian_vmap_and_hessian():
    a, dense = _sparse("csr", "matrix")
    x = _operand("matmul", 1)
    np.testing.assert_allclose(tg.jacobian(lambda x: a @ x)(x), dense, rtol=1e-14)
    xs = np.random.default_rng(3).normal(size=(6, N))
    for backend in ("numpy", "jax"):
        np.testing.assert_allclose(tg.jit(tg.vmap(lambda x: a @ x), backend=backend)(xs),
                                   xs @ dense.T, rtol=1e-13, atol=1e-14)
    xs2 = np.random.default_rng(4).normal(size=(2, N, K))
    np.testing.assert_allclose(tg.vmap(lambda x: a.dot(x))(xs2),
                               np.einsum("mn,bnk->bmk", dense, xs2), rtol=1e-13, atol=1e-14)
    h = tg.hessian(lambda x: _loss(a @ x))(x)
    d = jnp.asarray(dense)
    jh = np.asarray(jax.hessian(lambda x: _jloss(d @ x))(jnp.asarray(x)))
    np.testing.assert_allclose(h, jh, rtol=1e-12, atol=1e-13)


def test_a_scalar_times_a_matrix_gives_traced_values():
    a, dense = _sparse("csr", "matrix")
    x = _operand("matmul", 1)
    f = lambda s: _loss((a * s) @ x)                          # noqa: E731
    s = np.array(0.7)
    np.testing.assert_allclose(tg.grad(f)(s), central_diff(f, s), rtol=1e-7)


# -- traced stored values ---------------------------------------------------------------
def _structured(fmt, kind, a, t):
    mod = tss
    if fmt == "coo":
        c = a.tocoo()
        return getattr(mod, f"coo_{kind}")((t, (c.row, c.col)), shape=a.shape)
    c = getattr(a, f"to{fmt}")()
    return getattr(mod, f"{fmt}_{kind}")((t, c.indices, c.indptr), shape=a.shape)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("kind", ["matrix", "array"])
def test_traced_stored_values(fmt, kind):
    a, dense = _sparse(fmt, kind)
    stored = (a.tocoo() if fmt == "coo" else getattr(a, f"to{fmt}")()).data.copy()
    x = _operand("matmul", 2)
    y = _operand("T", 1)

    def f(t):
        m = _structured(fmt, kind, a, t)
        return _loss(m @ x) + _loss(y @ m) + _loss(m.T.dot(y))

    np.testing.assert_allclose(f(stored), _loss(dense @ x) + _loss(y @ dense)
                               + _loss(dense.T @ y), rtol=1e-13)
    fd = central_diff(f, stored)
    np.testing.assert_allclose(tg.grad(f)(stored), fd, rtol=1e-7, atol=1e-8)
    for backend in ("numpy", "jax"):
        np.testing.assert_allclose(tg.jit(tg.grad(f), backend=backend)(stored), fd,
                                   rtol=1e-7, atol=1e-8)
    t = np.linspace(-1, 1, stored.size)
    np.testing.assert_allclose(tg.jvp(f, (stored,), (t,))[1], fd @ t, rtol=1e-7, atol=1e-8)
    # both factors traced: the product of a traced matrix and a traced vector
    g = tg.grad(lambda t, x: _loss(_structured(fmt, kind, a, t) @ x), argnums=1)(stored, x)
    np.testing.assert_allclose(g, central_diff(lambda x: _loss(dense @ x), x), rtol=1e-7,
                               atol=1e-8)


# -- solves -----------------------------------------------------------------------------
NS = 7


def _system(symmetric=False):
    rng = np.random.default_rng(5)
    d = rng.normal(size=(NS, NS)) * (rng.random((NS, NS)) < 0.4)
    d = d + d.T if symmetric else d
    d = d + np.eye(NS) * (np.abs(d).sum(axis=1).max() + 1.0)     # well conditioned
    return sp.csr_array(d), d


SOLVES = {
    "spsolve": (lambda a, b: tsl.spsolve(a, b), lambda d, b: jnp.linalg.solve(d, b), False),
    "splu": (lambda a, b: tsl.splu(a).solve(b), lambda d, b: jnp.linalg.solve(d, b), False),
    "splu_T": (lambda a, b: tsl.splu(a).solve(b, trans="T"),
               lambda d, b: jnp.linalg.solve(d.T, b), False),
    "factorized": (lambda a, b: tsl.factorized(a)(b), lambda d, b: jnp.linalg.solve(d, b),
                   False),
    "cg": (lambda a, b: tsl.cg(a, b, rtol=1e-13)[0], lambda d, b: jnp.linalg.solve(d, b), True),
    "gmres": (lambda a, b: tsl.gmres(a, b, rtol=1e-13)[0],
              lambda d, b: jnp.linalg.solve(d, b), False),
}


@pytest.mark.parametrize("name", sorted(SOLVES))
def test_solves(name):
    solve, jsolve, symmetric = SOLVES[name]
    a, dense = _system(symmetric)
    b = np.linspace(0.5, 2.0, NS)
    f = lambda b: _loss(solve(a, b))                           # noqa: E731
    np.testing.assert_allclose(solve(a, b), np.linalg.solve(
        dense.T if name == "splu_T" else dense, b), rtol=1e-10)
    fd = central_diff(f, b)
    d = jnp.asarray(dense)
    jgrad = np.asarray(jax.grad(lambda b: _jloss(jsolve(d, b)))(jnp.asarray(b)))
    np.testing.assert_allclose(jgrad, fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tg.grad(f)(b), jgrad, rtol=1e-9, atol=1e-11)
    for backend in ("numpy", "jax"):
        np.testing.assert_allclose(tg.jit(tg.grad(f), backend=backend)(b), jgrad,
                                   rtol=1e-9, atol=1e-11)
    t = np.linspace(1, -1, NS)
    np.testing.assert_allclose(tg.jvp(f, (b,), (t,))[1], jgrad @ t, rtol=1e-9)
    # one solve forward, one more (the adjoint) backward: no unrolled iteration
    ops = [op for _, op in tg.trace(tg.grad(f), b).nx.nodes(data="op")]
    assert ops.count("sparse_solve") == 2, ops
    assert [op for _, op in tg.trace(f, b).nx.nodes(data="op")].count("sparse_solve") == 1


def test_solve_with_traced_matrix_values_and_several_right_hand_sides():
    a, dense = _system()
    stored = a.data.copy()
    bs = np.random.default_rng(6).normal(size=(NS, 2))

    def f(t, bs):
        m = tss.csr_array((t, a.indices, a.indptr), shape=a.shape)
        return _loss(tsl.spsolve(m, bs))

    np.testing.assert_allclose(f(stored, bs), _loss(np.linalg.solve(dense, bs)), rtol=1e-12)
    gt, gb = tg.grad(f, argnums=(0, 1))(stored, bs)
    np.testing.assert_allclose(gt, central_diff(lambda t: f(t, bs), stored), rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(gb, central_diff(lambda b: f(stored, b), bs), rtol=1e-6,
                               atol=1e-8)
    for backend in ("numpy", "jax"):
        got = tg.jit(tg.grad(f, argnums=(0, 1)), backend=backend)(stored, bs)
        np.testing.assert_allclose(got[0], gt, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got[1], gb, rtol=1e-10, atol=1e-12)
    t = np.linspace(-1, 1, stored.size)
    np.testing.assert_allclose(tg.jvp(lambda t: f(t, bs), (stored,), (t,))[1], gt @ t,
                               rtol=1e-9)
    h = tg.hessian(lambda b: _loss(tsl.spsolve(a, b)))(bs[:, 0])
    d = jnp.asarray(dense)
    jh = np.asarray(jax.hessian(lambda b: _jloss(jnp.linalg.solve(d, b)))(
        jnp.asarray(bs[:, 0])))
    np.testing.assert_allclose(h, jh, rtol=1e-9, atol=1e-12)
    xs = np.random.default_rng(7).normal(size=(3, NS))
    np.testing.assert_allclose(tg.vmap(lambda b: tsl.spsolve(a, b))(xs),
                               np.linalg.solve(dense, xs.T).T, rtol=1e-10)


def test_plain_values_are_scipys():
    a, dense = _system()
    b = np.ones(NS)
    assert type(tss.csr_matrix((a.data, a.indices, a.indptr), shape=a.shape)) is sp.csr_matrix
    np.testing.assert_allclose(tsl.spsolve(a, b), spl.spsolve(a, b))
    np.testing.assert_allclose(tsl.cg(a.T @ a, b)[0], spl.cg(a.T @ a, b)[0])


# -- what cannot be routed: TraceErrors naming the user's line -----------------------------
def _line_of(fragment):
    src = open(__file__).read().splitlines()
    return next(i + 1 for i, line in enumerate(src) if fragment in line)


def _refused(f, x, fragment, *words):
    with pytest.raises(tg.TraceError) as e:
        tg.grad(f)(x)
    msg = str(e.value)
    assert f"test_sparse.py:{_line_of(fragment)}" in msg, msg
    for w in words:
        assert w in msg, msg


def test_scipy_calls_that_cannot_be_routed_say_what_works():
    a, _ = _system()
    b = np.ones(NS)
    _refused(lambda b: np.sum(spl.spsolve(a, b)), b, "np.sum(spl.spsolve(a, b))",
             "tracegrad.scipy.sparse.linalg.spsolve")
    _refused(lambda b: np.sum(spl.cg(a, b)[0]), b, "np.sum(spl.cg(a, b)[0])",
             "tracegrad.scipy.sparse.linalg.cg")
    _refused(lambda t: np.sum(sp.csr_matrix((t, a.indices, a.indptr), shape=a.shape) @ b),
             a.data.copy(), "np.sum(sp.csr_matrix((t, a.indices, a.indptr)",
             "tracegrad.scipy.sparse.csr_matrix")
    _refused(lambda x: np.sum(a * x), b, "np.sum(a * x)", "A @ x")      # elementwise
    _refused(lambda x: np.sum(a.multiply(x)), b, "np.sum(a.multiply(x))", "A @ x")


def test_an_unconverged_iteration_raises():
    a, _ = _system()
    nonsym = sp.csr_array(np.triu(np.ones((NS, NS))) * 3 - np.eye(NS) * 2.9)
    with pytest.raises(tg.TraceError, match="cg did not converge"):
        tg.grad(lambda b: np.sum(tsl.cg(-nonsym, b, rtol=1e-14)[0]))(np.ones(NS))
    with pytest.raises(np.linalg.LinAlgError, match="cg did not converge"):
        REGISTRY["sparse_solve"].impl((-nonsym).data, np.ones(NS), indptr=nonsym.indptr,
                                      indices=nonsym.indices, shape=nonsym.shape,
                                      transpose=False, method="cg", tol=1e-14)
    with pytest.raises(tg.TraceError, match="rtol only"):
        tg.grad(lambda b: np.sum(tsl.cg(a, b, maxiter=3)[0]))(np.ones(NS))


# -- the IR: JSON round trip, and the loader's checks --------------------------------------
def test_json_round_trip_and_validation():
    a, dense = _system()
    b = np.linspace(0.5, 2.0, NS)
    g = tg.trace(tg.grad(lambda b: _loss(tsl.spsolve(a, b)) + _loss(a.T @ b)), b)
    text = g.to_json()
    np.testing.assert_allclose(tg.Graph.from_json(text)(b), g(b), rtol=1e-14)
    doc = json.loads(text)
    node = next(n for n in doc["nodes"] if n["op"] == "sparse_matmul")

    def tampered(change):
        d = json.loads(text)
        n = next(n for n in d["nodes"] if n["id"] == node["id"])
        change(n["params"])
        return json.dumps(d)

    def arr(values, dtype="int32"):
        import base64
        v = np.asarray(values, dtype=dtype)
        return {"array": {"dtype": dtype, "shape": [len(v)],
                          "data": base64.b64encode(v.tobytes()).decode()}}

    bad_col = tampered(lambda p: p.update(indices=arr([NS + 3] * len(a.indices))))
    bad_ptr = tampered(lambda p: p.update(indptr=arr([0] + [len(a.indices)] * (NS - 1) + [0])))
    bad_kind = tampered(lambda p: p.update(indices=arr(np.zeros(len(a.indices)), "float64")))
    for doc_text, why in ((bad_col, "column indices"), (bad_ptr, "indptr"),
                          (bad_kind, "integer array")):
        with pytest.raises(tg.TraceError, match=re.escape(why)):
            tg.Graph.from_json(doc_text)


def test_threads_tracing_sparse_products_and_solves_at_once():
    import threading
    a, dense = _system()
    b0 = np.linspace(0.5, 2.0, NS)
    jobs = [
        (lambda b: _loss(a @ b), lambda b: dense.T @ (np.cos(dense @ b)
                                                       * np.arange(1.0, NS + 1))),
        (lambda b: _loss(b @ a), lambda b: dense @ (np.cos(b @ dense) * np.arange(1.0, NS + 1))),
        (lambda b: np.sum(tsl.spsolve(a, b) ** 2),
         lambda b: np.linalg.solve(dense.T, 2 * np.linalg.solve(dense, b))),
        (lambda b: np.sum(tsl.spsolve(a.T, b) ** 2),
         lambda b: np.linalg.solve(dense, 2 * np.linalg.solve(dense.T, b))),
    ]
    errors = []

    def work(k):
        f, want = jobs[k % len(jobs)]
        try:
            for i in range(15):
                b = b0 + 0.01 * i + k
                np.testing.assert_allclose(tg.grad(f)(b), want(b), rtol=1e-10)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:2]


def test_vmap_over_traced_stored_values():
    a, dense = _sparse("csr", "matrix")
    x = _operand("matmul", 1)
    ts = np.stack([a.data, 2 * a.data, -a.data])
    out = tg.vmap(lambda t: tss.csr_matrix((t, a.indices, a.indptr), shape=a.shape) @ x)(ts)
    np.testing.assert_allclose(out, np.stack([dense @ x, 2 * dense @ x, -dense @ x]),
                               rtol=1e-13)


def test_products_when_numpys_constructors_are_not_wrapped(monkeypatch):
    """SciPy's conversion reaches Tracer.__array__ itself once np.asanyarray is NumPy's own
    during a trace: A @ x still reaches __rmatmul__, and the refusals still name the line."""
    import tracegrad.tracer.core as core
    monkeypatch.setattr(core, "wrap_constructors", lambda on: None, raising=False)
    for fmt in ("csr", "coo", "dok"):
        a, dense = _sparse(fmt, "array")
        x = _operand("matmul", 2)
        np.testing.assert_allclose(tg.grad(lambda x: _loss(a.dot(x)))(x),
                                   central_diff(lambda x: _loss(dense @ x), x), rtol=1e-7,
                                   atol=1e-8)
    b = np.ones(NS)
    _refused(lambda b: np.sum(spl.gmres(_system()[0], b)[0]), b,
             "np.sum(spl.gmres(_system()[0], b)[0])", "tracegrad.scipy.sparse.linalg.gmres")
    _refused(lambda x: np.sum(sp.csr_array(np.eye(NS)) * x), b,
             "np.sum(sp.csr_array(np.eye(NS)) * x)", "elementwise", "A @ x")


def test_second_order_in_the_stored_values_of_a_solve():
    a, dense = _system()
    b = np.linspace(1.0, 2.0, NS)

    def f(t):
        return _loss(tsl.spsolve(tss.csr_matrix((t, a.indices, a.indptr), shape=a.shape), b))

    stored = a.data.copy()
    h = tg.hessian(f)(stored)
    fd = np.stack([central_diff(lambda t: tg.grad(f)(t)[i], stored) for i in range(3)])
    np.testing.assert_allclose(h[:3], fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(tg.jit(tg.hessian(f), backend="jax")(stored), h, rtol=1e-9,
                               atol=1e-12)
