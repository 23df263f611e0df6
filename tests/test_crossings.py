"""Derivatives where features meet, generated from the registry's cases.

Every differentiable case of ``primitive_cases.CASES`` is differentiated with respect to
every non-empty subset of its differentiable operands, the others held constant (closed
over, so they reach the graph as constants without tangents or cotangents):

- first order, in both modes and through every entry point: ``tg.vjp``, ``tg.grad`` of a
  random projection, ``tg.jvp``, ``tg.jacobian`` in ``"rev"`` and ``"fwd"`` mode (its
  blocks contracted with the same probes);
- second order: forward over reverse (``tg.jvp`` of ``tg.grad``), reverse over reverse
  (``tg.grad`` of a ``tg.grad`` product) and reverse over forward (``tg.grad`` of a
  ``tg.jvp``), all three the Hessian-vector product of the same random projection;
- where transforms meet: the cross blocks of the Hessian with the inner transform closing
  over the outer one's traced operands (mixed partials), the derivatives under ``tg.jit``
  (NumPy and JAX backends) and under ``tg.vmap`` (batched operands, unbatched constants);
- broadcasting: each elementwise primitive with several operands (real and complex) is
  also applied to operands of broadcastable shapes ((1, 4) against (3, 4), 0-d against
  (3,), (3, 1) against (1, 4), in every arrangement), its values drawn from its own
  case's operands (so from the primitive's valid domain).

Oracles: central finite differences of the case's NumPy function (``case.fd_fn``) for
float64 cases where they are valid (first order: the full VJP and the JVP; second order:
the mixed difference <v, H u> of the projection); JAX (``jax.vjp``/``jax.jvp`` of
``case.jax_deriv_fn``, the same operands closed over) for every case with JAX's convention,
and in place of finite differences where those cannot check (ties, float32); the modes
against each other everywhere (the only check at a kink where neither applies). A
primitive added to the registry with cases is covered here without an edit. The
exhaustive set runs with TRACEGRAD_EXHAUSTIVE=1; by default an evenly spread slice of
each test's set.
"""
import dataclasses
import itertools
import zlib

import numpy as np
import pytest
from conftest import assert_close, bounded, fd_jvp, fd_vjp

import tracegrad as tg
from tracegrad.ir import REGISTRY

from primitive_cases import CASES

RTOL_FD = 1e-7        # first order against central differences (float64, h = 1e-6)
RTOL_FD2 = 1e-5       # <v, H u> against a mixed central difference (h = 1e-4)
RTOL_JAX = 1e-10      # against JAX in float64
RTOL_F32 = 2e-5       # anything computed in float32
RTOL_SELF = 1e-9      # tracegrad's modes against each other (float64)

N_FIRST = 300         # default slice sizes (all with TRACEGRAD_EXHAUSTIVE=1)
N_SECOND = 150
N_MIXED = 60
N_COMPILED = 24
N_VMAPPED = 100
N_JAX = 60

# broadcastable operand shapes: operand i takes SHAPE_SETS[s][(i + r) % len], for each
# rotation r, so each operand is on each side of each pairing once
SHAPE_SETS = [((1, 4), (3, 4)), ((), (3,)), ((3, 1), (1, 4))]


# -- the generated crossings ----------------------------------------------------------------
def _broadcast_cases():
    """Cases of broadcastable operand shapes for every elementwise primitive with more than
    one operand, from its first real and its first complex case that finite differences
    can check."""
    out = []
    for name, prim in REGISTRY.items():
        if prim.family != "elementwise":
            continue
        for dtype in (np.float64, np.complex128):
            bases = [c for c in CASES.get(name, []) if c.differentiable and c.fd
                     and len(c.args) > 1 and all(a.size for a in c.args) and c.out.dtype == dtype]
            if bases:
                out.extend(_broadcast_variants(bases[0]))
    return out


