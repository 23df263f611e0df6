"""Runtimes that execute graphs: the NumPy interpreter (the reference)."""
from .interpreter import call_graph, run

__all__ = ["call_graph", "run"]
