"""Bad input raises tg.TraceError saying what is wrong, what to do, and where (this file)."""
import math
import pathlib

import numpy as np
import pytest

import tracegrad as tg

X = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
V = np.array([0.5, -1.0, 2.0])
_SOURCE = pathlib.Path(__file__).read_text().splitlines()


def line_of(token):
    """The first line of this file holding ``token``: the code that fails, which each test
    writes before repeating the token as a string to look it up."""
    hits = [i + 1 for i, text in enumerate(_SOURCE) if token in text and "line_of(" not in text]
    assert hits, f"{token!r} is not in this file"
    return hits[0]


def check_message(err, token, *phrases):
    msg = str(err)
    assert f"test_errors.py:{line_of(token)}" in msg, msg
    for phrase in phrases:
        assert phrase in msg, f"{phrase!r} not in: {msg}"
    # the message stands on its own: no internal exception chained behind it
    assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__), \
        f"internal exception chained: {err.__context__!r}"


def expect_error(call, token, *phrases):
    """``call()`` raises TraceError naming the line holding ``token`` and every phrase."""
    with pytest.raises(tg.TraceError) as info:
        call()
    check_message(info.value, token, *phrases)
    return info.value


def test_trace_error_is_a_value_error():
    assert issubclass(tg.TraceError, ValueError)


# -- what grad accepts -------------------------------------------------------------------------
def test_non_scalar_output_to_grad():
    double = lambda x: x * 2.0  # OUTPUT_MADE_HERE
    err = expect_error(lambda: tg.grad(double)(X), "tg.grad(double)(X)",
                       "scalar", "shape (3, 4)", "tg.jacobian", "tg.vjp")
    assert f"made at test_errors.py:{line_of('OUTPUT_MADE_HERE')}" in str(err)
    expect_error(lambda: tg.value_and_grad(double)(X), "tg.value_and_grad(double)(X)", "scalar")
    expect_error(lambda: tg.hessian(double)(V), "tg.hessian(double)(V)", "scalar")
    expect_error(lambda: tg.grad(lambda x: (x[0], x[1]))(V), "(x[0], x[1])", "one scalar")


def test_gradient_with_respect_to_integer_or_boolean():
    f = lambda x, y=1.0: np.sum(x * y)
    expect_error(lambda: tg.grad(f)(3), "tg.grad(f)(3)", "int64", "floating-point", "float")
    expect_error(lambda: tg.grad(f)(np.arange(3)), "tg.grad(f)(np.arange(3))", "int64")
    expect_error(lambda: tg.grad(f)(np.array([True, False])), "tg.grad(f)(np.array([True",
                 "bool")
    expect_error(lambda: tg.grad(f, argnums=(0, 1))(V, 2), "argnums=(0, 1))(V, 2)", "int64",
                 "argnums")
    expect_error(lambda: tg.grad(f)({"a": V, "n": 2}), 'tg.grad(f)({"a": V, "n": 2})', "int64")
    expect_error(lambda: tg.jacobian(np.sin)(np.arange(3)), "tg.jacobian(np.sin)(np.arange",
                 "int64")
    expect_error(lambda: tg.vjp(f, V, 2), "tg.vjp(f, V, 2)", "int64",
                 "tg.vjp(lambda x: f(x, n), x)")
    expect_error(lambda: tg.grad(np.sum)(np.ones(2, complex)), "tg.grad(np.sum)(np.ones(2, c",
                 "complex")


def test_argnums_out_of_range():
    f = lambda x, y: np.sum(x * y)
    expect_error(lambda: tg.grad(f, argnums=2)(V, V), "argnums=2)(V, V)", "argnums=2",
                 "out of range", "2 positional")
    expect_error(lambda: tg.grad(f, argnums=(0, 5))(V, V), "argnums=(0, 5))", "out of range")
    expect_error(lambda: tg.jacobian(f, argnums=-3)(V, V), "argnums=-3)", "out of range")
    expect_error(lambda: tg.grad(f, argnums="x")(V, V), 'argnums="x"', "int")


