"""NumPy's exceptions inside JAX lowerings.

XLA cannot raise: an index out of bounds is clamped, an integer to a negative power is
some number. A primitive's ``jax`` rule that NumPy would make raise calls
``runtime_check``; the JAX backend (``runtime.jax_backend``) runs the lowered graph under
``jax.experimental.checkify`` when some node says it carries checks
(``extra["jax_checks"]``), and raises NumPy's own exception after the call. The check
lives here, below the rules that call it, so that the IR never imports the runtime.
"""
import contextvars

import numpy as np

# the exceptions a check may name, by name
EXCEPTIONS = {"IndexError": IndexError, "ValueError": ValueError,
              "LinAlgError": np.linalg.LinAlgError}
# True while the backend lowers a graph under checkify
CHECKING = contextvars.ContextVar("tracegrad_jax_checking", default=False)


def runtime_check(ok, error: str, message: str, *values):
    """Inside a lowering: NumPy raises ``error`` (a name in ``EXCEPTIONS``) with
    ``message`` (``{}`` filled from ``values``, traced scalars) unless ``ok`` holds."""
    if not CHECKING.get():     # a graph that ``needs_checks`` says has none
        return
    from jax.experimental import checkify
    checkify.check(ok, f"{error}: {message}", *values)
