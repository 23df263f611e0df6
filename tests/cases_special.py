"""``scipy.special`` primitives (``tracegrad/ir/prims/scipy_special.py``), one table row per
function: its operands' domain samplers. Each becomes cases over a few shapes (broadcast
ones for the binary functions) and float32 once; ``test_primitives.py`` checks them
against SciPy's values, ``jax.scipy.special``'s gradients (x64) and central finite
differences, to second order for the first shape of each."""
import numpy as np

from primitive_cases import Case, add, away, uniform


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
}
UNARY = [(2, 3), ()]
BINARY = [((2, 1), (1, 3)), ((), (2, 3))]

for _name, _domains in SPECIAL.items():
    for _k, _shapes in enumerate(UNARY if len(_domains) == 1 else BINARY):
        _shapes = (_shapes,) if len(_domains) == 1 else _shapes
        add(Case(_name, tuple(d(s) for d, s in zip(_domains, _shapes)), second=_k == 0))
    if _name != "polygamma":    # an integer order with float32 x: SciPy computes in float64
        add(Case(_name, tuple(d((2,)).astype(np.float32) for d in _domains), tag="f32"))

# the tails: log_ndtr far below zero (where log(ndtr(x)) underflows), ndtri near 0 and 1
add(Case("log_ndtr", (np.array([-30.0, -12.0, 6.0]),), tag="tails"))
add(Case("ndtri", (np.array([1e-6, 0.5, 1.0 - 1e-4]),), tag="tails", fd=False))
# xlogy(0, y) is 0 whatever y; its derivative in y is 0 there too
add(Case("xlogy", (np.array([0.0, 1.5]), np.array([0.5, 2.0])), tag="zero-x"))
# i1(x)/x -> 1/2 at 0: i1's derivative at 0 (i0's second derivative) is finite
add(Case("i1", (np.array([0.0, 0.7]),), tag="at-zero", fd=False))
