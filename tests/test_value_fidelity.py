"""Value fidelity: every name in the dispatch tables (``FUNCTIONS``, ``UFUNCS`` and the
``Tracer`` methods) returns NumPy's own values, dtypes and shapes, and a fresh array
wherever NumPy's result is one, traced (``tg.trace(f, *xs)(*xs)``), under ``tg.jit``
and under ``tg.jit(backend="jax")``; where NumPy raises, tracegrad raises the same
exception class (or ``TraceError``).

``SPECS`` maps each name to a builder of variants: ``(label, f, xs)`` where every array
of ``xs`` is a traced operand and the rest of the call (axes, dtypes, methods) is a
constant of ``f``. Inputs are generated: broadcasting shapes, 0-d, empty,
non-contiguous and negative-stride views, bool/int/float16/float32/float64/complex64/
complex128, NaN, infinities and -0.0 where they mean something. ``REFUSED`` names the
few calls where tracegrad must differ from NumPy (and so raises ``TraceError``);
``test_every_name_is_covered`` fails for a new dispatch-table name until it has an
entry here. The JAX backend compiles each case (slow): by default a bounded slice runs,
all of it with ``TRACEGRAD_EXHAUSTIVE=1``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import bounded

import tracegrad as tg
from tracegrad.tracer.core import Tracer
from tracegrad.tracer.np_base import FUNCTIONS, UFUNCS
from tracegrad.tracer.numpy_api import np_name

# -- inputs ----------------------------------------------------------------------------
B, I8, U8, I32, I64 = np.bool_, np.int8, np.uint8, np.int32, np.int64
F16, F32, F64, C64, C128 = np.float16, np.float32, np.float64, np.complex64, np.complex128
SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0]


def A(shape, dtype=F64, seed=0, lo=-2.0, hi=2.0, special=False, view=None):
    """A reproducible array. ``view``: 'step' (every other column of a wider array),
    'neg' (rows reversed, a negative stride) or 'T' (a transposed array)."""
    shape = tuple(shape)
    rng = np.random.default_rng(seed + 31 * len(shape) + 7 * sum(shape))
    full = shape[:-1] + (2 * shape[-1],) if view == "step" else shape
    if view == "T":
        full = shape[::-1]
    dt = np.dtype(dtype)
    if dt.kind == "b":
        x = rng.random(full) < 0.5
    elif dt.kind == "u":
        x = rng.integers(0, 7, full)
    elif dt.kind == "i":
        x = rng.integers(-3, 4, full)
    elif dt.kind == "c":
        x = rng.uniform(lo, hi, full) + 1j * rng.uniform(lo, hi, full)
    else:
        x = rng.uniform(lo, hi, full)
    x = np.asarray(x).astype(dt)
    if special and dt.kind in "fc":
        flat = x.reshape(-1)
        for i, s in enumerate(SPECIAL[: flat.size]):
            flat[(i * max(1, flat.size // len(SPECIAL))) % flat.size] = (
                s if dt.kind == "f" else complex(s, 0.5 * i)
            )
    if view == "step":
        x = x[..., ::2]
    elif view == "neg":
        x = x[::-1]
    elif view == "T":
        x = x.T
    return x


DTYPES = [B, U8, I8, I32, I64, F16, F32, F64, C64, C128]


def nonsym(n, dtype=F64, seed=0):
    """A well-conditioned non-symmetric square matrix."""
    a = A((n, n), dtype, seed=seed, lo=-1, hi=1)
    return (a + n * np.eye(n)).astype(dtype)


def spd(n, dtype=F64, seed=0):
    a = A((n, n), dtype, seed=seed, lo=-1, hi=1)
    return (a @ a.T.conj() + n * np.eye(n)).astype(dtype)


# -- variant builders --------------------------------------------------------------------
def unary_inputs():
    out = [(np.dtype(d).name, (A((3, 4), d, seed=1),)) for d in DTYPES]
    out += [
        ("special", (A((8,), F64, special=True),)),
        ("special_f32", (A((8,), F32, special=True),)),
        ("special_c128", (A((6,), C128, special=True),)),
        ("0d", (np.float64(0.7) * np.ones(()),)),
        ("empty", (A((0, 3), F32),)),
        ("step", (A((3, 4), F64, seed=2, view="step"),)),
        ("neg", (A((4, 3), F32, seed=3, view="neg"),)),
        ("T_int", (A((3, 4), I64, seed=4, view="T"),)),
    ]
    return out


def binary_inputs():
    pairs = [
        ("bcast", A((3, 1), F64, 1), A((4,), F64, 2)),
        ("f32", A((3, 4), F32, 1), A((3, 4), F32, 2)),
        ("f32_f64", A((3, 4), F32, 1), A((4,), F64, 2)),
        ("f16", A((3, 4), F16, 1), A((3, 4), F16, 2)),
        ("i64", A((3, 4), I64, 1), A((3, 4), I64, 2)),
        ("i32_i8", A((3, 4), I32, 1), A((4,), I8, 2)),
        ("u8_i8", A((3, 4), U8, 1), A((3, 4), I8, 2)),
        ("i64_f32", A((3, 4), I64, 1), A((3, 4), F32, 2)),
        ("bool", A((3, 4), B, 1), A((3, 4), B, 2)),
        ("bool_i64", A((3, 4), B, 1), A((3, 4), I64, 2)),
        ("c128", A((3, 4), C128, 1), A((3, 4), C128, 2)),
        ("c64_f32", A((3, 4), C64, 1), A((3, 4), F32, 2)),
        ("special", A((8,), F64, special=True), A((8,), F64, 5, special=True)[::-1]),
        ("0d", np.ones(()) * 0.3, A((3,), F64, 2)),
        ("empty", A((0,), F64), A((1,), F64)),
        ("views", A((3, 4), F64, 1, view="step"), A((3, 4), F64, 2, view="neg")),
        ("nobcast", A((3,), F64), A((4,), F64)),
    ]
    return [(label, (x, y)) for label, x, y in pairs]


def V(label, f, *xs):
    return (label, f, xs)


def ufunc_variants(uf):
    ins = unary_inputs() if uf.nin == 1 else binary_inputs()
    return [V(label, uf, *xs) for label, xs in ins]


RED_INPUTS = [
    ("f64", A((3, 4), F64, 1)),
    ("f32", A((3, 4), F32, 2)),
    ("i64", A((3, 4), I64, 3)),
    ("bool", A((3, 4), B, 4)),
    ("f16", A((3, 4), F16, 5)),
    ("c128", A((3, 4), C128, 6)),
    ("nan", A((3, 4), F64, 7, special=True)),
    ("nan_f32", A((3, 4), F32, 8, special=True)),
    ("3d", A((2, 3, 4), F64, 9)),
    ("empty", A((0, 3), F64)),
    ("0d", np.ones(()) * 0.5),
    ("neg", A((4, 3), F32, 10, view="neg")),
    ("i32", A((3, 4), I32, 11)),
    ("allnan", np.array([[np.nan] * 4, [1.0, np.nan, -2.0, 3.0], [0.0, -1.0, 2.0, 5.0]])),
    ("nan_c128", A((3, 4), C128, 12, special=True)),
]


def reduction_variants(
    fn, axes=(None, 0, -1, (0, 1)), keepdims=True, dtypes=(), ddof=False, kinds=None, extra=()
):
    """``fn(x, axis=...)`` over the reduction inputs, with keepdims, dtype= and ddof= where
    ``fn`` takes them."""
    out = []
    for label, x in RED_INPUTS:
        if kinds is not None and x.dtype.kind not in kinds:
            continue
        for ax in axes:
            if ax is not None and (x.ndim == 0 or (isinstance(ax, tuple) and x.ndim < 2)):
                continue
            out.append(V(f"{label}_ax{ax}", lambda a, ax=ax: fn(a, axis=ax), x))
        if keepdims and x.ndim:
            out.append(V(f"{label}_keep", lambda a: fn(a, axis=-1, keepdims=True), x))
        for dt in dtypes:
            out.append(
                V(
                    f"{label}_dtype_{np.dtype(dt).name}",
                    lambda a, dt=dt: fn(a, axis=0 if a.ndim else None, dtype=dt),
                    x,
                )
            )
        if ddof:
            out.append(V(f"{label}_ddof1", lambda a: fn(a, ddof=1), x))
    out += [V(label, f, *xs) for label, f, *xs in extra]
    return out


# -- the table -------------------------------------------------------------------------
SPECS: dict = {}


def spec(*names):
    def deco(builder):
        for n in names:
            SPECS[n] = builder
        return builder

    return deco


for _uf in UFUNCS:
    SPECS[f"ufunc.{_uf.__name__}"] = (lambda uf: lambda: ufunc_variants(uf))(_uf)

_X, _Y, _C = A((3, 4), F64, 1), A((3, 4), F64, 2), A((3, 4), C128, 3)
_X3 = A((2, 3, 4), F64, 4)
_V5, _W3 = A((5,), F64, 5), A((3,), F64, 6)
_I = A((3, 4), I64, 7)
_F32 = A((3, 4), F32, 8)
_NAN = A((3, 4), F64, 9, special=True)
_NAN32 = A((3, 4), F32, 9, special=True)


def _reds(fn, **kw):
    return lambda: reduction_variants(fn, **kw)


for _name, _fn in [
    ("sum", np.sum),
    ("prod", np.prod),
    ("nansum", np.nansum),
    ("nanprod", np.nanprod),
    ("mean", np.mean),
    ("nanmean", np.nanmean),
]:
    SPECS[f"np.{_name}"] = _reds(_fn, dtypes=(F32, F64, C128, I64))
for _name, _fn in [("var", np.var), ("std", np.std), ("nanvar", np.nanvar), ("nanstd", np.nanstd)]:
    SPECS[f"np.{_name}"] = _reds(_fn, dtypes=(F32, F64), ddof=True)
for _name, _fn in [
    ("max", np.max),
    ("min", np.min),
    ("amax", np.amax),
    ("amin", np.amin),
    ("nanmax", np.nanmax),
    ("nanmin", np.nanmin),
    ("any", np.any),
    ("all", np.all),
]:
    SPECS[f"np.{_name}"] = _reds(_fn)
for _name, _fn in [("argmax", np.argmax), ("argmin", np.argmin)]:
    SPECS[f"np.{_name}"] = _reds(_fn, axes=(None, 0, -1))
for _name, _fn in [("cumsum", np.cumsum), ("cumprod", np.cumprod), ("nancumsum", np.nancumsum)]:
    SPECS[f"np.{_name}"] = _reds(_fn, axes=(None, 0, -1), keepdims=False, dtypes=(F32, I64))
for _name, _fn in [("median", np.median)]:
    SPECS[f"np.{_name}"] = _reds(_fn, kinds="biuf")
SPECS["np.quantile"] = _reds(
    lambda a, **kw: np.quantile(a, 0.3, **kw),
    kinds="biuf",
    extra=[
        (f"method_{m}", lambda a, m=m: np.quantile(a, [0.0, 0.25, 0.5, 1.0], axis=1, method=m), _X)
        for m in ("linear", "lower", "higher", "nearest", "midpoint")
    ]
    + [("q_out_of_range", lambda a: np.quantile(a, 1.5), _X)],
)
SPECS["np.percentile"] = _reds(
    lambda a, **kw: np.percentile(a, [10, 90], **kw),
    kinds="biuf",
    extra=[("q_out_of_range", lambda a: np.percentile(a, 101), _X)],
)


@spec("np.average")
def _average():
    return [
        V("f64", np.average, _X),
        V("axis", lambda a: np.average(a, axis=1), _X),
        V("keepdims", lambda a: np.average(a, axis=0, keepdims=True), _X),
        V("weights_1d", lambda a, w: np.average(a, axis=1, weights=w), _X,
          A((4,), F64, 2, 0.1, 1)),
        V("weights_full", lambda a, w: np.average(a, weights=w), _X, A((3, 4), F64, 3, 0.1, 1)),
        V("returned", lambda a: np.average(a, axis=0, returned=True), _X),
        V("int", np.average, _I),
        V("f32", lambda a: np.average(a, axis=1), _F32),
        V("c128", np.average, _C),
    ]


@spec("np.trace")
def _trace():
    return [
        V("f64", np.trace, _X),
        V("offset", lambda a: np.trace(a, 1), _X),
        V("3d", lambda a: np.trace(a, axis1=1, axis2=2), _X3),
        V("int", np.trace, _I),
        V("bool", np.trace, A((3, 3), B)),
        V("c128", np.trace, _C),
        V("dtype", lambda a: np.trace(a, dtype=F32), _X),
        V("f32", np.trace, _F32),
        V("1d", np.trace, _V5),
    ]


# elementwise non-ufuncs
@spec("np.absolute")
def _abs():
    return [V(label, np.abs, *xs) for label, xs in unary_inputs()]


@spec("np.clip")
def _clip():
    return [
        V("f64", lambda a: np.clip(a, -0.5, 0.5), _X),
        V(
            "arrays",
            lambda a, lo, hi: np.clip(a, lo, hi),
            _X,
            A((4,), F64, 2, -1, 0),
            A((3, 1), F64, 3, 0, 1),
        ),
        V("int", lambda a: np.clip(a, -1, 2), _I),
        V("f32", lambda a: np.clip(a, -0.5, 0.5), _F32),
        V("nan", lambda a: np.clip(a, -0.5, 0.5), _NAN),
        V("int_bounds_f", lambda a: np.clip(a, -1.5, 2.5), _I),
        V("lo_only", lambda a: np.clip(a, -0.5, None), _X),
        V("kw", lambda a: np.clip(a, min=0.0, max=1.0), _X),
        V("f16", lambda a: np.clip(a, -0.5, 0.5), A((3, 4), F16)),
    ]


@spec("np.round", "np.around")
def _round():
    return [
        V(f"{label}_d{d}", lambda a, d=d: np.round(a, d), x)
        for d in (0, 1, -1)
        for label, x in [
            ("f64", _X * 30),
            ("f32", _F32 * 30),
            ("int", _I * 37),
            ("c128", _C * 30),
            ("half", np.array([0.5, 1.5, 2.5, -0.5, -2.5])),
            ("nan", _NAN),
        ]
    ]


@spec("np.where")
def _where():
    return [
        V("3arg", lambda c, x, y: np.where(c, x, y), _X > 0, _X, _Y),
        V("bcast", lambda c, x, y: np.where(c, x, y), A((3, 1), B), A((4,), F32), _Y),
        V("int_float", lambda c, x, y: np.where(c, x, y), _X > 0, _I, _F32),
        V("nonbool_cond", lambda c, x, y: np.where(c, x, y), _I, _X, _Y),
        V("1arg", lambda c: np.where(c), _X > 0),
        V("c128", lambda c, x, y: np.where(c, x, y), _X > 0, _C, _X),
    ]


@spec("np.nonzero")
def _nonzero():
    return [
        V("f64", np.nonzero, _X * (_X > 0)),
        V("bool", np.nonzero, _X > 0),
        V("int", np.nonzero, _I),
        V("1d", np.nonzero, _V5 > 0),
    ]


@spec("np.sinc")
def _sinc():
    return [V(label, np.sinc, *xs) for label, xs in unary_inputs()] + [
        V("zeros", np.sinc, np.array([0.0, -0.0, 1.0, 2.5]))
    ]


@spec("np.nan_to_num")
def _nan_to_num():
    return [
        V("f64", np.nan_to_num, _NAN),
        V("f32", np.nan_to_num, _NAN32),
        V("c128", np.nan_to_num, A((6,), C128, special=True)),
        V("c64", np.nan_to_num, A((6,), C64, special=True)),
        V("f16", np.nan_to_num, A((6,), F16, special=True)),
        V("int", np.nan_to_num, _I),
        V("bool", np.nan_to_num, _X > 0),
        V("values", lambda a: np.nan_to_num(a, nan=-1.0, posinf=9.0, neginf=-9.0), _NAN),
        V("copy_false", lambda a: np.nan_to_num(a, copy=False), _X.copy()),
    ]


@spec("np.angle")
def _angle():
    return [V(label, np.angle, *xs) for label, xs in unary_inputs()] + [
        V("deg", lambda z: np.angle(z, deg=True), _C)
    ]


for _name in ["real", "imag", "iscomplex", "isreal", "iscomplexobj", "isrealobj", "real_if_close"]:
    SPECS[f"np.{_name}"] = (
        lambda fn: (
            lambda: [V(label, fn, *xs) for label, xs in unary_inputs()] + [V("tiny_imag", fn, _X + 1e-20j)]
        )
    )(getattr(np, _name))


for _fn in (np.isclose, np.allclose):
    SPECS[f"np.{_fn.__name__}"] = (
        lambda fn: (
            lambda: [
                V("near", lambda a, b: fn(a, a + 1e-9 * b), _X, _Y),
                V("far", lambda a, b: fn(a, b), _X, _Y),
                V("bcast", lambda a, b: fn(a, b), _X, _X[0]),
                V("nan", lambda a: fn(a, a), _NAN),
                V("nan_eq", lambda a: fn(a, a, equal_nan=True), _NAN),
                V("int", lambda a, b: fn(a, b), _I, _I),
                V("f32", lambda a, b: fn(a, b), _F32, _F32),
                V("c128", lambda a, b: fn(a, b), _C, _C + 1e-9),
                V("tol", lambda a, b: fn(a, b, rtol=0.5, atol=0.1), _X, _Y),
            ]
        )
    )(_fn)

for _fn in (np.array_equal, np.array_equiv):
    SPECS[f"np.{_fn.__name__}"] = (
        lambda fn: (
            lambda: [
                V("same", lambda a: fn(a, a * 1), _X),
                V("diff", fn, _X, _Y),
                V("shape", fn, _X, _V5),
                V("bcast", lambda a: fn(a, a[:1]), np.ones((3, 4))),
                V("nan", lambda a: fn(a, a), _NAN),
                V("int", fn, _I, _I),
            ]
        )
    )(_fn)


# sorting and searching
def _stable_argsort(a, axis=-1):
    return np.argsort(a, axis=axis, kind="stable")


# NumPy's default sort leaves the order of ties to its implementation (SIMD sorts differ
# by machine); tracegrad's is stable, which is what kind="stable" asks of NumPy.
_PERM = np.random.default_rng(0).permutation(12).reshape(3, 4)
for _name, _fn in (("sort", np.sort), ("argsort", _stable_argsort)):
    SPECS[f"np.{_name}"] = (
        lambda fn: (
            lambda: [
                V("f64", fn, _X),
                V("ax0", lambda a: fn(a, axis=0), _X),
                V("none", lambda a: fn(a, axis=None), _X),
                V("int", fn, _I),
                V("bool", fn, _X > 0),
                V("f32", fn, _F32),
                V("nan", fn, _NAN),
                V("c128", fn, _C),
                V("3d", lambda a: fn(a, axis=1), _X3),
                V("empty", fn, A((0, 3))),
                V("ties", fn, np.array([1.0, 0.0, 1.0, -0.0, 0.0])),
                V("neg", fn, A((4, 3), F32, view="neg")),
                V("default_kind", np.argsort, _X),
                V("default_kind_int", np.argsort, _PERM),
            ]
        )
    )(_fn)


def _parts(fn, k, axis=-1):
    """What NumPy promises of a partition: the k-th value in place, the values before it
    (as a sorted set) and after it. The order within the parts is NumPy's choice (its
    introselect's), so only the parts are compared."""

    def f(a):
        p = fn(a, k, axis=axis)
        if fn is np.argpartition:
            p = np.take_along_axis(a, p, axis=axis)
        p = np.moveaxis(p, axis, -1)
        return np.sort(p[..., :k], axis=-1), p[..., k], np.sort(p[..., k + 1 :], axis=-1)

    return f


