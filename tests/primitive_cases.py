"""Test cases for every registered primitive, read by ``test_primitives.py``.

A case is one application of a primitive: operands drawn from its valid domain
(positive for ``log``, SPD for ``cholesky``, no ties for ``max`` unless the
case is about ties) and params spelled exactly as the tracer records them
(sorted axis tuples, ``Index`` objects, explicit einsum subscripts).
``CASES[name]`` must exist for every name in the registry: the tests fail for a
primitive that has none.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import tracegrad as tg
from tracegrad.ir import REGISTRY, Arg, Index, Slice, apply
from tracegrad.tracer.indexing import normalize

_rng = np.random.default_rng(20240611)


@dataclass
class Case:
    prim: str
    args: tuple
    params: dict = field(default_factory=dict)
    tag: str = ""
    # Operand positions to differentiate; None: every floating operand that
    # is not one of the primitive's nondiff_args.
    diff: tuple | None = None
    derivs: bool = True          # False: value and shape tests only
    fd: bool = True              # finite differences are valid here (no kink or tie nearby)
    second: bool = False         # second-order tests too (chosen cases: JAX's Hessians compile slowly)
    forward_mode: bool = True    # False: tg.jvp must refuse (custom_vjp functions)
    jax_derivs: bool = True      # False: JAX picks another derivative at a kink (see the case)
    # (exception, reason): the derivative tests are expected to raise it (a strict xfail)
    known_failure: tuple = ()
    fn: Callable | None = None       # function under test; default: apply(prim, ...)
    jax_fn: Callable | None = None   # its JAX twin; default: the primitive's lowering
    # the JAX function whose derivatives are the reference; default: jax_fn (another where
    # JAX's derivatives of the lowering compile slowly, e.g. beta's every-branch Cephes)
    jax_deriv_fn: Callable | None = None
    fd_fn: Callable | None = None    # NumPy function to difference; default: fn
    ref_fn: Callable | None = None   # NumPy reference value; default: the primitive's impl

    def __post_init__(self):
        self.args = tuple(np.asarray(a) for a in self.args)
        if self.fn is None:
            self.fn = lambda *ops: apply(self.prim, *ops, **self.params)
        if self.jax_fn is None:
            self.jax_fn = lambda *ops: REGISTRY[self.prim].jax(*ops, **self.params)
        if self.jax_deriv_fn is None:
            self.jax_deriv_fn = self.jax_fn
        if self.fd_fn is None:
            self.fd_fn = self.fn
        if self.ref_fn is None:
            self.ref_fn = lambda *ops: REGISTRY[self.prim].impl(*ops, **self.params)
        if self.diff is None:
            nondiff = REGISTRY[self.prim].nondiff_args
            self.diff = tuple(i for i, a in enumerate(self.args)
                              if a.dtype.kind in "fc" and i not in nondiff)
        self.out = np.asarray(self.fn(*self.args))

    @property
    def id(self):
        if not self.args:
            return f"{self.prim}-{self.tag}"
        shapes = "x".join(_shape_str(a.shape) for a in self.args)
        dtypes = {a.dtype.name for a in self.args}
        dt = "" if dtypes <= {"float64"} else "-" + "/".join(sorted(dtypes))
        return f"{self.prim}-{'shape' if len(self.args) == 1 else 'shapes'}{shapes}{dt}" + (
            f"-{self.tag}" if self.tag else "")

    @property
    def differentiable(self):
        """Derivative tests apply: a floating output and something to differentiate."""
        return self.derivs and bool(self.diff) and self.out.dtype.kind in "fc"

    @property
    def complex(self):
        """A complex operand or output: checked with JAX's vjp/jvp (its jacfwd and
        hessian take real inputs only) and complex finite differences."""
        return any(np.asarray(a).dtype.kind == "c" for a in self.args + (self.out,))

    def partial(self, fn):
        """``fn`` as a function of the ``diff`` operands only; the others are fixed."""
        def f(*xs):
            ops = list(self.args)
            for i, x in zip(self.diff, xs):
                ops[i] = x
            return fn(*ops)
        return f


def _shape_str(shape):
    return "(" + ",".join(map(str, shape)) + ")"


CASES: dict[str, list[Case]] = {}


def add(case):
    CASES.setdefault(case.prim, []).append(case)


# -- operand makers -------------------------------------------------------------------------
def uniform(shape, lo=-2.0, hi=2.0):
    return _rng.uniform(lo, hi, shape)


def cuniform(shape, lo=-2.0, hi=2.0):
    """Complex, real and imaginary parts uniform in [lo, hi]."""
    return _rng.uniform(lo, hi, shape) + 1j * _rng.uniform(lo, hi, shape)


def away(shape, lo=0.3, hi=2.0):
    """Random signs, magnitudes in [lo, hi]: away from zero."""
    return _rng.choice([-1.0, 1.0], shape) * _rng.uniform(lo, hi, shape)


def distinct(shape, lo=-2.0, hi=2.0):
    """Values at least 0.1 apart: no ties for max/min/argmax."""
    n = math.prod(shape)
    grid = np.linspace(lo, hi, max(n, 1) * 2)
    return _rng.permutation(grid)[:n].reshape(shape)


def off_grid(shape, step=0.5):
    """Values at least 0.1 away from multiples of ``step``: floor/rint/... are locally flat."""
    return (_rng.integers(-6, 6, shape) + _rng.uniform(0.2, 0.8, shape)) * step


def well_conditioned(n, batch=()):
    """Matrices near a signed diagonal: invertible, condition number ~ 3, det of either sign."""
    diag = _rng.choice([-1.0, 1.0], batch + (n,)) * _rng.uniform(1.5, 2.5, batch + (n,))
    return _rng.uniform(-0.4, 0.4, batch + (n, n)) + diag[..., None] * np.eye(n)


def spd(n, batch=()):
    a = _rng.uniform(-1.0, 1.0, batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


# -- elementwise, unary ----------------------------------------------------------------------
UNARY_SHAPES = [(2, 3), (), (0, 3), (3, 1, 2)]

UNARY_DOMAINS = {
    "neg": uniform, "exp": uniform, "expm1": uniform, "sin": uniform, "cos": uniform,
    "arctan": uniform, "sinh": uniform, "cosh": uniform, "tanh": uniform, "arcsinh": uniform,
    "log": lambda s: uniform(s, 0.5, 3.0), "log2": lambda s: uniform(s, 0.5, 3.0),
    "log10": lambda s: uniform(s, 0.5, 3.0), "sqrt": lambda s: uniform(s, 0.5, 3.0),
    "log1p": lambda s: uniform(s, -0.5, 2.0), "cbrt": away, "abs": away,
    "tan": lambda s: uniform(s, -1.2, 1.2),
    "arcsin": lambda s: uniform(s, -0.8, 0.8), "arccos": lambda s: uniform(s, -0.8, 0.8),
    "arctanh": lambda s: uniform(s, -0.8, 0.8), "arccosh": lambda s: uniform(s, 1.2, 3.0),
    # piecewise constant: zero gradients, checked away from the jumps
    "sign": away, "floor": off_grid, "ceil": off_grid, "trunc": off_grid, "rint": off_grid,
}
for _name, _domain in UNARY_DOMAINS.items():
    for _shape in UNARY_SHAPES:
        add(Case(_name, (_domain(_shape),), second=_shape == (2, 3)))

# float32 keeps float32 (rules must not promote: Python float constants, NEP 50)
for _name in ["sin", "log2", "log10", "sqrt", "tanh", "arccosh"]:
    add(Case(_name, (UNARY_DOMAINS[_name]((2, 2)).astype(np.float32),)))

for _shape in UNARY_SHAPES:
    add(Case("relu", (away(_shape),), second=_shape == (2, 3)))
add(Case("relu", (away((2, 2)).astype(np.float32),), tag="f32"))
# relu'(0) = 0 as in PyTorch (JAX's maximum splits the tie); relu(-inf) = 0, relu(nan) = nan
add(Case("relu", (np.array([-1.5, 0.0, 2.0, -np.inf, np.inf]),), tag="at-zero", jax_derivs=False,
         fd=False))
add(Case("relu", (np.array([np.nan, -1.0]),), tag="nan", derivs=False))

# values at the kinks and jumps: value tests, and JAX's conventions for the derivative there
# d|x|/dx at 0 is sign(0) = 0, as in PyTorch and central differences; JAX takes 1
add(Case("abs", (np.array([-1.5, 0.0, 2.0, -0.0]),), tag="at-zero", jax_derivs=False))
add(Case("sign", (np.array([-1.5, 0.0, 2.0, -0.0, np.nan]),), tag="zeros-nan", derivs=False))
_halves = np.array([-2.5, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.5, 3.7, -3.7])
for _name in ["floor", "ceil", "trunc", "rint"]:
    add(Case(_name, (_halves,), tag="halves", derivs=False))

_specials = np.array([[0.0, np.nan, np.inf], [-np.inf, -1.5, 2.0]])
for _name in ["isnan", "isinf", "isfinite"]:
    add(Case(_name, (_specials,)))
    add(Case(_name, (np.float64(np.nan),)))
    add(Case(_name, (np.zeros((0, 2)),)))
add(Case("logical_not", (np.array([[True, False], [False, False]]),)))
add(Case("logical_not", (np.array([0.0, -1.5, 2.0]),)))
add(Case("logical_not", (np.bool_(True),)))
add(Case("invert", (np.array([[0, 5, -3], [7, -1, 12]], dtype=np.int64),)))
add(Case("invert", (np.array([True, False]),)))
add(Case("invert", (np.int64(9),)))

# -- elementwise, binary ----------------------------------------------------------------------
BINARY_SHAPES = [((2, 3), (2, 3)), ((2, 1), (1, 3)), ((), (2, 3)), ((2, 3), ()),
                 ((0, 3), (3,)), ((4, 1, 2), (3, 1))]

BINARY_DOMAINS = {
    "add": (uniform, uniform), "sub": (uniform, uniform), "mul": (uniform, uniform),
    "div": (uniform, away), "pow": (lambda s: uniform(s, 0.5, 2.0), uniform),
    "maximum": (distinct, lambda s: distinct(s, -1.95, 2.05)),
    "minimum": (distinct, lambda s: distinct(s, -1.95, 2.05)),
    "fmax": (distinct, lambda s: distinct(s, -1.95, 2.05)),
    "fmin": (distinct, lambda s: distinct(s, -1.95, 2.05)),
    "arctan2": (away, away), "hypot": (away, away), "logaddexp": (uniform, uniform),
    "remainder": (lambda s: off_grid(s, 1.0), lambda s: uniform(s, 2.5, 3.5)),
    "floor_divide": (lambda s: off_grid(s, 1.0), lambda s: uniform(s, 2.5, 3.5)),
}
for _name, (_dx, _dy) in BINARY_DOMAINS.items():
    for _sx, _sy in BINARY_SHAPES:
        add(Case(_name, (_dx(_sx), _dy(_sy)), second=_sx == (2, 1)))

for _name in ["add", "mul", "div", "pow", "maximum"]:
    _dx, _dy = BINARY_DOMAINS[_name]
    add(Case(_name, (_dx((2, 2)).astype(np.float32), _dy((2,)).astype(np.float32))))
# a float32 array with a float64 0-d array: NumPy 2 promotes to float64
add(Case("mul", (uniform((2, 2)).astype(np.float32), np.float64(1.5))))

# negative bases with integral exponents; the exponent is held fixed (log of a negative base)
add(Case("pow", (away((2, 3)), np.array([2.0, 3.0, -1.0])), diff=(0,), tag="negative-base"))
# a zero base: 0**y * log(0) is taken as 0 (JAX's convention); FD would leave the domain
add(Case("pow", (np.array([0.0, 0.0, 1.5]), np.array([2.5, 3.0, 2.0])), tag="zero-base", fd=False,
         second=True))
# x**0 is constant: its derivative is 0 even at x = 0 (where 0 * 0**-1 would be NaN). JAX
# agrees for integer exponents; for float exponents its rule gives NaN there.
add(Case("pow", (np.array([[0.0], [1.3], [-0.7]]), np.array([0, 1, 2])), tag="zero-exponent"))
add(Case("pow", (np.array([0.0, 0.0, 0.0, 1.5]), np.array([0.0, 1.0, 2.0, 0.0])), diff=(0,),
         tag="zero-exponent", jax_derivs=False))
# integer operands are held fixed, the float ones differentiated
add(Case("div", (np.array([3, -2, 7]), away((2, 3))), tag="int-numerator"))
add(Case("logaddexp", (np.array([800.0, -800.0, 3.0]), np.array([799.0, 1.0, -900.0])), tag="large"))
# negative and mixed-sign divisors and dividends for remainder / floor_divide
add(Case("remainder", (off_grid((3, 2), 1.0), -uniform((2,), 2.5, 3.5)), tag="negative-divisor"))
add(Case("floor_divide", (off_grid((3, 2), 1.0), -uniform((2,), 2.5, 3.5)), tag="negative-divisor"))

# ties: each side gets half of the gradient (as in JAX); FD is one-sided there
_tx = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]])
_ty = np.array([[1.0, -1.0, 0.5], [2.0, 0.0, -3.0]])
def _jnp(name):
    """JAX's own function of that name: the oracle for ties (our lowering computes
    NumPy's values, and JAX would differentiate its selects, not split the tie)."""
    def fn(*ops):
        import jax.numpy as jnp
        return getattr(jnp, name)(*ops)
    return fn


