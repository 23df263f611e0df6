"""``log_softmax`` and ``softmax`` (``tracegrad/ir/prims/softmax.py``): one node each, along
one axis. Checked by ``test_primitives.py`` against the NumPy composite (the impl),
``jax.nn.log_softmax``/``jax.nn.softmax`` (values, VJPs, JVPs, Hessians in x64) and central
finite differences; by ``test_backends.py`` and the JSON tests through the JAX backend and
the round trip. The shapes cover every axis of a 3-d operand, a 1-d one, rows far from 0
(the shift by the maximum is what keeps ``exp`` finite), ties at the maximum (the
maximum is not differentiated, so a tie is no kink), ``-inf`` entries (the composite's
values; finite differences have no answer there), float32, an empty axis and integers."""
import numpy as np

from primitive_cases import Case, add, uniform

for _prim in ("log_softmax", "softmax"):
    for _shape, _axis, _second in [((3, 4), 1, True), ((3, 4), 0, False), ((2, 3, 4), 1, True),
                                   ((2, 3, 4), 2, False), ((2, 3, 4), 0, False),
                                   ((5,), 0, True)]:
        add(Case(_prim, (uniform(_shape, -3.0, 3.0),), {"axis": _axis}, tag=f"axis{_axis}",
                 second=_second))
    add(Case(_prim, (np.array([[1000.0, 1001.5, 999.0], [-1000.0, -1002.0, -999.5]]),),
             {"axis": 1}, tag="far", second=True))
    add(Case(_prim, (np.array([[2.0, 2.0, -1.0, 0.5], [0.0, 0.0, 0.0, 0.0]]),), {"axis": 1},
             tag="ties"))
    add(Case(_prim, (np.array([[-np.inf, 1.0, 2.0], [0.5, -np.inf, -np.inf]]),), {"axis": 1},
             tag="neg-inf", fd=False))
    add(Case(_prim, (uniform((3, 4), -3.0, 3.0).astype(np.float32),), {"axis": 1}, tag="axis1"))
    add(Case(_prim, (np.zeros((2, 0)),), {"axis": 1}, tag="empty", derivs=False))
    add(Case(_prim, (np.array([[1, 4, 2], [0, -3, 7]]),), {"axis": 1}, tag="int"))
