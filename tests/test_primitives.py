"""Per-primitive tests, generated from the registry: every registered primitive, every case
in ``primitive_cases.CASES``, checked against its NumPy impl, its JAX lowering and finite
differences, to first and second order. A primitive without cases fails every test here.

The JAX side of all the cases of one primitive (values, VJPs, JVPs, Hessians, ...) is
computed by one ``jax.jit`` program, built the first time a test of that primitive asks:
run op by op, JAX compiles every primitive anew for every shape (~25 ms each), which
would take minutes over this many cases.
"""
import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close, fd_jvp, fd_vjp

import tracegrad as tg
from tracegrad.ir import REGISTRY, Aval, Graph

from primitive_cases import CASES, all_cases

RTOL_VALUE = 1e-12   # against the impl and the JAX lowering (float64)
RTOL_JAX = 1e-10     # derivatives against JAX (float64)
RTOL_FD = 1e-7       # derivatives against central finite differences (float64, h = 1e-6)
RTOL_F32 = 1e-5      # anything computed in float32


# -- parametrization ---------------------------------------------------------------------------
def _params(select, derivatives=True):
    out = []
    for name, case in all_cases():
        if case is None:
            out.append(pytest.param(name, None, id=f"{name}-NO-CASES"))
        elif select(case):
            marks = ()
            if derivatives and case.known_failure:
                raises, reason = case.known_failure
                marks = pytest.mark.xfail(raises=raises, reason=reason, strict=True)
            out.append(pytest.param(name, case, id=case.id, marks=marks))
    return out


ALL = _params(lambda c: True, derivatives=False)
FIRST = _params(lambda c: c.differentiable)
# tg.hessian of complex inputs needs a holomorphic function (as JAX's): complex cases
# are checked to second order by the two Hessian-vector products instead
SECOND = _params(lambda c: c.differentiable and c.second and not c.complex)
SECOND_FORWARD = _params(lambda c: c.differentiable and c.second and c.forward_mode)


def _require(name, case):
    if case is None:
        pytest.fail(f"primitive {name!r} has no test cases: add them to tests/primitive_cases.py")


# -- the random directions a case is probed along (the same for tracegrad and JAX) ---------------
def _random_like(case, x, salt):
    x = np.asarray(x)
    rng = np.random.default_rng(zlib.crc32(f"{case.id}/{salt}".encode()))
    if x.dtype.kind == "c":
        return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)).astype(x.dtype)
    return rng.standard_normal(x.shape).astype(x.dtype)


def _probes(case):
    """xs: the operands differentiated; ct, w: output cotangents; ts, us: input tangents."""
    xs = [case.args[i] for i in case.diff]
    return {"xs": xs,
            "ct": _random_like(case, case.out, "ct"), "w": _random_like(case, case.out, "w"),
            "ts": [_random_like(case, x, f"t{k}") for k, x in enumerate(xs)],
            "us": [_random_like(case, x, f"u{k}") for k, x in enumerate(xs)]}


def _argnums(case):
    return tuple(range(len(case.diff)))


def _rtol(*arrays, base):
    single = (np.float32, np.complex64)
    return RTOL_F32 if any(np.asarray(a).dtype in single for a in arrays) else base


def _all_f64(*arrays):
    """Finite differences at h = 1e-6 need float64 (or complex128) operands and results."""
    return all(np.asarray(a).dtype in (np.float64, np.complex128) for a in arrays)


# -- JAX references -------------------------------------------------------------------------------
# JAX gives the value, the full Jacobian (jacfwd) and, for second-order cases, the full
# Hessian of sum(w * f); the VJP, JVP and Hessian-vector products the tests compare with
# are contracted from those in NumPy. Asking JAX for each product separately would
# triple the programs to compile, for the same derivatives.
def _jax_case(case, args, p):
    """Everything the tests compare with, for one case, in JAX (traced under jit)."""
    ref = {"value": case.jax_fn(*args)}
    if not case.differentiable or not case.jax_derivs:
        return ref
    f = case.partial(case.jax_deriv_fn)
    xs, an = tuple(p["xs"]), _argnums(case)
    if case.complex:
        # jacfwd and hessian refuse complex inputs: the products themselves, then
        ref["vjp"] = jax.vjp(f, *xs)[1](p["ct"])
        ref["jvp"] = jax.jvp(f, xs, tuple(p["ts"]))[1]
        if case.second:
            grad_g = jax.grad(lambda *ys: jnp.sum(jnp.real(p["w"] * f(*ys))), argnums=an)
            ref["hvp_us"] = jax.jvp(grad_g, xs, tuple(p["us"]))[1]
            ref["hvp_ts"] = jax.jvp(grad_g, xs, tuple(p["ts"]))[1]
        return ref
    ref["jacobian"] = jax.jacfwd(f, argnums=an)(*xs)
    if case.second:
        ref["hessian"] = jax.hessian(lambda *ys: jnp.sum(p["w"] * f(*ys)), argnums=an)(*xs)
    return ref