for _fn in (np.partition, np.argpartition):
    SPECS[f"np.{_fn.__name__}"] = (
        lambda fn: (
            lambda: [
                V("f64", _parts(fn, 2), _X),
                V("ax0", _parts(fn, 1, axis=0), _X),
                V("int", _parts(fn, 1), _I),
                V("nan", _parts(fn, 3), A((8,), special=True)),
                V("long", _parts(fn, 17), A((40,), F64, 3)),
                V("f32", _parts(fn, 0), _F32),
            ]
        )
    )(_fn)


@spec("np.searchsorted")
def _searchsorted():
    s = np.sort(_V5)
    return [
        V("left", np.searchsorted, s, _X),
        V("right", lambda a, v: np.searchsorted(a, v, "right"), s, _X),
        V("ties", lambda a, v: np.searchsorted(a, v), np.array([0.0, 1, 1, 2]), np.array([1.0, 0.5, 3])),
        V("sorter", lambda a, v: np.searchsorted(a, v, sorter=np.argsort(_V5)), _V5, _X),
        V("int", np.searchsorted, np.arange(5), _I),
        V("2d", np.searchsorted, _X, _V5),
    ]


@spec("np.digitize")
def _digitize():
    b = np.sort(_V5)
    return [
        V("inc", np.digitize, _X, b),
        V("right", lambda x, b: np.digitize(x, b, right=True), _X, b),
        V("dec", np.digitize, _X, b[::-1]),
        V("int", np.digitize, _I, np.arange(-2, 3)),
        V("nan", np.digitize, _NAN, b),
    ]


@spec("np.unique")
def _unique():
    return [
        V("f64", np.unique, np.round(_X)),
        V("int", np.unique, _I),
        V("nan", np.unique, _NAN),
        V("bool", np.unique, _X > 0),
        V("empty", np.unique, A((0,))),
    ]


# products
def _product_variants(fn, vec_ok=True):
    out = [
        V("mm", fn, _X, A((4, 2), F64, 3)),
        V("f32", fn, _F32, A((4, 2), F32, 3)),
        V("int", fn, _I, A((4, 2), I64, 3)),
        V("bool", fn, _X > 0, A((4, 2), B, 3)),
        V("c128", fn, _C, A((4, 2), C128, 4)),
        V("mixed", fn, _F32, A((4, 2), F64, 3)),
        V("mismatch", fn, _X, _X),
        V("empty", fn, A((0, 4)), A((4, 2))),
        V("views", fn, A((3, 4), view="step"), A((4, 2), view="neg")),
        V("batched", fn, _X3, A((4, 2), F64, 3)),
        V("nan", fn, _NAN, A((4, 2), F64, 3)),
    ]
    if vec_ok:
        out += [
            V("vv", fn, _V5, A((5,), F64, 2)),
            V("mv", fn, _X, A((4,), F64, 2)),
            V("vm", fn, A((3,), F64, 2), _X),
        ]
    return out


for _fn, _name in [
    (np.dot, "np.dot"),
    (np.matmul, "np.matmul"),
    (np.matmul, "ufunc.matmul"),
    (np.kron, "np.kron"),
]:
    SPECS[_name] = (lambda fn: lambda: _product_variants(fn))(_fn)
SPECS["np.inner"] = lambda: _product_variants(
    lambda a, b: np.inner(a, np.swapaxes(b, -1, -2)) if np.ndim(b) > 1 else np.inner(a, b)
)
SPECS["np.outer"] = lambda: _product_variants(np.outer)


@spec("np.tensordot")
def _tensordot():
    return [
        V("ax1", lambda a, b: np.tensordot(a, b, 1), _X, A((4, 2))),
        V("ax2", lambda a, b: np.tensordot(a, b, 2), _X3, A((3, 4))),
        V("pairs", lambda a, b: np.tensordot(a, b, ([0], [1])), _X, A((2, 3))),
        V("int", lambda a, b: np.tensordot(a, b, 1), _I, A((4, 2), I64)),
        V("c", lambda a, b: np.tensordot(a, b, 1), _C, A((4, 2), F32)),
        V("ax0", lambda a, b: np.tensordot(a, b, 0), _V5, _W3),
    ]


@spec("np.einsum")
def _einsum():
    return [
        V("mm", lambda a, b: np.einsum("ij,jk->ik", a, b), _X, A((4, 2))),
        V("trace", lambda a: np.einsum("ii", a), A((3, 3))),
        V("diag", lambda a: np.einsum("ii->i", a), A((3, 3))),
        V("sum", lambda a: np.einsum("ij->", a), _I),
        V("outer", lambda a, b: np.einsum("i,j", a, b), _V5, _W3),
        V("c_f32", lambda a, b: np.einsum("ij,ij->i", a, b), _C, _F32),
        V("bool", lambda a, b: np.einsum("ij,jk", a, b), _X > 0, A((4, 2), B)),
        V("ellipsis", lambda a, b: np.einsum("...ij,jk->...ik", a, b), _X3, A((4, 2))),
        V("bad", lambda a: np.einsum("ij,jk", a, a), _X),
    ]


