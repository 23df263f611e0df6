"""Every public function of ``tracegrad.scipy.linalg`` and ``tracegrad.scipy.integrate``
against SciPy on an edge grid: 0x0 and 1x1 matrices, singular and not-positive-definite
ones (SciPy's exception type), non-symmetric input to the routines that read one triangle,
stacks, integer / float32 / complex inputs (SciPy's result dtype), NaN and inf entries
(``check_finite``), each keyword option; ``odeint`` with one time, no time, reversed and
infinite times, repeated times, scalar, integer and float32 states. Each case runs on plain
arrays, under ``tg.jit`` on the NumPy backend and on the JAX backend. Derivatives at
interior points are checked against central differences of SciPy's own function, and
against ``jax.scipy.linalg`` where it has the function, on both backends.

Generated from ``TABLE``: a public name without an entry fails ``test_every_public_name_has_
a_table_entry``. The default run checks a bounded slice; TRACEGRAD_EXHAUSTIVE=1 every case."""
from __future__ import annotations

import inspect
import warnings
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest
import scipy.integrate as si
import scipy.linalg as sl
from conftest import assert_close, bounded, fd_vjp

import tracegrad as tg
import tracegrad.scipy.integrate as ti
import tracegrad.scipy.linalg as tl

RNG = np.random.default_rng(2301)
INF, NAN = np.inf, np.nan
A3 = RNG.uniform(-0.5, 0.5, (3, 3)) + np.diag([2.0, -1.5, 1.8])      # well conditioned
SPD3 = A3 @ A3.T + np.eye(3)
ASYM3 = SPD3 + np.triu(RNG.uniform(-0.3, 0.3, (3, 3)), 1)             # upper differs
ASYM3L = SPD3 + np.tril(RNG.uniform(-0.3, 0.3, (3, 3)), -1)           # lower differs
B3 = RNG.standard_normal((3, 2))
STACK_A = np.stack([A3, A3.T + 0.5 * np.eye(3)])
STACK_SPD = np.stack([SPD3, 2.0 * SPD3 + np.eye(3)])
C3 = A3 + 0.3j * RNG.uniform(-1, 1, (3, 3))
HPD3 = C3 @ C3.conj().T + np.eye(3)
NEAR_SING = np.array([[1.0, 1.0], [1.0, 1.0 + 1e-9]])
SING_TRI = np.triu(A3) - np.diag(np.diag(A3)) + np.diag([1.0, 0.0, 2.0])
NOT_PD = np.array([[1.0, 2.0], [2.0, 1.0]])


def _nan_at(a, idx, value=NAN):
    a = np.array(a, dtype=np.result_type(a, np.float64))
    a[idx] = value
    return a


def _cast(dtype, *xs):
    return tuple(np.asarray(x).astype(dtype) for x in xs)


@dataclass
class Case:
    name: str           # the function, in both modules
    tag: str
    xs: tuple           # the array operands (what tg.jit traces)
    call: object        # call(fn, xs) -> result, fn SciPy's or tracegrad's
    kw: dict = field(default_factory=dict)     # keyword options passed to both
    grad: bool = False  # differentiate at this (interior) point
    jax_call: object = None     # the same call on jax.scipy.linalg's function
    post: object = None         # applied to both results before comparing
    rtol: float = 1e-10
    grad_rtol: float = 2e-6     # against finite differences of SciPy's function, step fd_h
    fd_h: float = 1e-6
    good: tuple = None          # inputs it compiles at before being called at xs (an error)

    @property
    def id(self):
        return f"{self.name}-{self.tag}"


CASES: list = []
MODULES = {"linalg": (sl, tl), "integrate": (si, ti)}
MODULE_OF: dict = {}


def _add(name, tag, xs, call=None, **kw):
    call = call or (lambda fn, xs, kw: fn(*xs, **kw))
    CASES.append(Case(name, tag, tuple(xs), call, **kw))


def _direct(fn, xs, kw, lib):
    return fn(*xs, **kw)


# -- solve_triangular -----------------------------------------------------------------------
for _lower in (False, True):
    for _trans in (0, 1, 2, "N", "T", "C"):
        for _unit in (False, True):
            _kw = dict(lower=_lower, trans=_trans, unit_diagonal=_unit)
            _j = dict(_kw)
            _add("solve_triangular", f"l{_lower}-t{_trans}-u{_unit}", (A3, B3), kw=_kw,
                 grad=_trans in (0, 1, "C"),
                 jax_call=_direct)