def _broadcast_variants(base):
    rng = np.random.default_rng(zlib.crc32(f"broadcast/{base.id}".encode()))
    n = len(base.args)
    arrangements = dict.fromkeys(tuple(shapes[(i + r) % len(shapes)] for i in range(n))
                                 for shapes in SHAPE_SETS for r in range(n))
    for new_shapes in arrangements:
        # values drawn from the base case's own operands: the same domain
        args = tuple(np.asarray(rng.choice(np.ravel(a), s), dtype=a.dtype)
                     for a, s in zip(base.args, new_shapes))
        yield dataclasses.replace(base, args=args, tag="bcast", second=True)


def _subsets(diff):
    return [s for k in range(1, len(diff) + 1) for s in itertools.combinations(diff, k)]


def _crossings():
    cases = [c for cs in CASES.values() for c in cs] + _broadcast_cases()
    out = []
    for case in cases:
        if not case.differentiable:
            continue
        for wrt in _subsets(case.diff):
            marks = ()
            if case.known_failure:
                # raised by the rule, or by a second-order rule as a TraceError naming it
                raises, reason = case.known_failure
                marks = pytest.mark.xfail(raises=(raises, tg.TraceError), reason=reason,
                                          strict=True)
            out.append(pytest.param(case, wrt, id=f"{case.id}-wrt{''.join(map(str, wrt))}",
                                    marks=marks))
    return out


ALL = _crossings()
FIRST = bounded(ALL, N_FIRST)
SECOND = bounded(ALL, N_SECOND)


def test_generated_counts():
    """The generated set covers every differentiable registered primitive, with subsets
    and broadcasting; prints the sizes the issue's closing note reports."""
    names = {p.values[0].prim for p in ALL}
    want = {n for n, cs in CASES.items() if any(c.differentiable for c in cs)}
    assert names == want
    bcast = [p for p in ALL if "-bcast-" in p.id]
    assert {p.values[0].prim for p in bcast} >= {"add", "mul", "pow", "select", "arctan2"}
    print(f"crossings: {len(ALL)} generated ({len(bcast)} broadcast), "
          f"{len(FIRST)} first-order and {len(SECOND)} second-order in the default slice")


# -- probes and helpers -------------------------------------------------------------------------
def _random_like(case, wrt, x, salt):
    x = np.asarray(x)
    rng = np.random.default_rng(zlib.crc32(f"{case.id}/{wrt}/{salt}".encode()))
    if x.dtype.kind == "c":
        return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
    return np.asarray(rng.standard_normal(x.shape)).astype(x.dtype)


def _partial(case, fn, wrt):
    """``fn`` as a function of the operands ``wrt``; the others are closed over."""
    def f(*xs):
        ops = list(case.args)
        for i, x in zip(wrt, xs):
            ops[i] = x
        return fn(*ops)
    return f


def _f64(case, wrt):
    return case.out.dtype in (np.float64, np.complex128) and all(
        case.args[i].dtype in (np.float64, np.complex128) for i in wrt)


def _rtol(case, base):
    single = (np.float32, np.complex64)
    return RTOL_F32 if case.out.dtype in single or any(a.dtype in single for a in case.args) \
        else base


def _pair(a, b):
    """Re <a, b>: the real pairing that makes a complex cotangent a gradient."""
    return np.sum(np.real(a * b))


