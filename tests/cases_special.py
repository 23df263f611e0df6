"""``scipy.special`` primitives (``tracegrad/ir/prims/scipy_special.py``), one table row per
function: its operands' domain samplers. Each becomes cases over a few shapes (broadcast
ones for the binary functions) and float32 once; ``test_primitives.py`` checks them
against SciPy's values, ``jax.scipy.special``'s gradients (x64) and central finite
differences, to second order for the first shape of each.

Where ``jax.scipy.special`` lacks a function (the Bessel functions, the inverse incomplete
gamma functions), the JAX twin calls SciPy on the host, with derivatives in x from
SciPy's own derivative functions (``jvp``, ``yvp``, ``ivp``, ``kvp``) through
``jax.custom_jvp``: an oracle independent of tracegrad's recurrences, to any order."""
import numpy as np

from primitive_cases import Case, add, away, off_grid, uniform


def _in(lo, hi):
    return lambda shape: uniform(shape, lo, hi)


def _orders(shape):
    """polygamma's order n: integers 0..2 (not differentiated)."""
    return np.asarray(np.arange(np.prod(shape, dtype=int)) % 3).reshape(shape).astype(np.int64)


SPECIAL = {
    "gammaln": (_in(0.3, 4.0),),
    "digamma": (_in(0.3, 4.0),),
    "gamma": (_in(0.3, 3.0),),
    "polygamma": (_orders, _in(0.5, 3.0)),
    "beta": (_in(0.5, 3.0), _in(0.5, 3.0)),
    "betaln": (_in(0.5, 3.0), _in(0.5, 3.0)),
    "erf": (uniform,),
    "erfc": (uniform,),
    "erfinv": (_in(-0.9, 0.9),),
    "erfcinv": (_in(0.1, 1.9),),
    "ndtr": (uniform,),
    "ndtri": (_in(0.05, 0.95),),
    "log_ndtr": (_in(-5.0, 3.0),),
    "expit": (_in(-4.0, 4.0),),
    "logit": (_in(0.05, 0.95),),
    "xlogy": (uniform, _in(0.5, 3.0)),
    "xlog1py": (uniform, _in(-0.5, 2.0)),
    "i0": (uniform,),
    "i1": (uniform,),
    # exp(-|x|) makes a kink at 0: away from it
    "i0e": (away,),
    "i1e": (away,),
    "entr": (_in(0.2, 3.0),),
    "rel_entr": (_in(0.2, 3.0), _in(0.2, 3.0)),
    "kl_div": (_in(0.2, 3.0), _in(0.2, 3.0)),
    "exp1": (_in(0.2, 3.0),),
    "expi": (_in(0.2, 3.0),),
    "erfcx": (_in(-2.0, 3.0),),
    "poch": (_in(0.5, 3.0), _in(0.2, 2.0)),
}


def _lgammas(*signed):
    """sum_k s_k log Γ(args...): jax.scipy's gammaln, whose derivatives are its digamma and
    polygamma rules (positive operands only)."""
    def fn(*ops):
        import jax.scipy.special as jsp
        return sum(s * jsp.gammaln(sum(ops[i] for i in idx)) for s, idx in signed)
    return fn


# The derivative references where JAX's derivatives of the lowering (SciPy's every-branch
# Cephes algorithm, all branches computed and selected) take seconds to compile: the
# textbook formulas on these cases' positive domains, through JAX's own derivative rules.
_LBETA = _lgammas((1, (0,)), (1, (1,)), (-1, (0, 1)))
_LPOCH = _lgammas((1, (0, 1)), (-1, (0,)))


def _exp(fn):
    def exp_fn(*ops):
        import jax.numpy as jnp
        return jnp.exp(fn(*ops))
    return exp_fn


def _ei(sign):
    """jax.scipy's Ei(x), or E1(x) = -Ei(-x) (x > 0): the lowerings run SciPy on the host,
    which JAX does not differentiate."""
    def fn(x):
        import jax.scipy.special as jsp
        return sign * jsp.expi(sign * x)
    return fn


DERIV_REFS = {"beta": _exp(_LBETA), "betaln": _LBETA, "poch": _exp(_LPOCH),
              "expi": _ei(1.0), "exp1": _ei(-1.0)}
UNARY = [(2, 3), ()]
BINARY = [((2, 1), (1, 3)), ((), (2, 3))]

