"""Importing this package fills the registry, one module per family."""
from . import elementwise, linalg, reduce, shape, special  # noqa: F401
