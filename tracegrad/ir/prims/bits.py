"""The ufuncs that work on a number's representation: the sign bit, the exponent, the
integer part, the neighbouring float, and the integer ones (``gcd``, ``lcm``, the shifts,
``bitwise_count``).

Each is NumPy's own ufunc, with NumPy's loops and dtypes (``frexp``'s exponent is int32,
``bitwise_count`` gives uint8, ``signbit`` bools). Derivatives, where the function has
one (the operand positions that are integers or flags have none):

- ``copysign(x, y)`` is ``|x|`` with ``y``'s sign: ``d/dx = sign(x) * sign(out)`` (1 where
  the signs already agree, -1 where the sign flips; 0 at ``x = 0``, as ``abs``), nothing
  for ``y`` (piecewise constant);
- ``ldexp(x, e) = x * 2**e``: ``d/dx = 2**e``; the exponent is an integer;
- ``frexp(x) -> (m, e)`` with ``x = m * 2**e``: ``dm/dx = 2**-e`` (``e`` is locally
  constant), ``e`` an integer; one node, two outputs;
- ``modf(x) -> (frac, whole)``: ``d frac/dx = 1``, ``whole`` is piecewise constant;
  one node, two outputs;
- ``nextafter(x, y)``, the float next to ``x`` towards ``y``: ``d/dx = 1`` (it moves ``x``
  by one unit in the last place; finite differences agree), nothing for ``y``;
- ``spacing(x)``, the unit in the last place: piecewise constant, zero gradient.
"""
import numpy as np

from ..registry import default_torch_name, register
from .elementwise import _broadcast_rule, elementwise, elementwise_facts
from .util import jnp_fn


def _ones(like):
    return np.ones((), like.dtype)


# -- one output ------------------------------------------------------------------------
elementwise("copysign", np.copysign, complex=False,
            partials=lambda out, x, y: (np.sign(x) * np.sign(out), None))
# The exponent is an integer (never differentiated, never cast to the float dtype in the
# JAX lowering: jnp.ldexp wants an integer exponent). ``ufunc=None``: a Python int exponent
# is no float constant (the operators' NEP 50 rule would make it one), so the tracer
# routes np.ldexp itself (``tracer/np_ufuncs.py``), typing the exponent as NumPy's loop.
register(
    "ldexp", np.ldexp, abstract=_broadcast_rule(np.ldexp), nondiff_args=(1,),
    vjp=lambda g, out, x, e: (g * np.ldexp(_ones(out), e), None),
    jvp=lambda t, out, x, e: t[0] * np.ldexp(_ones(out), e),
    jax=jnp_fn("ldexp"), family="elementwise", doc="np.ldexp(x, e) = x * 2**e",
    **elementwise_facts("ldexp"),
)
elementwise("nextafter", np.nextafter, complex=False,
            vjp=lambda g, out, x, y: (g, None), jvp=lambda t, out, x, y: t[0])
elementwise("spacing", np.spacing, complex=False)
elementwise("signbit", np.signbit, complex=False)


def _on_int8_for_bool(name):
    """``jnp.<name>`` with boolean operands as int8: NumPy's loop for two booleans is the
    int8 one (``np.left_shift(True, True)`` is int8; JAX's promotion gives int32)."""
    def lower(*args):
        import jax.numpy as jnp
        if all(a.dtype == jnp.bool_ for a in args):
            args = [a.astype(jnp.int8) for a in args]
        return getattr(jnp, name)(*args)
    lower.__name__ = f"jnp.{name}"
    return lower


for _name, _uf in [("gcd", np.gcd), ("lcm", np.lcm), ("left_shift", np.left_shift),
                   ("right_shift", np.right_shift), ("bitwise_count", np.bitwise_count)]:
    elementwise(_name, _uf, complex=False, jax=_on_int8_for_bool(_name))


# -- two outputs: frexp and modf ---------------------------------------------------------
def _frexp_impl(x):
    m, e = np.frexp(x)
    return m, e


def _modf_impl(x):
    frac, whole = np.modf(x)
    return frac, whole


def _abstract(impl):
    found = {}

    def abstract(x):
        dtypes = found.get(x.dtype)
        if dtypes is None:
            dtypes = found[x.dtype] = tuple(o.dtype for o in impl(np.ones((), x.dtype)))
        return [(tuple(x.shape), d) for d in dtypes]
    return abstract


def _frexp_vjp(gs, outs, x):
    gm, _ = gs
    m, e = outs
    return (None if gm is None else gm * np.ldexp(_ones(m), -e),)


def _frexp_jvp(tangents, outs, x):
    (t,) = tangents
    m, e = outs
    return t * np.ldexp(_ones(m), -e), None


def _modf_vjp(gs, outs, x):
    return (gs[0],)


def _modf_jvp(tangents, outs, x):
    return tangents[0], None


def _batch(name):
    def rule(size, args, batched, out_shape):
        from ..registry import apply
        return apply(name, args[0])
    return rule


def _float_operand(x, ufunc):
    """``x`` cast to the float dtype of NumPy's loop for it (integers: float64, int8:
    float16), as the backend's casts would: the lowering then holds on its own too."""
    return x.astype(ufunc.resolve_dtypes((np.dtype(x.dtype), None, None))[0])


def _jax(name):
    def lower(x):
        import jax.numpy as jnp
        return tuple(getattr(jnp, name)(_float_operand(x, getattr(np, name))))
    lower.__name__ = f"jnp.{name}"
    return lower


def _modf_jax(x):
    """NumPy's modf: the fraction of an infinity is a zero of its sign (jnp.modf: NaN), and
    every fraction has x's sign (-3.0 gives -0.0)."""
    import jax.numpy as jnp
    x = _float_operand(x, np.modf)
    whole = jnp.trunc(x)
    frac = jnp.where(jnp.isinf(x), jnp.zeros((), x.dtype), x - whole)
    return jnp.copysign(frac, x), whole


for _name, _impl, _vjp, _jvp, _doc in [
        ("frexp", _frexp_impl, _frexp_vjp, _frexp_jvp,
         "np.frexp: mantissa and (int32) exponent, x = m * 2**e"),
        ("modf", _modf_impl, _modf_vjp, _modf_jvp,
         "np.modf: fractional and integral parts, both with x's sign")]:
    register(
        _name, _impl, abstract=_abstract(_impl), outputs=2, vjp=_vjp, jvp=_jvp,
        jax=_modf_jax if _name == "modf" else _jax(_name), family="elementwise", doc=_doc,
        batch=_batch(_name),
        # ufunc=None: the code generator calls the impl (a two-output ufunc has no
        # single out= buffer); the tracer routes np.frexp / np.modf here itself


        torch_name=default_torch_name(_name),
    )
