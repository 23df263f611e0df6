"""Property tests of every registered primitive, derived from the registry and from the
cases of ``primitive_cases.py``.

For each primitive hypothesis picks one of its cases as a template and draws a variant:

- ``base``: new operand values in the case's domain, the case's shapes. Elementwise
  primitives use the domain generators of ``primitive_cases`` (``UNARY_DOMAINS``,
  ``BINARY_DOMAINS``); linear and shape primitives take any values; max/min/argmax
  with distinct values get new distinct values; every other case (linear algebra,
  ties, zeros, NaNs, integral exponents, ...) gets a *monotone jitter*: every value
  that is not a multiple of 1/2 moves by less than a third of the gap to its
  neighbours (and by at most 4 %), so order, ties, signs and the special points the
  case is about are kept, and symmetric matrices stay symmetric;
- ``0d`` / ``empty``: elementwise cases with 0-d operands or a size-0 broadcast shape;
- ``f32``: float32 copies of the float64 operands;
- ``strided`` / ``transposed`` / ``reversed``: the operands passed as non-contiguous
  views (every other element of a larger array, a transposed C-ordered array, a
  ``[::-1]`` view).

Each example is checked for: the traced graph run by the interpreter against the impl
(on contiguous copies); the NumPy code generator and the JAX backend against the
interpreter (inputs left unchanged); in float64, where the case's flags allow, the VJP
and the JVP against central differences, reverse-over-reverse (the VJP of the VJP, for
cases with ``second=True``) against central differences of the first-order VJP, and the
VJP against ``jax.vjp`` of the primitive's lowering (or of the case's ``jax_deriv_fn``);
in float32, the derivatives keep float32 and agree with the float64 ones at the same point.

Each primitive gets 4 examples by default; ``TRACEGRAD_LONG_PROPERTIES=N`` multiplies
that by N (CI runs 1), ``TRACEGRAD_EXHAUSTIVE=1`` by 8.
"""
from __future__ import annotations

import math
import os
import zlib

import jax
import numpy as np
import pytest
from conftest import EXHAUSTIVE, assert_close, fd_jvp, fd_vjp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tracegrad as tg
from tracegrad.ir import REGISTRY, Graph
from tracegrad.runtime import run
from tracegrad.runtime.codegen import generate
from tracegrad.runtime.jax_backend import JaxCompiled

import primitive_cases
from primitive_cases import BINARY_DOMAINS, CASES, UNARY_DOMAINS, Case

LONG = max(1, int(os.environ.get("TRACEGRAD_LONG_PROPERTIES", "1") or 1))
# examples per primitive: a bounded slice by default (the suite's time budget); a long
# run (TRACEGRAD_LONG_PROPERTIES=N, or TRACEGRAD_EXHAUSTIVE=1 for 8 times as many) draws more
EXAMPLES = 4 * (8 if EXHAUSTIVE and LONG == 1 else LONG)
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))

RTOL_VALUE = 1e-12
RTOL_FD = 1e-7       # first order, central differences at h = 1e-6 (as test_primitives)
RTOL_FD2 = 1e-6      # second order: differences of a computed first-order VJP
RTOL_JAX = 1e-10
RTOL_F32 = 2e-3      # float32 derivatives against the float64 ones at the same point

# value-free primitives: any operand values are in the domain
FREE = {"sum", "cumsum", "reshape", "transpose", "broadcast_to", "concatenate", "pad", "getitem",
        "index_update", "matmul", "einsum", "select", "stop_gradient", "convert", "conv2d",
        "conv_transpose2d", "avg_pool2d", "custom_vjp_call", "neg"}
DISTINCT = {"max", "min", "argmax", "argmin", "max_pool2d"}
ELEMENTWISE = set(UNARY_DOMAINS) | set(BINARY_DOMAINS) | {"relu"}