for _name in ["maximum", "minimum"]:
    add(Case(_name, (_tx, _ty), tag="ties", fd=False, second=True, jax_fn=_jnp(_name)))
# NaN handling: maximum propagates NaN, fmax ignores it (value tests)
_nx = np.array([np.nan, 1.0, np.nan, -2.0])
_ny = np.array([0.5, np.nan, np.nan, 3.0])
for _name in ["maximum", "minimum", "fmax", "fmin"]:
    add(Case(_name, (_nx, _ny), tag="nan", derivs=False))

# comparisons and logic: boolean results; operands with ties
_ca = np.array([[1.0, 2.0, -1.0], [0.5, 0.5, 3.0]])
_cb = np.array([[1.0, 1.0, -1.0], [0.0, 0.5, 4.0]])
for _name in ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]:
    add(Case(_name, (_ca, _cb)))
    add(Case(_name, (_ca[:, :1], np.array([0.5, 1.0, 3.0]))))
    add(Case(_name, (np.float64(0.5), _cb)))
    add(Case(_name, (np.array([1, 2, 3]), np.array([3, 2, 1]))))
    add(Case(_name, (np.zeros((0, 3)), np.zeros(3))))
_ba = np.array([[True, True, False], [False, True, False]])
_bb = np.array([True, False, False])
for _name in ["logical_and", "logical_or", "logical_xor"]:
    add(Case(_name, (_ba, _bb)))
    add(Case(_name, (np.array([0.0, 1.5, -2.0, 0.0]), np.array([3.0, 0.0, 1.0, 0.0]))))
    add(Case(_name, (np.bool_(True), _bb)))
