"""More cases of ``erf`` (the exact GELU's special function; registered with the
``scipy.special`` primitives): values against SciPy (the
default reference is the implementation itself, so the value check uses ``ref_fn``),
derivatives against JAX's ``lax.erf`` and finite differences, float32 kept float32."""
import numpy as np
import scipy.special

from primitive_cases import Case, add, uniform

for _shape in [(2, 3), (), (0, 3)]:
    add(Case("erf", (uniform(_shape, -2.5, 2.5),), second=_shape == (2, 3),
             ref_fn=scipy.special.erf))
add(Case("erf", (uniform((2, 2), -2.0, 2.0).astype(np.float32),),
         ref_fn=lambda x: scipy.special.erf(x).astype(np.float32)))
