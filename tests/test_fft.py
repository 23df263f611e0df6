"""``np.fft`` on traced values: every name, with ``n``/``s`` cropping and padding, axes, each
norm, odd and even lengths; values against NumPy, first and second derivatives (reverse and
forward mode) against JAX's ``jnp.fft`` (``jax.vjp``/``jax.jvp``: its convention, no
conjugation in a VJP) and complex central differences; the NumPy and JAX backends, JSON
round trips, batching, and bad arguments."""
import inspect
import json
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import assert_close, fd_jvp, fd_vjp

import tracegrad as tg

RTOL = 1e-10        # against JAX
RTOL_FD = 1e-7      # against central differences at h = 1e-6
RTOL_FD2 = 1e-6     # differences of a computed first derivative

_rng = np.random.default_rng(424242)


def real(*shape):
    return _rng.uniform(-1.0, 1.0, shape)


def cplx(*shape):
    return _rng.uniform(-1.0, 1.0, shape) + 1j * _rng.uniform(-1.0, 1.0, shape)


# (id, function of (xp, x) with xp = numpy or jax.numpy, operand)
CALLS = [
    ("fft-odd", lambda xp, x: xp.fft.fft(x), cplx(5)),
    ("fft-even-real", lambda xp, x: xp.fft.fft(x, norm="ortho"), real(6)),
    ("fft-pad-axis0", lambda xp, x: xp.fft.fft(x, n=7, axis=0, norm="forward"), cplx(4, 3)),
    ("fft-crop", lambda xp, x: xp.fft.fft(x, n=3), cplx(2, 5)),
    ("ifft-odd", lambda xp, x: xp.fft.ifft(x), cplx(2, 5)),
    ("ifft-pad-ortho", lambda xp, x: xp.fft.ifft(x, n=8, norm="ortho"), cplx(6)),
    ("ifft-crop-real", lambda xp, x: xp.fft.ifft(x, n=4, axis=0, norm="forward"), real(5, 2)),
    ("fft2", lambda xp, x: xp.fft.fft2(x), cplx(3, 4)),
    ("fft2-s", lambda xp, x: xp.fft.fft2(x, s=(5, 3), norm="ortho"), cplx(2, 3, 4)),
    ("ifft2-axes", lambda xp, x: xp.fft.ifft2(x, axes=(0, 2), norm="forward"), cplx(3, 2, 4)),
    ("fftn", lambda xp, x: xp.fft.fftn(x), cplx(2, 3, 4)),
    ("fftn-s-axes", lambda xp, x: xp.fft.fftn(x, s=(4, 2), axes=(2, 0)), real(3, 2, 3)),
    ("ifftn", lambda xp, x: xp.fft.ifftn(x, axes=(1,), norm="ortho"), cplx(3, 5)),
    ("ifftn-s", lambda xp, x: xp.fft.ifftn(x, s=(2, 6), axes=(0, 1)), cplx(3, 4)),
    ("rfft-even", lambda xp, x: xp.fft.rfft(x), real(6)),
    ("rfft-odd-ortho", lambda xp, x: xp.fft.rfft(x, norm="ortho"), real(3, 5)),
    ("rfft-pad-axis0", lambda xp, x: xp.fft.rfft(x, n=9, axis=0, norm="forward"), real(4, 2)),
    ("rfft-crop", lambda xp, x: xp.fft.rfft(x, n=4), real(2, 7)),
    ("irfft-default", lambda xp, x: xp.fft.irfft(x), cplx(4)),
    ("irfft-odd", lambda xp, x: xp.fft.irfft(x, n=7, norm="ortho"), cplx(2, 4)),
    ("irfft-pad", lambda xp, x: xp.fft.irfft(x, n=10, axis=0, norm="forward"), cplx(3, 2)),
    ("irfft-crop", lambda xp, x: xp.fft.irfft(x, n=5), cplx(6)),
    ("rfft2", lambda xp, x: xp.fft.rfft2(x), real(4, 5)),
    ("rfft2-s", lambda xp, x: xp.fft.rfft2(x, s=(3, 6), norm="ortho"), real(2, 4, 4)),
    ("irfft2", lambda xp, x: xp.fft.irfft2(x), cplx(4, 3)),
    ("irfft2-s", lambda xp, x: xp.fft.irfft2(x, s=(3, 5), norm="forward"), cplx(2, 4, 3)),
    ("rfftn", lambda xp, x: xp.fft.rfftn(x), real(3, 2, 5)),
    ("rfftn-axes", lambda xp, x: xp.fft.rfftn(x, s=(4, 3), axes=(2, 0), norm="ortho"),
     real(3, 2, 4)),
    ("irfftn", lambda xp, x: xp.fft.irfftn(x, axes=(0, 1)), cplx(3, 4, 2)),
    ("irfftn-s", lambda xp, x: xp.fft.irfftn(x, s=(2, 3, 7), axes=(0, 1, 2),
                                             norm="ortho"), cplx(3, 2, 3)),
    ("hfft-default", lambda xp, x: xp.fft.hfft(x), cplx(5)),
    ("hfft-odd", lambda xp, x: xp.fft.hfft(x, n=7, norm="ortho"), cplx(2, 4)),
    ("hfft-pad-forward", lambda xp, x: xp.fft.hfft(x, n=12, axis=0, norm="forward"),
     cplx(3, 2)),
    ("hfft-real", lambda xp, x: xp.fft.hfft(x, n=4), real(3)),
    ("ihfft-even", lambda xp, x: xp.fft.ihfft(x), real(6)),
    ("ihfft-odd-crop", lambda xp, x: xp.fft.ihfft(x, n=5, norm="ortho"), real(2, 7)),
    ("ihfft-pad", lambda xp, x: xp.fft.ihfft(x, n=8, axis=0, norm="forward"), real(5, 2)),
    ("fftshift", lambda xp, x: xp.fft.fftshift(x), cplx(3, 4)),
    ("fftshift-axis", lambda xp, x: xp.fft.fftshift(xp.fft.fft(x), axes=1), real(2, 5)),
    ("ifftshift", lambda xp, x: xp.fft.ifftshift(x, axes=(0,)), cplx(5, 2)),
    ("ifftshift-all", lambda xp, x: xp.fft.ifftshift(xp.fft.rfft(x)), real(3, 6)),
    ("round-trip", lambda xp, x: xp.fft.irfft(xp.fft.rfft(x) * xp.fft.rfft(x), n=5), real(5)),
]
IDS = [c[0] for c in CALLS]
NAMES = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
         "rfftn", "irfftn", "hfft", "ihfft", "fftshift", "ifftshift"]


