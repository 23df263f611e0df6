"""The IR: graphs of primitive applications, and the primitive registry."""
from . import prims  # noqa: F401  (fills the registry)
from .graph import Graph
from .indexspec import Arg, Index, Slice
from .registry import PROJ, REGISTRY, Aval, Primitive, apply, get, register

__all__ = ["Graph", "PROJ", "REGISTRY", "Aval", "Primitive", "apply", "get", "register",
           "Index", "Slice", "Arg"]
