"""Importing this package fills the registry, one module per family. The higher-order
primitives (loops, branches, checkpoints) register from ``tracegrad.higher``."""
from . import (  # noqa: F401
    bits,
    callback,
    complex_parts,
    eig,
    elementwise,
    fft,
    linear_algebra,
    markers,
    more,
    multi,
    nn,
    recurrent,
    reduce,
    scipy_linalg,
    scipy_special,
    shape,
    softmax,
    sparse_ops,
    special_more,
    spectral,
)
