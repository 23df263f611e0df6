"""The error of a picture that cannot be drawn: shared by ``render`` (Graphviz) and
``draw`` (matplotlib), which imports it without importing ``render``."""


class GraphvizUnavailable(ImportError, RuntimeError):
    """Rendering needs the ``graphviz`` package and the ``dot`` program, and one is missing."""
