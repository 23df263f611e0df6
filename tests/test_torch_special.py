"""``tg.special`` against ``torch.special`` (torch 2.13), from one table: each function's
arguments (edge values: 0, negatives, large, ±inf, NaN), compared for values, result
dtypes (float32, float64 and int64 inputs), gradients (``.grad`` of a weighted sum, and
second derivatives where torch has them), ``requires_grad`` of the functions torch does
not differentiate, and error types.

Tolerances: float64 1e-12 relative where torch's kernels and SciPy's agree; the
functions where torch runs its own approximations (``TORCH_OWN``) to what those give;
float32 to 1e-5 (the polynomials' long recurrences, which torch's kernels contract into
fused multiply-adds, to 1e-3 and 1e-6 absolute).
"""
import numpy as np
import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")

INF, NAN = float("inf"), float("nan")
EDGES = [-INF, -50.0, -5.5, -1.0, -0.5, -0.0, 0.0, 1e-3, 0.3, 1.0, 2.5, 4.9, 5.1, 8.5, 30.0,
         700.0, INF, NAN]
UNIT = [-INF, -1.5, -1.0, -0.999, -0.7, -0.3, 0.0, 0.2, 0.5, 0.75, 1.0, 1.0001, 1.5, 3.0, INF,
        NAN]
DEGREES = [-2.0, 0.0, 0.7, 1.0, 2.0, 3.0, 5.0, 7.0, 9.0, 10.0, 40.0, INF, NAN]
PROBS = [-1.0, 0.0, 1e-10, 0.02, 0.3, 0.5, 0.9, 1.0, 2.0, NAN]

# name -> (edge values, interior values for gradients or None when torch does not
# differentiate, float64 rtol, atol)
UNARY = {
    "airy_ai": (EDGES, None, 1e-7, 1e-12),
    "bessel_j0": (EDGES, None, 1e-4, 1e-6),
    "bessel_j1": (EDGES, None, 1e-4, 1e-6),
    "bessel_y0": (EDGES, None, 1e-4, 1e-6),
    "bessel_y1": (EDGES, None, 1e-4, 1e-6),
    "modified_bessel_i0": (EDGES, None, 1e-12, 0),
    "modified_bessel_i1": (EDGES, None, 1e-12, 0),
    "modified_bessel_k0": (EDGES, None, 1e-12, 0),
    "modified_bessel_k1": (EDGES, None, 1e-12, 0),
    "scaled_modified_bessel_k0": (EDGES, None, 1e-12, 0),
    "scaled_modified_bessel_k1": (EDGES, None, 1e-12, 0),
    "spherical_bessel_j0": (EDGES + [0.49, 0.51, -0.51], None, 1e-12, 0),
    "digamma": (EDGES, [0.3, 1.0, 2.5, 7.0], 1e-12, 0),
    "psi": (EDGES, [0.3, 1.0, 2.5, 7.0], 1e-12, 0),
    "gammaln": (EDGES, [0.3, 1.5, -0.5, 7.0], 1e-12, 0),
    "entr": (EDGES, [0.3, 1.0, 2.5, 7.0], 1e-12, 0),
    "erf": (EDGES, [-1.0, 0.0, 0.3, 2.5], 1e-12, 0),
    "erfc": (EDGES, [-1.0, 0.0, 0.3, 2.5], 1e-12, 0),
    "erfcx": (EDGES, [-1.0, 0.0, 0.3, 2.5, 30.0], 1e-12, 0),
    "erfinv": (PROBS + [-0.5], [-0.5, 0.0, 0.3, 0.9], 1e-12, 0),
    "exp2": (EDGES, [-1.0, 0.0, 0.3, 2.5], 1e-12, 0),
    "expm1": (EDGES, [-1.0, 0.0, 0.3, 2.5], 1e-12, 0),
    "log1p": (EDGES, [-0.5, 0.0, 0.3, 2.5], 1e-12, 0),
    "expit": (EDGES, [-5.5, 0.0, 0.3, 2.5], 1e-12, 0),
    "i0": (EDGES, [-1.0, 0.0, 0.3, 2.5], 1e-12, 0),
    "i0e": (EDGES, [-1.0, 0.3, 2.5, 30.0], 1e-12, 0),
    "i1": (EDGES, [-1.0, 0.0, 0.3, 2.5], 1e-12, 0),
    "i1e": (EDGES, [-1.0, 0.3, 2.5, 30.0], 1e-12, 0),
    "ndtr": (EDGES, [-5.5, 0.0, 0.3, 2.5], 1e-12, 0),
    "log_ndtr": (EDGES + [-40.0, 10.0], [-40.0, -5.5, 0.0, 0.3, 8.5], 1e-12, 0),
    "ndtri": (PROBS, [0.02, 0.3, 0.5, 0.9], 1e-12, 0),
    "logit": (PROBS, [0.02, 0.3, 0.5, 0.9], 1e-12, 0),
    # (sinc'' at 0: torch NaN, tg.sinc 0; not compared)
    "sinc": (EDGES, [-1.0, 0.3, 2.5], 1e-12, 0),
    "round": (EDGES + [0.5, 1.5, 2.5, -2.5], [-1.0, 0.3, 2.6], 0, 0),
}