_JAX_REFS: dict = {}


def jax_ref(name, case, key):
    """The JAX reference ``key`` of ``case``; the first call compiles the primitive's cases."""
    if name not in _JAX_REFS:
        cases = CASES[name]
        errors = {}

        def program(inputs):
            out = []
            for c, (args, p) in zip(cases, inputs):
                try:
                    out.append(_jax_case(c, args, p))
                except Exception as e:  # noqa: BLE001 - reported by that case's tests
                    errors[c.id] = e
                    out.append({})
            return out

        inputs = [(list(c.args), _probes(c)) for c in cases]
        results = jax.jit(program)(inputs)
        _JAX_REFS[name] = {c.id: (errors.get(c.id), r) for c, r in zip(cases, results)}
    error, refs = _JAX_REFS[name][case.id]
    if error is not None:
        raise error
    return jax.tree_util.tree_map(np.asarray, refs[key])


def _contract(a, b, axes):
    return np.tensordot(np.asarray(a), np.asarray(b), axes=axes)


def jax_vjp(name, case, ct, xs):
    """ct . J, one array per differentiated operand, in the operand's dtype (as jax.vjp)."""
    if case.complex:
        return [np.asarray(v).astype(x.dtype) for v, x in zip(jax_ref(name, case, "vjp"), xs)]
    return [_contract(ct, jac, ct.ndim).astype(x.dtype)
            for jac, x in zip(jax_ref(name, case, "jacobian"), xs)]


def jax_jvp(name, case, ts):
    """sum_k J_k . t_k, in the output's dtype (as jax.jvp)."""
    if case.complex:
        return np.asarray(jax_ref(name, case, "jvp")).astype(case.out.dtype)
    jacs = jax_ref(name, case, "jacobian")
    return sum(_contract(jac, t, t.ndim) for jac, t in zip(jacs, ts)).astype(case.out.dtype)


def jax_hvp(name, case, us, which="us"):
    """(H u)_k = sum_j H_kj . u_j, one array per differentiated operand (``which`` names
    the probe ``us``, for the complex cases, whose products JAX computed directly)."""
    if case.complex:
        return [np.asarray(v).astype(u.dtype)
                for v, u in zip(jax_ref(name, case, f"hvp_{which}"), us)]
    hess = jax_ref(name, case, "hessian")
    return [sum(_contract(h, u, u.ndim) for h, u in zip(row, us)).astype(u.dtype)
            for row, u in zip(hess, us)]


# -- coverage -------------------------------------------------------------------------------------
def test_every_primitive_has_cases():
    missing = sorted(set(REGISTRY) - set(CASES))
    stale = sorted(set(CASES) - set(REGISTRY))
    assert not missing, f"primitives without test cases: {missing}"
    assert not stale, f"cases for primitives that are not registered: {stale}"


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_differentiable_primitives_have_derivative_cases(name):
    """A primitive with a VJP rule is checked against finite differences and to second order."""
    if REGISTRY[name].vjp is None or REGISTRY[name].extra.get("reverse_mode") is False:
        return                      # while_loop's VJP refuses by design (test_control.py)
    cases = CASES.get(name, [])
    assert any(c.differentiable and c.fd for c in cases), f"{name}: no case checked by FD"
    assert any(c.differentiable and c.second for c in cases), f"{name}: no second-order case"


# -- value and shape --------------------------------------------------------------------------------
def _graph(name, case):
    """The case traced into a graph. A primitive without operands never meets a tracer (the
    passes make such nodes), so its one-node graph is built directly."""
    if case.args:
        return tg.trace(case.fn, *case.args)
    graph = Graph()
    graph.outputs = [graph.add_node(name, (), case.params, shape=case.out.shape,
                                    dtype=case.out.dtype)]
    return graph


@pytest.mark.parametrize("name,case", ALL)
def test_value(name, case):
    """Through a traced graph == the impl == the JAX lowering."""
    _require(name, case)
    graph = _graph(name, case)
    assert name in graph.ops(), f"the traced graph does not use {name}:\n{graph}"
    got = graph(*case.args)
    ref = np.asarray(case.ref_fn(*case.args))
    assert_close(got, ref, RTOL_VALUE, "traced graph vs impl")
    assert_close(jax_ref(name, case, "value"), ref, _rtol(ref, base=RTOL_VALUE),
                 "JAX lowering vs impl")