def _jax_first(case, wrt, xs, ct, ts):
    import jax
    import jax.numpy as jnp
    # the constants as JAX arrays too (a lowering may call JAX methods on them)
    f = _partial(case, lambda *ops: case.jax_deriv_fn(*map(jnp.asarray, ops)), wrt)

    # under one jax.jit: one XLA compile, where JAX run op by op compiles every operation
    # of the lowering and of its derivatives anew for each shape
    def refs(xs, ct, ts, reverse):
        jvp = jax.jvp(f, tuple(xs), tuple(ts))[1]
        if reverse:
            return jax.vjp(f, *xs)[1](ct), jvp
        return jax.jacfwd(f, argnums=tuple(range(len(xs))))(*xs), jvp

    try:
        vjp, jvp = jax.jit(refs, static_argnums=3)(xs, np.asarray(ct), ts, True)
        vjp = [np.asarray(v) for v in vjp]
    except NotImplementedError:
        # JAX has no VJP for some lowerings (a dilated max-pool): contract its forward
        # Jacobian instead (real cases only reach here)
        jacs, jvp = jax.jit(refs, static_argnums=3)(xs, np.asarray(ct), ts, False)
        vjp = [np.tensordot(ct, np.asarray(j), ct.ndim) for j in jacs]
    return vjp, np.asarray(jvp)


def _first_order_oracle(case, wrt, xs, ct, ts):
    """(vjp, jvp, rtol, name, floor) from finite differences where valid, else from JAX,
    else None."""
    if case.fd and _f64(case, wrt):
        fd = _partial(case, case.fd_fn, wrt)
        return fd_vjp(fd, xs, ct), fd_jvp(fd, xs, ts), RTOL_FD, "finite differences", 1.0
    if case.jax_derivs:
        vjp, jvp = _jax_first(case, wrt, xs, ct, ts)
        vjp = [v.astype(x.dtype) for v, x in zip(vjp, xs)]
        return vjp, jvp.astype(case.out.dtype), _rtol(case, RTOL_JAX), "JAX", 0.0
    return None


# -- first order --------------------------------------------------------------------------------
@pytest.mark.parametrize("case,wrt", FIRST)
def test_first_order(case, wrt):
    """vjp, grad, jvp and both Jacobians, with respect to the operands ``wrt`` only."""
    xs = [case.args[i] for i in wrt]
    ct = _random_like(case, wrt, case.out, "ct")
    ts = [_random_like(case, wrt, x, f"t{k}") for k, x in enumerate(xs)]
    f = _partial(case, case.fn, wrt)
    argnums = tuple(range(len(xs)))
    oracle = _first_order_oracle(case, wrt, xs, ct, ts)
    self_rtol = _rtol(case, RTOL_SELF)

    out, vjp_fn = tg.vjp(f, *xs)
    assert_close(out, case.out, _rtol(case, 1e-12), "vjp primal output")
    vjp = vjp_fn(ct)
    assert len(vjp) == len(xs)
    grads = tg.grad(lambda *ys: _pair(ct, f(*ys)), argnums=argnums)(*xs)
    for k, (g, h) in enumerate(zip(vjp, grads)):
        assert_close(h, g, self_rtol, f"grad of <ct, f> vs vjp, operand {wrt[k]}")

    if not case.forward_mode:
        with pytest.raises(tg.TraceError, match="forward mode"):
            tg.jvp(f, xs, ts)
        jvp = None
    else:
        out_f, jvp = tg.jvp(f, xs, ts)
        assert_close(out_f, case.out, _rtol(case, 1e-12), "jvp primal output")
        assert np.asarray(jvp).shape == case.out.shape

    # each mode's Jacobian contracted with the probes: the VJP and the JVP again. As
    # JAX's jacrev and jacfwd: reverse mode needs real outputs, forward mode real inputs
    modes = (["rev"] if case.out.dtype.kind == "f" else []) + (
        ["fwd"] if case.forward_mode and all(x.dtype.kind == "f" for x in xs) else [])
    for mode in modes:
        jac = tg.jacobian(f, argnums=argnums, mode=mode)(*xs)
        nd = case.out.ndim
        for k, (block, x) in enumerate(zip(jac, xs)):
            assert block.shape == case.out.shape + x.shape, f"{mode} block {k}"
            contracted = np.tensordot(ct, block, nd)
            if x.dtype.kind == "f":
                contracted = np.real(contracted)   # the real pairing Re <ct, J dx>
            assert_close(contracted.astype(x.dtype), vjp[k], self_rtol,
                         f"ct . jacobian(mode={mode!r}) vs vjp, operand {wrt[k]}")
        if jvp is not None and (mode == "fwd" or all(x.dtype.kind == "f" for x in xs)):
            contracted = sum(np.tensordot(b, t, t.ndim) for b, t in zip(jac, ts))
            assert_close(np.asarray(contracted).astype(case.out.dtype), jvp, self_rtol,
                         f"jacobian(mode={mode!r}) . t vs jvp")

    if oracle is None:
        return              # a kink where neither oracle applies: the modes agree (above)
    want_vjp, want_jvp, rtol, name, floor = oracle
    for k, (g, w) in enumerate(zip(vjp, want_vjp)):
        assert_close(g, w, rtol, f"vjp, operand {wrt[k]}, vs {name}", floor=floor)
    if jvp is not None:
        assert_close(jvp, want_jvp, rtol, f"jvp vs {name}", floor=floor)


