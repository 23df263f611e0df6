"""Every ``np.linalg`` function the tracer supports, against NumPy itself.

The cases are generated: for each name of the dispatch table (``np_base.FUNCTIONS``,
the ``np.linalg.*`` entries; a name without an entry in ``SPECS`` fails
``test_every_linalg_name_has_cases``), each of its call forms (orders, ``UPLO``,
``full_matrices``, ...) x input kinds (square, batched, rectangular where allowed,
0-size where NumPy allows, *non-symmetric* for the functions that read one triangle)
x dtypes (float32, float64, complex64, complex128, int64) x the three ways to run a
traced function (``tg.trace(f, *args)(*args)``, ``tg.jit`` on the NumPy backend,
``tg.jit(backend="jax")``). Each run must give NumPy's values (to a tolerance for
the dtype; eigenvectors and singular vectors with NumPy's own signs) and NumPy's
dtypes. For float64 (and complex128 where the rules take complex values) the gradient
of a weighted sum of the outputs is checked against central differences of NumPy's
own function.

The one documented difference: ``eig`` / ``eigvals`` always return complex arrays
(``np_linalg.py``): NumPy's real result is compared as complex.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest
from conftest import bounded, fd_vjp

import tracegrad as tg
from tracegrad.tracer.np_base import FUNCTIONS

LINALG_NAMES = sorted(f.__name__ for f in FUNCTIONS
                      if getattr(f, "__module__", "").startswith("numpy.linalg"))
DTYPES = (np.float32, np.float64, np.complex64, np.complex128, np.int64)
MODES = ("trace", "jit", "jax")


# -- inputs --------------------------------------------------------------------------------------
def _rng(*key):
    return np.random.default_rng(zlib.crc32(repr(key).encode()))   # hash() is salted


def _cast(x, dtype):
    """``x`` (complex128) as ``dtype``: integers are rounded, reals drop the imaginary part."""
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return np.round(3 * x.real).astype(dtype)
    return (x if dtype.kind == "c" else x.real).astype(dtype)


def general(shape, dtype, seed=0):
    """Well-conditioned: noise plus a multiple of the identity in the leading block."""
    r = _rng("general", shape, seed)
    x = r.uniform(-1, 1, shape) + 1j * r.uniform(-1, 1, shape)
    k = min(shape[-2:])
    x[..., :k, :k] += 2.0 * np.eye(k)
    return _cast(x, dtype)


def vector(shape, dtype, seed=0):
    r = _rng("vector", shape, seed)
    x = r.uniform(-2, 2, shape) + 1j * r.uniform(-2, 2, shape)
    if np.dtype(dtype).kind == "i":
        x = x + 0.4 * np.sign(x.real)     # no zero after rounding: |x| has no kink there
    return _cast(x, dtype)


def hermitian_lopsided(shape, dtype, seed=0, pd=False):
    """The triangle NumPy reads holds a Hermitian matrix with spread eigenvalues
    (positive for ``pd``); the other triangle holds noise, so symmetrising changes the
    answer. ``upper``: which triangle is the real one is chosen by the caller."""
    r = _rng("herm", shape, seed)
    n = shape[-1]
    z = r.standard_normal(shape) + 1j * r.standard_normal(shape)
    q, _ = np.linalg.qr(z if np.dtype(dtype).kind == "c" else z.real)
    # no pair l, -l: there LAPACK's eigenvector signs jump (ir/prims/spectral.py)
    lam = np.linspace(0.5, 3.0, n) if pd else np.linspace(-1.7, 2.3, n)
    a = (q * lam) @ np.conj(np.swapaxes(q, -1, -2))
    noise = r.uniform(-1, 1, shape) + 1j * r.uniform(-1, 1, shape)
    # noise above the diagonal and in the imaginary part of the diagonal: LAPACK reads neither
    a = np.tril(a) + np.triu(noise, 1) + 1j * noise.imag * np.eye(n)
    if np.dtype(dtype).kind == "i":
        a = np.tril(np.round(3 * a.real)) + np.triu(noise.real, 1)
        a = a + (n + 2) * np.eye(n) if pd else a
        return np.round(3 * a).astype(dtype) if not pd else np.round(a).astype(dtype)
    return _cast(a, dtype)


def _upper(a):
    return np.swapaxes(a, -1, -2).copy()   # the real triangle above the diagonal


# -- the call forms of each name ------------------------------------------------------------------
# name -> [(label, function, [(input kind, argument makers)])]; an argument maker takes the dtype
def _sq(*shape):
    return lambda dt: general(shape, dt)


def _herm(*shape, pd=False, upper=False):
    def make(dt):
        a = hermitian_lopsided(shape, dt, pd=pd)
        return _upper(a) if upper else a
    return make


def _vec(*shape):
    return lambda dt: vector(shape, dt)


def _view(make, how):
    """The same values seen through a non-contiguous view: ``transposed`` (F-ordered),
    ``reversed`` (a negative stride) or ``strided`` (every other element)."""
    def view(dt):
        x = make(dt)
        if how == "transposed":
            return np.swapaxes(np.ascontiguousarray(np.swapaxes(x, -1, -2)), -1, -2)
        if how == "reversed":
            return np.ascontiguousarray(x[..., ::-1, :])[..., ::-1, :]
        wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), x.dtype)
        wide[..., ::2] = x
        return wide[..., ::2]
    return view


SQUARE = [("square", (_sq(3, 3),)), ("batched", (_sq(2, 3, 3),)), ("empty", (_sq(0, 0),)),
          ("empty-batch", (_sq(0, 2, 2),)), ("transposed", (_view(_sq(3, 3), "transposed"),))]
LOWER = [("lopsided", (_herm(3, 3),)), ("lopsided-batched", (_herm(2, 3, 3),)),
         ("empty-batch", (_herm(0, 2, 2),)), ("lopsided-transposed",
                                             (_view(_herm(3, 3), "transposed"),))]
UPPER = [("lopsided-upper", (_herm(3, 3, upper=True),))]
RECT = [("square", (_sq(3, 3),)), ("tall", (_sq(4, 2),)), ("wide", (_sq(2, 4),)),
        ("batched", (_sq(2, 4, 3),)), ("tall-reversed", (_view(_sq(4, 2), "reversed"),)),
        ("wide-strided", (_view(_sq(2, 4), "strided"),))]


def _vector_ords():
    return [None, 1, 2, np.inf, -np.inf, 0, 3, 0.5, -1]


def _matrix_ords():
    return [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]


SPECS = {
    "inv": [("", np.linalg.inv, SQUARE)],
    "det": [("", np.linalg.det, SQUARE)],
    "slogdet": [("", lambda a: tuple(np.linalg.slogdet(a)), SQUARE)],
    "solve": [("", np.linalg.solve, [("vector-b", (_sq(3, 3), _vec(3))),
                                     ("views", (_view(_sq(3, 3), "reversed"),
                                                _view(_sq(3, 2), "strided"))),
                                     ("matrix-b", (_sq(3, 3), _sq(3, 2))),
                                     ("batched", (_sq(2, 3, 3), _sq(2, 3, 2)))])],
    "cholesky": [("", np.linalg.cholesky, [("lopsided", (_herm(3, 3, pd=True),)),
                                           ("lopsided-batched", (_herm(2, 3, 3, pd=True),))]),
                 ("upper", lambda a: np.linalg.cholesky(a, upper=True),
                  [("lopsided-upper", (_herm(3, 3, pd=True, upper=True),))])],
    "eigvalsh": [("", np.linalg.eigvalsh, LOWER),
                 ("U", lambda a: np.linalg.eigvalsh(a, UPLO="U"), UPPER)],
    "eigh": [("", lambda a: tuple(np.linalg.eigh(a)), LOWER),
             ("U", lambda a: tuple(np.linalg.eigh(a, UPLO="U")), UPPER)],
    "svd": [("full", lambda a: tuple(np.linalg.svd(a)), RECT),
            ("reduced", lambda a: tuple(np.linalg.svd(a, full_matrices=False)), RECT),
            ("values", lambda a: np.linalg.svd(a, compute_uv=False), RECT),
            ("hermitian", lambda a: tuple(np.linalg.svd(a, hermitian=True)), LOWER[:2]),
            ("hermitian-values", lambda a: np.linalg.svd(a, compute_uv=False, hermitian=True),
             LOWER[:1])],
    "pinv": [("", np.linalg.pinv, RECT),
             ("rtol=None", lambda a: np.linalg.pinv(a, rtol=None), RECT[:3])],
    "lstsq": [("", lambda a, b: tuple(np.linalg.lstsq(a, b)),
               [("tall-vector", (_sq(4, 3), _vec(4))), ("tall-matrix", (_sq(4, 3), _sq(4, 2))),
                ("wide", (_sq(2, 4), _vec(2)))])],
    "qr": [("", lambda a: tuple(np.linalg.qr(a)), RECT),
           ("r", lambda a: np.linalg.qr(a, mode="r"), RECT)],
    "matrix_power": [(f"n={n}", (lambda n: lambda a: np.linalg.matrix_power(a, n))(n),
                      SQUARE[:2]) for n in (3, -2, 0)],
    "eig": [("", lambda a: tuple(np.linalg.eig(a)), SQUARE)],
    "eigvals": [("", np.linalg.eigvals, SQUARE)],
    "norm": (
        [(f"vector-ord={o}", (lambda o: lambda x: np.linalg.norm(x, o))(o),
          [("vector", (_vec(5),))]) for o in _vector_ords()]
        + [(f"matrix-ord={o}", (lambda o: lambda x: np.linalg.norm(x, o))(o),
            [("square", (_sq(3, 3),)), ("rect", (_sq(4, 2),))]) for o in _matrix_ords()]
        + [("flat", np.linalg.norm, [("3d", (_sq(2, 3, 2),)), ("empty", (_vec(0),))]),
           ("axis=1-keepdims", lambda x: np.linalg.norm(x, axis=1, keepdims=True),
            [("3d", (_sq(2, 3, 2),))]),
           ("axes-ord=2", lambda x: np.linalg.norm(x, 2, axis=(2, 0)), [("3d", (_sq(2, 3, 2),))]),
           ("axes-nuc-keepdims", lambda x: np.linalg.norm(x, "nuc", axis=(1, 2), keepdims=True),
            [("3d", (_sq(2, 3, 2),))])]),
    # the array-API and more names (issue 22)
    "cond": [("", np.linalg.cond, [("square", (_sq(3, 3),)), ("batched", (_sq(2, 3, 3),))]),
             ("fro", lambda a: np.linalg.cond(a, "fro"), [("square", (_sq(3, 3),))])],
    "matrix_rank": [("", np.linalg.matrix_rank, RECT[:4])],
    "svdvals": [("", np.linalg.svdvals, RECT)],
    "matrix_norm": [("", np.linalg.matrix_norm, RECT),
                    ("nuc", lambda a: np.linalg.matrix_norm(a, ord="nuc"), RECT[:2])],
    "vector_norm": [("", np.linalg.vector_norm, [("vector", (_vec(5),)), ("3d", (_sq(2, 3, 2),))]),
                    ("ord=1-axis", lambda x: np.linalg.vector_norm(x, ord=1, axis=(0, 2)),
                     [("3d", (_sq(2, 3, 2),))])],
    "multi_dot": [("", lambda a, b, c: np.linalg.multi_dot([a, b, c]),
                   [("chain", (_sq(3, 4), _sq(4, 2), _sq(2, 5)))])],
    "tensorsolve": [("", np.linalg.tensorsolve, [("2x3", (_sq(6, 2, 3), _vec(6)))])],
    "tensorinv": [("", lambda a: np.linalg.tensorinv(a, ind=2), [("6", (_sq(2, 3, 6),))])],
    "cross": [("", np.linalg.cross, [("3", (_vec(3), _vec(3))), ("batched", (_sq(4, 3), _sq(4, 3)))])],
    "diagonal": [("", np.linalg.diagonal, RECT)],
    "matmul": [("", np.linalg.matmul, [("mm", (_sq(3, 4), _sq(4, 2)))])],
    "matrix_transpose": [("", np.linalg.matrix_transpose, RECT)],
    "outer": [("", np.linalg.outer, [("vectors", (_vec(3), _vec(4)))])],
    "tensordot": [("", np.linalg.tensordot, [("axes=2", (_sq(2, 3, 4), _sq(3, 4, 2)))])],
    "trace": [("", np.linalg.trace, RECT)],
    "vecdot": [("", np.linalg.vecdot, [("rows", (_sq(4, 3), _sq(4, 3)))])],
}

# eig / eigvals: NumPy's dtype too (real results for a real spectrum); their derivatives,
# eigenvector phases included, have tests of their own (test_eig.py)
EIG = {"eig", "eigvals"}


class Case:
    def __init__(self, name, label, fn, kind, makers, dtype):
        self.name, self.label, self.fn, self.kind, self.dtype = name, label, fn, kind, dtype
        self.args = tuple(m(dtype) for m in makers)

    @property
    def id(self):
        return "-".join(p for p in (self.name, self.label, self.kind, np.dtype(self.dtype).name)
                        if p)


def _cases():
    out = []
    for name in LINALG_NAMES:
        for label, fn, forms in SPECS.get(name, ()):
            for kind, makers in forms:
                for dt in DTYPES:
                    out.append(Case(name, label, fn, kind, makers, dt))
    return out


CASES = _cases()


def test_every_linalg_name_has_cases():
    missing = [n for n in LINALG_NAMES if n not in SPECS]
    assert not missing, f"np.linalg names without fidelity cases: {missing}"
    assert len(LINALG_NAMES) >= 15


# -- comparing -------------------------------------------------------------------------------------
def _leaves(x):
    return list(x) if isinstance(x, tuple) else [x]


def _rtol(dtype):
    return 2e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-9


def _numpy(case):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return case.fn(*case.args)


def _compare(got, want, case, mode):
    got, want = _leaves(got), _leaves(want)
    assert len(got) == len(want), f"{case.id} {mode}: {len(got)} results, NumPy {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        what = f"{case.id} {mode} result {k}"
        assert g.shape == w.shape, f"{what}: shape {g.shape}, NumPy {w.shape}"
        assert g.dtype == w.dtype, f"{what}: dtype {g.dtype}, NumPy {w.dtype}"
        if w.dtype.kind not in "fc":
            np.testing.assert_array_equal(g, w, err_msg=what)
            continue
        scale = float(np.max(np.abs(w), initial=0.0)) or 1.0
        rtol = _rtol(w.dtype) if w.dtype.kind in "fc" else 0
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale, err_msg=what)


def _run(case, mode):
    if mode == "trace":
        return tg.trace(case.fn, *case.args)(*case.args)
    return tg.jit(case.fn, backend="numpy" if mode == "jit" else "jax")(*case.args)


VALUE_CASES = [(c, m) for c in CASES for m in MODES]


@pytest.mark.parametrize("case,mode", bounded(VALUE_CASES, 600),
                         ids=lambda x: x if isinstance(x, str) else x.id)
def test_values_and_dtypes_are_numpys(case, mode):
    try:
        want = _numpy(case)
    except Exception as e:   # noqa: BLE001 - where NumPy raises, tracegrad raises
        with pytest.raises((type(e), tg.TraceError)):
            _run(case, mode)
        return
    _compare(_run(case, mode), want, case, mode)


# -- derivatives against finite differences of NumPy's own function --------------------------------
def _differentiable(case):
    if np.dtype(case.dtype) not in (np.float64, np.complex128) or case.kind.startswith("empty"):
        return False
    if case.name in EIG:   # test_eig.py: the eigenvector phases need their own test
        return False
    return True


DERIV_CASES = [c for c in CASES if _differentiable(c)]


def _weights(out):
    """A weight per element of each floating output (complex for complex outputs): a wrong
    entry of a gradient cannot hide behind a symmetric sum."""
    r = np.random.default_rng(7)
    weights = []
    for o in _leaves(out):
        kind = np.asarray(o).dtype.kind
        w = r.uniform(0.5, 1.5, np.shape(o)) if kind in "fc" else None
        if kind == "c":
            w = w + 1j * r.uniform(-1.0, 1.0, np.shape(o))
        weights.append(w)
    return weights


def _scalar(fn, weights):
    """The real part of the weighted sum of ``fn``'s floating outputs."""
    def f(*args):
        total = 0.0
        for o, w in zip(_leaves(fn(*args)), weights):
            if w is not None:
                total = total + np.real(np.sum(o * w))
        return total
    return f