_ia = np.array([[12, -7, 0], [5, 255, -1]], dtype=np.int64)
_ib = np.array([10, 3, -8], dtype=np.int64)
for _name in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
    add(Case(_name, (_ia, _ib)))
    add(Case(_name, (_ba, _bb)))
    add(Case(_name, (np.int64(6), _ib)))

# -- select (np.where) ------------------------------------------------------------------------
_cond = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, True]])
add(Case("select", (_cond, uniform((3, 4)), uniform((3, 4)))))
add(Case("select", (_cond, uniform((3, 1)), uniform((1, 4))), second=True))
add(Case("select", (_cond[:1], uniform((2,)).reshape(2, 1, 1)[0], uniform((3, 1)))))
add(Case("select", (np.array([True, False]), uniform(()), uniform((2,)))))
add(Case("select", (np.bool_(False), uniform(()), uniform(()))))
add(Case("select", (np.zeros((0, 2), bool), uniform((2,)), uniform(()))))
add(Case("select", (_cond[:2, :2], uniform((2, 2)).astype(np.float32), uniform((2,)).astype(np.float32))))

# -- casts and gradient barriers -------------------------------------------------------------------
add(Case("convert", (uniform((2, 3)),), {"dtype": np.dtype("float32")}, tag="to-f32", second=True))
add(Case("convert", (uniform((3,)).astype(np.float32),), {"dtype": np.dtype("float64")}, tag="to-f64",
         second=True))
add(Case("convert", (uniform(()),), {"dtype": np.dtype("float32")}, tag="to-f32"))
add(Case("convert", (np.array([-1.7, 0.2, 2.9]),), {"dtype": np.dtype("int64")}, tag="to-i64"))
add(Case("convert", (np.array([[3, -2], [0, 7]]),), {"dtype": np.dtype("float64")}, tag="to-f64"))
add(Case("convert", (np.array([True, False]),), {"dtype": np.dtype("float64")}, tag="to-f64"))
add(Case("convert", (np.array([0.0, -1.5, 2.0]),), {"dtype": np.dtype("bool")}, tag="to-bool"))
add(Case("convert", (np.zeros((0, 2)),), {"dtype": np.dtype("float32")}, tag="to-f32"))
# stop_gradient is the identity whose derivative is zero: finite differences disagree on purpose
for _shape in [(2, 3), (), (0, 2)]:
    add(Case("stop_gradient", (uniform(_shape),), fd=False, second=_shape == (2, 3)))

# cap_finite (exp's capped derivative): x below the overflow, derivative 1 (JAX's minimum
# agrees there); at +inf the cap is the largest float and the derivative is still 1
for _shape in [(2, 3), ()]:
    add(Case("cap_finite", (uniform(_shape),), second=_shape == (2, 3)))
add(Case("cap_finite", (uniform((2, 2)).astype(np.float32),), tag="f32"))
add(Case("cap_finite", (np.array([1.0, np.inf, -np.inf, np.finfo(np.float64).max]),),
         tag="inf", fd=False, jax_derivs=False))

# sigmoid (torch.sigmoid): 1 / (1 + exp(-x)); far out, the value 0 (exp overflowed) and
# the derivative 0, not NaN
for _shape in [(2, 3), ()]:
    add(Case("sigmoid", (uniform(_shape, -6.0, 6.0),), second=_shape == (2, 3)))
add(Case("sigmoid", (uniform((2, 2)).astype(np.float32),), tag="f32"))
add(Case("sigmoid", (np.array([-800.0, -40.0, 0.0, 40.0, 800.0]),), tag="tails"))

# -- reductions -----------------------------------------------------------------------------------
REDUCE_SHAPES = [((3, 4), (1,), False), ((3, 4), (0, 1), True), ((2, 3, 2), (0, 2), False),
                 ((), (), False), ((3, 4), (), False), ((2, 3), (0, 1), False)]


def _reduce_tag(axis, keepdims):
    return f"axis{_shape_str(axis)}" + ("-keepdims" if keepdims else "")