JAX_FIRST = bounded([p for p in ALL if p.values[0].jax_derivs], N_JAX)


@pytest.mark.parametrize("case,wrt", JAX_FIRST)
def test_first_order_against_jax(case, wrt):
    """tg.vjp and tg.jvp with respect to ``wrt`` against jax.vjp and jax.jvp of the case's
    JAX twin, the other operands closed over as constants there too."""
    xs = [case.args[i] for i in wrt]
    ct = _random_like(case, wrt, case.out, "ct")
    ts = [_random_like(case, wrt, x, f"t{k}") for k, x in enumerate(xs)]
    f = _partial(case, case.fn, wrt)
    want_vjp, want_jvp = _jax_first(case, wrt, xs, ct, ts)
    rtol = _rtol(case, RTOL_JAX)
    # JAX's rounding is absolute at the scale of the (O(1)) operands: a derivative that is
    # exactly 0 (det's at a rank-1 matrix) comes out of JAX as 2e-16, which cannot set
    # the scale of a relative comparison
    for k, (g, w, x) in enumerate(zip(tg.vjp(f, *xs)[1](ct), want_vjp, xs)):
        assert_close(g, w.astype(x.dtype), rtol, f"vjp, operand {wrt[k]}, vs jax.vjp",
                     floor=1.0)
    if case.forward_mode:
        assert_close(tg.jvp(f, xs, ts)[1], want_jvp.astype(case.out.dtype), rtol,
                     "jvp vs jax.jvp", floor=1.0)


# -- second order -------------------------------------------------------------------------------
def _mixed_difference(g, xs, us, vs, h=1e-4):
    """d2/da db g(xs + a us + b vs) at 0 by central differences (four evaluations)."""
    def at(a, b):
        return g(*[x + a * u + b * v for x, u, v in zip(xs, us, vs)])
    return (at(h, h) - at(h, -h) - at(-h, h) + at(-h, -h)) / (4 * h * h)


