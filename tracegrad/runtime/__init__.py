"""Runtimes that execute graphs: the NumPy interpreter (the reference)."""
from .interpreter import run, run_each

__all__ = ["run", "run_each"]