@spec("np.cross")
def _cross():
    return [
        V("3", np.cross, A((4, 3)), A((4, 3), seed=2)),
        V("2", np.cross, A((4, 2)), A((4, 2), seed=2)),
        V("2x3", np.cross, A((4, 2)), A((4, 3), seed=2)),
        V("int", np.cross, A((4, 3), I64), A((3,), I64)),
        V("axis", lambda a, b: np.cross(a, b, axis=0), A((3, 4)), A((3, 4), seed=2)),
        V("c", np.cross, A((2, 3), C128), A((2, 3), seed=2)),
        V("bad", np.cross, A((4,)), A((4,))),
    ]


for _fn in (np.convolve, np.correlate):
    SPECS[f"np.{_fn.__name__}"] = (
        lambda fn: (
            lambda: [
                V(f"{mode}_{label}", lambda a, v, mode=mode: fn(a, v, mode), a, v)
                for mode in ("full", "same", "valid")
                for label, a, v in [
                    ("f64", A((6,)), A((3,), seed=2)),
                    ("short_first", A((3,)), A((6,), seed=2)),
                    ("c128", A((5,), C128), A((3,), C128, 2)),
                    ("c_f", A((5,), C128), A((3,), seed=2)),
                    ("int", A((5,), I64), A((3,), I64, 2)),
                    ("f32", A((5,), F32), A((3,), F32, 2)),
                    ("empty", A((0,)), A((3,))),
                ]
            ]
        )
    )(_fn)


# linalg (values against NumPy here; derivatives in test_linalg_fidelity.py)
def _mats(fn, square=True, extra=()):
    out = [
        V("f64", fn, nonsym(3)),
        V("f32", fn, nonsym(3, F32)),
        V("c128", fn, nonsym(3, C128)),
        V("batch", fn, np.stack([nonsym(3, seed=1), nonsym(3, seed=2)])),
        V("int", fn, nonsym(3).round().astype(I64)),
        V("spd", fn, spd(3)),
        V("empty", fn, np.zeros((0, 0))),
        V("1x1", fn, np.array([[2.0]])),
        V("neg", fn, nonsym(3)[::-1]),
    ]
    if not square:
        out += [V("wide", fn, A((2, 4))), V("tall", fn, A((4, 2)))]
    else:
        out += [V("nonsquare", fn, A((2, 3)))]
    return out + [V(label, f, *xs) for label, f, *xs in extra]


for _name in ["det", "inv", "slogdet", "eigvals", "eig"]:
    SPECS[f"np.linalg.{_name}"] = (lambda fn: lambda: _mats(fn))(getattr(np.linalg, _name))
for _name in ["eigh", "eigvalsh", "cholesky"]:
    SPECS[f"np.linalg.{_name}"] = (
        lambda fn: (
            lambda: _mats(
                fn,
                extra=[
                    (
                        "upper",
                        lambda a: fn(a, UPLO="U") if fn is not np.linalg.cholesky else fn(a, upper=True),
                        spd(3),
                    )
                ],
            )
        )
    )(getattr(np.linalg, _name))
SPECS["np.linalg.pinv"] = lambda: _mats(np.linalg.pinv, square=False)
SPECS["np.linalg.svd"] = lambda: _mats(
    np.linalg.svd,
    square=False,
    extra=[
        ("novec", lambda a: np.linalg.svd(a, compute_uv=False), A((3, 4))),
        ("reduced", lambda a: np.linalg.svd(a, full_matrices=False), A((4, 2))),
    ],
)
SPECS["np.linalg.qr"] = lambda: _mats(
    np.linalg.qr,
    square=False,
    extra=[
        ("complete", lambda a: np.linalg.qr(a, mode="complete"), A((4, 2))),
        ("r", lambda a: np.linalg.qr(a, mode="r"), A((4, 2))),
    ],
)
SPECS["np.linalg.matrix_power"] = lambda: [
    V(f"{label}_{k}", lambda a, k=k: np.linalg.matrix_power(a, k), x)
    for k in (0, 1, 3, -2)
    for label, x in [
        ("f64", nonsym(3)),
        ("int", nonsym(3).round().astype(I64)),
        ("c", nonsym(3, C128)),
        ("f32", nonsym(3, F32)),
    ]
]
SPECS["np.linalg.solve"] = lambda: [
    V("vec", np.linalg.solve, nonsym(3), A((3,))),
    V("mat", np.linalg.solve, nonsym(3), A((3, 2))),
    V("f32", np.linalg.solve, nonsym(3, F32), A((3,), F32)),
    V("c", np.linalg.solve, nonsym(3, C128), A((3,))),
    V("int", np.linalg.solve, nonsym(3).round().astype(I64), A((3,), I64)),
    V("batch", np.linalg.solve, np.stack([nonsym(3), nonsym(3, seed=2)]), A((2, 3, 1))),
    V("singular", np.linalg.solve, np.ones((3, 3)), A((3,))),
]
SPECS["np.linalg.lstsq"] = lambda: [
    V("tall", lambda a, b: np.linalg.lstsq(a, b), A((5, 3)), A((5,))),
    V("wide", lambda a, b: np.linalg.lstsq(a, b), A((2, 3)), A((2, 2))),
    V("f32", lambda a, b: np.linalg.lstsq(a, b), A((5, 3), F32), A((5,), F32)),
    V("c", lambda a, b: np.linalg.lstsq(a, b), A((5, 3), C128), A((5,))),
]
SPECS["np.linalg.norm"] = lambda: (
    [
        V(f"{label}_{o}_{ax}", lambda a, o=o, ax=ax: np.linalg.norm(a, o, ax), x)
        for label, x in [("f64", _X), ("f32", _F32), ("c128", _C), ("int", _I)]
        for o, ax in [
            (None, None),
            (None, 1),
            (1, None),
            (2, None),
            ("fro", None),
            ("nuc", None),
            (np.inf, None),
            (-np.inf, 0),
            (3, 1),
            (0, 1),
            (-1, None),
        ]
    ]
    + [
        V("vec", np.linalg.norm, _V5),
        V("keep", lambda a: np.linalg.norm(a, axis=1, keepdims=True), _X),
        V("empty", np.linalg.norm, A((0,))),
    ]
)


# fft
def _fft_variants(fn, real_in=False, nd=False):
    out = [
        V("f64", fn, _X),
        V("f32", fn, _F32),
        V("c128", fn, _C),
        V("c64", fn, _C.astype(C64)),
        V("int", fn, _I),
        V("bool", fn, _X > 0),
        V("odd", fn, A((3, 5))),
        V("norm_ortho", lambda a: fn(a, norm="ortho"), _X),
        V("norm_forward", lambda a: fn(a, norm="forward"), _X),
        V("3d", fn, _X3),
        V("neg", fn, A((4, 3), view="neg")),
    ]
    if nd:
        out += [V("s", lambda a: fn(a, s=(4, 6)), _X), V("axes", lambda a: fn(a, axes=(0, 2)), _X3)]
    else:
        out += [
            V("n", lambda a: fn(a, n=6), _X),
            V("n_short", lambda a: fn(a, n=2), _X),
            V("axis0", lambda a: fn(a, axis=0), _X),
            V("1d", fn, _V5),
        ]
    return out


for _name in ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]:
    SPECS[f"np.fft.{_name}"] = (lambda fn: lambda: _fft_variants(fn))(getattr(np.fft, _name))
for _name in ["fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn", "irfftn"]:
    SPECS[f"np.fft.{_name}"] = (lambda fn: lambda: _fft_variants(fn, nd=True))(getattr(np.fft, _name))
for _name in ["fftshift", "ifftshift"]:
    SPECS[f"np.fft.{_name}"] = (
        lambda fn: (
            lambda: [
                V("1d", fn, _V5),
                V("2d", fn, _X),
                V("axes", lambda a: fn(a, axes=1), _X3),
                V("int", fn, _I),
                V("c", fn, _C),
            ]
        )
    )(getattr(np.fft, _name))


# shapes and joins (values only; views in test_views.py)
def _shape_variants(fn, inputs=None):
    inputs = inputs or [
        ("f64", _X),
        ("3d", _X3),
        ("int", _I),
        ("c", _C),
        ("bool", _X > 0),
        ("1d", _V5),
        ("0d", np.ones(()) * 2.0),
        ("empty", A((0, 3))),
        ("step", A((3, 4), view="step")),
    ]
    return [V(label, fn, x) for label, x in inputs]


_SIMPLE_SHAPE = {
    "np.ravel": np.ravel,
    "np.atleast_1d": np.atleast_1d,
    "np.atleast_2d": np.atleast_2d,
    "np.atleast_3d": np.atleast_3d,
    "np.copy": np.copy,
    "np.transpose": np.transpose,
    "np.squeeze": np.squeeze,
    "np.ndim": np.ndim,
    "np.shape": np.shape,
    "np.size": np.size,
    "np.zeros_like": np.zeros_like,
    "np.ones_like": np.ones_like,
    "np.diag": np.diag,
    "np.result_type": lambda a: np.zeros(2, np.result_type(a, np.float32)),
    "np.flipud": np.flipud,
    "np.fliplr": np.fliplr,
    "np.rot90": np.rot90,
    "np.flip": np.flip,
    "np.tril": np.tril,
    "np.triu": np.triu,
    "np.diff": np.diff,
    "np.ediff1d": np.ediff1d,
    "np.gradient": np.gradient,
}
for _name, _fn in _SIMPLE_SHAPE.items():
    SPECS[_name] = (lambda fn: lambda: _shape_variants(fn))(_fn)