for _tag, _xs, _kw in [
        ("vec", (A3, B3[:, 0]), {}), ("1x1", (np.full((1, 1), 2.5), np.ones(1)), {}),
        ("1x1-mat", (np.full((1, 1), -2.0), np.ones((1, 3))), dict(lower=True)),
        ("0x0", (np.zeros((0, 0)), np.zeros(0)), {}),
        ("0x0-mat", (np.zeros((0, 0)), np.zeros((0, 2))), {}),
        ("0-rhs", (A3, np.zeros((3, 0))), {}),
        ("singular", (SING_TRI, B3), {}), ("singular-lower", (SING_TRI.T, B3), dict(lower=True)),
        ("singular-unit", (SING_TRI, B3), dict(unit_diagonal=True)),   # the diagonal is unread
        ("nan-read", (_nan_at(A3, (0, 1)), B3), {}),
        ("nan-unread", (_nan_at(A3, (0, 1)), B3), dict(lower=True)),
        ("nan-unread-nocheck", (_nan_at(A3, (0, 1)), B3), dict(lower=True, check_finite=False)),
        ("inf-b", (A3, _nan_at(B3, (1, 0), INF)), {}),
        ("nan-nocheck", (_nan_at(A3, (0, 1)), B3), dict(check_finite=False)),
        ("int", _cast(np.int64, np.triu(np.round(3 * A3)) + 4 * np.eye(3), B3 * 3), {}),
        ("f32", _cast(np.float32, A3, B3), {}), ("f32-f64", (A3.astype(np.float32), B3), {}),
        ("c128", (C3, B3 + 0j), dict(trans="C")), ("c128-T", (C3, B3), dict(trans=1)),
        ("c64", _cast(np.complex64, C3, B3), {}),
        ("stack", (STACK_A, np.stack([B3, -B3])), {}),
        ("stack-lower", (STACK_A, np.stack([B3, -B3])), dict(lower=True, trans=1)),
        ("stack-vec", (STACK_A, B3[:, 0]), {}), ("stack-mat", (STACK_A, B3), dict(lower=True)),
        ("stack-bad", (STACK_A, np.ones((2, 3))), {}),
        ("near-singular", (np.triu(A3) + np.diag([0.0, 1e-13 - A3[1, 1], 0.0]), B3), {}),
        ("overwrite", (A3, B3.copy()), dict(overwrite_b=True)),
        ("badshape", (A3, np.ones(4)), {}), ("nonsquare", (B3, np.ones(3)), {})]:
    _add("solve_triangular", _tag, _xs, kw=_kw,
         grad=_tag in ("vec", "1x1", "1x1-mat", "stack", "nan-unread-nocheck"),
         jax_call=_direct if _tag in ("vec", "1x1", "stack") else None,
         good=(A3, B3) if _tag in ("singular", "singular-lower") else None)

# -- cholesky, cho_factor, cho_solve --------------------------------------------------------


def _sym(a, lib):
    return 0.5 * (a + lib.swapaxes(a, -1, -2))


def _chol_jax(fn, xs, kw, lib):
    # JAX's Cholesky reads both triangles (their mean): compared on symmetric inputs
    return fn(_sym(xs[0], lib), **kw)


def _factor_jax(fn, xs, kw, lib):
    # JAX's cho_factor leaves other values in the other triangle than SciPy's
    c, lower = fn(_sym(xs[0], lib), **kw)
    return (lib.tril if kw["lower"] else lib.triu)(c)


_CHOL = [("spd", (SPD3,), True), ("asym-upper", (ASYM3,), True),
         ("asym-lower", (ASYM3L,), True), ("1x1", (np.full((1, 1), 4.0),), True),
         ("0x0", (np.zeros((0, 0)),), False), ("not-pd", (NOT_PD,), False),
         ("near-singular", (NEAR_SING,), False), ("nan-read", (_nan_at(SPD3, (0, 2)),), False),
         ("nan-lower", (_nan_at(SPD3, (2, 0)),), False),
         ("int", (np.array([[4, 2], [2, 3]]),), False),
         ("f32", (SPD3.astype(np.float32),), False), ("c128", (HPD3,), False),
         ("c64", (HPD3.astype(np.complex64),), False), ("stack", (STACK_SPD,), True),
         ("nonsquare", (B3,), False)]
for _tag, _xs, _grad in _CHOL:
    for _lower in (False, True):
        _jax = _tag in ("spd", "1x1", "stack")
        _good = (np.broadcast_to(np.eye(_xs[0].shape[-1]), _xs[0].shape).copy(),) \
            if _tag == "not-pd" else None
        _add("cholesky", f"{_tag}-l{_lower}", _xs, kw=dict(lower=_lower), grad=_grad,
             jax_call=_chol_jax if _jax else None, good=_good)
        _add("cho_factor", f"{_tag}-l{_lower}", _xs, kw=dict(lower=_lower), grad=_grad,
             jax_call=_factor_jax if _jax else None, good=_good)