# (x values, n values, differentiable operands (None: torch does not differentiate),
#  float64 rtol, atol)
BINARY = {
    "xlog1py": (EDGES, [-1.0, -0.5, 0.0, 1.0, 30.0, INF, NAN], (0, 1), 1e-12, 0),
    "xlogy": (EDGES, [0.0, 0.5, 1.0, 30.0, INF, NAN], (0, 1), 1e-12, 0),
    "zeta": ([-1.0, 0.5, 1.0, 1.5, 2.0, 4.0, 30.0, INF, NAN], [-2.0, -1.5, 0.0, 0.5, 1.0, 3.0,
                                                             INF, NAN], (1,), 1e-12, 0),
    # (NaN operands: see test_gammainc_nan_edges)
    "gammainc": ([-1.0, 0.0, 0.5, 1.0, 3.0, 30.0, INF], [-1.0, 0.0, 0.5, 2.0, 40.0, INF],
                 (1,), 1e-12, 1e-30),
    "gammaincc": ([-1.0, 0.0, 0.5, 1.0, 3.0, 30.0, INF], [-1.0, 0.0, 0.5, 2.0, 40.0, INF],
                  (1,), 1e-12, 1e-30),
}
POLYNOMIALS = [f"{s}chebyshev_polynomial_{c}" for s in ("", "shifted_") for c in "tuvw"] + [
    "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p"]
DTYPES = {"float32": (torch.float32, tg.float32), "float64": (torch.float64, tg.float64),
          "int64": (torch.int64, tg.int64)}
TORCH_ONLY_NAN = "torch's kernel leaves r uninitialised"   # see test_polynomials


def _pair(values, dtype):
    tdt, gdt = DTYPES[dtype]
    arr = np.asarray(values, np.float64)
    if dtype == "int64":
        arr = np.trunc(arr[np.isfinite(arr)]).clip(-100, 100)
    return torch.tensor(arr).to(tdt), tg.tensor(arr).to(gdt)


def _close(ours, theirs, rtol, atol):
    assert ours.dtype == {torch.float32: tg.float32, torch.float64: tg.float64,
                          torch.int64: tg.int64}[theirs.dtype], (ours.dtype, theirs.dtype)
    a, b = np.asarray(ours.detach().numpy(), np.float64), theirs.detach().numpy().astype(np.float64)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def _call(mod, name, *args):
    return getattr(mod.special, name)(*args)


def _rtol(rtol, dtype):
    """float32: 1e-5, or 1e-4 where torch's own approximations are looser than SciPy's."""
    if dtype not in ("float32", "int64"):     # (int64 inputs give float32)
        return rtol
    return 1e-4 if rtol > 1e-12 else max(rtol, 1e-5)


# -- the module -------------------------------------------------------------------------------------
def test_every_function_is_there():
    names = {n for n in dir(torch.special) if not n.startswith("_")}
    names -= {"Tensor", "torch", "common_args", "multi_dim_common"}
    assert names <= set(dir(tg.special)), sorted(names - set(dir(tg.special)))
    assert names == set(tg.special.__all__)
    from tracegrad.special import expit
    assert expit is tg.special.expit