def _domain(case):
    """The per-operand value generators of an untagged elementwise case, or None."""
    if case.tag or case.fn is None or case.prim not in ELEMENTWISE:
        return None
    if not all(a.dtype.kind == "f" for a in case.args):
        return None
    if case.prim == "relu":
        return (primitive_cases.away,)
    if case.prim in UNARY_DOMAINS and len(case.args) == 1:
        return (UNARY_DOMAINS[case.prim],)
    if case.prim in BINARY_DOMAINS and len(case.args) == 2:
        return BINARY_DOMAINS[case.prim]
    return None


def variants(case):
    out = ["base"]
    if not case.args:
        return ["base", "0d", "empty"]
    if _domain(case) is not None:
        out += ["0d", "empty"]
    if any(a.dtype == np.float64 for a in case.args) and case.prim != "custom_vjp_call":
        out.append("f32")
    if any(a.ndim >= 1 and a.size for a in case.args):
        out += ["strided", "reversed"]
    if any(a.ndim >= 2 and a.size for a in case.args):
        out.append("transposed")
    return out


# -- operand values ---------------------------------------------------------------------------------
def _half_grid(x):
    return np.isfinite(x) & (np.round(2 * x) == 2 * x)


def _jitter(arrays, rng):
    """A strictly monotone perturbation of the values of the float ``arrays`` (jointly): keeps
    order, ties, NaN/inf and multiples of 1/2; symmetric matrices stay symmetric."""
    floats = [a for a in arrays if a.dtype.kind == "f" and a.size]
    if not floats:
        return arrays
    allv = np.concatenate([a.astype(np.float64).ravel() for a in floats])
    u = np.unique(allv[np.isfinite(allv)])
    if u.size == 0:
        return arrays
    gap = np.diff(u)
    left = np.concatenate([[np.inf], gap])
    right = np.concatenate([gap, [np.inf]])
    radius = np.minimum.reduce([np.minimum(left, right) / 3, 0.04 * np.abs(u), np.full(u.shape, 0.04)])
    radius[_half_grid(u)] = 0.0
    new_u = u + rng.uniform(-1.0, 1.0, u.shape) * radius
    out = []
    for a in arrays:
        if a.dtype.kind != "f" or not a.size:
            out.append(a)
            continue
        v = a.astype(np.float64)
        finite = np.isfinite(v)
        w = v.copy()
        w[finite] = new_u[np.searchsorted(u, v[finite])]
        if w.ndim >= 2 and w.shape[-1] == w.shape[-2] and np.array_equal(v, np.swapaxes(v, -1, -2)):
            w = 0.5 * (w + np.swapaxes(w, -1, -2))
        out.append(w.astype(a.dtype))
    return out


def _distinct(shape, rng):
    n = math.prod(shape)
    return rng.permutation(np.linspace(-2.0, 2.0, max(n, 1) * 2))[:n].reshape(shape)


def _zero_shapes(shapes):
    """The shapes with one axis of their broadcast result set to 0."""
    out = np.broadcast_shapes(*shapes)
    axes = [k for k in range(len(out)) if out[k] != 1]
    if not out:
        return [(0,) + s if k == 0 else s for k, s in enumerate(shapes)]
    k = axes[0] if axes else 0
    new = []
    for s in shapes:
        j = k - (len(out) - len(s))
        s = list(s)
        if j >= 0 and (s[j] != 1 or not axes):
            s[j] = 0
        new.append(tuple(s))
    return new


