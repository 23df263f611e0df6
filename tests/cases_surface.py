"""Cases for the primitives of ``tracegrad/ir/prims/more.py`` (the rest of NumPy's
everyday surface). ``argsort`` has an integer result: value, shape and JAX-lowering tests
only; the gradients of ``np.sort`` and the quantiles built on it are checked in
``test_numpy_surface_more.py``.
"""
import numpy as np

from primitive_cases import Case, add, distinct, uniform

for _shape, _axis in [((5,), 0), ((3, 4), 1), ((3, 4), 0), ((2, 3, 4), 1), ((0, 3), 0),
                      ((2, 0), 1)]:
    add(Case("argsort", (distinct(_shape),), {"axis": _axis}, tag=f"axis{_axis}"))
# ties keep their order (a stable sort, as JAX's)
add(Case("argsort", (np.array([1.0, 0.0, 1.0, 0.0, 1.0, -2.0]),), {"axis": 0}, tag="ties"))
add(Case("argsort", (np.array([[2, 1, 2], [0, 0, -1]], dtype=np.int64),), {"axis": 1},
         tag="int"))
add(Case("argsort", (uniform((3, 4)).astype(np.float32),), {"axis": 1}, tag="f32"))
