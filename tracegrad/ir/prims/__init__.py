"""Importing this package fills the registry, one module per family."""
from . import complex_parts, control, elementwise, linalg, more, nn, reduce, shape, special, spectral, subgraph  # noqa: F401
