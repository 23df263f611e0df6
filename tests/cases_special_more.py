"""The ``torch.special`` primitives of ``tracegrad/ir/prims/special_more.py``: the Airy
function, the spherical Bessel j₀ and the orthogonal polynomials. None is differentiated
(torch has no derivative for them): value and shape cases only, checked against the NumPy
impl and the JAX lowering (a host callback; jnp for j₀). The degrees cover the
recurrence, the closed forms for large n inside (-1, 1), the ends ±1 (0 and 1 shifted) and
negative degrees."""
import numpy as np

from tracegrad.ir.prims.special_more import POLYNOMIALS

from primitive_cases import Case, add, uniform

add(Case("airy_ai", (uniform((2, 3), -4.0, 3.0),), derivs=False))
add(Case("airy_ai", (uniform((2,), -4.0, 3.0).astype(np.float32),), tag="f32", derivs=False))
add(Case("spherical_bessel_j0", (np.array([[0.0, 0.3, -0.49], [0.51, -4.0, np.inf]]),),
         derivs=False))
add(Case("spherical_bessel_j0", (uniform((3,)).astype(np.float32),), tag="f32", derivs=False))

_X = np.array([[-1.0, -0.6, 0.0], [0.4, 1.0, 1.7]])
_N = np.array([[-1.0], [3.0], [12.0]])
for _name in POLYNOMIALS:
    add(Case(_name, (_X[:, None, :], _N[None, :, :].reshape(1, 3, 1)), derivs=False))
    add(Case(_name, (_X.astype(np.float32), np.float32(9.0)), tag="f32", derivs=False))