for _tag in ("spd", "1x1", "0x0", "not-pd", "nan-read", "int", "f32", "c128"):
    _xs = dict((t, x) for t, x, _ in _CHOL)[_tag]
    _rhs = np.ones((_xs[0].shape[-1], 2)) if _tag != "int" else np.ones((2, 2), dtype=int)
    if _tag == "f32":
        _rhs = _rhs.astype(np.float32)
    _add("cholesky", f"{_tag}-nocheck", _xs, kw=dict(check_finite=False, overwrite_a=True))
    for _lower in (False, True):
        # the factor comes from SciPy's own cho_factor, so only cho_solve is compared
        _fac = None
        try:
            _fac = sl.cho_factor(_xs[0], lower=_lower)[0]
        except (np.linalg.LinAlgError, ValueError):
            continue
        _add("cho_solve", f"{_tag}-l{_lower}", (_fac, _rhs),
             call=(lambda lo: lambda fn, xs, kw: fn((xs[0], lo), xs[1], **kw))(_lower),
             grad=_tag in ("spd", "1x1"),
             jax_call=((lambda lo: lambda jf, xs, kw, lib: jf((xs[0], lo), xs[1], **kw))(_lower)
                       if _tag == "spd" else None))
for _tag, _xs, _lower in [
        ("vec", (np.linalg.cholesky(SPD3).T, B3[:, 0]), False),
        ("garbage-other-half", (np.linalg.cholesky(SPD3).T + np.tril(np.ones((3, 3)), -1),
                                B3), False),
        ("garbage-lower", (np.linalg.cholesky(SPD3) + np.triu(np.ones((3, 3)), 1), B3), True),
        ("nan-b", (np.linalg.cholesky(SPD3), _nan_at(B3, (0, 0))), True),
        ("badshape", (np.linalg.cholesky(SPD3), np.ones(4)), True),
        ("stack", (np.linalg.cholesky(STACK_SPD), np.stack([B3, -B3])), True),
        ("stack-vec", (np.linalg.cholesky(STACK_SPD), B3[:, 0]), True),
        ("stack-mat", (np.swapaxes(np.linalg.cholesky(STACK_SPD), -1, -2), B3), False)]:
    _add("cho_solve", _tag, _xs, call=(lambda lo: lambda fn, xs, kw: fn((xs[0], lo), xs[1],
                                                                           **kw))(_lower),
         grad=_tag.startswith("garbage") or _tag in ("vec", "stack", "stack-vec"))
_add("cho_solve", "nan-b-nocheck", (np.linalg.cholesky(SPD3), _nan_at(B3, (0, 0))),
     call=lambda fn, xs, kw: fn((xs[0], True), xs[1], **kw), kw=dict(check_finite=False))

# -- expm, sqrtm, expm_frechet ---------------------------------------------------------------
_MATFN = [("gen", (0.5 * A3,), True), ("1x1", (np.full((1, 1), -0.7),), True),
          ("0x0", (np.zeros((0, 0)),), False), ("singular", (np.ones((3, 3)) / 3,), False),
          ("nan", (_nan_at(0.5 * A3, (0, 1)),), False), ("int", (np.array([[1, 2], [0, 1]]),),
                                                         False),
          ("f32", ((0.5 * A3).astype(np.float32),), False), ("c128", (0.5 * C3,), False),
          ("stack", (np.stack([0.4 * A3, -0.3 * A3.T]),), True), ("nonsquare", (B3,), False),
          ("1d", (np.ones(3),), False), ("big", (8.0 * A3,), False),
          ("number", (np.float64(0.3),), True), ("one-element", (np.array([-0.4]),), True),
          ("int-number", (np.int64(2),), False), ("stack-0x0", (np.zeros((2, 0, 0)),), False)]
for _tag, _xs, _grad in _MATFN:
    _add("expm", _tag, _xs, grad=_grad,
         jax_call=_direct if _tag in ("gen", "1x1", "stack") else None)