for _shape, _axis, _keep in REDUCE_SHAPES:
    _params = {"axis": _axis, "keepdims": _keep}
    _tag = _reduce_tag(_axis, _keep)
    _second = _shape == (2, 3, 2) or _keep
    add(Case("sum", (uniform(_shape),), _params, tag=_tag, second=_second))
    add(Case("max", (distinct(_shape),), _params, tag=_tag, second=_second))
    add(Case("min", (distinct(_shape),), _params, tag=_tag, second=_second))
    add(Case("prod", (away(_shape, 0.5, 1.5),), _params, tag=_tag, second=_second))
for _name in ["sum", "prod"]:  # empty operands: the identity comes out
    add(Case(_name, (np.zeros((0, 3)),), {"axis": (0,), "keepdims": False}, tag="axis(0,)"))
for _name in ["sum", "max", "min", "prod"]:  # reducing a non-empty axis of an empty array
    add(Case(_name, (np.zeros((0, 3)),), {"axis": (1,), "keepdims": True}, tag="axis(1,)-keepdims"))
add(Case("sum", (uniform((2, 3)).astype(np.float32),), {"axis": (1,), "keepdims": False},
         tag="axis(1,)"))

# tied maxima share the gradient equally (JAX's convention)
_tied = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 2.0, 0.5], [-1.0, -4.0, -4.0, -1.0]])
for _name in ["max", "min"]:
    add(Case(_name, (_tied,), {"axis": (1,), "keepdims": False}, tag="ties", fd=False, second=True))
    add(Case(_name, (_tied,), {"axis": (0, 1), "keepdims": False}, tag="ties-all", fd=False))

# products through zeros: one zero in a slice, two zeros in a slice, a lone zero
_zeros = np.array([[0.5, 0.0, 1.5, -2.0], [0.0, 1.2, 0.0, 0.7], [0.9, -1.1, 1.3, 0.8]])
add(Case("prod", (_zeros,), {"axis": (1,), "keepdims": False}, tag="zeros"))
add(Case("prod", (_zeros[:2, :3],), {"axis": (1,), "keepdims": False}, tag="zeros-small", second=True))
for _tag, _x in [("one-zero", [1.5, 0.0, -2.0]), ("two-zeros", [0.0, 1.5, 0.0]),
                 ("all-zeros", [0.0, 0.0, 0.0])]:
    add(Case("prod", (np.array(_x),), {"axis": (0,), "keepdims": False}, tag=_tag, second=True))

for _name in ["argmax", "argmin"]:
    _x = distinct((3, 4))
    add(Case(_name, (_x,), {"axis": None, "keepdims": False}))
    add(Case(_name, (_x,), {"axis": 1, "keepdims": True}, tag="axis1-keepdims"))
    add(Case(_name, (_x,), {"axis": 0, "keepdims": False}, tag="axis0"))
    add(Case(_name, (_x,), {"axis": None, "keepdims": True}, tag="keepdims"))
    add(Case(_name, (distinct((2, 3, 2)),), {"axis": 2, "keepdims": False}, tag="axis2"))
    add(Case(_name, (np.float64(1.5),), {"axis": None, "keepdims": False}))
    add(Case(_name, (_tied,), {"axis": 1, "keepdims": False}, tag="ties"))
    add(Case(_name, (np.array([3, 9, -1, 9]),), {"axis": 0, "keepdims": False}))

for _shape, _axis in [((3, 4), 1), ((5,), 0), ((2, 3, 2), 0), ((0, 3), 0), ((2, 0), 1), ((4,), 0)]:
    add(Case("cumsum", (uniform(_shape),), {"axis": _axis}, tag=f"axis{_axis}", second=_shape == (5,)))
add(Case("cumsum", (np.array([[1, 2], [3, 4]]),), {"axis": 1}, tag="axis1"))

# -- shape ---------------------------------------------------------------------------------------
for _src, _dst in [((3, 4), (2, 6)), ((12,), (3, 2, 2)), ((), (1, 1)), ((1, 1), ()),
                   ((0, 3), (3, 0)), ((2, 3), (6,))]:
    add(Case("reshape", (uniform(_src),), {"shape": _dst}, tag=f"to{_shape_str(_dst)}",
             second=_src == (2, 3)))
for _shape, _axes in [((2, 3, 4), (2, 0, 1)), ((3, 4), (1, 0)), ((2, 1, 3), (1, 2, 0)),
                      ((0, 2), (1, 0)), ((2, 2), (1, 0))]:
    add(Case("transpose", (uniform(_shape),), {"axes": _axes}, tag=f"axes{_shape_str(_axes)}",
             second=_shape == (2, 1, 3)))
for _src, _dst in [((3, 1), (2, 3, 4)), ((), (2, 3)), ((1,), (0,)), ((2, 1), (2, 3)),
                   ((3,), (2, 3)), ((), (2,))]:
    add(Case("broadcast_to", (uniform(_src),), {"shape": _dst}, tag=f"to{_shape_str(_dst)}",
             second=_src == (2, 1)))

add(Case("concatenate", (uniform((2, 3)), uniform((1, 3))), {"axis": 0}, tag="axis0"))
add(Case("concatenate", (uniform((2, 1)), uniform((2, 0)), uniform((2, 2))), {"axis": 1}, tag="axis1",
         second=True))
add(Case("concatenate", (uniform((3,)),), {"axis": 0}, tag="axis0"))
add(Case("concatenate", (uniform((2,)), uniform((1,))), {"axis": 0}, tag="axis0"))
add(Case("concatenate", (uniform((2, 2)), np.array([[1, 2]])), {"axis": 0}, tag="axis0-int"))
add(Case("concatenate", (uniform((2, 3, 2)), uniform((2, 1, 2))), {"axis": 1}, tag="axis1"))

add(Case("pad", (uniform((2, 3)),), {"widths": ((1, 2), (0, 1)), "value": 0}, tag="zeros"))
add(Case("pad", (uniform((3,)),), {"widths": ((2, 1),), "value": 1.5}, tag="value1.5", second=True))
add(Case("pad", (uniform((0, 2)),), {"widths": ((1, 0), (1, 1)), "value": 0}, tag="empty"))
add(Case("pad", (uniform((2,)),), {"widths": ((0, 0),), "value": 0}, tag="no-op"))


def _index(key):
    index, operands = normalize(key)
    assert not operands
    return index


def getitem(x, key, tag, **kw):
    add(Case("getitem", (x,), {"index": _index(key)}, tag=tag, **kw))