def test_every_name_is_covered():
    sources = " ".join(inspect.getsource(fn) for _, fn, _ in CALLS)
    for name in NAMES:
        assert f"xp.fft.{name}(" in sources, name


def _np(fn):
    return lambda x: fn(np, x)


def _jnp(fn):
    return lambda x: fn(jnp, x)


def _like(x, salt, rng=None):
    rng = np.random.default_rng(salt)
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)
    return rng.standard_normal(x.shape)


def _scalar(xp, fn, w):
    """A real scalar of the transform's result: ``sum(Re(w * f(x)))``, plus a square so that
    the second derivative is not zero (every transform is linear)."""
    return lambda x: xp.sum(xp.real(w * fn(xp, x))) + 0.5 * xp.sum(xp.abs(fn(xp, x)) ** 2)


@pytest.mark.parametrize("fn, x", [c[1:] for c in CALLS], ids=IDS)
def test_values_match_numpy(fn, x):
    ref = fn(np, x)
    graph = tg.trace(_np(fn), x)
    got = graph(x)
    assert got.shape == ref.shape and got.dtype == ref.dtype
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tg.jit(_np(fn))(x), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fn, x", [c[1:] for c in CALLS], ids=IDS)
def test_first_order_matches_jax_and_differences(fn, x):
    out, vjp_fn = tg.vjp(_np(fn), x)
    ct = _like(out, 1)
    (got,) = vjp_fn(ct)
    assert got.dtype == x.dtype
    t = _like(x, 2)
    # jax.vjp and jax.jvp in one jit program (one XLA compile)
    (want,), want_t = jax.jit(lambda x, ct, t: (jax.vjp(_jnp(fn), x)[1](ct),
                                                jax.jvp(_jnp(fn), (x,), (t,))[1]))(x, ct, t)
    assert_close(got, np.asarray(want), RTOL, "vjp vs jax.vjp")
    (fd,) = fd_vjp(_np(fn), [x], ct)
    assert_close(got, fd, RTOL_FD, "vjp vs differences", floor=1.0)

    out, tangent = tg.jvp(_np(fn), (x,), (t,))
    assert_close(tangent, np.asarray(want_t), RTOL, "jvp vs jax.jvp")
    assert_close(tangent, fd_jvp(_np(fn), [x], [t]), RTOL_FD, "jvp vs differences", floor=1.0)


