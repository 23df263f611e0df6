"""Runtimes that execute graphs: the NumPy interpreter (the reference)."""
from .interpreter import call_graph, run, run_each

__all__ = ["call_graph", "run", "run_each"]