for _tag, _xs, _grad in [("spd", (SPD3,), True), ("gen", (SPD3 / 3 + 0.3 * A3,), True),
                         ("1x1", (np.full((1, 1), 4.0),), True), ("0x0", (np.zeros((0, 0)),),
                                                                     False),
                         ("singular", (np.ones((2, 2)),), False),
                         ("negative-eig", (-SPD3,), False), ("nan", (_nan_at(SPD3, (1, 1)),),
                                                                     False),
                         ("int", (np.array([[4, 1], [1, 3]]),), False),
                         ("f32", (SPD3.astype(np.float32),), False), ("c128", (HPD3,), False),
                         ("stack", (STACK_SPD,), True), ("nonsquare", (B3,), False),
                         ("number", (np.float64(2.5),), False), ("1d", (np.ones(2),), False),
                         ("stack-0x0", (np.zeros((2, 0, 0)),), False)]:
    _add("sqrtm", _tag, _xs, grad=_grad)
_E3 = RNG.standard_normal((3, 3))
for _tag, _xs, _kw, _grad in [
        ("gen", (0.5 * A3, _E3), {}, True), ("L-only", (0.5 * A3, _E3),
                                                dict(compute_expm=False), True),
        ("blockEnlarge", (0.5 * A3, _E3), dict(method="blockEnlarge"), False),
        ("SPS", (0.5 * A3, _E3), dict(method="SPS"), False),
        ("badmethod", (0.5 * A3, _E3), dict(method="nope"), False),
        ("1x1", (np.full((1, 1), 0.3), np.full((1, 1), -1.0)), {}, True),
        ("0x0", (np.zeros((0, 0)), np.zeros((0, 0))), {}, False),
        ("int", (np.array([[1, 2], [0, 1]]), np.eye(2, dtype=int)), {}, False),
        ("f32", _cast(np.float32, 0.5 * A3, _E3), {}, False),
        ("c128", (0.5 * C3, _E3 + 0j), {}, False),
        ("nan", (_nan_at(A3, (0, 0)), _E3), {}, False),
        ("nan-nocheck", (_nan_at(A3, (0, 0)), _E3), dict(check_finite=False), False),
        ("stack", (np.stack([0.4 * A3, -0.3 * A3]), np.stack([_E3, _E3.T])), {}, True),
        ("mismatch", (A3, np.eye(2)), {}, False), ("nonsquare", (B3, B3), {}, False)]:
    _add("expm_frechet", _tag, _xs, kw=_kw, grad=_grad,
         jax_call=((lambda jf, xs, kw, lib: jf(*xs, **{k: v for k, v in kw.items()
                                                      if k == "compute_expm"}))
                   if _tag in ("gen", "L-only") else None))

# -- solve_banded, solve_sylvester -----------------------------------------------------------


def _banded(a, lower, upper):
    n = a.shape[-1]
    ab = np.zeros(a.shape[:-2] + (lower + upper + 1, n), dtype=a.dtype)
    for i in range(n):
        for j in range(max(0, i - lower), min(n, i + upper + 1)):
            ab[..., upper + i - j, j] = a[..., i, j]
    return ab


def _band_call(lu):
    return lambda fn, xs, kw: fn(lu, *xs, **kw)


_D5 = np.triu(np.tril(RNG.uniform(-1, 1, (5, 5)), 2), -1) + 3 * np.eye(5)
_AB = _banded(_D5, 1, 2)
_JUNK = _AB.copy()
_JUNK[0, 0], _JUNK[0, 1], _JUNK[-1, -1] = 7.0, -3.0, 5.0     # outside the band: unread
for _tag, _lu, _xs, _kw, _grad in [
        ("gen", (1, 2), (_JUNK, RNG.standard_normal((5, 2))), {}, True),
        ("vec", (1, 2), (_AB, RNG.standard_normal(5)), {}, True),
        ("diag", (0, 0), (np.full((1, 4), 2.0), np.ones(4)), {}, True),
        ("1x1", (0, 0), (np.full((1, 1), 2.0), np.ones(1)), {}, True),
        ("1x1-wide", (1, 1), (np.full((3, 1), 2.0), np.ones(1)), {}, False),
        ("0x0", (0, 0), (np.zeros((1, 0)), np.zeros(0)), {}, False),
        ("singular", (0, 0), (np.array([[1.0, 0.0, 2.0]]), np.ones(3)), {}, False),
        ("singular-tri", (1, 0), (np.array([[1.0, 0.0, 2.0], [1.0, 1.0, 0.0]]), np.ones(3)), {},
         False),
        ("nan", (1, 2), (_nan_at(_AB, (1, 2)), np.ones(5)), {}, False),
        ("nan-junk", (1, 2), (_nan_at(_AB, (0, 0)), np.ones(5)), {}, False),
        ("nan-nocheck", (1, 2), (_nan_at(_AB, (1, 2)), np.ones(5)),
         dict(check_finite=False), False),
        ("int", (1, 1), (np.array([[0, 1, 1], [4, 4, 4], [1, 1, 0]]), np.array([1, 2, 3])), {},
         False),
        ("f32", (1, 2), _cast(np.float32, _AB, np.ones(5)), {}, False),
        ("c128", (1, 2), (_AB + 0.2j, np.ones(5) + 0j), {}, False),
        ("stack", (1, 2), (np.stack([_AB, 2 * _AB]), RNG.standard_normal((2, 5, 2))), {}, True),
        ("overwrite", (1, 2), (_AB.copy(), np.ones(5)), dict(overwrite_ab=True,
                                                                overwrite_b=True), False),
        ("badrows", (1, 1), (_AB, np.ones(5)), {}, False),
        ("badb", (1, 2), (_AB, np.ones(4)), {}, False)]:
    _add("solve_banded", _tag, _xs, call=_band_call(_lu), kw=_kw, grad=_grad,
         good=(np.ones_like(_xs[0]), _xs[1]) if _tag.startswith("singular") else None)