@pytest.mark.parametrize("fn, x", [c[1:] for c in CALLS], ids=IDS)
def test_second_order_matches_jax_and_differences(fn, x):
    w = _like(fn(np, x), 3)
    u = _like(x, 4)
    f_np, f_jax = _scalar(np, fn, w), _scalar(jnp, fn, w)

    # JAX's references, in one jit program (one XLA compile): the gradient, H u, the
    # gradient of <u, grad> in JAX's pairing of complex gradients (Re(conj(u) . g); for
    # real x, H u again, H being symmetric), and the gradient of <w', J(x) u>
    def refs(x):
        grad_j = jax.grad(f_jax)
        return (grad_j(x), jax.jvp(grad_j, (x,), (u,))[1],
                jax.grad(lambda y: jnp.sum(jnp.real(jnp.conj(u) * grad_j(y))))(x),
                jax.grad(lambda y: jax.jvp(f_jax, (y,), (u,))[1])(x))
    want_g, want, want_pairing, want_rf = map(np.asarray, jax.jit(refs)(x))

    grad = tg.grad(f_np)
    assert_close(grad(x), want_g, RTOL, "grad vs jax.grad")
    # forward over reverse
    assert_close(tg.jvp(grad, (x,), (u,))[1], want, RTOL, "jvp of grad")
    # reverse over reverse: d/dx <v, grad f> with v = u, the same H u (H symmetric)
    pairing = lambda y: np.sum(np.real(u * grad(y)))      # noqa: E731
    if x.dtype.kind == "c":
        # the pairing of complex grads in JAX's convention: Re(conj(u) . g)
        pairing = lambda y: np.sum(np.real(np.conj(u) * grad(y)))    # noqa: E731
        want = want_pairing
    assert_close(tg.grad(pairing)(x), want, RTOL, "grad of <u, grad>")
    # reverse over forward: d/dx <w', J(x) u>, checked against JAX likewise
    directional = lambda y: np.sum(np.real(tg.jvp(f_np, (y,), (u,))[1]))   # noqa: E731
    assert_close(tg.grad(directional)(x), want_rf, RTOL, "grad of jvp")
    # and the Hessian-vector product against differences of the gradient
    assert_close(tg.jvp(grad, (x,), (u,))[1], fd_jvp(grad, [x], [u]), RTOL_FD2,
                 "jvp of grad vs differences", floor=1.0)


@pytest.mark.parametrize("name", ["rfft-odd-ortho", "fftn-s-axes", "ihfft-odd-crop",
                                  "rfft2-s", "fftshift-axis"])
def test_hessian_of_real_inputs(name):
    _, fn, x = CALLS[IDS.index(name)]
    w = _like(fn(np, x), 5)
    got = tg.hessian(_scalar(np, fn, w))(x)
    want = np.asarray(jax.jit(jax.hessian(_scalar(jnp, fn, w)))(x))
    assert_close(got, want, RTOL, "hessian vs jax.hessian")
    # a complex-valued function of real inputs: forward mode (as jax.jacfwd)
    assert_close(tg.jacobian(_np(fn), mode="fwd")(x), np.asarray(jax.jit(jax.jacfwd(_jnp(fn)))(x)),
                 RTOL, "jacobian vs jax.jacfwd")


def test_power_spectrum_gradient():
    """The doc's example: the gradient of the energy of the spectrum is 2 n x (Parseval)."""
    x = real(8)
    g = tg.grad(lambda x: np.sum(np.abs(np.fft.fft(x)) ** 2))(x)
    np.testing.assert_allclose(g, 2 * 8 * x, rtol=1e-12)
    z = cplx(5)
    g = tg.grad(lambda z: np.sum(np.abs(np.fft.fft(z, norm="ortho")) ** 2))(z)
    np.testing.assert_allclose(g, 2 * np.conj(z), rtol=1e-12)   # JAX's convention: conj


# -- compiled -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["fft2-s", "irfft-odd", "rfftn-axes", "hfft-odd",
                                  "ifftshift-all", "round-trip"])
def test_jit_on_numpy_and_jax_backends(name):
    _, fn, x = CALLS[IDS.index(name)]
    w = _like(fn(np, x), 6)
    f_np, f_jax = _scalar(np, fn, w), _scalar(jnp, fn, w)
    want = np.asarray(jax.jit(jax.grad(f_jax))(x))
    for backend in ("numpy", "jax"):
        got = np.asarray(tg.jit(tg.grad(f_np), backend=backend)(x))
        assert got.dtype == x.dtype
        assert_close(got, want, RTOL, f"jit grad on {backend}")
        value = np.asarray(tg.jit(_np(fn), backend=backend)(x))
        assert_close(value, fn(np, x), 1e-12, f"jit value on {backend}")


