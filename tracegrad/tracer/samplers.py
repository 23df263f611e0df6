"""NumPy's samplers that are an exact transform of a standard one, called with a parameter
being differentiated: ``rng.normal(mu, sigma, size=n)`` gives NumPy's own numbers (the
very array its sampler filled, from the user's generator, which advances exactly as
without tracegrad) as a traced value whose derivative is the reparameterised one.

NumPy's sampler is C code: it converts its parameters to plain numbers
(``Tracer.__array__``, and ``__float__`` for 0-d ones) and makes its output with
``np.empty``, which tracegrad's wrapper answers while a thread traces (``elements.py``).
So a conversion of a traced parameter inside such a call records the call as *pending*
(per thread); the ``np.empty`` that follows answers with a ``SampleArray``: NumPy's array,
which NumPy fills as usual, carrying the traced change of the sample with its parameters.
Before answering, the standard sample behind it (``standard_normal``, ``random``,
``gumbel(0, 1)``, ...) is drawn from a copy of the generator in the state the sampler
starts from: the same numbers NumPy's sampler transforms (checked bit for bit in
``tests/test_random_reparameterised.py``).

Each sampler here is affine in its parameters, ``x = a(z) + sum_p b_p(z) * p``, so the
traced sample is ``x - sum_p b_p(z) * (stop_gradient(p) - p)``: NumPy's values, bit for
bit, and the derivatives of every order of the transform. (The sum is a zero, ``+0.0``
unless every term is ``-0.0``, and ``x - (+0.0)`` is ``x``, ``-0.0`` included.)
``lognormal`` is ``exp`` of such a transform (C's ``exp``, which ``np.exp`` need not
match in the last bit), so its traced sample is ``x * exp(sum_p b_p(z) * (p -
stop_gradient(p)))``: ``x * 1.0``, and again every derivative. The
``SampleArray`` becomes that traced value wherever it meets NumPy (``__array_ufunc__``,
``__array_function__``), a traced operation, indexing, a method or a conversion, or is
returned; after the transform, it is the plain array of NumPy's numbers.

Where NumPy's sampler makes no array (scalar parameters without ``size``: a Python float;
a one-parameter sampler's array parameter without ``size``: an array made in C), the call
is refused before anything is drawn, with what to write instead.
"""
from __future__ import annotations

import ast
import copy

import numpy as np

from ..errors import TraceError
from ..ir import apply
from ..ir.source import user_frame, where
from .calls import _MISSING, _call_node, _lookup
from .state import LOCAL

_LOC_SCALE = ("loc", "scale")
# name -> (its parameters, in the order NumPy converts them; the standard sample)
SAMPLERS = {
    "normal": (_LOC_SCALE, "standard_normal"),
    "gumbel": (_LOC_SCALE, "gumbel"),
    "laplace": (_LOC_SCALE, "laplace"),
    "logistic": (_LOC_SCALE, "logistic"),
    "uniform": (("low", "high"), "uniform"),
    "exponential": (("scale",), "standard_exponential"),
    "rayleigh": (("scale",), "rayleigh"),
    "lognormal": (("mean", "sigma"), "standard_normal"),     # exp of normal's
}
# the samplers that are exp of an affine transform: exp(mean + sigma * z)
_EXP = {"lognormal"}


def _standard(rng, name, shape):
    """The standard sample NumPy's ``name`` transforms, drawn from ``rng``."""
    if name in ("normal", "lognormal"):
        return rng.standard_normal(shape)
    if name == "uniform":
        return rng.random(shape) if isinstance(rng, np.random.Generator) \
            else rng.random_sample(shape)
    if name == "exponential":
        return rng.standard_exponential(shape)
    if name == "rayleigh":
        return rng.rayleigh(1.0, shape)
    return getattr(rng, name)(0.0, 1.0, shape)     # gumbel, laplace, logistic


def _coefficients(name, z):
    """Parameter name -> d sample / d parameter (the sample, or its log, is affine in
    them)."""
    if name == "lognormal":
        return {"mean": 1.0, "sigma": z}
    if name == "uniform":
        return {"low": 1.0 - z, "high": z}
    if name in ("exponential", "rayleigh"):
        return {"scale": z}
    return {"loc": 1.0, "scale": z}


