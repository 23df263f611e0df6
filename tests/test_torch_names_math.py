"""torch's math names (eager/math_ops.py) against torch, from one table.

Each entry names a function and how to make its arguments; every entry is checked the
same way: values and result dtype for float64/float32/int64/bool inputs (where torch takes
them; where it refuses, the same exception type), broadcasting of two operands, ``.grad``
of a weighted sum, a second derivative (``autograd.grad(create_graph=True)``), the grad_fn
name, the method and in-place forms (values, version counter, torch's error when the
result cannot be cast back), and torch's exception type for a bad call.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _u(lo, hi, shape):
    return RNG.uniform(lo, hi, shape)


@dataclass
class Case:
    name: str
    make: Callable[[], list]          # the tensor operands (float64 arrays)
    extra: tuple = ()                 # further positional arguments (not tensors)
    kwargs: dict = field(default_factory=dict)
    grad_rtol: float = 1e-11          # torch's trigamma is good to ~1e-9 (digamma's derivative)
    grad: bool = True                 # differentiable in the tensor operands (first order)
    second: bool = True               # and twice
    wrt: tuple | None = None          # which operands to differentiate (default: all)
    inplace: bool = True              # has a ``name_`` method
    method: bool = True
    dtypes: tuple = ("float64", "float32", "int64", "bool")
    ints: Callable[[], list] | None = None   # operands for the integer/bool dtypes
    bad: Callable[[Any], Any] | None = None  # a call torch refuses, given the library
    f32_rtol: float = 4e-6
    first: str = "tensor"             # the function's first operand
    outputs: int = 1
    reduce_like: bool = False         # no dtype sweep (a reduction of its own rules)


def unary(lo=-2.0, hi=2.0, shape=(3, 4)):
    return lambda: [_u(lo, hi, shape)]


def binary(lo=-2.0, hi=2.0, lo2=None, hi2=None):
    lo2 = lo if lo2 is None else lo2
    hi2 = hi if hi2 is None else hi2
    return lambda: [_u(lo, hi, (3, 1)), _u(lo2, hi2, (4,))]


def _ints(n=1, lo=1, hi=6):
    return lambda: [RNG.integers(lo, hi, (3, 4)) for _ in range(n)]


CASES = [
    Case("erf", unary()), Case("erfc", unary()), Case("erfinv", unary(-0.9, 0.9),
                                                       ints=lambda: [np.zeros((3, 4))]),
    Case("lgamma", unary(0.2, 4.0)), Case("digamma", unary(0.2, 4.0), grad_rtol=2e-9),
    Case("polygamma", unary(0.3, 4.0), extra=(2,), first="n"),
    Case("polygamma", unary(0.3, 4.0), extra=(0,), first="n", grad_rtol=2e-9),
    Case("polygamma", unary(0.3, 4.0), extra=(1,), first="n", grad_rtol=2e-9),
    Case("mvlgamma", unary(2.0, 4.0), extra=(3,), kwargs={}, dtypes=("float64", "float32",
                                                                      "int64"),
         ints=lambda: [RNG.integers(2, 6, (3, 4))],
         bad=lambda L: L.mvlgamma(L.tensor([2.0]), 0)),
    Case("i0", unary()), Case("sinc", lambda: [np.array([0.1, 0.3, -1.2, 2.5, 1.0])]),
    Case("logit", unary(0.05, 0.95), ints=lambda: [np.array([0, 1])]),
    Case("logit", lambda: [np.array([0.05, 0.3, 0.7, 0.97])], kwargs={"eps": 0.1},
         ints=lambda: [np.array([0, 1])]),
    Case("exp2", unary()), Case("deg2rad", unary(-200, 200), second=False),
    Case("rad2deg", unary(), second=False),
    Case("asinh", unary()), Case("acosh", unary(1.1, 3.0)), Case("atanh", unary(-0.9, 0.9),
                                                                   ints=lambda: [np.zeros(3)]),
    Case("arcsinh", unary()), Case("arccosh", unary(1.1, 3.0)),
    Case("arctanh", unary(-0.9, 0.9), ints=lambda: [np.zeros(3)]),
    Case("sgn", unary(), second=False), Case("frac", unary(-3, 3), second=False),
    Case("fix", unary(-3, 3), second=False),
    Case("angle", lambda: [np.array([-1.0, 0.0, 2.0, -0.5])], second=False, inplace=False),
    Case("positive", unary(), inplace=False, second=False, bad=lambda L: L.positive(
        L.tensor([True]))),
    Case("signbit", lambda: [np.array([-1.0, -0.0, 0.0, 2.0])], grad=False, inplace=False),
    Case("isreal", unary(), grad=False, inplace=False),
    Case("xlogy", binary(-2, 2, 0.1, 3)),
    Case("xlogy", lambda: [_u(-2, 2, (3, 4))], extra=(2.5,)),
    Case("hypot", binary(), bad=lambda L: L.hypot(L.tensor([1.0]), 2.0)),
    Case("copysign", binary(0.5, 2.0, -1.0, 1.0)),
    Case("copysign", lambda: [_u(-2, 2, (4,))], extra=(-1.0,)),
    Case("nextafter", binary(), grad=False),
    Case("ldexp", lambda: [_u(-2, 2, (3, 1)), RNG.integers(-3, 4, (4,)).astype(float)],
         wrt=(0,)),
    Case("float_power", binary(0.5, 2.0, -1.0, 2.0), inplace=False),
    Case("float_power", lambda: [_u(0.5, 2.0, (4,))], extra=(2.5,)),
    Case("fmax", lambda: [np.array([[1.0], [np.nan], [2.0]]), np.array([0.5, np.nan, 3.0, 2.0])],
         second=False, inplace=False),
    Case("fmin", lambda: [np.array([[1.0], [np.nan], [2.0]]), np.array([0.5, np.nan, 3.0, 2.0])],
         second=False, inplace=False),
    Case("heaviside", lambda: [np.array([[-1.0], [0.0], [2.0]]), np.array([0.5, 1.0, 3.0])],
         grad=False),
    Case("logaddexp2", binary(-3, 3), inplace=False),
    Case("igamma", binary(0.5, 3.0), wrt=(1,), second=False),
    Case("igammac", binary(0.5, 3.0), wrt=(1,), second=False),
    Case("atan2", binary()), Case("arctan2", binary()),
    Case("gcd", _ints(2, -8, 20), grad=False, dtypes=("int64",), ints=_ints(2, -8, 20)),
    Case("lcm", _ints(2, -8, 20), grad=False, dtypes=("int64",), ints=_ints(2, -8, 20)),
    Case("bitwise_and", _ints(2, 0, 20), grad=False, dtypes=("int64", "bool"),
         ints=_ints(2, 0, 20)),
    Case("bitwise_or", _ints(2, 0, 20), grad=False, dtypes=("int64", "bool"),
         ints=_ints(2, 0, 20)),
    Case("bitwise_xor", _ints(2, 0, 20), grad=False, dtypes=("int64", "bool"),
         ints=_ints(2, 0, 20)),
    Case("bitwise_not", _ints(1, -5, 20), grad=False, dtypes=("int64", "bool"),
         ints=_ints(1, -5, 20)),
    Case("bitwise_left_shift", _ints(2, 0, 5), grad=False, dtypes=("int64",),
         ints=_ints(2, 0, 5)),
    Case("bitwise_right_shift", _ints(2, 0, 5), grad=False, dtypes=("int64",),
         ints=_ints(2, -20, 20)),
    *(Case(n, binary(-1, 1), grad=False) for n in
      ("greater", "greater_equal", "less", "less_equal", "not_equal", "gt", "lt", "ge", "le",
       "eq", "ne")),
    Case("addcmul", lambda: [_u(-1, 1, (3, 1)), _u(-1, 1, (4,)), _u(-1, 1, (3, 4))],
         kwargs={"value": 0.5}, dtypes=("float64", "float32")),
    Case("addcdiv", lambda: [_u(-1, 1, (3, 1)), _u(-1, 1, (4,)), _u(0.5, 2, (3, 4))],
         kwargs={"value": -2.0}, dtypes=("float64", "float32"),
         bad=lambda L: L.addcdiv(L.tensor([1]), L.tensor([1]), L.tensor([2]))),
    Case("lerp", lambda: [_u(-1, 1, (3, 4)), _u(-1, 1, (3, 4))], extra=(0.3,),
         dtypes=("float64", "float32")),
    Case("clamp_min", unary(), extra=(0.2,), second=False),
    Case("clamp_max", unary(), extra=(0.2,), second=False),
    Case("fmod", binary(-3, 3, 0.5, 2), extra=(), second=False),
    Case("remainder", binary(-3, 3, 0.5, 2), second=False),
    Case("floor_divide", lambda: [_u(-3, 3, (3, 4))], extra=(0.7,), grad=False),
    Case("true_divide", binary(-3, 3, 0.5, 2)),
    Case("multiply", binary()), Case("subtract", binary()),
    Case("nan_to_num", lambda: [np.array([1.0, np.nan, np.inf, -np.inf])], second=False),
    Case("logical_not", unary(), grad=False), Case("logical_xor", binary(), grad=False),
    Case("cumsum", unary(), extra=(1,)), Case("cumprod", unary(), extra=(0,)),
    # reductions
    Case("cummax", lambda: [np.array([[1.0, 3.0, 3.0, np.nan, 5.0, np.nan],
                                      [2.0, 1.0, 4.0, 4.0, 0.0, 7.0]])],
         extra=(1,), inplace=False, outputs=2, second=False),
    Case("cummin", lambda: [_u(-2, 2, (3, 5))], extra=(0,), inplace=False, outputs=2,
         second=False),
    Case("logcumsumexp", lambda: [np.array([[-1000.0, 0.0, 1.0, 3.0], [1.0, 2.0, -5.0, 0.5]])],
         extra=(1,), inplace=False, dtypes=("float64", "float32")),
    Case("nanmedian", lambda: [np.array([[np.nan] * 3, [1.0, np.nan, 2.0], [3.0, 1.0, 2.0]])],
         extra=(1,), inplace=False, outputs=2, second=False),
    Case("nanmedian", lambda: [np.array([4.0, np.nan, 2.0, 3.0])], inplace=False,
         second=False),
    Case("mode", lambda: [np.array([[3.0, 1.0, 3.0, 1.0, 2.0], [2.0, 2.0, 5.0, 5.0, 5.0]])],
         inplace=False, outputs=2, second=False),
    Case("aminmax", lambda: [np.array([[3.0, 1.0, 3.0], [2.0, 2.0, 5.0]])],
         kwargs={"dim": 1}, inplace=False, outputs=2, second=False),
    Case("aminmax", lambda: [np.array([[3.0, 1.0, 3.0], [2.0, 2.0, 5.0]])],
         inplace=False, outputs=2, second=False),
    Case("histc", lambda: [np.array([0.0, 1.0, 1.0, 2.5, 3.0, 4.0])],
         kwargs={"bins": 4, "min": 0, "max": 3}, inplace=False, grad=False,
         dtypes=("float64", "float32")),
    Case("histc", lambda: [_u(-1, 1, (20,))], kwargs={"bins": 7}, inplace=False,
         grad=False, dtypes=("float64", "float32")),
    Case("cov", lambda: [_u(-1, 1, (3, 6))], inplace=False, dtypes=("float64", "float32",
                                                                    "int64")),
    Case("corrcoef", lambda: [_u(-1, 1, (3, 6))], inplace=False,
         dtypes=("float64", "float32", "int64")),
    Case("dist", binary(), inplace=False, dtypes=("float64", "float32")),
    Case("dist", binary(), extra=(3,), inplace=False, dtypes=("float64", "float32")),
    Case("renorm", lambda: [_u(-2, 2, (3, 4))], extra=(2, 0, 1.5),
         dtypes=("float64", "float32")),
]

INT_ONLY = {"gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
            "bitwise_left_shift", "bitwise_right_shift"}
COMPARE = {"greater", "greater_equal", "less", "less_equal", "not_equal", "gt", "lt", "ge",
           "le", "eq", "ne", "logical_not", "logical_xor"}


def _dtype(L, name):
    return getattr(L, name) if name != "bool" else L.bool


def _tensors(L, arrays, dtype, requires_grad=False):
    out = []
    for a in arrays:
        a = np.asarray(a)
        if dtype in ("int64", "bool") and a.dtype.kind == "f":
            a = np.round(a)
        if dtype == "bool":
            a = a != 0
        t = L.tensor(a.astype(dtype if dtype != "bool" else bool))
        if requires_grad:
            t.requires_grad_(True)
        out.append(t)
    return out


def _call(L, case, ts):
    fn = getattr(L, case.name)
    if case.first == "n":
        return fn(case.extra[0], *ts, **case.kwargs)
    return fn(*ts, *case.extra, **case.kwargs)


def _run(L, case, ts):
    try:
        return _call(L, case, ts), None
    except Exception as e:           # noqa: BLE001
        return None, e


def _np(t):
    if t is None:
        return None
    return t.detach().numpy(force=True) if isinstance(t, torch.Tensor) else \
        np.asarray(t.detach()._data)


def _outs(r):
    return list(r) if isinstance(r, tuple) else [r]


def _close(a, b, rtol, what):
    a, b = _np(a), _np(b)
    if a is None or b is None:      # no gradient against a zero one
        assert a is None and b is None or not np.any(np.abs(a if b is None else b) > 1e-12), what
        return
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} vs torch {b.dtype}"
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs torch {b.shape}"
    if a.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b, err_msg=what)
    else:
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol, equal_nan=True, err_msg=what)


def _id(case):
    return f"{case.name}-{case.extra}-{sorted(case.kwargs)}-{len(case.make())}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_name(case):
    arrays = case.make()
    ints = case.ints() if case.ints is not None else arrays
    # values and dtypes
    for dtype in case.dtypes:
        data = ints if dtype in ("int64", "bool") else arrays
        r_t, e_t = _run(torch, case, _tensors(torch, data, dtype))
        r_g, e_g = _run(tg, case, _tensors(tg, data, dtype))
        if e_t is not None:
            assert e_g is not None and isinstance(e_g, type(e_t)), \
                f"{dtype}: torch raised {e_t!r}, tracegrad gave {e_g!r}"
            continue
        assert e_g is None, f"{dtype}: tracegrad raised {e_g!r}"
        rtol = 1e-12 if dtype == "float64" else case.f32_rtol
        assert isinstance(r_g, tuple) == isinstance(r_t, tuple)
        if isinstance(r_t, tuple):
            assert type(r_g).__name__ == type(r_t).__name__ and len(r_g) == len(r_t)
        for k, (a, b) in enumerate(zip(_outs(r_g), _outs(r_t))):
            _close(a, b, rtol, f"{case.name} {dtype} output {k}")
    # methods
    if case.method and case.first == "tensor" and hasattr(torch.Tensor, case.name):
        ts_t, ts_g = _tensors(torch, arrays, "float64"), _tensors(tg, arrays, "float64")
        if case.name not in INT_ONLY:
            a = getattr(ts_t[0], case.name)(*ts_t[1:], *case.extra, **case.kwargs)
            b = getattr(ts_g[0], case.name)(*ts_g[1:], *case.extra, **case.kwargs)
            for x, y in zip(_outs(b), _outs(a)):
                _close(x, y, 1e-12, f"{case.name} method")
    # gradients
    if case.grad and "float64" in case.dtypes:
        _check_grads(case, arrays)
    # in-place
    if case.inplace and hasattr(torch.Tensor, case.name + "_"):
        _check_inplace(case, arrays, ints)
    if case.bad is not None:
        with pytest.raises(Exception) as e_t:
            case.bad(torch)
        with pytest.raises(type(e_t.value)):
            case.bad(tg)


def _weights(L, t):
    return L.tensor(np.linspace(0.5, 2.0, max(t.numel(), 1)).reshape(tuple(t.shape)))


def _check_grads(case, arrays):
    grads, seconds, names = {}, {}, {}
    wrt = case.wrt if case.wrt is not None else tuple(range(len(arrays)))
    for L in (torch, tg):
        ts = _tensors(L, arrays, "float64")
        for k in wrt:
            ts[k].requires_grad_(True)
        out = _outs(_call(L, case, ts))[0]
        names[L] = out.grad_fn.name() if out.grad_fn is not None else None
        total = (out * _weights(L, out)).sum()
        leaves = [ts[k] for k in wrt]
        if case.second:
            g = L.autograd.grad(total, leaves, create_graph=True)
            grads[L] = g
            s = sum(((gi * _weights(L, gi)).sum() for gi in g if gi.requires_grad), L.zeros(()))
            seconds[L] = L.autograd.grad(s, leaves, allow_unused=True) if s.requires_grad \
                else None
        else:
            total.backward()
            grads[L] = [x.grad for x in leaves]
    assert names[tg] == names[torch], f"grad_fn {names[tg]} vs torch {names[torch]}"
    for k, (a, b) in enumerate(zip(grads[tg], grads[torch])):
        _close(a, b, case.grad_rtol, f"{case.name} .grad of operand {k}")
    if case.second:
        assert (seconds[tg] is None) == (seconds[torch] is None)
        if seconds[torch] is not None:
            for k, (a, b) in enumerate(zip(seconds[tg], seconds[torch])):
                if b is None:
                    assert a is None or not np.any(_np(a)), f"second derivative {k}"
                else:
                    _close(a, b, 2e-9, f"{case.name} second derivative of operand {k}")


def _check_inplace(case, arrays, ints):
    name = case.name + "_"
    # (the first operand must hold the broadcast result)
    shape = np.broadcast_shapes(*(np.shape(a) for a in arrays))
    arrays = [np.broadcast_to(arrays[0], shape).copy(), *arrays[1:]]
    res = {}
    for L in (torch, tg):
        ts = _tensors(L, arrays, case.dtypes[0])
        v = ts[0]._version
        r = getattr(ts[0], name)(*([case.extra[0]] if case.first == "n" else []),
                                 *ts[1:], *(case.extra if case.first != "n" else ()),
                                 **case.kwargs)
        assert r is ts[0]
        res[L] = (r, ts[0]._version - v)
    _close(res[tg][0], res[torch][0], 1e-12, name)
    assert res[tg][1] >= 1 and res[torch][1] >= 1
    # an integer tensor where the result is floating: torch's error
    if "int64" in case.dtypes:
        ints = [np.broadcast_to(ints[0], np.broadcast_shapes(
            *(np.shape(a) for a in ints))).copy(), *ints[1:]]
        errs = {}
        for L in (torch, tg):
            ts = _tensors(L, ints, "int64")
            try:
                getattr(ts[0], name)(*([case.extra[0]] if case.first == "n" else []),
                                     *ts[1:], *(case.extra if case.first != "n" else ()),
                                     **case.kwargs)
                errs[L] = (None, _np(ts[0]))
            except Exception as e:      # noqa: BLE001
                errs[L] = (e, None)
        (e_g, v_g), (e_t, v_t) = errs[tg], errs[torch]
        if e_t is None:
            assert e_g is None, f"{name} on int64: tracegrad raised {e_g!r}"
            np.testing.assert_array_equal(v_g, v_t)
        else:
            assert isinstance(e_g, type(e_t)), f"{name} on int64: {e_g!r} vs torch {e_t!r}"
            assert str(e_t).split("\n")[0] in str(e_g), (str(e_g), str(e_t))


# -- the cases a table row does not cover ----------------------------------------------------
def test_no_derivative_errors_are_torchs():
    for L in (torch, tg):
        x = L.tensor([0.5, 1.5], dtype=L.float64, requires_grad=True)
        y = L.tensor([1.0, 2.0], dtype=L.float64)
        with pytest.raises(RuntimeError, match="heaviside is not implemented"):
            L.heaviside(x, y).sum().backward()
        with pytest.raises(NotImplementedError, match="igamma: input"):
            L.igamma(x, y).sum().backward()


def test_edges_match_torch():
    vals = [0.0, -0.0, 1.0, -1.0, -2.5, np.inf, -np.inf, np.nan, 1e-300, 30.0]
    for name in ("erf", "erfc", "lgamma", "digamma", "i0", "sinc", "exp2", "asinh",
                 "angle", "sgn", "frac", "signbit"):
        a = getattr(tg, name)(tg.tensor(vals, dtype=tg.float64))
        b = getattr(torch, name)(torch.tensor(vals, dtype=torch.float64))
        _close(a, b, 1e-12, name)
    for name in ("erfinv", "logit", "atanh"):
        v = [-1.0, -0.5, 0.0, 0.5, 1.0, 2.0, np.nan]
        _close(getattr(tg, name)(tg.tensor(v, dtype=tg.float64)),
               getattr(torch, name)(torch.tensor(v, dtype=torch.float64)), 1e-12, name)
    x, y = [0.0, 0.0, 1.0, 2.0, np.nan], [0.0, 2.0, 0.0, np.nan, 1.0]
    for name in ("xlogy", "fmax", "fmin", "hypot", "copysign", "nextafter", "logaddexp2",
                 "igamma", "igammac"):
        _close(getattr(tg, name)(tg.tensor(x, dtype=tg.float64), tg.tensor(y, dtype=tg.float64)),
               getattr(torch, name)(torch.tensor(x, dtype=torch.float64),
                                    torch.tensor(y, dtype=torch.float64)), 1e-12, name)


def test_xlogy_gradient_at_zero_is_torchs():
    g = {}
    for L in (torch, tg):
        x = L.tensor([0.0, 0.0, 1.5], dtype=L.float64, requires_grad=True)
        y = L.tensor([2.0, 0.0, 3.0], dtype=L.float64, requires_grad=True)
        L.xlogy(x, y).sum().backward()
        g[L] = (x.grad, y.grad)
    _close(g[tg][0], g[torch][0], 1e-12, "d/dx")
    _close(g[tg][1][2:], g[torch][1][2:], 1e-12, "d/dy")


def test_scalar_first_operand_and_namedtuples():
    t_t, t_g = torch.tensor([0.5, 2.0]), tg.tensor([0.5, 2.0])
    _close(tg.xlogy(2.0, t_g), torch.xlogy(2.0, t_t), 1e-6, "xlogy(number, t)")
    _close(tg.float_power(2, t_g), torch.float_power(2, t_t), 1e-12, "float_power(number, t)")
    r = tg.cummax(t_g, 0)
    assert repr(r).startswith("torch.return_types.cummax(") and r.values is r[0]
    m, e = tg.frexp(tg.tensor([3.0, -0.25]))
    mt, et = torch.frexp(torch.tensor([3.0, -0.25]))
    _close(m, mt, 0, "frexp mantissa")
    _close(e, et, 0, "frexp exponent")
    x = tg.tensor([1.0, -2.0])
    assert tg.positive(x) is x


def test_math_names_work_under_torch_func_and_compile():
    f = lambda x: (tg.erf(x) * tg.lgamma(x + 1) + tg.xlogy(x, x + 1)).sum()   # noqa: E731
    ft = lambda x: (torch.erf(x) * torch.lgamma(x + 1) + torch.xlogy(x, x + 1)).sum()  # noqa: E731
    x = np.array([0.3, 1.2, 2.0])
    g = tg.func.grad(f)(tg.tensor(x))
    gt = torch.func.grad(ft)(torch.tensor(x))
    _close(g, gt, 1e-12, "torch.func.grad")
    assert math.isclose(float(tg.compile(f)(tg.tensor(x))), float(ft(torch.tensor(x))),
                        rel_tol=1e-12)


# -- complex inputs: the values torch gives, or the error its kernels raise ---------------------
def _math_method_names():
    from tracegrad.eager import math_ops
    return sorted(n for n in vars(math_ops.MathMethods) if n[0] != "_")


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_inputs_give_torchs_values_or_errors(dtype):
    """Every unary math method on a complex tensor: torch's result (values, dtype) or its
    exception type. (``angle`` of a complex tensor gave a complex tensor of 0 and pi, and
    ``isreal`` was True everywhere; erf, digamma, mode, ... computed what torch refuses.)"""
    import warnings
    z = np.array([1 + 2j, -3 - 0.5j, 0.5j, -0.25 + 0j], dtype)
    wrong = []
    for name in _math_method_names():
        got = []
        for L in (tg, torch):
            t = L.tensor(z.copy())
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = getattr(t, name)()
                got.append(("ok", r if isinstance(r, tuple) else (r,)))
            except Exception as e:  # noqa: BLE001 - compared by type
                got.append((type(e), None))
        (k1, a), (k2, b) = got
        if k1 is not k2 and not (k1 in (TypeError,) and k2 is TypeError):
            wrong.append((name, k1, k2))
        elif k1 == "ok":
            for x, y in zip(a, b):
                x, y = x.numpy(), y.numpy()
                if x.dtype != y.dtype or x.shape != y.shape or not np.allclose(
                        x, y, rtol=1e-6, equal_nan=True):
                    wrong.append((name, x, y))
    assert not wrong, wrong