# names whose derivative rules do not take complex values yet: a TraceError naming
# "complex", never a number
COMPLEX_REFUSED = "no derivative rule for complex values"


def _refused(case):
    """The TraceError message a case's gradient must raise, or None."""
    if case.label == "full" and case.args[0].shape[-1] != case.args[0].shape[-2]:
        return "pass full_matrices=False"
    return None


@pytest.mark.parametrize("case", bounded(DERIV_CASES, 120), ids=lambda c: c.id)
def test_gradient_matches_differences_of_numpy(case):
    out = _numpy(case)
    weights = _weights(out)
    f = _scalar(case.fn, weights)
    argnums = tuple(range(len(case.args)))
    try:
        got = tg.grad(f, argnums=argnums)(*case.args)
    except tg.TraceError as e:
        assert any(m in str(e) for m in (_refused(case), COMPLEX_REFUSED) if m), str(e)
        assert "test_linalg_fidelity.py:" in str(e), str(e)      # the user's line
        assert _refused(case) or np.dtype(case.dtype).kind == "c", str(e)
        return
    assert _refused(case) is None, f"{case.id}: differentiated, expected a TraceError"
    want = fd_vjp(f, list(case.args), 1.0, h=1e-6)
    for k, (g, w) in enumerate(zip(got, want)):
        scale = max(float(np.max(np.abs(w), initial=0.0)), 1.0)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * scale,
                                   err_msg=f"{case.id}: d/d arg {k}")
        assert np.asarray(g).dtype == case.args[k].dtype