_SA, _SB = A3 + 2.0 * np.eye(3), RNG.uniform(-0.5, 0.5, (2, 2)) + np.diag([1.0, 1.5])
_SQ = RNG.standard_normal((3, 2))
for _tag, _xs, _grad in [
        ("gen", (_SA, _SB, _SQ), True), ("1x1", (np.full((1, 1), 2.0), np.full((1, 1), 1.0),
                                                 np.full((1, 1), 3.0)), True),
        ("0x0", (np.zeros((0, 0)), _SB, np.zeros((0, 2))), False),
        ("singular", (np.eye(2), -np.eye(2), np.ones((2, 2))), False),
        ("nan", (_nan_at(_SA, (0, 0)), _SB, _SQ), False),
        ("int", (np.array([[2, 1], [0, 3]]), np.eye(2, dtype=int), np.ones((2, 2), dtype=int)),
         False),
        ("f32", _cast(np.float32, _SA, _SB, _SQ), False), ("c128", (_SA + 0.5j, _SB, _SQ), False),
        ("stack", (np.stack([_SA, _SA.T]), _SB, np.stack([_SQ, -_SQ])), True),
        ("badq", (_SA, _SB, _SQ.T), False)]:
    _add("solve_sylvester", _tag, _xs, grad=_grad)

# -- odeint ----------------------------------------------------------------------------------
TIGHT = dict(rtol=1e-11, atol=1e-11)


def _decay(y, t, k=0.5):
    return -k * y + np.sin(t)


def _ode_call(fn, xs, kw):
    y0, t, *args = xs
    return fn(_decay, y0, t, args=tuple(args), **kw)


def _ode_first(fn, xs, kw):
    y0, t = xs
    return fn(lambda t, y: -y * t, y0, t, tfirst=True, **kw)


for _tag, _xs, _grad in [
        ("gen", (np.array([1.0, 2.0]), np.array([0.0, 0.5, 1.5]), np.float64(0.7)), True),
        ("one-time", (np.array([1.0, 2.0]), np.array([0.3])), False),
        ("no-time", (np.array([1.0, 2.0]), np.zeros(0)), False),
        ("reversed", (np.array([1.0, -2.0]), np.array([1.5, 0.5, 0.0])), True),
        ("repeated", (np.array([1.0, 2.0]), np.array([0.0, 1.0, 1.0, 2.0])), False),
        ("scalar", (np.float64(1.5), np.array([0.0, 1.0])), False),
        ("one-state", (np.array([1.5]), np.array([0.0, 1.0])), True),
        ("int-y0", (np.array([1, 2]), np.array([0.0, 1.0])), False),
        ("int-t", (np.array([1.0, 2.0]), np.array([0, 1, 2])), False),
        ("f32", (np.array([1.0, 2.0], np.float32), np.array([0.0, 1.0], np.float32),
                 np.float32(0.7)), False),
        ("inf-time", (np.array([1.0, 2.0]), np.array([0.0, INF])), False),
        ("nan-y0", (np.array([NAN, 2.0]), np.array([0.0, 1.0])), False),
        ("complex-y0", (np.array([1.0 + 1j, 2.0]), np.array([0.0, 1.0])), False),
        ("not-monotonic", (np.array([1.0, 2.0]), np.array([0.0, 1.0, 0.5])), False),
        ("2d-t", (np.array([1.0, 2.0]), np.array([[0.0, 1.0]])), False),
        ("2d-y0", (np.ones((2, 2)), np.array([0.0, 1.0])), False)]:
    _add("odeint", _tag, _xs, call=_ode_call, kw=dict(TIGHT), grad=_grad, rtol=1e-8,
         grad_rtol=1e-5, fd_h=1e-4)