for _name, _domains in SPECIAL.items():
    for _k, _shapes in enumerate(UNARY if len(_domains) == 1 else BINARY):
        _shapes = (_shapes,) if len(_domains) == 1 else _shapes
        add(Case(_name, tuple(d(s) for d, s in zip(_domains, _shapes)), second=_k == 0,
                 jax_deriv_fn=DERIV_REFS.get(_name)))
    if _name != "polygamma":    # an integer order with float32 x: SciPy computes in float64
        add(Case(_name, tuple(d((2,)).astype(np.float32) for d in _domains), tag="f32",
                 jax_deriv_fn=DERIV_REFS.get(_name)))

# the tails: log_ndtr far below zero (where log(ndtr(x)) underflows), ndtri near 0 and 1
add(Case("log_ndtr", (np.array([-30.0, -12.0, 6.0]),), tag="tails"))
add(Case("ndtri", (np.array([1e-6, 0.5, 1.0 - 1e-4]),), tag="tails", fd=False))
# xlogy(0, y) is 0 whatever y; its derivative in y is 0 there too
add(Case("xlogy", (np.array([0.0, 1.5]), np.array([0.5, 2.0])), tag="zero-x"))
# i1(x)/x -> 1/2 at 0: i1's derivative at 0 (i0's second derivative) is finite
add(Case("i1", (np.array([0.0, 0.7]),), tag="at-zero", fd=False))


# -- incomplete gamma and beta -------------------------------------------------------------------
def _jax():
    import jax
    return jax


def _jsp():
    import jax.scipy.special as jsp
    return jsp


def _jnp():
    import jax.numpy as jnp
    return jnp


def _host(fn):
    """SciPy's ``fn`` called from JAX (its result in the dtype of the last operand, x or y:
    the order of a Bessel function may be a float64 number)."""
    def call(*args):
        jax = _jax()
        dtype = np.dtype(args[-1].dtype)
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
        return jax.pure_callback(lambda *xs: np.asarray(fn(*xs), dtype),
                                 jax.ShapeDtypeStruct(shape, dtype), *args,
                                 vmap_method="broadcast_all")
    return call


def _twin_in_x(derivative, order=0):
    """A JAX function of (v, x) whose k-th derivative in x is SciPy's
    ``derivative(v, x, k)`` (v not differentiated)."""
    jax = _jax()
    f = jax.custom_jvp(_host(lambda v, x: derivative(v, x, order)))
    f.defjvp(lambda primals, tangents: (f(*primals),
                                        _twin_in_x(derivative, order + 1)(*primals) * tangents[1]))
    return f


def _density(a, x):
    jnp, jsp = _jnp(), _jsp()
    return jnp.exp(jsp.xlogy(a - 1.0, x) - x - jsp.gammaln(a))


def _gammainc_da_twin(a, x):
    """JAX's igamma_grad_a, differentiable in x (JAX's is not): d/dx ∂P/∂a = ∂/∂a ∂P/∂x."""
    jax, jnp, jsp = _jax(), _jnp(), _jsp()
    f = jax.custom_jvp(lambda a, x: jax.lax.igamma_grad_a(a, x))
    f.defjvp(lambda p, t: (f(*p), _density(*p) * (jnp.log(p[1]) - jsp.digamma(p[0])) * t[1]))
    return f(a, x)


def _gammaincinv_twin(name):
    """SciPy's inverse, differentiated in y by the implicit function theorem on JAX's
    gammainc: dx/dy = ±1/(∂P/∂x)."""
    import scipy.special as ss
    jax = _jax()
    sign = 1.0 if name == "gammaincinv" else -1.0
    f = jax.custom_jvp(_host(getattr(ss, name)))

    def rule(p, t):
        x = f(*p)
        return x, sign * t[1] / _density(p[0], x)
    f.defjvp(rule)
    return f


def _cases(name, domains, diff=None, jax_fn=None, f32=True, **kw):
    """One case per shape (broadcast ones for several operands), the first to second order
    too, and float32 once."""
    shapes = {1: [((2, 3),), ((),)], 2: BINARY, 3: [((2, 1), (1, 3), (2, 3)), ((), (), (2, 3))]}
    jkw = {} if jax_fn is None else {"jax_fn": jax_fn}
    for k, shape in enumerate(shapes[len(domains)]):
        args = tuple(d(s) for d, s in zip(domains, shape))
        add(Case(name, args, diff=diff, second=k == 0, **jkw, **kw))
    if f32:
        add(Case(name, tuple(d((2,)).astype(np.float32) for d in domains), diff=diff, tag="f32",
                 **jkw, **kw))


