"""Importing this package fills the registry, one module per family."""
from . import (  # noqa: F401
    complex_parts,
    control,
    eig,
    elementwise,
    fft,
    linalg,
    more,
    nn,
    reduce,
    shape,
    special,
    spectral,
    subgraph,
)
