"""torch.complex and the complex views under autograd, against torch 2.13."""
from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")


def _both(program):
    return [program(L) for L in (tg, torch)]


def _np(t):
    return t.detach().numpy() if t is not None else None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_complex_values_dtypes_and_gradients(dtype):
    def program(L):
        a = L.tensor(np.array([[1.0, np.inf, -0.0]]), dtype=getattr(L, dtype), requires_grad=True)
        b = L.tensor(np.array([[2.0], [-0.0]]), dtype=getattr(L, dtype), requires_grad=True)
        z = L.complex(a, b)           # broadcast (2, 3)
        loss = (z.real * 2 + z.imag * 3 + z.abs().nan_to_num(posinf=0.0)).sum()
        loss.backward()
        return z, a.grad, b.grad, z.grad_fn.name()
    (z1, ga1, gb1, n1), (z2, ga2, gb2, n2) = _both(program)
    assert _np(z1).dtype == _np(z2).dtype and n1 == n2
    np.testing.assert_array_equal(_np(z1), _np(z2))     # inf and -0.0 parts kept
    np.testing.assert_allclose(_np(ga1), _np(ga2), rtol=1e-6)
    np.testing.assert_allclose(_np(gb1), _np(gb2), rtol=1e-6)


def test_views_as_real_and_complex_record_gradients():
    """They raised 'ndarray.strides is not supported on traced values' on a tensor that
    requires grad."""
    def program(L):
        x = L.tensor(np.array([1.0, 2.0, 3.0, 4.0]), dtype=L.float64, requires_grad=True)
        z = L.view_as_complex(x.view(2, 2))
        r = L.view_as_real(z * L.tensor([1j, 2.0 - 1j], dtype=L.complex128))
        (r * L.tensor([1.0, 2.0, 3.0, 4.0], dtype=L.float64).view(2, 2)).sum().backward()
        return r, x.grad, z.grad_fn.name(), r.grad_fn.name()
    (r1, g1, *n1), (r2, g2, *n2) = _both(program)
    np.testing.assert_array_equal(_np(r1), _np(r2))
    np.testing.assert_array_equal(_np(g1), _np(g2))
    assert n1 == n2


def test_view_as_complex_shares_memory_when_recorded():
    x = tg.tensor(np.array([1.0, 2.0, 3.0, 4.0]), requires_grad=True)
    y = x * 1
    z = tg.view_as_complex(y.view(2, 2))
    y.data[0] = 5.0
    assert z.detach().numpy()[0] == 5.0 + 2.0j


ERRORS = {
    "mixed dtypes": lambda L: L.complex(L.ones(2), L.ones(2, dtype=L.float64)),
    "integers": lambda L: L.complex(L.ones(2, dtype=L.int64), L.ones(2, dtype=L.int64)),
    "not a tensor": lambda L: L.complex(1.0, L.ones(2)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_complex_errors_as_torch(name):
    got = []
    for L in (tg, torch):
        with pytest.raises(Exception) as info:
            ERRORS[name](L)
        got.append((type(info.value), str(info.value)))
    assert got[0][0] is got[1][0]
    assert got[0][1].startswith(got[1][1])