# -- unary ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(UNARY))
def test_unary_values(name, dtype):
    edges, _, rtol, atol = UNARY[name]
    t, g = _pair(edges, dtype)
    try:
        expected = _call(torch, name, t)
    except Exception as e:   # noqa: BLE001  (torch's error, the same type here)
        with pytest.raises(type(e)):
            _call(tg, name, g)
        return
    _close(_call(tg, name, g), expected, _rtol(rtol, dtype),
           atol if dtype == "float64" else max(atol, 1e-6 if rtol > 1e-12 else 0))


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_gradients(name):
    _, interior, rtol, _ = UNARY[name]
    t = torch.tensor(interior or [0.3, 1.5], dtype=torch.float64, requires_grad=True)
    g = tg.tensor(interior or [0.3, 1.5], dtype=tg.float64, requires_grad=True)
    out_t, out_g = _call(torch, name, t), _call(tg, name, g)
    assert out_g.requires_grad == out_t.requires_grad
    if interior is None:
        return
    assert out_g.grad_fn.name() == out_t.grad_fn.name()
    w = np.linspace(0.5, 1.5, len(interior))
    (out_t * torch.tensor(w)).sum().backward()
    (out_g * tg.tensor(w)).sum().backward()
    # (digamma's derivative: torch's own trigamma, good to about 1e-9; here SciPy's)
    rtol = 1e-8 if name in ("digamma", "psi") else 1e-10
    np.testing.assert_allclose(g.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=1e-300)
    # the second derivative, where torch has one
    t2 = t.detach().requires_grad_()
    g2 = g.detach().requires_grad_()
    (dt,) = torch.autograd.grad(_call(torch, name, t2).sum(), t2, create_graph=True)
    (dg,) = tg.autograd.grad(_call(tg, name, g2).sum(), g2, create_graph=True)
    if not dt.requires_grad:
        return
    (ddt,) = torch.autograd.grad(dt.sum(), t2)
    (ddg,) = tg.autograd.grad(dg.sum(), g2)
    np.testing.assert_allclose(ddg.numpy(), ddt.numpy(), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_complex_refused(name):
    t, g = torch.tensor([0.5 + 1j]), tg.tensor([0.5 + 1j])
    try:
        _call(torch, name, t)
    except Exception as e:   # noqa: BLE001
        with pytest.raises(type(e)):
            _call(tg, name, g)
    with pytest.raises(TypeError):
        _call(tg, name, 0.5)


# -- binary ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtypes", [("float64", "float64"), ("float32", "float32"),
                                    ("int64", "int64"), ("float32", "float64"),
                                    ("int64", "float32")])
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_values(name, dtypes):
    xs, ns, _, rtol, atol = BINARY[name]
    X, N = np.meshgrid(xs, ns)
    (tx, gx), (tn, gn) = _pair(X.ravel(), dtypes[0]), _pair(N.ravel(), dtypes[1])
    if dtypes[0] == "int64" or dtypes[1] == "int64":
        tx, gx, tn, gn = tx[:4], gx[:4], tn[:4], gn[:4]
        tn, gn = tn[:len(tx)], gn[:len(tx)]
        tx, gx = tx[:len(tn)], gx[:len(tn)]
    try:
        expected = _call(torch, name, tx, tn)
    except Exception as e:   # noqa: BLE001
        with pytest.raises(type(e)):
            _call(tg, name, gx, gn)
        return
    _close(_call(tg, name, gx, gn), expected, _rtol(rtol, max(dtypes)), atol)


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_scalars(name):
    for a, b in [(2.0, [0.5, 3.0]), ([0.5, 3.0], 2.0), (2, [1, 3]), ([1.5, 2.5], 3)]:
        def make(mod, v):
            return mod.tensor(v) if isinstance(v, list) else v
        try:
            expected = _call(torch, name, make(torch, a), make(torch, b))
        except Exception as e:   # noqa: BLE001
            with pytest.raises(type(e)):
                _call(tg, name, make(tg, a), make(tg, b))
            continue
        _close(_call(tg, name, make(tg, a), make(tg, b)), expected, 1e-6, 0)
    with pytest.raises(TypeError):
        _call(tg, name, 1.0, 2.0)


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_gradients(name, which):
    x, n = [0.0, 0.5, 1.5, 2.5], [0.5, 1.0, 2.0, 4.0]
    ops_t = [torch.tensor(v, dtype=torch.float64) for v in (x, n)]
    ops_g = [tg.tensor(v, dtype=tg.float64) for v in (x, n)]
    if name == "zeta":
        ops_t[0], ops_g[0] = ops_t[0] + 1.5, ops_g[0] + 1.5
    if name.startswith("gammainc"):
        ops_t[0], ops_g[0] = ops_t[0] + 0.5, ops_g[0] + 0.5
    ops_t[which].requires_grad_()
    ops_g[which].requires_grad_()
    w = [0.5, 1.0, 1.5, 2.0]
    out_t, out_g = _call(torch, name, *ops_t), _call(tg, name, *ops_g)
    assert out_g.grad_fn.name() == out_t.grad_fn.name()
    try:
        (out_t * torch.tensor(w)).sum().backward()
    except Exception as e:   # noqa: BLE001  (torch's "derivative ... is not implemented")
        with pytest.raises(type(e), match="is not implemented"):
            (out_g * tg.tensor(w)).sum().backward()
        return
    (out_g * tg.tensor(w)).sum().backward()
    np.testing.assert_allclose(ops_g[which].grad.numpy(), ops_t[which].grad.numpy(),
                               rtol=1e-9, atol=1e-300)