_EXTRA_SHAPE = {
    "np.reshape": [
        ("f64", lambda a: np.reshape(a, (4, 3)), _X),
        ("m1", lambda a: np.reshape(a, -1), _X3),
        ("bad", lambda a: np.reshape(a, (5, 3)), _X),
        ("T", lambda a: np.reshape(a, (12,)), _X.T),
    ],
    "np.expand_dims": [
        ("0", lambda a: np.expand_dims(a, 0), _X),
        ("m1", lambda a: np.expand_dims(a, -1), _I),
        ("tuple", lambda a: np.expand_dims(a, (0, 2)), _X),
        ("bad", lambda a: np.expand_dims(a, 5), _X),
    ],
    "np.broadcast_to": [
        ("f64", lambda a: np.broadcast_to(a, (2, 3, 4)), _X),
        ("bad", lambda a: np.broadcast_to(a, (3,)), _X),
        ("int", lambda a: np.broadcast_to(a, (3, 5)), A((5,), I64)),
    ],
    "np.moveaxis": [
        ("f64", lambda a: np.moveaxis(a, 0, -1), _X3),
        ("tuple", lambda a: np.moveaxis(a, (0, 1), (2, 0)), _X3),
    ],
    "np.swapaxes": [
        ("f64", lambda a: np.swapaxes(a, 0, 2), _X3),
        ("bad", lambda a: np.swapaxes(a, 0, 3), _X3),
    ],
    "np.rollaxis": [
        ("f64", lambda a: np.rollaxis(a, 2), _X3),
        ("start", lambda a: np.rollaxis(a, 0, 2), _X3),
    ],
    "np.roll": [
        ("flat", lambda a: np.roll(a, 2), _X),
        ("axis", lambda a: np.roll(a, -1, axis=1), _X),
        ("multi", lambda a: np.roll(a, (1, 2), axis=(0, 1)), _X),
        ("empty", lambda a: np.roll(a, 1), A((0,))),
    ],
    "np.repeat": [
        ("flat", lambda a: np.repeat(a, 2), _X),
        ("axis", lambda a: np.repeat(a, [1, 0, 2], axis=0), _X),
        ("int", lambda a: np.repeat(a, 3, axis=1), _I),
    ],
    "np.tile": [
        ("f64", lambda a: np.tile(a, 2), _X),
        ("tuple", lambda a: np.tile(a, (2, 1, 2)), _X),
        ("int", lambda a: np.tile(a, (2, 2)), _I),
    ],
    "np.pad": [
        ("const", lambda a: np.pad(a, 1), _X),
        ("pairs", lambda a: np.pad(a, ((1, 0), (0, 2))), _I),
        ("value", lambda a: np.pad(a, 1, constant_values=2.5), _F32),
        ("edge", lambda a: np.pad(a, 2, mode="edge"), _X),
        ("reflect", lambda a: np.pad(a, 2, mode="reflect"), _X),
    ],
    "np.diagonal": [
        ("f64", np.diagonal, _X),
        ("off", lambda a: np.diagonal(a, 1), _X),
        ("3d", lambda a: np.diagonal(a, 0, 1, 2), _X3),
        ("neg", lambda a: np.diagonal(a, -1), _I),
    ],
    "np.split": [
        ("n", lambda a: np.split(a, 2, axis=1), _X),
        ("idx", lambda a: np.split(a, [1, 3]), _V5),
        ("bad", lambda a: np.split(a, 2), _V5),
    ],
    "np.array_split": [
        ("n", lambda a: np.array_split(a, 3), _V5),
        ("axis", lambda a: np.array_split(a, 3, axis=1), _X),
    ],
    "np.vsplit": [("n", lambda a: np.vsplit(a, 3), _X), ("1d", lambda a: np.vsplit(a, 1), _V5)],
    "np.hsplit": [("n", lambda a: np.hsplit(a, 2), _X), ("1d", lambda a: np.hsplit(a, 5), _V5)],
    "np.dsplit": [("n", lambda a: np.dsplit(a, 2), _X3), ("2d", lambda a: np.dsplit(a, 2), _X)],
    "np.concatenate": [
        ("0", lambda a, b: np.concatenate([a, b]), _X, _Y),
        ("1", lambda a, b: np.concatenate([a, b], 1), _X, _I),
        ("none", lambda a, b: np.concatenate([a, b], axis=None), _X, _V5),
        ("mixed", lambda a, b: np.concatenate([a, b]), _F32, _I),
        ("dtype", lambda a, b: np.concatenate([a, b], dtype=F32), _X, _Y),
        ("bad", lambda a, b: np.concatenate([a, b]), _X, _V5),
    ],
    "np.stack": [
        ("0", lambda a, b: np.stack([a, b]), _X, _Y),
        ("m1", lambda a, b: np.stack([a, b], -1), _X, _I),
        ("bad", lambda a, b: np.stack([a, b]), _X, _V5),
    ],
    "np.hstack": [
        ("2d", lambda a, b: np.hstack([a, b]), _X, _Y),
        ("1d", lambda a, b: np.hstack([a, b]), _V5, _W3),
    ],
    "np.vstack": [
        ("2d", lambda a, b: np.vstack([a, b]), _X, _Y),
        ("1d", lambda a, b: np.vstack([a, b]), _V5, _V5),
    ],
    "np.row_stack": [("2d", lambda a, b: np.vstack([a, b]), _X, _Y)],
    "np.dstack": [
        ("2d", lambda a, b: np.dstack([a, b]), _X, _Y),
        ("1d", lambda a, b: np.dstack([a, b]), _V5, _V5),
    ],
    "np.column_stack": [
        ("1d", lambda a, b: np.column_stack([a, b]), _V5, _V5),
        ("2d", lambda a, b: np.column_stack([a, b]), _X, _I),
    ],
    "np.append": [
        ("flat", np.append, _X, _V5),
        ("axis", lambda a, b: np.append(a, b, axis=0), _X, _Y),
        ("int_f", np.append, _I, _F32),
    ],
    "np.meshgrid": [
        ("xy", np.meshgrid, _V5, _W3),
        ("ij", lambda a, b: np.meshgrid(a, b, indexing="ij"), _V5, _W3),
        ("sparse", lambda a, b: np.meshgrid(a, b, sparse=True), _V5, _W3),
        ("nocopy", lambda a, b: np.meshgrid(a, b, copy=False), _V5, _W3),
        ("one", np.meshgrid, _V5),
        ("three", np.meshgrid, _V5, _W3, A((2,), I64)),
        ("2d_in", np.meshgrid, _X, _W3),
    ],
    "np.take": [
        ("flat", lambda a: np.take(a, [0, 5, -1]), _X),
        ("axis", lambda a: np.take(a, [2, 0], axis=1), _X),
        ("wrap", lambda a: np.take(a, [7, -9], axis=1, mode="wrap"), _X),
        ("clip", lambda a: np.take(a, [7, -9], axis=1, mode="clip"), _X),
        ("oob", lambda a: np.take(a, [20]), _X),
    ],
    "np.take_along_axis": [
        ("1", lambda a: np.take_along_axis(a, np.argsort(_X, 1), 1), _X),
        ("none", lambda a: np.take_along_axis(a, np.array([0, 11]), None), _X),
    ],
    "np.put_along_axis": [("1", lambda a, v: _put_along(a, v), _X, _W3)],
    "np.copyto": [
        ("f64", lambda a, b: _copyto(a, b), _X, _Y),
        ("bcast", lambda a, b: _copyto(a, b), _X, _V5[:4]),
        ("cast", lambda a, b: _copyto(a, b), _X, _I),
    ],
    "np.full_like": [
        ("f64", lambda a: np.full_like(a, 2.5), _X),
        ("int", lambda a: np.full_like(a, 2.5), _I),
        ("dtype", lambda a: np.full_like(a, 2, dtype=F32), _X),
    ],
    "np.linspace": [
        ("f", lambda a, b: np.linspace(a, b, 5), np.float64(0.5) * np.ones(()), np.ones(()) * 2),
        ("arr", lambda a, b: np.linspace(a, b, 4), _W3, _W3 + 1),
        ("noend", lambda a, b: np.linspace(a, b, 4, endpoint=False), np.zeros(()), np.ones(())),
        ("int_dtype", lambda a, b: np.linspace(a, b, 7, dtype=I64), np.zeros(()), np.ones(()) * 10),
        ("f32", lambda a, b: np.linspace(a, b, 5), np.zeros((), F32), np.ones((), F32)),
        ("retstep", lambda a, b: np.linspace(a, b, 5, retstep=True), np.zeros(()), np.ones(())),
        ("axis", lambda a, b: np.linspace(a, b, 4, axis=1), _W3, _W3 + 1),
        ("c", lambda a, b: np.linspace(a, b, 3), np.ones((), C128), np.ones(()) * 2),
        ("one", lambda a, b: np.linspace(a, b, 1), np.zeros(()), np.ones(())),
    ],
    "np.trapezoid": [
        ("f64", np.trapezoid, _X),
        ("x", lambda y, x: np.trapezoid(y, x), _X, np.sort(A((4,)))),
        ("dx", lambda y: np.trapezoid(y, dx=0.5, axis=0), _X),
        ("int", np.trapezoid, _I),
        ("f32", np.trapezoid, _F32),
        ("c", np.trapezoid, _C),
    ],
    "np.interp": [
        ("f64", np.interp, _X, np.sort(_V5), _V5),
        ("f32", np.interp, _F32, np.sort(_V5), _V5),
        ("c_fp", np.interp, _X, np.sort(_V5), A((5,), C128)),
        ("int", np.interp, _I, np.arange(-2.0, 3.0), _V5),
        ("lr", lambda x, xp, fp: np.interp(x, xp, fp, left=-9, right=9), _X, np.sort(_V5), _V5),
        ("nan", np.interp, _NAN, np.sort(_V5), _V5),
        ("period", lambda x, xp, fp: np.interp(x, xp, fp, period=2.0), _X, np.sort(_V5), _V5),
    ],
    "np.select": [
        ("f64", lambda c1, c2, a, b: np.select([c1, c2], [a, b]), _X > 0, _Y > 0, _X, _Y),
        ("default", lambda c1, a: np.select([c1], [a], default=-1.0), _X > 0, _I),
        ("f32", lambda c1, a: np.select([c1], [a]), _X > 0, _F32),
    ],
}
for _name, _vs in _EXTRA_SHAPE.items():
    SPECS[_name] = (lambda vs: lambda: [V(label, f, *xs) for label, f, *xs in vs])(_vs)


def _put_along(a, v):
    z = a * 1.0
    np.put_along_axis(z, np.array([[1], [3], [0]]), v[:, None] * 2.0, axis=1)
    return z


def _copyto(a, b):
    z = a.copy()
    np.copyto(z, b)
    return z


# -- every dtype through the single-array and two-array functions ---------------------------
def dtype_sweep(f, shape=(3, 4)):
    """``f`` of one array of every dtype, with NaN/inf/-0.0 in the inexact ones."""
    out = [V(f"sweep_{np.dtype(d).name}", f, A(shape, d, seed=21)) for d in DTYPES]
    out += [
        V(f"sweep_special_{np.dtype(d).name}", f, A(shape, d, seed=22, special=True)) for d in (F16, F32, C64)
    ]
    return out


_PAIRS = [(F32, F32), (F32, F64), (I32, F32), (I8, U8), (B, B), (B, F16), (C64, F32), (I64, C128), (F16, F16)]


def pair_sweep(f, shape_a=(3, 4), shape_b=(4, 2)):
    """``f`` of two arrays over mixed dtype pairs."""
    return [
        V(f"pair_{np.dtype(da).name}_{np.dtype(db).name}", f, A(shape_a, da, 23), A(shape_b, db, 24))
        for da, db in _PAIRS
    ]


def _extend(name, extra):
    base = SPECS[name]
    SPECS[name] = lambda: base() + extra()


_SWEEP_ONE = {
    "np.sort": np.sort,
    "np.argsort": _stable_argsort,
    "np.cumsum": np.cumsum,
    "np.cumprod": np.cumprod,
    "np.nancumsum": np.nancumsum,
    "np.diff": np.diff,
    "np.ediff1d": np.ediff1d,
    "np.gradient": np.gradient,
    "np.trapezoid": np.trapezoid,
    "np.sinc": np.sinc,
    "np.angle": np.angle,
    "np.nan_to_num": np.nan_to_num,
    "np.median": lambda a: np.median(a, axis=1),
    "np.quantile": lambda a: np.quantile(a, 0.3),
    "np.percentile": lambda a: np.percentile(a, [25, 50]),
    "np.sum": np.sum,
    "np.prod": np.prod,
    "np.mean": np.mean,
    "np.var": lambda a: np.var(a, axis=0),
    "np.std": np.std,
    "np.nansum": np.nansum,
    "np.nanprod": np.nanprod,
    "np.nanmean": np.nanmean,
    "np.nanvar": np.nanvar,
    "np.nanstd": lambda a: np.nanstd(a, axis=1),
    "np.nanmax": np.nanmax,
    "np.nanmin": np.nanmin,
    "np.max": np.max,
    "np.min": np.min,
    "np.argmax": np.argmax,
    "np.argmin": np.argmin,
    "np.any": np.any,
    "np.all": np.all,
    "np.round": lambda a: np.round(a, 1),
    "np.clip": lambda a: np.clip(a, -1, 1),
    "np.unique": np.unique,
    "np.real_if_close": np.real_if_close,
    "np.fft.fft": np.fft.fft,
    "np.fft.ifft": np.fft.ifft,
    "np.fft.rfft": np.fft.rfft,
    "np.fft.irfft": np.fft.irfft,
    "np.fft.hfft": np.fft.hfft,
    "np.fft.ihfft": np.fft.ihfft,
    "np.fft.fft2": np.fft.fft2,
    "np.fft.rfftn": np.fft.rfftn,
    "np.fft.irfft2": np.fft.irfft2,
    "np.fft.fftshift": np.fft.fftshift,
    "np.trace": np.trace,
    "np.searchsorted": lambda a: np.searchsorted(np.sort(a[0]), a),
    "np.digitize": lambda a: np.digitize(a, np.sort(a[0])),
    "np.interp": lambda a: np.interp(a, np.sort(a[0].real if a.dtype.kind == "c" else a[0]), a[1]),
    "np.isclose": lambda a: np.isclose(a, a[0]),
    "np.allclose": lambda a: np.allclose(a, a[:1]),
}
# NumPy's initial= (a starting value in every slice; max/min of an empty slice)
for _name, _fn in [
    ("np.sum", np.sum),
    ("np.prod", np.prod),
    ("np.max", np.max),
    ("np.min", np.min),
    ("np.amax", np.amax),
    ("np.amin", np.amin),
]:
    _extend(
        _name,
        (
            lambda fn: (
                lambda: [
                    V(f"initial_{label}_{v}", lambda a, v=v: fn(a, axis=0, initial=v), x)
                    for label, x in [
                        ("f64", _X),
                        ("int", _I),
                        ("f32", _F32),
                        ("empty", A((0, 3))),
                        ("nan", _NAN),
                        ("bool", _X > 0),
                    ]
                    for v in (1, 0.5, -1.5)
                ]
            )
        )(_fn),
    )

