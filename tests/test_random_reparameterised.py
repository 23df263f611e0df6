"""NumPy samplers that are an exact transform of a standard one, called with a parameter
being differentiated (``rng.normal(mu, sigma)``, ``np.random.uniform(lo, hi)``, ...): the
values and the generator's state afterwards are NumPy's, bit for bit; the derivative is
the reparameterised one (checked against finite differences with the generator re-seeded
for every evaluation: common random numbers); tg.jit(tg.grad(f)) draws fresh numbers on
every call; the calls NumPy answers without an array, tg.vmap, and samplers that are no
such transform are refused before anything is drawn."""
import copy
import math
import threading
import warnings

import numpy as np
import pytest
from conftest import assert_close, central_diff

import tracegrad as tg

from oracles import same_state

HERE = "test_random_reparameterised.py"
SAMPLERS = {       # name -> parameter count
    "normal": 2, "gumbel": 2, "laplace": 2, "logistic": 2, "uniform": 2,
    "exponential": 1, "rayleigh": 1, "lognormal": 2,
}
KINDS = ["Generator", "RandomState", "global"]


def _make(kind, seed):
    """(the generator, the object whose methods are called: np.random for 'global')."""
    if kind == "Generator":
        rng = np.random.default_rng(seed)
        return rng, rng
    if kind == "RandomState":
        rng = np.random.RandomState(seed)
        return rng, rng
    np.random.seed(seed)
    return np.random.mtrand._rand, np.random


def _state(rng):
    return copy.deepcopy(rng.bit_generator.state if isinstance(rng, np.random.Generator)
                         else rng.get_state(legacy=False))


def _set_state(rng, state):
    if isinstance(rng, np.random.Generator):
        rng.bit_generator.state = state
    else:
        rng.set_state(state)


def _params(name, shapes):
    """Valid parameters of ``name``, of the given shapes."""
    r = np.random.default_rng(len(name))
    ps = [r.uniform(0.3, 2.0, size=s) for s in shapes]
    if name == "uniform":
        ps[1] = ps[0] + ps[1]
    elif SAMPLERS[name] == 2:
        ps[0] = ps[0] - 1.0         # a location of either sign
    return ps


# (parameter shapes, size): NumPy's broadcasting, size=None with array parameters, and
# scalar parameters with a size
SHAPES = {
    2: [([(3,), (3,)], None), ([(), (2, 3)], None), ([(3,), ()], (4, 3)),
        ([(), ()], (2,)), ([(), ()], ())],
    1: [([(3,)], (3,)), ([()], (2, 2)), ([(2, 1)], (2, 3))],
}


def _cases():
    return [(name, kind, shapes, size) for name, n in SAMPLERS.items() for kind in KINDS
            for shapes, size in SHAPES[n]]


@pytest.mark.parametrize("name,kind,shapes,size", _cases())
def test_samples_are_numpys_bit_for_bit_and_differentiated(name, kind, shapes, size):
    ps = _params(name, shapes)
    w = np.cos(np.arange(1.0, 13.0))

    def loss(sample):
        flat = np.ravel(sample)
        return np.sum(w[:flat.size] * flat) + 0.25 * np.sum(sample ** 2)

    # the value, and the state afterwards, against the same call in plain NumPy
    rng, src = _make(kind, 5)
    _set_state(rng, _state(rng))
    want = getattr(src, name)(*ps, size=size)
    want_state = _state(rng)
    rng, src = _make(kind, 5)
    start = _state(rng)
    seen = []

    draw = getattr(src, name)

    def f(*qs):
        if len(qs) == 2:
            sample = draw(qs[0], qs[1], size=size)
        else:
            sample = draw(qs[0], size=size)
        seen.append(sample)
        return loss(sample)

    value, grads = tg.value_and_grad(f, argnums=tuple(range(len(ps))))(*ps)
    assert same_state(_state(rng), want_state), "the generator's state after the call"
    assert value == loss(want)
    got = np.asarray(tg.jit(lambda s: s)(np.asarray(seen[0].view(np.ndarray))))
    np.testing.assert_array_equal(got, want)
    assert np.shape(seen[0]) == np.shape(want)
    # the derivative against finite differences with the same random numbers
    for k in range(len(ps)):
        def fk(q, k=k):
            _set_state(rng, start)
            qs = list(ps)
            qs[k] = q
            return loss(getattr(src, name)(*qs, size=size))
        assert_close(grads[k], central_diff(fk, ps[k]), 1e-6, f"d/d{k}", floor=1.0)


