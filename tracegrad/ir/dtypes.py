"""Short dtype names for printing, and the few dtype predicates passes need."""
import numpy as np

_SHORT = {
    "float16": "f16", "float32": "f32", "float64": "f64", "longdouble": "f128",
    "float128": "f128", "complex64": "c64", "complex128": "c128",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bool": "bool", "object": "obj",
}


def short(dtype) -> str:
    name = np.dtype(dtype).name
    return _SHORT.get(name, name)


def aval_str(shape, dtype) -> str:
    return f"{short(dtype)}[{','.join(str(d) for d in shape)}]"


def is_float(dtype) -> bool:
    """True for dtypes that carry a gradient (inexact: real or complex floating)."""
    return np.dtype(dtype).kind in "fc"
