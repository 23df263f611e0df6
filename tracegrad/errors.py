"""The one exception class users see from tracing and transforming."""


class TraceError(ValueError):
    """A problem found while tracing or transforming a function.

    The message says what is wrong, what to do instead, and where in the
    user's code it happened (``file.py:LINE``).
    """


class RetraceWarning(UserWarning):
    """A jitted function keeps being traced again (its branches depend on input values)."""