@pytest.mark.parametrize("kind", ["Generator", "RandomState"])
def test_each_sampler_is_its_standard_sample_transformed_bit_for_bit(kind):
    # the fact the derivative rests on: NumPy's sampler is the affine map of its standard
    # sample drawn from the same state (lognormal: C's exp of it), bit for bit, leaving
    # the same state
    for seed in range(20):
        for name, n in SAMPLERS.items():
            ps = _params(name, [(7,)] * n)
            rng, _ = _make(kind, seed)
            rng.standard_normal(seed % 3)          # RandomState's cached Gaussian, at times
            twin = copy.deepcopy(rng)
            x = getattr(rng, name)(*ps)
            if name == "lognormal":        # exp of normal's sample, with C's exp
                s = twin.standard_normal(7)
                y = np.array([math.exp(v) for v in ps[0] + ps[1] * s])
            elif name in ("normal", "gumbel", "laplace", "logistic"):
                s = (twin.standard_normal(7) if name == "normal"
                     else getattr(twin, name)(0.0, 1.0, 7))
                y = ps[0] + ps[1] * s
            elif name == "uniform":
                u = twin.random(7) if kind == "Generator" else twin.random_sample(7)
                y = ps[0] + (ps[1] - ps[0]) * u
            else:
                s = (twin.standard_exponential(7) if name == "exponential"
                     else twin.rayleigh(1.0, 7))
                y = ps[0] * s
            np.testing.assert_array_equal(x, y, err_msg=f"{name} seed {seed}")
            assert same_state(_state(rng), _state(twin))


def test_which_parameter_is_traced_is_read_off_the_call():
    mu, sd = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.2, 3.0])
    calls = {
        "loc": (lambda rng, m: rng.normal(m, 2.0), lambda m: 1.0),
        "scale": (lambda rng, s: rng.normal(0.5, s), None),
        "scale_kw": (lambda rng, s: rng.normal(scale=s), None),
        "loc_kw": (lambda rng, m: rng.normal(loc=m, size=3), lambda m: 1.0),
        "expr_scale": (lambda rng, s: rng.normal(1.0, s * 2.0), None),
        "both_same": (lambda rng, m: rng.normal(m, m), None),
        "high_kw": (lambda rng, h: rng.uniform(-1.0, high=h), None),
        "plain_array_loc": (lambda rng, s: rng.normal(mu, s), None),
    }
    for what, (call, _) in calls.items():
        p = sd if what != "loc" and what != "loc_kw" else mu
        rng = np.random.default_rng(2)
        start = _state(rng)

        def f(q, call=call):
            _set_state(rng, start)
            return np.sum(np.sin(call(rng, q)))
        g = tg.grad(f)(p)
        assert_close(g, central_diff(f, p), 1e-6, what, floor=1.0)
        want = call(np.random.default_rng(2), p)
        _set_state(rng, start)
        got = tg.jacobian(lambda q, call=call: call(rng, q))(p)       # the sample returned
        assert got.shape == want.shape + p.shape, what