# -- the polynomials ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials(name, dtype):
    X, N = np.meshgrid(UNIT, DEGREES)
    # NaN x with a degree of 2 or more: torch's kernel returns its uninitialised r (inf)
    keep = ~(np.isnan(X) & (np.trunc(N) >= 2))
    (tx, gx), (tn, gn) = _pair(X[keep], dtype), _pair(N[keep], dtype)
    expected = _call(torch, name, tx, tn)
    if dtype == "float64":
        _close(_call(tg, name, gx, gn), expected, 1e-10, 1e-13)
    else:
        _close(_call(tg, name, gx, gn), expected, 1e-3, 1e-6)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_promotion_and_grad(name):
    combos = [(lambda m: m.tensor([0.5, 2.0]), lambda m: m.tensor([3, 12])),
              (lambda m: m.tensor([1, 2]), lambda m: m.tensor([3, 4])),
              (lambda m: m.tensor([0.5], dtype=m.float32), lambda m: m.tensor([3.], dtype=m.float64)),
              (lambda m: m.tensor([0.5, 2.0], dtype=m.float64), lambda m: 3),
              (lambda m: 2, lambda m: m.tensor([3, 4])),
              (lambda m: 0.25, lambda m: m.tensor([5.0, 6.0]))]
    for mx, mn in combos:
        _close(_call(tg, name, mx(tg), mn(tg)), _call(torch, name, mx(torch), mn(torch)), 1e-6, 0)
    t = torch.tensor([0.5, 0.25], requires_grad=True)
    g = tg.tensor([0.5, 0.25], requires_grad=True)
    nt, ng = torch.tensor([3.0, 4.0], requires_grad=True), tg.tensor([3.0, 4.0], requires_grad=True)
    assert _call(tg, name, g, ng).requires_grad == _call(torch, name, t, nt).requires_grad is False
    with pytest.raises(TypeError):
        _call(tg, name, 0.5, 3)
    with pytest.raises(NotImplementedError):
        _call(tg, name, tg.tensor([0.5 + 1j]), 3)


# -- the aliases with more arguments ------------------------------------------------------------------
def test_aliases_with_arguments():
    v = [[0.3, -1.2, 2.0], [0.0, 4.0, -INF]]
    t, g = torch.tensor(v, dtype=torch.float64), tg.tensor(v, dtype=tg.float64)
    for name, args in [("softmax", (1,)), ("log_softmax", (0,)), ("logsumexp", (1,)),
                       ("logsumexp", (0, True))]:
        _close(getattr(tg.special, name)(g, *args), getattr(torch.special, name)(t, *args),
               1e-12, 0)
    _close(tg.special.softmax(g.float(), 1, dtype=tg.float64),
           torch.special.softmax(t.float(), 1, dtype=torch.float64), 1e-6, 0)
    p = [0.01, 0.2, 0.99]
    _close(tg.special.logit(tg.tensor(p), eps=0.05), torch.special.logit(torch.tensor(p), eps=0.05),
           1e-6, 0)
    x = [0.5, 1.5, 4.0]
    for n in (0, 1, 3):
        _close(tg.special.polygamma(n, tg.tensor(x, dtype=tg.float64)),
               torch.special.polygamma(n, torch.tensor(x, dtype=torch.float64)), 1e-9, 0)
    _close(tg.special.multigammaln(tg.tensor([2.5, 3.0]), 2),
           torch.special.multigammaln(torch.tensor([2.5, 3.0]), 2), 1e-6, 0)
    with pytest.raises(RuntimeError):
        tg.special.multigammaln(tg.tensor([2.5]), 0)
    y = [1.25, 2.35, -0.5, 1234.5, 1250.0]
    for d in (0, 1, 2, -1, -2):
        _close(tg.special.round(tg.tensor(y, dtype=tg.float64), decimals=d),
               torch.special.round(torch.tensor(y, dtype=torch.float64), decimals=d), 1e-15, 0)
    r = tg.tensor([0.4, 2.6], requires_grad=True)
    out = tg.special.round(r, decimals=1)
    assert out.grad_fn.name() == "RoundBackward1"
    out.sum().backward()
    assert r.grad.tolist() == [0.0, 0.0]
    with pytest.raises(TypeError):
        tg.special.gammainc(tg.tensor([1.0]), 2.0)


@pytest.mark.xfail(strict=True, reason="tg.igamma/igammac (math_ops) give SciPy's NaN where a "
                   "NaN operand meets torch's early returns: igamma(nan, 0) = 0, "
                   "igamma(nan, inf) = 1, igamma(inf, nan) = 0 in torch")
def test_gammainc_nan_edges():
    a, x = [NAN, NAN, INF], [0.0, INF, NAN]
    _close(tg.special.gammainc(tg.tensor(a, dtype=tg.float64), tg.tensor(x, dtype=tg.float64)),
           torch.special.gammainc(torch.tensor(a, dtype=torch.float64),
                                  torch.tensor(x, dtype=torch.float64)), 1e-12, 0)