def test_other_bad_arguments_and_results():
    expect_error(lambda: tg.grad(lambda s: 1.0)("text"), 'tg.grad(lambda s: 1.0)("text")',
                 "arguments must be arrays", "str")
    expect_error(lambda: tg.grad(lambda x: "loss")(V), 'tg.grad(lambda x: "loss")(V)',
                 "outputs must be arrays")
    expect_error(lambda: tg.grad(lambda x: np.sum(x), has_aux=True)(V), "has_aux=True)(V)",
                 "has_aux=True", "pair")
    expect_error(lambda: tg.grad(lambda x: np.argmax(x))(V), "np.argmax(x))(V)",
                 "floating-point output", "int64")
    expect_error(lambda: tg.jacobian(lambda x: x > 0)(V), "tg.jacobian(lambda x: x > 0)(V)",
                 "floating-point outputs", "bool")


# -- shape mismatches ---------------------------------------------------------------------------
def test_broadcast_failure_inside_the_function():
    def f(x):
        y = np.sin(x)
        return np.sum(y + x[:2])  # BROADCAST_FAILS
    expect_error(lambda: tg.grad(f)(X), "BROADCAST_FAILS", "(3, 4)", "(2, 4)", "broadcast")


def test_other_shape_errors_inside_the_function():
    expect_error(lambda: tg.grad(lambda x: np.sum(x @ x))(X), "np.sum(x @ x)", "matmul",
                 "(3, 4)")
    expect_error(lambda: tg.grad(lambda x: np.sum(x.reshape(5, 2)))(X), "x.reshape(5, 2)",
                 "cannot reshape", "(5, 2)")
    expect_error(lambda: tg.grad(lambda x: np.sum(np.concatenate([x, x[:, :2]])))(X),
                 "np.concatenate([x, x[:, :2]])", "concatenate", "(3, 2)")
    expect_error(lambda: tg.grad(lambda x: np.sum(np.stack([x, x[:2]])))(X),
                 "np.stack([x, x[:2]])", "same shape")
    expect_error(lambda: tg.grad(lambda x: np.sum(x[7]))(X), "np.sum(x[7])", "out of bounds")
    expect_error(lambda: tg.grad(lambda x: np.sum(x, axis=2))(X), "np.sum(x, axis=2)",
                 "axis 2", "out of bounds")
    expect_error(lambda: tg.grad(lambda x: np.sum(np.linalg.inv(x)))(X), "np.linalg.inv(x)",
                 "inv", "square")
    expect_error(lambda: tg.grad(lambda x: np.einsum("ij,ij->", x, x[:2]))(X),
                 'np.einsum("ij,ij->", x, x[:2])', "einsum")

    def assign(x):
        z = x * 1.0
        z[0] = x[:2, 0]  # SETITEM_SHAPE
        return np.sum(z)
    expect_error(lambda: tg.grad(assign)(X), "SETITEM_SHAPE", "(2,)", "broadcast")


def test_wrong_vjp_cotangent():
    out, pullback = tg.vjp(lambda x: x * 2.0, X)
    expect_error(lambda: pullback(np.ones(3)), "pullback(np.ones(3))", "cotangent",
                 "shape (3,)", "(3, 4)")
    expect_error(lambda: pullback((np.ones((3, 4)),)), "pullback((np.ones((3, 4)),))",
                 "structure")


def test_wrong_jvp_tangent():
    f = lambda x: x * 2.0
    expect_error(lambda: tg.jvp(f, (X,), (np.ones(3),)), "tg.jvp(f, (X,), (np.ones(3),))",
                 "tangent", "shape (3,)", "(3, 4)")
    expect_error(lambda: tg.jvp(f, (X,), (X, X)), "tg.jvp(f, (X,), (X, X))", "1 primals",
                 "2 tangents")
    expect_error(lambda: tg.jvp(f, X, X), "tg.jvp(f, X, X)", "tuples", "tg.jvp(f, (x,), (v,))")


