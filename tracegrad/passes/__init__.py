"""Graph-to-graph passes. Each returns a new Graph and leaves its argument unchanged."""
from .adjoint import adjoint
from .batch import batch
from .broadcasts import elide_broadcasts
from .cse import cse
from .jvp import jvp
from .optimize import optimize
from .prune import prune
from .simplify import simplify

__all__ = ["adjoint", "batch", "jvp", "prune", "cse", "simplify", "optimize",
           "elide_broadcasts"]
