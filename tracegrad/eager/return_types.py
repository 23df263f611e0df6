"""``tg.return_types``: PyTorch's named result tuples (``torch.return_types.slogdet(sign=...,
logabsdet=...)``), for the functions of ``eager/linalg.py`` and ``eager/indexed_ops.py``.

Each is a ``namedtuple`` with torch's type name and field names, shown as torch shows it.
"""
from __future__ import annotations

from collections import namedtuple

__all__ = []


def _result(name, fields):
    base = namedtuple(name, fields)

    def __repr__(self):     # noqa: N807  (torch's layout: one field a line)
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"torch.return_types.{name}(\n{body})"

    cls = type(name, (base,), {"__slots__": (), "__repr__": __repr__,
                               "__module__": "tracegrad.return_types"})
    globals()[name] = cls
    __all__.append(name)
    return cls


linalg_slogdet = _result("linalg_slogdet", ["sign", "logabsdet"])
slogdet = _result("slogdet", ["sign", "logabsdet"])
linalg_inv_ex = _result("linalg_inv_ex", ["inverse", "info"])
linalg_solve_ex = _result("linalg_solve_ex", ["result", "info"])
linalg_cholesky_ex = _result("linalg_cholesky_ex", ["L", "info"])
linalg_qr = _result("linalg_qr", ["Q", "R"])
qr = _result("qr", ["Q", "R"])
linalg_eigh = _result("linalg_eigh", ["eigenvalues", "eigenvectors"])
linalg_eig = _result("linalg_eig", ["eigenvalues", "eigenvectors"])
linalg_svd = _result("linalg_svd", ["U", "S", "Vh"])
svd = _result("svd", ["U", "S", "V"])
linalg_lstsq = _result("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
linalg_lu_factor = _result("linalg_lu_factor", ["LU", "pivots"])
linalg_lu_factor_ex = _result("linalg_lu_factor_ex", ["LU", "pivots", "info"])
linalg_lu = _result("linalg_lu", ["P", "L", "U"])
kthvalue = _result("kthvalue", ["values", "indices"])