class _Pending:
    """A reparameterisable sampler being called by the user's line, and the traced
    parameters it converted so far (``(tracer, differentiated)``, in its order)."""

    __slots__ = ("frame", "lasti", "callee", "name", "text", "events", "classes")

    def __init__(self, frame, callee, name, text):
        self.frame, self.lasti = frame, frame.f_lasti
        self.callee, self.name, self.text = callee, name, text
        self.events = []
        self.classes = None     # _classify's answer

    def here(self):
        frame = user_frame()
        return frame is self.frame and frame.f_lasti == self.lasti


def handles(callee) -> bool:
    """Whether ``callee`` is a NumPy sampler this module differentiates."""
    return getattr(callee, "__name__", "") in SAMPLERS and isinstance(
        getattr(callee, "__self__", None), (np.random.Generator, np.random.RandomState))


def _refuse(pending, why):
    LOCAL.sampling = None
    name = pending.name
    params = SAMPLERS[name][0]
    raise TraceError(f"{pending.text}(...) with a parameter being differentiated: {why}. "
                     f"tracegrad differentiates {name}({', '.join(params)}, size) where "
                     f"NumPy's sampler fills an array it makes; nothing was drawn"
                     f"{where()}")


def parameter(tracer, callee, text, differentiated, batching):
    """``Tracer.__array__`` of a parameter of sampler ``callee`` (one ``handles`` says
    yes to): record it in the call pending; raises a TraceError (before anything is
    drawn) for a call whose sample could not be followed."""
    frame = user_frame()
    pending = getattr(LOCAL, "sampling", None)
    params = SAMPLERS[callee.__name__][0]
    if pending is None or pending.frame is not frame or pending.lasti != frame.f_lasti \
            or pending.callee != callee or len(pending.events) >= len(params):
        pending = LOCAL.sampling = _Pending(frame, callee, callee.__name__, text)
    pending.events.append((tracer, differentiated))
    if not differentiated:
        return
    if batching:
        _refuse(pending, "tg.vmap traces one example for the whole batch, and a sampler "
                         "draws for one. Draw the batch's numbers outside tg.vmap and pass "
                         "them in, or write loc + scale * z with z drawn outside")
    if tracer._value is None:
        _refuse(pending, "its value is only known abstractly here (inside a loop body or "
                         "a graph transformation)")
    _classify(pending)
    if len(params) == 1 and _size_given(pending) is not True:
        # one parameter, no size: NumPy makes the sample (or a float) in C
        _refuse(pending, "without size=, NumPy's one-parameter sampler makes its sample "
                         "in compiled code (or returns a Python float), where tracegrad "
                         "cannot follow it. Pass size= explicitly, e.g. size=np.shape(scale)"
                         " (as a literal or a name, so that tracegrad can read it)")


def scalar_parameter(tracer) -> bool:
    """``float()`` of a 0-d traced parameter by the sampler pending: NumPy takes its
    scalar path, which makes an array only when ``size`` is given. True when allowed."""
    pending = getattr(LOCAL, "sampling", None)
    if pending is None or not pending.here() or \
            not any(t is tracer for t, _ in pending.events):
        return False
    if not any(d for _, d in pending.events):
        return True
    if _size_given(pending) is not True:
        _refuse(pending, "with scalar parameters and no size, NumPy's sampler returns a "
                         "Python float, which cannot carry a derivative. Pass size=() for "
                         "a 0-d array (or size=n), as a literal or a name")
    return True


def _arguments(pending):
    """Parameter name (and "size") -> the argument's expression on the user's line;
    None when the call cannot be read (``*args``, ``**kwargs``, no source)."""
    call = _call_node(pending.frame)
    if call is None:
        return None
    names = SAMPLERS[pending.name][0] + ("size",)
    out = {}
    for k, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if k < len(names):
            out[names[k]] = arg
    for kw in call.keywords:
        if kw.arg is None:
            return None
        out[kw.arg] = kw.value
    return out


def _size_given(pending):
    """True when the call's ``size`` is given (not None), False when it is not, None
    when its expression cannot be read without running the user's code."""
    args = _arguments(pending)
    if args is None:
        return None
    expr = args.get("size")
    if expr is None:
        return False
    if isinstance(expr, ast.Constant):
        return expr.value is not None
    if isinstance(expr, (ast.Tuple, ast.List)):
        return True
    value = _lookup(expr, pending.frame)
    return None if value is _MISSING else value is not None