# -- NumPy that tracegrad does not support -------------------------------------------------------
# each row: the name in the message, and the user's call (also the token locating its line)
@pytest.mark.parametrize("name,fn", [
    ("np.fix", lambda x: np.sum(np.fix(x))),
    ("np.putmask", lambda x: np.putmask(x * 1.0, x > 0, 0.0) or np.sum(x)),
    ("np.array_str", lambda x: len(np.array_str(x)) * np.sum(x)),
    ("np.common_type", lambda x: np.sum(x.astype(np.common_type(x, x)))),
], ids=lambda v: v if isinstance(v, str) else "")
def test_unsupported_numpy_function_is_named(name, fn):
    err = expect_error(lambda: tg.grad(fn)(V), f'("{name}", lambda',
                       f"{name} is not supported by tracegrad")
    assert str(err).startswith(name)


def test_unsupported_function_message_exactly():
    with pytest.raises(tg.TraceError) as info:
        tg.grad(lambda x: np.sum(np.fix(x)))(V)  # UNSUPPORTED_HERE
    assert str(info.value) == (f"np.fix is not supported by tracegrad. "
                               f"docs/numpy-coverage.md lists what is supported: write it with "
                               f"those functions, or call it on concrete values through "
                               f"tg.pure_callback(fn, result_shape_dtypes, *args) (no "
                               f"derivative through it unless you give one with "
                               f"tg.custom_vjp) (at test_errors.py:{line_of('UNSUPPORTED_HERE')})")


def test_unsupported_options():
    expect_error(lambda: tg.grad(lambda x: np.quantile(x, 0.5, method="weibull"))(X),
                 'method="weibull"', "quantile method 'weibull' is not supported")
    expect_error(lambda: tg.grad(lambda x: np.sum(np.pad(x, 1, mode="mean")))(X),
                 'mode="mean"', "np.pad(mode='mean') is not supported")
    # (the interleaved np.einsum(x, [0], []) is supported since issue 15: test_einsum_full.py)
    # ufunc methods work on traced arrays (test_ufunc_methods.py); writing into the
    # caller's plain array does not
    expect_error(lambda: tg.grad(lambda x: np.sum(np.add.at(V.copy(), [0], x[0]) or x))(V),
                 "np.add.at(V.copy(), [0], x[0])", "np.add.at(z, ...)", "plain NumPy array")
    expect_error(lambda: tg.grad(lambda x: np.sum(np.add.reduce(x, out=np.empty(()))))(V),
                 "np.add.reduce(x, out=np.empty(()))", "np.add.reduce(..., out=...)",
                 "assign the result")


# -- out= and friends ---------------------------------------------------------------------------
def test_out_keyword():
    # out= into the function's own arrays (an argument's tracer, a fresh np.empty) is
    # NumPy's write (test_fresh_arrays.py); into a caller's plain ndarray it is refused
    plain = np.empty(3)
    expect_error(lambda: tg.grad(lambda x: np.sum(np.exp(x, out=plain)))(V),
                 "np.exp(x, out=plain)", "out=z", "lose its gradient")
    expect_error(lambda: tg.grad(lambda x: np.sum(x, out=plain[0, ...]) * 1.0)(V),
                 "np.sum(x, out=plain[0, ...])", "np.sum(..., out=z)", "lose its gradient")
    expect_error(lambda: tg.grad(lambda x: np.sum(np.sin(x, where=x > 0)))(V),
                 "np.sin(x, where=x > 0)", "where=", "np.where")
    np.testing.assert_allclose(tg.grad(lambda x: np.sum(np.sin(x, out=x)))(V), np.cos(V))
    np.testing.assert_allclose(tg.grad(lambda x: np.sum(np.exp(x, out=np.empty(3))))(V),
                               np.exp(V))