_add("odeint", "tfirst", (np.array([1.0, 2.0]), np.array([0.0, 1.0])), call=_ode_first,
     kw=dict(TIGHT), grad=True, rtol=1e-8, grad_rtol=1e-5, fd_h=1e-4)
_add("odeint", "options", (np.array([1.0, 2.0]), np.array([0.0, 1.0])), call=_ode_call,
     kw=dict(rtol=1e-6, atol=1e-9, h0=1e-3, mxordn=5, hmax=0.5, mxstep=5000), rtol=1e-12)

for _c in CASES:
    MODULE_OF[_c.name] = "integrate" if _c.name == "odeint" else "linalg"


def _public(module):
    return sorted(getattr(module, "__all__", None) or
                  [n for n in dir(module) if not n.startswith("_") and
                   callable(getattr(module, n)) and
                   getattr(getattr(module, n), "__module__", "") == module.__name__])


def test_every_public_name_has_a_table_entry():
    covered = {c.name for c in CASES}
    for label, (_, mod) in MODULES.items():
        missing = [n for n in _public(mod) if n not in covered]
        assert not missing, f"tracegrad.scipy.{label}: no edge cases for {missing}"
        public = [n for n in dir(mod) if not n.startswith("_") and callable(getattr(mod, n))
                  and getattr(getattr(mod, n), "__module__", "") == mod.__name__]
        assert set(public) <= set(_public(mod)), f"{label}: public but not in __all__"


# -- running a case --------------------------------------------------------------------------
def _scipy(case, **over):
    fn = getattr(MODULES[MODULE_OF[case.name]][0], case.name)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            out = case.call(fn, [np.copy(x) for x in case.xs], {**case.kw, **over})
        except Exception as e:  # noqa: BLE001 - the exception is the expected result
            return e
    return out


def _ours(case, mode, **over):
    fn = getattr(MODULES[MODULE_OF[case.name]][1], case.name)
    kw = {**case.kw, **over}

    def f(*xs):
        return case.call(fn, xs, kw)
    if mode != "eager":
        f = tg.jit(f, backend=mode)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return f(*[np.copy(x) for x in case.xs])
        except Exception as e:  # noqa: BLE001 - compared with SciPy's exception
            return e


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return [leaf for item in out for leaf in _leaves(item)]
    return [out]


def _compare(got, want, rtol, what):
    if isinstance(want, BaseException):
        assert isinstance(got, BaseException), f"{what}: SciPy raises {want!r}, got a value"
        assert isinstance(got, type(want)), f"{what}: SciPy raises {want!r}, got {got!r}"
        return
    if isinstance(got, BaseException):
        raise AssertionError(f"{what}: raised {got!r}, SciPy gives a value") from got
    gl, wl = _leaves(got), _leaves(want)
    assert len(gl) == len(wl), f"{what}: {len(gl)} results, SciPy {len(wl)}"
    for g, w in zip(gl, wl):
        if np.asarray(w).dtype == bool:     # cho_factor's flag (SciPy's stacks: one each)
            assert np.array_equal(np.broadcast_to(np.asarray(g), np.shape(w)), w), what
            continue
        g, w = np.asarray(g), np.asarray(w)
        if w.dtype.kind in "fc":
            assert (np.isnan(g) == np.isnan(w)).all(), f"{what}: NaN at other places"
            inf = np.isinf(w)
            assert (np.isinf(g) == inf).all() and (g[inf] == w[inf]).all(), \
                f"{what}: infinities differ"
        assert_close(g, w, rtol, what)


def _posted(case, out):
    if case.post is None or isinstance(out, BaseException):
        return out
    return case.post(out)


def _rtol(case, mode):
    x = np.result_type(*case.xs) if case.xs else np.float64
    low = np.dtype(x) in (np.float32, np.complex64)
    rtol = 2e-5 if low else case.rtol
    return max(rtol, 1e-8) if mode == "jax" and not low else rtol


MODES = ["eager", "numpy", "jax"]
_FINITE_ERR = "must not contain infs or NaNs"

# cases where tracegrad still differs from SciPy: (case id, mode) -> reason
_SPREAD = ("traced solve_triangular is a dense LU solve of the triangle: a NaN or inf in the "
           "read triangle or in b spreads to every entry of x (0 * NaN in the elimination), "
           "where SciPy's substitution keeps the entries that do not depend on it finite")
_NEG_SQRT = ("traced sqrtm of a real matrix without a real square root raises LinAlgError: "
             "the result's dtype (SciPy: complex) cannot depend on the values")