_g = uniform((4, 5))
getitem(_g, (slice(1, None), slice(None, None, 2)), "slices")
getitem(_g, 2, "int")
getitem(_g, (1, -2), "ints-0d")
getitem(_g, (None, Ellipsis, -1), "newaxis-ellipsis")
getitem(_g, slice(None, None, -1), "reversed")
getitem(_g, slice(2, 2), "empty")
getitem(uniform((3, 2)), np.array([0, 2, 2]), "int-array-repeats", second=True)
getitem(_g, (slice(None), np.array([[1, 0], [4, 4]])), "int-array-2d")
# a permutation of one axis (np.roll's positions): the VJP gathers back
getitem(_g, (slice(None), np.array([3, 4, 0, 1, 2])), "permutation", second=True)
getitem(uniform((3, 2)), np.array([-1, 0, 1]), "permutation-negative", second=True)
getitem(uniform((3, 4, 2)), (slice(None), np.array([1, 3, 0, 2])), "permutation-middle")
getitem(_g, (slice(None), np.array([3, 4, 0, 1, 1])), "near-permutation", second=True)
getitem(_g, _g > 0.3, "bool-mask")
getitem(uniform((3, 4, 2)), (np.array([0, 2]), slice(None), np.array([1, 1])), "split-advanced")
getitem(uniform((3, 4, 2)), (Ellipsis, np.array([1, 0, 1])), "ellipsis-array")
getitem(uniform(()), (), "0d")
getitem(uniform((3,)), None, "newaxis")
# integer arrays computed by the program are operands, referred to as Arg(k)
add(Case("getitem", (uniform((4, 2)), np.array([3, 0, 3])),
         {"index": Index((Arg(0), Slice(None, None, None)))}, tag="traced-index", second=True))
add(Case("getitem", (uniform((2, 4)), np.array([1, 0]), np.array([[3], [2]])),
         {"index": Index((Arg(0), Arg(1)))}, tag="traced-indices"))


def index_update(x, v, key, mode, tag, **kw):
    add(Case("index_update", (x, v), {"index": _index(key), "mode": mode}, tag=f"{mode}-{tag}", **kw))


index_update(uniform((4, 5)), uniform((2, 5)), slice(1, 3), "set", "slice")
index_update(uniform((4, 5)), uniform((2, 5)), slice(1, 3), "add", "slice")
index_update(uniform((4, 3)), uniform(()), (slice(None), 1), "set", "scalar")
index_update(uniform((3, 2)), uniform((2,)), slice(1, 3), "set", "broadcast-row", second=True)
index_update(uniform((4, 3)), uniform((2, 1)), (slice(0, 2), slice(None)), "add", "broadcast-col")
index_update(uniform((3, 2)), uniform((3, 2)), np.array([0, 2, 0]), "add", "int-array-repeats",
             second=True)
index_update(uniform((4, 3)), uniform((2, 3)), np.array([3, 1]), "set", "int-array")
index_update(uniform((5,)), uniform(()), 2, "set", "int")
index_update(uniform((3, 3)), uniform((3,)), (np.arange(3), np.arange(3)), "set", "diagonal")
index_update(uniform((3, 2)), uniform((0, 2)), slice(1, 1), "set", "empty")
index_update(uniform((3, 2)), uniform((2,)).astype(np.float32), 1, "set", "f32-value")
add(Case("index_update", (uniform((5,)), uniform((3,)), np.array([4, 1, 4])),
         {"index": Index((Arg(0),)), "mode": "add"}, tag="add-traced-index"))
add(Case("index_update", (uniform((5,)), uniform((2,)), np.array([4, 1])),
         {"index": Index((Arg(0),)), "mode": "set"}, tag="set-traced-index"))
add(Case("index_update", (uniform((3,)), np.float64(0.0)), {"index": _index(1), "mode": "set"},
         tag="set-constant", diff=(0,)))

# -- linear algebra ------------------------------------------------------------------------------
for _sa, _sb in [((3, 4), (4, 2)), ((4,), (4, 3)), ((3, 4), (4,)), ((4,), (4,)),
                 ((2, 3, 4), (4, 2)), ((2, 1, 2, 3), (3, 3, 2)), ((0, 3), (3, 2)), ((3, 0), (0, 2)),
                 ((2,), (2, 2, 1)), ((2, 2), (2,)), ((1, 2), (2, 1))]:
    add(Case("matmul", (uniform(_sa), uniform(_sb)), second=_sa in [(4,), (2, 2), (2,)]))
add(Case("matmul", (uniform((2, 3)).astype(np.float32), uniform((3,)).astype(np.float32))))