def test_single_precision_stays_single():
    x = real(4, 6).astype(np.float32)
    f = lambda x: np.sum(np.abs(np.fft.rfft2(x, norm="ortho")) ** 2)   # noqa: E731
    assert tg.trace(lambda x: np.fft.rfft(x), x)(x).dtype == np.complex64
    assert tg.trace(lambda x: np.fft.irfft(np.fft.rfft(x)), x)(x).dtype == np.float32
    g = tg.grad(f)(x)
    assert g.dtype == np.float32
    want = jax.grad(lambda x: jnp.sum(jnp.abs(jnp.fft.rfft2(x, norm="ortho")) ** 2))(x)
    np.testing.assert_allclose(g, np.asarray(want), rtol=1e-5, atol=1e-5)
    z = cplx(3, 4).astype(np.complex64)
    g = tg.grad(lambda z: np.sum(np.abs(np.fft.ifft2(z)) ** 2))(z)
    assert g.dtype == np.complex64


def test_integer_input_gives_numpy_dtypes():
    k = np.arange(6)
    x = real(6)
    for f in (lambda x: np.fft.fft(k * x), lambda x: np.fft.fft(k) * x,
              lambda x: np.fft.rfft(k) * x[:4], lambda x: np.fft.fftshift(k) * x):
        got = tg.trace(f, x)(x)
        assert got.dtype == f(x).dtype
        np.testing.assert_allclose(got, f(x), rtol=1e-12, atol=1e-12)
    got = tg.trace(lambda x: np.fft.fft(np.round(x).astype(int)), x)(x)
    assert got.dtype == np.complex128


def test_batch_pass_has_rules_for_the_primitives():
    from tracegrad.passes.batch import batch
    from tracegrad.runtime import run

    def f(x, z):
        return (np.fft.irfft(np.fft.rfft(x, axis=0) * np.fft.fft2(z)[:3], n=5, axis=0),
                np.fft.ifftn(z, axes=(1,), norm="ortho"))

    x, z = real(5, 4), cplx(4, 4)
    graph = tg.trace(f, x, z)
    for batched in ([0], [1], [0, 1]):
        stacked = [np.stack([a * (1 + k) for k in range(3)]) if i in batched else a
                   for i, a in enumerate((x, z))]
        stats = {}
        outs = run(batch(graph, batched, 3, stats=stats), stacked)
        assert not any(k.startswith("fallback") for k in stats), stats
        for k in range(3):
            rows = run(graph, [s[k] if i in batched else s for i, s in enumerate(stacked)])
            for o, r in zip(outs, rows):
                np.testing.assert_allclose(o[k], r, rtol=1e-12, atol=1e-12)


def test_batching_agrees():
    xs = real(4, 6)
    got = tg.vmap(lambda x: np.abs(np.fft.rfft(x, norm="ortho")) ** 2)(xs)
    np.testing.assert_allclose(got, np.abs(np.fft.rfft(xs, norm="ortho")) ** 2, rtol=1e-12)
    f = lambda x: np.fft.irfft(np.fft.rfft(x) * np.arange(1.0, 5.0), n=6)   # noqa: E731
    want = np.asarray(jax.jacfwd(lambda x: jnp.fft.irfft(jnp.fft.rfft(x) * jnp.arange(1.0, 5.0),
                                                         n=6))(xs[0]))
    for mode in ("rev", "fwd"):
        assert_close(tg.jacobian(f, mode=mode)(xs[0]), want, RTOL, f"jacobian {mode}")


# -- the graph ------------------------------------------------------------------------------------
def test_graph_uses_the_three_primitives_and_round_trips_through_json():
    x = real(3, 6)

    def f(x):
        spec = np.fft.rfft2(x, s=(4, 6))
        return np.sum(np.fft.irfft2(spec * np.conj(spec), s=(4, 6))) + \
            np.sum(np.real(np.fft.fftshift(np.fft.ifft(x, norm="ortho"))))

    graph = tg.trace(f, x)
    assert {"fft", "rfft", "irfft"} <= set(graph.ops())
    for g, args in ((graph, (x,)), (tg.trace(tg.grad(f), x), (x,)),
                    (tg.trace(tg.hessian(f), x), (x,))):
        text = g.to_json()
        loaded = tg.Graph.from_json(text)
        assert loaded.to_json() == text
        for a, b in zip(np.atleast_1d(g(*args)), np.atleast_1d(loaded(*args))):
            np.testing.assert_array_equal(a, b)
    params = [n["params"] for n in json.loads(graph.to_json())["nodes"] if n["op"] == "fft"]
    assert params and all(set(p) == {"axes", "inverse", "norm"} for p in params)