@pytest.mark.parametrize("case,wrt", SECOND)
def test_second_order(case, wrt):
    """The Hessian-vector product of <w, f> three ways, against each other and a mixed
    central difference of NumPy's function."""
    xs = [case.args[i] for i in wrt]
    w = _random_like(case, wrt, case.out, "w")
    us = [_random_like(case, wrt, x, f"u{k}") for k, x in enumerate(xs)]
    vs = [_random_like(case, wrt, x, f"v{k}") for k, x in enumerate(xs)]
    f = _partial(case, case.fn, wrt)
    argnums = tuple(range(len(xs)))
    rtol = _rtol(case, RTOL_SELF)

    def g(*ys):
        return _pair(w, f(*ys))

    grad_g = tg.grad(g, argnums=argnums)
    # reverse over reverse: the gradient of the directional derivative <grad g, u>
    hu_rr = tg.grad(lambda *ys: sum(_pair(a, u) for a, u in zip(grad_g(*ys), us)),
                    argnums=argnums)(*xs)
    results = {"reverse over reverse": hu_rr}
    if case.forward_mode:
        results["forward over reverse"] = tg.jvp(grad_g, xs, us)[1]
        results["reverse over forward"] = tg.grad(
            lambda *ys: np.real(tg.jvp(g, ys, us)[1]), argnums=argnums)(*xs)
    if not case.complex:
        # the full Hessian blocks, batched (tg.passes.batch) over one-hot seeds: the
        # adjoint of the adjoint graph, and the tangent graph of the adjoint graph
        modes = ["rev"] + (["fwd"] if case.forward_mode else [])
        for mode in modes:
            hess = tg.jacobian(grad_g, argnums=argnums, mode=mode)(*xs)
            results[f"jacobian(grad, mode={mode!r})"] = [
                sum(np.tensordot(hess[i][j], u, u.ndim) for j, u in enumerate(us)).astype(x.dtype)
                for i, x in enumerate(xs)]
    # an entry that is 0 exactly (det of a 1x1 matrix is linear) comes out of each mode as
    # the roundoff of its terms, of the size of |grad g| |u|: ~eps of that is the floor
    terms = max(float(np.max(np.abs(a), initial=0.0)) for a in grad_g(*xs)) * \
        max(float(np.max(np.abs(u), initial=0.0)) for u in us)
    floor = 64 * np.finfo(np.float64).eps * terms / rtol
    for mode, hu in results.items():
        for k, (a, b) in enumerate(zip(hu, hu_rr)):
            assert_close(a, b, rtol, f"H u, operand {wrt[k]}: {mode} vs reverse over reverse",
                         floor=floor)

    # jax_derivs=False marks a case at a kink (|x| at 0): its first differences are
    # valid, its second are not
    if case.fd and case.jax_derivs and _f64(case, wrt):
        fd = _partial(case, case.fd_fn, wrt)
        want = _mixed_difference(lambda *ys: _pair(w, np.asarray(fd(*ys))), xs, us, vs)
        got = sum(_pair(a, v) for a, v in zip(hu_rr, vs))
        assert_close(np.float64(got), np.float64(want), RTOL_FD2, "<v, H u> vs finite "
                     "differences", floor=max(1.0, float(np.abs(g(*xs)))))


# -- mixed partials: one operand set differentiated inside a transform of the others -----------
MIXED = bounded([p for p in ALL if len(p.values[1]) > 1], N_MIXED)


@pytest.mark.parametrize("case,wrt", MIXED)
def test_mixed_partials(case, wrt):
    """The cross blocks of the Hessian of <w, f> with the inner transform closing over the
    outer one's traced operands (the other operands constants): H_BA u_A and H_AB u_B, for
    A = the first operand of ``wrt``, B = the rest, against the blocks of the full H u."""
    xs = [case.args[i] for i in wrt]
    w = _random_like(case, wrt, case.out, "w")
    us = [_random_like(case, wrt, x, f"u{k}") for k, x in enumerate(xs)]
    f = _partial(case, case.fn, wrt)
    rtol = _rtol(case, RTOL_SELF)

    def g(*ys):
        return _pair(w, f(*ys))

    full = tg.grad(g, argnums=tuple(range(len(xs))))

    def hu(masked):          # H u, u zero outside `masked`, by reverse over reverse
        u = [u if k in masked else np.zeros_like(u) for k, u in enumerate(us)]
        return tg.grad(lambda *ys: sum(_pair(a, b) for a, b in zip(full(*ys), u)),
                       argnums=tuple(range(len(xs))))(*xs)

    def grad_a(*rest):       # d/dx_A g, closing over the outer (traced) rest
        return tg.grad(lambda a: g(a, *rest))(xs[0])

    # H_BA u_A: the outer gradient of <grad_A g, u_A> in the rest
    got = tg.grad(lambda *rest: _pair(grad_a(*rest), us[0]),
                  argnums=tuple(range(len(xs) - 1)))(*xs[1:])
    want = hu({0})[1:]
    for k, (a, b) in enumerate(zip(got, want)):
        assert_close(a, b, rtol, f"H_BA u_A, operand {wrt[k + 1]}")
    if case.forward_mode:
        # H_AB u_B: the outer tangent of grad_A g along u_B
        got = tg.jvp(grad_a, xs[1:], us[1:])[1]
        assert_close(got, hu(set(range(1, len(xs))))[0], rtol, "H_AB u_B")