def make_args(case, variant, seed):
    """The operands of one example: new values, and the variant's shapes, dtypes and layout."""
    rng = np.random.default_rng(seed)
    args = list(case.args)
    domain = _domain(case)
    if domain is not None:
        shapes = [a.shape for a in args]
        if variant == "0d":
            shapes = [()] * len(args)
        elif variant == "empty":
            shapes = _zero_shapes(shapes)
        saved = primitive_cases._rng
        primitive_cases._rng = rng   # the domain generators draw from the module's generator
        try:
            args = [np.asarray(d(s)).astype(a.dtype) for d, s, a in zip(domain, shapes, args)]
        finally:
            primitive_cases._rng = saved
    elif case.prim in FREE and case.tag not in ("set-constant",):
        args = [rng.uniform(-2.0, 2.0, a.shape).astype(a.dtype)
                if a.dtype.kind == "f" and not _half_grid(a).all() else a for a in args]
    elif case.prim in DISTINCT and all(a.dtype.kind == "f" for a in args) and \
            all(np.unique(a).size == a.size for a in args):
        args = [_distinct(a.shape, rng).astype(a.dtype) for a in args]
    else:
        args = _jitter(args, rng)
    if variant == "f32":
        args = [a.astype(np.float32) if a.dtype == np.float64 else a for a in args]
    elif variant in ("strided", "reversed", "transposed"):
        args = [as_view(a, variant) for a in args]
    return args


def as_view(a, kind):
    """``a``'s values in a non-contiguous (or negative-stride) view of a larger array."""
    a = np.asarray(a)
    if a.ndim == 0 or not a.size:
        return a
    if kind == "strided":
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        big[..., ::2] = a
        view = big[..., ::2]
    elif kind == "reversed":
        view = a[::-1].copy()[::-1]
    else:   # transposed: a C-ordered array seen through .T (F-ordered)
        if a.ndim < 2:
            return a
        view = np.ascontiguousarray(a.T).T
    assert np.array_equal(view, a, equal_nan=True)
    return view


# -- the function under test -----------------------------------------------------------------------
def example_case(case, variant, draw):
    """A Case for one example: the template with new operands (zeros: new params)."""
    if not case.args:
        shape = {"base": case.params["shape"], "0d": (), "empty": (0, 2)}[variant]
        if variant == "base":
            shape = tuple(draw(st.lists(st.integers(1, 3), max_size=3)))
        params = {"shape": shape, "dtype": case.params["dtype"]}
        return Case("zeros", (), params, tag="drawn", fn=lambda _p=params: tg.ir.apply("zeros", **_p))
    seed = draw(st.integers(0, 2**32 - 1))
    args = make_args(case, variant, seed)
    with np.errstate(all="ignore"):
        return Case(case.prim, tuple(args), case.params, tag=case.tag, diff=case.diff, derivs=case.derivs,
                    fd=case.fd, second=case.second, forward_mode=case.forward_mode,
                    jax_derivs=case.jax_derivs, fn=case.fn, jax_fn=case.jax_fn, fd_fn=case.fd_fn,
                    ref_fn=case.ref_fn, jax_deriv_fn=case.jax_deriv_fn)


def _graph(ex):
    if ex.args:
        return tg.trace(ex.fn, *ex.args)
    graph = Graph()
    graph.outputs = [graph.add_node("zeros", (), ex.params, shape=ex.out.shape, dtype=ex.out.dtype)]
    return graph


def _close(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (what, a.shape, a.dtype, b.shape, b.dtype)
    if a.dtype.kind not in "fc":
        np.testing.assert_array_equal(a, b, err_msg=what)
        return
    # float64: 1e-12; float32: NumPy and XLA round transcendental functions differently.
    # Norm-wise (relative to the largest finite entry, at least 1): a determinant that
    # cancels to ~1e-16 is rounding noise on entries of size 1
    rtol = 1e-5 if a.dtype.kind in "fc" and np.finfo(a.dtype).eps > 1e-10 else 1e-12
    finite = np.isfinite(b)
    scale = max(float(np.max(np.abs(b[finite]), initial=0.0)), 1.0)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale, equal_nan=True, err_msg=what)


def _probe(ex, x, salt):
    rng = np.random.default_rng(zlib.crc32(f"{ex.id}/{salt}".encode()))
    return rng.standard_normal(np.shape(x)).astype(np.asarray(x).dtype)