def test_the_sample_behaves_as_the_traced_value_wherever_it_is_used():
    mu = np.array([0.3, -0.7, 1.1])
    a = np.arange(9.0).reshape(3, 3) / 10
    uses = {
        "radd": lambda s, m: np.sum(m + s),
        "method_sum": lambda s, m: s.sum() * m[0],
        "method_mean": lambda s, m: s.mean(),
        "index": lambda s, m: s[1] * s[2],
        "matmul": lambda s, m: np.sum(a @ s),
        "concatenate": lambda s, m: np.sum(np.concatenate([m, s]) ** 2),
        "list": lambda s, m: np.sum(np.array([s, m]) ** 2),
        "reshape_T": lambda s, m: np.sum(s.reshape(3, 1).T ** 3),
        "inplace": lambda s, m: _inplace(s),
        "setitem": lambda s, m: _setitem(s, m),
        "iterate": lambda s, m: sum(v * v for v in s),
        "exp": lambda s, m: np.sum(np.exp(s)),
    }
    for what, use in uses.items():
        rng = np.random.default_rng(9)
        start = _state(rng)

        def f(m, use=use):
            _set_state(rng, start)
            return use(rng.normal(m, 0.5), m)
        assert_close(tg.grad(f)(mu), central_diff(f, mu), 1e-6, what, floor=1.0)
        plain = np.random.default_rng(9)
        assert f(mu) == use(plain.normal(mu, 0.5), mu), what
    # a conversion to a Python number would lose the derivative: refused, as for any
    # traced value
    rng = np.random.default_rng(9)
    with pytest.raises(tg.TraceError, match=rf"float\(\).*{HERE}:\d+"):
        tg.grad(lambda m: float(rng.normal(m, 0.5)[0]))(mu)


def _inplace(s):
    s *= 2.0
    s += 1.0
    return np.sum(s ** 2)


def _setitem(s, m):
    s[0] = m[1] * 3.0
    return np.sum(s ** 2)


def test_second_derivatives_and_jit_of_grad_draw_fresh_numbers():
    mu, sd = np.array([0.5, -1.0]), np.array([1.5, 0.7])
    rng = np.random.default_rng(4)
    start = _state(rng)

    p = np.stack([mu, sd])
    for draw in (rng.normal, rng.lognormal):
        def f(p, draw=draw):
            return np.sum(np.tanh(draw(p[0], p[1])))
        _set_state(rng, start)
        h = tg.hessian(f)(p)

        def g(q, f=f):
            _set_state(rng, start)
            return tg.grad(f)(q)
        fd = np.stack([central_diff(lambda q, k=k: g(q)[np.unravel_index(k, p.shape)], p)
                       for k in range(p.size)]).reshape(p.shape + p.shape)
        assert_close(h, fd, 1e-5, f"hessian of {draw.__name__}", floor=1.0)
    # tg.jit(tg.grad(f)): each call draws fresh numbers, as the uncompiled calls do
    def loss(r, q):
        return np.sum(np.tanh(r.normal(q[0], q[1])))
    for backend in ("numpy", "jax"):
        compiled, plain = np.random.default_rng(8), np.random.default_rng(8)
        # (the generator a default value: tg.jit watches those too)
        jg = tg.jit(tg.grad(lambda q, r=compiled: loss(r, q)), backend=backend)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tg.RetraceWarning)
            got = [jg(p) for _ in range(3)]
        want = [tg.grad(lambda q: loss(plain, q))(p) for _ in range(3)]
        np.testing.assert_array_equal(got, want)
        assert not np.array_equal(got[0], got[1])
        assert same_state(_state(compiled), _state(plain))