# -- conversions that would lose the gradient --------------------------------------------------
@pytest.mark.parametrize("what,token,fn", [
    ("float()", "LOSE_FLOAT", lambda x: float(np.sum(x))),  # LOSE_FLOAT
    ("int()", "LOSE_INT", lambda x: int(np.sum(x)) * 1.0),  # LOSE_INT
    ("complex()", "LOSE_COMPLEX", lambda x: complex(np.sum(x)).real),  # LOSE_COMPLEX
    (".item()", "LOSE_ITEM", lambda x: np.sum(x).item()),  # LOSE_ITEM
    (".tolist()", "LOSE_TOLIST", lambda x: sum(x.tolist())),  # LOSE_TOLIST
    ("Converting to a NumPy array of dtype float64", "LOSE_ASARRAY",
     lambda x: np.sum(np.ascontiguousarray(x, float))),  # LOSE_ASARRAY
    ("Converting to a NumPy array of dtype float64", "LOSE_SCALAR",
     lambda x: np.float64(np.sum(x))),  # LOSE_SCALAR
], ids=lambda v: v if isinstance(v, str) and v.startswith("LOSE") else "")
def test_conversion_that_loses_the_gradient(what, token, fn):
    err = expect_error(lambda: tg.grad(fn)(V), f"# {token}", what, "lose its gradient",
                       "tg.stop_gradient")
    assert str(err).startswith(what)


def test_float_names_math_functions():
    # float() itself: the message also says what math.* does
    expect_error(lambda: tg.grad(lambda x: float(np.sum(x)))(V), "float(np.sum(x)))(V)",
                 "float()", "math.*", "np.sin(x)")


@pytest.mark.parametrize("name,instead,token,fn", [
    ("math.sin", "np.sin", "MATH_SIN", lambda x: math.sin(np.sum(x))),  # MATH_SIN
    ("math.exp", "np.exp", "MATH_EXP", lambda x: math.exp(x[0]) * 2.0),  # MATH_EXP
    ("math.pow", "np.power", "MATH_POW", lambda x: math.pow(x[1], 2)),  # MATH_POW
    ("math.fsum", "np.sum", "MATH_FSUM", lambda x: math.fsum(x)),  # MATH_FSUM
    ("math.lgamma", "scipy.special.gammaln", "MATH_LGAMMA",
     lambda x: math.lgamma(x[2])),  # MATH_LGAMMA
], ids=lambda v: v if isinstance(v, str) and v.startswith("math") else "")
def test_math_functions_on_a_traced_value_say_use_numpy(name, instead, token, fn):
    for transform in (tg.grad, lambda f: tg.jit(tg.grad(f))):
        err = expect_error(lambda: transform(fn)(V), f"# {token}", f"{name}(...) of a traced",
                           "Python float", f"use {instead} instead")
        assert str(err).startswith(name)
    # on a value with no gradient (an integer), math.* is NumPy's: no error
    assert tg.grad(lambda x, n: x * math.sqrt(n))(2.0, np.int64(4)) == 2.0


def test_tuple_returning_loss_is_told_about_has_aux():
    def loss(x):
        return np.sum(x ** 2), x * 2.0
    expect_error(lambda: tg.grad(loss)(V), "tg.grad(loss)(V)", "one scalar", "has_aux=True",
                 "tg.grad(f, has_aux=True) gives (grad, aux)")
    expect_error(lambda: tg.value_and_grad(loss)(V), "tg.value_and_grad(loss)(V)",
                 "has_aux=True", "((loss, aux), grad)")
    grads, aux = tg.grad(loss, has_aux=True)(V)
    np.testing.assert_array_equal(grads, 2 * V)
    np.testing.assert_array_equal(aux, 2 * V)
    # several outputs that are not (loss, aux): no has_aux advice
    err = expect_error(lambda: tg.grad(lambda x: (x, x))(V), "tg.grad(lambda x: (x, x))(V)",
                       "tg.jacobian")
    assert "has_aux" not in str(err)


