"""Complex cases: the ``real``/``imag``/``conj`` primitives, and complex operands for the
primitives whose rules hold for them (``Primitive.complex``), checked against JAX's
``vjp``/``jvp`` (its convention: no conjugation in a VJP) and complex finite differences,
to second order through the two Hessian-vector products."""
import numpy as np

from tracegrad.ir import apply

from primitive_cases import Case, add, cuniform, jax_slogdet, uniform

for _prim in ("real", "imag", "conj"):
    add(Case(_prim, (cuniform((2, 3)),), second=True))
    add(Case(_prim, (cuniform(()),)))
    add(Case(_prim, (cuniform((3,)).astype(np.complex64),)))
# a real operand: conj is the identity, imag is zero
add(Case("conj", (uniform((3,)),), tag="real"))
add(Case("real", (uniform((2, 2)),), tag="real"))
add(Case("imag", (uniform((2, 2)),), tag="real"))

# holomorphic ufuncs: away from branch cuts and poles
_SAFE = {"log": lambda s: cuniform(s, 0.5, 2.0), "sqrt": lambda s: cuniform(s, 0.5, 2.0),
         "log1p": lambda s: cuniform(s, 0.2, 1.5), "log2": lambda s: cuniform(s, 0.5, 2.0),
         "log10": lambda s: cuniform(s, 0.5, 2.0), "arcsin": lambda s: cuniform(s, -0.5, 0.5),
         "arccos": lambda s: cuniform(s, -0.5, 0.5), "arctan": lambda s: cuniform(s, -0.5, 0.5),
         "arctanh": lambda s: cuniform(s, -0.5, 0.5), "arccosh": lambda s: cuniform(s, 1.2, 2.0),
         "tan": lambda s: cuniform(s, -0.6, 0.6)}
for _prim in ("neg", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos",
              "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
              "arccosh", "arctanh"):
    add(Case(_prim, (_SAFE.get(_prim, lambda s: cuniform(s, -1.0, 1.0))((2, 3)),),
             tag="complex", second=_prim in ("exp", "log", "sqrt", "tanh")))
for _prim in ("add", "sub", "mul", "div"):
    add(Case(_prim, (cuniform((2, 3)), cuniform((3,), 0.5, 1.5)), tag="complex",
             second=_prim in ("mul", "div")))
    # a real and a complex operand: the real one's cotangent is the real part
    add(Case(_prim, (uniform((2, 3)), cuniform((2, 3), 0.5, 1.5)), tag="mixed"))
add(Case("pow", (cuniform((2, 3), 0.5, 1.5), cuniform((2, 3), 0.5, 1.5)), tag="complex",
         second=True))
add(Case("pow", (cuniform((4,), 0.5, 1.5), np.array(3.0)), tag="complex-real-exponent"))

# |z|: real output; conj(z)/|z| is its (JAX-convention) cotangent
add(Case("abs", (cuniform((2, 3), 0.3, 1.5),), tag="complex", second=True))
add(Case("abs", (cuniform((4,), 0.3, 1.5).astype(np.complex64),), tag="complex"))

add(Case("select", (uniform((2, 3)) > 0, cuniform((2, 3)), cuniform((2, 3))), tag="complex",
         second=True))
add(Case("convert", (uniform((2, 3)),), {"dtype": np.dtype(np.complex128)}, tag="to-complex",
         second=True))
add(Case("convert", (cuniform((2, 3)),), {"dtype": np.dtype(np.complex64)}, tag="complex"))

# linear and holomorphic matrix functions
add(Case("matmul", (cuniform((2, 3)), cuniform((3, 4))), tag="complex", second=True))
add(Case("matmul", (uniform((2, 3)), cuniform((3,))), tag="mixed"))
add(Case("einsum", (cuniform((2, 3)), cuniform((3, 2))), {"subscripts": "ij,jk->ik"},
         tag="complex", second=True))
_a = cuniform((3, 3), -0.3, 0.3) + 2.0 * np.eye(3)
add(Case("inv", (_a,), tag="complex", second=True))
add(Case("solve", (_a, cuniform((3, 2))), tag="complex"))
add(Case("det", (_a,), tag="complex", second=True))
add(Case("logabsdet", (_a,), tag="complex", second=True))

# reductions and shapes
add(Case("sum", (cuniform((2, 3)),), {"axis": (1,), "keepdims": False}, tag="complex",
         second=True))
add(Case("prod", (cuniform((2, 3), 0.5, 1.5),), {"axis": (1,), "keepdims": False},
         tag="complex", second=True))
add(Case("cumsum", (cuniform((2, 3)),), {"axis": 1}, tag="complex"))
add(Case("reshape", (cuniform((2, 3)),), {"shape": (3, 2)}, tag="complex"))
add(Case("transpose", (cuniform((2, 3)),), {"axes": (1, 0)}, tag="complex"))
add(Case("broadcast_to", (cuniform((3,)),), {"shape": (2, 3)}, tag="complex"))
add(Case("concatenate", (cuniform((2, 3)), cuniform((1, 3))), {"axis": 0}, tag="complex"))
# sign(det A) of a complex matrix moves on the unit circle (a real one's is constant)
add(Case("slogdet_sign", (_a,), tag="complex", second=True))
add(Case("slogdet_sign", (cuniform((2, 2, 2), -0.3, 0.3) + 2.0 * np.eye(2),), tag="complex"))
for _which, _tag in ((0, "sign"), (1, "logabsdet")):
    add(Case("slogdet", (_a,), tag=f"complex-{_tag}", second=True,
             fn=lambda x, w=_which: apply("slogdet", x)[w],
             ref_fn=lambda x, w=_which: np.linalg.slogdet(x)[w],
             jax_fn=jax_slogdet(_which)))