# -- compiled: the derivative graphs through tg.jit ------------------------------------------
COMPILED = bounded(ALL, N_COMPILED)


@pytest.mark.parametrize("backend", ["numpy", "jax"])
@pytest.mark.parametrize("case,wrt", COMPILED)
def test_compiled_derivatives(case, wrt, backend):
    """tg.jit of the gradient of a projection and of a jvp gives the interpreted numbers."""
    xs = [case.args[i] for i in wrt]
    ct = _random_like(case, wrt, case.out, "ct")
    ts = [_random_like(case, wrt, x, f"t{k}") for k, x in enumerate(xs)]
    f = _partial(case, case.fn, wrt)
    argnums = tuple(range(len(xs)))
    rtol = _rtol(case, RTOL_SELF)

    def grad_fn(*ys):
        return tg.grad(lambda *zs: _pair(ct, f(*zs)), argnums=argnums)(*ys)

    want = grad_fn(*xs)
    got = tg.jit(grad_fn, backend=backend)(*xs)
    for k, (a, b) in enumerate(zip(got, want)):
        assert_close(np.asarray(a), b, rtol, f"jit({backend}) grad, operand {wrt[k]}")
    if case.forward_mode:
        def jvp_fn(*ys):
            return tg.jvp(f, ys, ts)[1]
        assert_close(np.asarray(tg.jit(jvp_fn, backend=backend)(*xs)), jvp_fn(*xs), rtol,
                     f"jit({backend}) jvp")


# -- scenarios: np.unique's gradient and argnums ---------------------------------------------
UNIQUE_INPUTS = [np.array([0.7, -1.2, 2.5, 0.1]),                  # no ties: a permutation
                 np.array([1.0, 2.0, 2.0, 3.0, 2.0]),              # a tie of three
                 np.array([[2.0, -1.0], [2.0, 0.5], [-1.0, 4.0]]),  # 2-D, two ties
                 np.array([np.nan, 1.5, np.nan, -0.5, 1.5])]       # NaNs (one value by default)


@pytest.mark.parametrize("x", UNIQUE_INPUTS, ids=["distinct", "tie", "2d", "nan"])
def test_unique_gradient_is_finite_differences(x):
    """Each occurrence of a value gets that value's whole cotangent: the central difference
    of NumPy's sum(phi(np.unique(x))) (moving one duplicate adds a value)."""
    def phi_np(x):
        return np.nansum(np.sin(np.unique(x)) * np.unique(x))

    g = tg.grad(phi_np)(x)
    assert_close(g, fd_vjp(phi_np, [x], np.float64(1.0))[0], RTOL_FD, "grad", floor=1.0)
    if not np.isnan(x).any():
        # second order: the derivative of that gradient (within each group of ties,
        # every occurrence moves its value)
        h = tg.hessian(lambda x: np.sum(np.unique(x) ** 3))(x)
        flat = np.ravel(x)
        want = np.where(flat[:, None] == flat[None, :], 6 * flat[:, None], 0.0)
        assert_close(h.reshape(flat.size, flat.size), want, RTOL_SELF, "hessian")