def test_non_array_argument_to_jit_names_static_argnums():
    def scale(x, mode):
        return x * (2.0 if mode == "double" else 1.0)
    expect_error(lambda: tg.jit(scale)(V, "double"), 'tg.jit(scale)(V, "double")',
                 "argument 1 (mode) of scale is a str", "static_argnums=1",
                 "static_argnames='mode'")
    expect_error(lambda: tg.jit(scale)(V, mode="double"), 'tg.jit(scale)(V, mode="double")',
                 "argument mode= of scale is a str", "static_argnames='mode'")
    expect_error(lambda: tg.jit(lambda x, f: f(x))(V, np.sin), "tg.jit(lambda x, f: f(x))",
                 "is a ufunc", "static_argnums=1")
    np.testing.assert_array_equal(tg.jit(scale, static_argnums=1)(V, "double"), 2 * V)
    np.testing.assert_array_equal(tg.jit(scale, static_argnames="mode")(V, mode="double"),
                                  2 * V)


def test_writing_a_tracer_into_a_plain_ndarray():
    plain = np.zeros(3)             # the caller's array: the function did not make it

    def one_element(x):
        z = plain
        z[0] = np.sum(x)  # STORE_ONE
        return np.sum(z)

    # NumPy converts the value with float() and, on failure, raises its own
    # ValueError; ours is its cause and names the line and the way out.
    with pytest.raises(ValueError) as info:
        tg.grad(one_element)(V)
    cause = info.value.__cause__ if isinstance(info.value, tg.TraceError) is False else info.value
    assert isinstance(cause, tg.TraceError)
    check_message(cause, "STORE_ONE", "Writing a traced value into a plain NumPy array",
                  "np.zeros_like(x)")

    def a_slice(x):
        z = plain
        z[:2] = x[:2]  # STORE_SLICE
        return np.sum(z)
    expect_error(lambda: tg.grad(a_slice)(V), "STORE_SLICE",
                 "Writing a traced value into a plain NumPy array", "np.stack")

    def in_place_add(x):
        z = plain
        z += x  # IADD_PLAIN
        return np.sum(z)
    expect_error(lambda: tg.grad(in_place_add)(V), "IADD_PLAIN", "z += t", "z = z + t")
    np.testing.assert_array_equal(plain, 0.0)       # left as it was

    def fixed(x):                   # what the messages suggest works
        z = np.zeros_like(x)
        z[0] = np.sum(x)
        z[1:] += x[1:]
        w = np.zeros(3)             # an array the function makes is its own
        w[0] = np.sum(x)
        w[1:] += x[1:]
        return np.sum(z) + np.sum(w)
    np.testing.assert_array_equal(tg.grad(fixed)(V), [2.0, 4.0, 4.0])


def test_in_place_operator_that_numpy_refuses():
    def grows(x):
        z = x * 1.0
        z += np.ones((2, 3))  # GROWS_IN_PLACE
        return np.sum(z)
    expect_error(lambda: tg.grad(grows)(V), "GROWS_IN_PLACE", "non-broadcastable output",
                 "(3,)", "(2, 3)")

    def narrows(x):
        n = np.argmax(x) * np.ones(3, dtype=np.int64)
        n += x  # FLOAT_INTO_INT
        return np.sum(x)
    expect_error(lambda: tg.grad(narrows)(V), "FLOAT_INTO_INT", "same_kind", "x = x + y")


def test_copy_into_a_plain_ndarray():
    plain = np.ones(3)
    expect_error(lambda: tg.grad(lambda x: np.copyto(plain, x[0]) or np.sum(x))(V),
                 "np.copyto(plain, x[0])", "plain NumPy array", "lose its gradient",
                 "np.zeros_like(x)")
    np.testing.assert_array_equal(tg.grad(lambda x: np.sum(np.full_like(plain, x[0])))(V),
                                  [3.0, 0.0, 0.0])


def test_truth_value_of_an_array():
    expect_error(lambda: tg.grad(lambda x: np.sum(x) if x > 0 else 0.0)(V),
                 "if x > 0 else 0.0", "truth value", "any()")


