"""NumPy random numbers (and Python's ``random``) drawn inside traced functions: tg.jit
does not freeze them (each call draws fresh numbers, and the streams and the generators'
states are, bit for bit, what the same uncompiled NumPy code gives), derivatives treat
them as constants, a traced parameter being differentiated of a sampler that is no
transform of a standard one is refused (the reparameterised ones:
test_random_reparameterised.py), and a loop body that draws is refused."""
import random
import warnings

import numpy as np
import pytest
from conftest import assert_close, central_diff

import tracegrad as tg

from oracles import same_state

HERE = "test_random_draws.py"


def _state(source):
    if source is None:
        return np.random.get_state(legacy=False)
    if isinstance(source, np.random.RandomState):
        return source.get_state(legacy=False)
    return source.bit_generator.state


def _compare(make, calls=3, backend="numpy", args=None, seed=7):
    """``make(source) -> (f, source)``: f drawing from source (None: the global state).
    Runs f compiled and plain from the same seed, ``calls`` times each; checks every result
    and the final state bit for bit."""
    args = (np.linspace(0.1, 0.9, 4),) if args is None else args
    outs, states = [], []
    for compiled in (True, False):
        np.random.seed(seed)
        f, source = make(seed)
        g = tg.jit(f, backend=backend) if compiled else f
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tg.RetraceWarning)
            outs.append([np.asarray(g(*args)) for _ in range(calls)])
        states.append(_state(source))
    for k, (a, b) in enumerate(zip(*outs)):
        np.testing.assert_array_equal(a, b, err_msg=f"call {k}")
        assert a.dtype == b.dtype
    assert not np.array_equal(outs[0][0], outs[0][1]), "a second call draws fresh numbers"
    assert same_state(*states), "the random state after the calls"


GLOBAL_DRAWS = {
    "rand": lambda x: x + np.random.rand(4),
    "randn": lambda x: x * np.random.randn(4),
    "normal": lambda x: x + np.random.normal(1.0, 2.0, size=4),
    "uniform": lambda x: x + np.random.uniform(size=(2, 4)),
    "standard_normal_then_cached_gauss": lambda x: x + np.random.standard_normal(3)[0],
    "randint": lambda x: x + np.random.randint(0, 10, size=4),
    "choice": lambda x: x[np.random.choice(4, size=3)],
    "permutation": lambda x: x[np.random.permutation(4)],
    "exponential": lambda x: np.sum(x) * np.random.exponential(2.0, size=4),
}


@pytest.mark.parametrize("name", list(GLOBAL_DRAWS))
@pytest.mark.parametrize("backend", ["numpy", "jax"])
def test_global_random_state_draws_fresh_numbers_bit_for_bit(name, backend):
    _compare(lambda seed: (GLOBAL_DRAWS[name], None), backend=backend)


GENERATOR_DRAWS = {
    "normal": lambda rng, x: x + rng.normal(0.5, 2.0, size=4),
    "random": lambda rng, x: x * rng.random(4),
    "integers": lambda rng, x: x + rng.integers(0, 5, size=4),
    "standard_normal": lambda rng, x: x - rng.standard_normal((3, 4)),
    "exponential": lambda rng, x: x * rng.exponential(size=4),
    "choice": lambda rng, x: x[rng.choice(4, size=4)],
    "permutation": lambda rng, x: x[rng.permutation(4)],
    "uniform": lambda rng, x: x + rng.uniform(-1.0, 1.0, size=4),
}


@pytest.mark.parametrize("name", list(GENERATOR_DRAWS))
@pytest.mark.parametrize("kind", ["Generator", "RandomState"])
def test_generator_methods_in_a_closure_draw_fresh_numbers_bit_for_bit(name, kind):
    if kind == "RandomState" and name == "integers":
        return      # RandomState's is randint
    draw = GENERATOR_DRAWS[name]

    def make(seed):
        rng = np.random.default_rng(seed) if kind == "Generator" else np.random.RandomState(seed)
        return (lambda x: draw(rng, x)), rng
    _compare(make)