# where= masks (broadcast), with initial= where NumPy needs one
_MASK = A((1, 4), B, 31)
for _name, _fn in [
    ("np.sum", np.sum),
    ("np.prod", np.prod),
    ("np.max", np.max),
    ("np.min", np.min),
    ("np.amax", np.amax),
    ("np.amin", np.amin),
]:
    _extend(
        _name,
        (
            lambda fn: (
                lambda: [
                    V(f"where_{label}_{k}", f, x, _MASK)
                    for label, x in [("f64", _X), ("int", _I), ("f32", _F32), ("nan", _NAN), ("bool", _X > 0)]
                    for k, f in enumerate(
                        [
                            lambda a, m: fn(a, where=m),
                            lambda a, m: fn(a, axis=1, where=m, initial=-2),
                            lambda a, m: fn(a, axis=0, where=m, initial=0.5, keepdims=True),
                        ]
                    )
                ]
            )
        )(_fn),
    )

for _name, _f in _SWEEP_ONE.items():
    _extend(_name, (lambda f: lambda: dtype_sweep(f))(_f))

_SWEEP_TWO = {
    "np.dot": np.dot,
    "np.matmul": np.matmul,
    "np.inner": lambda a, b: np.inner(a, b.T),
    "np.outer": np.outer,
    "np.kron": np.kron,
    "np.tensordot": lambda a, b: np.tensordot(a, b, 1),
    "np.einsum": lambda a, b: np.einsum("ij,jk->ik", a, b),
    "np.convolve": lambda a, b: np.convolve(a[0], b[0]),
    "np.correlate": lambda a, b: np.correlate(a[0], b[:, 0], "full"),
    "np.cross": lambda a, b: np.cross(a[:, :3], b[:3].T),
    "np.where": lambda a, b: np.where(a[:, :2] > b[:3].real, a[:, :2], b[:3]),
    "np.select": lambda a, b: np.select([a[:, :2] > 0], [b[:3]], default=1),
    "np.isclose": lambda a, b: np.isclose(a[:, :2], b[:3]),
    "ufunc.float_power": lambda a, b: np.float_power(a[:, :2], b[:3]),
    "ufunc.heaviside": lambda a, b: np.heaviside(a[:, :2], b[:3]),
    "ufunc.fmod": lambda a, b: np.fmod(a[:, :2], b[:3]),
    "ufunc.logaddexp2": lambda a, b: np.logaddexp2(a[:, :2], b[:3]),
    "ufunc.divmod": lambda a, b: np.divmod(a[:, :2], b[:3]),
}
for _name, _f in _SWEEP_TWO.items():
    _extend(_name, (lambda f: lambda: pair_sweep(f))(_f))


# -- Tracer methods ----------------------------------------------------------------------
_METHOD_CALLS = {
    "ndim": [lambda a: a.ndim],
    "size": [lambda a: a.size],
    "shape": [lambda a: a.shape],
    "device": [lambda a: np.full(a.shape, 2.0, device=a.device) * a],
    "dtype": [lambda a: np.zeros(2, a.dtype)],
    "item": [lambda a: a[0, 0].item() * a],
    "tolist": [lambda a: np.array(a.tolist())],
    "real": [lambda a: a.real],
    "imag": [lambda a: a.imag],
    "conj": [lambda a: a.conj()],
    "conjugate": [lambda a: a.conjugate()],
    "round": [lambda a: a.round(), lambda a: a.round(1)],
    "T": [lambda a: a.T],
    "mT": [lambda a: a.mT],
    "reshape": [lambda a: a.reshape(4, 3), lambda a: a.reshape((-1,))],
    "transpose": [lambda a: a.transpose(), lambda a: a.transpose(1, 0)],
    "astype": [
        lambda a: a.astype(F32),
        lambda a: a.astype(I64),
        lambda a: a.astype(a.dtype),
        lambda a: a.astype(C128),
        lambda a: a.astype(B),
    ],
    "ravel": [lambda a: a.ravel()],
    "flatten": [lambda a: a.flatten()],
    "squeeze": [lambda a: a[None].squeeze()],
    "swapaxes": [lambda a: a.swapaxes(0, 1)],
    "copy": [lambda a: a.copy()],
    "dot": [lambda a: a.dot(a.T)],
    "clip": [lambda a: a.clip(-0.5, 0.5), lambda a: a.clip(max=0)],
    "repeat": [lambda a: a.repeat(2), lambda a: a.repeat(2, axis=0)],
    "diagonal": [lambda a: a.diagonal(), lambda a: a.diagonal(1)],
    "trace": [lambda a: a.trace(), lambda a: a.trace(dtype=F32)],
    "nonzero": [lambda a: a.nonzero()],
}
for _m in ["sum", "prod", "mean"]:
    _METHOD_CALLS[_m] = [
        lambda a, m=_m: getattr(a, m)(),
        lambda a, m=_m: getattr(a, m)(axis=0),
        lambda a, m=_m: getattr(a, m)(axis=1, keepdims=True),
        lambda a, m=_m: getattr(a, m)(dtype=F32),
    ]
for _m in ["var", "std"]:
    _METHOD_CALLS[_m] = [
        lambda a, m=_m: getattr(a, m)(),
        lambda a, m=_m: getattr(a, m)(axis=0, ddof=1),
        lambda a, m=_m: getattr(a, m)(dtype=F32),
    ]
for _m in ["max", "min", "argmax", "argmin", "any", "all"]:
    _METHOD_CALLS[_m] = [
        lambda a, m=_m: getattr(a, m)(),
        lambda a, m=_m: getattr(a, m)(axis=1),
        lambda a, m=_m: getattr(a, m)(axis=0, keepdims=True),
    ]
_METHOD_CALLS["cumsum"] = [lambda a: a.cumsum(), lambda a: a.cumsum(axis=1), lambda a: a.cumsum(dtype=F32)]

_METHOD_INPUTS = [("f64", _X), ("f32", _F32), ("int", _I), ("bool", _X > 0), ("c128", _C), ("nan", _NAN)]
for _m, _calls in _METHOD_CALLS.items():
    SPECS[f"ndarray.{_m}"] = (
        lambda calls: (
            lambda: [
                V(f"{label}_{k}", call, x) for k, call in enumerate(calls) for label, x in _METHOD_INPUTS
            ]
        )
    )(_calls)

SPECS["ndarray.view"] = lambda: [V(label, lambda a: a.view(), x) for label, x in _METHOD_INPUTS]
# the memory layout is not traced: reading it is refused (REFUSED below)
_LAYOUT = tuple(f"ndarray.{m}" for m in ("base", "data", "flat", "strides"))
for _m in ("base", "data", "flat", "strides"):
    SPECS[f"ndarray.{_m}"] = (lambda m: lambda: [V("f64", lambda a: getattr(a, m), _X)])(_m)

# Operators reach the ufuncs through the same handlers; a few spellings as a check on the path.
SPECS["ndarray.operators"] = lambda: [
    V(f"{label}_{k}", f, x, y)
    for k, f in enumerate(
        [
            lambda a, b: a + b,
            lambda a, b: a - b,
            lambda a, b: a * b,
            lambda a, b: a / b,
            lambda a, b: a // b,
            lambda a, b: a % b,
            lambda a, b: a**b,
            lambda a, b: -a,
            lambda a, b: abs(a),
            lambda a, b: a == b,
            lambda a, b: a < b,
            lambda a, b: divmod(a, b),
        ]
    )
    for label, (x, y) in binary_inputs()[::3]
]


# -- the rest of NumPy's functions (np_polynomial, np_statistics, np_setops, np_arrays,
# np_linalg_more): values, dtypes and fresh arrays against NumPy's own functions ----------
_P3, _P5 = A((3,), F64, 41), A((5,), F64, 42)
_Z5 = np.array([0.0, 0.0, 1.0, -2.0, 3.0])
_NANS = A((3, 5), F64, 43)
_NANS[0, 1] = _NANS[1, 3] = np.nan
_NANS[2, :] = np.nan
_PTS = A((20, 2), F64, 44)
_W20 = A((20,), F64, 45, lo=0.0, hi=1.0)
_SQ = nonsym(3, seed=46)
_T4 = (np.eye(6).reshape(6, 2, 3) + 0.1 * A((6, 2, 3), F64, 47)).copy()
_E4 = (np.eye(6).reshape(2, 3, 6) + 0.1 * A((2, 3, 6), F64, 48)).copy()
_SET_A = np.array([3.0, 1, 2, 1, 5, np.nan])
_SET_B = np.array([[2.0, 7], [1, np.nan]])
_PHASE = np.cumsum(A((12,), F64, 49, lo=-3, hi=3))


def _write(fn):
    """``fn(b, *rest)`` writes into ``b``, a traced copy of the first operand."""
    def f(a, *rest):
        b = a * 1
        fn(b, *rest)
        return b
    return f


def _empty_like(a):
    e = np.empty_like(a)
    e[...] = a * 2
    return e


