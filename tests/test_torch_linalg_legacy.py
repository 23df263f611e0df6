"""torch's older linear-algebra names (torch.lu, lu_solve, lu_unpack, triangular_solve,
geqrf, orgqr, ormqr, nuclear_norm, frobenius_norm, chain_matmul), the addmv family, and the
functions PyTorch removed (their error), against torch 2.13."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(1)


def _data(*shape):
    return RNG.standard_normal(shape)


def _leaves(L, arrays):
    return [L.tensor(a, requires_grad=np.issubdtype(np.asarray(a).dtype, np.floating))
            if isinstance(a, np.ndarray) else a for a in arrays]


def _compare(program, arrays, rtol=1e-10):
    out = {}
    for L in (tg, torch):
        leaves = _leaves(L, arrays)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ys = program(L, *leaves)
        ys = ys if isinstance(ys, tuple) else (ys,)
        loss = None
        for k, y in enumerate(ys):
            if y.requires_grad:
                w = L.tensor(np.linspace(0.5, 1.5 + k, y.numel()).reshape(tuple(y.shape)),
                             dtype=y.dtype)
                term = (y * w).sum()
                loss = term if loss is None else loss + term
        if loss is not None:
            loss.backward()
        out[L] = ([y.detach().numpy() for y in ys],
                  [x.grad.numpy() if getattr(x, "grad", None) is not None else None
                   for x in leaves if hasattr(x, "grad")],
                  [y.grad_fn.name() if y.grad_fn is not None else None for y in ys])
    (v1, g1, n1), (v2, g2, n2) = out[tg], out[torch]
    assert len(v1) == len(v2)
    for a, b in zip(v1, v2):
        assert a.shape == b.shape and a.dtype == b.dtype, (a.dtype, a.shape, b.dtype, b.shape)
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)
    for a, b in zip(g1, g2):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-8)
    assert n1 == [n if n is None else n for n in n2], (n1, n2)


A = _data(4, 4) + 4 * np.eye(4)
B = _data(4, 2)
T = np.triu(_data(4, 4)) + 3 * np.eye(4)
QR_A = _data(5, 3)

CASES = {
    "lu": (lambda L, a: L.lu(a), (A,)),
    "lu get_infos": (lambda L, a: L.lu(a, get_infos=True), (A,)),
    "lu batched": (lambda L, a: L.lu(a), (np.stack([A, A.T]),)),
    "Tensor.lu": (lambda L, a: a.lu(), (A,)),
    "lu_solve": (lambda L, a, b: L.lu_solve(b, *L.lu(a)), (A, B)),
    "Tensor.lu_solve": (lambda L, a, b: b.lu_solve(*L.lu(a)), (A, B)),
    "lu_unpack": (lambda L, a: L.lu_unpack(*L.linalg.lu_factor(a)), (A,)),
    "lu_unpack wide": (lambda L, a: L.lu_unpack(*L.linalg.lu_factor(a)), (_data(3, 5),)),
    "lu_unpack tall": (lambda L, a: L.lu_unpack(*L.linalg.lu_factor(a)), (_data(5, 3),)),
    # (torch's own backward through its empty L and U fails: compared without gradients)
    "lu_unpack no data": (lambda L, a: L.lu_unpack(*L.linalg.lu_factor(a.detach()),
                                                   unpack_data=False), (A,)),
    "lu_unpack no pivots": (lambda L, a: L.lu_unpack(*L.linalg.lu_factor(a),
                                                     unpack_pivots=False), (A,)),
    "triangular_solve": (lambda L, b, t: L.triangular_solve(b, t), (B, T)),
    "triangular_solve lower transpose unit": (
        lambda L, b, t: L.triangular_solve(b, t.mT, upper=False, transpose=True,
                                           unitriangular=True), (B, T)),
    "Tensor.triangular_solve": (lambda L, b, t: b.triangular_solve(t), (B, T)),
    "geqrf values": (lambda L, a: L.geqrf(a.detach()), (QR_A,)),
    "orgqr": (lambda L, a: L.orgqr(*L.geqrf(a.detach())), (QR_A,)),
    "ormqr left": (lambda L, a, c: L.ormqr(*L.geqrf(a.detach()), c), (QR_A, _data(5, 2))),
    "ormqr right transpose": (lambda L, a, c: L.ormqr(*L.geqrf(a.detach()), c, False, True),
                              (QR_A, _data(2, 5))),
    "ormqr grad by reflectors": (
        lambda L, a, c: L.ormqr(a, L.geqrf(a.detach())[1], c), (QR_A, _data(5, 2))),
    "nuclear_norm": (lambda L, a: L.nuclear_norm(a), (A,)),
    "nuclear_norm keepdim": (lambda L, a: L.nuclear_norm(a, True), (A,)),
    "nuclear_norm dim": (lambda L, a: L.nuclear_norm(a, (0, 2)), (_data(3, 2, 4),)),
    "frobenius_norm": (lambda L, a: L.frobenius_norm(a, (0, 1)), (A,)),
    "frobenius_norm one dim": (lambda L, a: L.frobenius_norm(a, 1, True), (A,)),
    "chain_matmul": (lambda L, a, b, c: L.chain_matmul(a, b, c),
                     (_data(2, 3), _data(3, 4), _data(4, 2))),
    "chain_matmul one": (lambda L, a: L.chain_matmul(a), (_data(2, 3),)),
    "addmv": (lambda L, i, m, v: L.addmv(i, m, v, beta=0.5, alpha=2.0),
              (_data(3), _data(3, 4), _data(4))),
    "addmv beta 0 nan": (lambda L, m, v: L.addmv(L.full((3,), float("nan"), dtype=m.dtype), m, v,
                                                  beta=0), (_data(3, 4), _data(4))),
    "Tensor.addmv broadcast input": (lambda L, i, m, v: i.addmv(m, v), (_data(1), _data(3, 4),
                                                                         _data(4))),
    "addr": (lambda L, i, a, b: L.addr(i, a, b, alpha=3), (_data(3, 2), _data(3), _data(2))),
    "addbmm": (lambda L, i, a, b: L.addbmm(i, a, b, beta=2), (_data(3, 2), _data(4, 3, 5),
                                                              _data(4, 5, 2))),
    "baddbmm": (lambda L, i, a, b: L.baddbmm(i, a, b, alpha=0.5), (_data(4, 3, 2),
                                                                   _data(4, 3, 5),
                                                                   _data(4, 5, 2))),
    "baddbmm beta 0": (lambda L, i, a, b: L.baddbmm(i, a, b, beta=0),
                       (_data(4, 3, 2), _data(4, 3, 5), _data(4, 5, 2))),
    "addmv int": (lambda L: L.addmv(L.ones(3, dtype=L.int64), L.ones(3, 3, dtype=L.int64),
                                    L.arange(3), beta=2, alpha=3), ()),
    "addmv_": (lambda L, m, v: L.zeros(3, dtype=m.dtype).addmv_(m, v, alpha=2), (_data(3, 4),
                                                                                 _data(4))),
    "addmm_": (lambda L, a, b: L.ones(3, 2, dtype=a.dtype).addmm_(a, b, beta=0.5),
               (_data(3, 4), _data(4, 2))),
    "baddbmm_": (lambda L, a, b: L.ones(2, 3, 3, dtype=a.dtype).baddbmm_(a, b),
                 (_data(2, 3, 4), _data(2, 4, 3))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    program, arrays = CASES[name]
    _compare(program, arrays)


def test_geqrf_has_no_derivative_as_in_torch():
    for L in (tg, torch):
        a = L.tensor(QR_A, requires_grad=True)
        qr, tau = L.geqrf(a)
        with pytest.raises((NotImplementedError, RuntimeError)) as info:
            qr.sum().backward()
        assert "geqrf" in str(info.value)


@pytest.mark.parametrize("name", ["lstsq", "solve", "eig", "symeig", "matrix_rank"])
def test_removed_functions_raise_torchs_error(name):
    messages = []
    for L in (tg, torch):
        a = L.ones(3, 3)
        with pytest.raises(RuntimeError) as info:
            fn = getattr(L, name)
            fn(a, a) if name in ("lstsq", "solve") else fn(a)
        messages.append(str(info.value).split("\n")[0])
    assert messages[0] == messages[1]


def test_deprecation_warnings_as_torch():
    # (torch warns once per process, so its own warnings are not looked at here)
    for name, call in {"lu": lambda L, a: L.lu(a), "chain_matmul": lambda L, a: L.chain_matmul(a),
                       "triangular_solve": lambda L, a: L.triangular_solve(a, a),
                       "lu_solve": lambda L, a: L.lu_solve(a, *L.linalg.lu_factor(a))}.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call(tg, tg.eye(3))
        assert any(f"torch.{name} is deprecated" in str(w.message) for w in caught), name


ERRORS = {
    "addmv size": lambda L: L.addmv(L.ones(3), L.ones(3, 3), L.ones(2)),
    "addmv dims": lambda L: L.addmv(L.ones(3), L.ones(3), L.ones(3)),
    "addr dims": lambda L: L.addr(L.ones(3, 3), L.ones(3, 3), L.ones(3)),
    "addbmm sizes": lambda L: L.addbmm(L.ones(3, 3), L.ones(2, 3, 4), L.ones(2, 3, 3)),
    "chain_matmul empty": lambda L: L.chain_matmul(),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_have_torchs_type_and_message(name):
    got = []
    for L in (tg, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(Exception) as info:
                ERRORS[name](L)
        got.append((type(info.value), str(info.value)))
    assert got[0][0] is got[1][0]
    assert got[0][1].startswith(got[1][1])     # (tracegrad adds the user's line)