# -- where NumPy raises, every backend raises ----------------------------------------------------
SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
GOOD = np.array([[2.0, 1.0], [1.0, 2.0]])
FAILING = [("inv", np.linalg.inv, SINGULAR, "Singular matrix"),
           ("solve", lambda a: np.linalg.solve(a, np.ones(2)), SINGULAR, "Singular matrix"),
           ("solve-batched", lambda a: np.linalg.solve(a, np.ones((2, 2, 1))),
            np.stack([GOOD, SINGULAR]), "Singular matrix"),
           ("cholesky", np.linalg.cholesky, SINGULAR - 3 * np.eye(2), "not positive definite")]


@pytest.mark.parametrize("name,fn,bad,message", FAILING, ids=[f[0] for f in FAILING])
@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_lapack_failures_raise_on_every_backend(name, fn, bad, message, backend):
    """Compiled at a good matrix, called at a bad one: NumPy's LinAlgError with NumPy's
    message on both backends, never the inf or NaN that XLA computes."""
    with pytest.raises(np.linalg.LinAlgError, match=message):
        fn(bad)
    compiled = tg.jit(fn, backend=backend)
    compiled(np.broadcast_to(GOOD, bad.shape).copy())
    with pytest.raises(np.linalg.LinAlgError, match=message):
        compiled(bad)


def test_a_nan_matrix_gives_numpys_nans_on_the_jax_backend():
    # LAPACK's failure check flags the NaN pivot, but NumPy itself returns NaNs there
    compiled = tg.jit(np.linalg.cholesky, backend="jax")
    compiled(GOOD)
    bad = np.full((2, 2), np.nan)
    np.testing.assert_array_equal(np.asarray(compiled(bad)), np.linalg.cholesky(bad))