def _is_tracer(x):
    return hasattr(x, "_trace") and hasattr(x, "_node")


_LISTS = (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp, ast.Set)


def _classify(pending):
    """``(known, unknown)``: the parameters whose argument is a traced value the user's
    frame names (parameter -> it), and those whose argument cannot be told without
    running the user's code (an expression: ``mu * 2``). The rest are plain. A list of
    values is refused: NumPy converts it element by element, as it converts parameters."""
    if pending.classes is not None:
        return pending.classes
    args = _arguments(pending)
    if args is None:
        _refuse(pending, "tracegrad could not read which argument is the traced one "
                         "(*args or **kwargs)")
    known, unknown = {}, []
    for p in SAMPLERS[pending.name][0]:
        expr = args.get(p)
        if expr is None or isinstance(expr, ast.Constant):
            continue
        value = _MISSING if isinstance(expr, _LISTS) else _lookup(expr, pending.frame)
        if isinstance(expr, _LISTS) or isinstance(value, (list, tuple)) or (
                isinstance(value, np.ndarray) and value.dtype.kind == "O"):
            _refuse(pending, f"its {p} is a list, which NumPy converts element by element. "
                             f"Write np.stack([...]) or np.array([...]) for it")
        if value is _MISSING:
            unknown.append(p)
        elif _is_tracer(value):
            known[p] = value
        elif not isinstance(value, (np.ndarray, np.generic, int, float)) or \
                type(value) is SampleArray:
            unknown.append(p)
        # else a plain number or array: converted without tracegrad
    pending.classes = known, unknown
    return pending.classes


def _mapping(pending):
    """Parameter name -> the traced parameter converted for it (None: a plain one)."""
    known, unknown = _classify(pending)
    out = dict.fromkeys(SAMPLERS[pending.name][0])
    left = [t for t, _ in pending.events]
    for p, t in known.items():          # (a constant tracer is converted without an event)
        for k, e in enumerate(left):
            if e is t:
                out[p] = left.pop(k)
                break
    if left and len(left) != len(unknown):
        _refuse(pending, "tracegrad could not tell which parameter the traced value is. "
                         "Name it (loc=mu) or pass it as a variable")
    for p, t in zip(unknown, left):
        out[p] = t
    return out


def output(empty, args, kwargs):
    """``np.empty`` called by the sampler pending, for its output: a ``SampleArray``;
    None when no call is pending here (NumPy's own ``np.empty`` then)."""
    pending = LOCAL.sampling
    if not pending.here():
        return None
    LOCAL.sampling = None
    differentiated = {id(t) for t, d in pending.events if d}
    if not differentiated:
        return None
    mapping = _mapping(pending)
    out = empty(*args, **kwargs)
    # the standard sample NumPy's sampler is about to transform: drawn from a copy of
    # the generator as it is now (NumPy draws from the user's generator itself)
    z = _standard(copy.deepcopy(pending.callee.__self__), pending.name, out.shape)
    delta = None
    for p, coef in _coefficients(pending.name, z).items():
        t = mapping.get(p)
        if t is None or id(t) not in differentiated:
            continue
        # zero, with derivative minus one with respect to the parameter
        term = np.multiply(coef, np.subtract(apply("stop_gradient", t), t))
        delta = term if delta is None else np.add(delta, term)
    if delta is None:
        return out
    sample = out.view(SampleArray)
    sample._tg_delta = delta
    sample._tg_exp = pending.name in _EXP
    # flagged unaligned (its memory is not): NumPy's C code that is handed it as an
    # operand (another sampler's parameter) copies it, which __array_finalize__ refuses,
    # where it would otherwise read its numbers silently
    sample.flags.aligned = False
    LOCAL.samples = True
    return sample


def traced(x):
    """``x``, or the traced value a ``SampleArray`` stands for."""
    return x.traced() if type(x) is SampleArray else x


def untangle(obj, depth=0):
    """``obj`` with every ``SampleArray`` in it (in lists, tuples, dicts) traced."""
    t = type(obj)
    if t is SampleArray:
        return obj.traced()
    if depth < 8:
        if t in (list, tuple):
            return t(untangle(x, depth + 1) for x in obj)
        if t is dict:
            return {k: untangle(v, depth + 1) for k, v in obj.items()}
    return obj