_ANY_SHAPE = ("odeint takes a state of any shape (and pytrees), as JAX's odeint: a 2-d y0 "
              "gives (len(t),) + y0.shape where SciPy raises ValueError")
KNOWN: dict = {
    **{(f"solve_triangular-{t}", m): _SPREAD for t in ("nan-read", "nan-nocheck", "inf-b")
       for m in ("numpy", "jax")},
    **{("sqrtm-negative-eig", m): _NEG_SQRT for m in ("numpy", "jax")},
    ("odeint-2d-y0", "*"): _ANY_SHAPE,
    ("sqrtm-number", "*"): "SciPy 1.17's sqrtm of a number or one-element vector returns "
    "[[exp(x)]] (the special case of expm, in scipy/linalg/_matfuncs.py); tracegrad gives the "
    "square root, as for a 1 x 1 matrix",
}


def _value_params():
    out = []
    for case in CASES:
        for mode in MODES:
            marks = []
            reason = KNOWN.get((case.id, mode)) or KNOWN.get((case.id, "*"))
            if reason:
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            out.append(pytest.param(case, mode, marks=marks, id=f"{case.id}-{mode}"))
    return out


VALUE_PARAMS = _value_params()


def _takes_check_finite(case):
    fn = getattr(MODULES[MODULE_OF[case.name]][0], case.name)
    return "check_finite" in inspect.signature(fn).parameters


def _is_finite_error(out):
    return isinstance(out, ValueError) and _FINITE_ERR in str(out)


@pytest.mark.parametrize("case,mode", bounded(VALUE_PARAMS, 90,
                                              key=lambda p: (p.values[0].name, p.values[1])))
def test_values_match_scipy(case, mode):
    """Plain arrays: SciPy's result or exception, exactly its type. Traced: the same values;
    where SciPy's ``check_finite`` raises, the values SciPy gives without the check (a
    traced value cannot be checked), or NaN where SciPy raises even then; where SciPy
    raises another ``ValueError`` (``LinAlgError``), the first call (the trace) may raise
    it as the ``TraceError`` naming the line (``test_compiled_at_a_good_input_raises_
    scipys_error`` checks the compiled function's own)."""
    want = _posted(case, _scipy(case))
    got = _posted(case, _ours(case, mode))
    what = f"{case.id} ({mode})"
    if mode != "eager" and _is_finite_error(want):
        if _takes_check_finite(case):
            want = _posted(case, _scipy(case, check_finite=False))
        if _is_finite_error(want):
            if isinstance(got, ValueError):
                return      # SciPy's own check on concrete values (a callback)
            for leaf in _leaves(got):
                assert np.isnan(leaf).any(), f"{what}: a NaN input gave no NaN"
            return
    if mode != "eager" and isinstance(want, ValueError) and isinstance(got, tg.TraceError):
        return
    _compare(got, want, _rtol(case, mode), what)


GOOD_PARAMS = [pytest.param(c, m, id=f"{c.id}-{m}") for c in CASES if c.good is not None
               for m in ("numpy", "jax")]


@pytest.mark.parametrize("case,mode", bounded(GOOD_PARAMS, 6, key=lambda p: p.values[0].name))
def test_compiled_at_a_good_input_raises_scipys_error(case, mode):
    """Compiled at a well-posed input, called at a singular or not positive definite one:
    SciPy's exception type on both backends (never XLA's inf or NaN)."""
    want = _scipy(case)
    assert isinstance(want, Exception), f"{case.id}: SciPy gives a value"
    fn = getattr(MODULES[MODULE_OF[case.name]][1], case.name)
    f = tg.jit(lambda *xs: case.call(fn, xs, case.kw), backend=mode)
    f(*case.good)
    with pytest.raises(type(want)):
        f(*case.xs)
# -- derivatives -----------------------------------------------------------------------------
def _weights(out):
    rng = np.random.default_rng(7)
    return [rng.standard_normal(np.shape(leaf)) for leaf in _leaves(out)
            if not isinstance(leaf, (bool, np.bool_))]


def _pair(leaves, ws):
    total = 0.0
    for leaf, w in zip([x for x in leaves if not isinstance(x, (bool, np.bool_))], ws):
        total = total + np.sum(w * leaf)
    return total


GRAD_PARAMS = [pytest.param(c, m, id=f"{c.id}-{m}") for c in CASES if c.grad
               for m in ("eager", "numpy", "jax")]


@pytest.mark.parametrize("case,mode", bounded(GRAD_PARAMS, 24,
                                              key=lambda p: p.values[0].name))
