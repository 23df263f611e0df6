"""Sparse matrices (``scipy.sparse``) as primitives: the product of a sparse matrix with a
dense vector or matrix, and the solve of a sparse linear system.

A sparse matrix is its CSR structure, held in the params (``indptr``, ``indices``: integer
arrays, ``shape``: the pair of sizes), and its stored values ``data``, the first operand
(a constant node for a constant ``scipy.sparse`` matrix, a traced value for a matrix built
from traced values). ``transpose=True`` applies the transposed matrix. Any format is
brought to this form by the tracer (``tracer/sparse.py``).

- ``sparse_matmul(data, x)``: ``A @ x`` (``x`` of 1 or 2 dimensions). It is bilinear: the
  VJP to ``x`` is the transposed product, the VJP to ``data`` the products
  ``g[row_k] · x[col_k]`` read at the stored positions, and the JVP is the product again.
- ``sparse_solve(data, b)``: ``x`` with ``A x = b``, by SciPy's direct solver
  (``method="direct"``: ``spsolve``) or its conjugate-gradient or GMRES iteration
  (``method="cg"``/``"gmres"``, relative tolerance ``tol``; an iteration that does not
  converge raises ``LinAlgError`` rather than give an unconverged value). Its derivative is
  the adjoint one: the VJP solves once more with the transposed matrix, ``λ = A⁻ᵀ g``,
  giving ``λ`` to ``b`` and ``-λ[row_k] · x[col_k]`` to ``data``; the JVP solves
  ``A ẋ = ḃ - Ȧ x``. No iteration is unrolled, and the rules apply the primitives again,
  so they differentiate to any order.

On the JAX backend the product is a ``segment_sum`` over the stored entries, and the solve a
dense solve of the matrix scattered from them.
"""

import numpy as np

from ..lru import LRU
from ..registry import apply, register
from ..schema import BOOL, CHOICE, INT_ARRAY, PAIR, TOLERANCE, Spec  # the loader's parameter kinds
from ..schema import _csr as _csr_structure
from .scipy_special import special


def _sp():
    special()   # the same error when SciPy is missing
    import scipy.sparse
    return scipy.sparse


def rows_of(indptr):
    """The row of each stored entry of a CSR structure."""
    indptr = np.asarray(indptr)
    return np.repeat(np.arange(len(indptr) - 1, dtype=indptr.dtype), np.diff(indptr))


def _csr(data, indptr, indices, shape):
    return _sp().csr_array((np.asarray(data), indices, indptr), shape=shape, copy=False)


def _result_dtype(*dtypes):
    return np.result_type(*dtypes)


def _pair(transpose, indptr, indices):
    """(positions read from the cotangent, positions read from the other factor) of each
    stored entry: (rows, cols) for ``A``, (cols, rows) for ``Aᵀ``."""
    rows = rows_of(indptr)
    return (indices, rows) if transpose else (rows, indices)


def _entry_products(u, v, transpose, indptr, indices):
    """``u[i_k] · v[j_k]`` for each stored entry ``k`` at ``(i_k, j_k)`` of ``A`` (of ``Aᵀ``
    with ``transpose``): the derivative of ``uᵀ A v`` by the stored values."""
    a, b = _pair(transpose, indptr, indices)
    prod = u[a] * v[b]
    return np.sum(prod, axis=-1) if np.ndim(prod) > 1 else prod


def _abstract_matmul(data, x, *, indptr, indices, shape, transpose):
    m, n = (shape[1], shape[0]) if transpose else tuple(shape)
    if x.ndim not in (1, 2) or x.shape[0] != n:
        raise ValueError(f"sparse matmul: a {m}x{n} matrix times an operand of shape "
                         f"{tuple(x.shape)}")
    return (m,) + tuple(x.shape[1:]), _result_dtype(data.dtype, x.dtype)


def _matmul_impl(data, x, *, indptr, indices, shape, transpose):
    x = np.asarray(x)
    a = _csr(data, indptr, indices, shape)
    out = (a.T if transpose else a) @ x
    return np.asarray(out, dtype=_result_dtype(np.asarray(data).dtype, x.dtype))


