"""``pure_callback`` (``tg.pure_callback``): values through a traced graph, the NumPy code
generator and ``jax.pure_callback``; derivatives only through ``tg.custom_vjp`` (the
callback has none of its own), checked against JAX's and finite differences."""
import numpy as np

import tracegrad as tg
from tracegrad.ir import apply
from tracegrad.transforms.pure_callback import PureCallback

from primitive_cases import Case, add, uniform


def _jnp(name):
    def fn(*args):
        import jax.numpy as jnp
        return getattr(jnp, name)(*args)
    return fn


def _spec(x):
    return tg.ShapeDtypeStruct(np.shape(x), np.result_type(x))


def host_exp(x):
    return np.exp(x)


def host_scale(x, y):
    return x * y, np.sum(x)


def exp_cb(x):
    return tg.pure_callback(host_exp, _spec(x), x)


def two_outputs(x, y):
    out, total = tg.pure_callback(host_scale, (tg.ShapeDtypeStruct(np.broadcast_shapes(
                                                  x.shape, y.shape), x.dtype),
                                               tg.ShapeDtypeStruct((), x.dtype)), x, y)
    return out + total


@tg.custom_vjp
def custom_exp(x):
    return exp_cb(x)


# the rule applies custom_exp again (not the callback's result): differentiable to any order
custom_exp.defvjp(lambda x: (exp_cb(x), x), lambda x, g: (g * custom_exp(x),))

add(Case("pure_callback", (uniform((2, 3)),), fn=exp_cb, ref_fn=np.exp, jax_fn=_jnp("exp"),
         derivs=False))
add(Case("pure_callback", (uniform((2, 3)).astype(np.float32),), fn=exp_cb, ref_fn=np.exp,
         jax_fn=_jnp("exp"), derivs=False, tag="f32"))
add(Case("pure_callback", (uniform((3,)), uniform((3,))), fn=two_outputs,
         ref_fn=lambda x, y: x * y + np.sum(x), jax_fn=lambda x, y: x * y + _jnp("sum")(x),
         derivs=False, tag="two-outputs"))
add(Case("pure_callback", (uniform((2, 2)),), fn=custom_exp, ref_fn=np.exp, jax_fn=_jnp("exp"),
         fd_fn=np.exp, forward_mode=False, tag="custom-vjp"))

# the primitive applied directly (the registry's fact tests call impl with this callback);
# vectorized: under vmap one call takes every row
_direct = PureCallback.make(host_exp, tg.ShapeDtypeStruct((2, 3), np.float64),
                            (np.zeros((2, 3)),), vectorized=True)[0]
add(Case("pure_callback", (uniform((2, 3)),), {"callback": _direct}, tag="direct",
         fn=lambda x: apply("pure_callback", x, callback=_direct)[0], ref_fn=np.exp,
         jax_fn=_jnp("exp"), derivs=False))