for _subs, _shapes in [("ij,jk->ik", [(2, 3), (3, 2)]), ("ij->ji", [(2, 3)]), ("ij->i", [(2, 3)]),
                       ("ij,ij->", [(2, 3), (2, 3)]), ("i,j->ij", [(2,), (3,)]),
                       ("ij,jk,kl->il", [(2, 2), (2, 3), (3, 2)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
                       ("ij,jk->k", [(2, 3), (3, 2)]), ("i->", [(4,)]), ("->", [()]),
                       (",i->i", [(), (3,)]), ("ij,j->", [(0, 2), (2,)]), ("abc,ca->b", [(2, 3, 2), (2, 2)]),
                       # NumPy broadcasts an index of size 1 against any size
                       ("mnd,mdo->mno", [(1, 4, 1), (3, 1, 3)]), ("i,i->", [(3,), (1,)]),
                       ("ij,jk,kl->il", [(2, 1), (3, 3), (1, 2)])]:
    add(Case("einsum", tuple(uniform(s) for s in _shapes), {"subscripts": _subs}, tag=_subs,
             second=_subs in ("ij,jk->k", "ij->i", ",i->i")))

def _jax_cholesky_lower(a):
    import jax.numpy as jnp
    return jnp.linalg.cholesky(jnp.tril(a) + jnp.swapaxes(jnp.tril(a, -1), -1, -2))


def jax_slogdet(which):
    def fn(x):
        import jax.numpy as jnp
        return jnp.linalg.slogdet(x)[which]
    return fn


for _n, _batch in [(3, ()), (2, (2,)), (1, ()), (2, (0,))]:
    _a = well_conditioned(_n, _batch)
    _second = _n == 3 or _batch == (2,)
    add(Case("inv", (_a,), second=_second))
    add(Case("det", (_a,), second=_second))
    add(Case("logabsdet", (_a,), second=_second))
    add(Case("slogdet_sign", (_a,), second=_second))
    # slogdet: one node, two outputs; each output's rule through the one node
    for _which, _tag in ((0, "sign"), (1, "logabsdet")):
        add(Case("slogdet", (_a,), second=_second, tag=_tag,
                 fn=lambda x, w=_which: apply("slogdet", x)[w],
                 ref_fn=lambda x, w=_which: np.linalg.slogdet(x)[w],
                 jax_fn=jax_slogdet(_which)))
    # NumPy reads only the lower triangle (noise above it), and the rules differentiate
    # that triangle; the JAX twin is jnp.linalg.cholesky of that triangle, mirrored
    add(Case("cholesky", (spd(_n, _batch) + np.triu(uniform((_n, _n)), 1),), second=_second,
             jax_fn=_jax_cholesky_lower))
    add(Case("cholesky", (spd(_n, _batch),), tag="symmetric", jax_fn=_jax_cholesky_lower))
add(Case("inv", (np.zeros((0, 0)),)))
add(Case("det", (well_conditioned(3, (2,)),)))
# the derivative of det at a singular matrix: the adjugate, as JAX gives (rank 2 and rank 1)
add(Case("det", (np.array([[1.0, 2.0, 0.5], [2.0, 4.0, 1.0], [0.3, -1.0, 2.0]]),), tag="singular",
         second=True))
add(Case("det", (np.outer([1.0, -2.0, 0.5], [0.25, 1.0, 2.0]),), tag="rank-1"))  # exact: det 0
add(Case("matmul", (uniform((2, 3)), np.array([1, -2, 3]))))

for _sa, _sb in [((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 2, 2), (2, 2, 1)), ((2, 2, 2), (2,)),
                 ((2, 2, 2), (2, 3)), ((1, 1), (1,)), ((2, 2), (3, 2, 1))]:
    add(Case("solve", (well_conditioned(_sa[-1], _sa[:-2]), uniform(_sb)),
             second=_sb in [(3,), (2, 3)]))

# -- custom_vjp_call: reached through tg.custom_vjp ------------------------------------------------
# A sine whose reverse rule is hand-written (with np.cos, so it is differentiable
# again), and a two-argument function passing residuals.


@tg.custom_vjp
def custom_sin(x):
    return np.sin(x)


custom_sin.defvjp(lambda x: (np.sin(x), np.cos(x)), lambda cos_x, g: (g * cos_x,))


@tg.custom_vjp
def custom_scale(x, y):
    return x * np.exp(y)


custom_scale.defvjp(lambda x, y: (x * np.exp(y), (x, np.exp(y))),
                    lambda res, g: (g * res[1], g * res[0] * res[1]))


def _jnp(name):
    def f(*args):
        import jax.numpy as jnp
        return getattr(jnp, name)(*args)
    return f


for _shape in [(2, 3), (), (3,)]:
    add(Case("custom_vjp_call", (uniform(_shape),), fn=custom_sin, jax_fn=_jnp("sin"),
             fd_fn=np.sin, ref_fn=np.sin, forward_mode=False, second=_shape == (3,)))
add(Case("custom_vjp_call", (uniform((2, 2)), uniform((2,))), fn=custom_scale,
         jax_fn=lambda x, y: x * _jnp("exp")(y), fd_fn=lambda x, y: x * np.exp(y),
         ref_fn=lambda x, y: x * np.exp(y), forward_mode=False, second=True))


# -- remat_call: reached through tg.checkpoint ----------------------------------------------------
# Two outputs from one sub-graph (the second node reuses the first's run), and a chain.
@tg.checkpoint
def _remat_pair(x, y):
    h = np.tanh(x * y)
    return h * x, np.sum(h ** 2)


@tg.checkpoint
def _remat_chain(x):
    return np.sin(np.exp(0.5 * x)) * x


def _jax_remat_pair(x, y):
    import jax.numpy as jnp
    h = jnp.tanh(x * y)
    return h * x, jnp.sum(h ** 2)


for _shape in [(2, 3), ()]:
    add(Case("remat_call", (uniform(_shape), uniform(_shape)), tag="out0",
             fn=lambda x, y: _remat_pair(x, y)[0], jax_fn=lambda x, y: _jax_remat_pair(x, y)[0],
             fd_fn=lambda x, y: np.tanh(x * y) * x, ref_fn=lambda x, y: np.tanh(x * y) * x,
             second=_shape == (2, 3)))
    add(Case("remat_call", (uniform(_shape), uniform(_shape)), tag="out1",
             fn=lambda x, y: _remat_pair(x, y)[1], jax_fn=lambda x, y: _jax_remat_pair(x, y)[1],
             fd_fn=lambda x, y: np.sum(np.tanh(x * y) ** 2),
             ref_fn=lambda x, y: np.sum(np.tanh(x * y) ** 2), second=_shape == ()))
add(Case("remat_call", (uniform((3,)),), tag="chain", fn=_remat_chain,
         jax_fn=lambda x: _jnp("sin")(_jnp("exp")(0.5 * x)) * x,
         fd_fn=lambda x: np.sin(np.exp(0.5 * x)) * x, ref_fn=lambda x: np.sin(np.exp(0.5 * x)) * x,
         second=True))


# -- scan, cond, while_loop: reached through tg.scan / tg.fori_loop, tg.cond, tg.while_loop ----
def _rnn(h, xs, w):
    return tg.scan(lambda c, x: (np.tanh(c * w + x), c * x), h, xs)


def _jax_rnn(h, xs, w):
    import jax
    import jax.numpy as jnp
    return jax.lax.scan(lambda c, x: (jnp.tanh(c * w + x), c * x), h, xs)


def _rnn_np(h, xs, w):
    ys = []
    for x in xs:
        ys.append(h * x)
        h = np.tanh(h * w + x)
    return h, np.stack(ys)


add(Case("scan", (uniform((3,)), uniform((4, 3)), uniform((3,))), tag="carry",
         fn=lambda h, xs, w: _rnn(h, xs, w)[0], jax_fn=lambda h, xs, w: _jax_rnn(h, xs, w)[0],
         fd_fn=lambda h, xs, w: _rnn_np(h, xs, w)[0], ref_fn=lambda h, xs, w: _rnn_np(h, xs, w)[0],
         second=True))
add(Case("scan", (uniform((2,)), uniform((3, 2)), uniform((2,))), tag="ys",
         fn=lambda h, xs, w: _rnn(h, xs, w)[1], jax_fn=lambda h, xs, w: _jax_rnn(h, xs, w)[1],
         fd_fn=lambda h, xs, w: _rnn_np(h, xs, w)[1], ref_fn=lambda h, xs, w: _rnn_np(h, xs, w)[1],
         second=True))
add(Case("scan", (uniform((2, 2)),), tag="fori-reverse",
         fn=lambda x: tg.fori_loop(0, 5, lambda i, c: np.sin(c) * 1.1 + 0.1 * i, x),
         jax_fn=lambda x: __import__("jax").lax.fori_loop(
             0, 5, lambda i, c: _jnp("sin")(c) * 1.1 + 0.1 * i, x),
         fd_fn=lambda x: _fori_np(x), ref_fn=lambda x: _fori_np(x), second=True))


def _fori_np(x):
    for i in range(5):
        x = np.sin(x) * 1.1 + 0.1 * i
    return x


def _cond_fn(p, x):
    return tg.cond(p, lambda a: np.sin(a) * a, lambda a: a ** 3, x)


def _jax_cond(p, x):
    import jax
    import jax.numpy as jnp
    return jax.lax.cond(p, lambda a: jnp.sin(a) * a, lambda a: a ** 3, x)


for _pred in (True, False):
    add(Case("cond", (np.array(_pred), uniform((2, 3))), tag=f"pred-{_pred}", fn=_cond_fn,
             jax_fn=_jax_cond, diff=(1,),
             fd_fn=lambda p, x: np.sin(x) * x if p else x ** 3,
             ref_fn=lambda p, x: np.sin(x) * x if p else x ** 3, second=True))


def _while_fn(x):
    return tg.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * 1.5 + np.sin(c[0]), c[1] + 1),
                         (x, 0))[0]