_MORE_SPECS = {
    "np.polyval": [V("f64", np.polyval, _P3, _V5), V("int_p", lambda p: np.polyval(p, 3), _I[0]),
                   V("f32_x", lambda x: np.polyval([1, 2], x), _F32),
                   V("2d_x", np.polyval, _P3, _X)],
    "np.poly": [V("roots", np.poly, _V5), V("f32", np.poly, _F32[0]), V("int", np.poly, _I[0]),
                V("conj", np.poly, np.array([1 + 1j, 1 - 1j])),
                V("complex", np.poly, np.array([1 + 1j, 2 - 1j])), V("matrix", np.poly, _SQ)],
    "np.polyadd": [V("f64", np.polyadd, _P3, _V5), V("int_f", np.polyadd, _I[0], _P3)],
    "np.polysub": [V("f64", np.polysub, _V5, _P3), V("int_f", np.polysub, _I[0, :2], _P3)],
    "np.polymul": [V("zeros", np.polymul, _Z5, _P3), V("int", np.polymul, _I[0], _I[1])],
    "np.polyder": [V("m1", np.polyder, _V5), V("m2", lambda p: np.polyder(p, 2), _I[0]),
                   V("m5", lambda p: np.polyder(p, 5), _V5)],
    "np.polyint": [V("m1", np.polyint, _V5), V("k", lambda p: np.polyint(p, 2, k=[1.0, 2]), _I[0]),
                   V("f32", lambda p: np.polyint(p, 3, k=3), _F32[0])],
    "np.polydiv": [V("f64", np.polydiv, _V5, _P3[:2]), V("exact", np.polydiv, np.array([1.0, 3, 2]),
                                                         np.array([1.0, 1]))],
    "np.roots": [V("zeros", np.roots, _Z5), V("f64", np.roots, _V5),
                 V("real", np.roots, np.array([1.0, -3, 2]))],
    "np.vander": [V("f64", np.vander, _V5), V("int_inc", lambda x: np.vander(x, 3, increasing=True),
                                              _I[0]),
                  V("zero_cols", lambda x: np.vander(x, 0), _V5), V("bool", np.vander, _X[0] > 0),
                  V("f32", lambda x: np.vander(x, 6), _F32[0])],
    "np.polyfit": [V("deg2", lambda x, y: np.polyfit(x, y, 2), np.linspace(0, 1, 7), A((7,), F64, 50)),
                   V("w_2d", lambda x, y: np.polyfit(x, y, 2, w=x + 1), np.linspace(0, 1, 7),
                     A((7, 2), F64, 51)),
                   V("full", lambda x, y: np.polyfit(x, y, 3, full=True), np.linspace(0, 1, 7),
                     A((7,), F64, 52)),
                   V("cov", lambda x, y: np.polyfit(x, y, 1, cov=True), np.linspace(0, 1, 7),
                     A((7,), F64, 53))],
    "np.ptp": [*dtype_sweep(np.ptp), V("axis", lambda a: np.ptp(a, axis=1, keepdims=True), _X)],
    "np.count_nonzero": [*dtype_sweep(np.count_nonzero),
                         V("axis", lambda a: np.count_nonzero(a, axis=0), _X > 0)],
    "np.cov": [V("f64", np.cov, _X), V("cols", lambda a: np.cov(a, rowvar=False), _X),
               V("xy", np.cov, _X, _Y), V("bias", lambda a: np.cov(a, bias=True), _V5),
               V("f32_ddof", lambda a: np.cov(a, ddof=2), _F32), V("c128", np.cov, _C),
               V("aweights", lambda a, w: np.cov(a, aweights=w), _X, np.abs(_V5[:4]) + 0.1),
               V("dtype", lambda a: np.cov(a, dtype=F32), _X), V("int", np.cov, _I)],
    "np.corrcoef": [V("f64", np.corrcoef, _X), V("xy", np.corrcoef, _V5, _V5 ** 2),
                    V("c128", np.corrcoef, _C), V("1d", np.corrcoef, _V5)],
    "np.bincount": [V("int", np.bincount, np.array([0, 3, 1, 3, 7])),
                    V("minlength", lambda x: np.bincount(x, minlength=10), np.array([0, 3, 1, 3])),
                    V("weights", lambda w: np.bincount(np.array([0, 3, 1, 3]), weights=w), _P3[:4]
                      if _P3.size >= 4 else _V5[:4]),
                    V("weights_f32", lambda w: np.bincount(np.array([0, 3, 1, 3]), weights=w),
                      _F32[0])],
    "np.histogram": [V("f64", np.histogram, _V5),
                     V("density", lambda a: np.histogram(a, 4, density=True), _X),
                     V("range", lambda a: np.histogram(a, 3, range=(-1, 1)), _X),
                     V("weights", lambda a, w: np.histogram(a, 5, weights=w), _X, _Y),
                     V("edges_w", lambda a, w: np.histogram(a, np.array([-2, -0.5, 0, 0.3, 2.0]),
                                                            weights=w), _X, _Y),
                     V("edges_density", lambda a: np.histogram(a, np.array([-2, -0.5, 0, 0.3, 2.0]),
                                                               density=True), _X),
                     V("f32", np.histogram, _F32), V("int", np.histogram, _I),
                     V("flat", np.histogram, np.array([2.0, 2.0]))],
    "np.histogram_bin_edges": [V("f64", lambda a: np.histogram_bin_edges(a, 6), _X),
                               V("f32", np.histogram_bin_edges, _F32)],
    "np.histogramdd": [V("f64", np.histogramdd, _PTS),
                       V("weights", lambda p, w: np.histogramdd(p, bins=(3, 4), weights=w), _PTS, _W20),
                       V("edges_density", lambda p: np.histogramdd(
                           p, bins=[np.array([-2, 0, 2.0]), 3], density=True), _PTS),
                       V("f32_range", lambda p: np.histogramdd(p, 3, range=[(-1, 1), (-1, 1)]),
                         _PTS.astype(F32))],
    "np.histogram2d": [V("f64", np.histogram2d, _PTS[:, 0], _PTS[:, 1]),
                       V("weights_density", lambda x, y, w: np.histogram2d(
                           x, y, bins=[3, 5], weights=w, density=True), _PTS[:, 0], _PTS[:, 1], _W20)],
    "np.nanmedian": [V("all", np.nanmedian, _NANS), V("axis1", lambda a: np.nanmedian(a, axis=1), _NANS),
                     V("keepdims", lambda a: np.nanmedian(a, axis=0, keepdims=True), _NANS),
                     V("f32", lambda a: np.nanmedian(a, axis=1), _NAN32), V("no_nan", np.nanmedian, _X)],
    "np.nanquantile": [V("axis1", lambda a: np.nanquantile(a, 0.3, axis=1), _NANS),
                       V("list", lambda a: np.nanquantile(a, [0.1, 0.6], axis=0), _NANS),
                       *[V(f"method_{m}", (lambda m: lambda a: np.nanquantile(
                           a, [0.0, 0.25, 0.5, 1.0], axis=1, method=m))(m), _NANS)
                         for m in ("lower", "higher", "nearest", "midpoint")]],
    "np.nanpercentile": [V("all", lambda a: np.nanpercentile(a, [10, 90]), _NANS),
                         V("f32", lambda a: np.nanpercentile(a, 50, axis=0), _NAN32)],
    "np.nanargmin": [V("axis1", lambda a: np.nanargmin(a, axis=1), _NANS[:2]),
                     V("int", np.nanargmin, _I), V("all_nan", lambda a: np.nanargmin(a, axis=1), _NANS)],
    "np.nanargmax": [V("all", np.nanargmax, _NANS), V("axis0", lambda a: np.nanargmax(a, 0), _X)],
    "np.nancumprod": [V("axis1", lambda a: np.nancumprod(a, axis=1), _NANS),
                      V("int", np.nancumprod, _I), V("f32", np.nancumprod, _NAN32)],
    "np.cumulative_sum": [V("initial", lambda a: np.cumulative_sum(a, axis=1, include_initial=True), _X),
                          V("dtype", lambda a: np.cumulative_sum(a, axis=0, dtype=F32), _X),
                          V("int32", np.cumulative_sum, _I[0].astype(I32)),
                          V("2d_no_axis", np.cumulative_sum, _X)],
    "np.cumulative_prod": [V("1d", np.cumulative_prod, _V5),
                           V("initial", lambda a: np.cumulative_prod(a, axis=0, include_initial=True), _X)],
    "np.unwrap": [V("f64", np.unwrap, _PHASE), V("axis0", lambda a: np.unwrap(a, axis=0),
                                                 np.stack([_PHASE, 2 * _PHASE], 1)),
                  V("int_period", lambda a: np.unwrap(a, period=6), np.array([0, 5, 2, 7, 1])),
                  V("f32", np.unwrap, _PHASE.astype(F32)),
                  V("boundary", lambda a: np.unwrap(a, period=5), np.array([0.0, 2.5, 5, -2.5, 0]))],
    "np.i0": [V("f64", np.i0, np.array([0.0, 1, -3, 8, 8.5, 20, -30])), V("int", np.i0, _I),
              V("f32", np.i0, _F32), V("complex", np.i0, _C)],
    "np.isin": [V("f64", np.isin, _SET_A, _SET_B), V("invert", lambda a, b: np.isin(a, b, invert=True),
                                                      _SET_B, _SET_A),
                V("list", lambda a: np.isin(a, [1, 5]), _SET_A),
                V("empty", lambda a: np.isin(a, []), _SET_A)],
    "np.union1d": [V("f64", np.union1d, _SET_A, _SET_B)],
    "np.setdiff1d": [V("f64", np.setdiff1d, _SET_A, _SET_B),
                     V("unique", lambda a, b: np.setdiff1d(a, b, True), _SET_A[:5], _SET_B)],
    "np.intersect1d": [V("f64", np.intersect1d, _SET_A, _SET_B),
                       V("indices", lambda a, b: np.intersect1d(a, b, return_indices=True), _SET_A, _SET_B)],
    "np.setxor1d": [V("f64", np.setxor1d, _SET_A, _SET_B)],
    **{f"np.{n}": [V("f64", (lambda n: lambda a: tuple(getattr(np, n)(a)) if n != "unique_values"
                             else np.unique_values(a))(n), _SET_A),
                   V("2d", (lambda n: lambda a: tuple(getattr(np, n)(a)) if n != "unique_values"
                            else np.unique_values(a))(n), _SET_B),
                   V("int", (lambda n: lambda a: tuple(getattr(np, n)(a)) if n != "unique_values"
                             else np.unique_values(a))(n), np.array([3, 1, 2, 1, 10, -5]))]
       for n in ("unique_values", "unique_counts", "unique_inverse", "unique_all")},
    "np.empty_like": [V("f64", _empty_like, _X), V("f32", _empty_like, _F32)],
    "np.broadcast_arrays": [V("f64", np.broadcast_arrays, _X, _X[0]),
                            V("plain", lambda a: np.broadcast_arrays(a, np.ones((2, 1, 1))), _X)],
    "np.diag_indices_from": [V("f64", np.diag_indices_from, _SQ)],
    "np.tril_indices_from": [V("f64", lambda a: np.tril_indices_from(a, 1), _X)],
    "np.triu_indices_from": [V("f64", np.triu_indices_from, _X)],
    "np.block": [V("2x2", lambda a: np.block([[a, a[:, :2]], [a[:1], a[:1, :2]]]), _X),
                 V("1d", lambda a: np.block([a, _V5]), _V5), V("array", np.block, _X),
                 V("ndmin", lambda a: np.block([[a], [1.0]]), _V5[:1])],
    "np.resize": [V("grow", lambda a: np.resize(a, (5, 5)), _X), V("shrink", lambda a: np.resize(a, 3), _X)],
    "np.unstack": [V("axis1", lambda a: np.unstack(a, axis=1), _X)],
    "np.ix_": [V("f64", np.ix_, _V5, _P3), V("bool", np.ix_, _X[0] > 0)],
    "np.diagflat": [V("f64", lambda a: np.diagflat(a, 1), _X[:2, :2])],
    "np.matrix_transpose": [V("f64", np.matrix_transpose, _X3)],
    "np.linalg.matrix_transpose": [V("f64", np.linalg.matrix_transpose, _X)],
    "np.astype": [V("f32", lambda a: np.astype(a, F32), _X), V("same", lambda a: np.astype(a, F64), _X),
                  V("nocopy", lambda a: np.astype(a, F64, copy=False), _X)],
    "np.logspace": [V("arrays", lambda a: np.logspace(a, 2 * a, 4), _V5[:2]),
                    V("base", lambda a: np.logspace(0, a, 5, base=2.0), np.float64(0.7))],
    "np.geomspace": [V("f64", lambda a, b: np.geomspace(a, b, 5), np.float64(1.0), np.float64(1000.0)),
                     V("neg", lambda a, b: np.geomspace(a, b, 4, endpoint=False),
                       np.array([-1.0, 2]), np.array([-16.0, 32])),
                     V("axis", lambda a: np.geomspace(a, 100, 3, axis=1), np.array([1.0, 2])),
                     V("dtype", lambda a: np.geomspace(a, 8, 4, dtype=F32), np.float64(2)),
                     V("complex", lambda a: np.geomspace(a, 8j, 4), np.complex128(1j))],
    "np.delete": [V("int", lambda a: np.delete(a, 1), _X),
                  V("list", lambda a: np.delete(a, [0, 2], axis=1), _X),
                  V("slice", lambda a: np.delete(a, slice(0, None, 2), 1), _X),
                  V("mask", lambda a: np.delete(a, np.array([True, False, True])), _P3),
                  V("traced_idx", lambda a, i: np.delete(a, i, 0), _X, np.array([2]))],
    "np.insert": [V("scalar", lambda a: np.insert(a, 1, 5.0), _X),
                  V("column", lambda a, b: np.insert(a, 2, b, axis=1), _X, _P3),
                  V("several", lambda a, b: np.insert(a, [1, 1, 3], b), _V5, _P3),
                  V("several_axis", lambda a, b: np.insert(a, [0, 2], b, axis=1), _X, _Y[:, :1]),
                  V("slice", lambda a: np.insert(a, slice(0, 2), 3), _V5),
                  V("int", lambda a: np.insert(a, 1, [1, 2, 3, 4], axis=0), _I)],
    "np.compress": [V("axis0", lambda a: np.compress([True, False, True], a, axis=0), _X),
                    V("traced", lambda a: np.compress(a > 0, a), _V5)],
    "np.extract": [V("f64", lambda a: np.extract(a > 0, a), _X)],
    "np.flatnonzero": [V("f64", lambda a: np.flatnonzero(a > 0), _X), V("int", np.flatnonzero, _I)],
    "np.argwhere": [V("f64", lambda a: np.argwhere(a > 0), _X), V("0d", lambda a: np.argwhere(a[0, 0]), _X)],
    "np.trim_zeros": [V("fb", np.trim_zeros, np.array([0.0, 0, 1, 2, 0, 3, 0])),
                      V("b", lambda a: np.trim_zeros(a, "b"), np.array([0.0, 0, 1, 2, 0, 3, 0])),
                      V("zeros", np.trim_zeros, np.zeros(3))],
    "np.choose": [V("f64", lambda a, b: np.choose(np.array([0, 1, 1, 0]), [a, b]), _X[0], _Y[0]),
                  V("mixed", lambda a: np.choose(np.array([[0, 2], [1, 3]]), [a, a * 2, 1.0, 2]), _X[:2, :2]),
                  V("traced_idx", lambda i: np.choose(i, [_X[0], _Y[0]]), np.array([1, 0, 0, 1])),
                  V("wrap", lambda a: np.choose(np.array([0, 5, -1]), [a, a * 2], mode="wrap"), _P3),
                  V("clip", lambda a: np.choose(np.array([0, 5, -1]), [a, a * 2], mode="clip"), _P3)],
    "np.piecewise": [V("funcs", lambda a: np.piecewise(a, [a < 0, a >= 0],
                                                       [lambda x: -x, lambda x: x ** 2]), _X),
                     V("values", lambda a: np.piecewise(a, [a < -1, a > 1], [0.0, np.sin, 3]), _X),
                     V("one_cond", lambda a: np.piecewise(a, a > 0, [np.exp]), _V5),
                     V("int", lambda a: np.piecewise(a, [a > 0], [np.exp, lambda x: x - 1]), _I)],
    "np.apply_along_axis": [V("sort", lambda a: np.apply_along_axis(np.sort, 1, a), _X),
                            V("scalar", lambda a: np.apply_along_axis(lambda r: np.sum(r ** 2), 0, a), _X),
                            V("matrix", lambda a: np.apply_along_axis(np.diag, 1, a), _X)],
    "np.apply_over_axes": [V("sum", lambda a: np.apply_over_axes(np.sum, a, [0, 2]), _X3),
                           V("mean", lambda a: np.apply_over_axes(np.mean, a, 1), _X)],
    "np.vdot": [V("f64", np.vdot, _X, _Y), V("c128", np.vdot, _C, _Y), V("int", np.vdot, _I, _I)],
    "np.isneginf": [V("special", np.isneginf, A((8,), F64, special=True)), V("int", np.isneginf, _I),
                    V("complex", np.isneginf, _C)],
    "np.isposinf": [V("special", np.isposinf, A((8,), F64, special=True))],
    "np.lexsort": [V("two", lambda a, b: np.lexsort((a, b)), np.array([1.0, 2, 1, 2, 1]),
                     np.array([0.0, 0, 1, 1, 0])),
                   V("2d", np.lexsort, _X), V("axis0", lambda a: np.lexsort([a, a * 0], axis=0), _X)],
    "np.unravel_index": [V("C", lambda i: np.unravel_index(i, (3, 4)), np.array([0, 5, 11])),
                         V("F", lambda i: np.unravel_index(i, (3, 4), order="F"),
                           np.array([[0, 5], [7, 11]])),
                         V("out_of_range", lambda i: np.unravel_index(i, (3, 4)), np.array([12]))],
    "np.ravel_multi_index": [V("C", lambda a, b: np.ravel_multi_index((a, b), (3, 4)), np.array([0, 2, 1]),
                               np.array([3, 0, 1])),
                             V("F_wrap", lambda a, b: np.ravel_multi_index((a, b), (3, 4), mode="wrap",
                                                                            order="F"),
                               np.array([0, 5, -1]), np.array([3, 0, 1]))],
    "np.packbits": [V("u8", np.packbits, np.array([1, 0, 1, 1, 0, 0, 1, 0, 1], U8)),
                    V("bool_axis", lambda a: np.packbits(a, axis=1), _X > 0)],
    "np.unpackbits": [V("u8", np.unpackbits, np.array([7, 200], U8))],
    "np.can_cast": [V("f64", lambda a: np.can_cast(a, F32), _X), V("int", lambda a: np.can_cast(a, F64), _I)],
    "np.einsum_path": [V("path", lambda a, b: np.einsum("ij,jk,kl->il", a, b, a.T,
                                                        optimize=np.einsum_path("ij,jk,kl->il", a, b,
                                                                                a.T)[0]), _X, _Y.T)],
    "np.sort_complex": [V("int", np.sort_complex, _I[0]), V("i8", np.sort_complex, _I[0].astype(I8)),
                        V("c128", np.sort_complex, np.array([1 + 2j, 1 - 1j, -1 + 0j])),
                        V("f32", np.sort_complex, _F32[0])],
    "np.fill_diagonal": [V("scalar", _write(lambda b: np.fill_diagonal(b, 5.0)), _SQ),
                         V("values", _write(np.fill_diagonal), _SQ, np.array([1.0, 2])),
                         V("wrap", _write(lambda b, v: np.fill_diagonal(b, v, wrap=True)), np.ones((7, 3)),
                           np.array([1.0, 2])),
                         V("3d", _write(lambda b: np.fill_diagonal(b, -1)), np.zeros((2, 2, 2)))],
    "np.put": [V("repeat", _write(lambda b, v: np.put(b, [0, 4, 4], v)), _X, np.array([1.0, 2, 3])),
               V("wrap", _write(lambda b, v: np.put(b, [0, -1, 20], v, mode="wrap")), _X, np.array([1.0, 2])),
               V("clip", _write(lambda b: np.put(b, [0, 20], 7, mode="clip")), _X)],
    "np.place": [V("f64", _write(lambda b, v: np.place(b, b > 0, v)), _X, np.array([10.0, 20])),
                 V("int", _write(lambda b: np.place(b, b > 0, [1])), _I)],
    "np.linalg.multi_dot": [V("two", lambda a, b: np.linalg.multi_dot([a, b]), _X, _Y.T),
                            V("three", lambda a, b, c: np.linalg.multi_dot([a, b, c]), _X, _Y.T, _X),
                            V("four", lambda a, b, c: np.linalg.multi_dot([a, b, c, b]), _X, _Y.T, _X),
                            V("vectors", lambda a, b, c: np.linalg.multi_dot([a, b, c]), _X[0], _Y.T,
                              _X[:, 0])],
    "np.linalg.svdvals": [V("f64", np.linalg.svdvals, _X), V("stack", np.linalg.svdvals, _X3)],
    "np.linalg.cond": [V("2", np.linalg.cond, _SQ), V("rect", np.linalg.cond, _X),
                       V("-2", lambda a: np.linalg.cond(a, -2), _X),
                       V("fro", lambda a: np.linalg.cond(a, "fro"), _SQ),
                       V("1_stack", lambda a: np.linalg.cond(a, 1), np.stack([_SQ, _SQ.T])),
                       V("inf_f32", lambda a: np.linalg.cond(a, np.inf), _SQ.astype(F32))],
    "np.linalg.matrix_rank": [V("f64", np.linalg.matrix_rank, _X),
                              V("low", np.linalg.matrix_rank, np.outer(_V5, _V5)),
                              V("tol", lambda a: np.linalg.matrix_rank(a, tol=0.5), _X),
                              V("1d", np.linalg.matrix_rank, _V5),
                              V("hermitian", lambda a: np.linalg.matrix_rank(a, hermitian=True),
                                _SQ + _SQ.T)],
    "np.linalg.vector_norm": [
        V("all", np.linalg.vector_norm, _X),
        V("axis_ord1", lambda a: np.linalg.vector_norm(a, axis=1, ord=1), _X),
        V("axes_keep", lambda a: np.linalg.vector_norm(a, axis=(0, 2), keepdims=True), _X3),
        V("inf", lambda a: np.linalg.vector_norm(a, ord=np.inf, keepdims=True), _X),
        V("int", np.linalg.vector_norm, _I)],
    "np.linalg.matrix_norm": [V("fro", np.linalg.matrix_norm, _X),
                              V("2_keep", lambda a: np.linalg.matrix_norm(a, ord=2, keepdims=True), _X3),
                              V("nuc", lambda a: np.linalg.matrix_norm(a, ord="nuc"), _X)],
    "np.linalg.tensorsolve": [V("f64", np.linalg.tensorsolve, _T4, A((6,), F64, 55))],
    "np.linalg.tensorinv": [V("ind1", lambda a: np.linalg.tensorinv(a, 1), _T4),
                            V("ind2", lambda a: np.linalg.tensorinv(a, 2), _E4)],
    "np.linalg.cross": [V("f64", np.linalg.cross, _X[:, :3], _Y[:, 1:])],
    "np.linalg.diagonal": [V("f64", lambda a: np.linalg.diagonal(a, offset=1), _X)],
    "np.linalg.matmul": [V("f64", np.linalg.matmul, _X, _Y.T)],
    "np.linalg.outer": [V("f64", np.linalg.outer, _P3, _V5)],
    "np.linalg.tensordot": [V("f64", lambda a, b: np.linalg.tensordot(a, b, axes=1), _X, _Y.T)],
    "np.linalg.trace": [V("stack", lambda a: np.linalg.trace(a, offset=-1), _X3),
                        V("dtype", lambda a: np.linalg.trace(a, dtype=F32), _X)],
    "np.linalg.vecdot": [V("f64", np.linalg.vecdot, _X, _Y), V("c128_axis0", lambda a, b: np.linalg.vecdot(
        a, b, axis=0), _C, _X), V("int", np.linalg.vecdot, _I[0], _X)],
}
for _name, _variants in _MORE_SPECS.items():
    SPECS[_name] = (lambda vs: lambda: vs)(_variants)


