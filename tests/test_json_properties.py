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
