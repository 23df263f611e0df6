"""Importing this package fills the registry, one module per family."""
from . import control, elementwise, linalg, more, nn, reduce, shape, special, subgraph  # noqa: F401