# -- the checks ---------------------------------------------------------------------------------
def check_values(ex):
    """Interpreter == impl (on contiguous copies); codegen and the JAX backend == interpreter."""
    copies = [np.array(a, copy=True) for a in ex.args]
    with np.errstate(all="ignore"):
        ref = np.asarray(ex.ref_fn(*[np.array(a, order="C", copy=True) for a in ex.args]))
        graph = _graph(ex)
        interp = run(graph, list(ex.args))
        # a view and its contiguous copy may be summed in another order: float32 rounds then
        rtol = RTOL_VALUE if ref.dtype not in (np.float32, np.complex64) else 1e-5
        assert_close(interp[0], ref, rtol, "interpreter vs impl")
        for a, b in zip(generate(graph)(*ex.args), interp):
            _close(a, b, "codegen vs interpreter")
        for a, b in zip(JaxCompiled(graph)(*ex.args), interp):
            _close(np.asarray(a), b, "JAX backend vs interpreter")
    for a, c in zip(ex.args, copies):
        np.testing.assert_array_equal(a, c, err_msg="an input was modified")


def _vjp(ex, xs, ct):
    return tg.vjp(ex.partial(ex.fn), *xs)[1](ct)


def check_first_order(ex, use_jax):
    xs = [ex.args[i] for i in ex.diff]
    ct = _probe(ex, ex.out, "ct")
    ts = [_probe(ex, x, f"t{k}") for k, x in enumerate(xs)]
    got = _vjp(ex, xs, ct)
    for g, x in zip(got, xs):
        assert np.asarray(g).dtype == x.dtype and np.shape(g) == x.shape
    f64 = all(np.asarray(a).dtype == np.float64 for a in [*xs, ct])
    if ex.fd and f64:
        for k, (g, f) in enumerate(zip(got, fd_vjp(ex.partial(ex.fd_fn), xs, ct))):
            assert_close(g, f, RTOL_FD, f"cotangent {k} vs finite differences", floor=1.0)
    if ex.forward_mode:
        _, tangent = tg.jvp(ex.partial(ex.fn), xs, ts)
        assert np.asarray(tangent).dtype == ex.out.dtype
        if ex.fd and f64:
            assert_close(tangent, fd_jvp(ex.partial(ex.fd_fn), xs, ts), RTOL_FD,
                         "tangent vs finite differences", floor=1.0)
    else:
        with pytest.raises(tg.TraceError, match="forward mode"):
            tg.jvp(ex.partial(ex.fn), xs, ts)
    if use_jax and ex.jax_derivs and f64:
        want, wants = _jax_first_order(ex.partial(ex.jax_deriv_fn), xs, ts, ct, ex.forward_mode)
        if ex.forward_mode:
            assert_close(tangent, np.asarray(want).astype(tangent.dtype), RTOL_JAX, "tangent vs jax.jvp")
        for k, (g, w) in enumerate(zip(got, wants or ())):
            assert_close(g, np.asarray(w).astype(g.dtype), RTOL_JAX, f"cotangent {k} vs jax.vjp")
    return got


def _jax_first_order(jax_fn, xs, ts, ct, forward_mode):
    """``jax.jvp`` (when ``forward_mode``) and ``jax.vjp`` of ``jax_fn`` at ``xs``, under one
    ``jax.jit``: one XLA compile per example instead of one per operation of the lowering
    and of its derivatives (JAX run op by op compiles each anew for every shape). The VJP
    is None where JAX has none (a dilated max pool: forward mode only)."""
    def refs(xs, ts, ct, reverse):
        tangent = jax.jvp(jax_fn, tuple(xs), tuple(ts))[1] if forward_mode else None
        return tangent, (jax.vjp(jax_fn, *xs)[1](ct) if reverse else None)

    try:
        return jax.jit(refs, static_argnums=3)(xs, ts, ct, True)
    except NotImplementedError:
        return jax.jit(refs, static_argnums=3)(xs, ts, ct, False)


def _symmetric_like(x, t):
    if x.ndim >= 2 and x.shape[-1] == x.shape[-2] and np.array_equal(x, np.swapaxes(x, -1, -2)):
        return 0.5 * (t + np.swapaxes(t, -1, -2))
    return t


