"""``expm`` and ``sqrtm`` (``tracegrad/ir/prims/scipy_linalg.py``): values against SciPy,
derivatives against ``jax.scipy.linalg.expm``'s (x64) and finite differences, to second
order. JAX's ``sqrtm`` (a complex Schur form) has no derivative: its twin here is the
Denman-Beavers iteration, which JAX differentiates through (on stacks too)."""
import numpy as np

from primitive_cases import Case, add, spd, uniform

# few cases: JAX compiles expm's derivatives slowly
for _shape, _second in [((2, 2), True), ((2, 3, 3), False)]:
    add(Case("expm", (0.6 * uniform(_shape),), second=_second))
add(Case("expm", (0.6 * uniform((2, 2)).astype(np.float32),), tag="f32"))
add(Case("expm", (4.0 * uniform((3, 3)),), tag="scaled"))   # scaling and squaring



def _jax_sqrtm(a):
    import jax.numpy as jnp
    y, z = a, jnp.eye(a.shape[-1], dtype=a.dtype)
    for _ in range(9):      # quadratic convergence from a well-conditioned start
        y, z = 0.5 * (y + jnp.linalg.inv(z)), 0.5 * (z + jnp.linalg.inv(y))
    return y


for _n, _second in [(3, False), (2, True)]:
    add(Case("sqrtm", ((spd(_n) + 0.3 * uniform((_n, _n))) / _n,), second=_second,
             jax_fn=_jax_sqrtm))
# a stack: SciPy's sqrtm of each matrix, the derivative's Sylvester solves batched
add(Case("sqrtm", (np.stack([(spd(3) + 0.3 * uniform((3, 3))) / 3, spd(3) / 3]),), tag="stack",
         jax_fn=_jax_sqrtm))