def _matmul_vjp(g, out, data, x, *, indptr, indices, shape, transpose):
    params = dict(indptr=indptr, indices=indices, shape=shape, transpose=not transpose)
    return (_entry_products(g, x, transpose, indptr, indices),
            apply("sparse_matmul", data, g, **params))


def _matmul_jvp(t, out, data, x, **params):
    parts = []
    if t[0] is not None:
        parts.append(apply("sparse_matmul", t[0], x, **params))
    if t[1] is not None:
        parts.append(apply("sparse_matmul", data, t[1], **params))
    return parts[0] if len(parts) == 1 else parts[0] + parts[1]


def _columns_batched(name, args, batched, extra=()):
    """A batch rule for an operand that is a vector or a matrix of columns: the batch
    becomes more columns of one application."""
    if batched[0] or any(batched[2:]):
        return NotImplemented       # batched stored values: evaluated row by row
    x = args[1]                     # (B, n) or (B, n, k)
    cols = np.moveaxis(x, 0, 1)     # (n, B) or (n, B, k)
    k = cols.shape[1:]
    out = name(args[0], np.reshape(cols, (cols.shape[0], -1)))
    return np.moveaxis(np.reshape(out, (out.shape[0],) + k), 1, 0)


def _matmul_batch(size, args, batched, out_shape, **params):
    return _columns_batched(lambda d, x: apply("sparse_matmul", d, x, **params), args, batched)


def _jax_rows(indptr):
    import jax.numpy as jnp
    return jnp.asarray(rows_of(indptr))


def _matmul_jax(data, x, *, indptr, indices, shape, transpose):
    import jax
    import jax.numpy as jnp
    dtype = _result_dtype(data.dtype, x.dtype)
    data, x = data.astype(dtype), x.astype(dtype)
    rows, cols = _jax_rows(indptr), jnp.asarray(indices)
    src, dst, size = (rows, cols, shape[1]) if transpose else (cols, rows, shape[0])
    part = x[src] * (data[:, None] if x.ndim == 2 else data)
    return jax.ops.segment_sum(part, dst, num_segments=size)


def _matmul_cost(out_shape, arg_shapes, params):
    k = out_shape[1] if len(out_shape) > 1 else 1
    return 2 * len(params["indices"]) * k


register(
    "sparse_matmul", _matmul_impl, abstract=_abstract_matmul, vjp=_matmul_vjp,
    jvp=_matmul_jvp, jax=_matmul_jax, family="sparse",
    doc="scipy.sparse: A @ x for a sparse A (CSR structure in the params, stored values "
        "the first operand)",
    batch=_matmul_batch,
    cost=_matmul_cost,
    torch_name="SparseMmBackward0",
    schema=Spec({"indptr": INT_ARRAY, "indices": INT_ARRAY, "shape": PAIR(0),
                           "transpose": BOOL}, 2, _csr_structure),
)


# -- solves -----------------------------------------------------------------------------
def _abstract_solve(data, b, *, indptr, indices, shape, transpose, method, tol):
    n = shape[0]
    if shape[0] != shape[1]:
        raise ValueError(f"sparse solve: the matrix must be square, got {tuple(shape)}")
    if b.ndim not in (1, 2) or b.shape[0] != n:
        raise ValueError(f"sparse solve: a {n}x{n} matrix and a right-hand side of shape "
                         f"{tuple(b.shape)}")
    return tuple(b.shape), _solve_dtype(data.dtype, b.dtype)


def _solve_dtype(*dtypes):
    dtype = np.result_type(*dtypes)
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


def _iterate(solver, a, b, tol, name):
    linalg = _sp().linalg
    x, info = getattr(linalg, solver)(a, b, rtol=tol, atol=0.0)
    if info != 0:
        raise np.linalg.LinAlgError(
            f"scipy.sparse.linalg.{name} did not converge (info={info}); tracegrad does "
            f"not differentiate an unconverged iterate: raise maxiter, loosen rtol, or use "
            f"spsolve")
    return x


# SuperLU factorisations of the matrices solved last: the adjoint solve of a gradient (and
# every call of a compiled function with a constant matrix) reuses the forward one's, as
# ``splu(A).solve(b, trans="T")``. Keyed by the matrix's exact bytes; a few entries.
_FACTORS = LRU(8)