# Differentiated in x only: the derivative in a has no derivative in a again (nor in JAX),
# and the crossings take every case to second order in every subset of its operands; the
# derivatives in a are checked in test_scipy_special.py (JAX, SciPy's finite differences).
# Both sides of x = max(a, 1), where the a-derivative switches from series to fraction.
_cases("gammainc", (_in(0.5, 4.0), _in(0.2, 6.0)), diff=(1,))
_cases("gammaincc", (_in(0.5, 4.0), _in(0.2, 6.0)), diff=(1,))
_cases("gammainc_da", (_in(0.5, 4.0), _in(0.2, 6.0)), diff=(1,), jax_fn=_gammainc_da_twin)
add(Case("gammainc_da", (np.array([0.3, 2.0, 10.0, 50.0, 100.0, 200.0, 1.2, 5.0]),
                         np.array([0.01, 1.5, 30.0, 60.0, 99.0, 250.0, 50.0, 1e-3])),
         diff=(1,), jax_fn=_gammainc_da_twin, tag="wide", fd=False))
for _name in ("gammaincinv", "gammainccinv"):
    _cases(_name, (_in(0.5, 4.0), _in(0.1, 0.9)), diff=(1,),
           jax_fn=(lambda n: lambda a, y: _gammaincinv_twin(n)(a, y))(_name))
_cases("betainc", (_in(0.5, 3.0), _in(0.5, 3.0), _in(0.1, 0.9)), diff=(2,))
_cases("zeta", (_in(2.0, 4.0), _in(0.5, 3.0)), diff=(1,))


# -- Bessel functions ------------------------------------------------------------------------------
def _bessel(derivative, v=None):
    """The twin of a Bessel function of x (order ``v`` fixed) or of (v, x)."""
    if v is None:
        return lambda v, x: _twin_in_x(derivative)(v, x)
    return lambda x: _twin_in_x(derivative)(np.float64(v), x)


def _scaled(twin, sign):
    """exp(-|x|)·f (sign -1, ive) or exp(x)·f (sign +1, kve) of a twin of (v, x)."""
    def f(*args):
        jnp = _jnp()
        x = args[-1]
        scale = jnp.exp(x) if sign > 0 else jnp.exp(-jnp.abs(x))
        return scale * twin(*args)
    return f


def _bessel_twins():
    import scipy.special as ss
    return {
        "j0": _bessel(ss.jvp, 0), "j1": _bessel(ss.jvp, 1), "y0": _bessel(ss.yvp, 0),
        "y1": _bessel(ss.yvp, 1), "k0": _bessel(ss.kvp, 0), "k1": _bessel(ss.kvp, 1),
        "k0e": _scaled(_bessel(ss.kvp, 0), 1), "k1e": _scaled(_bessel(ss.kvp, 1), 1),
        "jv": _bessel(ss.jvp), "yv": _bessel(ss.yvp), "yn": _bessel(ss.yvp),
        "iv": _bessel(ss.ivp), "kv": _bessel(ss.kvp),
        "ive": _scaled(_bessel(ss.ivp), -1), "kve": _scaled(_bessel(ss.kvp), 1),
    }


def _twin(name):
    return lambda *args: _bessel_twins()[name](*args)


for _name in ("j0", "j1"):
    _cases(_name, (_in(-6.0, 6.0),), jax_fn=_twin(_name))
for _name in ("y0", "y1", "k0", "k1", "k0e", "k1e"):
    _cases(_name, (_in(0.3, 6.0),), jax_fn=_twin(_name))
for _name in ("jv", "yv", "iv", "ive", "kv", "kve"):
    # orders of both signs (jv, iv: through zero; yv, kv: fine for any real order)
    _cases(_name, (_in(-1.5, 2.5), _in(0.3, 4.0)), diff=(1,), jax_fn=_twin(_name))
_cases("yn", (_orders, _in(0.3, 4.0)), jax_fn=_twin("yn"), f32=False)
# j1(x)/x -> 1/2 at 0
add(Case("j1", (np.array([0.0, 0.7]),), tag="at-zero", fd=False, jax_fn=_twin("j1")))


# -- 1/Γ and the sign of Γ ----------------------------------------------------------------------
def _off_poles(shape):
    """Both signs, away from Γ's poles at 0, -1, -2, ..."""
    return off_grid(shape, 1.0) * 0.5


_cases("rgamma", (_off_poles,))
# at the poles 1/Γ is 0 and its slope (-1)^n n!: JAX's twin is a where, no oracle there
add(Case("rgamma", (np.array([0.0, -1.0, -2.0, 1.5]),), tag="poles", jax_derivs=False))
add(Case("gammasgn", (_off_poles((2, 3)),)))
add(Case("gammasgn", (_off_poles((2,)).astype(np.float32),), tag="f32"))
