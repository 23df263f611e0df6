"""``sparse_matmul`` and ``sparse_solve`` (``tracegrad/ir/prims/sparse.py``): a CSR
structure in the params, the stored values and the dense operand differentiated."""
import numpy as np

from primitive_cases import Case, add, uniform


def _csr(m, n, seed, diagonal=0.0):
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=(m, n)) * (rng.random((m, n)) < 0.5)
    if diagonal:
        dense = dense + diagonal * np.eye(m, n)
    dense[0, -1] = 0.7
    nz = dense != 0
    indptr = np.concatenate([[0], np.cumsum(nz.sum(axis=1))]).astype(np.int32)
    indices = np.nonzero(nz)[1].astype(np.int32)
    return dense[nz], dict(indptr=indptr, indices=indices, shape=(m, n))


for _x, _t, _seed in [((3,), False, 1), ((4, 2), True, 2), ((3, 2), False, 3)]:
    _data, _params = _csr(4, 3, _seed)
    add(Case("sparse_matmul", (_data, uniform(_x)), dict(_params, transpose=_t),
             second=_seed == 1))
_data, _params = _csr(4, 3, 4)
add(Case("sparse_matmul", (_data.astype(np.float32), uniform((3,)).astype(np.float32)),
         dict(_params, transpose=False), tag="f32", derivs=False))

for _b, _t, _method, _seed in [((4,), False, "direct", 5), ((4, 2), True, "direct", 6),
                               ((3,), True, "direct", 7)]:
    _data, _params = _csr(_b[0], _b[0], _seed, diagonal=4.0)
    add(Case("sparse_solve", (_data, uniform(_b)),
             dict(_params, transpose=_t, method=_method, tol=1e-13), second=_seed == 5))