def test_unique_values_without_ties_match_jax_and_fd_in_both_modes():
    x = np.array([0.7, -1.2, 2.5, 0.1, 1.9])
    w = np.array([1.0, 3.0, 1.0, -2.0, 0.5])
    t = np.array([0.3, -1.0, 2.0, 0.5, 1.0])
    vals, vjp_fn = tg.vjp(np.unique, x)
    np.testing.assert_array_equal(vals, np.unique(x))
    assert_close(vjp_fn(w)[0], fd_vjp(np.unique, [x], w)[0], RTOL_FD, "vjp", floor=1.0)
    assert_close(tg.jvp(np.unique, (x,), (t,))[1], fd_jvp(np.unique, [x], [t]), RTOL_FD, "jvp",
                 floor=1.0)
    assert_close(tg.jacobian(np.unique, mode="fwd")(x), tg.jacobian(np.unique)(x), RTOL_SELF,
                 "jacobian fwd vs rev")
    for backend in ("numpy", "jax"):
        got = tg.jit(tg.grad(lambda x: np.sum(np.unique(x) * w)), backend=backend)(x)
        assert_close(np.asarray(got), vjp_fn(w)[0], RTOL_SELF, f"jit({backend})")


@pytest.mark.parametrize("equal_nan", [True, False])
@pytest.mark.parametrize("x", UNIQUE_INPUTS + [np.zeros((0, 2)), np.array([[np.nan]])],
                         ids=["distinct", "tie", "2d", "nan", "empty", "one-nan"])
def test_unique_index_inverse_counts_are_numpys(x, equal_nan):
    """return_index / return_inverse / return_counts: NumPy's arrays (dtypes and shapes),
    traced and compiled on both backends; the values still carry their gradient."""
    def f(x):
        return np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                         equal_nan=equal_nan)

    want = f(x)
    for name, got in [("traced", tg.vjp(f, x)[0]), ("jit", tg.jit(f)(x)),
                      ("jit(jax)", tg.jit(f, backend="jax")(x))]:
        assert len(got) == 4, name
        for k, (a, b) in enumerate(zip(got, want)):
            a = np.asarray(a)
            assert (a.shape, a.dtype) == (b.shape, b.dtype), f"{name} output {k}"
            np.testing.assert_array_equal(a, b, err_msg=f"{name} output {k}")
    for flags in [dict(return_index=True), dict(return_inverse=True), dict(return_counts=True),
                  dict(return_index=True, return_counts=True)]:
        got = tg.vjp(lambda x: np.unique(x, equal_nan=equal_nan, **flags), x)[0]
        for a, b in zip(got, np.unique(x, equal_nan=equal_nan, **flags)):
            np.testing.assert_array_equal(a, b)
    if x.size:
        # x == values[inverse]; the gradient through counts-weighted values
        g = tg.grad(lambda x: np.nansum(f(x)[0] * f(x)[3]))(x)
        ok = ~np.isnan(np.ravel(x))
        counts = {v: np.sum(np.ravel(x) == v) for v in np.ravel(x)[ok]}
        want_g = np.array([counts[v] if k else 0 for v, k in zip(np.ravel(x), ok)], float)
        assert_close(g, want_g.reshape(x.shape), RTOL_SELF, "grad of sum(values * counts)")


def test_unique_refuses_axis_with_the_users_line():
    with pytest.raises(tg.TraceError, match=r"axis is not supported .*test_crossings.py:\d+"):
        tg.grad(lambda x: np.sum(np.unique(x, axis=0)))(np.ones((2, 2)))


@pytest.mark.parametrize("transform", ["grad", "value_and_grad", "jacobian", "hessian"])
@pytest.mark.parametrize("argnums", [(1, 1), (0, -3), (2, 0, 2)])
def test_repeated_argnums_raise(transform, argnums):
    """JAX refuses a repeated argnums; tracegrad used to give one of them a zero gradient."""
    fun = getattr(tg, transform)(lambda x, y, z: np.sum(x * y * z), argnums=argnums)
    with pytest.raises(tg.TraceError, match=r"repeats argument \d.*test_crossings.py:\d+"):
        fun(1.0, 2.0, 3.0)