def test_derivatives_match_finite_differences_of_scipy(case, mode):
    """The gradient with respect to every float operand, against central differences of
    SciPy's function, and against ``jax.scipy.linalg``'s gradient where it has one."""
    sfn = getattr(MODULES[MODULE_OF[case.name]][0], case.name)
    tfn = getattr(MODULES[MODULE_OF[case.name]][1], case.name)
    post = case.post or (lambda out: out)
    ws = _weights(post(_scipy(case)))
    idx = [i for i, x in enumerate(case.xs) if np.asarray(x).dtype.kind == "f"]

    def loss(fn, pair):
        def f(*diff):
            xs = list(case.xs)
            for i, d in zip(idx, diff):
                xs[i] = d
            return pair(_leaves(post(case.call(fn, xs, case.kw))), ws)
        return f
    g = tg.grad(loss(tfn, _pair), argnums=tuple(range(len(idx))))
    if mode != "eager":
        g = tg.jit(g, backend=mode)
    diff = [case.xs[i] for i in idx]
    got = g(*diff)
    want = fd_vjp(loss(sfn, _pair), diff, 1.0, h=case.fd_h)
    for k, (gk, wk) in enumerate(zip(got, want)):
        assert_close(gk, wk, case.grad_rtol, f"{case.id} ({mode}) d/d operand {idx[k]} vs SciPy's "
                     "finite differences", floor=1.0)
    if mode == "eager":     # forward mode along one direction, of the paired value
        rng = np.random.default_rng(11)
        dirs = [rng.standard_normal(np.shape(d)) for d in diff]
        _, tangent = tg.jvp(loss(tfn, _pair), tuple(diff), tuple(dirs))
        h = case.fd_h
        moved = [loss(sfn, _pair)(*[d + s * t for d, t in zip(diff, dirs)]) for s in (h, -h)]
        want_t = (moved[0] - moved[1]) / (2 * h)
        assert abs(float(tangent) - want_t) <= case.grad_rtol * max(abs(want_t), 1.0), \
            f"{case.id}: forward mode {float(tangent)} vs finite differences {want_t}"
    if case.jax_call is not None and mode == "eager":
        _check_against_jax(case, tfn, idx, diff)


def _check_against_jax(case, tfn, idx, diff):
    """tracegrad's gradient of ``jax_call`` (the case's call, made comparable: symmetric
    input, one triangle) against ``jax.grad`` of the same on ``jax.scipy.linalg``."""
    jfn = getattr(jsl, case.name)
    ws = _weights(case.jax_call(tfn, list(case.xs), case.kw, np))

    def loss(fn, lib):
        def f(*d):
            xs = list(case.xs)
            for i, v in zip(idx, d):
                xs[i] = v
            leaves = _leaves(case.jax_call(fn, xs, case.kw, lib))
            return sum(lib.sum(w * leaf) for leaf, w in zip(leaves, ws))
        return f
    argnums = tuple(range(len(idx)))
    got = tg.grad(loss(tfn, np), argnums=argnums)(*diff)
    want = jax.grad(loss(jfn, jnp), argnums=argnums)(*diff)
    for k, (gk, jk) in enumerate(zip(got, want)):
        assert_close(gk, np.asarray(jk), 1e-9, f"{case.id} d/d operand {idx[k]} vs JAX")


def test_documented_differences():
    """docs/guarantees.md: what differs from SciPy on traced values, on purpose."""
    bad = _nan_at(A3, (0, 1))
    with pytest.raises(ValueError, match=_FINITE_ERR):      # plain arrays: SciPy's check
        tl.solve_triangular(bad, B3)
    traced = tg.jit(lambda a, b: tl.solve_triangular(a, b))(bad, B3)    # no check traced
    assert np.isnan(traced).any()
    with pytest.raises(tg.TraceError, match="not positive definite"):  # first call: the trace
        tg.jit(tl.cholesky)(NOT_PD)
    c, lower = tg.jit(lambda a: tl.cho_factor(a))(STACK_SPD)        # one flag for a stack
    sc, slower = sl.cho_factor(STACK_SPD)
    assert_close(c, sc, 1e-12, "stacked factor")
    assert lower is False or not np.ndim(lower)
    assert np.shape(slower) == (2,)
    # SciPy 1.17's sqrtm of a number is [[exp(x)]]; here the square root, plain and traced
    assert_close(tl.sqrtm(np.float64(2.5)), np.array([[np.sqrt(2.5)]]), 1e-15, "plain")
    assert_close(tg.jit(tl.sqrtm)(np.float64(2.5)), np.array([[np.sqrt(2.5)]]), 1e-15, "traced")