@pytest.mark.parametrize("name,case", ALL)
def test_shape_rule(name, case):
    """The shape/dtype rule agrees with what the impl produced, at every node of the primitive."""
    _require(name, case)
    prim = REGISTRY[name]
    graph = _graph(name, case)
    nodes = [n for n in graph if graph.op(n) == name]
    assert nodes
    groups = graph.output_groups()
    for n in nodes:
        d = graph.node(n)
        if name == "proj":      # its shape is its multi-output node's rule's (checked there)
            continue
        avals = [Aval(graph.node(a)["shape"], np.dtype(graph.node(a)["dtype"])) for a in d["args"]]
        got = prim.shape_dtype(avals, d["params"])
        if prim.multi:          # a multi-output node: the rule gives each projection's aval
            for p, (shape, dtype) in zip(groups[n], got):
                if p is not None:
                    assert (shape, dtype) == (graph.node(p)["shape"],
                                              np.dtype(graph.node(p)["dtype"]))
            continue
        shape, dtype = got
        assert (shape, dtype) == (d["shape"], np.dtype(d["dtype"]))
    if case.fn is None:  # the direct application, on the case's own operands
        avals = [Aval(a.shape, a.dtype) for a in case.args]
        assert prim.shape_dtype(avals, case.params) == (case.out.shape, case.out.dtype)


# -- first order --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,case", FIRST)
def test_vjp(name, case):
    _require(name, case)
    p = _probes(case)
    xs, ct = p["xs"], p["ct"]
    out, vjp_fn = tg.vjp(case.partial(case.fn), *xs)
    assert_close(out, case.out, RTOL_VALUE, "vjp primal output")
    got = vjp_fn(ct)
    assert len(got) == len(xs)
    for k, (g, x) in enumerate(zip(got, xs)):
        assert np.asarray(g).dtype == x.dtype, f"cotangent {k} has dtype {g.dtype}, input {x.dtype}"

    if case.jax_derivs:
        for k, (g, w, x) in enumerate(zip(got, jax_vjp(name, case, ct, xs), xs)):
            assert_close(g, w, _rtol(x, ct, base=RTOL_JAX), f"cotangent {k} vs jax.vjp")

    if case.fd and _all_f64(*xs, ct):
        for k, (g, f) in enumerate(zip(got, fd_vjp(case.partial(case.fd_fn), xs, ct))):
            assert_close(g, f, RTOL_FD, f"cotangent {k} vs finite differences", floor=1.0)


@pytest.mark.parametrize("name,case", FIRST)
def test_jvp(name, case):
    _require(name, case)
    p = _probes(case)
    xs, ts = p["xs"], p["ts"]
    if not case.forward_mode:
        with pytest.raises(tg.TraceError, match="forward mode"):
            tg.jvp(case.partial(case.fn), xs, ts)
        return
    out, got = tg.jvp(case.partial(case.fn), xs, ts)
    assert_close(out, case.out, RTOL_VALUE, "jvp primal output")

    if case.jax_derivs:
        assert_close(got, jax_jvp(name, case, ts), _rtol(got, *xs, base=RTOL_JAX),
                     "tangent vs jax.jvp")

    if case.fd and _all_f64(*xs, got):
        assert_close(got, fd_jvp(case.partial(case.fd_fn), xs, ts), RTOL_FD,
                     "tangent vs finite differences", floor=1.0)


# -- second order ---------------------------------------------------------------------------------------
def _scalarized(case, w):
    """``x -> sum(w * f(x))``: a scalar whose Hessian is the w-weighted sum of the Hessians
    of f's outputs."""
    f = case.partial(case.fn)
    return lambda *xs: np.sum(np.real(w * f(*xs)))


@pytest.mark.parametrize("name,case", SECOND)
def test_hessian(name, case):
    """Reverse over reverse: the adjoint pass applied to the adjoint graph."""
    _require(name, case)
    p = _probes(case)
    xs = p["xs"]
    got = tg.hessian(_scalarized(case, p["w"]), argnums=_argnums(case))(*xs)
    want = jax_ref(name, case, "hessian")
    for i, x in enumerate(xs):
        for j, y in enumerate(xs):
            assert_close(got[i][j], want[i][j], _rtol(x, y, case.out, base=RTOL_JAX),
                         f"d2/dx{i}dx{j}")


@pytest.mark.parametrize("name,case", SECOND_FORWARD)
def test_jvp_of_grad(name, case):
    """Forward over reverse: the Hessian-vector product."""
    _require(name, case)
    p = _probes(case)
    xs = p["xs"]
    grad_f = tg.grad(_scalarized(case, p["w"]), argnums=_argnums(case))
    _, got = tg.jvp(grad_f, xs, p["us"])
    for k, (g, w, x) in enumerate(zip(got, jax_hvp(name, case, p["us"]), xs)):
        assert_close(g, w, _rtol(x, case.out, base=RTOL_JAX), f"H u, part {k}")