def _while_np(x):
    for _ in range(3):
        x = x * 1.5 + np.sin(x)
    return x


def _jax_while_as_fori(x):
    """JAX's twin: JAX cannot differentiate lax.while_loop in reverse mode; the loop takes
    three steps, as this fori_loop does."""
    import jax
    return jax.lax.fori_loop(0, 3, lambda i, c: c * 1.5 + _jnp("sin")(c), x)


add(Case("while_loop", (uniform((2, 3)),), fn=_while_fn, ref_fn=_while_np,
         jax_fn=_jax_while_as_fori, second=True))


# while_derived: reverse mode through tg.while_loop (the gradient of _while_fn)
def _while_grad_np(x):
    factor = np.ones_like(x)
    for _ in range(3):
        factor = factor * (1.5 + np.cos(x))
        x = x * 1.5 + np.sin(x)
    return 2 * x * factor


add(Case("while_derived", (uniform((2, 3)),), tag="grad",
         fn=tg.grad(lambda x: np.sum(_while_fn(x) ** 2)),
         jax_fn=lambda x: __import__("jax").grad(lambda v: (_jax_while_as_fori(v) ** 2).sum())(x),
         fd_fn=_while_grad_np, ref_fn=_while_grad_np, second=True))



# custom_root: tg.custom_root, a square root by Newton's method differentiated implicitly
# (eight steps from 1 reach sqrt(a) for a in [1, 3]; a fixed count, so that no mutant of
# the saved graph loops forever)
def _root_sqrt(a):
    f = lambda x: x * x - a   # noqa: E731
    newton = lambda f, x0: tg.fori_loop(0, 8, lambda i, x: x - f(x) / (2 * x), x0)  # noqa: E731
    return tg.custom_root(f, np.ones_like(a), newton, lambda g, y: y / g(np.ones_like(a)))


def _jax_root_sqrt(a):
    import jax
    jnp = jax.numpy
    f = lambda x: x * x - a   # noqa: E731
    return jax.lax.custom_root(f, jnp.ones_like(a), lambda f, x0: jnp.sqrt(a),
                               lambda g, y: y / g(jnp.ones_like(a)))


add(Case("custom_root", (uniform((3,), 1.0, 3.0),), fn=_root_sqrt, jax_fn=_jax_root_sqrt,
         fd_fn=np.sqrt, ref_fn=np.sqrt, second=True))

# -- zeros: structural zeros made by the passes (no operands) ------------------------------------
for _shape, _dtype in [((2, 3), "float64"), ((), "float32"), ((0, 2), "float64"), ((2,), "bool")]:
    _params = {"shape": _shape, "dtype": np.dtype(_dtype)}
    add(Case("zeros", (), _params, tag=f"{_shape_str(_shape)}-{_dtype}",
             fn=lambda _p=_params: apply("zeros", **_p)))


# -- more families, one module each (tests/cases_*.py), so that several can grow at once ----------
def _load_case_modules():
    import importlib
    import pathlib
    import zlib

    global _rng
    for path in sorted(pathlib.Path(__file__).parent.glob("cases_*.py")):
        # each module draws from its own stream: adding one leaves the others' operands alone
        _rng = np.random.default_rng(zlib.crc32(path.stem.encode()))
        importlib.import_module(path.stem)


_load_case_modules()


def all_cases():
    """(name, case) for every registered primitive, in registry order; case is None when
    the primitive has no cases (the tests turn that into a failure)."""
    for name in REGISTRY:
        for case in CASES.get(name) or [None]:
            yield name, case


# -- nn: convolutions and pooling (NCHW, PyTorch's semantics) ------------------------------------
# Small images keep the JAX Hessians quick. The shapes cover stride 2, padding, dilation,
# 1x1 kernels, non-square inputs and kernels, a last stride step that leaves rows out
# (the VJPs then need an output_padding or a crop), and a padding larger than the
# kernel's reach (the transposed convolution then crops instead of padding).
def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


for _xs, _ws, _s, _p, _d, _second in [
        ((1, 2, 4, 4), (3, 2, 2, 2), 1, 0, 1, True),
        ((2, 2, 5, 4), (2, 2, 3, 3), 2, 1, 1, True),
        ((1, 2, 6, 5), (2, 2, 2, 2), 1, 1, 2, False),
        ((2, 3, 3, 4), (2, 3, 1, 1), 1, 0, 1, False),
        ((1, 2, 3, 3), (2, 2, 1, 1), 2, 1, 1, False),
        ((1, 1, 7, 5), (2, 1, 2, 3), (2, 1), (0, 1), (1, 2), True)]:
    add(Case("conv2d", (uniform(_xs), uniform(_ws)),
             {"stride": _pair(_s), "padding": _pair(_p), "dilation": _pair(_d)},
             tag=f"s{_s}-p{_p}-d{_d}".replace(" ", ""), second=_second))