class Noisy:
    """A model holding its generator, called through a jitted method."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def __call__(self, x):
        keep = self.rng.random(x.shape) > 0.3          # dropout
        return np.sum(np.where(keep, x, 0.0) ** 2) / 0.7


def test_generator_as_argument_on_an_object_and_under_jit_of_grad():
    # a Generator passed as a static argument
    for backend in ("numpy", "jax"):
        rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
        f = tg.jit(lambda x, rng: x * rng.standard_normal(4), static_argnums=1, backend=backend)
        x = np.arange(4.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tg.RetraceWarning)
            got = [f(x, rng_a) for _ in range(3)]
        want = [x * rng_b.standard_normal(4) for _ in range(3)]
        np.testing.assert_array_equal(got, want)
        assert same_state(_state(rng_a), _state(rng_b))
    # the object's generator, under jit(grad) and grad: the dropout mask is a constant of
    # the derivative, drawn afresh on every call
    x = np.array([0.5, -1.0, 2.0, 0.3, 1.1])
    compiled, traced, plain = Noisy(5), Noisy(5), Noisy(5)
    g = tg.jit(tg.grad(compiled))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tg.RetraceWarning)
        got = [g(x) for _ in range(4)]
    np.testing.assert_array_equal(got, [tg.grad(traced)(x) for _ in range(4)])
    want = []
    for _ in range(4):
        keep = plain.rng.random(x.shape) > 0.3
        want.append(np.where(keep, 2 * x, 0.0) / 0.7)
    assert_close(np.array(got), np.array(want), 1e-15, "the dropout gradient")
    assert same_state(_state(compiled.rng), _state(plain.rng))
    assert same_state(_state(traced.rng), _state(plain.rng))
    assert not all(np.array_equal(got[0], w) for w in got[1:])


def test_a_generator_given_as_a_default_value_draws_fresh_numbers():
    def make(seed):
        rng = np.random.default_rng(seed)
        return (lambda x, r=rng: x + r.standard_normal(4)), rng
    _compare(make)


def test_jit_warns_once_that_it_does_not_compile_a_drawing_function():
    f = tg.jit(lambda x: x + np.random.rand(2))
    with pytest.warns(tg.RetraceWarning, match=rf"draws random numbers.*argument.*{HERE}:\d+"):
        f(np.zeros(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f(np.zeros(2))
    with pytest.raises(tg.TraceError, match="draws random numbers"):
        f.lower(np.zeros(2))
    # a function that draws nothing is still compiled
    g = tg.jit(lambda x: x + 1.0)
    g(np.zeros(2))
    assert g.cache_size == 1


def test_random_values_carry_no_gradient():
    rng_a, rng_b = np.random.default_rng(11), np.random.default_rng(11)
    x = np.array([0.2, 0.4, 0.6])
    grad = tg.grad(lambda x: np.sum(np.sin(x) * rng_a.normal(size=3)))
    got = [grad(x) for _ in range(2)]
    want = [np.cos(x) * rng_b.normal(size=3) for _ in range(2)]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("kind", ["Generator", "RandomState"])
def test_reparameterised_rewrites_are_numpys_samplers_bit_for_bit(kind):
    loc, scale = np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.2, 3.0])
    low, high = np.array([-1.0, 0.0, 2.0]), np.array([1.0, 0.5, 7.0])

    def pair():
        return ((np.random.default_rng(4), np.random.default_rng(4)) if kind == "Generator"
                else (np.random.RandomState(4), np.random.RandomState(4)))
    a, b = pair()
    for _ in range(3):           # several calls: the Gaussian cache of RandomState included
        np.testing.assert_array_equal(loc + scale * a.standard_normal(3), b.normal(loc, scale))
        np.testing.assert_array_equal(low + (high - low) * a.random(3), b.uniform(low, high))
        np.testing.assert_array_equal(scale * a.standard_exponential(3), b.exponential(scale))
    assert same_state(_state(a), _state(b))
    # written so, the sample has the reparameterised derivative (each evaluation starts
    # from the same state, so finite differences see the same standard normals)
    rng = pair()[0]
    start = _state(rng)

    def f(p):
        if kind == "Generator":
            rng.bit_generator.state = start
        else:
            rng.set_state(start)
        z = rng.standard_normal(3)
        return np.sum((p[0] + p[1] * z) ** 2)
    p = np.stack([loc, scale])
    assert_close(tg.grad(f)(p), central_diff(f, p), 1e-7, "reparameterised", floor=1.0)


def test_a_differentiated_parameter_of_a_sampler_that_is_no_transform_is_refused():
    # (normal, uniform, exponential and the other transforms of a standard sample are
    # differentiated: test_random_reparameterised.py)
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(tg.TraceError, match=rf"rng.gamma\(...\).*not a transform.*normal, "
                                            rf".*stop_gradient.*{HERE}:\d+"):
        tg.grad(lambda m: np.sum(rng.gamma(m)))(np.ones(3))
    with pytest.raises(tg.TraceError, match=r"np.random.beta.*stop_gradient"):
        tg.grad(lambda m: np.sum(np.random.beta(m, 2.0)))(np.ones(3))
    assert same_state(rng.bit_generator.state, before), "nothing was drawn"
    # behind stop_gradient, or compiled without differentiation, the parameter is a value
    rng_b = np.random.default_rng(0)
    g = tg.grad(lambda m: np.sum(m * rng.gamma(tg.stop_gradient(m), 2.0)))(np.ones(3))
    np.testing.assert_array_equal(g, rng_b.gamma(np.ones(3), 2.0))
    g = tg.grad(lambda m: np.sum(m * rng.normal(tg.stop_gradient(m), 2.0)))(np.ones(3))
    np.testing.assert_array_equal(g, rng_b.normal(np.ones(3), 2.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tg.RetraceWarning)
        out = [tg.jit(lambda m: rng.normal(m, 2.0))(np.ones(2)) for _ in range(2)]
    np.testing.assert_array_equal(out, [rng_b.normal(np.ones(2), 2.0) for _ in range(2)])


def test_a_loop_body_that_draws_is_refused():
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(tg.TraceError, match=rf"drew random numbers.*xs.*{HERE}:\d+"):
        tg.fori_loop(0, 3, lambda i, c: c + rng.normal(size=2), np.zeros(2))
    assert same_state(rng.bit_generator.state, before)
    np.random.seed(1)
    state = np.random.get_state(legacy=False)
    with pytest.raises(tg.TraceError, match="drew random numbers"):
        tg.jit(lambda x: tg.scan(lambda c, _: (c + np.random.rand(), None), x, None,
                                 length=3)[0])(0.0)
    assert same_state(np.random.get_state(legacy=False), state)


PYTHON_DRAWS = {
    "module random": lambda r: (lambda x: x * random.random(), None),
    "module randint": lambda r: (lambda x: x[: random.randint(1, 4)].sum() + 0 * x, None),
    "module gauss": lambda r: (lambda x: x + random.gauss(0.0, 1.0), None),
    "held Random": lambda r: (lambda x: x * r.random(), r),
    "held Random uniform": lambda r: (lambda x: x + r.uniform(-1, 1), r),
}


@pytest.mark.parametrize("name", list(PYTHON_DRAWS))
def test_python_random_draws_are_fresh_each_call_bit_for_bit(name):
    """Python's ``random`` (the module's generator, or a ``random.Random`` the function
    holds) is watched as NumPy's generators are: tg.jit runs such a function uncompiled,
    so every call draws fresh numbers and leaves the generator where plain code does."""
    x = np.linspace(0.1, 0.9, 4)
    outs, states = [], []
    for compiled in (True, False):
        random.seed(5)
        f, held = PYTHON_DRAWS[name](random.Random(9))
        g = tg.jit(f) if compiled else f
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", tg.RetraceWarning)
            outs.append([np.asarray(g(x)) for _ in range(4)])
        states.append((random.getstate(), held.getstate() if held is not None else None))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    assert states[0] == states[1]
    assert any(not np.array_equal(outs[0][0], o) for o in outs[0][1:])
    f, _ = PYTHON_DRAWS[name](random.Random(9))
    with pytest.warns(tg.RetraceWarning, match="Python's random module|a Random"):
        tg.jit(f)(x)


def test_a_loop_body_drawing_with_python_random_is_refused():
    random.seed(2)
    state = random.getstate()
    with pytest.raises(tg.TraceError, match="drew random numbers"):
        tg.fori_loop(0, 3, lambda i, c: c + random.random(), np.zeros(2))
    assert random.getstate() == state