@pytest.mark.parametrize("name,case", SECOND_FORWARD)
def test_grad_of_jvp(name, case):
    """Reverse over forward: the JVP rule's own graph differentiated by the adjoint pass."""
    _require(name, case)
    p = _probes(case)
    f = case.partial(case.fn)

    def directional(*ys):
        return np.sum(np.real(p["w"] * tg.jvp(f, ys, p["ts"])[1]))

    got = tg.grad(directional, argnums=_argnums(case))(*p["xs"])
    # d/dx <w, J(x) t> = H t, with H the Hessian of <w, f>
    for k, (g, w, x) in enumerate(zip(got, jax_hvp(name, case, p["ts"], "ts"), p["xs"])):
        assert_close(g, w, _rtol(x, case.out, base=RTOL_JAX), f"d/dx{k} <w, J u>")


# -- scenarios: derivatives at special points, where JAX is no oracle -----------------------------------
@pytest.mark.parametrize("name", sorted(n for n in REGISTRY if "vjp_needed" in REGISTRY[n].extra))
def test_vjp_needed_gives_the_vjp_of_the_operands_needed(name):
    """``extra["vjp_needed"]`` (the reverse pass's VJP when some operands carry no
    gradient): the rule's own cotangents, bit for bit, for the operands needed; None for the
    others."""
    import itertools

    prim = REGISTRY[name]
    rng = np.random.default_rng(7)
    for case in CASES[name]:
        out = prim.impl(*case.args, **case.params)
        g = rng.normal(size=np.shape(out)).astype(np.asarray(out).dtype)
        full = prim.vjp(g, out, *case.args, **case.params)
        for needed in itertools.product([True, False], repeat=len(case.args)):
            got = prim.extra["vjp_needed"](needed, g, out, *case.args, **case.params)
            for want, ct, need in zip(full, got, needed):
                if need:
                    np.testing.assert_array_equal(ct, want)
                else:
                    assert ct is None
    # through a constant operand, the derivative is the same as the rule's
    fn = getattr(np, prim.ufunc.__name__)
    x = np.array([1.5, 2.5])
    got = tg.grad(lambda x: np.sum(fn(x, 3.0) * fn(3.0, x)))(x)
    want = tg.grad(lambda x: np.sum(fn(x, tg.stop_gradient(x * 0.0 + 3.0)) *
                                    fn(x * 0.0 + 3.0, x)))(x)
    np.testing.assert_allclose(got, want, rtol=1e-15)


def test_exp_overflow_in_an_untaken_branch_to_every_order():
    """exp's derivatives are capped at the largest float (``cap_finite``, derivative 1): an
    overflowing exp whose branch is discarded gives 0, not 0 * inf = NaN, at every order
    (grad, nested grad, hessian, jvp); below the overflow each order is exp(x) exactly."""
    def f(x):
        return np.sum(np.where(x > 100.0, np.sin(x), np.exp(x)))     # exp(1000) unused

    x = np.array([0.5, 1000.0])
    e, s, c = np.exp(0.5), np.sin(1000.0), np.cos(1000.0)
    d1 = tg.grad(f)(x)
    d2 = tg.grad(lambda v: np.sum(tg.grad(f)(v)))(x)
    d3 = tg.grad(lambda v: np.sum(tg.grad(lambda u: np.sum(tg.grad(f)(u)))(v)))(x)
    np.testing.assert_array_equal(d1, [e, c])
    np.testing.assert_array_equal(d2, [e, -s])
    np.testing.assert_array_equal(d3, [e, -c])
    np.testing.assert_array_equal(tg.hessian(f)(x), np.diag([e, -s]))
    np.testing.assert_array_equal(tg.jvp(tg.grad(f), (x,), (np.ones(2),))[1], [e, -s])

    def exp_sum(u):
        return np.sum(np.exp(u))

    for dtype in (np.float64, np.float32):
        v = np.array([-3.0, 0.25, 40.0], dtype)
        d = tg.grad(exp_sum)
        for _ in range(4):
            g = d(v)
            assert g.dtype == dtype
            np.testing.assert_array_equal(g, np.exp(v))
            d = tg.grad(lambda u, d=d: np.sum(d(u)))
        # a derivative where exp overflows is the largest float (times the cotangent)
        assert tg.grad(exp_sum)(np.array([1e4], dtype))[0] == np.finfo(dtype).max


def test_pow_zero_exponent_is_constant_to_every_order():
    """x**0 == 1 has zero derivatives, also at x = 0 (JAX's float-exponent rule gives NaN)."""
    def f(x):
        return np.sum(x ** np.arange(3.0))  # 1 + x + x**2

    x = np.float64(0.0)
    assert tg.grad(f)(x) == 1.0
    assert tg.hessian(f)(x) == 2.0
    assert tg.jacobian(tg.hessian(f))(x) == 0.0
    assert tg.jvp(f, (x,), (np.float64(1.0),))[1] == 1.0