def test_threads_drawing_differentiated_samples_at_once():
    mu, lo = np.linspace(-1.0, 1.0, 4), np.linspace(0.0, 0.5, 4)

    def work(k, out):
        rng = np.random.default_rng(k)
        for _ in range(15):
            if k % 2:
                out.append(tg.grad(lambda m: np.sum(rng.normal(m, 0.5) ** 2))(mu))
            else:
                out.append(tg.grad(lambda a: np.sum(rng.uniform(a, 2.0) ** 3))(lo))
    results = {k: [] for k in range(4)}
    threads = [threading.Thread(target=work, args=(k, results[k])) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        rng = np.random.default_rng(k)
        for got in results[k]:
            if k % 2:
                want = 2 * rng.normal(mu, 0.5)
            else:
                x = rng.uniform(lo, 2.0)
                want = 3 * x ** 2 * (1.0 - (x - lo) / (2.0 - lo))
            assert_close(got, want, 1e-12, f"thread {k}")


def test_calls_that_make_no_array_and_vmap_are_refused_before_drawing():
    rng = np.random.default_rng(0)
    before = _state(rng)
    with pytest.raises(tg.TraceError, match=rf"rng.normal\(...\).*Python float.*size=\(\)"
                                            rf".*nothing was drawn.*{HERE}:\d+"):
        tg.grad(lambda m: rng.normal(m, 2.0))(1.0)
    with pytest.raises(tg.TraceError, match=r"rng.exponential.*size=np.shape\(scale\)"):
        tg.grad(lambda s: np.sum(rng.exponential(s)))(np.ones(3))
    with pytest.raises(tg.TraceError, match=r"np.random.rayleigh.*size="):
        tg.grad(lambda s: np.random.rayleigh(s))(2.0)
    with pytest.raises(tg.TraceError, match=r"tg.vmap"):
        tg.vmap(tg.grad(lambda m: rng.normal(m, 1.0, size=())))(np.ones(3))
    # a list of traced values: NumPy converts each element as it converts a parameter
    with pytest.raises(tg.TraceError, match=r"its loc is a list.*np.stack"):
        tg.grad(lambda m: np.sum(rng.normal([m[0], m[1]], np.ones(2))))(np.ones(2))
    # not a transform of a standard sample NumPy has: the refusal, with stop_gradient
    with pytest.raises(tg.TraceError, match=r"rng.gamma.*stop_gradient"):
        tg.grad(lambda m: np.sum(rng.gamma(m)))(np.ones(3))
    with pytest.raises(tg.TraceError, match=r"np.random.wald.*stop_gradient"):
        tg.grad(lambda m: np.sum(np.random.wald(m, 1.0)))(np.ones(3))
    assert same_state(_state(rng), before), "nothing was drawn"
    # a sample whose parameter is a sample: NumPy's C code would read its numbers
    with pytest.raises(tg.TraceError, match=r"another sampler's parameter"):
        tg.grad(lambda m: np.sum(rng.normal(rng.normal(m, 1.0, size=2), 1.0)))(1.0)
    _set_state(rng, before)
    # size=() gives NumPy's 0-d array, and the derivative
    rng_b = np.random.default_rng(0)
    z = rng_b.standard_normal()
    assert tg.grad(lambda s: rng.normal(1.0, s, size=()))(2.0) == z


@pytest.mark.parametrize("kind", ["Generator", "RandomState"])
def test_shuffling_a_sample_in_place_shuffles_its_derivative(kind):
    w = np.arange(1.0, 5.0)
    rng, _ = _make(kind, 1)
    start = _state(rng)

    def f(m):
        _set_state(rng, start)
        s = rng.normal(m, 1.0, size=(4, 2))
        rng.shuffle(s)                  # NumPy's in-place swaps, through the sample's rows
        return np.sum(w @ s * m) + np.sum(s ** 3)
    m = np.array([0.2, 0.5])
    assert_close(tg.grad(f)(m), central_diff(f, m), 1e-6, "shuffled", floor=1.0)
    value = f(m)
    plain, _ = _make(kind, 1)
    s = plain.normal(m, 1.0, size=(4, 2))
    plain.shuffle(s)
    assert value == np.sum(w @ s * m) + np.sum(s ** 3)


def test_a_sample_kept_after_the_transform_is_numpys_array():
    rng, kept = np.random.default_rng(0), []

    def f(m):
        s = rng.normal(m, 1.0, size=3)
        kept.append(s)
        return np.sum(s ** 2), s
    g, aux = tg.grad(f, has_aux=True)(np.ones(3))
    want = np.random.default_rng(0).normal(np.ones(3), 1.0)
    assert type(aux) is np.ndarray
    np.testing.assert_array_equal(aux, want)
    np.testing.assert_array_equal(g, 2 * want)
    s = kept[0]
    assert np.mean(s) == np.mean(want) and float(s[0]) == want[0]
    np.testing.assert_array_equal(s[1:], want[1:])
    np.testing.assert_array_equal(rng.normal(s, 0.0), want)        # NumPy's C code reads it
    np.testing.assert_array_equal(tg.grad(lambda m: np.sum(m * s))(np.ones(3)), want)
