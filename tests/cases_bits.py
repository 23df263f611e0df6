"""The representation ufuncs (``tracegrad/ir/prims/bits.py``): ``copysign``, ``ldexp``,
``frexp``, ``modf``, ``signbit``, ``nextafter``, ``spacing``, ``gcd``, ``lcm``, the shifts
and ``bitwise_count``. Checked by ``test_primitives.py`` against NumPy (the impl), the JAX
lowering (``jnp.<name>``), JAX's derivatives in x64 and central finite differences, by
``test_backends.py`` and the JSON tests through the JAX backend and the round trip.

The operands are away from the jumps (``copysign`` away from 0, ``frexp``'s exponent and
``modf``'s integer part locally constant, ``spacing`` away from powers of 2), plus value
cases at the special points: signed zeros, infinities and NaN. ``nextafter`` moves ``x``
by one unit in the last place, so its derivative in ``x`` is 1 (finite differences
agree); JAX has no derivative for it, so its twin is ``x`` plus the step held constant."""
import numpy as np

from primitive_cases import Case, add, away, uniform

_specials = np.array([0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, 3.0])


def _lowering(name, k):
    """Output ``k`` of the primitive's JAX lowering (``modf``'s mends jnp.modf at infinity)."""
    def fn(x):
        from tracegrad.ir import REGISTRY
        return REGISTRY[name].jax(x)[k]
    return fn


# copysign: |x| with y's sign
for _sx, _sy in [((2, 3), (2, 3)), ((2, 1), (1, 3)), ((), (3,)), ((0, 2), (2,))]:
    add(Case("copysign", (away(_sx), away(_sy)), second=_sx == (2, 3)))
add(Case("copysign", (away((2, 2)).astype(np.float32), away((2,)).astype(np.float32))))
add(Case("copysign", (_specials, _specials[::-1].copy()), tag="specials", derivs=False))
add(Case("copysign", (np.array([3, -2, 0]), np.array([-1.0, 1.0, -0.0])), tag="int-x"))

# ldexp: x * 2**e, e an integer operand
_e = np.array([[-3, 0, 2], [5, -1, 1]])
add(Case("ldexp", (uniform((2, 3)), _e), second=True))
add(Case("ldexp", (uniform((3,)), _e), tag="broadcast"))
add(Case("ldexp", (uniform(()), np.int64(4)), tag="0d"))
add(Case("ldexp", (uniform((2, 3)).astype(np.float32), _e.astype(np.int32)), tag="f32"))
add(Case("ldexp", (np.array([1, -3, 7]), np.array([2, 3, -1])), tag="int-x"))
add(Case("ldexp", (_specials, np.arange(8) - 4), tag="specials", derivs=False))



def _jax_nextafter(x, y):
    """JAX's twin with a derivative: x plus the (exact) step to the next float, the step
    held constant; the same value as jnp.nextafter to the bit."""
    import jax
    import jax.numpy as jnp
    xs, ys = jax.lax.stop_gradient(x), jax.lax.stop_gradient(y)
    return x + (jnp.nextafter(xs, ys) - xs)


# nextafter: the next float towards y (y never equal to x: the step is one ulp)
add(Case("nextafter", (uniform((2, 3)), uniform((2, 3), 3.0, 4.0)), jax_fn=_jax_nextafter,
         second=True))
add(Case("nextafter", (uniform((3,)), np.float64(-np.inf)), jax_fn=_jax_nextafter, tag="down"))
add(Case("nextafter", (uniform((2, 2)).astype(np.float32), np.float32(5.0)),
         jax_fn=_jax_nextafter))
add(Case("nextafter", (_specials, np.zeros(8)), tag="specials", derivs=False))

# spacing: piecewise constant (away from powers of two)
add(Case("spacing", (np.array([[1.3, -2.7, 5.5], [0.3, -0.7, 100.1]]),), jax_derivs=False))
add(Case("spacing", (np.array([1.3, 3.0], np.float32),), jax_derivs=False))
add(Case("spacing", (_specials,), tag="specials", derivs=False))
add(Case("spacing", (np.array([1, -4, 0]),), tag="int"))

add(Case("signbit", (_specials,)))
add(Case("signbit", (np.array([[3, -1], [0, -7]]),)))
add(Case("signbit", (np.float32(-0.0),)))

_ia = np.array([[12, -18, 0], [7, 35, -9]])
_ib = np.array([8, 12, 6])
for _name in ["gcd", "lcm"]:
    add(Case(_name, (_ia, _ib)))
    add(Case(_name, (_ia.astype(np.int8), np.int8(4))))
    add(Case(_name, (np.uint16(12), np.array([18, 5], np.uint16))))
for _name in ["left_shift", "right_shift"]:
    add(Case(_name, (np.array([[1, -8, 255], [3, 0, 1024]]), np.array([0, 2, 3]))))
    add(Case(_name, (np.array([100, 7], np.uint8), np.array([1, 3], np.uint8))))
    add(Case(_name, (np.array([True, False]), np.array([True, True]))))
add(Case("bitwise_count", (np.array([[0, 7, -1], [255, 1024, -256]]),)))
add(Case("bitwise_count", (np.array([3, 200], np.uint8),)))
add(Case("bitwise_count", (np.int16(-3),)))

# frexp and modf: one node, two outputs; each output through the one node
for _name, _outs in [("frexp", ("mantissa", "exponent")), ("modf", ("fraction", "whole"))]:
    _np = getattr(np, _name)
    for _k, _tag in enumerate(_outs):
        for _x, _second in [(np.array([[0.3, -1.7, 5.2], [-0.6, 12.4, 2.9]]), True),
                            (np.array([0.7, -3.3], np.float32), False),
                            (np.float64(-6.2), False)]:
            add(Case(_name, (_x,), tag=_tag, second=_second and _k == 0,
                     fn=lambda x, n=_name, k=_k: __import__("tracegrad").ir.apply(n, x)[k],
                     ref_fn=lambda x, f=_np, k=_k: f(x)[k], jax_fn=_lowering(_name, _k)))
        add(Case(_name, (_specials,), tag=f"{_tag}-specials", derivs=False,
                 fn=lambda x, n=_name, k=_k: __import__("tracegrad").ir.apply(n, x)[k],
                 ref_fn=lambda x, f=_np, k=_k: f(x)[k], jax_fn=_lowering(_name, _k)))
        add(Case(_name, (np.array([3, -5, 0]),), tag=f"{_tag}-int",
                 fn=lambda x, n=_name, k=_k: __import__("tracegrad").ir.apply(n, x)[k],
                 ref_fn=lambda x, f=_np, k=_k: f(x)[k], jax_fn=_lowering(_name, _k)))