def holds_sample(obj, depth=0) -> bool:
    t = type(obj)
    if t is SampleArray:
        return True
    if depth < 8:
        if t in (list, tuple):
            return any(holds_sample(x, depth + 1) for x in obj)
        if t is dict:
            return any(holds_sample(x, depth + 1) for x in obj.values())
    return False


_HOW = ("it stands for a traced value (a sample differentiated with respect to its "
        "parameters); compute with it through NumPy's functions and operators")


class SampleArray(np.ndarray):
    """The array NumPy's sampler filled, standing for the traced sample (see the module's
    docstring). Every use goes through ``traced()``."""

    _tg_delta = None
    _tg_traced = None
    _tg_exp = False

    def __array_finalize__(self, obj):
        if type(obj) is SampleArray and obj._live():
            raise TraceError(f"a sample drawn with a differentiated parameter, handed to "
                             f"NumPy's compiled code as an array (another sampler's "
                             f"parameter, or a view of it): {_HOW}. For a sample whose "
                             f"parameter is a sample, write loc + scale * "
                             f"rng.standard_normal(size){where()}")

    def _live(self):
        """Whether the transform that drew it is still running (after it, the sample is
        the plain array of NumPy's numbers)."""
        delta = self._tg_delta
        return delta is not None and delta._trace.active

    def traced(self):
        if not self._live():
            return np.array(self.view(np.ndarray))
        t = self._tg_traced
        if t is None:
            x = np.array(self.view(np.ndarray))
            if self._tg_exp:            # x * exp(+-0.0): x, bit for bit
                t = np.multiply(x, np.exp(np.negative(self._tg_delta)))
            else:
                t = np.subtract(x, self._tg_delta)
            self._tg_traced = t
        return t

    def _set(self, t):
        """This sample now holds ``t`` (an in-place write); NumPy's buffer follows."""
        self._tg_traced = t
        if getattr(t, "_value", None) is not None:
            np.copyto(self.view(np.ndarray), t._value, casting="unsafe")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out")
        inputs = untangle(inputs)
        if out is not None:
            mine = [o for o in out if type(o) is SampleArray]
            if mine:
                if len(out) != 1 or method != "__call__":
                    raise TraceError(f"out= of {ufunc.__name__}.{method} into a sample: "
                                     f"{_HOW}{where()}")
                kwargs = {k: v for k, v in kwargs.items() if k != "out"}
                result = ufunc(*inputs, **kwargs)
                mine[0]._set(np.add(result, np.zeros(mine[0].shape)) if
                             np.shape(result) != mine[0].shape else result)
                return mine[0]
            kwargs["out"] = untangle(out)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return func(*untangle(args), **untangle(kwargs))

    def __getitem__(self, index):
        return self.traced()[untangle(index)]

    def __setitem__(self, index, value):
        t = self.traced()
        t[untangle(index)] = untangle(value)
        self._set(t)

    def __iter__(self):
        return iter(self.traced())

    def __float__(self):
        return float(self.traced())

    def __int__(self):
        return int(self.traced())

    def __complex__(self):
        return complex(self.traced())

    def __bool__(self):
        return bool(self.traced())

    def __index__(self):
        return self.traced().__index__()

    def __repr__(self):
        return repr(self.view(np.ndarray))

    def __str__(self):
        return str(self.view(np.ndarray))

    def __copy__(self):
        return np.copy(self.traced())

    def __deepcopy__(self, memo):
        return np.copy(self.traced())

    def __reduce_ex__(self, protocol):
        if not self._live():
            return self.traced().__reduce_ex__(protocol)
        raise TraceError(f"pickling a sample drawn with a differentiated parameter: "
                         f"{_HOW}{where()}")

    __hash__ = None


def _delegated(name):
    def get(self):
        t = self.traced()
        try:
            return getattr(t, name)
        except AttributeError:
            raise TraceError(f".{name} of a sample drawn with a differentiated parameter: "
                             f"{_HOW}{where()}") from None
    get.__name__ = name
    return property(get)


# ndarray's own attributes that the sample keeps (its shape and type); every other public
# one (methods, .T, .real, .flat, ...) is the traced value's
_KEPT = {"shape", "dtype", "ndim", "size", "itemsize", "nbytes", "strides", "flags",
         "base", "data", "ctypes", "view", "setflags", "traced"}
for _name in dir(np.ndarray):
    if not _name.startswith("_") and _name not in _KEPT:
        setattr(SampleArray, _name, _delegated(_name))
del _name