def _factor(a, data, indptr, indices, shape):
    key = (np.asarray(data).tobytes(), np.asarray(indptr).tobytes(),
           np.asarray(indices).tobytes(), tuple(shape), np.asarray(data).dtype.str)
    lu = _FACTORS.get(key)
    if lu is not None:
        return lu
    try:
        lu = _sp().linalg.splu(a.tocsc())
    except RuntimeError as e:       # SuperLU: "Factor is exactly singular"
        raise np.linalg.LinAlgError(f"sparse solve: {e}") from None
    _FACTORS.put(key, lu)
    return lu


def _solve_impl(data, b, *, indptr, indices, shape, transpose, method, tol):
    sp = _sp()
    b = np.asarray(b)
    data = np.asarray(data)
    dtype = _abstract_solve(data, b, indptr=indptr, indices=indices, shape=shape,
                            transpose=transpose, method=method, tol=tol)[1]
    data = data.astype(dtype, copy=False)
    # copies: sum_duplicates works in place
    a = sp.csr_array((data.copy(), np.array(indices), np.array(indptr)), shape=shape)
    a.sum_duplicates()
    if b.size == 0:
        return np.zeros(b.shape, dtype)
    if method == "direct":
        lu = _factor(a, data, indptr, indices, shape)
        x = lu.solve(np.ascontiguousarray(b, dtype=dtype), trans="T" if transpose else "N")
        return np.reshape(np.asarray(x, dtype=dtype), b.shape)
    a = (a.T if transpose else a).tocsc()
    cols = b.reshape(b.shape[0], -1).astype(dtype)
    out = np.stack([_iterate(method, a, cols[:, j], tol, method)
                    for j in range(cols.shape[1])], axis=1)
    return np.reshape(out, b.shape).astype(dtype, copy=False)


def _solve_vjp(g, out, data, b, *, transpose, **params):
    lam = apply("sparse_solve", data, g, transpose=not transpose, **params)
    return (-_entry_products(lam, out, transpose, params["indptr"], params["indices"]), lam)


def _solve_jvp(t, out, data, b, *, transpose, **params):
    rhs = t[1]
    if t[0] is not None:
        m = {k: params[k] for k in ("indptr", "indices", "shape")}
        moved = apply("sparse_matmul", t[0], out, transpose=transpose, **m)
        rhs = -moved if rhs is None else rhs - moved
    return apply("sparse_solve", data, rhs, transpose=transpose, **params)


def _solve_batch(size, args, batched, out_shape, **params):
    return _columns_batched(lambda d, x: apply("sparse_solve", d, x, **params), args, batched)


def _solve_jax(data, b, *, indptr, indices, shape, transpose, method, tol):
    import jax.numpy as jnp
    dtype = _solve_dtype(data.dtype, b.dtype)
    rows, cols = _jax_rows(indptr), jnp.asarray(indices)
    dense = jnp.zeros(tuple(shape), dtype).at[rows, cols].add(data.astype(dtype))
    if transpose:
        dense = dense.T
    b = b.astype(dtype)
    out = jnp.linalg.solve(dense, b if b.ndim == 2 else b[:, None])
    return out if b.ndim == 2 else out[:, 0]


def _solve_cost(out_shape, arg_shapes, params):
    n = params["shape"][0]
    k = out_shape[1] if len(out_shape) > 1 else 1
    return int(2 * len(params["indices"]) * k * max(1.0, n ** 0.5))


register(
    "sparse_solve", _solve_impl, abstract=_abstract_solve, vjp=_solve_vjp, jvp=_solve_jvp,
    jax=_solve_jax, family="sparse",
    doc="scipy.sparse.linalg: x with A x = b for a sparse A (spsolve, splu, factorized, "
        "cg, gmres), differentiated by the adjoint solve",
    batch=_solve_batch,
    zeros=None, cost=_solve_cost,
    schema=Spec({"indptr": INT_ARRAY, "indices": INT_ARRAY, "shape": PAIR(0),
                          "transpose": BOOL, "method": CHOICE("direct", "cg", "gmres"),
                          "tol": TOLERANCE}, 2, _csr_structure),
)
