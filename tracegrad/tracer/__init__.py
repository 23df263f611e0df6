"""Tracing: tracer values that record NumPy calls into a Graph."""
from ..ir.source import source_override, user_src, where
from . import (
           ndarray_methods,  # noqa: F401  (installs operators and NumPy protocols on Tracer)
           np_ufuncs,  # noqa: F401  (ufunc methods and more ufuncs: they register themselves)
)
from .core import Trace, Tracer, bind, new_trace, replay, snapshot_tracer
from .numpy_api import coerce
from .pytree import flatten, tree_map, unflatten
from .views import sync

__all__ = ["Trace", "Tracer", "bind", "new_trace", "replay", "snapshot_tracer", "coerce",
           "flatten", "unflatten", "tree_map", "source_override", "user_src", "where", "sync"]
