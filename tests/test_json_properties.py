"""JSON round trips of hypothesis-generated graphs: random NumPy programs (the generator of
``test_eager_properties``), traced as they are and as their gradient and Hessian graphs.
A document loads to a graph that runs to the same numbers, and saving that graph again
gives the same document."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from test_eager_properties import np_loss, programs

import tracegrad as tg

SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _round_trip(graph, args):
    text = graph.to_json()
    loaded = tg.Graph.from_json(text)
    assert loaded.to_json() == text
    expected = graph(*args)
    actual = loaded(*args)
    for a, e in zip(actual if isinstance(actual, tuple) else (actual,),
                    expected if isinstance(expected, tuple) else (expected,)):
        np.testing.assert_array_equal(a, e)


@SETTINGS
@given(programs())
def test_program_and_derivative_graphs_round_trip(prog):
    expr, xs, w, _ = prog
    loss = np_loss(expr, w)
    argnums = tuple(range(len(xs)))
    _round_trip(tg.trace(loss, *xs), xs)
    _round_trip(tg.trace(tg.grad(loss, argnums=argnums), *xs), xs)


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(max_depth=3))
def test_hessian_graphs_round_trip(prog):
    expr, xs, w, _ = prog
    _round_trip(tg.trace(tg.hessian(np_loss(expr, w)), xs[0], *xs[1:]), xs)


def _example(name):
    import pathlib
    import runpy

    folder = pathlib.Path(__file__).resolve().parent.parent / "examples"
    return runpy.run_path(str(folder / f"{name}.py"), run_name=f"example_{name}")


def test_example_graphs_round_trip():
    """The examples' models, traced as they are and as their derivatives."""
    rng = np.random.default_rng(0)
    lin = _example("linear_regression")
    _round_trip(tg.trace(tg.grad(lin["loss"], argnums=(0, 1)), 1.0, 0.0), (1.0, 0.0))
    vdp = _example("implicit_van_der_pol")
    s = np.array([2.0, 0.0])
    _round_trip(tg.trace(tg.jacobian(vdp["residual"]), s, s, 0.05), (s, s, 0.05))
    digits = _example("digits_mlp_cnn")
    x = rng.standard_normal((4, 64))
    onehot = np.eye(10)[[1, 2, 3, 4]]
    for init, model, shape in [(digits["init_mlp"], digits["mlp"], (4, 64)),
                               (digits["init_cnn"], digits["cnn"], (4, 1, 8, 8))]:
        params = init(np.random.default_rng(1))
        xs = x.reshape(shape)
        loss = lambda p, xs=xs, model=model: digits["cross_entropy"](model(p, xs), onehot)  # noqa: E731
        graph = tg.trace(tg.grad(loss), params)
        leaves, _ = tg.tracer.flatten(params)
        _round_trip(graph, leaves)
    jx = _example("jax_lowering")
    p = jx["init"](np.random.default_rng(2))
    leaves, _ = tg.tracer.flatten(p)
    _round_trip(tg.trace(tg.grad(jx["loss"]), p, rng.standard_normal((4, 64)), np.eye(10)[[0, 1, 2, 3]]),
                leaves + [rng.standard_normal((4, 64)), np.eye(10)[[0, 1, 2, 3]]])