def check_second_order(ex):
    """d/dx <u, vjp(x)(ct)> by the adjoint pass, along a direction t, vs central differences."""
    xs = [ex.args[i] for i in ex.diff]
    ct = _probe(ex, ex.out, "ct")
    us = [_probe(ex, x, f"u{k}") for k, x in enumerate(xs)]
    # a symmetric operand (cholesky's) is perturbed symmetrically: its rules are the
    # derivatives of the function on symmetric matrices
    ts = [_symmetric_like(x, _probe(ex, x, f"t{k}")) for k, x in enumerate(xs)]

    def inner(*ys):
        return sum(np.sum(u * g) for u, g in zip(us, _vjp(ex, ys, ct)))

    got = tg.grad(inner, argnums=tuple(range(len(xs))))(*xs)
    directional = sum(float(np.sum(g * t)) for g, t in zip(got, ts))
    h = 1e-5
    plus = inner(*[x + h * t for x, t in zip(xs, ts)])
    minus = inner(*[x - h * t for x, t in zip(xs, ts)])
    fd = float(plus - minus) / (2 * h)
    scale = max(1.0, sum(float(np.linalg.norm(np.ravel(g)) * np.linalg.norm(np.ravel(t)))
                         for g, t in zip(got, ts)))
    assert abs(directional - fd) <= RTOL_FD2 * 100 * scale, (directional, fd)


def check_f32(ex):
    """float32 derivatives stay float32 and agree with float64 ones at the same point."""
    xs = [ex.args[i] for i in ex.diff]
    if not any(x.dtype == np.float32 for x in xs):
        return
    ct = _probe(ex, ex.out, "ct")
    got = _vjp(ex, xs, ct)
    ex64 = Case(ex.prim, tuple(a.astype(np.float64) if a.dtype == np.float32 else a for a in ex.args),
                ex.params, diff=ex.diff, fn=ex.fn)
    want = _vjp(ex64, [ex64.args[i] for i in ex.diff], ct.astype(ex64.out.dtype))
    for g, w, x in zip(got, want, xs):
        assert np.asarray(g).dtype == x.dtype
        scale = max(float(np.max(np.abs(w), initial=0.0)), 1.0)
        np.testing.assert_allclose(g, w.astype(g.dtype), rtol=RTOL_F32, atol=RTOL_F32 * scale)


# -- the tests -------------------------------------------------------------------------------------
# JAX's op-by-op derivatives compile each primitive anew per shape; one example in JAX_EVERY
# (and every one in a long run) is compared with jax.vjp.
JAX_EVERY = 1 if LONG > 1 else 3


def test_every_primitive_has_a_strategy():
    missing = sorted(n for n in REGISTRY if not CASES.get(n))
    assert not missing, f"primitives without cases (so without a strategy): {missing}"


@pytest.mark.parametrize("name", sorted(REGISTRY))
@SETTINGS
@given(data=st.data())
def test_primitive_properties(name, data):
    cases = CASES.get(name)
    if not cases:
        pytest.fail(f"primitive {name!r} has no cases in primitive_cases.py, so no strategy")
    # complex cases are checked against jax.vjp/jax.jvp and complex finite differences in
    # test_primitives.py; the properties here (jitter, float32, real Hessians) are real ones
    real_cases = [c for c in cases if not c.complex]
    case = data.draw(st.sampled_from(real_cases or cases), label="case")
    variant = data.draw(st.sampled_from(variants(case) if real_cases else ["base"]),
                        label="variant")
    data.draw(st.just(case.id), label="case id")
    ex = example_case(case, variant, data.draw)
    check_values(ex)
    if not ex.differentiable or not real_cases:
        return
    if case.known_failure:   # a strict xfail in test_primitives.py
        return
    if variant == "f32":
        check_f32(ex)
        return
    use_jax = data.draw(st.integers(0, JAX_EVERY - 1), label="jax") == 0
    check_first_order(ex, use_jax)
    if case.second and ex.fd:
        check_second_order(ex)