def test_escaped_tracer():
    saved = []
    tg.grad(lambda x: (saved.append(x), np.sum(x))[1])(V)
    expect_error(lambda: np.sin(saved[0]), "np.sin(saved[0])", "escaped")
    expect_error(lambda: tg.grad(lambda y: np.sum(y * saved[0]))(V), "np.sum(y * saved[0])",
                 "escaped")


def test_escaped_tracer_given_to_a_graph():
    """A graph run on a tracer of a finished trace (``Graph.__call__``, a ``vjp_fn``)
    refuses it, naming the line, rather than inlining it into no trace."""
    saved = []
    tg.grad(lambda x: (saved.append(x), np.sum(x))[1])(V)
    _, pull_back = tg.vjp(lambda x: x * 2.0, V)
    graph = tg.trace(lambda x: x, V)
    expect_error(lambda: pull_back(saved[0]), "pull_back(saved[0])", "after the transform")
    expect_error(lambda: graph(saved[0]), "graph(saved[0])", "after the transform")
    np.testing.assert_allclose(pull_back(V)[0], 2.0 * V)


def test_graph_on_other_branch_names_the_condition():
    def f(x):
        if np.sum(x) > 0:  # THE_CONDITION
            return np.sum(x ** 2)
        return np.sum(x)
    graph = tg.trace(f, V)
    err = expect_error(lambda: graph(-V), "THE_CONDITION", "different branch", "True",
                       "False", "Trace the function again")
    assert "array(" not in str(err)


# -- custom_vjp misuse --------------------------------------------------------------------------
def test_custom_vjp_errors():
    @tg.custom_vjp
    def no_rule(x):
        return x * 2.0
    expect_error(lambda: tg.grad(lambda x: no_rule(x))(1.0), "tg.grad(lambda x: no_rule(x))(1.0)",
                 "no_rule", "defvjp")

    @tg.custom_vjp
    def bad_shape(x):
        return x * 2.0
    bad_shape.defvjp(lambda x: (x * 2.0, None), lambda res, g: (np.ones(5),))
    expect_error(lambda: tg.grad(lambda x: np.sum(bad_shape(x)))(V),
                 "np.sum(bad_shape(x)))(V)", "bad_shape", "shape (5,)", "(3,)")

    @tg.custom_vjp
    def not_a_tuple(x):
        return x * 2.0
    not_a_tuple.defvjp(lambda x: (x * 2.0, None), lambda res, g: g)
    expect_error(lambda: tg.grad(lambda x: np.sum(not_a_tuple(x)))(V),
                 "np.sum(not_a_tuple(x)))(V)", "not_a_tuple", "tuple")

    @tg.custom_vjp
    def f_fwd_only(x):
        return x
    f_fwd_only.defvjp(lambda x: (x, None), lambda res, g: (g,))
    expect_error(lambda: tg.jvp(lambda x: f_fwd_only(x) * 2.0, (V,), (V,)),
                 "f_fwd_only(x) * 2.0", "forward mode", "f_fwd_only")


def test_ndarray_attribute_that_is_not_traced():
    with pytest.raises(AttributeError) as info:      # hasattr() keeps working
        tg.grad(lambda x: np.sum(x.byteswap()))(V)  # NOT_TRACED_ATTRIBUTE
    msg = str(info.value)
    assert "ndarray.byteswap is not supported on traced values" in msg
    assert f"test_errors.py:{line_of('NOT_TRACED_ATTRIBUTE')}" in msg
    seen = []
    tg.grad(lambda x: (seen.append(hasattr(x, "byteswap")), np.sum(x))[1])(V)
    assert seen == [False]


def test_split_into_unequal_sections_is_refused_as_numpy_does():
    with pytest.raises(tg.TraceError, match=r"array split does not result in an equal "
                                            r"division \(3 into 2\)"):
        tg.grad(lambda x: np.sum(np.split(x, 2)[0]))(V)
    # array_split allows it: the first part is one longer
    np.testing.assert_array_equal(tg.grad(lambda x: np.sum(np.array_split(x, 2)[0]))(V),
                                  [1.0, 1.0, 0.0])