def test_params_are_normalised():
    x = cplx(2, 3)
    ops = tg.trace(lambda x: np.fft.fftn(x, axes=(-1, 0), norm=None), x)
    (node,) = [ops.node(n) for n in ops if ops.op(n) == "fft"]
    assert node["params"] == {"axes": (0, 1), "inverse": False, "norm": "backward"}


def test_edge_cases_follow_numpy():
    x = cplx(2, 3)
    # no axes: the array comes back untouched
    assert tg.trace(lambda x: np.fft.fftn(x, axes=()), x)(x).shape == (2, 3)
    # a repeated axis is transformed twice (the last mention first, with its size)
    f = lambda x: np.fft.fftn(x, s=(2, 4), axes=(1, 1))   # noqa: E731
    np.testing.assert_allclose(tg.trace(f, x)(x), f(x), rtol=1e-12, atol=1e-12)
    (g,) = tg.vjp(f, x)[1](np.ones((2, 2), complex))
    (fd,) = fd_vjp(f, [x], np.ones((2, 2), complex))
    assert_close(g, fd, RTOL_FD, floor=1.0)
    # -1 in s: the default size
    f = lambda x: np.fft.irfftn(x, s=(-1, 5), axes=(0, 1))   # noqa: E731
    np.testing.assert_allclose(tg.trace(f, x)(x), f(x), rtol=1e-12, atol=1e-12)
    # length one
    y = real(1)
    np.testing.assert_allclose(tg.grad(lambda y: np.sum(np.real(np.fft.fft(y))))(y), [1.0])
    # s without axes: NumPy's deprecated meaning (the last len(s) axes), with its warning
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        f = lambda x: np.fft.fftn(x, s=(3,))   # noqa: E731
        np.testing.assert_allclose(tg.trace(f, x)(x), f(x), rtol=1e-12, atol=1e-12)


# -- bad arguments --------------------------------------------------------------------------------
def _line(token):
    lines = inspect.getsource(test_bad_arguments_name_the_line).splitlines()
    first = inspect.getsourcelines(test_bad_arguments_name_the_line)[1]
    return f"test_fft.py:{first + next(i for i, t in enumerate(lines) if token in t)}"


def test_bad_arguments_name_the_line():
    x, z = real(6), cplx(6)

    def expect(fn, arg, token, *phrases):
        with pytest.raises(tg.TraceError) as info:
            tg.grad(lambda v: np.sum(np.abs(fn(v)) ** 2))(arg)
        msg = str(info.value)
        assert _line(token) in msg, msg
        for phrase in phrases:
            assert phrase in msg, msg

    expect(lambda v: np.fft.fft(v, norm="sideways"), x, "sideways", "Invalid norm value",
           '"backward", "ortho" or "forward"')
    expect(lambda v: np.fft.fft(v, n=0), x, "n=0", "Invalid number of FFT data points (0)")
    expect(lambda v: np.fft.irfft(v, n=-2), z, "n=-2", "Invalid number of FFT data points (-2)")
    expect(lambda v: np.fft.irfft(v[:1]), z, "v[:1]", "Invalid number of FFT data points (0)")
    expect(lambda v: np.fft.rfft(v), z, "rfft(v), z", "takes a real array, got complex128")
    expect(lambda v: np.fft.ihfft(v), z, "ihfft(v), z", "takes a real array")
    expect(lambda v: np.fft.fft2(v.reshape(2, 3), s=(2,)), x, "s=(2,)",
           "Shape and axes have different lengths")
    expect(lambda v: np.fft.fft(v, axis=1), x, "axis=1", "out of bounds")
    expect(lambda v: np.fft.fftn(v, s=(0,), axes=(0,)), x, "s=(0,)",
           "Invalid number of FFT data points (0)")
    expect(lambda v: np.fft.fft(v, n=2.5), x, "n=2.5", "must be an integer")
    expect(lambda v: np.fft.fft(v[0]), x, "v[0]", "at least one dimension")
    out = np.zeros(6, complex)      # the caller's array: a traced value is not written into it
    expect(lambda v: np.fft.fft(v, out=out), x, "out=", "out=")