# -- what must differ from NumPy ----------------------------------------------------------
# name -> {variant label: the reason tracegrad raises TraceError instead}
REFUSED: dict = {
    "ndarray.item": dict.fromkeys(
        ["f64_0", "f32_0", "c128_0", "nan_0"],
        "a Python number from a traced value has no gradient and cannot be replayed by a compiled function",
    ),
    "ndarray.tolist": dict.fromkeys(
        ["f64_0", "f32_0", "c128_0", "nan_0"],
        "Python numbers from a traced value have no gradient and cannot be replayed",
    ),
    **{f"ndarray.{m}": {"f64": "an array's memory layout (strides, buffer, base) is not "
                               "traced: a compiled function could not give it"}
       for m in ("base", "data", "flat", "strides")},
    "np.linalg.qr": dict.fromkeys(
        ["complete"],
        "the extra columns of Q of mode='complete' "
        "are an arbitrary basis with no derivative",
    ),
}


def dispatch_names():
    # scipy.special's ufuncs join the table once SciPy is imported (another test may have);
    # their values are checked per primitive (tests/cases_special.py)
    names = {f"ufunc.{uf.__name__}" for uf in UFUNCS if getattr(np, uf.__name__, None) is uf}
    names |= {np_name(fn) if not isinstance(fn, np.ufunc) else f"np.{fn.__name__}" for fn in FUNCTIONS}
    names |= {f"ndarray.{m}" for m in vars(Tracer) if not m.startswith("_")}
    return names


def test_every_name_is_covered():
    missing = sorted(n for n in dispatch_names() if n not in SPECS)
    assert not missing, f"dispatch-table names without generated fidelity inputs: {missing}"


# -- running and comparing --------------------------------------------------------------
def _all_cases():
    cases = []
    for name in sorted(SPECS):
        for label, f, xs in SPECS[name]():
            cases.append((f"{name}[{label}]", name, label, f, xs))
    return cases


CASES = _all_cases()
_BY_ID = {c[0]: c for c in CASES}


def _leaves(out):
    if isinstance(out, (tuple, list)):
        return [leaf for o in out for leaf in _leaves(o)]
    return [out]