@pytest.mark.parametrize("argnums,nargs", [(3, 3), (-4, 3), ((0, 5), 3)])
def test_out_of_range_argnums_raise(argnums, nargs):
    fun = tg.grad(lambda x, y, z: x * y * z, argnums=argnums)
    with pytest.raises(tg.TraceError, match=r"out of range.*3 positional.*test_crossings.py"):
        fun(1.0, 2.0, 3.0)


def test_negative_argnums_count_from_the_end():
    g = tg.grad(lambda x, y, z: x * y ** 2 * z, argnums=(-1, 0))(1.0, 2.0, 3.0)
    assert g == (4.0, 12.0)


def test_issue_example_forward_mode_against_a_broadcast_constant():
    """tg.jvp and tg.jacobian(mode="fwd") of y (1, 4) + c (3, 4), c a constant."""
    c = np.arange(12.0).reshape(3, 4)
    y, t = np.ones((1, 4)), np.arange(4.0).reshape(1, 4)
    out, tan = tg.jvp(lambda y: y + c, (y,), (t,))
    np.testing.assert_array_equal(out, y + c)
    np.testing.assert_array_equal(tan, np.broadcast_to(t, (3, 4)))
    jac = tg.jacobian(lambda y: y * c, mode="fwd")(y)
    np.testing.assert_array_equal(jac, tg.jacobian(lambda y: y * c)(y))
    np.testing.assert_array_equal(jac[2, :, 0, :], np.diag(c[2]))


def test_a_jvp_rule_returning_a_larger_tangent_is_an_error(monkeypatch):
    """A tangent is only ever broadcast up to its value; one larger than its value is a
    rule's bug, which summing down (a cotangent's fit) would hide as a wrong number."""
    prim = REGISTRY["sin"]
    monkeypatch.setattr(prim, "jvp", lambda t, out, x: np.stack([t[0], t[0]]))
    with pytest.raises(tg.TraceError, match=r"internal error: a JVP rule returned a tangent "
                       r"of shape \(2, 3\) for a value of shape \(3,\).*test_crossings.py"):
        tg.jvp(np.sin, (np.ones(3),), (np.ones(3),))


# -- batched: the derivative graphs under tg.vmap (tg.passes.batch) -------------------------------
VMAPPED = bounded(ALL, N_VMAPPED)


@pytest.mark.parametrize("case,wrt", VMAPPED)
def test_vmapped_derivatives(case, wrt):
    """tg.vmap of a vjp and of a jvp over a batch of two probes (the operands the same in
    both rows, so the rows stay in the case's domain; the constants are not batched):
    each row is the unbatched result."""
    xs = [case.args[i] for i in wrt]
    cts = [_random_like(case, wrt, case.out, f"ct{r}") for r in range(2)]
    tss = [[_random_like(case, wrt, x, f"t{k}/{r}") for k, x in enumerate(xs)] for r in range(2)]
    f = _partial(case, case.fn, wrt)
    rtol = _rtol(case, RTOL_SELF)

    def vjp(ct, *ys):
        return tuple(tg.vjp(f, *ys)[1](ct))

    stacked = [np.stack([x, x]) for x in xs]
    got = tg.vmap(vjp)(np.stack(cts), *stacked)
    for r in range(2):
        for k, (a, b) in enumerate(zip(got, vjp(cts[r], *xs))):
            assert_close(a[r], b, rtol, f"vmap(vjp) row {r}, operand {wrt[k]}")
    if case.forward_mode:
        def jvp(*ys_ts):
            return tg.jvp(f, ys_ts[:len(xs)], ys_ts[len(xs):])[1]

        got = tg.vmap(jvp)(*stacked, *[np.stack(ts) for ts in zip(*tss)])
        for r in range(2):
            assert_close(got[r], jvp(*xs, *tss[r]), rtol, f"vmap(jvp) row {r}")