add(Case("conv2d", (uniform((1, 2, 4, 3)).astype(np.float32), uniform((2, 2, 2, 2)).astype(np.float32)),
         {"stride": (1, 1), "padding": (1, 1), "dilation": (1, 1)}))

for _xs, _ws, _s, _p, _op, _d, _second in [
        ((1, 2, 3, 3), (2, 3, 2, 2), 1, 0, 0, 1, True),
        ((2, 2, 3, 2), (2, 2, 3, 3), 2, 1, 1, 1, True),
        ((1, 2, 3, 3), (2, 1, 2, 2), 1, 1, 0, 2, False),
        ((1, 1, 3, 3), (1, 2, 2, 2), 1, 0, 1, 2, True),    # output_padding >= stride
        ((1, 2, 3, 2), (2, 2, 1, 1), 2, 0, 1, 1, False),
        ((1, 1, 4, 4), (1, 1, 3, 3), 2, 2, 0, 1, False),   # padding beyond the kernel's reach
        ((1, 1, 2, 3), (1, 2, 2, 3), (2, 1), (1, 0), (1, 0), (1, 2), False)]:
    add(Case("conv_transpose2d", (uniform(_xs), uniform(_ws)),
             {"stride": _pair(_s), "padding": _pair(_p), "output_padding": _pair(_op),
              "dilation": _pair(_d)},
             tag=f"s{_s}-p{_p}-op{_op}-d{_d}".replace(" ", ""), second=_second))
add(Case("conv_transpose2d", (uniform((1, 2, 2, 3)).astype(np.float32),
                              uniform((2, 1, 2, 2)).astype(np.float32)),
         {"stride": (2, 2), "padding": (0, 0), "output_padding": (0, 0), "dilation": (1, 1)}))

# max_pool2d: distinct values, so no window has a tie (finite differences are valid)
for _xs, _k, _s, _p, _d, _second in [
        ((1, 2, 4, 4), 2, 2, 0, 1, True),
        ((2, 1, 5, 6), 3, 2, 1, 1, True),
        ((1, 2, 6, 5), 2, 1, 1, 2, False),
        ((1, 1, 3, 4), 1, 1, 0, 1, False),
        ((1, 2, 4, 7), (2, 3), (1, 2), (1, 0), 1, False)]:
    add(Case("max_pool2d", (distinct(_xs),),
             {"kernel": _pair(_k), "stride": _pair(_s), "padding": _pair(_p),
              "dilation": _pair(_d)},
             tag=f"k{_k}-s{_s}-p{_p}-d{_d}".replace(" ", ""), second=_second))
# ties: the whole gradient goes to the first maximum in row-major order, as in PyTorch
# and in JAX's reduce_window max (the oracle); finite differences have no answer here
add(Case("max_pool2d", (np.array([[[[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, 0.0, 3.0],
                                    [2.0, 2.0, 1.0, 1.0], [2.0, 2.0, 1.0, 1.0]]]]),),
         {"kernel": (2, 2), "stride": (2, 2), "padding": (0, 0), "dilation": (1, 1)},
         tag="ties", fd=False))
add(Case("max_pool2d", (distinct((1, 1, 4, 4)).astype(np.float32),),
         {"kernel": (2, 2), "stride": (1, 1), "padding": (1, 1), "dilation": (1, 1)}))

for _xs, _k, _s, _p, _second in [
        ((1, 2, 4, 4), 2, 2, 0, True),
        ((2, 1, 5, 6), 3, 2, 1, True),
        ((1, 1, 4, 5), (2, 3), 1, 1, False),
        ((1, 2, 3, 2), 1, 1, 0, False),
        ((1, 1, 6, 5), 2, (2, 1), (1, 0), False)]:
    add(Case("avg_pool2d", (uniform(_xs),),
             {"kernel": _pair(_k), "stride": _pair(_s), "padding": _pair(_p)},
             tag=f"k{_k}-s{_s}-p{_p}".replace(" ", ""), second=_second))
add(Case("avg_pool2d", (uniform((1, 2, 4, 4)).astype(np.float32),),
         {"kernel": (2, 2), "stride": (2, 2), "padding": (1, 1)}))


# -- lstm_cell, lstm_cell_grad: one LSTM step and its VJP, each one node --------------------
# Reference values: the step composed of NumPy's elementary operations. lstm_cell_grad's
# inputs are independent here (c' need not be f c + i g), so its reference is its impl;
# lstm_cell's derivative cases (first and second order, against JAX and differences)
# check that it is lstm_cell's VJP, and test_lstm_cell.py against the composite's.
def lstm_composite(gates, c):
    n = gates.shape[-1] // 4
    act = 1.0 / (1.0 + np.exp(-gates))
    i, f, o = act[..., :n], act[..., n:2 * n], act[..., 3 * n:]
    g = np.tanh(gates[..., 2 * n:3 * n])
    c_new = f * c + i * g
    return o * np.tanh(c_new), c_new, np.concatenate([i, f, g, o], axis=-1)


def _jax_lstm(prim, which):
    def fn(*ops):
        return REGISTRY[prim].jax(*ops)[which]
    return fn


for _lead, _dtype, _second in [((3,), np.float64, True), ((2, 2), np.float64, False),
                               ((), np.float64, True), ((4,), np.float32, False)]:
    _hidden = 2
    _g = uniform(_lead + (4 * _hidden,)).astype(_dtype)
    _c = uniform(_lead + (_hidden,)).astype(_dtype)
    for _w, _tag in ((0, "h"), (1, "c"), (2, "act")):
        add(Case("lstm_cell", (_g, _c), tag=_tag, second=_second,
                 fn=lambda g, c, w=_w: apply("lstm_cell", g, c)[w],
                 ref_fn=lambda g, c, w=_w: lstm_composite(g, c)[w],
                 jax_fn=_jax_lstm("lstm_cell", _w)))
    _h, _cn, _act = lstm_composite(_g, _c)
    _gh, _gc = uniform(_lead + (_hidden,)).astype(_dtype), uniform(_lead + (_hidden,)).astype(_dtype)
    for _w, _tag in ((0, "gates"), (1, "c")):
        add(Case("lstm_cell_grad", (_gh, _gc, _act, _c, _cn), tag=_tag, second=_second,
                 fn=lambda *ops, w=_w: apply("lstm_cell_grad", *ops)[w],
                 ref_fn=lambda *ops, w=_w: REGISTRY["lstm_cell_grad"].impl(*ops)[w],
                 jax_fn=_jax_lstm("lstm_cell_grad", _w)))