def _run(mode, f, xs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            if mode == "reference":
                return f(*xs)
            if mode == "trace":
                return tg.trace(f, *xs)(*xs)
            return tg.jit(f, backend=mode)(*xs)


RTOL = {"e": 2e-3, "f": 1e-5, "d": 1e-10, "g": 1e-10, "F": 1e-5, "D": 1e-10}


# Sorting compares -0.0 and 0.0 as equal: which of the two comes first is NumPy's
# (machine-dependent) choice, so the signs of zeros are not compared for these.
ZERO_SIGN_FREE = ("np.sort", "np.partition", "np.argpartition", "np.unique")


def _compare(case_id, got, want, xs):
    gl, wl = _leaves(got), _leaves(want)
    assert len(gl) == len(wl), f"{case_id}: {len(gl)} results, NumPy gives {len(wl)}"
    for k, (g, w) in enumerate(zip(gl, wl)):
        what = f"{case_id} result {k}"
        ga, wa = np.asarray(g), np.asarray(w)
        assert ga.shape == wa.shape, f"{what}: shape {ga.shape}, NumPy {wa.shape}"
        assert ga.dtype == wa.dtype, f"{what}: dtype {ga.dtype}, NumPy {wa.dtype}"
        if wa.dtype.kind in "fc":
            rtol = RTOL[wa.dtype.char]
            finite = np.isfinite(wa)
            scale = float(np.max(np.abs(wa[finite]), initial=0.0)) or 1.0
            np.testing.assert_allclose(ga, wa, rtol=rtol, atol=rtol * scale, equal_nan=True, err_msg=what)
            zeros = (wa == 0) & (ga == 0)
            if wa.dtype.kind == "f" and np.any(zeros) and not case_id.startswith(ZERO_SIGN_FREE):
                assert np.array_equal(np.signbit(ga[zeros]), np.signbit(wa[zeros])), (
                    f"{what}: signs of zeros differ"
                )
        else:
            np.testing.assert_array_equal(ga, wa, err_msg=what)
        # a fresh array wherever NumPy's is one
        if isinstance(w, np.ndarray) and not any(
            isinstance(x, np.ndarray) and np.shares_memory(w, x) for x in xs
        ):
            assert not any(
                isinstance(x, np.ndarray) and isinstance(g, np.ndarray) and np.shares_memory(g, x) for x in xs
            ), f"{what}: shares memory with an input (NumPy returns a new array)"


def check_case(case_id, mode):
    _, name, label, f, xs = _BY_ID[case_id]
    try:
        want = _run("reference", f, xs)
    except Exception as e:  # noqa: BLE001 - whatever NumPy raises, tracegrad must too
        with pytest.raises((type(e), tg.TraceError)):
            _run(mode, f, xs)
        return
    reason = REFUSED.get(name, {}).get(label)
    if reason is not None:
        # an attribute a traced array does not have is an AttributeError (naming the
        # line), so that hasattr() answers False
        with pytest.raises(AttributeError if name in _LAYOUT else tg.TraceError):
            _run(mode, f, xs)
        return
    got = _run(mode, f, xs)
    _compare(case_id, got, want, xs)


# -- documented differences (strict xfail: a fix shows up as an unexpected pass) ----------
# reason key -> what differs and why (docs/guarantees.md lists them for users)
OWNERS = {
    "alias": "graph(*xs) / tg.jit of a.flatten() or np.ravel of a non-contiguous input: "
    "a graph records flatten and ravel as reshapes (views); a compiled function is "
    "specialised on shapes and dtypes, not memory layout, so NumPy's copy is not known",
    "jax_int_cast": "JAX backend: NaN or infinity converted to an integer is XLA's "
    "saturated value; NumPy's cast gives INT_MIN (and warns 'invalid value encountered "
    "in cast')",
    "jax_complex_order": "JAX backend: max/min/clip/argmax/argmin of complex values holding "
    "NaN (XLA has no complex comparison; NumPy orders lexicographically, NaN first)",
    "jax_complex_special": "JAX backend: complex arcsinh/sign at infinite or NaN parts "
    "differ from NumPy's loops",
    "jax_fft_nonfinite": "JAX backend: XLA's FFT spreads infinities and NaN over other "
    "outputs than pocketfft does",
    "complex_parts": "complex exp2 and round at infinite or NaN parts: NumPy scales the "
    "real and imaginary parts separately, tracegrad multiplies complex numbers (inf * 0 "
    "is NaN); building a complex array from its parts needs a new primitive",
    "jax_linspace": "JAX backend: XLA's np.linspace differs from NumPy's in the last bit, so "
    "a value exactly on a computed bin edge (np.histogram of integers) can fall in the "
    "neighbouring bin",
    "fft_f16": "for float16 data NumPy rounds its 1/n normalisation to float16 (irfftn's "
    "complex pass); tracegrad scales exactly",
}
# name -> {variant label: (modes failing, owner key)}; modes "*" = all three
XFAIL: dict = {
    "ndarray.astype": {
        "nan_1": ("jax", "jax_int_cast"),
    },
    "ndarray.flatten": {
        "bool_0": ("trace", "alias"),
        "c128_0": ("trace", "alias"),
        "f32_0": ("trace", "alias"),
        "f64_0": ("trace", "alias"),
        "int_0": ("trace", "alias"),
        "nan_0": ("trace", "alias"),
    },
    "np.amax": {
        "nan_c128_ax(0, 1)": ("jax", "jax_complex_order"),
        "nan_c128_ax-1": ("jax", "jax_complex_order"),
        "nan_c128_ax0": ("jax", "jax_complex_order"),
        "nan_c128_axNone": ("jax", "jax_complex_order"),
        "nan_c128_keep": ("jax", "jax_complex_order"),
    },
    "np.amin": {
        "nan_c128_ax(0, 1)": ("jax", "jax_complex_order"),
        "nan_c128_ax-1": ("jax", "jax_complex_order"),
        "nan_c128_ax0": ("jax", "jax_complex_order"),
        "nan_c128_axNone": ("jax", "jax_complex_order"),
        "nan_c128_keep": ("jax", "jax_complex_order"),
    },
    "np.clip": {
        "sweep_special_complex64": ("jax", "jax_complex_order"),
    },
    "np.cumprod": {
        "allnan_dtype_int64": ("jax", "jax_int_cast"),
        "nan_c128_dtype_int64": ("jax", "jax_int_cast"),
        "nan_dtype_int64": ("jax", "jax_int_cast"),
        "nan_f32_dtype_int64": ("jax", "jax_int_cast"),
    },
    "np.cumsum": {
        "allnan_dtype_int64": ("jax", "jax_int_cast"),
        "nan_c128_dtype_int64": ("jax", "jax_int_cast"),
        "nan_dtype_int64": ("jax", "jax_int_cast"),
        "nan_f32_dtype_int64": ("jax", "jax_int_cast"),
    },
    "np.fft.ihfft": {
        "sweep_special_float16": ("jax", "jax_fft_nonfinite"),
        "sweep_special_float32": ("jax", "jax_fft_nonfinite"),
    },
    "np.fft.irfft2": {
        "sweep_float16": ("*", "fft_f16"),
    },
    "np.histogram": {
        "int": ("jax", "jax_linspace"),
    },
    "np.ptp": {
        "sweep_special_complex64": ("jax", "jax_complex_order"),
    },
    "np.max": {
        "nan_c128_ax(0, 1)": ("jax", "jax_complex_order"),
        "nan_c128_ax-1": ("jax", "jax_complex_order"),
        "nan_c128_ax0": ("jax", "jax_complex_order"),
        "nan_c128_axNone": ("jax", "jax_complex_order"),
        "nan_c128_keep": ("jax", "jax_complex_order"),
        "sweep_special_complex64": ("jax", "jax_complex_order"),
    },
    "np.mean": {
        "allnan_dtype_int64": ("jax", "jax_int_cast"),
        "empty_dtype_int64": ("jax", "jax_int_cast"),
        "nan_c128_dtype_int64": ("jax", "jax_int_cast"),
        "nan_dtype_int64": ("jax", "jax_int_cast"),
        "nan_f32_dtype_int64": ("jax", "jax_int_cast"),
    },
    "np.min": {
        "nan_c128_ax(0, 1)": ("jax", "jax_complex_order"),
        "nan_c128_ax-1": ("jax", "jax_complex_order"),
        "nan_c128_ax0": ("jax", "jax_complex_order"),
        "nan_c128_axNone": ("jax", "jax_complex_order"),
        "nan_c128_keep": ("jax", "jax_complex_order"),
        "sweep_special_complex64": ("jax", "jax_complex_order"),
    },
    "np.nancumsum": {
        "nan_c128_dtype_int64": ("jax", "jax_int_cast"),
        "nan_dtype_int64": ("jax", "jax_int_cast"),
        "nan_f32_dtype_int64": ("jax", "jax_int_cast"),
    },
    "np.nansum": {
        "nan_c128_dtype_int64": ("jax", "jax_int_cast"),
        "nan_dtype_int64": ("jax", "jax_int_cast"),
        "nan_f32_dtype_int64": ("jax", "jax_int_cast"),
    },
    "np.prod": {
        "allnan_dtype_int64": ("jax", "jax_int_cast"),
    },
    "np.ravel": {
        "step": ("trace,numpy", "alias"),
    },
    "np.round": {
        "sweep_special_complex64": ("*", "complex_parts"),
    },
    "np.sum": {
        "allnan_dtype_int64": ("jax", "jax_int_cast"),
        "nan_c128_dtype_int64": ("jax", "jax_int_cast"),
        "nan_dtype_int64": ("jax", "jax_int_cast"),
        "nan_f32_dtype_int64": ("jax", "jax_int_cast"),
    },
    "ufunc.arcsinh": {
        "special_c128": ("jax", "jax_complex_special"),
    },
    "ufunc.exp2": {
        "special_c128": ("*", "complex_parts"),
    },
    "ufunc.sign": {
        "special_c128": ("jax", "jax_complex_special"),
    },
}


def _xfail(case_id, mode):
    name, label = case_id[:-1].split("[", 1)
    entry = XFAIL.get(name, {}).get(label)
    if entry is None or (entry[0] != "*" and mode not in entry[0]):
        return None
    return OWNERS[entry[1]]


def _params(n, mode):
    out = []
    for case_id, *_ in bounded(CASES, n):
        reason = _xfail(case_id, mode)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(case_id, id=case_id, marks=marks))
    return out


@pytest.mark.parametrize("case_id", _params(1500, "trace"))
def test_traced(case_id):
    check_case(case_id, "trace")


@pytest.mark.parametrize("case_id", _params(1500, "numpy"))
def test_jit_numpy(case_id):
    check_case(case_id, "numpy")


@pytest.mark.parametrize("case_id", _params(300, "jax"))
def test_jit_jax(case_id):
    check_case(case_id, "jax")


def test_refusals_and_xfails_name_real_cases():
    for table in (REFUSED, XFAIL):
        for name, labels in table.items():
            for label in labels:
                assert f"{name}[{label}]" in _BY_ID, f"stale entry {name}[{label}]"


# -- the errors this deliverable added: NumPy's exception, as a TraceError at the user's line
ERRORS = [
    ("quantile_bool", lambda a: np.quantile(a > 0, 0.5), "boolean"),
    ("quantile_empty", lambda a: np.quantile(a[:0], 0.5), "empty slice"),
    ("quantile_median_method", lambda a: np.quantile(a, 0.5, method="median"), "not a quantile"),
    ("nanmean_int_dtype", lambda a: np.nanmean(a, dtype=np.int64), "must be inexact"),
    ("nanvar_int_dtype", lambda a: np.nanvar(a, dtype=np.int64), "must be inexact"),
    ("fabs_complex", lambda a: np.fabs(a * 1j), "np.fabs"),
    ("positive_bool", lambda a: np.positive(a > 0), "np.positive"),
    ("round_bool_decimals", lambda a: np.round(a > 0, 1), "boolean"),
    ("gradient_bool", lambda a: np.gradient(a > 0), "boolean"),
    ("ediff1d_bool", lambda a: np.ediff1d(a > 0), "boolean"),
    ("interp_period_zero", lambda a: np.interp(a, np.sort(a[0]), a[1], period=0), "non-zero"),
    ("interp_lengths", lambda a: np.interp(a, a[0], a[1, :2]), "same length"),
    ("einsum_diagonal_dims", lambda a: np.einsum("ii->i", a), "don't match"),
    ("max_where_no_initial", lambda a: np.max(a, where=a > 0), "specify 'initial'"),
    ("quantile_complex", lambda a: np.quantile(a * 1j, 0.5), "complex"),
    ("digitize_complex", lambda a: np.digitize(a * 1j, np.sort(a[0])), "complex"),
    ("digitize_not_monotonic", lambda a: np.digitize(a, a[0]), "monotonically"),
    ("interp_complex_x", lambda a: np.interp(a * 1j, np.sort(a[0]), a[1]), "real"),
]


@pytest.mark.parametrize("f", [pytest.param(f, id=name) for name, f, _ in ERRORS])
def test_new_errors_name_the_line(f):
    words = next(w for _, f_, w in ERRORS if f_ is f)
    x = A((3, 4), F64, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as numpy_error:
            f(x)
    with pytest.raises(tg.TraceError) as e:
        tg.trace(f, x)
    assert words in str(e.value), str(e.value)
    assert "test_value_fidelity.py:" in str(e.value), str(e.value)
    assert isinstance(numpy_error.value, (TypeError, ValueError, IndexError))
