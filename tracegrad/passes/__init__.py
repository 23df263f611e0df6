"""Graph-to-graph passes. Each returns a new Graph and leaves its argument unchanged."""
from .adjoint import adjoint
from .jvp import jvp
from .prune import prune

__all__ = ["adjoint", "jvp", "prune"]
